// SPDX-License-Identifier: MIT
/*
 * loga-bench - LoGA §5 (seed 002) on a paced simgpu, through the core's
 * accounting thread (issue 15). Every tenant is a throttle (§5.2): a
 * THROTTLE kernel of a given length, waited for, then an idle gap.
 *
 *   loga_kernel_length_error_max  §5.4, Fig. 9: one throttle with kernels
 *       of 100 .. 1000 us back to back, polling 100% of the time; the
 *       accounted GPU time ÷ kernels run against the time each kernel
 *       held the engine (the wall time simgpu's current-channel register
 *       named the throttle's channel, resident_wall_ns ÷ kernels: on a
 *       GPU that is the kernel's length; here the simulated GPU is a host
 *       thread, and a host that delays it stretches a kernel in wall time
 *       beyond its modeled length). The largest relative error over the
 *       lengths: the accounting's own error, the seed's Fig. 9.
 *   loga_kernel_length_error_vs_modeled_max  the same against the
 *       modeled kernel length: the accounting's error plus the host's
 *       delays of the simulated GPU.
 *   loga_load_error_max  §5.4, Fig. 10: cycles of 1000 us holding one
 *       kernel of 100 .. 1000 us, polling 100%: accounted time ÷ wall time
 *       against the engine's real load (resident_wall_ns ÷ wall time). The
 *       largest absolute error; loga_load_error_vs_intended_max against
 *       the intended load (kernel length ÷ 1000 us).
 *   loga_overhead  §5.3: an application (kernels of 500 us back to back)
 *       beside 10 throttles of 10 us kernels and 1000 us gaps, scheduling
 *       off (best-effort): its turnaround with the accounting thread at
 *       1 ms : 5 ms per channel ÷ without it, minus 1. On a host with two
 *       CPUs or more the overhead runs (also Fig. 8's) give the accounting
 *       thread CPU 1 (config.accounting_pin) and everything else CPU 0,
 *       with the accounting thread and without: the seed's polling thread
 *       had a core of its own and its GPU needs none, while simgpu's GPU is
 *       itself a host thread that a busy poller would otherwise slow down
 *       (loga_overhead_shared_cpus: the same run unpinned).
 *   neon_overhead  §5.3: the same with NEON's sampling accounting
 *       (accounting_mode neon, same 1 ms : 5 ms per channel): every VM
 *       suspended while each runs alone in turn.
 *   loga_overhead_100us, neon_overhead_100us  §5.3, Fig. 7b: both beside
 *       10 throttles of 100 us kernels and 1000 us gaps (pinned as above).
 *   loga_overhead_by_throttles, neon_overhead_by_throttles  §5.3, Fig. 8:
 *       the same overheads beside 1, 2, 4, 8, 16 and 32 throttles
 *       (overhead_throttles; the application runs for about 10 accounting
 *       periods, 5 with --quick, 2 with --brief): NEON's grows
 *       with the number of VMs (longer sampling phases, each VM alone),
 *       LoGA's stays flat.
 *   loga_cpu_fraction  §5.6: the accounting thread's polling time ÷ the
 *       run's wall time during loga_overhead's run (goal <= 1/6 + 1%).
 *   fair_share_error_max  §5.5: the application and 4 throttles of
 *       200 us / 800 us, all equal-share, then weighted (application 2),
 *       then fixed-share (application alone: capped at 1/5 of the GPU):
 *       each VM's accounted share of the run against its fair share
 *       (max-min fair by weight; fixed-share: its weight's share); the
 *       largest absolute error over VMs and modes.
 *   neon_fair_share_error_equal  the same in equal-share under NEON's
 *       accounting, against the shares NEON itself estimates (the seed's
 *       §5.5 compares the two accountings' fairness).
 *   loga_run  the run's length: "full", "quick" or "brief".
 *
 * Usage: loga-bench [--json FILE] [--quick | --brief]
 *
 * --quick shortens every run (about a third); --brief is the quick report's
 * run (vgpu-report --quick, the report-shapes test): every figure above,
 * from 4 kernel lengths (100, 400, 700, 1000 us) instead of 10 and runs of
 * a fraction of a second, in about 10 s on an idle host instead of about
 * 35 (--quick) or 100 s; its figures are the noisiest.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "guest.h"
#include "vgpu/core.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"

#define MAX_TENANTS 16

/* The last core call's failure (the core calls below pass it; one thread). */
static struct vgpu_error core_error;

