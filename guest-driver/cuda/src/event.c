// SPDX-License-Identifier: MIT
/*
 * event.c - an event is a point in a stream: (channel, fence) of the
 * submission that recorded it (an empty submission: the runtime's fence
 * alone). Query and synchronize look at the fence; cuStreamWaitEvent is a
 * SEMAPHORE_ACQUIRE of the fence word (stream.c).
 *
 * Timing (TODO: GPU timestamps): the command format has no GPU clock in
 * SEMAPHORE_RELEASE yet, so an event's time is observed on the host: the
 * moment of cuEventRecord when the stream was idle then (the event passes
 * at once), else the moment the library first sees its fence passed (in
 * cuEventQuery/Synchronize/ElapsedTime or any stream wait). Elapsed times
 * therefore include submission and polling latency (tens of
 * microseconds).
 */
#include <stdlib.h>
#include <time.h>

#include "internal.h"

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
			e->magic = 0;
			free(e);
		} else {
			p = &e->next;
		}
	}
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
		idle = cu_stream_idle(s);
		res = cu_stream_submit(s, 0);
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
	else if (!a->time_known || !b->time_known)
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
