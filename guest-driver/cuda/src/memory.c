// SPDX-License-Identifier: MIT
/*
 * memory.c - GPU memory of the VM, host memory, copies and fills.
 *
 * cuMemAlloc is the runtime's ALLOC (GPUswap accounts, oversubscribes and
 * evicts it like any buffer of the VM) with the eviction priority
 * $VGPU_MEM_PRIORITY (default 7) or vgpuMemAllocWithPriority's. A device
 * pointer is a GPU virtual address; the pointer table (ptrtable.h) says
 * which buffer holds it, and every copy and fill is checked against it
 * before it reaches the GPU (a bad range is CUDA_ERROR_INVALID_VALUE, not
 * a killed channel).
 *
 * A guest reaches GPU memory only through the GPU: host-to-device copies
 * travel in the stream's pushbuffer (vgpu_channel_upload), device-to-host
 * copies come back through it (vgpu_channel_download, which waits),
 * device-to-device copies and fills are COPY and MEMSET commands.
 * cuMemAllocHost memory is ordinary page-aligned host memory: copies from
 * it take the same path. cuMemcpyDtoHAsync therefore returns once the
 * data is there (allowed: it completes early).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "vgpu/abi/commands.h"

static void note_fence(struct CUstream_st *s)
{
	struct vgpu_channel_stats st;

	vgpu_channel_stats(s->ch, &st);
	s->last_fence = st.last_fence;
}

static CUresult alloc(CUdeviceptr *dptr, size_t bytesize, uint32_t priority)
{
	struct cu_range r = { 0 };
	struct CUctx_st *ctx;
	CUresult res;
	int rc;

	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		rc = vgpu_buffer_alloc(cu_g.dev, bytesize, priority, &r.buf);
		if (rc == -ENOMEM)
			res = cu_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of %zu bytes: %s",
			              bytesize, vgpu_device_last_error(cu_g.dev));
		else if (rc < 0)
			res = cu_channel_error(ctx, rc, "cuMemAlloc");
	}
	if (res == CUDA_SUCCESS) {
		r.va = r.buf.gpu_va;
		r.bytes = bytesize;
		r.kind = CU_RANGE_ALLOC;
		r.owner = ctx;
		if (cu_ptr_insert(&cu_g.ptrs, &r) < 0) {
			vgpu_buffer_free(cu_g.dev, &r.buf);
			res = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			*dptr = r.va;
		}
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	return alloc(dptr, bytesize, cu_g.default_priority);
}

CUresult CUDAAPI vgpuMemAllocWithPriority(CUdeviceptr *dptr, size_t bytesize,
                                          unsigned int priority)
{
	if (priority > VGPU_CUDA_PRIORITY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc(dptr, bytesize, priority);
}

CUresult CUDAAPI vgpuMemSetPriority(CUdeviceptr dptr, unsigned int priority)
{
	const struct cu_range *r;
	struct CUctx_st *ctx;
	CUresult res;

	if (priority > VGPU_CUDA_PRIORITY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		r = cu_ptr_find(&cu_g.ptrs, dptr);
		if (!r || r->va != dptr || r->kind != CU_RANGE_ALLOC)
			res = CUDA_ERROR_INVALID_VALUE;
		else if (vgpu_buffer_set_priority(cu_g.dev, &r->buf, priority) < 0)
			res = cu_fail(CUDA_ERROR_UNKNOWN, "priority: %s",
			              vgpu_device_last_error(cu_g.dev));
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch;

	if (!pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (WidthInBytes + 511) & ~(size_t)511;
	if (pitch < WidthInBytes || Height > SIZE_MAX / pitch)
		return CUDA_ERROR_INVALID_VALUE;
	*pPitch = pitch;
	return cuMemAlloc_v2(dptr, pitch * Height);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	const struct cu_range *found;
	struct cu_range r;
	struct CUctx_st *ctx;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS && dptr) {
		found = cu_ptr_find(&cu_g.ptrs, dptr);
		if (!found || found->va != dptr || found->kind != CU_RANGE_ALLOC) {
			res = cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx is not an allocation",
			              dptr);
		} else {
			/* The GPU may still use it: let the context's work finish. */
			res = cu_ctx_sync(ctx);
			if (cu_ptr_remove(&cu_g.ptrs, dptr, &r) == 0)
				vgpu_buffer_free(cu_g.dev, &r.buf);
		}
	}
	cu_unlock();
	return res;
}

