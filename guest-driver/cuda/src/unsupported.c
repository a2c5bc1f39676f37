// SPDX-License-Identifier: MIT
/*
 * unsupported.c - driver API functions programs commonly link that the
 * vGPU does not offer: managed and host-registered memory, arrays and
 * textures, graphs, the JIT linker, cooperative launches, the runtime's
 * private export tables. Each returns CUDA_ERROR_NOT_SUPPORTED and says
 * its name once on stderr ("libcuda (vgpu): cuGraphCreate is not
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

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	(void)p, (void)bytesize, (void)Flags;
	UNSUPPORTED("cuMemHostRegister");
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	(void)p;
	UNSUPPORTED("cuMemHostUnregister");
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	(void)pdptr, (void)p, (void)Flags;
	UNSUPPORTED("cuMemHostGetDevicePointer");
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	(void)data, (void)attribute, (void)ptr;
	UNSUPPORTED("cuPointerGetAttribute");
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

CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                                 void **optionValues, CUlinkState *stateOut)
{
	(void)numOptions, (void)options, (void)optionValues, (void)stateOut;
	UNSUPPORTED("cuLinkCreate");
}

CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                  const char *name, unsigned int numOptions,
                                  CUjit_option *options, void **optionValues)
{
	(void)state, (void)type, (void)data, (void)size, (void)name, (void)numOptions;
	(void)options, (void)optionValues;
	UNSUPPORTED("cuLinkAddData");
}

CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	(void)state, (void)cubinOut, (void)sizeOut;
	UNSUPPORTED("cuLinkComplete");
}

CUresult CUDAAPI cuLinkDestroy(CUlinkState state)
{
	(void)state;
	UNSUPPORTED("cuLinkDestroy");
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
