// SPDX-License-Identifier: MIT
/*
 * chunk_sweep.c - chunk size from 128 KiB to 128 MiB (thesis §6.4, Figures
 * 6.9 and 6.10): each workload's modeled runtime and its evictions' latency
 * with 24 MiB of VRAM under the priority policy.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "report.h"
#include "workload.h"

#define CHUNKS_MAX 11
#define SWEEP_VRAM (24 * MiB)

void experiment_chunk_sweep(struct report *report)
{
	static const uint64_t full[] = { 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB,
		                         4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 128 * MiB };
	static const uint64_t quick[] = { 128 * KiB, 4 * MiB, 128 * MiB };
	const uint64_t *chunks = report->quick ? quick : full;
	unsigned chunk_count = report->quick ? 3 : CHUNKS_MAX, workloads = workload_count();
	struct run_result (*results)[CHUNKS_MAX] = calloc(workloads, sizeof(*results));
	double latency_sum[CHUNKS_MAX] = { 0 };
	bool all_complete = true;
	unsigned best = 0;
	char body[2048];
	FILE *runtime, *latency;

	if (!results)
		exit(2);
	report_md(report,
	          "## 2. Chunk size (thesis §6.4)\n\n"
	          "**Seed.** Thesis §6.4 (Figures 6.9, 6.10; 100 MiB available, priority policy, "
	          "128 KiB to 128 MiB): *\"the chunk size has little impact on the runtime of most "
	          "applications\"*; for eviction latency *\"a chunk size of 4 MiB appears to "
	          "optimize the allocation latency\"* for three programs and 2 or 8 MiB for three "
	          "more: *\"Overall, these results indicate that 4 MiB is the optimal chunk size "
	          "in terms of latency\"*. Large chunks can waste up to one chunk of VRAM.\n\n"
	          "**Here.** Every workload with %" PRIu64 " MiB of VRAM under the priority "
	          "policy, chunk sizes %s. Runtime is modeled. Eviction latency per pass during "
	          "the allocations is the core's host work (policy, set-up, page tables, TLB, "
	          "suspend and resume: **wall-clock, this host**, the per-chunk work is the "
	          "CPU's) plus the copy at its modeled duration (simgpu's copy engine is a CPU "
	          "thread, so its wall-clock time would measure this host's memcpy, not a DMA "
	          "engine).\n\n",
	          SWEEP_VRAM / MiB, report->quick ? "128 KiB, 4 MiB, 128 MiB" : "128 KiB … 128 MiB");
	for (unsigned w = 0; w < workloads; w++) {
		const struct workload *workload = workload_get(w, report->quick);

		for (unsigned c = 0; c < chunk_count; c++) {
			struct run_config config = { .manager = MANAGER_GPUSWAP, .vram = SWEEP_VRAM,
			                             .policy = "priority", .seed = 1, .chunk = chunks[c] };

			if (workload_run(workload, &config, &results[w][c]))
				exit(2);
			all_complete &= results[w][c].completed;
		}
		report_progress(report, "  chunk sweep: %s", workload->name);
	}
	runtime = report_file(report, "chunk-runtime.dat");
	latency = report_file(report, "chunk-latency.dat");
	fprintf(runtime, "# chunk_kib, then per workload: modeled runtime (ms)\n");
	fprintf(latency, "# chunk_kib, then per workload: eviction latency per pass (ms: host "
	        "work, wall-clock, + modeled copy)\n");
	report_md(report, "| chunk | ");
	for (unsigned w = 0; w < workloads; w++)
		report_md(report, "%s: runtime (ms, modeled) | %s: eviction per pass (ms) = host "
		          "work (wall) + copy (modeled); MiB moved | ", workload_get(w, report->quick)->name,
		          workload_get(w, report->quick)->name);
	report_md(report, "\n|---|");
	for (unsigned w = 0; w < workloads; w++)
		report_md(report, "---|---|");
	report_md(report, "\n");
	for (unsigned c = 0; c < chunk_count; c++) {
		fprintf(runtime, "%" PRIu64, chunks[c] / KiB);
		fprintf(latency, "%" PRIu64, chunks[c] / KiB);
		report_md(report, "| %" PRIu64 " KiB | ", chunks[c] / KiB);
		for (unsigned w = 0; w < workloads; w++) {
			struct run_result *r = &results[w][c];
			uint64_t passes = r->eviction.passes ? r->eviction.passes : 1;
			uint64_t host = r->eviction.total_ns > r->eviction.copy_ns
			                        ? r->eviction.total_ns - r->eviction.copy_ns : 0;
			double host_ms = host / 1e6 / passes;
			double copy_ms = r->eviction_copy_modeled_ns / 1e6 / passes;

			latency_sum[c] += host_ms + copy_ms;
			fprintf(runtime, " %.4f", r->runtime_ns / 1e6);
			fprintf(latency, " %.4f", host_ms + copy_ms);
			report_md(report, "%.3f | %.3f = %.3f + %.3f; %.0f | ", r->runtime_ns / 1e6,
			          host_ms + copy_ms, host_ms, copy_ms, r->evicted_bytes / (double)MiB);
		}
		fputc('\n', runtime);
		fputc('\n', latency);
		report_md(report, "\n");
		if (latency_sum[c] < latency_sum[best])
			best = c;
	}
	fclose(runtime);
	fclose(latency);
	{
		int n = 0;

		n += snprintf(body + n, sizeof(body) - (size_t)n, "set logscale x 2\nset logscale y\nplot ");
		for (unsigned w = 0; w < workloads; w++)
			n += snprintf(body + n, sizeof(body) - (size_t)n,
			              "%s'chunk-runtime.dat' using 1:%u with linespoints title '%s'",
			              w ? ", " : "", w + 2, workload_get(w, report->quick)->name);
		report_plot(report, "chunk-runtime", "Modeled runtime against chunk size (24 MiB VRAM)",
		            "chunk size (KiB)", "modeled runtime (ms, log scale)", body);
		n = 0;
		n += snprintf(body + n, sizeof(body) - (size_t)n, "set logscale x 2\nset logscale y\nplot ");
		for (unsigned w = 0; w < workloads; w++)
			n += snprintf(body + n, sizeof(body) - (size_t)n,
			              "%s'chunk-latency.dat' using 1:%u with linespoints title '%s'",
			              w ? ", " : "", w + 2, workload_get(w, report->quick)->name);
		report_plot(report, "chunk-latency",
		            "Eviction latency per pass: host work (wall-clock) + copy (modeled)",
		            "chunk size (KiB)", "ms per eviction pass (log scale)", body);
	}
	report_check(report, all_complete, "chunk sweep: every run completes at every chunk size");
	/* The smallest chunk size at which some workload runs slower than at
	 * 4 MiB (chunks[] holds 4 MiB in both lists). */
	{
		unsigned at4 = 0, slower = chunk_count;

		for (unsigned c = 0; c < chunk_count; c++)
			if (chunks[c] == 4 * MiB)
				at4 = c;
		for (unsigned c = at4 + 1; c < chunk_count && slower == chunk_count; c++)
			for (unsigned w = 0; w < workloads; w++)
				if (results[w][c].runtime_ns > results[w][at4].runtime_ns)
					slower = c;
		report_md(report,
		          "\n**Verdict.** Summed over the workloads, the eviction latency per pass is "
		          "lowest at %" PRIu64 " KiB chunks here (thesis: 4 MiB; the host-work part "
		          "is wall-clock on a shared 2-core machine, so neighbouring sizes are within "
		          "noise). Small chunks cost per-chunk host work (policy, one host buffer, "
		          "IOMMU and PTE range each); large ones move more than an allocation needs "
		          "(the copy doubles from 16 MiB on) and leave part of a chunk of VRAM unused. ",
		          chunks[best] / KiB);
		if (slower < chunk_count)
			report_md(report, "As the thesis found (\"little impact on the runtime of most "
			          "applications\" except at large chunks), the modeled runtimes are flat "
			          "up to 4 MiB and rise from %" PRIu64 " KiB chunks on.",
			          chunks[slower] / KiB);
		else
			report_md(report, "The modeled runtimes do not rise above their 4 MiB value at "
			          "larger chunks.");
		report_md(report, " The core's default stays 4 MiB "
		          "(`VGPU_CORE_DEFAULT_CHUNK_BYTES`).\n");
	}
	free(results);
}
