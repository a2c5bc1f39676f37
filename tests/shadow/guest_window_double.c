// SPDX-License-Identifier: MIT
/*
 * guest_window_double.c - the transport double: shadow pages, the guest's
 * current mapping, and a trap that makes guest accesses wait.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest_double.h"

#define PAGE_BYTES 4096u

struct window_channel {
	bool attached;
	void *real_control;
	void *real_gpfifo;
	uint32_t control_bytes;
	uint32_t gpfifo_bytes;

	void *shadow_control; /* non-NULL between get_shadow and release */
	void *shadow_gpfifo;
	bool mapped_shadow;
	bool blocked;
	unsigned in_progress; /* guest accesses between enter and leave */
	struct guest_window_stats stats;
};

struct guest_window_double {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t max_channels;
	uint32_t default_control_bytes;
	uint32_t default_gpfifo_bytes;
	guest_window_blocked_fn on_blocked;
	void *on_blocked_arg;
	struct window_channel *channels;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t page_round(size_t bytes)
{
	return (bytes + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
}

struct guest_window_double *guest_window_double_create(uint32_t max_channels,
                                                       uint32_t control_bytes,
                                                       uint32_t max_gpfifo_bytes)
{
	struct guest_window_double *window = calloc(1, sizeof(*window));

	if (!window)
		return NULL;
	window->channels = calloc(max_channels, sizeof(*window->channels));
	if (!window->channels) {
		free(window);
		return NULL;
	}
	window->max_channels = max_channels;
	window->default_control_bytes = control_bytes;
	window->default_gpfifo_bytes = max_gpfifo_bytes;
	pthread_mutex_init(&window->lock, NULL);
	pthread_cond_init(&window->cond, NULL);
	return window;
}

void guest_window_double_destroy(struct guest_window_double *window)
{
	uint32_t i;

	if (!window)
		return;
	for (i = 0; i < window->max_channels; i++) {
		free(window->channels[i].shadow_control);
		free(window->channels[i].shadow_gpfifo);
	}
	pthread_cond_destroy(&window->cond);
	pthread_mutex_destroy(&window->lock);
	free(window->channels);
	free(window);
}

static struct window_channel *channel_of(struct guest_window_double *window, uint32_t id)
{
	return id < window->max_channels ? &window->channels[id] : NULL;
}

int guest_window_double_attach(struct guest_window_double *window,
                               const struct vgpu_hal_channel_info *info)
{
	struct window_channel *channel = channel_of(window, info->id);

	if (!channel || !info->control || !info->gpfifo)
		return -EINVAL;
	pthread_mutex_lock(&window->lock);
	if (channel->shadow_control && (info->layout.control_bytes > channel->control_bytes ||
	                                info->layout.gpfifo_bytes > channel->gpfifo_bytes)) {
		pthread_mutex_unlock(&window->lock);
		return -EINVAL;
	}
	channel->attached = true;
	channel->real_control = info->control;
	channel->real_gpfifo = info->gpfifo;
	if (!channel->shadow_control) {
		channel->control_bytes = info->layout.control_bytes;
		channel->gpfifo_bytes = info->layout.gpfifo_bytes;
	}
	pthread_mutex_unlock(&window->lock);
	return 0;
}

void guest_window_double_detach(struct guest_window_double *window, uint32_t channel_id)
{
	struct window_channel *channel = channel_of(window, channel_id);

	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	channel->attached = false;
	channel->real_control = NULL;
	channel->real_gpfifo = NULL;
	memset(&channel->stats, 0, sizeof(channel->stats));
	pthread_mutex_unlock(&window->lock);
}

static void *zeroed_pages(size_t bytes)
{
	void *pages = aligned_alloc(PAGE_BYTES, page_round(bytes));

	if (pages)
		memset(pages, 0, page_round(bytes));
	return pages;
}

static int window_get_shadow(void *ctx, uint32_t channel_id, void **control, void **gpfifo)
{
	struct guest_window_double *window = ctx;
	struct window_channel *channel = channel_of(window, channel_id);
	int ret = 0;

	if (!channel)
		return -EINVAL;
	pthread_mutex_lock(&window->lock);
	if (channel->shadow_control) {
		channel->stats.protocol_errors++; /* get_shadow twice */
		ret = -EBUSY;
		goto out;
	}
	if (!channel->attached) {
		channel->control_bytes = window->default_control_bytes;
		channel->gpfifo_bytes = window->default_gpfifo_bytes;
	}
	channel->shadow_control = zeroed_pages(channel->control_bytes);
	channel->shadow_gpfifo = zeroed_pages(channel->gpfifo_bytes);
	if (!channel->shadow_control || !channel->shadow_gpfifo) {
		free(channel->shadow_control);
		free(channel->shadow_gpfifo);
		channel->shadow_control = NULL;
		channel->shadow_gpfifo = NULL;
		ret = -ENOMEM;
		goto out;
	}
	channel->mapped_shadow = false;
	channel->blocked = false;
	*control = channel->shadow_control;
	*gpfifo = channel->shadow_gpfifo;
out:
	pthread_mutex_unlock(&window->lock);
	return ret;
}

static void window_release_shadow(void *ctx, uint32_t channel_id)
{
	struct guest_window_double *window = ctx;
	struct window_channel *channel = channel_of(window, channel_id);

	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	if (!channel->shadow_control || channel->mapped_shadow || channel->blocked)
		channel->stats.protocol_errors++;
	free(channel->shadow_control);
	free(channel->shadow_gpfifo);
	channel->shadow_control = NULL;
	channel->shadow_gpfifo = NULL;
	channel->mapped_shadow = false;
	channel->blocked = false;
	pthread_cond_broadcast(&window->cond);
	pthread_mutex_unlock(&window->lock);
}

static void window_block(void *ctx, uint32_t channel_id)
{
	struct guest_window_double *window = ctx;
	struct window_channel *channel = channel_of(window, channel_id);
	guest_window_blocked_fn on_blocked;
	void *arg;

	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	if (!channel->shadow_control || channel->blocked)
		channel->stats.protocol_errors++;
	channel->blocked = true;
	channel->stats.blocks++;
	while (channel->in_progress)
		pthread_cond_wait(&window->cond, &window->lock);
	on_blocked = window->on_blocked;
	arg = window->on_blocked_arg;
	pthread_mutex_unlock(&window->lock);
	if (on_blocked)
		on_blocked(arg, channel_id);
}

static void window_map(void *ctx, uint32_t channel_id, bool shadow)
{
	struct guest_window_double *window = ctx;
	struct window_channel *channel = channel_of(window, channel_id);

	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	/* Must follow a block and flip the mapping. */
	if (!channel->blocked || channel->mapped_shadow == shadow)
		channel->stats.protocol_errors++;
	channel->mapped_shadow = shadow;
	channel->blocked = false;
	if (shadow)
		channel->stats.maps_shadow++;
	else
		channel->stats.maps_real++;
	pthread_cond_broadcast(&window->cond);
	pthread_mutex_unlock(&window->lock);
}

static const struct vgpu_guest_window_ops window_ops = {
	.get_shadow = window_get_shadow,
	.release_shadow = window_release_shadow,
	.block = window_block,
	.map = window_map,
};

const struct vgpu_guest_window_ops *guest_window_double_ops(void)
{
	return &window_ops;
}

void guest_window_enter(struct guest_window_double *window, uint32_t channel_id,
                        struct guest_window_view *view)
{
	struct window_channel *channel = channel_of(window, channel_id);