static void die(const char *what, int err)
{
	fprintf(stderr, "loga-bench: %s: %s (%s)\n", what, strerror(err < 0 ? -err : err),
	        vgpu_error_msg(&core_error));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* How long each part runs (see the usage). */
struct plan {
	const char *name;         /* loga_run */
	uint64_t length_step_us;  /* Figs. 9, 10: 100 us .. 1000 us in these steps */
	uint64_t warmup_ns;       /* Figs. 9, 10: before the measured window */
	uint64_t run_ns;          /* Figs. 9, 10: the measured window */
	uint64_t tail_ns;         /* Figs. 9, 10: the throttle runs on after it */
	uint64_t app_kernels;     /* Fig. 7: the application's kernels */
	uint64_t periods;         /* Fig. 8: accounting periods the application runs */
	uint64_t fair_warmup_ns;  /* Fig. 11: before the measured window */
	uint64_t fair_run_ns;     /* Fig. 11: the measured window */
};

static const struct plan plan_full = {
	.name = "full", .length_step_us = 100, .warmup_ns = 100000000ull,
	.run_ns = 1000000000ull, .tail_ns = 200000000ull, .app_kernels = 1000, .periods = 10,
	.fair_warmup_ns = 500000000ull, .fair_run_ns = 10000000000ull,
};
static const struct plan plan_quick = {
	.name = "quick", .length_step_us = 100, .warmup_ns = 100000000ull,
	.run_ns = 300000000ull, .tail_ns = 200000000ull, .app_kernels = 400, .periods = 5,
	.fair_warmup_ns = 500000000ull, .fair_run_ns = 2000000000ull,
};
static const struct plan plan_brief = {
	.name = "brief", .length_step_us = 300, .warmup_ns = 50000000ull,
	.run_ns = 150000000ull, .tail_ns = 20000000ull, .app_kernels = 200, .periods = 2,
	.fair_warmup_ns = 200000000ull, .fair_run_ns = 500000000ull,
};

struct setup {
	struct vgpu_hal *hal;
	struct vgpu_core *core;
};

enum accounting { OFF, LOGA, NEON };

/* the accounting thread's mode (or none) and its per-channel polling and
 * non-polling us */
/* The overhead runs' CPU placement (see the file comment). */
static bool pin_accounting;

static bool pin_everything_else(bool on)
{
	cpu_set_t cpus;
	long count = sysconf(_SC_NPROCESSORS_ONLN);

	if (count < 2)
		return false;
	CPU_ZERO(&cpus);
	if (on) {
		CPU_SET(0, &cpus);
	} else {
		for (long i = 0; i < count && i < CPU_SETSIZE; i++)
			CPU_SET((int)i, &cpus);
	}
	return sched_setaffinity(0, sizeof(cpus), &cpus) == 0;
}

static void setup(struct setup *s, enum accounting accounting, uint32_t poll_us,
                  uint32_t nonpoll_us)
{
	struct simgpu_config gpu;
	struct vgpu_core_config config;
	int err;

	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = 256ull << 20;
	gpu.paced = true;
	gpu.timeslice_ns = 10000000; /* kernels are not split (Kepler: no preemption) */
	gpu.pfifo_idle_sleep_max_us = 50;
	err = simgpu_create(&gpu, &s->hal);
	if (err)
		die("simgpu_create", err);
	vgpu_core_config_defaults(&config);
	config.return_interval_ms = 0;
	config.gpu_accounting = accounting != OFF;
	config.accounting_mode = accounting == NEON ? VGPU_ACCOUNTING_NEON : VGPU_ACCOUNTING_LOGA;
	config.accounting_poll_us = poll_us;
	config.accounting_nonpoll_us = nonpoll_us;
	config.accounting_jitter_percent = nonpoll_us == 1 ? 1 : 0;
	/* the accuracy runs (Figs. 9, 10) measure polling: one VM alone would
	 * otherwise be sampled (gpu_accounting.h) */
	config.accounting_always_poll = nonpoll_us == 1;
	config.accounting_pin = pin_accounting;
	config.accounting_cpu = 1;
	config.on_fence = sim_guest_on_fence;
	config.on_channel_error = sim_guest_on_channel_error;
	err = vgpu_core_create(s->hal, &config, &s->core, &core_error);
	if (err)
		die("vgpu_core_create", err);
}

static void teardown(struct setup *s)
{
	vgpu_core_destroy(s->core);
	vgpu_hal_destroy(s->hal);
}

struct loga_tenant {
	struct vgpu_vm *vm;
	struct sim_guest *guest;
	uint64_t kernel_ns;
	uint64_t gap_ns;    /* idle after each kernel */
	uint64_t cycle_ns;  /* or: one kernel per cycle of this length */
	uint64_t kernels;   /* 0 = until end_ns; else run this many, then stop */
	uint64_t end_ns;
	uint64_t done;      /* kernels completed */
	uint64_t finished_ns;
	pthread_t thread;
};

static void tenant_make(struct setup *s, struct loga_tenant *t, const char *name, const char *mode,
			uint32_t weight)
{
	struct vgpu_vm_config config;
	int err;

	vgpu_vm_config_defaults(&config);
	config.name = name;
	config.weight = weight;
	config.scheduler = mode;
	err = vgpu_core_vm_create(s->core, &config, &t->vm, &core_error);
	if (!err)
		err = sim_guest_create(s->hal, t->vm, &t->guest);
	if (err)
		die(name, err);
}

static void *tenant_main(void *arg)
{
	struct loga_tenant *t = arg;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint32_t n = vgpu_push_launch_throttle(words, t->kernel_ns);
	uint64_t next = now_ns();

	while (t->kernels ? t->done < t->kernels
	                  : now_ns() < __atomic_load_n(&t->end_ns, __ATOMIC_RELAXED)) {
		int64_t sequence = sim_guest_submit(t->guest, words, n);

		if (sequence < 0 || sim_guest_wait(t->guest, (uint64_t)sequence, 60000))
			break;
		__atomic_store_n(&t->done, t->done + 1, __ATOMIC_RELAXED);
		if (t->cycle_ns) {
			next += t->cycle_ns;
			sleep_until(next);
		} else if (t->gap_ns) {
			sleep_until(now_ns() + t->gap_ns);
		}
	}
	t->finished_ns = now_ns();
	return NULL;
}

/* Wall time the engine's current-channel register named t's channel. */
static uint64_t resident_ns(struct loga_tenant *t)
{
	struct vgpu_hal_as_counters counters;

	vgpu_hal_as_counters(vgpu_core_vm_address_space(t->vm), &counters);
	return counters.resident_wall_ns[VGPU_ENGINE_COMPUTE];
}

static uint64_t gpu_time(struct loga_tenant *t)
{
	struct vgpu_vm_stats stats;

	vgpu_core_vm_stats(t->vm, &stats);
	return stats.gpu_time_ns;
}

static void start(struct loga_tenant *t, size_t count, uint64_t end_ns)
{
	for (size_t i = 0; i < count; i++) {
		t[i].end_ns = end_ns;
		t[i].done = 0;
		if (pthread_create(&t[i].thread, NULL, tenant_main, &t[i]))
			die("pthread_create", EAGAIN);
	}
}

static void join(struct loga_tenant *t, size_t count)
{
	for (size_t i = 0; i < count; i++)
		pthread_join(t[i].thread, NULL);
}

static void destroy(struct loga_tenant *t, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		sim_guest_destroy(t[i].guest, false);
		vgpu_core_vm_destroy(t[i].vm);
	}
}

