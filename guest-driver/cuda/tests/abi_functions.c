// SPDX-License-Identifier: MIT
/*
 * abi_functions.c - every function the project's cuda.h declares has the
 * type NVIDIA's cuda.h gives it: NVIDIA's header first (each function
 * must exist there: the reference below), then ours with only its
 * function declarations (VGPU_CUDA_FUNCTIONS_ONLY), whose types are then
 * NVIDIA's. A declaration of a different type is a conflicting
 * redeclaration, a compile error: a mismatch fails the build.
 */
#include <cuda.h>

#include "cuda_abi_lists.h"

#define ABI_REF(name) (const void *)&name,
const void *const abi_function_refs[] = { ABI_FUNCTIONS(ABI_REF) };
#define ABI_COUNT(name) +1
const unsigned int abi_function_count = 0 ABI_FUNCTIONS(ABI_COUNT);

#define VGPU_CUDA_FUNCTIONS_ONLY
#define VGPU_CUDA_NO_LEGACY
#include "../include/cuda.h"
