// SPDX-License-Identifier: MIT
/*
 * test_core_concurrency.c - the core under threads (suites 'core' and
 * 'concurrency', run under ThreadSanitizer too):
 *
 *  - a guest thread submits continuously on a VM's channel while other VMs'
 *    allocations evict its memory (its log and pushbuffers included) and
 *    the return thread brings it back: every submission runs exactly once,
 *    in order, the guest never sees the backend's entries, data intact;
 *  - several threads allocate, fill (on their VM's channel), check and free
 *    under pressure at once, with the return thread running;
 *  - the allocation lock serves waiters in arrival order and knows its
 *    owner;
 *  - statistics (core-wide and per VM, what `vgpuctl status` and a guest's
 *    QUERY read) answer while another VM's eviction of 256 MiB runs on a
 *    copy engine slowed to 1 GiB/s (issue 16);
 *  - a VM not involved in an eviction frees and allocates while the
 *    eviction waits for a victim's channel that never drains (issue 12).
 *
 * With --hal-2m the first two run on the test double of a GPU with 2 MiB
 * VRAM pages only (hal_2m_shim.h), with 2 MiB chunks.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_harness.h"
#include "fifo_lock.h"
#include "guest_double.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

static struct core_harness h;
static bool hal_2m; /* --hal-2m */

/* The harness for a test whose chunks are chunk_bytes on simgpu. */
static void setup(struct core_harness_config *config)
{
	if (hal_2m) {
		config->hal_2m = true;
		config->chunk_bytes = 2 * MiB;
	}
	core_harness_setup(&h, config);
}

static uint64_t expected_word(uint64_t seed, uint64_t offset)
{
	return vgpu_fill_word(seed, offset);
}

static bool buffer_holds_fill(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer,
                              uint64_t seed)
{
	enum { STEP = 64 * 1024 };
	uint64_t *words = malloc(STEP);
	bool ok = true;

	for (uint64_t offset = 0; ok && offset < buffer->bytes; offset += STEP) {
		uint64_t n = buffer->bytes - offset < STEP ? buffer->bytes - offset : STEP;

		/* under the allocation lock: other workers relocate this VM */
		if (vgpu_core_vm_read(vm, buffer->gpu_va + offset, words, n, NULL))
			ok = false;
		for (uint64_t i = 0; ok && i < n / 8; i++)
			ok = le64toh(words[i]) == expected_word(seed, offset + 8 * i);
	}
	free(words);
	return ok;
}

/* ---- relocation under a live guest ---------------------------------------- */

static void test_relocation_with_live_guest(void **state)
{
	struct core_harness_config config = { .chunk_bytes = 512 * KiB, .return_interval_ms = 5 };
	struct vgpu_buffer_info data[4], pressure[6];
	struct harness_guest guest;
	struct vgpu_vm_stats stats;
	struct vgpu_vm *a, *b;
	uint64_t submitted, seed = harness_seed("relocation-with-live-guest");
	char why[256];

	setup(&config);
	a = harness_vm(&h, "guest", 1, 0, 0);
	/* Weight 4: b may hold 4/5 of VRAM, so a is the victim. */
	b = harness_vm(&h, "pressure", 4, 0, 0);
	harness_guest_setup(&h, a, &guest, 16384, 40, seed);
	for (int i = 0; i < 4; i++) {
		uint32_t words[16];

		assert_int_equal(vgpu_core_alloc(a, 7 * MiB + 4096 * (uint64_t)i, 7, 0, &data[i],
		                                 NULL), 0);
		harness_guest_run(&h, &guest, words,
		                  vgpu_push_launch_fill(words, data[i].gpu_va, data[i].bytes, seed + i));
	}
	assert_int_equal(guest_submitter_start(guest.submitter), 0);
	/* b grabs and releases most of VRAM again and again: a's chunks (its
	 * log and pushbuffers too) go to the host and come back. */
	for (int round = 0; round < 12 && guest_submitter_submitted(guest.submitter) < 16000;
	     round++) {
		for (int i = 0; i < 6; i++)
			assert_int_equal(vgpu_core_alloc(b, 8 * MiB + 8192, 7, 0, &pressure[i],
			                                 NULL), 0);
		harness_sleep_ms(5);
		for (int i = 0; i < 6; i++)
			assert_int_equal(vgpu_core_free(b, pressure[i].handle, NULL), 0);
		harness_sleep_ms(15); /* the return thread runs */
	}
	guest_submitter_stop(guest.submitter);
	submitted = guest_submitter_submitted(guest.submitter);
	assert_int_equal(guest_submitter_wait_executed(guest.submitter, submitted, 60000), 0);
	if (guest_submitter_verify(guest.submitter, why, sizeof(why)))
		fail_msg("guest log (VGPU_SEED=%" PRIu64 "): %s", seed, why);
	if (guest_submitter_view_errors(guest.submitter, why, sizeof(why)))
		fail_msg("guest view (VGPU_SEED=%" PRIu64 "): %s", seed, why);
	for (int i = 0; i < 4; i++)
		assert_true(buffer_holds_fill(a, &data[i], seed + i));
	stats = harness_stats(a);
	fprintf(stderr, "live guest: %" PRIu64 " submissions, %" PRIu64 " suspensions, %" PRIu64
	        " chunks evicted, %" PRIu64 " returned, suspended %.1f ms, guest blocked %.3f ms\n",
	        submitted, stats.suspensions, stats.evictions, stats.returns,
	        stats.suspended_ns / 1e6, stats.guest_blocked_ns / 1e6);
	assert_true(submitted > 0);
	assert_true(stats.suspensions >= 12);
	assert_true(stats.evictions > 0 && stats.returns > 0);
	harness_assert_invariants(&h);
	harness_guest_teardown(&guest);
	core_harness_teardown(&h);
}