void cu_ctx_free_memory(struct CUctx_st *ctx)
{
	struct cu_range r;

	for (size_t i = 0; i < cu_g.ptrs.count;) {
		if (cu_g.ptrs.r[i].owner == ctx && cu_g.ptrs.r[i].kind == CU_RANGE_ALLOC &&
		    cu_ptr_remove(&cu_g.ptrs, cu_g.ptrs.r[i].va, &r) == 0)
			vgpu_buffer_free(cu_g.dev, &r.buf);
		else
			i++;
	}
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	const struct cu_range *r;
	struct CUctx_st *ctx;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		r = cu_ptr_find(&cu_g.ptrs, dptr);
		if (!r) {
			res = CUDA_ERROR_NOT_FOUND;
		} else {
			if (pbase)
				*pbase = r->va;
			if (psize)
				*psize = (size_t)r->bytes;
		}
	}
	cu_unlock();
	return res;
}

/* ------------------------------------------------------------------------ */
/* Host memory                                                              */

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	struct cu_host_alloc *h;
	struct CUctx_st *ctx;
	long page = sysconf(_SC_PAGESIZE);
	CUresult res;

	if (!pp || bytesize == 0 ||
	    (Flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
	                              CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & CU_MEMHOSTALLOC_DEVICEMAP)
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
		               "cuMemHostAlloc: mapped host memory is not supported");
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (posix_memalign(&h->p, page > 0 ? (size_t)page : 4096, bytesize)) {
		free(h);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->bytes = bytesize;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		h->next = cu_g.host_allocs;
		cu_g.host_allocs = h;
		*pp = h->p;
	}
	cu_unlock();
	if (res) {
		free(h->p);
		free(h);
	}
	return res;
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
	struct cu_host_alloc *h = NULL;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	for (struct cu_host_alloc **q = &cu_g.host_allocs; *q; q = &(*q)->next) {
		if ((*q)->p == p) {
			h = *q;
			*q = h->next;
			break;
		}
	}
	cu_unlock();
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	free(h->p);
	free(h);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Copies and fills                                                         */

/* Locked: the stream for an operation on [dst, dst + bytes) etc. */
static CUresult begin_op(CUstream h, struct CUstream_st **s)
{
	struct CUctx_st *ctx;
	CUresult res = cu_enter(&ctx);

	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, h, s);
	if (res == CUDA_SUCCESS)
		res = cu_stream_order(*s);
	return res;
}

static CUresult check_range(CUdeviceptr p, size_t bytes, const char *what)
{
	if (!cu_ptr_contains(&cu_g.ptrs, p, bytes))
		return cu_fail(CUDA_ERROR_INVALID_VALUE,
		               "%s: [0x%llx, +%zu) is not inside one allocation", what, p, bytes);
	return CUDA_SUCCESS;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream h, bool sync)
{
	struct CUstream_st *s;
	uint64_t fence = 0;
	CUresult res;
	int rc;

	if (!src && n)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = begin_op(h, &s);
	if (res == CUDA_SUCCESS && n)
		res = check_range(dst, n, "cuMemcpyHtoD");
	if (res == CUDA_SUCCESS && n) {
		rc = vgpu_channel_upload(s->ch, dst, src, n, &fence);
		note_fence(s);
		if (rc < 0)
			res = cu_channel_error(s->ctx, rc, "cuMemcpyHtoD");
		else if (sync)
			res = cu_stream_wait(s, fence);
	}
	cu_unlock();
	return res;
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
	struct CUstream_st *s;
	CUresult res;
	int rc;

	if (!dst && n)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = begin_op(h, &s);
	if (res == CUDA_SUCCESS && n)
		res = check_range(src, n, "cuMemcpyDtoH");
	if (res == CUDA_SUCCESS && n) {
		rc = vgpu_channel_download(s->ch, dst, src, n);
		note_fence(s);
		if (rc < 0)
			res = cu_channel_error(s->ctx, rc, "cuMemcpyDtoH");
	}
	cu_unlock();
	return res;
}

