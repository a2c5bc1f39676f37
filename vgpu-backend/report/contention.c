// SPDX-License-Identifier: MIT
/*
 * contention.c - tenants side by side on one GPU (issue 17), on the
 * contention model's modeled clock (vgpu-backend/simgpu/contention):
 *  7. seed 003: page walks of the other tenant a walk waits for, throughput
 *     and weighted IPC under the walker policies shared / static / DWS /
 *     DWS++ (4 KiB pages);
 *  8. seed 004: the analytical example, and IT / WS under the memory
 *     schedulers FR-FCFS / RR FR-FCFS / ITS / WEIS (2 MiB pages, so DRAM
 *     and not walks is the bottleneck, as in seed 004's simulator);
 * and that simgpu's spatial mode computes the same results as its
 * time-sliced mode. Checked are only what holds by construction: at most
 * one interleaved walk under DWS, the analytical example's figures, the
 * same checksums in both modes. The directions against the seeds are
 * counted and stated in the verdicts, not checked.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bare_gpu.h"
#include "cs_analytic.h"
#include "cs_experiment.h"
#include "memsched_traces.h"
#include "report.h"
#include "verdict.h"
#include "walker_headroom.h"
#include "workload.h"

#define FULL_CYCLES 300000u
#define QUICK_CYCLES 60000u

static const char *const full_walker_mixes[] = {
	"gups stream", "gups stencil", "gups fill", "gups checksum", "stream stencil",
	"gups stream stencil", "gups stream stencil fill",
};
static const char *const quick_walker_mixes[] = { "gups stream", "gups stencil" };
static const char *const full_sched_pairs[] = {
	"gups stream", "gups stencil", "stencil stream", "gups fill", "gups checksum", "stream copy",
};
static const char *const quick_sched_pairs[] = { "gups stream", "gups stencil" };
static const char *const full_sched_triples[] = { "gups stream stencil", "gups stencil fill" };
static const char *const quick_sched_triples[] = { "gups stream stencil" };

static const enum cs_walker_policy walker_policies[] = {
	CS_WALKERS_SHARED, CS_WALKERS_STATIC, CS_WALKERS_DWS, CS_WALKERS_DWSPP,
};
static const enum cs_mem_policy sched_policies[] = {
	CS_SCHED_FRFCFS, CS_SCHED_RR_FRFCFS, CS_SCHED_ITS, CS_SCHED_WEIS,
};

/* A mix's label for tables and plots: "gups+stream". */
static void mix_label(const char *mix, char *out, size_t len)
{
	size_t i;

	snprintf(out, len, "%s", mix);
	for (i = 0; out[i]; i++)
		if (out[i] == ' ')
			out[i] = '+';
}

/* A mix under the policies; alone: the tenants' alone figures from an
 * earlier run of the same mix (they depend only on the mix), or NULL;
 * first: under CS_SCHED_PRIORITY, the tenant served first. */
static int run_mix_with(const char *mix, uint32_t page_shift, enum cs_walker_policy walkers,
                        enum cs_mem_policy sched, uint32_t first, uint64_t cycles,
                        const struct cs_tenant_figures *alone, struct cs_mix_result *out)
{
	struct cs_tenant_spec specs[CS_MAX_TENANTS];
	struct cs_model_config cfg;
	uint32_t n = cs_mix_parse(mix, specs, CS_MAX_TENANTS);

	if (!n)
		return -1;
	cs_model_config_defaults(&cfg);
	cfg.page_shift = page_shift;
	cfg.walkers.policy = walkers;
	cfg.sched.policy = sched;
	cfg.sched.priority[0] = first;
	for (uint32_t t = 0, k = 1; t < n; t++)
		if (t != first)
			cfg.sched.priority[k++] = t;
	return cs_run_mix(&cfg, specs, n, cycles, alone, out);
}

static int run_mix(const char *mix, uint32_t page_shift, enum cs_walker_policy walkers,
                   enum cs_mem_policy sched, uint64_t cycles, struct cs_mix_result *out)
{
	return run_mix_with(mix, page_shift, walkers, sched, 0, cycles, NULL, out);
}

/* The spatial mode computes what the time-sliced mode computes. */
static void same_results_across_modes(struct report *report)
{
	bool same = true, ran = true;
	unsigned i;

	report_md(report, "**simgpu's modes.** Each workload (quick sizes) on bare simgpu, "
	          "time-sliced and spatial (`config.sharing`): the modeled runtime differs "
	          "(fixed per-byte costs against the contention model's durations), the "
	          "checksums must not.\n\n| workload | time-sliced (ms, modeled) | spatial (ms, "
	          "modeled) | same checksums |\n|---|---|---|---|\n");
	for (i = 0; i < workload_count(); i++) {
		const struct workload *workload = workload_get(i, true);
		uint64_t ns[2] = { 0, 0 }, sum[2] = { 0, 0 };

		report_progress(report, "  modes: %s", workload->name);
		if (bare_gpu_run_sharing(workload, SIMGPU_SHARING_TIME_SLICED, &ns[0], &sum[0]) ||
		    bare_gpu_run_sharing(workload, SIMGPU_SHARING_SPATIAL, &ns[1], &sum[1])) {
			ran = false;
			continue;
		}
		same &= sum[0] == sum[1];
		report_md(report, "| %s | %.3f | %.3f | %s |\n", workload->name, ns[0] / 1e6,
		          ns[1] / 1e6, sum[0] == sum[1] ? "yes" : "**no**");
	}
	report_md(report, "\n");
	report_check(report, ran && same,
	             "spatial and time-sliced simgpu compute the same checksums for every workload");
}

#define MIXES_MAX 8

/* IT of a two-tenant mix with sms[0] and sms[1] SMs (seed 004 Fig. 13);
 * NAN when it cannot run. */
static double split_throughput(const char *mix, const uint32_t *sms, enum cs_mem_policy sched,
                               uint64_t cycles)
{
	struct cs_tenant_spec specs[CS_MAX_TENANTS];
	struct cs_model_config cfg;
	struct cs_model *m;
	double it = 0;
	uint32_t n = cs_mix_parse(mix, specs, CS_MAX_TENANTS);
	int ret = 0;

	if (n != 2)
		return NAN;
	cs_model_config_defaults(&cfg);
	cfg.page_shift = 21;
	cfg.sched.policy = sched;
	m = cs_model_create(&cfg, n, sms);
	if (!m)
		return NAN;
	for (uint32_t t = 0; t < n && ret == 0; t++)
		ret = cs_model_attach_kernel(m, t, specs[t].kernel, specs[t].args, specs[t].nargs);
	if (ret == 0)
		ret = cs_model_run_until(m, cycles);
	for (uint32_t t = 0; t < n && ret == 0; t++) {
		struct cs_tenant_figures f;

		cs_model_figures(m, t, &f);
		it += f.ipc;
	}
	cs_model_destroy(m);
	return ret ? NAN : it;
}

