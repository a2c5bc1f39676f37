// SPDX-License-Identifier: MIT
/*
 * gpu_time.c - experiment 9: per-VM GPU time, LoGA against NEON (seed 002,
 * issues 15 and 25), from loga-bench's figures.
 *
 * The accounting thread polls the GPU's status in wall time against a
 * paced simgpu (its modeled clock tied to wall time), so its figures depend
 * on the host and cannot come from the modeled clock like the other
 * experiments: loga-bench measures them, either in `./vgpu-dev bench`
 * (bench.json) or run by the report itself (loga_figures.h), and this
 * section quotes them, says which, and shows the seed's numbers beside
 * them, a plot of the overhead against the number of throttles (Fig. 8)
 * and the verdicts computed from them.
 * No shape check: nothing here is deterministic.
 */
#include <math.h>

#include <json-c/json.h>

#include "loga_figures.h"
#include "report.h"
#include "verdict.h"

/* A number from loga-bench's figures, or NAN when absent. */
static double number(struct json_object *bench, const char *key)
{
	struct json_object *value;

	return json_object_object_get_ex(bench, key, &value) ? json_object_get_double(value)
	                                                    : NAN;
}

static void row(struct report *report, const char *what, const char *seed, double value,
                const char *goal)
{
	if (isnan(value))
		report_md(report, "| %s | %s | – (not in the figures) | %s |\n", what, seed, goal);
	else
		report_md(report, "| %s | %s | %.3f | %s |\n", what, seed, value, goal);
}

#define THROTTLES_MAX 16

/* Fig. 8 from the arrays: a table, a data file, a plot and the verdict. */
static void by_throttles(struct report *report, struct json_object *bench)
{
	struct json_object *counts, *loga, *neon;
	double x[THROTTLES_MAX], yl[THROTTLES_MAX], yn[THROTTLES_MAX];
	struct verdict v;
	size_t n;
	FILE *dat;

	if (!json_object_object_get_ex(bench, "overhead_throttles", &counts) ||
	    !json_object_object_get_ex(bench, "loga_overhead_by_throttles", &loga) ||
	    !json_object_object_get_ex(bench, "neon_overhead_by_throttles", &neon) ||
	    !json_object_is_type(counts, json_type_array) ||
	    !json_object_is_type(loga, json_type_array) ||
	    !json_object_is_type(neon, json_type_array))
		return;
	n = json_object_array_length(counts);
	if (json_object_array_length(loga) < n || json_object_array_length(neon) < n)
		return;
	if (n > THROTTLES_MAX)
		n = THROTTLES_MAX;
	report_md(report, "\nOverhead against the number of throttles (§5.3, Fig. 8; the "
	          "application's turnaround ÷ the same without accounting, minus 1):\n\n"
	          "| throttles | LoGA | NEON |\n|---:|---:|---:|\n");
	dat = report_file(report, "gpu-time-overhead.dat");
	fprintf(dat, "# throttles loga_overhead neon_overhead (loga-bench)\n");
	for (size_t i = 0; i < n; i++) {
		int count = json_object_get_int(json_object_array_get_idx(counts, i));
		double l = json_object_get_double(json_object_array_get_idx(loga, i));
		double e = json_object_get_double(json_object_array_get_idx(neon, i));

		report_md(report, "| %d | %.3f | %.3f |\n", count, l, e);
		x[i] = count;
		yl[i] = l;
		yn[i] = e;
		fprintf(dat, "%d %.5f %.5f\n", count, l, e);
	}
	fclose(dat);
	report_plot(report, "gpu-time-overhead",
	            "Accounting overhead against the number of throttles (loga-bench)",
	            "throttles beside the application (log scale)",
	            "turnaround overhead (fraction, wall-clock)",
	            "set logscale x 2\n"
	            "plot 'gpu-time-overhead.dat' using 1:2 with linespoints title 'LoGA', \\\n"
	            "     'gpu-time-overhead.dat' using 1:3 with linespoints title 'NEON'");
	verdict_begin(&v, "L8", "NEON's overhead grows with the number of throttles while LoGA's "
	              "stays near zero (within 0.02)");
	pred_monotone(&v, "NEON", "throttles increasing", x, "throttles", yn, (unsigned)n, 0.05);
	for (size_t i = 0; i < n; i++) {
		char label[48];

		snprintf(label, sizeof(label), "LoGA at %g throttles", x[i]);
		pred_in_range(&v, label, yl[i], -0.02, 0.02, "");
	}
	verdict_end(report, &v, "wall-clock on a shared 2-core host: the simulated GPU, the "
	            "throttles and the accounting thread compete for the same CPUs");
}

