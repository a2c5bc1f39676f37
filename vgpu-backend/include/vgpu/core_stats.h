/* SPDX-License-Identifier: MIT */
/*
 * core_stats.h - core-wide statistics: memory totals, eviction and return
 * counts, and where the time of an eviction goes (thesis §6.3.2).
 *
 * Times are wall-clock nanoseconds, summed over all passes. An eviction's
 * time splits into
 *   policy  choosing victims and chunks,
 *   setup   host memory, IOMMU and DMA-window mappings, queuing copies,
 *   copy    waiting for the copy engine (copy_modeled_ns: what the copy
 *           engine spent on them on the GPU's own clock, where the HAL
 *           models one: simgpu; 0 where it does not),
 *   other   suspending, draining, PTE rewrite, TLB invalidation, freeing
 *           VRAM, resuming, mapping the new buffer; of which
 *             page_table  rewriting the moved chunks' PTEs,
 *             tlb         invalidating the VM's TLB,
 *             resume      resuming the VM's channels;
 * and for the victims
 *   drain   waiting for their channels to finish what was queued,
 *   pause   from suspend to resume (their submissions wait in the shadow).
 */
#ifndef VGPU_CORE_STATS_H
#define VGPU_CORE_STATS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_core_time {
	uint64_t passes;    /* passes that moved something */
	uint64_t policy_ns;
	uint64_t setup_ns;
	uint64_t copy_ns;
	uint64_t copy_modeled_ns; /* the copy engine's modeled time, not part of total */
	uint64_t other_ns;
	uint64_t page_table_ns; /* part of other */
	uint64_t tlb_ns;        /* part of other */
	uint64_t resume_ns;     /* part of other */
	uint64_t total_ns;
	uint64_t drain_ns;  /* victims */
	uint64_t pause_ns;  /* victims */
	uint64_t vm_suspensions; /* VMs suspended (one per VM per pass) */
	uint64_t bytes_copied;
};

/* later - earlier, field by field: the eviction time between two readings
 * of vgpu_core_stats' time (the benchmarks time one phase so). */
static inline void vgpu_core_time_delta(struct vgpu_core_time *d,
                                        const struct vgpu_core_time *earlier,
                                        const struct vgpu_core_time *later)
{
	d->passes = later->passes - earlier->passes;
	d->policy_ns = later->policy_ns - earlier->policy_ns;
	d->setup_ns = later->setup_ns - earlier->setup_ns;
	d->copy_ns = later->copy_ns - earlier->copy_ns;
	d->copy_modeled_ns = later->copy_modeled_ns - earlier->copy_modeled_ns;
	d->other_ns = later->other_ns - earlier->other_ns;
	d->page_table_ns = later->page_table_ns - earlier->page_table_ns;
	d->tlb_ns = later->tlb_ns - earlier->tlb_ns;
	d->resume_ns = later->resume_ns - earlier->resume_ns;
	d->total_ns = later->total_ns - earlier->total_ns;
	d->drain_ns = later->drain_ns - earlier->drain_ns;
	d->pause_ns = later->pause_ns - earlier->pause_ns;
	d->vm_suspensions = later->vm_suspensions - earlier->vm_suspensions;
	d->bytes_copied = later->bytes_copied - earlier->bytes_copied;
}

struct vgpu_core_stats {
	uint64_t vram_bytes;        /* caps.vram_bytes */
	uint64_t vram_free_bytes;   /* vgpu_hal_vram_free_bytes */
	uint64_t allocated_bytes;   /* Σ VMs */
	uint64_t resident_bytes;
	uint64_t evicted_bytes;
	uint64_t host_budget_bytes; /* 0 = no limit */
	uint64_t host_used_bytes;   /* = evicted_bytes */
	uint64_t host_cached_bytes; /* freed host buffers kept for reuse */
	uint64_t host_cache_hits;   /* evictions that copied into a cached buffer */
	uint64_t host_cache_misses;
	uint64_t vms;
	uint64_t chunks_evicted;    /* copied VRAM → host */
	uint64_t chunks_placed_on_host; /* new chunks put on the host directly */
	uint64_t chunks_returned;
	uint64_t bytes_evicted;
	uint64_t bytes_placed_on_host;
	uint64_t bytes_returned;
	uint64_t allocs_failed_budget; /* -ENOMEM: host budget */
	uint64_t allocs_failed_cap;    /* -EDQUOT */
	struct vgpu_core_time eviction;
	struct vgpu_core_time return_pass;
	uint64_t entries;           /* calls into the core: public API calls
	                               (vgpu_core_stats itself excepted) and HAL
	                               events dispatched; benchmarks check that
	                               guest submission causes none */
	uint64_t events;            /* HAL events received */
	/* the GPU-time accounting thread (0 while it is off) */
	uint64_t accounting_periods;    /* decisions taken */
	uint64_t accounting_poll_ns;    /* Σ polling phases: its busy-loop time */
	uint64_t accounting_nonpoll_ns; /* Σ non-polling phases */
	uint64_t accounting_residue_ns; /* of which polled while throttled
	                                   channels ran their queued work */
	uint64_t accounting_samples;    /* status reads */
	uint64_t accounting_sampled_ns; /* Σ sampled phases (at most one VM
	                                   had work: no busy loop) */
};

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CORE_STATS_H */
