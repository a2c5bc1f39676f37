// SPDX-License-Identifier: MIT
/*
 * test_hal_copy.c - conformance of the copy engine (vgpu_hal_copy): VRAM to
 * host memory and back in a private address space, COPY_DONE events with
 * their cookies, faults, ordering, argument checks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_conformance.h"

static bool copy_done(uint64_t cookie, unsigned start, struct vgpu_hal_event *event)
{
	return wait_event(VGPU_EVENT_COPY_DONE, 0, false, cookie, start, event);
}

/* Poll until the copy engine's time (and the AS's copy time) has grown. */
static void expect_copy_time_grows(struct vgpu_hal_as *as, uint64_t engine_before,
                                   uint64_t as_before)
{
	struct vgpu_hal_as_counters counters;
	int ms;

	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		vgpu_hal_as_counters(as, &counters);
		if (vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY) > engine_before &&
		    counters.busy_ns[VGPU_ENGINE_COPY] > as_before)
			return;
		sleep_ms(1);
	}
	fail_msg("copy engine time did not grow after copies (engine %llu -> %llu ns, "
	         "address space %llu -> %llu ns)",
	         (unsigned long long)engine_before,
	         (unsigned long long)vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY),
	         (unsigned long long)as_before,
	         (unsigned long long)counters.busy_ns[VGPU_ENGINE_COPY]);
}

/* VRAM -> host memory -> other VRAM, whole pages and an unaligned piece. */
static void test_copy_vram_sysmem_roundtrip(void **state)
{
	uint64_t bytes = 2ull * suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *src = mem_vram(as, DATA_VA, bytes, suite.vram_page, 0);
	struct tmem *host = mem_sysmem(as, DATA2_VA, bytes, suite.vram_page,
	                               VGPU_TARGET_SYSMEM_NONCOHERENT, 0);
	struct tmem *dst = mem_vram(as, DATA3_VA, bytes, suite.vram_page, 0);
	uint8_t *data = reference_fill(bytes, 77), *zero = calloc(1, bytes);
	struct vgpu_hal_as_counters counters;
	struct vgpu_hal_event event;
	uint64_t engine_before = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY);
	unsigned start;

	assert_non_null(zero);
	vgpu_hal_as_counters(as, &counters);
	write_ok(as, DATA_VA, data, bytes);
	write_ok(as, DATA3_VA, zero, bytes);

	start = event_mark();
	assert_int_equal(vgpu_hal_copy(as, DATA2_VA, DATA_VA, bytes, 0x1111), 0);
	assert_true(copy_done(0x1111, start, &event));
	assert_int_equal(event.type, VGPU_EVENT_COPY_DONE);
	assert_int_equal(event.status, 0);
	expect_bytes(as, DATA2_VA, data, bytes, "VRAM copied to host memory");

	start = event_mark();
	assert_int_equal(vgpu_hal_copy(as, DATA3_VA, DATA2_VA, bytes, 0x2222), 0);
	assert_true(copy_done(0x2222, start, &event));
	assert_int_equal(event.status, 0);
	expect_bytes(as, DATA3_VA, data, bytes, "host memory copied back to VRAM");

	/* an unaligned piece across a page boundary */
	start = event_mark();
	write_ok(as, DATA3_VA, zero, bytes);
	assert_int_equal(vgpu_hal_copy(as, DATA3_VA + suite.vram_page - 777,
	                               DATA_VA + 13, 1000, 0x3333), 0);
	assert_true(copy_done(0x3333, start, &event));
	assert_int_equal(event.status, 0);
	memcpy(zero + suite.vram_page - 777, data + 13, 1000);
	expect_bytes(as, DATA3_VA, zero, bytes, "unaligned piece");

	expect_copy_time_grows(as, engine_before, counters.busy_ns[VGPU_ENGINE_COPY]);
	mem_free(dst);
	mem_free(host);
	mem_free(src);
	as_destroy_ok(as);
	free(data);
	free(zero);
}

/* A copy from or to an unmapped page completes with -EFAULT; the engine
 * goes on with the next one. */
static void test_copy_unmapped_efault(void **state)
{
	uint64_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *mem = mem_vram(as, DATA_VA, 2 * page, suite.vram_page, 0);
	uint8_t *data = reference_fill(page, 5);
	struct vgpu_hal_event event;
	unsigned start = event_mark();

	write_ok(as, DATA_VA, data, page);
	assert_int_equal(vgpu_hal_copy(as, DATA_VA + page, DATA2_VA, page, 0xdead1), 0);
	assert_int_equal(vgpu_hal_copy(as, DATA2_VA, DATA_VA, page, 0xdead2), 0);
	/* partly mapped: the source runs off the end of the mapping */
	assert_int_equal(vgpu_hal_copy(as, DATA_VA, DATA_VA + page, 2 * page, 0xdead3), 0);
	assert_int_equal(vgpu_hal_copy(as, DATA_VA + page, DATA_VA, page, 0x600d), 0);
	assert_true(copy_done(0xdead1, start, &event));
	assert_int_equal(event.status, -EFAULT);
	assert_int_equal(event.cause, VGPU_FAULT_UNMAPPED);
	assert_true(copy_done(0xdead2, start, &event));
	assert_int_equal(event.status, -EFAULT);
	assert_int_equal(event.cause, VGPU_FAULT_UNMAPPED);
	assert_true(copy_done(0xdead3, start, &event));
	assert_int_equal(event.status, -EFAULT);
	assert_true(copy_done(0x600d, start, &event));
	assert_int_equal(event.status, 0);
	/* the last copy ran after the failed ones: its source, page 0, may have
	 * been written by 0xdead3 (unspecified), so compare with page 0 now */
	read_ok(as, DATA_VA, data, page);
	expect_bytes(as, DATA_VA + page, data, page, "copy after failed copies");
	mem_free(mem);
	as_destroy_ok(as);
	free(data);
}