/* ---- many allocators ------------------------------------------------------ */

#define WORKERS 4

struct worker {
	struct vgpu_vm *vm;
	struct harness_guest guest;
	uint64_t seed;
	int failures;
	char failure[256];
};

static void *worker_main(void *arg)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct worker *w = arg;
	struct vgpu_buffer_info buffers[8];
	uint64_t seeds[8], state = w->seed | 1;
	bool live[8] = { false };

	for (int step = 0; step < 60; step++) {
		int slot = (int)(vgpu_xorshift64(&state) % 8);

		if (live[slot]) {
			if (!buffer_holds_fill(w->vm, &buffers[slot], seeds[slot])) {
				w->failures++;
				snprintf(w->failure, sizeof(w->failure), "%s: buffer %d differs",
				         vgpu_core_vm_name(w->vm), slot);
			}
			if (vgpu_core_free(w->vm, buffers[slot].handle, &error))
				w->failures++;
			live[slot] = false;
		} else {
			uint64_t bytes = (1 + vgpu_xorshift64(&state) % (6 * MiB));
			uint32_t words[16];

			if (vgpu_core_alloc(w->vm, bytes, (unsigned)(step % 16), 0, &buffers[slot],
			                    &error)) {
				w->failures++;
				snprintf(w->failure, sizeof(w->failure), "%s: alloc: %s",
				         vgpu_core_vm_name(w->vm), vgpu_error_msg(&error));
				continue;
			}
			seeds[slot] = vgpu_xorshift64(&state);
			harness_guest_run(&h, &w->guest, words,
			                  vgpu_push_launch_fill(words, buffers[slot].gpu_va,
			                                        buffers[slot].bytes, seeds[slot]));
			live[slot] = true;
		}
	}
	for (int slot = 0; slot < 8; slot++)
		if (live[slot] && !buffer_holds_fill(w->vm, &buffers[slot], seeds[slot]))
			w->failures++;
	return NULL;
}

static void test_concurrent_allocators(void **state)
{
	/* 12 MiB of VRAM for VMs: four workers holding about four buffers of
	 * 3 MiB on average each always need more, whatever the seed. */
	struct core_harness_config config = { .vram_bytes = 16 * MiB, .chunk_bytes = 256 * KiB,
	                                       .return_interval_ms = 3 };
	struct worker workers[WORKERS];
	pthread_t threads[WORKERS];
	uint64_t seed = harness_seed("concurrent-allocators");
	struct vgpu_core_stats stats;

	setup(&config);
	for (int i = 0; i < WORKERS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "w%d", i);
		memset(&workers[i], 0, sizeof(workers[i]));
		workers[i].vm = harness_vm(&h, name, 1 + i % 2, 0, 0);
		workers[i].seed = seed + (uint64_t)i * 7919;
		harness_guest_setup(&h, workers[i].vm, &workers[i].guest, 8, 0, seed);
	}
	for (int i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < WORKERS; i++)
		if (workers[i].failures)
			fail_msg("worker %d (VGPU_SEED=%" PRIu64 "): %d failures, e.g. %s", i, seed,
			         workers[i].failures, workers[i].failure);
	harness_assert_invariants(&h);
	vgpu_core_stats(h.core, &stats);
	fprintf(stderr, "allocators: %" PRIu64 " evicted, %" PRIu64 " placed, %" PRIu64
	        " returned in %" PRIu64 " return passes\n",
	        stats.chunks_evicted, stats.chunks_placed_on_host, stats.chunks_returned,
	        stats.return_pass.passes);
	assert_true(stats.chunks_evicted + stats.chunks_placed_on_host > 0);
	for (int i = 0; i < WORKERS; i++)
		harness_guest_teardown(&workers[i].guest);
	core_harness_teardown(&h);
}

