/* SPDX-License-Identifier: MIT */
/*
 * cuda_api.h - the part of the CUDA driver API that cudagpu uses, declared
 * here from NVIDIA's documented ABI so that no build needs the CUDA toolkit.
 *
 * Names carry a cg_/CG_ prefix so this header and <cuda.h> can be included
 * together: tests/cudagpu/check_cuda_abi.c does exactly that on a machine
 * with the toolkit and asserts that every constant, enum value, struct
 * layout and function type below matches the real one.
 *
 * The functions are resolved at run time (cuda_api_load): libcuda.so.1 is
 * opened with dlopen and each entry point is looked up with
 * cuGetProcAddress for the CUDA version cudagpu was written against
 * (CG_API_VERSION), falling back to dlsym of the versioned symbol name.
 */
#ifndef VGPU_CUDAGPU_CUDA_API_H
#define VGPU_CUDAGPU_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

struct vgpu_error; /* vgpu/error.h */

/* The driver API version the declarations follow (12.2: host-NUMA VMM). */
#define CG_API_VERSION 12020

#ifndef CG_ABI_CHECK
typedef int cg_result;
typedef int cg_device;
typedef unsigned long long cg_deviceptr;
typedef unsigned long long cg_mem_handle; /* CUmemGenericAllocationHandle */
typedef struct CUctx_st *cg_context;
typedef struct CUmod_st *cg_module;
typedef struct CUfunc_st *cg_function;
typedef struct CUstream_st *cg_stream;
typedef struct CUevent_st *cg_event;
typedef int cg_device_attribute;    /* CUdevice_attribute */
typedef int cg_granularity_option;  /* CUmemAllocationGranularity_flags */
typedef int cg_mem_advise;          /* CUmem_advise */
typedef int cg_mem_handle_type;     /* CUmemAllocationHandleType */
#else
/* tests/cudagpu/check_cuda_abi_functions.c: the same names for the real
 * types of <cuda.h>, so each function type below can be compared with the
 * real declaration. */
typedef CUresult cg_result;
typedef CUdevice cg_device;
typedef CUdeviceptr cg_deviceptr;
typedef CUmemGenericAllocationHandle cg_mem_handle;
typedef CUcontext cg_context;
typedef CUmodule cg_module;
typedef CUfunction cg_function;
typedef CUstream cg_stream;
typedef CUevent cg_event;
typedef CUdevice_attribute cg_device_attribute;
typedef CUmemAllocationGranularity_flags cg_granularity_option;
typedef CUmem_advise cg_mem_advise;
typedef CUmemAllocationHandleType cg_mem_handle_type;
#define cg_mem_location CUmemLocation_st
#define cg_mem_allocation_prop CUmemAllocationProp_st
#define cg_mem_access_desc CUmemAccessDesc_st
#endif

/* CUresult values cudagpu tells apart. */
#define CG_SUCCESS 0
#define CG_ERROR_INVALID_VALUE 1
#define CG_ERROR_OUT_OF_MEMORY 2
#define CG_ERROR_NOT_INITIALIZED 3
#define CG_ERROR_NO_DEVICE 100
#define CG_ERROR_INVALID_DEVICE 101
#define CG_ERROR_NOT_READY 600
#define CG_ERROR_ILLEGAL_ADDRESS 700 /* sticky: the context is unusable */
#define CG_ERROR_NOT_SUPPORTED 801
/* A user kernel's failures (process isolation runs modules): */
#define CG_ERROR_INVALID_PTX 218
#define CG_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CG_ERROR_LAUNCH_TIMEOUT 702        /* sticky */
#define CG_ERROR_ASSERT 710                /* sticky */
#define CG_ERROR_HARDWARE_STACK_ERROR 714  /* sticky */
#define CG_ERROR_ILLEGAL_INSTRUCTION 715   /* sticky */
#define CG_ERROR_MISALIGNED_ADDRESS 716    /* sticky */
#define CG_ERROR_LAUNCH_FAILED 719         /* sticky */

