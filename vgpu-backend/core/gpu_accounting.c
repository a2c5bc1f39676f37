// SPDX-License-Identifier: MIT
/* gpu_accounting.c - the accounting thread of one GPU, see gpu_accounting.h. */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "core_internal.h"
#include "lock.h"

/* With no channel, look again this often. */
#define IDLE_CHECK_NS 20000000ull
/* A resume waits at most this long for the GPU to take the channel's NOP
 * fill (its pre-suspension work has normally run by then: see
 * residue_phase); one that does not make it stays suspended and is tried
 * again at the next phase change. */
#define RESUME_TIMEOUT_MS 20
/* Sampled phases (gpu_accounting.h): the mean gap between two status
 * reads (each drawn uniformly in half to one and a half of it), a gap
 * beyond which the thread did not run (blind: extrapolated over, as in a
 * polling phase), and the samples of one decision. */
#define SAMPLE_GAP_NS 1000000ull
#define SAMPLE_MAX_GAP_NS 10000000ull
#define SAMPLED_PERIOD 16
#define NO_VM UINT32_MAX

bool vgpu_acct_should_stop(struct vgpu_gpu_accounting *acct)
{
	bool stop;

	pthread_mutex_lock(&acct->mutex);
	stop = acct->stop;
	pthread_mutex_unlock(&acct->mutex);
	return stop;
}

/* Sleep ns (the non-polling phase), or less when asked to stop. */
void vgpu_acct_sleep_ns(struct vgpu_gpu_accounting *acct, uint64_t ns)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ns / 1000000000ull);
	until.tv_nsec += (long)(ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&acct->mutex);
	while (!acct->stop &&
	       pthread_cond_timedwait(&acct->cond, &acct->mutex, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&acct->mutex);
}

uint32_t vgpu_acct_live_channels(struct vgpu_core *core)
{
	uint32_t count = 0;

	vgpu_mutex_lock(&core->channels_lock);
	for (uint32_t id = 0; id < core->channel_table_size; id++)
		if (core->channel_table[id])
			count++;
	vgpu_mutex_unlock(&core->channels_lock);
	return count;
}

void vgpu_acct_read_status(struct vgpu_hal *hal, struct vgpu_gpu_time_sample *sample)
{
	sample->channel = vgpu_hal_engine_current_channel(hal, VGPU_ENGINE_COMPUTE);
	sample->pending = sample->channel >= 0 &&
	                  vgpu_hal_channel_pending(hal, (uint32_t)sample->channel);
	sample->t_ns = vgpu_core_now_ns();
}

/* The polling phase: a busy loop over the two status reads for poll_ns. */
static void poll_phase(struct vgpu_core *core, uint64_t poll_ns,
                       struct vgpu_gpu_time_phase *phase)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	struct vgpu_gpu_time_sample sample;
	uint64_t end;

	vgpu_acct_read_status(core->hal, &sample);
	vgpu_gpu_time_phase_begin(phase, acct->channel_ns, core->channel_table_size, &sample);
	phase->max_gap_ns = VGPU_GPU_TIME_DEFAULT_MAX_GAP_NS;
	end = sample.t_ns + poll_ns;
	do {
		vgpu_acct_read_status(core->hal, &sample);
		vgpu_gpu_time_phase_observe(phase, &sample);
	} while (sample.t_ns < end);
	vgpu_gpu_time_phase_end(phase, sample.t_ns);
}

/* Channel ids -> VMs: each VM's polled time. A channel destroyed since the
 * phase loses its time (its VM may be gone). Returns how many VMs got
 * time. */
static uint32_t attribute_channels(struct vgpu_core *core)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	uint32_t vms = 0;

	vgpu_mutex_lock(&core->channels_lock);
	for (uint32_t id = 0; id < core->channel_table_size; id++) {
		struct vgpu_core_channel *channel = core->channel_table[id];

		if (channel && acct->channel_ns[id]) {
			vms += !channel->vm->gpu.polled_ns; /* 0 after each decision */
			channel->vm->gpu.polled_ns += acct->channel_ns[id];
		}
	}
	vgpu_mutex_unlock(&core->channels_lock);
	return vms;
}