/* ---- the allocation lock is FIFO ------------------------------------------ */

#define WAITERS 6

static struct vgpu_fifo_lock fifo;
static int order[WAITERS], served;
static pthread_mutex_t arrival_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrival_cond = PTHREAD_COND_INITIALIZER;
static int arrived;

static void *waiter(void *arg)
{
	int id = (int)(intptr_t)arg;

	/* Arrive strictly in id order: wait for our turn to take a ticket. */
	pthread_mutex_lock(&arrival_lock);
	while (arrived != id)
		pthread_cond_wait(&arrival_cond, &arrival_lock);
	pthread_mutex_unlock(&arrival_lock);
	/* Take the ticket, then let the next one arrive. The ticket is taken
	 * inside vgpu_fifo_lock before it blocks; a short sleep after
	 * announcing makes sure of the order. */
	pthread_mutex_lock(&arrival_lock);
	arrived++;
	pthread_cond_broadcast(&arrival_cond);
	pthread_mutex_unlock(&arrival_lock);
	assert_false(vgpu_fifo_lock_held(&fifo)); /* another thread holds it, or none */
	vgpu_fifo_lock(&fifo);
	assert_true(vgpu_fifo_lock_held(&fifo)); /* the owner is recorded */
	order[served++] = id;
	vgpu_fifo_unlock(&fifo);
	assert_false(vgpu_fifo_lock_held(&fifo));
	return NULL;
}

static void test_fifo_lock_order(void **state)
{
	pthread_t threads[WAITERS];

	assert_int_equal(vgpu_fifo_lock_init(&fifo), 0);
	assert_false(vgpu_fifo_lock_held(&fifo));
	vgpu_fifo_lock(&fifo);
	assert_true(vgpu_fifo_lock_held(&fifo));
	for (int i = 0; i < WAITERS; i++) {
		assert_int_equal(pthread_create(&threads[i], NULL, waiter, (void *)(intptr_t)i), 0);
		/* Wait until thread i has queued (its ticket is i + 1). */
		for (;;) {
			uint64_t tickets;

			pthread_mutex_lock(&fifo.mutex);
			tickets = fifo.next_ticket;
			pthread_mutex_unlock(&fifo.mutex);
			if (tickets == (uint64_t)i + 2)
				break;
			harness_sleep_ms(1);
		}
	}
	vgpu_fifo_unlock(&fifo);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < WAITERS; i++)
		assert_int_equal(order[i], i);
	vgpu_fifo_lock_fini(&fifo);
}

struct evicting_alloc {
	struct vgpu_vm *vm;
	uint64_t bytes;
	int err;
	uint64_t ns;
	atomic_bool done;
};

static void *evicting_alloc_main(void *arg)
{
	struct evicting_alloc *a = arg;
	struct vgpu_buffer_info info;
	uint64_t start = harness_now_ns();

	a->err = vgpu_core_alloc(a->vm, a->bytes, 7, 0, &info, NULL);
	a->ns = harness_now_ns() - start;
	atomic_store(&a->done, true);
	return NULL;
}

/*
 * A reader never waits for an eviction: while b's allocation evicts 256 MiB
 * of a at 1 GiB/s (at least 256 ms under the allocation lock), every
 * vgpu_core_stats and vgpu_core_vm_stats answers within 100 ms. The bound
 * is generous for a loaded 2-core machine (a read is a copy under a short
 * lock: microseconds when it gets the CPU) and still fails a reader that
 * waits for the eviction.
 */
