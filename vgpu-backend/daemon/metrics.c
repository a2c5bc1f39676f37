// SPDX-License-Identifier: MIT
/* metrics.c - vgpud's statistics as Prometheus exposition text; see
 * metrics.h. */
#include "metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_snapshot.h"

size_t vgpud_metrics_escape_label(const char *value, char *out, size_t out_len)
{
	size_t need = 0, used = 0;
	const char *p;

	for (p = value; *p; p++) {
		char escaped[3] = { *p, '\0', '\0' };
		size_t n = 1;

		if (*p == '\\' || *p == '"' || *p == '\n') {
			escaped[0] = '\\';
			escaped[1] = *p == '\n' ? 'n' : *p;
			n = 2;
		}
		if (out_len && used == need && used + n < out_len) {
			memcpy(out + used, escaped, n);
			used += n;
		}
		need += n;
	}
	if (out_len)
		out[used] = '\0';
	return need;
}

/* --------------------------------------------------------------- writing */

static void put_label(FILE *out, const char *name, const char *value, bool first)
{
	char small[256];
	size_t need = vgpud_metrics_escape_label(value, small, sizeof(small));

	fprintf(out, "%s%s=\"", first ? "" : ",", name);
	if (need < sizeof(small)) {
		fputs(small, out);
	} else {
		char *big = malloc(need + 1);

		if (big) {
			vgpud_metrics_escape_label(value, big, need + 1);
			fputs(big, out);
			free(big);
		}
	}
	fputc('"', out);
}

static void put_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* nanoseconds as exact decimal seconds */
static void put_seconds(FILE *out, uint64_t ns)
{
	fprintf(out, "%llu.%09llu\n", (unsigned long long)(ns / 1000000000u),
	        (unsigned long long)(ns % 1000000000u));
}

static void put_u64(FILE *out, uint64_t v)
{
	fprintf(out, "%llu\n", (unsigned long long)v);
}

static void put_double(FILE *out, double v)
{
	fprintf(out, "%.9g\n", v);
}

/* The per-VM labels, in the order metrics.h promises. */
static void put_vm_labels(FILE *out, const struct vgpud_vm_snapshot *vm)
{
	put_label(out, "uuid", vm->uuid, true);
	put_label(out, "name", vm->name, false);
	put_label(out, "profile", vm->profile, false);
	put_label(out, "transport", vm->transport, false);
}

/* "name{uuid=...,name=...,profile=...,transport=...[,extra=value]} " */
static void put_vm_sample_start(FILE *out, const char *metric, const struct vgpud_vm_snapshot *vm,
                                const char *extra_label, const char *extra_value)
{
	fprintf(out, "%s{", metric);
	put_vm_labels(out, vm);
	if (extra_label)
		put_label(out, extra_label, extra_value, false);
	fputs("} ", out);
}

/* ------------------------------------------------------------ the GPU */

struct gpu_metric {
	const char *name;
	const char *type;
	const char *help;
	size_t offset; /* of a uint64_t in struct vgpu_core_stats */
};

#define CORE(field) offsetof(struct vgpu_core_stats, field)

static const struct gpu_metric gpu_metrics[] = {
	{ "vgpu_gpu_vram_bytes", "gauge", "VRAM of the GPU.", CORE(vram_bytes) },
	{ "vgpu_gpu_vram_free_bytes", "gauge", "VRAM not holding any VM's chunk.",
	  CORE(vram_free_bytes) },
	{ "vgpu_gpu_allocated_bytes", "gauge", "GPU memory the VMs allocated, resident plus "
	  "evicted.", CORE(allocated_bytes) },
	{ "vgpu_gpu_resident_bytes", "gauge", "GPU memory of the VMs held in VRAM.",
	  CORE(resident_bytes) },
	{ "vgpu_gpu_evicted_bytes", "gauge", "GPU memory of the VMs evicted to host RAM.",
	  CORE(evicted_bytes) },
	{ "vgpu_gpu_host_used_bytes", "gauge", "Host RAM holding evicted chunks.",
	  CORE(host_used_bytes) },
	{ "vgpu_gpu_host_budget_bytes", "gauge", "Host RAM evicted chunks may use (0 = no "
	  "limit).", CORE(host_budget_bytes) },
	{ "vgpu_gpu_chunks_evicted_total", "counter", "Chunks copied from VRAM to host RAM.",
	  CORE(chunks_evicted) },
	{ "vgpu_gpu_chunks_placed_on_host_total", "counter", "New chunks put in host RAM "
	  "directly (no copy).", CORE(chunks_placed_on_host) },
	{ "vgpu_gpu_chunks_returned_total", "counter", "Chunks moved back from host RAM to "
	  "VRAM.", CORE(chunks_returned) },
};

