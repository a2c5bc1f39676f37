// SPDX-License-Identifier: MIT
/*
 * scaling.c - cost as work grows: allocation latency (no eviction) and
 * eviction latency against the number of VMs (1 … 64), eviction latency
 * against the number of chunks one VM holds, and the daemon's memory per
 * tenant (quoted from ./vgpu-dev bench). The core's CPU work only exists
 * in wall-clock time: figures of this host, never checked.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "verdict.h"
#include "vgpu/core.h"
#include "vgpu/simgpu.h"
#include "vgpu/util.h"

struct setup {
	struct vgpu_hal *hal;
	struct vgpu_core *core;
};

/* The last core call's failure (the core calls below pass it; one thread). */
static struct vgpu_error core_error;

static void die(const char *what)
{
	fprintf(stderr, "vgpu-report: scaling: %s: %s\n", what, vgpu_error_msg(&core_error));
	exit(2);
}

static void setup(struct setup *s, uint64_t vram, uint64_t chunk)
{
	struct simgpu_config gpu;
	struct vgpu_core_config config;

	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = vram + 8 * MiB;
	gpu.reserved_vram_bytes = 8 * MiB;
	gpu.max_address_spaces = 128; /* 64 VMs, a newcomer, the core's own */
	if (simgpu_create(&gpu, &s->hal))
		die("simgpu");
	vgpu_core_config_defaults(&config);
	config.chunk_bytes = chunk;
	config.return_interval_ms = 0;
	if (vgpu_core_create(s->hal, &config, &s->core, &core_error))
		die("core");
}

static void teardown(struct setup *s)
{
	vgpu_core_destroy(s->core);
	vgpu_hal_destroy(s->hal);
}

static struct vgpu_vm *vm(struct setup *s, unsigned index)
{
	struct vgpu_vm_config config;
	struct vgpu_vm *out;
	char name[32];

	snprintf(name, sizeof(name), "vm%u", index);
	vgpu_vm_config_defaults(&config);
	config.name = name;
	if (vgpu_core_vm_create(s->core, &config, &out, &core_error))
		die("vm");
	return out;
}

