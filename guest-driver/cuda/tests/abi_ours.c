// SPDX-License-Identifier: MIT
/* abi_ours.c - the cuda-abi checker's side of the project's cuda.h. */
#include "../include/cuda.h"

#define ABI_SIDE abi_ours
#include "abi_side.h"
