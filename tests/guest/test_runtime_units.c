// SPDX-License-Identifier: MIT
/*
 * test_runtime_units.c - the runtime's pieces that need no device: the
 * pushbuffer/GPFIFO bookkeeping, the CPU references of the workloads, and
 * how sizes, durations and workload names are parsed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "pushbuffer_ring.h"
#include "vgpu/abi/kernels.h"
#include "vgpu_workloads.h"
#include "workload_reference.h"

/* ------------------------------------------------------------------------ */
/* pushbuffer_ring                                                          */

static void test_ring_places_contiguously_and_wraps(void **state)
{
	struct pushbuffer_ring ring;
	uint64_t position, fence = 0;
	int i;

	(void)state;
	assert_int_equal(pushbuffer_ring_init(&ring, 1000, 7), 0);
	assert_int_equal(ring.bytes, 1000 & ~7u);
	/* 100-byte submissions: 9 fit (900 bytes), the 10th starts over at 0. */
	for (i = 0; i < 7; i++) {
		assert_int_equal(pushbuffer_ring_place(&ring, 100, &position), 0);
		assert_int_equal(pushbuffer_ring_offset(&ring, position), 104 * i);
		pushbuffer_ring_commit(&ring, position, 100, ++fence);
	}
	/* 7 in flight = max_inflight (GPFIFO entries - 1): no slot. */
	assert_int_equal(pushbuffer_ring_place(&ring, 8, &position), -EAGAIN);
	pushbuffer_ring_retire(&ring, 2);
	assert_int_equal(ring.count, 5);
	assert_int_equal(ring.tail, 2 * 104);
	assert_int_equal(pushbuffer_ring_place(&ring, 100, &position), 0);
	assert_int_equal(pushbuffer_ring_offset(&ring, position), 728);
	pushbuffer_ring_commit(&ring, position, 100, ++fence);
	/* 200 more would cross the end (832 + 200): start over at 0, which is
	 * free because the GPU is past [0, 208). */
	assert_int_equal(pushbuffer_ring_place(&ring, 200, &position), 0);
	assert_int_equal(position, ring.bytes);
	pushbuffer_ring_commit(&ring, position, 200, ++fence);
	assert_int_equal(ring.wraps, 1);
	assert_int_equal(ring.count, 7);
	/* No GPFIFO slot; then a slot but no space: [200, 400) is still
	 * read by fence 4's submission at 312..416. */
	assert_int_equal(pushbuffer_ring_place(&ring, 200, &position), -EAGAIN);
	pushbuffer_ring_retire(&ring, 3);
	assert_int_equal(ring.tail, 312);
	assert_int_equal(pushbuffer_ring_place(&ring, 200, &position), -EAGAIN);
	assert_true(pushbuffer_ring_oldest_fence(&ring, &fence));
	assert_int_equal(fence, 4);
	pushbuffer_ring_retire(&ring, 4);
	assert_int_equal(pushbuffer_ring_place(&ring, 200, &position), 0);
	assert_int_equal(pushbuffer_ring_offset(&ring, position), 200);
	fence = 9;
	pushbuffer_ring_retire(&ring, 1000);
	assert_int_equal(ring.count, 0);
	assert_false(pushbuffer_ring_oldest_fence(&ring, &fence));
	/* Never more than half the ring at once. */
	assert_int_equal(pushbuffer_ring_place(&ring, ring.bytes / 2 + 8, &position), -EINVAL);
	assert_int_equal(pushbuffer_ring_place(&ring, 0, &position), -EINVAL);
	pushbuffer_ring_fini(&ring);
	assert_int_equal(pushbuffer_ring_init(&ring, 32, 4), -EINVAL);
	assert_int_equal(pushbuffer_ring_init(&ring, 4096, 0), -EINVAL);
}

/* Random lengths and retirements: live spans never overlap, and the ring
 * never hands out space the "GPU" (fences not yet retired) still owns. */
