// SPDX-License-Identifier: MIT
/*
 * address_space.c - cudagpu's GPU address spaces: a cuMemAddressReserve
 * range each, cudagpu's own page table of what is mapped where, the PTE
 * rewrite (cuMemUnmap / cuMemMap / cuMemSetAccess), resolution of VA
 * ranges for the engines and the CPU, and the copy engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudagpu_internal.h"

#define MAX_APERTURE_SEGMENTS 64u

static struct cg_as *as_of(struct vgpu_hal_as *as)
{
	return (struct cg_as *)as;
}

static struct cudagpu *gpu_of_as(struct cg_as *as)
{
	return cg_of(as->base.hal);
}

/* The slot of 2 MiB page index, allocating its leaf when create is set. */
static struct cg_slot *slot_at(struct cg_as *as, uint64_t index, bool create)
{
	struct cg_slot **leaf = &as->leaves[index / CG_SLOTS_PER_LEAF];

	if (!*leaf) {
		if (!create)
			return NULL;
		*leaf = calloc(CG_SLOTS_PER_LEAF, sizeof(**leaf));
		if (!*leaf)
			return NULL;
	}
	return &(*leaf)[index % CG_SLOTS_PER_LEAF];
}

static bool is_cuda_mapped(const struct cg_slot *slot)
{
	return slot->kind == CG_SLOT_VRAM || slot->kind == CG_SLOT_SYSMEM;
}

/* Where the driver maps 2 MiB slot index of as. */
static cg_deviceptr slot_address(const struct cg_as *as, uint64_t index)
{
	return as->identity && index == 0 ? as->slot0 : as->va_base + index * CG_PAGE;
}

/* Drop whatever slot index holds (memory_lock held). */
static cg_result slot_clear(struct cudagpu *gpu, struct cg_as *as, uint64_t index,
                            struct cg_slot *slot)
{
	cg_result r = CG_SUCCESS;

	if (is_cuda_mapped(slot) && !as->shadow) {
		uint64_t t0 = cg_now_ns();

		r = gpu->api.cuMemUnmap(slot_address(as, index), CG_PAGE);
		cg_time_call(&gpu->map_timing.unmap_ns, &gpu->map_timing.unmap_calls, t0);
	}
	free(slot->small);
	memset(slot, 0, sizeof(*slot));
	return r;
}

/*
 * Drop the driver's mappings over slots [first, first + count) (memory_lock
 * held): one cuMemUnmap per run of back-to-back mapped slots (the driver
 * takes a run of whole mappings in one call, and pays its TLB shoot-down
 * once), the slots left empty. A run the driver refuses is unmapped slot by
 * slot instead.
 */
static void unmap_runs(struct cudagpu *gpu, struct cg_as *as, uint64_t first, uint64_t count)
{
	uint64_t i = 0;

	while (i < count) {
		struct cg_slot *slot = slot_at(as, first + i, false);
		uint64_t end, t0;
		cg_result r;

		if (!slot || !is_cuda_mapped(slot)) {
			i++;
			continue;
		}
		for (end = i + 1; end < count; end++) {
			struct cg_slot *next = slot_at(as, first + end, false);

			if (!next || !is_cuda_mapped(next) || (as->identity && first + i == 0))
				break; /* (the identity range's slot 0 is mapped apart) */
		}
		if (as->shadow) { /* nothing of it is in this process's context */
			for (; i < end; i++)
				memset(slot_at(as, first + i, false), 0, sizeof(*slot));
			continue;
		}
		t0 = cg_now_ns();
		r = gpu->api.cuMemUnmap(slot_address(as, first + i), (end - i) * CG_PAGE);
		cg_time_call(&gpu->map_timing.unmap_ns, &gpu->map_timing.unmap_calls, t0);
		for (; i < end; i++) {
			slot = slot_at(as, first + i, false);
			if (r == CG_SUCCESS)
				memset(slot, 0, sizeof(*slot));
			else
				slot_clear(gpu, as, first + i, slot);
		}
	}
}

