/* SPDX-License-Identifier: MIT */
/*
 * ptx_hal_info.h - a parsed PTX module as the HAL describes a module
 * (struct vgpu_hal_module_info, vgpu/hal.h): its entries with their
 * parameter layout, its variables with their initializers. Shared by the
 * backends that take modules through the project's PTX front end (simgpu,
 * cudagpu), so both describe the same program the same way.
 */
#ifndef PTX_HAL_INFO_H
#define PTX_HAL_INFO_H

#include <stdint.h>

#include "ptx_module.h"
#include "vgpu/hal.h"

/*
 * Fill *info from ptx: *functions, *params and *variables are calloc'ed
 * arrays (at least one element each) the caller frees, also on failure;
 * names and initializers point into ptx, which must outlive them. Every
 * function gets max_threads_per_block, the backend's limit. 0 or -ENOMEM.
 */
int ptx_hal_describe(const struct ptx_module *ptx, uint32_t max_threads_per_block,
                     struct vgpu_hal_module_function **functions,
                     struct vgpu_hal_module_param **params,
                     struct vgpu_hal_module_variable **variables,
                     struct vgpu_hal_module_info *info);

#endif /* PTX_HAL_INFO_H */
