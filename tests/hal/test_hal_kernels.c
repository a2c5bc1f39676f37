// SPDX-License-Identifier: MIT
/*
 * test_hal_kernels.c - the built-in kernels (vgpu/abi/kernels.h), byte
 * for byte against their CPU references, on VRAM and on host memory the GPU
 * reaches through the IOMMU ("evicted" data), and the GPUswap move itself:
 * a chunk copied to host memory and remapped at the same VA keeps working.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_conformance.h"

/* A channel and two data areas: a at DATA_VA on one target, b at DATA2_VA
 * on the other. */
struct kfix {
	struct tspace *sp;
	struct tchan *tc;
	struct tmem *a, *b;
	uint64_t bytes;
	enum vgpu_hal_target target;
	char what[96];
};

static const enum vgpu_hal_target targets[] = {
	VGPU_TARGET_VRAM,
	VGPU_TARGET_SYSMEM_COHERENT,
};

static struct tmem *data_mem(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                             enum vgpu_hal_target target)
{
	if (target == VGPU_TARGET_VRAM)
		return mem_vram(as, va, bytes, suite.vram_page, 0);
	return mem_sysmem(as, va, bytes, suite.vram_page, target, 0);
}

static void kfix_init(struct kfix *k, unsigned t, const char *kernel)
{
	enum vgpu_hal_target other = targets[1 - t];

	memset(k, 0, sizeof(*k));
	k->target = targets[t];
	k->bytes = 2ull * suite.vram_page;
	k->sp = space_create();
	k->tc = chan_create(k->sp, 0);
	k->a = data_mem(k->sp->as, DATA_VA, k->bytes, k->target);
	k->b = data_mem(k->sp->as, DATA2_VA, k->bytes, other);
	snprintf(k->what, sizeof(k->what), "%s on %s", kernel,
	         k->target == VGPU_TARGET_VRAM ? "VRAM" : "host memory");
}

static void kfix_fini(struct kfix *k)
{
	chan_destroy(k->tc);
	mem_free(k->b);
	mem_free(k->a);
	space_destroy(k->sp);
}

static void run(struct kfix *k, const uint32_t *words, uint32_t n)
{
	struct vgpu_hal_event error;

	if (!chan_run(k->tc, words, n)) {
		if (vgpu_hal_channel_state(k->tc->channel, &error) == VGPU_CHANNEL_ERROR)
			fail_msg("%s: channel died (cause %d at 0x%llx)", k->what, error.cause,
			         (unsigned long long)error.address);
		fail_msg("%s: no fence after the kernel", k->what);
	}
}

static void test_kernel_fill(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
		uint8_t *expected, *part;

		kfix_init(&k, t, "FILL");
		expected = reference_fill(k.bytes, 1234); /* stale content first */
		write_ok(k.sp->as, DATA_VA, expected, k.bytes);
		free(expected);
		n = vgpu_push_launch_fill(words, DATA_VA, k.bytes, 0xfeedull + t);
		run(&k, words, n);
		expected = reference_fill(k.bytes, 0xfeedull + t);
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		/* a piece across the page boundary: only it changes */
		part = reference_fill(1000, 55);
		memcpy(expected + suite.vram_page - 504, part, 1000);
		run(&k, words, vgpu_push_launch_fill(words, DATA_VA + suite.vram_page - 504, 1000,
		                                     55));
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		free(part);
		free(expected);
		kfix_fini(&k);
	}
}

