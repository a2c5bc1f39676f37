// SPDX-License-Identifier: MIT
/* cs_model.c - the shared virtual-memory and memory path (see cs_model.h). */
#include "cs_model.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cs_events.h"
#include "cs_kernel_stream.h"
#include "cs_sa_cache.h"

#define HASH_BUCKETS 4096u
#define TENANT_PA_SHIFT 41
#define PT_REGION (UINT64_C(1) << 40)

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Fixed-size objects of one kind, freed all at once with the model (what is
 * in flight when a run stops is simply dropped). */
struct pool {
	size_t size;
	void *free_list;
	void **chunks;
	size_t nchunks;
};

#define POOL_CHUNK 1024u

static void *pool_get(struct pool *p)
{
	void *obj = p->free_list;

	if (!obj) {
		char *chunk = malloc(p->size * POOL_CHUNK);
		void **chunks = realloc(p->chunks, (p->nchunks + 1) * sizeof(*chunks));
		size_t i;

		if (!chunk || !chunks) {
			free(chunk);
			if (chunks)
				p->chunks = chunks;
			return NULL;
		}
		p->chunks = chunks;
		p->chunks[p->nchunks++] = chunk;
		for (i = 0; i < POOL_CHUNK; i++) {
			*(void **)(chunk + i * p->size) = p->free_list;
			p->free_list = chunk + i * p->size;
		}
		obj = p->free_list;
	}
	p->free_list = *(void **)obj;
	memset(obj, 0, p->size);
	return obj;
}

static void pool_put(struct pool *p, void *obj)
{
	*(void **)obj = p->free_list;
	p->free_list = obj;
}

