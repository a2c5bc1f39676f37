// SPDX-License-Identifier: MIT
/* hal_2m_shim.c - a 2 MiB-page GPU on top of simgpu, see hal_2m_shim.h. */
#include "hal_2m_shim.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_PAGE ((uint64_t)VGPU_PAGE_2M)
#define INNER_PAGE ((uint64_t)VGPU_PAGE_64K)     /* inner VRAM pages */
#define INNER_PER_PAGE (SHIM_PAGE / INNER_PAGE)  /* 32 */
#define SMALL_PAGE ((uint64_t)VGPU_PAGE_4K)
#define SMALL_PER_PAGE (SHIM_PAGE / SMALL_PAGE)  /* 512 */
#define IOVA_BASE (UINT64_C(1) << 40)

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* One iommu_map: the shim's IOVA range and where it is in the inner GPU. */
struct iova_range {
	uint64_t iova, inner_iova, bytes;
};

struct shim {
	struct vgpu_hal base;
	struct vgpu_hal *inner;
	struct vgpu_hal_caps caps;
	bool misaligned_iovas;
	int64_t copies_before_failure; /* atomic; < 0: copies never fail */

	pthread_mutex_t lock; /* everything below */
	uint64_t page_count;
	uint64_t *inner_pages; /* page i: inner_pages[i * 32 ... i * 32 + 31] */
	bool *page_used;
	uint64_t free_pages;
	struct iova_range *ranges; /* sorted by iova */
	size_t range_count, range_capacity;
	uint64_t next_iova;
	struct hal_2m_shim_counters counters;
};

struct shim_as {
	struct vgpu_hal_as base;
	struct vgpu_hal_as *inner;
	uint64_t map_calls; /* as_map calls (atomic) */
};

static struct shim *to_shim(struct vgpu_hal *hal)
{
	return container_of(hal, struct shim, base);
}

static struct shim_as *to_shim_as(struct vgpu_hal_as *as)
{
	return container_of(as, struct shim_as, base);
}

static int refuse(struct shim *shim)
{
	pthread_mutex_lock(&shim->lock);
	shim->counters.refused++;
	pthread_mutex_unlock(&shim->lock);
	return -EINVAL;
}

/* Index of the shim's VRAM page at address, or -1 if that is not the start
 * of an allocated page. Under the lock. */
static int64_t page_index(const struct shim *shim, uint64_t address)
{
	uint64_t index = address / SHIM_PAGE;

	if (address % SHIM_PAGE || index >= shim->page_count || !shim->page_used[index])
		return -1;
	return (int64_t)index;
}

/* The inner 64 KiB pages behind count of the shim's pages, into inner[]
 * (count * 32 entries). -EINVAL (counted) for an address that is not an
 * allocated page. */
static int translate_vram(struct shim *shim, uint64_t count, const uint64_t *addresses,
                          uint64_t *inner)
{
	pthread_mutex_lock(&shim->lock);
	for (uint64_t i = 0; i < count; i++) {
		int64_t index = page_index(shim, addresses[i]);

		if (index < 0) {
			shim->counters.refused++;
			pthread_mutex_unlock(&shim->lock);
			return -EINVAL;
		}
		memcpy(inner + i * INNER_PER_PAGE, shim->inner_pages + index * INNER_PER_PAGE,
		       INNER_PER_PAGE * sizeof(*inner));
	}
	pthread_mutex_unlock(&shim->lock);
	return 0;
}

/* ---- the GPU ------------------------------------------------------------ */

static void shim_destroy(struct vgpu_hal *hal)
{
	struct shim *shim = to_shim(hal);

	vgpu_hal_destroy(shim->inner);
	pthread_mutex_destroy(&shim->lock);
	free(shim->inner_pages);
	free(shim->page_used);
	free(shim->ranges);
	free(shim);
}

static void shim_get_caps(struct vgpu_hal *hal, struct vgpu_hal_caps *caps)
{
	*caps = to_shim(hal)->caps;
}

static void shim_set_event_handler(struct vgpu_hal *hal, vgpu_hal_event_fn fn, void *ctx)
{
	vgpu_hal_set_event_handler(to_shim(hal)->inner, fn, ctx);
}

