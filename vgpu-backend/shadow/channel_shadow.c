// SPDX-License-Identifier: MIT
/*
 * channel_shadow.c - suspend/drain/resume of one guest channel with shadow
 * pages (thesis §3.3.3). See vgpu/channel_shadow.h for the promises; the page
 * copies live in window_copy.c and the GP_GET rewind in nop_fill.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "shadow_internal.h"
#include "shadow_time.h"

/* How often a waiting drain re-reads the channel state, in case the core
 * does not forward VGPU_EVENT_CHANNEL_ERROR. */
#define DRAIN_POLL_NS (1 * SHADOW_NS_PER_MS)
/* How long destroy lets a suspended channel resume before it gives the
 * guest its pages back anyway. */
#define DESTROY_RESUME_MS 1000

static bool is_power_of_two(uint32_t value)
{
	return value && !(value & (value - 1));
}

static bool control_offset_ok(const struct vgpu_hal_channel_layout *layout, uint32_t offset)
{
	return offset % sizeof(uint32_t) == 0 && offset <= layout->control_bytes - sizeof(uint32_t);
}

static bool layout_ok(const struct vgpu_hal_channel_layout *layout)
{
	if (layout->control_bytes < sizeof(uint32_t) || layout->control_bytes % sizeof(uint32_t))
		return false;
	if (!control_offset_ok(layout, layout->gp_put_offset) ||
	    !control_offset_ok(layout, layout->gp_get_offset) ||
	    layout->gp_put_offset == layout->gp_get_offset)
		return false;
	if (!is_power_of_two(layout->gpfifo_entries) || layout->gpfifo_entries < 2 ||
	    !layout->gpfifo_entry_bytes)
		return false;
	return (uint64_t)layout->gpfifo_entries * layout->gpfifo_entry_bytes <= layout->gpfifo_bytes;
}

static bool ops_ok(const struct vgpu_guest_window_ops *ops)
{
	return ops && ops->get_shadow && ops->release_shadow && ops->block && ops->map;
}

int vgpu_shadow_channel_create(struct vgpu_hal_channel *ch, const struct vgpu_hal_channel_info *info,
                               const struct vgpu_guest_window_ops *ops, void *ops_ctx,
                               struct vgpu_shadow_channel **out)
{
	struct vgpu_shadow_channel *sc;
	pthread_condattr_t cond_attr;
	int ret;

	if (!ch || !info || !out || !ops_ok(ops) || !info->control || !info->gpfifo ||
	    !layout_ok(&info->layout))
		return -EINVAL;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->channel = ch;
	sc->channel_id = info->id;
	sc->layout = info->layout;
	sc->ring_mask = info->layout.gpfifo_entries - 1;
	sc->real_control = info->control;
	sc->real_gpfifo = info->gpfifo;
	sc->ops = ops;
	sc->ops_ctx = ops_ctx;
	sc->fence_state = SHADOW_FENCE_NONE;

	ret = ops->get_shadow(ops_ctx, info->id, &sc->shadow_control, &sc->shadow_gpfifo);
	if (ret) {
		free(sc);
		return ret < 0 ? ret : -ENOMEM;
	}
	if (!sc->shadow_control || !sc->shadow_gpfifo) {
		ops->release_shadow(ops_ctx, info->id);
		free(sc);
		return -ENOMEM;
	}

	pthread_mutex_init(&sc->op_lock, NULL);
	pthread_mutex_init(&sc->lock, NULL);
	pthread_condattr_init(&cond_attr);
	pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sc->cond, &cond_attr);
	pthread_condattr_destroy(&cond_attr);

	*out = sc;
	return 0;
}

static void set_suspended(struct vgpu_shadow_channel *sc, bool suspended)
{
	__atomic_store_n(&sc->suspended, suspended, __ATOMIC_RELEASE);
}

bool vgpu_shadow_is_suspended(const struct vgpu_shadow_channel *sc)
{
	return __atomic_load_n(&sc->suspended, __ATOMIC_ACQUIRE);
}

