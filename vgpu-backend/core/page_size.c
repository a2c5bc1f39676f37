// SPDX-License-Identifier: MIT
/* page_size.c - page sizes of a HAL page-size mask, see page_size.h. */
#include "page_size.h"

#include "vgpu/hal.h"

/* Page size of each mask bit, smallest first. */
static const uint32_t sizes[] = { VGPU_PAGE_4K, VGPU_PAGE_64K, VGPU_PAGE_2M };
#define SIZE_COUNT (sizeof(sizes) / sizeof(sizes[0]))
#define KNOWN_BITS ((1u << SIZE_COUNT) - 1)

bool vgpu_page_mask_valid(uint32_t mask)
{
	return mask && !(mask & ~KNOWN_BITS);
}

uint32_t vgpu_page_size_smallest(uint32_t mask)
{
	for (unsigned i = 0; i < SIZE_COUNT; i++)
		if (mask & (1u << i))
			return sizes[i];
	return 0;
}

uint32_t vgpu_page_size_largest(uint32_t mask)
{
	return vgpu_page_size_next_smaller(mask, UINT32_MAX);
}

uint32_t vgpu_page_size_largest_dividing(uint32_t mask, uint64_t value)
{
	for (unsigned i = SIZE_COUNT; i-- > 0;)
		if ((mask & (1u << i)) && !(value % sizes[i]))
			return sizes[i];
	return 0;
}

uint32_t vgpu_page_size_next_smaller(uint32_t mask, uint32_t page_size)
{
	for (unsigned i = SIZE_COUNT; i-- > 0;)
		if ((mask & (1u << i)) && sizes[i] < page_size)
			return sizes[i];
	return 0;
}
