// SPDX-License-Identifier: MIT
/* abi_theirs.c - the cuda-abi checker's side of NVIDIA's cuda.h (the
 * toolkit's include directory is this file's only -I for it). */
#include <cuda.h>

#define ABI_SIDE abi_theirs
#include "abi_side.h"
