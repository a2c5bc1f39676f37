// SPDX-License-Identifier: MIT
/*
 * guest-submit-bench - submission throughput through a directly mapped
 * channel with vgpud attached, against the same work on simgpu alone,
 * measured in one run (figures, not pass/fail; goal: ratio >= 0.99).
 *
 * "vgpud": this process attaches to a vgpud it starts (a subprocess with a
 * private socket, like a VM's device) and submits through libvgpu-guest
 * into the channel window mapped from vgpud's BAR2; vgpud's simgpu runs the
 * work. "simgpu": the same runtime and submission code on an in-process
 * simgpu with the same configuration, no vgpud. Each round runs both
 * modes interleaved A B B A A B B A ... in short segments (50 ms by
 * default; which mode is A alternates from round to round; each segment
 * wakes its GPU before its clock starts), so that the load of a shared
 * machine hits both alike; the round's ratio is the vgpud rate over the
 * simgpu rate of that round, and the figure is the median of the rounds'
 * ratios with their spread (min..max). The submitter and both GPUs are
 * pinned to two CPUs; channels are new every round and vgpud and the
 * simgpu are set up anew for each third of the rounds, so that where their
 * memory lands is per-round noise, not an offset of the run. --json FILE
 * writes the figures (bench-common.h).
 *
 * Work per submission: "nop" is an empty submission (only the fence the
 * runtime appends); "stream" runs STREAM over a 64 KiB buffer. Every
 * submission is a GPFIFO entry + GP_PUT + doorbell word; the only waits are
 * for pushbuffer/GPFIFO space and the final fence.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <getopt.h>
#include <sched.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu_guest.h"
#include "vgpu_guest_local.h"
#include "vgpu_guest_simgpu.h"
#include "vgpu/util.h"

#ifndef VGPUD_PATH
#define VGPUD_PATH "vgpud"
#endif

#define VRAM "256M"
#define VRAM_BYTES (256ull << 20)
#define IDLE_SLEEP_US 1000u
#define GPFIFO_ENTRIES 512u
#define STREAM_BYTES (64u << 10)
#define MAX_ROUNDS 64

enum work { WORK_NOP, WORK_STREAM };

static const char *const work_names[] = { "nop", "stream-64K" };

static pid_t daemon_pid; /* vgpud, while it runs: die() ends it */
static int gpu_cpu = -1;  /* pinned: the GPUs' threads on this CPU, */
static int submit_cpu = -1; /* the submitter on this one */

/* The first two CPUs this process may use, for pinning; false if fewer. */
static bool two_cpus(int *first, int *second)
{
	cpu_set_t set;
	int cpu, found = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (found++ == 0)
			*first = cpu;
		else
			*second = cpu;
	}
	return found == 2;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "guest-submit-bench: %s: %s\n", what, why);
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	exit(1);
}

/* ------------------------------------------------------------------------ */
/* vgpud as a subprocess                                                    */

struct bench_vgpud {
	char dir[64];
	char socket[128];
	pid_t pid;
};

static void vgpud_start(struct bench_vgpud *d, const char *binary)
{
	char control[128], log[128], idle[16];
	int i;

	snprintf(d->dir, sizeof(d->dir), "/tmp/guest-submit-bench.XXXXXX");
	if (!mkdtemp(d->dir))
		die("mkdtemp", strerror(errno));
	snprintf(d->socket, sizeof(d->socket), "%s/vgpud.sock", d->dir);
	snprintf(control, sizeof(control), "%s/control.sock", d->dir);
	snprintf(log, sizeof(log), "%s/vgpud.log", d->dir);
	snprintf(idle, sizeof(idle), "%u", IDLE_SLEEP_US);
	d->pid = fork();
	if (d->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		if (gpu_cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(gpu_cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		execl(binary, binary, "--socket", d->socket, "--control-socket", control, "--vram",
		      VRAM, "--pfifo-idle-sleep-max-us", idle, "--log-level", "warn", (char *)NULL);
		dprintf(2, "cannot run %s: %s\n", binary, strerror(errno));
		_exit(127);
	}
	daemon_pid = d->pid;
	for (i = 0; i < 200; i++) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), ok;

		memcpy(addr.sun_path, d->socket, strlen(d->socket) + 1);
		ok = fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
		if (fd >= 0)
			close(fd);
		if (ok)
			return;
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			die("vgpud exited at start; see", log);
		usleep(50000);
	}
	die("vgpud did not open its socket; see", log);
}

