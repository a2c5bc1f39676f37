// SPDX-License-Identifier: MIT
/*
 * stream.c - a stream is a channel of the vGPU.
 *
 * Work on a stream is written into its channel's pushbuffer and runs in
 * channel order; each submission ends with the runtime's fence (a
 * SEMAPHORE_RELEASE of the channel's counter into its notifier page), and
 * the stream remembers the last one. The legacy default stream (NULL,
 * CU_STREAM_LEGACY, and CU_STREAM_PER_THREAD, treated as legacy) is a
 * channel of its own per context; before new work on it, a submission of
 * SEMAPHORE_ACQUIREs waits on the GPU for every blocking stream's last
 * fence (another channel's fence word is in the VM's GPU address space at
 * its notifier + VGPU_NOTIFIER_FENCE_OFFSET), and new work on a blocking
 * stream waits likewise for the legacy stream's last fence.
 * CU_STREAM_NON_BLOCKING streams do neither.
 *
 * A VM has at most max_channels channels (vgpu_device_info): a stream
 * beyond them is CUDA_ERROR_OUT_OF_MEMORY (no sharing of channels).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "vgpu/abi/commands.h"

static CUresult make_channel(struct CUstream_st *s)
{
	int rc;

	if (s->ch)
		return CUDA_SUCCESS;
	rc = vgpu_channel_create(cu_g.dev, 0, &s->ch);
	if (rc < 0) {
		s->ch = NULL;
		if (rc == -ENOSPC)
			return cu_fail(CUDA_ERROR_OUT_OF_MEMORY,
			               "no channel left for a stream (the vGPU has %u)",
			               cu_g.info.max_channels);
		return cu_channel_error(s->ctx, rc, "channel");
	}
	s->fence_va = vgpu_channel_scratch_va(s->ch, 0) - VGPU_NOTIFIER_SCRATCH_OFFSET +
	              VGPU_NOTIFIER_FENCE_OFFSET;
	s->last_fence = 0;
	return CUDA_SUCCESS;
}

static struct CUstream_st *find_stream(CUstream h)
{
	for (struct CUctx_st *c = cu_g.contexts; c; c = c->next)
		for (struct CUstream_st *s = c->streams; s; s = s->next)
			if (s == h)
				return s;
	return NULL;
}

CUresult cu_stream_get(struct CUctx_st *ctx, CUstream h, struct CUstream_st **out)
{
	struct CUstream_st *s;
	CUresult res;

	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		s = &ctx->null_stream;
	} else {
		s = find_stream(h);
		if (!s)
			return cu_fail(CUDA_ERROR_INVALID_HANDLE, "not a stream");
		if (s->ctx->sticky)
			return s->ctx->sticky;
	}
	res = make_channel(s);
	if (res)
		return res;
	*out = s;
	return CUDA_SUCCESS;
}

bool cu_stream_idle(struct CUstream_st *s)
{
	return !s->ch || !s->last_fence || vgpu_channel_fence_passed(s->ch, s->last_fence);
}

CUresult cu_stream_begin(struct CUstream_st *s, uint32_t words, uint32_t **buf)
{
	int rc = vgpu_channel_begin(s->ch, words, buf);

	return rc < 0 ? cu_channel_error(s->ctx, rc, "submission") : CUDA_SUCCESS;
}

CUresult cu_stream_submit(struct CUstream_st *s, uint32_t used)
{
	uint64_t fence;
	int rc = vgpu_channel_submit(s->ch, used, 0, &fence);

	if (rc < 0)
		return cu_channel_error(s->ctx, rc, "submission");
	s->last_fence = fence;
	return CUDA_SUCCESS;
}

/* Append an acquire of dep's last fence if it has not passed. */
static uint32_t acquire_of(uint32_t *buf, struct CUstream_st *dep)
{
	if (cu_stream_idle(dep))
		return 0;
	return vgpu_push_semaphore_acquire(buf, dep->fence_va, dep->last_fence);
}

CUresult cu_stream_order(struct CUstream_st *s)
{
	struct CUctx_st *ctx = s->ctx;
	uint32_t want = 0, used = 0, *buf;
	CUresult res;

	if (s->flags & CU_STREAM_NON_BLOCKING)
		return CUDA_SUCCESS;
	if (s->is_null) {
		for (struct CUstream_st *o = ctx->streams; o; o = o->next)
			if (!(o->flags & CU_STREAM_NON_BLOCKING) && !cu_stream_idle(o))
				want += 1 + VGPU_SEMAPHORE_ARG_WORDS;
	} else if (!cu_stream_idle(&ctx->null_stream)) {
		want = 1 + VGPU_SEMAPHORE_ARG_WORDS;
	}
	if (!want)
		return CUDA_SUCCESS;
	if (want > vgpu_channel_max_words(s->ch))
		want = vgpu_channel_max_words(s->ch) / (1 + VGPU_SEMAPHORE_ARG_WORDS) *
		       (1 + VGPU_SEMAPHORE_ARG_WORDS);
	res = cu_stream_begin(s, want, &buf);
	if (res)
		return res;
	if (s->is_null) {
		for (struct CUstream_st *o = ctx->streams; o; o = o->next)
			if (!(o->flags & CU_STREAM_NON_BLOCKING) &&
			    used + 1 + VGPU_SEMAPHORE_ARG_WORDS <= want)
				used += acquire_of(buf + used, o);
	} else {
		used += acquire_of(buf, &ctx->null_stream);
	}
	return cu_stream_submit(s, used);
}

