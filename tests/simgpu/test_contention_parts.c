// SPDX-License-Identifier: MIT
/*
 * test_contention_parts.c - the contention model's parts: the event clock,
 * the set-associative LRU array, the memory scheduler's policies, the DRAM's
 * row buffers and the TLB/walk path through single requests, and the kernel
 * streams against the kernels' own address sequences.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cs_events.h"
#include "cs_experiment.h"
#include "cs_kernel_stream.h"
#include "cs_mem_sched.h"
#include "cs_model.h"
#include "cs_sa_cache.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

/* ---- events ---- */

static uint64_t trace[8];
static unsigned traced;

static void record(void *target, void *arg, uint64_t now)
{
	(void)target;
	trace[traced++] = (uint64_t)(uintptr_t)arg * 1000 + now;
}

static void test_events_order(void **state)
{
	struct cs_events *q = cs_events_create();

	(void)state;
	traced = 0;
	assert_int_equal(cs_events_at(q, 30, record, NULL, (void *)1), 0);
	assert_int_equal(cs_events_at(q, 10, record, NULL, (void *)2), 0);
	assert_int_equal(cs_events_at(q, 10, record, NULL, (void *)3), 0);
	assert_false(cs_events_run_one(q, 5));
	while (cs_events_run_one(q, UINT64_MAX))
		;
	assert_int_equal(traced, 3);
	assert_int_equal(trace[0], 2010); /* same time: scheduling order */
	assert_int_equal(trace[1], 3010);
	assert_int_equal(trace[2], 1030);
	assert_int_equal(cs_events_now(q), 30);
	cs_events_destroy(q);
}

/* ---- set-associative LRU ---- */

static void test_sa_cache_lru_and_tenants(void **state)
{
	struct cs_sa_cache *c = cs_sa_cache_create(1, 2);
	struct cs_sa_victim v;

	(void)state;
	assert_null(cs_sa_cache_create(3, 2));
	cs_sa_cache_insert(c, 0, 10, false, &v);
	assert_false(v.valid);
	cs_sa_cache_insert(c, 1, 10, true, &v);
	assert_true(cs_sa_cache_lookup(c, 0, 10, false));
	assert_false(cs_sa_cache_lookup(c, 2, 10, false));
	/* tenant 1's entry is least recently used now */
	cs_sa_cache_insert(c, 0, 11, false, &v);
	assert_true(v.valid && v.dirty && v.tenant == 1 && v.key == 10);
	assert_int_equal(cs_sa_cache_occupancy(c, 0), 2);
	assert_int_equal(cs_sa_cache_occupancy(c, 1), 0);
	cs_sa_cache_destroy(c);
}

/* ---- scheduler ---- */

static void test_sched_row_hits_then_policy(void **state)
{
	const struct cs_sched_view view[3] = {
		{ .app = 0, .arrival = 5, .row_hit = false },
		{ .app = 1, .arrival = 7, .row_hit = false },
		{ .app = 1, .arrival = 9, .row_hit = true },
	};
	struct cs_mem_sched_config cfg;
	struct cs_mem_sched *s;

	(void)state;
	cs_mem_sched_config_defaults(&cfg);
	s = cs_mem_sched_create(&cfg, 2);
	assert_int_equal(cs_mem_sched_pick(s, view, 3, 0), 2); /* the row hit */
	assert_int_equal(cs_mem_sched_pick(s, view, 2, 0), 0); /* then the oldest */
	cs_mem_sched_destroy(s);

	cfg.policy = CS_SCHED_PRIORITY;
	cfg.priority[0] = 1;
	cfg.priority[1] = 0;
	s = cs_mem_sched_create(&cfg, 2);
	assert_int_equal(cs_mem_sched_pick(s, view, 3, 0), 2);
	assert_int_equal(cs_mem_sched_pick(s, view, 2, 0), 1); /* app 1 first */
	cs_mem_sched_destroy(s);

	cfg.policy = CS_SCHED_RR_FRFCFS;
	s = cs_mem_sched_create(&cfg, 2);
	assert_int_equal(cs_mem_sched_pick(s, view, 2, 0), 0);
	assert_int_equal(cs_mem_sched_pick(s, view, 2, 0), 1); /* the turn moved */
	assert_int_equal(cs_mem_sched_pick(s, view, 2, 0), 0);
	cs_mem_sched_destroy(s);
}

