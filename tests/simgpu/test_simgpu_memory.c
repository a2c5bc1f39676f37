// SPDX-License-Identifier: MIT
/*
 * test_simgpu_memory.c - VRAM allocator, GMMU translation (both page sizes,
 * every target), IOMMU, TLB staleness, access flags and reference bits.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "simgpu_test.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

/* ------------------------------------------------------------------------ */
/* VRAM allocator                                                           */

static void test_vram_alignment_and_all_or_nothing(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	uint64_t total = gpu->caps.vram_bytes, free_bytes, i;
	uint64_t large_count = total / (64 * KIB);
	uint64_t *large = calloc(large_count + 1, sizeof(uint64_t));
	uint64_t small[17];

	assert_non_null(large);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), total);
	/* 64 KiB pages are 64 KiB aligned, distinct and inside VRAM */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, 8, large), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(large[i] % (64 * KIB), 0);
		assert_true(large[i] + 64 * KIB <= total);
		if (i)
			assert_true(large[i] != large[i - 1]);
	}
	/* a 4 KiB page goes to a partly used block first, never inside a
	 * 64 KiB page */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 1, small), 0);
	for (i = 0; i < 8; i++)
		assert_false(small[0] >= large[i] && small[0] < large[i] + 64 * KIB);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 1, small + 1), 0);
	assert_int_equal(small[1] / (64 * KIB), small[0] / (64 * KIB));
	free_bytes = vgpu_hal_vram_free_bytes(gpu->hal);
	assert_int_equal(free_bytes, total - 8 * 64 * KIB - 2 * 4 * KIB);

	/* all or nothing: asking for one more 64 KiB page than fits fails and
	 * takes nothing (the partly used block cannot hold a 64 KiB page) */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, large_count - 8, large + 8),
	                 -ENOMEM);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), free_bytes);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, large_count - 9, large + 8),
	                 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), 14 * 4 * KIB);
	/* 14 small pages still fit, 15 do not (and take nothing) */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 15, small + 2), -ENOMEM);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), 14 * 4 * KIB);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 14, small + 2), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), 0);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 1, small + 16), -ENOMEM);

	/* bad arguments */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, 8192, 1, small), -EINVAL);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 0, small), -EINVAL);

	/* freeing makes everything reusable; freeing with the wrong page size
	 * is ignored */
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_4K, 1, large);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), 0);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_64K, large_count - 1, large);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_4K, 16, small);
	assert_int_equal(vgpu_hal_vram_free_bytes(gpu->hal), total);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, large_count, large), 0);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_64K, large_count, large);
	free(large);
	test_gpu_destroy(gpu);
}

static void test_vram_reserved_excluded(void **state)
{
	struct simgpu_config config;
	struct test_gpu *gpu;

	test_config(&config);
	config.reserved_vram_bytes = 8 * MIB;
	gpu = test_gpu_create(&config);
	assert_int_equal(gpu->caps.vram_bytes, config.vram_bytes - 8 * MIB);
	assert_string_equal(gpu->caps.name, "simgpu");
	assert_int_equal(gpu->caps.page_size_mask, VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_64K);
	assert_int_equal(gpu->caps.sysmem_page_size_mask, gpu->caps.page_size_mask);
	assert_int_equal(gpu->caps.va_bits, 40);
	assert_true(gpu->caps.va_reserved_base < (UINT64_C(1) << 40));
	test_gpu_destroy(gpu);

	/* inconsistent configurations are refused */
	test_config(&config);
	config.reserved_vram_bytes = config.vram_bytes;
	{
		struct vgpu_hal *hal;

		assert_int_equal(simgpu_create(&config, &hal), -EINVAL);
		test_config(&config);
		config.tlb_entries = 3;
		assert_int_equal(simgpu_create(&config, &hal), -EINVAL);
	}
}

/* ------------------------------------------------------------------------ */
/* Translation                                                              */

/* Run CHECKSUM on the GPU over [va, va + bytes) and return the result. */
static uint64_t gpu_checksum(struct test_channel *tc, uint64_t va, uint64_t bytes)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t result = 0;
	uint64_t result_va = tc->semaphore_va + 8;

	assert_true(test_submit_wait(tc, words,
	                             vgpu_push_launch_checksum(words, va, bytes, result_va)));
	assert_int_equal(vgpu_hal_as_read(tc->as, result_va, &result, 8), 0);
	return result;
}

