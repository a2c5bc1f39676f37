// SPDX-License-Identifier: MIT
/* memsched_traces.c - seed 004 Figs. 7 and 9 from per-window traces, see
 * memsched_traces.h. */
#include <math.h>
#include <string.h>

#include "memsched_traces.h"
#include "verdict.h"

#define TRACE_PAIRS_MAX 8
#define WINDOW_EPOCHS 8
#define WINDOWS_MAX 64

static const enum cs_mem_policy policies[4] = {
	CS_SCHED_FRFCFS, CS_SCHED_RR_FRFCFS, CS_SCHED_ITS, CS_SCHED_WEIS,
};
static const char *const names[4] = { "FR-FCFS", "RR", "ITS", "WEIS" };
static const char *const files[4] = { "frfcfs", "rr", "its", "weis" };

/* Per pair and scheduler: the windows' means and standard deviations. */
struct trace_summary {
	double mpki_diff, mpki_diff_sd; /* MPKI_1 - MPKI_2 */
	double bw_diff, bw_diff_sd;     /* BW_1 - BW_2, bytes per cycle */
	unsigned windows;               /* with instructions of both */
};

static void mean_sd(const double *x, unsigned n, double *mean, double *sd)
{
	double sum = 0, squares = 0;

	for (unsigned i = 0; i < n; i++)
		sum += x[i];
	*mean = n ? sum / n : NAN;
	for (unsigned i = 0; i < n; i++)
		squares += (x[i] - *mean) * (x[i] - *mean);
	*sd = n > 1 ? sqrt(squares / (n - 1)) : 0;
}

