/* SPDX-License-Identifier: MIT */
/*
 * gpu_time.h - GPU time per channel from context switches (LoGA §3.3, §4.1).
 *
 * The accounting thread reads two things the GPU exposes to the host: the
 * compute engine's "current channel" status register and that channel's
 * pending-work bit (the channel table's status, LoGA §4.1). It reads them
 * in a busy loop during a short polling phase, then sleeps through a longer
 * non-polling phase. This module holds the pure parts, so a unit test can
 * drive them with a synthetic trace:
 *
 *  - a polling phase turns samples into time per channel: each change of
 *    what the engine runs (another channel, or work appearing or draining)
 *    closes a segment, and the segment's time goes to the channel that ran
 *    it, or to nobody when the current channel had no work pending (idle).
 *    A command longer than the whole phase shows no change at all; its
 *    channel gets the whole phase (LoGA §3.3), which falls out of the same
 *    rule because the open segment is closed at the end of the phase.
 *  - a gap between two samples longer than the phase's max_gap_ns means the
 *    polling thread did not run (the host preempted it): nobody saw what
 *    the engine did meanwhile, so the gap is "blind" time, accounted to no
 *    one and left out of the observed time; the open segment ends at the
 *    last sample before the gap. Like a non-polling phase, it is covered by
 *    extrapolation instead of being given to whatever ran at either end.
 *  - a per-channel estimate for the whole period (polling + non-polling) is
 *    the polled share extrapolated (vgpu_gpu_time_extrapolate) over the
 *    observed time.
 *  - phase lengths grow linearly with the number of channels (each channel
 *    must be seen switching in and out) and are randomised around their
 *    means so that a periodic workload is not sampled in phase with itself
 *    (LoGA §3.3); the means stay the configured ones.
 *
 * Nothing here reads a clock, a GPU or a lock: times come in the samples.
 */
#ifndef VGPU_CORE_GPU_TIME_H
#define VGPU_CORE_GPU_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"

/* One read of the compute engine's status. */
struct vgpu_gpu_time_sample {
	uint64_t t_ns;   /* when it was read (any monotonic clock) */
	int32_t channel; /* current channel id, or -1: none */
	bool pending;    /* the current channel has work executing or queued */
};

/*
 * The accounting of one polling phase. channel_ns[] is the caller's, indexed
 * by channel id and zeroed by vgpu_gpu_time_phase_begin; time of a channel id
 * outside [0, channel_count) goes to other_ns, so a channel created during
 * the phase is never lost, only not attributed.
 */
struct vgpu_gpu_time_phase {
	uint64_t *channel_ns;
	uint32_t channel_count;
	uint64_t other_ns;  /* busy time of channels beyond channel_count */
	uint64_t idle_ns;   /* no channel, or the current one had no work */
	uint64_t blind_ns;  /* gaps longer than max_gap_ns between samples */
	uint32_t blind_gaps;
	uint64_t max_gap_ns; /* 0 (begin's default): no gap is blind */
	uint64_t start_ns;
	uint64_t end_ns;    /* set by vgpu_gpu_time_phase_end */
	uint32_t switches;  /* changes of the current channel seen */
	uint64_t samples;
	/* the open segment: what ran since seg_start_ns */
	uint64_t seg_start_ns;
	int32_t seg_channel;
	bool seg_busy;
	uint64_t last_t_ns; /* the latest sample's time */
};

/* Samples further apart than this: the poller was not running (the
 * accounting thread's default; a busy poll reads every few hundred ns). */
#define VGPU_GPU_TIME_DEFAULT_MAX_GAP_NS 50000ull

/* Start a phase with its first sample (which opens the first segment). */
void vgpu_gpu_time_phase_begin(struct vgpu_gpu_time_phase *phase, uint64_t *channel_ns,
                               uint32_t channel_count, const struct vgpu_gpu_time_sample *first);

/* Account one sample. Samples come in time order; one older than the open
 * segment is treated as taken at the segment's start. */
void vgpu_gpu_time_phase_observe(struct vgpu_gpu_time_phase *phase,
                                 const struct vgpu_gpu_time_sample *sample);

/* Close the phase at t_ns (normally the last sample's time): the open
 * segment is accounted up to t_ns. Afterwards Σ channel_ns + other_ns +
 * idle_ns + blind_ns = end_ns - start_ns. */
void vgpu_gpu_time_phase_end(struct vgpu_gpu_time_phase *phase, uint64_t t_ns);

/* The phase's length (end - start), 0 before vgpu_gpu_time_phase_end. */
uint64_t vgpu_gpu_time_phase_length(const struct vgpu_gpu_time_phase *phase);

/* The time the phase observed: its length less blind_ns. */
uint64_t vgpu_gpu_time_phase_observed(const struct vgpu_gpu_time_phase *phase);

/* polled_ns seen in a polling phase of poll_ns, extrapolated to a period of
 * period_ns (polled_ns × period_ns ÷ poll_ns, rounded to nearest, exact for
 * any 64-bit inputs; saturates at UINT64_MAX). poll_ns = 0 gives 0. */
uint64_t vgpu_gpu_time_extrapolate(uint64_t polled_ns, uint64_t poll_ns, uint64_t period_ns);

/* Lengths of the polling and non-polling phases. */
struct vgpu_gpu_time_config {
	uint64_t poll_ns_per_channel;    /* default 1 ms (LoGA §5.1) */
	uint64_t nonpoll_ns_per_channel; /* default 5 ms */
	uint32_t jitter_percent;         /* lengths uniform in mean ± this %, 0..90; default 50 */
};

#define VGPU_GPU_TIME_DEFAULT_POLL_NS    1000000ull
#define VGPU_GPU_TIME_DEFAULT_NONPOLL_NS 5000000ull
#define VGPU_GPU_TIME_DEFAULT_JITTER     50u
#define VGPU_GPU_TIME_MAX_JITTER         90u

void vgpu_gpu_time_config_default(struct vgpu_gpu_time_config *config);

/* -EINVAL when a length is 0 or the jitter exceeds VGPU_GPU_TIME_MAX_JITTER. */
int vgpu_gpu_time_config_check(const struct vgpu_gpu_time_config *config);

/* The next phase pair for `channels` channels (0 counts as 1): means
 * channels × the per-channel lengths, each drawn uniformly within ±jitter %
 * of its mean (so the means, and the ratio on average, are the configured
 * ones). rng may be NULL for the exact means. */
void vgpu_gpu_time_phase_lengths(const struct vgpu_gpu_time_config *config, uint32_t channels,
                                 struct vgpu_rng *rng, uint64_t *poll_ns, uint64_t *nonpoll_ns);

#endif /* VGPU_CORE_GPU_TIME_H */
