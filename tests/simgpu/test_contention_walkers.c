// SPDX-License-Identifier: MIT
/*
 * test_contention_walkers.c - the page-walk subsystem (cs_walkers):
 * randomized runs (seed from VGPU_SEED, printed on failure) check that a
 * walk waits for at most one walk of another tenant under DWS, none under a
 * static partition, that every walk is served and no more walks run than
 * there are walkers; then the whole model with a walk-heavy
 * pair (gups vs stream) shows the baseline well above 1 and DWS at most 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "cs_events.h"
#include "cs_experiment.h"
#include "cs_walkers.h"

static uint64_t seed;

static uint64_t next_random(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

struct harness {
	struct cs_events *events;
	struct cs_walkers *walkers;
	uint64_t rng;
	uint32_t started, finished, max_waited[4];
	uint64_t waited_sum[4], count[4];
	uint32_t busy, nwalkers;
};

struct test_walk {
	struct cs_walk walk;
	struct harness *h;
	uint32_t service;
};

static void walk_done(void *target, void *arg, uint64_t now)
{
	struct harness *h = target;
	struct test_walk *tw = arg;

	h->finished++;
	h->busy--;
	cs_walkers_finish(h->walkers, &tw->walk, now);
	free(tw);
}

static void walk_start(void *ctx, struct cs_walk *walk, uint64_t now)
{
	struct harness *h = ctx;
	struct test_walk *tw = (struct test_walk *)walk;
	uint32_t t = walk->tenant;

	h->started++;
	h->busy++;
	assert_true(h->busy <= h->nwalkers);
	if (walk->foreign_waited > h->max_waited[t])
		h->max_waited[t] = walk->foreign_waited;
	h->waited_sum[t] += walk->foreign_waited;
	h->count[t]++;
	assert_int_equal(cs_events_at(h->events, now + tw->service, walk_done, h, tw), 0);
}

struct arrival {
	uint32_t tenant;
	uint32_t burst;
};

static void arrive(void *target, void *arg, uint64_t now)
{
	struct harness *h = target;
	uint32_t tenant = (uint32_t)(uintptr_t)arg, n, i;

	/* tenant 0 is walk-heavy (bursts of up to 24), the others light */
	n = tenant == 0 ? 1 + (uint32_t)(next_random(&h->rng) % 24)
	                : 1 + (uint32_t)(next_random(&h->rng) % 2);
	for (i = 0; i < n; i++) {
		struct test_walk *tw = calloc(1, sizeof(*tw));

		assert_non_null(tw);
		tw->walk.tenant = tenant;
		tw->h = h;
		tw->service = 50 + (uint32_t)(next_random(&h->rng) % 400);
		cs_walkers_submit(h->walkers, &tw->walk, now);
	}
	if (now < 200000)
		assert_int_equal(cs_events_at(h->events,
		                              now + 1 + next_random(&h->rng) %
		                                        (tenant == 0 ? 600 : 400),
		                              arrive, h, arg),
		                 0);
}

static void run(enum cs_walker_policy policy, uint32_t tenants, uint32_t walkers,
                uint32_t queue, struct harness *h)
{
	struct cs_walkers_config cfg;
	uint32_t t;

	cs_walkers_config_defaults(&cfg);
	cfg.policy = policy;
	cfg.walkers = walkers;
	cfg.queue_entries = queue;
	*h = (struct harness){ .rng = seed * 0x9e3779b97f4a7c15ull | 1, .nwalkers = walkers };
	h->events = cs_events_create();
	h->walkers = cs_walkers_create(&cfg, tenants, walk_start, h);
	assert_non_null(h->events);
	assert_non_null(h->walkers);
	for (t = 0; t < tenants; t++)
		assert_int_equal(cs_events_at(h->events, t, arrive, h, (void *)(uintptr_t)t), 0);
	while (cs_events_run_one(h->events, UINT64_MAX))
		;
	assert_int_equal(h->started, h->finished);
	for (t = 0; t < tenants; t++)
		assert_int_equal(cs_walkers_pending(h->walkers, t), 0);
	cs_walkers_destroy(h->walkers);
	cs_events_destroy(h->events);
}

