/* SPDX-License-Identifier: MIT */
/*
 * eviction.h - making room in VRAM for an allocation. Allocation lock.
 * Implemented in eviction.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_EVICTION_H
#define VGPU_CORE_EVICTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

struct vgpu_core;
struct vgpu_vm;
struct vgpu_core_buffer;
struct vgpu_core_time;

/*
 * Make room for pending (a buffer of requester whose chunks are not placed
 * yet) when free VRAM is short. On success every chunk of pending that must
 * go to host memory has staged host memory (chunk->new_host) and enough VRAM
 * is free for the others. On failure nothing of pending is staged.
 */
int vgpu_evict_for(struct vgpu_core *core, struct vgpu_vm *requester,
                   struct vgpu_core_buffer *pending, uint64_t free_bytes,
                   struct vgpu_core_time *time, struct vgpu_error *error);

#endif /* VGPU_CORE_EVICTION_H */
