/* SPDX-License-Identifier: MIT */
/*
 * gpu_neon.h - NEON's sampling accounting (LoGA §2.3, Fig. 4), the pure
 * parts: the baseline LoGA is compared against (issue 15 item 5).
 *
 * NEON alternates a sampling phase and a freerun phase. The sampling phase
 * suspends every VM's channels, lets the GPU drain, then lets each VM run
 * alone for a short interval while it measures that VM's command lengths;
 * the freerun phase lets everyone (but the throttled) run and measures
 * nothing. Each VM's GPU time is then estimated from its average command
 * length alone: the GPU switches between channels per command (round
 * robin), so over the period each VM active in the sampling phase is taken
 * to get avg_i ÷ Σ avg_j of the GPU (a VM whose commands are twice as long
 * gets twice the time). That is NEON's metric, and its weakness (LoGA §5.5:
 * a VM that runs short commands rarely counts as much as one that runs them
 * back to back).
 *
 * Here the busy time is seen through the same two HAL registers LoGA polls
 * (the compute engine's current channel and its pending bit): while one VM
 * runs alone, the GPU is busy for it while the engine's current channel has
 * work pending. Commands are counted two ways, and the larger count holds:
 * busy segments (a command starts when the engine goes from no pending work,
 * or another channel, to pending work), and, where the caller reads them,
 * the entries its channels fetched (GP_GET; vgpu_neon_profile_fetched),
 * which tells back-to-back commands on one channel apart as NEON's
 * completion polling does. Entries that are no kernels (a semaphore write)
 * count as short commands, as NEON's trapped submissions do.
 *
 * Nothing here reads a clock, a GPU or a lock: times come in the samples.
 */
#ifndef VGPU_CORE_GPU_NEON_H
#define VGPU_CORE_GPU_NEON_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_time.h"

/* One VM's sampling interval: its command lengths. */
struct vgpu_neon_profile {
	uint64_t busy_ns;   /* time with pending work */
	uint64_t commands;  /* busy segments begun */
	uint64_t last_ns;   /* the previous sample */
	int32_t last_channel;
	bool last_busy;
};

/* Start with the interval's first sample (a command already running then
 * counts as one). */
void vgpu_neon_profile_begin(struct vgpu_neon_profile *profile,
                             const struct vgpu_gpu_time_sample *first);
/* Account one sample (time order; an older one counts as taken at the
 * previous one's time). */
void vgpu_neon_profile_observe(struct vgpu_neon_profile *profile,
                               const struct vgpu_gpu_time_sample *sample);
/* The caller counted `entries` fetched during the interval: the command
 * count is the larger of that and the busy segments. */
void vgpu_neon_profile_fetched(struct vgpu_neon_profile *profile, uint64_t entries);
/* The average command length (busy ÷ commands), 0 when none was seen. */
uint64_t vgpu_neon_profile_average(const struct vgpu_neon_profile *profile);

/*
 * NEON's estimate: avg_ns[i] is VM i's average command length in the last
 * sampling phase (0: no command, inactive). Sets out_ns[i] to
 * period_ns × avg_ns[i] ÷ Σ avg_ns (0 for inactive VMs; all 0 when none
 * was active). Rounded down; Σ out_ns <= period_ns.
 */
void vgpu_neon_estimate(const uint64_t *avg_ns, size_t count, uint64_t period_ns,
                        uint64_t *out_ns);

#endif /* VGPU_CORE_GPU_NEON_H */
