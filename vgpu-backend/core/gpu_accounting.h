/* SPDX-License-Identifier: MIT */
/*
 * gpu_accounting.h - the accounting thread of one GPU (LoGA §4.1-4.2): GPU
 * time per VM from the HAL's status reads, and shares enforced by
 * suspending an over-user's channels.
 *
 * One thread per core (per GPU) alternates
 *   polling phase      a busy loop reading the compute engine's current
 *                      channel (vgpu_hal_engine_current_channel) and that
 *                      channel's pending bit (vgpu_hal_channel_pending),
 *                      fed to gpu_time.c: time per channel id;
 *   decision           channel id -> VM through the core's channel table,
 *                      per-VM polled time into gpu_sched.c, which estimates
 *                      each VM's GPU time over the period (extrapolated),
 *                      its share, and who is throttled next;
 *   non-polling phase  a sleep, during which the VMs decided on are
 *                      suspended with the shadow-window suspend relocation
 *                      uses (the guest keeps submitting into its shadow and
 *                      never blocks); they are resumed when the next
 *                      polling phase starts, so every VM runs, and is
 *                      measured, in every polling phase. A suspended
 *                      channel still runs what it had queued (GPUs cannot
 *                      stop submitted work, LoGA §4.3): the thread keeps
 *                      polling at the start of the phase until the
 *                      throttled channels have no work pending (at most the
 *                      whole phase) and charges that residue to their VMs,
 *                      then sleeps the rest.
 * The lengths come from vgpu_gpu_time_phase_lengths with the number of live
 * channels (randomised around the configured means). With no channel the
 * thread only sleeps. It reads nothing but those two HAL registers: no busy
 * counters, no modeled clock.
 *
 * Sampled phases (unless config.accounting_always_poll): polling exists to
 * split the GPU's time between VMs and to throttle over-users. When a
 * polling phase saw at most one VM use the GPU, at most one VM has work
 * pending at its end, nobody is throttled and no fixed-share VM is capped
 * below the whole GPU (fixed-share beside another scheduled VM), there is
 * nothing to split and nobody to throttle: the thread then reads the same
 * two registers once per SAMPLE gap (uniform in 0.5 .. 1.5 ms, so no
 * periodic workload is sampled in phase) instead of busy-looping, and
 * feeds the samples to the same gpu_time.c accounting, each gap charged to
 * what the engine ran at its start (unbiased, as the gaps are random), and
 * the same scheduler: a period of SAMPLED_PERIOD samples (about 16 ms) is
 * one decision with no non-polling phase. Each sample also reads every
 * live channel's pending bit; the first sample that finds a channel of a
 * second VM with work (or the scheduler wanting a throttle, or a fixed-
 * share cap appearing) ends the sampled period there and a polling phase
 * starts at once. The CPU cost is a wakeup a millisecond instead of a sixth
 * of a core; published as sampled_ns beside poll_ns.
 *
 * Locks: the thread never holds the allocation lock while it polls or
 * sleeps. It takes the channel table's lock to map channel ids, the short
 * stats lock to run the scheduler and publish (readers never wait for it
 * longer than that), and the allocation lock only around suspending and
 * resuming channels (core->lock serialises this against relocation: a
 * relocation that finds a throttled channel suspended takes it over and
 * resumes it with the VM's other channels, which ends the throttling).
 */
#ifndef VGPU_CORE_GPU_ACCOUNTING_H
#define VGPU_CORE_GPU_ACCOUNTING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpu_sched.h"
#include "gpu_time.h"
#include "rng.h"

struct vgpu_core;
struct vgpu_vm;

/* The thread's state, in struct vgpu_core. */
struct vgpu_gpu_accounting {
	struct vgpu_gpu_time_config time;
	pthread_t thread;
	bool started;
	pthread_mutex_t mutex; /* guards stop */
	pthread_cond_t cond;
	bool stop;
	struct vgpu_rng rng;    /* phase lengths; accounting thread */
	uint64_t *channel_ns;   /* per channel id, one polling phase */
	uint32_t *throttled_ids; /* channels suspended for the coming phase */
	uint32_t throttled_count;
	struct vgpu_sched sched;     /* stats_lock */
	struct vgpu_sched_vm *scratch; /* the update's array; stats_lock */
	size_t scratch_capacity;
	/* published under stats_lock */
	uint64_t periods;
	uint64_t poll_ns;       /* Σ polling phases (the thread's CPU time) */
	uint64_t nonpoll_ns;    /* Σ non-polling phases */
	uint64_t residue_ns;    /* Σ polling at their starts (residues) */
	uint64_t sampled_ns;    /* Σ sampled phases (no busy loop) */
	uint64_t samples;
	/* sampled phases: live channels' ids and their VMs' ids, a snapshot
	 * of the channel table per sample; accounting thread */
	uint32_t *snapshot_ids;
	uint32_t *snapshot_vms;
};

