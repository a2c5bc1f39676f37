// SPDX-License-Identifier: MIT
/*
 * test_gpu_time.c - GPU-time accounting from context switches (gpu_time.h)
 * and the shares decided from it (gpu_sched.h), driven by synthetic traces:
 *
 *  - a GPU timeline of commands and idle gaps, polled with jitter, must be
 *    accounted to the channels that ran it within one poll gap per switch;
 *  - a fluid model of VMs sharing a GPU (each VM's slice in proportion to
 *    its command length, as per-command round robin gives) must end with
 *    each VM's GPU time within 5% of its share under equal-share, weighted
 *    and fixed-share, with idle VMs not saving up time.
 *
 *  - NEON's sampling accounting (gpu_neon.h): a throttle running alone,
 *    polled with jitter, must give its kernel length within two poll gaps,
 *    and the estimate must split a period by average command length.
 *
 * Randomised parts take VGPU_SEED (printed; set it to replay a failure).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gpu_neon.h"
#include "gpu_sched.h"
#include "gpu_time.h"
#include "rng.h"

static uint64_t seed;

static uint64_t test_seed(void)
{
	const char *env = getenv("VGPU_SEED");
	struct timespec now;

	if (env && *env)
		return strtoull(env, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &now);
	return ((uint64_t)now.tv_sec * 1000000007ull) ^ (uint64_t)now.tv_nsec;
}

/* ---- accounting -------------------------------------------------------- */

struct segment {
	int32_t channel; /* -1: no channel */
	bool pending;
	uint64_t ns;
};

/* The engine's status at time t of a timeline starting at 0. */
static const struct segment *segment_at(const struct segment *timeline, size_t count, uint64_t t)
{
	for (size_t i = 0; i < count; i++) {
		if (t < timeline[i].ns)
			return &timeline[i];
		t -= timeline[i].ns;
	}
	return &timeline[count - 1];
}

static void sample_at(const struct segment *timeline, size_t count, uint64_t t,
                      struct vgpu_gpu_time_sample *sample)
{
	const struct segment *seg = segment_at(timeline, count, t);

	sample->t_ns = t;
	sample->channel = seg->channel;
	sample->pending = seg->pending;
}

/* Poll the timeline every 1 µs ± 0.5 µs over [0, end). */
static void poll_timeline(struct vgpu_gpu_time_phase *phase, uint64_t *channel_ns,
                          uint32_t channel_count, const struct segment *timeline, size_t count,
                          uint64_t end, struct vgpu_rng *rng)
{
	struct vgpu_gpu_time_sample sample;
	uint64_t t = 0;

	sample_at(timeline, count, 0, &sample);
	vgpu_gpu_time_phase_begin(phase, channel_ns, channel_count, &sample);
	for (;;) {
		t += 500 + vgpu_rng_below(rng, 1001);
		if (t >= end)
			break;
		sample_at(timeline, count, t, &sample);
		vgpu_gpu_time_phase_observe(phase, &sample);
	}
	vgpu_gpu_time_phase_end(phase, end);
}