/* Largest errors over the kernel lengths; see the file comment. */
struct accuracy_result {
	double kernel;             /* against engine residency */
	double kernel_vs_modeled;  /* against the modeled kernel length */
	double load;               /* against the engine's real load */
	double load_vs_intended;   /* against kernel length / cycle */
};

static void accuracy(const struct plan *plan, struct accuracy_result *r)
{
	uint64_t run_ns = plan->run_ns, warmup_ns = plan->warmup_ns;

	memset(r, 0, sizeof(*r));
	printf("kernel length and load, one throttle, polling 100%% of the time\n"
	       "(accounted against the engine's residency; [against the modeled length / "
	       "intended load]):\n");
	for (uint64_t us = 100; us <= 1000; us += plan->length_step_us) {
		struct setup s;
		struct loga_tenant t = { .kernel_ns = us * 1000 };
		uint64_t t0, g0, g1, k0, k1, r0, r1, w0, w1;
		double measured, resident, load, real_load, error_k, error_km, error_l, error_li;

		setup(&s, LOGA, 100000, 1); /* 100 ms polling, 1 us not */
		tenant_make(&s, &t, "throttle", "best-effort", 1);
		/* Fig. 9: back to back */
		t0 = now_ns();
		start(&t, 1, t0 + warmup_ns + run_ns + plan->tail_ns);
		sleep_until(t0 + warmup_ns);
		g0 = gpu_time(&t);
		r0 = resident_ns(&t);
		k0 = __atomic_load_n(&t.done, __ATOMIC_RELAXED);
		sleep_until(t0 + warmup_ns + run_ns);
		g1 = gpu_time(&t);
		r1 = resident_ns(&t);
		k1 = __atomic_load_n(&t.done, __ATOMIC_RELAXED);
		join(&t, 1);
		measured = k1 > k0 ? (double)(g1 - g0) / (double)(k1 - k0) : 0;
		resident = k1 > k0 ? (double)(r1 - r0) / (double)(k1 - k0) : 0;
		error_k = resident > 0 ? fabs(measured - resident) / resident : 1;
		error_km = fabs(measured - (double)us * 1000) / ((double)us * 1000);
		/* Fig. 10: one kernel per 1000 us cycle */
		t.cycle_ns = 1000000;
		t0 = now_ns();
		start(&t, 1, t0 + warmup_ns + run_ns + plan->tail_ns);
		sleep_until(t0 + warmup_ns);
		g0 = gpu_time(&t);
		r0 = resident_ns(&t);
		w0 = now_ns();
		sleep_until(t0 + warmup_ns + run_ns);
		g1 = gpu_time(&t);
		r1 = resident_ns(&t);
		w1 = now_ns();
		join(&t, 1);
		load = (double)(g1 - g0) / (double)(w1 - w0);
		real_load = (double)(r1 - r0) / (double)(w1 - w0);
		error_l = fabs(load - real_load);
		error_li = fabs(load - (double)us / 1000.0);
		printf("  %4llu us: accounted kernel %7.1f us, resident %7.1f us: error %5.2f%% "
		       "[%5.2f%%]; load %.3f, real %.3f of %.1f: error %.3f [%.3f]\n",
		       (unsigned long long)us, measured / 1000, resident / 1000, 100 * error_k,
		       100 * error_km, load, real_load, us / 1000.0, error_l, error_li);
		r->kernel = fmax(r->kernel, error_k);
		r->kernel_vs_modeled = fmax(r->kernel_vs_modeled, error_km);
		r->load = fmax(r->load, error_l);
		r->load_vs_intended = fmax(r->load_vs_intended, error_li);
		destroy(&t, 1);
		teardown(&s);
	}
}

