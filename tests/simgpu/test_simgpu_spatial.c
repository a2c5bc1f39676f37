// SPDX-License-Identifier: MIT
/*
 * test_simgpu_spatial.c - simgpu's spatial sharing (config.sharing =
 * SIMGPU_SHARING_SPATIAL, simgpu/spatial.h):
 *  - the functional results (bytes written, fences and their order per
 *    channel) equal the time-sliced mode's for random command streams of
 *    several tenants under a random walker policy and memory scheduler
 *    (seeded: SIMGPU_TEST_SEED);
 *  - two tenants' kernels overlap in modeled time (the compute engine's
 *    modeled time is less than the sum of the tenants' busy times, which it
 *    equals when time-sliced) and their durations come from the contention
 *    model (the figures of vgpu_hal_as_contention);
 *  - a walk waits for at most one walk of another tenant under DWS, and
 *    for more in the shared baseline with a walk-heavy neighbour.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "simgpu_test.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define TENANTS 3
#define COMMANDS 12
#define DATA_BYTES MIB

static uint64_t below(uint64_t *state, uint64_t limit)
{
	return vgpu_xorshift64(state) % limit;
}

/* One random command on [TEST_DATA_VA, + DATA_BYTES), 8-byte aligned. */
static uint32_t random_command(uint64_t *rng, uint32_t *words)
{
	uint64_t half = DATA_BYTES / 2;
	uint64_t bytes = 8 * (1 + below(rng, half / 8 / 4));
	uint64_t a = TEST_DATA_VA + 8 * below(rng, (half - bytes) / 8);
	uint64_t b = TEST_DATA_VA + half + 8 * below(rng, (half - bytes) / 8);

	switch (below(rng, 8)) {
	case 0:
		return vgpu_push_launch_fill(words, a, bytes, vgpu_xorshift64(rng));
	case 1:
		return vgpu_push_launch_stream(words, a, bytes, 1 + (uint32_t)below(rng, 3));
	case 2:
		return vgpu_push_launch_random_access(words, TEST_DATA_VA, DATA_BYTES,
		                                      1 + below(rng, 4096),
		                                      vgpu_xorshift64(rng) | 1);
	case 3:
		return vgpu_push_launch_checksum(words, a, bytes, b);
	case 4:
		return vgpu_push_launch_copy(words, b, a, bytes);
	case 5:
		return vgpu_push_launch_stencil(words, a, b, 64, (uint32_t)(bytes / 256) + 1);
	case 6:
		return vgpu_push_memset(words, a, (uint32_t)vgpu_xorshift64(rng), bytes);
	default:
		return vgpu_push_copy(words, a, b, bytes);
	}
}

struct run_result {
	uint8_t data[TENANTS][DATA_BYTES];
	uint64_t fences[TENANTS][COMMANDS]; /* fence values in the order seen */
	unsigned fence_count[TENANTS];
};

static void run_mode(uint64_t seed, const struct simgpu_config *config, struct run_result *out)
{
	struct test_gpu *gpu = test_gpu_create(config);
	struct test_channel *tc[TENANTS];
	uint32_t words[64];
	unsigned t, i, e, start;

	memset(out, 0, sizeof(*out));
	start = test_event_count(gpu);
	for (t = 0; t < TENANTS; t++) {
		tc[t] = test_channel_create(gpu, NULL, 0);
		test_map_vram(gpu, tc[t]->as, TEST_DATA_VA, DATA_BYTES,
		              t % 2 ? VGPU_PAGE_4K : VGPU_PAGE_64K, 0, NULL);
	}
	for (t = 0; t < TENANTS; t++) {
		uint64_t rng = (seed + t) | 1;

		for (i = 0; i < COMMANDS; i++) {
			uint32_t n = random_command(&rng, words);

			n += vgpu_push_semaphore_release(words + n, tc[t]->semaphore_va, 1000 + i,
			                                 true);
			test_submit(tc[t], words, n);
		}
		vgpu_hal_channel_kick(tc[t]->channel);
	}
	for (t = 0; t < TENANTS; t++)
		assert_true(test_submit_wait(tc[t], NULL, 0));
	for (t = 0; t < TENANTS; t++) {
		assert_int_equal(vgpu_hal_channel_state(tc[t]->channel, NULL), VGPU_CHANNEL_OK);
		assert_int_equal(vgpu_hal_as_read(tc[t]->as, TEST_DATA_VA, out->data[t], DATA_BYTES),
		                 0);
	}
	pthread_mutex_lock(&gpu->lock);
	for (e = start; e < gpu->event_count; e++) {
		const struct vgpu_hal_event *ev = &gpu->events[e];

		for (t = 0; t < TENANTS; t++) {
			if (ev->type != VGPU_EVENT_FENCE || ev->channel_id != tc[t]->info.id ||
			    ev->value < 1000 || out->fence_count[t] >= COMMANDS)
				continue;
			out->fences[t][out->fence_count[t]++] = ev->value;
		}
	}
	pthread_mutex_unlock(&gpu->lock);
	for (t = 0; t < TENANTS; t++)
		test_channel_destroy(tc[t]);
	test_gpu_destroy(gpu);
}

