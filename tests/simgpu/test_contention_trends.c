// SPDX-License-Identifier: MIT
/*
 * test_contention_trends.c - the directions of seeds 003 and 004 on pairs of
 * the built-in kernels, run through the whole contention model. Asserts only
 * directions with a clear margin in this model (see README.md in
 * vgpu-backend/simgpu/contention for the figures and where a seed's
 * direction does not hold here, and why); prints every figure.
 *
 *  seed 003 (4 KiB pages, gups walk-heavy against a light tenant): DWS and
 *  DWS++ throughput and weighted IPC >= the shared baseline; DWS weighted
 *  IPC > static partition's.
 *  seed 004 (2 MiB pages, so that memory, not walks, is the bottleneck):
 *  ITS instruction throughput > FR-FCFS's; WEIS weighted speedup > FR-FCFS's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cs_experiment.h"

#define CYCLES 100000

struct pair {
	const char *a, *b;
};

static void run_pair(struct cs_model_config *cfg, const struct pair *p,
                     struct cs_tenant_figures *alone, struct cs_tenant_spec *specs)
{
	unsigned i;

	assert_int_equal(cs_tenant_spec_parse(p->a, &specs[0]), 0);
	assert_int_equal(cs_tenant_spec_parse(p->b, &specs[1]), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(cs_run_alone(cfg, &specs[i], cs_mix_sms(cfg, 2, i), CYCLES,
		                              &alone[i]), 0);
}

static void test_walker_policies(void **state)
{
	static const struct pair pairs[] = { { "gups", "stream" }, { "gups", "stencil" } };
	static const enum cs_walker_policy policies[] = { CS_WALKERS_SHARED, CS_WALKERS_STATIC,
		                                          CS_WALKERS_DWS, CS_WALKERS_DWSPP };
	unsigned p, k;

	(void)state;
	for (p = 0; p < 2; p++) {
		struct cs_model_config cfg;
		struct cs_tenant_spec specs[2];
		struct cs_tenant_figures alone[2];
		struct cs_mix_result r[4];

		cs_model_config_defaults(&cfg);
		run_pair(&cfg, &pairs[p], alone, specs);
		for (k = 0; k < 4; k++) {
			cfg.walkers.policy = policies[k];
			assert_int_equal(cs_run_mix(&cfg, specs, 2, CYCLES, alone, &r[k]), 0);
			printf("# %s+%s %-6s IT %.3f WS %.3f fairness %.3f\n", pairs[p].a, pairs[p].b,
			       cs_walker_policy_name(policies[k]), r[k].throughput,
			       r[k].weighted_speedup, r[k].fairness);
		}
		assert_true(r[2].throughput > 1.2 * r[0].throughput);
		assert_true(r[3].throughput > 1.2 * r[0].throughput);
		assert_true(r[2].weighted_speedup > r[0].weighted_speedup);
		assert_true(r[3].weighted_speedup > r[0].weighted_speedup);
		assert_true(r[2].weighted_speedup > 1.1 * r[1].weighted_speedup);
	}
}

static void test_memory_schedulers(void **state)
{
	static const struct pair pairs[] = { { "gups", "stream" }, { "gups", "stencil" } };
	static const enum cs_mem_policy policies[] = { CS_SCHED_FRFCFS, CS_SCHED_RR_FRFCFS,
		                                       CS_SCHED_ITS, CS_SCHED_WEIS };
	unsigned p, k;

	(void)state;
	for (p = 0; p < 2; p++) {
		struct cs_model_config cfg;
		struct cs_tenant_spec specs[2];
		struct cs_tenant_figures alone[2];
		struct cs_mix_result r[4];

		cs_model_config_defaults(&cfg);
		cfg.page_shift = 21;
		run_pair(&cfg, &pairs[p], alone, specs);
		for (k = 0; k < 4; k++) {
			cfg.sched.policy = policies[k];
			assert_int_equal(cs_run_mix(&cfg, specs, 2, CYCLES, alone, &r[k]), 0);
			printf("# %s+%s %-6s IT %.3f WS %.3f (MPKI %.0f/%.0f, B/cycle %.1f/%.1f)\n",
			       pairs[p].a, pairs[p].b, cs_mem_policy_name(policies[k]),
			       r[k].throughput, r[k].weighted_speedup, r[k].figures[0].mpki,
			       r[k].figures[1].mpki, r[k].figures[0].bandwidth,
			       r[k].figures[1].bandwidth);
		}
		assert_true(r[2].throughput > 1.05 * r[0].throughput);
		assert_true(r[3].weighted_speedup > 1.03 * r[0].weighted_speedup);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walker_policies),
		cmocka_unit_test(test_memory_schedulers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