static double stolen_percent(const struct cs_tenant_figures *f)
{
	return f->walks ? 100.0 * f->stolen_walks / f->walks : 0;
}

/* The index of the tenant with the fewest walks per instruction (the
 * light tenant the seed's Fig. 8 and Table III speak of). */
static uint32_t lightest(const struct cs_mix_result *r)
{
	uint32_t best = 0;

	for (uint32_t t = 1; t < r->tenants; t++)
		if (r->figures[t].walks * (double)r->figures[best].instructions <
		    r->figures[best].walks * (double)r->figures[t].instructions)
			best = t;
	return best;
}

/* Seed 003 Fig. 12: DWS over shared with fewer and more walkers. */
static void walker_sensitivity(struct report *report, uint64_t cycles, struct verdict *v)
{
	static const uint32_t counts[] = { 8, 16, 32 };
	static const char *const mix = "gups stream";
	double gain[3], walkers[3];
	FILE *dat = report_file(report, "walkers-sensitivity.dat");

	report_md(report, "\nSensitivity (seed 003 Fig. 12): `%s` with 8, 16 and 32 walkers, "
	          "throughput IT under DWS ÷ under shared walkers with the same count (modeled).\n\n"
	          "| walkers | shared IT | DWS IT | DWS ÷ shared |\n|---|---|---|---|\n", mix);
	fprintf(dat, "# walkers dws_over_shared_IT (modeled)\n");
	for (unsigned i = 0; i < 3; i++) {
		struct cs_tenant_spec specs[CS_MAX_TENANTS];
		struct cs_model_config cfg;
		struct cs_mix_result r[2];
		uint32_t n = cs_mix_parse(mix, specs, CS_MAX_TENANTS);

		for (unsigned p = 0; p < 2; p++) {
			cs_model_config_defaults(&cfg);
			cfg.page_shift = 12;
			cfg.walkers.walkers = counts[i];
			cfg.walkers.policy = p ? CS_WALKERS_DWS : CS_WALKERS_SHARED;
			if (!n || cs_run_mix(&cfg, specs, n, cycles, NULL, &r[p]))
				memset(&r[p], 0, sizeof(r[p]));
		}
		walkers[i] = counts[i];
		gain[i] = r[0].throughput > 0 ? r[1].throughput / r[0].throughput : NAN;
		fprintf(dat, "%u %.4f\n", counts[i], gain[i]);
		report_md(report, "| %u | %.3f | %.3f | %.3f |\n", counts[i], r[0].throughput,
		          r[1].throughput, gain[i]);
		report_progress(report, "  walkers: sensitivity, %u walkers", counts[i]);
	}
	fclose(dat);
	report_plot(report, "walkers-sensitivity", "DWS over shared walkers against the walker "
	            "count (gups+stream, modeled)", "page-table walkers", "IT under DWS ÷ IT shared",
	            "set style data histograms\nset style fill solid 0.8 border -1\n"
	            "set yrange [0:*]\nplot 'walkers-sensitivity.dat' using 2:xtic(1) title 'DWS ÷ shared'");
	verdict_begin(v, "D12", "DWS improves throughput over shared walkers with fewer and more "
	              "walkers, the improvement moderating as walkers are added");
	for (unsigned i = 0; i < 3; i++) {
		char label[32];

		snprintf(label, sizeof(label), "%u walkers", counts[i]);
		pred_a_gt_b(v, label, "DWS ÷ shared", "1", gain[i], 1, 0);
	}
	{
		double falling[3] = { -gain[0], -gain[1], -gain[2] };

		pred_monotone(v, "minus the gain", "walkers increasing", walkers, "walkers", falling,
		              3, 0.01);
	}
	verdict_end(report, v, "gups is a DRAM hog too in this model: walkers are not its only "
	            "bottleneck (`vgpu-backend/simgpu/contention/README.md`)");
}

/* Seed 003 Fig. 10 / Table VII: DWS++ made more conservative (QUEUE_THRES
 * 0.17) or more aggressive (every DIFF_THRES 0.3) than its default. */
