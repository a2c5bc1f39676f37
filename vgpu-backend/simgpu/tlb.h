/* SPDX-License-Identifier: MIT */
/*
 * tlb.h - the per-address-space TLB.
 *
 * Caches walked translations (4 KiB and 64 KiB) and keeps serving them,
 * stale or not, until tlb_invalidate_all: changing page tables never touches
 * the TLB. Direct-mapped: a lookup probes the slot of the 64 KiB page and the
 * slot of the 4 KiB page containing the VA. The caller serialises access (the
 * address-space lock).
 */
#ifndef SIMGPU_TLB_H
#define SIMGPU_TLB_H

#include <stdbool.h>
#include <stdint.h>

#include "page_table.h"

struct tlb_entry {
	uint64_t page;        /* va >> page_shift */
	struct gmmu_translation translation;
	bool valid;
	bool referenced;      /* referenced bit already set in the PTE */
};

struct tlb {
	struct tlb_entry *entries;
	uint32_t size; /* power of two */
	uint64_t hits;
	uint64_t misses;
};

int tlb_init(struct tlb *tlb, uint32_t entries);
void tlb_destroy(struct tlb *tlb);

/* Cached entry for va, or NULL. */
struct tlb_entry *tlb_lookup(struct tlb *tlb, uint64_t va);
/* Cache a translation of va; returns its entry. */
struct tlb_entry *tlb_insert(struct tlb *tlb, uint64_t va,
                             const struct gmmu_translation *translation);
void tlb_invalidate_all(struct tlb *tlb);
/* Drop the entries translating any page of [va, va + bytes). */
void tlb_invalidate_range(struct tlb *tlb, uint64_t va, uint64_t bytes);
/* Forget which entries have set their referenced bit. */
void tlb_forget_referenced(struct tlb *tlb);

#endif /* SIMGPU_TLB_H */