/* Run the scheduler over every VM and publish the figures; a sampled
 * period's length counts as sampled_ns, a polling phase's as poll_ns. True
 * when some VM is to be throttled. */
static bool decide(struct vgpu_core *core, const struct vgpu_sched_period *period, bool sampled)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	uint64_t length = period->nonpoll_before_ns + period->poll_ns;
	struct list_head *pos;
	size_t count = 0, i = 0;
	bool throttle = false;

	vgpu_mutex_lock(&core->stats.lock);
	list_for_each(pos, &core->vms)
		count++;
	if (count > acct->scratch_capacity) {
		struct vgpu_sched_vm *grown = realloc(acct->scratch, count * sizeof(*grown));

		if (!grown)
			goto out; /* this period goes unaccounted */
		acct->scratch = grown;
		acct->scratch_capacity = count;
	}
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);
		struct vgpu_sched_vm *s = &acct->scratch[i++];

		*s = vm->gpu.sched;
		s->weight = vm->published.weight;
		s->used_ns = vm->gpu.polled_ns;
		s->residue_ns = vm->gpu.residue_ns;
		s->active = vm->gpu.polled_ns > 0;
	}
	vgpu_sched_update(&acct->sched, acct->scratch, count, period);
	i = 0;
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);
		const struct vgpu_sched_vm *s = &acct->scratch[i++];

		vm->gpu.sched = *s;
		throttle |= s->throttled;
		vm->gpu.gpu_time_ns += s->estimate_ns;
		vm->gpu.share_ppm = length ? (uint32_t)((unsigned __int128)s->estimate_ns * 1000000u /
		                                        length)
		                           : 0;
	}
	acct->periods++;
	if (sampled)
		acct->sampled_ns += period->poll_ns;
	else
		acct->poll_ns += period->poll_ns;
	acct->nonpoll_ns += period->nonpoll_before_ns;
out:
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

		vm->gpu.polled_ns = 0;
		vm->gpu.residue_ns = 0;
	}
	vgpu_mutex_unlock(&core->stats.lock);
	return throttle;
}

bool vgpu_acct_decide(struct vgpu_core *core, const struct vgpu_sched_period *period)
{
	return decide(core, period, false);
}

static void throttle_vm_locked(struct vgpu_vm *vm)
{
	struct vgpu_gpu_accounting *acct = &vm->core->accounting;
	struct list_head *pos;

	vgpu_core_assert_locked(vm->core);
	if (vm->migration_stopped)
		return; /* stopped already; migration resumes it */
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		/* -EALREADY cannot happen (relocations end under the lock);
		 * another error leaves that channel running */
		if (vgpu_shadow_suspend(channel->shadow) == 0 &&
		    acct->throttled_count < vm->core->channel_table_size)
			acct->throttled_ids[acct->throttled_count++] = channel->id;
	}
	vm->gpu.throttled = true;
	vm->gpu.throttle_start_ns = vgpu_core_now_ns();
}

static void account_resumed_locked(struct vgpu_vm *vm)
{
	uint64_t ns = vgpu_core_now_ns() - vm->gpu.throttle_start_ns;

	vgpu_core_assert_locked(vm->core);
	vm->gpu.throttled = false;
	vgpu_mutex_lock(&vm->core->stats.lock);
	vm->gpu.throttled_ns += ns;
	vm->gpu.shown_throttled = false;
	vgpu_mutex_unlock(&vm->core->stats.lock);
}

