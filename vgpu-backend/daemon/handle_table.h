/* SPDX-License-Identifier: MIT */
/*
 * handle_table.h - a VM's buffer handles as the guest sees them.
 *
 * The device ABI gives a buffer a 32-bit handle; the core names it with a
 * 64-bit one. The table maps between them per VM (so a handle only ever
 * means something to the VM it was given to): guest handle =
 * generation << 20 | (slot + 1), with a 12-bit generation that changes
 * every time a slot is reused and freed slots reused oldest first, so a
 * stale handle finds nothing for a long time. Handle 0 is never valid. At
 * most HANDLE_TABLE_MAX live handles. Not thread-safe: the device's mailbox
 * worker owns it.
 */
#ifndef VGPUD_HANDLE_TABLE_H
#define VGPUD_HANDLE_TABLE_H

#include <stdint.h>

#define HANDLE_TABLE_SLOT_BITS 20u
#define HANDLE_TABLE_MAX ((1u << HANDLE_TABLE_SLOT_BITS) - 1u)

struct handle_slot;

struct handle_table {
	struct handle_slot *slots;
	uint32_t capacity, used; /* slots allocated, slots ever used */
	uint32_t free_head, free_tail; /* FIFO of free slots (UINT32_MAX: none) */
	uint32_t live;
};

void handle_table_init(struct handle_table *t);
void handle_table_fini(struct handle_table *t);
/* 0 and *guest, -ENOSPC (table full) or -ENOMEM. */
int handle_table_add(struct handle_table *t, uint64_t core_handle, uint32_t *guest);
/* 0 and *core_handle, or -ENOENT for a handle this table did not give out
 * (or gave out and took back). */
int handle_table_lookup(const struct handle_table *t, uint32_t guest, uint64_t *core_handle);
/* Forget a handle found by lookup. */
void handle_table_remove(struct handle_table *t, uint32_t guest);

/* Live migration. Copy up to max live handles into guest[] and core[];
 * returns how many there are (may exceed max). */
uint32_t handle_table_entries(const struct handle_table *t, uint32_t *guest, uint64_t *core,
                              uint32_t max);
/* Fill an empty table with exactly these handles (as another vgpud gave
 * them out); slots between them are free. 0, -EINVAL (a malformed or
 * repeated handle, or the table is not empty), -ENOMEM. */
int handle_table_restore(struct handle_table *t, const uint32_t *guest, const uint64_t *core,
                         uint32_t count);

#endif /* VGPUD_HANDLE_TABLE_H */
