// SPDX-License-Identifier: MIT
/* sim_guest_window.c - an in-process guest's channel window, see sim_guest_window.h. */
#include "sim_guest_window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/commands.h"

void sim_guest_window_init(struct sim_guest_window *window,
                           const struct vgpu_hal_channel_info *info, uint32_t gpfifo_entries)
{
	memset(window, 0, sizeof(*window));
	window->info = info;
	window->gpfifo_entries = gpfifo_entries;
	pthread_mutex_init(&window->lock, NULL);
	pthread_cond_init(&window->cond, NULL);
}

void sim_guest_window_fini(struct sim_guest_window *window)
{
	pthread_cond_destroy(&window->cond);
	pthread_mutex_destroy(&window->lock);
}

static int window_get_shadow(void *ctx, uint32_t channel_id, void **control, void **gpfifo)
{
	struct sim_guest_window *window = ctx;
	size_t ring_bytes = (size_t)window->gpfifo_entries * VGPU_GPFIFO_ENTRY_BYTES;

	(void)channel_id;
	window->shadow_control = aligned_alloc(4096, VGPU_CONTROL_BYTES);
	window->shadow_gpfifo = aligned_alloc(4096, ring_bytes);
	if (!window->shadow_control || !window->shadow_gpfifo) {
		free(window->shadow_control);
		free(window->shadow_gpfifo);
		window->shadow_control = window->shadow_gpfifo = NULL;
		return -ENOMEM;
	}
	memset(window->shadow_control, 0, VGPU_CONTROL_BYTES);
	memset(window->shadow_gpfifo, 0, ring_bytes);
	*control = window->shadow_control;
	*gpfifo = window->shadow_gpfifo;
	return 0;
}

static void window_release_shadow(void *ctx, uint32_t channel_id)
{
	struct sim_guest_window *window = ctx;

	(void)channel_id;
	free(window->shadow_control);
	free(window->shadow_gpfifo);
	window->shadow_control = window->shadow_gpfifo = NULL;
}

static void window_block(void *ctx, uint32_t channel_id)
{
	struct sim_guest_window *window = ctx;

	(void)channel_id;
	pthread_mutex_lock(&window->lock);
	window->blocked = true;
	while (window->accesses)
		pthread_cond_wait(&window->cond, &window->lock);
	pthread_mutex_unlock(&window->lock);
}

static void window_map(void *ctx, uint32_t channel_id, bool shadow)
{
	struct sim_guest_window *window = ctx;

	(void)channel_id;
	pthread_mutex_lock(&window->lock);
	window->shadow = shadow;
	window->blocked = false;
	pthread_cond_broadcast(&window->cond);
	pthread_mutex_unlock(&window->lock);
}

const struct vgpu_guest_window_ops sim_guest_window_ops = {
	.get_shadow = window_get_shadow,
	.release_shadow = window_release_shadow,
	.block = window_block,
	.map = window_map,
};

void sim_guest_window_enter(struct sim_guest_window *window, void **control, void **gpfifo)
{
	pthread_mutex_lock(&window->lock);
	while (window->blocked)
		pthread_cond_wait(&window->cond, &window->lock);
	window->accesses++;
	*control = window->shadow ? window->shadow_control : window->info->control;
	*gpfifo = window->shadow ? window->shadow_gpfifo : window->info->gpfifo;
	pthread_mutex_unlock(&window->lock);
}

void sim_guest_window_leave(struct sim_guest_window *window)
{
	pthread_mutex_lock(&window->lock);
	window->accesses--;
	pthread_cond_broadcast(&window->cond);
	pthread_mutex_unlock(&window->lock);
}
