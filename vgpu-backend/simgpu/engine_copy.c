// SPDX-License-Identifier: MIT
/* engine_copy.c - the asynchronous copy engine (see engine_copy.h). */
#include "engine_copy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "address_space.h"
#include "gpu_kernels.h"
#include "simgpu_device.h"
#include "vgpu/util.h"

int copy_engine_init(struct copy_engine *engine, struct simgpu *gpu)
{
	int ret;

	memset(engine, 0, sizeof(*engine));
	engine->gpu = gpu;
	ret = engine_context_init(&engine->context, gpu, VGPU_ENGINE_COPY);
	if (ret)
		return ret;
	engine->context.privileged = true;
	iommu_register_iotlb(&gpu->iommu, &engine->context.iotlb);
	pthread_mutex_init(&engine->lock, NULL);
	pthread_cond_init(&engine->work, NULL);
	pthread_cond_init(&engine->done, NULL);
	return 0;
}

void copy_engine_destroy(struct copy_engine *engine)
{
	pthread_cond_destroy(&engine->done);
	pthread_cond_destroy(&engine->work);
	pthread_mutex_destroy(&engine->lock);
	engine_context_destroy(&engine->context);
}

/* config.copy_wall_bandwidth: make a copy that began at start_ns last at
 * least bytes / bandwidth of wall time. */
static void pace_copy(const struct copy_engine *engine, uint64_t bytes, uint64_t start_ns)
{
	uint64_t bandwidth = engine->gpu->config.copy_wall_bandwidth, due, now;
	struct timespec left;

	if (!bandwidth)
		return;
	due = start_ns + (uint64_t)((unsigned __int128)bytes * 1000000000u / bandwidth);
	now = vgpu_monotonic_ns();
	if (now >= due)
		return;
	left.tv_sec = (time_t)((due - now) / 1000000000u);
	left.tv_nsec = (long)((due - now) % 1000000000u);
	nanosleep(&left, NULL);
}

static void *copy_engine_thread(void *arg)
{
	struct copy_engine *engine = arg;

	pthread_mutex_lock(&engine->lock);
	for (;;) {
		struct copy_request *request;
		struct vgpu_hal_event event;
		uint64_t done = 0, start_ns;
		int status;

		while (!engine->stop && !engine->head)
			pthread_cond_wait(&engine->work, &engine->lock);
		if (engine->stop)
			break;
		request = engine->head;
		engine->head = request->next;
		if (!engine->head)
			engine->tail = NULL;
		pthread_mutex_unlock(&engine->lock);

		/* the copy engine never yields (yield_at_ps stays UINT64_MAX) */
		start_ns = vgpu_monotonic_ns();
		status = gpu_copy(&engine->context, request->as, request->dst, request->src,
		                  request->bytes, &done);
		pace_copy(engine, request->bytes, start_ns);
		event = (struct vgpu_hal_event){
			.type = VGPU_EVENT_COPY_DONE,
			.value = request->cookie,
			.cause = status ? engine->context.fault.cause : VGPU_FAULT_NONE,
			.address = status ? engine->context.fault.address : 0,
			.status = status,
		};
		event_sink_raise(&engine->gpu->events, &event);

		pthread_mutex_lock(&engine->lock);
		request->as->copies_pending--;
		pthread_cond_broadcast(&engine->done);
		free(request);
	}
	pthread_mutex_unlock(&engine->lock);
	return NULL;
}

int copy_engine_start(struct copy_engine *engine)
{
	int ret = pthread_create(&engine->thread, NULL, copy_engine_thread, engine);

	if (ret)
		return -ret;
	pthread_setname_np(engine->thread, "simgpu-copy");
	engine->thread_started = true;
	return 0;
}

void copy_engine_stop(struct copy_engine *engine)
{
	struct copy_request *request;

	if (engine->thread_started) {
		pthread_mutex_lock(&engine->lock);
		engine->stop = true;
		pthread_cond_broadcast(&engine->work);
		pthread_mutex_unlock(&engine->lock);
		pthread_join(engine->thread, NULL);
		engine->thread_started = false;
	}
	while ((request = engine->head)) {
		engine->head = request->next;
		request->as->copies_pending--;
		free(request);
	}
	engine->tail = NULL;
}

void copy_engine_wait_idle(struct copy_engine *engine, struct simgpu_address_space *as)
{
	pthread_mutex_lock(&engine->lock);
	while (as->copies_pending)
		pthread_cond_wait(&engine->done, &engine->lock);
	pthread_mutex_unlock(&engine->lock);
}

int simgpu_copy(struct vgpu_hal_as *hal_as, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
                uint64_t cookie)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	struct copy_engine *engine = &as->gpu->copy_engine;
	struct copy_request *request;

	if (bytes == 0)
		return -EINVAL;
	request = calloc(1, sizeof(*request));
	if (!request)
		return -ENOMEM;
	*request = (struct copy_request){
		.as = as, .dst = dst_va, .src = src_va, .bytes = bytes, .cookie = cookie,
	};
	pthread_mutex_lock(&engine->lock);
	as->copies_pending++;
	if (engine->tail)
		engine->tail->next = request;
	else
		engine->head = request;
	engine->tail = request;
	pthread_cond_signal(&engine->work);
	pthread_mutex_unlock(&engine->lock);
	return 0;
}
