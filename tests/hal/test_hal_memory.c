// SPDX-License-Identifier: MIT
/*
 * test_hal_memory.c - conformance of caps, VRAM, host memory and the IOMMU,
 * and address spaces through the aperture (vgpu/hal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hal_conformance.h"

static bool power_of_two(uint64_t value)
{
	return value && !(value & (value - 1));
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Bytes of a deterministic pattern, distinct per seed. */
static void pattern(void *buffer, uint64_t bytes, uint64_t seed)
{
	uint8_t *p = buffer;
	uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1, i;

	for (i = 0; i < bytes; i++) {
		if (i % 8 == 0)
			vgpu_xorshift64(&state);
		p[i] = (uint8_t)(state >> (8 * (i % 8)));
	}
}

static void test_caps_sane(void **state)
{
	struct vgpu_hal_caps again;
	uint32_t sizes[32], bit;
	unsigned n, i;
	uint64_t before, after;
	int ms;

	printf("# backend %s: caps.name '%s', %llu MiB VRAM, pages 0x%x (SYSMEM 0x%x), "
	       "%u channels, %u address spaces, %u-bit VA, reserved from 0x%llx\n",
	       suite.backend, suite.caps.name ? suite.caps.name : "(null)",
	       (unsigned long long)(suite.caps.vram_bytes >> 20), suite.caps.page_size_mask,
	       suite.caps.sysmem_page_size_mask, suite.caps.max_channels,
	       suite.caps.max_address_spaces, suite.caps.va_bits,
	       (unsigned long long)suite.caps.va_reserved_base);
	assert_non_null(suite.caps.name);
	assert_true(suite.caps.name[0] != '\0');

	/* VRAM: what we asked for at most, all of it free */
	assert_true(suite.caps.vram_bytes > 0);
	assert_true(suite.caps.vram_bytes <= HAL_TEST_VRAM_BYTES);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) == suite.caps.vram_bytes);

	/* page sizes: non-empty masks of known sizes, SYSMEM a superset */
	assert_true(suite.caps.page_size_mask != 0);
	assert_true(suite.caps.sysmem_page_size_mask != 0);
	assert_int_equal(suite.caps.sysmem_page_size_mask & suite.caps.page_size_mask,
	                 suite.caps.page_size_mask);
	for (bit = 1; bit; bit <<= 1)
		if (suite.caps.sysmem_page_size_mask & bit)
			if (!page_bytes_of_bit(bit))
				fail_msg("unknown page size bit 0x%x", bit);
	n = page_sizes_of_mask(suite.caps.page_size_mask, sizes, 32);
	for (i = 0; i < n; i++)
		assert_true(power_of_two(sizes[i]) && sizes[i] >= VGPU_PAGE_4K);
	assert_true(suite.caps.vram_bytes % suite.min_page == 0);

	/* tables and rings */
	assert_true(suite.caps.max_channels >= 1);
	assert_true(suite.caps.max_address_spaces >= 1);
	assert_true(power_of_two(suite.caps.gpfifo_entries_max));
	assert_true(suite.caps.gpfifo_entries_max >= 2);

	/* VA: the reserved range lies inside the VA width, above our layout */
	assert_true(suite.caps.va_bits >= 32 && suite.caps.va_bits < 64);
	assert_true(suite.caps.va_reserved_base < (UINT64_C(1) << suite.caps.va_bits));
	if (suite.caps.va_reserved_base < DATA3_VA + 64 * MIB)
		fail_msg("va_reserved_base 0x%llx leaves no room for the suite's VA layout",
		         (unsigned long long)suite.caps.va_reserved_base);

	/* constant for the lifetime of the HAL */
	vgpu_hal_get_caps(suite.hal, &again);
	assert_string_equal(again.name, suite.caps.name);
	assert_true(again.vram_bytes == suite.caps.vram_bytes);
	assert_int_equal(again.page_size_mask, suite.caps.page_size_mask);
	assert_int_equal(again.sysmem_page_size_mask, suite.caps.sysmem_page_size_mask);
	assert_int_equal(again.max_channels, suite.caps.max_channels);
	assert_int_equal(again.gpfifo_entries_max, suite.caps.gpfifo_entries_max);
	assert_true(again.va_reserved_base == suite.caps.va_reserved_base);

	/* engines: busy time never goes back; idle engines report -1 */
	for (i = 0; i < VGPU_ENGINE_COUNT; i++) {
		before = vgpu_hal_engine_modeled_ns(suite.hal, i);
		after = vgpu_hal_engine_modeled_ns(suite.hal, i);
		assert_true(after >= before);
		for (ms = 0; ms < HAL_TEST_TIMEOUT_MS &&
		     vgpu_hal_engine_current_channel(suite.hal, i) != -1; ms++)
			sleep_ms(1);
		assert_int_equal(vgpu_hal_engine_current_channel(suite.hal, i), -1);
	}
}