static void dwspp_variants(struct report *report, const char *const *mixes, size_t count,
                           const char (*labels)[64], struct cs_mix_result (*results)[4],
                           uint64_t cycles)
{
	static const char *const names[3] = { "conservative", "DWS++", "aggressive" };
	static struct cs_mix_result r[MIXES_MAX][3];
	bool have[MIXES_MAX] = { false };
	FILE *dat = report_file(report, "walkers-dwspp.dat");
	struct verdict v;

	report_md(report, "\nDWS++ variants (seed 003 Fig. 10, Table VII), two-tenant mixes: "
	          "*conservative* steals only while its own queue is at most 17 %% full "
	          "(QUEUE_THRES 0.17), *aggressive* steals at DIFF_THRES 0.3 for every ratio R "
	          "of walk arrivals up to 4 (the seed's aggressive variant also steals above R = "
	          "4; the model stops stealing there in every variant). Modeled.\n\n"
	          "| tenants | variant | stolen %% per tenant | IT | fairness |\n|---|---|---|---|---|\n");
	fprintf(dat, "# mix conservative_fairness dwspp_fairness aggressive_fairness "
	        "conservative_IT dwspp_IT aggressive_IT (modeled)\n");
	for (size_t i = 0; i < count && i < MIXES_MAX; i++) {
		struct cs_tenant_spec specs[CS_MAX_TENANTS];
		uint32_t n;

		if (results[i][0].tenants != 2)
			continue;
		n = cs_mix_parse(mixes[i], specs, CS_MAX_TENANTS);
		have[i] = n > 0;
		for (unsigned k = 0; have[i] && k < 3; k++) {
			struct cs_model_config cfg;
			char stolen[128];
			size_t used = 0;

			if (k == 1) {
				r[i][k] = results[i][3];
			} else {
				cs_model_config_defaults(&cfg);
				cfg.page_shift = 12;
				cfg.walkers.policy = CS_WALKERS_DWSPP;
				if (k == 0)
					cfg.walkers.queue_thres = 0.17;
				else
					for (unsigned d = 0; d < 4; d++)
						cfg.walkers.diff_thres[d] = 0.3;
				if (cs_run_mix(&cfg, specs, n, cycles, results[i][0].alone, &r[i][k])) {
					have[i] = false;
					break;
				}
			}
			stolen[0] = '\0';
			for (uint32_t t = 0; t < r[i][k].tenants; t++)
				used += (size_t)snprintf(stolen + used, sizeof(stolen) - used, "%s%.1f",
				                         t ? " / " : "", stolen_percent(&r[i][k].figures[t]));
			report_md(report, "| %s | %s | %s | %.3f | %.3f |\n", labels[i], names[k], stolen,
			          r[i][k].throughput, r[i][k].fairness);
		}
		if (have[i])
			fprintf(dat, "%s %.4f %.4f %.4f %.4f %.4f %.4f\n", labels[i], r[i][0].fairness,
			        r[i][1].fairness, r[i][2].fairness, r[i][0].throughput,
			        r[i][1].throughput, r[i][2].throughput);
		report_progress(report, "  walkers: DWS++ variants, %s", labels[i]);
	}
	fclose(dat);
	report_plot(report, "walkers-dwspp", "Fairness of the DWS++ variants (modeled)", "tenants",
	            "fairness (min SD ÷ max SD, no unit)",
	            "set style data histograms\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.8 border -1\nset xtics rotate by -30\nset yrange [0:*]\n"
	            "plot 'walkers-dwspp.dat' using 2:xtic(1) title 'conservative', "
	            "'' using 3 title 'DWS++', '' using 4 title 'aggressive'");
	report_plot(report, "walkers-dwspp-it", "Throughput of the DWS++ variants (modeled)",
	            "tenants", "IT (instructions per cycle, modeled)",
	            "set style data histograms\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.8 border -1\nset xtics rotate by -30\nset yrange [0:*]\n"
	            "plot 'walkers-dwspp.dat' using 5:xtic(1) title 'conservative', "
	            "'' using 6 title 'DWS++', '' using 7 title 'aggressive'");
	verdict_begin(&v, "D10", "aggressive stealing gives better fairness than conservative, "
	              "at a slightly lower throughput (Fig. 10a, 10b)");
	for (size_t i = 0; i < count && i < MIXES_MAX; i++) {
		if (!have[i])
			continue;
		pred_a_gt_b(&v, labels[i], "aggressive fairness", "conservative fairness",
		            r[i][2].fairness, r[i][0].fairness, 0);
		pred_a_gt_b(&v, labels[i], "conservative IT", "aggressive IT", r[i][0].throughput,
		            r[i][2].throughput, 0);
	}
	verdict_end(report, &v, "where the tenants' walk arrivals differ by more than 4x the "
	            "model's DWS++ never steals with pending own walks, so its variants only "
	            "differ below that ratio");
}