static void vgpud_stop(struct bench_vgpud *d)
{
	char command[128];

	kill(d->pid, SIGTERM);
	waitpid(d->pid, NULL, 0);
	daemon_pid = 0;
	snprintf(command, sizeof(command), "rm -rf '%s'", d->dir);
	if (system(command) != 0)
		fprintf(stderr, "guest-submit-bench: could not remove %s\n", d->dir);
}

/* ------------------------------------------------------------------------ */
/* The measured loop                                                        */

struct target {
	const char *name;
	struct vgpu_guest_device *dev;
	struct vgpu_channel *channel;
	struct vgpu_guest_buffer buffer;
	double rates[2][MAX_ROUNDS]; /* submissions per second, per work */
	double space_waits[2][MAX_ROUNDS]; /* begins that waited for the GPU, per second */
};

static void target_prepare(struct target *t)
{
	uint32_t *words;
	uint64_t fence;

	if (vgpu_buffer_alloc(t->dev, STREAM_BYTES, VGPU_PRIORITY_DEFAULT, &t->buffer))
		die(t->name, vgpu_device_last_error(t->dev));
	if (vgpu_channel_create(t->dev, GPFIFO_ENTRIES, &t->channel))
		die(t->name, vgpu_device_last_error(t->dev));
	if (vgpu_channel_begin(t->channel, VGPU_COMMAND_MAX_WORDS, &words) ||
	    vgpu_channel_submit(t->channel,
	                        vgpu_push_launch_fill(words, t->buffer.gpu_va, STREAM_BYTES, 1),
	                        VGPU_SUBMIT_INTERRUPT, &fence) ||
	    vgpu_channel_wait(t->channel, fence, 10000))
		die(t->name, "filling the buffer failed");
}

/* A new channel (new GPFIFO, control page and pushbuffer memory) for t. */
static void target_new_channel(struct target *t)
{
	vgpu_channel_destroy(t->channel);
	if (vgpu_channel_create(t->dev, GPFIFO_ENTRIES, &t->channel))
		die(t->name, vgpu_device_last_error(t->dev));
}

/* The submissions of one work: how many were submitted, the last fence. */
static uint64_t submit_batch(struct target *t, enum work work, unsigned count)
{
	uint64_t fence = 0;
	uint32_t *words, n;
	unsigned i;

	for (i = 0; i < count; i++) {
		if (vgpu_channel_begin(t->channel, VGPU_COMMAND_MAX_WORDS, &words))
			die(t->name, "waiting for pushbuffer space failed");
		n = work == WORK_STREAM ?
		            vgpu_push_launch_stream(words, t->buffer.gpu_va, STREAM_BYTES, 1) :
		            0;
		if (vgpu_channel_submit(t->channel, n, 0, &fence))
			die(t->name, "submitting failed");
	}
	return fence;
}

/*
 * Submit for about seconds, then wait for the last fence; adds the
 * submissions to *total and the time to *ns. Before the clock starts, a few
 * submissions wake this mode's GPU (its PFIFO thread backs off to sleeps of
 * up to IDLE_SLEEP_US while the other mode runs) and are waited for: the
 * segment measures steady-state submission, not the GPU's wake-up.
 */
static void run_segment(struct target *t, enum work work, double seconds, uint64_t *total,
                        uint64_t *ns)
{
	uint64_t start, end, count = 0, fence;

	if (vgpu_channel_wait(t->channel, submit_batch(t, work, 16), 60000))
		die(t->name, "waiting for the warm-up fence failed");
	start = vgpu_monotonic_ns();
	end = start + (uint64_t)(seconds * 1e9);
	fence = 0;
	/* Check the clock every 64 submissions only. */
	while (vgpu_monotonic_ns() < end) {
		fence = submit_batch(t, work, 64);
		count += 64;
	}
	if (vgpu_channel_wait(t->channel, fence, 60000))
		die(t->name, "waiting for the last fence failed");
	*total += count;
	*ns += vgpu_monotonic_ns() - start;
}

