/* SPDX-License-Identifier: MIT */
/*
 * stats.h - the core's statistics (stats.c): counted under the allocation
 * lock, published at the end of each operation into copies that readers
 * take under the short stats lock, so a reader never waits for an
 * eviction.
 *
 * Locks: live is under the allocation lock; published, every VM's
 * published figures, the GPU-time fields gpu_accounting.h names and the
 * links of core->vms are under lock (never held while waiting; taken after
 * the allocation lock and channels_lock). entries and events are atomics.
 */
#ifndef VGPU_CORE_STATS_STATE_H
#define VGPU_CORE_STATS_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/core.h"
#include "vgpu/core_stats.h"
#include "vgpu/mutex.h"

struct vgpu_core;

struct vgpu_stats {
	struct vgpu_mutex lock;
	struct vgpu_core_stats published; /* lock */
	struct vgpu_core_stats live;      /* allocation lock */
	_Atomic uint64_t entries;         /* calls into the core */
	_Atomic uint64_t events;          /* HAL events handled */
};

void vgpu_stats_init(struct vgpu_stats *stats);
void vgpu_stats_fini(struct vgpu_stats *stats);

/* Publish the statistics of the core and of every VM whose figures changed
 * (vm->stats_dirty) for the readers (vgpu_core_stats, vgpu_core_vm_stats).
 * Allocation lock. */
void vgpu_stats_publish_locked(struct vgpu_core *core);
void vgpu_stats_count_entry(struct vgpu_core *core);
void vgpu_stats_count_event(struct vgpu_core *core);
unsigned vgpu_latency_bucket(uint64_t ns);
void vgpu_core_time_add(struct vgpu_core_time *sum, const struct vgpu_core_time *add);
/* Water-filling fair shares: see core.h. out[i] for VM i. */
void vgpu_fair_shares(uint64_t vram, size_t count, const uint32_t *weights,
                      const uint64_t *allocated, uint64_t *out);

#endif /* VGPU_CORE_STATS_STATE_H */
