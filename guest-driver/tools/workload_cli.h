/* SPDX-License-Identifier: MIT */
/*
 * workload_cli.h - what vgpu-tenant (local transport) and vgpu-run (vgpu.ko)
 * share: the workload options on the command line, the result as JSON and
 * as a summary, and their small parsers. Each tool adds its own options
 * (how it reaches the device) and its own lines (who it is, its counters).
 */
#ifndef VGPU_TOOLS_WORKLOAD_CLI_H
#define VGPU_TOOLS_WORKLOAD_CLI_H

#include <getopt.h>
#include <signal.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu_guest.h"
#include "vgpu_workloads.h"

#define EXIT_VERIFY_FAILED 1
#define EXIT_USAGE 2

/* The workload options, for a tool's struct option table (short letters
 * w, S, b, d, i; long-only e, P, g, K, G). */
#define WORKLOAD_CLI_OPTIONS                                                                       \
	{ "workload", required_argument, NULL, 'w' },                                              \
	{ "size", required_argument, NULL, 'S' },                                                  \
	{ "buffer-size", required_argument, NULL, 'b' },                                           \
	{ "duration", required_argument, NULL, 'd' },                                              \
	{ "iterations", required_argument, NULL, 'i' },                                            \
	{ "seed", required_argument, NULL, 'e' },                                                  \
	{ "priority", required_argument, NULL, 'P' },                                              \
	{ "gpfifo-entries", required_argument, NULL, 'g' },                                        \
	{ "kernel-us", required_argument, NULL, 'K' },                                             \
	{ "gap-us", required_argument, NULL, 'G' }
#define WORKLOAD_CLI_SHORT "w:S:b:d:i:"

/* The defaults of struct vgpu_workload_options; stop: the tool's flag. */
void workload_cli_defaults(struct vgpu_workload_options *options,
                           volatile sig_atomic_t *stop);

enum workload_cli_option {
	WORKLOAD_OPTION_TAKEN, /* one of WORKLOAD_CLI_OPTIONS, applied */
	WORKLOAD_OPTION_OTHER, /* not a workload option: the tool's own */
	WORKLOAD_OPTION_BAD,   /* a workload option with a bad value: printed why */
};

/* Apply getopt's opt/arg to options (have_workload: --workload seen). */
enum workload_cli_option workload_cli_option(const char *tool, int opt, const char *arg,
                                             struct vgpu_workload_options *options,
                                             bool *have_workload);

/* After getopt: true when no argument is left over and --workload was
 * given; false after saying which is wrong (workload_cli_usage_error). */
bool workload_cli_args_done(const char *tool, int argc, char **argv, bool have_workload);

/* "TOOL: <fmt with arg>" and "Try 'TOOL --help'." on stderr; EXIT_USAGE. */
int workload_cli_usage_error(const char *tool, const char *fmt, const char *arg);

/* A whole number (decimal, 0x hex, 0 octal); -EINVAL. */
int workload_cli_parse_u64(const char *text, uint64_t *out);

/* The result's fields (workload, verified, ... stats_before_free) added to
 * root; size: what --size asked for. */
void workload_cli_add_json(json_object *root, const struct vgpu_device_info *info,
                           const struct vgpu_workload_result *r, uint64_t size);

/* root printed pretty, then released. */
void workload_cli_print_json(json_object *root);

/* The summary lines about the device and the workload ("vGPU" ...
 * "before free"), after the tool's title line. */
void workload_cli_print_summary(const struct vgpu_device_info *info,
                                const struct vgpu_workload_result *r, uint64_t size);

/* The closing lines: escapes, note, checksums, PASS or FAIL. */
void workload_cli_print_verdict(const struct vgpu_workload_result *r);

#endif /* VGPU_TOOLS_WORKLOAD_CLI_H */