static void gpu_fill(struct test_channel *tc, uint64_t va, uint64_t bytes, uint64_t seed)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	assert_true(test_submit_wait(tc, words, vgpu_push_launch_fill(words, va, bytes, seed)));
}

/* Every page size x target: the GPU reads what the CPU wrote and the CPU
 * (through the aperture and, for SYSMEM, the host pointer) reads what the
 * GPU wrote; the counters attribute the bytes to the right target. */
static void test_translation_sizes_and_targets(void **state)
{
	static const enum vgpu_hal_target targets[] = {
		VGPU_TARGET_VRAM, VGPU_TARGET_SYSMEM_COHERENT, VGPU_TARGET_SYSMEM_NONCOHERENT,
	};
	static const uint32_t page_sizes[] = { VGPU_PAGE_4K, VGPU_PAGE_64K };
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	const uint64_t bytes = 256 * KIB;
	uint8_t *pattern = malloc(bytes), *readback = malloc(bytes), *expected = malloc(bytes);
	unsigned t, p;
	uint64_t i;

	assert_non_null(pattern);
	for (i = 0; i < bytes; i++)
		pattern[i] = (uint8_t)(i * 131 + 7);
	for (t = 0; t < 3; t++) {
		for (p = 0; p < 2; p++) {
			uint64_t va = TEST_DATA_VA + (t * 2 + p) * 16 * MIB;
			struct vgpu_hal_host_buf *buf = NULL;
			struct vgpu_hal_as_counters before, after;

			if (targets[t] == VGPU_TARGET_VRAM)
				test_map_vram(gpu, tc->as, va, bytes, page_sizes[p], 0, NULL);
			else
				buf = test_map_sysmem(gpu, tc->as, va, bytes, page_sizes[p],
				                      targets[t], NULL);
			assert_int_equal(vgpu_hal_as_write(tc->as, va, pattern, bytes), 0);
			vgpu_hal_as_counters(tc->as, &before);
			assert_true(gpu_checksum(tc, va, bytes) ==
			            vgpu_kernel_reference_checksum(pattern, bytes));
			vgpu_hal_as_counters(tc->as, &after);
			assert_int_equal(after.bytes_read[targets[t]] - before.bytes_read[targets[t]],
			                 bytes + (targets[t] == VGPU_TARGET_VRAM ? 4 * (8 + 5) : 0)
			                 /* the launch (8 words) and fence (5) pushbuffers
			                    live in VRAM */);

			gpu_fill(tc, va, bytes, 1000 + t);
			vgpu_kernel_reference_fill(expected, bytes, 1000 + t);
			assert_int_equal(vgpu_hal_as_read(tc->as, va, readback, bytes), 0);
			assert_memory_equal(readback, expected, bytes);
			if (buf) {
				/* the GPU reached exactly the host pages behind the IOVAs */
				assert_memory_equal(vgpu_hal_host_cpu_pointer(gpu->hal, buf), expected,
				                    bytes);
			}
		}
	}
	free(pattern);
	free(readback);
	free(expected);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* 64 KiB over 4 KiB and 4 KiB over 64 KiB: the new size wins for the
 * covered range, the rest of a split 64 KiB page stays mapped. */
static void test_translation_mixed_sizes(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	uint64_t va = TEST_DATA_VA, large, small[16], other;
	uint8_t *block = malloc(64 * KIB), *expected = malloc(64 * KIB);
	unsigned i;

	/* 16 small pages, then a large page over them */
	test_map_vram(gpu, tc->as, va, 64 * KIB, VGPU_PAGE_4K, 0, small);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, 1, &large), 0);
	assert_int_equal(vgpu_hal_as_map(tc->as, va, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &large, 0),
	                 0);
	gpu_fill(tc, va, 64 * KIB, 5);
	assert_int_equal(vgpu_hal_as_read(tc->as, va, block, 64 * KIB), 0);
	vgpu_kernel_reference_fill(expected, 64 * KIB, 5);
	assert_memory_equal(block, expected, 64 * KIB);

	/* a small page over the large one: that 4 KiB now comes from the new
	 * page, the other 60 KiB still from the large page */
	vgpu_hal_as_tlb_invalidate(tc->as);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 1, &other), 0);
	assert_int_equal(vgpu_hal_as_map(tc->as, va + 8 * KIB, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM,
	                                 &other, 0),
	                 0);
	memset(block, 0xab, 4 * KIB);
	assert_int_equal(vgpu_hal_as_write(tc->as, va + 8 * KIB, block, 4 * KIB), 0);
	assert_int_equal(vgpu_hal_as_read(tc->as, va, block, 64 * KIB), 0);
	for (i = 0; i < 4 * KIB; i++)
		expected[8 * KIB + i] = 0xab;
	assert_memory_equal(block, expected, 64 * KIB);
	assert_true(gpu_checksum(tc, va, 64 * KIB) == vgpu_kernel_reference_checksum(expected, 64 * KIB));

	/* unmapping 4 KiB inside the split page leaves the rest mapped */
	assert_int_equal(vgpu_hal_as_unmap(tc->as, va + 60 * KIB, 4 * KIB), 0);
	assert_int_equal(vgpu_hal_as_read(tc->as, va, block, 60 * KIB), 0);
	assert_memory_equal(block, expected, 60 * KIB);
	assert_int_equal(vgpu_hal_as_read(tc->as, va + 60 * KIB, block, 4 * KIB), -EFAULT);
	/* unmapping across the whole range clears everything */
	assert_int_equal(vgpu_hal_as_unmap(tc->as, va, 64 * KIB), 0);
	assert_int_equal(vgpu_hal_as_read(tc->as, va, block, 4 * KIB), -EFAULT);
	free(block);
	free(expected);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