/* Account one block..map window. Caller holds sc->lock. */
static void account_blocked(struct vgpu_shadow_channel *sc, uint64_t start_ns, uint64_t end_ns)
{
	uint64_t blocked = end_ns - start_ns;

	sc->stats.guest_blocked_ns += blocked;
	if (blocked > sc->stats.guest_blocked_max_ns)
		sc->stats.guest_blocked_max_ns = blocked;
}

/* Try to put the suspend fence on the real ring. Caller holds op_lock.
 * 0 submitted, -ENOSPC ring full (still pending), -EIO channel dead (no
 * fence needed), other errors from the HAL. */
static int submit_fence(struct vgpu_shadow_channel *sc)
{
	uint64_t ticket = 0;
	int ret;

	ret = vgpu_hal_channel_priv_submit(sc->channel, VGPU_PRIV_FENCE, &ticket);
	if (ret == 0) {
		pthread_mutex_lock(&sc->lock);
		sc->fence_ticket = ticket;
		sc->fence_state = SHADOW_FENCE_SUBMITTED;
		pthread_mutex_unlock(&sc->lock);
	} else if (ret == -EIO) {
		sc->fence_state = SHADOW_FENCE_NONE;
		sc->drained = true;
	} else {
		sc->fence_state = SHADOW_FENCE_PENDING;
		vgpu_hal_channel_kick(sc->channel);
	}
	return ret;
}

int vgpu_shadow_suspend(struct vgpu_shadow_channel *sc)
{
	uint64_t start_ns, end_ns;

	pthread_mutex_lock(&sc->op_lock);
	if (sc->suspended) {
		pthread_mutex_unlock(&sc->op_lock);
		return -EALREADY;
	}

	start_ns = shadow_now_ns();
	sc->ops->block(sc->ops_ctx, sc->channel_id);
	shadow_copy_real_to_shadow(sc);
	sc->ops->map(sc->ops_ctx, sc->channel_id, true);
	end_ns = shadow_now_ns();

	pthread_mutex_lock(&sc->lock);
	sc->stats.suspensions++;
	account_blocked(sc, start_ns, end_ns);
	sc->suspend_start_ns = start_ns;
	sc->fence_state = SHADOW_FENCE_PENDING;
	set_suspended(sc, true); /* under lock: stats see start and flag together */
	pthread_mutex_unlock(&sc->lock);
	sc->drained = false;

	/* The guest runs on the shadow now; the real ring is ours. A full ring
	 * or another HAL error leaves the fence pending for drain. */
	submit_fence(sc);
	pthread_mutex_unlock(&sc->op_lock);
	return 0;
}

static bool channel_killed(struct vgpu_shadow_channel *sc)
{
	return vgpu_hal_channel_state(sc->channel, NULL) == VGPU_CHANNEL_ERROR;
}

static struct timespec to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ull),
		.tv_nsec = (long)(ns % 1000000000ull),
	};
	return ts;
}

/* The suspend fence completed, or the channel died. Caller holds sc->lock. */
static bool fence_done_locked(const struct vgpu_shadow_channel *sc)
{
	return (sc->completed_valid && sc->completed_ticket == sc->fence_ticket) || sc->error_seen;
}

/* Wait on the fence event until wake_ns. Caller holds op_lock; the fence is
 * submitted. True once it completed or an error event came. */
static bool wait_fence_event(struct vgpu_shadow_channel *sc, uint64_t wake_ns)
{
	struct timespec wake = to_timespec(wake_ns);
	bool done;

	pthread_mutex_lock(&sc->lock);
	while (!fence_done_locked(sc) &&
	       pthread_cond_timedwait(&sc->cond, &sc->lock, &wake) != ETIMEDOUT)
		;
	done = fence_done_locked(sc);
	pthread_mutex_unlock(&sc->lock);
	return done;
}

