/* SPDX-License-Identifier: MIT */
/*
 * module_table.h - the table MODULE_LOAD writes into a VM's memory
 * (struct vgpu_module_table, vgpu/abi/device_abi.h): what a loaded module
 * holds, little-endian, names in a string area.
 */
#ifndef VGPUD_MODULE_TABLE_H
#define VGPUD_MODULE_TABLE_H

#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/core.h"

/* The table of module in a malloc'ed buffer (*table, *bytes). -ENOMEM,
 * -E2BIG (above VGPU_MODULE_TABLE_MAX_BYTES). */
int module_table_build(const struct vgpu_module_loaded *module, void **table,
                       uint32_t *bytes);

/* A table header carrying only message (a failed load). */
void module_table_failure(struct vgpu_module_table *header, const char *message);

#endif /* VGPUD_MODULE_TABLE_H */
