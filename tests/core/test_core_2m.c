// SPDX-License-Identifier: MIT
/*
 * test_core_2m.c - the core on a GPU whose only VRAM page is 2 MiB (like
 * cudagpu), played by the test double hal_2m_shim around simgpu.
 *
 * The double refuses (and counts) every page size and alignment such a GPU
 * lacks, so each test ends by checking that the core never asked for one.
 * Covered: the double itself; sizes, addresses and pages of buffers and
 * chunks; chunk sizes that are not 2 MiB multiples refused with a clear
 * error, and the default chunk size; eviction and return with 2 MiB SYSMEM
 * pages, and with IOVAs that only allow 4 KiB ones; a buffer larger than
 * VRAM; kernels on a guest channel running on evicted chunks; many moves
 * with several chunk sizes; PTE rewrites of runs of adjacent chunks in one
 * call, undone when a copy fails. Data is checked after every move,
 * invariants after every step.
 *
 * VRAM is 60 MiB (64 MiB minus simgpu's 4 MiB reservation): 30 pages of
 * 2 MiB. Chunks are 2 MiB unless a test says otherwise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_harness.h"
#include "guest_double.h"
#include "hal_2m_shim.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define VRAM (60 * MiB)
#define PAGE (2 * MiB)

static struct core_harness h;

static void setup_with(bool misaligned_iovas)
{
	struct core_harness_config config = {
		.chunk_bytes = PAGE, .hal_2m = true, .misaligned_iovas = misaligned_iovas,
	};

	core_harness_setup(&h, &config);
	assert_int_equal(h.caps.vram_bytes, VRAM);
	assert_int_equal(h.caps.page_size_mask, VGPU_HAL_PAGE_MASK_2M);
	assert_int_equal(h.min_page, PAGE);
}

static int setup_default(void **state)
{
	setup_with(false);
	return 0;
}

static struct hal_2m_shim_counters shim_counters(void)
{
	struct hal_2m_shim_counters counters;

	hal_2m_shim_counters(h.hal, &counters);
	return counters;
}

static int teardown(void **state)
{
	harness_assert_invariants(&h);
	/* The core asked for nothing a 2 MiB GPU lacks. */
	assert_int_equal(shim_counters().refused, 0);
	core_harness_teardown(&h);
	return 0;
}

/* ---- the double --------------------------------------------------------- */

/* 2 MiB pages only, at addresses the double translates; anything else is
 * refused and counted. */
static void test_shim_pages(void **state)
{
	struct vgpu_hal_as *as;
	uint64_t pages[2], small, va = 64 * MiB, word = 0x1234567890abcdefull, back = 0;
	struct hal_2m_shim_counters counters;

	assert_int_equal(h.caps.sysmem_page_size_mask,
	                 VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_2M);
	assert_int_equal(vgpu_hal_vram_alloc(h.hal, VGPU_PAGE_64K, 1, &small), -EINVAL);
	assert_int_equal(vgpu_hal_vram_alloc(h.hal, VGPU_PAGE_4K, 1, &small), -EINVAL);
	assert_int_equal(vgpu_hal_vram_alloc(h.hal, VGPU_PAGE_2M, 2, pages), 0);
	assert_int_equal(pages[0] % PAGE, 0);
	assert_int_equal(pages[1] % PAGE, 0);
	assert_true(pages[0] != pages[1] && pages[0] < VRAM && pages[1] < VRAM);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM - 2 * PAGE);

	assert_int_equal(vgpu_hal_as_create(h.hal, &as), 0);
	assert_int_equal(vgpu_hal_as_map(as, va, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, pages, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, va + VGPU_PAGE_64K, VGPU_PAGE_2M, 1, VGPU_TARGET_VRAM,
	                                 pages, 0),
	                 -EINVAL);
	assert_int_equal(vgpu_hal_as_map(as, va, VGPU_PAGE_2M, 2, VGPU_TARGET_VRAM, pages, 0), 0);
	/* The second page's last word, through the translation. */
	assert_int_equal(vgpu_hal_as_write(as, va + 2 * PAGE - 8, &word, 8), 0);
	assert_int_equal(vgpu_hal_as_read(as, va + 2 * PAGE - 8, &back, 8), 0);
	assert_int_equal(back, word);
	assert_int_equal(vgpu_hal_as_unmap(as, va, 2 * PAGE), 0);
	vgpu_hal_as_tlb_invalidate(as);
	vgpu_hal_as_destroy(as);
	assert_int_equal(vgpu_hal_vram_scrub(h.hal, VGPU_PAGE_2M, 2, pages), 0);
	vgpu_hal_vram_free(h.hal, VGPU_PAGE_2M, 2, pages);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM);

	counters = shim_counters();
	assert_int_equal(counters.refused, 4);
	assert_int_equal(counters.vram_pages_allocated, 2);
	assert_int_equal(counters.vram_pages_mapped, 2);
	/* Forget the refusals made on purpose: teardown checks the core's. */
	core_harness_teardown(&h);
	setup_default(state);
}

