/* SPDX-License-Identifier: MIT */
/*
 * cs_dram.h - DRAM channels and banks with open-row buffers, each channel
 * with a bounded request queue served by a cs_mem_sched policy.
 *
 * Address map (seed 004 Table 2): 256-byte chunks interleave across
 * channels; within a channel, row_bytes / 256 consecutive chunks share a row
 * of one bank, then the next bank. A request is one line (line_bytes).
 * Timing per request issued to a bank: row hit t_cl; closed row t_rcd + t_cl;
 * other row open t_rp + t_rcd + t_cl; then t_burst on the channel's data bus
 * (one transfer at a time). A bank accepts its next command t_burst after a
 * row hit's and after the activation of a miss. One command per channel per
 * cycle. Requests beyond queue_entries wait in arrival order outside the
 * queue (the interconnect's backpressure) and are invisible to the policy.
 */
#ifndef SIMGPU_CS_DRAM_H
#define SIMGPU_CS_DRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "cs_events.h"
#include "cs_mem_sched.h"

struct cs_dram_config {
	uint32_t channels, banks;
	uint32_t row_bytes, line_bytes;
	uint32_t queue_entries; /* per channel */
	uint32_t t_rcd, t_cl, t_rp, t_burst; /* core cycles */
};

struct cs_dram_req {
	uint64_t pa;
	uint32_t app;
	bool write;
	void (*done)(void *arg, uint64_t now);
	void *arg;
	/* the DRAM's */
	uint64_t arrival, row;
	uint32_t bank;
	struct cs_dram_req *next;
};

struct cs_dram_app_stats {
	uint64_t reads, writes, row_hits;
};

struct cs_dram;

void cs_dram_config_defaults(struct cs_dram_config *cfg);
/* NULL on a bad configuration or no memory. */
struct cs_dram *cs_dram_create(const struct cs_dram_config *cfg, struct cs_events *events,
                               struct cs_mem_sched *sched);
void cs_dram_destroy(struct cs_dram *d);

/* Queues req (owned by the caller until req->done runs). */
void cs_dram_submit(struct cs_dram *d, struct cs_dram_req *req, uint64_t now);

void cs_dram_app_stats(const struct cs_dram *d, uint32_t app, struct cs_dram_app_stats *out);
/* Peak bandwidth in bytes per cycle. */
double cs_dram_peak_bytes_per_cycle(const struct cs_dram *d);

#endif /* SIMGPU_CS_DRAM_H */