static void put_gpu(FILE *out, const struct vgpud_stats_snapshot *s)
{
	size_t i;

	put_family(out, "vgpu_gpu_info", "gauge",
	           "The GPU's HAL and eviction policy (value always 1).");
	fputs("vgpu_gpu_info{", out);
	put_label(out, "hal", s->hal, true);
	put_label(out, "policy", s->policy, false);
	fputs("} 1\n", out);
	put_family(out, "vgpu_gpu_chunk_bytes", "gauge",
	           "Accounting and eviction granularity.");
	fputs("vgpu_gpu_chunk_bytes ", out);
	put_u64(out, s->chunk_bytes);
	for (i = 0; i < sizeof(gpu_metrics) / sizeof(gpu_metrics[0]); i++) {
		const struct gpu_metric *m = &gpu_metrics[i];

		put_family(out, m->name, m->type, m->help);
		fprintf(out, "%s ", m->name);
		put_u64(out, *(const uint64_t *)((const char *)&s->core + m->offset));
	}
	put_family(out, "vgpu_vms", "gauge", "VMs attached.");
	fputs("vgpu_vms ", out);
	put_u64(out, s->vm_count);
}

/* ------------------------------------------------------------ the VMs */

enum vm_unit {
	VM_NUMBER,  /* a uint64_t as it is */
	VM_SECONDS, /* a uint64_t of nanoseconds, printed as seconds */
};

struct vm_metric {
	const char *name;
	const char *type;
	const char *help;
	size_t offset; /* of an unsigned field of struct vgpud_vm_snapshot */
	size_t size;   /* its size: 4 or 8 */
	enum vm_unit unit;
};

#define VM(field) \
	offsetof(struct vgpud_vm_snapshot, field), sizeof(((struct vgpud_vm_snapshot *)0)->field)

