/* SPDX-License-Identifier: MIT */
/*
 * return_pass.h - bringing evicted chunks back to VRAM (return_pass.c): the
 * pass itself and the background thread that runs it.
 *
 * Frees only mark work as pending (vgpu_return_mark_pending, any thread,
 * lock-free); the thread wakes every config.return_interval_ms and runs a
 * pass if anything is pending. A pass runs under the allocation lock
 * (asserted) and drops it like an eviction while a VM's channels drain and
 * resume (pass.h).
 *
 * Locks: the winners heap is under the allocation lock; stop under
 * return->mutex, which the thread never holds while it takes the
 * allocation lock.
 */
#ifndef VGPU_CORE_RETURN_PASS_H
#define VGPU_CORE_RETURN_PASS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "victim.h"
#include "vgpu/error.h"

struct vgpu_core;

struct vgpu_return {
	/* The pass's order of VMs: smallest resident ÷ weight first. Room
	 * for every VM is reserved when the VM is created. Allocation lock. */
	struct vgpu_victim_heap winners;
	atomic_bool pending;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mutex;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool stop;           /* mutex */
};

void vgpu_return_init(struct vgpu_return *ret);
void vgpu_return_fini(struct vgpu_return *ret);

/* The thread, when config.return_interval_ms is not 0: 0 or -errno. */
int vgpu_return_thread_start(struct vgpu_core *core);
void vgpu_return_thread_stop(struct vgpu_core *core);
void vgpu_return_mark_pending(struct vgpu_core *core);
/* One pass: chunks moved back, or a negative errno (the core's error set).
 * Allocation lock. */
int vgpu_return_pass_locked(struct vgpu_core *core, struct vgpu_error *error);

#endif /* VGPU_CORE_RETURN_PASS_H */