int vgpu_shadow_drain(struct vgpu_shadow_channel *sc, unsigned timeout_ms)
{
	struct shadow_backoff backoff = { 0 };
	uint64_t deadline_ns = shadow_deadline_ns(timeout_ms);
	int ret = 0;

	pthread_mutex_lock(&sc->op_lock);
	if (!sc->suspended) {
		ret = -EINVAL;
		goto out;
	}
	while (!sc->drained) {
		uint64_t now = shadow_now_ns();

		if (channel_killed(sc)) {
			sc->drained = true;
			break;
		}
		if (sc->fence_state == SHADOW_FENCE_PENDING) {
			ret = submit_fence(sc);
			if (ret == -ENOSPC) {
				ret = 0;
				if (now >= deadline_ns) {
					ret = -ETIMEDOUT;
					break;
				}
				shadow_backoff_wait(&backoff, deadline_ns);
				continue;
			}
			if (ret)
				break; /* -EIO set drained; others are the HAL's */
		}
		if (sc->fence_state == SHADOW_FENCE_NONE) {
			sc->drained = true;
			break;
		}
		if (now >= deadline_ns) {
			ret = -ETIMEDOUT;
			break;
		}
		if (wait_fence_event(sc, deadline_ns - now > DRAIN_POLL_NS ? now + DRAIN_POLL_NS
		                                                           : deadline_ns))
			sc->drained = true;
	}
	if (sc->drained)
		ret = 0;
out:
	pthread_mutex_unlock(&sc->op_lock);
	return ret;
}

/* Give the guest its real pages back with its ring and GP_PUT. Caller holds
 * op_lock and the real GP_GET is where it will stay (guest_put, or a dead
 * channel). */
static void restore_guest(struct vgpu_shadow_channel *sc, bool channel_error)
{
	uint64_t start_ns, end_ns;

	start_ns = shadow_now_ns();
	sc->ops->block(sc->ops_ctx, sc->channel_id);
	shadow_copy_shadow_to_real(sc);
	sc->ops->map(sc->ops_ctx, sc->channel_id, false);
	end_ns = shadow_now_ns();
	if (!channel_error)
		vgpu_hal_channel_kick(sc->channel);

	pthread_mutex_lock(&sc->lock);
	account_blocked(sc, start_ns, end_ns);
	sc->stats.resumes++;
	sc->stats.suspended_ns += end_ns - sc->suspend_start_ns;
	if (channel_error)
		sc->stats.channel_errors++;
	sc->fence_state = SHADOW_FENCE_NONE;
	set_suspended(sc, false);
	pthread_mutex_unlock(&sc->lock);
}

static int resume_locked(struct vgpu_shadow_channel *sc, unsigned timeout_ms)
{
	uint64_t start_ns, deadline_ns = shadow_deadline_ns(timeout_ms);
	int ret;

	if (!sc->suspended)
		return -EINVAL;

	/* The guest keeps running on the shadow during the fill. */
	start_ns = shadow_now_ns();
	ret = shadow_nop_fill(sc, deadline_ns);
	pthread_mutex_lock(&sc->lock);
	sc->stats.fill_ns += shadow_now_ns() - start_ns;
	pthread_mutex_unlock(&sc->lock);
	if (ret && ret != -EIO)
		return ret;

	restore_guest(sc, ret == -EIO);
	return ret;
}

int vgpu_shadow_resume_timeout(struct vgpu_shadow_channel *sc, unsigned timeout_ms)
{
	int ret;

	pthread_mutex_lock(&sc->op_lock);
	ret = resume_locked(sc, timeout_ms);
	pthread_mutex_unlock(&sc->op_lock);
	return ret;
}

/* Where a channel's resume stands, to tell a turn that moved it forward. */
static uint64_t resume_progress(struct vgpu_shadow_channel *sc)
{
	uint64_t nops;

	pthread_mutex_lock(&sc->lock);
	nops = sc->stats.nop_entries;
	pthread_mutex_unlock(&sc->lock);
	return nops << 32 ^ vgpu_hal_channel_gp_get(sc->channel);
}

