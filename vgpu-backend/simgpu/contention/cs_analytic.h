/* SPDX-License-Identifier: MIT */
/*
 * cs_analytic.h - seed 004's analytical model of applications sharing a
 * bandwidth-bound memory system (§3, §5).
 *
 * P = BW / MPKI (eq. 3). With peak bandwidth C shared, a prioritized
 * application takes what it uses alone and the next ones the rest (capped at
 * their own alone bandwidth); round-robin gives equal shares, what an
 * application cannot use going to the others. IT = sum P_i, WS = sum
 * P_i / P_i^alone. Moving epsilon of bandwidth from application 2 to 1
 * raises IT iff epsilon (MPKI_2 - MPKI_1) > 0 (eq. 6) and WS iff
 * epsilon (BW_2^alone - BW_1^alone) > 0 (eq. 11).
 */
#ifndef SIMGPU_CS_ANALYTIC_H
#define SIMGPU_CS_ANALYTIC_H

#include <stdint.h>

struct cs_analytic_app {
	double mpki;
	double bw_alone;
};

double cs_analytic_perf(double bw, double mpki);

/* Bandwidth of each of n applications: order lists them highest priority
 * first, or is NULL for round-robin. */
void cs_analytic_shares(double peak, const struct cs_analytic_app *apps, uint32_t n,
                        const uint32_t *order, double *bw);

double cs_analytic_it(const struct cs_analytic_app *apps, const double *bw, uint32_t n);
double cs_analytic_ws(const struct cs_analytic_app *apps, const double *bw, uint32_t n);

/* The sign (-1, 0, 1) of the change in IT / WS when epsilon of bandwidth
 * moves from application 2 to application 1, by eq. 6 / eq. 11. */
int cs_analytic_it_gain_sign(double mpki1, double mpki2, double epsilon);
int cs_analytic_ws_gain_sign(double bw1_alone, double bw2_alone, double epsilon);

#endif /* SIMGPU_CS_ANALYTIC_H */