static void test_map_argument_checks(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct vgpu_hal_as *as;
	uint64_t page = 0, misaligned = 4096;

	assert_int_equal(vgpu_hal_as_create(gpu->hal, &as), 0);
	assert_int_equal(vgpu_hal_as_map(as, 4096, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &page, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, 0, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &misaligned, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, gpu->caps.va_reserved_base, VGPU_PAGE_4K, 1,
	                                 VGPU_TARGET_VRAM, &page, 0),
	                 -EINVAL);
	page = gpu->caps.vram_bytes; /* reserved VRAM is never mappable */
	assert_int_equal(vgpu_hal_as_map(as, 0, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, &page, 0),
	                 -EINVAL);
	page = 0;
	assert_int_equal(vgpu_hal_as_map(as, 0, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, &page, 1u << 7),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, 0, VGPU_PAGE_4K, 0, VGPU_TARGET_VRAM, &page, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_unmap(as, 0, 4096), 0); /* unmapped: fine */
	assert_int_equal(vgpu_hal_as_unmap(as, 1, 4096), -EINVAL);
	vgpu_hal_as_destroy(as);
	test_gpu_destroy(gpu);
}

/* ------------------------------------------------------------------------ */
/* IOMMU                                                                    */

static void test_iommu_map_unmap_and_fault(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	struct vgpu_hal_host_buf *buf;
	struct vgpu_hal_event error;
	uint64_t iova_a, iova_b, pages[4], i;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint8_t data[16 * KIB];
	int fd = -1;
	uint64_t offset = 1;
	uint8_t *shared;

	assert_int_equal(vgpu_hal_host_alloc(gpu->hal, 32 * KIB, &buf), 0);
	assert_int_equal(vgpu_hal_host_alloc(gpu->hal, 4095, &buf) == -EINVAL, 1);
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 0, 16 * KIB, &iova_a), 0);
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 16 * KIB, 16 * KIB, &iova_b), 0);
	assert_true(iova_a != 0 && iova_b != iova_a);
	assert_true(iova_b >= iova_a + 16 * KIB || iova_b + 16 * KIB <= iova_a);
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 4096, 32 * KIB, &iova_b), -EINVAL);
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 1, 4096, &iova_b), -EINVAL);

	/* map the first range, write through the aperture, see it in the host
	 * pointer and in the shared fd */
	for (i = 0; i < 4; i++)
		pages[i] = iova_a + i * 4 * KIB;
	assert_int_equal(vgpu_hal_as_map(tc->as, TEST_DATA_VA, VGPU_PAGE_4K, 4,
	                                 VGPU_TARGET_SYSMEM_NONCOHERENT, pages, 0),
	                 0);
	memset(data, 0x5a, sizeof(data));
	assert_int_equal(vgpu_hal_as_write(tc->as, TEST_DATA_VA, data, sizeof(data)), 0);
	assert_memory_equal(vgpu_hal_host_cpu_pointer(gpu->hal, buf), data, sizeof(data));
	assert_int_equal(vgpu_hal_host_share(buf, &fd, &offset), 0);
	shared = mmap(NULL, 32 * KIB, PROT_READ, MAP_SHARED, fd, (off_t)offset);
	assert_true(shared != MAP_FAILED);
	assert_memory_equal(shared, data, sizeof(data));
	munmap(shared, 32 * KIB);
	assert_true(gpu_checksum(tc, TEST_DATA_VA, sizeof(data)) ==
	            vgpu_kernel_reference_checksum(data, sizeof(data)));

	/* unmap must name exactly one live mapping */
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_a, 4 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_a + 4 * KIB, 12 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_a, 16 * KIB), 0);
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_a, 16 * KIB), -EFAULT);

	/* the PTEs still point at the IOVA: the aperture and the GPU fault */
	assert_int_equal(vgpu_hal_as_read(tc->as, TEST_DATA_VA, data, 4 * KIB), -EFAULT);
	test_submit(tc, words, vgpu_push_launch_checksum(words, TEST_DATA_VA, 4 * KIB,
	                                                 tc->semaphore_va));
	assert_true(test_wait_error(tc, &error));
	assert_int_equal(error.cause, VGPU_FAULT_IOMMU);
	assert_true(error.address == TEST_DATA_VA);

	/* IOVA space is reused after unmap */
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 0, 16 * KIB, &iova_a), 0);
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_a, 16 * KIB), 0);
	assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova_b, 16 * KIB), 0);
	vgpu_hal_host_free(gpu->hal, buf);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* Many host buffers (one per evicted chunk) share a few descriptors; each is
 * zeroed when handed out even if its memory was used before, and its
 * host_share (fd, offset) shows the buffer's own pages. */
