/* SPDX-License-Identifier: MIT */
/*
 * cs_model.h - timing model of a GPU's shared virtual-memory and memory path
 * with several tenants (address spaces) on their own SMs at the same time
 * (seed 003 Fig. 1, seed 004 Fig. 1), on a modeled clock in core cycles.
 *
 * Path of one line request (tenant, SM, virtual address, read/write):
 *   the SM's L1 TLB (hit: no delay; at most l1_tlb_mshrs misses in flight
 *   per SM, the others wait in order) -> the shared L2 TLB (l2_tlb_latency) ->
 *   on a miss, a page walk (merged with a pending walk of the same page)
 *   through cs_walkers; a walk reads 1..levels page-table entries, fewer
 *   when the page-walk cache holds the upper levels, each through the L2
 *   cache and DRAM -> (at most l1_mshrs lines in flight per SM; a translated
 *   page's lines wait in order for room) -> the L2 cache (l2_latency;
 *   write-back, write-allocate without fetch for full-line writes, misses to
 *   one line merged; the write-back buffer of l2_writebacks entries is split
 *   equally among tenants, like seed 004's L2 partitions: while a tenant's
 *   misses have its share of write-backs in flight to DRAM, its next misses
 *   wait in order) -> DRAM (cs_dram, scheduled by cs_mem_sched).
 * Tenant t's physical memory is its virtual addresses offset by t << 41, its
 * page tables (4 levels for 4 KiB and 64 KiB pages, 3 for 2 MiB; 9 bits of
 * the page number per level) elsewhere in its range.
 * Separate walkers per tenant (seed 003 §IV's S-(TLB+PTW)) are the STATIC
 * walker policy with n times the walkers and queue entries.
 *
 * Two ways to drive it:
 *  - cs_model_access(): one request at a given issue time; its completion
 *    time comes back through the callback (the request-stream interface).
 *  - cs_model_attach_kernel(): the tenant's SMs run a built-in kernel's warp
 *    tasks (cs_kernel_stream) closed-loop: each SM keeps warps_per_sm tasks
 *    in flight; a task spends instructions / issue_width cycles of the SM's
 *    issue slots, issues its reads, waits for them, issues its writes, waits,
 *    then commits its instructions (progress); a kernel that ends is launched
 *    again (seed 003 §III / seed 004 §7 methodology), so MPKI and bandwidth
 *    come out of the access pattern.
 *
 * Everything here is deterministic; it touches no simgpu state.
 */
#ifndef SIMGPU_CS_MODEL_H
#define SIMGPU_CS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cs_dram.h"
#include "cs_mem_sched.h"
#include "cs_walkers.h"

struct cs_model_config {
	uint32_t sms;           /* seed 003 Table I: 30, split equally */
	uint32_t warps_per_sm;  /* tasks in flight per SM */
	uint32_t issue_width;   /* warp instructions per cycle per SM */
	uint32_t page_shift;    /* 12 (4 KiB), 16 (64 KiB) or 21 (2 MiB) */
	uint32_t l1_tlb_entries;              /* 32, fully associative */
	uint32_t l1_tlb_mshrs;                /* 12 misses in flight per SM */
	uint32_t l1_mshrs;                    /* data lines in flight per SM: 64 */
	uint32_t l2_tlb_entries, l2_tlb_ways; /* 1024, 16 */
	uint32_t l2_tlb_latency;
	/* each tenant its own L2 TLB of l2_tlb_entries (seed 003 §IV's S-TLB:
	 * the capacity grows with the tenants); false: one shared */
	bool l2_tlb_per_tenant;
	uint32_t pwc_entries;                 /* 128, fully associative */
	uint32_t l2_bytes, l2_ways;           /* 2 MiB, 16 */
	uint32_t l2_latency;
	uint32_t l2_writebacks;               /* write-back buffer: 512 (64 per channel) */
	struct cs_walkers_config walkers;
	struct cs_dram_config dram;
	struct cs_mem_sched_config sched;
};

/* Raw per-tenant counters. */
struct cs_tenant_counters {
	uint64_t instructions, tasks, launches;
	uint64_t l1_tlb_lookups, l1_tlb_hits;
	uint64_t l2_tlb_lookups, l2_tlb_hits;
	uint64_t walks, walk_latency_sum, walk_memory_accesses;
	uint64_t l2_accesses, l2_misses;
	uint32_t l2_tlb_entries_held; /* at the end */
	uint64_t sched_epochs, sched_epochs_on_top; /* memory scheduler epochs; with it first */
	struct cs_walkers_stats walkers;
	struct cs_dram_app_stats dram;
};

/* The figures of one tenant over a run of `cycles`. */
struct cs_tenant_figures {
	uint64_t cycles, instructions, walks, stolen_walks;
	double ipc;                 /* instructions per cycle */
	double avg_walk_latency;    /* cycles, L2 TLB miss to translation */
	double avg_walk_queueing;   /* cycles waiting for a walker */
	double interleaving;        /* walks of other tenants waited for, mean */
	uint32_t interleaving_max;
	double l2_tlb_hit_rate;
	double mpki;                /* L2 misses per 1000 instructions */
	double bandwidth;           /* DRAM bytes per cycle */
	double bandwidth_share;     /* of the DRAM's peak */
	double row_hit_rate;
	double walker_share;        /* mean fraction of walkers busy for it */
	double l2_tlb_share;        /* fraction of L2 TLB entries it holds at the end */
	double sched_top_share;     /* fraction of scheduler epochs it was first */
};

typedef void (*cs_access_done_fn)(void *arg, uint64_t now);

struct cs_model;

void cs_model_config_defaults(struct cs_model_config *cfg);

/* tenants 1..CS_MAX_TENANTS; sms_per_tenant NULL splits cfg->sms equally
 * (the first tenants get the remainder). NULL on a bad configuration. */
struct cs_model *cs_model_create(const struct cs_model_config *cfg, uint32_t tenants,
                                 const uint32_t *sms_per_tenant);
void cs_model_destroy(struct cs_model *m);

/* The tenant runs the kernel (SIMGPU_KERNEL_*, LAUNCH arguments) on its SMs
 * from the next run on. 0, -EINVAL (bad kernel/arguments/tenant) or -ENOMEM. */
int cs_model_attach_kernel(struct cs_model *m, uint32_t tenant, uint32_t kernel,
                           const uint64_t *args, uint32_t nargs);

/* One line request issued at issue_time (>= the model's now) from an SM of
 * the tenant (sm indexes the tenant's SMs). done(arg, completion) runs on
 * the modeled clock. 0, -EINVAL or -ENOMEM. */
int cs_model_access(struct cs_model *m, uint32_t tenant, uint32_t sm, uint64_t va, bool write,
                    uint64_t issue_time, cs_access_done_fn done, void *arg);

/* Runs the modeled clock up to cycle `until` (absolute). 0, or -ENOMEM when
 * the model ran out of memory (its figures are then incomplete). */
int cs_model_run_until(struct cs_model *m, uint64_t until);
uint64_t cs_model_now(const struct cs_model *m);

void cs_model_counters(const struct cs_model *m, uint32_t tenant, struct cs_tenant_counters *out);
void cs_model_figures(const struct cs_model *m, uint32_t tenant, struct cs_tenant_figures *out);

#endif /* SIMGPU_CS_MODEL_H */