static void alloc(struct vgpu_vm *vm, uint64_t bytes)
{
	struct vgpu_buffer_info buffer;

	if (vgpu_core_alloc(vm, bytes, VGPU_PRIORITY_DEFAULT, 0, &buffer, &core_error))
		die("alloc");
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Median alloc+free latency (µs) of a 4 MiB buffer with vms VMs holding
 * 4 MiB each, no eviction. */
static double alloc_latency_us(unsigned vms, unsigned cycles)
{
	uint64_t *samples = malloc(cycles * sizeof(*samples));
	struct setup s;
	struct vgpu_vm *first = NULL;
	double median;

	if (!samples)
		die("malloc");
	setup(&s, 1 * GiB, 4 * MiB);
	for (unsigned v = 0; v < vms; v++) {
		struct vgpu_vm *created = vm(&s, v);

		alloc(created, 4 * MiB);
		if (!first)
			first = created;
	}
	for (unsigned i = 0; i < cycles; i++) {
		struct vgpu_buffer_info buffer;
		uint64_t t0 = vgpu_monotonic_ns();

		if (vgpu_core_alloc(first, 4 * MiB, VGPU_PRIORITY_DEFAULT, 0, &buffer, &core_error))
			die("alloc");
		samples[i] = vgpu_monotonic_ns() - t0;
		vgpu_core_free(first, buffer.handle, &core_error);
	}
	qsort(samples, cycles, sizeof(*samples), compare_u64);
	median = samples[cycles / 2] / 1e3;
	free(samples);
	teardown(&s);
	return median;
}

/* Eviction passes of a newcomer allocating `rounds` x two chunks into VRAM
 * that the other VMs fill with buffers of a chunk each: *policy_us and
 * *host_us (the pass without the copy itself) per pass. */
static void eviction_latency(unsigned vms, uint64_t vram, uint64_t chunk, unsigned rounds,
                             double *policy_us, double *host_us)
{
	struct vgpu_core_stats before, after;
	uint64_t share = vram / vms, passes;
	struct vgpu_vm *newcomer;
	struct setup s;

	setup(&s, vram, chunk);
	for (unsigned v = 0; v < vms; v++) {
		struct vgpu_vm *created = vm(&s, v);

		for (uint64_t done = 0; done + chunk <= share; done += chunk)
			alloc(created, chunk);
	}
	newcomer = vm(&s, vms);
	vgpu_core_stats(s.core, &before);
	for (unsigned i = 0; i < rounds; i++)
		alloc(newcomer, 2 * chunk);
	vgpu_core_stats(s.core, &after);
	passes = after.eviction.passes - before.eviction.passes;
	if (!passes)
		passes = 1;
	*policy_us = (after.eviction.policy_ns - before.eviction.policy_ns) / 1e3 / passes;
	/* The host's work: everything but waiting for simgpu's CPU copy thread. */
	*host_us = ((after.eviction.total_ns - before.eviction.total_ns) -
	            (after.eviction.copy_ns - before.eviction.copy_ns)) / 1e3 / passes;
	teardown(&s);
}

/* core-bench's allocation latency per size (issue 11 item 4), from bench.json. */
static void alloc_latency_per_size(struct report *report, struct json_object *bench)
{
	struct json_object *median, *p99;
	char key[64], label[16];

	report_md(report, "\nAllocation latency per size without eviction (core-bench, wall-clock "
	          "of the machine that ran `./vgpu-dev bench`; median over rounds of each round's "
	          "median and p99; goal p99 <= 50 µs up to 64 MiB):\n\n"
	          "| size | median (µs) | p99 (µs) |\n|---|---|---|\n");
	for (uint64_t size = 4 * KiB; size <= 256 * MiB; size *= 2) {
		if (size < MiB)
			snprintf(label, sizeof(label), "%" PRIu64 "KiB", size / KiB);
		else
			snprintf(label, sizeof(label), "%" PRIu64 "MiB", size / MiB);
		snprintf(key, sizeof(key), "alloc_median_us_%s", label);
		if (!json_object_object_get_ex(bench, key, &median))
			continue;
		snprintf(key, sizeof(key), "alloc_p99_us_%s", label);
		if (!json_object_object_get_ex(bench, key, &p99))
			continue;
		report_md(report, "| %s | %.1f | %.1f |\n", label, json_object_get_double(median),
		          json_object_get_double(p99));
	}
	report_md(report, "\n");
}

static void daemon_memory(struct report *report)
{
	struct json_object *bench, *value;

	if (!report->bench_json || !(bench = json_object_from_file(report->bench_json))) {
		report_md(report, "Allocation latency per size (4 KiB … 256 MiB) and the daemon's "
		          "memory per tenant: no `build/bench/bench.json` yet; `./vgpu-dev bench` "
		          "measures them (core-bench; daemon-bench: vgpud's resident memory with "
		          "64 "
		          "tenants attached, `tenants_64_rss_kib_per_tenant`) and a later "
		          "`./vgpu-dev report` quotes them here.\n");
		return;
	}
	alloc_latency_per_size(report, bench);
	if (json_object_object_get_ex(bench, "tenants_64_rss_kib_per_tenant", &value)) {
		struct json_object *date = NULL;

		json_object_object_get_ex(bench, "bench_date", &date);
		report_md(report, "Daemon memory per tenant (vgpud with 64 tenants attached, from "
		          "`./vgpu-dev bench` of %s, daemon-bench): **%.0f KiB per tenant**.\n",
		          date ? json_object_get_string(date) : "an earlier run",
		          json_object_get_double(value));
	} else {
		report_md(report, "Daemon memory per tenant: %s has no "
		          "`tenants_64_rss_kib_per_tenant`; run `./vgpu-dev bench`.\n",
		          report->bench_json);
	}
	json_object_put(bench);
}

void experiment_scaling(struct report *report)
{
	static const unsigned vm_counts_full[] = { 1, 2, 4, 8, 16, 32, 64 };
	static const unsigned vm_counts_quick[] = { 1, 8, 64 };
	static const unsigned chunk_counts_full[] = { 256, 1024, 4096, 16384 };
	static const unsigned chunk_counts_quick[] = { 256, 4096 };
	const unsigned *vm_counts = report->quick ? vm_counts_quick : vm_counts_full;
	const unsigned *chunk_counts = report->quick ? chunk_counts_quick : chunk_counts_full;
	unsigned nv = report->quick ? 3 : 7, nc = report->quick ? 2 : 4;
	unsigned cycles = report->quick ? 200 : 2000;
	double alloc[8], policy[8], host[8], chunk_policy[4], chunk_host[4];
	FILE *dat = report_file(report, "scaling-vms.dat");
	char body[1024];

	report_section(report, "6", "Cost as work grows (wall-clock)");
	report_md(report,
	          "**Seed.** Paper §6.3: *\"the increase in computational overhead due to the "
	          "larger number of applications can be neglected — in practice, the runtime "
	          "overhead appears to depend only on the amount of relocated application "
	          "data\"* (up to five instances). Thesis §6.3.1 (Figure 6.4): GPUswap's "
	          "accounting *\"does not lead to any significant performance degradation during "
	          "memory allocation\"*.\n\n"
	          "**Here** (wall-clock, this host: the core's CPU work). Allocation latency: "
	          "median of %u alloc/free cycles of 4 MiB without eviction while N VMs hold 4 "
	          "MiB each. Eviction: N VMs fill 256 MiB of VRAM, a newcomer allocates 8 MiB "
	          "eight times (each pass evicts two 4 MiB chunks). Per-size allocation latency "
	          "(4 KiB … 256 MiB) is `./vgpu-dev bench` (core-bench section 1).\n\n"
	          "| VMs | allocation, median (µs) | eviction policy per pass (µs) | eviction "
	          "host work per pass, without the copy (µs) |\n|---|---|---|---|\n", cycles);
	fprintf(dat, "# vms alloc_median_us eviction_policy_us eviction_host_us (wall-clock)\n");
	for (unsigned i = 0; i < nv; i++) {
		double alloc_us = alloc_latency_us(vm_counts[i], cycles), policy_us, host_us;

		eviction_latency(vm_counts[i], 256 * MiB, 4 * MiB, 8, &policy_us, &host_us);
		alloc[i] = alloc_us;
		policy[i] = policy_us;
		host[i] = host_us;
		fprintf(dat, "%u %.3f %.3f %.3f\n", vm_counts[i], alloc_us, policy_us, host_us);
		report_md(report, "| %u | %.2f | %.2f | %.1f |\n", vm_counts[i], alloc_us, policy_us,
		          host_us);
		report_progress(report, "  scaling: %u VMs", vm_counts[i]);
	}
	fclose(dat);
	snprintf(body, sizeof(body),
	         "set logscale x 2\nset logscale y\n"
	         "plot 'scaling-vms.dat' using 1:2 with linespoints title 'allocation, no eviction "
	         "(us)', \\\n"
	         "     'scaling-vms.dat' using 1:3 with linespoints title 'eviction policy per "
	         "pass (us)', \\\n"
	         "     'scaling-vms.dat' using 1:4 with linespoints title 'eviction host work per "
	         "pass (us)'");
	report_plot(report, "scaling-vms", "Core latency against the number of VMs (wall-clock)",
	            "VMs (log scale)", "µs, wall-clock (log scale)", body);

	dat = report_file(report, "scaling-chunks.dat");
	report_md(report, "Against the number of chunks one victim holds (64 KiB chunks, VRAM = "
	          "chunks × 64 KiB in 64 KiB buffers, a second VM allocating 128 KiB eight "
	          "times):\n\n"
	          "| chunks held | eviction policy per pass (µs) | eviction host work per pass, "
	          "without the copy (µs) |\n|---|---|---|\n");
	fprintf(dat, "# chunks eviction_policy_us eviction_host_us (wall-clock)\n");
	for (unsigned i = 0; i < nc; i++) {
		double policy_us, host_us;

		eviction_latency(1, chunk_counts[i] * 64 * KiB, 64 * KiB, 8, &policy_us, &host_us);
		chunk_policy[i] = policy_us;
		chunk_host[i] = host_us;
		fprintf(dat, "%u %.3f %.3f\n", chunk_counts[i], policy_us, host_us);
		report_md(report, "| %u | %.2f | %.1f |\n", chunk_counts[i], policy_us, host_us);
		report_progress(report, "  scaling: %u chunks", chunk_counts[i]);
	}
	fclose(dat);
	snprintf(body, sizeof(body),
	         "set logscale x 2\nset logscale y\n"
	         "plot 'scaling-chunks.dat' using 1:2 with linespoints title 'policy per pass "
	         "(us)', \\\n"
	         "     'scaling-chunks.dat' using 1:3 with linespoints title 'host work per pass "
	         "(us)'");
	report_plot(report, "scaling-chunks",
	            "Eviction latency against chunks held "
	            "(wall-clock)", "chunks held by the victim (log scale)",
	            "µs, wall-clock (log scale)", body);
	daemon_memory(report);
	report_md(report, "\n**Verdicts** (wall-clock, this host; the paper's metric is "
	          "application runtime with up to five instances, these are the core's own "
	          "costs against the number of VMs and chunks):\n\n");
	{
		struct verdict v;
		const char *why = "wall-clock figures of a shared 2-core host; the host work per "
		                  "pass includes allocating and faulting in host buffers, whose "
		                  "cost "
		                  "depends on the host's memory state more than on N";

		verdict_begin(&v, "", "the number of VMs does not add overhead (paper §6.3: *\"the "
		              "increase in computational overhead due to the larger number of "
		              "applications can be neglected\"*), 1 to %u VMs", vm_counts[nv - 1]);
		pred_flat(&v, "allocation without eviction", alloc, nv, 2);
		pred_flat(&v, "eviction policy per pass", policy, nv, 2);
		pred_flat(&v, "eviction host work per pass", host, nv, 2);
		verdict_end(report, &v, why);
		verdict_begin(&v, "", "the eviction's cost does not grow with the chunks a victim "
		              "holds (thesis §6.3.2: the policy's runtime is negligible), %u to %u "
		              "chunks",
		              chunk_counts[0], chunk_counts[nc - 1]);
		pred_flat(&v, "eviction policy per pass", chunk_policy, nc, 2);
		pred_flat(&v, "eviction host work per pass", chunk_host, nc, 2);
		verdict_end(report, &v, why);
	}
}
