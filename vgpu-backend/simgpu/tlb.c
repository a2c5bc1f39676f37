// SPDX-License-Identifier: MIT
/* tlb.c - per-address-space TLB (see tlb.h). */
#include "tlb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tlb_init(struct tlb *tlb, uint32_t entries)
{
	tlb->entries = calloc(entries, sizeof(*tlb->entries));
	if (!tlb->entries)
		return -ENOMEM;
	tlb->size = entries;
	tlb->hits = 0;
	tlb->misses = 0;
	return 0;
}

void tlb_destroy(struct tlb *tlb)
{
	free(tlb->entries);
	tlb->entries = NULL;
}

static inline struct tlb_entry *slot(struct tlb *tlb, uint64_t page, unsigned page_shift)
{
	uint64_t hash = (page ^ (page >> 9) ^ (page_shift == GMMU_LARGE_PAGE_SHIFT ? 0x5bd1 : 0)) *
	                0x9e3779b97f4a7c15ull;

	return &tlb->entries[(hash >> 32) & (tlb->size - 1)];
}

static inline bool matches(const struct tlb_entry *entry, uint64_t va, unsigned page_shift)
{
	return entry->valid && entry->translation.page_shift == page_shift &&
	       entry->page == va >> page_shift;
}

struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t va)
{
	struct tlb_entry *entry = slot(tlb, va >> GMMU_LARGE_PAGE_SHIFT, GMMU_LARGE_PAGE_SHIFT);

	if (matches(entry, va, GMMU_LARGE_PAGE_SHIFT)) {
		tlb->hits++;
		return entry;
	}
	entry = slot(tlb, va >> GMMU_SMALL_PAGE_SHIFT, GMMU_SMALL_PAGE_SHIFT);
	if (matches(entry, va, GMMU_SMALL_PAGE_SHIFT)) {
		tlb->hits++;
		return entry;
	}
	tlb->misses++;
	return NULL;
}

struct tlb_entry *tlb_insert(struct tlb *tlb, uint64_t va,
                             const struct gmmu_translation *translation)
{
	uint64_t page = va >> translation->page_shift;
	struct tlb_entry *entry = slot(tlb, page, translation->page_shift);

	entry->page = page;
	entry->translation = *translation;
	entry->valid = true;
	entry->referenced = (translation->pte & PTE_REFERENCED) != 0;
	return entry;
}

void tlb_invalidate_all(struct tlb *tlb)
{
	memset(tlb->entries, 0, tlb->size * sizeof(*tlb->entries));
}

void tlb_invalidate_range(struct tlb *tlb, uint64_t va, uint64_t bytes)
{
	uint32_t i;

	for (i = 0; i < tlb->size; i++) {
		struct tlb_entry *entry = &tlb->entries[i];
		uint64_t start, end;

		if (!entry->valid)
			continue;
		start = entry->page << entry->translation.page_shift;
		end = start + (UINT64_C(1) << entry->translation.page_shift);
		if (start < va + bytes && va < end)
			entry->valid = false;
	}
}

void tlb_forget_referenced(struct tlb *tlb)
{
	uint32_t i;

	for (i = 0; i < tlb->size; i++)
		tlb->entries[i].referenced = false;
}
