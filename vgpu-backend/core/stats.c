// SPDX-License-Identifier: MIT
/*
 * stats.c - per-VM and core-wide statistics, fair shares and the latency
 * histogram. Statistics are published at the end of each operation under
 * the allocation lock into copies guarded by the short stats_lock, so a
 * reader never waits for an eviction (issue 16).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#include "channel.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"

void vgpu_stats_init(struct vgpu_stats *stats)
{
	vgpu_mutex_init(&stats->lock);
	memset(&stats->published, 0, sizeof(stats->published));
	memset(&stats->live, 0, sizeof(stats->live));
	atomic_init(&stats->entries, 0);
	atomic_init(&stats->events, 0);
}

void vgpu_stats_fini(struct vgpu_stats *stats)
{
	vgpu_mutex_destroy(&stats->lock);
}

void vgpu_stats_count_entry(struct vgpu_core *core)
{
	atomic_fetch_add_explicit(&core->stats.entries, 1, memory_order_relaxed);
}

void vgpu_stats_count_event(struct vgpu_core *core)
{
	atomic_fetch_add_explicit(&core->stats.events, 1, memory_order_relaxed);
}

unsigned vgpu_latency_bucket(uint64_t ns)
{
	unsigned bucket = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;

	return bucket < VGPU_LATENCY_BUCKETS ? bucket : VGPU_LATENCY_BUCKETS - 1;
}

void vgpu_core_time_add(struct vgpu_core_time *sum, const struct vgpu_core_time *add)
{
	sum->passes += add->passes;
	sum->policy_ns += add->policy_ns;
	sum->setup_ns += add->setup_ns;
	sum->copy_ns += add->copy_ns;
	sum->copy_modeled_ns += add->copy_modeled_ns;
	sum->other_ns += add->other_ns;
	sum->page_table_ns += add->page_table_ns;
	sum->tlb_ns += add->tlb_ns;
	sum->resume_ns += add->resume_ns;
	sum->total_ns += add->total_ns;
	sum->drain_ns += add->drain_ns;
	sum->pause_ns += add->pause_ns;
	sum->vm_suspensions += add->vm_suspensions;
	sum->bytes_copied += add->bytes_copied;
}

/*
 * Water filling: each VM that still wants memory gets remaining × weight ÷
 * Σ weights of those VMs; a VM whose allocation is at most that gets exactly
 * its allocation and leaves, and what is left is shared again. A VM leaving
 * only raises the others' shares, so all VMs satisfied in one round may leave
 * together. At most count rounds. VMs that allocated nothing get 0.
 */
void vgpu_fair_shares(uint64_t vram, size_t count, const uint32_t *weights,
                      const uint64_t *allocated, uint64_t *out)
{
	uint64_t remaining = vram;
	bool done = false;

	for (size_t i = 0; i < count; i++)
		out[i] = UINT64_MAX; /* still active */
	for (size_t i = 0; i < count; i++)
		if (!allocated[i] || !weights[i])
			out[i] = 0;
	while (!done) {
		unsigned __int128 total_weight = 0;
		uint64_t given = 0;

		for (size_t i = 0; i < count; i++)
			if (out[i] == UINT64_MAX)
				total_weight += weights[i];
		if (!total_weight)
			break;
		done = true;
		for (size_t i = 0; i < count; i++) {
			uint64_t share;

			if (out[i] != UINT64_MAX)
				continue;
			share = (uint64_t)((unsigned __int128)remaining * weights[i] / total_weight);
			if (allocated[i] <= share) {
				out[i] = allocated[i];
				given += allocated[i];
				done = false;
			}
		}
		if (done) {
			for (size_t i = 0; i < count; i++)
				if (out[i] == UINT64_MAX)
					out[i] = (uint64_t)((unsigned __int128)remaining * weights[i] /
					                    total_weight);
		}
		remaining -= given;
	}
}

/*
 * Fair share of target among the VMs as last published. stats_lock held:
 * it guards the published figures and the links of core->vms.
 */
