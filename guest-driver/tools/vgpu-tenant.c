// SPDX-License-Identifier: MIT
/*
 * vgpu-tenant - "a VM without a VM": attach to vgpud over its local
 * transport exactly as a VM's vGPU device would, run one verified GPU
 * workload through a directly mapped channel, print a summary. The workload
 * escape is hostile: it checks that the GPU refuses access to memory the VM
 * does not own.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu_guest.h"
#include "vgpu_guest_local.h"
#include "vgpu_workloads.h"

#define EXIT_VERIFY_FAILED 1
#define EXIT_USAGE 2

static volatile sig_atomic_t stop_requested;

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-tenant [options] --workload NAME\n"
	        "\n"
	        "Attaches to vgpud over its local transport as one VM (\"a VM without a VM\"),\n"
	        "runs a GPU workload that submits straight into its mapped channel, verifies\n"
	        "every buffer by checksum against a CPU reference, frees everything and\n"
	        "prints a summary.\n"
	        "\n"
	        "Connection:\n"
	        "  -s, --socket PATH        vgpud's local transport socket (default:\n"
	        "                           $VGPUD_SOCKET, else %s)\n"
	        "  -n, --name NAME          VM name that vgpud and vgpuctl show\n"
	        "                           (default: tenant-PID)\n"
	        "  -p, --profile NAME       vGPU profile, e.g. vgpu-1G (default: vgpud's)\n"
	        "      --timeout-ms N       how long one mailbox request may take\n"
	        "                           (default %d)\n"
	        "\n"
	        "Workload:\n"
	        "  -w, --workload NAME      stream      STREAM passes over the data\n"
	        "                           stencil     5-point stencil on 1024-wide grids\n"
	        "                           gups        random read-modify-write updates\n"
	        "                           alloc-leak  allocate --buffer-size steps up to\n"
	        "                                       --size, hold for --duration, free\n"
	        "                                       (the GPUswap paper's `alloc`)\n"
	        "                           escape      hostile: allocate and fill --size,\n"
	        "                                       then try to reach memory that is not\n"
	        "                                       its own, each try on a fresh channel:\n"
	        "                                       (a) STREAM over its last buffer and\n"
	        "                                       --buffer-size past its end, (b) FILL\n"
	        "                                       far from anything it allocated, (c)\n"
	        "                                       COPY of its buffer to unallocated\n"
	        "                                       addresses. Passes when the GPU kills\n"
	        "                                       the channel of every try and its own\n"
	        "                                       data still verifies; fails if any try\n"
	        "                                       completes\n"
	        "                           stall       hostile: wait (--duration, default\n"
	        "                                       60s) for a fence behind a semaphore\n"
	        "                                       nobody releases; ends with how the\n"
	        "                                       wait ended (device lost, channel\n"
	        "                                       killed, timeout)\n"
	        "  -S, --size SIZE          GPU memory the workload allocates (default 256M);\n"
	        "                           SIZE is bytes or a number with K, M, G, T\n"
	        "                           (powers of 1024), e.g. 512M, 1.5G\n"
	        "  -b, --buffer-size SIZE   largest single allocation (default 32M)\n"
	        "  -d, --duration TIME      iterate (alloc-leak: hold the memory) this long,\n"
	        "                           counted once the data is allocated and filled;\n"
	        "                           TIME like 10s, 500ms, 2m, 1h (bare number: s)\n"
	        "  -i, --iterations N       stop after N iterations; with --duration,\n"
	        "                           whichever comes first; at least 1 iteration\n"
	        "                           runs. Neither given: 1 iteration.\n"
	        "      --seed N             seed of the data (default 1)\n"
	        "      --priority N         ALLOC priority hint 0..15 (default %d; higher\n"
	        "                           is evicted later)\n"
	        "      --gpfifo-entries N   channel ring size, a power of two\n"
	        "                           (default: vgpud's)\n"
	        "\n"
	        "Output:\n"
	        "  -j, --json               print one JSON object instead of the summary\n"
	        "      --linger TIME        after printing, stay attached (holding no GPU\n"
	        "                           memory) for TIME or until SIGINT/SIGTERM (one\n"
	        "                           that ended the workload does not count), so\n"
	        "                           that vgpuctl can still read the VM's final\n"
	        "                           figures, e.g. its modeled_runtime_ns\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "SIGINT or SIGTERM ends the workload early; it still verifies and frees.\n"
	        "\n"
	        "Exit status: 0 every checksum matched; 1 the workload failed or data did\n"
	        "not verify; 2 bad usage, or vgpud could not be reached.\n",
	        VGPU_LOCAL_DEFAULT_SOCKET, VGPU_PROTO_DEFAULT_TIMEOUT_MS, VGPU_PRIORITY_DEFAULT);
}

static void on_signal(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL); /* a second one ends the process */
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "vgpu-tenant: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'vgpu-tenant --help'.\n");
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

