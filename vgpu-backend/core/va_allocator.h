/* SPDX-License-Identifier: MIT */
/*
 * va_allocator.h - GPU virtual address ranges of one address space.
 *
 * First fit over a sorted list of free extents, coalescing on free. Used for
 * each VM's buffers (below caps.va_reserved_base, which belongs to the HAL)
 * and for the windows of the core's private DMA address space.
 */
#ifndef VGPU_CORE_VA_ALLOCATOR_H
#define VGPU_CORE_VA_ALLOCATOR_H

#include <stdint.h>

struct vgpu_va_extent;

struct vgpu_va_allocator {
	struct vgpu_va_extent *free_list; /* sorted by address, not adjacent */
	uint64_t base, end;
	uint64_t allocated_bytes;
};

/* Manage [base, end). */
void vgpu_va_init(struct vgpu_va_allocator *va, uint64_t base, uint64_t end);
void vgpu_va_fini(struct vgpu_va_allocator *va);
/* bytes > 0, align a power of two. -ENOSPC when no range fits, -ENOMEM. */
int vgpu_va_alloc(struct vgpu_va_allocator *va, uint64_t bytes, uint64_t align, uint64_t *out);
/* Take exactly [address, address + bytes) (migration: a buffer keeps its
 * address). -EEXIST if any of it is taken, -EINVAL outside [base, end),
 * -ENOMEM. */
int vgpu_va_alloc_at(struct vgpu_va_allocator *va, uint64_t address, uint64_t bytes);
/* Give back a range obtained from vgpu_va_alloc. -EINVAL if it overlaps a
 * free range or leaves [base, end) (nothing changes then), -ENOMEM. */
int vgpu_va_free(struct vgpu_va_allocator *va, uint64_t address, uint64_t bytes);

#endif /* VGPU_CORE_VA_ALLOCATOR_H */