/* ITS ranks by the last epoch's MPKI, WEIS by its bandwidth. */
static void test_sched_its_weis_epochs(void **state)
{
	const struct cs_sched_view view[2] = { { .app = 0, .arrival = 1 },
		                               { .app = 1, .arrival = 2 } };
	struct cs_mem_sched_config cfg;
	struct cs_mem_sched *its, *weis;

	(void)state;
	cs_mem_sched_config_defaults(&cfg);
	cfg.policy = CS_SCHED_ITS;
	its = cs_mem_sched_create(&cfg, 2);
	cfg.policy = CS_SCHED_WEIS;
	weis = cs_mem_sched_create(&cfg, 2);
	/* app 0: MPKI 50, 6400 bytes; app 1: MPKI 200, 1280 bytes */
	cs_mem_sched_count_instructions(its, 0, 1000);
	cs_mem_sched_count_instructions(its, 1, 1000);
	for (int i = 0; i < 50; i++)
		cs_mem_sched_count_miss(its, 0);
	for (int i = 0; i < 200; i++)
		cs_mem_sched_count_miss(its, 1);
	cs_mem_sched_count_bytes(weis, 0, 6400);
	cs_mem_sched_count_bytes(weis, 1, 1280);
	assert_int_equal(cs_mem_sched_pick(its, view, 2, 100), 0); /* still epoch 0 */
	assert_int_equal(cs_mem_sched_pick(its, view, 2, 1024), 0);
	assert_int_equal(cs_mem_sched_rank(its, 0), 0);
	assert_int_equal(cs_mem_sched_pick(weis, view, 2, 1024), 1);
	assert_int_equal(cs_mem_sched_rank(weis, 1), 0);
	/* an epoch without instructions keeps the last MPKI */
	cs_mem_sched_count_miss(its, 0);
	assert_int_equal(cs_mem_sched_pick(its, view, 2, 2048), 0);
	cs_mem_sched_destroy(its);
	cs_mem_sched_destroy(weis);
}

/* ---- the path, one request at a time ---- */

struct completion {
	uint64_t at;
	unsigned done;
};

static void access_done(void *arg, uint64_t now)
{
	struct completion *c = arg;

	c->at = now;
	c->done++;
}

static uint64_t one_access(struct cs_model *m, uint64_t va, uint64_t t0)
{
	struct completion c = { 0 };

	assert_int_equal(cs_model_access(m, 0, 0, va, false, t0, access_done, &c), 0);
	assert_int_equal(cs_model_run_until(m, t0 + 100000), 0);
	assert_int_equal(c.done, 1);
	return c.at - t0;
}

static void test_path_latencies(void **state)
{
	struct cs_model_config cfg;
	struct cs_tenant_counters c;
	struct cs_model *m;
	uint64_t cold, l2_hit, tlb_warm_row_hit, pwc_hit;

	(void)state;
	cs_model_config_defaults(&cfg);
	m = cs_model_create(&cfg, 1, NULL);
	assert_non_null(m);
	/* cold: L2 TLB miss, a 4-level walk (each PTE from DRAM), data from DRAM */
	cold = one_access(m, 0x100000000ull, 0);
	/* the same line: L1 TLB hit, L2 cache hit */
	l2_hit = one_access(m, 0x100000000ull, 200000);
	assert_int_equal(l2_hit, cfg.l2_latency);
	/* the next 256-byte chunk of the same page: same channel row? the
	 * next chunk goes to the next channel; 8 chunks on, the same row */
	tlb_warm_row_hit = one_access(m, 0x100000000ull + 256ull * cfg.dram.channels, 400000);
	assert_int_equal(tlb_warm_row_hit, cfg.l2_latency + cfg.dram.t_cl + cfg.dram.t_burst);
	/* another page in the same 2 MiB: the page-walk cache skips 3 levels */
	pwc_hit = one_access(m, 0x100000000ull + 8192, 600000);
	assert_true(pwc_hit < cold);
	cs_model_counters(m, 0, &c);
	assert_int_equal(c.walks, 2);
	assert_int_equal(c.walk_memory_accesses, 4 + 1);
	assert_int_equal(c.l2_tlb_lookups, 2);
	assert_int_equal(c.l1_tlb_hits, 2);
	cs_model_destroy(m);
}

/* One request of tenant from its first SM at t0, run to completion. */
static void tenant_access(struct cs_model *m, uint32_t tenant, uint64_t va, uint64_t t0)
{
	struct completion c = { 0 };

	assert_int_equal(cs_model_access(m, tenant, 0, va, false, t0, access_done, &c), 0);
	assert_int_equal(cs_model_run_until(m, t0 + 100000), 0);
	assert_int_equal(c.done, 1);
}

