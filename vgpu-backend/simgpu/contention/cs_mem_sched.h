/* SPDX-License-Identifier: MIT */
/*
 * cs_mem_sched.h - the DRAM request scheduler of a memory channel and the
 * per-application monitor it needs (seed 004 §4.2, §6).
 *
 * Every policy serves row-buffer hits first (oldest first); they differ in
 * which request opens a row:
 *  FR-FCFS     the oldest request (baseline).
 *  RR-FR-FCFS  the oldest request of the application whose turn it is; the
 *              turn moves to the next application after each activation.
 *  PRIORITY    a static order of applications (config.priority, highest
 *              first): the oldest request of the highest that has one.
 *  ITS         as PRIORITY, the order being ascending L2 MPKI measured over
 *              the last epoch (prefer the lower-MPKI application: IT).
 *  WEIS        as PRIORITY, the order being ascending DRAM bandwidth attained
 *              over the last epoch (prefer the lower-BW application: WS).
 *
 * The model feeds the monitor: instructions committed, L2 misses and DRAM
 * bytes per application. An epoch is epoch_cycles of the modeled clock
 * (seed 004 uses 1024); at each epoch's end the misses, instructions and
 * bytes of the epoch enter moving averages (weight 1/4 for the newest), since
 * a warp task commits its instructions at its end, hundreds of cycles after
 * its misses. An application that committed no instruction in an epoch keeps
 * its last MPKI (0 before its first), so one that ITS starved for an epoch is
 * measured again instead of being starved for good.
 */
#ifndef SIMGPU_CS_MEM_SCHED_H
#define SIMGPU_CS_MEM_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cs_sa_cache.h" /* CS_MAX_TENANTS */

enum cs_mem_policy {
	CS_SCHED_FRFCFS,
	CS_SCHED_RR_FRFCFS,
	CS_SCHED_PRIORITY,
	CS_SCHED_ITS,
	CS_SCHED_WEIS,
};

struct cs_mem_sched_config {
	enum cs_mem_policy policy;
	uint32_t epoch_cycles;
	uint32_t priority[CS_MAX_TENANTS]; /* PRIORITY: application ids, highest first */
};

/* A request as the scheduler sees it. */
struct cs_sched_view {
	uint32_t app;
	uint64_t arrival;
	bool row_hit;
};

struct cs_mem_sched;

void cs_mem_sched_config_defaults(struct cs_mem_sched_config *cfg);
struct cs_mem_sched *cs_mem_sched_create(const struct cs_mem_sched_config *cfg, uint32_t apps);
void cs_mem_sched_destroy(struct cs_mem_sched *s);

/* The index in view[0..n) (n > 0) of the request to issue at now. */
size_t cs_mem_sched_pick(struct cs_mem_sched *s, const struct cs_sched_view *view, size_t n,
                         uint64_t now);

/* Monitor input. */
void cs_mem_sched_count_instructions(struct cs_mem_sched *s, uint32_t app, uint64_t n);
void cs_mem_sched_count_miss(struct cs_mem_sched *s, uint32_t app);
void cs_mem_sched_count_bytes(struct cs_mem_sched *s, uint32_t app, uint64_t bytes);

/* The application's rank (0 = highest priority) now. */
uint32_t cs_mem_sched_rank(const struct cs_mem_sched *s, uint32_t app);
/* Epochs ended so far, and those after which app came first. */
uint64_t cs_mem_sched_epochs(const struct cs_mem_sched *s);
uint64_t cs_mem_sched_epochs_on_top(const struct cs_mem_sched *s, uint32_t app);

const char *cs_mem_policy_name(enum cs_mem_policy policy);
/* 0 or -EINVAL: "frfcfs", "rr", "prio", "its", "weis". */
int cs_mem_policy_parse(const char *name, enum cs_mem_policy *policy);

#endif /* SIMGPU_CS_MEM_SCHED_H */