static void test_random_timeline(void **state)
{
	enum { CHANNELS = 6, SEGMENTS = 400 };
	struct segment timeline[SEGMENTS];
	uint64_t truth[CHANNELS] = { 0 }, accounted[CHANNELS], truth_idle = 0, end = 0;
	uint64_t changes = 0;
	struct vgpu_gpu_time_phase phase;
	struct vgpu_rng rng;

	(void)state;
	vgpu_rng_seed(&rng, seed);
	for (size_t i = 0; i < SEGMENTS; i++) {
		struct segment *seg = &timeline[i];

		/* commands of 10 µs .. 1 ms, sometimes idle or a drained channel */
		seg->channel = (int32_t)vgpu_rng_below(&rng, CHANNELS + 1) - 1;
		seg->pending = vgpu_rng_below(&rng, 5) != 0;
		seg->ns = 10000 + vgpu_rng_below(&rng, 990001);
		if (seg->channel >= 0 && seg->pending)
			truth[seg->channel] += seg->ns;
		else
			truth_idle += seg->ns;
		end += seg->ns;
		if (i > 0)
			changes++;
	}
	poll_timeline(&phase, accounted, CHANNELS, timeline, SEGMENTS, end, &rng);

	/* each change is seen at most one poll gap (1.5 µs) late, and a late
	 * start of one segment is the late end of the one before it */
	for (int c = 0; c < CHANNELS; c++) {
		uint64_t err = accounted[c] > truth[c] ? accounted[c] - truth[c] : truth[c] - accounted[c];

		if (err > changes * 1500)
			fail_msg("VGPU_SEED=%" PRIu64 ": channel %d accounted %" PRIu64 " ns, ran %" PRIu64,
			         seed, c, accounted[c], truth[c]);
	}
	uint64_t sum = phase.idle_ns + phase.other_ns;
	for (int c = 0; c < CHANNELS; c++)
		sum += accounted[c];
	assert_int_equal(sum, end);
	assert_int_equal(vgpu_gpu_time_phase_length(&phase), end);
	assert_int_equal(phase.other_ns, 0);
	assert_true(phase.switches > 0 && phase.switches <= changes);
	if (llabs((long long)phase.idle_ns - (long long)truth_idle) > (long long)changes * 1500)
		fail_msg("VGPU_SEED=%" PRIu64 ": idle %" PRIu64 " ns, truth %" PRIu64, seed,
		         phase.idle_ns, truth_idle);
}

/* The status register names a channel but it has nothing pending: idle. */
static void test_drained_channel_is_idle(void **state)
{
	const struct segment timeline[] = {
		{ 0, true, 100000 }, { 0, false, 300000 }, { 1, true, 200000 }, { -1, false, 50000 },
	};
	struct vgpu_gpu_time_sample s;
	struct vgpu_gpu_time_phase phase;
	uint64_t ns[2];

	(void)state;
	sample_at(timeline, 4, 0, &s);
	vgpu_gpu_time_phase_begin(&phase, ns, 2, &s);
	for (uint64_t t = 1000; t < 650000; t += 1000) {
		sample_at(timeline, 4, t, &s);
		vgpu_gpu_time_phase_observe(&phase, &s);
	}
	vgpu_gpu_time_phase_end(&phase, 650000);
	assert_int_equal(ns[0], 100000);
	assert_int_equal(ns[1], 200000);
	assert_int_equal(phase.idle_ns, 350000);
	assert_int_equal(phase.switches, 2);
}

/* One command longer than the phase: no switch at all, the whole phase goes
 * to the channel running at its end (LoGA §3.3). */
static void test_long_command_gets_the_phase(void **state)
{
	struct vgpu_gpu_time_sample s = { .t_ns = 5000, .channel = 3, .pending = true };
	struct vgpu_gpu_time_phase phase;
	uint64_t ns[4];

	(void)state;
	vgpu_gpu_time_phase_begin(&phase, ns, 4, &s);
	for (s.t_ns = 6000; s.t_ns < 1005000; s.t_ns += 1000)
		vgpu_gpu_time_phase_observe(&phase, &s);
	vgpu_gpu_time_phase_end(&phase, 1005000);
	assert_int_equal(ns[3], 1000000);
	assert_int_equal(ns[0] + ns[1] + ns[2] + phase.idle_ns + phase.other_ns, 0);
	assert_int_equal(phase.switches, 0);
}

/* A channel beyond the caller's table, and samples out of order. */
static void test_unknown_channel_and_old_samples(void **state)
{
	struct vgpu_gpu_time_sample s = { .t_ns = 100, .channel = 9, .pending = true };
	struct vgpu_gpu_time_phase phase;
	uint64_t ns[2];

	(void)state;
	vgpu_gpu_time_phase_begin(&phase, ns, 2, &s);
	s = (struct vgpu_gpu_time_sample){ .t_ns = 600, .channel = 1, .pending = true };
	vgpu_gpu_time_phase_observe(&phase, &s);
	s = (struct vgpu_gpu_time_sample){ .t_ns = 400, .channel = 0, .pending = true };
	vgpu_gpu_time_phase_observe(&phase, &s); /* older: taken at 600 */
	vgpu_gpu_time_phase_end(&phase, 1100);
	assert_int_equal(phase.other_ns, 500);
	assert_int_equal(ns[1], 0);
	assert_int_equal(ns[0], 500);
	assert_int_equal(vgpu_gpu_time_phase_length(&phase), 1000);
}

