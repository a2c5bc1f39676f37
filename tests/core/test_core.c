// SPDX-License-Identifier: MIT
/*
 * test_core.c - the core's behaviour on simgpu: allocation without and
 * with pressure, victim choice (largest resident ÷ weight, ties to the lower
 * id), each policy's chunk choice, the new buffer's chunks going to host
 * memory directly, the host budget failing with nothing changed, frees,
 * the return pass and its winner, VM destroy, channels and events, isolation
 * between VMs. Data is checked through the GPU after every move; the
 * invariants after every step.
 *
 * VRAM is 60 MiB (64 MiB minus simgpu's 4 MiB reservation), chunks 1 MiB.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_harness.h"
#include "guest_double.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"

#define VRAM (60 * MiB)

static struct core_harness h;

static int setup_default(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB };

	core_harness_setup(&h, &config);
	assert_int_equal(h.caps.vram_bytes, VRAM);
	return 0;
}

static int teardown(void **state)
{
	harness_assert_invariants(&h);
	core_harness_teardown(&h);
	return 0;
}

/* ---- no pressure -------------------------------------------------------- */

static void test_alloc_without_pressure(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_buffer_info buffer;
	struct vgpu_chunk_info chunks[8];
	struct vgpu_core_stats stats;
	struct vgpu_vm_stats vm;

	/* 3 MiB + 5000 bytes: rounded to 3 MiB + 8 KiB, 4 chunks. */
	assert_int_equal(vgpu_core_alloc(a, 3 * MiB + 5000, VGPU_PRIORITY_DEFAULT, 0, &buffer,
	                                 NULL), 0);
	assert_int_equal(buffer.bytes, 3 * MiB + 8 * KiB);
	assert_int_equal(buffer.gpu_va % (64 * KiB), 0);
	assert_int_equal(vgpu_core_buffer_chunks(a, buffer.handle, chunks, 8, NULL), 4);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(chunks[i].bytes, MiB);
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_64K);
		assert_int_equal(chunks[i].location, VGPU_CHUNK_RESIDENT);
	}
	assert_int_equal(chunks[3].bytes, 8 * KiB);
	assert_int_equal(chunks[3].page_size, VGPU_PAGE_4K);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM - buffer.bytes);
	harness_fill(a, &buffer, 1);
	assert_true(harness_check(a, &buffer, 1));
	vm = harness_stats(a);
	assert_int_equal(vm.allocated_bytes, buffer.bytes);
	assert_int_equal(vm.resident_bytes, buffer.bytes);
	assert_int_equal(vm.evicted_bytes, 0);
	assert_int_equal(vm.resident_chunks, 4);
	assert_int_equal(vm.allocs, 1);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.eviction.passes, 0);
	assert_int_equal(stats.chunks_evicted + stats.chunks_placed_on_host, 0);
	harness_assert_invariants(&h);

	assert_int_equal(vgpu_core_free(a, buffer.handle, NULL), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM);
	/* The freed range is unmapped: the aperture faults on it. */
	{
		uint8_t byte;

		assert_int_equal(vgpu_hal_as_read(vgpu_core_vm_address_space(a), buffer.gpu_va,
		                                  &byte, 1),
		                 -EFAULT);
	}
}