/* ---- sizes and pages ---------------------------------------------------- */

static void test_sizes_and_pages(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 4 * MiB);
	struct vgpu_buffer_info tiny, odd, big;
	struct vgpu_chunk_info chunks[8];
	struct hal_2m_shim_counters counters;

	/* 5000 bytes take a whole 2 MiB page, at a 2 MiB aligned address. */
	assert_int_equal(vgpu_core_alloc(a, 5000, VGPU_PRIORITY_DEFAULT, 0, &tiny, NULL), 0);
	assert_int_equal(tiny.bytes, PAGE);
	assert_int_equal(tiny.gpu_va % PAGE, 0);
	assert_true(tiny.gpu_va != 0);
	/* 3 MiB + 5000 bytes: 4 MiB, two chunks of 2 MiB. */
	assert_int_equal(vgpu_core_alloc(a, 3 * MiB + 5000, VGPU_PRIORITY_DEFAULT, 0, &odd, NULL),
	                 0);
	assert_int_equal(odd.bytes, 4 * MiB);
	assert_int_equal(odd.gpu_va % PAGE, 0);
	assert_true(odd.gpu_va >= tiny.gpu_va + tiny.bytes);
	assert_int_equal(vgpu_core_buffer_chunks(a, odd.handle, chunks, 8, NULL), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(chunks[i].bytes, PAGE);
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_2M);
		assert_int_equal(chunks[i].location, VGPU_CHUNK_RESIDENT);
	}
	/* b's 4 MiB chunks: 9 MiB + 1 is 10 MiB, two chunks and a 2 MiB tail. */
	assert_int_equal(vgpu_core_alloc(b, 9 * MiB + 1, VGPU_PRIORITY_DEFAULT, 0, &big, NULL), 0);
	assert_int_equal(big.bytes, 10 * MiB);
	assert_int_equal(vgpu_core_buffer_chunks(b, big.handle, chunks, 8, NULL), 3);
	assert_int_equal(chunks[0].bytes, 4 * MiB);
	assert_int_equal(chunks[1].bytes, 4 * MiB);
	assert_int_equal(chunks[2].bytes, 2 * MiB);
	for (int i = 0; i < 3; i++)
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_2M);

	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM - 16 * MiB);
	assert_int_equal(harness_stats(a).allocated_bytes, 6 * MiB);
	harness_fill(a, &odd, 1);
	harness_fill(b, &big, 2);
	assert_true(harness_check(a, &odd, 1));
	assert_true(harness_check(b, &big, 2));
	counters = shim_counters();
	assert_int_equal(counters.vram_pages_allocated, 8);
	assert_int_equal(counters.vram_pages_mapped, 8);
	harness_assert_invariants(&h);

	assert_int_equal(vgpu_core_free(a, odd.handle, NULL), 0);
	assert_int_equal(vgpu_core_free(b, big.handle, NULL), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM - PAGE);
}

/* Chunk sizes must be 2 MiB multiples; 0 means 4 MiB. A core of its own, on
 * a GPU of its own (h's core owns h's event handler). */