/*
 * The worker's address space at the VM's own addresses, so that the
 * pointers a VM's kernel uses are the driver's: [CG_PAGE, CG_VA_BYTES)
 * reserved where it is asked for (va_base 0), the first 2 MiB in a range
 * of its own. A driver that puts the range elsewhere gets it back: the
 * worker then runs the built-in kernels only (module.c says why).
 */
static void reserve_identity(struct cudagpu *gpu, struct cg_as *as)
{
	cg_deviceptr at = 0, slot0 = 0;

	if (gpu->api.cuMemAddressReserve(&at, CG_VA_BYTES - CG_PAGE, CG_PAGE, CG_PAGE, 0) !=
	    CG_SUCCESS)
		return;
	if (at != CG_PAGE ||
	    gpu->api.cuMemAddressReserve(&slot0, CG_PAGE, CG_PAGE, 0, 0) != CG_SUCCESS) {
		gpu->api.cuMemAddressFree(at, CG_VA_BYTES - CG_PAGE);
		return;
	}
	as->identity = true;
	as->va_base = 0;
	as->slot0 = slot0;
}

int cg_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_as *as;
	uint32_t id;
	cg_result r;
	int err = -ENOSPC;

	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->base.hal = hal;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	for (id = 0; id < gpu->config.max_address_spaces; id++)
		if (!gpu->spaces[id])
			break;
	as->shadow = gpu->config.isolation == CUDAGPU_ISOLATION_PROCESS && !gpu->worker_role;
	if (id < gpu->config.max_address_spaces) {
		if (gpu->worker_role)
			reserve_identity(gpu, as);
		r = as->shadow || as->identity
		            ? CG_SUCCESS
		            : gpu->api.cuMemAddressReserve(&as->va_base, CG_VA_BYTES, CG_PAGE, 0, 0);
		if (r == CG_SUCCESS) {
			as->id = id;
			gpu->spaces[id] = as;
			err = 0;
		} else {
			err = r == CG_ERROR_OUT_OF_MEMORY ? -ENOMEM : cg_errno(r);
		}
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	if (err) {
		free(as);
		return err;
	}
	*out = &as->base;
	return 0;
}

void cg_as_teardown_locked(struct cudagpu *gpu, struct cg_as *as)
{
	uint64_t leaf, i;

	cg_enter(gpu);
	for (leaf = 0; leaf < CG_LEAVES; leaf++) {
		if (!as->leaves[leaf])
			continue;
		unmap_runs(gpu, as, leaf * CG_SLOTS_PER_LEAF, CG_SLOTS_PER_LEAF);
		for (i = 0; i < CG_SLOTS_PER_LEAF; i++)
			slot_clear(gpu, as, leaf * CG_SLOTS_PER_LEAF + i, &as->leaves[leaf][i]);
		free(as->leaves[leaf]);
	}
	if (as->identity) {
		gpu->api.cuMemAddressFree(CG_PAGE, CG_VA_BYTES - CG_PAGE);
		gpu->api.cuMemAddressFree(as->slot0, CG_PAGE);
	} else if (!as->shadow) {
		gpu->api.cuMemAddressFree(as->va_base, CG_VA_BYTES);
	}
	gpu->spaces[as->id] = NULL;
}

void cg_as_destroy(struct vgpu_hal_as *base)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = gpu_of_as(as);
	bool later;

	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	/* Killed work still running in it: its mappings and VA range stay
	 * until that work ends (quarantine.c tears it down then). */
	later = as->zombies != 0;
	if (later)
		as->destroy_pending = true;
	else
		cg_as_teardown_locked(gpu, as);
	pthread_mutex_unlock(&gpu->memory_lock);
	if (!later)
		free(as);
}

/* The physical allocation (handle, offset) behind a 2 MiB page. */
static int page_backing(struct cudagpu *gpu, enum vgpu_hal_target target, uint64_t address,
                        cg_mem_handle *handle, uint64_t *offset)
{
	if (target == VGPU_TARGET_VRAM) {
		if (address % CG_PAGE || address / CG_PAGE >= gpu->vram_pages)
			return -EINVAL;
		*handle = gpu->vram_handles[address / CG_PAGE];
		*offset = 0;
		return 0;
	}
	const struct cg_iommu_mapping *m = cg_iommu_find(gpu, address);

	if (!m || address + CG_PAGE > m->iova + m->bytes)
		return -EFAULT;
	if (m->buf->kind != CG_HOST_NUMA)
		return -EINVAL; /* small host buffers have no 2 MiB pages */
	*offset = m->offset + (address - m->iova);
	if (*offset % CG_PAGE)
		return -EINVAL;
	*handle = m->buf->handles[*offset / CG_PAGE];
	*offset = 0;
	return 0;
}