/* vram_free_bytes moves by exactly what is allocated and freed. */
static void test_vram_accounting(void **state)
{
	uint32_t sizes[32];
	unsigned n = page_sizes_of_mask(suite.caps.page_size_mask, sizes, 32), s;

	for (s = 0; s < n; s++) {
		uint32_t page = sizes[s];
		uint64_t free0 = vgpu_hal_vram_free_bytes(suite.hal), a[3], b[5];

		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 3, a), 0);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - 3ull * page);
		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 5, b), 0);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - 8ull * page);
		vgpu_hal_vram_free(suite.hal, page, 3, a);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - 5ull * page);
		vgpu_hal_vram_free(suite.hal, page, 1, b + 2);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - 4ull * page);
		/* freed pages can be allocated again */
		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 3, a), 0);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - 7ull * page);
		vgpu_hal_vram_free(suite.hal, page, 3, a);
		vgpu_hal_vram_free(suite.hal, page, 2, b);
		vgpu_hal_vram_free(suite.hal, page, 2, b + 3);
		assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0);
	}
}

/* Pages are aligned to their size, inside VRAM, and never overlap, across
 * page sizes too. */
static void test_vram_alignment(void **state)
{
	enum { PER_SIZE = 8 };
	uint32_t sizes[32];
	unsigned n = page_sizes_of_mask(suite.caps.page_size_mask, sizes, 32), s, i, total = 0;
	uint64_t addresses[32][PER_SIZE];
	struct { uint64_t start, end; } ranges[32 * PER_SIZE];

	for (s = 0; s < n; s++) {
		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, sizes[s], PER_SIZE, addresses[s]), 0);
		for (i = 0; i < PER_SIZE; i++) {
			uint64_t a = addresses[s][i];

			if (a % sizes[s] || a + sizes[s] > suite.caps.vram_bytes)
				fail_msg("VRAM page 0x%llx of %u bytes: misaligned or outside VRAM",
				         (unsigned long long)a, sizes[s]);
			ranges[total].start = a;
			ranges[total].end = a + sizes[s];
			total++;
		}
	}
	qsort(ranges, total, sizeof(ranges[0]), compare_u64); /* sorts by start */
	for (i = 1; i < total; i++)
		if (ranges[i].start < ranges[i - 1].end)
			fail_msg("VRAM pages overlap: [0x%llx, 0x%llx) and [0x%llx, 0x%llx)",
			         (unsigned long long)ranges[i - 1].start,
			         (unsigned long long)ranges[i - 1].end,
			         (unsigned long long)ranges[i].start, (unsigned long long)ranges[i].end);
	for (s = 0; s < n; s++)
		vgpu_hal_vram_free(suite.hal, sizes[s], PER_SIZE, addresses[s]);
}

/* More than is free fails with -ENOMEM and takes nothing; everything that
 * is free can be had. */
static void test_vram_enomem_all_or_nothing(void **state)
{
	uint32_t page = suite.vram_page;
	uint64_t free0 = vgpu_hal_vram_free_bytes(suite.hal), count = free0 / page, extra;
	uint64_t *addresses = calloc(count + 1, sizeof(uint64_t));

	assert_non_null(addresses);
	assert_true(count > 0);
	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, count + 1, addresses), -ENOMEM);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0);
	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, count, addresses), 0);
	track_vram(page, count, addresses);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0 - count * page);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) < page);
	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 1, &extra), -ENOMEM);
	if (suite.min_page != page && vgpu_hal_vram_free_bytes(suite.hal) < suite.min_page)
		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, suite.min_page, 1, &extra),
		                 -ENOMEM);
	untrack_vram(addresses);
	vgpu_hal_vram_free(suite.hal, page, count, addresses);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0);
	free(addresses);
}

