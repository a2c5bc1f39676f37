// SPDX-License-Identifier: MIT
/*
 * unsupported.c - driver API functions programs commonly link that the
 * vGPU does not offer: managed memory, arrays and textures, graphs,
 * cooperative launches, the runtime's private export tables. Each
 * returns CUDA_ERROR_NOT_SUPPORTED and says its name once on stderr ("libcuda (vgpu): cuGraphCreate is not
 * supported"); none touches its arguments.
 */
#include "internal.h"

#define UNSUPPORTED(name)                                                   \
	do {                                                                \
		static bool said;                                           \
		cu_warn_once(&said, "%s is not supported", name);           \
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED, "%s is not supported", name); \
	} while (0)

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	(void)dptr, (void)bytesize, (void)flags;
	UNSUPPORTED("cuMemAllocManaged");
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	(void)hArray;
	UNSUPPORTED("cuArrayDestroy");
}

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	(void)phGraph, (void)flags;
	UNSUPPORTED("cuGraphCreate");
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	(void)hGraph;
	UNSUPPORTED("cuGraphDestroy");
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
	(void)f, (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX;
	(void)blockDimY, (void)blockDimZ, (void)sharedMemBytes, (void)hStream, (void)kernelParams;
	UNSUPPORTED("cuLaunchCooperativeKernel");
}

CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	(void)ppExportTable, (void)pExportTableId;
	UNSUPPORTED("cuGetExportTable");
}