static int map_large(struct cudagpu *gpu, struct cg_as *as, uint64_t va, uint64_t count,
                     enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	const struct cuda_api *api = &gpu->api;
	uint64_t first = va / CG_PAGE, i;
	cg_result r = CG_SUCCESS;
	int err = 0;

	/* Check everything before changing anything. */
	for (i = 0; i < count; i++) {
		cg_mem_handle handle;
		uint64_t offset;

		err = page_backing(gpu, target, addresses[i], &handle, &offset);
		if (err)
			return err;
		if (!slot_at(as, first + i, true))
			return -ENOMEM;
	}
	if (flags & VGPU_MAP_PRIVILEGED) {
		for (i = 0; i < count; i++) {
			struct cg_slot *slot = slot_at(as, first + i, false);

			slot_clear(gpu, as, first + i, slot);
			slot->kind = CG_SLOT_PRIVILEGED;
			slot->flags = (uint8_t)flags;
			slot->target = (uint8_t)target;
			slot->address = addresses[i];
		}
		return 0;
	}
	unmap_runs(gpu, as, first, count);
	for (i = 0; i < count; i++) {
		struct cg_slot *slot = slot_at(as, first + i, false);
		cg_mem_handle handle = 0;
		uint64_t offset = 0, t0;

		page_backing(gpu, target, addresses[i], &handle, &offset); /* checked above */
		slot_clear(gpu, as, first + i, slot);
		slot->kind = target == VGPU_TARGET_VRAM ? CG_SLOT_VRAM : CG_SLOT_SYSMEM;
		slot->flags = (uint8_t)flags;
		slot->target = (uint8_t)target;
		slot->address = addresses[i];
		if (target == VGPU_TARGET_VRAM)
			cg_quarantine_mapped_vram(gpu, as, addresses[i]);
		else
			cg_quarantine_mapped_iova(gpu, as, addresses[i]);
		if (as->shadow)
			continue;
		t0 = cg_now_ns();
		r = api->cuMemMap(slot_address(as, first + i), CG_PAGE, offset, handle, 0);
		cg_time_call(&gpu->map_timing.map_ns, &gpu->map_timing.map_calls, t0);
		if (r != CG_SUCCESS) {
			slot->kind = CG_SLOT_NONE; /* nothing mapped there */
			break;
		}
	}
	if (r == CG_SUCCESS && !as->shadow) {
		struct cg_mem_access_desc desc;
		uint64_t t0 = cg_now_ns();

		memset(&desc, 0, sizeof(desc));
		desc.location.type = CG_MEM_LOCATION_TYPE_DEVICE;
		desc.location.id = gpu->device;
		desc.flags = (flags & VGPU_MAP_READ_ONLY) ? CG_MEM_ACCESS_FLAGS_PROT_READ
		                                          : CG_MEM_ACCESS_FLAGS_PROT_READWRITE;
		if (as->identity && first == 0) { /* slot 0 is apart */
			r = api->cuMemSetAccess(as->slot0, CG_PAGE, &desc, 1);
			if (r == CG_SUCCESS && count > 1)
				r = api->cuMemSetAccess(CG_PAGE, (count - 1) * CG_PAGE, &desc, 1);
		} else {
			r = api->cuMemSetAccess(as->va_base + va, count * CG_PAGE, &desc, 1);
		}
		cg_time_call(&gpu->map_timing.set_access_ns, &gpu->map_timing.set_access_calls, t0);
	}
	if (r != CG_SUCCESS) {
		/* Nothing stays half-mapped: the range ends up unmapped. */
		for (i = 0; i < count; i++)
			slot_clear(gpu, as, first + i, slot_at(as, first + i, false));
		return r == CG_ERROR_OUT_OF_MEMORY ? -ENOMEM : cg_errno(r);
	}
	return 0;
}

