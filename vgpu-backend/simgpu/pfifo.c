// SPDX-License-Identifier: MIT
/* pfifo.c - the scheduler and compute engine (see pfifo.h). */
#include "pfifo.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "channel.h"
#include "commands.h"
#include "simgpu_device.h"
#include "vgpu/util.h"

/* Idle rounds spent polling (with sched_yield) before sleeping. */
#define PFIFO_SPIN_ROUNDS 64
#define PFIFO_FIRST_SLEEP_US 16

int pfifo_init(struct pfifo *pfifo, struct simgpu *gpu)
{
	pthread_condattr_t attr;
	int ret;

	memset(pfifo, 0, sizeof(*pfifo));
	pfifo->executing_id = -1;
	pfifo->gpu = gpu;
	pfifo->channels = calloc(gpu->config.max_channels, sizeof(*pfifo->channels));
	if (!pfifo->channels)
		return -ENOMEM;
	ret = engine_context_init(&pfifo->compute, gpu, VGPU_ENGINE_COMPUTE);
	if (ret) {
		free(pfifo->channels);
		return ret;
	}
	iommu_register_iotlb(&gpu->iommu, &pfifo->compute.iotlb);
	pthread_mutex_init(&pfifo->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&pfifo->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&pfifo->channel_idle, NULL);
	return 0;
}

void pfifo_destroy(struct pfifo *pfifo)
{
	pthread_cond_destroy(&pfifo->channel_idle);
	pthread_cond_destroy(&pfifo->wake);
	pthread_mutex_destroy(&pfifo->lock);
	engine_context_destroy(&pfifo->compute);
	free(pfifo->channels);
}

void pfifo_wake_locked(struct pfifo *pfifo)
{
	pfifo->wake_requests++;
	pthread_cond_signal(&pfifo->wake);
}

void pfifo_wake(struct pfifo *pfifo)
{
	pthread_mutex_lock(&pfifo->lock);
	pfifo_wake_locked(pfifo);
	pthread_mutex_unlock(&pfifo->lock);
}

