// SPDX-License-Identifier: MIT
/*
 * pfifo.c - cudagpu's submission thread, which plays PFIFO: it round-robins
 * runnable channels, config.timeslice_commands units of their GPFIFO
 * entries per turn (commands.c), then polls the
 * completions (CUDA events) and delivers the HAL's events with no cudagpu
 * lock held. Also the event pool and the completion list it polls.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudagpu_internal.h"

#define DELIVER_MAX 256u

/* ---------------------------------------------------------- event pool */

cg_event cg_event_get(struct cudagpu *gpu)
{
	cg_event event;

	if (gpu->event_pool_count)
		return gpu->event_pool[--gpu->event_pool_count];
	if (gpu->api.cuEventCreate(&event, CG_EVENT_DEFAULT) != CG_SUCCESS)
		return NULL;
	return event;
}

void cg_event_put(struct cudagpu *gpu, cg_event event)
{
	if (!event)
		return;
	if (gpu->event_pool_count == gpu->event_pool_capacity) {
		uint32_t capacity = gpu->event_pool_capacity ? 2 * gpu->event_pool_capacity : 64;
		cg_event *grown = realloc(gpu->event_pool, capacity * sizeof(*grown));

		if (!grown) {
			gpu->api.cuEventDestroy(event);
			return;
		}
		gpu->event_pool = grown;
		gpu->event_pool_capacity = capacity;
	}
	gpu->event_pool[gpu->event_pool_count++] = event;
}

void cg_completion_queue(struct cudagpu *gpu, struct cg_completion *done)
{
	done->next = NULL;
	*gpu->done_tail = done;
	gpu->done_tail = &done->next;
	if (done->channel)
		done->channel->inflight++;
	pthread_cond_broadcast(&gpu->pfifo_wake);
}

/* --------------------------------------------------------- completions */

static bool stream_blocked(cg_stream *blocked, unsigned count, cg_stream stream)
{
	unsigned i;

	for (i = 0; i < count; i++)
		if (blocked[i] == stream)
			return true;
	return false;
}

/* Collect finished completions into events (pfifo_lock held). Completions
 * of one stream finish in order. Returns the number of events. */
static unsigned poll_completions(struct cudagpu *gpu, struct vgpu_hal_event *events,
                                 unsigned max)
{
	const struct cuda_api *api = &gpu->api;
	cg_stream blocked[64];
	unsigned nblocked = 0, n = 0;
	struct cg_completion **link = &gpu->done_head;

	while (*link && n < max) {
		struct cg_completion *done = *link;
		float ms = 0;

		if (done->stream && stream_blocked(blocked, nblocked, done->stream)) {
			link = &done->next;
			continue;
		}
		if (done->end && api->cuEventQuery(done->end) != CG_SUCCESS) {
			if (done->stream && nblocked < 64)
				blocked[nblocked++] = done->stream;
			link = &done->next;
			if (nblocked == 64)
				break;
			continue;
		}
		if (done->start && done->end &&
		    api->cuEventElapsedTime(&ms, done->start, done->end) == CG_SUCCESS && ms > 0) {
			uint64_t ns = (uint64_t)((double)ms * 1e6);
			enum vgpu_hal_engine engine =
				done->type == CG_DONE_COPY ? VGPU_ENGINE_COPY : VGPU_ENGINE_COMPUTE;

			gpu->busy_ns[engine] += ns;
			if (done->as) {
				pthread_mutex_lock(&gpu->memory_lock);
				done->as->counters.busy_ns[engine] += ns;
				pthread_mutex_unlock(&gpu->memory_lock);
			}
		}
		switch (done->type) {
		case CG_DONE_FENCE:
			events[n++] = (struct vgpu_hal_event){
				.type = VGPU_EVENT_FENCE, .channel_id = done->channel->id,
				.value = done->value, .address = done->address,
			};
			break;
		case CG_DONE_PRIV_FENCE:
			events[n++] = (struct vgpu_hal_event){
				.type = VGPU_EVENT_PRIV_FENCE, .channel_id = done->channel->id,
				.value = done->value,
			};
			break;
		case CG_DONE_COPY:
			events[n++] = (struct vgpu_hal_event){
				.type = VGPU_EVENT_COPY_DONE, .value = done->cookie,
				.status = done->status,
				.cause = done->status ? VGPU_FAULT_UNMAPPED : VGPU_FAULT_NONE,
			};
			break;
		case CG_DONE_TIMING:
			done->channel->entries_in_flight -= done->entries;
			done->channel->ops_in_flight -= done->ops;
			break;
		case CG_DONE_ERROR:
			events[n++] = done->channel->last_error;
			break;
		}
		if (done->channel)
			done->channel->inflight--;
		cg_event_put(gpu, done->start);
		cg_event_put(gpu, done->end);
		*link = done->next;
		if (!*link)
			gpu->done_tail = link;
		free(done);
	}
	if (gpu->current_channel >= 0) {
		struct cg_channel *cur = gpu->channels[gpu->current_channel];

		if (!cur || (!cur->inflight && !cur->running))
			gpu->current_channel = -1;
	}
	return n;
}

