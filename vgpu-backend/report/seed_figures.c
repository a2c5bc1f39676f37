// SPDX-License-Identifier: MIT
/* seed_figures.c - the seeds' evaluation figures and their statuses, see seed_figures.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed_figures.h"

struct seed_figure {
	const char *id, *label, *what;
	const char *unreproducible; /* why it cannot be reproduced here, or NULL */
	const char *needs;          /* what reproducing it would need, when no verdict names it */
	unsigned outcomes[4];       /* verdicts per enum outcome */
	char sections[32];          /* experiments that decide it */
};

static struct seed_figure figures[] = {
	/* Seed 000: the thesis, chapter 6. */
	{ "T6.1", "thesis Fig. 6.1", "runtime against available GPU memory, GPUswap and Gdev (four programs)", NULL, NULL, { 0 }, "" },
	{ "T6.2", "thesis Fig. 6.2", "the same, four more programs", NULL, NULL, { 0 }, "" },
	{ "T4.4", "thesis Fig. 4.4", "access profiles: per-page reads and writes of each program", NULL, NULL, { 0 }, "" },
	{ "T6.3", "thesis Fig. 6.3", "nn with its buffers' priorities swapped (synthetic and real nn)", NULL, NULL, { 0 }, "" },
	{ "T6.4", "thesis Fig. 6.4", "allocation latency per size, no eviction", NULL, NULL, { 0 }, "" },
	{ "T6.5", "thesis Fig. 6.5", "eviction latency breakdown, allocating side, no contention (synthetic and Rodinia allocations)", NULL, NULL, { 0 }, "" },
	{ "T6.6", "thesis Fig. 6.6", "eviction latency, victim side (drain, pause), no contention (synthetic and Rodinia)", NULL, NULL, { 0 }, "" },
	{ "T6.7", "thesis Fig. 6.7", "eviction latency breakdown, allocating side, under contention (synthetic and Rodinia)", NULL, NULL, { 0 }, "" },
	{ "T6.8", "thesis Fig. 6.8", "eviction latency, victim side, under contention (synthetic and Rodinia)", NULL, NULL, { 0 }, "" },
	{ "T6.9", "thesis Fig. 6.9", "runtime against chunk size (synthetic and Rodinia)", NULL, NULL, { 0 }, "" },
	{ "T6.10", "thesis Fig. 6.10", "eviction latency against chunk size (synthetic and Rodinia)", NULL, NULL, { 0 }, "" },
	/* Seed 001: the GPUswap paper, section 6. */
	{ "P4", "paper Fig. 4", "allocation fairness of two instances", NULL, NULL, { 0 }, "" },
	{ "P5", "paper Fig. 5", "runtime of two instances against available memory", NULL, NULL, { 0 }, "" },
	{ "P6a", "paper Fig. 6a", "relocation delay of the allocating application against relocated size", NULL, NULL, { 0 }, "" },
	{ "P6b", "paper Fig. 6b", "relocation delay of the victim against relocated size", NULL, NULL, { 0 }, "" },
	{ "P6c", "paper Fig. 6c", "raw DMA time against transfer size (modeled)", NULL, NULL, { 0 }, "" },
	{ "P7", "paper Fig. 7", "backprop's runtime against chunk size", NULL, NULL, { 0 }, "" },
	{ "P8", "paper Fig. 8", "heartwall's runtime against chunk size",
	  "no heartwall workload: its access pattern is not described in the seeds", NULL, { 0 }, "" },
	{ "P9", "paper Fig. 9", "allocation delay against chunk size", NULL, NULL, { 0 }, "" },
	/* Seed 002: LoGA, section 5. */
	{ "L7a", "LoGA Fig. 7a", "turnaround beside ten 10 µs throttles, LoGA against NEON", NULL, NULL, { 0 }, "" },
	{ "L7b", "LoGA Fig. 7b", "the same with 100 µs throttles", NULL, NULL, { 0 }, "" },
	{ "L8", "LoGA Fig. 8", "overhead against the number of throttles", NULL, NULL, { 0 }, "" },
	{ "L9", "LoGA Fig. 9", "intended against measured kernel length", NULL, NULL, { 0 }, "" },
	{ "L10", "LoGA Fig. 10", "intended against measured GPU load", NULL, NULL, { 0 }, "" },
	{ "L11", "LoGA Fig. 11", "fairness of the shares under NEON, LoGA, none", NULL, NULL, { 0 }, "" },
	/* Seed 003: page-walk stealing, sections IV and VII. */
	{ "D2", "DWS Fig. 2", "total IPC: shared, separate TLBs, separate walkers", NULL, NULL, { 0 }, "" },
	{ "D3", "DWS Fig. 3", "weighted IPC: shared, separate TLBs, separate walkers", NULL, NULL, { 0 }, "" },
	{ "DT3", "DWS Table III", "interleaving of page walks, shared walkers", NULL, NULL, { 0 }, "" },
	{ "D5", "DWS Fig. 5", "throughput: baseline, DWS, DWS++", NULL, NULL, { 0 }, "" },
	{ "D6", "DWS Fig. 6", "fairness: baseline, DWS, DWS++", NULL, NULL, { 0 }, "" },
	{ "D7", "DWS Fig. 7", "weighted IPC: baseline, DWS, DWS++", NULL, NULL, { 0 }, "" },
	{ "DT5", "DWS Table V", "interleaving under DWS and DWS++", NULL, NULL, { 0 }, "" },
	{ "DT6", "DWS Table VI", "share of walks serviced by stealing", NULL, NULL, { 0 }, "" },
	{ "D8", "DWS Fig. 8", "walk latency against alone", NULL, NULL, { 0 }, "" },
	{ "D9", "DWS Fig. 9", "walker share against L2 TLB share", NULL, NULL, { 0 }, "" },
	{ "D10", "DWS Fig. 10", "DWS++ variants (conservative, aggressive)", NULL, NULL, { 0 }, "" },
	{ "D11", "DWS Fig. 11", "static partitioning and MASK against DWS", NULL, NULL, { 0 }, "" },
	{ "D12", "DWS Fig. 12", "sensitivity to walkers and L2 TLB entries", NULL, NULL, { 0 }, "" },
	{ "D13", "DWS Fig. 13", "three and four tenants", NULL, NULL, { 0 }, "" },
	{ "D14", "DWS Fig. 14", "64 KiB pages", NULL, NULL, { 0 }, "" },
	/* Seed 004: application-aware memory scheduling, sections 3-8. */
	{ "J2", "Jog Fig. 2", "IPC from simulation against the model (eq. 3)", NULL, NULL, { 0 }, "" },
	{ "J3", "Jog Fig. 3", "model against a real GPU",
	  "needs the authors' NVIDIA K20m measurements", NULL, { 0 }, "" },
	{ "JT1", "Jog Table 1", "applications' MPKI and bandwidth", NULL, NULL, { 0 }, "" },
	{ "J4", "Jog Fig. 4", "slowdowns of one application beside different co-runners", NULL, NULL, { 0 }, "" },
	{ "J5", "Jog Fig. 5", "slowdowns under FR-FCFS, Prior_App and RR", NULL, NULL, { 0 }, "" },
	{ "J6", "Jog Fig. 6", "the analytical IT / WS example", NULL, NULL, { 0 }, "" },
	{ "J7", "Jog Fig. 7", "BW and MPKI differences under FR-FCFS, RR, ITS", NULL, NULL, { 0 }, "" },
	{ "J8", "Jog Fig. 8", "IT of ITS normalized to FR-FCFS", NULL, NULL, { 0 }, "" },
	{ "J9", "Jog Fig. 9", "WS and BW difference under WEIS", NULL, NULL, { 0 }, "" },
	{ "J10", "Jog Fig. 10", "WS of WEIS normalized to FR-FCFS", NULL, NULL, { 0 }, "" },
	{ "J11", "Jog Fig. 11", "summary IT and WS over the workloads", NULL, NULL, { 0 }, "" },
	{ "J12", "Jog Fig. 12", "harmonic speedup", NULL, NULL, { 0 }, "" },
	{ "J13", "Jog Fig. 13", "core partitioning (10,20), (20,10)", NULL, NULL, { 0 }, "" },
	{ "J14", "Jog Fig. 14", "three applications", NULL, NULL, { 0 }, "" },
};