/* 64 KiB pages: one walk covers 64 KiB; the next page's walk finds its
 * upper levels in the page-walk cache. */
static void test_64k_pages(void **state)
{
	struct cs_model_config cfg;
	struct cs_tenant_counters c;
	struct cs_model *m;

	(void)state;
	cs_model_config_defaults(&cfg);
	cfg.page_shift = 16;
	m = cs_model_create(&cfg, 1, NULL);
	assert_non_null(m);
	one_access(m, 0x100000000ull, 0);
	one_access(m, 0x100000000ull + 32768, 200000);
	cs_model_counters(m, 0, &c);
	assert_int_equal(c.walks, 1);
	one_access(m, 0x100000000ull + 65536, 400000);
	cs_model_counters(m, 0, &c);
	assert_int_equal(c.walks, 2);
	assert_int_equal(c.walk_memory_accesses, 4 + 1);
	cs_model_destroy(m);
	cfg.page_shift = 13;
	assert_null(cs_model_create(&cfg, 1, NULL));
}

/* Tenant 0 fills a 16-entry L2 TLB, tenant 1 then fills 16 more entries,
 * tenant 0 looks its first page up again (its L1 TLB of one entry holds
 * another page): a shared L2 TLB lost it to tenant 1, a TLB per tenant
 * did not. */
static void test_l2_tlb_per_tenant(void **state)
{
	for (int per_tenant = 0; per_tenant < 2; per_tenant++) {
		struct cs_model_config cfg;
		struct cs_tenant_counters c;
		struct cs_model *m;
		uint64_t t0 = 0;

		(void)state;
		cs_model_config_defaults(&cfg);
		cfg.l1_tlb_entries = 1;
		cfg.l2_tlb_entries = 16;
		cfg.l2_tlb_ways = 16;
		cfg.l2_tlb_per_tenant = per_tenant;
		m = cs_model_create(&cfg, 2, NULL);
		assert_non_null(m);
		for (uint32_t tenant = 0; tenant < 2; tenant++)
			for (uint64_t page = 0; page < 16; page++, t0 += 200000)
				tenant_access(m, tenant, 0x100000000ull + page * 4096, t0);
		tenant_access(m, 0, 0x100000000ull, t0);
		cs_model_counters(m, 0, &c);
		assert_int_equal(c.l2_tlb_lookups, 17);
		assert_int_equal(c.l2_tlb_hits, per_tenant ? 1 : 0);
		assert_int_equal(c.walks, per_tenant ? 16 : 17);
		cs_model_destroy(m);
	}
}

/* A traced mix: windows tile the run (the last one shorter), their counts
 * add up to the run's, and the figures equal the untraced run's. */
static void test_traced_mix(void **state)
{
	struct cs_trace_window win[8];
	struct cs_tenant_spec specs[2];
	struct cs_model_config cfg;
	struct cs_mix_result run, plain;
	uint32_t windows = 0;

	(void)state;
	cs_model_config_defaults(&cfg);
	cfg.page_shift = 21;
	assert_int_equal(cs_tenant_spec_parse("gups", &specs[0]), 0);
	assert_int_equal(cs_tenant_spec_parse("stream", &specs[1]), 0);
	assert_int_equal(cs_run_mix_traced(&cfg, specs, 2, 20000, NULL, 2000, win, 8, &windows,
	                                   &run), -E2BIG);
	assert_int_equal(cs_run_mix_traced(&cfg, specs, 2, 20000, NULL, 3000, win, 8, &windows,
	                                   &run), 0);
	assert_int_equal(windows, 7);
	assert_int_equal(win[0].start, 0);
	assert_int_equal(win[6].start, 18000);
	assert_int_equal(win[6].end, 20000);
	for (uint32_t t = 0; t < 2; t++) {
		uint64_t instructions = 0, bytes = 0;

		for (uint32_t k = 0; k < windows; k++) {
			instructions += win[k].instructions[t];
			bytes += win[k].dram_bytes[t];
		}
		assert_true(instructions > 0 && bytes > 0);
		assert_int_equal(instructions, run.figures[t].instructions);
		assert_true(fabs((double)bytes / 20000 - run.figures[t].bandwidth) < 1e-9);
	}
	assert_int_equal(cs_run_mix(&cfg, specs, 2, 20000, run.alone, &plain), 0);
	assert_true(plain.throughput == run.throughput);
}

/* ---- kernel streams ---- */

