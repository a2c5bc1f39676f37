// SPDX-License-Identifier: MIT
/*
 * chunk.c - chunks: how a buffer is cut into them, which sets they are in,
 * and their memory (VRAM pages or a pinned host buffer) and mapping.
 */
#include "chunk.h"

#include <errno.h>
#include <stdlib.h>

#include "core_internal.h"

/* ---- layout ------------------------------------------------------------- */

uint32_t vgpu_chunk_count(uint64_t buffer_bytes, uint64_t chunk_bytes)
{
	return (uint32_t)((buffer_bytes + chunk_bytes - 1) / chunk_bytes);
}

/*
 * Fixed-size chunks from the start, a smaller remainder chunk at the tail
 * (thesis §3.2.2). Each chunk's page size is the largest of page_size_mask
 * that divides its address and its size (on simgpu: 64 KiB where both allow
 * it, 4 KiB otherwise). The caller keeps buffer_va, buffer_bytes and
 * chunk_bytes multiples of the mask's smallest size, so one always fits.
 */
void vgpu_chunk_layout(struct vgpu_chunk *chunks, uint32_t count, uint64_t buffer_va,
                       uint64_t buffer_bytes, uint64_t chunk_bytes, uint32_t page_size_mask)
{
	uint64_t offset = 0;

	for (uint32_t i = 0; i < count; i++) {
		struct vgpu_chunk *chunk = &chunks[i];
		uint64_t left = buffer_bytes - offset;
		uint64_t va = buffer_va + offset;

		chunk->offset = offset;
		chunk->bytes = left < chunk_bytes ? left : chunk_bytes;
		chunk->page_size = vgpu_page_size_largest_dividing(page_size_mask, va | chunk->bytes);
		offset += chunk->bytes;
	}
}

uint64_t vgpu_chunk_va(const struct vgpu_chunk *chunk)
{
	return chunk->buffer->gpu_va + chunk->offset;
}

/* ---- priority levels ---------------------------------------------------- */

void vgpu_levels_init(struct vgpu_levels *levels)
{
	for (int i = 0; i < VGPU_PRIORITY_LEVELS; i++)
		list_init(&levels->level[i]);
	levels->mask = 0;
}

void vgpu_levels_remove(struct vgpu_core_buffer *buffer, int location)
{
	struct vgpu_levels *levels = &buffer->vm->levels[location];
	struct list_head *level = &levels->level[buffer->priority];

	if (!buffer->in_level[location])
		return;
	list_del(&buffer->level_link[location]);
	buffer->in_level[location] = false;
	if (list_empty(level))
		levels->mask &= ~(1u << buffer->priority);
}

/* A buffer is on its priority level iff it has candidates there. */
void vgpu_levels_update(struct vgpu_core_buffer *buffer, int location)
{
	struct vgpu_levels *levels = &buffer->vm->levels[location];
	bool has_candidates = buffer->sets[location].candidates > 0;

	if (has_candidates == buffer->in_level[location])
		return;
	if (!has_candidates) {
		vgpu_levels_remove(buffer, location);
		return;
	}
	list_add_tail(&buffer->level_link[location], &levels->level[buffer->priority]);
	buffer->in_level[location] = true;
	levels->mask |= 1u << buffer->priority;
}

/* ---- sets --------------------------------------------------------------- */

int vgpu_chunk_insert(struct vgpu_chunk *chunk)
{
	struct vgpu_core_buffer *buffer = chunk->buffer;
	int location = chunk->location;
	int err;

	err = vgpu_chunk_set_insert(&buffer->vm->sets[location], chunk);
	if (err)
		return err;
	/* The buffer's sets are sized for all its chunks: cannot fail. */
	vgpu_chunk_set_insert(&buffer->sets[location], chunk);
	vgpu_levels_update(buffer, location);
	return 0;
}

void vgpu_chunk_remove(struct vgpu_chunk *chunk)
{
	struct vgpu_core_buffer *buffer = chunk->buffer;
	int location = chunk->location;

	vgpu_chunk_set_remove(&buffer->vm->sets[location], chunk);
	vgpu_chunk_set_remove(&buffer->sets[location], chunk);
	vgpu_levels_update(buffer, location);
}

void vgpu_chunk_select(struct vgpu_chunk *chunk)
{
	struct vgpu_core_buffer *buffer = chunk->buffer;
	int location = chunk->location;

	vgpu_chunk_set_select(&buffer->vm->sets[location], chunk);
	vgpu_chunk_set_select(&buffer->sets[location], chunk);
	vgpu_levels_update(buffer, location);
}

void vgpu_chunk_unselect(struct vgpu_chunk *chunk)
{
	struct vgpu_core_buffer *buffer = chunk->buffer;
	int location = chunk->location;

	vgpu_chunk_set_unselect(&buffer->vm->sets[location], chunk);
	vgpu_chunk_set_unselect(&buffer->sets[location], chunk);
	vgpu_levels_update(buffer, location);
}

bool vgpu_chunk_is_selected(const struct vgpu_chunk *chunk)
{
	return vgpu_chunk_set_is_selected(&chunk->buffer->vm->sets[chunk->location], chunk);
}

/* ---- memory ------------------------------------------------------------- */