/* The poller missed 300 us (preempted): with max_gap_ns the gap is blind
 * time, given to nobody and left out of the observed time; without, the
 * channel that ran at both ends gets it. */
static void test_blind_gap(void **state)
{
	struct vgpu_gpu_time_sample s = { .t_ns = 0, .channel = 0, .pending = true };
	struct vgpu_gpu_time_phase phase;
	uint64_t ns[2];

	(void)state;
	for (int blind = 0; blind <= 1; blind++) {
		s.t_ns = 0;
		s.channel = 0;
		vgpu_gpu_time_phase_begin(&phase, ns, 2, &s);
		phase.max_gap_ns = blind ? 50000 : 0;
		for (s.t_ns = 1000; s.t_ns <= 100000; s.t_ns += 1000)
			vgpu_gpu_time_phase_observe(&phase, &s);
		/* the gap hides a switch: channel 1 runs after it */
		s.channel = 1;
		for (s.t_ns = 400000; s.t_ns <= 500000; s.t_ns += 1000)
			vgpu_gpu_time_phase_observe(&phase, &s);
		vgpu_gpu_time_phase_end(&phase, 500000);
		assert_int_equal(vgpu_gpu_time_phase_length(&phase), 500000);
		if (blind) {
			assert_int_equal(ns[0], 100000);
			assert_int_equal(ns[1], 100000);
			assert_int_equal(phase.blind_ns, 300000);
			assert_int_equal(phase.blind_gaps, 1);
			assert_int_equal(vgpu_gpu_time_phase_observed(&phase), 200000);
		} else {
			assert_int_equal(ns[0], 400000);
			assert_int_equal(ns[1], 100000);
			assert_int_equal(phase.blind_ns, 0);
			assert_int_equal(vgpu_gpu_time_phase_observed(&phase), 500000);
		}
		assert_int_equal(phase.switches, 1);
		assert_int_equal(ns[0] + ns[1] + phase.idle_ns + phase.other_ns + phase.blind_ns,
		                 500000);
	}
}

static void test_extrapolate(void **state)
{
	(void)state;
	assert_int_equal(vgpu_gpu_time_extrapolate(500000, 1000000, 6000000), 3000000);
	assert_int_equal(vgpu_gpu_time_extrapolate(1, 3, 2), 1); /* 0.67 rounds up */
	assert_int_equal(vgpu_gpu_time_extrapolate(1, 3, 1), 0); /* 0.33 rounds down */
	assert_int_equal(vgpu_gpu_time_extrapolate(123, 0, 6), 0);
	assert_int_equal(vgpu_gpu_time_extrapolate(UINT64_MAX, UINT64_MAX, 7), 7);
	assert_int_equal(vgpu_gpu_time_extrapolate(UINT64_MAX, 1, 2), UINT64_MAX);
}

