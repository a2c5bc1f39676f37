// SPDX-License-Identifier: MIT
/*
 * vgpu-report - the seeds' experiments on simgpu's modeled clock, written
 * as DIR/REPORT.md with data files and gnuplot scripts (see report.h).
 *
 *   vgpu-report [--quick] [--out DIR] [--bench-json FILE] [--loga-bench PROGRAM]
 *               [--only N] [--verbose]
 *
 * Exit status: 0 when every shape check passed, 1 when one failed, 2 when
 * the report could not be made.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "report.h"
#include "seed_figures.h"
#include "verdict.h"

static void usage(FILE *out, int count)
{
	fprintf(out,
	        "Usage: vgpu-report [--quick] [--out DIR] [--bench-json FILE] [--only N] [--verbose]\n"
	        "  --out DIR          where REPORT.md, the data files and the gnuplot scripts\n"
	        "                     go (default build/report); run gnuplot on each .gp there\n"
	        "                     for the SVGs (./vgpu-dev report does)\n"
	        "  --quick            the short version CI runs (fewer sizes, one iteration)\n"
	        "  --bench-json FILE  ./vgpu-dev bench's results, quoted for the daemon's\n"
	        "                     memory per tenant and LoGA (experiment 9)\n"
	        "  --loga-bench PROGRAM  run PROGRAM (--brief with --quick) for experiment 9\n"
	        "                     when FILE lacks its figures or is older than PROGRAM\n"
	        "  --only N           only experiment N (1..%d)\n"
	        "  --rodinia-build DIR a build with vgpud, vgpu-tenant, libcuda.so.1 and the\n"
	        "                     Rodinia programs (tests/rodinia) for experiments 12, 13\n"
	        "  --verbose          say on stderr how long each experiment took and how many\n"
	        "                     of its shape checks failed\n"
	        "Exit status 0 when every shape check passed, 1 when one failed, 2 when the\n"
	        "report could not be made.\n",
	        count);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "quick", no_argument, NULL, 'q' },
		{ "bench-json", required_argument, NULL, 'b' },
		{ "loga-bench", required_argument, NULL, 'l' },
		{ "only", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "rodinia-build", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static void (*const experiments[])(struct report *) = {
		experiment_memory_sweep, experiment_chunk_sweep, experiment_eviction_breakdown,
		experiment_fairness, experiment_overhead, experiment_scaling,
		experiment_walkers, experiment_memsched, experiment_gpu_time,
		experiment_relocation_delay, experiment_nn_priorities, experiment_rodinia,
		experiment_rodinia_latency,
		experiment_alloc_latency,
	};
	const int experiment_count = (int)(sizeof(experiments) / sizeof(experiments[0]));
	struct report report = { .dir = "build/report" };
	struct timespec start, end;
	int opt, only = 0;
	char *body = NULL;
	size_t body_len = 0;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			report.dir = optarg;
			break;
		case 'q':
			report.quick = true;
			break;
		case 'b':
			report.bench_json = optarg;
			break;
		case 'l':
			report.loga_bench = optarg;
			break;
		case 'n':
			only = atoi(optarg);
			if (only < 1 || only > experiment_count) {
				usage(stderr, experiment_count);
				return 2;
			}
			break;
		case 'r':
			report.rodinia_build = optarg;
			break;
		case 'v':
			report.verbose = true;
			break;
		case 'h':
			usage(stdout, experiment_count);
			return 0;
		default:
			usage(stderr, experiment_count);
			return 2;
		}
	}
	if (mkdir(report.dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "vgpu-report: cannot create %s: %s\n", report.dir, strerror(errno));
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	/* The body goes to memory: the top table needs the verdicts. */
	report.md = open_memstream(&body, &body_len);
	if (!report.md) {
		fprintf(stderr, "vgpu-report: open_memstream: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < experiment_count; i++) {
		if (only && only != i + 1)
			continue;
		struct timespec began, ended;
		unsigned failed_before = report.checks_failed;

		fprintf(stderr, "vgpu-report: experiment %d\n", i + 1);
		clock_gettime(CLOCK_MONOTONIC, &began);
		experiments[i](&report);
		clock_gettime(CLOCK_MONOTONIC, &ended);
		report_md(&report, "\n");
		if (report.verbose)
			fprintf(stderr, "vgpu-report: experiment %d took %.1f s, %u shape checks "
			        "failed in it\n", i + 1,
			        (double)(ended.tv_sec - began.tv_sec) +
			                (ended.tv_nsec - began.tv_nsec) / 1e9,
			        report.checks_failed - failed_before);
	}
	verdict_legend(&report);
	clock_gettime(CLOCK_MONOTONIC, &end);
	report_md(&report, "\n---\nShape checks: %u passed, %u failed. Made in %.0f s of this "
	          "host's time.\n", report.checks_passed, report.checks_failed,
	          (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
	fclose(report.md);
	report.md = report_file(&report, "REPORT.md");
	report_md(&report,
	          "# GPUswap: the seeds' experiments reproduced on simgpu\n\n"
	          "Made by `./vgpu-dev report` (`vgpu-report%s`). Figures marked *modeled* come "
	          "from simgpu's modeled clock (docs/DESIGN.md §6): identical on every machine and run. "
	          "Figures marked *wall-clock* (the core's CPU work, loga-bench) depend on this "
	          "host and its load. Seeds: 000, the thesis (Kehne, *Transparent Memory "
	          "Extension for Shared GPUs*, KIT 2019, chapter 6); 001, the GPUswap paper "
	          "(VEE'15, section 6); 002, LoGA (GPU time accounting against NEON); 003, "
	          "page-walk stealing (DWS, DWS++); 004, application-aware memory scheduling "
	          "(Jog et al., ITS and WEIS). Each experiment states the seed's claim, shows the "
	          "figures, its shape checks (properties of this implementation, asserted by "
	          "`meson test report-shapes` on the quick version) and its verdicts: each "
	          "computed from the table by a stated rule (the list is at the end).%s\n\n",
	          report.quick ? " --quick" : "",
	          report.quick ? " **This is the quick version**: fewer sizes and seeds "
	                         "(random runs 2 seeds instead of 5), shorter contention runs; "
	                         "its verdicts rest on fewer points than the full report's." : "");
	if (report.loga_source[0])
		report_md(&report, "LoGA's figures (§9, wall-clock): %s.\n\n", report.loga_source);
	seed_figures_table(&report);
	fwrite(body, 1, body_len, report.md);
	free(body);
	fclose(report.md);
	printf("vgpu-report: wrote %s/REPORT.md\n", report.dir);
	printf("report shapes: %u passed, %u failed\n", report.checks_passed, report.checks_failed);
	return report.checks_failed ? 1 : 0;
}
