/* SPDX-License-Identifier: MIT */
/*
 * guest_double.h - a test double for the guest side of a channel window.
 *
 * Two parts, usable separately:
 *
 * guest_window_double  implements struct vgpu_guest_window_ops the way a
 *     transport does: per channel it owns shadow pages, remembers whether the
 *     guest's "mapping" points at the real or the shadow pages, and traps
 *     guest accesses while blocked (a mutex/condvar instead of page faults: a
 *     guest access waits, never fails). Guest code brackets every access with
 *     guest_window_enter/leave and uses the pointers enter returns, exactly as
 *     a guest dereferences whatever its page tables map. It checks that the
 *     caller follows the window protocol and measures how long guest accesses
 *     waited in the trap.
 *
 * guest_submitter  a guest driver on one channel: writes pushbuffers, GPFIFO
 *     entries, GP_PUT and the doorbell through a guest_window_double (one
 *     access each, so a suspend can land between any two), from the test's
 *     thread or from its own guest thread. Every "ordered" submission i runs
 *         COPY     seq -> record[i]                (in-order log)
 *         STREAM   counter[i], 1 pass              (non-idempotent)
 *         SEMAPHORE_RELEASE seq = i + 1
 *     so after execution record[i] == i exactly when submissions ran in order
 *     and counter[i] == vgpu_stream_word(0) exactly when submission i ran
 *     exactly once; seq counts executed submissions. On every access the
 *     submitter also checks its view of the window: GP_PUT is its own value,
 *     GP_GET never moves backwards nor past its GP_PUT, and the ring holds
 *     exactly the entries it wrote (never a NOP or fence of the backend).
 *
 * Reuse: link with guest_double_dep (tests/shadow/meson.build). The core's
 * tests create the window double, pass guest_window_double_ops() and the
 * double to vgpu_core_channel_create, call guest_window_double_attach with
 * the returned info, then drive a guest_submitter on the channel.
 *
 * Threads: the window double is fully thread-safe. A submitter is used by one
 * thread at a time (its own guest thread while started); the counters and
 * guest_submitter_executed may be read from any thread.
 */
#ifndef VGPU_TESTS_GUEST_DOUBLE_H
#define VGPU_TESTS_GUEST_DOUBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/guest_window.h"
#include "vgpu/hal.h"

/* ------------------------------------------------------------------------ */
/* The transport double                                                     */

struct guest_window_double;

struct guest_window_stats {
	uint64_t accesses;        /* guest_window_enter calls */
	uint64_t trapped;         /* accesses that found the window blocked */
	uint64_t trapped_ns;      /* total time those accesses waited */
	uint64_t trapped_max_ns;  /* longest single wait */
	uint64_t blocks;          /* ops->block calls */
	uint64_t maps_shadow;     /* ops->map(shadow = true) calls */
	uint64_t maps_real;       /* ops->map(shadow = false) calls */
	uint64_t protocol_errors; /* ops calls out of order (see guest_window.h) */
};

/*
 * A double for channels with ids below max_channels. Shadow pages are sized
 * from the info given to guest_window_double_attach, or control_bytes and
 * max_gpfifo_bytes when get_shadow comes first (the core creates the shadow
 * before returning the info).
 */
struct guest_window_double *guest_window_double_create(uint32_t max_channels,
                                                       uint32_t control_bytes,
                                                       uint32_t max_gpfifo_bytes);
/* Every shadow must have been released. */
void guest_window_double_destroy(struct guest_window_double *window);

/* The ops to pass with the double as ops_ctx. */
const struct vgpu_guest_window_ops *guest_window_double_ops(void);

/* Tell the double where the channel's real pages are (before the guest's
 * first access). -EINVAL for a bad id or layout. */
int guest_window_double_attach(struct guest_window_double *window,
                               const struct vgpu_hal_channel_info *info);
/* Forget the channel (after its shadow was released). */
void guest_window_double_detach(struct guest_window_double *window, uint32_t channel_id);

/* What a guest access sees: the currently mapped pages. */
struct guest_window_view {
	void *control;
	void *gpfifo;
	bool shadow; /* for assertions only: a guest cannot tell */
};

/* Begin one guest access; waits while the window is blocked. */
void guest_window_enter(struct guest_window_double *window, uint32_t channel_id,
                        struct guest_window_view *view);
void guest_window_leave(struct guest_window_double *window, uint32_t channel_id);

/* True while the channel's guest mapping points at the shadow pages. */
bool guest_window_double_is_shadow(struct guest_window_double *window, uint32_t channel_id);

