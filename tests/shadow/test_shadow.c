// SPDX-License-Identifier: MIT
/*
 * test_shadow.c - deterministic tests of channel suspend/resume with shadow
 * pages: the guest's view, the NOP-fill rewind of GP_GET at every interesting
 * ring position, drains, full rings, killed channels and misuse.
 *
 * The guest is driven from the test thread here, one submission at a time,
 * so every position is exact; test_shadow_concurrency.c runs it as a thread.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shadow_harness.h"
#include "vgpu/abi/commands.h"

#define WAIT_MS 10000u

static struct shadow_harness harness;

static struct shadow_harness *setup_harness(uint32_t entries, bool forward_errors)
{
	struct shadow_harness_config config = {
		.gpfifo_entries = entries,
		.max_submissions = 4096,
		.forward_errors = forward_errors,
	};

	assert_int_equal(shadow_harness_setup(&harness, &config), 0);
	return &harness;
}

/* The guest saw nothing it did not write, and the window ops were used in
 * order. */
static void assert_guest_view_clean(struct shadow_harness *h)
{
	struct guest_window_stats window_stats;
	char first[256];

	if (guest_submitter_view_errors(h->guest, first, sizeof(first)))
		fail_msg("guest view violated: %s", first);
	guest_window_double_stats(h->window, h->info.id, &window_stats);
	assert_int_equal(window_stats.protocol_errors, 0);
}

static void assert_log_ok(struct shadow_harness *h)
{
	char why[256];

	if (guest_submitter_verify(h->guest, why, sizeof(why)))
		fail_msg("log check failed: %s", why);
}

static void wait_executed(struct shadow_harness *h, uint64_t count)
{
	if (guest_submitter_wait_executed(h->guest, count, WAIT_MS))
		fail_msg("only %llu of %llu submissions executed",
		         (unsigned long long)guest_submitter_executed(h->guest),
		         (unsigned long long)count);
}

/* Resume, failing (not hanging) if the channel never gets there. */
static int resume(struct shadow_harness *h)
{
	return vgpu_shadow_resume_timeout(h->shadow, WAIT_MS);
}

static void wait_killed(struct shadow_harness *h)
{
	uint64_t deadline = harness_now_ns() + (uint64_t)WAIT_MS * 1000000;

	while (vgpu_hal_channel_state(h->channel, NULL) != VGPU_CHANNEL_ERROR) {
		if (harness_now_ns() > deadline)
			fail_msg("the faulting submission did not kill the channel");
		harness_sleep_ms(1);
	}
}

/* Nothing of the channel runs for ms milliseconds. */
static void assert_gpu_idle_for(struct shadow_harness *h, unsigned ms)
{
	struct harness_gpu_activity before, after;

	shadow_harness_activity(h, &before);
	harness_sleep_ms(ms);
	shadow_harness_activity(h, &after);
	assert_true(harness_activity_equal(&before, &after));
}

/* ------------------------------------------------------------------------ */

static int failing_get_shadow(void *ctx, uint32_t channel_id, void **control, void **gpfifo)
{
	return -ENOMEM;
}

static void test_create_validates_arguments(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct vgpu_guest_window_ops failing = *guest_window_double_ops();
	struct vgpu_hal_channel_info info = h->info;
	struct vgpu_shadow_channel *sc = NULL;

	assert_int_equal(vgpu_shadow_channel_create(h->channel, &h->info, NULL, h->window, &sc),
	                 -EINVAL);
	info.layout.gpfifo_entries = 12;
	assert_int_equal(vgpu_shadow_channel_create(h->channel, &info, guest_window_double_ops(),
	                                            h->window, &sc),
	                 -EINVAL);
	info = h->info;
	info.layout.gp_get_offset = info.layout.gp_put_offset;
	assert_int_equal(vgpu_shadow_channel_create(h->channel, &info, guest_window_double_ops(),
	                                            h->window, &sc),
	                 -EINVAL);
	info = h->info;
	info.layout.gp_put_offset = info.layout.control_bytes;
	assert_int_equal(vgpu_shadow_channel_create(h->channel, &info, guest_window_double_ops(),
	                                            h->window, &sc),
	                 -EINVAL);
	failing.get_shadow = failing_get_shadow;
	assert_int_equal(vgpu_shadow_channel_create(h->channel, &h->info, &failing, h->window, &sc),
	                 -ENOMEM);
	assert_null(sc);
	assert_ptr_equal(vgpu_shadow_hal_channel(h->shadow), h->channel);
	assert_int_equal(vgpu_shadow_channel_id(h->shadow), h->info.id);
	vgpu_shadow_channel_destroy(NULL);
	shadow_harness_teardown(h);
}