static void test_phase_lengths(void **state)
{
	struct vgpu_gpu_time_config config;
	struct vgpu_rng rng;
	uint64_t poll, nonpoll;
	double poll_sum = 0, nonpoll_sum = 0;
	const int draws = 20000;

	(void)state;
	vgpu_gpu_time_config_default(&config);
	assert_int_equal(vgpu_gpu_time_config_check(&config), 0);
	vgpu_gpu_time_phase_lengths(&config, 0, NULL, &poll, &nonpoll);
	assert_int_equal(poll, 1000000);
	assert_int_equal(nonpoll, 5000000);
	vgpu_gpu_time_phase_lengths(&config, 12, NULL, &poll, &nonpoll);
	assert_int_equal(poll, 12000000);
	assert_int_equal(nonpoll, 60000000);

	vgpu_rng_seed(&rng, seed);
	for (int i = 0; i < draws; i++) {
		vgpu_gpu_time_phase_lengths(&config, 3, &rng, &poll, &nonpoll);
		if (poll < 1500000 || poll > 4500000 || nonpoll < 7500000 || nonpoll > 22500000)
			fail_msg("VGPU_SEED=%" PRIu64 ": lengths %" PRIu64 "/%" PRIu64
			         " outside mean ± 50%%", seed, poll, nonpoll);
		poll_sum += (double)poll;
		nonpoll_sum += (double)nonpoll;
	}
	/* the means stay the configured ones (±1%; the standard error is 0.2%) */
	if (fabs(poll_sum / draws / 3e6 - 1) > 0.01 || fabs(nonpoll_sum / draws / 15e6 - 1) > 0.01)
		fail_msg("VGPU_SEED=%" PRIu64 ": mean lengths %.0f/%.0f ns", seed, poll_sum / draws,
		         nonpoll_sum / draws);

	config.jitter_percent = 91;
	assert_int_equal(vgpu_gpu_time_config_check(&config), -EINVAL);
	config.jitter_percent = 0;
	config.poll_ns_per_channel = 0;
	assert_int_equal(vgpu_gpu_time_config_check(&config), -EINVAL);
}

/* ---- shares ------------------------------------------------------------ */

static void test_mode_names(void **state)
{
	enum vgpu_sched_mode mode;

	(void)state;
	for (int m = 0; m < VGPU_SCHED_MODE_COUNT; m++) {
		assert_int_equal(vgpu_sched_mode_parse(vgpu_sched_mode_name(m), &mode), 0);
		assert_int_equal(mode, m);
	}
	assert_string_equal(vgpu_sched_mode_name(VGPU_SCHED_WEIGHTED), "weighted");
	assert_int_equal(vgpu_sched_mode_parse("fair", &mode), -EINVAL);
	assert_string_equal(vgpu_sched_mode_name(17), "unknown");
}

/* A VM of the fluid model: whenever it runs beside others, the GPU's time
 * is split in proportion to `demand` (its command length: round robin per
 * command favours long commands, LoGA §2). */
struct fluid_vm {
	double demand;
	bool busy;       /* has work */
	double gpu_ns;   /* GPU time it got */
};

/* Share `len` among the busy VMs (the throttled ones too if !respect). */
static void fluid_share(struct fluid_vm *f, const struct vgpu_sched_vm *vms, size_t n, double len,
                        bool respect_throttle, double *got)
{
	double demand = 0;

	for (size_t i = 0; i < n; i++) {
		got[i] = 0;
		if (f[i].busy && !(respect_throttle && vms[i].throttled))
			demand += f[i].demand;
	}
	for (size_t i = 0; i < n && demand > 0; i++) {
		if (f[i].busy && !(respect_throttle && vms[i].throttled)) {
			got[i] = len * f[i].demand / demand;
			f[i].gpu_ns += got[i];
		}
	}
}

struct fluid_run {
	struct vgpu_sched sched;
	struct vgpu_rng rng;
	uint64_t nonpoll_before;
};

static void fluid_init(struct fluid_run *run, struct vgpu_sched_vm *vms, size_t n,
                       const enum vgpu_sched_mode *modes, const uint32_t *weights)
{
	vgpu_sched_init(&run->sched);
	vgpu_rng_seed(&run->rng, seed);
	run->nonpoll_before = 0;
	for (size_t i = 0; i < n; i++)
		vgpu_sched_vm_init(&run->sched, &vms[i], modes[i], weights[i]);
}

/* Run `periods` periods: the non-polling phase decided last time (throttled
 * VMs out), then a polling phase (everyone), then a decision. */
