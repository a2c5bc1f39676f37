// SPDX-License-Identifier: MIT
/* workload_cli.c - the workload options and results of vgpu-tenant and
 * vgpu-run, see workload_cli.h. */
#include "workload_cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/device_abi.h"

void workload_cli_defaults(struct vgpu_workload_options *options, volatile sig_atomic_t *stop)
{
	memset(options, 0, sizeof(*options));
	options->size_bytes = VGPU_WORKLOAD_DEFAULT_SIZE;
	options->buffer_bytes = VGPU_WORKLOAD_DEFAULT_BUFFER;
	options->seed = 1;
	options->priority = VGPU_PRIORITY_DEFAULT;
	options->stop = stop;
}

int workload_cli_usage_error(const char *tool, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", tool);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", tool);
	return EXIT_USAGE;
}

bool workload_cli_args_done(const char *tool, int argc, char **argv, bool have_workload)
{
	if (optind < argc) {
		workload_cli_usage_error(tool, "unexpected argument '%s'", argv[optind]);
		return false;
	}
	if (!have_workload) {
		workload_cli_usage_error(tool, "%s", "say which workload to run with --workload "
		                         "(stream, stencil, gups, alloc-leak, escape, soak, "
		                         "copy-flood, never-release, staller, stall, throttle or hog)");
		return false;
	}
	return true;
}

int workload_cli_parse_u64(const char *text, uint64_t *out)
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

/* Why arg is no good for opt, or NULL when it was applied. */
static const char *apply(int opt, const char *arg, struct vgpu_workload_options *o,
                         bool *have_workload)
{
	uint64_t value;

	switch (opt) {
	case 'w':
		*have_workload = true;
		return vgpu_workload_parse(arg, &o->kind)
		               ? "unknown workload '%s' (stream, stencil, gups, alloc-leak, escape, soak, "
		                 "copy-flood, never-release, staller, stall, throttle, hog)"
		               : NULL;
	case 'S':
		return vgpu_parse_size(arg, &o->size_bytes) || o->size_bytes < VGPU_PAGE_SIZE
		               ? "--size wants a size of at least 4K such as 256M or 1G, not '%s'"
		               : NULL;
	case 'b':
		return vgpu_parse_size(arg, &o->buffer_bytes) || o->buffer_bytes < VGPU_PAGE_SIZE
		               ? "--buffer-size wants a size of at least 4K such as 32M, not '%s'"
		               : NULL;
	case 'd':
		return vgpu_parse_duration(arg, &o->duration_ns)
		               ? "--duration wants a time such as 10s, 500ms or 2m, not '%s'"
		               : NULL;
	case 'i':
		return workload_cli_parse_u64(arg, &o->iterations) || !o->iterations
		               ? "--iterations wants a positive number, not '%s'"
		               : NULL;
	case 'e':
		return workload_cli_parse_u64(arg, &o->seed) ? "--seed wants a number, not '%s'"
		                                             : NULL;
	case 'P':
		if (workload_cli_parse_u64(arg, &value) || value > VGPU_PRIORITY_MAX)
			return "--priority wants 0..15, not '%s'";
		o->priority = (uint32_t)value;
		return NULL;
	case 'K':
		if (workload_cli_parse_u64(arg, &value) || !value || value > 3600000000ull)
			return "--kernel-us wants a kernel length in microseconds (1..3600000000), "
			       "not '%s'";
		o->kernel_ns = value * 1000;
		return NULL;
	case 'G':
		if (workload_cli_parse_u64(arg, &value) || value > 3600000000ull)
			return "--gap-us wants an idle time in microseconds, not '%s'";
		o->gap_ns = value * 1000;
		return NULL;
	default: /* 'g' */
		if (workload_cli_parse_u64(arg, &value) || value < 2 ||
		    value > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX || (value & (value - 1)))
			return "--gpfifo-entries wants a power of two from 2 to 4096, not '%s'";
		o->gpfifo_entries = (uint32_t)value;
		return NULL;
	}
}

enum workload_cli_option workload_cli_option(const char *tool, int opt, const char *arg,
                                             struct vgpu_workload_options *options,
                                             bool *have_workload)
{
	const char *why;

	if (opt <= 0 || opt > 127 || !strchr("wSbdiePgKG", opt))
		return WORKLOAD_OPTION_OTHER;
	why = apply(opt, arg, options, have_workload);
	if (!why)
		return WORKLOAD_OPTION_TAKEN;
	workload_cli_usage_error(tool, why, arg);
	return WORKLOAD_OPTION_BAD;
}