/* Optional: called inside every block..map window right after block
 * returns (e.g. to check that the GPU or the guest are not touching pages, or
 * to stretch the window). NULL to remove. */
typedef void (*guest_window_blocked_fn)(void *arg, uint32_t channel_id);
void guest_window_double_on_blocked(struct guest_window_double *window,
                                    guest_window_blocked_fn fn, void *arg);

void guest_window_double_stats(struct guest_window_double *window, uint32_t channel_id,
                               struct guest_window_stats *out);

/* ------------------------------------------------------------------------ */
/* The guest driver                                                         */

struct guest_submitter;

struct guest_submitter_config {
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as; /* the channel's address space */
	struct guest_window_double *window;
	const struct vgpu_hal_channel_info *info;
	uint32_t max_submissions; /* ordered submissions the log holds */
	/*
	 * Memory. With alloc_memory the submitter allocates VRAM for its log
	 * (guest_submitter_data_bytes) and a host buffer for pushbuffers
	 * (guest_submitter_pushbuffer_bytes, written through its CPU pointer
	 * like guest RAM) and maps them at data_va and pushbuffer_va in as.
	 * Without, the caller has mapped that much memory there (any target)
	 * and pushbuffers are written through vgpu_hal_as_write.
	 */
	bool alloc_memory;
	uint64_t data_va;       /* 64 KiB aligned */
	uint64_t pushbuffer_va; /* 64 KiB aligned */
	/* Guest thread pacing: sleep up to this many microseconds (uniform
	 * random) between submissions; 0 = back to back. */
	uint32_t max_pause_us;
	uint64_t seed; /* for the pacing */
};

uint64_t guest_submitter_data_bytes(uint32_t max_submissions);
uint64_t guest_submitter_pushbuffer_bytes(uint32_t max_submissions);

int guest_submitter_create(const struct guest_submitter_config *config,
                           struct guest_submitter **out);
/* Stops the guest thread if running and frees what it allocated. */
void guest_submitter_destroy(struct guest_submitter *guest);

/* One ordered submission. -EAGAIN when the ring is full in the guest's view
 * (GP_PUT + 1 == GP_GET), -ENOSPC when the log is full. */
int guest_submitter_submit(struct guest_submitter *guest);
/* A submission of arbitrary commands (not part of the log), e.g. one that
 * faults. -EAGAIN as above, -EINVAL if too long (256 bytes max). */
int guest_submitter_submit_raw(struct guest_submitter *guest, const uint32_t *words,
                               uint32_t count);

/* Start/stop the guest thread, which submits ordered submissions until
 * stopped or the log is full, waiting (by polling its view of GP_GET, one
 * access per poll) while the ring is full. */
int guest_submitter_start(struct guest_submitter *guest);
void guest_submitter_stop(struct guest_submitter *guest);

/* Ordered submissions written so far (GP_PUT published). */
uint64_t guest_submitter_submitted(struct guest_submitter *guest);
/* Ordered submissions the GPU has executed (the seq semaphore, read through
 * the aperture). */
uint64_t guest_submitter_executed(struct guest_submitter *guest);
/* Wait until executed >= count. 0 or -ETIMEDOUT. */
int guest_submitter_wait_executed(struct guest_submitter *guest, uint64_t count,
                                  unsigned timeout_ms);

/* The guest's current view (one access): GP_PUT, GP_GET, and whether the
 * ring equals what it wrote. */
struct guest_submitter_view {
	uint32_t gp_put;
	uint32_t gp_get;
	bool ring_matches;
	bool shadow;
};
void guest_submitter_read_view(struct guest_submitter *guest, struct guest_submitter_view *out);
/* The guest's own idea of its GP_PUT (mod ring size). */
uint32_t guest_submitter_put(struct guest_submitter *guest);

/* A zeroed 4 KiB scratch area in the submitter's data region (GPU VA), for
 * a test's own semaphores. */
uint64_t guest_submitter_scratch_va(struct guest_submitter *guest);

/* View violations seen so far, with the first one described. */
uint64_t guest_submitter_view_errors(struct guest_submitter *guest, char *first, size_t len);

/*
 * Check the log through the aperture: seq == executed == submitted, for each
 * ordered submission i record[i] == i and counter[i] ran once, and nothing
 * beyond ran. 0, or -EINVAL with the first violation in why.
 */
int guest_submitter_verify(struct guest_submitter *guest, char *why, size_t len);

#endif /* VGPU_TESTS_GUEST_DOUBLE_H */
