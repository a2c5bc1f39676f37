// SPDX-License-Identifier: MIT
/* gpu_sched.c - disengaged fair queuing and fixed shares, see gpu_sched.h. */
#include <errno.h>
#include <string.h>

#include "gpu_sched.h"

static const char *const mode_names[VGPU_SCHED_MODE_COUNT] = {
	[VGPU_SCHED_BEST_EFFORT] = "best-effort",
	[VGPU_SCHED_EQUAL_SHARE] = "equal-share",
	[VGPU_SCHED_WEIGHTED] = "weighted",
	[VGPU_SCHED_FIXED_SHARE] = "fixed-share",
};

/* The most debt a fixed-share VM carries, in periods. */
#define FIXED_SHARE_MAX_DEBT_PERIODS 16.0

const char *vgpu_sched_mode_name(enum vgpu_sched_mode mode)
{
	return (unsigned)mode < VGPU_SCHED_MODE_COUNT ? mode_names[mode] : "unknown";
}

int vgpu_sched_mode_parse(const char *name, enum vgpu_sched_mode *mode)
{
	for (unsigned i = 0; i < VGPU_SCHED_MODE_COUNT; i++) {
		if (strcmp(name, mode_names[i]) == 0) {
			*mode = (enum vgpu_sched_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

void vgpu_sched_init(struct vgpu_sched *sched)
{
	sched->sys_ns = 0;
}

void vgpu_sched_vm_init(const struct vgpu_sched *sched, struct vgpu_sched_vm *vm,
                        enum vgpu_sched_mode mode, uint32_t weight)
{
	memset(vm, 0, sizeof(*vm));
	vm->mode = mode;
	vm->weight = weight;
	vm->vtime_ns = sched->sys_ns;
}

static double weight_of(const struct vgpu_sched_vm *vm)
{
	if (vm->mode == VGPU_SCHED_EQUAL_SHARE || !vm->weight)
		return 1.0;
	return vm->weight;
}

static bool fair_queued(const struct vgpu_sched_vm *vm)
{
	return vm->mode == VGPU_SCHED_EQUAL_SHARE || vm->mode == VGPU_SCHED_WEIGHTED;
}

static uint64_t clamp_u64(double value)
{
	if (value <= 0)
		return 0;
	return value >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)value;
}

/* est for every VM (see the header), from the throttled flags of the
 * non-polling phase just past. Returns Σ est. */
static double estimate_period(struct vgpu_sched_vm *vms, size_t count, uint64_t poll_ns,
                              uint64_t nonpoll_ns)
{
	double busy = 0, busy_ran = 0, total = 0, residue = 0, nonpoll_ran;

	for (size_t i = 0; i < count; i++) {
		busy += (double)vms[i].used_ns;
		if (!vms[i].throttled)
			busy_ran += (double)vms[i].used_ns;
		else
			residue += (double)vms[i].residue_ns;
	}
	nonpoll_ran = (double)nonpoll_ns > residue ? (double)nonpoll_ns - residue : 0;
	for (size_t i = 0; i < count; i++) {
		double est = (double)vms[i].used_ns;

		if (vms[i].throttled)
			est += (double)vms[i].residue_ns;
		else if (busy_ran > 0 && poll_ns)
			est += nonpoll_ran * ((double)vms[i].used_ns / (double)poll_ns) *
			       (busy / busy_ran);
		vms[i].estimate_ns = clamp_u64(est);
		total += est;
	}
	return total;
}

static void update_fair_queuing(struct vgpu_sched *sched, struct vgpu_sched_vm *vms, size_t count,
                                double est_total, uint64_t period)
{
	double wsum = 0, n = 0;
	uint64_t sys = UINT64_MAX;

	for (size_t i = 0; i < count; i++) {
		if (fair_queued(&vms[i]) && vms[i].active) {
			wsum += weight_of(&vms[i]);
			n++;
		}
	}
	for (size_t i = 0; i < count && est_total > 0; i++) {
		struct vgpu_sched_vm *vm = &vms[i];
		double step;

		if (!fair_queued(vm) || !vm->active)
			continue;
		step = (double)vm->estimate_ns / est_total * (double)period * (wsum / n) /
		       weight_of(vm);
		vm->vtime_ns = clamp_u64((double)vm->vtime_ns + step);
	}
	for (size_t i = 0; i < count; i++) {
		if (fair_queued(&vms[i]) && vms[i].active && vms[i].vtime_ns < sys)
			sys = vms[i].vtime_ns;
	}
	if (n > 0 && sys > sched->sys_ns)
		sched->sys_ns = sys;
	for (size_t i = 0; i < count; i++) {
		struct vgpu_sched_vm *vm = &vms[i];

		if (!fair_queued(vm))
			continue;
		if (!vm->active && vm->vtime_ns < sched->sys_ns)
			vm->vtime_ns = sched->sys_ns;
		vm->throttled = vm->vtime_ns - sched->sys_ns > period;
	}
}

static void update_fixed_share(struct vgpu_sched_vm *vms, size_t count, uint64_t period)
{
	double wsum = 0;
	double max_debt = -(double)period * FIXED_SHARE_MAX_DEBT_PERIODS;

	for (size_t i = 0; i < count; i++) {
		if (vms[i].mode != VGPU_SCHED_BEST_EFFORT)
			wsum += weight_of(&vms[i]);
	}
	for (size_t i = 0; i < count; i++) {
		struct vgpu_sched_vm *vm = &vms[i];
		double share, credit;

		if (vm->mode != VGPU_SCHED_FIXED_SHARE)
			continue;
		share = (double)period * weight_of(vm) / wsum;
		credit = (double)vm->credit_ns + share - (double)vm->estimate_ns;
		if (credit > share)
			credit = share;
		if (credit < max_debt)
			credit = max_debt;
		vm->credit_ns = (int64_t)credit;
		vm->throttled = vm->credit_ns < 0;
	}
}

void vgpu_sched_update(struct vgpu_sched *sched, struct vgpu_sched_vm *vms, size_t count,
                       const struct vgpu_sched_period *period)
{
	uint64_t length = period->nonpoll_before_ns + period->poll_ns;
	double est_total = estimate_period(vms, count, period->poll_ns, period->nonpoll_before_ns);

	for (size_t i = 0; i < count; i++) {
		if (vms[i].mode == VGPU_SCHED_BEST_EFFORT)
			vms[i].throttled = false;
	}
	update_fair_queuing(sched, vms, count, est_total, length);
	update_fixed_share(vms, count, length);
	for (size_t i = 0; i < count; i++) {
		if (vms[i].throttled && vms[i].throttled_ns <= UINT64_MAX - period->nonpoll_next_ns)
			vms[i].throttled_ns += period->nonpoll_next_ns;
	}
}
