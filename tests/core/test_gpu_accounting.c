// SPDX-License-Identifier: MIT
/*
 * test_gpu_accounting.c - the accounting thread on a paced simgpu (LoGA
 * §4-5): GPU time measured through the HAL's status reads only, and shares
 * enforced by throttling through the shadow windows.
 *
 * Each tenant is a thread driving a guest channel: THROTTLE kernels of a
 * given length (two in flight, as an application keeps its queue fed), and
 * between them the guest double's ordered submissions, which check that
 * nothing was lost or reordered while the channel was throttled. The
 * referee is simgpu's per-address-space busy time (ground truth, which
 * the accounting never reads). The last test runs NEON's sampling mode.
 * Runs are short (about a second each), so
 * the bounds are generous; the precise figures are the benchmark's.
 * test_sampled_alone_then_polled shows the sampled phases: one VM at work
 * is accounted without busy-polling, and polling resumes, splitting the
 * time, as soon as a second VM works.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core_harness.h"
#include "guest_double.h"
#include "vgpu/abi/commands.h"

#define RUN_MS 1200
#define WARMUP_MS 200
#define LOG_SUBMISSIONS 16384
/* The measured part of a run. */
#define RUN_WALL_NS ((RUN_MS - WARMUP_MS - 100) * 1000000.0)

struct acct_tenant {
	struct core_harness *harness;
	struct harness_guest guest;
	uint64_t kernel_ns;
	uint64_t gap_us;
	uint64_t end_ns;
	uint64_t kernels;
	uint64_t throttled_seen; /* iterations that found the channel shadowed */
	int error;
	pthread_t thread;
};

static void sleep_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t semaphore(struct acct_tenant *t)
{
	uint64_t value = 0;

	vgpu_hal_as_read(vgpu_core_vm_address_space(t->guest.vm), t->guest.semaphore_va, &value,
	                 sizeof(value));
	return value;
}

static void *tenant_main(void *arg)
{
	struct acct_tenant *t = arg;
	uint32_t words[64];

	while (harness_now_ns() < t->end_ns) {
		uint32_t n = vgpu_push_launch_throttle(words, t->kernel_ns);
		int err;

		t->guest.sequence++;
		n += vgpu_push_semaphore_release(words + n, t->guest.semaphore_va, t->guest.sequence,
		                                 false);
		while ((err = guest_submitter_submit_raw(t->guest.submitter, words, n)) == -EAGAIN)
			sleep_us(50);
		if (err == -ENOSPC) /* no pushbuffer left: the run ends here */
			return NULL;
		if (err) {
			t->error = err;
			return NULL;
		}
		/* an ordered submission too, while the log has room */
		err = guest_submitter_submit(t->guest.submitter);
		if (err && err != -ENOSPC && err != -EAGAIN) {
			t->error = err;
			return NULL;
		}
		if (guest_window_double_is_shadow(t->guest.window, t->guest.info.id))
			t->throttled_seen++;
		__atomic_fetch_add(&t->kernels, 1, __ATOMIC_RELAXED); /* read while it runs */
		/* two kernels in flight; wait for the older one */
		while (semaphore(t) + 2 <= t->guest.sequence && harness_now_ns() < t->end_ns + 5e9)
			sleep_us(20);
		if (t->gap_us)
			sleep_us((unsigned)t->gap_us);
	}
	return NULL;
}

static void tenant_setup(struct core_harness *h, struct acct_tenant *t, const char *name,
			 const char *mode, uint32_t weight, uint64_t kernel_us, uint64_t gap_us)
{
	struct vgpu_vm *vm = harness_vm(h, name, weight, 0, 0);

	memset(t, 0, sizeof(*t));
	t->harness = h;
	t->kernel_ns = kernel_us * 1000;
	t->gap_us = gap_us;
	assert_int_equal(vgpu_core_vm_set_scheduler(vm, mode, NULL), 0);
	harness_guest_setup(h, vm, &t->guest, LOG_SUBMISSIONS, 0, 1);
}

static uint64_t busy_ns(struct acct_tenant *t)
{
	struct vgpu_hal_as_counters counters;

	vgpu_hal_as_counters(vgpu_core_vm_address_space(t->guest.vm), &counters);
	return counters.busy_ns[VGPU_ENGINE_COMPUTE];
}

