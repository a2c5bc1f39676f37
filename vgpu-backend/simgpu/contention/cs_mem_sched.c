// SPDX-License-Identifier: MIT
/* cs_mem_sched.c - DRAM scheduling policies and their epoch monitor
 * (see cs_mem_sched.h). */
#include "cs_mem_sched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Weight of the newest epoch in the measures: a warp task commits its
 * instructions at its end, hundreds of cycles after its misses, so one
 * 1024-cycle epoch alone is noisy. */
#define SMOOTHING 0.25

struct app_monitor {
	uint64_t instructions, misses, bytes; /* this epoch */
	double avg_instructions, avg_misses;  /* per epoch, smoothed */
	double mpki, bandwidth;               /* the measures, smoothed */
	uint64_t epochs_on_top;
};

struct cs_mem_sched {
	struct cs_mem_sched_config cfg;
	uint32_t apps;
	uint32_t turn; /* RR */
	uint64_t epochs;
	uint64_t epoch_start;
	uint32_t order[CS_MAX_TENANTS]; /* app ids, highest priority first */
	uint32_t rank[CS_MAX_TENANTS];
	struct app_monitor app[CS_MAX_TENANTS];
};

void cs_mem_sched_config_defaults(struct cs_mem_sched_config *cfg)
{
	*cfg = (struct cs_mem_sched_config){ .policy = CS_SCHED_FRFCFS, .epoch_cycles = 1024,
		                             .priority = { 0, 1, 2, 3 } };
}

static void set_order(struct cs_mem_sched *s, const uint32_t *order)
{
	uint32_t i;

	memcpy(s->order, order, s->apps * sizeof(*order));
	for (i = 0; i < s->apps; i++)
		s->rank[s->order[i]] = i;
}

struct cs_mem_sched *cs_mem_sched_create(const struct cs_mem_sched_config *cfg, uint32_t apps)
{
	struct cs_mem_sched *s;
	uint32_t order[CS_MAX_TENANTS], i, seen = 0;

	if (!cfg || apps == 0 || apps > CS_MAX_TENANTS)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	if (s->cfg.epoch_cycles == 0)
		s->cfg.epoch_cycles = 1024;
	s->apps = apps;
	if (cfg->policy == CS_SCHED_PRIORITY) {
		/* a permutation of 0..apps-1, else the identity */
		for (i = 0; i < apps; i++) {
			if (cfg->priority[i] >= apps || (seen & (1u << cfg->priority[i])))
				break;
			seen |= 1u << cfg->priority[i];
			order[i] = cfg->priority[i];
		}
		if (i < apps)
			for (i = 0; i < apps; i++)
				order[i] = i;
	} else {
		for (i = 0; i < apps; i++)
			order[i] = i;
	}
	set_order(s, order);
	return s;
}

void cs_mem_sched_destroy(struct cs_mem_sched *s)
{
	free(s);
}

/* Ascending by key (ties: lower app id first). */
static void order_by(struct cs_mem_sched *s, const double *key)
{
	uint32_t order[CS_MAX_TENANTS], i, j;

	for (i = 0; i < s->apps; i++)
		order[i] = i;
	for (i = 1; i < s->apps; i++)
		for (j = i; j > 0 && key[order[j]] < key[order[j - 1]]; j--) {
			uint32_t swap = order[j];

			order[j] = order[j - 1];
			order[j - 1] = swap;
		}
	set_order(s, order);
}

static void end_epoch(struct cs_mem_sched *s)
{
	double key[CS_MAX_TENANTS];
	uint32_t i;

	for (i = 0; i < s->apps; i++) {
		struct app_monitor *a = &s->app[i];

		a->avg_instructions += SMOOTHING * ((double)a->instructions - a->avg_instructions);
		a->avg_misses += SMOOTHING * ((double)a->misses - a->avg_misses);
		if (a->instructions)
			a->mpki = 1000.0 * a->avg_misses / a->avg_instructions;
		a->bandwidth += SMOOTHING *
		                ((double)a->bytes / s->cfg.epoch_cycles - a->bandwidth);
		a->instructions = a->misses = a->bytes = 0;
		key[i] = s->cfg.policy == CS_SCHED_ITS ? a->mpki : a->bandwidth;
	}
	if (s->cfg.policy == CS_SCHED_ITS || s->cfg.policy == CS_SCHED_WEIS)
		order_by(s, key);
	s->app[s->order[0]].epochs_on_top++;
	s->epochs++;
}