static void test_bad_input(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info buffer, other;
	struct vgpu_vm_config config;
	struct vgpu_vm *vm;

	assert_int_equal(vgpu_core_alloc(a, 0, 7, 0, &buffer, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "1 byte or more"));
	assert_int_equal(vgpu_core_alloc(a, MiB, 16, 0, &buffer, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "priority"));
	assert_int_equal(vgpu_core_alloc(a, MiB, 7, 1, &buffer, &error), -EINVAL);
	assert_int_equal(vgpu_core_alloc(a, UINT64_MAX, 7, 0, &buffer, &error), -EINVAL);
	assert_int_equal(vgpu_core_alloc(a, MiB, 7, 0, NULL, &error), -EINVAL);
	/* Huge but well-formed: exceeds the address space, not a crash. */
	assert_true(vgpu_core_alloc(a, 1ull << 62, 7, 0, &buffer, &error) < 0);

	assert_int_equal(vgpu_core_alloc(b, MiB, 7, 0, &other, &error), 0);
	harness_fill(b, &other, 9);
	/* b's handle means nothing in a; a's failures never touch b. */
	assert_int_equal(vgpu_core_free(a, other.handle, &error), -ENOENT);
	assert_non_null(strstr(vgpu_error_msg(&error), "no buffer with handle"));
	assert_int_equal(vgpu_core_free(a, 0, &error), -ENOENT);
	assert_int_equal(vgpu_core_free(a, UINT64_MAX, &error), -ENOENT);
	assert_int_equal(vgpu_core_set_priority(a, other.handle, 3, &error), -ENOENT);
	assert_int_equal(vgpu_core_set_priority(b, other.handle, 99, &error), -EINVAL);
	assert_int_equal(vgpu_core_buffer_chunks(a, other.handle, NULL, 0, &error), -ENOENT);
	assert_true(harness_check(b, &other, 9));
	assert_int_equal(harness_stats(b).allocated_bytes, MiB);
	/* A freed handle is dead, even in its own VM. */
	assert_int_equal(vgpu_core_free(b, other.handle, &error), 0);
	assert_int_equal(vgpu_core_free(b, other.handle, &error), -ENOENT);

	/* One error convention: every failure says why in the last error
	 * (a successful call clears it first). */
	{
		uint64_t va;

#define assert_fails_saying_why(call, want)                                        \
	do {                                                                          \
		assert_int_equal(vgpu_core_set_weight(a, 1, &error), 0);                      \
		assert_string_equal(vgpu_error_msg(&error), "no error");              \
		assert_int_equal((call), (want));                                     \
		assert_string_not_equal(vgpu_error_msg(&error), "no error");          \
	} while (0)
		assert_fails_saying_why(vgpu_core_free(NULL, 1, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_set_priority(NULL, 1, 3, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_buffer_chunks(NULL, 1, NULL, 0, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_release_va(NULL, 0, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_release_va(a, 0x1000, &error), -ENOENT);
		assert_fails_saying_why(vgpu_core_reserve_va(a, 0, &va, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_set_weight(a, 0, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_alloc(a, MiB, 7, 1, &buffer, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_vm_create(NULL, NULL, NULL, &error), -EINVAL);
		assert_fails_saying_why(vgpu_core_create(NULL, NULL, NULL, &error), -EINVAL);
#undef assert_fails_saying_why
	}

	vgpu_vm_config_defaults(&config);
	config.name = "a";
	assert_int_equal(vgpu_core_vm_create(h.core, &config, &vm, &error), -EEXIST);
	config.name = "";
	assert_int_equal(vgpu_core_vm_create(h.core, &config, &vm, &error), -EINVAL);
	config.name = "has space";
	assert_int_equal(vgpu_core_vm_create(h.core, &config, &vm, &error), -EINVAL);
	config.name = "c";
	config.weight = 0;
	assert_int_equal(vgpu_core_vm_create(h.core, &config, &vm, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "weight"));
	config.weight = 1;
	config.chunk_bytes = 1000;
	assert_int_equal(vgpu_core_vm_create(h.core, &config, &vm, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "not a multiple of the GPU's 4 KiB page"));
	assert_int_equal(vgpu_core_set_weight(a, 0, &error), -EINVAL);
	assert_int_equal(harness_stats(a).weight, 1);
}

static void test_cap(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 4 * MiB, 0);
	struct vgpu_buffer_info one, two;
	struct vgpu_core_stats stats;

	assert_int_equal(vgpu_core_alloc(a, 3 * MiB, 7, 0, &one, &error), 0);
	assert_int_equal(vgpu_core_alloc(a, 2 * MiB, 7, 0, &two, &error), -EDQUOT);
	assert_non_null(strstr(vgpu_error_msg(&error), "cap"));
	assert_int_equal(harness_stats(a).allocated_bytes, 3 * MiB);
	assert_int_equal(harness_stats(a).alloc_failures, 1);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.allocs_failed_cap, 1);
	/* Exactly up to the cap is fine. */
	assert_int_equal(vgpu_core_alloc(a, 1 * MiB, 7, 0, &two, &error), 0);
	assert_int_equal(vgpu_core_free(a, one.handle, &error), 0);
	assert_int_equal(vgpu_core_alloc(a, 3 * MiB, 7, 0, &one, &error), 0);
}

static void test_per_vm_chunk_size(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 256 * KiB);
	struct vgpu_buffer_info buffer;
	struct vgpu_chunk_info chunks[8];

	assert_int_equal(vgpu_core_alloc(a, MiB + 12 * KiB, 7, 0, &buffer, NULL), 0);
	assert_int_equal(vgpu_core_buffer_chunks(a, buffer.handle, chunks, 8, NULL), 5);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(chunks[i].bytes, 256 * KiB);
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_64K);
		assert_int_equal(chunks[i].gpu_va, buffer.gpu_va + i * 256 * KiB);
	}
	assert_int_equal(chunks[4].bytes, 12 * KiB);
	assert_int_equal(chunks[4].page_size, VGPU_PAGE_4K);
	assert_int_equal(harness_stats(a).chunk_bytes, 256 * KiB);
}

/* ---- eviction: who is the victim ---------------------------------------- */

/* The VM holding everything is the victim; exactly the request is evicted;
 * its data stays readable at the same addresses. */
static void test_victim_is_largest(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[10], bs;
	struct vgpu_core_stats stats;
	struct vgpu_vm_stats sa, sb;

	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 100);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	assert_int_equal(vgpu_core_alloc(b, 12 * MiB, 7, 0, &bs, NULL), 0);
	harness_assert_invariants(&h);
	harness_fill(b, &bs, 7);
	sa = harness_stats(a);
	sb = harness_stats(b);
	assert_int_equal(sa.evicted_bytes, 12 * MiB);
	assert_int_equal(sa.resident_bytes, 48 * MiB);
	assert_int_equal(sa.evictions, 12);
	assert_int_equal(sb.resident_bytes, 12 * MiB);
	assert_int_equal(sb.evicted_bytes, 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_evicted, 12);
	assert_int_equal(stats.chunks_placed_on_host, 0);
	assert_int_equal(stats.eviction.passes, 1);
	assert_int_equal(stats.eviction.bytes_copied, 12 * MiB);
	assert_int_equal(stats.host_used_bytes, 12 * MiB);
	assert_int_equal(stats.vram_free_bytes, 0);
	harness_check_all(a, as, 10, 100);
	assert_true(harness_check(b, &bs, 7));
	/* The evicted chunks are still writable through the GPU. */
	harness_fill(a, &as[3], 1000);
	assert_true(harness_check(a, &as[3], 1000));
}

/* The request counts as the requester's: over its share, it evicts itself
 * (and the chunks of the new buffer go to host memory without a copy). */
static void test_requester_is_victim(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[4], bs[3];
	struct vgpu_core_stats stats;
	int resident, evicted;

	harness_alloc_filled(&h, b, bs, 3, 10 * MiB, 7, 10);
	harness_alloc_filled(&h, a, as, 3, 10 * MiB, 7, 20);
	/* a: 30 resident + 10 requested = 40 > b's 30. Every selection
	 * comes from a (at 30 vs 30 the tie goes to a, the lower id). */
	assert_int_equal(vgpu_core_alloc(a, 10 * MiB, 7, 0, &as[3], NULL), 0);
	harness_assert_invariants(&h);
	assert_int_equal(harness_stats(b).evicted_bytes, 0);
	assert_int_equal(harness_stats(a).resident_bytes, 30 * MiB);
	assert_int_equal(harness_stats(a).evicted_bytes, 10 * MiB);
	vgpu_core_stats(h.core, &stats);
	harness_chunk_counts(a, as[3].handle, &resident, &evicted);
	assert_int_equal(stats.chunks_placed_on_host, (uint64_t)evicted);
	assert_int_equal(stats.chunks_evicted + stats.chunks_placed_on_host, 10);
	assert_int_equal(stats.eviction.bytes_copied, stats.chunks_evicted * MiB);
	harness_fill(a, &as[3], 23);
	harness_check_all(a, as, 4, 20);
	harness_check_all(b, bs, 3, 10);
}

/* Equal ratios: the lower VM id gives first, then they alternate. */
static void test_tie_rule(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_vm *c = harness_vm(&h, "c", 1, 0, 0);
	struct vgpu_buffer_info as, bs, cs[2];

	harness_alloc_filled(&h, b, &bs, 1, 30 * MiB, 7, 1);
	harness_alloc_filled(&h, a, &as, 1, 30 * MiB, 7, 2);
	assert_int_equal(vgpu_core_alloc(c, 1 * MiB, 7, 0, &cs[0], NULL), 0);
	assert_int_equal(harness_stats(a).evicted_bytes, 1 * MiB); /* a: id 1 */
	assert_int_equal(harness_stats(b).evicted_bytes, 0);
	assert_int_equal(vgpu_core_alloc(c, 4 * MiB, 7, 0, &cs[1], NULL), 0);
	/* b (30) > a (29): b, then a and b alternate: b 2+... a 1+2 */
	assert_int_equal(harness_stats(a).evicted_bytes, 3 * MiB);
	assert_int_equal(harness_stats(b).evicted_bytes, 2 * MiB);
	assert_true(harness_check(a, &as, 2));
	assert_true(harness_check(b, &bs, 1));
}

/* Weights scale the share: with 1:2 the light VM gives until it holds
 * half of the heavy one's resident bytes. */
static void test_weighted_victim(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 2, 0, 0);
	struct vgpu_vm *c = harness_vm(&h, "c", 1, 0, 0);
	struct vgpu_buffer_info as, bs, cs;

	harness_alloc_filled(&h, a, &as, 1, 30 * MiB, 7, 1);
	harness_alloc_filled(&h, b, &bs, 1, 30 * MiB, 7, 2);
	/* a 30/1 vs b 30/2 = 15 vs c's request 18/1. a gives until it ties
	 * with c at 18, then a and c (the request counts as c's) alternate
	 * until a = c = 15 = b's 30/2: everyone at the same ratio. */
	assert_int_equal(vgpu_core_alloc(c, 18 * MiB, 7, 0, &cs, NULL), 0);
	assert_int_equal(harness_stats(a).resident_bytes, 15 * MiB);
	assert_int_equal(harness_stats(b).resident_bytes, 30 * MiB);
	assert_int_equal(harness_stats(c).resident_bytes, 15 * MiB);
	assert_int_equal(harness_stats(c).evicted_bytes, 3 * MiB);
	assert_true(harness_check(a, &as, 1));
	assert_true(harness_check(b, &bs, 2));

	/* set_weight takes effect at the next eviction: now b is light. */
	assert_int_equal(vgpu_core_set_weight(a, 4, NULL), 0);
	assert_int_equal(vgpu_core_free(c, cs.handle, NULL), 0);
	assert_int_equal(vgpu_core_return_pass(h.core, NULL), 15);
	assert_int_equal(vgpu_core_alloc(c, 2 * MiB, 7, 0, &cs, NULL), 0);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	assert_int_equal(harness_stats(b).evicted_bytes, 2 * MiB);
}

