/* SPDX-License-Identifier: MIT */
/*
 * memsched_traces.h - part of experiment 8 (seed 004) on the contention
 * model's modeled clock: how the schedulers move the two applications'
 * bandwidth, from per-window traces of each pair's run (cs_run_mix_traced,
 * windows of 8 of the scheduler's 1024-cycle epochs):
 *
 *  - Fig. 7: MPKI_1 - MPKI_2 against BW_1 - BW_2 per window under FR-FCFS,
 *    RR and ITS;
 *  - Fig. 9: BW_1 - BW_2 against WS (normalized to FR-FCFS's) per window
 *    under FR-FCFS, RR and WEIS.
 *
 * Writes the table, data files, plots, shape checks (the traced runs equal
 * the untraced ones; the windows add up to the run) and verdicts into
 * REPORT.md. Deterministic. Exits only through report_file().
 */
#ifndef VGPU_REPORT_MEMSCHED_TRACES_H
#define VGPU_REPORT_MEMSCHED_TRACES_H

#include <stddef.h>
#include <stdint.h>

#include "cs_experiment.h"
#include "report.h"

/* pairs[i] ("gups stream"), labels[i]; results[i * stride + p] the pair's
 * untraced runs under FR-FCFS, RR, ITS, WEIS (p = 0..3; a pair whose
 * FR-FCFS run failed has tenants 0 and is left out). */
void memsched_traces(struct report *report, const char *const *pairs, size_t count,
                     const char (*labels)[64], const struct cs_mix_result *results,
                     size_t stride, uint64_t cycles);

#endif /* VGPU_REPORT_MEMSCHED_TRACES_H */