/* 0 when resumed (or nothing to resume), -ETIMEDOUT to try again later. */
static int resume_vm_locked(struct vgpu_vm *vm)
{
	struct vgpu_shadow_channel *shadows[16], **all = shadows;
	struct list_head *pos;
	size_t count = 0, i = 0;
	int err;

	vgpu_core_assert_locked(vm->core);
	list_for_each(pos, &vm->channels)
		count++;
	if (count > 16) {
		all = calloc(count, sizeof(*all));
		if (!all)
			return -ETIMEDOUT;
	}
	list_for_each(pos, &vm->channels)
		all[i++] = list_entry(pos, struct vgpu_core_channel, link)->shadow;
	/* -EIO: a channel was killed meanwhile; resumed all the same */
	err = count ? vgpu_shadow_resume_all(all, count, RESUME_TIMEOUT_MS) : 0;
	if (all != shadows)
		free(all);
	if (err == -ETIMEDOUT)
		return err;
	account_resumed_locked(vm);
	return 0;
}

/*
 * Suspend the VMs the scheduler throttled (enforce) or resume every VM the
 * thread throttled (!enforce). Under the allocation lock, which a
 * relocation holds while it has a VM's channels suspended. True when some
 * VM is throttled afterwards.
 */
bool vgpu_acct_apply_throttles(struct vgpu_core *core, bool enforce)
{
	struct list_head *pos;
	bool any = false;

	vgpu_core_lock(core);
	core->accounting.throttled_count = 0;
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);
		bool want;

		vgpu_mutex_lock(&core->stats.lock);
		want = enforce && vm->gpu.sched.throttled;
		vgpu_mutex_unlock(&core->stats.lock);
		if (want && !vm->gpu.throttled && !list_empty(&vm->channels)) {
			throttle_vm_locked(vm);
			vgpu_mutex_lock(&core->stats.lock);
			vm->gpu.shown_throttled = true;
			vm->gpu.throttles++;
			vgpu_mutex_unlock(&core->stats.lock);
		} else if (!want && vm->gpu.throttled) {
			resume_vm_locked(vm);
		}
		any |= vm->gpu.throttled;
	}
	vgpu_core_unlock(core);
	return any;
}

static bool any_pending(struct vgpu_core *core)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;

	for (uint32_t i = 0; i < acct->throttled_count; i++)
		if (vgpu_hal_channel_pending(core->hal, acct->throttled_ids[i]))
			return true;
	return false;
}

/*
 * The start of a non-polling phase with throttled channels: poll until
 * none of them has work pending (their queued work ran) or limit_ns
 * passed, and charge what each ran to its VM's residue. Returns the time
 * it took.
 */
static uint64_t residue_phase(struct vgpu_core *core, uint64_t limit_ns)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	struct vgpu_gpu_time_phase phase;
	struct vgpu_gpu_time_sample sample;
	uint64_t end;

	if (!acct->throttled_count)
		return 0;
	vgpu_acct_read_status(core->hal, &sample);
	vgpu_gpu_time_phase_begin(&phase, acct->channel_ns, core->channel_table_size, &sample);
	end = sample.t_ns + limit_ns;
	while (sample.t_ns < end && any_pending(core)) {
		vgpu_acct_read_status(core->hal, &sample);
		vgpu_gpu_time_phase_observe(&phase, &sample);
	}
	vgpu_gpu_time_phase_end(&phase, sample.t_ns);
	vgpu_mutex_lock(&core->channels_lock);
	for (uint32_t i = 0; i < acct->throttled_count; i++) {
		uint32_t id = acct->throttled_ids[i];
		struct vgpu_core_channel *channel = core->channel_table[id];

		if (channel)
			channel->vm->gpu.residue_ns += acct->channel_ns[id];
	}
	vgpu_mutex_unlock(&core->channels_lock);
	vgpu_mutex_lock(&core->stats.lock);
	acct->samples += phase.samples;
	acct->residue_ns += vgpu_gpu_time_phase_length(&phase);
	vgpu_mutex_unlock(&core->stats.lock);
	return vgpu_gpu_time_phase_length(&phase);
}