static void test_vram_invalid_arguments(void **state)
{
	const uint32_t candidates[] = { 0, 512, 8192, VGPU_PAGE_4K, VGPU_PAGE_64K, VGPU_PAGE_2M,
	                                4 * VGPU_PAGE_2M };
	uint64_t free0 = vgpu_hal_vram_free_bytes(suite.hal), address;
	unsigned i;

	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		uint32_t size = candidates[i];
		bool listed = false;
		uint32_t bit;

		for (bit = 1; bit; bit <<= 1)
			listed |= (suite.caps.page_size_mask & bit) && page_bytes_of_bit(bit) == size;
		if (listed)
			continue;
		if (vgpu_hal_vram_alloc(suite.hal, size, 1, &address) != -EINVAL)
			fail_msg("vram_alloc with page size %u (not in caps.page_size_mask 0x%x) "
			         "did not fail with -EINVAL",
			         size, suite.caps.page_size_mask);
	}
	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, suite.vram_page, 0, &address), -EINVAL);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) == free0);
}

/* Scrubbed pages read zero through a mapping; the others keep their data. */
static void test_vram_scrub(void **state)
{
	uint32_t sizes[32];
	unsigned n = page_sizes_of_mask(suite.caps.page_size_mask, sizes, 32), s;
	struct vgpu_hal_as *as = as_create_ok();

	for (s = 0; s < n; s++) {
		uint32_t page = sizes[s];
		struct tmem *mem = mem_vram(as, DATA_VA, 2ull * page, page, 0);
		uint8_t *data = xmalloc(2ull * page), *zero = calloc(1, page);

		assert_non_null(zero);
		pattern(data, 2ull * page, 7 + s);
		write_ok(as, DATA_VA, data, 2ull * page);
		expect_bytes(as, DATA_VA, data, 2ull * page, "before scrub");
		/* not mapped anywhere the GPU may use while it is scrubbed */
		assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA, 2ull * page), 0);
		vgpu_hal_as_tlb_invalidate(as);
		assert_int_equal(vgpu_hal_vram_scrub(suite.hal, page, 1, &mem->vram[1]), 0);
		assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 2, VGPU_TARGET_VRAM, mem->vram, 0),
		                 0);
		expect_bytes(as, DATA_VA, data, page, "the page not scrubbed");
		expect_bytes(as, DATA_VA + page, zero, page, "the scrubbed page");
		mem_free(mem);
		free(data);
		free(zero);
	}
	as_destroy_ok(as);
}

/* Fresh host memory is zeroed (seen through a SYSMEM mapping) and holds what
 * is written; sizes must be nonzero multiples of 4 KiB. */
static void test_host_alloc(void **state)
{
	const uint64_t sizes[] = { 4 * KIB, 16 * KIB, 64 * KIB, suite.vram_page,
	                           2ull * suite.vram_page };
	struct vgpu_hal_host_buf *buf = NULL;
	struct vgpu_hal_as *as = as_create_ok();
	unsigned i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t bytes = sizes[i];
		uint32_t page = sysmem_page_for(bytes);
		uint8_t *zero, *data;
		struct tmem *mem;

		if (!page)
			continue; /* no SYSMEM page size fits */
		mem = mem_sysmem(as, DATA_VA, bytes, page, VGPU_TARGET_SYSMEM_COHERENT, 0);
		assert_true(mem->host->bytes == bytes);
		zero = calloc(1, bytes);
		data = xmalloc(bytes);
		assert_non_null(zero);
		expect_bytes(as, DATA_VA, zero, bytes, "fresh host memory");
		pattern(data, bytes, i);
		write_ok(as, DATA_VA, data, bytes);
		expect_bytes(as, DATA_VA, data, bytes, "host memory through the aperture");
		mem_free(mem);
		free(zero);
		free(data);
	}
	as_destroy_ok(as);
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, 0, &buf), -EINVAL);
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, 4097, &buf), -EINVAL);
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, 6 * KIB, &buf), -EINVAL);
}

