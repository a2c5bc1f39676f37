// SPDX-License-Identifier: MIT
/*
 * test_shadow_concurrency.c - suspend/resume while a guest thread keeps
 * submitting through whatever pages are mapped, the GPU runs, and the HAL's
 * event thread delivers fences: every submission runs exactly once, in order,
 * never while suspended; the guest never sees the backend's entries; the
 * guest waits only for page copies.
 *
 * Randomised tests take their seed from SHADOW_TEST_SEED (default: the time)
 * and print it; every failure message repeats it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shadow_harness.h"
#include "vgpu/abi/kernels.h"

#define WAIT_MS 30000u

static struct shadow_harness harness;
static uint64_t test_seed;

#define check(cond, ...)                                                                 \
	do {                                                                             \
		if (!(cond)) {                                                           \
			char detail_[512];                                               \
			snprintf(detail_, sizeof(detail_), __VA_ARGS__);                 \
			fail_msg("%s:%d: %s: %s (seed %" PRIu64 ", rerun with "          \
			         "SHADOW_TEST_SEED=%" PRIu64 ")",                        \
			         __FILE__, __LINE__, #cond, detail_, test_seed, test_seed); \
		}                                                                        \
	} while (0)

static struct shadow_harness *setup_harness(uint32_t entries, uint32_t max_pause_us,
                                            uint32_t max_submissions)
{
	struct shadow_harness_config config = {
		.gpfifo_entries = entries,
		.max_submissions = max_submissions,
		.max_pause_us = max_pause_us,
		.seed = test_seed | 1,
		.forward_errors = true,
	};

	assert_int_equal(shadow_harness_setup(&harness, &config), 0);
	return &harness;
}

/* Stop the guest, let everything run, check the log and the guest's view. */
static void finish_and_verify(struct shadow_harness *h)
{
	struct guest_window_stats window_stats;
	char why[256];
	uint64_t submitted;

	guest_submitter_stop(h->guest);
	submitted = guest_submitter_submitted(h->guest);
	check(guest_submitter_wait_executed(h->guest, submitted, WAIT_MS) == 0,
	      "%" PRIu64 " of %" PRIu64 " submissions executed",
	      guest_submitter_executed(h->guest), submitted);
	check(guest_submitter_verify(h->guest, why, sizeof(why)) == 0, "log: %s", why);
	check(guest_submitter_view_errors(h->guest, why, sizeof(why)) == 0, "guest view: %s", why);
	guest_window_double_stats(h->window, h->info.id, &window_stats);
	check(window_stats.protocol_errors == 0, "%" PRIu64 " window protocol errors",
	      window_stats.protocol_errors);
	check(!guest_window_double_is_shadow(h->window, h->info.id), "guest left on the shadow");
}

/* Reads stats and state in a loop, so TSan sees them race with the rest. */
struct stats_reader {
	struct vgpu_shadow_channel *shadow;
	bool stop; /* atomic */
	uint64_t reads;
	bool monotonic;
};

static struct stats_reader reader;
static pthread_t reader_thread;
static bool reader_running;

static void stop_stats_reader(void)
{
	if (!reader_running)
		return;
	__atomic_store_n(&reader.stop, true, __ATOMIC_RELEASE);
	pthread_join(reader_thread, NULL);
	reader_running = false;
}

/* Stretch every block..map window so the guest's accesses really trap. */
static void slow_page_copy(void *arg, uint32_t channel_id)
{
	harness_sleep_ms(1);
}

static void *stats_reader_thread(void *arg)
{
	struct stats_reader *self = arg;
	struct vgpu_shadow_stats last = { 0 }, now;

	self->monotonic = true;
	while (!__atomic_load_n(&self->stop, __ATOMIC_ACQUIRE)) {
		vgpu_shadow_stats(self->shadow, &now);
		(void)vgpu_shadow_is_suspended(self->shadow);
		if (now.suspensions < last.suspensions || now.resumes < last.resumes ||
		    now.resumes > now.suspensions || now.guest_blocked_ns < last.guest_blocked_ns)
			self->monotonic = false;
		last = now;
		self->reads++;
		harness_sleep_ms(1);
	}
	return NULL;
}

/*
 * The main property: a guest submitting throughout ten suspensions. While
 * suspended and drained nothing runs (GPU counters and modeled time frozen)
 * though the guest keeps submitting into the shadow; afterwards every
 * submission ran once, in order.
 */