static int shim_vram_alloc(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                           uint64_t *addresses)
{
	struct shim *shim = to_shim(hal);
	uint64_t *inner, index = 0;
	int err;

	if (page_size != SHIM_PAGE || !count || !addresses)
		return refuse(shim);
	inner = malloc(count * INNER_PER_PAGE * sizeof(*inner));
	if (!inner)
		return -ENOMEM;
	pthread_mutex_lock(&shim->lock);
	err = shim->free_pages < count ? -ENOMEM
	                               : vgpu_hal_vram_alloc(shim->inner, INNER_PAGE,
	                                                     count * INNER_PER_PAGE, inner);
	for (uint64_t i = 0; !err && i < count; i++, index++) {
		while (shim->page_used[index])
			index++;
		shim->page_used[index] = true;
		memcpy(shim->inner_pages + index * INNER_PER_PAGE, inner + i * INNER_PER_PAGE,
		       INNER_PER_PAGE * sizeof(*inner));
		addresses[i] = index * SHIM_PAGE;
	}
	if (!err) {
		shim->free_pages -= count;
		shim->counters.vram_pages_allocated += count;
	}
	pthread_mutex_unlock(&shim->lock);
	free(inner);
	return err;
}

static void shim_vram_free(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                           const uint64_t *addresses)
{
	struct shim *shim = to_shim(hal);
	uint64_t *inner;

	if (page_size != SHIM_PAGE || !addresses) {
		refuse(shim);
		return;
	}
	inner = malloc(count * INNER_PER_PAGE * sizeof(*inner));
	if (!inner || translate_vram(shim, count, addresses, inner)) {
		free(inner);
		return;
	}
	vgpu_hal_vram_free(shim->inner, INNER_PAGE, count * INNER_PER_PAGE, inner);
	pthread_mutex_lock(&shim->lock);
	for (uint64_t i = 0; i < count; i++)
		shim->page_used[addresses[i] / SHIM_PAGE] = false;
	shim->free_pages += count;
	pthread_mutex_unlock(&shim->lock);
	free(inner);
}

static uint64_t shim_vram_free_bytes(struct vgpu_hal *hal)
{
	struct shim *shim = to_shim(hal);
	uint64_t pages;

	pthread_mutex_lock(&shim->lock);
	pages = shim->free_pages;
	pthread_mutex_unlock(&shim->lock);
	return pages * SHIM_PAGE;
}

static int shim_vram_scrub(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                           const uint64_t *addresses)
{
	struct shim *shim = to_shim(hal);
	uint64_t *inner;
	int err;

	if (page_size != SHIM_PAGE || !addresses)
		return refuse(shim);
	inner = malloc(count * INNER_PER_PAGE * sizeof(*inner));
	if (!inner)
		return -ENOMEM;
	err = translate_vram(shim, count, addresses, inner);
	if (!err)
		err = vgpu_hal_vram_scrub(shim->inner, INNER_PAGE, count * INNER_PER_PAGE, inner);
	free(inner);
	return err;
}

static int shim_host_alloc(struct vgpu_hal *hal, uint64_t bytes, struct vgpu_hal_host_buf **out)
{
	return vgpu_hal_host_alloc(to_shim(hal)->inner, bytes, out);
}

static void shim_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf)
{
	vgpu_hal_host_free(to_shim(hal)->inner, buf);
}

static void *shim_host_cpu_pointer(struct vgpu_hal_host_buf *buf)
{
	return vgpu_hal_host_cpu_pointer(buf->hal, buf); /* buf->hal is the inner GPU */
}

static int shim_iommu_map(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf, uint64_t offset,
                          uint64_t bytes, uint64_t *iova)
{
	struct shim *shim = to_shim(hal);
	uint64_t inner_iova;
	int err;

	err = vgpu_hal_iommu_map(shim->inner, buf, offset, bytes, &inner_iova);
	if (err)
		return err;
	pthread_mutex_lock(&shim->lock);
	if (shim->range_count == shim->range_capacity) {
		size_t capacity = shim->range_capacity ? 2 * shim->range_capacity : 64;
		struct iova_range *ranges = realloc(shim->ranges, capacity * sizeof(*ranges));

		if (!ranges) {
			pthread_mutex_unlock(&shim->lock);
			vgpu_hal_iommu_unmap(shim->inner, inner_iova, bytes);
			return -ENOMEM;
		}
		shim->ranges = ranges;
		shim->range_capacity = capacity;
	}
	/* IOVAs only grow, so appending keeps the ranges sorted. */
	*iova = shim->next_iova + (shim->misaligned_iovas ? SMALL_PAGE : 0);
	shim->next_iova = (*iova + bytes + SHIM_PAGE - 1) / SHIM_PAGE * SHIM_PAGE;
	shim->ranges[shim->range_count++] =
	        (struct iova_range){ .iova = *iova, .inner_iova = inner_iova, .bytes = bytes };
	pthread_mutex_unlock(&shim->lock);
	return 0;
}

