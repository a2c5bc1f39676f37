// SPDX-License-Identifier: MIT
/* page_table.c - GMMU page tables in reserved VRAM (see page_table.h). */
#include "page_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY_PRESENT (UINT64_C(1) << 0)
#define ENTRY_ADDRESS_MASK (UINT64_C(0x000ffffffffff000))

#define ROOT_SHIFT 38u
#define LEVEL1_SHIFT 29u
#define DIRECTORY_SHIFT 21u
#define ROOT_ENTRIES 4u
#define LEVEL1_ENTRIES 512u
#define DIRECTORY_ENTRIES 256u
#define SMALL_ENTRIES 512u
#define LARGE_ENTRIES 32u
#define SMALL_PER_LARGE 16u

#define PT_SPAN (UINT64_C(1) << DIRECTORY_SHIFT)    /* 2 MiB */
#define LARGE_PAGE (UINT64_C(1) << GMMU_LARGE_PAGE_SHIFT)
#define SMALL_PAGE (UINT64_C(1) << GMMU_SMALL_PAGE_SHIFT)

/* Frames taken in advance by an operation so it cannot fail half-way. */
struct frame_reserve {
	uint64_t *frames;
	size_t count;
	size_t used;
};

static inline uint64_t *entry_at(const struct page_table *table, uint64_t table_address,
                                 unsigned index)
{
	return (uint64_t *)(table->vram + table_address) + index;
}

static inline unsigned root_index(uint64_t va)
{
	return (unsigned)(va >> ROOT_SHIFT) & (ROOT_ENTRIES - 1);
}

static inline unsigned level1_index(uint64_t va)
{
	return (unsigned)(va >> LEVEL1_SHIFT) & (LEVEL1_ENTRIES - 1);
}

static inline unsigned directory_index(uint64_t va)
{
	return (unsigned)(va >> DIRECTORY_SHIFT) & (DIRECTORY_ENTRIES - 1);
}

static inline unsigned small_index(uint64_t va)
{
	return (unsigned)(va >> GMMU_SMALL_PAGE_SHIFT) & (SMALL_ENTRIES - 1);
}

static inline unsigned large_index(uint64_t va)
{
	return (unsigned)(va >> GMMU_LARGE_PAGE_SHIFT) & (LARGE_ENTRIES - 1);
}