static void fluid_periods(struct fluid_run *run, struct vgpu_sched_vm *vms, struct fluid_vm *f,
                          size_t n, int periods)
{
	struct vgpu_gpu_time_config config;
	double got[16];

	vgpu_gpu_time_config_default(&config);
	for (int p = 0; p < periods; p++) {
		struct vgpu_sched_period period;

		fluid_share(f, vms, n, (double)run->nonpoll_before, true, got);
		vgpu_gpu_time_phase_lengths(&config, (uint32_t)n, &run->rng, &period.poll_ns,
		                            &period.nonpoll_next_ns);
		fluid_share(f, vms, n, (double)period.poll_ns, false, got);
		for (size_t i = 0; i < n; i++) {
			vms[i].used_ns = (uint64_t)got[i];
			vms[i].active = f[i].busy;
		}
		period.nonpoll_before_ns = run->nonpoll_before;
		vgpu_sched_update(&run->sched, vms, n, &period);
		run->nonpoll_before = period.nonpoll_next_ns;
	}
}

static void reset_gpu_time(struct fluid_vm *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		f[i].gpu_ns = 0;
}

static void assert_shares(const struct fluid_vm *f, size_t n, const double *want, double tolerance,
                          const char *what)
{
	double total = 0;

	for (size_t i = 0; i < n; i++)
		total += f[i].gpu_ns;
	for (size_t i = 0; i < n; i++) {
		double share = f[i].gpu_ns / total;

		if (fabs(share - want[i]) > tolerance)
			fail_msg("VGPU_SEED=%" PRIu64 ": %s: VM %zu got %.3f of the GPU, its share is %.3f",
			         seed, what, i, share, want[i]);
	}
}

/* Without scheduling, long commands take the GPU: 4:1 command lengths give
 * 0.8 : 0.2. Equal-share brings it to 0.5 : 0.5. */
static void test_equal_share(void **state)
{
	struct fluid_vm f[2] = { { 4, true, 0 }, { 1, true, 0 } };
	struct vgpu_sched_vm vms[2];
	struct fluid_run run;
	const uint32_t weights[2] = { 1, 1 };
	const enum vgpu_sched_mode off[2] = { VGPU_SCHED_BEST_EFFORT, VGPU_SCHED_BEST_EFFORT };
	const enum vgpu_sched_mode equal[2] = { VGPU_SCHED_EQUAL_SHARE, VGPU_SCHED_EQUAL_SHARE };

	(void)state;
	fluid_init(&run, vms, 2, off, weights);
	fluid_periods(&run, vms, f, 2, 1000);
	assert_shares(f, 2, (const double[]){ 0.8, 0.2 }, 0.01, "best-effort");
	assert_int_equal(vms[0].throttled_ns, 0);

	reset_gpu_time(f, 2);
	fluid_init(&run, vms, 2, equal, weights);
	fluid_periods(&run, vms, f, 2, 1000); /* 12 s of GPU time */
	assert_shares(f, 2, (const double[]){ 0.5, 0.5 }, 0.05, "equal-share");
	assert_true(vms[0].throttled_ns > 0);
	assert_int_equal(vms[1].throttled_ns, 0);
}

/* Weighted 1:2:1, with the weight-1 VMs' commands 4× longer. */
static void test_weighted(void **state)
{
	struct fluid_vm f[3] = { { 4, true, 0 }, { 1, true, 0 }, { 4, true, 0 } };
	struct vgpu_sched_vm vms[3];
	struct fluid_run run;
	const uint32_t weights[3] = { 1, 2, 1 };
	const enum vgpu_sched_mode modes[3] = { VGPU_SCHED_WEIGHTED, VGPU_SCHED_WEIGHTED,
		                                VGPU_SCHED_WEIGHTED };

	(void)state;
	fluid_init(&run, vms, 3, modes, weights);
	fluid_periods(&run, vms, f, 3, 700);
	assert_shares(f, 3, (const double[]){ 0.25, 0.5, 0.25 }, 0.05, "weighted 1:2:1");
}

/* Fixed share: one of four weight-1 VMs busy alone never gets more than a
 * quarter; best-effort and equal-share would give it the whole GPU. */