static uint64_t space_waits(struct target *t)
{
	struct vgpu_channel_stats stats;

	vgpu_channel_stats(t->channel, &stats);
	return stats.waits_for_space;
}

/*
 * Pinned (the default with two CPUs or more): every thread of this process
 * but the caller (the in-process simgpu's) on gpu_cpu, the caller (the
 * submitter) on submit_cpu; vgpud was started on gpu_cpu. Both modes then
 * have the GPU on a core of its own, as a real GPU is, and the scheduler
 * does not move them about (unpinned, a round's ratio ranged 0.2..2.9 on a
 * loaded 2-core machine; pinned, a few per cent).
 */
static void pin_threads(void)
{
	pid_t self = (pid_t)gettid();
	cpu_set_t gpu, submit;
	struct dirent *entry;
	DIR *dir = opendir("/proc/self/task");

	CPU_ZERO(&gpu);
	CPU_SET(gpu_cpu, &gpu);
	CPU_ZERO(&submit);
	CPU_SET(submit_cpu, &submit);
	if (!dir)
		die("pinning", strerror(errno));
	while ((entry = readdir(dir))) {
		pid_t tid = (pid_t)atoi(entry->d_name);

		if (tid > 0 && tid != self && sched_setaffinity(tid, sizeof(gpu), &gpu))
			die("pinning a GPU thread", strerror(errno));
	}
	closedir(dir);
	if (sched_setaffinity(0, sizeof(submit), &submit))
		die("pinning the submitter", strerror(errno));
}

/*
 * One round of one work: segments per mode, seconds per mode in all, in the
 * order A B B A A B B A ...: the two modes alternate on a time scale shorter
 * than the load's changes on a shared machine (a compiler job), so a round's
 * two sides see the same machine.
 */
