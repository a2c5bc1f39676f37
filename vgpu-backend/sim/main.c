// SPDX-License-Identifier: MIT
/*
 * vgpu-sim - run a GPUswap scenario on simgpu with the core in this process.
 *
 * Exit status: 0 when every verify, expect, kernel checksum and invariant
 * check passed; 1 when one failed (or the GPU could not be set up); 2 for a
 * scenario that does not parse (the message names the file and line) or bad
 * command-line usage.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "runner.h"
#include "scenario.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-sim [--json] [--verbose] SCENARIO\n"
	        "\n"
	        "Runs a scenario of VMs allocating, freeing and using GPU memory on simgpu\n"
	        "with the GPUswap core, checks invariants after every step, and prints a\n"
	        "summary (a table, or a JSON document with --json).\n"
	        "\n"
	        "Scenario lines:\n"
	        "  gpu vram=<size> chunk=<size> policy=random|priority|refbits seed=<n>\n"
	        "      [host_mem=<size>] [return_interval=<ms>]\n"
	        "  vm <name> [weight=<n>] [cap=<size>] [chunk=<size>]\n"
	        "  alloc <vm> <buffer> <size> [prio=<0..15>] [nofill]\n"
	        "  free <vm> <buffer>\n"
	        "  run <vm> stream|stencil|gups|checksum <buffer>[,<buffer>...] [passes=<n>]\n"
	        "  tick <ms>                      advance time; the return pass runs\n"
	        "  verify <vm>|all                byte-exact check of every live buffer\n"
	        "  expect <vm> resident|evicted|allocated|fair_share =|<=|>=|~ <size>|<vm>\n"
	        "                                 (~ means within one chunk)\n"
	        "  weight <vm> <n>    prio <vm> <buffer> <n>    destroy <vm>\n"
	        "Sizes take K, M, G (binary). '#' starts a comment.\n"
	        "\n"
	        "Options:\n"
	        "  --json      print the summary as JSON (messages go to stderr)\n"
	        "  --verbose   report every step\n"
	        "  --help      this text\n"
	        "\n"
	        "Exit status: 0 all checks passed, 1 a check failed, 2 bad scenario or usage.\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	bool json = false, verbose = false;
	struct sim_scenario scenario;
	struct sim_run run;
	char error[512];
	int status;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "vgpu-sim: unknown option '%s'; see vgpu-sim --help\n", argv[i]);
			return 2;
		} else if (path) {
			fprintf(stderr, "vgpu-sim: one scenario at a time ('%s' and '%s'); see "
			        "vgpu-sim --help\n", path, argv[i]);
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		fprintf(stderr, "vgpu-sim: no scenario given; see vgpu-sim --help\n");
		return 2;
	}
	if (sim_scenario_load(path, &scenario, error, sizeof(error))) {
		fprintf(stderr, "vgpu-sim: %s\n", error);
		return 2;
	}
	if (sim_run(&run, &scenario, json ? stderr : stdout, verbose)) {
		sim_run_free(&run);
		sim_scenario_free(&scenario);
		return 1;
	}
	if (json)
		sim_report_json(&run, stdout);
	else
		sim_report_text(&run, stdout);
	status = sim_run_passed(&run) ? 0 : 1;
	sim_run_free(&run);
	sim_scenario_free(&scenario);
	return status;
}
