/* SPDX-License-Identifier: MIT */
/*
 * gpu_sched.h - shares of GPU time: disengaged fair queuing (LoGA §3.4,
 * NEON's algorithm) and a fixed-share budget, decided once per period.
 *
 * A period is one non-polling phase followed by one polling phase. At the
 * end of each polling phase the caller fills in, per VM, the GPU time the
 * accounting saw it use during that phase (gpu_time.h) and whether it had
 * work, and calls vgpu_sched_update. The answer is, per VM, whether to
 * suspend its channels for the coming non-polling phase (the caller does it
 * with the shadow-window suspend the relocation path already has, so a
 * throttled guest keeps submitting into its shadow and never blocks). All
 * VMs run in every polling phase, so what they do is always measured.
 *
 * Modes, as operators know them from vGPU schedulers:
 *  - best-effort:  never throttled and not part of anyone's share.
 *  - equal-share:  disengaged fair queuing with weight 1.
 *  - weighted:     disengaged fair queuing with the VM's weight.
 *  - fixed-share:  never more than weight ÷ Σ weights of all scheduled
 *                  (non-best-effort) VMs, active or not, even when the GPU
 *                  is otherwise idle.
 *
 * Each VM's GPU time over the period just ended is estimated from the
 * polling phase: what it used there, plus its share of the non-polling
 * phase. LoGA extrapolates the polled share to the whole period; that
 * counts a VM throttled in the non-polling phase as if it had run there,
 * and the GPU time it could not use goes to nobody, so a throttled VM's
 * virtual time runs away and it stays throttled. Here a throttled VM is
 * charged what it was measured to use in the non-polling phase (residue_ns:
 * the work it had queued before the suspension, which the GPU still runs;
 * LoGA §4.3), and the rest of the non-polling phase is shared among the
 * VMs that ran in it, scaled so that the GPU is as busy as in the polling
 * phase:
 *     est = t_app + (t_nonpoll - Σ residue) × t_app ÷ t_poll × (t_busy ÷ t_busy_ran)
 * for a VM that was not throttled (t_busy: all VMs' polled time, t_busy_ran:
 * that of the VMs not throttled), est = t_app + residue for one that was.
 * Without throttling this is LoGA's extrapolation exactly.
 *
 * Fair queuing (equal-share and weighted VMs, together): each active VM's
 * virtual time advances by
 *     Δvt = est ÷ est_total × (t_poll + t_nonpoll) × (W ÷ n) ÷ w
 * where est_total is Σ est over all VMs, w the VM's weight (1 in
 * equal-share), and W ÷ n the mean weight of the active fair-queued VMs
 * (with equal weights and no throttling this is LoGA's rule,
 * Δvt = t_app ÷ t_total × (t_poll + t_nonpoll)). The system time t_sys is
 * the smallest virtual time among the VMs active in the polling phase; an
 * idle VM behind t_sys is moved up to it, so idle time is not saved up. A
 * VM more than one period ahead of t_sys is throttled for the next
 * non-polling phase.
 *
 * Fixed share: a credit grows by share × period each period and shrinks by
 * the VM's estimate; negative credit throttles the next non-polling phase.
 * The credit never exceeds one period's share (no saving up) and a debt is
 * forgotten beyond 16 periods (one very long command throttles a VM for a
 * while, not forever). Since every VM runs in the polling phases, a share
 * below t_poll ÷ (t_poll + t_nonpoll) (1/6 with the defaults) cannot be held
 * against a VM that keeps the GPU busy; it is then throttled in every
 * non-polling phase, the most this mechanism can do.
 *
 * Pure: no clock, no lock, no GPU. The caller serialises updates.
 */
#ifndef VGPU_CORE_GPU_SCHED_H
#define VGPU_CORE_GPU_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vgpu_sched_mode {
	VGPU_SCHED_BEST_EFFORT = 0,
	VGPU_SCHED_EQUAL_SHARE,
	VGPU_SCHED_WEIGHTED,
	VGPU_SCHED_FIXED_SHARE,
};
#define VGPU_SCHED_MODE_COUNT 4

/* "best-effort", "equal-share", "weighted", "fixed-share". */
const char *vgpu_sched_mode_name(enum vgpu_sched_mode mode);
/* 0, or -EINVAL for an unknown name. */
int vgpu_sched_mode_parse(const char *name, enum vgpu_sched_mode *mode);

struct vgpu_sched_vm {
	/* set by the caller before each update */
	enum vgpu_sched_mode mode;
	uint32_t weight;   /* > 0; 0 is taken as 1 */
	uint64_t used_ns;  /* GPU time accounted in the polling phase just ended */
	uint64_t residue_ns; /* throttled: GPU time it was measured to use in the
	                        non-polling phase before (its queued work) */
	bool active;       /* it had work in that polling phase */
	/* kept by vgpu_sched_update */
	uint64_t vtime_ns; /* fair queuing's virtual time */
	int64_t credit_ns; /* fixed share's budget */
	bool throttled;    /* suspend it for the coming non-polling phase (and,
	                      on input, whether it was for the phase just past) */
	uint64_t estimate_ns;  /* its GPU time in the period just ended */
	uint64_t throttled_ns; /* Σ non-polling phases it was throttled for */
};

struct vgpu_sched {
	uint64_t sys_ns; /* t_sys */
};

void vgpu_sched_init(struct vgpu_sched *sched);

/* A VM joining the scheduler starts at t_sys, with no fixed-share credit
 * and unthrottled. */
void vgpu_sched_vm_init(const struct vgpu_sched *sched, struct vgpu_sched_vm *vm,
                        enum vgpu_sched_mode mode, uint32_t weight);

/*
 * One decision, at the end of a polling phase. The period it accounts is the
 * non-polling phase before that polling phase (nonpoll_before_ns, 0 at the
 * first decision) and the polling phase itself (poll_ns); nonpoll_next_ns is
 * the non-polling phase the decision is for. Sets every VM's estimate_ns
 * and throttled flag, and adds nonpoll_next_ns to throttled_ns of those
 * throttled.
 */
struct vgpu_sched_period {
	uint64_t nonpoll_before_ns;
	uint64_t poll_ns;
	uint64_t nonpoll_next_ns;
};

void vgpu_sched_update(struct vgpu_sched *sched, struct vgpu_sched_vm *vms, size_t count,
                       const struct vgpu_sched_period *period);

#endif /* VGPU_CORE_GPU_SCHED_H */