static void test_iommu_map_unmap(void **state)
{
	struct vgpu_hal_host_buf *a, *b;
	uint64_t iova_a, iova_b, iova;
	uint32_t sizes[32];
	uint32_t min_sysmem;

	assert_true(page_sizes_of_mask(suite.sysmem_mask, sizes, 32) > 0);
	min_sysmem = sizes[0];
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, 64 * KIB, &a), 0);
	track_host(a);
	assert_int_equal(vgpu_hal_host_alloc(suite.hal, 64 * KIB, &b), 0);
	track_host(b);

	/* malformed ranges */
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 100, 4 * KIB, &iova), -EINVAL);
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 0, 100, &iova), -EINVAL);
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 0, 0, &iova), -EINVAL);
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 32 * KIB, 64 * KIB, &iova), -EINVAL);
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 128 * KIB, 4 * KIB, &iova), -EINVAL);

	/* two live mappings: aligned, disjoint */
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 0, 64 * KIB, &iova_a), 0);
	track_iova(iova_a, 64 * KIB);
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, b, 16 * KIB, 32 * KIB, &iova_b), 0);
	track_iova(iova_b, 32 * KIB);
	assert_int_equal(iova_a % min_sysmem, 0);
	assert_int_equal(iova_b % VGPU_PAGE_4K, 0);
	assert_true(iova_a + 64 * KIB <= iova_b || iova_b + 32 * KIB <= iova_a);

	/* unmap must name exactly one live mapping */
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_a, 4 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_a + 4 * KIB, 60 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_a, 128 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_a, 64 * KIB), 0);
	untrack_iova(iova_a);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_a, 64 * KIB), -EFAULT);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_b, 32 * KIB), 0);
	untrack_iova(iova_b);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova_b, 32 * KIB), -EFAULT);

	/* a buffer can be mapped again after its mapping went */
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, a, 0, 64 * KIB, &iova), 0);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova, 64 * KIB), 0);

	untrack_host(a);
	vgpu_hal_host_free(suite.hal, a);
	untrack_host(b);
	vgpu_hal_host_free(suite.hal, b);
}

/*
 * A small host buffer (the kind channel windows use): where the backend
 * gives a CPU pointer and a shareable descriptor, the CPU, an mmap of the
 * descriptor and the GPU (an IOMMU mapping of part of it) all see the same
 * bytes. A backend may give neither (NULL / -ENOTSUP): then there is
 * nothing to check.
 */
