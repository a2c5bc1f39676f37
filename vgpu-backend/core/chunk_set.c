// SPDX-License-Identifier: MIT
/* chunk_set.c - partitioned chunk arrays, see chunk_set.h. */
#include <errno.h>
#include <stdlib.h>

#include "core_internal.h"

void vgpu_chunk_set_init(struct vgpu_chunk_set *set, int slot)
{
	set->items = NULL;
	set->count = 0;
	set->candidates = 0;
	set->capacity = 0;
	set->slot = slot;
}

void vgpu_chunk_set_fini(struct vgpu_chunk_set *set)
{
	free(set->items);
	set->items = NULL;
	set->count = set->candidates = set->capacity = 0;
}

int vgpu_chunk_set_reserve(struct vgpu_chunk_set *set, size_t capacity)
{
	struct vgpu_chunk **items;
	size_t grown;

	if (capacity <= set->capacity)
		return 0;
	grown = set->capacity ? set->capacity : 8;
	while (grown < capacity)
		grown *= 2;
	items = realloc(set->items, grown * sizeof(*items));
	if (!items)
		return -ENOMEM;
	set->items = items;
	set->capacity = grown;
	return 0;
}

static void place(struct vgpu_chunk_set *set, size_t index, struct vgpu_chunk *chunk)
{
	set->items[index] = chunk;
	chunk->set_index[set->slot] = index;
}

static void swap(struct vgpu_chunk_set *set, size_t a, size_t b)
{
	struct vgpu_chunk *chunk_a = set->items[a];
	struct vgpu_chunk *chunk_b = set->items[b];

	place(set, a, chunk_b);
	place(set, b, chunk_a);
}

int vgpu_chunk_set_insert(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk)
{
	int err = vgpu_chunk_set_reserve(set, set->count + 1);

	if (err)
		return err;
	/* Append, then move the first selected item out of the way. */
	place(set, set->count, chunk);
	set->count++;
	swap(set, set->candidates, set->count - 1);
	set->candidates++;
	return 0;
}

bool vgpu_chunk_set_contains(const struct vgpu_chunk_set *set, const struct vgpu_chunk *chunk)
{
	size_t index = chunk->set_index[set->slot];

	return index < set->count && set->items[index] == chunk;
}

bool vgpu_chunk_set_is_selected(const struct vgpu_chunk_set *set, const struct vgpu_chunk *chunk)
{
	return chunk->set_index[set->slot] >= set->candidates;
}

void vgpu_chunk_set_remove(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk)
{
	size_t index = chunk->set_index[set->slot];

	if (index < set->candidates) {
		swap(set, index, set->candidates - 1);
		set->candidates--;
		index = set->candidates;
	}
	swap(set, index, set->count - 1);
	set->count--;
	chunk->set_index[set->slot] = SIZE_MAX;
}

void vgpu_chunk_set_select(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk)
{
	size_t index = chunk->set_index[set->slot];

	if (index >= set->candidates)
		return;
	swap(set, index, set->candidates - 1);
	set->candidates--;
}

void vgpu_chunk_set_unselect(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk)
{
	size_t index = chunk->set_index[set->slot];

	if (index < set->candidates)
		return;
	swap(set, index, set->candidates);
	set->candidates++;
}