/* Queued copies run in order: a chain where each copy reads what the one
 * before wrote ends with the first chunk's data, and the events come in
 * submission order. */
static void test_copy_queue_in_order(void **state)
{
	enum { LINKS = 8 };
	const uint64_t chunk = 64 * KIB;
	uint64_t bytes = (LINKS + 1) * chunk;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *vram = mem_vram(as, DATA_VA, bytes, suite.vram_page, 0);
	struct tmem *host = mem_sysmem(as, DATA2_VA, bytes, suite.vram_page,
	                               VGPU_TARGET_SYSMEM_COHERENT, 0);
	/* The mappings are whole pages: up to 2 MiB each, more than bytes. */
	uint8_t *first = reference_fill(chunk, 31),
		*zero = calloc(1, vram->bytes > host->bytes ? vram->bytes : host->bytes);
	unsigned start, i, seen = 0, count;

	assert_non_null(zero);
	write_ok(as, DATA_VA, zero, vram->bytes);
	write_ok(as, DATA2_VA, zero, host->bytes);
	write_ok(as, DATA_VA, first, chunk);
	start = event_mark();
	/* chunk i -> chunk i + 1, alternating between VRAM and host memory */
	for (i = 0; i < LINKS; i++) {
		uint64_t src = (i % 2 ? DATA2_VA : DATA_VA) + i * chunk;
		uint64_t dst = (i % 2 ? DATA_VA : DATA2_VA) + (i + 1) * chunk;

		assert_int_equal(vgpu_hal_copy(as, dst, src, chunk, 100 + i), 0);
	}
	assert_true(copy_done(100 + LINKS - 1, start, NULL));
	count = event_mark();
	for (i = start; i < count; i++) {
		struct vgpu_hal_event event = event_at(i);

		if (event.type != VGPU_EVENT_COPY_DONE)
			continue;
		assert_true(event.value == 100 + seen);
		assert_int_equal(event.status, 0);
		seen++;
	}
	assert_int_equal(seen, LINKS);
	expect_bytes(as, (LINKS % 2 ? DATA2_VA : DATA_VA) + LINKS * chunk, first, chunk,
	             "end of the copy chain");
	mem_free(host);
	mem_free(vram);
	as_destroy_ok(as);
	free(first);
	free(zero);
}

/* bytes 0 is refused at once and raises no event. */
static void test_copy_invalid(void **state)
{
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *mem = mem_vram(as, DATA_VA, 2ull * suite.vram_page, suite.vram_page, 0);
	unsigned start = event_mark();

	assert_int_equal(vgpu_hal_copy(as, DATA_VA + suite.vram_page, DATA_VA, 0, 0xbad), -EINVAL);
	assert_int_equal(vgpu_hal_copy(as, DATA_VA + suite.vram_page, DATA_VA, 64, 0x600d), 0);
	assert_true(copy_done(0x600d, start, NULL));
	assert_int_equal(count_events(VGPU_EVENT_COPY_DONE, 0, start), 1);
	mem_free(mem);
	as_destroy_ok(as);
}

/* The private DMA address space may use privileged (and read-only source)
 * mappings: the copy engine is privileged. */
static void test_copy_privileged_mappings(void **state)
{
	uint64_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *src = mem_vram(as, DATA_VA, page, suite.vram_page,
	                            VGPU_MAP_PRIVILEGED | VGPU_MAP_READ_ONLY);
	struct tmem *dst = mem_sysmem(as, DATA2_VA, page, suite.vram_page,
	                              VGPU_TARGET_SYSMEM_COHERENT, VGPU_MAP_PRIVILEGED);
	uint8_t *data = reference_fill(page, 8);
	struct vgpu_hal_event event;
	unsigned start = event_mark();

	write_ok(as, DATA_VA, data, page);
	assert_int_equal(vgpu_hal_copy(as, DATA2_VA, DATA_VA, page, 0x77), 0);
	assert_true(copy_done(0x77, start, &event));
	assert_int_equal(event.status, 0);
	expect_bytes(as, DATA2_VA, data, page, "copy between privileged mappings");
	mem_free(dst);
	mem_free(src);
	as_destroy_ok(as);
	free(data);
}

static const struct CMUnitTest copy_tests[] = {
	HAL_TEST(test_copy_vram_sysmem_roundtrip),
	HAL_TEST(test_copy_unmapped_efault),
	HAL_TEST(test_copy_queue_in_order),
	HAL_TEST(test_copy_invalid),
	HAL_TEST(test_copy_privileged_mappings),
};

const struct hal_test_group hal_copy_group = {
	"hal-copy", copy_tests, sizeof(copy_tests) / sizeof(copy_tests[0]),
};
