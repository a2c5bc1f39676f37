/* SPDX-License-Identifier: MIT */
/*
 * cs_sa_cache.h - a set-associative array with LRU replacement, the shape
 * shared by the model's TLBs, page-walk cache and L2 cache.
 *
 * Promise: a key is a 64-bit value plus a tenant tag (an address space);
 * entries of different tenants never match. sets * ways entries; a set is
 * chosen from the key's low bits (mixed with the tenant), so sets must be a
 * power of two. Each entry carries one "dirty" bit for write-back caches.
 * Counts occupancy per tenant so callers can see who holds the capacity.
 */
#ifndef SIMGPU_CS_SA_CACHE_H
#define SIMGPU_CS_SA_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#define CS_MAX_TENANTS 4

struct cs_sa_cache;

struct cs_sa_victim {
	bool valid; /* an entry was evicted */
	bool dirty;
	uint32_t tenant;
	uint64_t key;
};

/* NULL on bad geometry (sets not a power of two, zero ways) or no memory. */
struct cs_sa_cache *cs_sa_cache_create(uint32_t sets, uint32_t ways);
void cs_sa_cache_destroy(struct cs_sa_cache *c);

/* True on a hit (and the entry becomes most recently used; mark_dirty sets
 * its dirty bit). */
bool cs_sa_cache_lookup(struct cs_sa_cache *c, uint32_t tenant, uint64_t key, bool mark_dirty);

/* Inserts (or refreshes) key as most recently used; reports what it evicted. */
void cs_sa_cache_insert(struct cs_sa_cache *c, uint32_t tenant, uint64_t key, bool dirty,
                        struct cs_sa_victim *victim);

/* Entries held by tenant now. */
uint32_t cs_sa_cache_occupancy(const struct cs_sa_cache *c, uint32_t tenant);

#endif /* SIMGPU_CS_SA_CACHE_H */