#define MAX_THROTTLES 32

/* §5.3: the application's turnaround beside `throttles` throttles of
 * throttle_ns kernels and 1000 us gaps, under an accounting mode or none. Returns seconds; *cpu: polling time ÷ wall
 * time. */
static double turnaround(enum accounting accounting, int throttles, uint64_t throttle_ns,
                         uint64_t app_kernels, double *cpu)
{
	struct setup s;
	struct loga_tenant t[MAX_THROTTLES + 1];
	struct vgpu_core_stats before, after;
	uint64_t t0;
	char name[32];

	memset(t, 0, sizeof(t));
	setup(&s, accounting, 1000, 5000);
	tenant_make(&s, &t[0], "application", "best-effort", 1);
	t[0].kernel_ns = 500000;
	t[0].kernels = app_kernels;
	for (int i = 1; i <= throttles; i++) {
		snprintf(name, sizeof(name), "throttle-%d", i);
		tenant_make(&s, &t[i], name, "best-effort", 1);
		t[i].kernel_ns = throttle_ns;
		t[i].gap_ns = 1000000;
	}
	vgpu_core_stats(s.core, &before);
	t0 = now_ns();
	start(&t[1], (size_t)throttles, UINT64_MAX);
	start(&t[0], 1, UINT64_MAX);
	join(&t[0], 1);
	for (int i = 1; i <= throttles; i++)
		__atomic_store_n(&t[i].end_ns, 0, __ATOMIC_RELAXED); /* stop */
	join(&t[1], (size_t)throttles);
	vgpu_core_stats(s.core, &after);
	*cpu = (double)(after.accounting_poll_ns + after.accounting_residue_ns -
	                before.accounting_poll_ns - before.accounting_residue_ns) /
	       (double)(t[0].finished_ns - t0);
	destroy(t, (size_t)throttles + 1);
	teardown(&s);
	return (double)(t[0].finished_ns - t0) / 1e9;
}

/* §5.5: max |share - fair| over VMs, for one mode, under an accounting
 * mode. */