static void test_fixed_share(void **state)
{
	struct fluid_vm f[4] = { { 1, true, 0 }, { 1, false, 0 }, { 1, false, 0 }, { 1, false, 0 } };
	struct vgpu_sched_vm vms[4];
	struct fluid_run run;
	const uint32_t weights[4] = { 1, 1, 1, 1 };
	const enum vgpu_sched_mode modes[4] = { VGPU_SCHED_FIXED_SHARE, VGPU_SCHED_FIXED_SHARE,
		                                VGPU_SCHED_FIXED_SHARE, VGPU_SCHED_FIXED_SHARE };
	const enum vgpu_sched_mode equal[4] = { VGPU_SCHED_EQUAL_SHARE, VGPU_SCHED_EQUAL_SHARE,
		                                VGPU_SCHED_EQUAL_SHARE, VGPU_SCHED_EQUAL_SHARE };
	double elapsed = 0;
	struct vgpu_gpu_time_config config;
	uint64_t poll, nonpoll;

	(void)state;
	vgpu_gpu_time_config_default(&config);
	vgpu_gpu_time_phase_lengths(&config, 4, NULL, &poll, &nonpoll);
	elapsed = 500.0 * (double)(poll + nonpoll); /* on average */

	fluid_init(&run, vms, 4, modes, weights);
	fluid_periods(&run, vms, f, 4, 500);
	if (fabs(f[0].gpu_ns / elapsed - 0.25) > 0.05)
		fail_msg("VGPU_SEED=%" PRIu64 ": fixed-share VM alone got %.3f of the GPU, share 0.25",
		         seed, f[0].gpu_ns / elapsed);

	reset_gpu_time(f, 4);
	fluid_init(&run, vms, 4, equal, weights);
	fluid_periods(&run, vms, f, 4, 500);
	assert_true(f[0].gpu_ns / elapsed > 0.9); /* work-conserving */
	assert_int_equal(vms[0].throttled_ns, 0);
}

/* An idle VM does not save up GPU time: after 500 periods alone, A is not
 * starved when B arrives, and the two share from the first periods on. */
static void test_idle_does_not_save_up(void **state)
{
	struct fluid_vm f[2] = { { 1, true, 0 }, { 1, false, 0 } };
	struct vgpu_sched_vm vms[2];
	struct fluid_run run;
	const uint32_t weights[2] = { 1, 1 };
	const enum vgpu_sched_mode equal[2] = { VGPU_SCHED_EQUAL_SHARE, VGPU_SCHED_EQUAL_SHARE };

	(void)state;
	fluid_init(&run, vms, 2, equal, weights);
	fluid_periods(&run, vms, f, 2, 500);
	assert_int_equal(vms[0].throttled_ns, 0);
	assert_int_equal(vms[1].vtime_ns, run.sched.sys_ns);

	f[1].busy = true;
	f[1].demand = 4; /* and it has the longer commands */
	reset_gpu_time(f, 2);
	fluid_periods(&run, vms, f, 2, 30);
	assert_shares(f, 2, (const double[]){ 0.5, 0.5 }, 0.08, "after the idle VM returns");
	assert_int_equal(vms[0].throttled_ns, 0);
}

/* A best-effort VM beside equal-share ones is never throttled, and the
 * equal-share ones still split what is left evenly between them. */
/* A throttled VM is charged its measured residue (the work it had queued
 * before the suspension), and the VMs that ran share only the rest of the
 * non-polling phase. */
