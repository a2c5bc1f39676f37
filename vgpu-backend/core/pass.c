// SPDX-License-Identifier: MIT
/*
 * pass.c - an eviction or return pass that does not hold the allocation lock
 * while it waits on a tenant (issue 12): see pass.h.
 *
 * A pass selects chunks, stages memory and moves one VM at a time under the
 * lock. Suspending and draining a victim's channels, and resuming them,
 * wait for the victim (its GPU work, its window swaps): for those waits the
 * pass drops the lock. Other operations then proceed unless they involve a
 * VM of the pass (vm->touched), need a pass of their own (an allocation
 * that does not fit), or concern the whole core; those wait for the pass's
 * end without the lock and start over (vgpu_core_lock_vm, lock.c).
 */
#include "pass.h"

#include <errno.h>
#include <stdlib.h>

#include "core_internal.h"
#include "lock.h"
#include "stats.h"

void vgpu_pass_init(struct vgpu_pass *pass)
{
	pass->running = false;
	pass->vram_promised = 0;
	pass->touched = NULL;
	pass->touched_count = 0;
	pass->touched_capacity = 0;
	pthread_mutex_init(&pass->mutex, NULL);
	pthread_cond_init(&pass->done, NULL);
	pass->active = false;
}

void vgpu_pass_fini(struct vgpu_pass *pass)
{
	pthread_cond_destroy(&pass->done);
	pthread_mutex_destroy(&pass->mutex);
	free(pass->touched);
	pass->touched = NULL;
}

static void set_active(struct vgpu_pass *pass, bool active)
{
	pthread_mutex_lock(&pass->mutex);
	pass->active = active;
	if (!active)
		pthread_cond_broadcast(&pass->done);
	pthread_mutex_unlock(&pass->mutex);
}

void vgpu_pass_begin_locked(struct vgpu_core *core)
{
	vgpu_core_assert_locked(core);
	core->pass.running = true;
	set_active(&core->pass, true);
}

void vgpu_pass_end_locked(struct vgpu_core *core)
{
	vgpu_core_assert_locked(core);
	core->pass.running = false;
	core->pass.vram_promised = 0;
	set_active(&core->pass, false);
}

void vgpu_pass_unlock(struct vgpu_core *core)
{
	vgpu_stats_publish_locked(core);
	vgpu_fifo_unlock(&core->lock);
}

void vgpu_pass_relock(struct vgpu_core *core)
{
	vgpu_fifo_lock(&core->lock);
}

void vgpu_pass_wait(struct vgpu_core *core)
{
	struct vgpu_pass *pass = &core->pass;

	pthread_mutex_lock(&pass->mutex);
	while (pass->active)
		pthread_cond_wait(&pass->done, &pass->mutex);
	pthread_mutex_unlock(&pass->mutex);
}

uint64_t vgpu_pass_vram_available_locked(struct vgpu_core *core)
{
	uint64_t free_bytes;

	vgpu_core_assert_locked(core);
	free_bytes = vgpu_hal_vram_free_bytes(core->hal);
	return free_bytes > core->pass.vram_promised ? free_bytes - core->pass.vram_promised : 0;
}

int vgpu_pass_reserve_touched_locked(struct vgpu_core *core, size_t count)
{
	struct vgpu_pass *pass = &core->pass;
	struct vgpu_vm **touched;
	size_t capacity;

	vgpu_core_assert_locked(core);
	if (count <= pass->touched_capacity)
		return 0;
	capacity = pass->touched_capacity ? 2 * pass->touched_capacity : 8;
	while (capacity < count)
		capacity *= 2;
	touched = realloc(pass->touched, capacity * sizeof(*touched));
	if (!touched)
		return -ENOMEM;
	pass->touched = touched;
	pass->touched_capacity = capacity;
	return 0;
}

void vgpu_pass_touch_locked(struct vgpu_core *core, struct vgpu_vm *vm)
{
	struct vgpu_pass *pass = &core->pass;

	vgpu_core_assert_locked(core);
	if (vm->touched)
		return;
	pass->touched[pass->touched_count++] = vm; /* reserved per VM */
	vm->touched = true;
}

void vgpu_pass_untouch_all_locked(struct vgpu_core *core)
{
	struct vgpu_pass *pass = &core->pass;

	vgpu_core_assert_locked(core);
	for (size_t i = 0; i < pass->touched_count; i++)
		pass->touched[i]->touched = false;
	pass->touched_count = 0;
}
