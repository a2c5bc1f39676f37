// SPDX-License-Identifier: MIT
/*
 * test_core_units.c - the core's pure parts, without a GPU: the victim heap
 * and its tie rule, chunk sets, chunk layout, the VA allocator, fair shares,
 * the host budget, the latency histogram and the seeded generator.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "chunk.h"
#include "core_internal.h"
#include "stats.h"
#include "vgpu/mutex.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

/* ---- victim heap -------------------------------------------------------- */

static void node_init(struct vgpu_victim_node *node, uint32_t id, uint64_t bytes, uint32_t weight)
{
	node->id = id;
	node->bytes = bytes;
	node->weight = weight;
	node->index = VGPU_VICTIM_NOT_QUEUED;
}

static void test_victim_largest_ratio_first(void **state)
{
	struct vgpu_victim_heap heap;
	struct vgpu_victim_node a, b, c;

	vgpu_victim_heap_init(&heap, true);
	node_init(&a, 1, 30 * MiB, 1);
	node_init(&b, 2, 50 * MiB, 2); /* 25 per unit of weight */
	node_init(&c, 3, 29 * MiB, 1);
	assert_int_equal(vgpu_victim_heap_push(&heap, &a), 0);
	assert_int_equal(vgpu_victim_heap_push(&heap, &b), 0);
	assert_int_equal(vgpu_victim_heap_push(&heap, &c), 0);
	assert_ptr_equal(vgpu_victim_heap_top(&heap), &a);
	/* Selecting two chunks of a: now 28 < 29. */
	a.bytes -= 2 * MiB;
	vgpu_victim_heap_update(&heap, &a);
	assert_ptr_equal(vgpu_victim_heap_top(&heap), &c);
	assert_true(vgpu_victim_heap_valid(&heap));
	vgpu_victim_heap_remove(&heap, &c);
	assert_int_equal(c.index, VGPU_VICTIM_NOT_QUEUED);
	assert_ptr_equal(vgpu_victim_heap_top(&heap), &a);
	vgpu_victim_heap_fini(&heap);
}

/* Equal ratios: the lower id comes first, in both orders. */
static void test_victim_tie_rule(void **state)
{
	struct vgpu_victim_heap max_heap, min_heap;
	struct vgpu_victim_node n[4], m[4];

	vgpu_victim_heap_init(&max_heap, true);
	vgpu_victim_heap_init(&min_heap, false);
	/* 10/1 == 20/2 == 30/3 == 10/1 */
	node_init(&n[0], 7, 10, 1);
	node_init(&n[1], 3, 20, 2);
	node_init(&n[2], 5, 30, 3);
	node_init(&n[3], 9, 10, 1);
	memcpy(m, n, sizeof(n));
	for (int i = 0; i < 4; i++) {
		vgpu_victim_heap_push(&max_heap, &n[i]);
		vgpu_victim_heap_push(&min_heap, &m[i]);
	}
	assert_int_equal(vgpu_victim_heap_top(&max_heap)->id, 3);
	assert_int_equal(vgpu_victim_heap_top(&min_heap)->id, 3);
	/* Exact comparison: 2^62 / 3 vs (2^62 - 1) / 3 must not tie. */
	node_init(&n[0], 1, (1ull << 62) - 1, 3);
	node_init(&n[1], 2, 1ull << 62, 3);
	vgpu_victim_heap_clear(&max_heap);
	vgpu_victim_heap_push(&max_heap, &n[0]);
	vgpu_victim_heap_push(&max_heap, &n[1]);
	assert_int_equal(vgpu_victim_heap_top(&max_heap)->id, 2);
	vgpu_victim_heap_fini(&max_heap);
	vgpu_victim_heap_fini(&min_heap);
}

static void test_victim_heap_random(void **state)
{
	enum { N = 64 };
	struct vgpu_victim_heap heap;
	struct vgpu_victim_node nodes[N];
	struct vgpu_rng rng;

	vgpu_rng_seed(&rng, 42);
	vgpu_victim_heap_init(&heap, true);
	for (int i = 0; i < N; i++) {
		node_init(&nodes[i], i + 1, vgpu_rng_below(&rng, 1000), 1 + vgpu_rng_below(&rng, 4));
		vgpu_victim_heap_push(&heap, &nodes[i]);
	}
	for (int step = 0; step < 10000; step++) {
		struct vgpu_victim_node *node = &nodes[vgpu_rng_below(&rng, N)];
		struct vgpu_victim_node *top, *best = NULL;

		if (node->index == VGPU_VICTIM_NOT_QUEUED) {
			vgpu_victim_heap_push(&heap, node);
		} else if (vgpu_rng_below(&rng, 8) == 0) {
			vgpu_victim_heap_remove(&heap, node);
		} else {
			node->bytes = vgpu_rng_below(&rng, 1000);
			vgpu_victim_heap_update(&heap, node);
		}
		assert_true(vgpu_victim_heap_valid(&heap));
		for (int i = 0; i < N; i++)
			if (nodes[i].index != VGPU_VICTIM_NOT_QUEUED &&
			    (!best || vgpu_victim_before(&heap, &nodes[i], best)))
				best = &nodes[i];
		top = vgpu_victim_heap_top(&heap);
		assert_ptr_equal(top, best);
	}
	vgpu_victim_heap_fini(&heap);
}