static void test_host_small_cpu_pointer_and_share(void **state)
{
	const uint64_t bytes = 64 * KIB, part = 16 * KIB;
	struct vgpu_hal_host_buf *buf;
	struct vgpu_hal_as *as;
	uint8_t *cpu, *zero, *data, *shared, check[64];
	uint64_t offset = 0, iova;
	int fd = -1, err;

	assert_int_equal(vgpu_hal_host_alloc(suite.hal, bytes, &buf), 0);
	track_host(buf);
	cpu = vgpu_hal_host_cpu_pointer(suite.hal, buf);
	if (!cpu) {
		printf("# %s gives no CPU pointer for a %llu-byte host buffer\n", suite.backend,
		       (unsigned long long)bytes);
		untrack_host(buf);
		vgpu_hal_host_free(suite.hal, buf);
		skip();
	}
	zero = calloc(1, bytes);
	data = xmalloc(bytes);
	assert_non_null(zero);
	assert_memory_equal(cpu, zero, bytes);
	pattern(data, bytes, 99);
	memcpy(cpu, data, bytes);

	err = vgpu_hal_host_share(buf, &fd, &offset);
	if (err == -ENOTSUP) {
		printf("# %s cannot share a %llu-byte host buffer\n", suite.backend,
		       (unsigned long long)bytes);
	} else {
		assert_int_equal(err, 0);
		assert_true(fd >= 0);
		assert_int_equal(offset % 4096, 0);
		shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
		assert_true(shared != MAP_FAILED);
		assert_memory_equal(shared, data, bytes);
		memset(shared + 100, 0x5a, 50);
		memset(data + 100, 0x5a, 50);
		assert_memory_equal(cpu, data, bytes);
		munmap(shared, bytes);
	}

	/* the GPU sees the same bytes: map [part, 2 part) of the buffer */
	assert_int_equal(vgpu_hal_iommu_map(suite.hal, buf, part, part, &iova), 0);
	track_iova(iova, part);
	if (sysmem_page_at(iova, part, part)) {
		as = as_create_ok();
		map_iova_range(as, DATA_VA, iova, part, sysmem_page_at(iova, part, part),
		               VGPU_TARGET_SYSMEM_COHERENT, 0);
		expect_bytes(as, DATA_VA, data + part, part, "host buffer seen by the GPU");
		memset(check, 0xc3, sizeof(check));
		write_ok(as, DATA_VA + 10, check, sizeof(check));
		assert_memory_equal(cpu + part + 10, check, sizeof(check));
		assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA, part), 0);
		vgpu_hal_as_tlb_invalidate(as);
		as_destroy_ok(as);
	}
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, iova, part), 0);
	untrack_iova(iova);
	untrack_host(buf);
	vgpu_hal_host_free(suite.hal, buf);
	free(zero);
	free(data);
}

static void test_as_limit(void **state)
{
	uint32_t max = suite.caps.max_address_spaces, i;
	struct vgpu_hal_as **spaces, *extra = NULL;

	if (max > 256) {
		printf("# max_address_spaces %u: too many to fill in a unit test\n", max);
		skip();
	}
	spaces = calloc(max, sizeof(*spaces));
	assert_non_null(spaces);
	for (i = 0; i < max; i++)
		spaces[i] = as_create_ok();
	assert_int_equal(vgpu_hal_as_create(suite.hal, &extra), -ENOSPC);
	as_destroy_ok(spaces[max / 2]);
	spaces[max / 2] = as_create_ok();
	for (i = 0; i < max; i++)
		as_destroy_ok(spaces[i]);
	free(spaces);
}

/* Data written through the aperture reads back, at and across page
 * boundaries, for every VRAM page size; a range that leaves the mapping is
 * -EFAULT and copies nothing. */
static void test_as_roundtrip(void **state)
{
	uint32_t sizes[32];
	unsigned n = page_sizes_of_mask(suite.caps.page_size_mask, sizes, 32), s;
	struct vgpu_hal_as *as = as_create_ok();

	for (s = 0; s < n; s++) {
		uint32_t page = sizes[s];
		uint64_t bytes = 3ull * page;
		struct tmem *mem = mem_vram(as, DATA_VA, bytes, page, 0);
		uint8_t *data = xmalloc(bytes), small[64], got[64], canary[64];
		uint64_t boundary;

		pattern(data, bytes, 1000 + s);
		write_ok(as, DATA_VA, data, bytes);
		expect_bytes(as, DATA_VA, data, bytes, "whole range");
		/* small unaligned accesses straddling each page boundary */
		for (boundary = page; boundary < bytes; boundary += page) {
			pattern(small, 7, boundary);
			write_ok(as, DATA_VA + boundary - 3, small, 7);
			memcpy(data + boundary - 3, small, 7);
			read_ok(as, DATA_VA + boundary - 1, got, 2);
			assert_memory_equal(got, data + boundary - 1, 2);
		}
		expect_bytes(as, DATA_VA, data, bytes, "after boundary writes");
		/* a range running off the end: -EFAULT, nothing copied */
		memset(got, 0xee, sizeof(got));
		memset(canary, 0xee, sizeof(canary));
		assert_int_equal(vgpu_hal_as_read(as, DATA_VA + bytes - 32, got, 64), -EFAULT);
		assert_memory_equal(got, canary, sizeof(got));
		memset(small, 0x11, sizeof(small));
		assert_int_equal(vgpu_hal_as_write(as, DATA_VA + bytes - 32, small, 64), -EFAULT);
		expect_bytes(as, DATA_VA + bytes - 32, data + bytes - 32, 32,
		             "mapped part of a failed write");
		mem_free(mem);
		free(data);
	}
	as_destroy_ok(as);
}