/* Before: vgpu_vm_info; after: the computed ones (put_vms). */
static const struct vm_metric vm_metrics[] = {
	{ "vgpu_vm_weight", "gauge", "Weight of the VM: its share of VRAM under pressure, "
	  "relative to other VMs.", VM(stats.weight), VM_NUMBER },
	{ "vgpu_vm_cap_bytes", "gauge", "Most GPU memory the VM may hold (0 = no cap).",
	  VM(stats.cap_bytes), VM_NUMBER },
	{ "vgpu_vm_allocated_bytes", "gauge", "GPU memory the VM allocated, resident plus "
	  "evicted.", VM(stats.allocated_bytes), VM_NUMBER },
	{ "vgpu_vm_resident_bytes", "gauge", "GPU memory of the VM held in VRAM.",
	  VM(stats.resident_bytes), VM_NUMBER },
	{ "vgpu_vm_evicted_bytes", "gauge", "GPU memory of the VM evicted to host RAM.",
	  VM(stats.evicted_bytes), VM_NUMBER },
	{ "vgpu_vm_fair_share_bytes", "gauge", "The VM's share of VRAM by weight, never more "
	  "than it allocated.", VM(stats.fair_share_bytes), VM_NUMBER },
	{ "vgpu_vm_evictions_total", "counter", "Chunks of the VM moved or placed to host RAM.",
	  VM(stats.evictions), VM_NUMBER },
	{ "vgpu_vm_returns_total", "counter", "Chunks of the VM moved back to VRAM.",
	  VM(stats.returns), VM_NUMBER },
	{ "vgpu_vm_eviction_bytes_total", "counter", "Bytes of the VM moved or placed to host "
	  "RAM.", VM(stats.evicted_bytes_total), VM_NUMBER },
	{ "vgpu_vm_returned_bytes_total", "counter", "Bytes of the VM moved back to VRAM.",
	  VM(stats.returned_bytes_total), VM_NUMBER },
	{ "vgpu_vm_buffers", "gauge", "Live GPU buffers of the VM.", VM(stats.buffers),
	  VM_NUMBER },
	{ "vgpu_vm_channels", "gauge", "Live command channels of the VM.", VM(channels),
	  VM_NUMBER },
	{ "vgpu_vm_suspensions_total", "counter", "Suspensions of the VM's channels (while its "
	  "chunks moved).", VM(stats.suspensions), VM_NUMBER },
	{ "vgpu_vm_suspended_seconds_total", "counter", "Time the VM's channels were "
	  "suspended, summed over its channels.", VM(stats.suspended_ns), VM_SECONDS },
	{ "vgpu_vm_guest_blocked_seconds_total", "counter", "Time a guest access to a channel "
	  "window could wait during a swap.", VM(stats.guest_blocked_ns), VM_SECONDS },
	{ "vgpu_vm_drain_seconds_total", "counter", "Time relocations waited for the VM's "
	  "channels to drain.", VM(stats.drain_ns), VM_SECONDS },
	{ "vgpu_vm_drain_kills_total", "counter", "The VM's channels killed because they did "
	  "not drain or resume within the drain timeout; once nonzero, relocations wait 50 ms "
	  "for the VM, not the drain timeout.", VM(stats.drain_kills), VM_NUMBER },
	{ "vgpu_vm_allocations_total", "counter", "Successful GPU memory allocations of the VM.",
	  VM(stats.allocs), VM_NUMBER },
	{ "vgpu_vm_allocation_failures_total", "counter", "Failed GPU memory allocations of "
	  "the VM.", VM(stats.alloc_failures), VM_NUMBER },
	{ "vgpu_vm_channel_errors_total", "counter", "Channel errors of the VM (its context "
	  "killed).", VM(stats.channel_errors), VM_NUMBER },
	{ "vgpu_vm_gpu_time_seconds_total", "counter", "GPU (compute engine) time of the VM as "
	  "the accounting thread measured it, extrapolated from its polling phases.",
	  VM(stats.gpu_time_ns), VM_SECONDS },
	{ "vgpu_vm_throttled_seconds_total", "counter", "Time the VM's channels were suspended "
	  "to hold its GPU-time share.", VM(stats.throttled_ns), VM_SECONDS },
	{ "vgpu_vm_throttles_total", "counter", "Times the VM was throttled for its GPU-time "
	  "share.", VM(stats.throttles), VM_NUMBER },
	{ "vgpu_vm_mailbox_requests_total", "counter", "Mailbox requests the VM's driver sent.",
	  VM(requests), VM_NUMBER },
	{ "vgpu_vm_mailbox_requests_failed_total", "counter", "Mailbox requests of the VM that "
	  "failed.", VM(requests_failed), VM_NUMBER },
};

static void put_vm_metric(FILE *out, const struct vgpud_stats_snapshot *s,
                          const struct vm_metric *m)
{
	size_t i;

	put_family(out, m->name, m->type, m->help);
	for (i = 0; i < s->vm_count; i++) {
		const char *field = (const char *)&s->vms[i] + m->offset;
		uint64_t v;

		if (m->size == sizeof(uint32_t)) {
			uint32_t v32;

			memcpy(&v32, field, sizeof(v32));
			v = v32;
		} else {
			memcpy(&v, field, sizeof(v));
		}

		put_vm_sample_start(out, m->name, &s->vms[i], NULL, NULL);
		if (m->unit == VM_SECONDS)
			put_seconds(out, v);
		else
			put_u64(out, v);
	}
}

static uint64_t sysmem(const uint64_t *by_target)
{
	return by_target[VGPU_TARGET_SYSMEM_COHERENT] + by_target[VGPU_TARGET_SYSMEM_NONCOHERENT];
}

/* GPU bytes read or written through the VM's address space, by target. */
static void put_vm_gpu_bytes(FILE *out, const struct vgpud_stats_snapshot *s, const char *name,
                             const char *help, bool written)
{
	size_t i;

	put_family(out, name, "counter", help);
	for (i = 0; i < s->vm_count; i++) {
		const struct vgpu_hal_as_counters *c = &s->vms[i].counters;
		const uint64_t *by_target = written ? c->bytes_written : c->bytes_read;

		put_vm_sample_start(out, name, &s->vms[i], "target", "vram");
		put_u64(out, by_target[VGPU_TARGET_VRAM]);
		put_vm_sample_start(out, name, &s->vms[i], "target", "sysmem");
		put_u64(out, sysmem(by_target));
	}
}

