// SPDX-License-Identifier: MIT
/*
 * rodinia_sweep.c - experiment 12: the thesis's eight Rodinia programs
 * (tests/rodinia) through vgpud on simgpu: runtime of two concurrent
 * instances against available GPU memory (thesis Figs. 6.1/6.2, paper
 * Fig. 5) under random, priority, reference bits and whole-buffer eviction
 * (the baseline), their access profiles (Fig. 4.4) and nn with its
 * priorities exchanged (Fig. 6.3). Each run is rodinia_run.sh (a private vgpud, a
 * ballast tenant setting the VRAM left, SIMGPU_ACCESS_PROFILE giving each
 * address space's per-page counts and modeled busy time).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "rodinia_run.h"
#include "verdict.h"

#define LEVELS_MAX 5
#define SEEDS_FULL 5
#define SEEDS_QUICK 2
#define INSTANCES 2
#define CHUNK (64 * KiB)
#define PROGRAMS 8 /* rodinia_program_count */

/* One run of two instances; false when it could not run at all. */
static bool run_one(struct report *report, const struct rodinia_program *p, uint64_t avail,
                    const char *policy, unsigned seed, bool swap, const char *prefix,
                    struct rodinia_run *out)
{
	struct rodinia_run_args args = { .avail = avail, .policy = policy, .seed = seed,
		                         .swap = swap, .instances = INSTANCES, .prefix = prefix };

	return rodinia_run_one(report, p, &args, out);
}

static unsigned levels_of(const struct rodinia_program *p, bool quick, uint64_t *levels)
{
	static const double full[] = { 0, 0.75, 0.5, 0.4, 1.0 / 3 };
	uint64_t w = INSTANCES * p->bytes;
	unsigned n = quick ? 2 : LEVELS_MAX;

	for (unsigned i = 0; i < n; i++) {
		double f = quick ? (i ? 0.5 : 0) : full[i];

		/* level 0: everything fits (1 MiB for the library's own buffers) */
		levels[i] = f == 0 ? w + MiB : ((uint64_t)(f * w) / CHUNK) * CHUNK;
	}
	return n;
}

/* The access profile of the run `prefix`'s first address space as a plot. */
static bool profile_plot(struct report *report, const struct rodinia_program *p, const char *prefix,
                         bool *read_only, bool *write_only)
{
	char path[512], data[64], name[64], title[128], body[512], line[256];
	FILE *in, *dat;
	uint64_t base = UINT64_MAX, va;
	unsigned long r, w;
	unsigned pages = 0;

	snprintf(path, sizeof(path), "%s/%s-1.tsv", report->dir, prefix);
	in = fopen(path, "r");
	if (!in)
		return false;
	while (fgets(line, sizeof(line), in))
		if (sscanf(line, "0x%" SCNx64 " %lu %lu", &va, &r, &w) == 3 && va < base)
			base = va;
	rewind(in);
	snprintf(data, sizeof(data), "profile-%s.dat", p->name);
	dat = report_file(report, data);
	fprintf(dat, "# offset_kib reads writes (per 4 KiB page, compute-engine transactions)\n");
	*read_only = *write_only = false;
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, "0x%" SCNx64 " %lu %lu", &va, &r, &w) != 3)
			continue;
		fprintf(dat, "%" PRIu64 " %lu %lu\n", (va - base) / KiB, r, w);
		*read_only |= r && !w;
		*write_only |= w && !r;
		pages++;
	}
	fclose(in);
	fclose(dat);
	snprintf(name, sizeof(name), "profile-%s", p->name);
	snprintf(title, sizeof(title), "%s: accesses per 4 KiB page (thesis Fig. 4.4)", p->name);
	snprintf(body, sizeof(body),
	         "set logscale y\nset yrange [0.5:*]\n"
	         "plot '%s' using 1:($2 > 0 ? $2 : 1/0) with impulses lw 2 title 'reads', \\\n"
	         "     '%s' using ($1 + 1.5):($3 > 0 ? $3 : 1/0) with impulses lw 2 title 'writes'",
	         data, data);
	report_plot(report, name, title, "offset in the address space (KiB)",
	            "transactions per page (log scale)", body);
	return pages > 0;
}

