/* SPDX-License-Identifier: MIT */
/*
 * page_size.h - choosing GPU page sizes from a HAL page-size mask
 * (VGPU_HAL_PAGE_MASK_* bits of caps.page_size_mask or
 * caps.sysmem_page_size_mask).
 *
 * The core never assumes a particular size exists: a GPU may offer 4 KiB
 * and 64 KiB pages (simgpu) or only 2 MiB pages for VRAM (cudagpu). It maps
 * each range with the largest size of the mask that the range's address and
 * length allow, and falls back only to smaller sizes of the same mask.
 */
#ifndef VGPU_CORE_PAGE_SIZE_H
#define VGPU_CORE_PAGE_SIZE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether mask has only bits the HAL defines, and at least one. */
bool vgpu_page_mask_valid(uint32_t mask);

/* The smallest / largest page size in mask; 0 for an empty mask. */
uint32_t vgpu_page_size_smallest(uint32_t mask);
uint32_t vgpu_page_size_largest(uint32_t mask);

/* The largest page size in mask that divides value, 0 when none does. To
 * fit several values at once (an address, a length, an IOVA), pass them
 * or-ed together: a power of two divides each iff it divides their or. */
uint32_t vgpu_page_size_largest_dividing(uint32_t mask, uint64_t value);

/* The largest page size in mask below page_size, 0 when there is none. */
uint32_t vgpu_page_size_next_smaller(uint32_t mask, uint32_t page_size);

#endif /* VGPU_CORE_PAGE_SIZE_H */
