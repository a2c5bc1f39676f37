// SPDX-License-Identifier: MIT
/*
 * check_cuda_abi.c - cudagpu's own declarations of the CUDA driver API
 * (vgpu-backend/cudagpu/cuda_api.h) against NVIDIA's <cuda.h>.
 *
 * Built only where the toolkit's header is found. Every check is a
 * _Static_assert, so a mismatch fails the build; the program then only
 * says what was checked. This file checks constants and struct layouts;
 * check_cuda_abi_functions.c checks every function's type.
 */
#include <stddef.h>
#include <stdio.h>

#include <cuda.h>

#include "cuda_api.h"

#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " != " #theirs)
#define SAME_LAYOUT(ours, theirs, our_field, their_field)                                  \
	_Static_assert(offsetof(ours, our_field) == offsetof(theirs, their_field) &&        \
	               sizeof(((ours *)0)->our_field) == sizeof(((theirs *)0)->their_field), \
	               #ours "." #our_field " differs from " #theirs "." #their_field)

SAME(CG_SUCCESS, CUDA_SUCCESS);
SAME(CG_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(CG_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(CG_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(CG_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(CG_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(CG_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME(CG_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS);
SAME(CG_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
SAME(CG_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
SAME(CG_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
SAME(CG_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_LAUNCH_TIMEOUT);
SAME(CG_ERROR_ASSERT, CUDA_ERROR_ASSERT);
SAME(CG_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_HARDWARE_STACK_ERROR);
SAME(CG_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_ILLEGAL_INSTRUCTION);
SAME(CG_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS);
SAME(CG_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED);
SAME(CG_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME(CG_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST);
SAME(CG_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST_NUMA);
SAME(CG_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME(CG_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_NONE);
SAME(CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME(sizeof(cg_mem_handle_type), sizeof(CUmemAllocationHandleType));
SAME(CG_MEM_ALLOC_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
SAME(CG_MEM_ALLOC_GRANULARITY_RECOMMENDED, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
SAME(CG_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_NONE);
SAME(CG_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_READ);
SAME(CG_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME(CG_MEMHOSTREGISTER_PORTABLE, CU_MEMHOSTREGISTER_PORTABLE);
SAME(CG_MEMHOSTREGISTER_DEVICEMAP, CU_MEMHOSTREGISTER_DEVICEMAP);
SAME(CG_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME(CG_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL);
SAME(CG_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_MEM_ADVISE_SET_PREFERRED_LOCATION);
SAME(CG_MEM_ADVISE_SET_ACCESSED_BY, CU_MEM_ADVISE_SET_ACCESSED_BY);
SAME(sizeof(cg_mem_advise), sizeof(CUmem_advise));
SAME(CG_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME(CG_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME(CG_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME(CG_STREAM_WRITE_VALUE_DEFAULT, CU_STREAM_WRITE_VALUE_DEFAULT);
SAME(CG_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);
SAME(CG_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(CG_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
SAME(CG_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
     CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
SAME(CG_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
     CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME(CG_DEVICE_ATTRIBUTE_HOST_NUMA_ID, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
SAME(CG_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
     CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME(CG_API_VERSION <= CUDA_VERSION, 1);

SAME(sizeof(cg_result), sizeof(CUresult));
SAME(sizeof(cg_device), sizeof(CUdevice));
SAME(sizeof(cg_deviceptr), sizeof(CUdeviceptr));
SAME(sizeof(cg_mem_handle), sizeof(CUmemGenericAllocationHandle));
SAME(sizeof(cg_device_attribute), sizeof(CUdevice_attribute));
SAME(sizeof(cg_granularity_option), sizeof(CUmemAllocationGranularity_flags));

SAME(sizeof(struct cg_mem_location), sizeof(CUmemLocation));
SAME_LAYOUT(struct cg_mem_location, CUmemLocation, type, type);
SAME_LAYOUT(struct cg_mem_location, CUmemLocation, id, id);
SAME(sizeof(struct cg_mem_allocation_prop), sizeof(CUmemAllocationProp));
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, type, type);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, requested_handle_types,
            requestedHandleTypes);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, location, location);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, win32_handle_meta_data,
            win32HandleMetaData);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, alloc_flags, allocFlags);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp,
            alloc_flags.gpu_direct_rdma_capable, allocFlags.gpuDirectRDMACapable);
SAME_LAYOUT(struct cg_mem_allocation_prop, CUmemAllocationProp, alloc_flags.usage,
            allocFlags.usage);
SAME(sizeof(struct cg_mem_access_desc), sizeof(CUmemAccessDesc));
SAME_LAYOUT(struct cg_mem_access_desc, CUmemAccessDesc, location, location);
SAME_LAYOUT(struct cg_mem_access_desc, CUmemAccessDesc, flags, flags);

unsigned check_cuda_abi_functions(void);

int main(void)
{
	printf("cuda_api.h matches <cuda.h> %d.%d: constants, struct layouts and %u function "
	       "types\n", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
	       check_cuda_abi_functions());
	return 0;
}
