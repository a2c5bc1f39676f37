/* SPDX-License-Identifier: MIT */
/*
 * cs_walkers.h - the shared page-table walk subsystem: a pool of walkers, a
 * walk queue, and the policy that decides which queued walk a free walker
 * serves (seed 003 §V-§VI).
 *
 * Policies:
 *  SHARED  one FIFO walk queue; any free walker takes its head (baseline).
 *  STATIC  walkers split equally among tenants, the queue split into
 *          per-walker queues; a walker serves only its owner's walks.
 *  DWS     as STATIC, but a free walker whose owner has no pending walk
 *          steals the head of the longest queue of the tenant with the most
 *          pending walks.
 *  DWS++   as DWS, and a walker may also steal while its owner has walks
 *          pending, when it did not just serve a stolen walk, its own queue is
 *          at most QUEUE_THRES full, and (pending of the other tenant - pending
 *          of the owner) / (the owner's queue entries) > DIFF_THRES(R), R the
 *          larger over the smaller of the two tenants' walk arrivals in the
 *          last epoch (epoch_walks arrivals): R <= 1.5, 2, 3, 4 -> the four
 *          diff_thres values; R > 4 (or a tenant with none) -> no stealing.
 *
 * A walk that finds its queue(s) full waits in its tenant's backlog (the L2
 * TLB miss queue) and enters in order as entries free; it counts as pending.
 *
 * Interleaving (seed 003 Table III): the walks of other tenants a walk waits
 * for = walks of other tenants that start, between its arrival and its own
 * start, on walkers that could serve it (all walkers under SHARED, its
 * tenant's under the partitioned policies), plus one if the walker that
 * serves it was busy with another tenant's walk when it arrived. Under DWS
 * the first term is 0 (a walker steals only when its owner has nothing
 * pending) and the second at most 1: the bound the tests check.
 *
 * The caller owns struct cs_walk; start() is called (synchronously, from
 * submit or finish) when a walker begins it, and the caller reports the end
 * with cs_walkers_finish() later on the modeled clock, never from inside
 * start().
 */
#ifndef SIMGPU_CS_WALKERS_H
#define SIMGPU_CS_WALKERS_H

#include <stdbool.h>
#include <stdint.h>

enum cs_walker_policy {
	CS_WALKERS_SHARED,
	CS_WALKERS_STATIC,
	CS_WALKERS_DWS,
	CS_WALKERS_DWSPP,
};

struct cs_walkers_config {
	enum cs_walker_policy policy;
	uint32_t walkers;        /* seed 003 Table I: 16 */
	uint32_t queue_entries;  /* 192 */
	uint32_t epoch_walks;    /* DWS++: 200 */
	double queue_thres;      /* DWS++: 0.51 */
	double diff_thres[4];    /* DWS++: R <= 1.5, 2, 3, 4: 0.4, 0.6, 0.8, 0.9 */
};

struct cs_walk {
	uint32_t tenant;
	/* set by the walkers */
	uint64_t arrival, start;
	uint32_t walker;
	uint32_t foreign_waited; /* interleaving of this walk, at its start */
	bool stolen;             /* served by another tenant's walker */
	uint64_t foreign_mark;
	struct cs_walk *next;
};

struct cs_walkers_stats {
	uint64_t started;
	uint64_t stolen;
	uint64_t foreign_waited_sum;
	uint32_t foreign_waited_max;
	uint64_t queue_wait_sum; /* cycles from arrival to start */
	uint64_t busy_cycles;    /* walker cycles spent on this tenant's walks */
};

typedef void (*cs_walk_start_fn)(void *ctx, struct cs_walk *walk, uint64_t now);

struct cs_walkers;

void cs_walkers_config_defaults(struct cs_walkers_config *cfg);

/* NULL on a bad configuration: no walkers or queue entries, more than
 * CS_MAX_TENANTS tenants, or fewer walkers than tenants under a partitioned
 * policy. */
struct cs_walkers *cs_walkers_create(const struct cs_walkers_config *cfg, uint32_t tenants,
                                     cs_walk_start_fn start, void *ctx);
void cs_walkers_destroy(struct cs_walkers *w);

void cs_walkers_submit(struct cs_walkers *w, struct cs_walk *walk, uint64_t now);
void cs_walkers_finish(struct cs_walkers *w, struct cs_walk *walk, uint64_t now);

void cs_walkers_stats(const struct cs_walkers *w, uint32_t tenant, struct cs_walkers_stats *out);
uint32_t cs_walkers_pending(const struct cs_walkers *w, uint32_t tenant);

const char *cs_walker_policy_name(enum cs_walker_policy policy);
/* 0, or -EINVAL for an unknown name ("shared", "static", "dws", "dws++"). */
int cs_walker_policy_parse(const char *name, enum cs_walker_policy *policy);

#endif /* SIMGPU_CS_WALKERS_H */