static void test_functional_results_identical(void **state)
{
	uint64_t seed = test_seed("functional_results_identical"), rng = seed | 1;
	struct simgpu_config sliced, spatial;
	struct run_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	unsigned t, i;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	test_config(&sliced);
	spatial = sliced;
	spatial.sharing = SIMGPU_SHARING_SPATIAL;
	spatial.spatial_walkers = (enum simgpu_walkers)below(&rng, 4);
	spatial.spatial_memsched = (enum simgpu_memsched)below(&rng, 5);
	printf("spatial: walkers %s, scheduler %s\n", simgpu_walkers_name(spatial.spatial_walkers),
	       simgpu_memsched_name(spatial.spatial_memsched));
	run_mode(seed, &sliced, a);
	run_mode(seed, &spatial, b);
	for (t = 0; t < TENANTS; t++) {
		assert_int_equal(a->fence_count[t], COMMANDS);
		assert_int_equal(b->fence_count[t], COMMANDS);
		for (i = 0; i < COMMANDS; i++) {
			assert_int_equal(a->fences[t][i], 1000 + i);
			assert_int_equal(b->fences[t][i], 1000 + i);
		}
		if (memcmp(a->data[t], b->data[t], DATA_BYTES))
			fail_msg("tenant %u: memory differs between modes (seed %llu)", t,
			         (unsigned long long)seed);
	}
	free(a);
	free(b);
}

#define GUPS_BYTES (64 * MIB)

struct pair {
	struct vgpu_hal_as_contention fig[2];
	struct vgpu_hal_as_counters counters[2];
	uint64_t engine_ns;
	int contention_ret;
};

/* gups on a 64 MiB table beside stream over 1 MiB, both submitted before
 * either runs. */
static void run_pair(const struct simgpu_config *config, struct pair *out)
{
	struct test_gpu *gpu = test_gpu_create(config);
	struct test_channel *tc[2];
	uint32_t words[64], n;
	unsigned t;

	tc[0] = test_channel_create(gpu, NULL, 0);
	tc[1] = test_channel_create(gpu, NULL, 0);
	test_map_vram(gpu, tc[0]->as, TEST_DATA_VA, GUPS_BYTES, VGPU_PAGE_64K, 0, NULL);
	test_map_vram(gpu, tc[1]->as, TEST_DATA_VA, MIB, VGPU_PAGE_64K, 0, NULL);
	vgpu_hal_channel_set_fetch(tc[0]->channel, false);
	vgpu_hal_channel_set_fetch(tc[1]->channel, false);
	n = vgpu_push_launch_random_access(words, TEST_DATA_VA, GUPS_BYTES, 32768, 7);
	test_submit(tc[0], words, n);
	n = vgpu_push_launch_stream(words, TEST_DATA_VA, MIB, 2);
	test_submit(tc[1], words, n);
	vgpu_hal_channel_set_fetch(tc[0]->channel, true);
	vgpu_hal_channel_set_fetch(tc[1]->channel, true);
	for (t = 0; t < 2; t++)
		assert_true(test_submit_wait(tc[t], NULL, 0));
	out->contention_ret = 0;
	for (t = 0; t < 2; t++) {
		vgpu_hal_as_counters(tc[t]->as, &out->counters[t]);
		if (vgpu_hal_as_contention(tc[t]->as, &out->fig[t]))
			out->contention_ret = -ENOTSUP;
	}
	out->engine_ns = vgpu_hal_engine_modeled_ns(gpu->hal, VGPU_ENGINE_COMPUTE);
	for (t = 0; t < 2; t++)
		test_channel_destroy(tc[t]);
	test_gpu_destroy(gpu);
}

