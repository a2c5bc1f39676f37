// SPDX-License-Identifier: MIT
/*
 * gpu_accounting_neon.c - the accounting thread in NEON's sampling mode
 * (config.accounting_mode = VGPU_ACCOUNTING_NEON); see gpu_accounting.h
 * for the phases and gpu_neon.h for the estimate.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "core_internal.h"
#include "gpu_neon.h"
#include "lock.h"

/* With no channel, look again this often. */
#define IDLE_CHECK_NS 20000000ull
/* How long a resume may wait for the GPU to take the NOP fill; one that
 * does not make it stays suspended and is tried again later. */
#define RESUME_TIMEOUT_MS 20

static uint32_t vm_channel_count(struct vgpu_vm *vm)
{
	struct list_head *pos;
	uint32_t count = 0;

	list_for_each(pos, &vm->channels)
		count++;
	return count;
}

/* The index-th VM of the core's list, or NULL. */
static struct vgpu_vm *nth_vm_locked(struct vgpu_core *core, size_t index)
{
	struct list_head *pos;

	vgpu_core_assert_locked(core);
	list_for_each(pos, &core->vms) {
		if (!index--)
			return list_entry(pos, struct vgpu_vm, link);
	}
	return NULL;
}

static void suspend_vm_locked(struct vgpu_vm *vm)
{
	struct list_head *pos;

	vgpu_core_assert_locked(vm->core);
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		/* -EALREADY: throttled (or suspended for sampling) already */
		if (vgpu_shadow_suspend(channel->shadow) == 0)
			vm->gpu.neon_suspended = true;
	}
}

static void resume_vm_locked(struct vgpu_vm *vm)
{
	struct vgpu_shadow_channel *shadows[16] = { NULL }, **all = shadows;
	uint32_t count = vm_channel_count(vm);
	struct list_head *pos;
	size_t i = 0;

	vgpu_core_assert_locked(vm->core);
	if (!vm->gpu.neon_suspended)
		return;
	if (count > 16) {
		all = calloc(count, sizeof(*all));
		if (!all)
			return; /* stays suspended; tried again at the freerun */
	}
	list_for_each(pos, &vm->channels)
		all[i++] = list_entry(pos, struct vgpu_core_channel, link)->shadow;
	/* -EIO: a channel was killed meanwhile; resumed all the same */
	if (vgpu_shadow_resume_all(all, count, RESUME_TIMEOUT_MS) != -ETIMEDOUT)
		vm->gpu.neon_suspended = false;
	if (all != shadows)
		free(all);
}

static void resume_all(struct vgpu_core *core)
{
	struct list_head *pos;

	vgpu_core_lock(core);
	list_for_each(pos, &core->vms)
		resume_vm_locked(list_entry(pos, struct vgpu_vm, link));
	vgpu_core_unlock(core);
}

/* The draining phase: poll until the GPU has no pending work, at most
 * limit_ns. */
static void drain(struct vgpu_core *core, uint64_t limit_ns, uint64_t *samples)
{
	struct vgpu_gpu_time_sample sample;
	uint64_t end;

	vgpu_acct_read_status(core->hal, &sample);
	end = sample.t_ns + limit_ns;
	while (sample.pending && sample.t_ns < end) {
		vgpu_acct_read_status(core->hal, &sample);
		(*samples)++;
	}
}

/* The sampled VM's channels whose fetches are counted. */
#define MAX_COUNTED 64

struct fetch_counter {
	const struct vgpu_vm *vm;
	uint32_t ids[MAX_COUNTED];
	uint32_t last[MAX_COUNTED];
	size_t count;
	uint64_t fetched;
};

/* Read the VM's channels' GP_GET and count the entries fetched since the
 * last read (one for an unknown step back: a wrap). The table lock keeps
 * each channel alive while it is read; a destroyed (or reused) id is
 * skipped. */
static void count_fetches(struct vgpu_core *core, struct fetch_counter *counter, bool first)
{
	vgpu_mutex_lock(&core->channels_lock);
	for (size_t i = 0; i < counter->count; i++) {
		struct vgpu_core_channel *channel = core->channel_table[counter->ids[i]];
		uint32_t gp_get;

		if (!channel || channel->vm != counter->vm)
			continue;
		gp_get = vgpu_hal_channel_gp_get(channel->hal);
		if (!first && gp_get != counter->last[i])
			counter->fetched += gp_get > counter->last[i] ? gp_get - counter->last[i] : 1;
		counter->last[i] = gp_get;
	}
	vgpu_mutex_unlock(&core->channels_lock);
}

/* One VM alone for interval_ns: its average command length, with the
 * commands counted from its channels' fetches as NEON counts completions,
 * and from the pending bit's busy segments. */
static uint64_t profile_alone(struct vgpu_core *core, struct fetch_counter *counter,
                              uint64_t interval_ns, uint64_t *samples)
{
	struct vgpu_neon_profile profile;
	struct vgpu_gpu_time_sample sample;
	uint64_t end;

	count_fetches(core, counter, true);
	vgpu_acct_read_status(core->hal, &sample);
	vgpu_neon_profile_begin(&profile, &sample);
	end = sample.t_ns + interval_ns;
	do {
		vgpu_acct_read_status(core->hal, &sample);
		vgpu_neon_profile_observe(&profile, &sample);
		count_fetches(core, counter, false);
		(*samples)++;
	} while (sample.t_ns < end);
	vgpu_neon_profile_fetched(&profile, counter->fetched);
	return vgpu_neon_profile_average(&profile);
}