static void test_residue_of_throttled(void **state)
{
	struct vgpu_sched sched;
	struct vgpu_sched_vm vms[2];
	struct vgpu_sched_period period = {
		.nonpoll_before_ns = 10000000, .poll_ns = 2000000, .nonpoll_next_ns = 10000000,
	};

	vgpu_sched_init(&sched);
	vgpu_sched_vm_init(&sched, &vms[0], VGPU_SCHED_EQUAL_SHARE, 1);
	vgpu_sched_vm_init(&sched, &vms[1], VGPU_SCHED_EQUAL_SHARE, 1);
	vms[0].throttled = true; /* in the non-polling phase just past */
	vms[0].residue_ns = 4000000;
	vms[0].used_ns = 1000000;
	vms[1].used_ns = 1000000;
	vms[0].active = vms[1].active = true;
	vgpu_sched_update(&sched, vms, 2, &period);
	assert_int_equal(vms[0].estimate_ns, 5000000);
	/* (10 - 4) ms × 1/2 × (2 ÷ 1) + 1 ms */
	assert_int_equal(vms[1].estimate_ns, 7000000);
	/* without residue: the GPU time nobody could use goes to the runner */
	vgpu_sched_init(&sched);
	vgpu_sched_vm_init(&sched, &vms[0], VGPU_SCHED_EQUAL_SHARE, 1);
	vgpu_sched_vm_init(&sched, &vms[1], VGPU_SCHED_EQUAL_SHARE, 1);
	vms[0].throttled = true;
	vms[0].used_ns = vms[1].used_ns = 1000000;
	vms[0].active = vms[1].active = true;
	vgpu_sched_update(&sched, vms, 2, &period);
	assert_int_equal(vms[0].estimate_ns, 1000000);
	assert_int_equal(vms[1].estimate_ns, 11000000);
}

static void test_best_effort_beside_fair(void **state)
{
	struct fluid_vm f[3] = { { 2, true, 0 }, { 4, true, 0 }, { 1, true, 0 } };
	struct vgpu_sched_vm vms[3];
	struct fluid_run run;
	const uint32_t weights[3] = { 1, 1, 1 };
	const enum vgpu_sched_mode modes[3] = { VGPU_SCHED_BEST_EFFORT, VGPU_SCHED_EQUAL_SHARE,
		                                VGPU_SCHED_EQUAL_SHARE };

	(void)state;
	fluid_init(&run, vms, 3, modes, weights);
	fluid_periods(&run, vms, f, 3, 700);
	assert_int_equal(vms[0].throttled_ns, 0);
	if (fabs(f[1].gpu_ns / f[2].gpu_ns - 1) > 0.1)
		fail_msg("VGPU_SEED=%" PRIu64 ": equal-share VMs got %.0f and %.0f ns", seed,
		         f[1].gpu_ns, f[2].gpu_ns);
}


/* A throttle alone (NEON's sampling interval): kernels of kernel_ns with
 * gap_ns between them on channel 3, polled every 0.5 .. 1.5 us. */
static uint64_t neon_profile_throttle(uint64_t kernel_ns, uint64_t gap_ns, uint64_t length_ns,
                                      struct vgpu_rng *rng, uint64_t *commands)
{
	struct vgpu_neon_profile profile;
	struct vgpu_gpu_time_sample sample = { .t_ns = 0, .channel = 3, .pending = true };
	uint64_t cycle = kernel_ns + gap_ns;

	vgpu_neon_profile_begin(&profile, &sample);
	while (sample.t_ns < length_ns) {
		sample.t_ns += 500 + vgpu_rng_below(rng, 1001);
		sample.pending = sample.t_ns % cycle < kernel_ns;
		/* an idle engine may show no channel at all */
		sample.channel = sample.pending || vgpu_rng_below(rng, 2) ? 3 : -1;
		vgpu_neon_profile_observe(&profile, &sample);
	}
	*commands = profile.commands;
	return vgpu_neon_profile_average(&profile);
}

