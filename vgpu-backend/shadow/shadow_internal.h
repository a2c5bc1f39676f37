/* SPDX-License-Identifier: MIT */
/*
 * shadow_internal.h - the state of one shadowed channel, shared by the files
 * of vgpu-backend/shadow. Nothing outside this directory includes it.
 */
#ifndef VGPU_SHADOW_INTERNAL_H
#define VGPU_SHADOW_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/channel_shadow.h"

/* Where the suspend fence stands. */
enum shadow_fence_state {
	SHADOW_FENCE_NONE,      /* no fence needed (channel in error) */
	SHADOW_FENCE_PENDING,   /* real ring was full: drain appends it */
	SHADOW_FENCE_SUBMITTED, /* on the real ring, ticket valid */
};

struct vgpu_shadow_channel {
	struct vgpu_hal_channel *channel;
	uint32_t channel_id;
	struct vgpu_hal_channel_layout layout;
	uint32_t ring_mask;   /* gpfifo_entries - 1 */
	void *real_control;   /* the pages the GPU uses */
	void *real_gpfifo;
	void *shadow_control; /* from ops->get_shadow */
	void *shadow_gpfifo;
	const struct vgpu_guest_window_ops *ops;
	void *ops_ctx;

	/*
	 * Serialises suspend/drain/resume/destroy. Held across HAL and
	 * window calls; the event thread never takes it.
	 */
	pthread_mutex_t op_lock;

	/* Written under op_lock, read anywhere (atomically). */
	bool suspended;

	/* Under op_lock: the guest's view frozen at suspend time. */
	uint32_t guest_put; /* its GP_PUT, masked: where GP_GET must arrive */
	uint32_t guest_get; /* its GP_GET as the shadow shows it */
	enum shadow_fence_state fence_state;
	bool drained;

	/*
	 * Short lock for what the event thread touches, and the statistics.
	 * Never held across a HAL or window call.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* fence completed or channel error seen */
	uint64_t fence_ticket;     /* valid in SHADOW_FENCE_SUBMITTED */
	uint64_t completed_ticket; /* last VGPU_EVENT_PRIV_FENCE ticket */
	bool completed_valid;
	bool error_seen;           /* vgpu_shadow_on_channel_error called */
	uint64_t suspend_start_ns;
	struct vgpu_shadow_stats stats;
};

/* window_copy.c: page copies done inside a block..map window. */

/* Real control page and ring -> shadow. Records guest_put/guest_get. */
void shadow_copy_real_to_shadow(struct vgpu_shadow_channel *sc);
/* Shadow ring and the guest-written control words -> real pages; GP_PUT is
 * stored last, with release ordering, so the GPU sees the entries first. */
void shadow_copy_shadow_to_real(struct vgpu_shadow_channel *sc);
/* The real GP_PUT, masked to a ring index. */
uint32_t shadow_real_gp_put(const struct vgpu_shadow_channel *sc);

/* nop_fill.c */

/*
 * Make the real GP_GET equal sc->guest_put by appending NOP entries until
 * the real GP_PUT wraps around to it and waiting until the GPU fetched them.
 * 0 done; -EIO channel in error; -ETIMEDOUT deadline passed (may be called
 * again: it continues where it stopped).
 */
int shadow_nop_fill(struct vgpu_shadow_channel *sc, uint64_t deadline_ns);

#endif /* VGPU_SHADOW_INTERNAL_H */
