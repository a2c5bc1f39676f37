// SPDX-License-Identifier: MIT
/* report.c - vgpu-sim's summary, see report.h. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <json-c/json.h>

#include "report.h"

static const char *verify_name(enum sim_verify_state state)
{
	return state == VERIFY_OK ? "ok" : state == VERIFY_FAIL ? "fail" : "not-run";
}

/* sharing=spatial: each VM's figures in the shared path. */
static void contention_text(const struct sim_run *run, FILE *out)
{
	const struct sim_gpu_config *gpu = &run->scenario->gpu;

	if (gpu->sharing != SIMGPU_SHARING_SPATIAL)
		return;
	fprintf(out, "spatial sharing: walkers %s, memory scheduler %s\n",
	        simgpu_walkers_name(gpu->walkers), simgpu_memsched_name(gpu->memsched));
	fprintf(out, "%-12s %7s %9s %9s %10s %8s %8s %8s %9s %7s %7s\n", "vm", "kernels", "walks",
	        "walk cyc", "waited/wk", "max wait", "L2TLB %", "MPKI", "GB/s", "IPC", "vs alone");
	for (size_t i = 0; i < run->vm_count; i++) {
		const struct sim_vm *vm = &run->vms[i];
		struct vgpu_hal_contention_figures f;

		if (!vm->has_contention)
			continue;
		vgpu_hal_contention_derive(&vm->contention, &f);
		fprintf(out, "%-12s %7" PRIu64 " %9" PRIu64 " %9.1f %10.3f %8u %8.1f %8.2f %9.1f %7.3f"
		        " %7.3f\n", vm->name, vm->contention.kernels, vm->contention.walks,
		        f.avg_walk_latency_cycles, f.walks_waited_per_walk,
		        vm->contention.foreign_walks_waited_max, 100 * f.l2_tlb_hit_rate, f.mpki,
		        f.bandwidth_bytes_per_s / 1e9, f.ipc, f.slowdown);
	}
}

void sim_report_text(const struct sim_run *run, FILE *out)
{
	const struct sim_gpu_config *gpu = &run->scenario->gpu;
	struct vgpu_core_stats stats;
	char a[32], b[32], c[32], d[32];

	vgpu_core_stats(run->core, &stats);
	fprintf(out, "%s: GPU %s VRAM (%s free), chunk %s, policy %s, seed %" PRIu64 "%s%s\n",
	        run->scenario->path, vgpu_format_size(gpu->vram, a, sizeof(a)),
	        vgpu_format_size(stats.vram_free_bytes, b, sizeof(b)),
	        vgpu_format_size(gpu->chunk, c, sizeof(c)), gpu->policy, gpu->seed,
	        gpu->host_mem ? ", host budget " : "",
	        gpu->host_mem ? vgpu_format_size(gpu->host_mem, d, sizeof(d)) : "");
	fprintf(out, "%-12s %6s %11s %11s %11s %11s %9s %8s %12s %8s\n", "vm", "weight",
	        "allocated", "resident", "evicted", "fair share", "evictions", "returns",
	        "modeled ms", "verify");
	for (size_t i = 0; i < run->vm_count; i++) {
		const struct sim_vm *vm = &run->vms[i];
		const struct vgpu_vm_stats *s = &vm->final;

		fprintf(out, "%-12s %6u %7.1f MiB %7.1f MiB %7.1f MiB %7.1f MiB %9" PRIu64 " %8" PRIu64
		        " %12.3f %8s%s\n",
		        vm->name, s->weight, s->allocated_bytes / 1048576.0,
		        s->resident_bytes / 1048576.0, s->evicted_bytes / 1048576.0,
		        s->fair_share_bytes / 1048576.0, s->evictions, s->returns,
		        vm->modeled_ns / 1e6, verify_name(vm->verify), vm->vm ? "" : " (destroyed)");
	}
	contention_text(run, out);
	fprintf(out, "core: %" PRIu64 " chunks evicted, %" PRIu64 " placed on host, %" PRIu64
	        " returned; %" PRIu64 " eviction passes, %" PRIu64 " return passes; host memory %s\n",
	        stats.chunks_evicted, stats.chunks_placed_on_host, stats.chunks_returned,
	        stats.eviction.passes, stats.return_pass.passes,
	        vgpu_format_size(stats.host_used_bytes, a, sizeof(a)));
	fprintf(out, "invariants: %s\n", run->invariants[0] ? run->invariants : "ok");
	fprintf(out, "expects: %u passed, %u failed; verifies failed: %u; GPU work failed: %u\n",
	        run->expects_passed, run->expects_failed, run->verifies_failed, run->kernels_failed);
	fprintf(out, "%s (%u steps in %.2f s)\n", sim_run_passed(run) ? "PASS" : "FAIL", run->steps,
	        run->wall_ns / 1e9);
}

static json_object *u64(uint64_t value)
{
	return json_object_new_uint64(value);
}