static void test_chunk_sizes(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_core_config config;
	struct vgpu_vm_config vm_config;
	struct vgpu_hal *sim, *hal;
	struct vgpu_core *core = NULL;
	struct vgpu_vm *vm = NULL;
	struct vgpu_vm_stats stats;

	assert_int_equal(simgpu_create(NULL, &sim), 0);
	assert_int_equal(hal_2m_shim_create(sim, NULL, &hal), 0);
	vgpu_core_config_defaults(&config);
	config.return_interval_ms = 0;
	config.chunk_bytes = MiB;
	assert_int_equal(vgpu_core_create(hal, &config, &core, &error), -EINVAL);
	assert_string_equal(vgpu_error_msg(&error), "chunk size 1 MiB is not a multiple of the "
	                                            "GPU's 2 MiB page; use e.g. 4 MiB (the "
	                                            "default)");
	config.chunk_bytes = 0;
	assert_int_equal(vgpu_core_create(hal, &config, &core, &error), 0);

	vgpu_vm_config_defaults(&vm_config);
	vm_config.name = "a";
	vm_config.chunk_bytes = 3 * MiB;
	assert_int_equal(vgpu_core_vm_create(core, &vm_config, &vm, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error),
	                       "chunk size 3 MiB is not a multiple of the GPU's 2 MiB page"));
	vm_config.chunk_bytes = 0;
	assert_int_equal(vgpu_core_vm_create(core, &vm_config, &vm, &error), 0);
	vgpu_core_vm_stats(vm, &stats);
	assert_int_equal(stats.chunk_bytes, 4 * MiB);
	vm_config.name = "b";
	vm_config.chunk_bytes = 6 * MiB;
	assert_int_equal(vgpu_core_vm_create(core, &vm_config, &vm, &error), 0);
	vgpu_core_vm_stats(vm, &stats);
	assert_int_equal(stats.chunk_bytes, 6 * MiB);
	vgpu_core_destroy(core);
	vgpu_hal_destroy(hal);
}

/* ---- eviction and return ------------------------------------------------ */

/* a fills VRAM, b takes 12 MiB: six of a's chunks go to the host and come
 * back when b frees. With 2 MiB aligned IOVAs they are mapped with 2 MiB
 * SYSMEM pages (in a's address space and in the DMA windows); with IOVAs
 * that are not, with 4 KiB pages. The data survives both ways. */
static void evict_and_return(bool misaligned_iovas)
{
	struct vgpu_buffer_info as[10], bs;
	struct hal_2m_shim_counters counters;
	struct vgpu_core_stats stats;
	struct vgpu_vm *a, *b;

	core_harness_teardown(&h);
	setup_with(misaligned_iovas);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	harness_alloc_filled(&h, a, as, 10, 6 * MiB, VGPU_PRIORITY_DEFAULT, 100);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	assert_int_equal(vgpu_core_alloc(b, 12 * MiB, VGPU_PRIORITY_DEFAULT, 0, &bs, NULL), 0);
	harness_assert_invariants(&h);
	harness_fill(b, &bs, 7);
	assert_int_equal(harness_stats(a).evicted_bytes, 12 * MiB);
	assert_int_equal(harness_stats(a).evictions, 6);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_evicted, 6);
	assert_int_equal(stats.eviction.bytes_copied, 12 * MiB);
	assert_int_equal(stats.host_used_bytes, 12 * MiB);
	harness_check_all(a, as, 10, 100);
	assert_true(harness_check(b, &bs, 7));

	/* Each evicted chunk: its PTEs in a, the destination window in the
	 * DMA address space. */
	counters = shim_counters();
	if (misaligned_iovas) {
		assert_int_equal(counters.sysmem_2m_pages_mapped, 0);
		assert_int_equal(counters.sysmem_4k_pages_mapped, 2 * 6 * (PAGE / VGPU_PAGE_4K));
	} else {
		assert_int_equal(counters.sysmem_2m_pages_mapped, 2 * 6);
		assert_int_equal(counters.sysmem_4k_pages_mapped, 0);
	}
	/* Evicted chunks stay writable through the GPU. */
	for (int i = 0; i < 10; i++)
		harness_fill(a, &as[i], 200 + i);

	assert_int_equal(vgpu_core_free(b, bs.handle, NULL), 0);
	assert_int_equal(vgpu_core_return_pass(h.core, NULL), 6);
	harness_assert_invariants(&h);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	assert_int_equal(harness_stats(a).returns, 6);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.host_used_bytes, 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	harness_check_all(a, as, 10, 200);
}

static void test_evict_and_return(void **state)
{
	evict_and_return(false);
}

static void test_evict_and_return_misaligned_iovas(void **state)
{
	evict_and_return(true);
}

/* 100 MiB on 60 MiB of VRAM: 30 chunks resident, 20 placed on the host. */
static void test_buffer_larger_than_vram(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_buffer_info big;
	struct vgpu_core_stats stats;
	int resident, evicted;

	assert_int_equal(vgpu_core_alloc(a, 100 * MiB - 1, VGPU_PRIORITY_DEFAULT, 0, &big, NULL),
	                 0);
	assert_int_equal(big.bytes, 100 * MiB);
	harness_assert_invariants(&h);
	harness_chunk_counts(a, big.handle, &resident, &evicted);
	assert_int_equal(resident, 30);
	assert_int_equal(evicted, 20);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_placed_on_host, 20);
	assert_int_equal(stats.eviction.bytes_copied, 0);
	assert_int_equal(shim_counters().sysmem_2m_pages_mapped, 20);
	harness_fill(a, &big, 5);
	assert_true(harness_check(a, &big, 5));
}

