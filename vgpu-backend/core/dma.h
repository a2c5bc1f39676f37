/* SPDX-License-Identifier: MIT */
/*
 * dma.h - the core's private DMA address space and copy-engine queue
 * (thesis §3.3.2: relocation copies through a dedicated address space, so
 * no guest channel or address space is touched).
 *
 * Chunks are copied by mapping their source and destination into this
 * address space (VRAM pages, or an IOVA range of a host buffer) and queuing
 * vgpu_hal_copy operations; several may be in flight. Completions arrive as
 * VGPU_EVENT_COPY_DONE on the HAL's event thread (vgpu_dma_on_copy_done);
 * a waiter counts them. Only one relocation uses the queue at a time (the
 * core's allocation lock); a batch's cookies carry a generation so a late
 * completion of an abandoned batch is ignored.
 */
#ifndef VGPU_CORE_DMA_H
#define VGPU_CORE_DMA_H

#include <pthread.h>
#include <stdint.h>

#include "vgpu/hal.h"

#include "va_allocator.h"

struct vgpu_dma {
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
	struct vgpu_va_allocator va;
	uint32_t sysmem_page_size_mask; /* the HAL's, for IOVA windows */
	uint32_t window_align;          /* the HAL's largest page size */

	pthread_mutex_t lock; /* the fields below; taken by the event thread */
	pthread_cond_t cond;
	uint64_t generation;
	uint64_t submitted;
	uint64_t completed;
	int error; /* first failed copy of the batch */
	uint64_t abandoned; /* copies of earlier batches (timed out) still running */
};

int vgpu_dma_init(struct vgpu_dma *dma, struct vgpu_hal *hal, const struct vgpu_hal_caps *caps);
void vgpu_dma_fini(struct vgpu_dma *dma);

/* Map bytes of VRAM pages (page_size each) / of an IOVA range (with the
 * largest SYSMEM page size that the IOVA and bytes allow) into the DMA
 * address space; *va receives the window. */
int vgpu_dma_map_vram(struct vgpu_dma *dma, const uint64_t *pages, uint32_t page_size,
                      uint64_t bytes, uint64_t *va);
int vgpu_dma_map_iova(struct vgpu_dma *dma, uint64_t iova, uint64_t bytes, uint64_t *va);
/* Remove a window (the TLB keeps it until vgpu_dma_flush). */
void vgpu_dma_unmap(struct vgpu_dma *dma, uint64_t va, uint64_t bytes);
void vgpu_dma_flush(struct vgpu_dma *dma);

/* Start a batch of copies. */
void vgpu_dma_begin(struct vgpu_dma *dma);
/* Queue a copy in the current batch. */
int vgpu_dma_copy(struct vgpu_dma *dma, uint64_t dst_va, uint64_t src_va, uint64_t bytes);
/* Wait until at most in_flight copies of the batch are outstanding (0: all
 * done). 0, the first copy error, or -ETIMEDOUT after timeout_ms. */
int vgpu_dma_wait(struct vgpu_dma *dma, uint64_t in_flight, unsigned timeout_ms);
/* No copy of this batch or an earlier one is running. */
bool vgpu_dma_idle(struct vgpu_dma *dma);
/* Event thread: a VGPU_EVENT_COPY_DONE. */
void vgpu_dma_on_copy_done(struct vgpu_dma *dma, uint64_t cookie, int status);

#endif /* VGPU_CORE_DMA_H */