void experiment_rodinia(struct report *report)
{
	unsigned seeds = report->quick ? SEEDS_QUICK : SEEDS_FULL;
	double vram[PROGRAMS][LEVELS_MAX], rnd[PROGRAMS][LEVELS_MAX], sd[PROGRAMS][LEVELS_MAX];
	double prio[PROGRAMS][LEVELS_MAX], refb[PROGRAMS][LEVELS_MAX], swp[LEVELS_MAX];
	double whole[PROGRAMS][LEVELS_MAX], prio_moved[PROGRAMS][LEVELS_MAX];
	double whole_moved[PROGRAMS][LEVELS_MAX];
	bool complete[PROGRAMS], profiled[PROGRAMS], nn_ro = false, nn_wo = false;
	unsigned count[PROGRAMS], nn = 5;
	struct verdict v;
	char label[64];

	report_section(report, "12", "The eight Rodinia programs: runtime against available GPU "
	               "memory, access profiles, nn's priorities (thesis §4.4, §6.2)");
	report_md(report,
	          "**Seed.** Thesis §6.2, Figs. 6.1/6.2: the eight Rodinia programs, two instances "
	          "each at once, runtime against the available GPU memory (claims quoted in "
	          "experiment 1); Fig. 4.4: per-page read/write counts over each program's address "
	          "space, from which §5.3 derives the buffers' priorities; Fig. 6.3: nn with its "
	          "two buffers' priorities exchanged.\n\n"
	          "**Here.** The programs of `tests/rodinia` (CUDA C → committed PTX, driver API "
	          "through the project's `libcuda.so.1`), two instances of each as local tenants of "
	          "a private vgpud on simgpu (`vgpu-backend/report/rodinia_run.sh`): 32 MiB of VRAM, "
	          "64 KiB chunks (the working sets are ~1000× smaller than the thesis's, so the "
	          "chunks are 64× smaller than its 4 MiB), `--policy` random (%u seeds, mean ± sd), "
	          "priority (the programs' per-buffer priorities, README of tests/rodinia) or "
	          "refbits (`--reference-bits yes`). The available memory is what a ballast tenant "
	          "(profile weight 1000, so never the victim) leaves of the VRAM: from everything "
	          "fitting down to a third of the two instances' working sets (3× oversubscribed). "
	          "One repetition per run (the thesis: 100; simgpu interprets every PTX "
	          "instruction). Runtime: the **modeled** compute + copy engine time of the slower "
	          "instance's address space (simgpu's clock, from `SIMGPU_ACCESS_PROFILE`); the "
	          "programs' own `runtime_ms` lines are wall-clock on this host and only shown as "
	          "the last column. **Whole buffer**: the baseline, vgpud with "
	          "`--whole-buffer-eviction yes` (every resident chunk of the buffer whose chunk "
	          "the policy picks goes at once) and the reference-bits policy choosing the "
	          "buffer (CLOCK, the nearest the core has to Gdev's least recently used). Unlike "
	          "Gdev, and unlike experiment 1's in-process baseline, an evicted buffer stays "
	          "mapped from host memory: kernels read it over PCIe instead of waiting for it to "
	          "be copied back, so this baseline pays for moving more than it must, not for "
	          "swapping in.\n",
	          seeds);
	if (!report->rodinia_build) {
		verdict_begin(&v, "T6.1 T6.2 P5 T4.4 T6.3", "the eight Rodinia programs run down to "
		              "3× oversubscription");
		verdict_end(report, &v, "no build with the programs given (--rodinia-build)");
		return;
	}
	for (unsigned i = 0; i < PROGRAMS; i++) {
		const struct rodinia_program *p = &rodinia_programs[i];
		uint64_t levels[LEVELS_MAX];
		char data[64], prefix[64], body[900], title[128];
		FILE *dat;

		count[i] = levels_of(p, report->quick, levels);
		complete[i] = true;
		profiled[i] = false;
		snprintf(data, sizeof(data), "rodinia-%s.dat", p->name);
		dat = report_file(report, data);
		fprintf(dat, "# avail_kib random_mean_ms random_sd_ms priority_ms refbits_ms "
		        "whole_buffer_ms (modeled; '-': failed)\n");
		report_md(report, "\n#### %s (2 × %s)\n\n| available (KiB) | oversubscription | "
		          "random, mean ± sd (ms) | priority (ms) | reference bits (ms) | whole "
		          "buffer (ms) | priority: moved MiB | whole buffer: moved MiB | priority: "
		          "wall-clock ms |\n|---|---|---|---|---|---|---|---|---|\n",
		          p->name, p->size);
		for (unsigned l = 0; l < count[i]; l++) {
			struct rodinia_run r, pr, rb, wb;
			char whole_text[32], whole_moved_text[32];
			double sum = 0, sq = 0;
			bool rok = true;

			for (unsigned s = 0; s < seeds; s++) {
				snprintf(prefix, sizeof(prefix), "rodinia-run");
				if (!run_one(report, p, levels[l], "random", s + 1, false, prefix, &r)) {
					verdict_begin(&v, "T6.1 T6.2 P5 T4.4 T6.3", "the eight Rodinia "
					              "programs run down to 3× oversubscription");
					verdict_end(report, &v, "rodinia_run.sh could not run them (not built?)");
					fclose(dat);
					return;
				}
				rok &= r.ok;
				sum += r.modeled_ms;
				sq += r.modeled_ms * r.modeled_ms;
			}
			snprintf(prefix, sizeof(prefix), "profile-run-%s-%u", p->name, l);
			run_one(report, p, levels[l], "priority", 1, false, prefix, &pr);
			if (!report->quick)
				run_one(report, p, levels[l], "refbits", 1, false, "rodinia-run", &rb);
			else
				rb.ok = false;
			/* The quick version: where everything fits the granularity
			 * changes nothing; it runs the baseline under pressure only. */
			if (!report->quick || l > 0)
				run_one(report, p, levels[l], "refbits+whole", 1, false, "rodinia-run",
				        &wb);
			else
				wb = (struct rodinia_run){ .ok = true, .modeled_ms = NAN,
				                           .moved_mib = NAN };
			vram[i][l] = levels[l] / (double)KiB;
			rnd[i][l] = rok ? sum / seeds : NAN;
			sd[i][l] = rok ? sqrt(fmax(0, (sq - sum * sum / seeds) / (seeds > 1 ? seeds - 1 : 1)))
			               : NAN;
			prio[i][l] = pr.ok ? pr.modeled_ms : NAN;
			refb[i][l] = rb.ok ? rb.modeled_ms : NAN;
			whole[i][l] = wb.ok ? wb.modeled_ms : NAN;
			prio_moved[i][l] = pr.moved_mib;
			whole_moved[i][l] = wb.moved_mib;
			complete[i] &= rok && pr.ok && (report->quick || rb.ok) && wb.ok;
			if (report->quick && l == 0) {
				snprintf(whole_text, sizeof(whole_text), "(full report)");
				snprintf(whole_moved_text, sizeof(whole_moved_text), "(full report)");
			} else {
				snprintf(whole_text, sizeof(whole_text), "%.3f", whole[i][l]);
				snprintf(whole_moved_text, sizeof(whole_moved_text), "%.2f", wb.moved_mib);
			}
			report_md(report, "| %.0f | %.2f× | %.3f ± %.3f | %.3f | %s | %s | %.2f | %s | "
			          "%.0f |\n",
			          vram[i][l], (double)(INSTANCES * p->bytes) / levels[l], rnd[i][l],
			          sd[i][l], prio[i][l],
			          report->quick ? "(full report)" : (snprintf(title, sizeof(title), "%.3f",
			                                                      refb[i][l]), title),
			          whole_text, pr.moved_mib, whole_moved_text, pr.wall_ms);
			fprintf(dat, "%.0f %.4f %.4f %.4f %.4f %.4f\n", vram[i][l], rnd[i][l], sd[i][l],
			        prio[i][l], refb[i][l], whole[i][l]);
			if (i == nn) {
				struct rodinia_run sw;

				run_one(report, p, levels[l], "priority", 1, true, "rodinia-run", &sw);
				swp[l] = sw.ok ? sw.modeled_ms : NAN;
				complete[i] &= sw.ok;
			}
		}
		fclose(dat);
		/* the profile of the priority run where everything fits */
		snprintf(prefix, sizeof(prefix), "profile-run-%s-0", p->name);
		profiled[i] = profile_plot(report, p, prefix, i == nn ? &nn_ro : &(bool){ 0 },
		                           i == nn ? &nn_wo : &(bool){ 0 });
		snprintf(title, sizeof(title), "%s, two instances: runtime against available GPU memory",
		         p->name);
		snprintf(body, sizeof(body),
		         "set xrange [*:*] reverse\nset yrange [0:*]\n"
		         "plot '%s' using 1:2:3 with yerrorlines title 'random (mean ± sd)', \\\n"
		         "     '%s' using 1:4 with linespoints title 'priority', \\\n"
		         "     '%s' using 1:6 with linespoints title 'whole buffer (baseline)'%s",
		         data, data, data, report->quick ? "" : ", \\\n     '' using 1:5 with linespoints "
		                                           "title 'reference bits'");
		snprintf(prefix, sizeof(prefix), "rodinia-%s", p->name);
		report_plot(report, prefix, title, "available GPU memory (KiB)",
		            "runtime of the slower instance (ms, modeled)", body);
		report_check(report, complete[i], "rodinia %s: every run (two instances, every policy, "
		             "whole buffers, every size down to %.0f KiB) exits 0 with its results "
		             "right", p->name,
		             vram[i][count[i] - 1]);
	}

	/* nn swapped: a table of its own */
	{
		FILE *dat = report_file(report, "rodinia-nn-swap.dat");

		report_md(report, "\n#### nn with its priorities exchanged (thesis Fig. 6.3)\n\n"
		          "`RODINIA_NN_SWAP=1`: the distances (written) get the records' priority and "
		          "the records (read) the distances'. Modeled ms.\n\n| available (KiB) | "
		          "original | exchanged | random, mean ± sd |\n|---|---|---|---|\n");
		fprintf(dat, "# avail_kib original_ms swapped_ms random_mean_ms random_sd_ms (modeled)\n");
		for (unsigned l = 0; l < count[nn]; l++) {
			report_md(report, "| %.0f | %.3f | %.3f | %.3f ± %.3f |\n", vram[nn][l],
			          prio[nn][l], swp[l], rnd[nn][l], sd[nn][l]);
			fprintf(dat, "%.0f %.4f %.4f %.4f %.4f\n", vram[nn][l], prio[nn][l], swp[l],
			        rnd[nn][l], sd[nn][l]);
		}
		fclose(dat);
		report_plot(report, "rodinia-nn-swap", "real nn, priorities exchanged (thesis Fig. 6.3)",
		            "available GPU memory (KiB)", "runtime of the slower instance (ms, modeled)",
		            "set xrange [*:*] reverse\nset yrange [0:*]\n"
		            "plot 'rodinia-nn-swap.dat' using 1:2 with linespoints title 'original', \\\n"
		            "     '' using 1:3 with linespoints title 'exchanged', \\\n"
		            "     '' using 1:4:5 with yerrorlines title 'random (mean ± sd)'");
	}

	report_md(report, "\n**Verdicts** (modeled):\n\n");
	verdict_begin(&v, "T6.1 T6.2", "GPUswap executes every program (two instances) down to 3× "
	              "oversubscription under every policy, results right");
	for (unsigned i = 0; i < PROGRAMS; i++)
		pred_holds(&v, rodinia_programs[i].name, "every run exits 0 with its results checked",
		           complete[i], "a run failed");
	verdict_end(report, &v, NULL);

	verdict_begin(&v, "T6.1 T6.2", "the runtime rises as memory is taken away: never falls "
	              "from one size to the next smaller");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		snprintf(label, sizeof(label), "%s, random", rodinia_programs[i].name);
		pred_monotone(&v, label, "memory decreasing", vram[i], "KiB", rnd[i], count[i], 0.01);
		snprintf(label, sizeof(label), "%s, priority", rodinia_programs[i].name);
		pred_monotone(&v, label, "memory decreasing", vram[i], "KiB", prio[i], count[i], 0.01);
	}
	verdict_end(report, &v, "two instances interleave on the host's threads: which instance "
	            "allocates first, and so whose chunks go, varies from run to run");

	verdict_begin(&v, "T6.1 T6.2", "the priority policy's runtime is at most the random "
	              "policy's mean (thesis: *\"consistently lower\"*)");
	for (unsigned i = 0; i < PROGRAMS; i++)
		pred_a_le_b(&v, rodinia_programs[i].name, "priority", "random (mean)", vram[i], "KiB", prio[i],
		            rnd[i], count[i], 0.01);
	verdict_end(report, &v, "the priorities follow accesses per page, not the eviction's cost "
	            "(the thesis's own finding for nn)");

	verdict_begin(&v, "T6.1 T6.2 P5", "GPUswap (priority) is never slower than whole-buffer "
	              "eviction (thesis: *\"GPUswap significantly outperforms Gdev\"*)");
	for (unsigned i = 0; i < PROGRAMS; i++)
		pred_a_le_b(&v, rodinia_programs[i].name, "priority", "whole buffer", vram[i], "KiB", prio[i],
		            whole[i], count[i], 0.01);
	verdict_end(report, &v, "an evicted buffer stays readable over PCIe here (no swap-in), so "
	            "the baseline loses only by moving more");

	verdict_begin(&v, "T6.1 T6.2", "whole-buffer eviction moves at least as many bytes as "
	              "GPUswap's chunks (priority) under pressure");
	for (unsigned i = 0; i < PROGRAMS; i++)
		pred_a_le_b(&v, rodinia_programs[i].name, "priority MiB", "whole-buffer MiB", vram[i], "KiB",
		            prio_moved[i], whole_moved[i], count[i], 0.01);
	verdict_end(report, &v, "the reference-bits policy picks other buffers than priority");

	verdict_begin(&v, "P5", "at the smallest size the runtime has risen by 50 %% to 786 %% "
	              "(the paper's range at 20 MB)");
	for (unsigned i = 0; i < PROGRAMS; i++) {
		unsigned last = count[i] - 1;

		snprintf(label, sizeof(label), "%s, priority", rodinia_programs[i].name);
		pred_in_range(&v, label, 100 * (prio[i][last] / prio[i][0] - 1), 50, 786, "% rise");
	}
	verdict_end(report, &v, "one repetition, small working sets: the share of time in "
	            "host-resident data differs from the paper's runs");

	verdict_begin(&v, "T4.4", "each program's access profile is recorded per page while it "
	              "runs its PTX; nn's input is only read and its output only written");
	for (unsigned i = 0; i < PROGRAMS; i++)
		pred_holds(&v, rodinia_programs[i].name, "per-page counts recorded", profiled[i],
		           "no profile");
	pred_holds(&v, "nn", "some pages only read and some only written", nn_ro && nn_wo, NULL);
	verdict_end(report, &v, NULL);

	verdict_begin(&v, "T6.3", "with nn's priorities exchanged the priority policy is never "
	              "slower than random (thesis: *\"outperforms random selection in all "
	              "cases\"*)");
	pred_a_le_b(&v, "nn exchanged", "exchanged", "random (mean)", vram[nn], "KiB", swp,
	            rnd[nn], count[nn], 0.01);
	verdict_end(report, &v, NULL);
}