struct tenant {
	const char *socket_path;
	const char *name;
	const char *profile;
	uint64_t size;
	struct vgpu_proto_counters mailbox;
	bool have_mailbox;
};

static void print_json(const struct tenant *t, const struct vgpu_device_info *info,
                       const struct vgpu_workload_result *r, uint64_t size)
{
	json_object *root = json_object_new_object();
	json_object *stats, *mailbox;

	json_object_object_add(root, "name", json_object_new_string(t->name));
	json_object_object_add(root, "profile",
	                       t->profile ? json_object_new_string(t->profile) : NULL);
	json_object_object_add(root, "socket", json_object_new_string(t->socket_path));
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
	if (r->escapes_tried) {
		json_object *escapes = json_object_new_array();
		uint32_t i;

		json_object_object_add(root, "escapes_tried", json_object_new_int(
		                                                      (int32_t)r->escapes_tried));
		json_object_object_add(root, "escapes_refused",
		                       json_object_new_int((int32_t)r->escapes_refused));
		for (i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
			const struct vgpu_escape_attempt *a = &r->escapes[i];
			json_object *e;

			if (!a->tried)
				continue;
			e = json_object_new_object();
			json_object_object_add(e, "name", json_object_new_string(a->name));
			json_object_object_add(e, "what", json_object_new_string(a->what));
			json_object_object_add(e, "gpu_va", json_object_new_uint64(a->gpu_va));
			json_object_object_add(e, "bytes", json_object_new_uint64(a->bytes));
			json_object_object_add(e, "refused", json_object_new_boolean(a->refused));
			json_object_object_add(e, "error", json_object_new_int(a->error));
			json_object_array_add(escapes, e);
		}
		json_object_object_add(root, "escapes", escapes);
	}
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
	if (t->have_mailbox) {
		mailbox = json_object_new_object();
		json_object_object_add(mailbox, "requests", json_object_new_uint64(t->mailbox.requests));
		json_object_object_add(mailbox, "doorbells",
		                       json_object_new_uint64(t->mailbox.doorbells));
		json_object_object_add(mailbox, "error_statuses",
		                       json_object_new_uint64(t->mailbox.error_statuses));
		json_object_object_add(mailbox, "malformed_responses",
		                       json_object_new_uint64(t->mailbox.malformed_responses));
		json_object_object_add(mailbox, "timeouts", json_object_new_uint64(t->mailbox.timeouts));
		json_object_object_add(root, "mailbox", mailbox);
	}
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

static void print_summary(const struct tenant *t, const struct vgpu_device_info *info,
                          const struct vgpu_workload_result *r, uint64_t size)
{
	char a[32], b[32], c[32], d[32];

	human_bytes(size, a, sizeof(a));
	printf("vgpu-tenant %s (profile %s) on vgpud %s\n", t->name,
	       t->profile ? t->profile : "default", t->socket_path);
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
	if (t->have_mailbox)
		printf("  mailbox     %" PRIu64 " requests, %" PRIu64 " doorbells\n",
		       t->mailbox.requests, t->mailbox.doorbells);
	if (r->escapes_tried) {
		uint32_t i;

		for (i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
			const struct vgpu_escape_attempt *e = &r->escapes[i];

			if (!e->tried)
				continue;
			human_bytes(e->bytes, b, sizeof(b));
			printf("  escape      %s: %s at GPU VA 0x%" PRIx64 ": %s\n", e->name, b,
			       e->gpu_va,
			       e->refused ? "refused, channel killed" :
			       e->error   ? strerror(-e->error) :
			                    "COMPLETED without error");
		}
	}
	if (r->message[0])
		printf("  note        %s\n", r->message);
	printf("  checksums   %" PRIu64 " verified, %" PRIu64 " wrong\n", r->checksums,
	       r->mismatches);
	printf("%s\n", r->verified ? "PASS" : "FAIL");
}

/* --linger: stay attached until the time is up or a signal came. */
static void linger(uint64_t ns)
{
	struct timespec now, end, nap = { 0, 20 * 1000 * 1000 };

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)(ns / 1000000000u);
	end.tv_nsec += (long)(ns % 1000000000u);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (!stop_requested) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		nanosleep(&nap, NULL);
	}
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'n' },
		{ "profile", required_argument, NULL, 'p' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "workload", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 'S' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 'e' },
		{ "priority", required_argument, NULL, 'P' },
		{ "gpfifo-entries", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ "linger", required_argument, NULL, 'L' },
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
	struct vgpu_local_device_config config = { 0 };
	struct vgpu_workload_result result;
	struct tenant tenant = { 0 };
	struct vgpu_guest_device *dev = NULL;
	struct vgpu_proto *proto;
	uint64_t value, timeout_ms = 0, linger_ns = 0;
	char default_name[64], why[512];
	bool json = false, have_workload = false;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "s:n:p:w:S:b:d:i:jh", long_options, NULL)) != -1) {
		switch (opt) {
		case 's':
			config.socket_path = optarg;
			break;
		case 'n':
			config.vm_name = optarg;
			break;
		case 'p':
			config.profile = optarg;
			break;
		case 'T':
			if (parse_u64(optarg, &timeout_ms) || timeout_ms == 0 || timeout_ms > INT_MAX)
				return usage_error("--timeout-ms wants a positive number of "
				                   "milliseconds, not '%s'",
				                   optarg);
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
			if (parse_u64(optarg, &value) || value < 2 || value > (1u << 20) ||
			    (value & (value - 1)))
				return usage_error("--gpfifo-entries wants a power of two >= 2, "
				                   "not '%s'",
				                   optarg);
			options.gpfifo_entries = (uint32_t)value;
			break;
		case 'j':
			json = true;
			break;
		case 'L':
			if (vgpu_parse_duration(optarg, &linger_ns))
				return usage_error("--linger wants a time such as 10s or 500ms, "
				                   "not '%s'",
				                   optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'vgpu-tenant --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!have_workload)
		return usage_error("%s", "say which workload to run with --workload "
		                         "(stream, stencil, gups, alloc-leak, escape or stall)");
	if (!config.vm_name) {
		snprintf(default_name, sizeof(default_name), "tenant-%ld", (long)getpid());
		config.vm_name = default_name;
	}
	tenant.socket_path = vgpu_guest_local_socket_path(&config);
	tenant.name = config.vm_name;
	tenant.profile = config.profile;

	ret = vgpu_device_open_local(&config, (int)timeout_ms, &dev, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "vgpu-tenant: %s\n", why);
		return EXIT_USAGE;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	vgpu_workload_run(dev, &options, &result);

	if (linger_ns) {
		/* A signal that ended the workload does not end the lingering:
		 * the next one does (armed before the result is printed). */
		stop_requested = 0;
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	proto = vgpu_guest_local_proto(dev);
	if (proto) {
		tenant.mailbox = proto->counters;
		tenant.have_mailbox = true;
	}
	if (json)
		print_json(&tenant, vgpu_device_info(dev), &result, options.size_bytes);
	else
		print_summary(&tenant, vgpu_device_info(dev), &result, options.size_bytes);
	if (!result.verified && result.message[0])
		fprintf(stderr, "vgpu-tenant: %s: %s\n", result.workload, result.message);
	if (linger_ns) {
		fflush(stdout);
		linger(linger_ns);
	}
	vgpu_device_close(dev);
	return result.verified ? 0 : EXIT_VERIFY_FAILED;
}