/* ---- chunk sets --------------------------------------------------------- */

static void check_set(const struct vgpu_chunk_set *set)
{
	for (size_t i = 0; i < set->count; i++)
		assert_int_equal(set->items[i]->set_index[set->slot], i);
	assert_true(set->candidates <= set->count);
}

static void test_chunk_set(void **state)
{
	enum { N = 32 };
	struct vgpu_chunk chunks[N];
	struct vgpu_chunk_set set;
	bool in[N] = { false }, selected[N] = { false };
	struct vgpu_rng rng;

	memset(chunks, 0, sizeof(chunks));
	vgpu_rng_seed(&rng, 7);
	vgpu_chunk_set_init(&set, 0);
	for (int step = 0; step < 20000; step++) {
		int i = (int)vgpu_rng_below(&rng, N);
		size_t candidates = 0, count = 0;

		switch (vgpu_rng_below(&rng, 4)) {
		case 0:
			if (!in[i]) {
				assert_int_equal(vgpu_chunk_set_insert(&set, &chunks[i]), 0);
				in[i] = true;
				selected[i] = false;
			}
			break;
		case 1:
			if (in[i]) {
				vgpu_chunk_set_remove(&set, &chunks[i]);
				in[i] = false;
			}
			break;
		case 2:
			if (in[i]) {
				vgpu_chunk_set_select(&set, &chunks[i]);
				selected[i] = true;
			}
			break;
		default:
			if (in[i]) {
				vgpu_chunk_set_unselect(&set, &chunks[i]);
				selected[i] = false;
			}
			break;
		}
		check_set(&set);
		for (int j = 0; j < N; j++) {
			assert_int_equal(vgpu_chunk_set_contains(&set, &chunks[j]), in[j]);
			if (in[j]) {
				assert_int_equal(vgpu_chunk_set_is_selected(&set, &chunks[j]), selected[j]);
				count++;
				candidates += !selected[j];
			}
		}
		assert_int_equal(set.count, count);
		assert_int_equal(set.candidates, candidates);
	}
	vgpu_chunk_set_fini(&set);
}

/* ---- chunk layout ------------------------------------------------------- */

