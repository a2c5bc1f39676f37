/* SPDX-License-Identifier: MIT */
/*
 * hal_2m_shim.h - a test double of a GPU whose only VRAM page is 2 MiB
 * (like cudagpu: the CUDA allocation granularity), built on simgpu, so the
 * core can be tested against such a GPU on any machine.
 *
 * The shim is a HAL (vgpu/hal.h) that wraps another one, normally simgpu,
 * and differs from it only in page sizes:
 *  - caps.page_size_mask = VGPU_HAL_PAGE_MASK_2M and
 *    caps.sysmem_page_size_mask = 4K | 2M. Any other size in vram_alloc,
 *    vram_free, vram_scrub or as_map, and any address not aligned to its
 *    page, is refused with -EINVAL and counted (hal_2m_shim_counters.refused),
 *    as a real 2 MiB GPU would refuse it.
 *  - VRAM: a 2 MiB page is 32 of the inner GPU's 64 KiB pages. The shim
 *    hands out its own 2 MiB aligned addresses in [0, caps.vram_bytes) and
 *    translates them back in as_map (to 64 KiB VRAM pages), vram_scrub and
 *    vram_free. caps.vram_bytes is the inner VRAM rounded down to 2 MiB;
 *    vram_free_bytes counts free 2 MiB pages.
 *  - IOVAs: iommu_map returns the shim's own IOVAs, 2 MiB aligned (or, with
 *    misaligned_iovas, 4 KiB past a 2 MiB boundary, which makes the core fall
 *    back to 4 KiB SYSMEM pages), and as_map translates them to the inner
 *    IOVAs (mapped with 64 KiB pages where the inner IOVA allows, 4 KiB
 *    otherwise).
 *  - Address spaces are wrapped (so as_map reaches the shim); channels,
 *    host buffers, copies, events and everything else are the inner GPU's.
 *
 * Thread-safe like every HAL. hal_2m_shim_destroy (vgpu_hal_destroy)
 * destroys the inner GPU too.
 */
#ifndef VGPU_TESTS_HAL_2M_SHIM_H
#define VGPU_TESTS_HAL_2M_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/hal.h"

struct hal_2m_shim_config {
	/* Hand out IOVAs that are 4 KiB aligned but never 2 MiB aligned. */
	bool misaligned_iovas;
};

/* Wrap inner (which must offer 64 KiB VRAM pages and 4 KiB SYSMEM pages);
 * the shim owns it from now on, also on failure. config may be NULL. */
int hal_2m_shim_create(struct vgpu_hal *inner, const struct hal_2m_shim_config *config,
                       struct vgpu_hal **out);

/* What the shim was asked to do since it was created (monotonic). */
struct hal_2m_shim_counters {
	uint64_t vram_pages_allocated; /* 2 MiB pages, by vram_alloc */
	uint64_t vram_pages_mapped;    /* 2 MiB VRAM pages, by as_map */
	uint64_t sysmem_2m_pages_mapped;
	uint64_t sysmem_4k_pages_mapped;
	uint64_t refused; /* calls refused for a page size or alignment */
};

/* hal must come from hal_2m_shim_create. */
void hal_2m_shim_counters(struct vgpu_hal *hal, struct hal_2m_shim_counters *out);

/* A copy engine that fails: the next `after` copies go through, every one
 * after them is refused (vgpu_hal_copy returns -EIO) until this is called
 * again; after < 0 ends the failures. */
void hal_2m_shim_fail_copies(struct vgpu_hal *hal, int64_t after);

/* The as_map calls made on one of the shim's address spaces. */
uint64_t hal_2m_shim_as_map_calls(struct vgpu_hal_as *as);

#endif /* VGPU_TESTS_HAL_2M_SHIM_H */
