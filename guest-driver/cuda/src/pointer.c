// SPDX-License-Identifier: MIT
/*
 * pointer.c - cuPointerGetAttribute(s): what the library knows about an
 * address (unified addressing: one address space for device and host
 * pointers).
 *
 * Device memory is what the pointer table holds (cuMemAlloc buffers and
 * module globals): MEMORY_TYPE DEVICE, its context, range, buffer id.
 * Host memory is cuMemHostAlloc's or cuMemHostRegister's: MEMORY_TYPE
 * HOST and its host pointer; it has no device pointer on this vGPU
 * (host_register.c says why). Any other address is unknown:
 * cuPointerGetAttribute says CUDA_ERROR_INVALID_VALUE, while
 * cuPointerGetAttributes, as NVIDIA's does, answers zeros (MEMORY_TYPE 0)
 * and succeeds. Attributes the vGPU has nothing for (P2P tokens, IPC,
 * mempools, RDMA) are CUDA_ERROR_NOT_SUPPORTED / zero.
 */
#include <string.h>

#include "internal.h"

struct ptr_info {
	bool device, host;
	const struct cu_range *r;
	const struct cu_host_alloc *h;
};

static void lookup(CUdeviceptr ptr, struct ptr_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->r = cu_ptr_find(&cu_g.ptrs, ptr);
	if (pi->r) {
		pi->device = true;
		return;
	}
	pi->h = cu_host_find((const void *)(uintptr_t)ptr);
	pi->host = pi->h != NULL;
}

/* Locked: one attribute of a known pointer into data (whose size the
 * attribute implies). */
static CUresult attribute(const struct ptr_info *pi, CUpointer_attribute a, void *data,
                          CUdeviceptr ptr)
{
	struct CUctx_st *owner = pi->device ? pi->r->owner : pi->h->ctx;

	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = owner && cu_ctx_valid(owner) ? owner : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = pi->device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (!pi->device)
			return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
			               "host memory has no device pointer on the vGPU");
		*(CUdeviceptr *)data = ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (pi->device)
			return CUDA_ERROR_INVALID_VALUE; /* device memory is not mapped */
		*(void **)data = (void *)(uintptr_t)ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		/* host memory: its start address identifies it */
		*(unsigned long long *)data =
			pi->device ? pi->r->id : (unsigned long long)(uintptr_t)pi->h->p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = pi->device ? pi->r->va : (CUdeviceptr)(uintptr_t)pi->h->p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = pi->device ? (size_t)pi->r->bytes : pi->h->bytes;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned int *)data = 3; /* CU_POINTER_ACCESS_FLAG_READWRITE */
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(void **)data = NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "P2P tokens: the vGPU does no peer I/O");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute_id,
                                       CUdeviceptr ptr)
{
	struct ptr_info pi;
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	lookup(ptr, &pi);
	if (!pi.device && !pi.host)
		res = cu_fail(CUDA_ERROR_INVALID_VALUE,
		              "cuPointerGetAttribute: 0x%llx is no memory of the library", ptr);
	else
		res = attribute(&pi, attribute_id, data, ptr);
	cu_unlock();
	return res;
}

/* The size of attribute a's value, for zeroing an unknown pointer's. */
static size_t value_size(CUpointer_attribute a)
{
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		return sizeof(void *);
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		return sizeof(CUdeviceptr);
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		return sizeof(size_t);
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		return sizeof(unsigned long long);
	case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
		return 0;
	default:
		return sizeof(int);
	}
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr)
{
	struct ptr_info pi;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (numAttributes && (!attributes || !data))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < numAttributes; i++)
		if (!data[i] || attributes[i] < CU_POINTER_ATTRIBUTE_CONTEXT ||
		    attributes[i] > CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID)
			return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	lookup(ptr, &pi);
	for (unsigned int i = 0; i < numAttributes && res == CUDA_SUCCESS; i++) {
		if (!pi.device && !pi.host) {
			memset(data[i], 0, value_size(attributes[i]));
			continue;
		}
		res = attribute(&pi, attributes[i], data[i], ptr);
		/* as NVIDIA's: what a pointer does not have reads as zero */
		if (res == CUDA_ERROR_NOT_SUPPORTED || res == CUDA_ERROR_INVALID_VALUE) {
			memset(data[i], 0, value_size(attributes[i]));
			res = CUDA_SUCCESS;
		}
	}
	cu_unlock();
	return res;
}