static void test_kernel_copy(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[VGPU_COMMAND_MAX_WORDS];
		uint8_t *src, *dst;

		kfix_init(&k, t, "COPY kernel");
		src = reference_fill(k.bytes, 3);
		dst = reference_fill(k.bytes, 4);
		write_ok(k.sp->as, DATA_VA, src, k.bytes);
		write_ok(k.sp->as, DATA2_VA, dst, k.bytes);
		run(&k, words, vgpu_push_launch_copy(words, DATA2_VA, DATA_VA, k.bytes));
		expect_bytes(k.sp->as, DATA2_VA, src, k.bytes, k.what);
		/* unaligned, from the other target back */
		write_ok(k.sp->as, DATA2_VA, dst, k.bytes);
		run(&k, words, vgpu_push_launch_copy(words, DATA_VA + 3, DATA2_VA + 5,
		                                     suite.vram_page + 777));
		vgpu_kernel_reference_copy(src + 3, dst + 5, suite.vram_page + 777);
		expect_bytes(k.sp->as, DATA_VA, src, k.bytes, k.what);
		free(src);
		free(dst);
		kfix_fini(&k);
	}
}

static void test_kernel_stream(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[VGPU_COMMAND_MAX_WORDS];
		uint8_t *expected;

		kfix_init(&k, t, "STREAM");
		expected = reference_fill(k.bytes, 21);
		write_ok(k.sp->as, DATA_VA, expected, k.bytes);
		run(&k, words, vgpu_push_launch_stream(words, DATA_VA, k.bytes, 3));
		vgpu_kernel_reference_stream(expected, k.bytes, 3);
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		/* part of the buffer, one pass */
		run(&k, words, vgpu_push_launch_stream(words, DATA_VA + 8, 8 * 1001, 1));
		vgpu_kernel_reference_stream(expected + 8, 8 * 1001, 1);
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		free(expected);
		kfix_fini(&k);
	}
}

static void test_kernel_stencil(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[VGPU_COMMAND_MAX_WORDS];
		/* rows that straddle page boundaries */
		uint32_t width = 300, height;
		uint64_t grid;
		uint8_t *in, *out, *expected;

		kfix_init(&k, t, "STENCIL");
		height = (uint32_t)(k.bytes / (4ull * width));
		grid = 4ull * width * height;
		in = reference_fill(k.bytes, 8);
		out = reference_fill(k.bytes, 9);
		expected = xmalloc(k.bytes);
		memcpy(expected, out, k.bytes);
		write_ok(k.sp->as, DATA_VA, in, k.bytes);
		write_ok(k.sp->as, DATA2_VA, out, k.bytes);
		run(&k, words, vgpu_push_launch_stencil(words, DATA_VA, DATA2_VA, width, height));
		vgpu_kernel_reference_stencil(in, expected, width, height);
		expect_bytes(k.sp->as, DATA2_VA, expected, k.bytes, k.what);
		assert_true(grid <= k.bytes);
		/* one row, one column */
		run(&k, words, vgpu_push_launch_stencil(words, DATA_VA, DATA2_VA, 1, 7));
		vgpu_kernel_reference_stencil(in, expected, 1, 7);
		run(&k, words, vgpu_push_launch_stencil(words, DATA_VA, DATA2_VA, 333, 1));
		vgpu_kernel_reference_stencil(in, expected, 333, 1);
		expect_bytes(k.sp->as, DATA2_VA, expected, k.bytes, k.what);
		free(in);
		free(out);
		free(expected);
		kfix_fini(&k);
	}
}

static void test_kernel_random_access(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[VGPU_COMMAND_MAX_WORDS];
		uint8_t *expected;

		kfix_init(&k, t, "RANDOM_ACCESS");
		expected = reference_fill(k.bytes, 77);
		write_ok(k.sp->as, DATA_VA, expected, k.bytes);
		run(&k, words, vgpu_push_launch_random_access(words, DATA_VA, k.bytes, 20000,
		                                              0x1234567));
		vgpu_kernel_reference_random_access(expected, k.bytes, 20000, 0x1234567);
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		/* seed 0 means the default seed; a table that is not a power of two */
		run(&k, words, vgpu_push_launch_random_access(words, DATA_VA + 64, 8 * 999, 5000, 0));
		vgpu_kernel_reference_random_access(expected + 64, 8 * 999, 5000, 0);
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		/* zero updates change nothing */
		run(&k, words, vgpu_push_launch_random_access(words, DATA_VA, k.bytes, 0, 1));
		expect_bytes(k.sp->as, DATA_VA, expected, k.bytes, k.what);
		free(expected);
		kfix_fini(&k);
	}
}