static void test_concurrent_guest_runs_everything_once_in_order(void **state)
{
	struct shadow_harness *h = setup_harness(64, 40, 16384);
	struct harness_gpu_activity before, after;
	struct guest_window_stats window_stats;
	struct vgpu_shadow_stats stats;
	unsigned cycle, progressed = 0;

	reader = (struct stats_reader){ .shadow = h->shadow };
	assert_int_equal(pthread_create(&reader_thread, NULL, stats_reader_thread, &reader), 0);
	reader_running = true;
	guest_window_double_on_blocked(h->window, slow_page_copy, NULL);
	assert_int_equal(guest_submitter_start(h->guest), 0);
	for (cycle = 0; cycle < 10; cycle++) {
		uint64_t submitted_at_drain;

		harness_sleep_ms(3);
		check(vgpu_shadow_suspend(h->shadow) == 0, "cycle %u", cycle);
		check(vgpu_shadow_drain(h->shadow, WAIT_MS) == 0, "cycle %u", cycle);
		shadow_harness_activity(h, &before);
		submitted_at_drain = guest_submitter_submitted(h->guest);
		harness_sleep_ms(10);
		shadow_harness_activity(h, &after);
		check(harness_activity_equal(&before, &after),
		      "cycle %u: GPU ran %" PRIu64 " -> %" PRIu64 " submissions while suspended",
		      cycle, before.executed, after.executed);
		check(before.executed <= submitted_at_drain, "cycle %u", cycle);
		if (guest_submitter_submitted(h->guest) > submitted_at_drain)
			progressed++;
		check(vgpu_shadow_resume_timeout(h->shadow, WAIT_MS) == 0, "cycle %u", cycle);
	}
	harness_sleep_ms(3);
	finish_and_verify(h);
	/* The guest was not stopped by the suspensions. */
	check(progressed >= 3, "guest submitted while suspended in only %u of 10 cycles",
	      progressed);

	stop_stats_reader();
	check(reader.monotonic, "stats went backwards");
	/* The stretched copy windows made guest accesses wait, and it still
	 * saw a consistent window. */
	guest_window_double_stats(h->window, h->info.id, &window_stats);
	check(window_stats.trapped > 0, "no guest access ever trapped");
	vgpu_shadow_stats(h->shadow, &stats);
	check(stats.suspensions == 10 && stats.resumes == 10, "%" PRIu64 "/%" PRIu64,
	      stats.suspensions, stats.resumes);
	check(stats.nop_entries == 10 * (uint64_t)(h->entries - 1), "%" PRIu64 " NOPs",
	      stats.nop_entries);
	print_message("%" PRIu64 " submissions, 10 suspensions, %" PRIu64
	              " guest accesses trapped\n",
	              guest_submitter_submitted(h->guest), window_stats.trapped);
	shadow_harness_teardown(h);
}

static uint64_t next_random(uint64_t *rng)
{
	return vgpu_xorshift64(rng);
}

/* One randomised run: ring size, guest pace, and per cycle the time
 * running, whether and how long to drain, how to resume. */
static void random_run(uint64_t seed)
{
	static const uint32_t ring_sizes[] = { 2, 4, 8, 16, 32, 128, 512 };
	uint64_t rng = seed | 1;
	uint32_t entries = ring_sizes[next_random(&rng) % 7];
	uint32_t pause_us = (uint32_t)(next_random(&rng) % 100);
	struct shadow_harness *h = setup_harness(entries, pause_us, 16384);
	unsigned cycle, cycles = 20 + (unsigned)(next_random(&rng) % 20);
	struct vgpu_shadow_stats stats;

	assert_int_equal(guest_submitter_start(h->guest), 0);
	for (cycle = 0; cycle < cycles; cycle++) {
		unsigned mode = (unsigned)(next_random(&rng) % 4);
		int ret;

		harness_sleep_ms((unsigned)(next_random(&rng) % 4));
		check(vgpu_shadow_suspend(h->shadow) == 0, "ring %u cycle %u", entries, cycle);
		switch (mode) {
		case 0: { /* drain, hold, check nothing runs */
			struct harness_gpu_activity before, after;

			check(vgpu_shadow_drain(h->shadow, WAIT_MS) == 0, "cycle %u", cycle);
			shadow_harness_activity(h, &before);
			harness_sleep_ms((unsigned)(next_random(&rng) % 5));
			shadow_harness_activity(h, &after);
			check(harness_activity_equal(&before, &after),
			      "ring %u cycle %u: work ran while suspended", entries, cycle);
			break;
		}
		case 1: /* resume right away, no drain */
			break;
		case 2: /* a drain that may time out, then resume */
			ret = vgpu_shadow_drain(h->shadow, 0);
			check(ret == 0 || ret == -ETIMEDOUT, "drain %d", ret);
			break;
		default: /* a resume that may time out first */
			ret = vgpu_shadow_resume_timeout(h->shadow, 0);
			check(ret == 0 || ret == -ETIMEDOUT, "resume_timeout %d", ret);
			if (ret == 0)
				continue;
			check(vgpu_shadow_is_suspended(h->shadow), "cycle %u", cycle);
			break;
		}
		check(vgpu_shadow_resume_timeout(h->shadow, WAIT_MS) == 0, "ring %u cycle %u mode %u", entries, cycle,
		      mode);
	}
	finish_and_verify(h);
	vgpu_shadow_stats(h->shadow, &stats);
	check(stats.suspensions == cycles && stats.resumes == cycles, "%" PRIu64, stats.resumes);
	print_message("seed %" PRIu64 ": ring %u, pause %u us, %u cycles, %" PRIu64
	              " submissions\n",
	              seed, entries, pause_us, cycles, guest_submitter_submitted(h->guest));
	shadow_harness_teardown(h);
}