/*
 * Which VMs have work: every live channel's pending bit, read outside the
 * channel table's lock from a snapshot of it (a channel created or
 * destroyed meanwhile is seen at the next sample). *owner is the VM found
 * with work first (NO_VM until one is). Returns -1 when a channel of
 * another VM has work too, else the number of live channels.
 */
static int working_channels(struct vgpu_core *core, uint32_t *owner)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	uint32_t count = 0;

	vgpu_mutex_lock(&core->channels_lock);
	for (uint32_t id = 0; id < core->channel_table_size; id++) {
		struct vgpu_core_channel *channel = core->channel_table[id];

		if (channel) {
			acct->snapshot_ids[count] = id;
			acct->snapshot_vms[count++] = channel->vm->id;
		}
	}
	vgpu_mutex_unlock(&core->channels_lock);
	for (uint32_t i = 0; i < count; i++) {
		if (!vgpu_hal_channel_pending(core->hal, acct->snapshot_ids[i]))
			continue;
		if (*owner == NO_VM)
			*owner = acct->snapshot_vms[i];
		else if (*owner != acct->snapshot_vms[i])
			return -1;
	}
	return count > INT32_MAX ? INT32_MAX : (int)count;
}

/* Whether sampling may replace polling as far as the schedulers go: no
 * fixed-share VM is capped below the whole GPU (a fixed-share VM beside
 * another scheduled one), so no lone VM is ever throttled. */
static bool sampling_allowed(struct vgpu_core *core)
{
	struct list_head *pos;
	uint32_t scheduled = 0;
	bool fixed = false;

	if (core->config.accounting_always_poll)
		return false;
	vgpu_mutex_lock(&core->stats.lock);
	list_for_each(pos, &core->vms) {
		enum vgpu_sched_mode mode = list_entry(pos, struct vgpu_vm, link)->gpu.sched.mode;

		scheduled += mode != VGPU_SCHED_BEST_EFFORT;
		fixed |= mode == VGPU_SCHED_FIXED_SHARE;
	}
	vgpu_mutex_unlock(&core->stats.lock);
	return !fixed || scheduled < 2;
}

/*
 * Sampled periods while at most one VM has work (gpu_accounting.h), the
 * first one from *last_end (the end of the polling phase before) on, owner
 * the VM with work (or NO_VM). Returns when that ends: a second VM has
 * work, the scheduler wants a throttle, sampling is no longer allowed, no
 * channel is left, or the thread is to stop. A polling phase is due at
 * once then; *last_end is where the last sampled period ended.
 */
static void sampled_periods(struct vgpu_core *core, uint64_t *last_end, uint32_t owner)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	bool more = true;

	while (more) {
		struct vgpu_gpu_time_phase phase;
		struct vgpu_gpu_time_sample sample;
		struct vgpu_sched_period period;
		int live = 1;

		vgpu_acct_read_status(core->hal, &sample);
		vgpu_gpu_time_phase_begin(&phase, acct->channel_ns, core->channel_table_size,
		                          &sample);
		phase.max_gap_ns = SAMPLE_MAX_GAP_NS;
		for (int n = 0; n < SAMPLED_PERIOD && live > 0; n++) {
			uint64_t gap = SAMPLE_GAP_NS / 2 + vgpu_rng_below(&acct->rng, SAMPLE_GAP_NS + 1);

			vgpu_acct_sleep_ns(acct, gap);
			if (vgpu_acct_should_stop(acct))
				break;
			vgpu_acct_read_status(core->hal, &sample);
			vgpu_gpu_time_phase_observe(&phase, &sample);
			live = working_channels(core, &owner);
		}
		/* a second VM found working ends the phase at that sample: what
		 * ran before it is the first VM's (or idle), as sampled */
		vgpu_gpu_time_phase_end(&phase, sample.t_ns);
		period.nonpoll_before_ns =
			(*last_end ? phase.start_ns - *last_end : 0) + phase.blind_ns;
		period.poll_ns = vgpu_gpu_time_phase_observed(&phase);
		period.nonpoll_next_ns = 0;
		*last_end = phase.end_ns;
		attribute_channels(core);
		more = !decide(core, &period, true) && live > 0 && sampling_allowed(core) &&
		       !vgpu_acct_should_stop(acct);
		vgpu_mutex_lock(&core->stats.lock);
		acct->samples += phase.samples;
		vgpu_mutex_unlock(&core->stats.lock);
	}
}