/* Wait for the tenant's thread, then check its log: its submissions ran
 * once each, in order. */
static void tenant_finish(struct acct_tenant *t)
{
	uint64_t submitted;
	char why[256];

	pthread_join(t->thread, NULL);
	assert_int_equal(t->error, 0);
	submitted = guest_submitter_submitted(t->guest.submitter);
	assert_int_equal(guest_submitter_wait_executed(t->guest.submitter, submitted, 30000), 0);
	if (guest_submitter_verify(t->guest.submitter, why, sizeof(why)))
		fail_msg("%s: %s", vgpu_core_vm_name(t->guest.vm), why);
	if (guest_submitter_view_errors(t->guest.submitter, why, sizeof(why)))
		fail_msg("%s: guest view: %s", vgpu_core_vm_name(t->guest.vm), why);
	assert_true(submitted > 0);
}

struct run_result {
	double truth_share[4];    /* of the busy time, ground truth */
	double truth_fraction[4]; /* of the wall time */
	double accounted_share[4];
	uint64_t accounted_ns[4], truth_ns[4];
};

/* Run the tenants for RUN_MS, measure after WARMUP_MS, then check every
 * guest's log: its submissions ran once each, in order. */
static void run(struct acct_tenant *tenants, size_t count, struct run_result *out)
{
	uint64_t truth0[4], acct0[4], start, wall, truth_total = 0, acct_total = 0;

	start = harness_now_ns();
	for (size_t i = 0; i < count; i++) {
		tenants[i].end_ns = start + RUN_MS * 1000000ull;
		assert_int_equal(pthread_create(&tenants[i].thread, NULL, tenant_main, &tenants[i]),
		                 0);
	}
	harness_sleep_ms(WARMUP_MS);
	start = harness_now_ns();
	for (size_t i = 0; i < count; i++) {
		truth0[i] = busy_ns(&tenants[i]);
		acct0[i] = harness_stats(tenants[i].guest.vm).gpu_time_ns;
	}
	harness_sleep_ms(RUN_MS - WARMUP_MS - 100);
	wall = harness_now_ns() - start;
	for (size_t i = 0; i < count; i++) {
		out->truth_ns[i] = busy_ns(&tenants[i]) - truth0[i];
		out->accounted_ns[i] = harness_stats(tenants[i].guest.vm).gpu_time_ns - acct0[i];
		truth_total += out->truth_ns[i];
		acct_total += out->accounted_ns[i];
	}
	for (size_t i = 0; i < count; i++) {
		out->truth_share[i] = truth_total ? (double)out->truth_ns[i] / truth_total : 0;
		out->truth_fraction[i] = (double)out->truth_ns[i] / wall;
		out->accounted_share[i] = acct_total ? (double)out->accounted_ns[i] / acct_total : 0;
		printf("  %s: ground truth %.1f ms (%.0f%% of the GPU time, %.0f%% of %.0f ms), "
		       "accounted %.1f ms (%.0f%%), %llu kernels, throttled %llu times\n",
		       vgpu_core_vm_name(tenants[i].guest.vm), out->truth_ns[i] / 1e6,
		       100 * out->truth_share[i], 100 * out->truth_fraction[i], wall / 1e6,
		       out->accounted_ns[i] / 1e6, 100 * out->accounted_share[i],
		       (unsigned long long)__atomic_load_n(&tenants[i].kernels, __ATOMIC_RELAXED),
		       (unsigned long long)harness_stats(tenants[i].guest.vm).throttles);
	}
	for (size_t i = 0; i < count; i++)
		tenant_finish(&tenants[i]);
}

static void setup_mode(struct core_harness *h, uint32_t timeslice_ns, uint32_t mode)
{
	struct core_harness_config config = {
		.vram_bytes = 256 * MiB,
		.paced = true,
		.timeslice_ns = timeslice_ns,
		.gpu_accounting = true,
		.accounting_mode = mode,
		.drain_timeout_ms = 10000,
	};

	core_harness_setup(h, &config);
}

static void setup(struct core_harness *h, uint32_t timeslice_ns)
{
	setup_mode(h, timeslice_ns, VGPU_ACCOUNTING_LOGA);
}

