/* SPDX-License-Identifier: MIT */
/* report.h - vgpu-sim's summary: a table for people, JSON (json-c) for tools. */
#ifndef VGPU_SIM_REPORT_H
#define VGPU_SIM_REPORT_H

#include <stdio.h>

#include "runner.h"

void sim_report_text(const struct sim_run *run, FILE *out);
/* {"gpu": {...}, "vms": [...], "invariants": ..., "expects_failed": N, ...}
 * Returns 0, or -ENOMEM. */
int sim_report_json(const struct sim_run *run, FILE *out);

#endif /* VGPU_SIM_REPORT_H */