void experiment_gpu_time(struct report *report)
{
	struct json_object *bench;

	report_section(report, "9", "GPU time per VM: LoGA against NEON (seed 002, wall-clock)");
	report_md(report,
	          "**Seed.** LoGA (seed 002) accounts each application's GPU time "
	          "from the GPU's context switches, polled in short phases while every "
	          "application keeps running; NEON's sampling accounting (§2.3) suspends all "
	          "but one application at a time to measure command lengths. §5.3: NEON adds "
	          "*11.4%%* to an application's turnaround beside ten throttles of 10 µs "
	          "(worst 23.4%%), LoGA nothing (Fig. 7a); beside ten of 100 µs NEON 7.6%%, "
	          "LoGA 0.7%% (Fig. 7b); and NEON's overhead grows with the number of throttles while "
	          "LoGA's stays flat (Fig. 8); §5.4: LoGA underestimates kernel lengths by up "
	          "to 6%% and measures the load within 2.5%%; §5.5: LoGA's shares at least as "
	          "fair as NEON's; §5.6: polling costs 17%% of a core at 1:5.\n\n"
	          "**Here.** The accounting thread in vgpud (`[core] gpu_accounting`; "
	          "`accounting_mode = loga` or `neon`, core/gpu_accounting.h) against a paced simgpu. Its figures "
	          "are wall-clock, so they come from loga-bench rather than from the modeled "
	          "clock, and depend on the host's load: from `./vgpu-dev bench`'s bench.json "
	          "when that has them and is not older than the build's loga-bench, else from "
	          "a run of loga-bench by this report (`--brief` in the quick version: 4 kernel "
	          "lengths instead of 10, runs of a fraction of a second). The errors are "
	          "taken against what the engine really did (the wall time simgpu's "
	          "current-channel register named the channel, `resident_wall_ns`): the "
	          "simulated GPU is a host thread, and a host that delays it stretches a "
	          "kernel beyond its modeled length; the rows marked … add those delays. On "
	          "two cores the polling thread also takes CPU time from the simulated GPU, "
	          "which a real GPU does not need: the overhead row measures that too.\n\n");
	bench = loga_figures_get(report);
	if (!bench) {
		struct verdict v;

		report_md(report, "**Figures:** %s.\n\n", report->loga_source);
		verdict_begin(&v, "L7a L7b L8 L9 L10 L11", "LoGA against NEON (overhead, accuracy, "
		              "fairness)");
		verdict_end(report, &v, "no loga-bench figures (above)");
		return;
	}
	report_md(report, "**Figures:** LoGA figures %s.\n\n"
	          "| experiment | seed | here | goal (issue 15) |\n|---|---|---:|---|\n",
	          report->loga_source);
	row(report, "kernel-length error, 100 … 1000 µs (§5.4, Fig. 9)", "up to 0.06",
	    number(bench, "loga_kernel_length_error_max"), "≤ 0.03");
	row(report, "… against the modeled length (+ the host's delays of simgpu)", "",
	    number(bench, "loga_kernel_length_error_vs_modeled_max"), "");
	row(report, "load error, 1000 µs cycles (§5.4, Fig. 10)", "within 0.025",
	    number(bench, "loga_load_error_max"), "≤ 0.015");
	row(report, "… against the intended load (+ the host's delays of simgpu)", "",
	    number(bench, "loga_load_error_vs_intended_max"), "");
	row(report, "LoGA overhead beside 10 throttles (§5.3)", "≈ 0",
	    number(bench, "loga_overhead"), "≤ 0.01");
	row(report, "NEON overhead beside 10 throttles (§5.3)", "0.114 (worst 0.234)",
	    number(bench, "neon_overhead"), "clearly above LoGA's");
	row(report, "LoGA overhead beside 10 throttles of 100 µs (§5.3, Fig. 7b)", "0.007",
	    number(bench, "loga_overhead_100us"), "");
	row(report, "NEON overhead beside 10 throttles of 100 µs (§5.3, Fig. 7b)", "0.076",
	    number(bench, "neon_overhead_100us"), "");
	row(report, "fair-share error, 4 throttles of 200/800 µs (§5.5)", "toward the optimum",
	    number(bench, "fair_share_error_max"), "≤ 0.05");
	row(report, "NEON: fair-share error, equal-share (§5.5)", "less fair than LoGA",
	    number(bench, "neon_fair_share_error_equal"), "(baseline)");
	row(report, "polling CPU, fraction of a core (§5.6)", "0.17",
	    number(bench, "loga_cpu_fraction"), "≤ 1/6 + 0.01");
	by_throttles(report, bench);
	report_md(report, "\n**Verdicts** (wall-clock, this host):\n\n");
	{
		struct verdict v;

		verdict_begin(&v, "L7a", "beside ten throttles NEON's accounting adds overhead and "
		              "LoGA's adds none (seed: 11.4 %% against about 0)");
		pred_a_gt_b(&v, "ten throttles", "NEON overhead", "LoGA overhead",
		            number(bench, "neon_overhead"), number(bench, "loga_overhead"), 0);
		pred_in_range(&v, "LoGA overhead", number(bench, "loga_overhead"), -0.02, 0.02, "");
		verdict_end(report, &v, "the overhead row is measured with the accounting thread "
		            "pinned; on two shared cores polling also takes CPU time from the "
		            "simulated GPU");
		verdict_begin(&v, "L7b", "beside ten 100 µs throttles NEON's accounting adds more "
		              "overhead than LoGA's, and LoGA's stays within 0.02 (seed: 7.6 %% "
		              "against 0.7 %%)");
		if (!isnan(number(bench, "loga_overhead_100us")) &&
		    !isnan(number(bench, "neon_overhead_100us"))) {
			pred_a_gt_b(&v, "ten 100 µs throttles", "NEON overhead", "LoGA overhead",
			            number(bench, "neon_overhead_100us"),
			            number(bench, "loga_overhead_100us"), 0);
			pred_in_range(&v, "LoGA overhead", number(bench, "loga_overhead_100us"), -0.02,
			              0.02, "");
		}
		verdict_end(report, &v, isnan(number(bench, "loga_overhead_100us"))
		                                ? "the figures predate loga-bench's 100 µs runs: "
		                                  "run `./vgpu-dev bench` again"
		                                : "wall-clock, one run per mode on this host "
		                                  "(the simulated GPU, the throttles and the "
		                                  "accounting thread share its CPUs)");
		verdict_begin(&v, "L9", "LoGA measures kernel lengths within the seed's 6 %%");
		pred_in_range(&v, "kernel-length error", number(bench, "loga_kernel_length_error_max"),
		              0, 0.06, "");
		verdict_end(report, &v, NULL);
		verdict_begin(&v, "L10", "LoGA measures the load within the seed's 2.5 %% of the "
		              "intended load");
		pred_in_range(&v, "load error against the intended load",
		              number(bench, "loga_load_error_vs_intended_max"), 0, 0.025, "");
		verdict_end(report, &v, "the simulated GPU is a host thread: a loaded host delays it "
		            "and stretches kernels beyond their intended length (against what the "
		            "engine really did the error is in the row above)");
		verdict_begin(&v, "L11", "LoGA's shares are at least as fair as NEON's");
		pred_a_le_b_case(&v, "fair-share error", "LoGA", "NEON",
		                 number(bench, "fair_share_error_max"),
		                 number(bench, "neon_fair_share_error_equal"), 0);
		verdict_end(report, &v, NULL);
		verdict_begin(&v, "", "polling costs about 17 %% of a core at 1:5 (seed §5.6, "
		              "within 5 percentage points)");
		pred_within(&v, "polling CPU", 100 * number(bench, "loga_cpu_fraction"), 17, 5, "%");
		verdict_end(report, &v, NULL);
	}
	json_object_put(bench);
}
