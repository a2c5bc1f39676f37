// SPDX-License-Identifier: MIT
/* victim.c - VMs ordered by bytes ÷ weight, see victim.h. */
#include <errno.h>
#include <stdlib.h>

#include "victim.h"

void vgpu_victim_heap_init(struct vgpu_victim_heap *heap, bool largest_first)
{
	heap->nodes = NULL;
	heap->count = 0;
	heap->capacity = 0;
	heap->largest_first = largest_first;
}

void vgpu_victim_heap_fini(struct vgpu_victim_heap *heap)
{
	vgpu_victim_heap_clear(heap);
	free(heap->nodes);
	heap->nodes = NULL;
	heap->capacity = 0;
}

int vgpu_victim_heap_reserve(struct vgpu_victim_heap *heap, size_t capacity)
{
	struct vgpu_victim_node **nodes;
	size_t grown;

	if (capacity <= heap->capacity)
		return 0;
	grown = heap->capacity ? heap->capacity : 8;
	while (grown < capacity)
		grown *= 2;
	nodes = realloc(heap->nodes, grown * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	heap->nodes = nodes;
	heap->capacity = grown;
	return 0;
}

/* Compare a.bytes / a.weight with b.bytes / b.weight: -1, 0 or 1. */
static int compare_ratio(const struct vgpu_victim_node *a, const struct vgpu_victim_node *b)
{
	unsigned __int128 left = (unsigned __int128)a->bytes * b->weight;
	unsigned __int128 right = (unsigned __int128)b->bytes * a->weight;

	return left < right ? -1 : left > right;
}

bool vgpu_victim_before(const struct vgpu_victim_heap *heap, const struct vgpu_victim_node *a,
                        const struct vgpu_victim_node *b)
{
	int order = compare_ratio(a, b);

	if (order == 0)
		return a->id < b->id;
	return heap->largest_first ? order > 0 : order < 0;
}

static void place(struct vgpu_victim_heap *heap, size_t index, struct vgpu_victim_node *node)
{
	heap->nodes[index] = node;
	node->index = index;
}

static void sift_up(struct vgpu_victim_heap *heap, size_t index)
{
	struct vgpu_victim_node *node = heap->nodes[index];

	while (index > 0) {
		size_t parent = (index - 1) / 2;

		if (!vgpu_victim_before(heap, node, heap->nodes[parent]))
			break;
		place(heap, index, heap->nodes[parent]);
		index = parent;
	}
	place(heap, index, node);
}

static void sift_down(struct vgpu_victim_heap *heap, size_t index)
{
	struct vgpu_victim_node *node = heap->nodes[index];

	for (;;) {
		size_t child = 2 * index + 1;

		if (child >= heap->count)
			break;
		if (child + 1 < heap->count &&
		    vgpu_victim_before(heap, heap->nodes[child + 1], heap->nodes[child]))
			child++;
		if (!vgpu_victim_before(heap, heap->nodes[child], node))
			break;
		place(heap, index, heap->nodes[child]);
		index = child;
	}
	place(heap, index, node);
}

int vgpu_victim_heap_push(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node)
{
	int err = vgpu_victim_heap_reserve(heap, heap->count + 1);

	if (err)
		return err;
	place(heap, heap->count++, node);
	sift_up(heap, node->index);
	return 0;
}

void vgpu_victim_heap_remove(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node)
{
	size_t index = node->index;
	struct vgpu_victim_node *last;

	if (index >= heap->count || heap->nodes[index] != node)
		return;
	last = heap->nodes[--heap->count];
	node->index = VGPU_VICTIM_NOT_QUEUED;
	if (last == node)
		return;
	place(heap, index, last);
	vgpu_victim_heap_update(heap, last);
}

void vgpu_victim_heap_update(struct vgpu_victim_heap *heap, struct vgpu_victim_node *node)
{
	size_t index = node->index;

	if (index >= heap->count || heap->nodes[index] != node)
		return;
	if (index > 0 && vgpu_victim_before(heap, node, heap->nodes[(index - 1) / 2]))
		sift_up(heap, index);
	else
		sift_down(heap, index);
}

struct vgpu_victim_node *vgpu_victim_heap_top(const struct vgpu_victim_heap *heap)
{
	return heap->count ? heap->nodes[0] : NULL;
}

void vgpu_victim_heap_clear(struct vgpu_victim_heap *heap)
{
	for (size_t i = 0; i < heap->count; i++)
		heap->nodes[i]->index = VGPU_VICTIM_NOT_QUEUED;
	heap->count = 0;
}

bool vgpu_victim_heap_valid(const struct vgpu_victim_heap *heap)
{
	for (size_t i = 0; i < heap->count; i++) {
		if (heap->nodes[i]->index != i)
			return false;
		if (i > 0 && vgpu_victim_before(heap, heap->nodes[i], heap->nodes[(i - 1) / 2]))
			return false;
	}
	return true;
}
