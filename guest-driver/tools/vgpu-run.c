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

#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"

#define EXIT_VERIFY_FAILED 1
#define EXIT_USAGE 2

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

static void on_release(int sig)
{
	(void)sig;
	hold_released = 1;
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "vgpu-run: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'vgpu-run --help'.\n");
	return EXIT_USAGE;
}

static int parse_u64(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long value;

	if (!text || !*text || *text == '-')
		return -EINVAL;
	errno = 0;
	value = strtoull(text, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = value;
	return 0;
}

static void human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double value = (double)bytes;
	unsigned int unit = 0;

	while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
		value /= 1024;
		unit++;
	}
	if (unit == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", value, units[unit]);
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

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
	deadline = monotonic_ns() + hold->ns;
	while (!hold_released && !stop_requested && monotonic_ns() < deadline) {
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
	json_object *stats, *driver;

	json_object_object_add(root, "device", json_object_new_string(run->path));
	json_object_object_add(root, "workload", json_object_new_string(r->workload));
	json_object_object_add(root, "verified", json_object_new_boolean(r->verified));
	json_object_object_add(root, "error", json_object_new_int(r->error));
	json_object_object_add(root, "message", json_object_new_string(r->message));
	json_object_object_add(root, "size_bytes", json_object_new_uint64(size));
	json_object_object_add(root, "target_reached", json_object_new_boolean(r->target_reached));
	json_object_object_add(root, "bytes_allocated", json_object_new_uint64(r->bytes_allocated));
	json_object_object_add(root, "buffers", json_object_new_uint64(r->buffers));
	json_object_object_add(root, "iterations", json_object_new_uint64(r->iterations));
	json_object_object_add(root, "submissions", json_object_new_uint64(r->submissions));
	json_object_object_add(root, "checksums", json_object_new_uint64(r->checksums));
	json_object_object_add(root, "mismatches", json_object_new_uint64(r->mismatches));
	json_object_object_add(root, "wall_seconds", json_object_new_double(r->wall_seconds));
	json_object_object_add(root, "verify_seconds", json_object_new_double(r->verify_seconds));
	json_object_object_add(root, "alloc_retries", json_object_new_uint64(r->alloc_retries));
	json_object_object_add(root, "alloc_ms_max",
	                       json_object_new_double((double)r->alloc_ns_max / 1e6));
	json_object_object_add(root, "alloc_ms_mean",
	                       json_object_new_double(r->buffers ? (double)r->alloc_ns_total /
	                                                                   1e6 / (double)r->buffers :
	                                                           0.0));
	if (info) {
		json_object_object_add(root, "vram_share_bytes",
		                       json_object_new_uint64(info->vram_share_bytes));
		json_object_object_add(root, "cap_bytes", json_object_new_uint64(info->cap_bytes));
		json_object_object_add(root, "chunk_bytes", json_object_new_uint64(info->chunk_bytes));
	}
	if (r->have_stats) {
		stats = json_object_new_object();
		json_object_object_add(stats, "allocated_bytes",
		                       json_object_new_uint64(r->stats.allocated_bytes));
		json_object_object_add(stats, "resident_bytes",
		                       json_object_new_uint64(r->stats.resident_bytes));
		json_object_object_add(stats, "evicted_bytes",
		                       json_object_new_uint64(r->stats.evicted_bytes));
		json_object_object_add(stats, "fair_share_bytes",
		                       json_object_new_uint64(r->stats.fair_share_bytes));
		json_object_object_add(stats, "evictions", json_object_new_uint64(r->stats.evictions));
		json_object_object_add(stats, "returns", json_object_new_uint64(r->stats.returns));
		json_object_object_add(root, "stats_before_free", stats);
	}
	if (run->have_counters) {
		driver = json_object_new_object();
		json_object_object_add(driver, "mailbox_requests",
		                       json_object_new_uint64(run->mailbox_requests));
		json_object_object_add(driver, "doorbells", json_object_new_uint64(run->doorbells));
		json_object_object_add(driver, "fence_irqs", json_object_new_uint64(run->fence_irqs));
		json_object_object_add(root, "driver_during_run", driver);
	}
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

static void print_summary(const struct run *run, const struct vgpu_device_info *info,
                          const struct vgpu_workload_result *r, uint64_t size)
{
	char a[32], b[32], c[32], d[32];

	human_bytes(size, a, sizeof(a));
	printf("vgpu-run on %s\n", run->path);
	if (info) {
		human_bytes(info->vram_share_bytes, b, sizeof(b));
		human_bytes(info->chunk_bytes, c, sizeof(c));
		if (info->cap_bytes)
			human_bytes(info->cap_bytes, d, sizeof(d));
		else
			snprintf(d, sizeof(d), "none");
		printf("  vGPU        ABI %u.%u, fair share %s, cap %s, chunk %s\n",
		       info->abi_version >> 16, info->abi_version & 0xffff, b, d, c);
	}
	human_bytes(r->bytes_allocated, b, sizeof(b));
	printf("  workload    %s: %s asked, %s allocated in %" PRIu64 " buffers%s\n", r->workload,
	       a, b, r->buffers, r->target_reached ? "" : " (target not reached)");
	printf("  run         %" PRIu64 " iterations, %" PRIu64 " submissions, %.2f s "
	       "(verification %.2f s)\n",
	       r->iterations, r->submissions, r->wall_seconds, r->verify_seconds);
	if (r->buffers)
		printf("  ALLOC       mean %.2f ms, max %.2f ms, %" PRIu64 " retried (BUSY)\n",
		       (double)r->alloc_ns_total / 1e6 / (double)r->buffers,
		       (double)r->alloc_ns_max / 1e6, r->alloc_retries);
	if (r->have_stats) {
		human_bytes(r->stats.resident_bytes, a, sizeof(a));
		human_bytes(r->stats.evicted_bytes, b, sizeof(b));
		human_bytes(r->stats.fair_share_bytes, c, sizeof(c));
		printf("  before free resident %s, evicted %s, fair share %s, %u evictions, "
		       "%u returns\n",
		       a, b, c, r->stats.evictions, r->stats.returns);
	}
	if (run->have_counters)
		printf("  driver      %" PRIu64 " mailbox requests and %" PRIu64 " doorbells for %" PRIu64
		       " submissions; %" PRIu64 " fence interrupts\n",
		       run->mailbox_requests, run->doorbells, r->submissions, run->fence_irqs);
	if (r->message[0])
		printf("  note        %s\n", r->message);
	printf("  checksums   %" PRIu64 " verified, %" PRIu64 " wrong\n", r->checksums,
	       r->mismatches);
	printf("%s\n", r->verified ? "PASS" : "FAIL");
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "workload", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 'S' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 'e' },
		{ "priority", required_argument, NULL, 'P' },
		{ "gpfifo-entries", required_argument, NULL, 'g' },
		{ "hold", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vgpu_workload_options options = {
		.size_bytes = VGPU_WORKLOAD_DEFAULT_SIZE,
		.buffer_bytes = VGPU_WORKLOAD_DEFAULT_BUFFER,
		.seed = 1,
		.priority = VGPU_PRIORITY_DEFAULT,
		.stop = &stop_requested,
	};
	struct drm_vgpu_stats before, after;
	struct vgpu_workload_result result;
	struct vgpu_guest_device *dev = NULL;
	struct run run = { 0 };
	struct hold hold = { 0 };
	const char *path = NULL;
	bool json = false, have_workload = false;
	uint64_t value;
	char why[512];
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "D:w:S:b:d:i:jh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			path = optarg;
			break;
		case 'w':
			if (vgpu_workload_parse(optarg, &options.kind))
				return usage_error("unknown workload '%s' (stream, stencil, gups, "
				                   "alloc-leak, escape, stall)",
				                   optarg);
			have_workload = true;
			break;
		case 'S':
			if (vgpu_parse_size(optarg, &options.size_bytes) ||
			    options.size_bytes < VGPU_PAGE_SIZE)
				return usage_error("--size wants a size of at least 4K such as 256M "
				                   "or 1G, not '%s'",
				                   optarg);
			break;
		case 'b':
			if (vgpu_parse_size(optarg, &options.buffer_bytes) ||
			    options.buffer_bytes < VGPU_PAGE_SIZE)
				return usage_error("--buffer-size wants a size of at least 4K such "
				                   "as 32M, not '%s'",
				                   optarg);
			break;
		case 'd':
			if (vgpu_parse_duration(optarg, &options.duration_ns))
				return usage_error("--duration wants a time such as 10s, 500ms or "
				                   "2m, not '%s'",
				                   optarg);
			break;
		case 'i':
			if (parse_u64(optarg, &options.iterations) || !options.iterations)
				return usage_error("--iterations wants a positive number, not '%s'",
				                   optarg);
			break;
		case 'e':
			if (parse_u64(optarg, &options.seed))
				return usage_error("--seed wants a number, not '%s'", optarg);
			break;
		case 'P':
			if (parse_u64(optarg, &value) || value > VGPU_PRIORITY_MAX)
				return usage_error("--priority wants 0..15, not '%s'", optarg);
			options.priority = (uint32_t)value;
			break;
		case 'g':
			if (parse_u64(optarg, &value) || value < 2 ||
			    value > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX || (value & (value - 1)))
				return usage_error("--gpfifo-entries wants a power of two from 2 to "
				                   "4096, not '%s'",
				                   optarg);
			options.gpfifo_entries = (uint32_t)value;
			break;
		case 'H':
			if (vgpu_parse_duration(optarg, &hold.ns) || !hold.ns)
				return usage_error("--hold wants a time such as 60s or 2m, not '%s'",
				                   optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'vgpu-run --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!have_workload)
		return usage_error("%s", "say which workload to run with --workload "
		                         "(stream, stencil, gups, alloc-leak, escape or stall)");

	ret = vgpu_device_open_drm(path, &dev, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "vgpu-run: %s\n", why);
		return EXIT_USAGE;
	}
	run.path = vgpu_guest_drm_path(dev);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	run.have_counters = vgpu_guest_drm_stats(dev, &before) == 0;
	if (hold.ns) {
		struct sigaction release = { .sa_handler = on_release };

		sigaction(SIGUSR1, &release, NULL);
		hold.result = &result;
		hold.before = &before;
		hold.have_before = run.have_counters;
		options.before_verify = hold_before_verify;
		options.hook_arg = &hold;
	}
	options.stalled = stall_started;
	vgpu_workload_run(dev, &options, &result);
	if (run.have_counters && vgpu_guest_drm_stats(dev, &after) == 0) {
		/* Minus the STATS request that read "after" itself. */
		run.mailbox_requests = after.mailbox_requests - before.mailbox_requests - 1;
		run.doorbells = after.mailbox_doorbells - before.mailbox_doorbells - 1;
		run.fence_irqs = after.irq_fence - before.irq_fence;
	} else {
		run.have_counters = false;
	}

	if (json)
		print_json(&run, vgpu_device_info(dev), &result, options.size_bytes);
	else
		print_summary(&run, vgpu_device_info(dev), &result, options.size_bytes);
	if (!result.verified && result.message[0])
		fprintf(stderr, "vgpu-run: %s: %s\n", result.workload, result.message);
	vgpu_device_close(dev);
	return result.verified ? 0 : EXIT_VERIFY_FAILED;
}