/* A buffer larger than VRAM: the rest of it is placed on the host
 * directly, nothing is copied. */
static void test_buffer_larger_than_vram(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_buffer_info big;
	struct vgpu_core_stats stats;
	int resident, evicted;

	assert_int_equal(vgpu_core_alloc(a, 100 * MiB, 7, 0, &big, NULL), 0);
	harness_assert_invariants(&h);
	harness_chunk_counts(a, big.handle, &resident, &evicted);
	assert_int_equal(resident, 60);
	assert_int_equal(evicted, 40);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_placed_on_host, 40);
	assert_int_equal(stats.chunks_evicted, 0);
	assert_int_equal(stats.eviction.bytes_copied, 0);
	assert_int_equal(stats.eviction.vm_suspensions, 0);
	harness_fill(a, &big, 5);
	assert_true(harness_check(a, &big, 5));
}

/* ---- policies: which chunk ---------------------------------------------- */

static void test_priority_policy(void **state)
{
	struct vgpu_vm *a, *b, *c;
	struct vgpu_buffer_info low, mid, high, bs, cs[2];
	int resident, evicted;

	core_harness_teardown(&h);
	{
		struct core_harness_config config = { .chunk_bytes = MiB, .policy = "priority" };

		core_harness_setup(&h, &config);
	}
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	c = harness_vm(&h, "c", 1, 0, 0);
	harness_alloc_filled(&h, a, &mid, 1, 20 * MiB, VGPU_PRIORITY_DEFAULT, 1);
	harness_alloc_filled(&h, a, &low, 1, 10 * MiB, 2, 2);
	harness_alloc_filled(&h, a, &high, 1, 10 * MiB, 12, 3);
	harness_alloc_filled(&h, b, &bs, 1, 20 * MiB, 0, 4);
	/* a holds 40 > b's 20: a is the victim for 8 chunks, all from its
	 * lowest-priority buffer (b's priority-0 buffer is not a's). */
	assert_int_equal(vgpu_core_alloc(c, 8 * MiB, 7, 0, &cs[0], NULL), 0);
	harness_chunk_counts(a, low.handle, &resident, &evicted);
	assert_int_equal(evicted, 8);
	harness_chunk_counts(a, mid.handle, &resident, &evicted);
	assert_int_equal(evicted, 0);
	harness_chunk_counts(a, high.handle, &resident, &evicted);
	assert_int_equal(evicted, 0);
	assert_int_equal(harness_stats(b).evicted_bytes, 0);

	/* Raise low above everything: mid (7) is now the lowest. */
	assert_int_equal(vgpu_core_set_priority(a, low.handle, 15, NULL), 0);
	assert_int_equal(vgpu_core_alloc(c, 4 * MiB, 7, 0, &cs[1], NULL), 0);
	harness_chunk_counts(a, mid.handle, &resident, &evicted);
	assert_int_equal(evicted, 4);
	harness_chunk_counts(a, low.handle, &resident, &evicted);
	assert_int_equal(evicted, 8);
	assert_true(harness_check(a, &low, 2));
	assert_true(harness_check(a, &mid, 1));
	assert_true(harness_check(a, &high, 3));

	/* Returns go highest priority first: free 5 MiB of c's; low (15)
	 * gets all of it back before mid (7). */
	assert_int_equal(vgpu_core_free(c, cs[1].handle, NULL), 0);
	assert_int_equal(vgpu_core_return_pass(h.core, NULL), 4);
	harness_chunk_counts(a, low.handle, &resident, &evicted);
	assert_int_equal(evicted, 4);
	harness_chunk_counts(a, mid.handle, &resident, &evicted);
	assert_int_equal(evicted, 4);
	assert_true(harness_check(a, &low, 2));
}

