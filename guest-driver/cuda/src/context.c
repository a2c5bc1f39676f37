// SPDX-License-Identifier: MIT
/*
 * context.c - contexts: created ones and the device's primary context,
 * the calling thread's context stack, synchronization and the sticky
 * error of a context whose channel the GPU killed.
 *
 * All contexts of a process share its one vGPU device; each has its own
 * legacy default stream (a channel of the device, made on first use),
 * streams, modules and allocations, released when it is destroyed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CU_CTX_STACK_DEPTH 64

static __thread struct CUctx_st *ctx_stack[CU_CTX_STACK_DEPTH];
static __thread int ctx_depth;

struct CUctx_st *cu_current(void)
{
	return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

bool cu_ctx_valid(const struct CUctx_st *ctx)
{
	for (const struct CUctx_st *c = cu_g.contexts; c; c = c->next)
		if (c == ctx)
			return true;
	return false;
}

CUresult cu_enter(struct CUctx_st **out)
{
	struct CUctx_st *ctx = cu_current();

	*out = NULL;
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return cu_fail(CUDA_ERROR_INVALID_CONTEXT, "no current context");
	if (!cu_ctx_valid(ctx))
		return cu_fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the current context was destroyed");
	if (ctx->sticky)
		return ctx->sticky;
	*out = ctx;
	return CUDA_SUCCESS;
}

CUresult cu_channel_error(struct CUctx_st *ctx, int err, const char *what)
{
	switch (err) {
	case -EIO:
		/* The GPU killed the channel: a fault in a kernel (the
		 * runtime does not say which; the watchdog's kill reads
		 * the same), sticky for the context as on NVIDIA's. */
		if (ctx && !ctx->sticky)
			ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
		return cu_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "%s: the GPU killed the channel (%s)",
		               what, vgpu_device_last_error(cu_g.dev));
	case -ENODEV:
		if (ctx && !ctx->sticky)
			ctx->sticky = CUDA_ERROR_DEVICE_UNAVAILABLE;
		return cu_fail(CUDA_ERROR_DEVICE_UNAVAILABLE, "%s: the vGPU is gone", what);
	case -ETIMEDOUT:
		return cu_fail(CUDA_ERROR_LAUNCH_TIMEOUT, "%s: timed out", what);
	case -ENOMEM:
	case -ENOSPC:
		return cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: %s", what,
		               vgpu_device_last_error(cu_g.dev));
	case -EINVAL:
		return cu_fail(CUDA_ERROR_INVALID_VALUE, "%s: %s", what,
		               vgpu_device_last_error(cu_g.dev));
	default:
		return cu_fail(CUDA_ERROR_UNKNOWN, "%s: error %d (%s)", what, err,
		               vgpu_device_last_error(cu_g.dev));
	}
}

static void ctx_init(struct CUctx_st *ctx, unsigned int flags, bool primary)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->magic = CU_CTX_MAGIC;
	ctx->primary = primary;
	ctx->flags = flags;
	ctx->null_stream.magic = CU_STREAM_MAGIC;
	ctx->null_stream.ctx = ctx;
	ctx->null_stream.is_null = true;
	ctx->limits[CU_LIMIT_STACK_SIZE] = 1024;
	ctx->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
	ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
	ctx->next = cu_g.contexts;
	cu_g.contexts = ctx;
}

CUresult cu_ctx_sync(struct CUctx_st *ctx)
{
	CUresult res = CUDA_SUCCESS, r;

	for (struct CUstream_st *s = ctx->streams; s; s = s->next) {
		if (s->ch && s->last_fence) {
			r = cu_stream_wait(s, s->last_fence);
			if (r && !res)
				res = r;
			if (!cu_ctx_valid(ctx))
				return CUDA_ERROR_CONTEXT_IS_DESTROYED;
		}
	}
	if (ctx->null_stream.ch && ctx->null_stream.last_fence) {
		r = cu_stream_wait(&ctx->null_stream, ctx->null_stream.last_fence);
		if (r && !res)
			res = r;
	}
	return res;
}

/* Release everything ctx holds and unlist it (locked). */
static void ctx_teardown(struct CUctx_st *ctx)
{
	struct CUstream_st *s, *next;

	if (!ctx->sticky)
		(void)cu_ctx_sync(ctx);
	if (!cu_ctx_valid(ctx))
		return;
	cu_ctx_drop_events(ctx);
	cu_ctx_unload_modules(ctx);
	for (s = ctx->streams; s; s = next) {
		next = s->next;
		cu_stream_release(s);
		s->magic = 0;
		free(s);
	}
	ctx->streams = NULL;
	cu_ctx_free_memory(ctx);
	cu_stream_release(&ctx->null_stream);
	for (struct CUctx_st **p = &cu_g.contexts; *p; p = &(*p)->next) {
		if (*p == ctx) {
			*p = ctx->next;
			break;
		}
	}
	ctx->magic = 0;
}

