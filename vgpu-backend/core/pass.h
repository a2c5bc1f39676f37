/* SPDX-License-Identifier: MIT */
/*
 * pass.h - an eviction or return pass that drops the allocation lock while
 * it waits on a tenant (pass.c), and the VMs it involves.
 *
 * A pass runs under the allocation lock but drops it while it waits on a
 * tenant (its victims' channels draining and resuming, their window swaps),
 * so that other VMs' requests go on meanwhile. While a pass runs
 * (pass->running), operations that could disturb it wait for its end
 * without the lock: any operation on a VM it involves (vm->touched, the
 * VMs in pass->touched), another pass, and core-wide operations
 * (vgpu_core_lock_vm, lock.c). VRAM the pass promised to the allocation it
 * makes room for (pass->vram_promised) is not free for others.
 *
 * Locks: running, vram_promised and the touched list are under the
 * allocation lock (asserted); active is what waiters without that lock
 * see, under pass->mutex, which is never held while waiting on anything
 * but pass->done.
 */
#ifndef VGPU_CORE_PASS_H
#define VGPU_CORE_PASS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_core;
struct vgpu_vm;

struct vgpu_pass {
	bool running;           /* allocation lock */
	uint64_t vram_promised; /* allocation lock */
	/* The VMs the pass selected chunks of; room for one entry per VM is
	 * reserved when the VM is created, so touching cannot fail.
	 * Allocation lock. */
	struct vgpu_vm **touched;
	size_t touched_count, touched_capacity;

	pthread_mutex_t mutex;
	pthread_cond_t done;
	bool active; /* mutex */
};

void vgpu_pass_init(struct vgpu_pass *pass);
void vgpu_pass_fini(struct vgpu_pass *pass);

void vgpu_pass_begin_locked(struct vgpu_core *core);
void vgpu_pass_end_locked(struct vgpu_core *core);
/* Around a wait on a tenant inside a pass: publish, drop the lock; take it
 * back (behind the operations that queued meanwhile). */
void vgpu_pass_unlock(struct vgpu_core *core);
void vgpu_pass_relock(struct vgpu_core *core);
/* Without the allocation lock: wait until no pass runs. */
void vgpu_pass_wait(struct vgpu_core *core);
/* Free VRAM minus what a running pass promised. Allocation lock. */
uint64_t vgpu_pass_vram_available_locked(struct vgpu_core *core);

/* Room in the touched list for count VMs: 0 or -ENOMEM. Allocation lock. */
int vgpu_pass_reserve_touched_locked(struct vgpu_core *core, size_t count);
/* Add vm to the pass's VMs (once). Allocation lock. */
void vgpu_pass_touch_locked(struct vgpu_core *core, struct vgpu_vm *vm);
/* Empty the list. Allocation lock. */
void vgpu_pass_untouch_all_locked(struct vgpu_core *core);

#endif /* VGPU_CORE_PASS_H */
