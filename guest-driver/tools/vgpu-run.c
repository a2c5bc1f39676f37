// SPDX-License-Identifier: MIT
/*
 * vgpu-run - run one verified GPU workload on this VM's vGPU: the workloads
 * of vgpu-tenant (runtime/workloads.c), on vgpu.ko's render node. Resource
 * requests are ioctls; submissions are stores into the mmap()ed channel
 * window, without any system call. The summary shows the driver's mailbox
 * requests during the run next to the number of submissions.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu_compat.h"
#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"
#include "workload_cli.h"

#define TOOL "vgpu-run"

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t hold_released;

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-run [options] --workload NAME\n"
	        "\n"
	        "Runs a GPU workload on this VM's vGPU through the guest driver vgpu.ko:\n"
	        "it allocates GPU memory, submits straight into a channel window mapped\n"
	        "from the render node (no system call per submission), verifies every\n"
	        "buffer by checksum against a CPU reference, frees everything and prints a\n"
	        "summary. The same workloads as vgpu-tenant.\n"
	        "\n"
	        "Device:\n"
	        "  -D, --device PATH        render node (default: $%s, else the first\n"
	        "                           render node of driver 'vgpu')\n"
	        "\n"
	        "Workload:\n"
	        "  -w, --workload NAME      stream      STREAM passes over the data\n"
	        "                           stencil     5-point stencil on 1024-wide grids\n"
	        "                           gups        random read-modify-write updates\n"
	        "                           alloc-leak  allocate --buffer-size steps up to\n"
	        "                                       --size, hold for --duration, free\n"
	        "                                       (the GPUswap paper's `alloc`)\n"
	        "                           escape      hostile: tries to reach GPU memory\n"
	        "                                       it does not own (see vgpu-tenant\n"
	        "                                       --help); passes when the GPU\n"
	        "                                       refuses every try\n"
	        "                           stall       hostile: waits (--duration, default\n"
	        "                                       60s) for a fence behind a semaphore\n"
	        "                                       nobody releases; prints a 'vgpu-run:\n"
	        "                                       STALL' line when it starts waiting,\n"
	        "                                       and how the wait ended (device lost,\n"
	        "                                       channel killed, timeout)\n"
	        "                           throttle    THROTTLE kernels of --kernel-us,\n"
	        "                                       each followed by --gap-us idle\n"
	        "                                       (simgpu only; see vgpu-tenant --help)\n"
	        "      --kernel-us N        throttle: kernel length in microseconds\n"
	        "      --gap-us N           throttle: idle time after each kernel\n"
	        "  -S, --size SIZE          GPU memory the workload allocates (default 256M);\n"
	        "                           bytes or a number with K, M, G, T, e.g. 512M\n"
	        "  -b, --buffer-size SIZE   largest single allocation (default 32M)\n"
	        "  -d, --duration TIME      iterate (alloc-leak: hold the memory) this long\n"
	        "                           once the data is allocated and filled; TIME like\n"
	        "                           10s, 500ms, 2m (bare number: seconds)\n"
	        "  -i, --iterations N       stop after N iterations; with --duration,\n"
	        "                           whichever comes first. Neither: 1 iteration.\n"
	        "      --seed N             seed of the data (default 1)\n"
	        "      --priority N         ALLOC priority hint 0..15 (default %d; higher\n"
	        "                           is evicted later)\n"
	        "      --gpfifo-entries N   channel ring size, a power of two (default:\n"
	        "                           the backend's)\n"
	        "      --hold TIME          once the iterations are done, before verifying,\n"
	        "                           print a 'vgpu-run: HOLD' line to stderr (bytes\n"
	        "                           and buffers held, submissions so far, the VM's\n"
	        "                           statistics) and keep the memory until SIGUSR1 or\n"
	        "                           TIME passed (e.g. for a host to inspect it)\n"
	        "\n"
	        "Output:\n"
	        "  -j, --json               one JSON object instead of the summary\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "SIGINT or SIGTERM ends the workload early; it still verifies and frees.\n"
	        "\n"
	        "Exit status: 0 every checksum matched; 1 the workload failed or data did\n"
	        "not verify; 2 bad usage, or no vGPU render node.\n",
	        VGPU_GUEST_DRM_DEVICE_ENV, VGPU_PRIORITY_DEFAULT);
}

static void on_signal(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL); /* a second one ends the process */
}