int vgpu_chunk_vram_alloc(struct vgpu_core *core, const struct vgpu_chunk *chunk,
                          uint64_t **pages, uint32_t *page_size)
{
	uint32_t size = chunk->page_size;
	int err = -ENOMEM;

	/* Free VRAM may be too fragmented for large pages: retry with the
	 * GPU's smaller ones, never with a size it lacks. */
	for (; size; size = vgpu_page_size_next_smaller(core->caps.page_size_mask, size)) {
		uint64_t count = chunk->bytes / size;
		uint64_t *addresses = malloc(count * sizeof(*addresses));

		if (!addresses)
			return -ENOMEM;
		err = vgpu_hal_vram_alloc(core->hal, size, count, addresses);
		if (!err) {
			*pages = addresses;
			*page_size = size;
			return 0;
		}
		free(addresses);
	}
	return err;
}

void vgpu_chunk_vram_free(struct vgpu_core *core, uint64_t bytes, uint64_t *pages,
                          uint32_t page_size)
{
	if (!pages)
		return;
	/* Scrub before the pages can go to anyone else: fresh VRAM must
	 * never show a VM another VM's data. Only argument errors can make it
	 * fail, and the pages are ours; free them regardless. */
	(void)vgpu_hal_vram_scrub(core->hal, page_size, bytes / page_size, pages);
	vgpu_hal_vram_free(core->hal, page_size, bytes / page_size, pages);
	free(pages);
}

int vgpu_chunk_host_reserve(struct vgpu_core *core, uint64_t bytes)
{
	int err = vgpu_host_budget_reserve(&core->host, bytes);

	if (!err && core->host.limit)
		vgpu_host_cache_trim(&core->host_cache, vgpu_host_budget_available(&core->host));
	return err;
}

int vgpu_chunk_host_alloc(struct vgpu_core *core, uint64_t bytes, bool overwritten,
                          struct vgpu_hal_host_buf **host, uint64_t *iova)
{
	int err;

	if (overwritten && vgpu_host_cache_take(&core->host_cache, bytes, host, iova))
		return 0;
	err = vgpu_hal_host_alloc(core->hal, bytes, host);
	if (err)
		return err;
	err = vgpu_hal_iommu_map(core->hal, *host, 0, bytes, iova);
	if (err) {
		vgpu_hal_host_free(core->hal, *host);
		*host = NULL;
	}
	return err;
}

void vgpu_chunk_host_free(struct vgpu_core *core, uint64_t bytes, struct vgpu_hal_host_buf *host,
                          uint64_t iova)
{
	if (!host)
		return;
	vgpu_host_cache_put(&core->host_cache, host, iova, bytes,
	                    vgpu_host_budget_available(&core->host));
}

int vgpu_chunk_map_vram(struct vgpu_chunk *chunk, const uint64_t *pages, uint32_t page_size)
{
	return vgpu_hal_as_map(chunk->buffer->vm->as, vgpu_chunk_va(chunk), page_size,
	                       chunk->bytes / page_size, VGPU_TARGET_VRAM, pages, 0);
}

/* Evicted chunks are never touched by the CPU: non-coherent (thesis §3.2.2,
 * SYSRAM_NO_SNOOP). */
int vgpu_chunk_map_host(struct vgpu_chunk *chunk, uint64_t iova)
{
	struct vgpu_vm *vm = chunk->buffer->vm;
	uint64_t va = vgpu_chunk_va(chunk), count, *addresses;
	uint32_t page_size;
	int err;

	page_size = vgpu_page_size_largest_dividing(vm->core->caps.sysmem_page_size_mask,
	                                            va | chunk->bytes | iova);
	if (!page_size)
		return -EINVAL; /* an IOVA below the GPU's smallest SYSMEM page */
	count = chunk->bytes / page_size;
	addresses = malloc(count * sizeof(*addresses));
	if (!addresses)
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++)
		addresses[i] = iova + i * page_size;
	err = vgpu_hal_as_map(vm->as, va, page_size, count, VGPU_TARGET_SYSMEM_NONCOHERENT,
	                      addresses, 0);
	free(addresses);
	return err;
}

void vgpu_chunk_release_memory(struct vgpu_core *core, struct vgpu_chunk *chunk)
{
	vgpu_chunk_vram_free(core, chunk->bytes, chunk->vram, chunk->vram_page_size);
	chunk->vram = NULL;
	if (chunk->host) {
		vgpu_host_budget_release(&core->host, chunk->bytes);
		vgpu_chunk_host_free(core, chunk->bytes, chunk->host, chunk->iova);
		chunk->host = NULL;
	}
}

/* Staged host memory carries a budget reservation; staged VRAM does not. */
void vgpu_chunk_release_staging(struct vgpu_core *core, struct vgpu_chunk *chunk)
{
	vgpu_chunk_vram_free(core, chunk->bytes, chunk->new_vram, chunk->new_vram_page_size);
	chunk->new_vram = NULL;
	if (chunk->new_host) {
		vgpu_host_budget_release(&core->host, chunk->bytes);
		vgpu_chunk_host_free(core, chunk->bytes, chunk->new_host, chunk->new_iova);
		chunk->new_host = NULL;
	}
}
