/* SPDX-License-Identifier: MIT */
/*
 * report.h - vgpu-report: the seeds' experiments reproduced on simgpu with
 * its modeled clock, written as build/report/REPORT.md with data files and
 * gnuplot scripts for its SVG plots (`./vgpu-dev report` runs gnuplot).
 *
 * What it promises
 *
 *  - Every figure it labels "modeled" comes from simgpu's modeled clock
 *    (vgpu_hal_as_counters busy time): it does not depend on the host, its
 *    load or the run, so the same options give the same figures on every
 *    machine. The few figures that only exist in wall-clock time (the
 *    core's CPU work: eviction set-up, policy, allocation latency against
 *    the number of VMs) are labelled "wall-clock, this host" and are never
 *    checked.
 *  - Each experiment records "shape" checks: statements about the figures
 *    (GPUswap never slower than whole-buffer swapping, every GPUswap run
 *    completes at 20 MiB, fairness within one chunk, ...). They are printed
 *    as "N passed, N failed" and make the exit status 1 when one fails;
 *    `--quick` runs a smaller version for CI.
 */
#ifndef VGPU_REPORT_H
#define VGPU_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

struct report {
	const char *dir;  /* output directory */
	bool quick;       /* CI's short version */
	bool verbose;     /* per-experiment times on stderr */
	FILE *md;         /* REPORT.md's body being written (in memory) */
	const char *section; /* the experiment being written ("1", "7") */
	unsigned checks_passed, checks_failed;
	const char *bench_json; /* bench.json to quote (daemon memory), or NULL */
	const char *loga_bench; /* loga-bench to run when bench.json lacks its figures */
	char loga_source[768];  /* where experiment 9's figures came from (loga_figures.h) */
	const char *rodinia_build; /* a build with vgpud and tests/rodinia, or NULL */
};

/* Record a shape check: printed, counted, and listed in REPORT.md. */
void report_check(struct report *report, bool ok, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

/* Start experiment `number`: its heading, and the section its verdicts
 * name in the top table. */
void report_section(struct report *report, const char *number, const char *title);

/* Append to REPORT.md. */
void report_md(struct report *report, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

/* Open DIR/name for writing (a data file or a gnuplot script); exits with
 * a message when it cannot. */
FILE *report_file(struct report *report, const char *name);

/*
 * Write DIR/name.gp, a gnuplot script drawing DIR/name.svg, and link the
 * SVG from REPORT.md. body holds the plot commands (after the terminal,
 * output, title and axis labels are set); data files are named relative to
 * DIR, where gnuplot runs.
 */
void report_plot(struct report *report, const char *name, const char *title,
                 const char *xlabel, const char *ylabel, const char *body);

/* The line colours of every plot (gnuplot's own 8 include yellow): dark,
 * distinct on white, in this order. */
extern const char *const report_colours[8];

/* Progress on stderr. */
void report_progress(struct report *report, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

/* The experiments, in the order of REPORT.md. */
void experiment_memory_sweep(struct report *report);
void experiment_chunk_sweep(struct report *report);
void experiment_eviction_breakdown(struct report *report);
void experiment_fairness(struct report *report);
void experiment_overhead(struct report *report);
void experiment_scaling(struct report *report);
void experiment_walkers(struct report *report);  /* seed 003, contention.c */
void experiment_memsched(struct report *report); /* seed 004, contention.c */
void experiment_gpu_time(struct report *report); /* seed 002, loga_figures.h */
void experiment_relocation_delay(struct report *report); /* thesis 6.6-6.8, paper 6a/6b */
void experiment_nn_priorities(struct report *report);    /* thesis Fig. 6.3 */
void experiment_rodinia(struct report *report); /* the Rodinia programs through vgpud */
void experiment_rodinia_latency(struct report *report); /* their eviction latency, 6.5-6.10 */
void experiment_alloc_latency(struct report *report); /* thesis Fig. 6.4, wall-clock */

#endif /* VGPU_REPORT_H */