/* Per VM, in struct vgpu_vm. */
struct vgpu_vm_gpu_time {
	struct vgpu_sched_vm sched;  /* stats_lock */
	uint64_t polled_ns;          /* this polling phase; accounting thread */
	uint64_t residue_ns;         /* throttled: what its queued work used of
	                                the non-polling phase; accounting thread */
	uint64_t gpu_time_ns;        /* Σ estimates; stats_lock */
	uint32_t share_ppm;          /* of the last period; stats_lock */
	bool throttled;              /* its channels are suspended for it;
	                                allocation lock (copied for readers
	                                under stats_lock: shown_throttled) */
	bool shown_throttled;        /* stats_lock */
	uint64_t throttle_start_ns;  /* allocation lock */
	uint64_t throttled_ns;       /* wall time throttled, ended ones; stats_lock */
	uint64_t throttles;          /* stats_lock */
	/* NEON mode (gpu_accounting_neon.c) */
	uint64_t neon_avg_ns;        /* average command length in the last
	                                sampling phase; accounting thread */
	bool neon_suspended;         /* its channels are suspended for the
	                                sampling phase; allocation lock */
};

/* Start the thread (core->config.gpu_accounting), in LoGA's or NEON's mode
 * (config.accounting_mode). 0 or a negative errno. */
int vgpu_accounting_start(struct vgpu_core *core);
/* Stop it, resuming every VM it throttled. Safe if never started. */
void vgpu_accounting_stop(struct vgpu_core *core);

/* A relocation took over vm's throttled channels (found them suspended)
 * and resumed them: the VM is no longer throttled. Allocation lock held. */
void vgpu_accounting_vm_resumed_locked(struct vgpu_vm *vm);

/*
 * NEON's sampling accounting (config.accounting_mode = VGPU_ACCOUNTING_NEON,
 * gpu_accounting_neon.c; LoGA §2.3, Fig. 4), the baseline LoGA is measured
 * against. Each period is
 *   sampling phase  every VM's channels suspended (the same shadow-window
 *                   suspend), the GPU drained (polled until no work is
 *                   pending, at most one freerun length), then each VM in
 *                   turn resumed alone for the polling length × its share
 *                   of the channels while the thread measures its command
 *                   lengths (gpu_neon.h: the same two HAL registers, and
 *                   its channels' GP_GET to count commands), suspended
 *                   again and the GPU drained again;
 *   decision        each VM's GPU time over the period estimated from its
 *                   average command length (vgpu_neon_estimate over the
 *                   period), fed to gpu_sched.c as its used time for the
 *                   same fair-queuing and fixed-share decisions;
 *   freerun phase   every VM resumed but those throttled; nothing measured.
 * The other VMs stand still during the whole sampling phase: that is the
 * overhead LoGA removes (§5.3). Shared helpers of the two modes follow.
 */
void *vgpu_accounting_neon_thread(void *arg);
bool vgpu_acct_should_stop(struct vgpu_gpu_accounting *acct);
void vgpu_acct_sleep_ns(struct vgpu_gpu_accounting *acct, uint64_t ns);
uint32_t vgpu_acct_live_channels(struct vgpu_core *core);
struct vgpu_hal;
void vgpu_acct_read_status(struct vgpu_hal *hal, struct vgpu_gpu_time_sample *sample);
/* Run the scheduler over every VM's polled_ns and publish; true when some
 * VM is to be throttled. */
bool vgpu_acct_decide(struct vgpu_core *core, const struct vgpu_sched_period *period);
/* Suspend the VMs the scheduler throttled (enforce) or resume all the
 * thread throttled; true when some VM is throttled afterwards. */
bool vgpu_acct_apply_throttles(struct vgpu_core *core, bool enforce);

#endif /* VGPU_CORE_GPU_ACCOUNTING_H */
