/* SPDX-License-Identifier: MIT */
/*
 * remap.h - pointing a relocated chunk's PTEs at its new memory. Allocation lock.
 * Implemented in remap.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_REMAP_H
#define VGPU_CORE_REMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_chunk;

/* Which memory of a chunk being relocated its PTEs should point at. */
enum vgpu_remap_which {
	VGPU_REMAP_NEW, /* the staged memory it moves to */
	VGPU_REMAP_OLD, /* the memory it is in now (undoing a remap) */
};
/* Sort chunks by GPU VA, so that runs of adjacent chunks follow each other. */
void vgpu_remap_sort(struct vgpu_chunk **chunks, size_t count);
/* The end of the run starting at chunks[first]: the chunks after it that
 * continue it in the VM's address space with the same target and page
 * size, up to max_bytes in all (at least one chunk). */
size_t vgpu_remap_run_end(struct vgpu_chunk *const *chunks, size_t first, size_t count,
                          enum vgpu_remap_which which, uint64_t max_bytes);
/* Point the PTEs over chunks[0..count) (one run) at `which` memory with one
 * vgpu_hal_as_map. All or nothing as the HAL's as_map is. */
int vgpu_remap_run(struct vgpu_chunk *const *chunks, size_t count, enum vgpu_remap_which which);

#endif /* VGPU_CORE_REMAP_H */