static size_t oldest(const struct cs_sched_view *view, size_t n, bool hits_only, bool any_app,
                     uint32_t app)
{
	size_t i, best = SIZE_MAX;

	for (i = 0; i < n; i++) {
		if (hits_only && !view[i].row_hit)
			continue;
		if (!any_app && view[i].app != app)
			continue;
		if (best == SIZE_MAX || view[i].arrival < view[best].arrival)
			best = i;
	}
	return best;
}

size_t cs_mem_sched_pick(struct cs_mem_sched *s, const struct cs_sched_view *view, size_t n,
                         uint64_t now)
{
	size_t pick;
	uint32_t i;

	while (now >= s->epoch_start + s->cfg.epoch_cycles) {
		end_epoch(s);
		s->epoch_start += s->cfg.epoch_cycles;
	}
	pick = oldest(view, n, true, true, 0);
	if (pick != SIZE_MAX)
		return pick;
	switch (s->cfg.policy) {
	case CS_SCHED_FRFCFS:
		return oldest(view, n, false, true, 0);
	case CS_SCHED_RR_FRFCFS:
		for (i = 0; i < s->apps; i++) {
			uint32_t app = (s->turn + i) % s->apps;

			pick = oldest(view, n, false, false, app);
			if (pick != SIZE_MAX) {
				s->turn = (app + 1) % s->apps;
				return pick;
			}
		}
		return 0;
	case CS_SCHED_PRIORITY:
	case CS_SCHED_ITS:
	case CS_SCHED_WEIS:
		for (i = 0; i < s->apps; i++) {
			pick = oldest(view, n, false, false, s->order[i]);
			if (pick != SIZE_MAX)
				return pick;
		}
		return 0;
	}
	return 0;
}

void cs_mem_sched_count_instructions(struct cs_mem_sched *s, uint32_t app, uint64_t n)
{
	if (app < s->apps)
		s->app[app].instructions += n;
}

void cs_mem_sched_count_miss(struct cs_mem_sched *s, uint32_t app)
{
	if (app < s->apps)
		s->app[app].misses++;
}

void cs_mem_sched_count_bytes(struct cs_mem_sched *s, uint32_t app, uint64_t bytes)
{
	if (app < s->apps)
		s->app[app].bytes += bytes;
}

uint32_t cs_mem_sched_rank(const struct cs_mem_sched *s, uint32_t app)
{
	return app < s->apps ? s->rank[app] : UINT32_MAX;
}

uint64_t cs_mem_sched_epochs(const struct cs_mem_sched *s)
{
	return s->epochs;
}

uint64_t cs_mem_sched_epochs_on_top(const struct cs_mem_sched *s, uint32_t app)
{
	return app < s->apps ? s->app[app].epochs_on_top : 0;
}

static const char *const policy_names[] = {
	[CS_SCHED_FRFCFS] = "frfcfs", [CS_SCHED_RR_FRFCFS] = "rr", [CS_SCHED_PRIORITY] = "prio",
	[CS_SCHED_ITS] = "its",       [CS_SCHED_WEIS] = "weis",
};

const char *cs_mem_policy_name(enum cs_mem_policy policy)
{
	return (unsigned)policy < 5 ? policy_names[policy] : "?";
}

int cs_mem_policy_parse(const char *name, enum cs_mem_policy *policy)
{
	unsigned i;

	for (i = 0; i < 5; i++)
		if (strcmp(name, policy_names[i]) == 0) {
			*policy = (enum cs_mem_policy)i;
			return 0;
		}
	return -EINVAL;
}
