// SPDX-License-Identifier: MIT
/* host_cache.c - reusable pinned host buffers, see host_cache.h. */
#include <stdlib.h>

#include "host_cache.h"

void vgpu_host_cache_init(struct vgpu_host_cache *cache, struct vgpu_hal *hal, uint64_t limit)
{
	cache->hal = hal;
	cache->entries = NULL;
	cache->count = cache->capacity = 0;
	cache->bytes = 0;
	cache->limit = limit;
	cache->hits = cache->misses = 0;
}

static void release(struct vgpu_host_cache *cache, const struct vgpu_host_cache_entry *entry)
{
	vgpu_hal_iommu_unmap(cache->hal, entry->iova, entry->bytes);
	vgpu_hal_host_free(cache->hal, entry->buf);
}

void vgpu_host_cache_trim(struct vgpu_host_cache *cache, uint64_t keep)
{
	while (cache->bytes > keep && cache->count) {
		struct vgpu_host_cache_entry *entry = &cache->entries[--cache->count];

		cache->bytes -= entry->bytes;
		release(cache, entry);
	}
}

void vgpu_host_cache_fini(struct vgpu_host_cache *cache)
{
	vgpu_host_cache_trim(cache, 0);
	free(cache->entries);
	cache->entries = NULL;
	cache->capacity = 0;
}

bool vgpu_host_cache_take(struct vgpu_host_cache *cache, uint64_t bytes,
                          struct vgpu_hal_host_buf **buf, uint64_t *iova)
{
	/* Most recently cached first: its pages are the warmest. */
	for (size_t i = cache->count; i-- > 0;) {
		struct vgpu_host_cache_entry *entry = &cache->entries[i];

		if (entry->bytes != bytes)
			continue;
		*buf = entry->buf;
		*iova = entry->iova;
		cache->bytes -= bytes;
		cache->entries[i] = cache->entries[--cache->count];
		cache->hits++;
		return true;
	}
	cache->misses++;
	return false;
}

void vgpu_host_cache_put(struct vgpu_host_cache *cache, struct vgpu_hal_host_buf *buf,
                         uint64_t iova, uint64_t bytes, uint64_t room)
{
	struct vgpu_host_cache_entry entry = { .buf = buf, .iova = iova, .bytes = bytes };
	uint64_t limit = cache->limit < room ? cache->limit : room;

	if (cache->bytes + bytes > limit || cache->bytes + bytes < bytes) {
		release(cache, &entry);
		return;
	}
	if (cache->count == cache->capacity) {
		size_t capacity = cache->capacity ? 2 * cache->capacity : 32;
		struct vgpu_host_cache_entry *entries =
		        realloc(cache->entries, capacity * sizeof(*entries));

		if (!entries) {
			release(cache, &entry);
			return;
		}
		cache->entries = entries;
		cache->capacity = capacity;
	}
	cache->entries[cache->count++] = entry;
	cache->bytes += bytes;
}