static uint64_t fair_share_of_locked(struct vgpu_core *core, const struct vgpu_vm *target)
{
	size_t count = 0, index = 0, target_index = 0;
	uint32_t *weights;
	uint64_t *allocated, *shares, share = 0;
	struct list_head *pos;

	vgpu_mutex_assert_held(&core->stats.lock);
	list_for_each(pos, &core->vms)
		count++;
	weights = calloc(count + 1, sizeof(*weights));
	allocated = calloc(count + 1, sizeof(*allocated));
	shares = calloc(count + 1, sizeof(*shares));
	if (weights && allocated && shares) {
		list_for_each(pos, &core->vms) {
			struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

			if (vm == target)
				target_index = index;
			weights[index] = vm->published.weight;
			allocated[index] = vm->published.allocated_bytes;
			index++;
		}
		vgpu_fair_shares(core->caps.vram_bytes, index, weights, allocated, shares);
		share = shares[target_index];
	}
	free(weights);
	free(allocated);
	free(shares);
	return share;
}

/* The figures kept under the allocation lock, into vm->published. */
static void publish_vm_locked(struct vgpu_vm *vm)
{
	struct vgpu_vm_stats *out = &vm->published;

	vgpu_core_assert_locked(vm->core);
	vgpu_mutex_assert_held(&vm->core->stats.lock);
	memcpy(out->name, vm->name, sizeof(out->name));
	out->id = vm->id;
	/* a weight set meanwhile stays shown (vgpu_core_set_weight) */
	out->weight = atomic_load_explicit(&vm->weight_requested, memory_order_relaxed);
	if (!out->weight)
		out->weight = vm->weight;
	out->cap_bytes = vm->cap_bytes;
	out->chunk_bytes = vm->chunk_bytes;
	out->allocated_bytes = vm->allocated_bytes;
	out->resident_bytes = vm->resident_bytes;
	out->evicted_bytes = vm->evicted_bytes;
	out->buffers = vm->buffer_count;
	out->resident_chunks = vm->sets[LOC_RESIDENT].count;
	out->evicted_chunks = vm->sets[LOC_EVICTED].count;
	out->evictions = vm->evictions;
	out->evicted_bytes_total = vm->evicted_bytes_total;
	out->returns = vm->returns;
	out->returned_bytes_total = vm->returned_bytes_total;
	out->drain_ns = vm->drain_ns;
	out->drain_kills = vm->drain_kills;
	out->drain_offender = vm->drain_kills > 0;
	out->allocs = vm->allocs;
	out->alloc_failures = vm->alloc_failures;
	memcpy(out->alloc_latency, vm->alloc_latency, sizeof(out->alloc_latency));
	out->channels = vm->channel_count;
}

void vgpu_stats_publish_locked(struct vgpu_core *core)
{
	uint64_t vram_free = vgpu_hal_vram_free_bytes(core->hal);
	struct list_head *pos;

	vgpu_core_assert_locked(core);
	vgpu_mutex_lock(&core->stats.lock);
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

		if (vm->stats_dirty)
			publish_vm_locked(vm);
		vm->stats_dirty = false;
	}
	core->stats.published = core->stats.live;
	core->stats.published.vram_bytes = core->caps.vram_bytes;
	core->stats.published.vram_free_bytes = vram_free;
	core->stats.published.allocated_bytes = core->allocated_bytes;
	core->stats.published.resident_bytes = core->resident_bytes;
	core->stats.published.evicted_bytes = core->evicted_bytes;
	core->stats.published.host_budget_bytes = core->host.limit;
	core->stats.published.host_used_bytes = core->host.used;
	core->stats.published.host_cached_bytes = core->host_cache.bytes;
	core->stats.published.host_cache_hits = core->host_cache.hits;
	core->stats.published.host_cache_misses = core->host_cache.misses;
	core->stats.published.vms = core->vm_count;
	vgpu_mutex_unlock(&core->stats.lock);
}

/*
 * What a reader gets for vm: the published figures, its fair share among
 * the published VMs, and the live shadow and channel-error counts. With
 * core->channels_lock and then core->stats.lock held (the order readers
 * take them in; neither is held while waiting).
 */
static void read_vm_stats_locked(struct vgpu_core *core, struct vgpu_vm *vm,
                                 struct vgpu_vm_stats *out)
{
	struct vgpu_shadow_stats shadow;