void memsched_traces(struct report *report, const char *const *pairs, size_t count,
                     const char (*labels)[64], const struct cs_mix_result *results,
                     size_t stride, uint64_t cycles)
{
	static struct cs_trace_window trace[WINDOWS_MAX];
	static struct cs_mix_result traced[TRACE_PAIRS_MAX][4];
	struct trace_summary sum[TRACE_PAIRS_MAX][4];
	bool have[TRACE_PAIRS_MAX] = { false }, same = true, tiles = true, its_shift = true;
	bool weis_narrows = true;
	FILE *dat[4];
	struct verdict v;
	size_t i;

	memset(sum, 0, sizeof(sum));
	for (unsigned p = 0; p < 4; p++) {
		char name[64];

		snprintf(name, sizeof(name), "memsched-trace-%s.dat", files[p]);
		dat[p] = report_file(report, name);
		fprintf(dat[p], "# pair_index MPKI_1-MPKI_2 BW_1-BW_2(B/cycle) WS_window/WS_FR-FCFS "
		        "per window of %u epochs, %s (modeled)\n", WINDOW_EPOCHS, names[p]);
	}
	report_md(report, "\nHow the schedulers move bandwidth (seed 004 Figs. 7 and 9): each "
	          "pair's run traced in windows of %u scheduler epochs (%u cycles); per window "
	          "MPKI_1 − MPKI_2 (L2 misses per 1000 instructions), BW_1 − BW_2 (DRAM bytes per "
	          "cycle) and the window's WS (Σ window IPC ÷ IPC alone) ÷ the run's WS under "
	          "FR-FCFS. The table gives the windows' mean ± standard deviation, the run's "
	          "MPKI per application and its WS ÷ FR-FCFS's. Modeled.\n\n"
	          "| pair | scheduler | MPKI 1 / 2 | MPKI_1 − MPKI_2 | BW_1 − BW_2 (B/cycle) | "
	          "WS ÷ FR-FCFS WS |\n|---|---|---|---|---|---|\n", WINDOW_EPOCHS,
	          WINDOW_EPOCHS * 1024);
	for (i = 0; i < count && i < TRACE_PAIRS_MAX; i++) {
		const struct cs_mix_result *untraced = &results[i * stride];
		struct cs_tenant_spec specs[2];

		if (untraced[0].tenants != 2 || cs_mix_parse(pairs[i], specs, 2) != 2)
			continue;
		report_progress(report, "  memsched: traces, %s", labels[i]);
		have[i] = true;
		for (unsigned p = 0; p < 4 && have[i]; p++) {
			struct cs_model_config cfg;
			double mpki_diff[WINDOWS_MAX], bw_diff[WINDOWS_MAX];
			uint64_t instructions[2] = { 0, 0 }, bytes[2] = { 0, 0 };
			uint32_t windows = 0;
			unsigned k = 0;

			cs_model_config_defaults(&cfg);
			cfg.page_shift = 21;
			cfg.sched.policy = policies[p];
			if (cs_run_mix_traced(&cfg, specs, 2, cycles, untraced[0].alone,
			                      (uint64_t)WINDOW_EPOCHS * cfg.sched.epoch_cycles, trace,
			                      WINDOWS_MAX, &windows, &traced[i][p])) {
				have[i] = false;
				break;
			}
			same &= traced[i][p].throughput == untraced[p].throughput &&
			        traced[i][p].weighted_speedup == untraced[p].weighted_speedup;
			for (uint32_t w = 0; w < windows; w++) {
				double length = (double)(trace[w].end - trace[w].start), ws = 0;

				for (unsigned t = 0; t < 2; t++) {
					instructions[t] += trace[w].instructions[t];
					bytes[t] += trace[w].dram_bytes[t];
					if (untraced[0].alone[t].ipc > 0)
						ws += trace[w].instructions[t] / length /
						      untraced[0].alone[t].ipc;
				}
				if (!trace[w].instructions[0] || !trace[w].instructions[1] ||
				    length <= 0)
					continue;
				mpki_diff[k] = 1000.0 * (double)trace[w].l2_misses[0] /
				                       (double)trace[w].instructions[0] -
				               1000.0 * (double)trace[w].l2_misses[1] /
				                       (double)trace[w].instructions[1];
				bw_diff[k] = ((double)trace[w].dram_bytes[0] -
				              (double)trace[w].dram_bytes[1]) / length;
				fprintf(dat[p], "%zu %.4f %.4f %.4f\n", i, mpki_diff[k], bw_diff[k],
				        untraced[0].weighted_speedup > 0
				                ? ws / untraced[0].weighted_speedup : NAN);
				k++;
			}
			for (unsigned t = 0; t < 2; t++)
				tiles &= instructions[t] == traced[i][p].figures[t].instructions &&
				         fabs((double)bytes[t] / (double)traced[i][p].figures[t].cycles -
				              traced[i][p].figures[t].bandwidth) < 1e-6;
			mean_sd(mpki_diff, k, &sum[i][p].mpki_diff, &sum[i][p].mpki_diff_sd);
			mean_sd(bw_diff, k, &sum[i][p].bw_diff, &sum[i][p].bw_diff_sd);
			sum[i][p].windows = k;
			report_md(report, "| %s | %s | %.1f / %.1f | %.1f ± %.1f | %.1f ± %.1f | %.3f |\n",
			          labels[i], names[p], traced[i][p].figures[0].mpki,
			          traced[i][p].figures[1].mpki, sum[i][p].mpki_diff,
			          sum[i][p].mpki_diff_sd, sum[i][p].bw_diff, sum[i][p].bw_diff_sd,
			          untraced[0].weighted_speedup > 0
			                  ? traced[i][p].weighted_speedup / untraced[0].weighted_speedup
			                  : NAN);
		}
	}
	count = i;
	for (unsigned p = 0; p < 4; p++)
		fclose(dat[p]);
	report_plot(report, "memsched-fig7", "Per-window MPKI and bandwidth differences under "
	            "FR-FCFS, RR and ITS (modeled)",
	            "MPKI_1 − MPKI_2 (L2 misses per 1000 instructions)",
	            "BW_1 − BW_2 (DRAM bytes per cycle, modeled)",
	            "plot 'memsched-trace-frfcfs.dat' using 2:3 with points title 'FR-FCFS', \\\n"
	            "     'memsched-trace-rr.dat' using 2:3 with points title 'RR', \\\n"
	            "     'memsched-trace-its.dat' using 2:3 with points title 'ITS'");
	report_plot(report, "memsched-fig9", "Per-window bandwidth difference and WS under "
	            "FR-FCFS, RR and WEIS (modeled)", "BW_1 − BW_2 (DRAM bytes per cycle, modeled)",
	            "window WS ÷ the run's WS under FR-FCFS (no unit)",
	            "plot 'memsched-trace-frfcfs.dat' using 3:4 with points title 'FR-FCFS', \\\n"
	            "     'memsched-trace-rr.dat' using 3:4 with points title 'RR', \\\n"
	            "     'memsched-trace-weis.dat' using 3:4 with points title 'WEIS'");
	for (i = 0; i < count; i++) {
		double sign;

		if (!have[i])
			continue;
		sign = traced[i][0].figures[0].mpki <= traced[i][0].figures[1].mpki ? 1 : -1;
		if (strstr(pairs[i], "gups")) {
			its_shift &= sign * sum[i][2].bw_diff > sign * sum[i][0].bw_diff;
			weis_narrows &= fabs(sum[i][3].bw_diff) < fabs(sum[i][0].bw_diff);
		}
	}
	report_check(report, same, "every traced run gives the untraced run's IT and WS");
	report_check(report, its_shift, "this model's Fig. 7 shape: in every pair with gups ITS "
	             "gives the lower-MPKI application more of the bandwidth than FR-FCFS does");
	report_check(report, weis_narrows, "this model's Fig. 9 shape: in every pair with gups "
	             "WEIS narrows the bandwidth gap against FR-FCFS");
	report_check(report, tiles, "every traced run's windows add up to its instructions and "
	             "DRAM bytes");
	verdict_begin(&v, "J7", "ITS moves bandwidth toward the lower-MPKI application against "
	              "FR-FCFS (its BW minus the other's, mean over windows, grows), and each "
	              "application's MPKI changes little across FR-FCFS, RR and ITS (max ÷ min "
	              "within 1.10, applications with MPKI >= 1)");
	for (i = 0; i < count; i++) {
		double sign;
		char label[96];

		if (!have[i])
			continue;
		sign = traced[i][0].figures[0].mpki <= traced[i][0].figures[1].mpki ? 1 : -1;
		pred_a_gt_b(&v, labels[i], "ITS: lower-MPKI BW − other's",
		            "FR-FCFS: lower-MPKI BW − other's", sign * sum[i][2].bw_diff,
		            sign * sum[i][0].bw_diff, 0);
		for (unsigned t = 0; t < 2; t++) {
			double mpki[3] = { traced[i][0].figures[t].mpki, traced[i][1].figures[t].mpki,
				           traced[i][2].figures[t].mpki };

			if (mpki[0] < 1)
				continue;
			snprintf(label, sizeof(label), "%.63s, MPKI of application %u", labels[i],
			         t + 1);
			pred_flat(&v, label, mpki, 3, 1.10);
		}
	}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "J9", "WEIS narrows the bandwidth gap against FR-FCFS (|BW_1 − BW_2|, "
	              "mean over windows, falls: toward the y-axis) and raises WS (upward)");
	for (i = 0; i < count; i++) {
		if (!have[i])
			continue;
		pred_a_gt_b(&v, labels[i], "FR-FCFS |BW_1 − BW_2|", "WEIS |BW_1 − BW_2|",
		            fabs(sum[i][0].bw_diff), fabs(sum[i][3].bw_diff), 0);
		pred_a_gt_b(&v, labels[i], "WEIS WS", "FR-FCFS WS", traced[i][3].weighted_speedup,
		            traced[i][0].weighted_speedup, 0);
	}
	verdict_end(report, &v, NULL);
}