static unsigned open_descriptors(void)
{
	unsigned count = 0;

	for (int fd = 0; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			count++;
	return count;
}

static void test_host_buffers_share_descriptors(void **state)
{
	enum { BUFFERS = 2000 };
	static struct vgpu_hal_host_buf *bufs[BUFFERS];
	struct test_gpu *gpu = test_gpu_create(NULL);
	unsigned before = open_descriptors();
	uint64_t offset;
	uint8_t *shared;
	int fd;

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < BUFFERS; i++) {
			uint64_t bytes = (uint64_t)(1 + i % 16) * 4 * KIB;
			uint8_t *memory;

			assert_int_equal(vgpu_hal_host_alloc(gpu->hal, bytes, &bufs[i]), 0);
			memory = vgpu_hal_host_cpu_pointer(gpu->hal, bufs[i]);
			for (uint64_t b = 0; b < bytes; b += 512)
				if (memory[b])
					fail_msg("round %d buffer %d byte %lu not zero", round, i,
					         (unsigned long)b);
			memset(memory, 0xa0 + round, bytes);
		}
		assert_true(open_descriptors() <= before + 2);
		assert_int_equal(vgpu_hal_host_share(bufs[BUFFERS - 1], &fd, &offset), 0);
		shared = mmap(NULL, 4 * KIB, PROT_READ, MAP_SHARED, fd, (off_t)offset);
		assert_true(shared != MAP_FAILED);
		assert_int_equal(shared[0], 0xa0 + round);
		munmap(shared, 4 * KIB);
		for (int i = 0; i < BUFFERS; i++)
			vgpu_hal_host_free(gpu->hal, bufs[i]);
		assert_int_equal(open_descriptors(), before);
	}
	/* A buffer too large for an arena gets its own descriptor. */
	assert_int_equal(vgpu_hal_host_alloc(gpu->hal, 128 * MIB, &bufs[0]), 0);
	assert_int_equal(vgpu_hal_host_share(bufs[0], &fd, &offset), 0);
	assert_int_equal(offset, 0);
	vgpu_hal_host_free(gpu->hal, bufs[0]);
	assert_int_equal(open_descriptors(), before);
	test_gpu_destroy(gpu);
}

/* ------------------------------------------------------------------------ */
/* TLB                                                                      */