/* CUmemLocationType */
#define CG_MEM_LOCATION_TYPE_DEVICE 1
#define CG_MEM_LOCATION_TYPE_HOST 2
#define CG_MEM_LOCATION_TYPE_HOST_NUMA 3
/* CUmemAllocationType */
#define CG_MEM_ALLOCATION_TYPE_PINNED 1
/* CUmemAllocationHandleType */
#define CG_MEM_HANDLE_TYPE_NONE 0
#define CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 1 /* the shareable handle is an int fd */
/* CUmemAllocationGranularity_flags */
#define CG_MEM_ALLOC_GRANULARITY_MINIMUM 0
#define CG_MEM_ALLOC_GRANULARITY_RECOMMENDED 1
/* CUmemAccess_flags */
#define CG_MEM_ACCESS_FLAGS_PROT_NONE 0
#define CG_MEM_ACCESS_FLAGS_PROT_READ 1
#define CG_MEM_ACCESS_FLAGS_PROT_READWRITE 3
/* cuMemHostRegister flags */
#define CG_MEMHOSTREGISTER_PORTABLE 0x01
#define CG_MEMHOSTREGISTER_DEVICEMAP 0x02
/* cuMemHostAlloc flags */
#define CG_MEMHOSTALLOC_PORTABLE 0x01
/* cuMemAllocManaged flags */
#define CG_MEM_ATTACH_GLOBAL 0x1
/* CUmem_advise */
#define CG_MEM_ADVISE_SET_PREFERRED_LOCATION 3
#define CG_MEM_ADVISE_SET_ACCESSED_BY 5
/* CUstream_flags, CUevent_flags */
#define CG_STREAM_NON_BLOCKING 0x1
#define CG_EVENT_DEFAULT 0x0
#define CG_EVENT_DISABLE_TIMING 0x2
/* CUstreamWriteValue_flags */
#define CG_STREAM_WRITE_VALUE_DEFAULT 0x0
/* CUdriverProcAddress_flags */
#define CG_GET_PROC_ADDRESS_DEFAULT 0
/* CUdevice_attribute */
#define CG_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CG_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define CG_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS 89
#define CG_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 102
#define CG_DEVICE_ATTRIBUTE_HOST_NUMA_ID 134
#define CG_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 141

#ifndef CG_ABI_CHECK
struct cg_mem_location { /* CUmemLocation */
	int type;
	int id;
};

struct cg_mem_allocation_prop { /* CUmemAllocationProp */
	int type;
	int requested_handle_types;
	struct cg_mem_location location;
	void *win32_handle_meta_data;
	struct {
		unsigned char compression_type;
		unsigned char gpu_direct_rdma_capable;
		unsigned short usage;
		unsigned char reserved[4];
	} alloc_flags;
};

struct cg_mem_access_desc { /* CUmemAccessDesc */
	struct cg_mem_location location;
	int flags;
};
#endif

/*
 * X(name, return type, parameters): every entry point cudagpu and its
 * benchmark use, by the base name cuGetProcAddress takes. The second
 * column is the versioned symbol dlsym falls back to.
 */
