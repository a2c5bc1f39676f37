/* SPDX-License-Identifier: MIT */
/*
 * rodinia_run.h - one run of the tests/rodinia programs through a private
 * vgpud on simgpu (rodinia_run.sh), for the report's experiments 12 and
 * 13: the programs, and what a run gives back.
 */
#ifndef VGPU_REPORT_RODINIA_RUN_H
#define VGPU_REPORT_RODINIA_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "report.h"

struct rodinia_program {
	const char *name, *size; /* rodinia-NAME, its SIZE argument */
	uint64_t bytes;          /* one instance's working set */
};

extern const struct rodinia_program rodinia_programs[];
extern const unsigned rodinia_program_count;

/* vgpud's eviction passes over a run (vgpuctl status: gpu.eviction):
 * host work wall-clock, the copies also on simgpu's modeled clock. */
struct rodinia_eviction {
	bool known;
	uint64_t passes, suspensions, bytes;
	double policy_ms, setup_ms, copy_ms, copy_modeled_ms, other_ms, drain_ms, pause_ms;
};

struct rodinia_run {
	bool ok;           /* every instance exited 0 (results right) */
	double modeled_ms; /* the slower instance's address space, modeled */
	double wall_ms;    /* the slower instance's own runtime line, wall-clock */
	double moved_mib;
	struct rodinia_eviction eviction;
};

struct rodinia_run_args {
	uint64_t avail;     /* VRAM left by the ballast */
	const char *policy; /* random, priority, refbits; +whole: whole buffers */
	unsigned seed;
	bool swap;          /* nn's priorities exchanged */
	unsigned instances;
	uint64_t dummy;     /* bytes an idle tenant holds (0: none) */
	uint64_t chunk;     /* vgpud's chunk size (0: 64 KiB) */
	const char *prefix; /* access profiles go to report->dir/PREFIX-N.tsv */
};

/* One run; false when it could not run at all (not built, vgpud failed).
 * A run with the same program and arguments as an earlier one in this
 * process (prefix aside) is not run again: its results are returned
 * (experiments 12 and 13 share runs so), and its profiles are those of the
 * earlier run's prefix. */
bool rodinia_run_one(struct report *report, const struct rodinia_program *p,
                     const struct rodinia_run_args *args, struct rodinia_run *out);

#endif /* VGPU_REPORT_RODINIA_RUN_H */