static void teardown(struct core_harness *h, struct acct_tenant *tenants, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		assert_false(harness_stats(tenants[i].guest.vm).throttled &&
		             harness_stats(tenants[i].guest.vm).scheduler[0] == 'b');
		harness_guest_teardown(&tenants[i].guest);
	}
	harness_assert_invariants(h);
	core_harness_teardown(h);
}

/* One VM alone: the accounted time follows the ground truth, and a
 * best-effort VM is never throttled. The accounting sees the register in
 * wall time; on a loaded host paced simgpu runs late (a turn's wall time
 * exceeds its modeled time), so the bound is a factor of two. */
static void test_accounting_follows_ground_truth(void **state)
{
	struct core_harness h;
	struct acct_tenant t[1];
	struct run_result r;

	setup(&h, 0);
	tenant_setup(&h, &t[0], "alone", "best-effort", 1, 500, 0);
	run(t, 1, &r);
	assert_true(r.truth_ns[0] > 0);
	assert_true(r.accounted_ns[0] > 0.5 * r.truth_ns[0]);
	assert_true(r.accounted_ns[0] < 2.0 * r.truth_ns[0]);
	assert_int_equal(harness_stats(t[0].guest.vm).throttles, 0);
	assert_string_equal(harness_stats(t[0].guest.vm).scheduler, "best-effort");
	teardown(&h, t, 1);
}

/*
 * A long-kernel VM and a short-kernel VM on a GPU that does not split
 * kernels (a 10 ms time slice): per-command round robin favours the long
 * kernels (best-effort); equal-share evens the GPU time out.
 */
static void test_equal_share(void **state)
{
	struct core_harness h;
	struct acct_tenant t[2];
	struct run_result best, equal;

	printf("best-effort:\n");
	setup(&h, 10000000);
	tenant_setup(&h, &t[0], "long", "best-effort", 1, 2000, 0);
	tenant_setup(&h, &t[1], "short", "best-effort", 1, 200, 0);
	run(t, 2, &best);
	teardown(&h, t, 2);

	printf("equal-share:\n");
	setup(&h, 10000000);
	tenant_setup(&h, &t[0], "long", "equal-share", 1, 2000, 0);
	tenant_setup(&h, &t[1], "short", "equal-share", 1, 200, 0);
	run(t, 2, &equal);
	assert_true(harness_stats(t[0].guest.vm).throttles > 0);
	assert_true(harness_stats(t[0].guest.vm).throttled_ns > 0);
	teardown(&h, t, 2);

	/* The scheduler evens out what it measures (the register in wall
	 * time); the ground truth (modeled time) moves the same way. On a
	 * loaded host the two differ (a late turn shows in wall time, most
	 * for short kernels), hence the two checks and the wide bounds. */
	assert_true(best.truth_share[0] > 0.7);
	assert_true(best.accounted_share[0] > 0.7);
	assert_true(equal.accounted_share[0] < 0.75);
	assert_true(equal.accounted_share[0] > 0.3);
	assert_true(equal.accounted_share[0] < best.accounted_share[0] - 0.1);
	assert_true(equal.truth_share[0] < best.truth_share[0] - 0.05);
}

/* Fixed share: two fixed-share VMs of equal weight, one of them idle; the
 * busy one gets about half the GPU, not all of it. */
static void test_fixed_share_caps(void **state)
{
	struct core_harness h;
	struct acct_tenant t[1];
	struct run_result r;
	struct vgpu_vm *idle;

	setup(&h, 0);
	tenant_setup(&h, &t[0], "capped", "fixed-share", 1, 500, 0);
	idle = harness_vm(&h, "idle", 1, 0, 0);
	assert_int_equal(vgpu_core_vm_set_scheduler(idle, "fixed-share", NULL), 0);
	run(t, 1, &r);
	assert_true(harness_stats(t[0].guest.vm).throttles > 0);
	/* about half of the wall time, as measured and in truth (a loaded
	 * host makes the truth lag: no lower bound on it) */
	assert_true(r.truth_fraction[0] < 0.7);
	assert_true(r.accounted_ns[0] < 0.7 * RUN_WALL_NS);
	assert_true(r.accounted_ns[0] > 0.1 * RUN_WALL_NS);
	assert_true(t[0].kernels > 20);
	assert_true(t[0].throttled_seen > 0); /* it submitted while throttled */
	vgpu_core_vm_destroy(idle);
	teardown(&h, t, 1);
}