static void test_kernel_checksum(void **state)
{
	unsigned t;

	for (t = 0; t < 2; t++) {
		struct kfix k;
		uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
		uint8_t *data;
		uint64_t results[2] = { 0, 0 }, expected[2];

		kfix_init(&k, t, "CHECKSUM");
		data = reference_fill(k.bytes, 1);
		/* not FILL's content: make it differ from a fill of any seed */
		vgpu_kernel_reference_stream(data, k.bytes, 1);
		write_ok(k.sp->as, DATA_VA, data, k.bytes);
		/* results on the other target */
		n = vgpu_push_launch_checksum(words, DATA_VA, k.bytes, DATA2_VA + 8);
		n += vgpu_push_launch_checksum(words + n, DATA_VA + suite.vram_page - 16, 48,
		                               DATA2_VA + 16);
		run(&k, words, n);
		expected[0] = vgpu_kernel_reference_checksum(data, k.bytes);
		expected[1] = vgpu_kernel_reference_checksum(data + suite.vram_page - 16, 48);
		read_ok(k.sp->as, DATA2_VA + 8, results, 16);
		if (results[0] != expected[0] || results[1] != expected[1])
			fail_msg("%s: checksums 0x%llx, 0x%llx; expected 0x%llx, 0x%llx", k.what,
			         (unsigned long long)results[0], (unsigned long long)results[1],
			         (unsigned long long)expected[0], (unsigned long long)expected[1]);
		free(data);
		kfix_fini(&k);
	}
}

/*
 * The GPUswap move, through the HAL only: a guest's chunk (VRAM, filled by
 * a kernel) is copied by the copy engine, in a private address space, to
 * host memory; the guest's PTEs are rewritten to the IOVA and the TLB
 * invalidated; the VRAM is scrubbed and freed. Kernels keep running on the
 * same VA over the bus. Then the chunk comes back to fresh VRAM the same
 * way and still holds what the kernels made of it.
 */