/* Index of the last range starting at or below iova (0 when none does).
 * Under the lock. */
static size_t find_range(const struct shim *shim, uint64_t iova)
{
	size_t low = 0, high = shim->range_count;

	while (high - low > 1) {
		size_t middle = low + (high - low) / 2;

		if (shim->ranges[middle].iova <= iova)
			low = middle;
		else
			high = middle;
	}
	return low;
}

static int shim_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes)
{
	struct shim *shim = to_shim(hal);
	struct iova_range *range;
	size_t index;
	int err = -EFAULT;

	pthread_mutex_lock(&shim->lock);
	index = find_range(shim, iova);
	range = &shim->ranges[index];
	if (shim->range_count && range->iova == iova && range->bytes == bytes) {
		err = vgpu_hal_iommu_unmap(shim->inner, range->inner_iova, bytes);
		memmove(range, range + 1, (shim->range_count - index - 1) * sizeof(*range));
		shim->range_count--;
	}
	pthread_mutex_unlock(&shim->lock);
	return err;
}

/* ---- address spaces ----------------------------------------------------- */

static int shim_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out)
{
	struct shim_as *as = calloc(1, sizeof(*as));
	int err;

	if (!as)
		return -ENOMEM;
	err = vgpu_hal_as_create(to_shim(hal)->inner, &as->inner);
	if (err) {
		free(as);
		return err;
	}
	as->base.hal = hal;
	*out = &as->base;
	return 0;
}

static void shim_as_destroy(struct vgpu_hal_as *hal_as)
{
	struct shim_as *as = to_shim_as(hal_as);

	vgpu_hal_as_destroy(as->inner);
	free(as);
}

/* 2 MiB VRAM pages become 32 inner 64 KiB pages each. */
static int map_vram(struct shim *shim, struct shim_as *as, uint64_t va, uint64_t count,
                    const uint64_t *addresses, uint32_t flags)
{
	uint64_t *inner = malloc(count * INNER_PER_PAGE * sizeof(*inner));
	int err;

	if (!inner)
		return -ENOMEM;
	err = translate_vram(shim, count, addresses, inner);
	if (!err)
		err = vgpu_hal_as_map(as->inner, va, INNER_PAGE, count * INNER_PER_PAGE,
		                      VGPU_TARGET_VRAM, inner, flags);
	free(inner);
	if (!err) {
		pthread_mutex_lock(&shim->lock);
		shim->counters.vram_pages_mapped += count;
		pthread_mutex_unlock(&shim->lock);
	}
	return err;
}

/* The inner IOVA of [iova, iova + bytes), or -EFAULT when the shim never
 * mapped all of it in one range. Under the lock. */
static int translate_iova(const struct shim *shim, uint64_t iova, uint64_t bytes, uint64_t *inner)
{
	const struct iova_range *range;

	if (!shim->range_count)
		return -EFAULT;
	range = &shim->ranges[find_range(shim, iova)];
	if (iova < range->iova || iova + bytes > range->iova + range->bytes)
		return -EFAULT;
	*inner = range->inner_iova + (iova - range->iova);
	return 0;
}

/* Shim IOVAs become inner IOVAs: 4 KiB pages one to one, a 2 MiB page as
 * 32 inner 64 KiB pages where every inner IOVA allows it, else as 512
 * inner 4 KiB pages. */
static int map_sysmem(struct shim *shim, struct shim_as *as, uint64_t va, uint32_t page_size,
                      uint64_t count, enum vgpu_hal_target target, const uint64_t *addresses,
                      uint32_t flags)
{
	uint64_t *starts = malloc(count * sizeof(*starts)), *inner = NULL;
	uint64_t inner_page = page_size == SHIM_PAGE ? INNER_PAGE : SMALL_PAGE, per_page;
	int err = 0;

	if (!starts)
		return -ENOMEM;
	pthread_mutex_lock(&shim->lock);
	for (uint64_t i = 0; !err && i < count; i++)
		err = translate_iova(shim, addresses[i], page_size, &starts[i]);
	pthread_mutex_unlock(&shim->lock);
	for (uint64_t i = 0; !err && i < count; i++)
		if (starts[i] % inner_page)
			inner_page = SMALL_PAGE;
	per_page = page_size / inner_page;
	if (!err) {
		inner = malloc(count * per_page * sizeof(*inner));
		err = inner ? 0 : -ENOMEM;
	}
	for (uint64_t i = 0; !err && i < count; i++)
		for (uint64_t k = 0; k < per_page; k++)
			inner[i * per_page + k] = starts[i] + k * inner_page;
	if (!err)
		err = vgpu_hal_as_map(as->inner, va, (uint32_t)inner_page, count * per_page, target,
		                      inner, flags);
	if (!err) {
		pthread_mutex_lock(&shim->lock);
		if (page_size == SHIM_PAGE)
			shim->counters.sysmem_2m_pages_mapped += count;
		else
			shim->counters.sysmem_4k_pages_mapped += count;
		pthread_mutex_unlock(&shim->lock);
	}
	free(inner);
	free(starts);
	return err;
}