/* Kernels on a guest channel (their pushbuffers in 4 KiB SYSMEM pages)
 * read and write chunks wherever they are: FILL, evict, STREAM and
 * CHECKSUM on the host, return, CHECKSUM again. */
static uint64_t gpu_checksum(struct harness_guest *guest, const struct vgpu_buffer_info *buffer)
{
	uint32_t words[16];
	uint64_t result = 0;

	harness_guest_run(&h, guest, words,
	                  vgpu_push_launch_checksum(words, buffer->gpu_va, buffer->bytes,
	                                            guest->semaphore_va + 64));
	assert_int_equal(vgpu_hal_as_read(vgpu_core_vm_address_space(guest->vm),
	                                  guest->semaphore_va + 64, &result, 8),
	                 0);
	return le64toh(result);
}

static void test_kernels_on_evicted_chunks(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 4, 0, 0);
	struct vgpu_buffer_info data, bs;
	struct harness_guest guest;
	uint32_t words[16];
	int resident, evicted;

	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	assert_int_equal(vgpu_core_alloc(a, 20 * MiB, VGPU_PRIORITY_DEFAULT, 0, &data, NULL), 0);
	harness_guest_run(&h, &guest, words,
	                  vgpu_push_launch_fill(words, data.gpu_va, data.bytes, 42));
	/* b (weight 4) takes 50 MiB: a, holding 22 MiB with its log, is the
	 * victim for most of the 12 MiB missing. */
	assert_int_equal(vgpu_core_alloc(b, 50 * MiB, VGPU_PRIORITY_DEFAULT, 0, &bs, NULL), 0);
	harness_chunk_counts(a, data.handle, &resident, &evicted);
	assert_true(evicted > 0);
	harness_guest_run(&h, &guest, words,
	                  vgpu_push_launch_stream(words, data.gpu_va, data.bytes, 2));
	assert_int_equal(gpu_checksum(&guest, &data),
	                 vgpu_kernel_reference_fill_stream_checksum(42, data.bytes, 2));
	assert_int_equal(vgpu_core_free(b, bs.handle, NULL), 0);
	assert_true(vgpu_core_return_pass(h.core, NULL) > 0);
	harness_chunk_counts(a, data.handle, &resident, &evicted);
	assert_int_equal(evicted, 0);
	assert_int_equal(gpu_checksum(&guest, &data),
	                 vgpu_kernel_reference_fill_stream_checksum(42, data.bytes, 2));
	assert_true(shim_counters().sysmem_4k_pages_mapped > 0); /* the guest's RAM */
	harness_assert_invariants(&h);
	harness_guest_teardown(&guest);
}

/* Chunks of 2, 4 and 6 MiB with tails move back and forth many times. */
static void test_many_moves(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 4 * MiB);
	struct vgpu_vm *c = harness_vm(&h, "c", 1, 0, 6 * MiB);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[3], cs[2], bs;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(vgpu_core_alloc(a, 9 * MiB + 4096 * (uint64_t)i, 7, 0, &as[i],
		                                 NULL), 0);
		harness_fill(a, &as[i], 50 + i);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vgpu_core_alloc(c, 8 * MiB - 4096 * (uint64_t)i, 7, 0, &cs[i],
		                                 NULL), 0);
		harness_fill(c, &cs[i], 60 + i);
	}
	for (int round = 0; round < 6; round++) {
		assert_int_equal(vgpu_core_alloc(b, (10 + 4 * round) * MiB + 20480, 7, 0, &bs,
		                                 NULL), 0);
		harness_assert_invariants(&h);
		harness_check_all(a, as, 3, 50);
		harness_check_all(c, cs, 2, 60);
		harness_fill(a, &as[round % 3], 50 + round % 3);
		assert_int_equal(vgpu_core_free(b, bs.handle, NULL), 0);
		assert_true(vgpu_core_return_pass(h.core, NULL) >= 0);
		harness_assert_invariants(&h);
		harness_check_all(a, as, 3, 50);
		harness_check_all(c, cs, 2, 60);
	}
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	assert_int_equal(harness_stats(c).evicted_bytes, 0);
	assert_true(harness_stats(a).evictions + harness_stats(c).evictions > 0);
}

