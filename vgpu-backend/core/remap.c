// SPDX-License-Identifier: MIT
/*
 * remap.c - rewriting a VM's PTEs over a run of chunks in one HAL call.
 *
 * A relocation points each moved chunk's PTEs at its new memory (and, when
 * a copy fails, back at its old memory). Chunk by chunk, that is one
 * vgpu_hal_as_map per chunk; on a real GPU each call pays the driver's
 * fixed costs (an access-rights update, a TLB shoot-down), which cost more
 * than the copy of the chunk itself. Chunks that are adjacent in the VM's
 * address space and use one page size are mapped together here: one
 * address list, one as_map.
 */
#include "remap.h"

#include <errno.h>
#include <stdlib.h>

#include "chunk.h"
#include "core_internal.h"

/* Where chunk's PTEs point for `which`: target, page size (0 if none fits). */
static void chunk_target(const struct vgpu_chunk *chunk, enum vgpu_remap_which which,
                         enum vgpu_hal_target *target, uint32_t *page_size)
{
	const struct vgpu_core *core = chunk->buffer->vm->core;
	bool resident = chunk->location == LOC_RESIDENT;
	bool to_vram = which == VGPU_REMAP_NEW ? !resident : resident;

	if (to_vram) {
		*target = VGPU_TARGET_VRAM;
		*page_size = which == VGPU_REMAP_NEW ? chunk->new_vram_page_size
		                                     : chunk->vram_page_size;
		return;
	}
	/* Evicted chunks are never touched by the CPU: non-coherent (thesis
	 * §3.2.2, SYSRAM_NO_SNOOP). */
	*target = VGPU_TARGET_SYSMEM_NONCOHERENT;
	*page_size = vgpu_page_size_largest_dividing(
		core->caps.sysmem_page_size_mask,
		vgpu_chunk_va(chunk) | chunk->bytes |
			(which == VGPU_REMAP_NEW ? chunk->new_iova : chunk->iova));
}

size_t vgpu_remap_run_end(struct vgpu_chunk *const *chunks, size_t first, size_t count,
                          enum vgpu_remap_which which, uint64_t max_bytes)
{
	enum vgpu_hal_target target, next_target;
	uint32_t page_size, next_page_size;
	uint64_t bytes = chunks[first]->bytes;
	size_t end = first + 1;

	chunk_target(chunks[first], which, &target, &page_size);
	while (end < count) {
		const struct vgpu_chunk *prev = chunks[end - 1], *next = chunks[end];

		if (bytes + next->bytes > max_bytes || next->buffer->vm != prev->buffer->vm ||
		    vgpu_chunk_va(next) != vgpu_chunk_va(prev) + prev->bytes)
			break;
		chunk_target(next, which, &next_target, &next_page_size);
		if (next_target != target || next_page_size != page_size)
			break;
		bytes += next->bytes;
		end++;
	}
	return end;
}

int vgpu_remap_run(struct vgpu_chunk *const *chunks, size_t count, enum vgpu_remap_which which)
{
	struct vgpu_vm *vm = chunks[0]->buffer->vm;
	enum vgpu_hal_target target;
	uint32_t page_size;
	uint64_t pages = 0, *addresses, at = 0;
	int err;

	chunk_target(chunks[0], which, &target, &page_size);
	if (!page_size)
		return -EINVAL; /* an IOVA below the GPU's smallest SYSMEM page */
	for (size_t i = 0; i < count; i++)
		pages += chunks[i]->bytes / page_size;
	addresses = malloc(pages * sizeof(*addresses));
	if (!addresses)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const struct vgpu_chunk *chunk = chunks[i];
		uint64_t n = chunk->bytes / page_size;

		if (target == VGPU_TARGET_VRAM) {
			const uint64_t *vram = which == VGPU_REMAP_NEW ? chunk->new_vram : chunk->vram;

			for (uint64_t p = 0; p < n; p++)
				addresses[at++] = vram[p];
		} else {
			uint64_t iova = which == VGPU_REMAP_NEW ? chunk->new_iova : chunk->iova;

			for (uint64_t p = 0; p < n; p++)
				addresses[at++] = iova + p * page_size;
		}
	}
	err = vgpu_hal_as_map(vm->as, vgpu_chunk_va(chunks[0]), page_size, pages, target,
	                      addresses, 0);
	free(addresses);
	return err;
}

static int compare_va(const void *a, const void *b)
{
	uint64_t x = vgpu_chunk_va(*(struct vgpu_chunk *const *)a);
	uint64_t y = vgpu_chunk_va(*(struct vgpu_chunk *const *)b);

	return x < y ? -1 : x > y;
}

void vgpu_remap_sort(struct vgpu_chunk **chunks, size_t count)
{
	qsort(chunks, count, sizeof(*chunks), compare_va);
}