static int map_small(struct cudagpu *gpu, struct cg_as *as, uint64_t va, uint64_t count,
                     enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	uint64_t i;

	if (target == VGPU_TARGET_VRAM)
		return -EINVAL; /* VRAM comes in 2 MiB pages only */
	for (i = 0; i < count; i++) {
		uint64_t page_va = va + i * CG_SMALL_PAGE;
		struct cg_slot *slot = slot_at(as, page_va / CG_PAGE, true);

		if (addresses[i] % CG_SMALL_PAGE)
			return -EINVAL;
		if (!slot)
			return -ENOMEM;
		if (slot->kind != CG_SLOT_SMALL) {
			/* A small page over a large one: the large one goes. */
			slot_clear(gpu, as, page_va / CG_PAGE, slot);
			slot->small = calloc(CG_SMALL_PER_SLOT, sizeof(*slot->small));
			if (!slot->small)
				return -ENOMEM;
			slot->kind = CG_SLOT_SMALL;
		}
		slot->small[(page_va % CG_PAGE) / CG_SMALL_PAGE] = (struct cg_small_pte){
			.valid = true, .flags = (uint8_t)flags, .target = (uint8_t)target,
			.iova = addresses[i],
		};
		cg_quarantine_mapped_iova(gpu, as, addresses[i]);
	}
	return 0;
}

int cg_as_map(struct vgpu_hal_as *base, uint64_t va, uint32_t page_size, uint64_t count,
              enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = gpu_of_as(as);
	int err;

	if (!count || va % page_size || target >= VGPU_TARGET_COUNT ||
	    (flags & ~(VGPU_MAP_READ_ONLY | VGPU_MAP_PRIVILEGED)) ||
	    (page_size != CG_PAGE && page_size != CG_SMALL_PAGE) ||
	    count > (CG_VA_RESERVED_BASE - va) / page_size || va >= CG_VA_RESERVED_BASE)
		return -EINVAL;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	if (page_size == CG_PAGE)
		err = map_large(gpu, as, va, count, target, addresses, flags);
	else
		err = map_small(gpu, as, va, count, target, addresses, flags);
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}

int cg_as_unmap(struct vgpu_hal_as *base, uint64_t va, uint64_t bytes)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = gpu_of_as(as);
	uint64_t end = va + bytes, at;
	int err = 0;

	if (va % CG_SMALL_PAGE || bytes % CG_SMALL_PAGE || va > CG_VA_BYTES ||
	    bytes > CG_VA_BYTES - va)
		return -EINVAL;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	/* A 2 MiB page only partly inside the range cannot be split. */
	for (at = va; at < end; at = (at / CG_PAGE + 1) * CG_PAGE) {
		struct cg_slot *slot = slot_at(as, at / CG_PAGE, false);
		uint64_t slot_start = at / CG_PAGE * CG_PAGE;

		if (slot && is_cuda_mapped(slot) && (slot_start < va || slot_start + CG_PAGE > end))
			err = -EINVAL;
	}
	if (!err && end > va)
		unmap_runs(gpu, as, va / CG_PAGE, (end - 1) / CG_PAGE - va / CG_PAGE + 1);
	for (at = va; !err && at < end;) {
		uint64_t index = at / CG_PAGE, next = (index + 1) * CG_PAGE;
		struct cg_slot *slot = slot_at(as, index, false);

		if (next > end)
			next = end;
		if (slot && slot->kind == CG_SLOT_SMALL) {
			uint64_t p;

			for (p = at; p < next; p += CG_SMALL_PAGE)
				slot->small[(p % CG_PAGE) / CG_SMALL_PAGE].valid = false;
		} else if (slot) {
			slot_clear(gpu, as, index, slot);
		}
		at = next;
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}

void cg_as_tlb_invalidate(struct vgpu_hal_as *as)
{
	/* cuMemMap/cuMemUnmap invalidate the GPU's TLBs themselves; a
	 * translation dropped by as_map/as_unmap is never used after they
	 * return, which satisfies the contract's stricter order. */
	(void)as;
}

/* ------------------------------------------------------------ resolving */