int vgpu_shadow_resume_all(struct vgpu_shadow_channel *const *channels, size_t count,
                           unsigned timeout_ms)
{
	struct shadow_backoff backoff = { 0 };
	uint64_t deadline_ns = shadow_deadline_ns(timeout_ms);
	int result = 0;

	for (;;) {
		size_t i, waiting = 0;
		bool progress = false;

		/* One non-waiting turn each: append what fits, restore the
		 * guest if GP_GET got there. */
		for (i = 0; i < count; i++) {
			uint64_t before;
			int ret;

			if (!channels[i] || !vgpu_shadow_is_suspended(channels[i]))
				continue;
			before = resume_progress(channels[i]);
			ret = vgpu_shadow_resume_timeout(channels[i], 0);
			if (ret == -ETIMEDOUT) {
				waiting++;
				if (resume_progress(channels[i]) != before)
					progress = true;
			} else if (ret == -EIO && !result) {
				result = -EIO;
			} else if (ret && ret != -EIO && ret != -EINVAL) {
				result = ret;
			}
		}
		if (!waiting)
			return result;
		if (shadow_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		/* The GPU is fetching the fill: poll again soon, not after the
		 * long sleeps meant for a channel that stands still. */
		if (progress)
			backoff = (struct shadow_backoff){ 0 };
		shadow_backoff_wait(&backoff, deadline_ns);
	}
}

void vgpu_shadow_channel_destroy(struct vgpu_shadow_channel *sc)
{
	int ret;

	if (!sc)
		return;
	pthread_mutex_lock(&sc->op_lock);
	if (sc->suspended) {
		ret = resume_locked(sc, DESTROY_RESUME_MS);
		/* Not resumed in time, or a HAL failure other than a dead
		 * channel: the guest must not keep pointing at pages about to
		 * be released. */
		if (ret && ret != -EIO)
			restore_guest(sc, true);
	}
	pthread_mutex_unlock(&sc->op_lock);

	sc->ops->release_shadow(sc->ops_ctx, sc->channel_id);
	pthread_cond_destroy(&sc->cond);
	pthread_mutex_destroy(&sc->lock);
	pthread_mutex_destroy(&sc->op_lock);
	free(sc);
}

void vgpu_shadow_on_priv_fence(struct vgpu_shadow_channel *sc, uint64_t ticket)
{
	pthread_mutex_lock(&sc->lock);
	sc->completed_ticket = ticket;
	sc->completed_valid = true;
	pthread_cond_broadcast(&sc->cond);
	pthread_mutex_unlock(&sc->lock);
}

void vgpu_shadow_on_channel_error(struct vgpu_shadow_channel *sc)
{
	pthread_mutex_lock(&sc->lock);
	sc->error_seen = true;
	pthread_cond_broadcast(&sc->cond);
	pthread_mutex_unlock(&sc->lock);
}

void vgpu_shadow_stats(const struct vgpu_shadow_channel *sc, struct vgpu_shadow_stats *out)
{
	struct vgpu_shadow_channel *mutable_sc = (struct vgpu_shadow_channel *)sc;

	pthread_mutex_lock(&mutable_sc->lock);
	*out = sc->stats;
	if (vgpu_shadow_is_suspended(sc))
		out->suspended_ns += shadow_now_ns() - sc->suspend_start_ns;
	pthread_mutex_unlock(&mutable_sc->lock);
}

struct vgpu_hal_channel *vgpu_shadow_hal_channel(const struct vgpu_shadow_channel *sc)
{
	return sc->channel;
}

uint32_t vgpu_shadow_channel_id(const struct vgpu_shadow_channel *sc)
{
	return sc->channel_id;
}

int vgpu_shadow_get_guest_state(struct vgpu_shadow_channel *sc, uint32_t *guest_put,
                                uint32_t *guest_get)
{
	int err = -EINVAL;

	pthread_mutex_lock(&sc->op_lock);
	if (sc->suspended) {
		*guest_put = sc->guest_put;
		*guest_get = sc->guest_get;
		err = 0;
	}
	pthread_mutex_unlock(&sc->op_lock);
	return err;
}

int vgpu_shadow_set_guest_state(struct vgpu_shadow_channel *sc, uint32_t guest_put,
                                uint32_t guest_get)
{
	int err = -EINVAL;

	pthread_mutex_lock(&sc->op_lock);
	if (sc->suspended && guest_put <= sc->ring_mask && guest_get <= sc->ring_mask) {
		sc->guest_put = guest_put;
		sc->guest_get = guest_get;
		err = 0;
	}
	pthread_mutex_unlock(&sc->op_lock);
	return err;
}
