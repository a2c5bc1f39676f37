// SPDX-License-Identifier: MIT
/*
 * nop_fill.c - bring a channel's GP_GET to a chosen ring position.
 *
 * GP_GET is written only by the GPU, and only forward. After a suspension the
 * real channel has fetched past the guest's GP_PUT (our fence sits there), or
 * will. To make GP_GET arrive exactly at the guest's GP_PUT again (thesis
 * §3.3.3) we append VGPU_PRIV_NOP entries until the real GP_PUT has wrapped
 * around the ring to that position, then wait until the GPU has fetched them
 * all. A full ring (-ENOSPC) only means the GPU has not fetched enough yet:
 * kick it and wait for GP_GET to move.
 *
 * The guest is looking at the shadow pages meanwhile, so none of this is
 * visible to it; the real slots overwritten here are restored from the shadow
 * by resume.
 */
#include <errno.h>

#include "shadow_internal.h"
#include "shadow_time.h"

static bool channel_killed(struct vgpu_shadow_channel *sc)
{
	return vgpu_hal_channel_state(sc->channel, NULL) == VGPU_CHANNEL_ERROR;
}

/* Append NOPs until the real GP_PUT equals the guest's position. */
static int append_nops(struct vgpu_shadow_channel *sc, uint64_t deadline_ns)
{
	struct shadow_backoff backoff = { 0 };
	uint32_t last_get = vgpu_hal_channel_gp_get(sc->channel);

	while (shadow_real_gp_put(sc) != sc->guest_put) {
		uint32_t missing = (sc->guest_put - shadow_real_gp_put(sc)) & sc->ring_mask;
		uint32_t get;
		int ret;

		ret = vgpu_hal_channel_priv_nops(sc->channel, missing);
		if (ret > 0) {
			pthread_mutex_lock(&sc->lock);
			sc->stats.nop_entries += (uint64_t)ret;
			pthread_mutex_unlock(&sc->lock);
			continue;
		}
		if (ret < 0)
			return ret;

		/* Ring full: let the GPU fetch, wait for GP_GET to move. */
		vgpu_hal_channel_kick(sc->channel);
		get = vgpu_hal_channel_gp_get(sc->channel);
		if (get != last_get) {
			last_get = get;
			backoff = (struct shadow_backoff){ 0 };
			continue;
		}
		if (channel_killed(sc))
			return -EIO;
		if (shadow_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		shadow_backoff_wait(&backoff, deadline_ns);
	}
	return 0;
}

/* Wait until the GPU has fetched everything up to the guest's position. */
static int wait_for_gp_get(struct vgpu_shadow_channel *sc, uint64_t deadline_ns)
{
	struct shadow_backoff backoff = { 0 };
	uint32_t last_get = ~0u;

	vgpu_hal_channel_kick(sc->channel);
	for (;;) {
		uint32_t get = vgpu_hal_channel_gp_get(sc->channel) & sc->ring_mask;

		if (get == sc->guest_put)
			return 0;
		if (get != last_get) {
			last_get = get;
			backoff = (struct shadow_backoff){ 0 };
		}
		if (channel_killed(sc))
			return -EIO;
		if (shadow_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		shadow_backoff_wait(&backoff, deadline_ns);
	}
}

int shadow_nop_fill(struct vgpu_shadow_channel *sc, uint64_t deadline_ns)
{
	int ret;

	if (channel_killed(sc))
		return -EIO;
	ret = append_nops(sc, deadline_ns);
	if (ret)
		return ret;
	return wait_for_gp_get(sc, deadline_ns);
}
