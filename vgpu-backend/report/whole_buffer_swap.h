/* SPDX-License-Identifier: MIT */
/*
 * whole_buffer_swap.h - the Gdev-style baseline of the runtime experiment
 * (thesis §6.2, paper §6.3): GPU memory managed in whole buffers.
 *
 * Each buffer has a backing copy in host memory and is either resident
 * (VRAM pages mapped at its GPU address) or swapped out (nothing mapped
 * there: a kernel touching it would fault). Under pressure it copies whole
 * buffers out, least recently used first, and before a kernel it copies
 * every buffer the kernel uses back in. It fails where a buffer, or the
 * buffers of one kernel together, do not fit into VRAM at all.
 *
 * It drives the GPU only through the HAL (VRAM pages, IOMMU mappings, PTEs,
 * TLB invalidation) and the VM's own channel (the copies are COPY commands
 * in the VM's pushbuffers, as Gdev's runtime issues its DMA), in a range of
 * the VM's address space reserved from the core (vgpu_core_reserve_va):
 * the core accounts nothing there. Its copies are charged to the VM's
 * address space on the modeled clock like its kernels.
 */
#ifndef VGPU_REPORT_WHOLE_BUFFER_SWAP_H
#define VGPU_REPORT_WHOLE_BUFFER_SWAP_H

#include <stdint.h>

#include "guest.h"
#include "vgpu/core.h"

struct whole_buffer_swap;

int whole_buffer_swap_create(struct vgpu_hal *hal, struct vgpu_vm *vm, struct sim_guest *guest,
                             struct whole_buffer_swap **out);
void whole_buffer_swap_destroy(struct whole_buffer_swap *swap);

/* A new buffer (bytes a multiple of 64 KiB), resident; swaps others out
 * if needed. *index identifies it; *va is its GPU address. -E2BIG when it
 * is larger than VRAM, -ENOSPC when it cannot be made room for. */
int whole_buffer_swap_alloc(struct whole_buffer_swap *swap, uint64_t bytes, unsigned *index,
                            uint64_t *va);

/* Release buffer index (its VRAM, backing copy and addresses); a slot is
 * reused only when it was the last one allocated. */
void whole_buffer_swap_free(struct whole_buffer_swap *swap, unsigned index);

/* Make buffers[0..count) resident before a kernel uses them. -E2BIG when
 * they do not fit into VRAM together. */
int whole_buffer_swap_prepare(struct whole_buffer_swap *swap, const unsigned *buffers,
                              unsigned count);

/* Bytes copied in and out so far. */
uint64_t whole_buffer_swap_copied(const struct whole_buffer_swap *swap);

/* The last failure, for messages. */
const char *whole_buffer_swap_error(const struct whole_buffer_swap *swap);

#endif /* VGPU_REPORT_WHOLE_BUFFER_SWAP_H */