void experiment_walkers(struct report *report)
{
	const char *const *mixes = report->quick ? quick_walker_mixes : full_walker_mixes;
	size_t count = report->quick ? sizeof(quick_walker_mixes) / sizeof(*quick_walker_mixes)
	                             : sizeof(full_walker_mixes) / sizeof(*full_walker_mixes);
	uint64_t cycles = report->quick ? QUICK_CYCLES : FULL_CYCLES;
	static struct cs_mix_result results[MIXES_MAX][4];
	char labels[MIXES_MAX][64];
	uint32_t worst_dws = 0;
	bool dws_bound = true, ran = true;
	FILE *dat = report_file(report, "walkers.dat");
	struct verdict v;
	size_t i, p;

	report_section(report, "7", "Tenants side by side: page-walk stealing (seed 003)");
	report_md(report,
	          "**Seed.** Seed 003 §IV: shared page-table walkers are the "
	          "main source of interference between address spaces; a walk of one tenant waits "
	          "for *tens* of the other's (interleaving, Table III). §V: DWS lets a walker steal "
	          "only when its owner has no pending walk, so a walk waits for at most one "
	          "foreign walk; DWS++ steals more under thresholds. §VII: +37%% throughput (Fig. "
	          "5) and +15%% weighted IPC (Fig. 7) over the shared baseline; DWS++ fairer "
	          "(Fig. 6); stealing serves a share of one tenant's walks (Table VI); the light "
	          "tenant's walk latency falls (Fig. 8); walker share drives L2 TLB share (Fig. "
	          "9); static partitioning degrades against the shared baseline (Fig. 11); the "
	          "gain holds with three and four tenants (Fig. 13).\n\n"
	          "**Here** (all **modeled**, deterministic: one run per point). simgpu's "
	          "contention model (`vgpu-backend/simgpu/contention/`): the "
	          "built-in kernels' request streams through per-SM L1 TLBs, the shared L2 TLB, "
	          "16 walkers with a 192-entry queue and a page-walk cache, L2 and DRAM, each "
	          "tenant on its own SMs, %" PRIu64 " modeled cycles, 4 KiB pages. The same "
	          "model times kernels in simgpu's spatial mode (`sharing=spatial`, "
	          "`walkers=`). Interleaving: walks of other tenants a walk waited for, mean "
	          "(max) per tenant; IT = Σ IPC (instructions per cycle), WS = Σ IPC/IPC alone; "
	          "stolen: %% of a tenant's walks served by another's walker; walk latency in "
	          "cycles.\n\n"
	          "| tenants | policy | interleaving per tenant, mean (max) | stolen %% per tenant "
	          "| walk latency per tenant (cycles) | IT | WS | fairness |\n"
	          "|---|---|---|---|---|---|---|---|\n", cycles);
	fprintf(dat, "# mix shared_IT static_IT dws_IT dws++_IT shared_WS static_WS dws_WS dws++_WS "
	        "(modeled)\n");
	for (i = 0; i < count && i < MIXES_MAX; i++) {
		struct cs_mix_result *r = results[i];
		char cell[256], stolen[128], latency[128];

		mix_label(mixes[i], labels[i], sizeof(labels[i]));
		report_progress(report, "  walkers: %s", labels[i]);
		for (p = 0; p < 4; p++) {
			uint32_t t;
			size_t used = 0, used_s = 0, used_l = 0;

			if (run_mix(mixes[i], 12, walker_policies[p], CS_SCHED_FRFCFS, cycles, &r[p])) {
				ran = false;
				memset(&r[p], 0, sizeof(r[p]));
				continue;
			}
			cell[0] = stolen[0] = latency[0] = '\0';
			for (t = 0; t < r[p].tenants; t++) {
				used += (size_t)snprintf(cell + used, sizeof(cell) - used, "%s%.2f (%u)",
				                         t ? " / " : "", r[p].figures[t].interleaving,
				                         r[p].figures[t].interleaving_max);
				used_s += (size_t)snprintf(stolen + used_s, sizeof(stolen) - used_s, "%s%.1f",
				                           t ? " / " : "", stolen_percent(&r[p].figures[t]));
				used_l += (size_t)snprintf(latency + used_l, sizeof(latency) - used_l,
				                           "%s%.0f", t ? " / " : "",
				                           r[p].figures[t].avg_walk_latency);
				if (walker_policies[p] == CS_WALKERS_DWS) {
					if (r[p].figures[t].interleaving_max > worst_dws)
						worst_dws = r[p].figures[t].interleaving_max;
					dws_bound &= r[p].figures[t].interleaving_max <= 1;
				}
			}
			report_md(report, "| %s | %s | %s | %s | %s | %.3f | %.3f | %.3f |\n", labels[i],
			          cs_walker_policy_name(walker_policies[p]), cell, stolen, latency,
			          r[p].throughput, r[p].weighted_speedup, r[p].fairness);
		}
		fprintf(dat, "%s %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n", labels[i], r[0].throughput,
		        r[1].throughput, r[2].throughput, r[3].throughput, r[0].weighted_speedup,
		        r[1].weighted_speedup, r[2].weighted_speedup, r[3].weighted_speedup);
	}
	count = i;
	fclose(dat);
	report_plot(report, "walkers-it", "Throughput (IT) by walker policy (modeled)",
	            "tenants", "IT (instructions per cycle, modeled)",
	            "set style data histograms\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.8 border -1\nset xtics rotate by -30\nset yrange [0:*]\n"
	            "plot 'walkers.dat' using 2:xtic(1) title 'shared', '' using 3 title 'static', "
	            "'' using 4 title 'DWS', '' using 5 title 'DWS++'");
	report_plot(report, "walkers", "Weighted IPC (WS) by walker policy (modeled)",
	            "tenants", "weighted speedup (Σ IPC ÷ IPC alone, no unit)",
	            "set style data histograms\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.8 border -1\nset xtics rotate by -30\nset yrange [0:*]\n"
	            "plot 'walkers.dat' using 6:xtic(1) title 'shared', '' using 7 title 'static', "
	            "'' using 8 title 'DWS', '' using 9 title 'DWS++'");
	report_check(report, ran, "every mix ran under every walker policy");
	report_check(report, dws_bound,
	             "DWS: a walk waits for at most one walk of another tenant (worst %u)",
	             worst_dws);
	if (report->quick) {
		verdict_begin(&v, "D12", "DWS's gain with fewer and more walkers");
		verdict_end(report, &v, "the quick version leaves the sensitivity runs out (CI time)");
	} else {
		walker_sensitivity(report, cycles, &v);
	}
	report_md(report, "\nWalker share (mean fraction of the walkers busy for the tenant) "
	          "and L2 TLB share (fraction of its entries the tenant holds at the end), shared "
	          "walkers → DWS (seed 003 Fig. 9; modeled):\n\n| tenants | tenant | walker share "
	          "| L2 TLB share |\n|---|---|---|---|\n");
	for (i = 0; i < count; i++)
		for (uint32_t t = 0; t < results[i][0].tenants; t++)
			report_md(report, "| %s | %u | %.3f → %.3f | %.3f → %.3f |\n", labels[i], t + 1,
			          results[i][0].figures[t].walker_share,
			          results[i][2].figures[t].walker_share,
			          results[i][0].figures[t].l2_tlb_share,
			          results[i][2].figures[t].l2_tlb_share);
	report_md(report, "\n**Verdicts** (mixes with gups are the seed's H classes; every "
	          "mix for interleaving and stealing):\n\n");
	verdict_begin(&v, "DT3", "under shared walkers a light tenant's walk waits for tens of the "
	              "other's (seed: up to 75 in HH, 20 to 70 in H classes)");
	for (i = 0; i < count; i++)
		if (strstr(mixes[i], "gups"))
			pred_in_range(&v, labels[i], results[i][0].figures[lightest(&results[i][0])].interleaving,
			              10, 1e9, "walks waited for");
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "DT5", "under DWS and DWS++ interleaving falls below one walk (seed: "
	              "at most 0.46)");
	for (i = 0; i < count; i++)
		for (p = 2; p < 4; p++)
			for (uint32_t t = 0; t < results[i][p].tenants; t++) {
				char label[160];

				snprintf(label, sizeof(label), "%.63s, %s, tenant %u", labels[i],
				         cs_walker_policy_name(walker_policies[p]), t + 1);
				pred_in_range(&v, label, results[i][p].figures[t].interleaving, 0, 1,
				              "walks waited for");
			}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "D5", "DWS raises throughput (IT) over shared walkers");
	for (i = 0; i < count; i++)
		if (strstr(mixes[i], "gups"))
			pred_a_gt_b(&v, labels[i], "DWS IT", "shared IT", results[i][2].throughput,
			            results[i][0].throughput, 0);
	verdict_end(report, &v, "gups is a DRAM hog in this model too, so freeing walkers for "
	            "the other tenant also lets gups take more DRAM bandwidth from it "
	            "(`vgpu-backend/simgpu/contention/README.md`)");
	verdict_begin(&v, "D13", "DWS raises throughput with three and four tenants");
	for (i = 0; i < count; i++)
		if (results[i][0].tenants >= 3)
			pred_a_gt_b(&v, labels[i], "DWS IT", "shared IT", results[i][2].throughput,
			            results[i][0].throughput, 0);
	verdict_end(report, &v, report->quick ? "the quick version runs two-tenant mixes only" : NULL);
	verdict_begin(&v, "D7", "DWS raises weighted IPC (WS) over shared walkers");
	for (i = 0; i < count; i++)
		if (strstr(mixes[i], "gups"))
			pred_a_gt_b(&v, labels[i], "DWS WS", "shared WS", results[i][2].weighted_speedup,
			            results[i][0].weighted_speedup, 0);
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "D6", "DWS++ is fairer than DWS (min SD ÷ max SD)");
	for (i = 0; i < count; i++)
		if (strstr(mixes[i], "gups"))
			pred_a_gt_b(&v, labels[i], "DWS++ fairness", "DWS fairness",
			            results[i][3].fairness, results[i][2].fairness, 0);
	verdict_end(report, &v, "where DWS++ never meets its thresholds it steals exactly as DWS "
	            "does and its figures equal DWS's");
	verdict_begin(&v, "DT6", "stealing serves walks under DWS, and DWS++ steals at least as "
	              "much as DWS");
	for (i = 0; i < count; i++) {
		double dws = 0, dwspp = 0;

		for (uint32_t t = 0; t < results[i][2].tenants; t++) {
			dws += stolen_percent(&results[i][2].figures[t]);
			dwspp += stolen_percent(&results[i][3].figures[t]);
		}
		pred_a_gt_b(&v, labels[i], "stolen % under DWS", "0", dws, 0, 0);
		pred_a_le_b_case(&v, labels[i], "stolen % under DWS", "under DWS++", dws, dwspp, 0);
	}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "D8", "DWS lowers the light tenant's walk latency against shared "
	              "walkers");
	for (i = 0; i < count; i++) {
		uint32_t t = lightest(&results[i][0]);

		if (strstr(mixes[i], "gups"))
			pred_a_le_b_case(&v, labels[i], "DWS walk latency", "shared walk latency",
			                 results[i][2].figures[t].avg_walk_latency,
			                 results[i][0].figures[t].avg_walk_latency, 0);
	}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "D9", "a tenant whose walker share rises under DWS holds more of the "
	              "L2 TLB (and the reverse)");
	for (i = 0; i < count; i++)
		for (uint32_t t = 0; t < results[i][0].tenants; t++) {
			double dw = results[i][2].figures[t].walker_share - results[i][0].figures[t].walker_share;
			double dt = results[i][2].figures[t].l2_tlb_share - results[i][0].figures[t].l2_tlb_share;
			char label[160], detail[96];

			snprintf(label, sizeof(label), "%.63s, tenant %u", labels[i], t + 1);
			snprintf(detail, sizeof(detail), "walker share %+.3f, L2 TLB share %+.3f", dw, dt);
			pred_holds(&v, label, "the walker share and the L2 TLB share move the same way "
			           "from shared to DWS", dw * dt >= 0, detail);
		}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "D11", "static partitioning degrades throughput against the shared "
	              "baseline, and DWS beats it");
	for (i = 0; i < count; i++) {
		if (!strstr(mixes[i], "gups"))
			continue;
		pred_a_gt_b(&v, labels[i], "shared IT", "static IT", results[i][0].throughput,
		            results[i][1].throughput, 0);
		pred_a_gt_b(&v, labels[i], "DWS IT", "static IT", results[i][2].throughput,
		            results[i][1].throughput, 0);
	}
	verdict_end(report, &v, "gups is a DRAM hog too in this model, so static partitioning "
	            "throttles its DRAM traffic along with its walks, which helps its co-runner");
	dwspp_variants(report, mixes, count, (const char (*)[64])labels, results, cycles);
	walker_headroom(report, mixes, count, (const char (*)[64])labels,
	                (const struct cs_mix_result (*)[4])results, cycles);
	walker_large_pages(report, mixes, count, (const char (*)[64])labels,
	                   (const struct cs_mix_result (*)[4])results, cycles);
	report_md(report, "\n");
	same_results_across_modes(report);
}

