/* SPDX-License-Identifier: MIT */
/*
 * channel_shadow.h - suspend and resume one guest command channel without the
 * guest noticing (shadow channels, thesis §3.3.3).
 *
 * The guest maps a channel's control page (GP_PUT, GP_GET, doorbell) and its
 * GPFIFO ring directly and submits work with no trap. To stop that channel's
 * work from running (while the core relocates the VM's memory, or to
 * throttle it) the module:
 *
 *   suspend  blocks guest accesses to the window, copies the real control
 *            page and ring to shadow pages, maps the shadows (the guest keeps
 *            submitting, into the shadow, and sees GP_GET frozen at its
 *            suspend-time value), then appends a privileged FENCE to the real
 *            ring. It does not wait for the GPU.
 *   drain    waits for that fence: every entry the guest queued before the
 *            suspension has finished, and nothing of the guest's runs on the
 *            GPU until resume.
 *   resume   brings the real GP_GET to the guest's suspend-time GP_PUT by
 *            NOP fill (software cannot write GP_GET: NOP entries are appended
 *            until GP_PUT wraps around to that position and the GPU has
 *            fetched them all), blocks guest accesses again, copies the
 *            shadow ring (so every slot holds the guest's own entry again,
 *            not a NOP or the fence) and the shadow GP_PUT into the real
 *            pages, maps the real pages and kicks the channel.
 *
 * What the guest observes, which the tests check: its ring only ever holds its
 * own entries; GP_PUT is its own value; GP_GET never passes its GP_PUT and,
 * after resume, continues from exactly where its own submissions put it.
 * Every entry it submitted while suspended executes once, in order, after
 * resume and not before. It waits only while pages are copied (between
 * ops->block and ops->map), never for a drain or relocation; the stats
 * measure that time.
 *
 * Threading. suspend, drain, resume, destroy and the stats may be called from
 * any backend thread; calls that change the state of one channel are
 * serialised internally (the core still calls them in a sensible order).
 * vgpu_shadow_on_priv_fence and vgpu_shadow_on_channel_error are safe to call
 * from the HAL event thread: they only take a short internal lock, which is
 * never held across a HAL or window call, and signal. (The per-channel
 * operation lock is held across HAL and window calls; the event thread never
 * takes it.)
 *
 * Lifetime. Create the shadow after the HAL channel and destroy it before
 * vgpu_hal_channel_destroy. The core forwards VGPU_EVENT_PRIV_FENCE (and
 * preferably VGPU_EVENT_CHANNEL_ERROR) events for the channel to the shadow,
 * and stops (no call in progress or to come) before
 * vgpu_shadow_channel_destroy; destroy needs no event.
 */
#ifndef VGPU_CHANNEL_SHADOW_H
#define VGPU_CHANNEL_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/guest_window.h"
#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_shadow_channel;

struct vgpu_shadow_stats {
	uint64_t suspensions;      /* successful vgpu_shadow_suspend calls */
	uint64_t resumes;          /* suspensions ended (including by destroy) */
	uint64_t suspended_ns;     /* wall time suspended, the current suspension
	                              included */
	uint64_t guest_blocked_ns; /* wall time between ops->block and ops->map,
	                              the only time a guest access can wait */
	uint64_t guest_blocked_max_ns; /* longest single block..map window */
	uint64_t nop_entries;      /* NOP entries appended by resumes */
	uint64_t fill_ns;          /* wall time resumes spent on the NOP fill
	                              (the guest keeps running meanwhile) */
	uint64_t channel_errors;   /* resumes that found the channel killed */
};

/*
 * Shadow the HAL channel ch whose window info describes (as returned by
 * vgpu_hal_channel_create), through the transport ops/ops_ctx. Takes the
 * channel's shadow pages (ops->get_shadow) now; the channel starts resumed.
 * ch, info's pages and ops must outlive the shadow. -EINVAL for a malformed
 * layout, -ENOMEM, or get_shadow's error.
 */
int vgpu_shadow_channel_create(struct vgpu_hal_channel *ch, const struct vgpu_hal_channel_info *info,
                               const struct vgpu_guest_window_ops *ops, void *ops_ctx,
                               struct vgpu_shadow_channel **out);

/* Resume first if suspended (for at most a second; a channel not resumed by
 * then gets the guest's ring and real pages back as a killed one does),
 * release the shadow pages and free. NULL is ignored. */
void vgpu_shadow_channel_destroy(struct vgpu_shadow_channel *sc);

/*
 * Suspend: block the guest; copy the real control page and ring to the
 * shadow; map the shadow (the guest continues, writing into the shadow); then
 * append a VGPU_PRIV_FENCE to the REAL ring. Does not wait. If the real ring
 * is full the fence is appended by vgpu_shadow_drain once the GPU has made
 * room; if the channel is in error none is needed. 0, or -EALREADY when
 * already suspended.
 */
int vgpu_shadow_suspend(struct vgpu_shadow_channel *sc);

