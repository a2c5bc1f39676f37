/* SPDX-License-Identifier: MIT */
/*
 * buffer.h - buffers of a VM: lookup, import and destruction. Allocation lock.
 * Implemented in buffer.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_BUFFER_H
#define VGPU_CORE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

struct vgpu_vm;
struct vgpu_core_buffer;
struct vgpu_buffer_info;

/* Create a buffer of vm at exactly gpu_va with every chunk in fresh host
 * memory (migration import: the return pass brings them to VRAM). The
 * allocation lock is held. 0, -EINVAL, -EEXIST (range taken), -EDQUOT,
 * -ENOMEM (host budget or memory), -ENOSPC. */
int vgpu_buffer_import_locked(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                              unsigned priority, struct vgpu_buffer_info *out,
                              struct vgpu_error *error);
struct vgpu_core_buffer *vgpu_core_buffer_lookup(struct vgpu_vm *vm, uint64_t handle);
/* Free a buffer completely (mapping, memory, accounting). */
void vgpu_core_buffer_destroy(struct vgpu_core_buffer *buffer);

#endif /* VGPU_CORE_BUFFER_H */
