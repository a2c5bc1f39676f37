/* SPDX-License-Identifier: MIT */
/*
 * fifo_lock.h - a fair (first come, first served) mutual exclusion lock
 * with an owner.
 *
 * A ticket lock on a mutex and condition variable: waiters get the lock in
 * the order they asked for it. The core's allocation lock is one, so
 * allocations that arrive during an eviction are served in arrival order
 * afterwards (thesis §5.3.6). Not recursive. The lock records the thread
 * holding it, so that code which needs it held can check
 * (vgpu_fifo_lock_held, e.g. in an assert).
 */
#ifndef VGPU_CORE_FIFO_LOCK_H
#define VGPU_CORE_FIFO_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct vgpu_fifo_lock {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint64_t next_ticket;
	uint64_t now_serving;
	pthread_t owner; /* valid while owned */
	bool owned;
};

int vgpu_fifo_lock_init(struct vgpu_fifo_lock *lock);
void vgpu_fifo_lock_fini(struct vgpu_fifo_lock *lock);
void vgpu_fifo_lock(struct vgpu_fifo_lock *lock);
void vgpu_fifo_unlock(struct vgpu_fifo_lock *lock);
/* True when the calling thread holds the lock. */
bool vgpu_fifo_lock_held(struct vgpu_fifo_lock *lock);

#endif /* VGPU_CORE_FIFO_LOCK_H */