/* Whole-buffer eviction: the buffer of the chunk the policy picks goes to
 * host memory entirely, however little the request needs; with chunks
 * (the same allocations) only what the request needs goes. */
static void test_whole_buffer_eviction(void **state)
{
	for (int whole = 0; whole < 2; whole++) {
		struct core_harness_config config = { .chunk_bytes = MiB, .policy = "priority",
			                              .whole_buffers = whole };
		struct vgpu_buffer_info low, mid, high, bs, cs[2];
		struct vgpu_vm *a, *b, *c;
		int resident, evicted;

		core_harness_teardown(&h);
		core_harness_setup(&h, &config);
		a = harness_vm(&h, "a", 1, 0, 0);
		b = harness_vm(&h, "b", 1, 0, 0);
		c = harness_vm(&h, "c", 1, 0, 0);
		harness_alloc_filled(&h, a, &mid, 1, 20 * MiB, 7, 1);
		harness_alloc_filled(&h, a, &low, 1, 10 * MiB, 2, 2);
		harness_alloc_filled(&h, a, &high, 1, 10 * MiB, 12, 3);
		harness_alloc_filled(&h, b, &bs, 1, 20 * MiB, 0, 4);
		/* VRAM full; a (40) is the victim, low its lowest buffer. */
		assert_int_equal(vgpu_core_alloc(c, 2 * MiB, 7, 0, &cs[0], NULL), 0);
		harness_chunk_counts(a, low.handle, &resident, &evicted);
		assert_int_equal(evicted, whole ? 10 : 2);
		assert_int_equal(resident, whole ? 0 : 8);
		harness_assert_invariants(&h);
		/* 12 MiB more: with whole buffers 8 MiB are free and a (30) is
		 * the victim again: mid (priority 7) goes, all 20 MiB of it;
		 * with chunks the rest of low goes, then 4 MiB of mid. */
		assert_int_equal(vgpu_core_alloc(c, 12 * MiB, 7, 0, &cs[1], NULL), 0);
		harness_chunk_counts(a, mid.handle, &resident, &evicted);
		assert_int_equal(evicted, whole ? 20 : 4);
		harness_chunk_counts(a, high.handle, &resident, &evicted);
		assert_int_equal(evicted, 0);
		assert_int_equal(harness_stats(b).evicted_bytes, 0);
		assert_int_equal(harness_stats(c).evicted_bytes, 0);
		assert_true(harness_check(a, &low, 2));
		assert_true(harness_check(a, &mid, 1));
		assert_true(harness_check(a, &high, 3));
		harness_assert_invariants(&h);
	}
}

/* Whole-buffer eviction under the random policy: every buffer of the
 * victim is either resident or evicted entirely, and whole buffers go
 * until the request fits (two of four 15 MiB buffers for 20 MiB). */