static void pool_release(struct pool *p)
{
	size_t i;

	for (i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
}

struct cs_model;
struct warp;

/* A translation waiting for its page. */
struct xlate {
	uint32_t tenant, sm; /* sm: global index */
	uint64_t vpn;
	bool holds_mshr;
	void (*done)(struct xlate *x, uint64_t now);
	struct xlate *next;
};

struct model_walk {
	struct cs_walk walk;
	uint64_t vpn;
	uint64_t l2_miss_at;
	uint32_t level, levels;
	struct xlate *waiters;
	struct model_walk *hash_next;
	struct cs_model *m;
};

struct mem_op {
	struct cs_model *m;
	uint32_t tenant;
	uint64_t line; /* physical line number */
	bool write;
	bool stalled_once;
	uint32_t evictor;
	cs_access_done_fn done;
	void *arg;
	struct mem_op *next_waiter;
	struct mem_op *hash_next; /* the first miss of a line, in the MSHR table */
	struct cs_dram_req dram;
};

struct group {
	struct xlate x;
	struct warp *warp;
	uint32_t first, count;
	struct group *next_wait;
};

struct warp {
	struct cs_model *m;
	uint32_t tenant, sm;
	struct cs_task task;
	uint32_t phase; /* 0 reads, 1 writes */
	uint32_t outstanding;
	struct group groups[CS_TASK_MAX_LINES];
};

struct cs_tenant {
	uint32_t sm_first, sm_count;
	bool has_kernel;
	struct cs_kernel_stream gen;
	struct warp *warps;
	uint32_t nwarps;
	struct cs_tenant_counters c;
};

struct sm {
	struct cs_sa_cache *l1_tlb;
	uint32_t mshr_used;                 /* L1 TLB misses in flight */
	struct xlate *mshr_wait, *mshr_tail; /* misses waiting for an MSHR */
	uint32_t lines_used;                 /* data lines in flight */
	struct group *group_wait, *group_tail; /* translated, waiting for room */
	uint64_t issue_free_at;
};

/* A request from cs_model_access(). */
struct single_access {
	struct xlate x;
	struct cs_model *m;
	uint64_t va;
	bool write;
	cs_access_done_fn done;
	void *arg;
};

struct cs_model {
	struct cs_model_config cfg;
	uint32_t tenants, levels;
	struct cs_events *events;
	struct cs_mem_sched *sched;
	struct cs_dram *dram;
	struct cs_walkers *walkers;
	struct cs_sa_cache *l2_tlb[CS_MAX_TENANTS]; /* one shared, or one per tenant */
	struct cs_sa_cache *pwc, *l2;
	struct sm *sms;
	struct cs_tenant tenant[CS_MAX_TENANTS];
	struct model_walk *walk_hash[HASH_BUCKETS];
	struct mem_op *mshr_hash[HASH_BUCKETS];
	struct pool op_pool, walk_pool, single_pool;
	/* the write-back buffer, split among tenants like seed 004's L2: the
	 * write-backs each tenant's misses caused, in flight to DRAM, and its
	 * misses waiting for room */
	uint32_t writebacks[CS_MAX_TENANTS];
	struct mem_op *stalled[CS_MAX_TENANTS], *stalled_tail[CS_MAX_TENANTS];
	int error;
};

void cs_model_config_defaults(struct cs_model_config *cfg)
{
	*cfg = (struct cs_model_config){
		.sms = 30,
		.warps_per_sm = 8,
		.issue_width = 2,
		.page_shift = 12,
		.l1_tlb_entries = 32,
		.l1_tlb_mshrs = 12,
		.l1_mshrs = 64,
		.l2_tlb_entries = 1024,
		.l2_tlb_ways = 16,
		.l2_tlb_latency = 10,
		.pwc_entries = 128,
		.l2_bytes = 2u << 20,
		.l2_ways = 16,
		.l2_latency = 40,
		.l2_writebacks = 512,
	};
	cs_walkers_config_defaults(&cfg->walkers);
	cs_dram_config_defaults(&cfg->dram);
	cs_mem_sched_config_defaults(&cfg->sched);
}

static uint32_t hash64(uint64_t key)
{
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 32;
	return (uint32_t)(key % HASH_BUCKETS);
}

static void at(struct cs_model *m, uint64_t time, cs_event_fn fn, void *arg)
{
	if (cs_events_at(m->events, time, fn, m, arg))
		m->error = -ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* L2 cache and DRAM                                                        */

static void writeback(struct cs_model *m, uint32_t tenant, uint64_t line, uint32_t evictor);

static void l2_arrive(void *target, void *arg, uint64_t now);

static uint32_t writeback_room(const struct cs_model *m)
{
	uint32_t room = m->cfg.l2_writebacks / m->tenants;

	return room ? room : 1;
}

/* A write-back reached DRAM: its buffer entry lets stalled misses go on. */
static void writeback_done(void *arg, uint64_t now)
{
	struct mem_op *op = arg;
	struct cs_model *m = op->m;
	uint32_t t = op->evictor;

	pool_put(&m->op_pool, op);
	m->writebacks[t]--;
	while (m->stalled[t] && m->writebacks[t] < writeback_room(m)) {
		struct mem_op *next = m->stalled[t];

		m->stalled[t] = next->next_waiter;
		if (!m->stalled[t])
			m->stalled_tail[t] = NULL;
		next->next_waiter = NULL;
		l2_arrive(m, next, now);
	}
}

static void l2_fill(struct cs_model *m, uint32_t tenant, uint64_t line, bool dirty)
{
	struct cs_sa_victim victim;

	cs_sa_cache_insert(m->l2, tenant, line, dirty, &victim);
	if (victim.valid && victim.dirty)
		writeback(m, victim.tenant, victim.key, tenant);
}

/* Writes tenant's dirty line back; the evictor's buffer share holds it. */
static void writeback(struct cs_model *m, uint32_t tenant, uint64_t line, uint32_t evictor)
{
	struct mem_op *op = pool_get(&m->op_pool);

	if (!op) {
		m->error = -ENOMEM;
		return;
	}
	op->m = m;
	op->dram = (struct cs_dram_req){ .pa = line * CS_LINE_BYTES, .app = tenant, .write = true,
		                         .done = writeback_done, .arg = op };
	op->evictor = evictor;
	m->writebacks[evictor]++;
	cs_dram_submit(m->dram, &op->dram, cs_events_now(m->events));
}

static void fill_done(void *arg, uint64_t now)
{
	struct mem_op *first = arg, **slot, *op;
	struct cs_model *m = first->m;

	for (slot = &m->mshr_hash[hash64(first->line)]; *slot != first; slot = &(*slot)->hash_next)
		;
	*slot = first->hash_next;
	l2_fill(m, first->tenant, first->line, false);
	op = first;
	while (op) {
		struct mem_op *next = op->next_waiter;

		if (op->write)
			cs_sa_cache_lookup(m->l2, op->tenant, op->line, true);
		op->done(op->arg, now);
		pool_put(&m->op_pool, op);
		op = next;
	}
}

static void l2_arrive(void *target, void *arg, uint64_t now)
{
	struct cs_model *m = target;
	struct mem_op *op = arg, *pending;
	struct cs_tenant *t = &m->tenant[op->tenant];

	if (!op->stalled_once)
		t->c.l2_accesses++;
	if (cs_sa_cache_lookup(m->l2, op->tenant, op->line, op->write)) {
		op->done(op->arg, now);
		pool_put(&m->op_pool, op);
		return;
	}
	if (m->writebacks[op->tenant] >= writeback_room(m)) {
		/* a miss may evict a dirty line: wait for room in the buffer */
		uint32_t id = op->tenant;

		op->stalled_once = true;
		op->next_waiter = NULL;
		if (m->stalled_tail[id])
			m->stalled_tail[id]->next_waiter = op;
		else
			m->stalled[id] = op;
		m->stalled_tail[id] = op;
		return;
	}
	if (op->write) {
		/* full-line write: allocate without fetching */
		l2_fill(m, op->tenant, op->line, true);
		op->done(op->arg, now);
		pool_put(&m->op_pool, op);
		return;
	}
	for (pending = m->mshr_hash[hash64(op->line)]; pending; pending = pending->hash_next)
		if (pending->line == op->line && pending->tenant == op->tenant)
			break;
	if (pending) {
		op->next_waiter = pending->next_waiter;
		pending->next_waiter = op;
		return;
	}
	t->c.l2_misses++;
	cs_mem_sched_count_miss(m->sched, op->tenant);
	op->hash_next = m->mshr_hash[hash64(op->line)];
	m->mshr_hash[hash64(op->line)] = op;
	op->dram = (struct cs_dram_req){ .pa = op->line * CS_LINE_BYTES, .app = op->tenant,
		                         .write = false, .done = fill_done, .arg = op };
	cs_dram_submit(m->dram, &op->dram, now);
}

/* A line access through the L2 cache; done(arg, completion) later. */
static void mem_access(struct cs_model *m, uint32_t tenant, uint64_t pa, bool write,
                       cs_access_done_fn done, void *arg, uint64_t now)
{
	struct mem_op *op = pool_get(&m->op_pool);

	if (!op) {
		m->error = -ENOMEM;
		return;
	}
	*op = (struct mem_op){ .m = m, .tenant = tenant, .line = pa / CS_LINE_BYTES,
		               .write = write, .done = done, .arg = arg };
	at(m, now + m->cfg.l2_latency, l2_arrive, op);
}

/* ------------------------------------------------------------------------ */
/* Translation                                                              */

static uint64_t data_pa(const struct cs_model *m, uint32_t tenant, uint64_t va)
{
	(void)m;
	return ((uint64_t)tenant << TENANT_PA_SHIFT) + va;
}

/* Level 0 is the root; levels - 1 holds the leaf PTEs. */
static uint64_t table_prefix(const struct cs_model *m, uint64_t vpn, uint32_t level)
{
	return vpn >> (9 * (m->levels - level));
}

static uint64_t pte_pa(const struct cs_model *m, uint32_t tenant, uint64_t vpn, uint32_t level)
{
	uint64_t table = table_prefix(m, vpn, level);
	uint64_t index = (vpn >> (9 * (m->levels - 1 - level))) & 511;

	return ((uint64_t)tenant << TENANT_PA_SHIFT) + PT_REGION + ((uint64_t)level << 36) +
	       table * 4096 + index * 8;
}

/* The L2 TLB tenant's translations go to. */
static struct cs_sa_cache *l2_tlb(const struct cs_model *m, uint32_t tenant)
{
	return m->l2_tlb[m->cfg.l2_tlb_per_tenant ? tenant : 0];
}

static uint64_t pwc_key(uint64_t prefix, uint32_t level)
{
	return prefix << 3 | level;
}

static void walk_step(struct cs_model *m, struct model_walk *mw, uint64_t now);
static void release_mshr(struct cs_model *m, struct xlate *x, uint64_t now);

static void walk_step_done(void *arg, uint64_t now)
{
	struct model_walk *mw = arg;

	mw->level++;
	walk_step(mw->m, mw, now);
}

static void walk_begin(void *ctx, struct cs_walk *walk, uint64_t now)
{
	struct cs_model *m = ctx;
	struct model_walk *mw = container_of(walk, struct model_walk, walk);
	uint32_t level;

	/* longest prefix in the page-walk cache: the deepest table known */
	mw->level = 0;
	for (level = m->levels - 1; level >= 1; level--)
		if (cs_sa_cache_lookup(m->pwc, walk->tenant,
		                       pwc_key(table_prefix(m, mw->vpn, level), level), false)) {
			mw->level = level;
			break;
		}
	walk_step(m, mw, now);
}

static void walk_finish(struct cs_model *m, struct model_walk *mw, uint64_t now)
{
	struct cs_tenant *t = &m->tenant[mw->walk.tenant];
	struct model_walk **slot;
	struct xlate *x;
	uint32_t level;

	for (level = 1; level < m->levels; level++)
		cs_sa_cache_insert(m->pwc, mw->walk.tenant,
		                   pwc_key(table_prefix(m, mw->vpn, level), level), false, NULL);
	cs_sa_cache_insert(l2_tlb(m, mw->walk.tenant), mw->walk.tenant, mw->vpn, false, NULL);
	t->c.walks++;
	t->c.walk_latency_sum += now - mw->l2_miss_at;
	for (slot = &m->walk_hash[hash64(mw->vpn)]; *slot != mw; slot = &(*slot)->hash_next)
		;
	*slot = mw->hash_next;
	cs_walkers_finish(m->walkers, &mw->walk, now);
	x = mw->waiters;
	pool_put(&m->walk_pool, mw);
	while (x) {
		struct xlate *next = x->next;

		cs_sa_cache_insert(m->sms[x->sm].l1_tlb, x->tenant, x->vpn, false, NULL);
		release_mshr(m, x, now);
		x->done(x, now);
		x = next;
	}
}

static void walk_step(struct cs_model *m, struct model_walk *mw, uint64_t now)
{
	if (mw->level >= m->levels) {
		walk_finish(m, mw, now);
		return;
	}
	m->tenant[mw->walk.tenant].c.walk_memory_accesses++;
	mem_access(m, mw->walk.tenant, pte_pa(m, mw->walk.tenant, mw->vpn, mw->level), false,
	           walk_step_done, mw, now);
}

static void translate(struct cs_model *m, struct xlate *x, uint64_t now);

/* The L1 TLB miss of x is answered: its MSHR serves the next waiting miss. */
static void release_mshr(struct cs_model *m, struct xlate *x, uint64_t now)
{
	struct sm *sm = &m->sms[x->sm];
	struct xlate *next = sm->mshr_wait;

	x->holds_mshr = false;
	sm->mshr_used--;
	if (!next)
		return;
	sm->mshr_wait = next->next;
	if (!sm->mshr_wait)
		sm->mshr_tail = NULL;
	translate(m, next, now);
}

static void l2_tlb_lookup(void *target, void *arg, uint64_t now)
{
	struct cs_model *m = target;
	struct xlate *x = arg;
	struct cs_tenant *t = &m->tenant[x->tenant];
	struct model_walk *mw;

	t->c.l2_tlb_lookups++;
	if (cs_sa_cache_lookup(l2_tlb(m, x->tenant), x->tenant, x->vpn, false)) {
		t->c.l2_tlb_hits++;
		cs_sa_cache_insert(m->sms[x->sm].l1_tlb, x->tenant, x->vpn, false, NULL);
		release_mshr(m, x, now);
		x->done(x, now);
		return;
	}
	for (mw = m->walk_hash[hash64(x->vpn)]; mw; mw = mw->hash_next)
		if (mw->vpn == x->vpn && mw->walk.tenant == x->tenant)
			break;
	if (!mw) {
		mw = pool_get(&m->walk_pool);
		if (!mw) {
			m->error = -ENOMEM;
			return;
		}
		mw->m = m;
		mw->vpn = x->vpn;
		mw->levels = m->levels;
		mw->walk.tenant = x->tenant;
		mw->l2_miss_at = now;
		mw->hash_next = m->walk_hash[hash64(x->vpn)];
		m->walk_hash[hash64(x->vpn)] = mw;
		x->next = NULL;
		mw->waiters = x;
		cs_walkers_submit(m->walkers, &mw->walk, now);
		return;
	}
	x->next = mw->waiters;
	mw->waiters = x;
}

/* Translates x->vpn; x->done runs now (L1 TLB hit) or later. A miss holds
 * one of the SM's l1_tlb_mshrs until answered, or waits for one. */
static void translate(struct cs_model *m, struct xlate *x, uint64_t now)
{
	struct cs_tenant *t = &m->tenant[x->tenant];
	struct sm *sm = &m->sms[x->sm];

	t->c.l1_tlb_lookups++;
	if (cs_sa_cache_lookup(sm->l1_tlb, x->tenant, x->vpn, false)) {
		t->c.l1_tlb_hits++;
		x->done(x, now);
		return;
	}
	if (sm->mshr_used >= m->cfg.l1_tlb_mshrs) {
		t->c.l1_tlb_lookups--; /* looked up again when it gets an MSHR */
		x->next = NULL;
		if (sm->mshr_tail)
			sm->mshr_tail->next = x;
		else
			sm->mshr_wait = x;
		sm->mshr_tail = x;
		return;
	}
	sm->mshr_used++;
	x->holds_mshr = true;
	at(m, now + m->cfg.l2_tlb_latency, l2_tlb_lookup, x);
}

/* ------------------------------------------------------------------------ */
/* Warps running a kernel                                                   */

static void warp_next_task(struct warp *w, uint64_t now);
static void warp_issue(struct warp *w, uint64_t now);
static void warp_line_done(void *arg, uint64_t now);

static void issue_group(struct cs_model *m, struct group *g, uint64_t now)
{
	struct warp *w = g->warp;
	const uint64_t *va = w->phase == 0 ? w->task.read_va : w->task.write_va;
	uint32_t i;

	m->sms[w->sm].lines_used += g->count;
	for (i = g->first; i < g->first + g->count; i++)
		mem_access(m, w->tenant, data_pa(m, w->tenant, va[i]), w->phase == 1,
		           warp_line_done, w, now);
}

/* Issues the groups waiting for room in the SM's line budget, in order. */
static void drain_groups(struct cs_model *m, struct sm *sm, uint64_t now)
{
	while (sm->group_wait && sm->lines_used + sm->group_wait->count <= m->cfg.l1_mshrs) {
		struct group *g = sm->group_wait;

		sm->group_wait = g->next_wait;
		if (!sm->group_wait)
			sm->group_tail = NULL;
		issue_group(m, g, now);
	}
}

static void warp_line_done(void *arg, uint64_t now)
{
	struct warp *w = arg;
	struct cs_model *m = w->m;

	m->sms[w->sm].lines_used--;
	drain_groups(m, &m->sms[w->sm], now);
	if (--w->outstanding)
		return;
	if (w->phase == 0) {
		w->phase = 1;
		warp_issue(w, now);
		return;
	}
	m->tenant[w->tenant].c.instructions += w->task.instructions;
	m->tenant[w->tenant].c.tasks++;
	cs_mem_sched_count_instructions(m->sched, w->tenant, w->task.instructions);
	warp_next_task(w, now);
}

static void group_translated(struct xlate *x, uint64_t now)
{
	struct group *g = container_of(x, struct group, x);
	struct cs_model *m = g->warp->m;
	struct sm *sm = &m->sms[g->warp->sm];

	if (sm->group_wait || sm->lines_used + g->count > m->cfg.l1_mshrs) {
		g->next_wait = NULL;
		if (sm->group_tail)
			sm->group_tail->next_wait = g;
		else
			sm->group_wait = g;
		sm->group_tail = g;
		return;
	}
	issue_group(m, g, now);
}

static void warp_issue(struct warp *w, uint64_t now)
{
	struct cs_model *m = w->m;
	const uint64_t *va = w->phase == 0 ? w->task.read_va : w->task.write_va;
	uint32_t n = w->phase == 0 ? w->task.reads : w->task.writes, i, groups = 0;

	if (n == 0) {
		/* nothing to access in this phase: as if its last line completed */
		w->outstanding = 1;
		m->sms[w->sm].lines_used++;
		warp_line_done(w, now);
		return;
	}
	/* coalesce consecutive lines of one page into one translation */
	for (i = 0; i < n; i++) {
		uint64_t vpn = va[i] >> m->cfg.page_shift;

		if (groups && w->groups[groups - 1].x.vpn == vpn) {
			w->groups[groups - 1].count++;
			continue;
		}
		w->groups[groups++] = (struct group){
			.x = { .tenant = w->tenant, .sm = w->sm, .vpn = vpn, .done = group_translated },
			.warp = w, .first = i, .count = 1,
		};
	}
	w->outstanding = n;
	for (i = 0; i < groups; i++)
		translate(m, &w->groups[i].x, now);
}

static void warp_compute_done(void *target, void *arg, uint64_t now)
{
	struct warp *w = arg;

	(void)target;
	w->phase = 0;
	warp_issue(w, now);
}

static void warp_next_task(struct warp *w, uint64_t now)
{
	struct cs_model *m = w->m;
	struct cs_tenant *t = &m->tenant[w->tenant];
	struct sm *sm = &m->sms[w->sm];
	uint64_t start, cycles;

	if (!cs_kernel_stream_next(&t->gen, &w->task)) {
		cs_kernel_stream_restart(&t->gen);
		t->c.launches++;
		if (!cs_kernel_stream_next(&t->gen, &w->task))
			return;
	}
	start = sm->issue_free_at > now ? sm->issue_free_at : now;
	cycles = (w->task.instructions + m->cfg.issue_width - 1) / m->cfg.issue_width;
	sm->issue_free_at = start + cycles;
	at(m, start + cycles, warp_compute_done, w);
}

static void warp_start(void *target, void *arg, uint64_t now)
{
	(void)target;
	warp_next_task(arg, now);
}

/* ------------------------------------------------------------------------ */
/* Single requests                                                          */

static void single_data_done(void *arg, uint64_t now)
{
	struct single_access *a = arg;

	a->done(a->arg, now);
	pool_put(&a->m->single_pool, a);
}

static void single_translated(struct xlate *x, uint64_t now)
{
	struct single_access *a = container_of(x, struct single_access, x);

	mem_access(a->m, x->tenant, data_pa(a->m, x->tenant, a->va), a->write, single_data_done, a,
	           now);
}

static void single_issue(void *target, void *arg, uint64_t now)
{
	(void)target;
	struct single_access *a = arg;

	translate(a->m, &a->x, now);
}

int cs_model_access(struct cs_model *m, uint32_t tenant, uint32_t sm, uint64_t va, bool write,
                    uint64_t issue_time, cs_access_done_fn done, void *arg)
{
	struct single_access *a;

	if (tenant >= m->tenants || sm >= m->tenant[tenant].sm_count || !done)
		return -EINVAL;
	a = pool_get(&m->single_pool);
	if (!a)
		return -ENOMEM;
	*a = (struct single_access){
		.x = { .tenant = tenant, .sm = m->tenant[tenant].sm_first + sm,
		       .vpn = va >> m->cfg.page_shift, .done = single_translated },
		.m = m, .va = va, .write = write, .done = done, .arg = arg,
	};
	if (cs_events_at(m->events, issue_time, single_issue, m, a)) {
		pool_put(&m->single_pool, a);
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */

struct cs_model *cs_model_create(const struct cs_model_config *cfg, uint32_t tenants,
                                 const uint32_t *sms_per_tenant)
{
	struct cs_model *m;
	uint32_t t, s, first = 0, l2_lines;

	if (!cfg || tenants == 0 || tenants > CS_MAX_TENANTS || cfg->sms < tenants ||
	    (cfg->page_shift != 12 && cfg->page_shift != 16 && cfg->page_shift != 21) ||
	    cfg->issue_width == 0 ||
	    cfg->l1_tlb_entries == 0 || cfg->l1_tlb_mshrs == 0 ||
	    cfg->l1_mshrs < CS_TASK_MAX_LINES || cfg->l2_tlb_ways == 0 || cfg->pwc_entries == 0 ||
	    cfg->l2_ways == 0 || cfg->l2_writebacks == 0 || cfg->l2_bytes < CS_LINE_BYTES * cfg->l2_ways)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cfg = *cfg;
	m->tenants = tenants;
	m->levels = cfg->page_shift == 21 ? 3 : 4;
	m->op_pool.size = sizeof(struct mem_op);
	m->walk_pool.size = sizeof(struct model_walk);
	m->single_pool.size = sizeof(struct single_access);
	l2_lines = cfg->l2_bytes / CS_LINE_BYTES;
	m->events = cs_events_create();
	m->sched = cs_mem_sched_create(&cfg->sched, tenants);
	m->walkers = cs_walkers_create(&cfg->walkers, tenants, walk_begin, m);
	for (t = 0; t < (cfg->l2_tlb_per_tenant ? tenants : 1); t++) {
		m->l2_tlb[t] = cs_sa_cache_create(cfg->l2_tlb_entries / cfg->l2_tlb_ways,
		                                  cfg->l2_tlb_ways);
		if (!m->l2_tlb[t])
			goto fail;
	}
	m->pwc = cs_sa_cache_create(1, cfg->pwc_entries);
	m->l2 = cs_sa_cache_create(l2_lines / cfg->l2_ways, cfg->l2_ways);
	m->sms = calloc(cfg->sms, sizeof(*m->sms));
	if (!m->events || !m->sched || !m->walkers || !m->pwc || !m->l2 || !m->sms)
		goto fail;
	m->dram = cs_dram_create(&cfg->dram, m->events, m->sched);
	if (!m->dram)
		goto fail;
	for (s = 0; s < cfg->sms; s++) {
		m->sms[s].l1_tlb = cs_sa_cache_create(1, cfg->l1_tlb_entries);
		if (!m->sms[s].l1_tlb)
			goto fail;
	}
	for (t = 0; t < tenants; t++) {
		uint32_t count = sms_per_tenant ? sms_per_tenant[t]
		                                : cfg->sms / tenants + (t < cfg->sms % tenants);

		if (count == 0 || first + count > cfg->sms)
			goto fail;
		m->tenant[t].sm_first = first;
		m->tenant[t].sm_count = count;
		first += count;
	}
	return m;
fail:
	cs_model_destroy(m);
	return NULL;
}

void cs_model_destroy(struct cs_model *m)
{
	uint32_t s, t;

	if (!m)
		return;
	pool_release(&m->op_pool);
	pool_release(&m->walk_pool);
	pool_release(&m->single_pool);
	for (t = 0; t < m->tenants; t++)
		free(m->tenant[t].warps);
	for (s = 0; m->sms && s < m->cfg.sms; s++)
		cs_sa_cache_destroy(m->sms[s].l1_tlb);
	free(m->sms);
	cs_sa_cache_destroy(m->l2);
	cs_sa_cache_destroy(m->pwc);
	for (t = 0; t < CS_MAX_TENANTS; t++)
		cs_sa_cache_destroy(m->l2_tlb[t]);
	cs_walkers_destroy(m->walkers);
	cs_dram_destroy(m->dram);
	cs_mem_sched_destroy(m->sched);
	cs_events_destroy(m->events);
	free(m);
}

int cs_model_attach_kernel(struct cs_model *m, uint32_t tenant, uint32_t kernel,
                           const uint64_t *args, uint32_t nargs)
{
	struct cs_tenant *t;
	uint32_t i;
	int ret;

	if (tenant >= m->tenants || m->tenant[tenant].has_kernel)
		return -EINVAL;
	t = &m->tenant[tenant];
	ret = cs_kernel_stream_init(&t->gen, kernel, args, nargs);
	if (ret)
		return ret;
	t->nwarps = t->sm_count * m->cfg.warps_per_sm;
	t->warps = calloc(t->nwarps, sizeof(*t->warps));
	if (!t->warps)
		return -ENOMEM;
	t->has_kernel = true;
	t->c.launches = 1;
	for (i = 0; i < t->nwarps; i++) {
		t->warps[i].m = m;
		t->warps[i].tenant = tenant;
		t->warps[i].sm = t->sm_first + i % t->sm_count;
		if (cs_events_at(m->events, cs_events_now(m->events), warp_start, m, &t->warps[i]))
			return -ENOMEM;
	}
	return 0;
}

int cs_model_run_until(struct cs_model *m, uint64_t until)
{
	while (!m->error && cs_events_run_one(m->events, until))
		;
	return m->error;
}

uint64_t cs_model_now(const struct cs_model *m)
{
	return cs_events_now(m->events);
}

void cs_model_counters(const struct cs_model *m, uint32_t tenant, struct cs_tenant_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (tenant >= m->tenants)
		return;
	*out = m->tenant[tenant].c;
	out->l2_tlb_entries_held = cs_sa_cache_occupancy(l2_tlb(m, tenant), tenant);
	out->sched_epochs = cs_mem_sched_epochs(m->sched);
	out->sched_epochs_on_top = cs_mem_sched_epochs_on_top(m->sched, tenant);
	cs_walkers_stats(m->walkers, tenant, &out->walkers);
	cs_dram_app_stats(m->dram, tenant, &out->dram);
}

static double ratio(double num, double den)
{
	return den > 0 ? num / den : 0.0;
}

void cs_model_figures(const struct cs_model *m, uint32_t tenant, struct cs_tenant_figures *out)
{
	struct cs_tenant_counters c;
	uint64_t cycles = cs_events_now(m->events), accesses;

	cs_model_counters(m, tenant, &c);
	memset(out, 0, sizeof(*out));
	accesses = c.dram.reads + c.dram.writes;
	out->cycles = cycles;
	out->instructions = c.instructions;
	out->walks = c.walks;
	out->stolen_walks = c.walkers.stolen;
	out->ipc = ratio((double)c.instructions, (double)cycles);
	out->avg_walk_latency = ratio((double)c.walk_latency_sum, (double)c.walks);
	out->avg_walk_queueing = ratio((double)c.walkers.queue_wait_sum, (double)c.walkers.started);
	out->interleaving = ratio((double)c.walkers.foreign_waited_sum, (double)c.walkers.started);
	out->interleaving_max = c.walkers.foreign_waited_max;
	out->l2_tlb_hit_rate = ratio((double)c.l2_tlb_hits, (double)c.l2_tlb_lookups);
	out->mpki = ratio(1000.0 * (double)c.l2_misses, (double)c.instructions);
	out->bandwidth = ratio((double)accesses * m->cfg.dram.line_bytes, (double)cycles);
	out->bandwidth_share = ratio(out->bandwidth, cs_dram_peak_bytes_per_cycle(m->dram));
	out->row_hit_rate = ratio((double)c.dram.row_hits, (double)accesses);
	out->walker_share = ratio((double)c.walkers.busy_cycles,
	                          (double)cycles * m->cfg.walkers.walkers);
	out->l2_tlb_share = ratio((double)c.l2_tlb_entries_held, (double)m->cfg.l2_tlb_entries);
	out->sched_top_share = ratio((double)c.sched_epochs_on_top, (double)c.sched_epochs);
}
