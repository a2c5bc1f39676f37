// SPDX-License-Identifier: MIT
/* cs_analytic.c - seed 004's bandwidth/MPKI model (see cs_analytic.h). */
#include "cs_analytic.h"

#include <stdbool.h>

double cs_analytic_perf(double bw, double mpki)
{
	return mpki > 0 ? bw / mpki : 0.0;
}

void cs_analytic_shares(double peak, const struct cs_analytic_app *apps, uint32_t n,
                        const uint32_t *order, double *bw)
{
	double left = peak;
	uint32_t i;

	for (i = 0; i < n; i++)
		bw[i] = 0;
	if (order) {
		for (i = 0; i < n; i++) {
			uint32_t a = order[i];

			bw[a] = apps[a].bw_alone < left ? apps[a].bw_alone : left;
			left -= bw[a];
		}
		return;
	}
	/* round-robin: water-filling with equal shares */
	for (;;) {
		uint32_t hungry = 0;
		double share;
		bool capped = false;

		for (i = 0; i < n; i++)
			hungry += bw[i] < apps[i].bw_alone;
		if (hungry == 0 || left <= 0)
			return;
		share = left / hungry;
		for (i = 0; i < n; i++)
			if (bw[i] < apps[i].bw_alone && apps[i].bw_alone - bw[i] <= share) {
				left -= apps[i].bw_alone - bw[i];
				bw[i] = apps[i].bw_alone;
				capped = true;
			}
		if (capped)
			continue;
		for (i = 0; i < n; i++)
			if (bw[i] < apps[i].bw_alone)
				bw[i] += share;
		return;
	}
}

double cs_analytic_it(const struct cs_analytic_app *apps, const double *bw, uint32_t n)
{
	double it = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		it += cs_analytic_perf(bw[i], apps[i].mpki);
	return it;
}

double cs_analytic_ws(const struct cs_analytic_app *apps, const double *bw, uint32_t n)
{
	double ws = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		double alone = cs_analytic_perf(apps[i].bw_alone, apps[i].mpki);

		ws += alone > 0 ? cs_analytic_perf(bw[i], apps[i].mpki) / alone : 0;
	}
	return ws;
}

static int sign(double x)
{
	return (x > 0) - (x < 0);
}

int cs_analytic_it_gain_sign(double mpki1, double mpki2, double epsilon)
{
	return sign(epsilon * (mpki2 - mpki1));
}

int cs_analytic_ws_gain_sign(double bw1_alone, double bw2_alone, double epsilon)
{
	return sign(epsilon * (bw2_alone - bw1_alone));
}