static void test_stats_during_eviction(void **state)
{
	struct core_harness_config config = {
		.vram_bytes = 324 * MiB, /* 320 MiB for VMs */
		.chunk_bytes = 4 * MiB,
		.copy_wall_bandwidth = 1ull << 30,
	};
	struct evicting_alloc alloc = { 0 };
	struct vgpu_buffer_info info;
	struct vgpu_core_stats core_stats;
	struct vgpu_vm_stats vm_stats;
	uint64_t worst = 0, probes = 0;
	struct vgpu_vm *a, *b;
	pthread_t thread;

	setup(&config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 100, 0, 0); /* a stays the victim throughout */
	for (int i = 0; i < 9; i++)
		assert_int_equal(vgpu_core_alloc(a, 32 * MiB, 7, 0, &info, NULL), 0);
	alloc.vm = b;
	alloc.bytes = 320 * MiB;
	atomic_init(&alloc.done, false);
	assert_int_equal(pthread_create(&thread, NULL, evicting_alloc_main, &alloc), 0);
	while (!atomic_load(&alloc.done)) {
		uint64_t start = harness_now_ns(), took;

		vgpu_core_stats(h.core, &core_stats);
		vgpu_core_vm_stats(a, &vm_stats);
		took = harness_now_ns() - start;
		if (took > worst)
			worst = took;
		probes++;
		harness_sleep_ms(5);
	}
	pthread_join(thread, NULL);
	assert_int_equal(alloc.err, 0);
	print_message("eviction of %llu MiB took %.0f ms; %llu statistics reads meanwhile, "
	              "slowest %.2f ms\n",
	              (unsigned long long)(harness_stats(a).evicted_bytes / MiB),
	              (double)alloc.ns / 1e6, (unsigned long long)probes, (double)worst / 1e6);
	assert_true(harness_stats(a).evicted_bytes >= 256 * MiB);
	assert_true(alloc.ns >= 250000000ull);
	assert_true(probes >= 10);
	assert_true(worst < 100000000ull);
	harness_assert_invariants(&h);
	core_harness_teardown(&h);
}

/*
 * Other VMs' requests go on while an eviction waits for a victim's channel:
 * a's channel never drains (an acquire nothing releases; drain timeout 2 s)
 * while b's allocation evicts a. Meanwhile c, not involved, frees a buffer,
 * allocates from what it freed and reads its statistics: all done while b's
 * allocation still waits, and quickly (a bound of 1 s, half the drain
 * timeout, generous for a loaded machine). Then a's channel is killed,
 * b's allocation completes, the invariants hold.
 */
static void test_requests_during_drain(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB, .drain_timeout_ms = 2000 };
	struct evicting_alloc alloc = { 0 };
	struct vgpu_buffer_info info, c_held, c_new;
	struct vgpu_core_stats core_stats;
	struct vgpu_vm_stats stats;
	struct harness_guest guest;
	struct vgpu_vm *a, *b, *c;
	uint64_t a_bytes, free_bytes, deadline, start, took;
	uint32_t words[16], n;
	pthread_t thread;
	bool b_done_meanwhile;

	setup(&config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 1, 0, 0);
	c = harness_vm(&h, "c", 1, 0, 0);
	harness_guest_setup(&h, a, &guest, 16, 0, 1);
	vgpu_core_stats(h.core, &core_stats);
	assert_int_equal(vgpu_core_alloc(c, 8 * MiB, 7, 0, &c_held, NULL), 0);
	/* a holds all but 28 MiB (its guest's log included), c 8 MiB. */
	vgpu_core_stats(h.core, &core_stats);
	a_bytes = (core_stats.vram_free_bytes - 20 * MiB) / (4 * MiB) * (4 * MiB);
	for (uint64_t held = 0; held < a_bytes; held += 4 * MiB)
		assert_int_equal(vgpu_core_alloc(a, 4 * MiB, 7, 0, &info, NULL), 0);
	vgpu_core_stats(h.core, &core_stats);
	free_bytes = core_stats.vram_free_bytes;
	n = vgpu_push_semaphore_acquire(words, guest.semaphore_va + 64, UINT64_MAX);
	assert_int_equal(guest_submitter_submit_raw(guest.submitter, words, n), 0);
	harness_sleep_ms(20);

	/* b needs 4 MiB more than is free: a is the victim. */
	alloc.vm = b;
	alloc.bytes = free_bytes + 4 * MiB;
	atomic_init(&alloc.done, false);
	assert_int_equal(pthread_create(&thread, NULL, evicting_alloc_main, &alloc), 0);
	deadline = harness_now_ns() + 10000000000ull;
	while (harness_stats(a).suspensions == 0 && harness_now_ns() < deadline)
		harness_sleep_ms(1);
	assert_true(harness_stats(a).suspensions > 0); /* the drain waits now */

	start = harness_now_ns();
	assert_int_equal(vgpu_core_free(c, c_held.handle, NULL), 0);
	assert_int_equal(vgpu_core_alloc(c, 2 * MiB, 7, 0, &c_new, NULL), 0);
	vgpu_core_vm_stats(c, &stats);
	took = harness_now_ns() - start;
	b_done_meanwhile = atomic_load(&alloc.done);
	pthread_join(thread, NULL);
	print_message("c's free, alloc and stats took %.1f ms while b's allocation waited "
	              "for a's channel (b done after %.0f ms)\n",
	              (double)took / 1e6, (double)alloc.ns / 1e6);
	assert_false(b_done_meanwhile);
	assert_true(took < 1000000000ull);
	assert_int_equal(stats.allocated_bytes, 2 * MiB);
	assert_int_equal(alloc.err, 0);
	assert_int_equal(harness_stats(a).channel_errors, 1);
	harness_assert_invariants(&h);
	harness_guest_teardown(&guest);
	core_harness_teardown(&h);
}

