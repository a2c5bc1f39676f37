/* SPDX-License-Identifier: MIT */
/*
 * engine_copy.h - the asynchronous copy engine behind vgpu_hal_copy.
 *
 * A FIFO of copy requests served in order by its own thread, concurrently
 * with the compute engine. The engine runs privileged (it is the backend's
 * private DMA queue) and reports -1 in its current-channel register. Each
 * request completes with one VGPU_EVENT_COPY_DONE (status 0, or -EFAULT with
 * the cause of the first fault). Address spaces count their queued requests
 * so destroying one waits for its copies.
 */
#ifndef SIMGPU_ENGINE_COPY_H
#define SIMGPU_ENGINE_COPY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory_access.h"

struct simgpu;
struct simgpu_address_space;

struct copy_request {
	struct copy_request *next;
	struct simgpu_address_space *as;
	uint64_t dst;
	uint64_t src;
	uint64_t bytes;
	uint64_t cookie;
};

struct copy_engine {
	struct simgpu *gpu;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t done;
	bool stop;
	struct copy_request *head;
	struct copy_request *tail;
	struct engine_context context;
};

int copy_engine_init(struct copy_engine *engine, struct simgpu *gpu);
int copy_engine_start(struct copy_engine *engine);
/* Stop the thread; queued requests are dropped without events. */
void copy_engine_stop(struct copy_engine *engine);
void copy_engine_destroy(struct copy_engine *engine);

/* Wait until no request of as is queued or running. */
void copy_engine_wait_idle(struct copy_engine *engine, struct simgpu_address_space *as);

/* HAL operation. */
int simgpu_copy(struct vgpu_hal_as *as, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
                uint64_t cookie);

#endif /* SIMGPU_ENGINE_COPY_H */
