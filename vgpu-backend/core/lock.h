/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the core's allocation lock (lock.c), a fair FIFO lock
 * (fifo_lock.h) that knows its owner.
 *
 * vgpu_core_lock is for operations on the whole core (VM creation, the
 * return pass, the invariant check): it also waits while a pass has dropped
 * the lock (pass.h). vgpu_core_lock_vm is for an operation on one VM: it
 * waits only while a pass that involves that VM has dropped the lock.
 * Both apply the weights vgpu_core_set_weight requested when no pass runs.
 * vgpu_core_unlock first publishes the statistics the operation changed
 * (vgpu_stats_publish_locked).
 *
 * Every function that must be called with the lock held (named *_locked,
 * or saying "Allocation lock." where it is declared) starts with
 * vgpu_core_assert_locked: an assert(), so debug builds check it and
 * release builds (-DNDEBUG) pay nothing.
 */
#ifndef VGPU_CORE_LOCK_H
#define VGPU_CORE_LOCK_H

#include <assert.h>

#include "fifo_lock.h"

struct vgpu_core;
struct vgpu_vm;

void vgpu_core_lock(struct vgpu_core *core);
void vgpu_core_lock_vm(struct vgpu_core *core, struct vgpu_vm *vm);
void vgpu_core_unlock(struct vgpu_core *core);
/* The lock itself (for the assertion). */
struct vgpu_fifo_lock *vgpu_core_lock_of(struct vgpu_core *core);

#ifndef NDEBUG
#define vgpu_core_assert_locked(core) assert(vgpu_fifo_lock_held(vgpu_core_lock_of(core)))
#else
#define vgpu_core_assert_locked(core) ((void)(core))
#endif

#endif /* VGPU_CORE_LOCK_H */