static void deliver(struct cudagpu *gpu, const struct vgpu_hal_event *events, unsigned n)
{
	unsigned i;

	if (!n)
		return;
	pthread_mutex_lock(&gpu->handler_lock);
	gpu->delivering = true;
	for (i = 0; i < n; i++)
		if (gpu->handler)
			gpu->handler(gpu->handler_ctx, &events[i]);
	gpu->delivering = false;
	pthread_mutex_unlock(&gpu->handler_lock);
}

/* ------------------------------------------------------ the thread */

static void wait_for_work(struct cudagpu *gpu, bool busy)
{
	struct timespec until;
	long wait_ns = busy ? 20000 : 1000000;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += wait_ns;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&gpu->pfifo_wake, &gpu->pfifo_lock, &until);
}

/* Between rounds, pfifo_lock unlocked: yield until the HAL callers waiting
 * for it had it (bounded, in case one is descheduled for long). */
static void hand_over_lock(struct cudagpu *gpu)
{
	for (int tries = 0; tries < 1000; tries++) {
		sched_yield();
		if (!__atomic_load_n(&gpu->pfifo_lock_waiters, __ATOMIC_RELAXED))
			break;
	}
}

static void *pfifo_main(void *arg)
{
	struct cudagpu *gpu = arg;
	struct cg_issue_scratch *scratch = malloc(sizeof(*scratch));
	struct vgpu_hal_event *events = calloc(DELIVER_MAX, sizeof(*events));

	cg_enter(gpu);
	pthread_mutex_lock(&gpu->pfifo_lock);
	while (!gpu->stopping) {
		bool progress = false;
		uint32_t i, n = gpu->config.max_channels;
		unsigned count;

		for (i = 0; scratch && i < n; i++) {
			uint32_t id = (gpu->next_channel + i) % n;
			struct cg_channel *ch = gpu->channels[id];

			if (ch && cg_channel_turn(gpu, ch, scratch))
				progress = true;
		}
		gpu->next_channel = (gpu->next_channel + 1) % n;
		count = events ? poll_completions(gpu, events, DELIVER_MAX) : 0;
		cg_zombies_reap(gpu);
		if (gpu->round_hook)
			gpu->round_hook(gpu, gpu->round_hook_ctx);
		if (count) {
			pthread_mutex_unlock(&gpu->pfifo_lock);
			deliver(gpu, events, count);
			pthread_mutex_lock(&gpu->pfifo_lock);
			continue;
		}
		if (!progress) {
			wait_for_work(gpu, gpu->done_head != NULL);
		} else {
			/* Turns are short now: between rounds, let the HAL's
			 * callers (channel_gp_get, channel_state, priv_submit,
			 * kick, destroy) have the lock, or a channel that always
			 * has work would keep them out: a mutex is not fair, and
			 * this thread would win it back at once. */
			pthread_mutex_unlock(&gpu->pfifo_lock);
			hand_over_lock(gpu);
			pthread_mutex_lock(&gpu->pfifo_lock);
		}
	}
	pthread_mutex_unlock(&gpu->pfifo_lock);
	free(scratch);
	free(events);
	return NULL;
}

int cg_pfifo_start(struct cudagpu *gpu)
{
	pthread_condattr_t attr;
	int err;

	gpu->done_tail = &gpu->done_head;
	gpu->current_channel = -1;
	gpu->channels = calloc(gpu->config.max_channels, sizeof(*gpu->channels));
	if (!gpu->channels)
		return -ENOMEM;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&gpu->pfifo_wake, &attr);
	pthread_condattr_destroy(&attr);
	if (gpu->api.cuStreamCreate(&gpu->copy_stream, CG_STREAM_NON_BLOCKING) != CG_SUCCESS)
		return -EIO;
	err = pthread_create(&gpu->pfifo_thread, NULL, pfifo_main, gpu);
	if (err)
		return -err;
	gpu->pfifo_started = true;
	return 0;
}

void cg_pfifo_stop(struct cudagpu *gpu)
{
	uint32_t i;

	if (gpu->pfifo_started) {
		cg_pfifo_lock(gpu);
		gpu->stopping = true;
		pthread_cond_broadcast(&gpu->pfifo_wake);
		pthread_mutex_unlock(&gpu->pfifo_lock);
		pthread_join(gpu->pfifo_thread, NULL);
		gpu->pfifo_started = false;
	}
	if (gpu->copy_stream)
		gpu->api.cuStreamSynchronize(gpu->copy_stream);
	cg_zombies_fini(gpu);
	while (gpu->done_head) {
		struct cg_completion *done = gpu->done_head;

		gpu->done_head = done->next;
		cg_event_put(gpu, done->start);
		cg_event_put(gpu, done->end);
		free(done);
	}
	gpu->done_tail = &gpu->done_head;
	if (gpu->copy_stream)
		gpu->api.cuStreamDestroy(gpu->copy_stream);
	gpu->copy_stream = NULL;
	for (i = 0; i < gpu->event_pool_count; i++)
		gpu->api.cuEventDestroy(gpu->event_pool[i]);
	free(gpu->event_pool);
	gpu->event_pool = NULL;
	gpu->event_pool_count = gpu->event_pool_capacity = 0;
	free(gpu->channels);
	gpu->channels = NULL;
}