#define FIGURE_COUNT (sizeof(figures) / sizeof(*figures))

static struct seed_figure *find(const char *id, size_t len)
{
	for (size_t i = 0; i < FIGURE_COUNT; i++)
		if (strlen(figures[i].id) == len && !strncmp(figures[i].id, id, len))
			return &figures[i];
	return NULL;
}

void seed_figures_record(const char *ids, enum outcome outcome, const char *section,
                         char *names, size_t len)
{
	const char *p = ids ? ids : "";
	size_t used = 0;

	if (len)
		names[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, " ");
		struct seed_figure *figure;

		if (!n) {
			p++;
			continue;
		}
		figure = find(p, n);
		if (!figure) {
			fprintf(stderr, "vgpu-report: unknown seed figure '%.*s'\n", (int)n, p);
			exit(2);
		}
		figure->outcomes[outcome]++;
		if (section && !strstr(figure->sections, section)) {
			size_t have = strlen(figure->sections);

			snprintf(figure->sections + have, sizeof(figure->sections) - have, "%s%s",
			         have ? ", " : "", section);
		}
		if (used < len)
			used += (size_t)snprintf(names + used, len - used, "%s%s", used ? ", " : "",
			                         figure->label);
		p += n;
	}
}

enum status { S_REPRODUCED, S_PARTLY, S_NOT, S_UNREPRODUCIBLE, STATUSES };

