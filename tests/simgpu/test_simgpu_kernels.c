// SPDX-License-Identifier: MIT
/*
 * test_simgpu_kernels.c - COPY, MEMSET and every built-in kernel byte for
 * byte against the CPU references (randomised, seeded), the modeled clock
 * (VRAM vs system RAM ratio, determinism) and the HAL copy engine.
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

static uint64_t random_below(uint64_t *state, uint64_t limit)
{
	return vgpu_xorshift64(state) % limit;
}

/* Three regions of 1 MiB: VRAM in 64 KiB pages, VRAM in 4 KiB pages,
 * non-coherent system RAM in 4 KiB pages; an offset in [0, 3 MiB) picks. */
#define REGION_BYTES MIB
static const uint64_t region_va[3] = { TEST_DATA_VA, TEST_DATA_VA + 64 * MIB,
	                               TEST_DATA_VA + 128 * MIB };

static void map_regions(struct test_gpu *gpu, struct test_channel *tc,
                        struct vgpu_hal_host_buf **buf)
{
	test_map_vram(gpu, tc->as, region_va[0], REGION_BYTES, VGPU_PAGE_64K, 0, NULL);
	test_map_vram(gpu, tc->as, region_va[1], REGION_BYTES, VGPU_PAGE_4K, 0, NULL);
	*buf = test_map_sysmem(gpu, tc->as, region_va[2], REGION_BYTES, VGPU_PAGE_4K,
	                       VGPU_TARGET_SYSMEM_NONCOHERENT, NULL);
}

struct random_range {
	uint64_t va;
	uint64_t bytes;
};

/* A random range (8-byte aligned when aligned) inside one region. */
static struct random_range pick_range(uint64_t *state, uint64_t max_bytes, bool aligned)
{
	struct random_range range;
	uint64_t region = random_below(state, 3), offset;

	range.bytes = 1 + random_below(state, max_bytes);
	offset = random_below(state, REGION_BYTES - range.bytes + 1);
	if (aligned) {
		range.bytes = (range.bytes + 7) & ~UINT64_C(7);
		offset &= ~UINT64_C(7);
		if (offset + range.bytes > REGION_BYTES)
			offset = REGION_BYTES - range.bytes;
	}
	range.va = region_va[region] + offset;
	return range;
}

static void submit(struct test_channel *tc, const uint32_t *words, uint32_t n)
{
	assert_true(test_submit_wait(tc, words, n));
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
}

static void read_range(struct test_channel *tc, struct random_range range, void *out)
{
	assert_int_equal(vgpu_hal_as_read(tc->as, range.va, out, range.bytes), 0);
}