int pfifo_add_channel(struct pfifo *pfifo, struct simgpu_channel *ch)
{
	uint32_t id;
	int ret = -ENOSPC;

	pthread_mutex_lock(&pfifo->lock);
	for (id = 0; id < pfifo->gpu->config.max_channels; id++) {
		if (!pfifo->channels[id]) {
			ch->id = id;
			pfifo->channels[id] = ch;
			pfifo->channel_count++;
			pfifo_wake_locked(pfifo);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&pfifo->lock);
	return ret;
}

void pfifo_remove_channel(struct pfifo *pfifo, struct simgpu_channel *ch)
{
	pthread_mutex_lock(&pfifo->lock);
	/* no new turn for ch: with short turns it would otherwise get the
	 * engine again before this thread gets the lock back */
	__atomic_store_n(&ch->removing, true, __ATOMIC_RELAXED); /* read by running functions */
	while (pfifo->executing == ch)
		pthread_cond_wait(&pfifo->channel_idle, &pfifo->lock);
	if (pfifo->channels[ch->id] == ch) {
		pfifo->channels[ch->id] = NULL;
		pfifo->channel_count--;
	}
	pthread_mutex_unlock(&pfifo->lock);
}

/* Kill ch with fault; called with the lock held, returns with it held. */
static void fail_channel(struct pfifo *pfifo, struct simgpu_channel *ch,
                         const struct gpu_fault *fault)
{
	struct vgpu_hal_event event = {
		.type = VGPU_EVENT_CHANNEL_ERROR,
		.channel_id = ch->id,
		.address = fault->address,
		.cause = fault->cause,
	};

	ch->failed = true;
	ch->error = event;
	ch->run.active = false;
	pthread_mutex_unlock(&pfifo->lock);
	event_sink_raise(&pfifo->gpu->events, &event);
	pthread_mutex_lock(&pfifo->lock);
}

void pfifo_kill_channel(struct pfifo *pfifo, struct simgpu_channel *ch,
                        enum vgpu_hal_error_cause cause)
{
	struct gpu_fault fault = { .address = 0, .cause = cause };

	pthread_mutex_lock(&pfifo->lock);
	/* No new turn for ch (as for removal): PFIFO would otherwise take
	 * it again before this thread gets the lock back, for as long as it
	 * has work queued. The command step in progress ends first: its
	 * result is not half-written when the channel stops. */
	__atomic_store_n(&ch->killing, true, __ATOMIC_RELAXED); /* read by running functions */
	while (pfifo->executing == ch)
		pthread_cond_wait(&pfifo->channel_idle, &pfifo->lock);
	if (!ch->failed)
		fail_channel(pfifo, ch, &fault);
	pthread_mutex_unlock(&pfifo->lock);
}

bool pfifo_channel_pending(struct pfifo *pfifo, uint32_t id)
{
	struct simgpu_channel *ch;
	bool pending = false;

	if (id >= pfifo->gpu->config.max_channels)
		return false;
	/* in its turn: it has work (no lock, see executing_id) */
	if (__atomic_load_n(&pfifo->executing_id, __ATOMIC_ACQUIRE) == (int32_t)id)
		return true;
	pthread_mutex_lock(&pfifo->lock);
	ch = pfifo->channels[id];
	if (ch && !ch->failed)
		pending = ch->run.active || pfifo->executing == ch ||
		          channel_read_gp_put(ch) != ch->gp_get;
	pthread_mutex_unlock(&pfifo->lock);
	return pending;
}

/* Fetch the entry at GP_GET into ch->run; false when the entry is bad (the
 * fault is filled in). Called with the lock held. */
static bool fetch_entry(struct simgpu_channel *ch, struct gpu_fault *fault)
{
	struct pushbuffer_run *run = &ch->run;
	struct priv_slot *slot = &ch->priv_slots[ch->gp_get];
	struct vgpu_gpfifo_entry entry;

	channel_read_entry(ch, ch->gp_get, &entry);
	run->privileged = slot->pending;
	run->ticket = 0;
	if (slot->pending) {
		/* what priv_submit recorded, whatever the ring says now; a
		 * privileged NOP is a zero-length entry like a guest's */
		entry.pushbuffer_va = ch->priv_va + (slot->command == VGPU_PRIV_FENCE
		                                             ? CHANNEL_PRIV_FENCE_OFFSET
		                                             : CHANNEL_PRIV_NOP_OFFSET);
		entry.length_bytes = slot->command == VGPU_PRIV_FENCE ? 4 : 0;
		entry.flags = 0;
		run->ticket = slot->ticket;
		slot->pending = false;
	}
	ch->gp_get = (ch->gp_get + 1) & (ch->layout.gpfifo_entries - 1);
	channel_publish_gp_get(ch);
	if (entry.flags || entry.length_bytes % 4 ||
	    entry.length_bytes > VGPU_PUSHBUFFER_MAX_BYTES) {
		fault->address = entry.pushbuffer_va;
		fault->cause = VGPU_FAULT_BAD_COMMAND;
		return false;
	}
	run->va = entry.pushbuffer_va;
	run->count = entry.length_bytes / 4;
	run->position = 0;
	command_progress_reset(&run->command);
	run->loaded = false;
	run->active = run->count > 0;
	return true;
}

/* Read the pushbuffer of the in-flight entry through the GMMU. */
static int load_pushbuffer(struct engine_context *ctx, struct simgpu_channel *ch)
{
	struct pushbuffer_run *run = &ch->run;
	int ret;

	if (run->loaded)
		return 0;
	if (run->capacity < run->count) {
		uint32_t *grown = realloc(run->words, (size_t)run->count * 4);

		if (!grown) {
			ctx->fault.address = run->va;
			ctx->fault.cause = VGPU_FAULT_BAD_COMMAND;
			return -ENOMEM;
		}
		run->words = grown;
		run->capacity = run->count;
	}
	ctx->privileged = run->privileged;
	ret = gpu_read(ctx, ch->as, run->va, run->words, (uint64_t)run->count * 4);
	if (ret == 0)
		run->loaded = true;
	return ret;
}

/* A turn is this late: pacing starts afresh rather than catching up. */
#define PACE_MAX_LAG_NS 200000ull

/*
 * Paced mode (config.paced): a turn that began at wall time start_ns,
 * with the engine's modeled time at start_ps, ends no earlier than the
 * anchor's wall time plus the modeled time charged since the anchor. The
 * register keeps the channel's id meanwhile. Unlocked.
 */
static void pfifo_pace_turn(struct pfifo *pfifo, uint64_t start_ns, uint64_t start_ps)
{
	uint64_t due;
	struct timespec until;

	if (!pfifo->pace_anchored || start_ns > pfifo->pace_wall_ns + PACE_MAX_LAG_NS +
	                                               (start_ps - pfifo->pace_charged_ps) / 1000) {
		pfifo->pace_anchored = true;
		pfifo->pace_wall_ns = start_ns;
		pfifo->pace_charged_ps = start_ps;
	}
	due = pfifo->pace_wall_ns + (pfifo->compute.charged_ps - pfifo->pace_charged_ps) / 1000;
	if (vgpu_monotonic_ns() >= due)
		return;
	until.tv_sec = (time_t)(due / 1000000000ull);
	until.tv_nsec = (long)(due % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* Give ch its turn: at most one entry. Lock held on entry and exit. */
static bool serve_channel(struct pfifo *pfifo, struct simgpu_channel *ch)
{
	struct engine_context *ctx = &pfifo->compute;
	struct gpu_fault fault;
	enum run_status status;
	uint64_t turn_start_ps, turn_start_ns;
	bool fetched = false;

	channel_publish_gp_get(ch);
	if (!ch->run.active) {
		uint32_t gp_put;

		if (!ch->fetch_enabled)
			return false;
		gp_put = channel_read_gp_put(ch);
		if (gp_put >= ch->layout.gpfifo_entries) {
			fault.address = gp_put;
			fault.cause = VGPU_FAULT_BAD_COMMAND;
			fail_channel(pfifo, ch, &fault);
			return true;
		}
		if (gp_put == ch->gp_get)
			return false;
		/*
		 * A NOP entry (length 0) has no pushbuffer to forward to an
		 * engine, so PFIFO skips it within the channel's turn, as
		 * hardware that prefetches GPFIFO entries does; a run of NOPs
		 * (a shadow channel's GP_GET wrap) then costs one turn, not
		 * one round of every other channel's work per entry.
		 */
		for (;;) {
			if (!fetch_entry(ch, &fault)) {
				fail_channel(pfifo, ch, &fault);
				return true;
			}
			fetched = true;
			if (ch->run.active)
				break;
			gp_put = channel_read_gp_put(ch);
			if (gp_put >= ch->layout.gpfifo_entries || gp_put == ch->gp_get)
				return true; /* a bad GP_PUT is caught next turn */
		}
	}

	pfifo->executing = ch;
	__atomic_store_n(&pfifo->executing_id, (int32_t)ch->id, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pfifo->lock);
	turn_start_ns = pfifo->gpu->config.paced ? vgpu_monotonic_ns() : 0;
	gpu_clock_set_current_channel(&pfifo->gpu->clock, VGPU_ENGINE_COMPUTE, (int32_t)ch->id);
	turn_start_ps = ctx->charged_ps;
	if (load_pushbuffer(ctx, ch))
		status = RUN_FAULT;
	else
		status = commands_run(ctx, ch, turn_start_ps);
	if (pfifo->gpu->config.paced) {
		pfifo_pace_turn(pfifo, turn_start_ns, turn_start_ps);
		/* the register named ch from turn_start_ns until now */
		pthread_mutex_lock(&ch->as->lock);
		ch->as->resident_wall_ns[VGPU_ENGINE_COMPUTE] += vgpu_monotonic_ns() - turn_start_ns;
		pthread_mutex_unlock(&ch->as->lock);
	}
	gpu_clock_set_current_channel(&pfifo->gpu->clock, VGPU_ENGINE_COMPUTE, -1);
	pthread_mutex_lock(&pfifo->lock);

	if (status == RUN_DONE)
		ch->run.active = false;
	else if (status == RUN_FAULT)
		fail_channel(pfifo, ch, &ctx->fault);
	pfifo->executing = NULL;
	__atomic_store_n(&pfifo->executing_id, -1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&pfifo->channel_idle);
	return fetched || status != RUN_BLOCKED;
}

/* One round: every live channel gets one turn. Lock held. */
static bool pfifo_round(struct pfifo *pfifo)
{
	uint32_t slots = pfifo->gpu->config.max_channels, i;
	bool progress = false;

	for (i = 0; i < slots && !pfifo->stop; i++) {
		struct simgpu_channel *ch = pfifo->channels[i];

		if (!ch || ch->failed || ch->removing || ch->killing)
			continue;
		if (serve_channel(pfifo, ch))
			progress = true;
	}
	return progress;
}

static void sleep_until_woken(struct pfifo *pfifo, uint64_t seen, uint32_t sleep_us)
{
	struct timespec deadline;

	if (pfifo->wake_requests != seen || pfifo->stop)
		return;
	if (sleep_us == 0) {
		pthread_cond_wait(&pfifo->wake, &pfifo->lock);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += (long)sleep_us * 1000;
	while (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_nsec -= 1000000000L;
		deadline.tv_sec++;
	}
	pthread_cond_timedwait(&pfifo->wake, &pfifo->lock, &deadline);
}

static void *pfifo_thread(void *arg)
{
	struct pfifo *pfifo = arg;
	uint32_t sleep_max_us = pfifo->gpu->config.pfifo_idle_sleep_max_us;
	uint32_t idle_rounds = 0, sleep_us = 0;
	uint64_t seen;

	if (pfifo->gpu->config.paced)
		prctl(PR_SET_TIMERSLACK, 1UL); /* turns end on time, not 50 us late */
	pthread_mutex_lock(&pfifo->lock);
	seen = pfifo->wake_requests;
	while (!pfifo->stop) {
		if (pfifo_round(pfifo)) {
			idle_rounds = 0;
			sleep_us = 0;
			continue;
		}
		pfifo->pace_anchored = false; /* idle: pacing starts afresh */
		if (pfifo->wake_requests != seen) {
			seen = pfifo->wake_requests;
			idle_rounds = 0;
			sleep_us = 0;
			continue;
		}
		if (++idle_rounds < PFIFO_SPIN_ROUNDS) {
			pthread_mutex_unlock(&pfifo->lock);
			sched_yield();
			pthread_mutex_lock(&pfifo->lock);
			continue;
		}
		if (pfifo->channel_count == 0) {
			sleep_until_woken(pfifo, seen, 0);
			continue;
		}
		sleep_us = sleep_us ? sleep_us * 2 : PFIFO_FIRST_SLEEP_US;
		if (sleep_us > sleep_max_us)
			sleep_us = sleep_max_us;
		sleep_until_woken(pfifo, seen, sleep_us);
	}
	pthread_mutex_unlock(&pfifo->lock);
	return NULL;
}

int pfifo_start(struct pfifo *pfifo)
{
	int ret = pthread_create(&pfifo->thread, NULL, pfifo_thread, pfifo);

	if (ret)
		return -ret;
	pthread_setname_np(pfifo->thread, "simgpu-pfifo");
	pfifo->thread_started = true;
	return 0;
}

void pfifo_stop(struct pfifo *pfifo)
{
	if (!pfifo->thread_started)
		return;
	pthread_mutex_lock(&pfifo->lock);
	pfifo->stop = true;
	pthread_cond_broadcast(&pfifo->wake);
	pthread_mutex_unlock(&pfifo->lock);
	pthread_join(pfifo->thread, NULL);
	pfifo->thread_started = false;
}
