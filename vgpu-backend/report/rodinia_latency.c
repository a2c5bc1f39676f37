// SPDX-License-Identifier: MIT
/*
 * rodinia_latency.c - experiment 13: the eviction latency of the Rodinia
 * programs' own allocations through vgpud (thesis §6.3.2 and §6.4,
 * Figs. 6.5 to 6.10), as experiment 10 measures it for synthetic
 * allocations in process.
 *
 * Each run is rodinia_run.sh: a private vgpud on simgpu, a ballast leaving
 * AVAIL = one instance's working set, and either one instance with an idle
 * dummy holding 80 % of AVAIL (the thesis's dummy: no contention) or two
 * instances (contention). vgpud's eviction time over the run (vgpuctl
 * status, gpu.eviction) gives the averages the thesis plots: per eviction
 * pass the allocating side's policy, DMA setup, DMA and other time; per
 * suspended VM the victim's drain and pause. Host work is wall-clock; the
 * DMA is the copy engine's time on simgpu's modeled clock, and a pause
 * counts it so (its wall-clock copy wait replaced by the modeled one).
 * Then the same two instances at chunk sizes around vgpud's 64 KiB give
 * runtime (modeled) and latency against the chunk size (Figs. 6.9, 6.10).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "rodinia_run.h"
#include "verdict.h"

#define PROGRAMS 8 /* rodinia_program_count */
#define CHUNKS_MAX 5
#define CHUNK_DEFAULT (64 * KiB)

/* One run's averages (NAN where nothing was evicted). */
struct latency {
	bool ok;
	double runtime_ms;                              /* modeled, slower instance */
	double passes, mib;                             /* per pass: MiB copied */
	double policy, setup, dma, other, alloc;        /* ms per pass */
	double suspensions, drain, pause;               /* ms per suspended VM */
};

static void averages(const struct rodinia_run *run, struct latency *out)
{
	const struct rodinia_eviction *e = &run->eviction;
	double n = (double)e->passes, s = (double)e->suspensions;

	out->ok = run->ok && e->known;
	out->runtime_ms = run->ok ? run->modeled_ms : NAN;
	out->passes = n;
	out->suspensions = s;
	if (!out->ok || !n) {
		out->mib = out->policy = out->setup = out->dma = out->other = out->alloc = NAN;
		out->drain = out->pause = NAN;
		return;
	}
	out->mib = e->bytes / (double)MiB / n;
	out->policy = e->policy_ms / n;
	out->setup = e->setup_ms / n;
	out->dma = e->copy_modeled_ms / n;
	out->other = e->other_ms / n;
	out->alloc = out->policy + out->setup + out->dma + out->other;
	out->drain = s ? e->drain_ms / s : NAN;
	out->pause = s ? fmax(0, e->pause_ms - e->copy_ms + e->copy_modeled_ms) / s : NAN;
}

static bool run(struct report *report, const struct rodinia_program *p, const char *policy,
                bool contention, uint64_t chunk, struct latency *out)
{
	uint64_t avail = p->bytes / CHUNK_DEFAULT * CHUNK_DEFAULT;
	struct rodinia_run_args args = {
		.avail = avail, .policy = policy, .seed = 1, .instances = contention ? 2 : 1,
		.dummy = contention ? 0 : (uint64_t)(0.8 * (double)avail), .chunk = chunk,
		.prefix = "rodinia-latency",
	};
	struct rodinia_run r;

	if (!rodinia_run_one(report, p, &args, &r))
		return false;
	averages(&r, out);
	return true;
}

/* A figure, or "-" where there is none (nothing evicted, nobody suspended). */
static const char *fig(char *buf, size_t len, const char *format, double value)
{
	if (isnan(value))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, format, value);
	return buf;
}

static void row(struct report *report, const char *name, const char *setting,
                const char *policy, const struct latency *l)
{
	char f[8][24];

	report_md(report, "| %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %.0f | %s | "
	          "%s |\n", name, setting, policy, l->ok ? "ok" : "FAILED", l->passes,
	          fig(f[0], 24, "%.3f", l->mib), fig(f[1], 24, "%.3f", l->policy),
	          fig(f[2], 24, "%.3f", l->setup), fig(f[3], 24, "%.4f", l->dma),
	          fig(f[4], 24, "%.3f", l->other), fig(f[5], 24, "%.3f", l->alloc), l->suspensions,
	          fig(f[6], 24, "%.3f", l->drain), fig(f[7], 24, "%.3f", l->pause));
}