	memset(view, 0, sizeof(*view));
	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	channel->stats.accesses++;
	if (channel->blocked) {
		uint64_t start = now_ns(), waited;

		channel->stats.trapped++;
		while (channel->blocked)
			pthread_cond_wait(&window->cond, &window->lock);
		waited = now_ns() - start;
		channel->stats.trapped_ns += waited;
		if (waited > channel->stats.trapped_max_ns)
			channel->stats.trapped_max_ns = waited;
	}
	channel->in_progress++;
	view->shadow = channel->mapped_shadow;
	view->control = view->shadow ? channel->shadow_control : channel->real_control;
	view->gpfifo = view->shadow ? channel->shadow_gpfifo : channel->real_gpfifo;
	pthread_mutex_unlock(&window->lock);
}

void guest_window_leave(struct guest_window_double *window, uint32_t channel_id)
{
	struct window_channel *channel = channel_of(window, channel_id);

	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	if (--channel->in_progress == 0)
		pthread_cond_broadcast(&window->cond);
	pthread_mutex_unlock(&window->lock);
}

bool guest_window_double_is_shadow(struct guest_window_double *window, uint32_t channel_id)
{
	struct window_channel *channel = channel_of(window, channel_id);
	bool shadow;

	if (!channel)
		return false;
	pthread_mutex_lock(&window->lock);
	shadow = channel->mapped_shadow;
	pthread_mutex_unlock(&window->lock);
	return shadow;
}

void guest_window_double_on_blocked(struct guest_window_double *window,
                                    guest_window_blocked_fn fn, void *arg)
{
	pthread_mutex_lock(&window->lock);
	window->on_blocked = fn;
	window->on_blocked_arg = arg;
	pthread_mutex_unlock(&window->lock);
}

void guest_window_double_stats(struct guest_window_double *window, uint32_t channel_id,
                               struct guest_window_stats *out)
{
	struct window_channel *channel = channel_of(window, channel_id);

	memset(out, 0, sizeof(*out));
	if (!channel)
		return;
	pthread_mutex_lock(&window->lock);
	*out = channel->stats;
	pthread_mutex_unlock(&window->lock);
}