/* Spatial sharing (simgpu): each VM's figures in the GPU's shared
 * virtual-memory and memory path (vgpu_hal_as_contention); the families
 * appear only when some VM has them. */
enum contention_figure {
	FIG_WALKS, FIG_WALK_LATENCY, FIG_WAITED, FIG_L2_TLB_HIT, FIG_MPKI, FIG_BANDWIDTH, FIG_IPC,
	FIG_SLOWDOWN,
};

static const struct {
	const char *name, *type, *help;
} contention_metrics[] = {
	[FIG_WALKS] = { "vgpu_vm_page_walks_total", "counter",
	                "Page-table walks of the VM's kernels (spatial sharing)." },
	[FIG_WALK_LATENCY] = { "vgpu_vm_page_walk_latency_cycles", "gauge",
	                       "Average page-walk latency, L2 TLB miss to translation, in GPU "
	                       "core cycles." },
	[FIG_WAITED] = { "vgpu_vm_foreign_walks_waited_total", "counter",
	                 "Walks of other VMs the VM's walks waited for (seed 003's interleaving)." },
	[FIG_L2_TLB_HIT] = { "vgpu_vm_l2_tlb_hit_ratio", "gauge", "The VM's L2 TLB hit rate." },
	[FIG_MPKI] = { "vgpu_vm_l2_mpki", "gauge",
	               "L2 cache misses per 1000 instruction-equivalents of the VM's kernels." },
	[FIG_BANDWIDTH] = { "vgpu_vm_dram_bandwidth_bytes_per_second", "gauge",
	                    "DRAM bandwidth the VM's kernels achieved while they ran." },
	[FIG_IPC] = { "vgpu_vm_ipc", "gauge",
	              "Instruction-equivalents per GPU core cycle of the VM's kernels (progress)." },
	[FIG_SLOWDOWN] = { "vgpu_vm_speed_vs_alone_ratio", "gauge",
	                   "The VM's kernels' progress beside the others divided by alone on the "
	                   "same SMs (1 = no slowdown)." },
};

static void put_vm_contention(FILE *out, const struct vgpud_stats_snapshot *s)
{
	size_t i, m;
	bool any = false;

	for (i = 0; i < s->vm_count; i++)
		any = any || s->vms[i].has_contention;
	if (!any)
		return;
	for (m = 0; m < sizeof(contention_metrics) / sizeof(contention_metrics[0]); m++) {
		put_family(out, contention_metrics[m].name, contention_metrics[m].type,
		           contention_metrics[m].help);
		for (i = 0; i < s->vm_count; i++) {
			const struct vgpu_hal_as_contention *c = &s->vms[i].contention;
			struct vgpu_hal_contention_figures f;

			if (!s->vms[i].has_contention)
				continue;
			vgpu_hal_contention_derive(c, &f);
			put_vm_sample_start(out, contention_metrics[m].name, &s->vms[i], NULL, NULL);
			switch ((enum contention_figure)m) {
			case FIG_WALKS: put_u64(out, c->walks); break;
			case FIG_WALK_LATENCY: put_double(out, f.avg_walk_latency_cycles); break;
			case FIG_WAITED: put_u64(out, c->foreign_walks_waited); break;
			case FIG_L2_TLB_HIT: put_double(out, f.l2_tlb_hit_rate); break;
			case FIG_MPKI: put_double(out, f.mpki); break;
			case FIG_BANDWIDTH: put_double(out, f.bandwidth_bytes_per_s); break;
			case FIG_IPC: put_double(out, f.ipc); break;
			case FIG_SLOWDOWN: put_double(out, f.slowdown); break;
			}
		}
	}
}