static void test_as_map_invalid(void **state)
{
	struct vgpu_hal_as *as = as_create_ok();
	uint32_t page = suite.vram_page;
	uint64_t address, byte;
	int err;

	assert_int_equal(vgpu_hal_vram_alloc(suite.hal, page, 1, &address), 0);
	track_vram(page, 1, &address);
	/* misaligned VA and address, bad sizes, flags and targets */
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA + page / 2, page, 1, VGPU_TARGET_VRAM,
	                                 &address, 0), -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA + 4, page, 1, VGPU_TARGET_VRAM, &address, 0),
	                 -EINVAL);
	if (page > VGPU_PAGE_4K) {
		uint64_t misaligned = address + VGPU_PAGE_4K;

		assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 1, VGPU_TARGET_VRAM,
		                                 &misaligned, 0), -EINVAL);
	}
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, 8192, 1, VGPU_TARGET_VRAM, &address, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 0, VGPU_TARGET_VRAM, &address, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 1, VGPU_TARGET_VRAM, &address,
	                                 1u << 7), -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 1, VGPU_TARGET_COUNT, &address, 0),
	                 -EINVAL);
	if (!(suite.caps.page_size_mask & VGPU_HAL_PAGE_MASK_4K))
		assert_int_equal(vgpu_hal_as_map(as, DATA_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM,
		                                 &address, 0), -EINVAL);
	/* the implementation's range is not the caller's */
	err = vgpu_hal_as_map(as, suite.caps.va_reserved_base, page, 1, VGPU_TARGET_VRAM,
	                      &address, 0);
	assert_true(err < 0);
	err = vgpu_hal_as_map(as, suite.caps.va_reserved_base - page, page, 2, VGPU_TARGET_VRAM,
	                      (const uint64_t[]){ address, address }, 0);
	assert_true(err < 0);
	/* nothing got mapped */
	assert_int_equal(vgpu_hal_as_read(as, DATA_VA, &byte, 1), -EFAULT);
	assert_int_equal(vgpu_hal_as_read(as, suite.caps.va_reserved_base - page, &byte, 1),
	                 -EFAULT);
	as_destroy_ok(as);
	untrack_vram(&address);
	vgpu_hal_vram_free(suite.hal, page, 1, &address);
}

/*
 * Replacing a mapping is how a chunk moves (GPUswap): the same VA shows
 * another VRAM page, then host memory through its IOVA, then the first
 * page again; writes land where the VA points now. A large page may
 * replace small ones and the reverse.
 */
