/* SPDX-License-Identifier: MIT */
/*
 * ptrtable.h - which GPU memory a device pointer is in: a table of
 * ranges [va, va + bytes) sorted by address, each with the buffer it is
 * and the context that owns it. Lookups are binary searches. Not thread
 * safe (the library's lock guards it).
 */
#ifndef VGPU_CUDA_PTRTABLE_H
#define VGPU_CUDA_PTRTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu_guest.h"

enum cu_range_kind {
	CU_RANGE_ALLOC = 1,  /* cuMemAlloc: freeable */
	CU_RANGE_MODULE = 2, /* a module's variables: freed with the module */
};

struct cu_range {
	uint64_t va, bytes;
	enum cu_range_kind kind;
	struct vgpu_guest_buffer buf;
	void *owner; /* the context */
};

struct cu_ptr_table {
	struct cu_range *r;
	size_t count, capacity;
};

/* 0, -ENOMEM, or -EEXIST if the range is empty or overlaps one present. */
int cu_ptr_insert(struct cu_ptr_table *t, const struct cu_range *range);
/* Remove the range starting exactly at va into *out (may be NULL): 0 or
 * -ENOENT. */
int cu_ptr_remove(struct cu_ptr_table *t, uint64_t va, struct cu_range *out);
/* The range holding address va, or NULL. */
const struct cu_range *cu_ptr_find(const struct cu_ptr_table *t, uint64_t va);
/* True if [va, va + bytes) lies inside one range (bytes 0: va inside). */
bool cu_ptr_contains(const struct cu_ptr_table *t, uint64_t va, uint64_t bytes);
void cu_ptr_table_free(struct cu_ptr_table *t);

#endif /* VGPU_CUDA_PTRTABLE_H */