static void test_neon_command_length(void **state)
{
	struct vgpu_rng rng;

	(void)state;
	vgpu_rng_seed(&rng, seed ^ 0x6e656f6eull);
	for (uint64_t us = 10; us <= 1000; us *= 10) {
		uint64_t commands, avg;

		avg = neon_profile_throttle(us * 1000, 200000, 20000000, &rng, &commands);
		/* the interval may end inside a command: that one counts short */
		if (llabs((long long)avg - (long long)(us * 1000)) >
		    (long long)(3000 + us * 1000 / commands))
			fail_msg("kernel %" PRIu64 " us measured %" PRIu64 " ns (VGPU_SEED=%" PRIu64
			         ")",
			         us, avg, seed);
		/* one command per cycle seen, the first one whole or in part */
		assert_int_equal(commands, (20000000 + us * 1000 + 199999) / (us * 1000 + 200000));
	}
	/* kernels back to back on one channel look like one long command to
	 * the pending bit; the fetched entries tell them apart */
	{
		struct vgpu_neon_profile profile = { .busy_ns = 5000000, .commands = 1 };
		uint64_t commands;

		(void)neon_profile_throttle(100000, 0, 5000000, &rng, &commands);
		assert_int_equal(commands, 1);
		vgpu_neon_profile_fetched(&profile, 50);
		assert_int_equal(vgpu_neon_profile_average(&profile), 100000);
		vgpu_neon_profile_fetched(&profile, 10); /* fewer: the segments hold */
		assert_int_equal(profile.commands, 50);
	}
}

static void test_neon_channel_switch_starts_command(void)
{
	struct vgpu_neon_profile profile;
	struct vgpu_gpu_time_sample s = { .t_ns = 0, .channel = 1, .pending = true };

	vgpu_neon_profile_begin(&profile, &s);
	s.t_ns = 100;
	s.channel = 2; /* another channel of the VM, busy: a new command */
	vgpu_neon_profile_observe(&profile, &s);
	s.t_ns = 400;
	s.pending = false;
	vgpu_neon_profile_observe(&profile, &s);
	s.t_ns = 50; /* older than the last sample: taken at 400 */
	vgpu_neon_profile_observe(&profile, &s);
	assert_int_equal(profile.commands, 2);
	assert_int_equal(profile.busy_ns, 400);
	assert_int_equal(vgpu_neon_profile_average(&profile), 200);
	vgpu_neon_profile_begin(&profile, &s); /* idle from the start: none */
	assert_int_equal(vgpu_neon_profile_average(&profile), 0);
}

static void test_neon_estimate(void **state)
{
	const uint64_t avg[4] = { 100, 300, 0, 600 };
	const uint64_t none[2] = { 0, 0 };
	uint64_t out[4];

	(void)state;
	test_neon_channel_switch_starts_command();
	vgpu_neon_estimate(avg, 4, 1000, out);
	assert_int_equal(out[0], 100);
	assert_int_equal(out[1], 300);
	assert_int_equal(out[2], 0); /* no command seen: inactive */
	assert_int_equal(out[3], 600);
	vgpu_neon_estimate(none, 2, 1000, out);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0);
	/* NEON's metric ignores how often a VM runs: a 100 us throttle idle
	 * 90% of the time counts like one running back to back (LoGA §5.5) */
	{
		struct vgpu_rng rng;
		uint64_t commands, busy[2];

		vgpu_rng_seed(&rng, seed ^ 0x65737431ull);
		busy[0] = neon_profile_throttle(500000, 20000, 20000000, &rng, &commands);
		busy[1] = neon_profile_throttle(100000, 900000, 20000000, &rng, &commands);
		vgpu_neon_estimate(busy, 2, 6000000, out);
		assert_true(out[1] > 900000 && out[1] < 1100000); /* 1/6, not 1/51 */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_timeline),
		cmocka_unit_test(test_drained_channel_is_idle),
		cmocka_unit_test(test_long_command_gets_the_phase),
		cmocka_unit_test(test_unknown_channel_and_old_samples),
		cmocka_unit_test(test_blind_gap),
		cmocka_unit_test(test_extrapolate),
		cmocka_unit_test(test_phase_lengths),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_equal_share),
		cmocka_unit_test(test_weighted),
		cmocka_unit_test(test_fixed_share),
		cmocka_unit_test(test_idle_does_not_save_up),
		cmocka_unit_test(test_best_effort_beside_fair),
		cmocka_unit_test(test_residue_of_throttled),
		cmocka_unit_test(test_neon_command_length),
		cmocka_unit_test(test_neon_estimate),
	};

	seed = test_seed();
	fprintf(stderr, "test_gpu_time: VGPU_SEED=%" PRIu64 "\n", seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
