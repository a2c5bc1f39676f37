/* SPDX-License-Identifier: MIT */
/*
 * page_table.h - GMMU page tables, stored in reserved VRAM.
 *
 * Geometry (40-bit VA, all tables one 4 KiB VRAM frame, walked from memory):
 *
 *   level      indexes     entries                     one entry maps
 *   root       VA[39:38]   4 directory entries (8 B)   256 GiB
 *   level 1    VA[37:29]   512 directory entries       512 MiB
 *   directory  VA[28:21]   256 dual PDEs (16 B)        2 MiB
 *   small PT   VA[20:12]   512 PTEs, 4 KiB pages       4 KiB
 *   large PT   VA[20:16]   32 PTEs, 64 KiB pages       64 KiB
 *
 * As on Fermi, every PDE points to both a small and a large page table
 * (either may be absent), so 4 KiB and 64 KiB pages mix within 2 MiB. A VA
 * is mapped when either table has a valid PTE; the large page wins when both
 * have one. Mapping a page of one size over the other size keeps the rest of
 * an overlapped 64 KiB page mapped by splitting it into 4 KiB PTEs.
 *
 * Entry formats (little-endian 64-bit words):
 *   directory / PDE half:  bit 0 present, bits 51:12 table frame address
 *   PTE:  bit 0 valid, bits 2:1 target (enum vgpu_hal_target), bit 3
 *         read-only, bit 4 privileged, bit 5 referenced (only with the
 *         capability), bits 63:12 VRAM address or IOVA (64 KiB aligned in a
 *         large PTE)
 *
 * Tables are allocated from the reserved VRAM allocator and released only
 * when the page table is destroyed. The caller serialises every call (the
 * address-space lock).
 */
#ifndef SIMGPU_PAGE_TABLE_H
#define SIMGPU_PAGE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vram.h"

#define GMMU_VA_BITS 40u
#define GMMU_SMALL_PAGE_SHIFT 12u
#define GMMU_LARGE_PAGE_SHIFT 16u

#define PTE_VALID (UINT64_C(1) << 0)
#define PTE_TARGET_SHIFT 1u
#define PTE_TARGET_MASK (UINT64_C(3) << PTE_TARGET_SHIFT)
#define PTE_READ_ONLY (UINT64_C(1) << 3)
#define PTE_PRIVILEGED (UINT64_C(1) << 4)
#define PTE_REFERENCED (UINT64_C(1) << 5)
#define PTE_ADDRESS_MASK (~UINT64_C(0xfff))

static inline unsigned pte_target(uint64_t pte)
{
	return (unsigned)((pte & PTE_TARGET_MASK) >> PTE_TARGET_SHIFT);
}

struct page_table {
	uint8_t *vram;                  /* host view of VRAM, GPU address 0 */
	struct vram_allocator *frames;  /* reserved VRAM */
	uint64_t root;                  /* VRAM address of the root table */
	uint64_t *tables;               /* every frame in use, for destroy */
	size_t table_count;
	size_t table_capacity;
};

/* A valid translation found by a walk. */
struct gmmu_translation {
	uint64_t pte;
	uint64_t pte_address; /* VRAM address of the PTE (referenced bits) */
	unsigned page_shift;  /* 12 or 16 */
};

int page_table_init(struct page_table *table, uint8_t *vram, struct vram_allocator *frames);
void page_table_destroy(struct page_table *table);

/*
 * Map count pages of 1 << page_shift at va with PTE bits pte_flags (target,
 * read-only, privileged) and addresses[i]. All or nothing: -ENOMEM when the
 * needed tables cannot be allocated. Arguments must be validated before.
 */
int page_table_map(struct page_table *table, uint64_t va, unsigned page_shift, uint64_t count,
                   uint64_t pte_flags, const uint64_t *addresses);

/* Clear [va, va + bytes), 4 KiB granular; may split a 64 KiB page (so may
 * need one table: -ENOMEM, nothing changed). */
int page_table_unmap(struct page_table *table, uint64_t va, uint64_t bytes);

/* Walk the tables for va; false when no valid PTE maps it. */
bool page_table_walk(const struct page_table *table, uint64_t va,
                     struct gmmu_translation *out);

/* Read-modify-write of a PTE found by a walk. */
static inline uint64_t *page_table_pte(const struct page_table *table, uint64_t pte_address)
{
	return (uint64_t *)(table->vram + pte_address);
}

/* Report and clear referenced bits of [va, va + bytes). */
void page_table_test_and_clear_referenced(struct page_table *table, uint64_t va, uint64_t bytes,
                                          bool *referenced);

#endif /* SIMGPU_PAGE_TABLE_H */
