// SPDX-License-Identifier: MIT
/*
 * abi_legacy.c - the earlier forms the library still exports
 * (cuCtxCreate_v2, _v3), checked as abi_functions.c checks the current
 * ones, against the declarations NVIDIA's cuda.h keeps for its own
 * driver's build (__CUDA_API_VERSION_INTERNAL).
 */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>

#include "cuda_abi_lists.h"

#define ABI_REF(name) (const void *)&name,
const void *const abi_legacy_refs[] = { ABI_LEGACY_FUNCTIONS(ABI_REF) };
#define ABI_COUNT(name) +1
const unsigned int abi_legacy_count = 0 ABI_LEGACY_FUNCTIONS(ABI_COUNT);

#define VGPU_CUDA_FUNCTIONS_ONLY
#define VGPU_CUDA_NO_CURRENT
#include "../include/cuda.h"