void vgpu_accounting_vm_resumed_locked(struct vgpu_vm *vm)
{
	vgpu_core_assert_locked(vm->core);
	vm->gpu.neon_suspended = false;
	if (vm->gpu.throttled)
		account_resumed_locked(vm);
}

static void *accounting_thread(void *arg)
{
	struct vgpu_core *core = arg;
	struct vgpu_gpu_accounting *acct = &core->accounting;
	struct vgpu_gpu_time_phase phase;
	uint64_t last_poll_end = 0;
	bool any_throttled = false;

	while (!vgpu_acct_should_stop(acct)) {
		struct vgpu_sched_period period;
		uint32_t channels = vgpu_acct_live_channels(core);
		uint64_t poll_ns, nonpoll_ns, residue;
		uint32_t busy_vms, owner = NO_VM;
		bool want;

		if (any_throttled)
			any_throttled = vgpu_acct_apply_throttles(core, false);
		if (!channels) {
			last_poll_end = 0; /* the next period starts afresh */
			vgpu_acct_sleep_ns(acct, IDLE_CHECK_NS);
			continue;
		}
		vgpu_gpu_time_phase_lengths(&acct->time, channels, &acct->rng, &poll_ns,
		                            &nonpoll_ns);
		poll_phase(core, poll_ns, &phase);
		/* blind gaps in the polling phase count as non-polling time:
		 * the polled time is extrapolated over them */
		period.nonpoll_before_ns =
			(last_poll_end ? phase.start_ns - last_poll_end : 0) + phase.blind_ns;
		period.poll_ns = vgpu_gpu_time_phase_observed(&phase);
		period.nonpoll_next_ns = nonpoll_ns;
		last_poll_end = phase.end_ns;
		busy_vms = attribute_channels(core);
		want = decide(core, &period, false);
		vgpu_mutex_lock(&core->stats.lock);
		acct->samples += phase.samples;
		vgpu_mutex_unlock(&core->stats.lock);
		/* the allocation lock only when someone is (to be) throttled */
		if (want || any_throttled)
			any_throttled = vgpu_acct_apply_throttles(core, true);
		else
			acct->throttled_count = 0;
		/* at most one VM at work: nothing to split, sample instead */
		if (!any_throttled && busy_vms <= 1 && sampling_allowed(core) &&
		    working_channels(core, &owner) > 0) {
			sampled_periods(core, &last_poll_end, owner);
			continue;
		}
		residue = residue_phase(core, nonpoll_ns);
		if (residue < nonpoll_ns)
			vgpu_acct_sleep_ns(acct, nonpoll_ns - residue);
	}
	if (any_throttled)
		vgpu_acct_apply_throttles(core, false);
	return NULL;
}

const char *vgpu_accounting_mode_name(uint32_t mode)
{
	switch (mode) {
	case VGPU_ACCOUNTING_LOGA: return "loga";
	case VGPU_ACCOUNTING_NEON: return "neon";
	default: return NULL;
	}
}