/*
 * Two runs of adjacent chunks (buffers x and z of VM a, with y's hole
 * between them) are evicted together: their PTEs are rewritten with one
 * as_map per run, not per chunk. With the copy engine failing after x's
 * copies, x was already remapped when z's first copy failed: the eviction
 * fails, x points back at its VRAM, and every byte of a is where it was.
 */
static void setup_runs(struct vgpu_vm **a, struct vgpu_vm **b, struct vgpu_buffer_info *x,
                       struct vgpu_buffer_info *z, struct vgpu_buffer_info *fill)
{
	struct vgpu_buffer_info y;

	*a = harness_vm(&h, "a", 1, 0, 0);
	*b = harness_vm(&h, "b", 100, 0, 0);
	harness_alloc_filled(&h, *a, x, 1, 8 * MiB, VGPU_PRIORITY_DEFAULT, 10);
	assert_int_equal(vgpu_core_alloc(*a, 8 * MiB, VGPU_PRIORITY_DEFAULT, 0, &y, NULL), 0);
	harness_alloc_filled(&h, *a, z, 1, 8 * MiB, VGPU_PRIORITY_DEFAULT, 30);
	assert_int_equal(vgpu_core_free(*a, y.handle, NULL), 0);
	assert_true(z->gpu_va > x->gpu_va + x->bytes); /* not adjacent */
	/* b takes the rest of VRAM; its share per weight stays below a's. */
	assert_int_equal(vgpu_core_alloc(*b, VRAM - 16 * MiB, VGPU_PRIORITY_DEFAULT, 0, fill, NULL),
	                 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	assert_int_equal(harness_stats(*a).evicted_bytes, 0);
}

static void test_remap_runs(void **state)
{
	struct vgpu_buffer_info x, z, fill, more;
	struct vgpu_vm *a, *b;
	uint64_t calls;

	setup_runs(&a, &b, &x, &z, &fill);
	calls = hal_2m_shim_as_map_calls(vgpu_core_vm_address_space(a));
	assert_int_equal(vgpu_core_alloc(b, 16 * MiB, VGPU_PRIORITY_DEFAULT, 0, &more, NULL), 0);
	harness_assert_invariants(&h);
	assert_int_equal(harness_stats(a).evicted_bytes, 16 * MiB);
	/* Eight chunks, two runs: two PTE rewrites in a. */
	assert_int_equal(hal_2m_shim_as_map_calls(vgpu_core_vm_address_space(a)) - calls, 2);
	assert_true(harness_check(a, &x, 10));
	assert_true(harness_check(a, &z, 30));
}

static void test_failed_copy_undoes_remaps(void **state)
{
	struct vgpu_buffer_info x, z, fill, more;
	struct vgpu_core_stats stats;
	struct vgpu_vm *a, *b;
	uint64_t calls;

	setup_runs(&a, &b, &x, &z, &fill);
	calls = hal_2m_shim_as_map_calls(vgpu_core_vm_address_space(a));
	hal_2m_shim_fail_copies(h.hal, 4); /* x's four chunks, then nothing */
	assert_int_not_equal(vgpu_core_alloc(b, 16 * MiB, VGPU_PRIORITY_DEFAULT, 0, &more, NULL),
	                     0);
	hal_2m_shim_fail_copies(h.hal, -1);
	harness_assert_invariants(&h);
	/* x was remapped to the host and back: two rewrites. */
	assert_int_equal(hal_2m_shim_as_map_calls(vgpu_core_vm_address_space(a)) - calls, 2);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_evicted, 0);
	assert_int_equal(stats.host_used_bytes, 0);
	assert_true(harness_check(a, &x, 10));
	assert_true(harness_check(a, &z, 30));

	/* With the copy engine working again, the same allocation succeeds. */
	assert_int_equal(vgpu_core_alloc(b, 16 * MiB, VGPU_PRIORITY_DEFAULT, 0, &more, NULL), 0);
	harness_assert_invariants(&h);
	assert_int_equal(harness_stats(a).evicted_bytes, 16 * MiB);
	assert_true(harness_check(a, &x, 10));
	assert_true(harness_check(a, &z, 30));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shim_pages, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_sizes_and_pages, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_chunk_sizes, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_evict_and_return, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_evict_and_return_misaligned_iovas, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_buffer_larger_than_vram, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_kernels_on_evicted_chunks, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_many_moves, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_remap_runs, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_failed_copy_undoes_remaps, setup_default,
		                                teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