static void test_random_suspend_resume_cycles(void **state)
{
	uint64_t rng = test_seed | 1;
	int run;

	for (run = 0; run < 4; run++)
		random_run(next_random(&rng));
}

/*
 * The guest waits only while pages are copied: its accesses' time in the
 * trap, and the module's block..map windows, are tiny next to the time it
 * spends suspended (during which it keeps submitting).
 */
static void test_guest_blocked_time_is_small(void **state)
{
	struct shadow_harness *h = setup_harness(512, 10, 16384);
	struct guest_window_stats window_stats;
	struct vgpu_shadow_stats stats;
	uint64_t submitted_while_suspended = 0;
	unsigned cycle;

	assert_int_equal(guest_submitter_start(h->guest), 0);
	for (cycle = 0; cycle < 8; cycle++) {
		uint64_t start;

		harness_sleep_ms(5);
		check(vgpu_shadow_suspend(h->shadow) == 0, "cycle %u", cycle);
		start = guest_submitter_submitted(h->guest);
		check(vgpu_shadow_drain(h->shadow, WAIT_MS) == 0, "cycle %u", cycle);
		harness_sleep_ms(20); /* a "relocation" */
		submitted_while_suspended += guest_submitter_submitted(h->guest) - start;
		check(vgpu_shadow_resume_timeout(h->shadow, WAIT_MS) == 0, "cycle %u", cycle);
	}
	finish_and_verify(h);

	vgpu_shadow_stats(h->shadow, &stats);
	guest_window_double_stats(h->window, h->info.id, &window_stats);
	print_message("suspended %" PRIu64 " us; module block windows %" PRIu64
	              " us (max %" PRIu64 " us); guest accesses trapped %" PRIu64 "x for %" PRIu64
	              " us (max %" PRIu64 " us) of %" PRIu64 " accesses; %" PRIu64
	              " submissions while suspended\n",
	              stats.suspended_ns / 1000, stats.guest_blocked_ns / 1000,
	              stats.guest_blocked_max_ns / 1000, window_stats.trapped,
	              window_stats.trapped_ns / 1000, window_stats.trapped_max_ns / 1000,
	              window_stats.accesses, submitted_while_suspended);
	check(stats.suspended_ns >= 8 * 20 * 1000000ull, "%" PRIu64, stats.suspended_ns);
	check(stats.guest_blocked_ns * 10 < stats.suspended_ns,
	      "blocked %" PRIu64 " ns of %" PRIu64 " ns suspended", stats.guest_blocked_ns,
	      stats.suspended_ns);
	check(window_stats.trapped_ns * 10 < stats.suspended_ns,
	      "guest trapped %" PRIu64 " ns of %" PRIu64 " ns suspended", window_stats.trapped_ns,
	      stats.suspended_ns);
	check(submitted_while_suspended > 0, "the guest did not submit while suspended");
	shadow_harness_teardown(h);
}

static int teardown_leftover(void **state)
{
	stop_stats_reader();
	if (harness.hal)
		shadow_harness_teardown(&harness);
	return 0;
}

#define CONCURRENCY_TEST(fn) cmocka_unit_test_teardown(fn, teardown_leftover)

int main(void)
{
	const struct CMUnitTest tests[] = {
		CONCURRENCY_TEST(test_concurrent_guest_runs_everything_once_in_order),
		CONCURRENCY_TEST(test_random_suspend_resume_cycles),
		CONCURRENCY_TEST(test_guest_blocked_time_is_small),
	};
	const char *seed = getenv("SHADOW_TEST_SEED");

	test_seed = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL);
	print_message("shadow concurrency tests: seed %" PRIu64 " (SHADOW_TEST_SEED)\n", test_seed);
	return cmocka_run_group_tests_name("shadow-concurrency", tests, NULL, NULL);
}
