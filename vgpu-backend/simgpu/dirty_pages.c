// SPDX-License-Identifier: MIT
/* dirty_pages.c - engine-written pages of an address space, see dirty_pages.h. */
#include "dirty_pages.h"

#include <stdlib.h>
#include <string.h>

#define PAGE_SHIFT 12u
#define REGION_SHIFT 21u /* 2 MiB: 512 pages */
#define REGION_PAGES (1u << (REGION_SHIFT - PAGE_SHIFT))
#define NO_KEY UINT64_MAX

struct dirty_region {
	uint64_t key; /* va >> REGION_SHIFT, NO_KEY: empty slot */
	uint64_t bits[REGION_PAGES / 64];
};

/* Set when a region could not be recorded (out of memory). */
static const size_t OVERFLOWED = SIZE_MAX;

void dirty_pages_init(struct dirty_pages *dp)
{
	memset(dp, 0, sizeof(*dp));
}

void dirty_pages_fini(struct dirty_pages *dp)
{
	free(dp->table);
	memset(dp, 0, sizeof(*dp));
}

void dirty_pages_enable(struct dirty_pages *dp, bool enable)
{
	dirty_pages_fini(dp);
	dp->enabled = enable;
}

static size_t slot_of(uint64_t key, size_t capacity)
{
	key ^= key >> 29;
	key *= UINT64_C(0xbf58476d1ce4e5b9);
	key ^= key >> 32;
	return (size_t)key & (capacity - 1);
}

static struct dirty_region *find(struct dirty_pages *dp, uint64_t key)
{
	size_t i;

	if (!dp->capacity)
		return NULL;
	for (i = slot_of(key, dp->capacity);; i = (i + 1) & (dp->capacity - 1)) {
		if (dp->table[i].key == key)
			return &dp->table[i];
		if (dp->table[i].key == NO_KEY)
			return NULL;
	}
}

static struct dirty_region *insert_slot(struct dirty_region *table, size_t capacity, uint64_t key)
{
	size_t i;

	for (i = slot_of(key, capacity); table[i].key != NO_KEY && table[i].key != key;
	     i = (i + 1) & (capacity - 1))
		;
	return &table[i];
}

static bool grow(struct dirty_pages *dp)
{
	size_t capacity = dp->capacity ? dp->capacity * 2 : 64, i;
	struct dirty_region *table = malloc(capacity * sizeof(*table));

	if (!table)
		return false;
	for (i = 0; i < capacity; i++)
		table[i].key = NO_KEY;
	for (i = 0; i < dp->capacity; i++)
		if (dp->table[i].key != NO_KEY)
			*insert_slot(table, capacity, dp->table[i].key) = dp->table[i];
	free(dp->table);
	dp->table = table;
	dp->capacity = capacity;
	return true;
}

static struct dirty_region *get(struct dirty_pages *dp, uint64_t key)
{
	struct dirty_region *r = find(dp, key);

	if (r)
		return r;
	if ((dp->used + 1) * 2 > dp->capacity && !grow(dp))
		return NULL;
	r = insert_slot(dp->table, dp->capacity, key);
	r->key = key;
	memset(r->bits, 0, sizeof(r->bits));
	dp->used++;
	return r;
}

void dirty_pages_mark(struct dirty_pages *dp, uint64_t va, uint64_t bytes)
{
	uint64_t page, last;

	if (!dp->enabled || !bytes || dp->used == OVERFLOWED)
		return;
	last = (va + bytes - 1) >> PAGE_SHIFT;
	for (page = va >> PAGE_SHIFT; page <= last; page++) {
		struct dirty_region *r = get(dp, page >> (REGION_SHIFT - PAGE_SHIFT));
		unsigned bit = (unsigned)(page & (REGION_PAGES - 1));

		if (!r) {
			dp->used = OVERFLOWED;
			return;
		}
		r->bits[bit / 64] |= UINT64_C(1) << (bit % 64);
	}
}

bool dirty_pages_test_and_clear(struct dirty_pages *dp, uint64_t va, uint64_t bytes)
{
	uint64_t page, last;
	bool dirty = false;

	if (dp->used == OVERFLOWED)
		return true;
	if (!bytes || !dp->capacity)
		return false;
	last = (va + bytes - 1) >> PAGE_SHIFT;
	for (page = va >> PAGE_SHIFT; page <= last; page++) {
		struct dirty_region *r = find(dp, page >> (REGION_SHIFT - PAGE_SHIFT));
		unsigned bit = (unsigned)(page & (REGION_PAGES - 1));

		if (!r) { /* skip the rest of this empty region */
			page |= REGION_PAGES - 1;
			continue;
		}
		if (r->bits[bit / 64] & (UINT64_C(1) << (bit % 64))) {
			dirty = true;
			r->bits[bit / 64] &= ~(UINT64_C(1) << (bit % 64));
		}
	}
	return dirty;
}