static int shim_as_map(struct vgpu_hal_as *hal_as, uint64_t va, uint32_t page_size,
                       uint64_t count, enum vgpu_hal_target target, const uint64_t *addresses,
                       uint32_t flags)
{
	struct shim *shim = to_shim(hal_as->hal);
	struct shim_as *as = to_shim_as(hal_as);
	uint32_t mask = target == VGPU_TARGET_VRAM ? shim->caps.page_size_mask
	                                           : shim->caps.sysmem_page_size_mask;
	bool size_ok = (page_size == SHIM_PAGE && (mask & VGPU_HAL_PAGE_MASK_2M)) ||
	               (page_size == SMALL_PAGE && (mask & VGPU_HAL_PAGE_MASK_4K));

	__atomic_add_fetch(&as->map_calls, 1, __ATOMIC_RELAXED);
	if (!size_ok || !count || !addresses || va % page_size ||
	    (unsigned)target >= VGPU_TARGET_COUNT)
		return refuse(shim);
	for (uint64_t i = 0; i < count; i++)
		if (addresses[i] % page_size)
			return refuse(shim);
	if (target == VGPU_TARGET_VRAM)
		return map_vram(shim, as, va, count, addresses, flags);
	return map_sysmem(shim, as, va, page_size, count, target, addresses, flags);
}

static int shim_as_unmap(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes)
{
	return vgpu_hal_as_unmap(to_shim_as(as)->inner, va, bytes);
}

static void shim_as_tlb_invalidate(struct vgpu_hal_as *as)
{
	vgpu_hal_as_tlb_invalidate(to_shim_as(as)->inner);
}

static int shim_as_read(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes)
{
	return vgpu_hal_as_read(to_shim_as(as)->inner, va, dst, bytes);
}

static int shim_as_write(struct vgpu_hal_as *as, uint64_t va, const void *src, uint64_t bytes)
{
	return vgpu_hal_as_write(to_shim_as(as)->inner, va, src, bytes);
}

static int shim_as_test_and_clear_referenced(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                                             bool *referenced)
{
	return vgpu_hal_as_test_and_clear_referenced(to_shim_as(as)->inner, va, bytes, referenced);
}

static void shim_as_counters(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out)
{
	vgpu_hal_as_counters(to_shim_as(as)->inner, out);
}

/* The channel is the inner GPU's (its hal pointer too), so the other
 * channel operations never reach the shim. */
static int shim_channel_create(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
                               struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info)
{
	return vgpu_hal_channel_create(to_shim_as(as)->inner, gpfifo_entries, out, info);
}

static int shim_copy(struct vgpu_hal_as *as, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
                     uint64_t cookie)
{
	struct shim *shim = to_shim(as->hal);
	int64_t left = __atomic_load_n(&shim->copies_before_failure, __ATOMIC_RELAXED);

	while (left >= 0) {
		if (left == 0)
			return -EIO; /* the copy engine refuses */
		if (__atomic_compare_exchange_n(&shim->copies_before_failure, &left, left - 1, false,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	return vgpu_hal_copy(to_shim_as(as)->inner, dst_va, src_va, bytes, cookie);
}

static int32_t shim_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	return vgpu_hal_engine_current_channel(to_shim(hal)->inner, engine);
}

static bool shim_channel_pending(struct vgpu_hal *hal, uint32_t channel_id)
{
	return vgpu_hal_channel_pending(to_shim(hal)->inner, channel_id);
}

static uint64_t shim_engine_modeled_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	return vgpu_hal_engine_modeled_ns(to_shim(hal)->inner, engine);
}

/* Modules are the inner GPU's: parsed by it (so info and free reach it
 * through the module), bound into the inner address space. */
static int shim_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes,
                             const char *name, struct vgpu_hal_module **out,
                             struct vgpu_error *error)
{
	return vgpu_hal_module_parse(to_shim(hal)->inner, image, bytes, name, out, error);
}

static int shim_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                            const uint64_t *variable_va, uint32_t *id)
{
	return vgpu_hal_module_bind(to_shim_as(as)->inner, module, variable_va, id);
}