static int usage_error(const char *fmt, const char *arg)
{
	return workload_cli_usage_error(TOOL, fmt, arg);
}

static void on_release(int sig)
{
	(void)sig;
	hold_released = 1;
}

/* The driver's counters around the workload. */
struct run {
	const char *path;
	bool have_counters;
	uint64_t mailbox_requests; /* during the run */
	uint64_t doorbells;
	uint64_t fence_irqs;
};

/* --hold: the workload's before_verify hook. */
struct hold {
	uint64_t ns;
	const struct vgpu_workload_result *result; /* updated by the workload */
	const struct drm_vgpu_stats *before;       /* driver counters at the start */
	bool have_before;
};

/* stall: say (one write) that the wait for the stalled fence begins. */
static void stall_started(void *arg, struct vgpu_guest_device *dev, uint64_t wait_ns)
{
	(void)arg;
	(void)dev;
	fprintf(stderr, "vgpu-run: STALL waiting up to %.1f s for a fence behind a semaphore "
	        "nobody releases\n", (double)wait_ns / 1e9);
	fflush(stderr);
}

static void hold_before_verify(void *arg, struct vgpu_guest_device *dev,
                               const struct vgpu_guest_buffer *buffers, uint64_t count)
{
	const struct hold *hold = arg;
	struct drm_vgpu_stats now;
	uint64_t bytes = 0, deadline;
	char line[512];
	uint64_t i;
	int len;

	for (i = 0; i < count; i++)
		bytes += buffers[i].bytes;
	/* One write: whoever waits for this line never sees half of it. */
	len = snprintf(line, sizeof(line),
	               "vgpu-run: HOLD bytes=%" PRIu64 " buffers=%" PRIu64 " submissions=%" PRIu64,
	               bytes, count, hold->result->submissions);
	if (vgpu_guest_drm_stats(dev, &now) == 0) {
		len += snprintf(line + len, sizeof(line) - len,
		                " vm_allocated=%" PRIu64 " vm_resident=%" PRIu64
		                " vm_evicted=%" PRIu64 " vm_evictions=%u",
		                (uint64_t)now.allocated_bytes, (uint64_t)now.resident_bytes,
		                (uint64_t)now.evicted_bytes, now.evictions);
		if (hold->have_before)
			/* minus the STATS request that read "now" */
			len += snprintf(line + len, sizeof(line) - len,
			                " mailbox_requests=%" PRIu64 " doorbells=%" PRIu64,
			                (uint64_t)(now.mailbox_requests -
			                           hold->before->mailbox_requests - 1),
			                (uint64_t)(now.mailbox_doorbells -
			                           hold->before->mailbox_doorbells - 1));
	}
	snprintf(line + len, sizeof(line) - len, " (SIGUSR1 or %.0f s: verify and free)\n",
	         (double)hold->ns / 1e9);
	fputs(line, stderr);
	fflush(stderr);
	deadline = vgpu_now_ns() + hold->ns;
	while (!hold_released && !stop_requested && vgpu_now_ns() < deadline) {
		struct timespec step = { 0, 20 * 1000 * 1000 };

		nanosleep(&step, NULL);
	}
	fprintf(stderr, "vgpu-run: HOLD released (%s)\n",
	        hold_released ? "SIGUSR1" : stop_requested ? "stop signal" : "time passed");
	fflush(stderr);
}

static void print_json(const struct run *run, const struct vgpu_device_info *info,
                       const struct vgpu_workload_result *r, uint64_t size)
{
	json_object *root = json_object_new_object();
	json_object *driver;

	json_object_object_add(root, "device", json_object_new_string(run->path));
	workload_cli_add_json(root, info, r, size);
	if (run->have_counters) {
		driver = json_object_new_object();
		json_object_object_add(driver, "mailbox_requests",
		                       json_object_new_uint64(run->mailbox_requests));
		json_object_object_add(driver, "doorbells", json_object_new_uint64(run->doorbells));
		json_object_object_add(driver, "fence_irqs", json_object_new_uint64(run->fence_irqs));
		json_object_object_add(root, "driver_during_run", driver);
	}
	workload_cli_print_json(root);
}