static int fault(uint64_t va, enum vgpu_hal_error_cause why, uint64_t *fault_va,
                 enum vgpu_hal_error_cause *cause)
{
	*fault_va = va;
	*cause = why;
	return -EFAULT;
}

/* Check a mapping's flags against an access in mode. */
static bool flags_allow(uint8_t flags, enum cg_access access, enum cg_resolve_mode mode,
                        enum vgpu_hal_error_cause *why)
{
	if (mode == CG_RESOLVE_APERTURE)
		return true;
	if ((flags & VGPU_MAP_PRIVILEGED) && mode == CG_RESOLVE_USER) {
		*why = VGPU_FAULT_PRIVILEGED;
		return false;
	}
	if ((flags & VGPU_MAP_READ_ONLY) && access == CG_WRITE) {
		*why = VGPU_FAULT_READ_ONLY;
		return false;
	}
	return true;
}

static int add_segment(struct cg_segment *segs, unsigned max, unsigned *count,
                       const struct cg_segment *piece)
{
	struct cg_segment *last = *count ? &segs[*count - 1] : NULL;

	if (last && last->target == piece->target && last->device + last->bytes == piece->device &&
	    (last->cpu ? piece->cpu == (char *)last->cpu + last->bytes : !piece->cpu)) {
		last->bytes += piece->bytes;
		return 0;
	}
	if (*count == max)
		return -E2BIG;
	segs[(*count)++] = *piece;
	return 0;
}

int cg_resolve(struct cudagpu *gpu, struct cg_as *as, uint64_t va, uint64_t bytes,
               enum cg_access access, enum cg_resolve_mode mode, struct cg_segment *segs,
               unsigned max, unsigned *count, uint64_t *fault_va,
               enum vgpu_hal_error_cause *cause)
{
	uint64_t at = va, end;

	*count = 0;
	if (!bytes || va >= CG_VA_BYTES || bytes > CG_VA_BYTES - va)
		return fault(va >= CG_VA_BYTES ? va : CG_VA_BYTES, VGPU_FAULT_UNMAPPED, fault_va,
		             cause);
	end = va + bytes;
	while (at < end) {
		struct cg_slot *slot = slot_at(as, at / CG_PAGE, false);
		uint64_t in_slot = at % CG_PAGE;
		struct cg_segment piece;
		enum vgpu_hal_error_cause why = VGPU_FAULT_NONE;
		int err;

		if (!slot || slot->kind == CG_SLOT_NONE)
			return fault(at, VGPU_FAULT_UNMAPPED, fault_va, cause);
		if (slot->kind == CG_SLOT_SMALL) {
			const struct cg_small_pte *pte = &slot->small[in_slot / CG_SMALL_PAGE];
			uint64_t in_page = at % CG_SMALL_PAGE;
			const struct cg_iommu_mapping *m;
			uint64_t offset;

			if (!pte->valid)
				return fault(at, VGPU_FAULT_UNMAPPED, fault_va, cause);
			if (!flags_allow(pte->flags, access, mode, &why))
				return fault(at, why, fault_va, cause);
			m = cg_iommu_find(gpu, pte->iova);
			if (!m || pte->iova + CG_SMALL_PAGE > m->iova + m->bytes)
				return fault(at, VGPU_FAULT_IOMMU, fault_va, cause);
			offset = m->offset + (pte->iova - m->iova) + in_page;
			piece.device = m->buf->device + offset;
			piece.cpu = m->buf->cpu ? (char *)m->buf->cpu + offset : NULL;
			piece.bytes = CG_SMALL_PAGE - in_page;
			piece.target = (enum vgpu_hal_target)pte->target;
		} else {
			if (!flags_allow(slot->flags, access, mode, &why))
				return fault(at, why, fault_va, cause);
			piece.bytes = CG_PAGE - in_slot;
			piece.target = (enum vgpu_hal_target)slot->target;
			piece.cpu = NULL;
			if (mode != CG_RESOLVE_APERTURE && slot->kind != CG_SLOT_PRIVILEGED &&
			    !as->shadow) {
				piece.device = as->identity && at < CG_PAGE ? as->slot0 + at
				                                            : as->va_base + at;
			} else if (slot->target == VGPU_TARGET_VRAM) {
				piece.device = gpu->vram_aperture + slot->address + in_slot;
			} else {
				const struct cg_iommu_mapping *m = cg_iommu_find(gpu, slot->address);
				uint64_t offset;

				if (!m)
					return fault(at, VGPU_FAULT_IOMMU, fault_va, cause);
				offset = m->offset + (slot->address - m->iova) + in_slot;
				piece.device = m->buf->device + offset;
				piece.cpu = m->buf->cpu ? (char *)m->buf->cpu + offset : NULL;
			}
			if (slot->target != VGPU_TARGET_VRAM && mode != CG_RESOLVE_APERTURE) {
				/* The IOVA must still be mapped, as on simgpu. */
				if (!cg_iommu_find(gpu, slot->address))
					return fault(at, VGPU_FAULT_IOMMU, fault_va, cause);
			}
		}
		if (piece.bytes > end - at)
			piece.bytes = end - at;
		err = add_segment(segs, max, count, &piece);
		if (err)
			return err;
		at += piece.bytes;
	}
	return 0;
}