/* The sampling phase after the drain: each VM alone in turn, and the GPU
 * drained again after each (at most drain_ns), so that no VM's command
 * runs into the next one's interval. */
static void sample_each(struct vgpu_core *core, uint32_t channels, uint64_t poll_ns,
                        uint64_t drain_ns, uint64_t *samples)
{
	for (size_t index = 0;; index++) {
		struct fetch_counter counter = { .count = 0 };
		struct list_head *pos;
		struct vgpu_vm *vm;
		uint32_t own;
		uint64_t avg;

		vgpu_core_lock(core);
		vm = nth_vm_locked(core, index);
		if (!vm) {
			vgpu_core_unlock(core);
			return;
		}
		own = vm_channel_count(vm);
		vm->gpu.neon_avg_ns = 0;
		if (!own) {
			vgpu_core_unlock(core);
			continue;
		}
		counter.vm = vm;
		list_for_each(pos, &vm->channels) {
			if (counter.count == MAX_COUNTED)
				break;
			counter.ids[counter.count++] =
				list_entry(pos, struct vgpu_core_channel, link)->id;
		}
		resume_vm_locked(vm);
		vgpu_core_unlock(core);
		avg = profile_alone(core, &counter, poll_ns * own / (channels ? channels : 1),
		                    samples);
		vgpu_core_lock(core);
		/* the VM may have gone meanwhile: only the same one at the same
		 * place is suspended again */
		if (nth_vm_locked(core, index) == vm) {
			vm->gpu.neon_avg_ns = avg;
			suspend_vm_locked(vm);
		}
		vgpu_core_unlock(core);
		drain(core, drain_ns, samples);
	}
}

/* NEON's estimate over the sampling phase into every VM's polled_ns (the
 * scheduler extrapolates it over the freerun like a polled time). */
static void estimate(struct vgpu_core *core, uint64_t sampling_ns)
{
	struct list_head *pos;
	uint64_t *avg, *est;
	size_t count = 0, i = 0;

	vgpu_mutex_lock(&core->stats.lock);
	list_for_each(pos, &core->vms)
		count++;
	avg = calloc(count ? count : 1, sizeof(*avg));
	est = calloc(count ? count : 1, sizeof(*est));
	if (avg && est) {
		list_for_each(pos, &core->vms)
			avg[i++] = list_entry(pos, struct vgpu_vm, link)->gpu.neon_avg_ns;
		vgpu_neon_estimate(avg, count, sampling_ns, est);
		i = 0;
		list_for_each(pos, &core->vms)
			list_entry(pos, struct vgpu_vm, link)->gpu.polled_ns = est[i++];
	}
	vgpu_mutex_unlock(&core->stats.lock);
	free(avg);
	free(est);
}

void *vgpu_accounting_neon_thread(void *arg)
{
	struct vgpu_core *core = arg;
	struct vgpu_gpu_accounting *acct = &core->accounting;
	uint64_t last_end = 0;
	bool any_throttled = false;

	while (!vgpu_acct_should_stop(acct)) {
		struct vgpu_sched_period period;
		uint32_t channels = vgpu_acct_live_channels(core);
		uint64_t poll_ns, freerun_ns, start, samples = 0;
		bool want;

		if (!channels) {
			if (any_throttled)
				any_throttled = vgpu_acct_apply_throttles(core, false);
			last_end = 0;
			vgpu_acct_sleep_ns(acct, IDLE_CHECK_NS);
			continue;
		}
		vgpu_gpu_time_phase_lengths(&acct->time, channels, &acct->rng, &poll_ns,
		                            &freerun_ns);
		start = vgpu_core_now_ns();
		/* sampling: everyone suspended, then sampled alone (the
		 * throttled too: NEON measures every application) */
		if (any_throttled)
			any_throttled = vgpu_acct_apply_throttles(core, false);
		vgpu_core_lock(core);
		for (size_t i = 0;; i++) {
			struct vgpu_vm *vm = nth_vm_locked(core, i);

			if (!vm)
				break;
			suspend_vm_locked(vm);
		}
		vgpu_core_unlock(core);
		drain(core, freerun_ns, &samples);
		sample_each(core, channels, poll_ns, freerun_ns, &samples);
		period.nonpoll_before_ns = last_end ? start - last_end : 0;
		last_end = vgpu_core_now_ns();
		period.poll_ns = last_end - start;
		period.nonpoll_next_ns = freerun_ns;
		estimate(core, period.poll_ns);
		want = vgpu_acct_decide(core, &period);
		vgpu_mutex_lock(&core->stats.lock);
		acct->samples += samples;
		vgpu_mutex_unlock(&core->stats.lock);
		/* freerun: everyone back but the over-users */
		resume_all(core);
		if (want || any_throttled)
			any_throttled = vgpu_acct_apply_throttles(core, true);
		vgpu_acct_sleep_ns(acct, freerun_ns);
	}
	resume_all(core);
	if (any_throttled)
		vgpu_acct_apply_throttles(core, false);
	return NULL;
}