static void test_dws_waits_for_at_most_one(void **state)
{
	static const uint32_t shapes[][3] = { { 2, 16, 192 }, { 3, 15, 192 }, { 4, 16, 64 },
		                              { 2, 4, 8 } };
	unsigned i, t;

	(void)state;
	for (i = 0; i < 4; i++) {
		struct harness h;

		run(CS_WALKERS_DWS, shapes[i][0], shapes[i][1], shapes[i][2], &h);
		assert_true(h.started > 1000);
		for (t = 0; t < shapes[i][0]; t++)
			if (h.max_waited[t] > 1)
				fail_msg("seed %llu: DWS, %u tenants: a walk of tenant %u waited for %u "
				         "walks of others",
				         (unsigned long long)seed, shapes[i][0], t, h.max_waited[t]);
	}
}

static void test_static_never_interleaves(void **state)
{
	struct harness h;
	unsigned t;

	(void)state;
	run(CS_WALKERS_STATIC, 3, 16, 192, &h);
	for (t = 0; t < 3; t++)
		assert_int_equal(h.max_waited[t], 0);
}

/* The same arrivals through the shared queue: the light tenants wait behind
 * the heavy one's bursts. */
static void test_shared_interleaves(void **state)
{
	struct harness shared, dwspp;

	(void)state;
	run(CS_WALKERS_SHARED, 2, 16, 192, &shared);
	run(CS_WALKERS_DWSPP, 2, 16, 192, &dwspp);
	printf("# seed %llu: interleaving of the light tenant: shared %.2f (max %u), "
	       "dws++ %.3f (max %u)\n",
	       (unsigned long long)seed, (double)shared.waited_sum[1] / shared.count[1],
	       shared.max_waited[1], (double)dwspp.waited_sum[1] / dwspp.count[1],
	       dwspp.max_waited[1]);
	if ((double)shared.waited_sum[1] / shared.count[1] <= 1.0)
		fail_msg("seed %llu: the shared queue should interleave", (unsigned long long)seed);
}

/* The whole model, gups (walk-heavy) against stream, their sizes and gups's
 * random stream drawn from the seed. */
static void test_model_gups_stream(void **state)
{
	struct cs_model_config cfg;
	struct cs_tenant_spec specs[2];
	struct cs_tenant_figures alone[2];
	struct cs_mix_result base, dws;
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull | 1;
	char gups[96], stream[64];
	unsigned i;

	(void)state;
	cs_model_config_defaults(&cfg);
	snprintf(gups, sizeof(gups), "gups:bytes=%uM,seed=%llu", 256u << (next_random(&rng) % 3),
	         (unsigned long long)(next_random(&rng) | 1));
	snprintf(stream, sizeof(stream), "stream:bytes=%uM", 16u << (next_random(&rng) % 3));
	printf("# seed %llu: %s against %s\n", (unsigned long long)seed, gups, stream);
	assert_int_equal(cs_tenant_spec_parse(gups, &specs[0]), 0);
	assert_int_equal(cs_tenant_spec_parse(stream, &specs[1]), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(cs_run_alone(&cfg, &specs[i], cs_mix_sms(&cfg, 2, i), 150000,
		                              &alone[i]), 0);
	assert_int_equal(cs_run_mix(&cfg, specs, 2, 150000, alone, &base), 0);
	cfg.walkers.policy = CS_WALKERS_DWS;
	assert_int_equal(cs_run_mix(&cfg, specs, 2, 150000, alone, &dws), 0);
	for (i = 0; i < 2; i++)
		printf("# %-6s interleaving: shared %.3f (max %u), dws %.3f (max %u)\n",
		       specs[i].name, base.figures[i].interleaving, base.figures[i].interleaving_max,
		       dws.figures[i].interleaving, dws.figures[i].interleaving_max);
	assert_true(dws.figures[0].walks > 1000 && dws.figures[1].walks > 100);
	for (i = 0; i < 2; i++)
		if (dws.figures[i].interleaving_max > 1)
			fail_msg("seed %llu: under DWS a walk of %s waited for %u walks of the other",
			         (unsigned long long)seed, specs[i].name, dws.figures[i].interleaving_max);
	/* stream's walks queue behind gups's in the shared queue */
	if (base.figures[1].interleaving <= 1.0)
		fail_msg("seed %llu: shared queue, stream waited for %.3f gups walks per walk",
		         (unsigned long long)seed, base.figures[1].interleaving);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dws_waits_for_at_most_one),
		cmocka_unit_test(test_static_never_interleaves),
		cmocka_unit_test(test_shared_interleaves),
		cmocka_unit_test(test_model_gups_stream),
	};
	const char *env = getenv("VGPU_SEED");

	seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	printf("# seed %llu (set VGPU_SEED to repeat)\n", (unsigned long long)seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
