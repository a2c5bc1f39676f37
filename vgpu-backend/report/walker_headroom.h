/* SPDX-License-Identifier: MIT */
/*
 * walker_headroom.h - two parts of experiment 7 (seed 003) on the
 * contention model's modeled clock, beside contention.c's walker policies:
 *
 *  - the headroom of §IV (Figs. 2 and 3): the shared baseline against
 *    separate L2 TLBs per tenant (S-TLB: each tenant a TLB of the baseline's
 *    size) and separate TLBs and walkers (S-(TLB+PTW): each tenant also a
 *    pool of the baseline's 16 walkers and 192 queue entries, the static
 *    walker policy with n times both);
 *  - large pages (§VII-G, Fig. 14): DWS against shared walkers with 64 KiB
 *    pages.
 *
 * Each writes its table, data file, plots, shape checks and verdicts into
 * REPORT.md. The alone IPCs (for WS) are the baseline's, passed in from the
 * 4 KiB shared run (seed 003: alone on the baseline). Deterministic: the
 * model has no randomness beyond the kernels' fixed seeds. Exits only
 * through report_file() when a file cannot be written.
 */
#ifndef VGPU_REPORT_WALKER_HEADROOM_H
#define VGPU_REPORT_WALKER_HEADROOM_H

#include <stddef.h>
#include <stdint.h>

#include "cs_experiment.h"
#include "report.h"

/* mixes[i] ("gups stream"), labels[i] ("gups+stream") and results[i][p]
 * under contention.c's walker policies (0 shared, 2 DWS) at 4 KiB pages;
 * a mix whose shared run failed (tenants 0) is left out. */
void walker_headroom(struct report *report, const char *const *mixes, size_t count,
                     const char (*labels)[64], const struct cs_mix_result (*results)[4],
                     uint64_t cycles);
void walker_large_pages(struct report *report, const char *const *mixes, size_t count,
                        const char (*labels)[64], const struct cs_mix_result (*results)[4],
                        uint64_t cycles);

#endif /* VGPU_REPORT_WALKER_HEADROOM_H */
