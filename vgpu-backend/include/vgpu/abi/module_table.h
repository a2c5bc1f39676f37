/* SPDX-License-Identifier: MIT */
/*
 * module_table.h - the table MODULE_LOAD writes into a VM's memory
 * (struct vgpu_module_table, device_abi.h): what a loaded module holds,
 * little-endian, names in a string area (library vgpu_module_table_dep).
 *
 * Built from the HAL's description of a parsed module and the addresses
 * where the caller placed its variables, so that every backend that loads
 * modules (vgpud's requests, the guest runtime's in-process simgpu
 * backend) writes the same bytes. Pure functions of their arguments; any
 * thread.
 */
#ifndef VGPU_ABI_MODULE_TABLE_H
#define VGPU_ABI_MODULE_TABLE_H

#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The table of the module info describes, its variable i at GPU address
 * variable_va[i] (NULL when it has no variables), in a malloc'ed buffer
 * (*table, *bytes; the caller frees it). -ENOMEM, -E2BIG (above
 * VGPU_MODULE_TABLE_MAX_BYTES).
 */
int vgpu_module_table_build(const struct vgpu_hal_module_info *info, const uint64_t *variable_va,
                            void **table, uint32_t *bytes);

/* A table header carrying only message (a failed load), truncated to
 * VGPU_MODULE_MESSAGE_BYTES - 1 characters. */
void vgpu_module_table_failure(struct vgpu_module_table *header, const char *message);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ABI_MODULE_TABLE_H */