static void test_whole_buffer_eviction_random(void **state)
{
	uint64_t seed = harness_seed("whole_buffer_eviction_random");
	struct core_harness_config config = { .chunk_bytes = MiB, .seed = seed,
		                              .whole_buffers = true };
	struct vgpu_buffer_info as[4], bs;
	struct vgpu_vm *a, *b;
	int total = 0;

	core_harness_teardown(&h);
	core_harness_setup(&h, &config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	harness_alloc_filled(&h, a, as, 4, 15 * MiB, 7, 1);
	assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
	for (int i = 0; i < 4; i++) {
		int resident, evicted;

		harness_chunk_counts(a, as[i].handle, &resident, &evicted);
		if (evicted != 0 && evicted != 15)
			fail_msg("seed %" PRIu64 ": buffer %d half evicted (%d of 15 chunks)", seed,
			         i, evicted);
		total += evicted;
	}
	if (total != 30)
		fail_msg("seed %" PRIu64 ": %d chunks evicted, not two whole buffers", seed, total);
	harness_check_all(a, as, 4, 1);
}

/* Random: reproducible from the seed, and spread over the victim's chunks. */
static void test_random_policy(void **state)
{
	int evicted_runs[2][4];

	for (int run = 0; run < 2; run++) {
		struct core_harness_config config = { .chunk_bytes = MiB, .seed = 99 };
		struct vgpu_buffer_info as[4], bs;
		struct vgpu_vm *a, *b;
		int resident;

		core_harness_teardown(&h);
		core_harness_setup(&h, &config);
		a = harness_vm(&h, "a", 1, 0, 0);
		b = harness_vm(&h, "b", 1, 0, 0);
		harness_alloc_filled(&h, a, as, 4, 15 * MiB, 7, 1);
		assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
		for (int i = 0; i < 4; i++)
			harness_chunk_counts(a, as[i].handle, &resident, &evicted_runs[run][i]);
		harness_check_all(a, as, 4, 1);
	}
	assert_memory_equal(evicted_runs[0], evicted_runs[1], sizeof(evicted_runs[0]));
	/* 20 picks among 4 buffers of 15: every buffer loses some (the
	 * chance that one loses none is below 1 %; the seed is fixed). */
	for (int i = 0; i < 4; i++)
		assert_true(evicted_runs[0][i] > 0);
}

static void test_refbits_refused_without_reference_bits(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_core_config config;
	struct vgpu_core *core = NULL;

	vgpu_core_config_defaults(&config);
	config.policy = "refbits";
	config.return_interval_ms = 0;
	/* h's simgpu has no reference bits, and h's core owns its handler:
	 * creating a second core fails before touching the HAL. */
	assert_int_equal(vgpu_core_create(h.hal, &config, &core, &error), -ENOTSUP);
	assert_null(core);
	assert_non_null(strstr(vgpu_error_msg(&error), "reference bits"));
	config.policy = "lru";
	assert_int_equal(vgpu_core_create(h.hal, &config, &core, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "random, priority or refbits"));
	config.policy = "random";
	config.chunk_bytes = 12345;
	assert_int_equal(vgpu_core_create(h.hal, &config, &core, &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "chunk size 12345 bytes is not a multiple "
	                                               "of the GPU's 4 KiB page"));
}

/* CLOCK over reference bits: the chunks a kernel touched survive. */
static void test_refbits_policy(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB, .policy = "refbits",
		                              .reference_bits = true };
	struct vgpu_buffer_info hot, cold, bs, cs;
	struct harness_guest guest;
	struct vgpu_vm *a, *b, *c;
	uint32_t words[16];
	int resident, evicted;

	core_harness_teardown(&h);
	core_harness_setup(&h, &config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	c = harness_vm(&h, "c", 1, 0, 0);
	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	harness_alloc_filled(&h, a, &cold, 1, 16 * MiB, 7, 1);
	harness_alloc_filled(&h, a, &hot, 1, 16 * MiB, 7, 2);
	harness_alloc_filled(&h, b, &bs, 1, 27 * MiB, 7, 3);
	/* Sweep once so that the fills and setup count as old. */
	{
		uint32_t n = vgpu_push_nop(words);

		harness_guest_run(&h, &guest, words, n);
	}
	for (uint64_t off = 0; off < 32 * MiB; off += MiB) {
		bool referenced;

		vgpu_hal_as_test_and_clear_referenced(vgpu_core_vm_address_space(a),
		                                      cold.gpu_va + off, MiB, &referenced);
	}
	/* Touch every page of hot with a kernel. */
	harness_guest_run(&h, &guest, words,
	                  vgpu_push_launch_stream(words, hot.gpu_va, hot.bytes, 1));
	/* VRAM is full; a (32 + guest) > b (27) > c's 10: a gives about 8
	 * chunks, cold ones (and maybe the guest's idle log), never hot ones:
	 * they get their second chance. */
	assert_int_equal(vgpu_core_alloc(c, 10 * MiB, 7, 0, &cs, NULL), 0);
	harness_chunk_counts(a, hot.handle, &resident, &evicted);
	assert_int_equal(evicted, 0);
	harness_chunk_counts(a, cold.handle, &resident, &evicted);
	assert_true(evicted >= 5);
	assert_true(harness_check(a, &cold, 1));
	harness_guest_teardown(&guest);
}

/* ---- host budget -------------------------------------------------------- */

struct snapshot {
	struct vgpu_vm_stats vms[2];
	uint64_t vram_free;
	struct vgpu_core_stats core;
	struct vgpu_chunk_info chunks[2][64];
	int counts[2];
};

static void take_snapshot(struct snapshot *s, struct vgpu_vm **vms,
                          struct vgpu_buffer_info *buffers)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2; i++) {
		s->vms[i] = harness_stats(vms[i]);
		memset(s->vms[i].alloc_latency, 0, sizeof(s->vms[i].alloc_latency));
		s->vms[i].alloc_failures = 0;
		s->counts[i] = vgpu_core_buffer_chunks(vms[i], buffers[i].handle, s->chunks[i], 64,
		                                       NULL);
	}
	s->vram_free = vgpu_hal_vram_free_bytes(h.hal);
	vgpu_core_stats(h.core, &s->core);
	memset(&s->core.eviction, 0, sizeof(s->core.eviction));
	s->core.entries = s->core.events = 0;
	s->core.allocs_failed_budget = 0;
}

static void test_host_budget_enomem_changes_nothing(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct core_harness_config config = { .chunk_bytes = MiB, .host_budget_bytes = 8 * MiB };
	struct vgpu_buffer_info as[2], bs;
	struct vgpu_core_stats stats;
	struct snapshot before, after;
	struct vgpu_vm *a, *b;

	core_harness_teardown(&h);
	core_harness_setup(&h, &config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	harness_alloc_filled(&h, a, as, 1, 40 * MiB, 7, 1);
	harness_alloc_filled(&h, b, &as[1], 1, 15 * MiB, 7, 2);
	{
		struct vgpu_vm *vms[2] = { a, b };

		take_snapshot(&before, vms, as);
		/* 5 free: b needs 12 more = 12 MiB on the host > 8. */
		assert_int_equal(vgpu_core_alloc(b, 17 * MiB, 7, 0, &bs, &error), -ENOMEM);
		assert_non_null(strstr(vgpu_error_msg(&error), "host budget"));
		harness_assert_invariants(&h);
		take_snapshot(&after, vms, as);
	}
	assert_memory_equal(&before, &after, sizeof(before));
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.allocs_failed_budget, 1);
	assert_int_equal(stats.host_used_bytes, 0);
	assert_true(harness_check(a, &as[0], 1));
	assert_true(harness_check(b, &as[1], 2));
	/* Within the budget it works, and uses exactly the budget. */
	assert_int_equal(vgpu_core_alloc(b, 13 * MiB, 7, 0, &bs, &error), 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.host_used_bytes, 8 * MiB);
	assert_true(harness_check(a, &as[0], 1));
}