/* Seed 004 Fig. 6: C = 50, MPKI 20 and 5, alone 30 and 40. */
static bool analytic_example(struct report *report)
{
	static const struct cs_analytic_app apps[2] = { { 20, 30 }, { 5, 40 } };
	static const uint32_t first[2] = { 0, 1 }, second[2] = { 1, 0 };
	static const double want_it[3] = { 5.5, 8.5, 6.25 }, want_ws[3] = { 1.5, 4.0 / 3, 1.458333 };
	const uint32_t *orders[3] = { first, second, NULL };
	static const char *const names[3] = { "prioritize app 1", "prioritize app 2 (lower MPKI)",
		                              "round-robin" };
	bool exact = true;
	int k;

	report_md(report, "| seed 004 Fig. 6 (C = 50) | IT | WS |\n|---|---|---|\n");
	for (k = 0; k < 3; k++) {
		double bw[2], it, ws;

		cs_analytic_shares(50, apps, 2, orders[k], bw);
		it = cs_analytic_it(apps, bw, 2);
		ws = cs_analytic_ws(apps, bw, 2);
		exact &= fabs(it - want_it[k]) < 1e-9 && fabs(ws - want_ws[k]) < 1e-5;
		report_md(report, "| %s | %.3f | %.3f |\n", names[k], it, ws);
	}
	report_md(report, "\n");
	return exact;
}

#define PAIRS_MAX 8

/* The schedulers of a mix: FR-FCFS, RR, ITS, WEIS, then Prior_App with
 * each tenant first (seed 004 §4, Fig. 5). */
#define RUNS_MAX (4 + CS_MAX_TENANTS)

static bool run_schedulers(const char *mix, uint64_t cycles, bool prior, struct cs_mix_result *r)
{
	bool ok = true;
	unsigned p;

	for (p = 0; p < 4; p++)
		if (run_mix_with(mix, 21, CS_WALKERS_SHARED, sched_policies[p], 0, cycles,
		                 p ? r[0].alone : NULL, &r[p])) {
			ok = false;
			memset(&r[p], 0, sizeof(r[p]));
		}
	for (p = 0; prior && p < r[0].tenants; p++)
		if (run_mix_with(mix, 21, CS_WALKERS_SHARED, CS_SCHED_PRIORITY, p, cycles, r[0].alone,
		                 &r[4 + p])) {
			ok = false;
			memset(&r[4 + p], 0, sizeof(r[4 + p]));
		}
	return ok;
}

/* Seed 004 Table 1 and Fig. 2: each kernel alone on the whole GPU, its MPKI
 * and bandwidth, and its IPC against the model P ∝ BW/MPKI (eq. 3), the
 * constant fitted by least squares through the origin. */