static void run_round(struct target *targets, int first, enum work work, double seconds,
                      int segments, int round)
{
	uint64_t count[2] = { 0, 0 }, ns[2] = { 0, 0 }, waits[2];
	static const int order[4] = { 0, 1, 1, 0 };
	int i;

	for (i = 0; i < 2; i++)
		waits[i] = space_waits(&targets[i]);
	for (i = 0; i < 2 * segments; i++) {
		int m = (first + order[i % 4]) % 2;

		run_segment(&targets[m], work, seconds / segments, &count[m], &ns[m]);
	}
	for (i = 0; i < 2; i++) {
		targets[i].rates[work][round] = (double)count[i] / ((double)ns[i] / 1e9);
		targets[i].space_waits[work][round] =
		        (double)(space_waits(&targets[i]) - waits[i]) / ((double)ns[i] / 1e9);
	}
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: guest-submit-bench [--rounds N] [--seconds S] [--vgpud PATH] [--json FILE]\n"
	        "                          [--verbose]\n"
	        "Submission throughput through a mapped channel with vgpud attached vs. the\n"
	        "same work on simgpu alone, in one run: rounds of A B B A segments, the\n"
	        "median of the per-round ratios with their spread.\n"
	        "  --rounds N    rounds per work (default 21, at most %d)\n"
	        "  --seconds S   time per mode in one round (default 0.4)\n"
	        "  --segments N  segments per mode in one round, even (default 8: 50 ms each)\n"
	        "  --vgpud PATH  the vgpud binary (default $VGPUD, else the build's)\n"
	        "  --json FILE   also write the figures as one JSON object\n"
	        "  --verbose     print every round\n"
	        "  --work W      only nop or only stream (default both)\n"
	        "  --setups N    vgpud + simgpu set up anew N times, the rounds split among\n"
	        "                them (default 3; at most the rounds)\n"
	        "  --no-pin      do not pin (default: the submitter on the first CPU this\n"
	        "                process may use, both GPUs' threads on the second)\n"
	        "  --same-channels  keep each mode's channel for the whole run (default: new\n"
	        "                channels every round)\n",
	        MAX_ROUNDS);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "vgpud", required_argument, NULL, 'v' },
		{ "json", required_argument, NULL, 'j' },
		{ "segments", required_argument, NULL, 'g' },
		{ "no-pin", no_argument, NULL, 'p' },
		{ "same-channels", no_argument, NULL, 'S' },
		{ "work", required_argument, NULL, 'w' },
		{ "setups", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *binary = getenv("VGPUD") ? getenv("VGPUD") : VGPUD_PATH;
	struct vgpu_local_device_config local = { .vm_name = "guest-submit-bench" };
	struct simgpu_config gpu;
	struct vgpu_guest_simgpu_config sim = { .simgpu = &gpu };
	struct target targets[2] = { { .name = "vgpud" }, { .name = "simgpu" } };
	struct vgpu_channel_stats stats;
	struct vgpu_proto *proto;
	struct bench_vgpud daemon;
	uint64_t requests_before, requests_during = 0;
	double seconds = 0.4, load_before;
	int rounds = 21, segments = 8, opt, round, work, i;
	const char *json_path = NULL;
	struct json_object *json = NULL;
	static const char *const json_names[] = { "nop", "stream" };
	bool verbose = false, new_channels = true, pin = true;
	int first_work = WORK_NOP, last_work = WORK_STREAM, setups = 3, setup;
	char why[512];

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			if (rounds < 1 || rounds > MAX_ROUNDS) {
				usage(stderr);
				return 2;
			}
			break;
		case 's':
			seconds = atof(optarg);
			if (!(seconds > 0)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'v':
			binary = optarg;
			break;
		case 'j':
			json_path = optarg;
			break;
		case 'p':
			pin = false;
			break;
		case 'u':
			setups = atoi(optarg);
			if (setups < 1 || setups > MAX_ROUNDS) {
				usage(stderr);
				return 2;
			}
			break;
		case 'w':
			if (!strcmp(optarg, "nop")) {
				first_work = last_work = WORK_NOP;
			} else if (!strcmp(optarg, "stream")) {
				first_work = last_work = WORK_STREAM;
			} else {
				usage(stderr);
				return 2;
			}
			break;
		case 'S':
			new_channels = false;
			break;
		case 'g':
			segments = atoi(optarg);
			if (segments < 2 || segments % 2 || segments > 1000) {
				usage(stderr);
				return 2;
			}
			break;
		case 'V':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}

	if (setups > rounds)
		setups = rounds;
	if (!pin || !two_cpus(&submit_cpu, &gpu_cpu))
		submit_cpu = gpu_cpu = -1;
	/*
	 * Setups: a vgpud and an in-process simgpu each, rounds / setups rounds
	 * apiece. Where a setup's memory lands (the simgpu instance, its
	 * channels' pages and cache sets) moves a mode's rate by a few per cent
	 * for as long as it lives, the same in every round (one run's rounds
	 * all near 0.97, the next run's all near 1.04): new setups, and new
	 * channels every round, make that noise the median sees through
	 * rather than an offset of the whole run.
	 */
	load_before = load_average_1m();
	for (setup = 0, round = 0; setup < setups; setup++) {
		int end = rounds * (setup + 1) / setups;

		vgpud_start(&daemon, binary);
		local.socket_path = daemon.socket;
		if (vgpu_device_open_local(&local, 0, &targets[0].dev, why, sizeof(why)))
			die("attaching to vgpud", why);
		target_prepare(&targets[0]);

		/* simgpu alone, configured like vgpud's, with the same window sizes. */
		vgpu_channel_stats(targets[0].channel, &stats);
		simgpu_config_defaults(&gpu);
		gpu.vram_bytes = VRAM_BYTES;
		gpu.pfifo_idle_sleep_max_us = IDLE_SLEEP_US;
		sim.pushbuffer_bytes = stats.pushbuffer_bytes & ~4095u;
		if (vgpu_device_open_simgpu(&sim, &targets[1].dev, why, sizeof(why)))
			die("creating a simgpu", why);
		target_prepare(&targets[1]);

		if (gpu_cpu >= 0)
			pin_threads();
		proto = vgpu_guest_local_proto(targets[0].dev);
		if (setup == 0)
			printf("guest-submit-bench: %d rounds per work in %d setups, each %.2f s per "
			       "mode in %d segments A B B A A B ...;\n  %s; %s; GPFIFO %u entries, "
			       "pushbuffer %u bytes; load average %.2f\n",
			       rounds, setups, seconds, segments,
			       new_channels ? "new channels every round" :
			                      "the same channels throughout a setup",
			       gpu_cpu >= 0 ? "submitter and GPUs pinned to two CPUs" : "not pinned",
			       stats.gpfifo_entries, stats.pushbuffer_bytes, load_before);
		/* Warm both up (page faults, caches, the GPU threads' first sleeps). */
		for (work = first_work; work <= last_work; work++)
			run_round(targets, 0, (enum work)work, 0.1, 2, round);
		for (int first = round; round < end; round++) {
			if (new_channels && round > first)
				for (i = 0; i < 2; i++)
					target_new_channel(&targets[i]);
			/* Mailbox requests while submitting (new channels are requests). */
			requests_before = proto->counters.requests;
			for (work = first_work; work <= last_work; work++)
				run_round(targets, round % 2, (enum work)work, seconds, segments, round);
			requests_during += proto->counters.requests - requests_before;
		}
		for (i = 0; i < 2; i++) {
			vgpu_channel_destroy(targets[i].channel);
			vgpu_buffer_free(targets[i].dev, &targets[i].buffer);
			vgpu_device_close(targets[i].dev);
		}
		vgpud_stop(&daemon);
	}

	if (json_path)
		json = json_object_new_object();
	for (work = first_work; work <= last_work; work++) {
		double ratios[MAX_ROUNDS];
		struct spread ratio, with_vgpud, alone;
		char key[64];

		for (round = 0; round < rounds; round++) {
			ratios[round] = targets[0].rates[work][round] / targets[1].rates[work][round];
			if (verbose)
				printf("    %-11s round %2d: vgpud %10.0f/s (%6.0f space waits/s)  "
				       "simgpu %10.0f/s (%6.0f space waits/s)  ratio %.3f\n",
				       work_names[work], round, targets[0].rates[work][round],
				       targets[0].space_waits[work][round], targets[1].rates[work][round],
				       targets[1].space_waits[work][round], ratios[round]);
		}
		ratio = spread_of(ratios, rounds);
		with_vgpud = spread_of(targets[0].rates[work], rounds);
		alone = spread_of(targets[1].rates[work], rounds);
		printf("  %-11s vgpud attached %s/s  simgpu alone %s/s\n"
		       "  %-11s ratio %s  %s\n",
		       work_names[work], SPREAD("%.0f", with_vgpud), SPREAD("%.0f", alone), "",
		       SPREAD("%.3f", ratio),
		       ratio.median >= 0.99 ? "goal >= 0.99 met" : "goal >= 0.99 missed");
		snprintf(key, sizeof(key), "submission_ratio_%s", json_names[work]);
		json_spread(json, key, ratio);
		json_rounds(json, key, ratios, rounds);
		snprintf(key, sizeof(key), "submission_rate_%s_vgpud", json_names[work]);
		json_spread(json, key, with_vgpud);
		snprintf(key, sizeof(key), "submission_rate_%s_simgpu", json_names[work]);
		json_spread(json, key, alone);
	}
	printf("  mailbox requests during the measured submissions: %" PRIu64
	       " (submission never traps)\n",
	       requests_during);
	json_number(json, "submission_mailbox_requests",
	            (double)requests_during);

	json_number(json, "submission_rounds", rounds);
	json_number(json, "submission_setups", setups);
	json_number(json, "submission_seconds_per_mode", seconds);
	json_number(json, "submission_segments_per_mode", segments);
	if (json)
		json_object_object_add(json, "submission_pinned", json_object_new_boolean(gpu_cpu >= 0));
	json_number(json, "submission_load_average_before", load_before);
	json_number(json, "submission_load_average_after", load_average_1m());
	if (json_write(json, json_path, "guest-submit-bench"))
		return 1;
	json_object_put(json);
	return 0;
}