#define CG_API_FUNCTIONS(X)                                                                      \
	X(cuInit, "cuInit", (unsigned int flags))                                                  \
	X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                                \
	X(cuGetErrorName, "cuGetErrorName", (cg_result error, const char **name))                   \
	X(cuGetErrorString, "cuGetErrorString", (cg_result error, const char **text))               \
	X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                      \
	X(cuDeviceGet, "cuDeviceGet", (cg_device *device, int ordinal))                            \
	X(cuDeviceGetName, "cuDeviceGetName", (char *name, int len, cg_device device))             \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *value, cg_device_attribute attribute,               \
	                                                 cg_device device))                        \
	X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *bytes, cg_device device))              \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (cg_context *ctx,                 \
	                                                         cg_device device))                \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (cg_device device))           \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", (cg_context ctx))                                    \
	X(cuCtxSynchronize, "cuCtxSynchronize", (void))                                            \
	X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t *free_bytes, size_t *total_bytes))              \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity",                         \
	  (size_t *granularity, const struct cg_mem_allocation_prop *prop,                   \
	   cg_granularity_option option))            \
	X(cuMemCreate, "cuMemCreate", (cg_mem_handle *handle, size_t size,                        \
	                               const struct cg_mem_allocation_prop *prop,                  \
	                               unsigned long long flags))                                  \
	X(cuMemRelease, "cuMemRelease", (cg_mem_handle handle))                                    \
	/* Process isolation: a physical allocation made with a POSIX fd handle  \
	 * type travels to a worker process as a file descriptor. */              \
	X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle",                           \
	  (void *shareable_handle, cg_mem_handle handle, cg_mem_handle_type handle_type,          \
	   unsigned long long flags))                                                              \
	X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle",                       \
	  (cg_mem_handle *handle, void *os_handle, cg_mem_handle_type handle_type))                \
	X(cuMemAddressReserve, "cuMemAddressReserve", (cg_deviceptr *ptr, size_t size,            \
	                                               size_t alignment, cg_deviceptr addr,        \
	                                               unsigned long long flags))                  \
	X(cuMemAddressFree, "cuMemAddressFree", (cg_deviceptr ptr, size_t size))                   \
	X(cuMemMap, "cuMemMap", (cg_deviceptr ptr, size_t size, size_t offset,                    \
	                         cg_mem_handle handle, unsigned long long flags))                  \
	X(cuMemUnmap, "cuMemUnmap", (cg_deviceptr ptr, size_t size))                               \
	X(cuMemSetAccess, "cuMemSetAccess", (cg_deviceptr ptr, size_t size,                       \
	                                     const struct cg_mem_access_desc *desc, size_t count)) \
	X(cuMemHostRegister, "cuMemHostRegister_v2", (void *p, size_t bytes, unsigned int flags)) \
	X(cuMemHostUnregister, "cuMemHostUnregister", (void *p))                                   \
	X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2",                              \
	  (cg_deviceptr *device_ptr, void *p, unsigned int flags))                                 \
	X(cuMemHostAlloc, "cuMemHostAlloc", (void **p, size_t bytes, unsigned int flags))          \
	X(cuMemFreeHost, "cuMemFreeHost", (void *p))                                               \
	X(cuMemAlloc, "cuMemAlloc_v2", (cg_deviceptr *ptr, size_t bytes))                          \
	X(cuMemAllocManaged, "cuMemAllocManaged", (cg_deviceptr *ptr, size_t bytes,               \
	                                           unsigned int flags))                            \
	X(cuMemFree, "cuMemFree_v2", (cg_deviceptr ptr))                                           \
	/* The CUmemLocation forms (CUDA 12.2; the default names from 13.0): */                   \
	X(cuMemAdvise_v2, "cuMemAdvise_v2", (cg_deviceptr ptr, size_t bytes,                      \
	                                     cg_mem_advise advice,                                \
	                                     struct cg_mem_location location))                    \
	X(cuMemPrefetchAsync_v2, "cuMemPrefetchAsync_v2", (cg_deviceptr ptr, size_t bytes,        \
	                                                   struct cg_mem_location location,       \
	                                                   unsigned int flags, cg_stream stream)) \
	X(cuMemcpy, "cuMemcpy", (cg_deviceptr dst, cg_deviceptr src, size_t bytes))                \
	X(cuMemcpyAsync, "cuMemcpyAsync", (cg_deviceptr dst, cg_deviceptr src, size_t bytes,      \
	                                   cg_stream stream))                                      \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (cg_deviceptr dst, const void *src, size_t bytes))      \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, cg_deviceptr src, size_t bytes))            \
	X(cuMemsetD8Async, "cuMemsetD8Async", (cg_deviceptr dst, unsigned char value,             \
	                                       size_t count, cg_stream stream))                    \
	X(cuMemsetD32Async, "cuMemsetD32Async", (cg_deviceptr dst, unsigned int value,            \
	                                         size_t count, cg_stream stream))                  \
	X(cuStreamCreate, "cuStreamCreate", (cg_stream *stream, unsigned int flags))               \
	X(cuStreamDestroy, "cuStreamDestroy_v2", (cg_stream stream))                               \
	X(cuStreamSynchronize, "cuStreamSynchronize", (cg_stream stream))                          \
	X(cuStreamQuery, "cuStreamQuery", (cg_stream stream))                                      \
	X(cuStreamWriteValue64, "cuStreamWriteValue64_v2", (cg_stream stream, cg_deviceptr addr,  \
	                                                    uint64_t value, unsigned int flags))   \
	X(cuEventCreate, "cuEventCreate", (cg_event *event, unsigned int flags))                   \
	X(cuEventDestroy, "cuEventDestroy_v2", (cg_event event))                                   \
	X(cuEventRecord, "cuEventRecord", (cg_event event, cg_stream stream))                      \
	X(cuEventQuery, "cuEventQuery", (cg_event event))                                          \
	X(cuEventSynchronize, "cuEventSynchronize", (cg_event event))                              \
	X(cuEventElapsedTime, "cuEventElapsedTime", (float *ms, cg_event start, cg_event end))     \
	X(cuModuleLoadData, "cuModuleLoadData", (cg_module *module, const void *image))            \
	X(cuModuleUnload, "cuModuleUnload", (cg_module module))                                    \
	X(cuModuleGetFunction, "cuModuleGetFunction", (cg_function *function, cg_module module,   \
	                                               const char *name))                          \
	X(cuModuleGetGlobal, "cuModuleGetGlobal_v2", (cg_deviceptr *dptr, size_t *bytes,          \
	                                              cg_module module, const char *name))         \
	X(cuLaunchKernel, "cuLaunchKernel", (cg_function f, unsigned int grid_x,                  \
	                                     unsigned int grid_y, unsigned int grid_z,             \
	                                     unsigned int block_x, unsigned int block_y,           \
	                                     unsigned int block_z, unsigned int shared_bytes,      \
	                                     cg_stream stream, void **params, void **extra))

#define CG_DECLARE_TYPE(name, symbol, params) typedef cg_result (*cg_##name##_fn) params;
CG_API_FUNCTIONS(CG_DECLARE_TYPE)
#undef CG_DECLARE_TYPE

struct cuda_api {
	void *library;
	int driver_version;
#define CG_DECLARE_MEMBER(name, symbol, params) cg_##name##_fn name;
	CG_API_FUNCTIONS(CG_DECLARE_MEMBER)
#undef CG_DECLARE_MEMBER
};

/*
 * Open libcuda.so.1 and resolve every function. library is the file name to
 * open (NULL: "libcuda.so.1", or $VGPU_CUDA_LIBRARY when set). Returns 0, or
 * -ENOENT (library not found) / -ENOSYS (a function is missing, named in
 * error).
 */
int cuda_api_load(struct cuda_api *api, const char *library, struct vgpu_error *error);
void cuda_api_unload(struct cuda_api *api);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for err, into buf. */
const char *cuda_api_error(const struct cuda_api *api, cg_result err, char *buf, size_t len);

#endif /* VGPU_CUDAGPU_CUDA_API_H */