static void app_characteristics(struct report *report, uint64_t cycles)
{
	static const char *const kernels[] = { "gups", "stream", "stencil", "copy", "fill",
		                               "checksum" };
	enum { KERNELS = sizeof(kernels) / sizeof(*kernels) };
	struct cs_tenant_figures f[KERNELS];
	double ipc[KERNELS], mpki[KERNELS], ratio[KERNELS], mare = 0, sxy = 0, sxx = 0, k;
	const char *name[KERNELS];
	bool ok[KERNELS];
	unsigned n = 0;
	struct cs_model_config cfg;
	FILE *dat = report_file(report, "memsched-model.dat");
	struct verdict v;

	cs_model_config_defaults(&cfg);
	cfg.page_shift = 21;
	for (unsigned j = 0; j < KERNELS; j++) {
		struct cs_tenant_spec spec;

		ok[j] = !cs_tenant_spec_parse(kernels[j], &spec) &&
		        !cs_run_alone(&cfg, &spec, cfg.sms, cycles, &f[j]);
		/* eq. 3 needs misses: a kernel without fetch misses has no MPKI */
		if (!ok[j] || f[j].mpki < 1 || f[j].ipc <= 0)
			continue;
		name[n] = kernels[j];
		ipc[n] = f[j].ipc;
		mpki[n] = f[j].mpki;
		ratio[n] = f[j].bandwidth / f[j].mpki;
		sxy += ratio[n] * ipc[n];
		sxx += ratio[n] * ratio[n];
		n++;
	}
	k = sxx > 0 ? sxy / sxx : 0;
	report_md(report, "\nEach kernel alone on all %u SMs (seed 004 Table 1 and Fig. 2; 2 MiB "
	          "pages, FR-FCFS, modeled): MPKI (L2 misses per 1000 instructions), BW (DRAM bytes "
	          "per cycle, reads and write-backs) and BW/C (of the DRAM's peak), the IPC the model "
	          "measures and the IPC eq. 3 gives, k × BW/MPKI with k = %.3f fitted by least "
	          "squares (the seed normalizes instead; eq. 3 is a proportionality). A kernel "
	          "without fetch misses (MPKI < 1: fill writes whole lines) has no eq. 3 value.\n\n"
	          "| kernel | MPKI | BW (B/cycle) | BW/C | IPC | IPC by eq. 3 | error |\n"
	          "|---|---|---|---|---|---|---|\n", cfg.sms, k);
	fprintf(dat, "# kernel measured_IPC eq3_IPC (modeled)\n");
	for (unsigned j = 0, i = 0; j < KERNELS; j++) {
		if (!ok[j])
			continue;
		if (i < n && name[i] == kernels[j]) {
			double model = k * ratio[i];

			mare += fabs(model - ipc[i]) / ipc[i];
			report_md(report, "| %s | %.1f | %.1f | %.3f | %.3f | %.3f | %+.1f %% |\n",
			          kernels[j], f[j].mpki, f[j].bandwidth, f[j].bandwidth_share, ipc[i],
			          model, 100 * (model - ipc[i]) / ipc[i]);
			fprintf(dat, "%s %.4f %.4f\n", kernels[j], ipc[i], model);
			i++;
		} else {
			report_md(report, "| %s | %.1f | %.1f | %.3f | %.3f | — | — |\n", kernels[j],
			          f[j].mpki, f[j].bandwidth, f[j].bandwidth_share, f[j].ipc);
		}
	}
	fclose(dat);
	mare = n ? 100 * mare / n : NAN;
	report_md(report, "\nMean absolute relative error of eq. 3: %.1f %% over %u kernels "
	          "(seed: 10.3 %% over 25 applications).\n", mare, n);
	report_plot(report, "memsched-model", "IPC alone: measured against eq. 3 (modeled)",
	            "kernel", "IPC (instructions per cycle, modeled)",
	            "set style data histograms\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.8 border -1\nset yrange [0:*]\n"
	            "plot 'memsched-model.dat' using 2:xtic(1) title 'measured', "
	            "'' using 3 title 'eq. 3: k x BW/MPKI'");
	verdict_begin(&v, "J2", "eq. 3 (P ∝ BW/MPKI) predicts the IPC: mean absolute relative "
	              "error at most the seed's 10.3 %%");
	if (n >= 3)
		pred_in_range(&v, "mean absolute relative error", mare, 0, 10.3, "%");
	verdict_end(report, &v, "BW counts write-backs, MPKI only fetch misses: kernels that "
	            "write what they read (stream, copy, stencil, gups) move more bytes per miss "
	            "than a read-only one (checksum), which one constant cannot fit");
	verdict_begin(&v, "JT1", "MPKI alone does not explain performance: IPC correlates more "
	              "strongly with BW/MPKI than with MPKI (seed: MPKI and IPC only -44.4 %%)");
	if (n >= 3) {
		double c_mpki = 0, c_ratio = 0;
		const double *xs[2] = { mpki, ratio };
		double *out[2] = { &c_mpki, &c_ratio };

		for (unsigned j = 0; j < 2; j++) {
			double sx = 0, sy = 0, qxx = 0, qyy = 0, qxy = 0;

			for (unsigned i = 0; i < n; i++) {
				sx += xs[j][i];
				sy += ipc[i];
				qxx += xs[j][i] * xs[j][i];
				qyy += ipc[i] * ipc[i];
				qxy += xs[j][i] * ipc[i];
			}
			{
				double vx = qxx - sx * sx / n, vy = qyy - sy * sy / n;

				*out[j] = vx > 0 && vy > 0 ? (qxy - sx * sy / n) / sqrt(vx * vy) : 0;
			}
		}
		report_md(report, "\nCorrelation of IPC with MPKI: %.3f; with BW/MPKI: %.3f.\n\n",
		          c_mpki, c_ratio);
		pred_a_gt_b(&v, "the kernels alone", "|correlation with BW/MPKI|",
		            "|correlation with MPKI|", fabs(c_ratio), fabs(c_mpki), 0);
	}
	verdict_end(report, &v, NULL);
}