static void test_ring_property(void **state)
{
	const char *env = getenv("VGPU_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL), fence = 0;
	uint64_t completed = 0;
	struct pushbuffer_ring ring;
	struct {
		uint64_t start, end;
	} live[64];
	unsigned count = 0, first = 0, step, i;

	(void)state;
	if (!seed)
		seed = 1;
	print_message("seed %llu (set VGPU_SEED to repeat)\n", (unsigned long long)seed);
	assert_int_equal(pushbuffer_ring_init(&ring, 4096, 63), 0);
	for (step = 0; step < 200000; step++) {
		uint64_t r = vgpu_xorshift64(&seed), position;
		uint32_t len = (uint32_t)(r % 2048) + 4;

		if (r >> 62 == 0 && completed < fence) {
			completed += (r >> 20) % (fence - completed) + 1;
			pushbuffer_ring_retire(&ring, completed);
			while (count && live[first % 64].end <= ring.tail) {
				first++;
				count--;
			}
			continue;
		}
		if (pushbuffer_ring_place(&ring, len, &position) != 0)
			continue;
		/* Inside one lap of the ring, after everything live. */
		assert_true(pushbuffer_ring_offset(&ring, position) + len <= ring.bytes);
		for (i = 0; i < count; i++) {
			uint64_t s = live[(first + i) % 64].start, e = live[(first + i) % 64].end;

			assert_true(position >= e || position + len <= s);
			assert_true(position + len - s <= ring.bytes);
		}
		pushbuffer_ring_commit(&ring, position, len, ++fence);
		live[(first + count) % 64].start = position;
		live[(first + count) % 64].end = position + pushbuffer_ring_span_bytes(len);
		count++;
		assert_true(count <= 63);
	}
	assert_true(ring.wraps > 100);
	pushbuffer_ring_fini(&ring);
}

/* ------------------------------------------------------------------------ */
/* CPU references                                                           */

static void test_stream_reference_matches_simgpu(void **state)
{
	uint64_t seed, passes;
	size_t bytes = 4096;
	uint64_t *words = malloc(bytes);

	(void)state;
	for (seed = 0; seed < 4; seed++) {
		for (passes = 0; passes < 9; passes++)
			assert_int_equal(vgpu_reference_fill_stream_checksum(seed * 77, bytes, passes),
			                 vgpu_kernel_reference_fill_stream_checksum(
			                         seed * 77, bytes, (unsigned)passes));
	}
	/* Many passes, against the materialised data. */
	vgpu_kernel_reference_fill(words, bytes, 99);
	vgpu_kernel_reference_stream(words, bytes, 1000);
	assert_int_equal(vgpu_reference_fill_stream_checksum(99, bytes, 1000),
	                 vgpu_kernel_reference_checksum(words, bytes));
	free(words);
}

static void test_stencil_and_gups_references(void **state)
{
	uint32_t width = 16, height = 8;
	size_t bytes = (size_t)width * height * 4;
	uint8_t *a = malloc(bytes), *b = malloc(bytes);
	uint64_t checksum, words = bytes / 8;

	(void)state;
	vgpu_kernel_reference_fill(a, bytes, 5);
	vgpu_kernel_reference_stencil(a, b, width, height);
	vgpu_kernel_reference_stencil(b, a, width, height);
	vgpu_kernel_reference_stencil(a, b, width, height);
	assert_int_equal(workload_reference_stencil(5, width, height, 3, &checksum), 0);
	assert_int_equal(checksum, vgpu_kernel_reference_checksum(b, bytes));
	assert_int_equal(workload_reference_stencil(5, width, height, 0, &checksum), 0);
	assert_int_equal(checksum, vgpu_kernel_reference_fill_stream_checksum(5, bytes, 0));

	vgpu_kernel_reference_fill(a, bytes, vgpu_workload_buffer_seed(7, 3, 0));
	vgpu_kernel_reference_random_access(a, bytes, words, vgpu_workload_buffer_seed(7, 3, 1));
	vgpu_kernel_reference_random_access(a, bytes, words, vgpu_workload_buffer_seed(7, 3, 2));
	assert_int_equal(workload_reference_gups(7, 3, bytes, words, 2, &checksum), 0);
	assert_int_equal(checksum, vgpu_kernel_reference_checksum(a, bytes));
	/* Buffer seeds differ by buffer and by iteration. */
	assert_true(vgpu_workload_buffer_seed(7, 3, 0) != vgpu_workload_buffer_seed(7, 4, 0));
	assert_true(vgpu_workload_buffer_seed(7, 3, 0) != vgpu_workload_buffer_seed(7, 3, 1));
	free(a);
	free(b);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

static void test_parse_sizes(void **state)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t bytes;
	} cases[] = {
		{ "4096", 0, 4096 },       { "256M", 0, 256ull << 20 }, { "256MiB", 0, 256ull << 20 },
		{ "1G", 0, 1ull << 30 },   { "1.5g", 0, 3ull << 29 },   { "64k", 0, 65536 },
		{ "2T", 0, 2ull << 40 },   { "12b", 0, 12 },            { "", -EINVAL, 0 },
		{ "M", -EINVAL, 0 },       { "-1M", -EINVAL, 0 },       { "10X", -EINVAL, 0 },
		{ " 1M", -EINVAL, 0 },     { "1M ", -EINVAL, 0 },       { "99999999T", -ERANGE, 0 },
		{ "nan", -EINVAL, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t bytes = 0;

		print_message("size '%s'\n", cases[i].text);
		assert_int_equal(vgpu_parse_size(cases[i].text, &bytes), cases[i].ret);
		if (!cases[i].ret)
			assert_int_equal(bytes, cases[i].bytes);
	}
}

static void test_format_bytes(void **state)
{
	char buf[32];

	(void)state;
	vgpu_format_bytes(512, buf, sizeof(buf));
	assert_string_equal(buf, "512 B");
	vgpu_format_bytes(1536, buf, sizeof(buf));
	assert_string_equal(buf, "1.5 KiB");
	vgpu_format_bytes(2ull << 30, buf, sizeof(buf));
	assert_string_equal(buf, "2.0 GiB");
	vgpu_format_bytes(3ull << 50, buf, sizeof(buf));
	assert_string_equal(buf, "3072.0 TiB");
}

static void test_parse_durations_and_names(void **state)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t ns;
	} cases[] = {
		{ "10s", 0, 10000000000ull }, { "500ms", 0, 500000000ull }, { "2m", 0, 120000000000ull },
		{ "1h", 0, 3600000000000ull }, { "250us", 0, 250000ull },   { "3", 0, 3000000000ull },
		{ "0.5s", 0, 500000000ull },  { "10 s", -EINVAL, 0 },       { "s", -EINVAL, 0 },
		{ "1d", -EINVAL, 0 },
	};
	enum vgpu_workload_kind kind;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ns = 0;

		print_message("duration '%s'\n", cases[i].text);
		assert_int_equal(vgpu_parse_duration(cases[i].text, &ns), cases[i].ret);
		if (!cases[i].ret)
			assert_int_equal(ns, cases[i].ns);
	}
	assert_int_equal(vgpu_workload_parse("stream", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_STREAM);
	assert_int_equal(vgpu_workload_parse("alloc", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_ALLOC_LEAK);
	assert_int_equal(vgpu_workload_parse("alloc-leak", &kind), 0);
	assert_int_equal(vgpu_workload_parse("gups", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_GUPS);
	assert_int_equal(vgpu_workload_parse("stencil", &kind), 0);
	assert_int_equal(vgpu_workload_parse("Stream", &kind), -EINVAL);
	assert_string_equal(vgpu_workload_name(VGPU_WORKLOAD_ALLOC_LEAK), "alloc-leak");
	assert_int_equal(vgpu_workload_parse("escape", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_ESCAPE);
	assert_string_equal(vgpu_workload_name(VGPU_WORKLOAD_ESCAPE), "escape");
	assert_int_equal(vgpu_workload_parse("soak", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_SOAK);
	assert_string_equal(vgpu_workload_name(VGPU_WORKLOAD_SOAK), "soak");
	assert_int_equal(vgpu_workload_parse("copy-flood", &kind), 0);
	assert_int_equal(kind, VGPU_WORKLOAD_COPY_FLOOD);
	assert_string_equal(vgpu_workload_name(VGPU_WORKLOAD_COPY_FLOOD), "copy-flood");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_places_contiguously_and_wraps),
		cmocka_unit_test(test_ring_property),
		cmocka_unit_test(test_stream_reference_matches_simgpu),
		cmocka_unit_test(test_stencil_and_gups_references),
		cmocka_unit_test(test_parse_sizes),
		cmocka_unit_test(test_format_bytes),
		cmocka_unit_test(test_parse_durations_and_names),
	};

	return cmocka_run_group_tests_name("guest runtime units", tests, NULL, NULL);
}
