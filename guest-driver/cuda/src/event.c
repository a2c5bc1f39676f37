// SPDX-License-Identifier: MIT
/*
 * event.c - an event is a point in a stream: (channel, fence) of the
 * submission that recorded it (an empty submission: the runtime's fence
 * alone). Query and synchronize look at the fence; cuStreamWaitEvent is a
 * SEMAPHORE_ACQUIRE of the fence word (stream.c).
 *
 * Timing: where the vGPU offers VGPU_FEATURE_SEMAPHORE_TIMESTAMP (command
 * format revision 3), recording an event that times writes a
 * SEMAPHORE_RELEASE with VGPU_SEMAPHORE_TIMESTAMP into a 16-byte slot of a
 * small buffer of the context (CU_TIMESTAMP_SLOTS slots, allocated on the
 * first timing event, at the highest eviction priority): the GPU's
 * nanosecond clock once everything before it in the stream ran, read back
 * through the channel by cuEventElapsedTime. Without the feature (or with
 * every slot taken), an event's time is observed on the host: the moment
 * of cuEventRecord when the stream was idle then, else the moment the
 * library first sees its fence passed; such times include submission and
 * polling latency (tens of microseconds).
 */
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "vgpu/abi/commands.h"

#define SLOT_BYTES 16u

/* A timestamp slot for a timing event of ctx, or -1 (host timing). */
static int take_slot(struct CUctx_st *ctx)
{
	if (!(cu_g.info.features & VGPU_FEATURE_SEMAPHORE_TIMESTAMP))
		return -1;
	if (!ctx->ts_pool.gpu_va &&
	    vgpu_buffer_alloc(cu_g.dev, CU_TIMESTAMP_SLOTS * SLOT_BYTES, VGPU_PRIORITY_MAX,
	                      &ctx->ts_pool) < 0) {
		ctx->ts_pool.gpu_va = 0;
		return -1;
	}
	for (int i = 0; i < CU_TIMESTAMP_SLOTS; i++) {
		if (!ctx->ts_used[i]) {
			ctx->ts_used[i] = true;
			return i;
		}
	}
	return -1;
}

static uint64_t slot_va(const struct CUevent_st *e)
{
	return e->ctx->ts_pool.gpu_va + (uint64_t)e->slot * SLOT_BYTES;
}

/* The GPU clock an event's release wrote: 0, or -1 if unreadable. */
static int read_slot(struct CUevent_st *e, uint64_t *ns)
{
	struct vgpu_channel *ch = e->stream && e->stream->ch ? e->stream->ch :
	                                                       e->ctx->null_stream.ch;
	uint64_t words[2];

	if (!ch || vgpu_channel_download(ch, words, slot_va(e), sizeof(words)) < 0)
		return -1;
	*ns = words[1];
	return 0;
}

static struct CUevent_st *find(CUevent h)
{
	for (struct CUevent_st *e = cu_g.events; e; e = e->next)
		if (e == h)
			return e;
	return NULL;
}

static void stamp(struct CUevent_st *e)
{
	if (!e->time_known && !(e->flags & CU_EVENT_DISABLE_TIMING)) {
		clock_gettime(CLOCK_MONOTONIC, &e->time);
		e->time_known = true;
	}
}

/* 0 done, 1 pending, or a CUresult error (negated). */
static int state(struct CUevent_st *e)
{
	if (!e->recorded || !e->stream || !e->stream->ch)
		return 0;
	if (vgpu_channel_fence_passed(e->stream->ch, e->fence)) {
		stamp(e);
		return 0;
	}
	return 1;
}