/* VRAM with a free 4 KiB page in every 64 KiB block but no free block: a
 * buffer of 64 KiB chunks still fits, on 4 KiB pages (the placement of whole
 * runs of chunks gives way to chunk by chunk with smaller pages). */
static void test_alloc_on_fragmented_vram(void **state)
{
	enum { SMALL = VRAM / (4 * KiB) };
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_buffer_info *small = calloc(SMALL, sizeof(*small)), big;
	struct vgpu_core_stats stats;
	int kept = 0;

	assert_non_null(small);
	for (int i = 0; i < SMALL; i++)
		assert_int_equal(vgpu_core_alloc(a, 4 * KiB, 7, 0, &small[i], NULL), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	for (int i = 0; i < SMALL; i++) {
		if (i % 16 == 0) {
			kept++;
			continue;
		}
		assert_int_equal(vgpu_core_free(a, small[i].handle, NULL), 0);
	}
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM - kept * 4 * KiB);
	assert_int_equal(vgpu_core_alloc(a, 3 * MiB, 7, 0, &big, NULL), 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.eviction.passes, 0);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	harness_fill(a, &big, 5);
	assert_true(harness_check(a, &big, 5));
	harness_assert_invariants(&h);
	assert_int_equal(vgpu_core_free(a, big.handle, NULL), 0);
	for (int i = 0; i < SMALL; i += 16)
		assert_int_equal(vgpu_core_free(a, small[i].handle, NULL), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), VRAM);
	free(small);
}

/* ---- free and return ---------------------------------------------------- */

static void test_free_reuses_vram_at_once(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[10], bs;
	struct vgpu_core_stats stats;

	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 1);
	assert_int_equal(vgpu_core_free(a, as[4].handle, NULL), 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 6 * MiB);
	assert_int_equal(harness_stats(a).allocated_bytes, 54 * MiB);
	assert_int_equal(vgpu_core_alloc(b, 6 * MiB, 7, 0, &bs, NULL), 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.eviction.passes, 0);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
}

/* Fresh memory never shows another VM's data: VRAM is scrubbed before it is
 * freed, whether the buffer was freed or its chunks were evicted. */
static bool buffer_is_zero(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer)
{
	static uint8_t data[MiB];
	struct vgpu_hal_as *as = vgpu_core_vm_address_space(vm);

	for (uint64_t offset = 0; offset < buffer->bytes; offset += sizeof(data)) {
		uint64_t bytes = buffer->bytes - offset < sizeof(data) ? buffer->bytes - offset
		                                                        : sizeof(data);

		assert_int_equal(vgpu_hal_as_read(as, buffer->gpu_va + offset, data, bytes), 0);
		for (uint64_t i = 0; i < bytes; i++)
			if (data[i])
				return false;
	}
	return true;
}

static void test_fresh_memory_is_scrubbed(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[10], bs[2];

	/* Freed by a, then handed to b. */
	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(vgpu_core_free(a, as[i].handle, NULL), 0);
	assert_int_equal(vgpu_core_alloc(b, VRAM, 7, 0, &bs[0], NULL), 0);
	assert_true(buffer_is_zero(b, &bs[0]));
	assert_int_equal(vgpu_core_free(b, bs[0].handle, NULL), 0);

	/* Evicted from a (its data moves to host memory), then handed to b. */
	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 11);
	assert_int_equal(vgpu_core_alloc(b, 12 * MiB, 7, 0, &bs[1], NULL), 0);
	assert_true(harness_stats(a).evicted_bytes > 0);
	assert_true(buffer_is_zero(b, &bs[1]));
	harness_check_all(a, as, 10, 11);
}

static void test_return_pass(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[10], bs;
	struct vgpu_core_stats stats;

	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 1);
	assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
	assert_int_equal(harness_stats(a).evicted_bytes, 20 * MiB);
	/* Nothing free: a pass does nothing. */
	assert_int_equal(vgpu_core_return_pass(h.core, NULL), 0);
	assert_int_equal(vgpu_core_free(b, bs.handle, NULL), 0);
	assert_int_equal(vgpu_core_return_pass(h.core, NULL), 20);
	harness_assert_invariants(&h);
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
	assert_int_equal(harness_stats(a).returns, 20);
	assert_int_equal(vgpu_hal_vram_free_bytes(h.hal), 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.chunks_returned, 20);
	assert_int_equal(stats.host_used_bytes, 0);
	assert_int_equal(stats.return_pass.passes, 1);
	harness_check_all(a, as, 10, 1);
}

/* Winner: least resident ÷ weight; ties to the lower id. */
static void test_return_winner(void **state)
{
	for (int weighted = 0; weighted < 2; weighted++) {
		struct vgpu_buffer_info as[3], bs[3], cs[2];
		struct vgpu_vm *a, *b, *c;

		core_harness_teardown(&h);
		setup_default(state);
		a = harness_vm(&h, "a", 1, 0, 0);
		b = harness_vm(&h, "b", 1, 0, 0);
		c = harness_vm(&h, "c", 1, 0, 0);
		harness_alloc_filled(&h, a, as, 3, 10 * MiB, 7, 1);
		harness_alloc_filled(&h, b, bs, 3, 10 * MiB, 7, 2);
		/* c takes 20: a and b give 10 each. */
		harness_alloc_filled(&h, c, cs, 2, 10 * MiB, 7, 3);
		assert_int_equal(harness_stats(a).evicted_bytes, 10 * MiB);
		assert_int_equal(harness_stats(b).evicted_bytes, 10 * MiB);
		if (weighted)
			assert_int_equal(vgpu_core_set_weight(b, 4, NULL), 0);
		assert_int_equal(vgpu_core_free(c, cs[0].handle, NULL), 0);
		assert_int_equal(vgpu_core_return_pass(h.core, NULL), 10);
		if (weighted) {
			/* b: 20/4 = 5 < a's 20: b gets all 10. */
			assert_int_equal(harness_stats(b).returns, 10);
			assert_int_equal(harness_stats(a).returns, 0);
		} else {
			/* 20 = 20: a first (lower id), then alternating. */
			assert_int_equal(harness_stats(a).returns, 5);
			assert_int_equal(harness_stats(b).returns, 5);
		}
		harness_check_all(a, as, 3, 1);
		harness_check_all(b, bs, 3, 2);
		harness_assert_invariants(&h);
	}
}