static int shim_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                               const uint64_t *variable_va, uint32_t id)
{
	return vgpu_hal_module_bind_at(to_shim_as(as)->inner, module, variable_va, id);
}

static int shim_module_unbind(struct vgpu_hal_as *as, uint32_t id)
{
	return vgpu_hal_module_unbind(to_shim_as(as)->inner, id);
}

/* host_share and the channel operations after channel_create are called
 * through the inner GPU's objects (buf->hal, ch->hal), never through the
 * shim: they stay NULL here. */
static const struct vgpu_hal_ops shim_ops = {
	.destroy = shim_destroy,
	.get_caps = shim_get_caps,
	.set_event_handler = shim_set_event_handler,
	.vram_alloc = shim_vram_alloc,
	.vram_free = shim_vram_free,
	.vram_free_bytes = shim_vram_free_bytes,
	.vram_scrub = shim_vram_scrub,
	.host_alloc = shim_host_alloc,
	.host_free = shim_host_free,
	.host_cpu_pointer = shim_host_cpu_pointer,
	.iommu_map = shim_iommu_map,
	.iommu_unmap = shim_iommu_unmap,
	.as_create = shim_as_create,
	.as_destroy = shim_as_destroy,
	.as_map = shim_as_map,
	.as_unmap = shim_as_unmap,
	.as_tlb_invalidate = shim_as_tlb_invalidate,
	.as_read = shim_as_read,
	.as_write = shim_as_write,
	.as_test_and_clear_referenced = shim_as_test_and_clear_referenced,
	.as_counters = shim_as_counters,
	.channel_create = shim_channel_create,
	.copy = shim_copy,
	.engine_current_channel = shim_engine_current_channel,
	.channel_pending = shim_channel_pending,
	.engine_modeled_ns = shim_engine_modeled_ns,
	.module_parse = shim_module_parse,
	.module_bind = shim_module_bind,
	.module_bind_at = shim_module_bind_at,
	.module_unbind = shim_module_unbind,
};

int hal_2m_shim_create(struct vgpu_hal *inner, const struct hal_2m_shim_config *config,
                       struct vgpu_hal **out)
{
	struct vgpu_hal_caps caps;
	struct shim *shim;

	vgpu_hal_get_caps(inner, &caps);
	if (!(caps.page_size_mask & VGPU_HAL_PAGE_MASK_64K) ||
	    !(caps.sysmem_page_size_mask & VGPU_HAL_PAGE_MASK_4K) || caps.vram_bytes < SHIM_PAGE) {
		vgpu_hal_destroy(inner);
		return -ENOTSUP;
	}
	shim = calloc(1, sizeof(*shim));
	if (!shim) {
		vgpu_hal_destroy(inner);
		return -ENOMEM;
	}
	shim->base.ops = &shim_ops;
	shim->inner = inner;
	shim->misaligned_iovas = config && config->misaligned_iovas;
	shim->copies_before_failure = -1;
	shim->page_count = caps.vram_bytes / SHIM_PAGE;
	shim->free_pages = shim->page_count;
	shim->next_iova = IOVA_BASE;
	shim->inner_pages = malloc(shim->page_count * INNER_PER_PAGE * sizeof(uint64_t));
	shim->page_used = calloc(shim->page_count, sizeof(bool));
	pthread_mutex_init(&shim->lock, NULL);
	shim->caps = caps;
	shim->caps.name = "simgpu-2m";
	shim->caps.vram_bytes = shim->page_count * SHIM_PAGE;
	shim->caps.page_size_mask = VGPU_HAL_PAGE_MASK_2M;
	shim->caps.sysmem_page_size_mask = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_2M;
	if (!shim->inner_pages || !shim->page_used) {
		shim_destroy(&shim->base);
		return -ENOMEM;
	}
	*out = &shim->base;
	return 0;
}

void hal_2m_shim_counters(struct vgpu_hal *hal, struct hal_2m_shim_counters *out)
{
	struct shim *shim = to_shim(hal);

	pthread_mutex_lock(&shim->lock);
	*out = shim->counters;
	pthread_mutex_unlock(&shim->lock);
}

void hal_2m_shim_fail_copies(struct vgpu_hal *hal, int64_t after)
{
	__atomic_store_n(&to_shim(hal)->copies_before_failure, after < 0 ? -1 : after,
	                 __ATOMIC_RELAXED);
}

uint64_t hal_2m_shim_as_map_calls(struct vgpu_hal_as *as)
{
	return __atomic_load_n(&to_shim_as(as)->map_calls, __ATOMIC_RELAXED);
}