void cu_ctx_drop_events(struct CUctx_st *ctx)
{
	for (struct CUevent_st **p = &cu_g.events; *p;) {
		struct CUevent_st *e = *p;

		if (e->ctx == ctx) {
			*p = e->next;
			if (e->slot >= 0)
				ctx->ts_used[e->slot] = false;
			e->magic = 0;
			free(e);
		} else {
			p = &e->next;
		}
	}
	if (ctx->ts_pool.gpu_va)
		vgpu_buffer_free(cu_g.dev, &ctx->ts_pool);
	ctx->ts_pool.gpu_va = 0;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *ctx;
	struct CUevent_st *e;
	CUresult res;

	if (!phEvent || (Flags & ~(unsigned int)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
	                                         CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		e->magic = CU_EVENT_MAGIC;
		e->ctx = ctx;
		e->flags = Flags;
		e->slot = Flags & CU_EVENT_DISABLE_TIMING ? -1 : take_slot(ctx);
		e->next = cu_g.events;
		cu_g.events = e;
		*phEvent = e;
	}
	cu_unlock();
	if (res)
		free(e);
	return res;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	struct CUstream_st *s;
	struct CUevent_st *e;
	struct CUctx_st *ctx;
	bool idle;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS && !(e = find(hEvent)))
		res = CUDA_ERROR_INVALID_HANDLE;
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS)
		res = cu_stream_order(s);
	if (res == CUDA_SUCCESS) {
		uint32_t *buf, used = 0;

		idle = cu_stream_idle(s);
		res = cu_stream_begin(s, 1 + VGPU_SEMAPHORE_ARG_WORDS, &buf);
		if (res == CUDA_SUCCESS && e->slot >= 0 && e->ctx == s->ctx)
			used = vgpu_push_semaphore_release_timestamp(buf, slot_va(e), 1, false);
		if (res == CUDA_SUCCESS)
			res = cu_stream_submit(s, used);
		if (res == CUDA_SUCCESS)
			e->stamped = used != 0;
	}
	if (res == CUDA_SUCCESS) {
		e->recorded = true;
		e->stream = s;
		e->fence = s->last_fence;
		e->time_known = false;
		if (idle)
			stamp(e);
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	e = find(hEvent);
	if (!e)
		res = CUDA_ERROR_INVALID_HANDLE;
	else if (e->ctx->sticky)
		res = e->ctx->sticky;
	else
		res = state(e) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	e = find(hEvent);
	if (!e) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else if (e->ctx->sticky) {
		res = e->ctx->sticky;
	} else if (state(e)) {
		res = cu_stream_wait(e->stream, e->fence);
		if (res == CUDA_SUCCESS && (e = find(hEvent)) != NULL)
			stamp(e);
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
	struct CUevent_st *e = NULL;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	for (struct CUevent_st **p = &cu_g.events; *p; p = &(*p)->next) {
		if (*p == hEvent) {
			e = *p;
			*p = e->next;
			if (e->slot >= 0)
				e->ctx->ts_used[e->slot] = false;
			break;
		}
	}
	cu_unlock();
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	e->magic = 0;
	free(e);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	struct CUevent_st *a, *b;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	a = find(hStart);
	b = find(hEnd);
	if (!a || !b)
		res = CUDA_ERROR_INVALID_HANDLE;
	else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		res = CUDA_ERROR_INVALID_HANDLE;
	else if (!a->recorded || !b->recorded)
		res = CUDA_ERROR_INVALID_HANDLE;
	else if (state(a) || state(b))
		res = CUDA_ERROR_NOT_READY;
	if (res == CUDA_SUCCESS && a->stamped && b->stamped) {
		uint64_t t0, t1;

		if (read_slot(a, &t0) == 0 && read_slot(b, &t1) == 0) {
			*pMilliseconds = (float)((double)(int64_t)(t1 - t0) / 1e6);
			cu_unlock();
			return CUDA_SUCCESS;
		}
	}
	if (res == CUDA_SUCCESS && (!a->time_known || !b->time_known))
		res = CUDA_ERROR_INVALID_HANDLE;
	if (res == CUDA_SUCCESS)
		*pMilliseconds = (float)((double)(b->time.tv_sec - a->time.tv_sec) * 1e3 +
		                         (double)(b->time.tv_nsec - a->time.tv_nsec) / 1e6);
	cu_unlock();
	return res;
}

void cu_events_forget_stream(const struct CUstream_st *s)
{
	for (struct CUevent_st *e = cu_g.events; e; e = e->next) {
		if (e->stream == s) {
			e->stream = NULL; /* recorded: counts as complete now */
			stamp(e);
		}
	}
}