void cg_count_bytes(struct cg_as *as, const struct cg_segment *segs, unsigned count,
                    enum cg_access access)
{
	unsigned i;

	for (i = 0; i < count; i++) {
		if (access == CG_WRITE)
			as->counters.bytes_written[segs[i].target] += segs[i].bytes;
		else
			as->counters.bytes_read[segs[i].target] += segs[i].bytes;
	}
}

/* ------------------------------------------------------ aperture access */

/* A bounded number of segments at a time (4 KiB pages split ranges finely). */
#define APERTURE_WINDOW ((uint64_t)MAX_APERTURE_SEGMENTS * CG_SMALL_PAGE / 2)

/*
 * Privileged CPU access (hal.h's as_read/as_write): the whole range is
 * checked first, so a fault anywhere copies nothing; then copied window by
 * window through the CPU mapping or the driver.
 */
static int aperture(struct cg_as *as, uint64_t va, void *host, uint64_t bytes, bool write)
{
	struct cudagpu *gpu = gpu_of_as(as);
	struct cg_segment segs[MAX_APERTURE_SEGMENTS];
	enum cg_access access = write ? CG_WRITE : CG_READ;
	enum vgpu_hal_error_cause cause;
	uint64_t fault_va, done;
	unsigned count, i;
	cg_result r = CG_SUCCESS;
	int err = 0;

	if (!bytes)
		return 0;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	for (done = 0; !err && done < bytes; done += APERTURE_WINDOW)
		err = cg_resolve(gpu, as, va + done,
		                 bytes - done < APERTURE_WINDOW ? bytes - done : APERTURE_WINDOW,
		                 access, CG_RESOLVE_APERTURE, segs, MAX_APERTURE_SEGMENTS, &count,
		                 &fault_va, &cause);
	for (done = 0; !err && r == CG_SUCCESS && done < bytes;) {
		err = cg_resolve(gpu, as, va + done,
		                 bytes - done < APERTURE_WINDOW ? bytes - done : APERTURE_WINDOW,
		                 access, CG_RESOLVE_APERTURE, segs, MAX_APERTURE_SEGMENTS, &count,
		                 &fault_va, &cause);
		for (i = 0; !err && r == CG_SUCCESS && i < count; i++) {
			char *at = (char *)host + done;

			if (segs[i].cpu && write)
				memcpy(segs[i].cpu, at, segs[i].bytes);
			else if (segs[i].cpu)
				memcpy(at, segs[i].cpu, segs[i].bytes);
			else if (write)
				r = gpu->api.cuMemcpyHtoD(segs[i].device, at, segs[i].bytes);
			else
				r = gpu->api.cuMemcpyDtoH(at, segs[i].device, segs[i].bytes);
			done += segs[i].bytes;
		}
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	if (err)
		return err == -E2BIG ? -EIO : -EFAULT;
	return r == CG_SUCCESS ? 0 : cg_errno(r);
}

int cg_as_read(struct vgpu_hal_as *base, uint64_t va, void *dst, uint64_t bytes)
{
	return aperture(as_of(base), va, dst, bytes, false);
}

int cg_as_write(struct vgpu_hal_as *base, uint64_t va, const void *src, uint64_t bytes)
{
	struct cg_as *as = as_of(base);
	int err = aperture(as, va, (void *)src, bytes, true);

	/* A write may satisfy a channel's SEMAPHORE_ACQUIRE. */
	pthread_cond_broadcast(&gpu_of_as(as)->pfifo_wake);
	return err;
}

int cg_as_test_and_clear_referenced(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                                    bool *referenced)
{
	return -ENOTSUP; /* NVIDIA GPUs expose no reference bits to software */
}

void cg_as_counters(struct vgpu_hal_as *base, struct vgpu_hal_as_counters *out)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = gpu_of_as(as);

	pthread_mutex_lock(&gpu->memory_lock);
	*out = as->counters;
	pthread_mutex_unlock(&gpu->memory_lock);
}

