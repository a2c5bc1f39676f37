/* SPDX-License-Identifier: MIT */
/*
 * chunk.h - a chunk's layout, its sets and priority levels, and its memory (VRAM,
 * pinned host memory, mappings). Allocation lock unless said.
 * Implemented in chunk.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_CHUNK_H
#define VGPU_CORE_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_core;
struct vgpu_chunk;
struct vgpu_core_buffer;
struct vgpu_levels;
struct vgpu_hal_host_buf;

/* Lay out a buffer's chunks (offset, bytes, page_size) into chunks[]. */
void vgpu_chunk_layout(struct vgpu_chunk *chunks, uint32_t count, uint64_t buffer_va,
                       uint64_t buffer_bytes, uint64_t chunk_bytes, uint32_t page_size_mask);
uint32_t vgpu_chunk_count(uint64_t buffer_bytes, uint64_t chunk_bytes);
uint64_t vgpu_chunk_va(const struct vgpu_chunk *chunk);
/* Add/remove a chunk to/from the sets (VM's and buffer's) of its location,
 * keeping the priority levels current. */
int vgpu_chunk_insert(struct vgpu_chunk *chunk);
void vgpu_chunk_remove(struct vgpu_chunk *chunk);
void vgpu_chunk_select(struct vgpu_chunk *chunk);
void vgpu_chunk_unselect(struct vgpu_chunk *chunk);
bool vgpu_chunk_is_selected(const struct vgpu_chunk *chunk);
/* VRAM for a chunk: pages of its page_size when possible, otherwise of the
 * next smaller sizes of the GPU's page_size_mask (VRAM may be too
 * fragmented for large pages). *page_size receives the size used. */
int vgpu_chunk_vram_alloc(struct vgpu_core *core, const struct vgpu_chunk *chunk,
                          uint64_t **pages, uint32_t *page_size);
/* Free the staged memory and windows of timed-out copies once the copy
 * engine is done with them (relocation.c). Allocation lock. */
void vgpu_release_abandoned_copies(struct vgpu_core *core);

void vgpu_chunk_vram_free(struct vgpu_core *core, uint64_t bytes, uint64_t *pages,
                          uint32_t page_size);
/* Reserve budget for bytes of host memory (trimming the host cache so that
 * used + cached stays within the budget). -ENOMEM when it does not fit. */
int vgpu_chunk_host_reserve(struct vgpu_core *core, uint64_t bytes);
/* Pinned host memory + IOMMU mapping for a chunk. With overwritten (the
 * chunk's data will be copied over all of it) a cached buffer may be
 * reused; otherwise the memory is fresh and zeroed. */
int vgpu_chunk_host_alloc(struct vgpu_core *core, uint64_t bytes, bool overwritten,
                          struct vgpu_hal_host_buf **host, uint64_t *iova);
/* Give host memory back (to the cache, or to the HAL). Release its budget
 * reservation first. */
void vgpu_chunk_host_free(struct vgpu_core *core, uint64_t bytes, struct vgpu_hal_host_buf *host,
                          uint64_t iova);
/* Map the chunk in its VM's address space: to VRAM pages or to an IOVA
 * (with the largest SYSMEM page size that the chunk's VA, size and the IOVA
 * allow). */
int vgpu_chunk_map_vram(struct vgpu_chunk *chunk, const uint64_t *pages, uint32_t page_size);
int vgpu_chunk_map_host(struct vgpu_chunk *chunk, uint64_t iova);
/* Free a chunk's memory (VRAM or host), whatever its location. Its mapping
 * must be gone and the TLB invalidated. */
void vgpu_chunk_release_memory(struct vgpu_core *core, struct vgpu_chunk *chunk);
void vgpu_chunk_release_staging(struct vgpu_core *core, struct vgpu_chunk *chunk);

void vgpu_levels_init(struct vgpu_levels *levels);
void vgpu_levels_update(struct vgpu_core_buffer *buffer, int location);
void vgpu_levels_remove(struct vgpu_core_buffer *buffer, int location);

#endif /* VGPU_CORE_CHUNK_H */