/* The return thread: frees within one interval cost one pass. */
static void test_return_thread_batches(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB, .return_interval_ms = 200 };
	struct vgpu_buffer_info as[10], bs[5];
	struct vgpu_core_stats stats;
	struct vgpu_vm *a, *b;
	uint64_t deadline;

	core_harness_teardown(&h);
	core_harness_setup(&h, &config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	harness_alloc_filled(&h, a, as, 10, 6 * MiB, 7, 1);
	harness_alloc_filled(&h, b, bs, 5, 4 * MiB, 7, 2);
	assert_int_equal(harness_stats(a).evicted_bytes, 20 * MiB);
	for (int i = 0; i < 5; i++)
		assert_int_equal(vgpu_core_free(b, bs[i].handle, NULL), 0);
	deadline = harness_now_ns() + 10ull * 1000000000ull;
	do {
		harness_sleep_ms(20);
		vgpu_core_stats(h.core, &stats);
	} while (stats.chunks_returned < 20 && harness_now_ns() < deadline);
	assert_int_equal(stats.chunks_returned, 20);
	harness_sleep_ms(450); /* two more intervals: nothing pending, no pass */
	vgpu_core_stats(h.core, &stats);
	/* Five frees within a few microseconds: at most two passes if the
	 * interval happened to end between them, normally one. */
	assert_true(stats.return_pass.passes >= 1 && stats.return_pass.passes <= 2);
	harness_check_all(a, as, 10, 1);
}

static void test_vm_destroy_releases_everything(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[10], bs[2];
	struct harness_guest guest;
	struct vgpu_core_stats stats;

	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	harness_alloc_filled(&h, a, as, 9, 6 * MiB, 7, 1);
	harness_alloc_filled(&h, b, bs, 2, 20 * MiB, 7, 2);
	vgpu_core_stats(h.core, &stats);
	assert_true(stats.host_used_bytes > 0);
	/* Destroy a with its channel still open (the double is torn down
	 * after: the core releases the shadow first). */
	guest_submitter_destroy(guest.submitter);
	guest.submitter = NULL;
	vgpu_core_vm_destroy(a);
	harness_guest_after_vm_destroy(&guest);
	harness_assert_invariants(&h);
	harness_check_all(b, bs, 2, 2);
	vgpu_core_vm_destroy(b);
	harness_assert_invariants(&h);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.vms, 0);
	assert_int_equal(stats.vram_free_bytes, VRAM);
	assert_int_equal(stats.host_used_bytes, 0);
	assert_int_equal(stats.allocated_bytes, 0);
	/* The names are free again. */
	harness_vm(&h, "a", 1, 0, 0);
}

/* ---- channels ----------------------------------------------------------- */

/* A VM with a channel is suspended while its chunks move; the guest's
 * submissions before and after all run exactly once, in order. */
static void test_eviction_suspends_victim(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[5], bs;
	struct harness_guest guest, bystander;
	struct vgpu_core_stats stats;
	struct vgpu_vm_stats sa;
	char why[256];

	harness_guest_setup(&h, a, &guest, 64, 0, 1);
	harness_guest_setup(&h, b, &bystander, 16, 0, 2);
	harness_alloc_filled(&h, a, as, 5, 11 * MiB, 7, 1);
	for (int i = 0; i < 8; i++)
		assert_int_equal(guest_submitter_submit(guest.submitter), 0);
	assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(guest_submitter_submit(guest.submitter), 0);
	assert_int_equal(guest_submitter_wait_executed(guest.submitter, 16, 20000), 0);
	if (guest_submitter_verify(guest.submitter, why, sizeof(why)))
		fail_msg("guest log: %s", why);
	assert_int_equal(guest_submitter_view_errors(guest.submitter, why, sizeof(why)), 0);
	sa = harness_stats(a);
	assert_int_equal(sa.suspensions, 1);
	assert_true(sa.suspended_ns > 0);
	assert_int_equal(sa.channels, 1);
	/* Only the victim stops: b, the allocator, with a channel of its
	 * own, was never suspended. */
	assert_int_equal(harness_stats(b).channels, 1);
	assert_int_equal(harness_stats(b).suspensions, 0);
	vgpu_core_stats(h.core, &stats);
	assert_int_equal(stats.eviction.vm_suspensions, 1);
	harness_check_all(a, as, 5, 1);
	harness_guest_teardown(&guest);
	harness_guest_teardown(&bystander);
}

/* A victim whose queued work outlasts the drain timeout: its channel is
 * killed (a channel error with VGPU_FAULT_TIMEOUT, as a fatal fault), its
 * memory is relocated as usual and the allocation completes; the VM's data
 * is intact and the invariants hold (issue 12). */
