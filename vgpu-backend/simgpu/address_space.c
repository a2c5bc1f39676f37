// SPDX-License-Identifier: MIT
/* address_space.c - GPU virtual address spaces (see address_space.h). */
#include "address_space.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu_device.h"
#include "spatial.h"

int simgpu_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out)
{
	struct simgpu *gpu = to_simgpu(hal);
	struct simgpu_address_space *as;
	int ret = -ENOSPC;

	pthread_mutex_lock(&gpu->objects_lock);
	if (gpu->address_space_count < gpu->config.max_address_spaces) {
		gpu->address_space_count++;
		ret = 0;
	}
	pthread_mutex_unlock(&gpu->objects_lock);
	if (ret)
		return ret;

	as = calloc(1, sizeof(*as));
	if (!as) {
		ret = -ENOMEM;
		goto fail_count;
	}
	as->base.hal = hal;
	as->gpu = gpu;
	ret = tlb_init(&as->tlb, gpu->config.tlb_entries);
	if (ret)
		goto fail_free;
	ret = page_table_init(&as->page_table, gpu->vram, &gpu->reserved_allocator);
	if (ret)
		goto fail_tlb;
	pthread_mutex_init(&as->lock, NULL);
	module_table_init(&as->modules);
	dirty_pages_init(&as->dirty);
	access_profile_init(&as->profile);
	*out = &as->base;
	return 0;

fail_tlb:
	tlb_destroy(&as->tlb);
fail_free:
	free(as);
fail_count:
	pthread_mutex_lock(&gpu->objects_lock);
	gpu->address_space_count--;
	pthread_mutex_unlock(&gpu->objects_lock);
	return ret;
}

void simgpu_as_destroy(struct vgpu_hal_as *hal_as)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	struct simgpu *gpu;

	if (!as)
		return;
	gpu = as->gpu;
	copy_engine_wait_idle(&gpu->copy_engine, as);
	spatial_forget(gpu->spatial, as);
	module_table_destroy(&as->modules);
	page_table_destroy(&as->page_table);
	tlb_destroy(&as->tlb);
	dirty_pages_fini(&as->dirty);
	access_profile_fini(&as->profile, as->busy_ps[VGPU_ENGINE_COMPUTE] / 1000,
	                    as->busy_ps[VGPU_ENGINE_COPY] / 1000);
	pthread_mutex_destroy(&as->lock);
	free(as);
	pthread_mutex_lock(&gpu->objects_lock);
	gpu->address_space_count--;
	pthread_mutex_unlock(&gpu->objects_lock);
}

int address_space_map_internal(struct simgpu_address_space *as, uint64_t va, unsigned page_shift,
                               uint64_t count, uint64_t pte_flags, const uint64_t *addresses)
{
	int ret;

	pthread_mutex_lock(&as->lock);
	ret = page_table_map(&as->page_table, va, page_shift, count, pte_flags, addresses);
	pthread_mutex_unlock(&as->lock);
	return ret;
}

int address_space_unmap_internal(struct simgpu_address_space *as, uint64_t va, uint64_t bytes)
{
	int ret;

	pthread_mutex_lock(&as->lock);
	ret = page_table_unmap(&as->page_table, va, bytes);
	pthread_mutex_unlock(&as->lock);
	return ret;
}

int simgpu_as_map(struct vgpu_hal_as *hal_as, uint64_t va, uint32_t page_size, uint64_t count,
                  enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	struct simgpu *gpu = as->gpu;
	unsigned page_shift;
	uint64_t pte_flags = 0, i;

	if (page_size == VGPU_PAGE_4K)
		page_shift = GMMU_SMALL_PAGE_SHIFT;
	else if (page_size == VGPU_PAGE_64K)
		page_shift = GMMU_LARGE_PAGE_SHIFT;
	else
		return -EINVAL;
	if (count == 0 || !addresses || va % page_size || (unsigned)target >= VGPU_TARGET_COUNT ||
	    (flags & ~(VGPU_MAP_READ_ONLY | VGPU_MAP_PRIVILEGED)))
		return -EINVAL;
	if (count > gpu->caps.va_reserved_base / page_size ||
	    va > gpu->caps.va_reserved_base - count * page_size)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		if (addresses[i] % page_size)
			return -EINVAL;
		if (target == VGPU_TARGET_VRAM &&
		    addresses[i] > gpu->caps.vram_bytes - page_size)
			return -EINVAL;
		if (target != VGPU_TARGET_VRAM && addresses[i] >> 52)
			return -EINVAL;
	}
	pte_flags = (uint64_t)target << PTE_TARGET_SHIFT;
	if (flags & VGPU_MAP_READ_ONLY)
		pte_flags |= PTE_READ_ONLY;
	if (flags & VGPU_MAP_PRIVILEGED)
		pte_flags |= PTE_PRIVILEGED;
	return address_space_map_internal(as, va, page_shift, count, pte_flags, addresses);
}

int simgpu_as_unmap(struct vgpu_hal_as *hal_as, uint64_t va, uint64_t bytes)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);

	if (bytes == 0 || va % VGPU_PAGE_4K || bytes % VGPU_PAGE_4K ||
	    va > as->gpu->caps.va_reserved_base || bytes > as->gpu->caps.va_reserved_base - va)
		return -EINVAL;
	return address_space_unmap_internal(as, va, bytes);
}

void simgpu_as_tlb_invalidate(struct vgpu_hal_as *hal_as)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);

	/* Engines translate and access under this lock, so once we hold it no
	 * engine is using a dropped translation any more. */
	pthread_mutex_lock(&as->lock);
	tlb_invalidate_all(&as->tlb);
	pthread_mutex_unlock(&as->lock);
}

