/* SPDX-License-Identifier: MIT */
/*
 * gpu_kernels.h - the built-in kernels as the compute engine runs them.
 *
 * Semantics and argument rules: vgpu/simgpu_kernels.h. Every access goes
 * through memory_access.h page span by page span.
 */
#ifndef SIMGPU_GPU_KERNELS_H
#define SIMGPU_GPU_KERNELS_H

#include <stdint.h>

#include "memory_access.h"

/* 0; -EFAULT with ctx->fault set; or -EINVAL for bad arguments (unknown
 * kernel, wrong count, misaligned, out of bounds). */
int gpu_kernel_launch(struct engine_context *ctx, struct simgpu_address_space *as,
                      uint32_t kernel, const uint64_t *args, uint32_t nargs);

/* COPY and MEMSET, shared by the commands and the kernels. */
int gpu_copy(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
             uint64_t src, uint64_t bytes);
int gpu_memset(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
               uint32_t pattern, uint64_t bytes);

#endif /* SIMGPU_GPU_KERNELS_H */
