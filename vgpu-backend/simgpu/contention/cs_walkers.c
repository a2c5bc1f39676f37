// SPDX-License-Identifier: MIT
/* cs_walkers.c - page-table walker pool and its policies (see cs_walkers.h). */
#include "cs_walkers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cs_sa_cache.h" /* CS_MAX_TENANTS */

struct walk_fifo {
	struct cs_walk *head, *tail;
	uint32_t count;
};

struct walker {
	uint32_t owner;
	bool busy;
	bool is_stolen; /* DWS++: the last walk it served was stolen */
	bool has_last;
	uint32_t last_tenant;
	uint64_t last_start, last_end;
	struct walk_fifo queue;
};

struct tenant_walks {
	uint32_t pending;       /* queued + backlog */
	uint32_t owned;         /* walkers owned (partitioned policies) */
	uint32_t enq_epoch, enq_last;
	bool epoch_done;
	uint64_t foreign_started; /* see the interleaving note in the header */
	struct walk_fifo backlog;
	struct cs_walkers_stats stats;
};

struct cs_walkers {
	struct cs_walkers_config cfg;
	uint32_t tenants;
	uint32_t per_walker_entries;
	uint32_t epoch_count;
	cs_walk_start_fn start;
	void *ctx;
	struct walk_fifo shared_queue, shared_backlog;
	struct tenant_walks tenant[CS_MAX_TENANTS];
	struct walker walker[];
};

void cs_walkers_config_defaults(struct cs_walkers_config *cfg)
{
	*cfg = (struct cs_walkers_config){
		.policy = CS_WALKERS_SHARED,
		.walkers = 16,
		.queue_entries = 192,
		.epoch_walks = 200,
		.queue_thres = 0.51,
		.diff_thres = { 0.4, 0.6, 0.8, 0.9 },
	};
}

static void fifo_push(struct walk_fifo *f, struct cs_walk *walk)
{
	walk->next = NULL;
	if (f->tail)
		f->tail->next = walk;
	else
		f->head = walk;
	f->tail = walk;
	f->count++;
}

static struct cs_walk *fifo_pop(struct walk_fifo *f)
{
	struct cs_walk *walk = f->head;

	if (!walk)
		return NULL;
	f->head = walk->next;
	if (!f->head)
		f->tail = NULL;
	f->count--;
	walk->next = NULL;
	return walk;
}

static bool partitioned(const struct cs_walkers *w)
{
	return w->cfg.policy != CS_WALKERS_SHARED;
}

struct cs_walkers *cs_walkers_create(const struct cs_walkers_config *cfg, uint32_t tenants,
                                     cs_walk_start_fn start, void *ctx)
{
	struct cs_walkers *w;
	uint32_t k;

	if (!cfg || cfg->walkers == 0 || cfg->queue_entries == 0 || tenants == 0 ||
	    tenants > CS_MAX_TENANTS || !start)
		return NULL;
	if (cfg->policy != CS_WALKERS_SHARED && cfg->walkers < tenants)
		return NULL;
	w = calloc(1, sizeof(*w) + cfg->walkers * sizeof(struct walker));
	if (!w)
		return NULL;
	w->cfg = *cfg;
	if (w->cfg.epoch_walks == 0)
		w->cfg.epoch_walks = 200;
	w->tenants = tenants;
	w->start = start;
	w->ctx = ctx;
	w->per_walker_entries = cfg->queue_entries / cfg->walkers;
	if (w->per_walker_entries == 0)
		w->per_walker_entries = 1;
	for (k = 0; k < cfg->walkers; k++) {
		/* contiguous, equal blocks; the first tenants get any remainder */
		w->walker[k].owner = (uint32_t)((uint64_t)k * tenants / cfg->walkers);
		w->tenant[w->walker[k].owner].owned++;
	}
	return w;
}

void cs_walkers_destroy(struct cs_walkers *w)
{
	free(w);
}

/* The walker eligible for tenant's walks under this policy. */
static bool eligible(const struct cs_walkers *w, uint32_t k, uint32_t tenant)
{
	return !partitioned(w) || w->walker[k].owner == tenant;
}

/* The owned walker of tenant with the longest queue (most = true) or the
 * shortest (most = false); UINT32_MAX if it owns none. */
static uint32_t owned_walker(const struct cs_walkers *w, uint32_t tenant, bool most)
{
	uint32_t k, best = UINT32_MAX;

	for (k = 0; k < w->cfg.walkers; k++) {
		if (w->walker[k].owner != tenant)
			continue;
		if (best == UINT32_MAX ||
		    (most ? w->walker[k].queue.count > w->walker[best].queue.count
		          : w->walker[k].queue.count < w->walker[best].queue.count))
			best = k;
	}
	return best;
}

