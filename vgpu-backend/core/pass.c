// SPDX-License-Identifier: MIT
/*
 * pass.c - an eviction or return pass that does not hold the allocation lock
 * while it waits on a tenant (issue 12): see core_internal.h.
 *
 * A pass selects chunks, stages memory and moves one VM at a time under the
 * lock. Suspending and draining a victim's channels, and resuming them,
 * wait for the victim (its GPU work, its window swaps): for those waits the
 * pass drops the lock. Other operations then proceed unless they involve a
 * VM of the pass (vm->touched), need a pass of their own (an allocation
 * that does not fit), or concern the whole core; those wait for the pass's
 * end without the lock and start over.
 */
#include "core_internal.h"

static void set_active(struct vgpu_core *core, bool active)
{
	pthread_mutex_lock(&core->pass_mutex);
	core->pass_active = active;
	if (!active)
		pthread_cond_broadcast(&core->pass_done);
	pthread_mutex_unlock(&core->pass_mutex);
}

void vgpu_pass_begin_locked(struct vgpu_core *core)
{
	vgpu_core_assert_locked(core);
	core->pass_running = true;
	set_active(core, true);
}

void vgpu_pass_end_locked(struct vgpu_core *core)
{
	vgpu_core_assert_locked(core);
	core->pass_running = false;
	core->vram_promised = 0;
	set_active(core, false);
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
	pthread_mutex_lock(&core->pass_mutex);
	while (core->pass_active)
		pthread_cond_wait(&core->pass_done, &core->pass_mutex);
	pthread_mutex_unlock(&core->pass_mutex);
}

uint64_t vgpu_pass_vram_available_locked(struct vgpu_core *core)
{
	uint64_t free_bytes = vgpu_hal_vram_free_bytes(core->hal);

	return free_bytes > core->vram_promised ? free_bytes - core->vram_promised : 0;
}

void vgpu_core_lock_vm(struct vgpu_core *core, struct vgpu_vm *vm)
{
	for (;;) {
		vgpu_fifo_lock(&core->lock);
		if (!core->pass_running || (vm && !vm->touched))
			break;
		vgpu_fifo_unlock(&core->lock);
		vgpu_pass_wait(core);
	}
	/* Weights change the order a pass works in: never in the middle of
	 * one. */
	if (!core->pass_running)
		vgpu_vm_apply_requested_weights_locked(core);
}

void vgpu_core_lock(struct vgpu_core *core)
{
	vgpu_core_lock_vm(core, NULL);
}