static CUresult push(struct CUctx_st *ctx)
{
	if (ctx_depth >= CU_CTX_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

/* Drop ctx from this thread's stack wherever it is. */
static void forget(const struct CUctx_st *ctx)
{
	int j = 0;

	for (int i = 0; i < ctx_depth; i++)
		if (ctx_stack[i] != ctx)
			ctx_stack[j++] = ctx_stack[i];
	ctx_depth = j;
}

static CUresult create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct CUctx_st *ctx;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cu_lock();
	ctx_init(ctx, flags, false);
	cu_unlock();
	if (push(ctx) != CUDA_SUCCESS) {
		cuCtxDestroy_v2(ctx);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pctx = ctx;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
	if (numParams < 0 || (numParams > 0 && !paramsArray))
		return CUDA_ERROR_INVALID_VALUE;
	if (numParams > 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
	if (ctxCreateParams &&
	    (ctxCreateParams->numExecAffinityParams > 0 || ctxCreateParams->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	if (!cu_ctx_valid(ctx) || ctx->primary) {
		cu_unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	ctx_teardown(ctx);
	cu_unlock();
	forget(ctx);
	free(ctx);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	cu_lock();
	res = cu_ctx_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	cu_unlock();
	return res ? res : push(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ctx_depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_depth--;
	if (pctx)
		*pctx = ctx_stack[ctx_depth];
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx) {
		if (ctx_depth > 0)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	cu_lock();
	if (!cu_ctx_valid(ctx)) {
		cu_unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	cu_unlock();
	if (ctx_depth == 0)
		return push(ctx);
	ctx_stack[ctx_depth - 1] = ctx;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = cu_current();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *ctx;
	CUresult res;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	cu_unlock();
	if (res == CUDA_SUCCESS)
		*device = 0;
	return res;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
	struct CUctx_st *ctx;
	CUresult res;

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		*flags = ctx->flags;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	if (!ctx)
		ctx = cu_current();
	if (!ctx || !cu_ctx_valid(ctx))
		res = CUDA_ERROR_INVALID_CONTEXT;
	cu_unlock();
	if (res == CUDA_SUCCESS)
		*version = 3020;
	return res;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = cu_ctx_sync(ctx);
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct CUctx_st *ctx;
	CUresult res;

	if ((unsigned int)limit > CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		ctx->limits[limit] = value;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct CUctx_st *ctx;
	CUresult res;

	if (!pvalue)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned int)limit > CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		*pvalue = ctx->limits[limit];
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = 0;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	if ((unsigned int)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	return cu_check_init();
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	if (!pconfig)
		return CUDA_ERROR_INVALID_VALUE;
	*pconfig = CU_FUNC_CACHE_PREFER_NONE;
	return cu_check_init();
}

/* ------------------------------------------------------------------------ */
/* The primary context                                                      */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	cu_lock();
	if (!cu_g.primary_listed) {
		unsigned int flags = cu_g.primary.flags;

		ctx_init(&cu_g.primary, flags, true);
		cu_g.primary_listed = true;
	}
	cu_g.primary.retained++;
	*pctx = &cu_g.primary;
	cu_unlock();
	return CUDA_SUCCESS;
}

static void primary_reset(void)
{
	unsigned int flags = cu_g.primary.flags;

	if (cu_g.primary_listed) {
		ctx_teardown(&cu_g.primary);
		cu_g.primary_listed = false;
	}
	memset(&cu_g.primary, 0, sizeof(cu_g.primary));
	cu_g.primary.flags = flags;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	cu_lock();
	if (!cu_g.primary_listed || cu_g.primary.retained <= 0) {
		cu_unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (--cu_g.primary.retained == 0)
		primary_reset();
	cu_unlock();
	if (!cu_g.primary_listed)
		forget(&cu_g.primary);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	cu_lock();
	primary_reset();
	cu_unlock();
	forget(&cu_g.primary);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	cu_g.primary.flags = flags;
	cu_unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	*flags = cu_g.primary.flags;
	*active = cu_g.primary_listed && cu_g.primary.retained > 0;
	cu_unlock();
	return CUDA_SUCCESS;
}