static void test_tlb_stale_until_invalidate(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	uint64_t va = TEST_DATA_VA, old_page, new_page;
	uint8_t old_data[4096], new_data[4096];
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error;

	vgpu_kernel_reference_fill(old_data, sizeof(old_data), 1);
	vgpu_kernel_reference_fill(new_data, sizeof(new_data), 2);
	test_map_vram(gpu, tc->as, va, 4096, VGPU_PAGE_4K, 0, &old_page);
	assert_int_equal(vgpu_hal_as_write(tc->as, va, old_data, 4096), 0);
	/* the GPU reads the page once: its translation is now cached */
	assert_true(gpu_checksum(tc, va, 4096) == vgpu_kernel_reference_checksum(old_data, 4096));

	/* remap to a new page (the aperture sees the new page at once) */
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 1, &new_page), 0);
	assert_int_equal(vgpu_hal_as_map(tc->as, va, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, &new_page, 0),
	                 0);
	assert_int_equal(vgpu_hal_as_write(tc->as, va, new_data, 4096), 0);
	/* ... but the GPU still uses the stale translation */
	assert_true(gpu_checksum(tc, va, 4096) == vgpu_kernel_reference_checksum(old_data, 4096));
	vgpu_hal_as_tlb_invalidate(tc->as);
	assert_true(gpu_checksum(tc, va, 4096) == vgpu_kernel_reference_checksum(new_data, 4096));

	/* unmapping does not invalidate either: still readable until then */
	assert_int_equal(vgpu_hal_as_unmap(tc->as, va, 4096), 0);
	assert_true(gpu_checksum(tc, va, 4096) == vgpu_kernel_reference_checksum(new_data, 4096));
	vgpu_hal_as_tlb_invalidate(tc->as);
	test_submit(tc, words, vgpu_push_launch_checksum(words, va, 4096, tc->semaphore_va + 8));
	assert_true(test_wait_error(tc, &error));
	assert_int_equal(error.cause, VGPU_FAULT_UNMAPPED);
	assert_true(error.address == va);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* ------------------------------------------------------------------------ */
/* Flags                                                                    */

static void test_read_only_and_privileged(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *reader = test_channel_create(gpu, NULL, 0);
	struct test_channel *writer = test_channel_create(gpu, reader->as, 0);
	struct test_channel *user = test_channel_create(gpu, reader->as, 0);
	uint64_t ro = TEST_DATA_VA, priv = TEST_DATA_VA + MIB;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error;
	uint8_t data[4096];

	test_map_vram(gpu, reader->as, ro, 4096, VGPU_PAGE_4K, VGPU_MAP_READ_ONLY, NULL);
	test_map_vram(gpu, reader->as, priv, 4096, VGPU_PAGE_4K, VGPU_MAP_PRIVILEGED, NULL);
	/* the aperture ignores the flags */
	memset(data, 3, sizeof(data));
	assert_int_equal(vgpu_hal_as_write(reader->as, ro, data, sizeof(data)), 0);
	assert_int_equal(vgpu_hal_as_write(reader->as, priv, data, sizeof(data)), 0);

	/* reading a read-only page works, writing it kills the channel */
	assert_true(gpu_checksum(reader, ro, 4096) == vgpu_kernel_reference_checksum(data, 4096));
	test_submit(writer, words, vgpu_push_memset(words, ro + 64, 0, 64));
	assert_true(test_wait_error(writer, &error));
	assert_int_equal(error.cause, VGPU_FAULT_READ_ONLY);
	assert_true(error.address == ro + 64);
	assert_int_equal(vgpu_hal_as_read(reader->as, ro, data, sizeof(data)), 0);
	assert_int_equal(data[64], 3);

	/* a user channel may not touch a privileged page */
	test_submit(user, words, vgpu_push_launch_checksum(words, priv, 4096,
	                                                   user->semaphore_va + 8));
	assert_true(test_wait_error(user, &error));
	assert_int_equal(error.cause, VGPU_FAULT_PRIVILEGED);
	assert_true(error.address == priv);

	/* the copy engine (privileged DMA) may, reading and writing */
	assert_int_equal(vgpu_hal_copy(reader->as, priv + 2048, priv, 1024, 77), 0);
	assert_true(test_wait_event(gpu, VGPU_EVENT_COPY_DONE, 0, false, 77, 0, &error));
	assert_int_equal(error.status, 0);
	/* ...but not write a read-only page */
	assert_int_equal(vgpu_hal_copy(reader->as, ro, priv, 1024, 78), 0);
	assert_true(test_wait_event(gpu, VGPU_EVENT_COPY_DONE, 0, false, 78, 0, &error));
	assert_int_equal(error.status, -EFAULT);
	assert_int_equal(error.cause, VGPU_FAULT_READ_ONLY);

	/* the reader's channel is unaffected by the others' faults */
	assert_int_equal(vgpu_hal_channel_state(reader->channel, NULL), VGPU_CHANNEL_OK);
	assert_true(test_submit_wait(reader, NULL, 0));
	test_channel_destroy(user);
	test_channel_destroy(writer);
	test_channel_destroy(reader);
	test_gpu_destroy(gpu);
}

