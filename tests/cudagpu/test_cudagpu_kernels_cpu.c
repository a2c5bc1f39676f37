// SPDX-License-Identifier: MIT
/*
 * test_cudagpu_kernels_cpu.c - the built-in kernels' CPU side, without a
 * GPU: RANDOM_ACCESS's per-thread starting states (GF(2) jump-ahead) against
 * stepping xorshift64 one step at a time, and the embedded PTX.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "builtin_kernels.h"
#include "vgpu/abi/kernels.h"

/* starts[t] must be the state after t * per_thread steps from the seed
 * (0 meaning VGPU_RANDOM_DEFAULT_SEED), the first t * per_thread keys of
 * vgpu_kernel_reference_random_access's stream being what threads before t use. */
static void check_starts(uint64_t seed, uint64_t per_thread, uint32_t threads)
{
	uint64_t *starts = calloc(threads, sizeof(*starts));
	uint64_t state = seed ? seed : VGPU_RANDOM_DEFAULT_SEED, step;
	uint32_t t;

	assert_non_null(starts);
	cudagpu_xorshift_starts(seed, per_thread, threads, starts);
	for (t = 0; t < threads; t++) {
		if (starts[t] != state)
			fail_msg("seed %#llx per_thread %llu: starts[%u] = %#llx, stepping gives %#llx",
			         (unsigned long long)seed, (unsigned long long)per_thread, t,
			         (unsigned long long)starts[t], (unsigned long long)state);
		for (step = 0; step < per_thread; step++)
			vgpu_xorshift64(&state);
	}
	free(starts);
}

static void test_starts_match_stepping(void **unused)
{
	static const uint64_t seeds[] = { 0, 1, 42, VGPU_RANDOM_DEFAULT_SEED,
		                          0xffffffffffffffffull, 0x8000000000000000ull };
	static const struct {
		uint64_t per_thread;
		uint32_t threads;
	} shapes[] = {
		{ 1, 300 }, { 7, 200 }, { 1000, 64 }, { 1ull << 20, 6 }, { 12345, 1 },
	};
	size_t i, j;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		for (j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++)
			check_starts(seeds[i], shapes[j].per_thread, shapes[j].threads);
}

/* per_thread 0: every thread starts where the seed does. */
static void test_starts_no_steps(void **unused)
{
	check_starts(0, 0, 4);
	check_starts(99, 0, 4);
}

/* A table of updates driven from the starts, thread by thread, equals the
 * sequential reference, including the last thread's partial share. */
static void test_starts_drive_the_reference(void **unused)
{
	enum { WORDS = 509, THREADS = 37 };
	const uint64_t updates = 10000, per_thread = (updates + THREADS - 1) / THREADS;
	uint64_t expect[WORDS] = { 0 }, got[WORDS] = { 0 }, starts[THREADS];
	uint32_t t;

	vgpu_kernel_reference_random_access(expect, sizeof(expect), updates, 0);
	cudagpu_xorshift_starts(0, per_thread, THREADS, starts);
	for (t = 0; t < THREADS; t++) {
		uint64_t i, end = (t + 1) * per_thread < updates ? (t + 1) * per_thread : updates;
		uint64_t s = starts[t];

		for (i = t * per_thread; i < end; i++) {
			uint64_t key = vgpu_xorshift64(&s);

			got[key % WORDS] ^= key;
		}
	}
	assert_memory_equal(got, expect, sizeof(expect));
}

static void test_ptx_embedded(void **unused)
{
	static const char *const entries[] = {
		"vgpu_fill", "vgpu_copy", "vgpu_stream", "vgpu_stencil",
		"vgpu_random_access", "vgpu_checksum", "vgpu_memset_pattern",
	};
	char needle[64];
	size_t i;

	assert_true(cudagpu_builtin_ptx_len > 0);
	assert_int_equal(cudagpu_builtin_ptx[cudagpu_builtin_ptx_len], '\0');
	assert_int_equal(strlen(cudagpu_builtin_ptx), cudagpu_builtin_ptx_len);
	assert_non_null(strstr(cudagpu_builtin_ptx, ".address_size 64"));
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		snprintf(needle, sizeof(needle), ".visible .entry %s(", entries[i]);
		if (!strstr(cudagpu_builtin_ptx, needle))
			fail_msg("the embedded PTX does not declare %s", needle);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_match_stepping),
		cmocka_unit_test(test_starts_no_steps),
		cmocka_unit_test(test_starts_drive_the_reference),
		cmocka_unit_test(test_ptx_embedded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