int vgpu_accounting_mode_parse(const char *name, uint32_t *mode)
{
	for (uint32_t m = VGPU_ACCOUNTING_LOGA; m <= VGPU_ACCOUNTING_NEON; m++) {
		if (!strcmp(name, vgpu_accounting_mode_name(m))) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

static void free_arrays(struct vgpu_gpu_accounting *acct)
{
	free(acct->channel_ns);
	free(acct->throttled_ids);
	free(acct->snapshot_ids);
	free(acct->snapshot_vms);
	acct->channel_ns = NULL;
	acct->throttled_ids = NULL;
	acct->snapshot_ids = NULL;
	acct->snapshot_vms = NULL;
}

int vgpu_accounting_start(struct vgpu_core *core)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;
	const struct vgpu_core_config *config = &core->config;
	pthread_condattr_t attr;
	int err;

	vgpu_gpu_time_config_default(&acct->time);
	if (config->accounting_poll_us)
		acct->time.poll_ns_per_channel = (uint64_t)config->accounting_poll_us * 1000u;
	if (config->accounting_nonpoll_us)
		acct->time.nonpoll_ns_per_channel = (uint64_t)config->accounting_nonpoll_us * 1000u;
	if (config->accounting_jitter_percent)
		acct->time.jitter_percent = config->accounting_jitter_percent;
	if (vgpu_gpu_time_config_check(&acct->time) || !vgpu_accounting_mode_name(config->accounting_mode))
		return -EINVAL;
	if (config->accounting_pin && config->accounting_cpu >= CPU_SETSIZE)
		return -EINVAL;
	vgpu_rng_seed(&acct->rng, config->seed ^ 0x6c6f6761ull);
	vgpu_sched_init(&acct->sched);
	acct->channel_ns = calloc(core->channel_table_size ? core->channel_table_size : 1,
	                          sizeof(*acct->channel_ns));
	acct->throttled_ids = calloc(core->channel_table_size ? core->channel_table_size : 1,
	                             sizeof(*acct->throttled_ids));
	acct->snapshot_ids = calloc(core->channel_table_size ? core->channel_table_size : 1,
	                            sizeof(*acct->snapshot_ids));
	acct->snapshot_vms = calloc(core->channel_table_size ? core->channel_table_size : 1,
	                            sizeof(*acct->snapshot_vms));
	if (!acct->channel_ns || !acct->throttled_ids || !acct->snapshot_ids ||
	    !acct->snapshot_vms) {
		free_arrays(acct);
		return -ENOMEM;
	}
	pthread_mutex_init(&acct->mutex, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&acct->cond, &attr);
	pthread_condattr_destroy(&attr);
	acct->stop = false;
	err = pthread_create(&acct->thread, NULL,
	                     config->accounting_mode == VGPU_ACCOUNTING_NEON
	                             ? vgpu_accounting_neon_thread
	                             : accounting_thread,
	                     core);
	if (err) {
		pthread_cond_destroy(&acct->cond);
		pthread_mutex_destroy(&acct->mutex);
		free_arrays(acct);
		return -err;
	}
	/* visible in top -H and /proc/PID/task/TID/comm */
	pthread_setname_np(acct->thread, config->accounting_mode == VGPU_ACCOUNTING_NEON
	                                         ? "vgpu-neon"
	                                         : "vgpu-loga");
	if (config->accounting_pin) {
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(config->accounting_cpu, &cpus);
		err = pthread_setaffinity_np(acct->thread, sizeof(cpus), &cpus);
		if (err) {
			acct->started = true;
			vgpu_accounting_stop(core);
			return -err;
		}
	}
	acct->started = true;
	return 0;
}

void vgpu_accounting_stop(struct vgpu_core *core)
{
	struct vgpu_gpu_accounting *acct = &core->accounting;

	if (!acct->started)
		return;
	pthread_mutex_lock(&acct->mutex);
	acct->stop = true;
	pthread_cond_broadcast(&acct->cond);
	pthread_mutex_unlock(&acct->mutex);
	pthread_join(acct->thread, NULL);
	pthread_cond_destroy(&acct->cond);
	pthread_mutex_destroy(&acct->mutex);
	free_arrays(acct);
	free(acct->scratch);
	acct->scratch = NULL;
	acct->started = false;
}
