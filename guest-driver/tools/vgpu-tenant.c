// SPDX-License-Identifier: MIT
/*
 * vgpu-tenant - "a VM without a VM": attach to vgpud over its local
 * transport exactly as a VM's vGPU device would, run one verified GPU
 * workload through a directly mapped channel, print a summary. The workloads
 * escape and copy-flood are hostile: the GPU must refuse access to memory the
 * VM does not own, and must share its engine with others however much work
 * one VM queues.
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
#include "workload_cli.h"

#define TOOL "vgpu-tenant"

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
	        "      --never-ack-swaps    hostile: never answer vgpud's window swaps\n"
	        "                           (vgpud must cut this tenant off when it\n"
	        "                           relocates its memory)\n"
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
	        "                           soak        a VM's life in random steps drawn from\n"
	        "                                       --seed: allocate (whole chunks, some\n"
	        "                                       a remainder chunk short), free, STREAM,\n"
	        "                                       verify, and detach holding its buffers\n"
	        "                                       then attach again under the same name;\n"
	        "                                       holds at most --size, buffers up to\n"
	        "                                       --buffer-size; every buffer is\n"
	        "                                       checksummed before it is freed or\n"
	        "                                       dropped, and at the end. Runs for\n"
	        "                                       --duration or --iterations steps\n"
	        "                                       (default 1000 steps); ./vgpu-dev soak\n"
	        "                                       runs 64 of them\n"
	        "                           copy-flood  hostile: fill --size (at least two\n"
	        "                                       buffers), then submit 1 MiB of\n"
	        "                                       pushbuffer of nothing but COPYs of a\n"
	        "                                       whole buffer until SIGINT/SIGTERM (or\n"
	        "                                       the GPU did it all); passes when its\n"
	        "                                       own data still verifies\n"
	        "                           never-release\n"
	        "                                       hostile: allocate and fill --size,\n"
	        "                                       submit a SEMAPHORE_ACQUIRE nothing\n"
	        "                                       releases, hold for --duration (or\n"
	        "                                       until SIGTERM) asking for STATS every\n"
	        "                                       20 ms, then verify on a fresh channel;\n"
	        "                                       reports whether vgpud killed the\n"
	        "                                       stuck channel (the hold's start is\n"
	        "                                       announced on stderr)\n"
	        "                           staller     hostile: never-release that parks a\n"
	        "                                       fresh channel the same way whenever\n"
	        "                                       vgpud kills one\n"
	        "                           hog         hostile: allocate and fill --size,\n"
	        "                                       keep the channel's ring full of long\n"
	        "                                       (watchdog-legal) STREAM kernels over\n"
	        "                                       the first buffer until --duration or\n"
	        "                                       SIGTERM, re-arming on a fresh channel\n"
	        "                                       when vgpud kills it; verifies the\n"
	        "                                       other buffers\n"
	        "                           stall       hostile: wait (--duration, default\n"
	        "                                       60s) for a fence behind a semaphore\n"
	        "                                       nobody releases; ends with how the\n"
	        "                                       wait ended (device lost, channel\n"
	        "                                       killed, timeout)\n"
	        "                           throttle    LoGA's load generator: a THROTTLE\n"
	        "                                       kernel of --kernel-us (default 1000),\n"
	        "                                       waited for, then --gap-us idle (default\n"
	        "                                       0), for --duration or --iterations;\n"
	        "                                       verifies its --size of data at the end\n"
	        "                                       (simgpu only)\n"
	        "      --kernel-us N        throttle: kernel length in microseconds\n"
	        "      --gap-us N           throttle: idle time after each kernel\n"
	        "  -S, --size SIZE          GPU memory the workload allocates (default 256M);\n"
	        "                           SIZE is bytes or a number with K, M, G, T\n"
	        "                           (powers of 1024), e.g. 512M, 1.5G\n"
	        "  -b, --buffer-size SIZE   largest single allocation (default 32M)\n"
	        "  -d, --duration TIME      iterate (alloc-leak: hold the memory; soak: take\n"
	        "                           steps) this long,\n"
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
	        "                           figures, e.g. its gpu_time_ns\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "SIGINT or SIGTERM ends the workload early; it still verifies and frees.\n"
	        "\n"
	        "Exit status: 0 every checksum matched; 1 the workload failed or data did\n"
	        "not verify; 2 bad usage, or vgpud could not be reached.\n",
	        VGPU_LOCAL_DEFAULT_SOCKET, VGPU_PROTO_DEFAULT_TIMEOUT_MS, VGPU_PRIORITY_DEFAULT);
}

/* never-release: tell whoever watches stderr (tests) that the hold began. */
static void announce_hold(void *arg)
{
	const char *name = arg;

	fprintf(stderr, "vgpu-tenant %s: holding its memory behind the acquire\n", name);
	fflush(stderr);
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

struct tool_tenant {
	const char *socket_path;
	const char *name;
	const char *profile;
	uint64_t size;
	struct vgpu_proto_counters mailbox;
	bool have_mailbox;
};

static void print_json(const struct tool_tenant *t, const struct vgpu_device_info *info,
		       const struct vgpu_workload_result *r, uint64_t size)
{
	json_object *root = json_object_new_object();
	json_object *mailbox;

	json_object_object_add(root, "name", json_object_new_string(t->name));
	json_object_object_add(root, "profile",
	                       t->profile ? json_object_new_string(t->profile) : NULL);
	json_object_object_add(root, "socket", json_object_new_string(t->socket_path));
	workload_cli_add_json(root, info, r, size);
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
	workload_cli_print_json(root);
}

static void print_summary(const struct tool_tenant *t, const struct vgpu_device_info *info,
			  const struct vgpu_workload_result *r, uint64_t size)
{
	printf("vgpu-tenant %s (profile %s) on vgpud %s\n", t->name,
	       t->profile ? t->profile : "default", t->socket_path);
	workload_cli_print_summary(info, r, size);
	if (t->have_mailbox)
		printf("  mailbox     %" PRIu64 " requests, %" PRIu64 " doorbells\n",
		       t->mailbox.requests, t->mailbox.doorbells);
	workload_cli_print_verdict(r);
}

/* soak's detach step: the VM detaches holding its buffers (the device is
 * closed) and attaches again under the same name and profile. */
struct reattach {
	const struct vgpu_local_device_config *config;
	int timeout_ms;
	struct vgpu_guest_device **current; /* main's device, kept in step */
};

static int reattach(void *arg, struct vgpu_guest_device **dev, char *why, size_t why_len)
{
	struct reattach *r = arg;
	int ret;

	vgpu_device_close(*dev);
	*dev = NULL;
	ret = vgpu_device_open_local(r->config, r->timeout_ms, dev, why, why_len);
	*r->current = *dev;
	return ret;
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

/* What the command line asks for. */
struct tenant_args {
	struct vgpu_workload_options options;
	struct vgpu_local_device_config config;
	uint64_t timeout_ms, linger_ns;
	bool json;
	char default_name[64];
};

/* The command line into a. true: go on; false: stop with *status (0 after
 * --help, EXIT_USAGE after a bad argument, said why). */
static bool parse_args(int argc, char **argv, struct tenant_args *a, int *status)
{
	static const struct option long_options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'n' },
		{ "profile", required_argument, NULL, 'p' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		WORKLOAD_CLI_OPTIONS,
		{ "never-ack-swaps", no_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },
		{ "linger", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_workload = false;
	int opt;

	*status = EXIT_USAGE;
	workload_cli_defaults(&a->options, &stop_requested);
	while ((opt = getopt_long(argc, argv, "s:n:p:" WORKLOAD_CLI_SHORT "jh", long_options,
	                          NULL)) != -1) {
		switch (workload_cli_option(TOOL, opt, optarg, &a->options, &have_workload)) {
		case WORKLOAD_OPTION_TAKEN:
			continue;
		case WORKLOAD_OPTION_BAD:
			return false;
		case WORKLOAD_OPTION_OTHER:
			break;
		}
		switch (opt) {
		case 's':
			a->config.socket_path = optarg;
			break;
		case 'n':
			a->config.vm_name = optarg;
			break;
		case 'p':
			a->config.profile = optarg;
			break;
		case 'T':
			if (workload_cli_parse_u64(optarg, &a->timeout_ms) || a->timeout_ms == 0 ||
			    a->timeout_ms > INT_MAX) {
				usage_error("--timeout-ms wants a positive number of milliseconds, "
				            "not '%s'", optarg);
				return false;
			}
			break;
		case 'A':
			a->config.never_ack_window_swaps = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'L':
			if (vgpu_parse_duration(optarg, &a->linger_ns)) {
				usage_error("--linger wants a time such as 10s or 500ms, not '%s'",
				            optarg);
				return false;
			}
			break;
		case 'h':
			usage(stdout);
			*status = 0;
			return false;
		default:
			fprintf(stderr, "Try 'vgpu-tenant --help'.\n");
			return false;
		}
	}
	if (!workload_cli_args_done(TOOL, argc, argv, have_workload))
		return false;
	if (!a->config.vm_name) {
		snprintf(a->default_name, sizeof(a->default_name), "tenant-%ld", (long)getpid());
		a->config.vm_name = a->default_name;
	}
	return true;
}

/* The result: JSON or a summary on stdout, a failed verification's
 * message on stderr. */
static void report(struct tool_tenant *tenant, struct vgpu_guest_device *dev,
		   const struct tenant_args *a, const struct vgpu_workload_result *result)
{
	struct vgpu_proto *proto = dev ? vgpu_guest_local_proto(dev) : NULL;
	const struct vgpu_device_info *info = dev ? vgpu_device_info(dev) : NULL;

	if (proto) {
		tenant->mailbox = proto->counters;
		tenant->have_mailbox = true;
	}
	if (a->json)
		print_json(tenant, info, result, a->options.size_bytes);
	else
		print_summary(tenant, info, result, a->options.size_bytes);
	if (!result->verified && result->message[0])
		fprintf(stderr, "vgpu-tenant: %s: %s\n", result->workload, result->message);
}

int main(int argc, char **argv)
{
	struct tenant_args a = { 0 };
	struct vgpu_workload_result result;
	struct reattach again;
	struct tool_tenant tenant = { 0 };
	struct vgpu_guest_device *dev = NULL;
	char why[512];
	int status;

	if (!parse_args(argc, argv, &a, &status))
		return status;
	tenant.socket_path = vgpu_guest_local_socket_path(&a.config);
	tenant.name = a.config.vm_name;
	tenant.profile = a.config.profile;
	if (vgpu_device_open_local(&a.config, (int)a.timeout_ms, &dev, why, sizeof(why))) {
		fprintf(stderr, "vgpu-tenant: %s\n", why);
		return EXIT_USAGE;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	again = (struct reattach){ &a.config, (int)a.timeout_ms, &dev };
	a.options.reattach = reattach;
	a.options.reattach_arg = &again;
	a.options.on_hold = announce_hold;
	a.options.hook_arg = (void *)a.config.vm_name;
	vgpu_workload_run(dev, &a.options, &result);

	if (a.linger_ns) {
		/* A signal that ended the workload does not end the lingering:
		 * the next one does (armed before the result is printed). */
		stop_requested = 0;
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	report(&tenant, dev, &a, &result);
	if (a.linger_ns) {
		fflush(stdout);
		linger(a.linger_ns);
	}
	vgpu_device_close(dev);
	return result.verified ? 0 : EXIT_VERIFY_FAILED;
}