/* One command (COPY or MEMSET) on a stream, then optionally its fence. */
static CUresult command(struct CUstream_st *s, const uint32_t *cmd, uint32_t words, bool sync)
{
	uint32_t *buf;
	CUresult res = cu_stream_begin(s, words, &buf);

	if (res)
		return res;
	memcpy(buf, cmd, words * sizeof(uint32_t));
	res = cu_stream_submit(s, words);
	if (res == CUDA_SUCCESS && sync)
		res = cu_stream_wait(s, s->last_fence);
	return res;
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h, bool sync)
{
	struct CUstream_st *s;
	uint32_t cmd[1 + VGPU_COPY_ARG_WORDS];
	CUresult res;

	cu_lock();
	res = begin_op(h, &s);
	if (res == CUDA_SUCCESS && n)
		res = check_range(dst, n, "cuMemcpyDtoD (destination)");
	if (res == CUDA_SUCCESS && n)
		res = check_range(src, n, "cuMemcpyDtoD (source)");
	if (res == CUDA_SUCCESS && n)
		res = command(s, cmd, vgpu_push_copy(cmd, dst, src, n), sync);
	cu_unlock();
	return res;
}

static CUresult memset_op(CUdeviceptr dst, uint32_t pattern, size_t elem, size_t count,
                          CUstream h, bool sync)
{
	struct CUstream_st *s;
	uint32_t cmd[1 + VGPU_MEMSET_ARG_WORDS];
	CUresult res;

	if (dst % elem)
		return CUDA_ERROR_INVALID_VALUE;
	if (count > SIZE_MAX / elem)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = begin_op(h, &s);
	if (res == CUDA_SUCCESS && count)
		res = check_range(dst, count * elem, "cuMemset");
	if (res == CUDA_SUCCESS && count)
		res = command(s, cmd, vgpu_push_memset(cmd, dst, pattern, count * elem), sync);
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return htod(dstDevice, srcHost, ByteCount, NULL, true);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return dtoh(dstHost, srcDevice, ByteCount, NULL);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return dtod(dstDevice, srcDevice, ByteCount, NULL, true);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                      size_t ByteCount, CUstream hStream)
{
	return htod(dstDevice, srcHost, ByteCount, hStream, false);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
	return dtoh(dstHost, srcDevice, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream)
{
	return dtod(dstDevice, srcDevice, ByteCount, hStream, false);
}

/* Unified addressing: a pointer in the table is device memory, any other
 * is host memory. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h, bool sync)
{
	bool dst_dev, src_dev;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	dst_dev = cu_ptr_find(&cu_g.ptrs, dst) != NULL;
	src_dev = cu_ptr_find(&cu_g.ptrs, src) != NULL;
	cu_unlock();
	if (dst_dev && src_dev)
		return dtod(dst, src, n, h, sync);
	if (dst_dev)
		return htod(dst, (const void *)(uintptr_t)src, n, h, sync);
	if (src_dev)
		return dtoh((void *)(uintptr_t)dst, src, n, h);
	if (n && (!dst || !src))
		return CUDA_ERROR_INVALID_VALUE;
	if (sync) {
		CUresult res = cuStreamSynchronize(h);

		if (res)
			return res;
	}
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy_any(dst, src, ByteCount, NULL, true);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                               CUstream hStream)
{
	return copy_any(dst, src, ByteCount, hStream, false);
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset_op(dstDevice, uc * 0x01010101u, 1, N, NULL, false);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	return memset_op(dstDevice, us * 0x00010001u, 2, N, NULL, false);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset_op(dstDevice, ui, 4, N, NULL, false);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
	return memset_op(dstDevice, uc * 0x01010101u, 1, N, hStream, false);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                  CUstream hStream)
{
	return memset_op(dstDevice, us * 0x00010001u, 2, N, hStream, false);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
	return memset_op(dstDevice, ui, 4, N, hStream, false);
}
