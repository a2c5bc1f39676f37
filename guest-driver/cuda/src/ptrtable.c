// SPDX-License-Identifier: MIT
/* ptrtable.c - device pointer -> buffer (ptrtable.h). */
#include "ptrtable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first range with va > addr. */
static size_t upper_bound(const struct cu_ptr_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->r[mid].va <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct cu_range *cu_ptr_find(const struct cu_ptr_table *t, uint64_t va)
{
	size_t i = upper_bound(t, va);

	if (i == 0)
		return NULL;
	if (va - t->r[i - 1].va < t->r[i - 1].bytes)
		return &t->r[i - 1];
	return NULL;
}

bool cu_ptr_contains(const struct cu_ptr_table *t, uint64_t va, uint64_t bytes)
{
	const struct cu_range *r = cu_ptr_find(t, va);

	if (!r)
		return false;
	return bytes <= r->bytes - (va - r->va);
}

int cu_ptr_insert(struct cu_ptr_table *t, const struct cu_range *range)
{
	size_t i;

	if (range->bytes == 0 || range->va + range->bytes < range->va)
		return -EEXIST;
	i = upper_bound(t, range->va);
	if (i > 0 && range->va - t->r[i - 1].va < t->r[i - 1].bytes)
		return -EEXIST;
	if (i < t->count && t->r[i].va - range->va < range->bytes)
		return -EEXIST;
	if (t->count == t->capacity) {
		size_t cap = t->capacity ? 2 * t->capacity : 64;
		struct cu_range *r = realloc(t->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->r = r;
		t->capacity = cap;
	}
	memmove(&t->r[i + 1], &t->r[i], (t->count - i) * sizeof(*t->r));
	t->r[i] = *range;
	t->count++;
	return 0;
}

int cu_ptr_remove(struct cu_ptr_table *t, uint64_t va, struct cu_range *out)
{
	size_t i = upper_bound(t, va);

	if (i == 0 || t->r[i - 1].va != va)
		return -ENOENT;
	i--;
	if (out)
		*out = t->r[i];
	memmove(&t->r[i], &t->r[i + 1], (t->count - i - 1) * sizeof(*t->r));
	t->count--;
	return 0;
}

void cu_ptr_table_free(struct cu_ptr_table *t)
{
	free(t->r);
	memset(t, 0, sizeof(*t));
}