/* ---------------------------------------------------------- copy engine */

#define MAX_COPY_SEGMENTS 1024u

int cg_copy(struct vgpu_hal_as *base, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
            uint64_t cookie)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = gpu_of_as(as);
	const struct cuda_api *api = &gpu->api;
	struct cg_segment *src, *dst;
	struct cg_completion *done;
	enum vgpu_hal_error_cause cause;
	uint64_t fault_va;
	unsigned nsrc = 0, ndst = 0, i = 0, j = 0;
	uint64_t si = 0, dj = 0;
	cg_result r = CG_SUCCESS;
	int err;

	if (!bytes)
		return -EINVAL;
	done = calloc(1, sizeof(*done));
	src = calloc(MAX_COPY_SEGMENTS, sizeof(*src));
	dst = calloc(MAX_COPY_SEGMENTS, sizeof(*dst));
	if (!done || !src || !dst) {
		free(done);
		free(src);
		free(dst);
		return -ENOMEM;
	}
	done->type = CG_DONE_COPY;
	done->stream = gpu->copy_stream;
	done->as = as;
	done->cookie = cookie;
	cg_enter(gpu);
	cg_pfifo_lock(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	err = cg_resolve(gpu, as, src_va, bytes, CG_READ, CG_RESOLVE_ENGINE, src,
	                 MAX_COPY_SEGMENTS, &nsrc, &fault_va, &cause);
	if (!err)
		err = cg_resolve(gpu, as, dst_va, bytes, CG_WRITE, CG_RESOLVE_ENGINE, dst,
		                 MAX_COPY_SEGMENTS, &ndst, &fault_va, &cause);
	if (!err) {
		cg_count_bytes(as, src, nsrc, CG_READ);
		cg_count_bytes(as, dst, ndst, CG_WRITE);
		done->start = cg_event_get(gpu);
		done->end = cg_event_get(gpu);
		if (!done->start || !done->end)
			r = CG_ERROR_OUT_OF_MEMORY;
		if (r == CG_SUCCESS)
			r = api->cuEventRecord(done->start, gpu->copy_stream);
		/* Walk both segment lists in step. */
		while (r == CG_SUCCESS && i < nsrc && j < ndst) {
			uint64_t n = src[i].bytes - si;

			if (n > dst[j].bytes - dj)
				n = dst[j].bytes - dj;
			r = api->cuMemcpyAsync(dst[j].device + dj, src[i].device + si, n,
			                       gpu->copy_stream);
			si += n;
			dj += n;
			if (si == src[i].bytes) {
				i++;
				si = 0;
			}
			if (dj == dst[j].bytes) {
				j++;
				dj = 0;
			}
		}
		if (r == CG_SUCCESS)
			r = api->cuEventRecord(done->end, gpu->copy_stream);
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	if (err || r != CG_SUCCESS) {
		/* Reported through COPY_DONE, as the contract says. */
		if (done->start)
			cg_event_put(gpu, done->start);
		if (done->end)
			cg_event_put(gpu, done->end);
		done->start = done->end = NULL;
		done->status = err == -EFAULT ? -EFAULT : (err ? err : cg_errno(r));
	}
	cg_completion_queue(gpu, done);
	pthread_mutex_unlock(&gpu->pfifo_lock);
	free(src);
	free(dst);
	return 0;
}