static int remember_table(struct page_table *table, uint64_t frame)
{
	if (table->table_count == table->table_capacity) {
		size_t capacity = table->table_capacity ? table->table_capacity * 2 : 16;
		uint64_t *grown = realloc(table->tables, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		table->tables = grown;
		table->table_capacity = capacity;
	}
	table->tables[table->table_count++] = frame;
	return 0;
}

int page_table_init(struct page_table *table, uint8_t *vram, struct vram_allocator *frames)
{
	int ret;

	memset(table, 0, sizeof(*table));
	table->vram = vram;
	table->frames = frames;
	ret = vram_allocator_alloc(frames, VRAM_FRAME_BYTES, 1, &table->root);
	if (ret)
		return ret;
	memset(vram + table->root, 0, VRAM_FRAME_BYTES);
	ret = remember_table(table, table->root);
	if (ret)
		vram_allocator_free(frames, VRAM_FRAME_BYTES, 1, &table->root);
	return ret;
}

void page_table_destroy(struct page_table *table)
{
	if (table->table_count)
		vram_allocator_free(table->frames, VRAM_FRAME_BYTES, table->table_count,
		                    table->tables);
	free(table->tables);
	table->tables = NULL;
	table->table_count = 0;
}

/* Take frames for an operation: all or nothing, zeroed, remembered. */
static int reserve_frames(struct page_table *table, size_t count, struct frame_reserve *reserve)
{
	size_t i;
	int ret;

	reserve->count = count;
	reserve->used = 0;
	reserve->frames = NULL;
	if (count == 0)
		return 0;
	reserve->frames = malloc(count * sizeof(uint64_t));
	if (!reserve->frames)
		return -ENOMEM;
	/* make room in the table list first so remembering cannot fail */
	while (table->table_capacity - table->table_count < count) {
		size_t capacity = table->table_capacity ? table->table_capacity * 2 : 16;
		uint64_t *grown = realloc(table->tables, capacity * sizeof(*grown));

		if (!grown) {
			free(reserve->frames);
			return -ENOMEM;
		}
		table->tables = grown;
		table->table_capacity = capacity;
	}
	ret = vram_allocator_alloc(table->frames, VRAM_FRAME_BYTES, count, reserve->frames);
	if (ret) {
		free(reserve->frames);
		return ret;
	}
	for (i = 0; i < count; i++) {
		memset(table->vram + reserve->frames[i], 0, VRAM_FRAME_BYTES);
		table->tables[table->table_count++] = reserve->frames[i];
	}
	return 0;
}

static void release_reserve(struct page_table *table, struct frame_reserve *reserve)
{
	/* Every reserved frame is used by construction; should a count have
	 * been high, the frames stay remembered and are freed on destroy. */
	(void)table;
	free(reserve->frames);
}

static uint64_t take_frame(struct frame_reserve *reserve)
{
	return reserve->frames[reserve->used++];
}

/* Table the present entry points at, 0 if absent. */
static inline uint64_t entry_table(uint64_t entry)
{
	return (entry & ENTRY_PRESENT) ? (entry & ENTRY_ADDRESS_MASK) : 0;
}

/* Directory (dual PDE table) covering va, 0 if absent. */
static uint64_t find_directory(const struct page_table *table, uint64_t va)
{
	uint64_t level1 = entry_table(*entry_at(table, table->root, root_index(va)));

	if (!level1)
		return 0;
	return entry_table(*entry_at(table, level1, level1_index(va)));
}

/* The two halves of the PDE for va (small at [0], large at [1]). */
static inline uint64_t *pde_at(const struct page_table *table, uint64_t directory, uint64_t va)
{
	return entry_at(table, directory, directory_index(va) * 2);
}

/* Ensure the directory for va exists, taking frames from reserve. */
static uint64_t ensure_directory(struct page_table *table, uint64_t va,
                                 struct frame_reserve *reserve)
{
	uint64_t *root_entry = entry_at(table, table->root, root_index(va));
	uint64_t *level1_entry;

	if (!entry_table(*root_entry))
		*root_entry = take_frame(reserve) | ENTRY_PRESENT;
	level1_entry = entry_at(table, entry_table(*root_entry), level1_index(va));
	if (!entry_table(*level1_entry))
		*level1_entry = take_frame(reserve) | ENTRY_PRESENT;
	return entry_table(*level1_entry);
}

/* Count the tables missing for mapping [va, end) with pages of the given
 * kind (large or small page tables). */
static size_t count_missing(const struct page_table *table, uint64_t va, uint64_t end, bool large)
{
	uint64_t region = va & ~(PT_SPAN - 1);
	uint64_t counted_level1 = UINT64_MAX, counted_directory = UINT64_MAX;
	size_t missing = 0;

	for (; region < end; region += PT_SPAN) {
		uint64_t level1 = entry_table(*entry_at(table, table->root, root_index(region)));
		uint64_t directory = 0;

		if (!level1 && counted_level1 != region >> ROOT_SHIFT) {
			missing++;
			counted_level1 = region >> ROOT_SHIFT;
		}
		if (level1)
			directory = entry_table(*entry_at(table, level1, level1_index(region)));
		if (!directory && counted_directory != region >> LEVEL1_SHIFT) {
			missing++;
			counted_directory = region >> LEVEL1_SHIFT;
		}
		if (!directory || !entry_table(pde_at(table, directory, region)[large ? 1 : 0]))
			missing++;
	}
	return missing;
}

/* Replace a valid large PTE by 16 small PTEs mapping the same memory. */
static void split_large(struct page_table *table, uint64_t *pde, uint64_t va)
{
	uint64_t *large = entry_at(table, entry_table(pde[1]), large_index(va));
	uint64_t small_table = entry_table(pde[0]);
	uint64_t pte = *large;
	unsigned first = small_index(va & ~(LARGE_PAGE - 1)), i;

	for (i = 0; i < SMALL_PER_LARGE; i++) {
		uint64_t address = (pte & PTE_ADDRESS_MASK) + i * SMALL_PAGE;

		*entry_at(table, small_table, first + i) = (pte & ~PTE_ADDRESS_MASK) | address;
	}
	*large = 0;
}

static inline bool large_valid(const struct page_table *table, const uint64_t *pde, uint64_t va)
{
	return entry_table(pde[1]) &&
	       (*entry_at(table, entry_table(pde[1]), large_index(va)) & PTE_VALID);
}

int page_table_map(struct page_table *table, uint64_t va, unsigned page_shift, uint64_t count,
                   uint64_t pte_flags, const uint64_t *addresses)
{
	bool large = page_shift == GMMU_LARGE_PAGE_SHIFT;
	uint64_t page_bytes = UINT64_C(1) << page_shift;
	uint64_t end = va + count * page_bytes;
	struct frame_reserve reserve;
	uint64_t i;
	int ret;

	ret = reserve_frames(table, count_missing(table, va, end, large), &reserve);
	if (ret)
		return ret;
	for (i = 0; i < count; i++, va += page_bytes) {
		uint64_t directory = ensure_directory(table, va, &reserve);
		uint64_t *pde = pde_at(table, directory, va);
		uint64_t pte = (addresses[i] & PTE_ADDRESS_MASK) | pte_flags | PTE_VALID;

		if (large) {
			if (!entry_table(pde[1]))
				pde[1] = take_frame(&reserve) | ENTRY_PRESENT;
			*entry_at(table, entry_table(pde[1]), large_index(va)) = pte;
			if (entry_table(pde[0]))
				memset(entry_at(table, entry_table(pde[0]), small_index(va)), 0,
				       SMALL_PER_LARGE * sizeof(uint64_t));
		} else {
			if (!entry_table(pde[0]))
				pde[0] = take_frame(&reserve) | ENTRY_PRESENT;
			if (large_valid(table, pde, va))
				split_large(table, pde, va);
			*entry_at(table, entry_table(pde[0]), small_index(va)) = pte;
		}
	}
	release_reserve(table, &reserve);
	return 0;
}

int page_table_unmap(struct page_table *table, uint64_t va, uint64_t bytes)
{
	uint64_t end = va + bytes, edges[2];
	struct frame_reserve reserve;
	size_t missing = 0;
	unsigned i;
	int ret;

	/* Only 64 KiB pages cut by the range ends need a small table. */
	edges[0] = va & ~(LARGE_PAGE - 1);
	edges[1] = (end - 1) & ~(LARGE_PAGE - 1);
	for (i = 0; i < 2; i++) {
		uint64_t block = edges[i], directory;
		uint64_t *pde;

		if (i == 1 && (edges[1] == edges[0] || (edges[1] >> DIRECTORY_SHIFT ==
		                                         edges[0] >> DIRECTORY_SHIFT && missing)))
			break;
		if (block >= va && block + LARGE_PAGE <= end)
			continue;
		directory = find_directory(table, block);
		if (!directory)
			continue;
		pde = pde_at(table, directory, block);
		if (large_valid(table, pde, block) && !entry_table(pde[0]))
			missing++;
	}
	ret = reserve_frames(table, missing, &reserve);
	if (ret)
		return ret;

	while (va < end) {
		uint64_t directory = find_directory(table, va);
		uint64_t block_end = (va & ~(LARGE_PAGE - 1)) + LARGE_PAGE;
		uint64_t stop = block_end < end ? block_end : end;
		uint64_t *pde;

		if (!directory) {
			/* nothing mapped in this 512 MiB: skip it */
			uint64_t next = (va | ((UINT64_C(1) << LEVEL1_SHIFT) - 1)) + 1;

			va = next < end ? next : end;
			continue;
		}
		pde = pde_at(table, directory, va);
		if (large_valid(table, pde, va)) {
			if ((va & (LARGE_PAGE - 1)) == 0 && stop == block_end) {
				*entry_at(table, entry_table(pde[1]), large_index(va)) = 0;
			} else {
				if (!entry_table(pde[0]))
					pde[0] = take_frame(&reserve) | ENTRY_PRESENT;
				split_large(table, pde, va);
			}
		}
		if (entry_table(pde[0]))
			memset(entry_at(table, entry_table(pde[0]), small_index(va)), 0,
			       (size_t)((stop - va) >> GMMU_SMALL_PAGE_SHIFT) * sizeof(uint64_t));
		va = stop;
	}
	release_reserve(table, &reserve);
	return 0;
}

bool page_table_walk(const struct page_table *table, uint64_t va, struct gmmu_translation *out)
{
	uint64_t directory, *pde, pt, pte;

	if (va >> GMMU_VA_BITS)
		return false;
	directory = find_directory(table, va);
	if (!directory)
		return false;
	pde = pde_at(table, directory, va);
	pt = entry_table(pde[1]);
	if (pt) {
		uint64_t address = pt + large_index(va) * sizeof(uint64_t);

		pte = *page_table_pte(table, address);
		if (pte & PTE_VALID) {
			*out = (struct gmmu_translation){ pte, address, GMMU_LARGE_PAGE_SHIFT };
			return true;
		}
	}
	pt = entry_table(pde[0]);
	if (pt) {
		uint64_t address = pt + small_index(va) * sizeof(uint64_t);

		pte = *page_table_pte(table, address);
		if (pte & PTE_VALID) {
			*out = (struct gmmu_translation){ pte, address, GMMU_SMALL_PAGE_SHIFT };
			return true;
		}
	}
	return false;
}

void page_table_test_and_clear_referenced(struct page_table *table, uint64_t va, uint64_t bytes,
                                          bool *referenced)
{
	uint64_t end = va + bytes;

	*referenced = false;
	while (va < end) {
		struct gmmu_translation translation;
		uint64_t next;

		if (!page_table_walk(table, va, &translation)) {
			va += SMALL_PAGE;
			continue;
		}
		if (translation.pte & PTE_REFERENCED) {
			*referenced = true;
			*page_table_pte(table, translation.pte_address) &= ~PTE_REFERENCED;
		}
		next = (va | ((UINT64_C(1) << translation.page_shift) - 1)) + 1;
		va = next;
	}
}