/* Moves the oldest backlogged walk into a free queue entry, if any. */
static void admit_backlog(struct cs_walkers *w, uint32_t tenant)
{
	if (!partitioned(w)) {
		if (w->shared_backlog.count && w->shared_queue.count < w->cfg.queue_entries)
			fifo_push(&w->shared_queue, fifo_pop(&w->shared_backlog));
		return;
	}
	while (w->tenant[tenant].backlog.count) {
		uint32_t k = owned_walker(w, tenant, false);

		if (k == UINT32_MAX || w->walker[k].queue.count >= w->per_walker_entries)
			return;
		fifo_push(&w->walker[k].queue, fifo_pop(&w->tenant[tenant].backlog));
	}
}

static void count_arrival(struct cs_walkers *w, uint32_t tenant)
{
	uint32_t t;

	w->tenant[tenant].enq_epoch++;
	if (++w->epoch_count < w->cfg.epoch_walks)
		return;
	w->epoch_count = 0;
	for (t = 0; t < w->tenants; t++) {
		w->tenant[t].enq_last = w->tenant[t].enq_epoch;
		w->tenant[t].enq_epoch = 0;
		w->tenant[t].epoch_done = true;
	}
}

void cs_walkers_submit(struct cs_walkers *w, struct cs_walk *walk, uint64_t now);
static void dispatch_idle(struct cs_walkers *w, uint64_t now);

void cs_walkers_submit(struct cs_walkers *w, struct cs_walk *walk, uint64_t now)
{
	struct tenant_walks *t = &w->tenant[walk->tenant];

	walk->arrival = now;
	walk->foreign_mark = t->foreign_started;
	walk->foreign_waited = 0;
	walk->stolen = false;
	t->pending++;
	count_arrival(w, walk->tenant);
	if (!partitioned(w)) {
		if (w->shared_queue.count < w->cfg.queue_entries)
			fifo_push(&w->shared_queue, walk);
		else
			fifo_push(&w->shared_backlog, walk);
	} else {
		uint32_t k = owned_walker(w, walk->tenant, false);

		if (!t->backlog.count && w->walker[k].queue.count < w->per_walker_entries)
			fifo_push(&w->walker[k].queue, walk);
		else
			fifo_push(&t->backlog, walk);
	}
	dispatch_idle(w, now);
}

/* Takes the head of walker k's queue (refilling it from the backlog). */
static struct cs_walk *take_from(struct cs_walkers *w, uint32_t k)
{
	struct cs_walk *walk = fifo_pop(&w->walker[k].queue);

	if (walk)
		admit_backlog(w, w->walker[k].owner);
	return walk;
}

/* The owner's next walk for walker k: its own queue, else a sibling's. */
static struct cs_walk *take_owned(struct cs_walkers *w, uint32_t k)
{
	uint32_t sibling;

	if (w->walker[k].queue.count)
		return take_from(w, k);
	sibling = owned_walker(w, w->walker[k].owner, true);
	if (sibling != UINT32_MAX && w->walker[sibling].queue.count)
		return take_from(w, sibling);
	return NULL;
}

/* The tenant other than owner with the most pending walks, or UINT32_MAX. */
static uint32_t steal_target(const struct cs_walkers *w, uint32_t owner)
{
	uint32_t t, best = UINT32_MAX;

	for (t = 0; t < w->tenants; t++)
		if (t != owner && w->tenant[t].pending &&
		    (best == UINT32_MAX || w->tenant[t].pending > w->tenant[best].pending))
			best = t;
	return best;
}

static struct cs_walk *steal(struct cs_walkers *w, uint32_t target)
{
	uint32_t k = owned_walker(w, target, true);

	if (k == UINT32_MAX || !w->walker[k].queue.count)
		return NULL;
	return take_from(w, k);
}

/* DWS++: may walker k steal from target although its owner has walks
 * pending? */
static bool dwspp_may_steal(const struct cs_walkers *w, uint32_t k, uint32_t target)
{
	const struct walker *walker = &w->walker[k];
	const struct tenant_walks *own = &w->tenant[walker->owner], *other = &w->tenant[target];
	double occupancy = (double)walker->queue.count / w->per_walker_entries;
	double ratio, diff, thres;
	uint32_t own_enq, other_enq, low, high;

	if (walker->is_stolen || occupancy > w->cfg.queue_thres)
		return false;
	if (other->pending <= own->pending)
		return false;
	own_enq = own->epoch_done ? own->enq_last : own->enq_epoch;
	other_enq = other->epoch_done ? other->enq_last : other->enq_epoch;
	low = own_enq < other_enq ? own_enq : other_enq;
	high = own_enq < other_enq ? other_enq : own_enq;
	if (low == 0)
		return false;
	ratio = (double)high / low;
	if (ratio <= 1.5)
		thres = w->cfg.diff_thres[0];
	else if (ratio <= 2.0)
		thres = w->cfg.diff_thres[1];
	else if (ratio <= 3.0)
		thres = w->cfg.diff_thres[2];
	else if (ratio <= 4.0)
		thres = w->cfg.diff_thres[3];
	else
		return false;
	diff = (double)(other->pending - own->pending) /
	       ((double)own->owned * w->per_walker_entries);
	return diff > thres;
}