/* b allocates 4 MiB more than is free (a is the victim); the time it took. */
static uint64_t alloc_past_free(struct vgpu_vm *b)
{
	struct vgpu_core_stats core_stats;
	struct vgpu_buffer_info info;
	uint64_t start;

	vgpu_core_stats(h.core, &core_stats);
	start = harness_now_ns();
	assert_int_equal(vgpu_core_alloc(b, core_stats.vram_free_bytes + 4 * MiB, 7, 0, &info,
	                                 NULL),
	                 0);
	return harness_now_ns() - start;
}

/*
 * Issue 24 item 5, the re-arming staller: before every eviction round a
 * parks a fresh channel on an acquire nothing releases. The first round
 * waits the drain timeout (1 s) and kills the channel; a is a drain
 * offender from then on, so the second round, with a fresh stuck channel,
 * waits VGPU_OFFENDER_DRAIN_MS only: asserted under half the drain timeout
 * (wide for a loaded machine, and still failing a second full wait).
 */
static void test_rearming_staller_waits_once(void **state)
{
	struct core_harness_config config = { .chunk_bytes = MiB, .drain_timeout_ms = 1000 };
	struct vgpu_core_stats core_stats;
	struct vgpu_buffer_info info;
	struct harness_guest first, second;
	struct vgpu_vm *a, *b;
	uint64_t a_bytes, took1, took2;
	uint32_t words[16], n;

	(void)state;
	setup(&config);
	a = harness_vm(&h, "a", 1, 0, 0);
	b = harness_vm(&h, "b", 100, 0, 0); /* a stays the victim */
	harness_guest_setup(&h, a, &first, 16, 0, 1);
	vgpu_core_stats(h.core, &core_stats);
	a_bytes = (core_stats.vram_free_bytes - 24 * MiB) / (4 * MiB) * (4 * MiB);
	for (uint64_t held = 0; held < a_bytes; held += 4 * MiB)
		assert_int_equal(vgpu_core_alloc(a, 4 * MiB, 7, 0, &info, NULL), 0);
	n = vgpu_push_semaphore_acquire(words, first.semaphore_va + 64, UINT64_MAX);
	assert_int_equal(guest_submitter_submit_raw(first.submitter, words, n), 0);
	harness_sleep_ms(20);
	assert_false(harness_stats(a).drain_offender);

	took1 = alloc_past_free(b);
	assert_int_equal(harness_stats(a).drain_kills, 1);
	assert_true(harness_stats(a).drain_offender);

	/* re-armed: a fresh channel, stuck the same way */
	harness_guest_setup(&h, a, &second, 16, 0, 2);
	n = vgpu_push_semaphore_acquire(words, second.semaphore_va + 64, UINT64_MAX);
	assert_int_equal(guest_submitter_submit_raw(second.submitter, words, n), 0);
	harness_sleep_ms(20);
	took2 = alloc_past_free(b);
	print_message("first eviction of the staller waited %.0f ms (drain timeout %u ms), "
	              "the re-armed one %.0f ms\n",
	              (double)took1 / 1e6, config.drain_timeout_ms, (double)took2 / 1e6);
	assert_true(took1 >= 900000000ull);
	assert_true(took2 < 500000000ull);
	assert_int_equal(harness_stats(a).drain_kills, 2);
	assert_int_equal(harness_stats(a).channel_errors, 2);
	assert_int_equal(harness_stats(b).channel_errors, 0);
	harness_assert_invariants(&h);
	harness_guest_teardown(&second);
	harness_guest_teardown(&first);
	core_harness_teardown(&h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_lock_order),
		cmocka_unit_test(test_relocation_with_live_guest),
		cmocka_unit_test(test_concurrent_allocators),
		cmocka_unit_test(test_stats_during_eviction),
		cmocka_unit_test(test_requests_during_drain),
		cmocka_unit_test(test_rearming_staller_waits_once),
	};

	if (argc == 2 && !strcmp(argv[1], "--hal-2m")) {
		hal_2m = true;
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--hal-2m]\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