/*
 * An eviction while the victim is throttled: the relocation finds the
 * victim's channels suspended by the accounting thread, takes them over and
 * resumes them with the others. Nothing is lost or reordered, the data
 * moves intact, the invariants hold.
 */
struct evictor {
	struct vgpu_vm *vm;
	struct vgpu_buffer_info buffer;
	int err;
	unsigned delay_ms;
};

static void *evict_main(void *arg)
{
	struct evictor *e = arg;

	harness_sleep_ms(e->delay_ms);
	e->err = vgpu_core_alloc(e->vm, 112 * MiB, VGPU_PRIORITY_DEFAULT, 0, &e->buffer, NULL);
	return NULL;
}

static void test_eviction_while_throttled(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct core_harness h;
	struct acct_tenant t[2];
	struct run_result r;
	struct vgpu_buffer_info data;
	struct evictor e = { .delay_ms = 500 };
	pthread_t thread;

	setup(&h, 10000000);
	tenant_setup(&h, &t[0], "long", "equal-share", 1, 2000, 0);
	tenant_setup(&h, &t[1], "short", "equal-share", 1, 200, 0);
	/* long holds the most: the victim of short's allocation */
	assert_int_equal(vgpu_core_alloc(t[0].guest.vm, 160 * MiB, VGPU_PRIORITY_DEFAULT, 0, &data,
	                                 &error),
	                 0);
	harness_fill(t[0].guest.vm, &data, 77);
	e.vm = t[1].guest.vm;
	assert_int_equal(pthread_create(&thread, NULL, evict_main, &e), 0);
	run(t, 2, &r);
	pthread_join(thread, NULL);
	if (e.err)
		fail_msg("allocation: %s", vgpu_error_msg(&error));
	assert_true(harness_stats(t[0].guest.vm).evictions > 0);
	assert_true(harness_stats(t[0].guest.vm).throttles > 0);
	assert_true(harness_check(t[0].guest.vm, &data, 77));
	assert_int_equal(vgpu_core_free(t[1].guest.vm, e.buffer.handle, &error), 0);
	assert_int_equal(vgpu_core_free(t[0].guest.vm, data.handle, &error), 0);
	teardown(&h, t, 2);
}

/*
 * NEON's sampling accounting (gpu_accounting_neon.c): every VM's channels
 * are suspended and resumed twice per period while the guests keep
 * submitting and an eviction relocates one of them (taking its sampling
 * suspension over). Nothing is lost or reordered, the data survives, and
 * both VMs are accounted, together about the run's length (NEON's estimate
 * splits each period by average command length, taking the GPU as busy).
 * How it splits is not asserted: on a loaded host a sampling interval of
 * 1 ms holds a few commands at best (the benchmark compares NEON's
 * overhead with LoGA's).
 */
static void test_neon_sampling(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct core_harness h;
	struct acct_tenant t[2];
	struct run_result r;
	struct vgpu_buffer_info data;
	struct evictor e = { .delay_ms = 500 };
	pthread_t thread;

	setup_mode(&h, 10000000, VGPU_ACCOUNTING_NEON);
	tenant_setup(&h, &t[0], "long", "best-effort", 1, 2000, 0);
	tenant_setup(&h, &t[1], "short", "best-effort", 1, 200, 0);
	assert_int_equal(vgpu_core_alloc(t[0].guest.vm, 160 * MiB, VGPU_PRIORITY_DEFAULT, 0, &data,
	                                 &error),
	                 0);
	harness_fill(t[0].guest.vm, &data, 78);
	e.vm = t[1].guest.vm;
	assert_int_equal(pthread_create(&thread, NULL, evict_main, &e), 0);
	run(t, 2, &r);
	pthread_join(thread, NULL);
	if (e.err)
		fail_msg("allocation: %s", vgpu_error_msg(&error));
	assert_true(harness_stats(t[0].guest.vm).evictions > 0);
	assert_true(harness_check(t[0].guest.vm, &data, 78));
	assert_true(r.accounted_ns[0] > 0);
	assert_true(r.accounted_ns[1] > 0);
	assert_true(r.accounted_ns[0] + r.accounted_ns[1] > 0.3 * RUN_WALL_NS);
	assert_true(r.accounted_ns[0] + r.accounted_ns[1] < 2.0 * RUN_WALL_NS);
	assert_int_equal(harness_stats(t[0].guest.vm).throttles, 0);
	assert_int_equal(vgpu_core_free(t[1].guest.vm, e.buffer.handle, &error), 0);
	assert_int_equal(vgpu_core_free(t[0].guest.vm, data.handle, &error), 0);
	teardown(&h, t, 2);
}