static void put_vms(FILE *out, const struct vgpud_stats_snapshot *s)
{
	size_t i;

	put_family(out, "vgpu_vm_info", "gauge",
	           "An attached VM: its vgpud id and where its name comes from (value always 1).");
	for (i = 0; i < s->vm_count; i++) {
		char id[16];

		snprintf(id, sizeof(id), "%u", s->vms[i].id);
		fputs("vgpu_vm_info{", out);
		put_vm_labels(out, &s->vms[i]);
		put_label(out, "id", id, false);
		put_label(out, "name_source", s->vms[i].name_source, false);
		fputs("} 1\n", out);
	}
	for (i = 0; i < sizeof(vm_metrics) / sizeof(vm_metrics[0]); i++)
		put_vm_metric(out, s, &vm_metrics[i]);

	put_family(out, "vgpu_vm_vram_share_ratio", "gauge",
	           "The VM's resident bytes divided by the GPU's VRAM.");
	for (i = 0; i < s->vm_count; i++) {
		put_vm_sample_start(out, "vgpu_vm_vram_share_ratio", &s->vms[i], NULL, NULL);
		put_double(out, vgpud_vm_snapshot_vram_share(s, &s->vms[i]));
	}
	put_family(out, "vgpu_vm_debug_modeled_runtime_seconds_total", "counter",
	           "Debug: simgpu's ground truth, modeled GPU engine time (compute plus copy) "
	           "spent for the VM; no real GPU gives this.");
	for (i = 0; i < s->vm_count; i++) {
		put_vm_sample_start(out, "vgpu_vm_debug_modeled_runtime_seconds_total", &s->vms[i],
		                    NULL, NULL);
		put_seconds(out, vgpud_vm_snapshot_runtime_ns(&s->vms[i]));
	}
	put_family(out, "vgpu_vm_throttled", "gauge",
	           "1 while the VM's channels are suspended to hold its GPU-time share.");
	for (i = 0; i < s->vm_count; i++) {
		put_vm_sample_start(out, "vgpu_vm_throttled", &s->vms[i], NULL, NULL);
		fputs(s->vms[i].stats.throttled ? "1\n" : "0\n", out);
	}
	put_family(out, "vgpu_vm_scheduler_info", "gauge",
	           "The VM's GPU-time scheduling mode (label scheduler).");
	for (i = 0; i < s->vm_count; i++) {
		put_vm_sample_start(out, "vgpu_vm_scheduler_info", &s->vms[i], "scheduler",
		                    s->vms[i].stats.scheduler);
		fputs("1\n", out);
	}
	put_family(out, "vgpu_vm_gpu_time_share_ratio", "gauge",
	           "The VM's share of the GPU in the accounting thread's last period "
	           "(absent until the accounting decided once).");
	for (i = 0; i < s->vm_count; i++) {
		double share;

		if (!vgpud_vm_snapshot_gpu_time_share(s, &s->vms[i], &share))
			continue;
		put_vm_sample_start(out, "vgpu_vm_gpu_time_share_ratio", &s->vms[i], NULL, NULL);
		put_double(out, share);
	}
	put_vm_gpu_bytes(out, s, "vgpu_vm_gpu_read_bytes_total",
	                 "Bytes the GPU read for the VM, by memory target.", false);
	put_vm_gpu_bytes(out, s, "vgpu_vm_gpu_written_bytes_total",
	                 "Bytes the GPU wrote for the VM, by memory target.", true);
	put_vm_contention(out, s);
	put_family(out, "vgpu_vm_attached_timestamp_seconds", "gauge",
	           "When the VM attached, Unix time.");
	for (i = 0; i < s->vm_count; i++) {
		put_vm_sample_start(out, "vgpu_vm_attached_timestamp_seconds", &s->vms[i], NULL,
		                    NULL);
		fprintf(out, "%lld\n", (long long)s->vms[i].attached_at);
	}
}

/* ------------------------------------------------------------- entries */

char *vgpud_metrics_format(const struct vgpud_stats_snapshot *snapshot, size_t *len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	if (!out)
		return NULL;
	put_gpu(out, snapshot);
	put_vms(out, snapshot);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	if (len)
		*len = size;
	return text;
}

char *vgpud_metrics_text(struct vgpud *d, size_t *len)
{
	struct vgpud_stats_snapshot snapshot;
	char *text;

	if (vgpud_stats_snapshot_take(d, &snapshot))
		return NULL;
	text = vgpud_metrics_format(&snapshot, len);
	vgpud_stats_snapshot_free(&snapshot);
	return text;
}