static void test_as_remap(void **state)
{
	uint32_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *a = mem_vram(as, DATA_VA, page, page, 0);
	struct tmem *b = mem_vram(as, DATA2_VA, page, page, 0);
	/* two pages of host memory: the VA moves to the second one, a part
	 * of the IOMMU mapping */
	struct tmem *c = mem_sysmem(as, DATA3_VA, 2ull * page, page, VGPU_TARGET_SYSMEM_COHERENT,
	                            0);
	uint8_t *da = xmalloc(page), *db = xmalloc(page), *dc = xmalloc(2ull * page), mark[16];

	pattern(da, page, 1);
	pattern(db, page, 2);
	pattern(dc, 2ull * page, 3);
	write_ok(as, DATA_VA, da, page);
	write_ok(as, DATA2_VA, db, page);
	write_ok(as, DATA3_VA, dc, 2ull * page);

	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 1, VGPU_TARGET_VRAM, b->vram, 0), 0);
	vgpu_hal_as_tlb_invalidate(as);
	expect_bytes(as, DATA_VA, db, page, "VA moved to another VRAM page");
	map_iova_range(as, DATA_VA, c->iova + page, page, c->page, VGPU_TARGET_SYSMEM_COHERENT, 0);
	vgpu_hal_as_tlb_invalidate(as);
	expect_bytes(as, DATA_VA, dc + page, page, "VA moved to host memory");
	memset(mark, 0x77, sizeof(mark));
	write_ok(as, DATA_VA + 64, mark, sizeof(mark));
	memcpy(dc + page + 64, mark, sizeof(mark));
	expect_bytes(as, DATA3_VA, dc, 2ull * page, "write through the moved VA");
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA, page, 1, VGPU_TARGET_VRAM, a->vram, 0), 0);
	vgpu_hal_as_tlb_invalidate(as);
	expect_bytes(as, DATA_VA, da, page, "VA back on its first page");
	expect_bytes(as, DATA2_VA, db, page, "the other VRAM page untouched");

	/* a large page over small ones and back, where both exist */
	if (suite.min_page < page) {
		uint32_t small = suite.min_page;
		uint64_t count = page / small;
		struct tmem *s = mem_vram(as, DATA3_VA + 8 * page, page, small, 0);
		uint8_t *ds = xmalloc(page);

		pattern(ds, page, 4);
		write_ok(as, DATA3_VA + 8 * page, ds, page);
		assert_int_equal(vgpu_hal_as_map(as, DATA3_VA + 8 * page, page, 1, VGPU_TARGET_VRAM,
		                                 b->vram, 0), 0);
		vgpu_hal_as_tlb_invalidate(as);
		expect_bytes(as, DATA3_VA + 8 * page, db, page, "large page over small pages");
		assert_int_equal(vgpu_hal_as_map(as, DATA3_VA + 8 * page, small, count,
		                                 VGPU_TARGET_VRAM, s->vram, 0), 0);
		vgpu_hal_as_tlb_invalidate(as);
		expect_bytes(as, DATA3_VA + 8 * page, ds, page, "small pages over a large page");
		mem_free(s);
		free(ds);
	}
	mem_free(c);
	mem_free(b);
	mem_free(a);
	as_destroy_ok(as);
	free(da);
	free(db);
	free(dc);
}

/* Unmapped pages fault in the aperture; their neighbours do not; unmapping
 * an unmapped range is fine; misaligned ranges are not. */
static void test_as_unmap(void **state)
{
	uint32_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *mem = mem_vram(as, DATA_VA, 3ull * page, page, 0);
	uint8_t *data = xmalloc(3ull * page), byte;

	pattern(data, 3ull * page, 5);
	write_ok(as, DATA_VA, data, 3ull * page);
	assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA + page, page), 0);
	vgpu_hal_as_tlb_invalidate(as);
	assert_int_equal(vgpu_hal_as_read(as, DATA_VA + page, &byte, 1), -EFAULT);
	assert_int_equal(vgpu_hal_as_read(as, DATA_VA + 2 * page - 1, &byte, 1), -EFAULT);
	assert_int_equal(vgpu_hal_as_write(as, DATA_VA + page, &byte, 1), -EFAULT);
	assert_int_equal(vgpu_hal_as_read(as, DATA_VA + page - 8, data, 16), -EFAULT);
	expect_bytes(as, DATA_VA, data, page, "page before the hole");
	expect_bytes(as, DATA_VA + 2 * page, data + 2 * page, page, "page after the hole");
	assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA + page, page), 0);
	assert_int_equal(vgpu_hal_as_unmap(as, DATA3_VA, 16 * page), 0);
	assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA + 1, VGPU_PAGE_4K), -EINVAL);
	assert_int_equal(vgpu_hal_as_unmap(as, DATA_VA, 100), -EINVAL);
	/* mapping the page again brings its content back */
	assert_int_equal(vgpu_hal_as_map(as, DATA_VA + page, page, 1, VGPU_TARGET_VRAM,
	                                 &mem->vram[1], 0), 0);
	expect_bytes(as, DATA_VA, data, 3ull * page, "remapped");
	mem_free(mem);
	as_destroy_ok(as);
	free(data);
}

/* The same VA in two address spaces holds different data; a VA mapped in
 * one is unmapped in the other; destroying one leaves the other intact. */
