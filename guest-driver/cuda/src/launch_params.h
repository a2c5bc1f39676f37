/* SPDX-License-Identifier: MIT */
/*
 * launch_params.h - a launch's parameter block from cuLaunchKernel's
 * arguments, laid out as the module's table says (offset, size of each
 * parameter). Pure: no device, no locks; tested on its own.
 */
#ifndef VGPU_CUDA_LAUNCH_PARAMS_H
#define VGPU_CUDA_LAUNCH_PARAMS_H

#include <stdint.h>

#include "cuda.h"
#include "vgpu_guest.h"

/*
 * Fill out (out_capacity bytes, >= f->param_bytes) from kernelParams (one
 * pointer per parameter, each read for the parameter's size) or from
 * extra (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs ended by
 * CU_LAUNCH_PARAM_END; the size must equal f->param_bytes). Exactly one
 * of the two may be given (neither only for a function without
 * parameters). CUDA_ERROR_INVALID_VALUE with *why on anything else.
 */
CUresult cu_pack_params(const struct vgpu_guest_function *f, void **kernelParams, void **extra,
                        void *out, uint32_t out_capacity, const char **why);

#endif /* VGPU_CUDA_LAUNCH_PARAMS_H */
