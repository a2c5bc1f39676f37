// SPDX-License-Identifier: MIT
/*
 * host_register.c - host-registered memory (cuMemHostRegister).
 *
 * Registering host memory pins it for DMA on a real GPU. Here every host
 * buffer reaches the GPU the same way: copies travel through the
 * channel's pushbuffer (memory.c), so registration only records the
 * range (for cuPointerGetAttribute and to refuse double registration);
 * copies from and to it work like those of any host memory.
 *
 * A device pointer to host memory (CU_MEMHOSTREGISTER_DEVICEMAP,
 * cuMemHostGetDevicePointer) is not possible on this vGPU: the GPU sees
 * only the VM's GPU memory (its own address space, which GPUswap may
 * move), never the guest's system memory, so kernels cannot load from
 * host memory. Those calls return CUDA_ERROR_NOT_SUPPORTED and say why.
 */
#include <stdlib.h>

#include "internal.h"

#define NO_MAPPED_HOST_MEMORY                                                        \
	"the vGPU's kernels reach only the VM's GPU memory, not host memory: "   \
	"copy the data with cuMemcpyHtoD instead"

struct cu_host_alloc *cu_host_find(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (struct cu_host_alloc *h = cu_g.host_allocs; h; h = h->next)
		if (a >= (uintptr_t)h->p && a - (uintptr_t)h->p < h->bytes)
			return h;
	return NULL;
}

static bool overlaps(const void *p, size_t bytes)
{
	uintptr_t a = (uintptr_t)p;

	for (struct cu_host_alloc *h = cu_g.host_allocs; h; h = h->next)
		if (a < (uintptr_t)h->p + h->bytes && (uintptr_t)h->p < a + bytes)
			return true;
	return false;
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	struct cu_host_alloc *h;
	struct CUctx_st *ctx;
	CUresult res;

	if (!p || bytesize == 0 || (uintptr_t)p + bytesize < (uintptr_t)p ||
	    (Flags & ~(unsigned int)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
	                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)))
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & CU_MEMHOSTREGISTER_DEVICEMAP)
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
		               "cuMemHostRegister with CU_MEMHOSTREGISTER_DEVICEMAP: %s",
		               NO_MAPPED_HOST_MEMORY);
	if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
		               "cuMemHostRegister with CU_MEMHOSTREGISTER_IOMEMORY: the vGPU "
		               "does no peer-to-peer I/O");
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS && overlaps(p, bytesize))
		res = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (res == CUDA_SUCCESS) {
		h->p = p;
		h->bytes = bytesize;
		h->registered = true;
		h->ctx = ctx;
		h->next = cu_g.host_allocs;
		cu_g.host_allocs = h;
		h = NULL;
	}
	cu_unlock();
	free(h);
	return res;
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	struct cu_host_alloc *h = NULL;
	struct CUctx_st *ctx;
	CUresult res;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		res = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
		for (struct cu_host_alloc **q = &cu_g.host_allocs; *q; q = &(*q)->next) {
			if ((*q)->p == p && (*q)->registered) {
				h = *q;
				*q = h->next;
				res = CUDA_SUCCESS;
				break;
			}
		}
	}
	cu_unlock();
	free(h);
	return res;
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	static bool said;

	if (!pdptr || !p || Flags)
		return CUDA_ERROR_INVALID_VALUE;
	cu_warn_once(&said, "cuMemHostGetDevicePointer is not supported: %s",
	             NO_MAPPED_HOST_MEMORY);
	return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "cuMemHostGetDevicePointer: %s",
	               NO_MAPPED_HOST_MEMORY);
}