/* Host address of the aperture byte at va; the caller holds the AS lock and
 * the IOMMU read lock. *contiguous: bytes until the page or mapping ends. */
static uint8_t *aperture_translate(struct simgpu_address_space *as, uint64_t va,
                                   uint64_t *contiguous)
{
	struct simgpu *gpu = as->gpu;
	struct gmmu_translation translation;
	uint64_t page_bytes, offset, address;
	uint8_t *host;

	if (!page_table_walk(&as->page_table, va, &translation))
		return NULL;
	page_bytes = UINT64_C(1) << translation.page_shift;
	offset = va & (page_bytes - 1);
	address = (translation.pte & PTE_ADDRESS_MASK) + offset;
	*contiguous = page_bytes - offset;
	if (pte_target(translation.pte) == VGPU_TARGET_VRAM) {
		if (address >= gpu->vram_total_bytes)
			return NULL;
		return gpu->vram + address;
	}
	if (pte_target(translation.pte) >= VGPU_TARGET_COUNT)
		return NULL;
	{
		uint64_t mapped;

		host = iommu_translate(&gpu->iommu, NULL, address, &mapped);
		if (host && mapped < *contiguous)
			*contiguous = mapped;
	}
	return host;
}

/* Copy between the aperture and the CPU; all or nothing. */
static int aperture_copy(struct simgpu_address_space *as, uint64_t va, void *cpu, uint64_t bytes,
                         bool write)
{
	struct simgpu *gpu = as->gpu;
	uint64_t position, contiguous;
	int ret = 0;

	if (bytes == 0)
		return 0;
	if (!cpu || va >> GMMU_VA_BITS || bytes > (UINT64_C(1) << GMMU_VA_BITS) - va)
		return -EFAULT;
	pthread_mutex_lock(&as->lock);
	iommu_read_lock(&gpu->iommu);
	/* first check every page, then copy */
	for (position = 0; position < bytes; position += contiguous) {
		if (!aperture_translate(as, va + position, &contiguous)) {
			ret = -EFAULT;
			goto out;
		}
	}
	for (position = 0; position < bytes; position += contiguous) {
		uint8_t *host = aperture_translate(as, va + position, &contiguous);

		if (contiguous > bytes - position)
			contiguous = bytes - position;
		if (write)
			memcpy(host, (const uint8_t *)cpu + position, contiguous);
		else
			memcpy((uint8_t *)cpu + position, host, contiguous);
	}
out:
	iommu_read_unlock(&gpu->iommu);
	pthread_mutex_unlock(&as->lock);
	return ret;
}

int simgpu_as_read(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes)
{
	return aperture_copy(to_simgpu_as(as), va, dst, bytes, false);
}

int simgpu_as_write(struct vgpu_hal_as *hal_as, uint64_t va, const void *src, uint64_t bytes)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	int ret = aperture_copy(as, va, (void *)src, bytes, true);

	/* a CPU write may release a semaphore a channel waits for */
	if (ret == 0)
		pfifo_wake(&as->gpu->pfifo);
	return ret;
}

int simgpu_as_test_and_clear_referenced(struct vgpu_hal_as *hal_as, uint64_t va, uint64_t bytes,
                                        bool *referenced)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);

	if (!as->gpu->config.reference_bits)
		return -ENOTSUP;
	if (!referenced || bytes == 0 || va >> GMMU_VA_BITS ||
	    bytes > (UINT64_C(1) << GMMU_VA_BITS) - va)
		return -EINVAL;
	pthread_mutex_lock(&as->lock);
	page_table_test_and_clear_referenced(&as->page_table, va, bytes, referenced);
	/* cached translations must set the bit again on their next access */
	tlb_forget_referenced(&as->tlb);
	pthread_mutex_unlock(&as->lock);
	return 0;
}

int simgpu_as_dirty_tracking(struct vgpu_hal_as *hal_as, bool enable)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);

	pthread_mutex_lock(&as->lock);
	dirty_pages_enable(&as->dirty, enable);
	pthread_mutex_unlock(&as->lock);
	return 0;
}

int simgpu_as_test_and_clear_dirty(struct vgpu_hal_as *hal_as, uint64_t va, uint64_t bytes,
                                   bool *dirty)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	int ret = 0;

	if (!dirty || bytes == 0 || va >> GMMU_VA_BITS ||
	    bytes > (UINT64_C(1) << GMMU_VA_BITS) - va)
		return -EINVAL;
	pthread_mutex_lock(&as->lock);
	if (as->dirty.enabled)
		*dirty = dirty_pages_test_and_clear(&as->dirty, va, bytes);
	else
		ret = -EINVAL;
	pthread_mutex_unlock(&as->lock);
	return ret;
}

void simgpu_as_counters(struct vgpu_hal_as *hal_as, struct vgpu_hal_as_counters *out)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	unsigned i;

	pthread_mutex_lock(&as->lock);
	for (i = 0; i < VGPU_TARGET_COUNT; i++) {
		out->bytes_read[i] = as->bytes_read[i];
		out->bytes_written[i] = as->bytes_written[i];
	}
	for (i = 0; i < VGPU_ENGINE_COUNT; i++) {
		out->busy_ns[i] = as->busy_ps[i] / 1000;
		out->resident_wall_ns[i] = as->resident_wall_ns[i];
	}
	pthread_mutex_unlock(&as->lock);
}

int simgpu_as_contention(struct vgpu_hal_as *hal_as, struct vgpu_hal_as_contention *out)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);

	return spatial_as_figures(as->gpu->spatial, as, out);
}
