/* SPDX-License-Identifier: MIT */
/*
 * seed_figures.h - every evaluation figure and table of the five seeds, one
 * entry each, with the status its verdicts gave it: the table at the top of
 * REPORT.md.
 *
 * An entry is decided by the verdicts that name its id (verdict.h): all
 * reproduced -> reproduced; none holding a unit -> not reproduced; any
 * other mix -> partly. An entry no verdict names is "not reproduced" with
 * what it needs, or "not reproducible here" with why (fixed in the list).
 */
#ifndef VGPU_REPORT_SEED_FIGURES_H
#define VGPU_REPORT_SEED_FIGURES_H

#include <stddef.h>

#include "report.h"
#include "verdict.h"

/* Record an outcome for each id of the space-separated list `ids`, found
 * in the experiment `section`; names receives the figures' labels
 * ("thesis Fig. 6.1, paper Fig. 5"). Exits on an unknown id (a typo in
 * the report's source). */
void seed_figures_record(const char *ids, enum outcome outcome, const char *section,
                         char *names, size_t len);

/* The table and its counts, into report's REPORT.md. */
void seed_figures_table(struct report *report);

#endif /* VGPU_REPORT_SEED_FIGURES_H */
