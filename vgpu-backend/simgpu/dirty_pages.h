/* SPDX-License-Identifier: MIT */
/*
 * dirty_pages.h - which 4 KiB pages of an address space an engine wrote
 * since software last asked (vgpu_hal_as_test_and_clear_dirty).
 *
 * Kept by GPU virtual address, beside the page tables rather than in the
 * PTEs: a chunk that is remapped (evicted, returned) keeps its dirty pages,
 * so a page written before a relocation is still reported after it. Off
 * until enabled; then every engine write marks the pages it covers. CPU
 * aperture accesses (as_write) do not mark pages.
 *
 * A sparse set of 2 MiB regions, each a 512-bit bitmap, in an open-addressing
 * table. Not thread-safe: the address space's lock guards it.
 */
#ifndef SIMGPU_DIRTY_PAGES_H
#define SIMGPU_DIRTY_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dirty_region;

struct dirty_pages {
	bool enabled;
	struct dirty_region *table;
	size_t capacity; /* power of two, or 0 */
	size_t used;
};

void dirty_pages_init(struct dirty_pages *dp);
void dirty_pages_fini(struct dirty_pages *dp);
/* Enable (nothing is dirty yet) or disable (forget everything). */
void dirty_pages_enable(struct dirty_pages *dp, bool enable);
/* Mark [va, va + bytes) written. Out of memory: the regions that cannot be
 * recorded make the set "overflowed", and every later test reports dirty
 * until disabled. */
void dirty_pages_mark(struct dirty_pages *dp, uint64_t va, uint64_t bytes);
/* Any page of [va, va + bytes) dirty? Clears those pages. */
bool dirty_pages_test_and_clear(struct dirty_pages *dp, uint64_t va, uint64_t bytes);

#endif /* SIMGPU_DIRTY_PAGES_H */