void experiment_memsched(struct report *report)
{
	const char *const *pairs = report->quick ? quick_sched_pairs : full_sched_pairs;
	size_t count = report->quick ? sizeof(quick_sched_pairs) / sizeof(*quick_sched_pairs)
	                             : sizeof(full_sched_pairs) / sizeof(*full_sched_pairs);
	const char *const *triples = report->quick ? quick_sched_triples : full_sched_triples;
	size_t triple_count = report->quick ? 1 : 2;
	uint64_t cycles = report->quick ? QUICK_CYCLES : FULL_CYCLES;
	static struct cs_mix_result r[PAIRS_MAX][RUNS_MAX], t3[PAIRS_MAX][RUNS_MAX];
	char labels[PAIRS_MAX][64], tlabels[PAIRS_MAX][64];
	double its_gain = 1, weis_gain = 1, split_fr[3], split_its[3];
	char split_labels[3][16];
	bool ran = true, exact;
	FILE *dat = report_file(report, "memsched.dat");
	struct verdict v;
	size_t i;

	report_section(report, "8", "Tenants side by side: application-aware memory scheduling "
	               "(seed 004)");
	report_md(report,
	          "**Seed.** Seed 004 §3–§8: an application's performance "
	          "∝ BW/MPKI; statically prioritizing one application (Prior_App, Fig. 5) helps IT "
	          "when it is the lower-MPKI one and WS when it is the lower-bandwidth one; ITS "
	          "(the lower MPKI first) raises instruction throughput IT, WEIS (bandwidth by "
	          "alone bandwidth) raises weighted speedup WS: ITS +34%% IT over FR-FCFS (Fig. "
	          "8), WEIS +10%% WS over FR-FCFS and +5%% over RR (Fig. 10), harmonic speedup "
	          "+8%% under WEIS and +4%% under RR (Fig. 12), and the same with three "
	          "applications (Fig. 14). Its Fig. 6 table prints the WS of the last two rows "
	          "crosswise; recomputed below.\n\n");
	exact = analytic_example(report);
	report_md(report,
	          "**Here** (all **modeled**, deterministic: one run per point). Pairs of the "
	          "built-in kernels in the contention model, 2 MiB pages, %" PRIu64 " modeled "
	          "cycles, walkers shared, the DRAM scheduler per column (`memsched=` in "
	          "simgpu's spatial mode). IT in instructions per cycle; WS and HS (harmonic "
	          "speedup, n ÷ Σ IPC alone/IPC) have no unit. Prior 1 / Prior 2: the first / "
	          "second application's requests always first.\n\n"
	          "| pair | MPKI | alone BW (B/cycle) | FR-FCFS IT / WS / HS | RR IT / WS / HS | ITS "
	          "IT / WS / HS | WEIS IT / WS / HS | Prior 1 IT / WS | Prior 2 IT / WS |\n"
	          "|---|---|---|---|---|---|---|---|---|\n", cycles);
	fprintf(dat, "# pair frfcfs_IT rr_IT its_IT weis_IT frfcfs_WS rr_WS its_WS weis_WS "
	        "frfcfs_HS rr_HS its_HS weis_HS prior1_IT prior2_IT prior1_WS prior2_WS (modeled)\n");
	for (i = 0; i < count && i < PAIRS_MAX; i++) {
		struct cs_mix_result *x = r[i];

		mix_label(pairs[i], labels[i], sizeof(labels[i]));
		report_progress(report, "  memsched: %s", labels[i]);
		ran &= run_schedulers(pairs[i], cycles, true, x);
		report_md(report, "| %s | %.1f / %.1f | %.1f / %.1f |", labels[i], x[0].figures[0].mpki,
		          x[0].figures[1].mpki, x[0].alone[0].bandwidth, x[0].alone[1].bandwidth);
		for (unsigned p = 0; p < 4; p++)
			report_md(report, " %.3f / %.3f / %.3f |", x[p].throughput, x[p].weighted_speedup,
			          x[p].harmonic_speedup);
		report_md(report, " %.3f / %.3f | %.3f / %.3f |\n", x[4].throughput,
		          x[4].weighted_speedup, x[5].throughput, x[5].weighted_speedup);
		fprintf(dat, "%s", labels[i]);
		for (unsigned p = 0; p < 4; p++)
			fprintf(dat, " %.4f", x[p].throughput);
		for (unsigned p = 0; p < 4; p++)
			fprintf(dat, " %.4f", x[p].weighted_speedup);
		for (unsigned p = 0; p < 4; p++)
			fprintf(dat, " %.4f", x[p].harmonic_speedup);
		fprintf(dat, " %.4f %.4f %.4f %.4f\n", x[4].throughput, x[5].throughput,
		        x[4].weighted_speedup, x[5].weighted_speedup);
		its_gain *= x[0].throughput > 0 ? x[2].throughput / x[0].throughput : 1;
		weis_gain *= x[0].weighted_speedup > 0 ? x[3].weighted_speedup / x[0].weighted_speedup : 1;
	}
	count = i;
	fclose(dat);
	its_gain = 100 * (pow(its_gain, 1.0 / count) - 1);
	weis_gain = 100 * (pow(weis_gain, 1.0 / count) - 1);
	report_md(report, "\nGeometric mean over the pairs: ITS %+.1f %% IT over FR-FCFS, WEIS "
	          "%+.1f %% WS over FR-FCFS.\n", its_gain, weis_gain);
	{
		static const char *const hist = "set style data histograms\nset style histogram "
		                                "clustered gap 1\nset style fill solid 0.8 border -1\n"
		                                "set xtics rotate by -30\nset yrange [0:*]\n";
		char body[512];

		snprintf(body, sizeof(body), "%splot 'memsched.dat' using 2:xtic(1) title 'FR-FCFS', "
		         "'' using 3 title 'RR', '' using 4 title 'ITS', '' using 5 title 'WEIS'", hist);
		report_plot(report, "memsched", "Instruction throughput (IT) by memory scheduler "
		            "(modeled)", "pair", "IT (instructions per cycle, modeled)", body);
		snprintf(body, sizeof(body), "%splot 'memsched.dat' using 6:xtic(1) title 'FR-FCFS', "
		         "'' using 7 title 'RR', '' using 8 title 'ITS', '' using 9 title 'WEIS'", hist);
		report_plot(report, "memsched-ws", "Weighted speedup (WS) by memory scheduler "
		            "(modeled)", "pair", "WS (Σ IPC ÷ IPC alone, no unit, modeled)", body);
		snprintf(body, sizeof(body), "%splot 'memsched.dat' using 10:xtic(1) title 'FR-FCFS', "
		         "'' using 11 title 'RR', '' using 12 title 'ITS', '' using 13 title 'WEIS'", hist);
		report_plot(report, "memsched-hs", "Harmonic speedup (HS) by memory scheduler "
		            "(modeled)", "pair", "HS (no unit, modeled)", body);
	}
	/* Three applications (seed 004 Fig. 14). */
	report_md(report, "\nThree applications (seed 004 Fig. 14), the same set-up:\n\n"
	          "| applications | FR-FCFS IT / WS | RR IT / WS | ITS IT / WS | WEIS IT / WS |\n"
	          "|---|---|---|---|---|\n");
	for (i = 0; i < triple_count; i++) {
		struct cs_mix_result *x = t3[i];

		mix_label(triples[i], tlabels[i], sizeof(tlabels[i]));
		report_progress(report, "  memsched: %s", tlabels[i]);
		ran &= run_schedulers(triples[i], cycles, false, x);
		report_md(report, "| %s |", tlabels[i]);
		for (unsigned p = 0; p < 4; p++)
			report_md(report, " %.3f / %.3f |", x[p].throughput, x[p].weighted_speedup);
		report_md(report, "\n");
	}
	/* Core partitioning (seed 004 Fig. 13). */
	{
		static const uint32_t splits[3][2] = { { 15, 15 }, { 10, 20 }, { 20, 10 } };

		report_md(report, "\nCore partitioning (seed 004 Fig. 13): `%s` with its 30 SMs split "
		          "three ways, IT (instructions per cycle, modeled).\n\n| SMs (first, second) "
		          "| FR-FCFS IT | ITS IT | ITS ÷ FR-FCFS |\n|---|---|---|---|\n", pairs[0]);
		for (i = 0; i < 3; i++) {
			split_fr[i] = split_throughput(pairs[0], splits[i], CS_SCHED_FRFCFS, cycles);
			split_its[i] = split_throughput(pairs[0], splits[i], CS_SCHED_ITS, cycles);
			ran &= !isnan(split_fr[i]) && !isnan(split_its[i]);
			report_md(report, "| %u, %u | %.3f | %.3f | %.3f |\n", splits[i][0], splits[i][1],
			          split_fr[i], split_its[i], split_its[i] / split_fr[i]);
			snprintf(split_labels[i], sizeof(split_labels[i]), "(%u, %u)", splits[i][0],
			         splits[i][1]);
		}
		report_progress(report, "  memsched: core partitioning");
	}
	report_check(report, exact,
	             "seed 004's analytical example: IT 5.5 / 8.5 / 6.25, WS 1.5 / 1.333 / 1.458");
	report_check(report, ran, "every mix ran under every memory scheduler");
	report_md(report, "\n**Verdicts:**\n\n");
	verdict_begin(&v, "J6", "the analytical example's IT and WS (C = 50, MPKI 20 and 5, alone "
	              "30 and 40)");
	pred_holds(&v, "Fig. 6", "IT 5.5 / 8.5 / 6.25 and WS 1.5 / 1.333 / 1.458 to 1e-5", exact,
	           "differs");
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "J5", "prioritizing the lower-MPKI application gives the higher IT, the "
	              "lower-alone-bandwidth one the higher WS (Prior_App, Observations 1 and 2)");
	for (i = 0; i < count; i++) {
		const struct cs_mix_result *x = r[i];
		unsigned low_mpki = x[0].figures[1].mpki < x[0].figures[0].mpki;
		unsigned low_bw = x[0].alone[1].bandwidth < x[0].alone[0].bandwidth;
		char label[96];

		snprintf(label, sizeof(label), "%.63s, IT", labels[i]);
		pred_a_gt_b(&v, label, "IT with the lower-MPKI app first", "with the other first",
		            x[4 + low_mpki].throughput, x[5 - low_mpki].throughput, 0);
		snprintf(label, sizeof(label), "%.63s, WS", labels[i]);
		pred_a_gt_b(&v, label, "WS with the lower-bandwidth app first", "with the other first",
		            x[4 + low_bw].weighted_speedup, x[5 - low_bw].weighted_speedup, 0);
	}
	verdict_end(report, &v, "pairs whose alone bandwidths sum to less than the DRAM's peak "
	            "are outside the seed's premise (eq. 3: performance bound by the shared "
	            "bandwidth), so who goes first matters little there");
	verdict_begin(&v, "J8 J11", "ITS raises IT over FR-FCFS and over RR");
	for (i = 0; i < count; i++) {
		pred_a_gt_b(&v, labels[i], "ITS IT", "FR-FCFS IT", r[i][2].throughput, r[i][0].throughput, 0);
		pred_a_gt_b(&v, labels[i], "ITS IT", "RR IT", r[i][2].throughput, r[i][1].throughput, 0);
	}
	verdict_end(report, &v, "as for Prior_App: the seed's premise needs the pair to exceed "
	            "the DRAM's bandwidth (`vgpu-backend/simgpu/contention/README.md`)");
	verdict_begin(&v, "J10 J11", "WEIS raises WS over FR-FCFS and over RR");
	for (i = 0; i < count; i++) {
		pred_a_gt_b(&v, labels[i], "WEIS WS", "FR-FCFS WS", r[i][3].weighted_speedup,
		            r[i][0].weighted_speedup, 0);
		pred_a_gt_b(&v, labels[i], "WEIS WS", "RR WS", r[i][3].weighted_speedup,
		            r[i][1].weighted_speedup, 0);
	}
	verdict_end(report, &v, "as for ITS");
	verdict_begin(&v, "J8 J10 J11", "the mean gains match the seed's: ITS +34 %% IT, WEIS +10 "
	              "%% WS over FR-FCFS (geometric means, within 10 percentage points)");
	pred_within(&v, "ITS IT gain", its_gain, 34, 10, "%");
	pred_within(&v, "WEIS WS gain", weis_gain, 10, 10, "%");
	verdict_end(report, &v, "a handful of built-in kernel pairs, not the seed's 25 (and 100) "
	            "Rodinia/Parboil/CUDA SDK workloads");
	verdict_begin(&v, "J12", "WEIS and RR raise harmonic speedup over FR-FCFS");
	for (i = 0; i < count; i++) {
		pred_a_gt_b(&v, labels[i], "WEIS HS", "FR-FCFS HS", r[i][3].harmonic_speedup,
		            r[i][0].harmonic_speedup, 0);
		pred_a_gt_b(&v, labels[i], "RR HS", "FR-FCFS HS", r[i][1].harmonic_speedup,
		            r[i][0].harmonic_speedup, 0);
	}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "J14", "with three applications ITS raises IT and WEIS raises WS over "
	              "FR-FCFS");
	for (i = 0; i < triple_count; i++) {
		pred_a_gt_b(&v, tlabels[i], "ITS IT", "FR-FCFS IT", t3[i][2].throughput,
		            t3[i][0].throughput, 0);
		pred_a_gt_b(&v, tlabels[i], "WEIS WS", "FR-FCFS WS", t3[i][3].weighted_speedup,
		            t3[i][0].weighted_speedup, 0);
	}
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "J13", "ITS raises IT over FR-FCFS with every core partitioning");
	for (i = 0; i < 3; i++)
		pred_a_gt_b(&v, split_labels[i], "ITS IT", "FR-FCFS IT", split_its[i], split_fr[i], 0);
	verdict_end(report, &v, NULL);
	verdict_begin(&v, "J4", "one application's slowdown depends on its co-runner (gups "
	              "beside each other kernel, FR-FCFS: the largest loss at least 1.2x the "
	              "smallest)");
	{
		double lo = INFINITY, hi = 0;

		for (i = 0; i < count; i++)
			for (uint32_t t = 0; t < r[i][0].tenants; t++)
				if (!strncmp(pairs[i] + (t ? strcspn(pairs[i], " ") + 1 : 0), "gups", 4)) {
					double loss = 1 - r[i][0].slowdown[t];

					lo = fmin(lo, loss);
					hi = fmax(hi, loss);
				}
		if (hi > 0 && count > 1)
			pred_a_gt_b(&v, "gups", "largest loss (1 - SD)", "smallest", hi, lo, 0.2);
	}
	verdict_end(report, &v, NULL);
	memsched_traces(report, pairs, count, (const char (*)[64])labels, &r[0][0], RUNS_MAX, cycles);
	app_characteristics(report, cycles);
}