static struct vgpu_core_stats core_stats(struct core_harness *h)
{
	struct vgpu_core_stats stats;

	vgpu_core_stats(h->core, &stats);
	return stats;
}

/*
 * The sampled phases (gpu_accounting.h). One VM at work, about a third of
 * the time (400 us kernels, 1 ms gaps): nothing to split, so the thread
 * samples instead of polling, and still gives the VM its GPU time (against
 * the modeled busy time, the ground truth, within the bounds of a loaded
 * host). Then a second VM starts: the next samples find its work and
 * polling resumes at once, and the two are split as the ground truth has
 * them. With accounting_always_poll, one VM alone is polled as before.
 */
static void test_sampled_alone_then_polled(void **state)
{
	struct core_harness_config config = {
		.vram_bytes = 256 * MiB,
		.paced = true,
		.timeslice_ns = 10000000,
		.gpu_accounting = true,
		.drain_timeout_ms = 10000,
	};
	struct core_harness h;
	struct acct_tenant t[2];
	struct vgpu_core_stats c0, c1;
	uint64_t truth[2], acct[2], truth0[2], acct0[2], start, wall, waited_ns;
	double truth_share, acct_share;

	core_harness_setup(&h, &config);
	tenant_setup(&h, &t[0], "first", "equal-share", 1, 400, 1000);
	tenant_setup(&h, &t[1], "second", "equal-share", 1, 200, 0);
	start = harness_now_ns();
	t[0].end_ns = start + 1800 * 1000000ull;
	t[1].end_ns = t[0].end_ns;
	assert_int_equal(pthread_create(&t[0].thread, NULL, tenant_main, &t[0]), 0);

	/* (a) alone: sampled, and accounted */
	harness_sleep_ms(200);
	c0 = core_stats(&h);
	truth0[0] = busy_ns(&t[0]);
	acct0[0] = harness_stats(t[0].guest.vm).gpu_time_ns;
	start = harness_now_ns();
	harness_sleep_ms(600);
	c1 = core_stats(&h);
	wall = harness_now_ns() - start;
	truth[0] = busy_ns(&t[0]) - truth0[0];
	acct[0] = harness_stats(t[0].guest.vm).gpu_time_ns - acct0[0];
	printf("  alone: ground truth %.1f ms (%.0f%% of %.0f ms), accounted %.1f ms; polled "
	       "%.1f ms, sampled %.1f ms\n",
	       truth[0] / 1e6, 100.0 * truth[0] / wall, wall / 1e6, acct[0] / 1e6,
	       (c1.accounting_poll_ns - c0.accounting_poll_ns) / 1e6,
	       (c1.accounting_sampled_ns - c0.accounting_sampled_ns) / 1e6);
	assert_true(truth[0] > wall / 5); /* it did work */
	assert_true(c1.accounting_sampled_ns - c0.accounting_sampled_ns > wall / 2);
	assert_true(c1.accounting_poll_ns - c0.accounting_poll_ns < wall / 25);
	assert_true(acct[0] > 0.6 * truth[0]);
	assert_true(acct[0] < 1.6 * truth[0]);

	/* (b) a second VM: polling again, from about its first kernel on */
	c0 = core_stats(&h);
	start = harness_now_ns();
	assert_int_equal(pthread_create(&t[1].thread, NULL, tenant_main, &t[1]), 0);
	while (core_stats(&h).accounting_poll_ns == c0.accounting_poll_ns &&
	       harness_now_ns() - start < 2000000000ull)
		sleep_us(100);
	waited_ns = harness_now_ns() - start;
	printf("  second VM started: polling after %.1f ms\n", waited_ns / 1e6);
	assert_true(waited_ns < 100000000ull);
	harness_sleep_ms(100);
	c0 = core_stats(&h);
	for (int i = 0; i < 2; i++) {
		truth0[i] = busy_ns(&t[i]);
		acct0[i] = harness_stats(t[i].guest.vm).gpu_time_ns;
	}
	start = harness_now_ns();
	harness_sleep_ms(600);
	c1 = core_stats(&h);
	wall = harness_now_ns() - start;
	for (int i = 0; i < 2; i++) {
		truth[i] = busy_ns(&t[i]) - truth0[i];
		acct[i] = harness_stats(t[i].guest.vm).gpu_time_ns - acct0[i];
		printf("  %s: ground truth %.1f ms, accounted %.1f ms\n",
		       vgpu_core_vm_name(t[i].guest.vm), truth[i] / 1e6, acct[i] / 1e6);
	}
	printf("  together: polled %.1f ms, sampled %.1f ms of %.0f ms\n",
	       (c1.accounting_poll_ns - c0.accounting_poll_ns) / 1e6,
	       (c1.accounting_sampled_ns - c0.accounting_sampled_ns) / 1e6, wall / 1e6);
	/* polling about 1 ms of every 6 (2 channels: 2 of 12) */
	assert_true(c1.accounting_poll_ns - c0.accounting_poll_ns > wall / 12);
	assert_true(c1.accounting_sampled_ns - c0.accounting_sampled_ns < wall / 10);
	assert_true(truth[0] > 0 && truth[1] > 0);
	assert_true(acct[0] > 0 && acct[1] > 0);
	truth_share = (double)truth[0] / (double)(truth[0] + truth[1]);
	acct_share = (double)acct[0] / (double)(acct[0] + acct[1]);
	printf("  first's share: ground truth %.2f, accounted %.2f\n", truth_share, acct_share);
	assert_true(acct_share > truth_share - 0.15 && acct_share < truth_share + 0.15);
	for (int i = 0; i < 2; i++)
		tenant_finish(&t[i]);
	teardown(&h, t, 2);

	/* always poll: one VM alone is polled, never sampled */
	config.accounting_always_poll = true;
	core_harness_setup(&h, &config);
	tenant_setup(&h, &t[0], "first", "best-effort", 1, 500, 500);
	t[0].end_ns = harness_now_ns() + 600 * 1000000ull;
	assert_int_equal(pthread_create(&t[0].thread, NULL, tenant_main, &t[0]), 0);
	harness_sleep_ms(100);
	c0 = core_stats(&h);
	start = harness_now_ns();
	harness_sleep_ms(400);
	c1 = core_stats(&h);
	wall = harness_now_ns() - start;
	assert_int_equal(c1.accounting_sampled_ns, 0);
	assert_true(c1.accounting_poll_ns - c0.accounting_poll_ns > wall / 12);
	tenant_finish(&t[0]);
	teardown(&h, t, 1);
}

static void test_set_scheduler_rejects_unknown(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct core_harness h;
	struct core_harness_config config = { .vram_bytes = 64 * MiB };
	struct vgpu_vm *vm;

	core_harness_setup(&h, &config);
	vm = harness_vm(&h, "vm", 1, 0, 0);
	assert_string_equal(harness_stats(vm).scheduler, "best-effort");
	assert_int_equal(vgpu_core_vm_set_scheduler(vm, "fastest", &error), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&error), "fastest"));
	assert_int_equal(vgpu_core_vm_set_scheduler(vm, "weighted", &error), 0);
	assert_string_equal(harness_stats(vm).scheduler, "weighted");
	/* accounting off: no GPU time, never throttled */
	assert_int_equal(harness_stats(vm).gpu_time_ns, 0);
	assert_false(harness_stats(vm).throttled);
	core_harness_teardown(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_scheduler_rejects_unknown),
		cmocka_unit_test(test_accounting_follows_ground_truth),
		cmocka_unit_test(test_equal_share),
		cmocka_unit_test(test_fixed_share_caps),
		cmocka_unit_test(test_eviction_while_throttled),
		cmocka_unit_test(test_neon_sampling),
		cmocka_unit_test(test_sampled_alone_then_polled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
