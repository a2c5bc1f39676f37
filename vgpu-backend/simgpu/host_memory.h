/* SPDX-License-Identifier: MIT */
/*
 * host_memory.h - pinned host buffers the GPU reaches through the IOMMU.
 *
 * A host buffer is zeroed shared memory of a 4 KiB multiple: an extent of a
 * memfd-backed arena, or its own memfd when large (host_arena.h), so a
 * transport can map the same pages into a guest (vgpu_hal_host_share: fd
 * and offset). It counts its live IOMMU mappings so that freeing it can drop
 * any left behind.
 */
#ifndef SIMGPU_HOST_MEMORY_H
#define SIMGPU_HOST_MEMORY_H

#include <stdint.h>

#include "host_arena.h"
#include "vgpu/hal.h"

struct simgpu_host_buf {
	struct vgpu_hal_host_buf base;
	uint8_t *memory;
	struct host_extent extent; /* where memory lives: fd + offset */
	uint64_t mappings; /* live IOMMU mappings, under the IOMMU lock */
	/* the device's list of live buffers, under its objects lock */
	struct simgpu_host_buf *previous;
	struct simgpu_host_buf *next;
};

static inline struct simgpu_host_buf *to_simgpu_host_buf(struct vgpu_hal_host_buf *buf)
{
	return (struct simgpu_host_buf *)buf;
}

/* -EINVAL unless bytes is a nonzero multiple of 4 KiB; -ENOMEM. */
int host_buf_create(struct vgpu_hal *hal, struct host_arena_set *arenas, uint64_t bytes,
                    struct simgpu_host_buf **out);
void host_buf_destroy(struct host_arena_set *arenas, struct simgpu_host_buf *buf);

#endif /* SIMGPU_HOST_MEMORY_H */
