/* SPDX-License-Identifier: MIT */
/*
 * chunk_set.h - an unordered set of chunks with O(1) insert, remove, random
 * access and "selection".
 *
 * The array is partitioned: items[0, candidates) are not selected,
 * items[candidates, count) are selected in the current pass. Selecting or
 * unselecting a chunk moves it across the boundary with one swap, so a
 * policy can pick uniformly among the unselected ones in O(1) (thesis §3.3.4
 * keeps unsorted lists for the same reason). Each chunk remembers its index
 * in the set through chunk->set_index[slot]; a chunk is in at most one set
 * per slot (slot 0: its VM's, slot 1: its buffer's).
 */
#ifndef VGPU_CORE_CHUNK_SET_H
#define VGPU_CORE_CHUNK_SET_H

#include <stdbool.h>
#include <stddef.h>

struct vgpu_chunk;

struct vgpu_chunk_set {
	struct vgpu_chunk **items;
	size_t count;
	size_t candidates;
	size_t capacity;
	int slot; /* which chunk->set_index this set maintains */
};

void vgpu_chunk_set_init(struct vgpu_chunk_set *set, int slot);
void vgpu_chunk_set_fini(struct vgpu_chunk_set *set);
/* Make room for at least capacity items (so later inserts cannot fail). */
int vgpu_chunk_set_reserve(struct vgpu_chunk_set *set, size_t capacity);
/* Insert as an unselected item. -ENOMEM only when the array must grow. */
int vgpu_chunk_set_insert(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk);
void vgpu_chunk_set_remove(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk);
void vgpu_chunk_set_select(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk);
void vgpu_chunk_set_unselect(struct vgpu_chunk_set *set, struct vgpu_chunk *chunk);
bool vgpu_chunk_set_contains(const struct vgpu_chunk_set *set, const struct vgpu_chunk *chunk);
bool vgpu_chunk_set_is_selected(const struct vgpu_chunk_set *set, const struct vgpu_chunk *chunk);

static inline size_t vgpu_chunk_set_selected(const struct vgpu_chunk_set *set)
{
	return set->count - set->candidates;
}

#endif /* VGPU_CORE_CHUNK_SET_H */
