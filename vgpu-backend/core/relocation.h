/* SPDX-License-Identifier: MIT */
/*
 * relocation.h - moving a VM's chunks between VRAM and host memory. Allocation lock
 * (dropped while the VM's channels drain and resume, pass.h).
 * Implemented in relocation.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_RELOCATION_H
#define VGPU_CORE_RELOCATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

struct vgpu_core;
struct vgpu_vm;
struct vgpu_chunk;
struct vgpu_core_time;

/*
 * Move chunks[0..count) of vm to their staged memory (new_host when
 * resident, new_vram when evicted): suspend and drain vm's channels, copy
 * through the DMA address space, remap, invalidate, free the old memory,
 * resume. Moved chunks change location and set chunk->moved; the others
 * keep their mapping and their staging (the caller releases it). Returns 0
 * or the first error.
 */
int vgpu_relocate_vm(struct vgpu_core *core, struct vgpu_vm *vm, struct vgpu_chunk **chunks,
                     size_t count, struct vgpu_core_time *time, struct vgpu_error *error);

#endif /* VGPU_CORE_RELOCATION_H */
