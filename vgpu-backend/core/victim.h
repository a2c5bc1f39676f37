/* SPDX-License-Identifier: MIT */
/*
 * victim.h - VMs ordered by bytes ÷ weight (thesis §5.2.1, memory-based
 * victim selection, weighted).
 *
 * A binary heap of nodes embedded in the VMs. With largest_first it yields
 * the eviction victim (most resident bytes per unit of weight), otherwise
 * the return winner (least). Ratios are compared exactly (128-bit cross
 * multiplication). Tie rule: between equal ratios the node with the LOWER id
 * comes first, in both orders, so the VM created first is the victim (and
 * the winner) when shares are equal. top is O(1); insert, remove and update
 * after a key change are O(log n).
 */
#ifndef VGPU_CORE_VICTIM_H
#define VGPU_CORE_VICTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VGPU_VICTIM_NOT_QUEUED SIZE_MAX

struct vgpu_victim_node {
	uint64_t bytes;  /* key numerator */
	uint32_t weight; /* key denominator, > 0 */
	uint32_t id;     /* tie break */
	size_t index;    /* position in the heap or VGPU_VICTIM_NOT_QUEUED */
};

struct vgpu_victim_heap {
	struct vgpu_victim_node **nodes;
	size_t count, capacity;
	bool largest_first;
};

void vgpu_victim_heap_init(struct vgpu_victim_heap *heap, bool largest_first);
void vgpu_victim_heap_fini(struct vgpu_victim_heap *heap);
/* Make room for capacity nodes, so later pushes cannot fail. */
int vgpu_victim_heap_reserve(struct vgpu_victim_heap *heap, size_t capacity);
int vgpu_victim_heap_push(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node);
void vgpu_victim_heap_remove(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node);
/* Restore the order after node->bytes or node->weight changed. */
void vgpu_victim_heap_update(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node);
struct vgpu_victim_node *vgpu_victim_heap_top(const struct vgpu_victim_heap *heap);
void vgpu_victim_heap_clear(struct vgpu_victim_heap *heap);
/* Whether a comes before b in this heap's order. */
bool vgpu_victim_before(const struct vgpu_victim_heap *heap, const struct vgpu_victim_node *a,
                        const struct vgpu_victim_node *b);
/* Check the heap property and indices (for the invariant check). */
bool vgpu_victim_heap_valid(const struct vgpu_victim_heap *heap);

#endif /* VGPU_CORE_VICTIM_H */