void experiment_rodinia_latency(struct report *report)
{
	static const uint64_t full[] = { 16 * KiB, 32 * KiB, 64 * KiB, 128 * KiB, 256 * KiB };
	static const uint64_t quick[] = { 64 * KiB, 256 * KiB };
	const uint64_t *chunks = report->quick ? quick : full;
	unsigned chunk_count = report->quick ? 2 : CHUNKS_MAX, policies = report->quick ? 1 : 2;
	static const char *const policy_names[] = { "priority", "random" };
	struct latency idle[PROGRAMS][2], busy[PROGRAMS][2], sweep[PROGRAMS][CHUNKS_MAX];
	double kib[CHUNKS_MAX], y[CHUNKS_MAX];
	bool ok = true;
	struct verdict v;

	report_section(report, "13", "Eviction latency of the Rodinia programs' allocations "
	               "(thesis §6.3.2, §6.4)");
	report_md(report,
	          "**Seed.** Thesis Figs. 6.5 to 6.8: the average latency of eviction operations "
	          "while the eight programs allocate, from the allocating application's side "
	          "(policy, DMA setup, DMA, other) and from a victim's (drain, pause), against an "
	          "idle dummy holding 80 MiB of 100 (no contention: *\"typically below 60 ms\"*, "
	          "*\"heavily dominated by DMA transfers\"*, the policy negligible but for nn) and "
	          "against a second instance (contention: the allocating side *\"increased under "
	          "contention, but generally remains below 100 ms\"*, victims *\"below 60 ms\"* and "
	          "lower than the allocating side). Figs. 6.9 and 6.10: runtime and eviction "
	          "latency against the chunk size (little impact on runtime; 4 MiB best for "
	          "latency).\n\n"
	          "**Here.** Experiment 10 measures this for synthetic allocations in process; "
	          "these are the programs of `tests/rodinia` allocating through `libcuda.so.1` and "
	          "vgpud on simgpu (`rodinia_run.sh`, 64 KiB chunks), with the available memory "
	          "one instance's working set: *idle dummy* is one instance beside a tenant that "
	          "holds 80 %% of it and never submits; *second instance* is two instances. "
	          "vgpud's eviction time (`vgpuctl status`: `gpu.eviction`) over each run, averaged "
	          "per eviction pass (allocating side) and per suspended VM (victims, the program "
	          "itself included when its own chunks go): policy, DMA setup and other are the "
	          "core's host work, **wall-clock**; DMA is the copy engine's time on simgpu's "
	          "**modeled** clock, and the pause counts the copy so too. %s\n\n"
	          "| program | against | policy | result | eviction passes | MiB copied per pass | "
	          "policy (ms) | DMA setup (ms) | DMA, modeled (ms) | other (ms) | allocating "
	          "side (ms) | suspended VMs | drain per VM (ms) | pause per VM (ms) |\n"
	          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
	          report->quick ? "The quick version runs the priority policy only, and two "
	                          "chunk sizes." : "Priority and random (seed 1) policies.");
	if (!report->rodinia_build) {
		verdict_begin(&v, "T6.5 T6.6 T6.7 T6.8 T6.9 T6.10", "the Rodinia programs' "
		              "eviction latency");
		verdict_end(report, &v, "no build with the programs given (--rodinia-build)");
		return;
	}
	for (unsigned i = 0; i < PROGRAMS; i++) {
		const struct rodinia_program *p = &rodinia_programs[i];

		for (unsigned c = 0; c < 2; c++)
			for (unsigned k = 0; k < policies; k++) {
				struct latency *l = c ? &busy[i][k] : &idle[i][k];

				if (!run(report, p, policy_names[k], c, CHUNK_DEFAULT, l)) {
					verdict_begin(&v, "T6.5 T6.6 T6.7 T6.8 T6.9 T6.10", "the Rodinia "
					              "programs' eviction latency");
					verdict_end(report, &v, "rodinia_run.sh could not run them");
					return;
				}
				ok &= l->ok;
				row(report, p->name, c ? "second instance" : "idle dummy", policy_names[k],
				    l);
			}
	}
	report_check(report, ok, "rodinia latency: every run (idle dummy and second instance) "
	             "exits 0 with its results right and vgpud's eviction time read");

	report_md(report, "\nAgainst the chunk size (two instances, priority; thesis Figs. 6.9, "
	          "6.10): runtime of the slower instance (modeled) / allocating side per eviction "
	          "pass (ms).\n\n| program |");
	for (unsigned c = 0; c < chunk_count; c++) {
		kib[c] = chunks[c] / (double)KiB;
		report_md(report, " %.0f KiB |", kib[c]);
	}
	report_md(report, "\n|---|");
	for (unsigned c = 0; c < chunk_count; c++)
		report_md(report, "---|");
	report_md(report, "\n");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		const struct rodinia_program *p = &rodinia_programs[i];

		report_md(report, "| %s |", p->name);
		for (unsigned c = 0; c < chunk_count; c++) {
			if (chunks[c] == CHUNK_DEFAULT)
				sweep[i][c] = busy[i][0];
			else if (!run(report, p, "priority", true, chunks[c], &sweep[i][c]))
				memset(&sweep[i][c], 0, sizeof(sweep[i][c]));
			ok &= sweep[i][c].ok;
			char a[24], b[24];

			report_md(report, " %s / %s |", fig(a, sizeof(a), "%.3f", sweep[i][c].runtime_ms),
			          fig(b, sizeof(b), "%.3f", sweep[i][c].alloc));
		}
		report_md(report, "\n");
	}
	report_check(report, ok, "rodinia latency: every chunk size's run exits 0 with its "
	             "results right");

	report_md(report, "\n**Verdicts** (host work wall-clock, DMA modeled):\n\n");
	verdict_begin(&v, "T6.5 T6.6", "without contention the delay is below 60 ms for "
	              "allocating and victim applications (mean per pass / per suspended VM)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		char label[64];

		snprintf(label, sizeof(label), "%s, allocating", rodinia_programs[i].name);
		if (idle[i][0].passes)
			pred_in_range(&v, label, idle[i][0].alloc, 0, 60, "ms");
		snprintf(label, sizeof(label), "%s, victim", rodinia_programs[i].name);
		if (idle[i][0].suspensions)
			pred_in_range(&v, label, idle[i][0].pause, 0, 60, "ms");
	}
	verdict_end(report, &v, "host work on a loaded 2-core host");

	verdict_begin(&v, "T6.5", "the DMA dominates the allocating side's latency (the largest of "
	              "policy, DMA setup, DMA, other)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		static const char *const parts[] = { "policy", "DMA setup", "DMA", "other" };
		const struct latency *l = &idle[i][0];
		double values[4] = { l->policy, l->setup, l->dma, l->other };

		if (l->passes)
			pred_largest(&v, rodinia_programs[i].name, parts, values, 4, 2);
	}
	verdict_end(report, &v, "simgpu's modeled copy of a few 64 KiB chunks at PCIe bandwidth "
	            "takes microseconds, while suspending, draining and resuming the VMs' channels "
	            "is host work (wall-clock); the thesis moved 4 MiB chunks over PCIe 2.0");

	verdict_begin(&v, "T6.5 T6.7", "the policy's runtime is negligible (at most 5 %% of the "
	              "allocating side) for every program but nn");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		char label[64];

		if (!strcmp(rodinia_programs[i].name, "nn"))
			continue;
		for (unsigned c = 0; c < 2; c++) {
			const struct latency *l = c ? &busy[i][0] : &idle[i][0];

			snprintf(label, sizeof(label), "%s, %s", rodinia_programs[i].name,
			         c ? "second instance" : "idle dummy");
			if (l->passes)
				pred_in_range(&v, label, 100 * l->policy / l->alloc, 0, 5, "%");
		}
	}
	verdict_end(report, &v, NULL);

	{
		double idle_sum = 0, busy_sum = 0;
		unsigned n = 0;

		verdict_begin(&v, "T6.7", "under contention the allocating side's delay is larger "
		              "than without (mean over the programs) and below 100 ms per program");
		for (unsigned i = 0; i < PROGRAMS; i++) {
			if (!idle[i][0].passes || !busy[i][0].passes)
				continue;
			idle_sum += idle[i][0].alloc;
			busy_sum += busy[i][0].alloc;
			n++;
		}
		if (n)
			pred_a_gt_b(&v, "all programs", "mean with a second instance",
			            "mean with the idle dummy", busy_sum / n, idle_sum / n, 0);
		for (unsigned i = 0; i < PROGRAMS; i++)
			if (busy[i][0].passes)
				pred_in_range(&v, rodinia_programs[i].name, busy[i][0].alloc, 0, 100,
				              "ms");
		verdict_end(report, &v, "the second instance's kernels must drain before its chunks "
		            "move; on simgpu the drain is host threads interpreting PTX, wall-clock");
	}

	verdict_begin(&v, "T6.8", "under contention a victim's delay is below the allocating "
	              "side's and below 60 ms (per program)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		const struct latency *l = &busy[i][0];

		if (!l->suspensions || !l->passes)
			continue;
		pred_a_le_b_case(&v, rodinia_programs[i].name, "pause per VM", "allocating side",
		                 l->pause, l->alloc, 0);
		pred_in_range(&v, rodinia_programs[i].name, l->pause, 0, 60, "ms");
	}
	verdict_end(report, &v, "the pause spans the whole relocation of that VM, suspend to "
	            "resume, and the allocating side waits through the same relocation");

	verdict_begin(&v, "T6.9", "the chunk size has little impact on the runtime of most "
	              "programs (max / min <= 1.10 over the chunk sizes)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		for (unsigned c = 0; c < chunk_count; c++)
			y[c] = sweep[i][c].runtime_ms;
		pred_flat(&v, rodinia_programs[i].name, y, chunk_count, 1.10);
	}
	verdict_end(report, &v, "working sets of 256 KiB to 1 MiB: a 256 KiB chunk is a whole "
	            "buffer, so large chunks move hot data the program needed");

	verdict_begin(&v, "T6.10", "the middle chunk size, 64 KiB, minimizes the eviction "
	              "latency, within 10 %% (64 KiB stands for the thesis's 4 MiB: our own "
	              "scaling to these working sets, which the thesis does not give)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		bool all = true;

		for (unsigned c = 0; c < chunk_count; c++) {
			y[c] = sweep[i][c].alloc;
			all &= !isnan(y[c]);
		}
		if (all)
			pred_optimum(&v, rodinia_programs[i].name, kib, "KiB", y, chunk_count, 64,
			             0.10);
	}
	verdict_end(report, &v, "per pass the latency is mostly the host's suspend / drain / "
	            "resume work, which does not depend on the chunk size; fewer, larger copies "
	            "cost less of it");
}