static json_object *contention_json(const struct vgpu_hal_as_contention *c)
{
	json_object *o = json_object_new_object();
	struct vgpu_hal_contention_figures f;

	vgpu_hal_contention_derive(c, &f);
	json_object_object_add(o, "kernels", u64(c->kernels));
	json_object_object_add(o, "corunner_kernels", u64(c->corunner_kernels));
	json_object_object_add(o, "walks", u64(c->walks));
	json_object_object_add(o, "avg_walk_latency_cycles",
	                       json_object_new_double(f.avg_walk_latency_cycles));
	json_object_object_add(o, "foreign_walks_waited", u64(c->foreign_walks_waited));
	json_object_object_add(o, "foreign_walks_waited_per_walk",
	                       json_object_new_double(f.walks_waited_per_walk));
	json_object_object_add(o, "foreign_walks_waited_max", u64(c->foreign_walks_waited_max));
	json_object_object_add(o, "l2_tlb_hit_rate", json_object_new_double(f.l2_tlb_hit_rate));
	json_object_object_add(o, "mpki", json_object_new_double(f.mpki));
	json_object_object_add(o, "bandwidth_bytes_per_s",
	                       json_object_new_double(f.bandwidth_bytes_per_s));
	json_object_object_add(o, "instructions", u64(c->instructions));
	json_object_object_add(o, "cycles", u64(c->cycles));
	json_object_object_add(o, "alone_cycles", u64(c->alone_cycles));
	json_object_object_add(o, "ipc", json_object_new_double(f.ipc));
	json_object_object_add(o, "slowdown", json_object_new_double(f.slowdown));
	return o;
}

int sim_report_json(const struct sim_run *run, FILE *out)
{
	json_object *root = json_object_new_object(), *gpu = json_object_new_object();
	json_object *vms = json_object_new_array(), *core = json_object_new_object();
	struct vgpu_core_stats stats;
	const char *text;

	if (!root || !gpu || !vms || !core)
		return -ENOMEM;
	vgpu_core_stats(run->core, &stats);
	json_object_object_add(gpu, "vram", u64(run->scenario->gpu.vram));
	json_object_object_add(gpu, "free", u64(stats.vram_free_bytes));
	json_object_object_add(gpu, "chunk", u64(run->scenario->gpu.chunk));
	json_object_object_add(gpu, "policy", json_object_new_string(run->scenario->gpu.policy));
	json_object_object_add(gpu, "seed", u64(run->scenario->gpu.seed));
	json_object_object_add(gpu, "host_mem", u64(run->scenario->gpu.host_mem));
	json_object_object_add(gpu, "sharing",
	                       json_object_new_string(simgpu_sharing_name(run->scenario->gpu.sharing)));
	if (run->scenario->gpu.sharing == SIMGPU_SHARING_SPATIAL) {
		json_object_object_add(gpu, "walkers", json_object_new_string(
			simgpu_walkers_name(run->scenario->gpu.walkers)));
		json_object_object_add(gpu, "memsched", json_object_new_string(
			simgpu_memsched_name(run->scenario->gpu.memsched)));
	}
	json_object_object_add(root, "gpu", gpu);

	for (size_t i = 0; i < run->vm_count; i++) {
		const struct sim_vm *vm = &run->vms[i];
		const struct vgpu_vm_stats *s = &vm->final;
		json_object *entry = json_object_new_object();

		json_object_object_add(entry, "name", json_object_new_string(vm->name));
		json_object_object_add(entry, "weight", u64(s->weight));
		json_object_object_add(entry, "allocated", u64(s->allocated_bytes));
		json_object_object_add(entry, "resident", u64(s->resident_bytes));
		json_object_object_add(entry, "evicted", u64(s->evicted_bytes));
		json_object_object_add(entry, "fair_share", u64(s->fair_share_bytes));
		json_object_object_add(entry, "evictions", u64(s->evictions));
		json_object_object_add(entry, "returns", u64(s->returns));
		json_object_object_add(entry, "modeled_runtime_ns", u64(vm->modeled_ns));
		json_object_object_add(entry, "verify",
		                       json_object_new_string(verify_name(vm->verify)));
		json_object_object_add(entry, "allocs_failed", u64(vm->allocs_failed));
		json_object_object_add(entry, "suspensions", u64(s->suspensions));
		json_object_object_add(entry, "suspended_ns", u64(s->suspended_ns));
		json_object_object_add(entry, "destroyed", json_object_new_boolean(!vm->vm));
		if (vm->has_contention)
			json_object_object_add(entry, "contention", contention_json(&vm->contention));
		json_object_array_add(vms, entry);
	}
	json_object_object_add(root, "vms", vms);
	json_object_object_add(root, "invariants",
	                       json_object_new_string(run->invariants[0] ? run->invariants : "ok"));
	json_object_object_add(root, "expects_failed", u64(run->expects_failed));
	json_object_object_add(root, "expects_passed", u64(run->expects_passed));
	json_object_object_add(root, "verifies_failed", u64(run->verifies_failed));
	json_object_object_add(root, "gpu_work_failed", u64(run->kernels_failed));
	json_object_object_add(core, "chunks_evicted", u64(stats.chunks_evicted));
	json_object_object_add(core, "chunks_placed_on_host", u64(stats.chunks_placed_on_host));
	json_object_object_add(core, "chunks_returned", u64(stats.chunks_returned));
	json_object_object_add(core, "eviction_passes", u64(stats.eviction.passes));
	json_object_object_add(core, "return_passes", u64(stats.return_pass.passes));
	json_object_object_add(core, "host_used", u64(stats.host_used_bytes));
	json_object_object_add(root, "core", core);
	json_object_object_add(root, "passed", json_object_new_boolean(sim_run_passed(run)));

	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                    JSON_C_TO_STRING_NOSLASHESCAPE);
	fprintf(out, "%s\n", text);
	json_object_put(root);
	return 0;
}