static void test_kernels_overlap_in_modeled_time(void **state)
{
	struct simgpu_config config;
	struct pair sliced, spatial;
	uint64_t sum;
	unsigned t;

	(void)state;
	test_config(&config);
	run_pair(&config, &sliced);
	assert_int_equal(sliced.contention_ret, -ENOTSUP);
	sum = sliced.counters[0].busy_ns[VGPU_ENGINE_COMPUTE] +
	      sliced.counters[1].busy_ns[VGPU_ENGINE_COMPUTE];
	/* time-sliced: one at a time (ns rounding per AS) */
	assert_true(sliced.engine_ns + 2 >= sum && sliced.engine_ns <= sum + 2);

	config.sharing = SIMGPU_SHARING_SPATIAL;
	config.spatial_walkers = SIMGPU_WALKERS_DWS;
	run_pair(&config, &spatial);
	assert_int_equal(spatial.contention_ret, 0);
	sum = spatial.counters[0].busy_ns[VGPU_ENGINE_COMPUTE] +
	      spatial.counters[1].busy_ns[VGPU_ENGINE_COMPUTE];
	printf("spatial: busy %llu + %llu ns, engine %llu ns\n",
	       (unsigned long long)spatial.counters[0].busy_ns[VGPU_ENGINE_COMPUTE],
	       (unsigned long long)spatial.counters[1].busy_ns[VGPU_ENGINE_COMPUTE],
	       (unsigned long long)spatial.engine_ns);
	assert_true(spatial.engine_ns < sum);
	for (t = 0; t < 2; t++) {
		const struct vgpu_hal_as_contention *f = &spatial.fig[t];
		uint64_t model_ns = f->cycles * 1000 / f->core_mhz;

		assert_int_equal(f->kernels, 1);
		assert_true(f->instructions > 0 && f->cycles > 0 && f->alone_cycles > 0);
		/* the busy time is the modeled duration (+ the fence's fixed cost) */
		assert_true(spatial.counters[t].busy_ns[VGPU_ENGINE_COMPUTE] + 1 >= model_ns);
		assert_true(spatial.counters[t].busy_ns[VGPU_ENGINE_COMPUTE] <= model_ns + 1000);
		/* DWS: at most one walk of the other tenant per walk */
		assert_true(f->foreign_walks_waited_max <= 1);
	}
	assert_true(spatial.fig[0].walks > 0);
	/* whichever finished second ran beside the first */
	assert_true(spatial.fig[0].corunner_kernels + spatial.fig[1].corunner_kernels >= 1);
}

static void test_shared_walkers_interleave(void **state)
{
	struct simgpu_config config;
	struct pair shared;

	(void)state;
	test_config(&config);
	config.sharing = SIMGPU_SHARING_SPATIAL;
	config.spatial_walkers = SIMGPU_WALKERS_SHARED;
	run_pair(&config, &shared);
	printf("shared: interleaving max %u / %u\n", shared.fig[0].foreign_walks_waited_max,
	       shared.fig[1].foreign_walks_waited_max);
	assert_true(shared.fig[0].foreign_walks_waited_max > 1 ||
	            shared.fig[1].foreign_walks_waited_max > 1);
}

static void test_names(void **state)
{
	enum simgpu_sharing sharing;
	enum simgpu_walkers walkers;
	enum simgpu_memsched memsched;

	(void)state;
	assert_int_equal(simgpu_sharing_parse("spatial", &sharing), 0);
	assert_int_equal(sharing, SIMGPU_SHARING_SPATIAL);
	assert_int_equal(simgpu_walkers_parse("dws++", &walkers), 0);
	assert_int_equal(walkers, SIMGPU_WALKERS_DWSPP);
	assert_int_equal(simgpu_memsched_parse("weis", &memsched), 0);
	assert_int_equal(memsched, SIMGPU_MEMSCHED_WEIS);
	assert_int_equal(simgpu_memsched_parse("fifo", &memsched), -EINVAL);
	assert_string_equal(simgpu_walkers_name(SIMGPU_WALKERS_STATIC), "static");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_functional_results_identical),
		cmocka_unit_test(test_kernels_overlap_in_modeled_time),
		cmocka_unit_test(test_shared_walkers_interleave),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