static struct cs_walk *choose(struct cs_walkers *w, uint32_t k)
{
	uint32_t owner = w->walker[k].owner, target;

	switch (w->cfg.policy) {
	case CS_WALKERS_SHARED: {
		struct cs_walk *walk = fifo_pop(&w->shared_queue);

		if (walk)
			admit_backlog(w, 0);
		return walk;
	}
	case CS_WALKERS_STATIC:
		return take_owned(w, k);
	case CS_WALKERS_DWS:
		if (w->tenant[owner].pending)
			return take_owned(w, k);
		target = steal_target(w, owner);
		return target == UINT32_MAX ? NULL : steal(w, target);
	case CS_WALKERS_DWSPP:
		target = steal_target(w, owner);
		if (w->tenant[owner].pending) {
			if (target != UINT32_MAX && dwspp_may_steal(w, k, target)) {
				struct cs_walk *walk = steal(w, target);

				if (walk)
					return walk;
			}
			return take_owned(w, k);
		}
		return target == UINT32_MAX ? NULL : steal(w, target);
	}
	return NULL;
}

static void start_walk(struct cs_walkers *w, uint32_t k, struct cs_walk *walk, uint64_t now)
{
	struct walker *walker = &w->walker[k];
	struct tenant_walks *t = &w->tenant[walk->tenant];
	uint32_t waited = (uint32_t)(t->foreign_started - walk->foreign_mark), u;

	if (walker->has_last && walker->last_tenant != walk->tenant &&
	    walker->last_start <= walk->arrival && walker->last_end > walk->arrival)
		waited++;
	walk->foreign_waited = waited;
	walk->walker = k;
	walk->start = now;
	walk->stolen = partitioned(w) && walker->owner != walk->tenant;
	walker->is_stolen = walk->stolen;
	walker->busy = true;
	walker->has_last = true;
	walker->last_tenant = walk->tenant;
	walker->last_start = now;
	t->pending--;
	t->stats.started++;
	t->stats.stolen += walk->stolen;
	t->stats.foreign_waited_sum += waited;
	if (waited > t->stats.foreign_waited_max)
		t->stats.foreign_waited_max = waited;
	t->stats.queue_wait_sum += now - walk->arrival;
	for (u = 0; u < w->tenants; u++)
		if (u != walk->tenant && eligible(w, k, u))
			w->tenant[u].foreign_started++;
	w->start(w->ctx, walk, now);
}

static void dispatch_idle(struct cs_walkers *w, uint64_t now)
{
	uint32_t k;

	for (k = 0; k < w->cfg.walkers; k++) {
		struct cs_walk *walk;

		if (w->walker[k].busy)
			continue;
		walk = choose(w, k);
		if (walk)
			start_walk(w, k, walk, now);
	}
}

void cs_walkers_finish(struct cs_walkers *w, struct cs_walk *walk, uint64_t now)
{
	struct walker *walker = &w->walker[walk->walker];

	walker->busy = false;
	walker->last_end = now;
	w->tenant[walk->tenant].stats.busy_cycles += now - walk->start;
	dispatch_idle(w, now);
}

void cs_walkers_stats(const struct cs_walkers *w, uint32_t tenant, struct cs_walkers_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (tenant < w->tenants)
		*out = w->tenant[tenant].stats;
}

uint32_t cs_walkers_pending(const struct cs_walkers *w, uint32_t tenant)
{
	return tenant < w->tenants ? w->tenant[tenant].pending : 0;
}

static const char *const policy_names[] = {
	[CS_WALKERS_SHARED] = "shared",
	[CS_WALKERS_STATIC] = "static",
	[CS_WALKERS_DWS] = "dws",
	[CS_WALKERS_DWSPP] = "dws++",
};

const char *cs_walker_policy_name(enum cs_walker_policy policy)
{
	return (unsigned)policy < 4 ? policy_names[policy] : "?";
}

int cs_walker_policy_parse(const char *name, enum cs_walker_policy *policy)
{
	unsigned i;

	for (i = 0; i < 4; i++)
		if (strcmp(name, policy_names[i]) == 0) {
			*policy = (enum cs_walker_policy)i;
			return 0;
		}
	return -EINVAL;
}