static void test_gpuswap_move(void **state)
{
	const uint32_t page = suite.vram_page;
	const uint64_t bytes = 2ull * page, seed = 0xc0ffee;
	struct tspace *guest = space_create();
	struct tchan *tc = chan_create(guest, 0);
	struct vgpu_hal_as *dma = as_create_ok();
	struct tmem *chunk = mem_vram(guest->as, DATA_VA, bytes, page, 0);
	struct tmem *result = mem_vram(guest->as, DATA2_VA, page, page, 0);
	struct vgpu_hal_host_buf *host;
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	uint64_t iova, fresh[2], checksum;
	uint32_t host_page;
	unsigned start;

	/* the guest fills its chunk */
	n = vgpu_push_launch_fill(words, DATA_VA, bytes, seed);
	assert_true(chan_run(tc, words, n));

	/* evict: copy VRAM -> host memory in the private address space */
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, bytes, &host), 0);
	track_host(host);
	iova = iommu_map_aligned(host, bytes, page);
	track_iova(iova, bytes);
	host_page = sysmem_page_at(iova, bytes, page);
	assert_true(host_page != 0);
	vgpu_hal_channel_set_fetch(tc->channel, false); /* the guest's channel waits */
	assert_int_equal(vgpu_hal_as_map(dma, DATA_VA, page, 2, VGPU_TARGET_VRAM, chunk->vram, 0),
	                 0);
	map_iova_range(dma, DATA2_VA, iova, bytes, host_page, VGPU_TARGET_SYSMEM_NONCOHERENT,
	               VGPU_MAP_PRIVILEGED);
	start = event_mark();
	assert_int_equal(vgpu_hal_copy(dma, DATA2_VA, DATA_VA, bytes, 1), 0);
	assert_true(wait_event(VGPU_EVENT_COPY_DONE, 0, false, 1, start, NULL));
	/* rewrite the guest's PTEs, drop the VRAM */
	map_iova_range(guest->as, DATA_VA, iova, bytes, host_page, VGPU_TARGET_SYSMEM_COHERENT, 0);
	vgpu_hal_as_tlb_invalidate(guest->as);
	assert_int_equal(vgpu_hal_as_unmap(dma, DATA_VA, bytes), 0);
	vgpu_hal_as_tlb_invalidate(dma);
	assert_int_equal(vgpu_hal_vram_scrub(suite.hal, page, 2, chunk->vram), 0);
	vgpu_hal_vram_free(suite.hal, page, 2, chunk->vram);
	/* (the pages to return to, taken now so that chunk always owns VRAM) */
	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 2, chunk->vram), 0);
	vgpu_hal_channel_set_fetch(tc->channel, true);

	/* the guest's kernels run on the evicted chunk at the same VA */
	n = vgpu_push_launch_checksum(words, DATA_VA, bytes, DATA2_VA);
	assert_true(chan_run(tc, words, n));
	read_ok(guest->as, DATA2_VA, &checksum, 8);
	assert_true(checksum == vgpu_kernel_reference_fill_stream_checksum(seed, bytes, 0));
	n = vgpu_push_launch_stream(words, DATA_VA, bytes, 2);
	n += vgpu_push_launch_checksum(words + n, DATA_VA, bytes, DATA2_VA);
	assert_true(chan_run(tc, words, n));
	read_ok(guest->as, DATA2_VA, &checksum, 8);
	assert_true(checksum == vgpu_kernel_reference_fill_stream_checksum(seed, bytes, 2));

	/* return: copy host memory -> fresh VRAM, remap, free the host memory */
	memcpy(fresh, chunk->vram, sizeof(fresh));
	vgpu_hal_channel_set_fetch(tc->channel, false);
	assert_int_equal(vgpu_hal_as_map(dma, DATA_VA, page, 2, VGPU_TARGET_VRAM, fresh, 0), 0);
	start = event_mark();
	assert_int_equal(vgpu_hal_copy(dma, DATA_VA, DATA2_VA, bytes, 2), 0);
	assert_true(wait_event(VGPU_EVENT_COPY_DONE, 0, false, 2, start, NULL));
	assert_int_equal(vgpu_hal_as_map(guest->as, DATA_VA, page, 2, VGPU_TARGET_VRAM, fresh, 0),
	                 0);
	vgpu_hal_as_tlb_invalidate(guest->as);
	assert_int_equal(vgpu_hal_as_unmap(dma, DATA_VA, bytes), 0);
	assert_int_equal(vgpu_hal_as_unmap(dma, DATA2_VA, bytes), 0);
	vgpu_hal_as_tlb_invalidate(dma);
	untrack_iova(iova);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova, bytes), 0);
	untrack_host(host);
	vgpu_hal_host_free(suite.hal, host);
	vgpu_hal_channel_set_fetch(tc->channel, true);

	n = vgpu_push_launch_stream(words, DATA_VA, bytes, 1);
	n += vgpu_push_launch_checksum(words + n, DATA_VA, bytes, DATA2_VA);
	assert_true(chan_run(tc, words, n));
	read_ok(guest->as, DATA2_VA, &checksum, 8);
	assert_true(checksum == vgpu_kernel_reference_fill_stream_checksum(seed, bytes, 3));
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(tc);
	mem_free(result);
	mem_free(chunk);
	as_destroy_ok(dma);
	space_destroy(guest);
}

static const struct CMUnitTest kernel_tests[] = {
	HAL_TEST(test_kernel_fill),
	HAL_TEST(test_kernel_copy),
	HAL_TEST(test_kernel_stream),
	HAL_TEST(test_kernel_stencil),
	HAL_TEST(test_kernel_random_access),
	HAL_TEST(test_kernel_checksum),
	HAL_TEST(test_gpuswap_move),
};

const struct hal_test_group hal_kernel_group = {
	"hal-kernels", kernel_tests, sizeof(kernel_tests) / sizeof(kernel_tests[0]),
};