	vgpu_mutex_assert_held(&core->channels_lock);
	vgpu_mutex_assert_held(&core->stats.lock);
	*out = vm->published;
	out->fair_share_bytes = fair_share_of_locked(core, vm);
	vgpu_vm_shadow_stats(vm, &shadow);
	out->suspensions = shadow.suspensions;
	out->suspended_ns = shadow.suspended_ns;
	out->guest_blocked_ns = shadow.guest_blocked_ns;
	out->channel_errors = atomic_load_explicit(&vm->channel_errors, memory_order_relaxed);
	snprintf(out->scheduler, sizeof(out->scheduler), "%s",
	         vgpu_sched_mode_name(vm->gpu.sched.mode));
	out->gpu_time_ns = vm->gpu.gpu_time_ns;
	out->gpu_share_ppm = vm->gpu.share_ppm;
	out->throttled = vm->gpu.shown_throttled;
	out->throttles = vm->gpu.throttles;
	out->throttled_ns = vm->gpu.throttled_ns;
}

static void read_core_stats_locked(struct vgpu_core *core, struct vgpu_core_stats *out)
{
	vgpu_mutex_assert_held(&core->stats.lock);
	*out = core->stats.published;
	out->accounting_periods = core->accounting.periods;
	out->accounting_poll_ns = core->accounting.poll_ns;
	out->accounting_residue_ns = core->accounting.residue_ns;
	out->accounting_nonpoll_ns = core->accounting.nonpoll_ns;
	out->accounting_samples = core->accounting.samples;
	out->accounting_sampled_ns = core->accounting.sampled_ns;
	out->entries = atomic_load_explicit(&core->stats.entries, memory_order_relaxed);
	out->events = atomic_load_explicit(&core->stats.events, memory_order_relaxed);
}

/*
 * Never takes the allocation lock: the figures are those published at the
 * end of the last operation (an eviction in progress publishes after each
 * VM it moved), plus the live shadow and channel-error counts.
 */
void vgpu_core_vm_stats(struct vgpu_vm *vm, struct vgpu_vm_stats *out)
{
	struct vgpu_core *core = vm->core;

	vgpu_stats_count_entry(core);
	vgpu_mutex_lock(&core->channels_lock);
	vgpu_mutex_lock(&core->stats.lock);
	read_vm_stats_locked(core, vm, out);
	vgpu_mutex_unlock(&core->stats.lock);
	vgpu_mutex_unlock(&core->channels_lock);
}

/* Not counted as an entry: benchmarks call it around the code they watch.
 * Never takes the allocation lock (see vgpu_core_vm_stats). */
void vgpu_core_stats(struct vgpu_core *core, struct vgpu_core_stats *out)
{
	vgpu_mutex_lock(&core->stats.lock);
	read_core_stats_locked(core, out);
	vgpu_mutex_unlock(&core->stats.lock);
}

int vgpu_core_stats_snapshot(struct vgpu_core *core, struct vgpu_core_stats *core_out,
                             struct vgpu_vm_stats **vms_out, size_t *count_out,
                             struct vgpu_error *error)
{
	struct vgpu_vm_stats *vms;
	struct list_head *pos;
	size_t count = 0, i = 0;

	if (!core || !core_out || !vms_out || !count_out)
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_stats_snapshot needs a core and places for the "
		                      "figures");
	vgpu_stats_count_entry(core);
	vgpu_mutex_lock(&core->channels_lock);
	vgpu_mutex_lock(&core->stats.lock);
	list_for_each(pos, &core->vms)
		count++;
	vms = calloc(count ? count : 1, sizeof(*vms));
	if (vms) {
		list_for_each(pos, &core->vms)
			read_vm_stats_locked(core, list_entry(pos, struct vgpu_vm, link), &vms[i++]);
		read_core_stats_locked(core, core_out);
	}
	vgpu_mutex_unlock(&core->stats.lock);
	vgpu_mutex_unlock(&core->channels_lock);
	if (!vms)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the statistics of %zu VMs",
		                      count);
	*vms_out = vms;
	*count_out = count;
	return 0;
}
