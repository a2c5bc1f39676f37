// SPDX-License-Identifier: MIT
/*
 * proc_address.c - cuGetProcAddress: a symbol's base name (as a program
 * writes it, "cuMemAlloc") and the CUDA version it was built for ->
 * the form of the function that version's cuda.h selects, as NVIDIA's
 * driver answers: each row is (name, function, first CUDA version with
 * this form), and the answer is the row of the highest version <=
 * cudaVersion. A name not here is CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; one whose forms are all newer
 * than cudaVersion, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM gets the same functions:
 * the per-thread default stream is the legacy one here.
 *
 * Also here: the unversioned (first) forms of functions whose later form
 * has the same type, exported for programs built against older headers.
 */
#include <string.h>

#include "internal.h"

/* The first forms (their names are macros in cuda.h). */
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGetProcAddress

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);
CUresult CUDAAPI cuEventDestroy(CUevent hEvent);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) { return cuCtxPopCurrent_v2(pctx); }
CUresult CUDAAPI cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }
CUresult CUDAAPI cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

struct proc_entry {
	const char *name;
	void *fn;
	int version;
};

#define E(name, fn, version) { name, (void *)(fn), version }

/* Rows of one name are adjacent, oldest form first. */
static const struct proc_entry table[] = {
	E("cuGetErrorString", cuGetErrorString, 6000),
	E("cuGetErrorName", cuGetErrorName, 6000),
	E("cuInit", cuInit, 2000),
	E("cuDriverGetVersion", cuDriverGetVersion, 2020),
	E("cuGetProcAddress", cuGetProcAddress, 11030),
	E("cuGetProcAddress", cuGetProcAddress_v2, 12000),
	E("cuGetExportTable", cuGetExportTable, 3000),
	E("cuDeviceGet", cuDeviceGet, 2000),
	E("cuDeviceGetCount", cuDeviceGetCount, 2000),
	E("cuDeviceGetName", cuDeviceGetName, 2000),
	E("cuDeviceGetUuid", cuDeviceGetUuid, 9020),
	E("cuDeviceGetUuid", cuDeviceGetUuid_v2, 11040),
	E("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020),
	E("cuDeviceGetAttribute", cuDeviceGetAttribute, 2000),
	E("cuDeviceComputeCapability", cuDeviceComputeCapability, 2000),
	E("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId, 4010),
	E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000),
	E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease, 7000),
	E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000),
	E("cuDevicePrimaryCtxSetFlags", cuDevicePrimaryCtxSetFlags, 7000),
	E("cuDevicePrimaryCtxSetFlags", cuDevicePrimaryCtxSetFlags_v2, 11000),
	E("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState, 7000),
	E("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset, 7000),
	E("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2, 11000),
	E("cuCtxCreate", cuCtxCreate_v2, 3020),
	E("cuCtxCreate", cuCtxCreate_v3, 11040),
	E("cuCtxCreate", cuCtxCreate_v4, 12050),
	E("cuCtxDestroy", cuCtxDestroy, 2000),
	E("cuCtxDestroy", cuCtxDestroy_v2, 4000),
	E("cuCtxPushCurrent", cuCtxPushCurrent, 2000),
	E("cuCtxPushCurrent", cuCtxPushCurrent_v2, 4000),
	E("cuCtxPopCurrent", cuCtxPopCurrent, 2000),
	E("cuCtxPopCurrent", cuCtxPopCurrent_v2, 4000),
	E("cuCtxSetCurrent", cuCtxSetCurrent, 4000),
	E("cuCtxGetCurrent", cuCtxGetCurrent, 4000),
	E("cuCtxGetDevice", cuCtxGetDevice, 2000),
	E("cuCtxGetFlags", cuCtxGetFlags, 7000),
	E("cuCtxGetApiVersion", cuCtxGetApiVersion, 3020),
	E("cuCtxSynchronize", cuCtxSynchronize, 2000),
	E("cuCtxSetLimit", cuCtxSetLimit, 3010),
	E("cuCtxGetLimit", cuCtxGetLimit, 3010),
	E("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange, 5050),
	E("cuCtxSetCacheConfig", cuCtxSetCacheConfig, 3020),
	E("cuCtxGetCacheConfig", cuCtxGetCacheConfig, 3020),
	E("cuModuleLoad", cuModuleLoad, 2000),
	E("cuModuleLoadData", cuModuleLoadData, 2000),
	E("cuModuleLoadDataEx", cuModuleLoadDataEx, 2010),
	E("cuModuleLoadFatBinary", cuModuleLoadFatBinary, 2000),
	E("cuModuleUnload", cuModuleUnload, 2000),
	E("cuModuleGetFunction", cuModuleGetFunction, 2000),
	E("cuModuleGetGlobal", cuModuleGetGlobal_v2, 3020),
	E("cuFuncGetAttribute", cuFuncGetAttribute, 2020),
	E("cuFuncSetAttribute", cuFuncSetAttribute, 9000),
	E("cuFuncSetCacheConfig", cuFuncSetCacheConfig, 3000),
	E("cuMemGetInfo", cuMemGetInfo_v2, 3020),
	E("cuMemAlloc", cuMemAlloc_v2, 3020),
	E("cuMemAllocPitch", cuMemAllocPitch_v2, 3020),
	E("cuMemFree", cuMemFree_v2, 3020),
	E("cuMemGetAddressRange", cuMemGetAddressRange_v2, 3020),
	E("cuMemAllocHost", cuMemAllocHost_v2, 3020),
	E("cuMemFreeHost", cuMemFreeHost, 2000),
	E("cuMemHostAlloc", cuMemHostAlloc, 2020),
	E("cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020),
	E("cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020),
	E("cuMemcpyDtoD", cuMemcpyDtoD_v2, 3020),
	E("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2, 3020),
	E("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2, 3020),
	E("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2, 3020),
	E("cuMemcpy", cuMemcpy, 4000),
	E("cuMemcpyAsync", cuMemcpyAsync, 4000),
	E("cuMemsetD8", cuMemsetD8_v2, 3020),
	E("cuMemsetD16", cuMemsetD16_v2, 3020),
	E("cuMemsetD32", cuMemsetD32_v2, 3020),
	E("cuMemsetD8Async", cuMemsetD8Async, 3020),
	E("cuMemsetD16Async", cuMemsetD16Async, 3020),
	E("cuMemsetD32Async", cuMemsetD32Async, 3020),
	E("cuStreamCreate", cuStreamCreate, 2000),
	E("cuStreamCreateWithPriority", cuStreamCreateWithPriority, 5050),
	E("cuStreamDestroy", cuStreamDestroy, 2000),
	E("cuStreamDestroy", cuStreamDestroy_v2, 4000),
	E("cuStreamSynchronize", cuStreamSynchronize, 2000),
	E("cuStreamQuery", cuStreamQuery, 2000),
	E("cuStreamWaitEvent", cuStreamWaitEvent, 3020),
	E("cuStreamGetFlags", cuStreamGetFlags, 5050),
	E("cuStreamGetPriority", cuStreamGetPriority, 5050),
	E("cuStreamGetCtx", cuStreamGetCtx, 9020),
	E("cuStreamAddCallback", cuStreamAddCallback, 5000),
	E("cuLaunchHostFunc", cuLaunchHostFunc, 10000),
	E("cuEventCreate", cuEventCreate, 2000),
	E("cuEventRecord", cuEventRecord, 2000),
	E("cuEventQuery", cuEventQuery, 2000),
	E("cuEventSynchronize", cuEventSynchronize, 2000),
	E("cuEventDestroy", cuEventDestroy, 2000),
	E("cuEventDestroy", cuEventDestroy_v2, 4000),
	E("cuEventElapsedTime", cuEventElapsedTime, 2000),
	E("cuEventElapsedTime", cuEventElapsedTime_v2, 12080),
	E("cuLaunchKernel", cuLaunchKernel, 4000),
	E("cuOccupancyMaxActiveBlocksPerMultiprocessor",
	  cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050),
	E("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
	  cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000),
	E("cuOccupancyMaxPotentialBlockSize", cuOccupancyMaxPotentialBlockSize, 6050),
	E("cuOccupancyMaxPotentialBlockSizeWithFlags", cuOccupancyMaxPotentialBlockSizeWithFlags,
	  7000),
	E("cuMemAllocManaged", cuMemAllocManaged, 6000),
	E("cuMemHostRegister", cuMemHostRegister_v2, 6050),
	E("cuMemHostUnregister", cuMemHostUnregister, 4000),
	E("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2, 3020),
	E("cuPointerGetAttribute", cuPointerGetAttribute, 4000),
	E("cuArrayDestroy", cuArrayDestroy, 2000),
	E("cuGraphCreate", cuGraphCreate, 10000),
	E("cuGraphDestroy", cuGraphDestroy, 10000),
	E("cuLinkCreate", cuLinkCreate_v2, 6050),
	E("cuLinkAddData", cuLinkAddData_v2, 6050),
	E("cuLinkComplete", cuLinkComplete, 5050),
	E("cuLinkDestroy", cuLinkDestroy, 5050),
	E("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, 9000),
};

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct proc_entry *best = NULL;
	bool named = false;

	if (!symbol || !pfn ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
	                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].name, symbol))
			continue;
		named = true;
		if (table[i].version <= cudaVersion)
			best = &table[i];
	}
	if (!best) {
		if (symbolStatus)
			*symbolStatus = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
			                        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = best->fn;
	if (symbolStatus)
		*symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
