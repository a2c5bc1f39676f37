// SPDX-License-Identifier: MIT
/* cs_sa_cache.c - set-associative LRU array (see cs_sa_cache.h). */
#include "cs_sa_cache.h"

#include <stdlib.h>

struct cs_sa_entry {
	uint64_t key;
	uint64_t used; /* LRU stamp; 0 = invalid */
	uint32_t tenant;
	bool dirty;
};

struct cs_sa_cache {
	uint32_t sets, ways;
	uint64_t stamp;
	uint32_t occupancy[CS_MAX_TENANTS];
	struct cs_sa_entry entries[];
};

struct cs_sa_cache *cs_sa_cache_create(uint32_t sets, uint32_t ways)
{
	struct cs_sa_cache *c;

	if (sets == 0 || (sets & (sets - 1)) || ways == 0)
		return NULL;
	c = calloc(1, sizeof(*c) + (size_t)sets * ways * sizeof(struct cs_sa_entry));
	if (!c)
		return NULL;
	c->sets = sets;
	c->ways = ways;
	return c;
}

void cs_sa_cache_destroy(struct cs_sa_cache *c)
{
	free(c);
}

static struct cs_sa_entry *set_of(struct cs_sa_cache *c, uint32_t tenant, uint64_t key)
{
	uint64_t mixed = key ^ ((uint64_t)tenant * 0x9e3779b97f4a7c15ull >> 40);

	return &c->entries[(size_t)(mixed & (c->sets - 1)) * c->ways];
}

bool cs_sa_cache_lookup(struct cs_sa_cache *c, uint32_t tenant, uint64_t key, bool mark_dirty)
{
	struct cs_sa_entry *set = set_of(c, tenant, key);
	uint32_t way;

	for (way = 0; way < c->ways; way++) {
		struct cs_sa_entry *e = &set[way];

		if (e->used && e->key == key && e->tenant == tenant) {
			e->used = ++c->stamp;
			e->dirty |= mark_dirty;
			return true;
		}
	}
	return false;
}

void cs_sa_cache_insert(struct cs_sa_cache *c, uint32_t tenant, uint64_t key, bool dirty,
                        struct cs_sa_victim *victim)
{
	struct cs_sa_entry *set = set_of(c, tenant, key), *slot = &set[0];
	uint32_t way;

	if (victim)
		victim->valid = false;
	for (way = 0; way < c->ways; way++) {
		struct cs_sa_entry *e = &set[way];

		if (e->used && e->key == key && e->tenant == tenant) {
			e->used = ++c->stamp;
			e->dirty |= dirty;
			return;
		}
		if (e->used < slot->used)
			slot = e;
	}
	if (slot->used) {
		if (victim)
			*victim = (struct cs_sa_victim){ true, slot->dirty, slot->tenant, slot->key };
		c->occupancy[slot->tenant % CS_MAX_TENANTS]--;
	}
	*slot = (struct cs_sa_entry){ key, ++c->stamp, tenant, dirty };
	c->occupancy[tenant % CS_MAX_TENANTS]++;
}

uint32_t cs_sa_cache_occupancy(const struct cs_sa_cache *c, uint32_t tenant)
{
	return tenant < CS_MAX_TENANTS ? c->occupancy[tenant] : 0;
}