static double fairness(enum accounting accounting, const char *mode, const struct plan *plan)
{
	uint64_t run_ns = plan->fair_run_ns, warmup_ns = plan->fair_warmup_ns;
	static const char *const names[] = { "application", "throttle-1", "throttle-2",
		                             "throttle-3", "throttle-4" };
	bool fixed = !strcmp(mode, "fixed-share");
	bool weighted = !strcmp(mode, "weighted");
	struct setup s;
	struct loga_tenant t[5];
	uint64_t g0[5], g1[5], total = 0, t0;
	double fair[5], worst = 0;
	size_t count = fixed ? 1 : 5;

	memset(t, 0, sizeof(t));
	setup(&s, accounting, 1000, 5000);
	for (size_t i = 0; i < 5; i++) {
		tenant_make(&s, &t[i], names[i], mode, weighted && i == 0 ? 2 : 1);
		t[i].kernel_ns = i == 0 ? 500000 : 200000;
		t[i].gap_ns = i == 0 ? 0 : 800000;
	}
	/* fixed-share: the application alone, the others idle (their share
	 * stays theirs) */
	t0 = now_ns();
	start(t, count, t0 + warmup_ns + run_ns);
	sleep_until(t0 + warmup_ns);
	for (size_t i = 0; i < 5; i++)
		g0[i] = gpu_time(&t[i]);
	sleep_until(t0 + warmup_ns + run_ns);
	for (size_t i = 0; i < 5; i++) {
		g1[i] = gpu_time(&t[i]) - g0[i];
		total += g1[i];
	}
	join(t, count);
	if (fixed) {
		fair[0] = 0.2; /* of the wall time */
		total = run_ns;
	} else {
		/* max-min fair by weight: the throttles want 20% each (200 of
		 * 1000 us), the application the rest */
		double w0 = weighted ? 2 : 1, throttle_fair = 1.0 / (4 + w0);

		for (size_t i = 1; i < 5; i++)
			fair[i] = throttle_fair < 0.2 ? throttle_fair : 0.2;
		fair[0] = 1 - 4 * fair[1];
	}
	printf("  %-12s", mode);
	for (size_t i = 0; i < count; i++) {
		double share = total ? (double)g1[i] / (double)total : 0;

		printf(" %s %.3f (fair %.3f)", names[i], share, fair[i]);
		if (fabs(share - fair[i]) > worst)
			worst = fabs(share - fair[i]);
	}
	printf("\n");
	destroy(t, 5);
	teardown(&s);
	return worst;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ "brief", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	const char *json_path = NULL;
	const struct plan *plan = &plan_full;
	struct json_object *json = json_object_new_object();
	static const int overhead_throttles[] = { 1, 2, 4, 8, 16, MAX_THROTTLES };
	enum { STEPS = sizeof(overhead_throttles) / sizeof(overhead_throttles[0]) };
	struct accuracy_result accurate;
	double with, without, neon, cpu, unused, fair_max = 0;
	double by_throttles[2][STEPS], neon_fair, shared, without_100, loga_100, neon_100;
	struct json_object *arrays[3];
	int opt;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (opt == 'j')
			json_path = optarg;
		else if (opt == 'q')
			plan = &plan_quick;
		else if (opt == 'b')
			plan = &plan_brief;
		else
			return 64;
	}
	printf("loga-bench: LoGA §5 on paced simgpu, %s run (load average %.2f)\n", plan->name,
	       load_average_1m());
	accuracy(plan, &accurate);
	printf("loga_kernel_length_error_max %.4f (seed: 0.06, goal <= 0.03); against the modeled "
	       "length %.4f\n",
	       accurate.kernel, accurate.kernel_vs_modeled);
	printf("loga_load_error_max %.4f (seed: 0.025, goal <= 0.015); against the intended load "
	       "%.4f\n",
	       accurate.load, accurate.load_vs_intended);

	/* unpinned first: the accounting thread and simgpu on shared CPUs */
	without = turnaround(OFF, 10, 10000, plan->app_kernels, &unused);
	with = turnaround(LOGA, 10, 10000, plan->app_kernels, &unused);
	shared = with / without - 1;
	pin_accounting = pin_everything_else(true);
	printf("application beside 10 throttles, all threads on shared CPUs: %.3f s without "
	       "accounting, %.3f s with LoGA: loga_overhead_shared_cpus %.4f\n",
	       without, with, shared);
	printf("%s\n", pin_accounting ? "from here on the accounting thread runs on CPU 1, everything "
	                               "else on CPU 0 (with and without accounting alike)"
	                             : "one CPU: the accounting thread shares it with simgpu");
	without = turnaround(OFF, 10, 10000, plan->app_kernels, &unused);
	with = turnaround(LOGA, 10, 10000, plan->app_kernels, &cpu);
	neon = turnaround(NEON, 10, 10000, plan->app_kernels, &unused);
	printf("application beside 10 throttles (10 us / 1000 us): %.3f s without accounting, "
	       "%.3f s with LoGA, %.3f s with NEON\n",
	       without, with, neon);
	printf("loga_overhead %.4f (seed: ~0, goal <= 0.01); loga_cpu_fraction %.3f (goal <= "
	       "%.3f)\n",
	       with / without - 1, cpu, 1.0 / 6 + 0.01);
	printf("neon_overhead %.4f (seed: 0.114 mean, 0.234 worst; goal: clearly above "
	       "loga_overhead)\n",
	       neon / without - 1);

	/* Fig. 7b: the same beside ten throttles of 100 us kernels (90.9 % load) */
	without_100 = turnaround(OFF, 10, 100000, plan->app_kernels, &unused);
	loga_100 = turnaround(LOGA, 10, 100000, plan->app_kernels, &unused) / without_100 - 1;
	neon_100 = turnaround(NEON, 10, 100000, plan->app_kernels, &unused) / without_100 - 1;
	printf("application beside 10 throttles (100 us / 1000 us): %.3f s without accounting; "
	       "loga_overhead_100us %.4f, neon_overhead_100us %.4f (seed: 0.007 and 0.076)\n",
	       without_100, loga_100, neon_100);

	printf("overhead against the number of throttles (Fig. 8):\n  throttles     loga     neon\n");
	for (int i = 0; i < STEPS; i++) {
		/* long enough for plan->periods accounting periods of 6 ms per
		 * channel: 12 kernels of 500 us each per channel and period */
		uint64_t kernels = plan->periods * 12u * (uint64_t)(overhead_throttles[i] + 1);
		double base = turnaround(OFF, overhead_throttles[i], 10000, kernels, &unused);

		for (int m = 0; m < 2; m++)
			by_throttles[m][i] =
				turnaround(m ? NEON : LOGA, overhead_throttles[i], 10000, kernels,
				           &unused) /
					base -
				1;
		printf("  %9d %8.4f %8.4f\n", overhead_throttles[i], by_throttles[0][i],
		       by_throttles[1][i]);
	}
	if (pin_accounting) {
		pin_everything_else(false);
		pin_accounting = false;
	}

	printf("fair shares, the application and 4 throttles of 200 us / 800 us:\n");
	for (const char *const *mode = (const char *const[]){ "equal-share", "weighted",
	                                                      "fixed-share", NULL };
	     *mode; mode++) {
		double worst = fairness(LOGA, *mode, plan);

		if (worst > fair_max)
			fair_max = worst;
	}
	printf("fair_share_error_max %.4f (goal <= 0.05)\n", fair_max);
	printf("the same, equal-share under NEON's accounting (its shares as NEON estimates "
	       "them):\n");
	neon_fair = fairness(NEON, "equal-share", plan);
	printf("neon_fair_share_error_equal %.4f\n", neon_fair);

	json_number(json, "loga_kernel_length_error_max", accurate.kernel);
	json_number(json, "loga_kernel_length_error_vs_modeled_max", accurate.kernel_vs_modeled);
	json_number(json, "loga_load_error_max", accurate.load);
	json_number(json, "loga_load_error_vs_intended_max", accurate.load_vs_intended);
	json_number(json, "loga_overhead", with / without - 1);
	json_number(json, "loga_overhead_shared_cpus", shared);
	json_number(json, "neon_overhead", neon / without - 1);
	json_number(json, "loga_overhead_100us", loga_100);
	json_number(json, "neon_overhead_100us", neon_100);
	for (int a = 0; a < 3; a++) {
		arrays[a] = json_object_new_array();
		for (int i = 0; i < STEPS; i++)
			json_object_array_add(arrays[a],
			                      a == 2 ? json_object_new_int(overhead_throttles[i])
			                             : json_object_new_double(by_throttles[a][i]));
	}
	json_object_object_add(json, "loga_overhead_by_throttles", arrays[0]);
	json_object_object_add(json, "neon_overhead_by_throttles", arrays[1]);
	json_object_object_add(json, "overhead_throttles", arrays[2]);
	json_number(json, "loga_cpu_fraction", cpu);
	json_number(json, "fair_share_error_max", fair_max);
	json_number(json, "neon_fair_share_error_equal", neon_fair);
	json_object_object_add(json, "loga_run", json_object_new_string(plan->name));
	if (json_write(json, json_path, "loga-bench"))
		return 1;
	json_object_put(json);
	return 0;
}