static void test_chunk_layout(void **state)
{
	struct vgpu_chunk chunks[8];
	uint32_t mask = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_64K;

	/* 5 MiB + 12 KiB in 1 MiB chunks: five full chunks, 12 KiB remainder. */
	assert_int_equal(vgpu_chunk_count(5 * MiB + 12 * KiB, MiB), 6);
	vgpu_chunk_layout(chunks, 6, 0x10000, 5 * MiB + 12 * KiB, MiB, mask);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(chunks[i].offset, i * MiB);
		assert_int_equal(chunks[i].bytes, MiB);
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_64K);
	}
	assert_int_equal(chunks[5].offset, 5 * MiB);
	assert_int_equal(chunks[5].bytes, 12 * KiB);
	assert_int_equal(chunks[5].page_size, VGPU_PAGE_4K);

	/* A remainder that is a multiple of 64 KiB still gets large pages. */
	vgpu_chunk_layout(chunks, 2, 0, MiB + 128 * KiB, MiB, mask);
	assert_int_equal(chunks[1].bytes, 128 * KiB);
	assert_int_equal(chunks[1].page_size, VGPU_PAGE_64K);

	/* 96 KiB chunks: the second starts at 96 KiB, not 64 KiB aligned. */
	vgpu_chunk_layout(chunks, 2, 0, 192 * KiB, 96 * KiB, mask);
	assert_int_equal(chunks[0].page_size, VGPU_PAGE_4K); /* size not a 64 KiB multiple */
	assert_int_equal(chunks[1].page_size, VGPU_PAGE_4K);

	/* 128 KiB chunks at an address that is only 4 KiB aligned. */
	vgpu_chunk_layout(chunks, 2, 0x1000, 256 * KiB, 128 * KiB, mask);
	assert_int_equal(chunks[0].page_size, VGPU_PAGE_4K);

	/* No large pages on the GPU. */
	vgpu_chunk_layout(chunks, 1, 0, MiB, MiB, VGPU_HAL_PAGE_MASK_4K);
	assert_int_equal(chunks[0].page_size, VGPU_PAGE_4K);

	/* A buffer smaller than a chunk is one remainder chunk. */
	assert_int_equal(vgpu_chunk_count(4 * KiB, 4 * MiB), 1);
	vgpu_chunk_layout(chunks, 1, 0, 4 * KiB, 4 * MiB, mask);
	assert_int_equal(chunks[0].bytes, 4 * KiB);

	/* A GPU with 2 MiB pages only (cudagpu): 10 MiB in 4 MiB chunks at a
	 * 2 MiB aligned address, remainder 2 MiB; every chunk on 2 MiB pages. */
	vgpu_chunk_layout(chunks, 3, 2 * MiB, 10 * MiB, 4 * MiB, VGPU_HAL_PAGE_MASK_2M);
	for (int i = 0; i < 3; i++)
		assert_int_equal(chunks[i].page_size, VGPU_PAGE_2M);
	assert_int_equal(chunks[2].bytes, 2 * MiB);

	/* All three sizes: the largest that the address and size allow. */
	mask |= VGPU_HAL_PAGE_MASK_2M;
	vgpu_chunk_layout(chunks, 3, 2 * MiB, 4 * MiB + 64 * KiB + 4 * KiB, 2 * MiB, mask);
	assert_int_equal(chunks[0].page_size, VGPU_PAGE_2M);
	assert_int_equal(chunks[1].page_size, VGPU_PAGE_2M);
	assert_int_equal(chunks[2].page_size, VGPU_PAGE_4K);
	vgpu_chunk_layout(chunks, 2, 64 * KiB, 4 * MiB, 2 * MiB, mask);
	assert_int_equal(chunks[0].page_size, VGPU_PAGE_64K); /* address only 64 KiB aligned */
}

/* ---- page sizes of a HAL mask ------------------------------------------- */

static void test_page_sizes(void **state)
{
	const uint32_t simgpu = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_64K;
	const uint32_t big_only = VGPU_HAL_PAGE_MASK_2M;
	const uint32_t all = simgpu | big_only;

	assert_true(vgpu_page_mask_valid(simgpu));
	assert_true(vgpu_page_mask_valid(big_only));
	assert_false(vgpu_page_mask_valid(0));
	assert_false(vgpu_page_mask_valid(1u << 3)); /* no such size */

	assert_int_equal(vgpu_page_size_smallest(simgpu), VGPU_PAGE_4K);
	assert_int_equal(vgpu_page_size_smallest(big_only), VGPU_PAGE_2M);
	assert_int_equal(vgpu_page_size_smallest(0), 0);
	assert_int_equal(vgpu_page_size_largest(simgpu), VGPU_PAGE_64K);
	assert_int_equal(vgpu_page_size_largest(all), VGPU_PAGE_2M);

	/* Largest dividing: of an or of several values, never outside the mask. */
	assert_int_equal(vgpu_page_size_largest_dividing(simgpu, 4 * MiB), VGPU_PAGE_64K);
	assert_int_equal(vgpu_page_size_largest_dividing(simgpu, MiB | 12 * KiB), VGPU_PAGE_4K);
	assert_int_equal(vgpu_page_size_largest_dividing(all, 4 * MiB | 6 * MiB), VGPU_PAGE_2M);
	assert_int_equal(vgpu_page_size_largest_dividing(all, 4 * MiB | 192 * KiB), VGPU_PAGE_64K);
	assert_int_equal(vgpu_page_size_largest_dividing(big_only, 4 * MiB | MiB), 0);
	assert_int_equal(vgpu_page_size_largest_dividing(big_only, 0), VGPU_PAGE_2M);

	/* Falling back: only to smaller sizes of the mask. */
	assert_int_equal(vgpu_page_size_next_smaller(all, VGPU_PAGE_2M), VGPU_PAGE_64K);
	assert_int_equal(vgpu_page_size_next_smaller(simgpu, VGPU_PAGE_64K), VGPU_PAGE_4K);
	assert_int_equal(vgpu_page_size_next_smaller(simgpu, VGPU_PAGE_4K), 0);
	assert_int_equal(vgpu_page_size_next_smaller(big_only, VGPU_PAGE_2M), 0);
	assert_int_equal(vgpu_page_size_next_smaller(VGPU_HAL_PAGE_MASK_4K | big_only,
	                                             VGPU_PAGE_2M),
	                 VGPU_PAGE_4K);
}

