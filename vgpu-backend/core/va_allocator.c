// SPDX-License-Identifier: MIT
/* va_allocator.c - first-fit address ranges, see va_allocator.h. */
#include <errno.h>
#include <stdlib.h>

#include "va_allocator.h"

struct vgpu_va_extent {
	uint64_t start, end; /* [start, end) is free */
	struct vgpu_va_extent *next;
};

static struct vgpu_va_extent *extent_new(uint64_t start, uint64_t end, struct vgpu_va_extent *next)
{
	struct vgpu_va_extent *extent = malloc(sizeof(*extent));

	if (extent) {
		extent->start = start;
		extent->end = end;
		extent->next = next;
	}
	return extent;
}

void vgpu_va_init(struct vgpu_va_allocator *va, uint64_t base, uint64_t end)
{
	va->base = base;
	va->end = end;
	va->allocated_bytes = 0;
	va->free_list = end > base ? extent_new(base, end, NULL) : NULL;
	/* Without memory for one node the allocator is simply full. */
}

void vgpu_va_fini(struct vgpu_va_allocator *va)
{
	struct vgpu_va_extent *extent = va->free_list;

	while (extent) {
		struct vgpu_va_extent *next = extent->next;

		free(extent);
		extent = next;
	}
	va->free_list = NULL;
}

int vgpu_va_alloc(struct vgpu_va_allocator *va, uint64_t bytes, uint64_t align, uint64_t *out)
{
	struct vgpu_va_extent **link;

	if (!bytes || !align || (align & (align - 1)))
		return -EINVAL;
	for (link = &va->free_list; *link; link = &(*link)->next) {
		struct vgpu_va_extent *extent = *link;
		uint64_t start = (extent->start + align - 1) & ~(align - 1);

		if (start < extent->start || start >= extent->end || extent->end - start < bytes)
			continue;
		if (start == extent->start) {
			extent->start += bytes;
			if (extent->start == extent->end) {
				*link = extent->next;
				free(extent);
			}
		} else if (start + bytes == extent->end) {
			extent->end = start;
		} else {
			/* Split: keep the head, add the tail after it. */
			struct vgpu_va_extent *tail = extent_new(start + bytes, extent->end, extent->next);

			if (!tail)
				return -ENOMEM;
			extent->end = start;
			extent->next = tail;
		}
		va->allocated_bytes += bytes;
		*out = start;
		return 0;
	}
	return -ENOSPC;
}

int vgpu_va_alloc_at(struct vgpu_va_allocator *va, uint64_t address, uint64_t bytes)
{
	struct vgpu_va_extent **link;
	uint64_t end = address + bytes;

	if (!bytes || end < address || address < va->base || end > va->end)
		return -EINVAL;
	for (link = &va->free_list; *link; link = &(*link)->next) {
		struct vgpu_va_extent *extent = *link;

		if (extent->end <= address)
			continue;
		if (extent->start > address || extent->end < end)
			return -EEXIST;
		if (extent->start == address && extent->end == end) {
			*link = extent->next;
			free(extent);
		} else if (extent->start == address) {
			extent->start = end;
		} else if (extent->end == end) {
			extent->end = address;
		} else {
			struct vgpu_va_extent *tail = extent_new(end, extent->end, extent->next);

			if (!tail)
				return -ENOMEM;
			extent->end = address;
			extent->next = tail;
		}
		va->allocated_bytes += bytes;
		return 0;
	}
	return -EEXIST;
}

int vgpu_va_free(struct vgpu_va_allocator *va, uint64_t address, uint64_t bytes)
{
	struct vgpu_va_extent **link = &va->free_list;
	struct vgpu_va_extent *prev = NULL, *next;
	uint64_t end = address + bytes;

	if (!bytes || end < address || address < va->base || end > va->end)
		return -EINVAL;
	while (*link && (*link)->start < address) {
		prev = *link;
		link = &(*link)->next;
	}
	next = *link;
	if ((prev && prev->end > address) || (next && next->start < end))
		return -EINVAL;

	if (prev && prev->end == address) {
		prev->end = end;
		if (next && next->start == end) {
			prev->end = next->end;
			prev->next = next->next;
			free(next);
		}
	} else if (next && next->start == end) {
		next->start = address;
	} else {
		struct vgpu_va_extent *extent = extent_new(address, end, next);

		if (!extent)
			return -ENOMEM;
		*link = extent;
	}
	va->allocated_bytes -= bytes;
	return 0;
}