static void add_escapes(json_object *root, const struct vgpu_workload_result *r)
{
	json_object *escapes = json_object_new_array();

	json_object_object_add(root, "escapes_tried", json_object_new_int((int32_t)r->escapes_tried));
	json_object_object_add(root, "escapes_refused",
	                       json_object_new_int((int32_t)r->escapes_refused));
	for (uint32_t i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
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

static void add_stats(json_object *root, const struct vgpu_workload_result *r)
{
	json_object *stats = json_object_new_object();

	json_object_object_add(stats, "allocated_bytes",
	                       json_object_new_uint64(r->stats.allocated_bytes));
	json_object_object_add(stats, "resident_bytes", json_object_new_uint64(r->stats.resident_bytes));
	json_object_object_add(stats, "evicted_bytes", json_object_new_uint64(r->stats.evicted_bytes));
	json_object_object_add(stats, "fair_share_bytes",
	                       json_object_new_uint64(r->stats.fair_share_bytes));
	json_object_object_add(stats, "evictions", json_object_new_uint64(r->stats.evictions));
	json_object_object_add(stats, "returns", json_object_new_uint64(r->stats.returns));
	json_object_object_add(root, "stats_before_free", stats);
}

static void add_soak(json_object *root, const struct vgpu_workload_result *r)
{
	json_object *soak = json_object_new_object();

	json_object_object_add(soak, "steps", json_object_new_uint64(r->iterations));
	json_object_object_add(soak, "allocs", json_object_new_uint64(r->soak.allocs));
	json_object_object_add(soak, "alloc_refused", json_object_new_uint64(r->soak.alloc_refused));
	json_object_object_add(soak, "frees", json_object_new_uint64(r->soak.frees));
	json_object_object_add(soak, "streams", json_object_new_uint64(r->soak.streams));
	json_object_object_add(soak, "verifies", json_object_new_uint64(r->soak.verifies));
	json_object_object_add(soak, "detaches", json_object_new_uint64(r->soak.detaches));
	json_object_object_add(soak, "buffers_dropped",
	                       json_object_new_uint64(r->soak.buffers_dropped));
	json_object_object_add(root, "soak", soak);
}

void workload_cli_add_json(json_object *root, const struct vgpu_device_info *info,
                           const struct vgpu_workload_result *r, uint64_t size)
{
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
	                                                                   1e6 / (double)r->buffers
	                                                         : 0.0));
	if (r->escapes_tried)
		add_escapes(root, r);
	if (!strcmp(r->workload, "soak"))
		add_soak(root, r);
	if (r->acquire_submitted) {
		json_object_object_add(root, "acquire_killed", json_object_new_boolean(r->acquire_killed));
		json_object_object_add(root, "stats_probes", json_object_new_uint64(r->stats_probes));
		json_object_object_add(root, "stats_ms_max",
		                       json_object_new_double((double)r->stats_ns_max / 1e6));
	}
	if (!strcmp(r->workload, "hog") || !strcmp(r->workload, "staller")) {
		json_object_object_add(root, "hog_kernels", json_object_new_uint64(r->hog_kernels));
		json_object_object_add(root, "hog_rearms", json_object_new_uint64(r->hog_rearms));
	}
	if (r->flood_copies) {
		json_object_object_add(root, "flood_copies", json_object_new_uint64(r->flood_copies));
		json_object_object_add(root, "flood_copies_done",
		                       json_object_new_uint64(r->flood_copies_done));
		json_object_object_add(root, "flood_copy_bytes",
		                       json_object_new_uint64(r->flood_copy_bytes));
		json_object_object_add(root, "flood_pushbuffer_bytes",
		                       json_object_new_uint64(r->flood_pushbuffer_bytes));
	}
	if (info) {
		json_object_object_add(root, "vram_share_bytes",
		                       json_object_new_uint64(info->vram_share_bytes));
		json_object_object_add(root, "cap_bytes", json_object_new_uint64(info->cap_bytes));
		json_object_object_add(root, "chunk_bytes", json_object_new_uint64(info->chunk_bytes));
	}
	if (r->have_stats)
		add_stats(root, r);
}

void workload_cli_print_json(json_object *root)
{
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

void workload_cli_print_summary(const struct vgpu_device_info *info,
                                const struct vgpu_workload_result *r, uint64_t size)
{
	char a[32], b[32], c[32], d[32];

	vgpu_format_bytes(size, a, sizeof(a));
	if (info) {
		vgpu_format_bytes(info->vram_share_bytes, b, sizeof(b));
		vgpu_format_bytes(info->chunk_bytes, c, sizeof(c));
		if (info->cap_bytes)
			vgpu_format_bytes(info->cap_bytes, d, sizeof(d));
		else
			snprintf(d, sizeof(d), "none");
		printf("  vGPU        ABI %u.%u, fair share %s, cap %s, chunk %s\n",
		       info->abi_version >> 16, info->abi_version & 0xffff, b, d, c);
	}
	vgpu_format_bytes(r->bytes_allocated, b, sizeof(b));
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
		vgpu_format_bytes(r->stats.resident_bytes, a, sizeof(a));
		vgpu_format_bytes(r->stats.evicted_bytes, b, sizeof(b));
		vgpu_format_bytes(r->stats.fair_share_bytes, c, sizeof(c));
		printf("  before free resident %s, evicted %s, fair share %s, %u evictions, "
		       "%u returns\n",
		       a, b, c, r->stats.evictions, r->stats.returns);
	}
}

void workload_cli_print_verdict(const struct vgpu_workload_result *r)
{
	char b[32];

	for (uint32_t i = 0; r->escapes_tried && i < VGPU_ESCAPE_ATTEMPTS; i++) {
		const struct vgpu_escape_attempt *e = &r->escapes[i];

		if (!e->tried)
			continue;
		vgpu_format_bytes(e->bytes, b, sizeof(b));
		printf("  escape      %s: %s at GPU VA 0x%" PRIx64 ": %s\n", e->name, b, e->gpu_va,
		       e->refused ? "refused, channel killed" :
		       e->error   ? strerror(-e->error) :
		                    "COMPLETED without error");
	}
	if (!strcmp(r->workload, "soak"))
		printf("  soak        %" PRIu64 " allocs (%" PRIu64 " refused), %" PRIu64
		       " frees, %" PRIu64 " streams, %" PRIu64 " verifies, %" PRIu64
		       " detaches (%" PRIu64 " buffers dropped)\n",
		       r->soak.allocs, r->soak.alloc_refused, r->soak.frees, r->soak.streams,
		       r->soak.verifies, r->soak.detaches, r->soak.buffers_dropped);
	if (r->message[0])
		printf("  note        %s\n", r->message);
	printf("  checksums   %" PRIu64 " verified, %" PRIu64 " wrong\n", r->checksums,
	       r->mismatches);
	printf("%s\n", r->verified ? "PASS" : "FAIL");
}