/* ---- VA allocator ------------------------------------------------------- */

static void test_va_allocator(void **state)
{
	struct vgpu_va_allocator va;
	uint64_t a, b, c, d;

	vgpu_va_init(&va, 0x10000, 0x10000 + 1 * MiB);
	assert_int_equal(vgpu_va_alloc(&va, 64 * KiB, 64 * KiB, &a), 0);
	assert_int_equal(a, 0x10000);
	assert_int_equal(vgpu_va_alloc(&va, 4 * KiB, 64 * KiB, &b), 0);
	assert_int_equal(b, 0x20000);
	assert_int_equal(vgpu_va_alloc(&va, 64 * KiB, 64 * KiB, &c), 0);
	assert_int_equal(c, 0x30000); /* aligned past the 4 KiB one */
	assert_int_equal(vgpu_va_alloc(&va, 4 * KiB, 4 * KiB, &d), 0);
	assert_int_equal(d, 0x21000); /* first fit in the gap */
	assert_int_equal(vgpu_va_alloc(&va, 2 * MiB, 64 * KiB, &d), -ENOSPC);
	assert_int_equal(vgpu_va_alloc(&va, 0, 64 * KiB, &d), -EINVAL);
	/* Freeing what is already free is refused and changes nothing. */
	assert_int_equal(vgpu_va_free(&va, 0x40000, 4 * KiB), -EINVAL);
	assert_int_equal(vgpu_va_free(&va, 0, 4 * KiB), -EINVAL);
	assert_int_equal(vgpu_va_free(&va, a, 64 * KiB), 0);
	assert_int_equal(vgpu_va_free(&va, c, 64 * KiB), 0);
	assert_int_equal(vgpu_va_free(&va, b, 4 * KiB), 0);
	assert_int_equal(vgpu_va_free(&va, 0x21000, 4 * KiB), 0);
	assert_int_equal(va.allocated_bytes, 0);
	/* Everything coalesced: the whole range fits again. */
	assert_int_equal(vgpu_va_alloc(&va, 1 * MiB, 64 * KiB, &a), 0);
	assert_int_equal(a, 0x10000);
	vgpu_va_fini(&va);
}

/* ---- fair shares -------------------------------------------------------- */

static void test_fair_shares(void **state)
{
	uint32_t weights[3] = { 1, 1, 1 };
	uint64_t allocated[3], shares[3];

	/* Everyone wants more than a third: equal thirds. */
	allocated[0] = allocated[1] = allocated[2] = 100 * MiB;
	vgpu_fair_shares(90 * MiB, 3, weights, allocated, shares);
	assert_int_equal(shares[0], 30 * MiB);
	assert_int_equal(shares[2], 30 * MiB);

	/* One wants 10: the other two share the remaining 80. */
	allocated[1] = 10 * MiB;
	vgpu_fair_shares(90 * MiB, 3, weights, allocated, shares);
	assert_int_equal(shares[1], 10 * MiB);
	assert_int_equal(shares[0], 40 * MiB);
	assert_int_equal(shares[2], 40 * MiB);

	/* Weights 1:2:1 over 100. */
	weights[1] = 2;
	allocated[1] = 100 * MiB;
	vgpu_fair_shares(100 * MiB, 3, weights, allocated, shares);
	assert_int_equal(shares[0], 25 * MiB);
	assert_int_equal(shares[1], 50 * MiB);
	assert_int_equal(shares[2], 25 * MiB);

	/* A VM that allocated nothing gets nothing; cascading saturation. */
	allocated[0] = 0;
	allocated[1] = 45 * MiB; /* would get 66 of 100 */
	allocated[2] = 100 * MiB;
	vgpu_fair_shares(100 * MiB, 3, weights, allocated, shares);
	assert_int_equal(shares[0], 0);
	assert_int_equal(shares[1], 45 * MiB);
	assert_int_equal(shares[2], 55 * MiB);

	/* Less allocated than VRAM: everyone gets what it allocated. */
	allocated[0] = 1 * MiB;
	allocated[2] = 2 * MiB;
	vgpu_fair_shares(100 * MiB, 3, weights, allocated, shares);
	assert_int_equal(shares[0] + shares[1] + shares[2], 48 * MiB);
}

/* ---- small pieces ------------------------------------------------------- */

