// SPDX-License-Identifier: MIT
/* handle_table.c - 32-bit guest handles for core buffers, see handle_table.h. */
#include "handle_table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define GENERATION_MASK 0xfffu
#define NONE UINT32_MAX

struct handle_slot {
	uint64_t core_handle;
	uint32_t generation; /* 1..4095 */
	uint32_t next_free;
	bool live;
};

void handle_table_init(struct handle_table *t)
{
	t->slots = NULL;
	t->capacity = t->used = t->live = 0;
	t->free_head = t->free_tail = NONE;
}

void handle_table_fini(struct handle_table *t)
{
	free(t->slots);
	handle_table_init(t);
}

static uint32_t take_slot(struct handle_table *t)
{
	uint32_t slot;

	/* Reuse the oldest free slot only once the table stopped growing
	 * cheaply: fresh slots first keeps stale handles dead longer. */
	if (t->used < t->capacity || t->free_head == NONE) {
		if (t->used == t->capacity) {
			uint32_t capacity = t->capacity ? 2 * t->capacity : 64;
			struct handle_slot *slots;

			if (capacity > HANDLE_TABLE_MAX)
				capacity = HANDLE_TABLE_MAX;
			if (capacity <= t->capacity)
				return NONE;
			slots = realloc(t->slots, capacity * sizeof(*slots));
			if (!slots)
				return NONE;
			t->slots = slots;
			t->capacity = capacity;
		}
		slot = t->used++;
		t->slots[slot].generation = 1;
		return slot;
	}
	slot = t->free_head;
	t->free_head = t->slots[slot].next_free;
	if (t->free_head == NONE)
		t->free_tail = NONE;
	return slot;
}

int handle_table_add(struct handle_table *t, uint64_t core_handle, uint32_t *guest)
{
	uint32_t slot;

	if (t->live >= HANDLE_TABLE_MAX)
		return -ENOSPC;
	slot = take_slot(t);
	if (slot == NONE)
		return t->capacity >= HANDLE_TABLE_MAX ? -ENOSPC : -ENOMEM;
	t->slots[slot].core_handle = core_handle;
	t->slots[slot].live = true;
	t->live++;
	*guest = t->slots[slot].generation << HANDLE_TABLE_SLOT_BITS | (slot + 1);
	return 0;
}

static int find(const struct handle_table *t, uint32_t guest, uint32_t *slot)
{
	uint32_t index = (guest & HANDLE_TABLE_MAX) - 1;

	if (!(guest & HANDLE_TABLE_MAX) || index >= t->used || !t->slots[index].live ||
	    t->slots[index].generation != guest >> HANDLE_TABLE_SLOT_BITS)
		return -ENOENT;
	*slot = index;
	return 0;
}

int handle_table_lookup(const struct handle_table *t, uint32_t guest, uint64_t *core_handle)
{
	uint32_t slot;

	if (find(t, guest, &slot))
		return -ENOENT;
	*core_handle = t->slots[slot].core_handle;
	return 0;
}

void handle_table_remove(struct handle_table *t, uint32_t guest)
{
	struct handle_slot *s;
	uint32_t slot;

	if (find(t, guest, &slot))
		return;
	s = &t->slots[slot];
	s->live = false;
	s->generation = (s->generation & GENERATION_MASK) + 1;
	if (s->generation > GENERATION_MASK)
		s->generation = 1;
	s->next_free = NONE;
	if (t->free_tail == NONE)
		t->free_head = slot;
	else
		t->slots[t->free_tail].next_free = slot;
	t->free_tail = slot;
	t->live--;
}

uint32_t handle_table_entries(const struct handle_table *t, uint32_t *guest, uint64_t *core,
                              uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t slot = 0; slot < t->used; slot++) {
		if (!t->slots[slot].live)
			continue;
		if (n < max) {
			guest[n] = t->slots[slot].generation << HANDLE_TABLE_SLOT_BITS | (slot + 1);
			core[n] = t->slots[slot].core_handle;
		}
		n++;
	}
	return n;
}

int handle_table_restore(struct handle_table *t, const uint32_t *guest, const uint64_t *core,
                         uint32_t count)
{
	uint32_t used = 0;

	if (t->used || t->live)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t slot = (guest[i] & HANDLE_TABLE_MAX), generation = guest[i] >> HANDLE_TABLE_SLOT_BITS;

		if (!slot || !generation || generation > GENERATION_MASK)
			return -EINVAL;
		if (slot > used)
			used = slot;
	}
	if (used) {
		t->slots = calloc(used, sizeof(*t->slots));
		if (!t->slots)
			return -ENOMEM;
	}
	t->capacity = t->used = used;
	for (uint32_t slot = 0; slot < used; slot++)
		t->slots[slot].generation = 1;
	for (uint32_t i = 0; i < count; i++) {
		struct handle_slot *s = &t->slots[(guest[i] & HANDLE_TABLE_MAX) - 1];

		if (s->live) {
			handle_table_fini(t);
			return -EINVAL;
		}
		s->live = true;
		s->generation = guest[i] >> HANDLE_TABLE_SLOT_BITS;
		s->core_handle = core[i];
		t->live++;
	}
	for (uint32_t slot = 0; slot < used; slot++) {
		struct handle_slot *s = &t->slots[slot];

		if (s->live)
			continue;
		s->next_free = NONE;
		if (t->free_tail == NONE)
			t->free_head = slot;
		else
			t->slots[t->free_tail].next_free = slot;
		t->free_tail = slot;
	}
	return 0;
}
