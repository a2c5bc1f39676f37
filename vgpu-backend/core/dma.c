// SPDX-License-Identifier: MIT
/* dma.c - private DMA address space and copy completions, see dma.h. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "dma.h"
#include "page_size.h"

#define DMA_VA_BASE (1ull << 20)
#define COOKIE_GENERATION_SHIFT 32

int vgpu_dma_init(struct vgpu_dma *dma, struct vgpu_hal *hal, const struct vgpu_hal_caps *caps)
{
	pthread_condattr_t attr;
	int err;

	dma->hal = hal;
	dma->sysmem_page_size_mask = caps->sysmem_page_size_mask;
	/* Windows fit the largest page of either kind. */
	dma->window_align =
	        vgpu_page_size_largest(caps->page_size_mask | caps->sysmem_page_size_mask);
	dma->generation = 0;
	dma->submitted = dma->completed = 0;
	dma->error = 0;
	err = vgpu_hal_as_create(hal, &dma->as);
	if (err)
		return err;
	vgpu_va_init(&dma->va, DMA_VA_BASE, caps->va_reserved_base);
	pthread_mutex_init(&dma->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&dma->cond, &attr);
	pthread_condattr_destroy(&attr);
	return 0;
}

void vgpu_dma_fini(struct vgpu_dma *dma)
{
	if (!dma->as)
		return;
	vgpu_hal_as_destroy(dma->as);
	dma->as = NULL;
	vgpu_va_fini(&dma->va);
	pthread_cond_destroy(&dma->cond);
	pthread_mutex_destroy(&dma->lock);
}

int vgpu_dma_map_vram(struct vgpu_dma *dma, const uint64_t *pages, uint32_t page_size,
                      uint64_t bytes, uint64_t *va)
{
	int err = vgpu_va_alloc(&dma->va, bytes, dma->window_align, va);

	if (err)
		return err;
	err = vgpu_hal_as_map(dma->as, *va, page_size, bytes / page_size, VGPU_TARGET_VRAM, pages,
	                      VGPU_MAP_PRIVILEGED);
	if (err)
		vgpu_va_free(&dma->va, *va, bytes);
	return err;
}

int vgpu_dma_map_iova(struct vgpu_dma *dma, uint64_t iova, uint64_t bytes, uint64_t *va)
{
	/* The window's VA is aligned to every page size: only the IOVA and the
	 * length limit it. */
	uint32_t page_size = vgpu_page_size_largest_dividing(dma->sysmem_page_size_mask,
	                                                     iova | bytes);
	uint64_t count, *addresses;
	int err;

	if (!page_size)
		return -EINVAL;
	count = bytes / page_size;
	addresses = malloc(count * sizeof(*addresses));
	if (!addresses)
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++)
		addresses[i] = iova + i * page_size;
	err = vgpu_va_alloc(&dma->va, bytes, dma->window_align, va);
	if (!err) {
		err = vgpu_hal_as_map(dma->as, *va, page_size, count, VGPU_TARGET_SYSMEM_NONCOHERENT,
		                      addresses, VGPU_MAP_PRIVILEGED);
		if (err)
			vgpu_va_free(&dma->va, *va, bytes);
	}
	free(addresses);
	return err;
}

void vgpu_dma_unmap(struct vgpu_dma *dma, uint64_t va, uint64_t bytes)
{
	vgpu_hal_as_unmap(dma->as, va, bytes);
	vgpu_va_free(&dma->va, va, bytes);
}

void vgpu_dma_flush(struct vgpu_dma *dma)
{
	vgpu_hal_as_tlb_invalidate(dma->as);
}

void vgpu_dma_begin(struct vgpu_dma *dma)
{
	pthread_mutex_lock(&dma->lock);
	dma->generation++;
	dma->abandoned += dma->submitted - dma->completed; /* a batch that timed out */
	dma->submitted = 0;
	dma->completed = 0;
	dma->error = 0;
	pthread_mutex_unlock(&dma->lock);
}

int vgpu_dma_copy(struct vgpu_dma *dma, uint64_t dst_va, uint64_t src_va, uint64_t bytes)
{
	uint64_t cookie;
	int err;

	pthread_mutex_lock(&dma->lock);
	cookie = (dma->generation << COOKIE_GENERATION_SHIFT) | (dma->submitted & 0xffffffffu);
	dma->submitted++;
	pthread_mutex_unlock(&dma->lock);

	err = vgpu_hal_copy(dma->as, dst_va, src_va, bytes, cookie);
	if (err) {
		pthread_mutex_lock(&dma->lock);
		dma->submitted--;
		pthread_mutex_unlock(&dma->lock);
	}
	return err;
}

void vgpu_dma_on_copy_done(struct vgpu_dma *dma, uint64_t cookie, int status)
{
	pthread_mutex_lock(&dma->lock);
	if ((cookie >> COOKIE_GENERATION_SHIFT) == (dma->generation & 0xffffffffu)) {
		dma->completed++;
		if (status && !dma->error)
			dma->error = status;
		pthread_cond_broadcast(&dma->cond);
	} else if (dma->abandoned) {
		dma->abandoned--;
	}
	pthread_mutex_unlock(&dma->lock);
}

bool vgpu_dma_idle(struct vgpu_dma *dma)
{
	bool idle;

	pthread_mutex_lock(&dma->lock);
	idle = !dma->abandoned && dma->submitted == dma->completed;
	pthread_mutex_unlock(&dma->lock);
	return idle;
}

int vgpu_dma_wait(struct vgpu_dma *dma, uint64_t in_flight, unsigned timeout_ms)
{
	struct timespec deadline;
	int err = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&dma->lock);
	while (dma->submitted - dma->completed > in_flight) {
		if (pthread_cond_timedwait(&dma->cond, &dma->lock, &deadline) == ETIMEDOUT) {
			err = -ETIMEDOUT;
			break;
		}
	}
	if (!err)
		err = dma->error;
	pthread_mutex_unlock(&dma->lock);
	return err;
}