static void test_kernels_match_reference(void **state)
{
	uint64_t seed = test_seed("kernels_match_reference"), rng = seed | 1;
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	struct vgpu_hal_host_buf *buf;
	uint8_t *gpu_bytes = malloc(2 * REGION_BYTES), *cpu_bytes = malloc(2 * REGION_BYTES);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	unsigned round;

	assert_non_null(gpu_bytes);
	assert_non_null(cpu_bytes);
	map_regions(gpu, tc, &buf);
	for (round = 0; round < 12; round++) {
		struct random_range a = pick_range(&rng, 300 * KIB, true);
		struct random_range b;
		uint64_t fill_seed = vgpu_xorshift64(&rng), result = 0, updates;
		unsigned passes = 1 + (unsigned)random_below(&rng, 4);
		uint32_t pattern = (uint32_t)vgpu_xorshift64(&rng), width, height;

		/* FILL */
		submit(tc, words, vgpu_push_launch_fill(words, a.va, a.bytes, fill_seed));
		read_range(tc, a, gpu_bytes);
		vgpu_kernel_reference_fill(cpu_bytes, a.bytes, fill_seed);
		assert_memory_equal(gpu_bytes, cpu_bytes, a.bytes);

		/* STREAM */
		submit(tc, words, vgpu_push_launch_stream(words, a.va, a.bytes, passes));
		read_range(tc, a, gpu_bytes);
		vgpu_kernel_reference_stream(cpu_bytes, a.bytes, passes);
		assert_memory_equal(gpu_bytes, cpu_bytes, a.bytes);

		/* CHECKSUM */
		submit(tc, words, vgpu_push_launch_checksum(words, a.va, a.bytes,
		                                            tc->semaphore_va + 32));
		assert_int_equal(vgpu_hal_as_read(tc->as, tc->semaphore_va + 32, &result, 8), 0);
		assert_true(result == vgpu_kernel_reference_checksum(cpu_bytes, a.bytes));

		/* RANDOM_ACCESS */
		updates = random_below(&rng, 5000);
		submit(tc, words, vgpu_push_launch_random_access(words, a.va, a.bytes, updates,
		                                                 fill_seed));
		read_range(tc, a, gpu_bytes);
		vgpu_kernel_reference_random_access(cpu_bytes, a.bytes, updates, fill_seed);
		assert_memory_equal(gpu_bytes, cpu_bytes, a.bytes);

		/* COPY command and COPY kernel, unaligned, across regions */
		do {
			b = pick_range(&rng, a.bytes, false);
		} while (b.va < a.va + a.bytes && a.va < b.va + b.bytes);
		{
			uint64_t skew = random_below(&rng, 8);
			uint64_t n = b.bytes > a.bytes - skew ? a.bytes - skew : b.bytes;
			struct random_range dst = { b.va, n };

			if (random_below(&rng, 2))
				submit(tc, words, vgpu_push_copy(words, b.va, a.va + skew, n));
			else
				submit(tc, words, vgpu_push_launch_copy(words, b.va, a.va + skew, n));
			read_range(tc, dst, gpu_bytes);
			assert_memory_equal(gpu_bytes, cpu_bytes + skew, n);
		}

		/* MEMSET, unaligned */
		b = pick_range(&rng, 200 * KIB, false);
		submit(tc, words, vgpu_push_memset(words, b.va, pattern, b.bytes));
		read_range(tc, b, gpu_bytes);
		{
			uint64_t i;

			for (i = 0; i < b.bytes; i++)
				assert_int_equal(gpu_bytes[i], (uint8_t)(pattern >> (8 * (i % 4))));
		}

		/* STENCIL: in from a FILLed range, out elsewhere */
		width = 1 + (uint32_t)random_below(&rng, 700);
		height = 1 + (uint32_t)random_below(&rng, 150);
		{
			uint64_t bytes = (uint64_t)width * height * 4;
			struct random_range in = { region_va[random_below(&rng, 3)], bytes };
			struct random_range out;

			if (bytes > REGION_BYTES / 2)
				continue;
			in.va += random_below(&rng, REGION_BYTES / 2 - bytes + 1) & ~UINT64_C(3);
			out.bytes = bytes;
			do {
				out.va = region_va[random_below(&rng, 3)] +
				         (random_below(&rng, REGION_BYTES - bytes + 1) & ~UINT64_C(3));
			} while (out.va < in.va + bytes && in.va < out.va + bytes);
			assert_int_equal(vgpu_hal_as_read(tc->as, in.va, cpu_bytes, bytes), 0);
			submit(tc, words, vgpu_push_launch_stencil(words, in.va, out.va, width, height));
			read_range(tc, out, gpu_bytes);
			vgpu_kernel_reference_stencil(cpu_bytes, cpu_bytes + REGION_BYTES, width, height);
			assert_memory_equal(gpu_bytes, cpu_bytes + REGION_BYTES, bytes);
		}
	}
	/* the fused reference agrees with the step-by-step one */
	vgpu_kernel_reference_fill(cpu_bytes, 64 * KIB, 77);
	vgpu_kernel_reference_stream(cpu_bytes, 64 * KIB, 3);
	assert_true(vgpu_kernel_reference_checksum(cpu_bytes, 64 * KIB) ==
	            vgpu_kernel_reference_fill_stream_checksum(77, 64 * KIB, 3));
	/* STREAM really transforms: x * A + B */
	assert_true(vgpu_stream_word(1) == VGPU_STREAM_MULTIPLIER + VGPU_STREAM_INCREMENT);
	free(gpu_bytes);
	free(cpu_bytes);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* ------------------------------------------------------------------------ */
/* Modeled clock                                                            */

struct timing_run {
	struct vgpu_hal_as_counters counters[3];
	uint64_t engine_ns[VGPU_ENGINE_COUNT];
};

/* STREAM over 4 MiB (64 KiB pages) in VRAM, coherent and non-coherent
 * system RAM, one address space each, all channels at once; plus copies. */
static void timing_workload(const struct simgpu_config *config, struct timing_run *run)
{
	static const enum vgpu_hal_target targets[] = {
		VGPU_TARGET_VRAM, VGPU_TARGET_SYSMEM_COHERENT, VGPU_TARGET_SYSMEM_NONCOHERENT,
	};
	struct test_gpu *gpu = test_gpu_create(config);
	struct test_channel *tc[3];
	struct vgpu_hal_host_buf *bufs[3] = { NULL, NULL, NULL };
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	const uint64_t bytes = 4 * MIB;
	unsigned i, start = 0;

	for (i = 0; i < 3; i++) {
		tc[i] = test_channel_create(gpu, NULL, 0);
		if (targets[i] == VGPU_TARGET_VRAM)
			test_map_vram(gpu, tc[i]->as, TEST_DATA_VA, bytes, VGPU_PAGE_64K, 0, NULL);
		else
			bufs[i] = test_map_sysmem(gpu, tc[i]->as, TEST_DATA_VA, bytes, VGPU_PAGE_64K,
			                          targets[i], NULL);
	}
	for (i = 0; i < 3; i++) {
		n = vgpu_push_launch_fill(words, TEST_DATA_VA, bytes, 3);
		n += vgpu_push_launch_stream(words + n, TEST_DATA_VA, bytes, 2);
		test_submit(tc[i], words, n);
		test_submit(tc[i], words, vgpu_push_semaphore_release(words, tc[i]->semaphore_va,
		                                                      1, true));
	}
	for (i = 0; i < 3; i++)
		vgpu_hal_channel_kick(tc[i]->channel);
	/* copies on the first address space, concurrently */
	assert_int_equal(vgpu_hal_copy(tc[0]->as, TEST_DATA_VA + bytes / 2, TEST_DATA_VA,
	                               bytes / 2, 1),
	                 0);
	for (i = 0; i < 3; i++)
		assert_true(test_wait_event(gpu, VGPU_EVENT_FENCE, tc[i]->info.id, false, 1, start,
		                            NULL));
	assert_true(test_wait_event(gpu, VGPU_EVENT_COPY_DONE, 0, false, 1, start, NULL));
	for (i = 0; i < 3; i++)
		vgpu_hal_as_counters(tc[i]->as, &run->counters[i]);
	for (i = 0; i < VGPU_ENGINE_COUNT; i++)
		run->engine_ns[i] = vgpu_hal_engine_modeled_ns(gpu->hal, i);
	for (i = 0; i < 3; i++) {
		uint64_t iova_unused;

		(void)iova_unused;
		test_channel_destroy(tc[i]);
	}
	for (i = 0; i < 3; i++)
		if (bufs[i])
			vgpu_hal_host_free(gpu->hal, bufs[i]);
	test_gpu_destroy(gpu);
}

static void test_modeled_time_ratio(void **state)
{
	struct simgpu_config config;
	struct timing_run run;
	double vram, coherent, noncoherent;
	const uint64_t bytes = 4 * MIB;

	test_config(&config);
	config.vram_latency_ns = 0;
	config.sysmem_coherent_latency_ns = 0;
	config.sysmem_noncoherent_latency_ns = 0;
	timing_workload(&config, &run);
	/* FILL writes once, STREAM reads and writes twice */
	assert_int_equal(run.counters[1].bytes_read[VGPU_TARGET_SYSMEM_COHERENT], 2 * bytes);
	assert_int_equal(run.counters[1].bytes_written[VGPU_TARGET_SYSMEM_COHERENT], 3 * bytes);
	assert_int_equal(run.counters[2].bytes_written[VGPU_TARGET_SYSMEM_NONCOHERENT], 3 * bytes);
	assert_int_equal(run.counters[2].bytes_read[VGPU_TARGET_VRAM],
	                 4 * (2 * 8 + 5)); /* its pushbuffers: two launches, a fence */
	vram = (double)run.counters[0].busy_ns[VGPU_ENGINE_COMPUTE];
	coherent = (double)run.counters[1].busy_ns[VGPU_ENGINE_COMPUTE];
	noncoherent = (double)run.counters[2].busy_ns[VGPU_ENGINE_COMPUTE];
	printf("# modeled STREAM: VRAM %.0f ns, coherent %.0f ns, non-coherent %.0f ns\n", vram,
	       coherent, noncoherent);
	assert_true(vram > 0);
	assert_true(coherent / vram > 900.0 / 24 * 0.99 && coherent / vram < 900.0 / 24 * 1.01);
	assert_true(noncoherent / vram > 900.0 / 25 * 0.99 &&
	            noncoherent / vram < 900.0 / 25 * 1.01);
	/* 5 sweeps of 4 MiB at 900 GB/s */
	assert_true(vram > 5.0 * bytes / 900.0 * 0.99 && vram < 5.0 * bytes / 900.0 * 1.01);
	/* the copy engine's time is counted separately */
	assert_true(run.counters[0].busy_ns[VGPU_ENGINE_COPY] > 0);
	assert_int_equal(run.counters[1].busy_ns[VGPU_ENGINE_COPY], 0);
	assert_int_equal(run.engine_ns[VGPU_ENGINE_COPY], run.counters[0].busy_ns[VGPU_ENGINE_COPY]);

	/* doubling the VRAM bandwidth halves the VRAM time */
	config.vram_bandwidth *= 2;
	{
		struct timing_run faster;

		timing_workload(&config, &faster);
		assert_true((double)faster.counters[0].busy_ns[VGPU_ENGINE_COMPUTE] / vram > 0.49 &&
		            (double)faster.counters[0].busy_ns[VGPU_ENGINE_COMPUTE] / vram < 0.51);
	}
}

static void test_modeled_time_deterministic(void **state)
{
	struct simgpu_config config;
	struct timing_run first, second;

	test_config(&config); /* default latencies */
	timing_workload(&config, &first);
	timing_workload(&config, &second);
	assert_memory_equal(first.counters, second.counters, sizeof(first.counters));
	assert_memory_equal(first.engine_ns, second.engine_ns, sizeof(first.engine_ns));
	assert_true(first.engine_ns[VGPU_ENGINE_COMPUTE] > 0);
}

/* ------------------------------------------------------------------------ */
/* Copy engine                                                              */

static void test_copy_engine_in_flight(void **state)
{
	enum { COPIES = 8 };
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct vgpu_hal_as *as;
	struct vgpu_hal_host_buf *buf;
	struct vgpu_hal_event event;
	uint8_t *expected = malloc(MIB), *actual = malloc(MIB);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct test_channel *tc;
	unsigned i, start, seen = 0;

	assert_int_equal(vgpu_hal_as_create(gpu->hal, &as), 0);
	/* ping-pong between VRAM (even slots) and system RAM (odd slots) */
	for (i = 0; i <= COPIES; i++) {
		uint64_t va = TEST_DATA_VA + (uint64_t)i * 2 * MIB;

		if (i % 2 == 0)
			test_map_vram(gpu, as, va, MIB, VGPU_PAGE_64K, VGPU_MAP_PRIVILEGED, NULL);
		else
			buf = test_map_sysmem(gpu, as, va, MIB, VGPU_PAGE_4K,
			                      VGPU_TARGET_SYSMEM_COHERENT, NULL);
	}
	(void)buf;
	vgpu_kernel_reference_fill(expected, MIB, 31);
	assert_int_equal(vgpu_hal_as_write(as, TEST_DATA_VA, expected, MIB), 0);
	/* compute keeps running on another address space meanwhile */
	tc = test_channel_create(gpu, NULL, 0);
	test_map_vram(gpu, tc->as, TEST_DATA_VA, 8 * MIB, VGPU_PAGE_64K, 0, NULL);
	test_submit(tc, words, vgpu_push_launch_stream(words, TEST_DATA_VA, 8 * MIB, 4));

	start = test_event_count(gpu);
	/* a chain: copy i reads what copy i - 1 wrote, so order matters */
	for (i = 0; i < COPIES; i++)
		assert_int_equal(vgpu_hal_copy(as, TEST_DATA_VA + (uint64_t)(i + 1) * 2 * MIB,
		                               TEST_DATA_VA + (uint64_t)i * 2 * MIB, MIB, 100 + i),
		                 0);
	/* a copy from an unmapped range fails alone */
	assert_int_equal(vgpu_hal_copy(as, TEST_DATA_VA, TEST_DATA_VA + 100 * MIB, 4096, 999), 0);
	assert_int_equal(vgpu_hal_copy(as, TEST_DATA_VA, TEST_DATA_VA, 0, 1000), -EINVAL);
	vgpu_hal_channel_kick(tc->channel);
	assert_true(test_submit_wait(tc, NULL, 0));
	assert_true(test_wait_event(gpu, VGPU_EVENT_COPY_DONE, 0, false, 999, start, &event));
	assert_int_equal(event.status, -EFAULT);
	assert_int_equal(event.cause, VGPU_FAULT_UNMAPPED);
	for (i = start; i < test_event_count(gpu); i++) {
		if (gpu->events[i].type != VGPU_EVENT_COPY_DONE || gpu->events[i].value == 999)
			continue;
		assert_int_equal(gpu->events[i].value, 100 + seen); /* in order */
		assert_int_equal(gpu->events[i].status, 0);
		seen++;
	}
	assert_int_equal(seen, COPIES);
	assert_int_equal(vgpu_hal_as_read(as, TEST_DATA_VA + COPIES * 2 * MIB, actual, MIB), 0);
	assert_memory_equal(actual, expected, MIB);
	assert_true(vgpu_hal_engine_modeled_ns(gpu->hal, VGPU_ENGINE_COPY) > 0);
	assert_true(vgpu_hal_engine_modeled_ns(gpu->hal, VGPU_ENGINE_COMPUTE) > 0);

	/* destroying an address space waits for its queued copies */
	start = test_event_count(gpu);
	assert_int_equal(vgpu_hal_copy(as, TEST_DATA_VA + 2 * MIB, TEST_DATA_VA, MIB, 2000), 0);
	vgpu_hal_as_destroy(as);
	assert_true(test_event_count(gpu) > start);
	assert_int_equal(gpu->events[start].value, 2000);
	free(expected);
	free(actual);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernels_match_reference),
		cmocka_unit_test(test_modeled_time_ratio),
		cmocka_unit_test(test_modeled_time_deterministic),
		cmocka_unit_test(test_copy_engine_in_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
