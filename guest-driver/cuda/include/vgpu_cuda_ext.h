/* SPDX-License-Identifier: MIT */
/*
 * vgpu_cuda_ext.h - what the guest libcuda.so.1 offers beyond NVIDIA's
 * driver API: GPUswap's per-buffer eviction priority, and the library's
 * last error in words.
 *
 * A program that uses these links only against the project's library;
 * one that wants to stay portable looks them up with dlsym() and falls
 * back to cuMemAlloc where they are absent.
 */
#ifndef VGPU_CUDA_EXT_H
#define VGPU_CUDA_EXT_H

#include "cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Eviction priorities: under memory pressure the vGPU evicts buffers of
 * lower priority first. The default of cuMemAlloc is $VGPU_MEM_PRIORITY,
 * else VGPU_CUDA_PRIORITY_DEFAULT. */
#define VGPU_CUDA_PRIORITY_MIN 0
#define VGPU_CUDA_PRIORITY_DEFAULT 7
#define VGPU_CUDA_PRIORITY_MAX 15

/* cuMemAlloc with an eviction priority (VGPU_CUDA_PRIORITY_MIN..MAX):
 * CUDA_ERROR_INVALID_VALUE for a priority out of range, otherwise as
 * cuMemAlloc. */
CUresult CUDAAPI vgpuMemAllocWithPriority(CUdeviceptr *dptr, size_t bytesize, unsigned int priority);

/* Change the eviction priority of an allocation (dptr its base). */
CUresult CUDAAPI vgpuMemSetPriority(CUdeviceptr dptr, unsigned int priority);

/* Why the last failing call of the current context (or, without one, of
 * this thread's last call) failed, in words; "" if nothing failed. The
 * string stays valid until the next call of the same thread. */
CUresult CUDAAPI vgpuGetLastErrorMessage(const char **message);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CUDA_EXT_H */