/* ------------------------------------------------------------------------ */
/* Reference bits                                                           */

static void test_reference_bits(void **state)
{
	struct simgpu_config config;
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	bool referenced = true;

	/* absent by default */
	assert_false(gpu->caps.has_reference_bits);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 4096,
	                                                       &referenced),
	                 -ENOTSUP);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);

	test_config(&config);
	config.reference_bits = true;
	gpu = test_gpu_create(&config);
	assert_true(gpu->caps.has_reference_bits);
	tc = test_channel_create(gpu, NULL, 0);
	test_map_vram(gpu, tc->as, TEST_DATA_VA, 64 * KIB, VGPU_PAGE_4K, 0, NULL);
	test_map_vram(gpu, tc->as, TEST_DATA_VA + MIB, 64 * KIB, VGPU_PAGE_64K, 0, NULL);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 64 * KIB,
	                                                       &referenced),
	                 0);
	assert_false(referenced);
	/* the aperture does not set them */
	{
		uint8_t byte = 1;

		assert_int_equal(vgpu_hal_as_write(tc->as, TEST_DATA_VA, &byte, 1), 0);
	}
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 64 * KIB,
	                                                       &referenced),
	                 0);
	assert_false(referenced);

	/* an engine access to page 3 sets exactly that page's bit */
	gpu_fill(tc, TEST_DATA_VA + 12 * KIB, 4096, 1);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 12 * KIB,
	                                                       &referenced),
	                 0);
	assert_false(referenced);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 64 * KIB,
	                                                       &referenced),
	                 0);
	assert_true(referenced);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA, 64 * KIB,
	                                                       &referenced),
	                 0);
	assert_false(referenced);
	/* set again on the next access although the translation is cached */
	gpu_fill(tc, TEST_DATA_VA + 12 * KIB, 4096, 2);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA + 12 * KIB,
	                                                       4096, &referenced),
	                 0);
	assert_true(referenced);
	/* 64 KiB pages too */
	gpu_fill(tc, TEST_DATA_VA + MIB + 8, 8, 2);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(tc->as, TEST_DATA_VA + MIB + 60 * KIB,
	                                                       4096, &referenced),
	                 0);
	assert_true(referenced);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* Timing models: a named model sets the bandwidths and latencies only. */
static void test_config_models(void **state)
{
	struct simgpu_config config, defaults;
	struct vgpu_hal *hal;

	(void)state;
	simgpu_config_defaults(&defaults);
	config = defaults;
	config.vram_bytes = 64ull << 20;
	assert_int_equal(simgpu_config_model(&config, "h100"), 0);
	assert_true(config.vram_bandwidth > defaults.vram_bandwidth);
	assert_true(config.sysmem_noncoherent_bandwidth > defaults.sysmem_noncoherent_bandwidth);
	assert_true(config.vram_bandwidth > 10 * config.sysmem_noncoherent_bandwidth);
	assert_int_equal(config.vram_bytes, 64ull << 20); /* untouched */
	assert_int_equal(config.max_channels, defaults.max_channels);
	assert_int_equal(simgpu_create(&config, &hal), 0);
	vgpu_hal_destroy(hal);
	assert_int_equal(simgpu_config_model(&config, "default"), 0);
	assert_int_equal(config.vram_bandwidth, defaults.vram_bandwidth);
	assert_int_equal(config.sysmem_noncoherent_latency_ns,
	                 defaults.sysmem_noncoherent_latency_ns);
	assert_int_equal(simgpu_config_model(&config, "h200"), -EINVAL);
	assert_int_equal(simgpu_config_model(&config, ""), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_models),
		cmocka_unit_test(test_vram_alignment_and_all_or_nothing),
		cmocka_unit_test(test_vram_reserved_excluded),
		cmocka_unit_test(test_translation_sizes_and_targets),
		cmocka_unit_test(test_translation_mixed_sizes),
		cmocka_unit_test(test_map_argument_checks),
		cmocka_unit_test(test_iommu_map_unmap_and_fault),
		cmocka_unit_test(test_host_buffers_share_descriptors),
		cmocka_unit_test(test_tlb_stale_until_invalidate),
		cmocka_unit_test(test_read_only_and_privileged),
		cmocka_unit_test(test_reference_bits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