static void print_summary(const struct run *run, const struct vgpu_device_info *info,
                          const struct vgpu_workload_result *r, uint64_t size)
{
	printf("vgpu-run on %s\n", run->path);
	workload_cli_print_summary(info, r, size);
	if (run->have_counters)
		printf("  driver      %" PRIu64 " mailbox requests and %" PRIu64 " doorbells for %" PRIu64
		       " submissions; %" PRIu64 " fence interrupts\n",
		       run->mailbox_requests, run->doorbells, r->submissions, run->fence_irqs);
	workload_cli_print_verdict(r);
}

/* What the command line asks for. */
struct run_args {
	struct vgpu_workload_options options;
	const char *path; /* --device, or NULL: the first vgpu render node */
	uint64_t hold_ns;
	bool json;
};

/* The command line into a. true: go on; false: stop with *status (0 after
 * --help, EXIT_USAGE after a bad argument, said why). */
static bool parse_args(int argc, char **argv, struct run_args *a, int *status)
{
	static const struct option long_options[] = {
		{ "device", required_argument, NULL, 'D' },
		WORKLOAD_CLI_OPTIONS,
		{ "hold", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_workload = false;
	int opt;

	*status = EXIT_USAGE;
	workload_cli_defaults(&a->options, &stop_requested);
	while ((opt = getopt_long(argc, argv, "D:" WORKLOAD_CLI_SHORT "jh", long_options, NULL)) !=
	       -1) {
		switch (workload_cli_option(TOOL, opt, optarg, &a->options, &have_workload)) {
		case WORKLOAD_OPTION_TAKEN:
			continue;
		case WORKLOAD_OPTION_BAD:
			return false;
		case WORKLOAD_OPTION_OTHER:
			break;
		}
		switch (opt) {
		case 'D':
			a->path = optarg;
			break;
		case 'H':
			if (vgpu_parse_duration(optarg, &a->hold_ns) || !a->hold_ns) {
				usage_error("--hold wants a time such as 60s or 2m, not '%s'", optarg);
				return false;
			}
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			usage(stdout);
			*status = 0;
			return false;
		default:
			fprintf(stderr, "Try 'vgpu-run --help'.\n");
			return false;
		}
	}
	return workload_cli_args_done(TOOL, argc, argv, have_workload);
}

/* The driver's counters over the run, minus the STATS request that read
 * "after" itself. */
static void count_run(struct run *run, struct vgpu_guest_device *dev,
                      const struct drm_vgpu_stats *before)
{
	struct drm_vgpu_stats after;

	if (!run->have_counters || vgpu_guest_drm_stats(dev, &after)) {
		run->have_counters = false;
		return;
	}
	run->mailbox_requests = after.mailbox_requests - before->mailbox_requests - 1;
	run->doorbells = after.mailbox_doorbells - before->mailbox_doorbells - 1;
	run->fence_irqs = after.irq_fence - before->irq_fence;
}

int main(int argc, char **argv)
{
	struct run_args a = { 0 };
	struct drm_vgpu_stats before;
	struct vgpu_workload_result result;
	struct vgpu_guest_device *dev = NULL;
	struct run run = { 0 };
	struct hold hold = { 0 };
	char why[512];
	int status;

	if (!parse_args(argc, argv, &a, &status))
		return status;
	if (vgpu_device_open_drm(a.path, &dev, why, sizeof(why))) {
		fprintf(stderr, "vgpu-run: %s\n", why);
		return EXIT_USAGE;
	}
	run.path = vgpu_guest_drm_path(dev);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	run.have_counters = vgpu_guest_drm_stats(dev, &before) == 0;
	if (a.hold_ns) {
		struct sigaction release = { .sa_handler = on_release };

		sigaction(SIGUSR1, &release, NULL);
		hold.ns = a.hold_ns;
		hold.result = &result;
		hold.before = &before;
		hold.have_before = run.have_counters;
		a.options.before_verify = hold_before_verify;
		a.options.hook_arg = &hold;
	}
	a.options.stalled = stall_started;
	vgpu_workload_run(dev, &a.options, &result);
	count_run(&run, dev, &before);

	if (a.json)
		print_json(&run, vgpu_device_info(dev), &result, a.options.size_bytes);
	else
		print_summary(&run, vgpu_device_info(dev), &result, a.options.size_bytes);
	if (!result.verified && result.message[0])
		fprintf(stderr, "vgpu-run: %s: %s\n", result.workload, result.message);
	vgpu_device_close(dev);
	return result.verified ? 0 : EXIT_VERIFY_FAILED;
}