/*
 * Wait (up to timeout_ms) until the suspend fence completed, i.e. every entry
 * the guest queued before suspension finished. A channel in
 * VGPU_CHANNEL_ERROR counts as drained. 0 when drained (also on later
 * calls), -ETIMEDOUT on timeout (still suspended; may be called again),
 * -EINVAL when not suspended. May wait: never call it from the event thread.
 * A channel whose queued work waits for work the guest submitted to another,
 * also suspended, channel does not drain until that one is resumed.
 */
int vgpu_shadow_drain(struct vgpu_shadow_channel *sc, unsigned timeout_ms);

/*
 * Resume: bring the real GP_GET back to where the guest expects it by NOP
 * fill (GP_GET is read-only: fill the ring with VGPU_PRIV_NOP entries and
 * advance GP_PUT until GP_GET wraps to the guest's position; on a full ring
 * wait for GP_GET to advance), block the guest, copy the shadow ring + GP_PUT
 * into the real pages, map real, kick. Submissions made while suspended then
 * execute, in order, exactly once. Need not follow a drain (the fill then
 * also waits for the pre-suspension entries to be fetched).
 *
 * Waits while the channel makes progress (fetching must be enabled), but at
 * most timeout_ms; the guest keeps submitting into the shadow meanwhile.
 * Work queued before the suspension must be able to run: to resume several
 * channels whose work may depend on each other use vgpu_shadow_resume_all.
 *
 * Returns 0 when resumed; -EIO when the channel is (or was found) killed: it
 * is resumed all the same (the guest's ring and GP_PUT are restored and the
 * real pages mapped; its GP_GET is wherever the GPU stopped); -ETIMEDOUT when
 * the channel has not reached the guest's position within timeout_ms: it
 * stays suspended with the guest untouched and the call may be repeated (the
 * fill continues where it stopped; a channel that never gets there can be
 * killed, vgpu_hal_channel_kill, and then resumes at once); -EINVAL when not
 * suspended. Nothing here waits without a bound.
 */
int vgpu_shadow_resume_timeout(struct vgpu_shadow_channel *sc, unsigned timeout_ms);

/*
 * Resume count channels (e.g. all of one VM's; NULL entries and channels not
 * suspended are skipped) in turns, so that one whose pre-suspension work
 * waits for another's post-suspension work (a SEMAPHORE_ACQUIRE on a value
 * that a submission still sitting in the other's shadow releases) cannot hold
 * the others up: its NOP fill cannot finish until the other channel runs,
 * which resuming the first alone would wait for until it times out.
 * 0 when all are resumed; -EIO when all are resumed but some channel was found
 * killed; -ETIMEDOUT when some are still suspended after timeout_ms (the rest
 * are resumed; call again); another negative errno from the HAL.
 */
int vgpu_shadow_resume_all(struct vgpu_shadow_channel *const *channels, size_t count,
                           unsigned timeout_ms);

/* The core owns the single HAL event handler and forwards
 * VGPU_EVENT_PRIV_FENCE events for this channel here (called from the HAL's
 * event thread: does not block). */
void vgpu_shadow_on_priv_fence(struct vgpu_shadow_channel *sc, uint64_t ticket);

/* Optional: forward VGPU_EVENT_CHANNEL_ERROR for this channel so a waiting
 * drain returns at once instead of at its next poll of the channel state.
 * Event-thread safe. */
void vgpu_shadow_on_channel_error(struct vgpu_shadow_channel *sc);

/*
 * Live migration. A suspended channel's guest position: guest_put is the
 * guest's GP_PUT at suspend time (where GP_GET stands once drained; the
 * guest's later submissions wait in the shadow ring after it), guest_get
 * the GP_GET the shadow shows the guest. Together with the shadow pages'
 * contents they are the channel's whole guest-visible state.
 * vgpu_shadow_get_guest_state reads them; vgpu_shadow_set_guest_state
 * gives them to another suspended channel (a fresh one on the destination
 * GPU, whose shadow pages the caller filled with the source's): its
 * resume then NOP-fills the real ring up to guest_put and continues with
 * the guest's queued entries, as if this channel had been suspended
 * there. Both: 0, -EINVAL when not suspended (or positions out of the
 * ring). Serialised with suspend/resume.
 */
int vgpu_shadow_get_guest_state(struct vgpu_shadow_channel *sc, uint32_t *guest_put,
                                uint32_t *guest_get);
int vgpu_shadow_set_guest_state(struct vgpu_shadow_channel *sc, uint32_t guest_put,
                                uint32_t guest_get);

/* True between a successful suspend and the end of the matching resume. */
bool vgpu_shadow_is_suspended(const struct vgpu_shadow_channel *sc);

/* Statistics: number of suspensions, total ns suspended (wall), total ns the
 * guest was blocked (trap windows), for the core's per-VM stats and
 * benchmarks. A consistent snapshot. */
void vgpu_shadow_stats(const struct vgpu_shadow_channel *sc, struct vgpu_shadow_stats *out);

/* The HAL channel and its id, for the core's lookups. */
struct vgpu_hal_channel *vgpu_shadow_hal_channel(const struct vgpu_shadow_channel *sc);
uint32_t vgpu_shadow_channel_id(const struct vgpu_shadow_channel *sc);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CHANNEL_SHADOW_H */