static void test_drain_timeout(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB, .drain_timeout_ms = 20 };
	struct vgpu_buffer_info as[5], hot, bs;
	struct harness_guest guest;
	struct vgpu_hal_event error;
	uint32_t words[16], n;
	struct vgpu_vm *a, *b;
	uint64_t evicted;

	core_harness_teardown(&h);
	core_harness_setup(&h, &config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	assert_int_equal(vgpu_core_alloc(a, 4 * MiB, 7, 0, &hot, NULL), 0);
	harness_alloc_filled(&h, a, as, 5, 11 * MiB, 7, 1);
	/* About 2 GB of memory traffic: far longer than 20 ms. */
	n = vgpu_push_launch_stream(words, hot.gpu_va, hot.bytes, 256);
	assert_int_equal(guest_submitter_submit_raw(guest.submitter, words, n), 0);
	harness_sleep_ms(5);
	evicted = harness_stats(a).evicted_bytes;
	assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
	harness_assert_invariants(&h);
	assert_true(harness_stats(a).evicted_bytes > evicted);
	assert_int_equal(harness_stats(b).allocated_bytes, 20 * MiB);
	assert_int_equal(harness_stats(b).alloc_failures, 0);
	/* The stuck channel was killed, with the host's cause. */
	assert_int_equal(harness_stats(a).channel_errors, 1);
	assert_int_equal(vgpu_hal_channel_state(vgpu_core_channel_hal(guest.channel), &error),
	                 VGPU_CHANNEL_ERROR);
	assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
	assert_int_equal(harness_stats(b).channel_errors, 0);
	harness_check_all(a, as, 5, 1);
	harness_guest_teardown(&guest);
}

/* No pressure, no core work: guest submissions never enter the core. */
static void test_submission_is_not_core_work(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct harness_guest guest;
	struct vgpu_core_stats before, after;

	harness_guest_setup(&h, a, &guest, 256, 0, 1);
	vgpu_core_stats(h.core, &before);
	for (int i = 0; i < 200; i++)
		while (guest_submitter_submit(guest.submitter) == -EAGAIN)
			harness_sleep_ms(1);
	assert_int_equal(guest_submitter_wait_executed(guest.submitter, 200, 20000), 0);
	vgpu_core_stats(h.core, &after);
	assert_int_equal(after.entries, before.entries);
	assert_int_equal(after.events, before.events);
	harness_guest_teardown(&guest);
}

static void test_channel_error_and_fence_events(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as, bs, sem;
	struct harness_guest guest;
	uint32_t words[16], n;
	uint64_t deadline;

	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	assert_int_equal(vgpu_core_alloc(a, 4096, 7, 0, &sem, NULL), 0);
	/* A fence with interrupt reaches config->on_fence. */
	n = vgpu_push_semaphore_release(words, sem.gpu_va, 5, true);
	harness_guest_run(&h, &guest, words, n);
	deadline = harness_now_ns() + 5000000000ull;
	while (__atomic_load_n(&h.fence_events, __ATOMIC_RELAXED) < 1 && harness_now_ns() < deadline)
		harness_sleep_ms(1);
	assert_int_equal(__atomic_load_n(&h.fence_events, __ATOMIC_RELAXED), 1);

	/* A fault kills the channel: counted for a, forwarded, b unaffected. */
	n = vgpu_push_memset(words, 0xdead0000000ull, 0, 4096);
	assert_int_equal(guest_submitter_submit_raw(guest.submitter, words, n), 0);
	deadline = harness_now_ns() + 5000000000ull;
	while (harness_stats(a).channel_errors < 1 && harness_now_ns() < deadline)
		harness_sleep_ms(1);
	assert_int_equal(harness_stats(a).channel_errors, 1);
	assert_int_equal(harness_stats(b).channel_errors, 0);
	assert_int_equal(__atomic_load_n(&h.error_events, __ATOMIC_RELAXED), 1);

	/* A VM with a dead channel can still be evicted (drain sees the
	 * error) and its data survives. */
	harness_alloc_filled(&h, a, &as, 1, 50 * MiB, 7, 1);
	assert_int_equal(vgpu_core_alloc(b, 20 * MiB, 7, 0, &bs, NULL), 0);
	assert_true(harness_stats(a).evicted_bytes > 0);
	assert_true(harness_check(a, &as, 1));
	harness_guest_teardown(&guest);
}

/* Chunks move back and forth many times; data and mapping stay right. */
static void test_many_moves(void **state)
{
	struct vgpu_vm *a = harness_vm(&h, "a", 1, 0, 0);
	struct vgpu_vm *b = harness_vm(&h, "b", 1, 0, 0);
	struct vgpu_buffer_info as[4], bs;

	/* Odd sizes: 4 KiB pages and remainders mixed with 64 KiB pages. */
	as[0].bytes = 0;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(vgpu_core_alloc(a, 13 * MiB + 4096 * (uint64_t)(i * 7 + 1), 7, 0,
		                                 &as[i], NULL),
		                 0);
		harness_fill(a, &as[i], 50 + i);
	}
	for (int round = 0; round < 6; round++) {
		assert_int_equal(vgpu_core_alloc(b, (10 + 3 * round) * MiB + 20480, 7, 0, &bs,
		                                 NULL), 0);
		harness_assert_invariants(&h);
		harness_check_all(a, as, 4, 50);
		harness_fill(a, &as[round % 4], 50 + round % 4);
		assert_int_equal(vgpu_core_free(b, bs.handle, NULL), 0);
		assert_true(vgpu_core_return_pass(h.core, NULL) >= 0);
		harness_assert_invariants(&h);
		harness_check_all(a, as, 4, 50);
	}
	assert_int_equal(harness_stats(a).evicted_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alloc_without_pressure, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_cap, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_per_vm_chunk_size, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_victim_is_largest, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_requester_is_victim, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_tie_rule, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_weighted_victim, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_larger_than_vram, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_priority_policy, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_random_policy, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_whole_buffer_eviction, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_whole_buffer_eviction_random, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_refbits_refused_without_reference_bits,
		                                setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_refbits_policy, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_host_budget_enomem_changes_nothing, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_alloc_on_fragmented_vram, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_free_reuses_vram_at_once, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_fresh_memory_is_scrubbed, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_return_pass, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_return_winner, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_return_thread_batches, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_vm_destroy_releases_everything, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_eviction_suspends_victim, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_drain_timeout, setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_submission_is_not_core_work, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_channel_error_and_fence_events, setup_default,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_many_moves, setup_default, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
