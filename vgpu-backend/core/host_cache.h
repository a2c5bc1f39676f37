/* SPDX-License-Identifier: MIT */
/*
 * host_cache.h - pinned, IOMMU-mapped host buffers kept for reuse.
 *
 * Fresh pinned memory costs a page fault per page on first touch, which
 * bounds eviction copies far below memory bandwidth. When an evicted chunk's
 * host memory is freed (return, free), the buffer is kept here, still
 * mapped, and the next eviction of a chunk of the same size copies into it.
 * A cached buffer still holds its last chunk's bytes, so it is only reused
 * as a copy destination that is overwritten completely; chunks placed on the
 * host without a copy always get fresh (zeroed) memory, so no VM ever sees
 * another's data.
 *
 * The cache holds at most its limit, and never more than the host budget
 * leaves over: used + cached ≤ budget, so the budget bounds all pinned
 * memory the core holds.
 */
#ifndef VGPU_CORE_HOST_CACHE_H
#define VGPU_CORE_HOST_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/hal.h"

struct vgpu_host_cache_entry {
	struct vgpu_hal_host_buf *buf;
	uint64_t iova;
	uint64_t bytes;
};

struct vgpu_host_cache {
	struct vgpu_hal *hal;
	struct vgpu_host_cache_entry *entries;
	size_t count, capacity;
	uint64_t bytes, limit;
	uint64_t hits, misses;
};

void vgpu_host_cache_init(struct vgpu_host_cache *cache, struct vgpu_hal *hal, uint64_t limit);
/* Unmap and free everything. */
void vgpu_host_cache_fini(struct vgpu_host_cache *cache);
/* Take a cached buffer of exactly bytes: true and its buffer and IOVA. */
bool vgpu_host_cache_take(struct vgpu_host_cache *cache, uint64_t bytes,
                          struct vgpu_hal_host_buf **buf, uint64_t *iova);
/* Keep a buffer if it fits within room (and the limit); otherwise unmap and
 * free it. */
void vgpu_host_cache_put(struct vgpu_host_cache *cache, struct vgpu_hal_host_buf *buf,
                         uint64_t iova, uint64_t bytes, uint64_t room);
/* Free cached buffers until at most keep bytes remain. */
void vgpu_host_cache_trim(struct vgpu_host_cache *cache, uint64_t keep);

#endif /* VGPU_CORE_HOST_CACHE_H */