static enum status status_of(const struct seed_figure *f)
{
	unsigned decided = f->outcomes[OUTCOME_REPRODUCED] + f->outcomes[OUTCOME_PARTLY] +
	                   f->outcomes[OUTCOME_NOT_REPRODUCED];

	if (f->unreproducible)
		return S_UNREPRODUCIBLE;
	if (!decided)
		return S_NOT;
	if (f->outcomes[OUTCOME_REPRODUCED] == decided)
		return S_REPRODUCED;
	if (f->outcomes[OUTCOME_NOT_REPRODUCED] == decided)
		return S_NOT;
	return S_PARTLY;
}

void seed_figures_table(struct report *report)
{
	static const char *const words[STATUSES] = { "reproduced", "partly", "not reproduced",
		                                     "not reproducible here" };
	unsigned counts[STATUSES] = { 0 };

	for (size_t i = 0; i < FIGURE_COUNT; i++)
		counts[status_of(&figures[i])]++;
	report_md(report, "## The seeds' evaluation figures and tables\n\n"
	          "Every evaluation figure and table of the five seeds (set-up tables left out), "
	          "with its status from the verdicts below that name it (rules at the end): "
	          "**%u reproduced, %u partly, %u not reproduced, %u not reproducible here** (of "
	          "%zu).\n\n| seed figure | what | status | experiment |\n|---|---|---|---|\n",
	          counts[S_REPRODUCED], counts[S_PARTLY], counts[S_NOT], counts[S_UNREPRODUCIBLE],
	          FIGURE_COUNT);
	for (size_t i = 0; i < FIGURE_COUNT; i++) {
		const struct seed_figure *f = &figures[i];
		enum status status = status_of(f);
		char where[160];

		if (f->sections[0] && status == S_NOT && !f->outcomes[OUTCOME_NOT_REPRODUCED])
			snprintf(where, sizeof(where), "§%s (not evaluated in this run: no figures)",
			         f->sections);
		else if (f->sections[0])
			snprintf(where, sizeof(where), "§%s", f->sections);
		else if (f->unreproducible)
			snprintf(where, sizeof(where), "— (%s)", f->unreproducible);
		else
			snprintf(where, sizeof(where), "— (needs %s)",
			         f->needs ? f->needs : "an experiment");
		report_md(report, "| %s | %s | %s | %s |\n", f->label, f->what, words[status], where);
	}
	report_md(report, "\n");
}