CUresult cu_stream_wait(struct CUstream_st *s, uint64_t fence)
{
	struct timespec pause = { 0, 20000 };
	int rc;

	if (!s->ch || !fence)
		return CUDA_SUCCESS;
	for (;;) {
		rc = vgpu_channel_wait(s->ch, fence, 1);
		if (rc != -ETIMEDOUT)
			break;
		/* let other threads use the device meanwhile */
		cu_unlock();
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 1000000)
			pause.tv_nsec *= 2;
		cu_lock();
		if (s->magic != CU_STREAM_MAGIC || !s->ch)
			return CUDA_ERROR_INVALID_HANDLE;
	}
	return rc < 0 ? cu_channel_error(s->ctx, rc, "wait") : CUDA_SUCCESS;
}

void cu_stream_release(struct CUstream_st *s)
{
	cu_events_forget_stream(s);
	if (s->ch)
		vgpu_channel_destroy(s->ch);
	s->ch = NULL;
	s->last_fence = 0;
}

/* ------------------------------------------------------------------------ */

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	struct CUctx_st *ctx;
	struct CUstream_st *s;
	CUresult res;

	if (!phStream || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		s->magic = CU_STREAM_MAGIC;
		s->ctx = ctx;
		s->flags = flags;
		s->priority = priority;
		res = make_channel(s);
	}
	if (res == CUDA_SUCCESS) {
		s->next = ctx->streams;
		ctx->streams = s;
		*phStream = s;
	}
	cu_unlock();
	if (res)
		free(s);
	return res;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	s = find_stream(hStream);
	if (!s) {
		cu_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	ctx = s->ctx;
	/* Work already queued completes first (vgpu_channel_destroy waits). */
	for (struct CUstream_st **p = &ctx->streams; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	cu_stream_release(s);
	s->magic = 0;
	cu_unlock();
	free(s);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS && s->is_null && !(s->flags & CU_STREAM_NON_BLOCKING))
		res = cu_ctx_sync(ctx); /* the legacy stream waits for all blocking ones */
	else if (res == CUDA_SUCCESS)
		res = cu_stream_wait(s, s->last_fence);
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS && s->last_fence) {
		int rc = vgpu_channel_wait(s->ch, s->last_fence, 0);

		if (rc == -ETIMEDOUT)
			res = CUDA_ERROR_NOT_READY;
		else if (rc < 0)
			res = cu_channel_error(ctx, rc, "stream");
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	struct CUstream_st *s;
	struct CUevent_st *e = NULL;
	struct CUctx_st *ctx;
	uint32_t *buf;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS) {
		for (e = cu_g.events; e && e != hEvent; e = e->next)
			;
		if (!e || Flags > 1)
			res = CUDA_ERROR_INVALID_HANDLE;
	}
	/* Nothing to wait for: not recorded, or its stream is gone or idle. */
	if (res == CUDA_SUCCESS && e->recorded && e->stream && e->stream != s &&
	    e->stream->ch && !vgpu_channel_fence_passed(e->stream->ch, e->fence)) {
		res = cu_stream_order(s);
		if (res == CUDA_SUCCESS)
			res = cu_stream_begin(s, 1 + VGPU_SEMAPHORE_ARG_WORDS, &buf);
		if (res == CUDA_SUCCESS)
			res = cu_stream_submit(s, vgpu_push_semaphore_acquire(
			                                  buf, e->stream->fence_va, e->fence));
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res;

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS)
		*flags = s->flags;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res;

	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS)
		*priority = s->priority;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS)
		*pctx = s->ctx;
	cu_unlock();
	return res;
}

/* Host functions run on the calling thread once the stream's earlier
 * work has finished: correct ordering, but the call waits for it. */
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	CUresult res;

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	res = cuStreamSynchronize(hStream);
	if (res == CUDA_SUCCESS)
		fn(userData);
	return res;
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
	CUresult res;

	if (!callback || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	res = cuStreamSynchronize(hStream);
	callback(hStream, res, userData);
	return CUDA_SUCCESS;
}