static void test_as_isolation(void **state)
{
	uint32_t page = suite.vram_page;
	struct vgpu_hal_as *a = as_create_ok(), *b = as_create_ok();
	struct tmem *ma = mem_vram(a, DATA_VA, page, page, 0);
	struct tmem *mb = mem_vram(b, DATA_VA, page, page, 0);
	struct tmem *only_a = mem_vram(a, DATA2_VA, page, page, 0);
	uint8_t *da = xmalloc(page), *db = xmalloc(page), byte = 1;

	assert_true(ma->vram[0] != mb->vram[0]);
	pattern(da, page, 10);
	pattern(db, page, 11);
	write_ok(a, DATA_VA, da, page);
	write_ok(b, DATA_VA, db, page);
	expect_bytes(a, DATA_VA, da, page, "address space A");
	expect_bytes(b, DATA_VA, db, page, "address space B");
	write_ok(a, DATA2_VA, &byte, 1);
	assert_int_equal(vgpu_hal_as_read(b, DATA2_VA, &byte, 1), -EFAULT);
	assert_int_equal(vgpu_hal_as_write(b, DATA2_VA, &byte, 1), -EFAULT);
	mem_free(only_a);
	mem_free(ma);
	as_destroy_ok(a);
	expect_bytes(b, DATA_VA, db, page, "B after A was destroyed");
	mem_free(mb);
	as_destroy_ok(b);
	free(da);
	free(db);
}

/* An unmapped IOVA behind a SYSMEM PTE makes the aperture fail. */
static void test_as_unmapped_iova(void **state)
{
	uint32_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *mem = mem_sysmem(as, DATA_VA, page, page, VGPU_TARGET_SYSMEM_NONCOHERENT, 0);
	uint64_t word = 42;

	write_ok(as, DATA_VA, &word, 8);
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, mem->iova, mem->bytes), 0);
	mem->iova_mapped = false;
	assert_int_equal(vgpu_hal_as_read(as, DATA_VA, &word, 8), -EFAULT);
	assert_int_equal(vgpu_hal_as_write(as, DATA_VA, &word, 8), -EFAULT);
	mem_free(mem);
	as_destroy_ok(as);
}

/* Aperture accesses are not the engines' work: counters stay put. */
static void test_counters_ignore_aperture(void **state)
{
	uint32_t page = suite.vram_page;
	struct vgpu_hal_as *as = as_create_ok();
	struct tmem *vram = mem_vram(as, DATA_VA, page, page, 0);
	struct tmem *host = mem_sysmem(as, DATA2_VA, page, page, VGPU_TARGET_SYSMEM_COHERENT, 0);
	struct vgpu_hal_as_counters before, after;
	uint8_t *data = xmalloc(page);

	vgpu_hal_as_counters(as, &before);
	pattern(data, page, 3);
	write_ok(as, DATA_VA, data, page);
	write_ok(as, DATA2_VA, data, page);
	read_ok(as, DATA_VA, data, page);
	read_ok(as, DATA2_VA, data, page);
	vgpu_hal_as_counters(as, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	mem_free(host);
	mem_free(vram);
	as_destroy_ok(as);
	free(data);
}

static const struct CMUnitTest memory_tests[] = {
	HAL_TEST(test_caps_sane),
	HAL_TEST(test_vram_accounting),
	HAL_TEST(test_vram_alignment),
	HAL_TEST(test_vram_enomem_all_or_nothing),
	HAL_TEST(test_vram_invalid_arguments),
	HAL_TEST(test_vram_scrub),
	HAL_TEST(test_host_alloc),
	HAL_TEST(test_iommu_map_unmap),
	HAL_TEST(test_host_small_cpu_pointer_and_share),
	HAL_TEST(test_as_limit),
	HAL_TEST(test_as_roundtrip),
	HAL_TEST(test_as_map_invalid),
	HAL_TEST(test_as_remap),
	HAL_TEST(test_as_unmap),
	HAL_TEST(test_as_isolation),
	HAL_TEST(test_as_unmapped_iova),
	HAL_TEST(test_counters_ignore_aperture),
};

const struct hal_test_group hal_memory_group = {
	"hal-memory", memory_tests, sizeof(memory_tests) / sizeof(memory_tests[0]),
};
