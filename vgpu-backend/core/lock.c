// SPDX-License-Identifier: MIT
/* lock.c - the allocation lock, see lock.h. */
#include "lock.h"

#include "core_internal.h"
#include "pass.h"
#include "stats.h"
#include "vm.h"

struct vgpu_fifo_lock *vgpu_core_lock_of(struct vgpu_core *core)
{
	return &core->lock;
}

void vgpu_core_lock_vm(struct vgpu_core *core, struct vgpu_vm *vm)
{
	for (;;) {
		vgpu_fifo_lock(&core->lock);
		if (!core->pass.running || (vm && !vm->touched))
			break;
		vgpu_fifo_unlock(&core->lock);
		vgpu_pass_wait(core);
	}
	/* Weights change the order a pass works in: never in the middle of
	 * one. */
	if (!core->pass.running)
		vgpu_vm_apply_requested_weights_locked(core);
}

void vgpu_core_lock(struct vgpu_core *core)
{
	vgpu_core_lock_vm(core, NULL);
}

void vgpu_core_unlock(struct vgpu_core *core)
{
	vgpu_stats_publish_locked(core);
	vgpu_fifo_unlock(&core->lock);
}