static void test_gups_stream_matches_kernel(void **state)
{
	const uint64_t table = 1ull << 32, bytes = 1ull << 20, updates = 100, rng = 42;
	const uint64_t args[4] = { table, bytes, updates, rng };
	struct cs_kernel_stream s;
	struct cs_task t;
	uint64_t x = rng, seen = 0, i;

	(void)state;
	assert_int_equal(cs_kernel_stream_init(&s, VGPU_KERNEL_RANDOM_ACCESS, args, 4), 0);
	while (cs_kernel_stream_next(&s, &t)) {
		assert_int_equal(t.reads, t.writes);
		for (i = 0; i < t.reads; i++) {
			uint64_t key = vgpu_xorshift64(&x);
			uint64_t line = (table + (key % (bytes / 8)) * 8) / CS_LINE_BYTES * CS_LINE_BYTES;

			assert_int_equal(t.read_va[i], line);
			assert_int_equal(t.write_va[i], line);
		}
		seen += t.reads;
	}
	assert_int_equal(seen, updates);
	assert_int_equal(cs_kernel_stream_init(&s, VGPU_KERNEL_RANDOM_ACCESS, args, 3), -EINVAL);
}

static void test_stream_and_stencil_cover_their_buffers(void **state)
{
	const uint64_t stream_args[3] = { 1ull << 32, 64 * 1024, 3 };
	const uint64_t width = 64, height = 7, in = 1ull << 32, out = 2ull << 32;
	const uint64_t stencil_args[4] = { in, out, width, height };
	uint64_t lines = 64 * 1024 / CS_LINE_BYTES, reads = 0, writes = 0, i;
	uint64_t row_lines[7] = { 0 };
	struct cs_kernel_stream s;
	struct cs_task t;

	(void)state;
	assert_int_equal(cs_kernel_stream_init(&s, VGPU_KERNEL_STREAM, stream_args, 3), 0);
	while (cs_kernel_stream_next(&s, &t)) {
		for (i = 0; i < t.reads; i++)
			assert_int_equal(t.read_va[i], t.write_va[i]);
		reads += t.reads;
		writes += t.writes;
	}
	assert_int_equal(reads, 3 * lines); /* every line read and written per pass */
	assert_int_equal(writes, 3 * lines);

	/* STENCIL reads each input row once and writes each output row once */
	reads = writes = 0;
	assert_int_equal(cs_kernel_stream_init(&s, VGPU_KERNEL_STENCIL, stencil_args, 4), 0);
	while (cs_kernel_stream_next(&s, &t)) {
		for (i = 0; i < t.reads; i++) {
			assert_true(t.read_va[i] >= in / CS_LINE_BYTES * CS_LINE_BYTES &&
			            t.read_va[i] < in + width * 4 * height);
			row_lines[(t.read_va[i] - in) / (width * 4)]++;
		}
		for (i = 0; i < t.writes; i++)
			assert_true(t.write_va[i] >= out && t.write_va[i] < out + width * 4 * height);
		writes += t.writes;
	}
	for (i = 0; i < height; i++)
		assert_int_equal(row_lines[i], 2); /* 256-byte rows: 2 lines, read once */
	assert_int_equal(writes, height * 2);
}

static void test_spec_parse(void **state)
{
	struct cs_tenant_spec s;

	(void)state;
	assert_int_equal(cs_tenant_spec_parse("stream:bytes=8M,passes=2", &s), 0);
	assert_int_equal(s.kernel, VGPU_KERNEL_STREAM);
	assert_int_equal(s.args[1], 8u << 20);
	assert_int_equal(s.args[2], 2);
	assert_int_equal(cs_tenant_spec_parse("gups:updates=1K", &s), 0);
	assert_int_equal(s.args[2], 1024);
	assert_int_equal(cs_tenant_spec_parse("stream:bytes=7", &s), -EINVAL); /* not words */
	assert_int_equal(cs_tenant_spec_parse("stream:nope=1", &s), -EINVAL);
	assert_int_equal(cs_tenant_spec_parse("warp", &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_order),
		cmocka_unit_test(test_sa_cache_lru_and_tenants),
		cmocka_unit_test(test_sched_row_hits_then_policy),
		cmocka_unit_test(test_sched_its_weis_epochs),
		cmocka_unit_test(test_path_latencies),
		cmocka_unit_test(test_64k_pages),
		cmocka_unit_test(test_l2_tlb_per_tenant),
		cmocka_unit_test(test_traced_mix),
		cmocka_unit_test(test_gups_stream_matches_kernel),
		cmocka_unit_test(test_stream_and_stencil_cover_their_buffers),
		cmocka_unit_test(test_spec_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