static void test_host_budget(void **state)
{
	struct vgpu_host_budget budget;

	vgpu_host_budget_init(&budget, 8 * MiB);
	assert_int_equal(vgpu_host_budget_reserve(&budget, 6 * MiB), 0);
	assert_false(vgpu_host_budget_fits(&budget, 3 * MiB));
	assert_int_equal(vgpu_host_budget_reserve(&budget, 3 * MiB), -ENOMEM);
	assert_int_equal(budget.used, 6 * MiB); /* nothing reserved on failure */
	vgpu_host_budget_release(&budget, 6 * MiB);
	assert_int_equal(vgpu_host_budget_available(&budget), 8 * MiB);
	vgpu_host_budget_init(&budget, 0); /* no limit */
	assert_true(vgpu_host_budget_fits(&budget, UINT64_MAX / 2));
}

static void test_latency_bucket(void **state)
{
	assert_int_equal(vgpu_latency_bucket(0), 0);
	assert_int_equal(vgpu_latency_bucket(1), 0);
	assert_int_equal(vgpu_latency_bucket(2), 1);
	assert_int_equal(vgpu_latency_bucket(1023), 9);
	assert_int_equal(vgpu_latency_bucket(1024), 10);
	assert_int_equal(vgpu_latency_bucket(UINT64_MAX), VGPU_LATENCY_BUCKETS - 1);
}

static void test_rng(void **state)
{
	struct vgpu_rng a, b;
	uint64_t histogram[5] = { 0 };

	vgpu_rng_seed(&a, 5);
	vgpu_rng_seed(&b, 5);
	for (int i = 0; i < 100; i++)
		assert_int_equal(vgpu_rng_next(&a), vgpu_rng_next(&b));
	for (int i = 0; i < 50000; i++) {
		uint64_t x = vgpu_rng_below(&a, 5);

		assert_true(x < 5);
		histogram[x]++;
	}
	for (int i = 0; i < 5; i++)
		assert_true(histogram[i] > 9000 && histogram[i] < 11000);
	assert_int_equal(vgpu_rng_below(&a, 1), 0);
}

static void test_policy_registry(void **state)
{
	assert_ptr_equal(vgpu_policy_find("random"), &vgpu_policy_random);
	assert_ptr_equal(vgpu_policy_find("priority"), &vgpu_policy_priority);
	assert_ptr_equal(vgpu_policy_find("refbits"), &vgpu_policy_refbits);
	assert_null(vgpu_policy_find("lru"));
	assert_null(vgpu_policy_find(NULL));
}

#ifndef NDEBUG
static void *mutex_held_elsewhere(void *arg)
{
	return (void *)(uintptr_t)vgpu_mutex_held(arg);
}

/* The owner-tracking mutex the "_locked" assertions rest on: held only by
 * the thread that locked it, and again after a condition wait. */
static void test_mutex_owner(void **state)
{
	struct vgpu_mutex m;
	pthread_cond_t cond;
	struct timespec now;
	pthread_t other;
	void *other_saw;

	(void)state;
	vgpu_mutex_init(&m);
	pthread_cond_init(&cond, NULL);
	assert_false(vgpu_mutex_held(&m));
	vgpu_mutex_lock(&m);
	assert_true(vgpu_mutex_held(&m));
	assert_int_equal(pthread_create(&other, NULL, mutex_held_elsewhere, &m), 0);
	assert_int_equal(pthread_join(other, &other_saw), 0);
	assert_null(other_saw); /* not the owner */
	clock_gettime(CLOCK_REALTIME, &now);
	assert_int_equal(vgpu_mutex_cond_timedwait(&m, &cond, &now), ETIMEDOUT);
	assert_true(vgpu_mutex_held(&m));
	vgpu_mutex_unlock(&m);
	assert_false(vgpu_mutex_held(&m));
	pthread_cond_destroy(&cond);
	vgpu_mutex_destroy(&m);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_victim_largest_ratio_first),
		cmocka_unit_test(test_victim_tie_rule),
		cmocka_unit_test(test_victim_heap_random),
		cmocka_unit_test(test_chunk_set),
		cmocka_unit_test(test_chunk_layout),
		cmocka_unit_test(test_page_sizes),
		cmocka_unit_test(test_va_allocator),
		cmocka_unit_test(test_fair_shares),
		cmocka_unit_test(test_host_budget),
		cmocka_unit_test(test_latency_bucket),
		cmocka_unit_test(test_rng),
		cmocka_unit_test(test_policy_registry),
#ifndef NDEBUG
		cmocka_unit_test(test_mutex_owner),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
