// SPDX-License-Identifier: MIT
/*
 * test_contention_analytic.c - seed 004's analytical model (cs_analytic):
 * the Fig. 6 example to the digit, and the epsilon argument of §5 (eq. 6,
 * eq. 11) against the model's own IT and WS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cs_analytic.h"

#define C 50.0

static const struct cs_analytic_app fig6[2] = { { 20, 30 }, { 5, 40 } };

static void assert_close(double got, double want)
{
	if (got < want - 1e-9 || got > want + 1e-9)
		fail_msg("got %.12f, want %.12f", got, want);
}

static void test_fig6_prioritize_app1(void **state)
{
	const uint32_t order[2] = { 0, 1 };
	double bw[2];

	(void)state;
	cs_analytic_shares(C, fig6, 2, order, bw);
	assert_close(bw[0], 30);
	assert_close(bw[1], 20);
	assert_close(cs_analytic_perf(bw[0], fig6[0].mpki), 1.5);
	assert_close(cs_analytic_perf(bw[1], fig6[1].mpki), 4);
	assert_close(cs_analytic_it(fig6, bw, 2), 5.5);
	assert_close(cs_analytic_ws(fig6, bw, 2), 1.5);
}

/* The seed's Fig. 6 prints 1.45 in this row and 1.33 in the round-robin
 * row, each computed from the other row's performances (its (13) uses P1 =
 * 1.25 and P2 = 5, which are round-robin's (7) and (8)). Recomputed from this
 * row's own P1 = 0.5 and P2 = 8: WS = 0.5/1.5 + 8/8 = 1.333..., and
 * round-robin's is 1.25/1.5 + 5/8 = 1.4583... The text's conclusion stands:
 * prioritizing the lower-BW^alone application (app 1) gives the best WS. */
static void test_fig6_prioritize_app2(void **state)
{
	const uint32_t order[2] = { 1, 0 };
	double bw[2];

	(void)state;
	cs_analytic_shares(C, fig6, 2, order, bw);
	assert_close(bw[0], 10);
	assert_close(bw[1], 40);
	assert_close(cs_analytic_it(fig6, bw, 2), 8.5);
	assert_close(cs_analytic_ws(fig6, bw, 2), 0.5 / 1.5 + 1.0);
	assert_true(cs_analytic_ws(fig6, bw, 2) > 1.33 && cs_analytic_ws(fig6, bw, 2) < 1.34);
}

static void test_fig6_round_robin(void **state)
{
	double bw[2];

	(void)state;
	cs_analytic_shares(C, fig6, 2, NULL, bw);
	assert_close(bw[0], 25);
	assert_close(bw[1], 25);
	assert_close(cs_analytic_it(fig6, bw, 2), 6.25);
	assert_close(cs_analytic_ws(fig6, bw, 2), 1.25 / 1.5 + 5.0 / 8.0);
	assert_true(cs_analytic_ws(fig6, bw, 2) > 1.458 && cs_analytic_ws(fig6, bw, 2) < 1.459);
}

/* Round-robin gives what an application cannot use to the others. */
static void test_round_robin_water_fills(void **state)
{
	const struct cs_analytic_app apps[3] = { { 1, 5 }, { 1, 40 }, { 1, 40 } };
	double bw[3];

	(void)state;
	cs_analytic_shares(60, apps, 3, NULL, bw);
	assert_close(bw[0], 5);
	assert_close(bw[1], 27.5);
	assert_close(bw[2], 27.5);
}

/* Eq. 6 and eq. 11: the sign rule agrees with the change the model's IT and
 * WS actually show when epsilon moves from app 2 to app 1. */
static void test_epsilon_rules(void **state)
{
	const double eps[] = { -2, -0.5, 0.5, 2 };
	const double mpki[][2] = { { 20, 5 }, { 5, 20 }, { 7, 7 }, { 1, 50 } };
	const double alone[][2] = { { 30, 40 }, { 40, 30 }, { 25, 25 }, { 10, 45 } };
	unsigned e, i;

	(void)state;
	for (i = 0; i < 4; i++)
		for (e = 0; e < 4; e++) {
			const struct cs_analytic_app apps[2] = { { mpki[i][0], alone[i][0] },
				                                 { mpki[i][1], alone[i][1] } };
			double before[2] = { 20, 30 }, after[2] = { 20 + eps[e], 30 - eps[e] };
			double dit = cs_analytic_it(apps, after, 2) - cs_analytic_it(apps, before, 2);
			double dws = cs_analytic_ws(apps, after, 2) - cs_analytic_ws(apps, before, 2);
			int it_sign = (dit > 1e-12) - (dit < -1e-12);
			int ws_sign = (dws > 1e-12) - (dws < -1e-12);

			assert_int_equal(cs_analytic_it_gain_sign(mpki[i][0], mpki[i][1], eps[e]),
			                 it_sign);
			assert_int_equal(cs_analytic_ws_gain_sign(alone[i][0], alone[i][1], eps[e]),
			                 ws_sign);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fig6_prioritize_app1),
		cmocka_unit_test(test_fig6_prioritize_app2),
		cmocka_unit_test(test_fig6_round_robin),
		cmocka_unit_test(test_round_robin_water_fills),
		cmocka_unit_test(test_epsilon_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
