// SPDX-License-Identifier: MIT
/*
 * memcpy2d.c - pitched copies and fills: cuMemcpy2D(Async),
 * cuMemsetD2D8/32(Async).
 *
 * Each is built from the one-dimensional operations of memory.c, so every
 * row is checked against the pointer table like any copy: rows that are
 * contiguous on both sides (pitch == width, or one row) are one copy;
 * otherwise host-to-device and device-to-device copies are one command per
 * row in the stream (the synchronous form waits for the last, which the
 * stream orders after the others), and a device-to-host copy brings the
 * whole source span back in one download and scatters its rows (so it is
 * complete when it returns, like cuMemcpyDtoHAsync). Host-to-host rows are
 * memcpy after the stream's earlier work. CU_MEMORYTYPE_UNIFIED pointers
 * are device memory when the pointer table holds them, host memory
 * otherwise; arrays (CU_MEMORYTYPE_ARRAY) are not supported.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct side {
	bool device;
	uintptr_t host;
	CUdeviceptr dev;
	size_t pitch;
};

static CUresult resolve(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                        size_t pitch, struct side *s)
{
	uint64_t off;

	if (__builtin_mul_overflow((uint64_t)y, (uint64_t)pitch, &off) ||
	    __builtin_add_overflow(off, (uint64_t)x, &off))
		return CUDA_ERROR_INVALID_VALUE;
	s->pitch = pitch;
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		s->device = false;
		break;
	case CU_MEMORYTYPE_DEVICE:
		s->device = true;
		break;
	case CU_MEMORYTYPE_UNIFIED:
		cu_lock();
		s->device = cu_ptr_find(&cu_g.ptrs, dev) != NULL;
		cu_unlock();
		host = (const void *)(uintptr_t)dev;
		break;
	case CU_MEMORYTYPE_ARRAY:
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemcpy2D: arrays are not supported");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (s->device) {
		s->dev = dev + off;
	} else {
		if (!host)
			return CUDA_ERROR_INVALID_VALUE;
		s->host = (uintptr_t)host + (uintptr_t)off;
	}
	return CUDA_SUCCESS;
}

static CUresult dtoh_rows(const struct side *d, const struct side *s, size_t w, size_t h,
                          CUstream st)
{
	size_t span = (h - 1) * s->pitch + w;
	uint8_t *tmp;
	CUresult res;

	if (h > 1 && span / s->pitch < h - 1)
		return CUDA_ERROR_INVALID_VALUE;
	tmp = malloc(span);
	if (!tmp)
		return CUDA_ERROR_OUT_OF_MEMORY;
	res = cu_copy_dtoh(tmp, s->dev, span, st);
	for (size_t y = 0; res == CUDA_SUCCESS && y < h; y++)
		memcpy((void *)(d->host + y * d->pitch), tmp + y * s->pitch, w);
	free(tmp);
	return res;
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream st, bool sync)
{
	struct side s = { 0 }, d = { 0 };
	size_t w, h;
	bool contiguous;
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	w = c->WidthInBytes;
	h = c->Height;
	if (h > 1 && (c->srcPitch < w || c->dstPitch < w))
		return cu_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D: a pitch below the width");
	res = resolve(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
	              c->srcPitch, &s);
	if (res == CUDA_SUCCESS)
		res = resolve(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
		              c->dstPitch, &d);
	if (res || !w || !h)
		return res;
	if (h > 1 && (h - 1) > (SIZE_MAX - w) / (s.pitch > d.pitch ? s.pitch : d.pitch))
		return CUDA_ERROR_INVALID_VALUE;
	contiguous = h == 1 || (s.pitch == w && d.pitch == w);
	if (contiguous) {
		w *= h;
		h = 1;
	}
	if (!s.device && d.device) {
		for (size_t y = 0; res == CUDA_SUCCESS && y < h; y++)
			res = cu_copy_htod(d.dev + y * d.pitch, (const void *)(s.host + y * s.pitch),
			                   w, st, sync && y == h - 1);
	} else if (s.device && d.device) {
		for (size_t y = 0; res == CUDA_SUCCESS && y < h; y++)
			res = cu_copy_dtod(d.dev + y * d.pitch, s.dev + y * s.pitch, w, st,
			                   sync && y == h - 1);
	} else if (s.device) {
		res = h == 1 ? cu_copy_dtoh((void *)d.host, s.dev, w, st) :
		               dtoh_rows(&d, &s, w, h, st);
	} else {
		res = cuStreamSynchronize(st);
		for (size_t y = 0; res == CUDA_SUCCESS && y < h; y++)
			memmove((void *)(d.host + y * d.pitch), (const void *)(s.host + y * s.pitch),
			        w);
	}
	return res;
}

CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
	return copy2d(pCopy, NULL, true);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy2d(pCopy, hStream, false);
}

static CUresult fill2d(CUdeviceptr dst, size_t pitch, uint32_t pattern, size_t elem,
                       size_t width, size_t height, CUstream st)
{
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!width || !height)
		return CUDA_SUCCESS;
	if (width > SIZE_MAX / elem || (height > 1 && pitch < width * elem) || pitch % elem ||
	    (height > 1 && (height - 1) > (SIZE_MAX - width * elem) / pitch))
		return CUDA_ERROR_INVALID_VALUE;
	if (height == 1 || pitch == width * elem)
		return cu_fill(dst, pattern, elem, width * height, st, false);
	for (size_t y = 0; res == CUDA_SUCCESS && y < height; y++)
		res = cu_fill(dst + y * pitch, pattern, elem, width, st, false);
	return res;
}

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                 size_t Width, size_t Height)
{
	return fill2d(dstDevice, dstPitch, uc * 0x01010101u, 1, Width, Height, NULL);
}

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                  size_t Width, size_t Height)
{
	return fill2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                   size_t Width, size_t Height, CUstream hStream)
{
	return fill2d(dstDevice, dstPitch, uc * 0x01010101u, 1, Width, Height, hStream);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                    size_t Width, size_t Height, CUstream hStream)
{
	return fill2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream);
}