static void test_misuse_is_reported(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct vgpu_shadow_stats stats;

	assert_false(vgpu_shadow_is_suspended(h->shadow));
	assert_int_equal(vgpu_shadow_resume_timeout(h->shadow, 0), -EINVAL);
	assert_int_equal(vgpu_shadow_drain(h->shadow, 10), -EINVAL);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_true(vgpu_shadow_is_suspended(h->shadow));
	assert_int_equal(vgpu_shadow_suspend(h->shadow), -EALREADY);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, 0), 0); /* stays drained */
	assert_int_equal(resume(h), 0);
	assert_false(vgpu_shadow_is_suspended(h->shadow));
	assert_int_equal(resume(h), -EINVAL);

	vgpu_shadow_stats(h->shadow, &stats);
	assert_int_equal(stats.suspensions, 1);
	assert_int_equal(stats.resumes, 1);
	assert_int_equal(stats.nop_entries, h->entries - 1);
	assert_int_equal(stats.channel_errors, 0);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* A guest that never submitted anything. */
static void test_idle_guest(void **state)
{
	struct shadow_harness *h = setup_harness(32, false);
	struct guest_submitter_view view;

	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	guest_submitter_read_view(h->guest, &view);
	assert_true(view.shadow);
	assert_int_equal(view.gp_get, 0);
	assert_int_equal(view.gp_put, 0);
	assert_true(view.ring_matches);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(resume(h), 0);

	assert_int_equal(shadow_harness_real_gp_get(h), 0);
	guest_submitter_read_view(h->guest, &view);
	assert_false(view.shadow);
	assert_int_equal(view.gp_get, 0);
	assert_int_equal(view.gp_put, 0);
	assert_true(view.ring_matches);

	/* The channel still works afterwards. */
	assert_int_equal(shadow_harness_submit(h, 3), 0);
	wait_executed(h, 3);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* Bring both GP_GET and GP_PUT to ring position k with nothing pending. */
static void move_to_position(struct shadow_harness *h, uint32_t k)
{
	uint32_t mask = h->entries - 1;

	while (guest_submitter_put(h->guest) != k) {
		uint32_t step = (k - guest_submitter_put(h->guest)) & mask;

		if (step > h->entries / 2)
			step = h->entries / 2;
		assert_int_equal(shadow_harness_submit(h, step), 0);
		wait_executed(h, guest_submitter_submitted(h->guest));
	}
	wait_executed(h, guest_submitter_submitted(h->guest));
	assert_int_equal(shadow_harness_real_gp_get(h), k);
}

/*
 * One suspend/resume with GP_GET = GP_PUT = k at suspension and m guest
 * submissions while suspended: the guest sees GP_GET frozen, nothing runs,
 * and after resume GP_GET is exactly k + m with every entry run once.
 */
static void cycle_at_position(struct shadow_harness *h, uint32_t k, uint32_t m)
{
	uint32_t mask = h->entries - 1;
	struct guest_submitter_view view;
	struct vgpu_shadow_stats before, after;
	uint64_t executed;
	uint32_t i;

	move_to_position(h, k);
	executed = guest_submitter_executed(h->guest);
	vgpu_shadow_stats(h->shadow, &before);

	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	guest_submitter_read_view(h->guest, &view);
	assert_true(view.shadow);
	assert_int_equal(view.gp_get, k);
	assert_int_equal(view.gp_put, k);
	assert_true(view.ring_matches);

	for (i = 0; i < m; i++)
		assert_int_equal(guest_submitter_submit(h->guest), 0);
	if (m == h->entries - 1) /* the guest filled its view of the ring */
		assert_int_equal(guest_submitter_submit(h->guest), -EAGAIN);

	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_gpu_idle_for(h, 5);
	assert_int_equal(guest_submitter_executed(h->guest), executed);
	guest_submitter_read_view(h->guest, &view);
	assert_int_equal(view.gp_get, k); /* frozen, though the GPU ran the fence */
	assert_int_equal(view.gp_put, (k + m) & mask);
	assert_true(view.ring_matches);

	assert_int_equal(resume(h), 0);
	wait_executed(h, executed + m);
	assert_int_equal(shadow_harness_real_gp_get(h), (k + m) & mask);
	guest_submitter_read_view(h->guest, &view);
	assert_false(view.shadow);
	assert_int_equal(view.gp_get, (k + m) & mask);
	assert_int_equal(view.gp_put, (k + m) & mask);
	assert_true(view.ring_matches);

	vgpu_shadow_stats(h->shadow, &after);
	assert_int_equal(after.nop_entries - before.nop_entries, h->entries - 1);
	assert_int_equal(after.suspensions - before.suspensions, 1);
	assert_guest_view_clean(h);
}

static void test_nop_fill_restores_gp_get_at_every_position(void **state)
{
	const uint32_t entries = 16;
	const uint32_t positions[] = { 0, 1, 2, entries / 2, entries - 2, entries - 1 };
	const uint32_t shadow_submissions[] = { 0, 1, 3, entries - 2, entries - 1 };
	struct shadow_harness *h = setup_harness(entries, false);
	size_t p, s;

	for (p = 0; p < sizeof(positions) / sizeof(positions[0]); p++)
		for (s = 0; s < sizeof(shadow_submissions) / sizeof(shadow_submissions[0]); s++)
			cycle_at_position(h, positions[p], shadow_submissions[s]);
	assert_log_ok(h);
	shadow_harness_teardown(h);
}

/* The smallest ring: every resume wraps the whole ring. */
static void test_nop_fill_two_entry_ring(void **state)
{
	struct shadow_harness *h = setup_harness(2, false);
	int round;

	for (round = 0; round < 6; round++)
		cycle_at_position(h, guest_submitter_put(h->guest), (uint32_t)round % 2);
	assert_log_ok(h);
	shadow_harness_teardown(h);
}

/*
 * p entries pending at suspension (fetch disabled so they cannot run): drain
 * waits for exactly those, the guest can fill the rest of its ring in the
 * shadow, and with p = entries - 1 the real ring is full so the fence must wait
 * for room.
 */
static void pending_then_fill(uint32_t entries, uint32_t p)
{
	struct shadow_harness *h = setup_harness(entries, false);
	uint32_t mask = entries - 1, room = entries - 1 - p, i;
	struct guest_submitter_view view;
	uint64_t start;

	/* An earlier suspension's fence has completed: the drain below must
	 * wait for its own. */
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(resume(h), 0);
	move_to_position(h, entries - 3);
	start = guest_submitter_executed(h->guest);
	vgpu_hal_channel_set_fetch(h->channel, false);
	assert_int_equal(shadow_harness_submit(h, p), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);

	guest_submitter_read_view(h->guest, &view);
	assert_int_equal(view.gp_put, (start + p) & mask);
	assert_int_equal((view.gp_put - view.gp_get) & mask, p);
	for (i = 0; i < room; i++)
		assert_int_equal(guest_submitter_submit(h->guest), 0);
	assert_int_equal(guest_submitter_submit(h->guest), -EAGAIN);

	/* Nothing can run yet: the drain times out and stays suspended. */
	assert_int_equal(vgpu_shadow_drain(h->shadow, 20), -ETIMEDOUT);
	assert_true(vgpu_shadow_is_suspended(h->shadow));
	assert_int_equal(guest_submitter_executed(h->guest), start);

	vgpu_hal_channel_set_fetch(h->channel, true);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	/* Drained means: everything queued before the suspension finished,
	 * nothing queued after it started. */
	assert_int_equal(guest_submitter_executed(h->guest), start + p);
	assert_gpu_idle_for(h, 5);

	assert_int_equal(resume(h), 0);
	wait_executed(h, start + p + room);
	assert_int_equal(shadow_harness_real_gp_get(h), (start + p + room) & mask);
	guest_submitter_read_view(h->guest, &view);
	assert_true(view.ring_matches);
	assert_int_equal(view.gp_get, view.gp_put);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

static void test_drain_waits_for_pending_entries(void **state)
{
	pending_then_fill(16, 1);
	pending_then_fill(16, 8);
	pending_then_fill(16, 14);
}

static void test_suspend_with_full_real_ring(void **state)
{
	pending_then_fill(16, 15);
	pending_then_fill(4, 3);
}

struct resume_call {
	struct vgpu_shadow_channel *shadow;
	int result;
	bool done; /* atomic */
};

static void *resume_thread(void *arg)
{
	struct resume_call *call = arg;

	call->result = vgpu_shadow_resume_timeout(call->shadow, WAIT_MS);
	__atomic_store_n(&call->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Resume without drain while the GPU cannot fetch: the fill finds the real
 * ring full (-ENOSPC) and must wait for GP_GET to move, not give up, not
 * spin out of order, and not let the guest's shadow entries run early.
 */
static void test_resume_waits_on_full_ring(void **state)
{
	struct shadow_harness *h = setup_harness(8, false);
	struct resume_call call = { .shadow = h->shadow };
	uint64_t start = guest_submitter_executed(h->guest);
	pthread_t thread;

	move_to_position(h, 5);
	start = guest_submitter_executed(h->guest);
	vgpu_hal_channel_set_fetch(h->channel, false);
	assert_int_equal(shadow_harness_submit(h, 4), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(shadow_harness_submit(h, 3), 0); /* into the shadow */

	assert_int_equal(pthread_create(&thread, NULL, resume_thread, &call), 0);
	harness_sleep_ms(30);
	assert_false(__atomic_load_n(&call.done, __ATOMIC_ACQUIRE));
	assert_true(vgpu_shadow_is_suspended(h->shadow));
	assert_true(guest_window_double_is_shadow(h->window, h->info.id));
	assert_int_equal(guest_submitter_executed(h->guest), start);

	vgpu_hal_channel_set_fetch(h->channel, true);
	assert_int_equal(pthread_join(thread, NULL), 0);
	assert_int_equal(call.result, 0);
	wait_executed(h, start + 7);
	assert_int_equal(shadow_harness_real_gp_get(h), (5 + 7) & 7);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* A resume that cannot finish in time leaves everything as it was and can be
 * repeated. */
static void test_resume_timeout_keeps_suspension(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct guest_submitter_view view;
	uint64_t start;

	assert_int_equal(shadow_harness_submit(h, 2), 0);
	wait_executed(h, 2);
	start = 2;
	vgpu_hal_channel_set_fetch(h->channel, false);
	assert_int_equal(shadow_harness_submit(h, 2), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(shadow_harness_submit(h, 1), 0);

	assert_int_equal(vgpu_shadow_resume_timeout(h->shadow, 20), -ETIMEDOUT);
	assert_true(vgpu_shadow_is_suspended(h->shadow));
	guest_submitter_read_view(h->guest, &view);
	assert_true(view.shadow);
	assert_int_equal(view.gp_get, 2);
	assert_true(view.ring_matches);
	assert_int_equal(shadow_harness_submit(h, 2), 0); /* guest carries on */
	assert_int_equal(guest_submitter_executed(h->guest), start);

	vgpu_hal_channel_set_fetch(h->channel, true);
	assert_int_equal(resume(h), 0);
	wait_executed(h, start + 5);
	assert_int_equal(shadow_harness_real_gp_get(h), 7);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* Suspended work stays suspended however long the suspension lasts, even
 * with a lot of it. */
static void test_nothing_runs_while_suspended(void **state)
{
	struct shadow_harness *h = setup_harness(64, false);

	assert_int_equal(shadow_harness_submit(h, 10), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(guest_submitter_executed(h->guest), 10);
	assert_int_equal(shadow_harness_submit(h, 50), 0);
	assert_gpu_idle_for(h, 50);
	assert_int_equal(resume(h), 0);
	wait_executed(h, 60);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* Killed before the suspension: no fence needed, drain and resume return at
 * once, resume reports -EIO and the guest gets its own view back. */
static void test_killed_before_suspend(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct guest_submitter_view view;
	struct vgpu_shadow_stats stats;

	assert_int_equal(shadow_harness_submit(h, 2), 0);
	assert_int_equal(shadow_harness_submit_fault(h), 0);
	assert_int_equal(shadow_harness_submit(h, 1), 0);
	wait_killed(h);
	wait_executed(h, 2);

	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(shadow_harness_submit(h, 2), 0);
	assert_int_equal(resume(h), -EIO);
	assert_false(vgpu_shadow_is_suspended(h->shadow));

	guest_submitter_read_view(h->guest, &view);
	assert_false(view.shadow);
	assert_int_equal(view.gp_put, guest_submitter_put(h->guest));
	assert_true(view.ring_matches);
	harness_sleep_ms(5);
	assert_int_equal(guest_submitter_executed(h->guest), 2);
	vgpu_shadow_stats(h->shadow, &stats);
	assert_int_equal(stats.channel_errors, 1);
	assert_int_equal(stats.nop_entries, 0);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/*
 * Killed while suspended, by an entry queued before the suspension: the drain
 * counts it as drained (with or without the core forwarding the error event),
 * resume does not hang waiting for a GP_GET that never moves, and reports.
 */
static void killed_while_suspended(bool forward_errors)
{
	struct shadow_harness *h = setup_harness(16, forward_errors);
	struct guest_submitter_view view;
	uint64_t start_ns;

	vgpu_hal_channel_set_fetch(h->channel, false);
	assert_int_equal(shadow_harness_submit(h, 1), 0);
	assert_int_equal(shadow_harness_submit_fault(h), 0);
	assert_int_equal(shadow_harness_submit(h, 1), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(shadow_harness_submit(h, 3), 0); /* into the shadow */

	start_ns = harness_now_ns();
	vgpu_hal_channel_set_fetch(h->channel, true);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(vgpu_hal_channel_state(h->channel, NULL), VGPU_CHANNEL_ERROR);
	assert_int_equal(resume(h), -EIO);
	assert_true(harness_now_ns() - start_ns < 2000000000ull);
	assert_false(vgpu_shadow_is_suspended(h->shadow));

	guest_submitter_read_view(h->guest, &view);
	assert_false(view.shadow);
	assert_int_equal(view.gp_put, guest_submitter_put(h->guest));
	assert_true(view.ring_matches);
	harness_sleep_ms(5);
	assert_int_equal(guest_submitter_executed(h->guest), 1);
	assert_guest_view_clean(h);

	/* Suspending a dead channel again still works and reports. */
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(resume(h), -EIO);
	shadow_harness_teardown(h);
}

static void test_killed_while_suspended(void **state)
{
	killed_while_suspended(false);
	killed_while_suspended(true);
}

/* Destroying a suspended shadow resumes it: the guest's submissions made
 * while suspended still run, once. */
static void test_destroy_resumes(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct guest_submitter_view view;
	struct vgpu_shadow_channel *shadow = h->shadow;

	assert_int_equal(shadow_harness_submit(h, 2), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(shadow_harness_submit(h, 3), 0);
	vgpu_hal_set_event_handler(h->hal, NULL, NULL);
	__atomic_store_n(&h->shadow, NULL, __ATOMIC_RELEASE);
	vgpu_shadow_channel_destroy(shadow);

	wait_executed(h, 5);
	guest_submitter_read_view(h->guest, &view);
	assert_false(view.shadow);
	assert_true(view.ring_matches);
	assert_int_equal(view.gp_get, 5);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	shadow_harness_teardown(h);
}

/* A second guest channel in the harness's address space and window double. */
struct extra_channel {
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	struct vgpu_shadow_channel *shadow;
	struct guest_submitter *guest;
};

static void extra_channel_create(struct shadow_harness *h, unsigned n, uint32_t entries,
                                 struct extra_channel *extra)
{
	struct guest_submitter_config config = {
		.hal = h->hal,
		.as = h->as,
		.window = h->window,
		.info = &extra->info,
		.max_submissions = 256,
		.alloc_memory = true,
		.data_va = HARNESS_EXTRA_VA(n),
		.pushbuffer_va = HARNESS_EXTRA_VA(n) + 0x80000000ull,
	};

	assert_int_equal(vgpu_hal_channel_create(h->as, entries, &extra->channel, &extra->info), 0);
	assert_int_equal(guest_window_double_attach(h->window, &extra->info), 0);
	assert_int_equal(vgpu_shadow_channel_create(extra->channel, &extra->info,
	                                            guest_window_double_ops(), h->window,
	                                            &extra->shadow),
	                 0);
	shadow_harness_forward(h, extra->info.id, extra->shadow);
	assert_int_equal(guest_submitter_create(&config, &extra->guest), 0);
}

/* Call after vgpu_hal_set_event_handler(NULL): no delivery may be running. */
static void extra_channel_destroy(struct shadow_harness *h, struct extra_channel *extra)
{
	shadow_harness_forward(h, extra->info.id, NULL);
	vgpu_shadow_channel_destroy(extra->shadow);
	vgpu_hal_channel_destroy(extra->channel);
	guest_submitter_destroy(extra->guest);
	guest_window_double_detach(h->window, extra->info.id);
}

/*
 * Channel A's work queued before the suspension waits (SEMAPHORE_ACQUIRE) for
 * a release the guest submits to channel B while both are suspended. A cannot
 * drain, and its NOP fill cannot finish until B runs: resuming A alone would
 * wait forever. vgpu_shadow_resume_all resumes both, in turns.
 */
static void test_resume_all_untangles_cross_channel_wait(void **state)
{
	struct shadow_harness *h = setup_harness(16, false);
	struct extra_channel b;
	struct vgpu_shadow_channel *both[3];
	struct guest_submitter_view view;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t semaphore = guest_submitter_scratch_va(h->guest);
	char why[256];

	extra_channel_create(h, 0, 8, &b);
	both[0] = h->shadow;
	both[1] = NULL;
	both[2] = b.shadow;

	assert_int_equal(shadow_harness_submit(h, 1), 0);
	assert_int_equal(guest_submitter_submit_raw(h->guest, words,
	                                            vgpu_push_semaphore_acquire(words, semaphore,
	                                                                        1)),
	                 0);
	assert_int_equal(shadow_harness_submit(h, 1), 0);
	wait_executed(h, 1);

	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	assert_int_equal(vgpu_shadow_suspend(b.shadow), 0);
	assert_int_equal(shadow_harness_submit(h, 2), 0); /* into A's shadow */
	assert_int_equal(guest_submitter_submit_raw(b.guest, words,
	                                            vgpu_push_semaphore_release(words, semaphore,
	                                                                        1, false)),
	                 0); /* into B's shadow */

	assert_int_equal(vgpu_shadow_drain(b.shadow, WAIT_MS), 0);
	assert_int_equal(vgpu_shadow_drain(h->shadow, 30), -ETIMEDOUT);
	assert_int_equal(vgpu_shadow_resume_timeout(h->shadow, 30), -ETIMEDOUT);
	assert_true(vgpu_shadow_is_suspended(h->shadow));
	assert_int_equal(guest_submitter_executed(h->guest), 1);

	assert_int_equal(vgpu_shadow_resume_all(both, 3, WAIT_MS), 0);
	assert_false(vgpu_shadow_is_suspended(h->shadow));
	assert_false(vgpu_shadow_is_suspended(b.shadow));
	wait_executed(h, 4);
	guest_submitter_read_view(h->guest, &view);
	assert_int_equal(view.gp_get, guest_submitter_put(h->guest));
	assert_true(view.ring_matches);
	assert_log_ok(h);
	assert_guest_view_clean(h);
	if (guest_submitter_view_errors(b.guest, why, sizeof(why)))
		fail_msg("channel B's guest view violated: %s", why);
	assert_int_equal(vgpu_shadow_resume_all(both, 3, 0), 0); /* nothing suspended */

	vgpu_hal_set_event_handler(h->hal, NULL, NULL);
	extra_channel_destroy(h, &b);
	shadow_harness_teardown(h);
}

/* Stats: the suspension is counted in wall time, the guest only waits for
 * the block..map windows. */
static void test_stats_measure_blocked_time(void **state)
{
	struct shadow_harness *h = setup_harness(64, false);
	struct vgpu_shadow_stats stats;

	assert_int_equal(shadow_harness_submit(h, 5), 0);
	assert_int_equal(vgpu_shadow_suspend(h->shadow), 0);
	harness_sleep_ms(30);
	vgpu_shadow_stats(h->shadow, &stats);
	assert_true(stats.suspended_ns >= 30000000ull); /* includes the running one */
	assert_int_equal(vgpu_shadow_drain(h->shadow, WAIT_MS), 0);
	assert_int_equal(resume(h), 0);

	vgpu_shadow_stats(h->shadow, &stats);
	assert_int_equal(stats.suspensions, 1);
	assert_int_equal(stats.resumes, 1);
	assert_true(stats.suspended_ns >= 30000000ull);
	assert_true(stats.guest_blocked_ns > 0);
	assert_true(stats.guest_blocked_max_ns <= stats.guest_blocked_ns);
	assert_true(stats.guest_blocked_ns * 10 < stats.suspended_ns);
	assert_true(stats.fill_ns < stats.suspended_ns);
	print_message("suspended %llu us, guest blocked %llu us (max window %llu us), fill %llu us\n",
	              (unsigned long long)stats.suspended_ns / 1000,
	              (unsigned long long)stats.guest_blocked_ns / 1000,
	              (unsigned long long)stats.guest_blocked_max_ns / 1000,
	              (unsigned long long)stats.fill_ns / 1000);
	shadow_harness_teardown(h);
}

/* A failed assertion leaves the harness up: take it down. */
static int teardown_leftover(void **state)
{
	if (harness.hal)
		shadow_harness_teardown(&harness);
	return 0;
}

#define SHADOW_TEST(fn) cmocka_unit_test_teardown(fn, teardown_leftover)

int main(void)
{
	const struct CMUnitTest tests[] = {
		SHADOW_TEST(test_create_validates_arguments),
		SHADOW_TEST(test_misuse_is_reported),
		SHADOW_TEST(test_idle_guest),
		SHADOW_TEST(test_nop_fill_restores_gp_get_at_every_position),
		SHADOW_TEST(test_nop_fill_two_entry_ring),
		SHADOW_TEST(test_drain_waits_for_pending_entries),
		SHADOW_TEST(test_suspend_with_full_real_ring),
		SHADOW_TEST(test_resume_waits_on_full_ring),
		SHADOW_TEST(test_resume_timeout_keeps_suspension),
		SHADOW_TEST(test_nothing_runs_while_suspended),
		SHADOW_TEST(test_killed_before_suspend),
		SHADOW_TEST(test_killed_while_suspended),
		SHADOW_TEST(test_destroy_resumes),
		SHADOW_TEST(test_resume_all_untangles_cross_channel_wait),
		SHADOW_TEST(test_stats_measure_blocked_time),
	};

	return cmocka_run_group_tests_name("shadow", tests, NULL, NULL);
}
