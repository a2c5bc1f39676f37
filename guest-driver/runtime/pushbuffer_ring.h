/* SPDX-License-Identifier: MIT */
/*
 * pushbuffer_ring.h - bookkeeping of a channel's pushbuffer ring and GPFIFO
 * slots: which bytes and slots the GPU may still read (internal to the
 * runtime; no device access here, so it is tested on its own).
 *
 * Positions are monotonic byte counts; offset = position % bytes. A
 * submission occupies one contiguous range and one GPFIFO slot; when it does
 * not fit before the end of the ring, it starts at offset 0 and the skipped
 * tail counts as part of it. Each submission ends with a fence; once the
 * fence passed, the GPU has read the whole pushbuffer range (it reads a
 * pushbuffer before running it) and fetched the GPFIFO entry, so both may be
 * reused. At most max_inflight (GPFIFO entries - 1: a ring with
 * GP_PUT + 1 == GP_GET is full) submissions are in flight.
 */
#ifndef VGPU_GUEST_PUSHBUFFER_RING_H
#define VGPU_GUEST_PUSHBUFFER_RING_H

#include <stdbool.h>
#include <stdint.h>

struct pushbuffer_span {
	uint64_t fence; /* passes once the GPU is done with the span */
	uint64_t end;   /* position just past the span */
};

struct pushbuffer_ring {
	uint32_t bytes;  /* ring size, a multiple of 8 */
	uint64_t head;   /* position of the next write */
	uint64_t tail;   /* every position below is free */
	struct pushbuffer_span *inflight; /* circular, oldest at first */
	uint32_t max_inflight;
	uint32_t first;
	uint32_t count;
	uint64_t wraps;  /* submissions that started over at offset 0 */
};

/* -EINVAL unless bytes >= 64 and max_inflight >= 1; -ENOMEM. */
int pushbuffer_ring_init(struct pushbuffer_ring *ring, uint32_t bytes, uint32_t max_inflight);
void pushbuffer_ring_fini(struct pushbuffer_ring *ring);

/* Round a submission length the way the ring stores it (8-byte steps). */
uint32_t pushbuffer_ring_span_bytes(uint32_t len);

/* Where len bytes would go: 0 with the position, or -EAGAIN while the GPU
 * still uses the space or max_inflight submissions are in flight, -EINVAL if
 * len can never fit (more than half the ring). */
int pushbuffer_ring_place(const struct pushbuffer_ring *ring, uint32_t len, uint64_t *position);

/* Record a submission of len bytes at position (from place, len no larger
 * than placed) that fence completes. */
void pushbuffer_ring_commit(struct pushbuffer_ring *ring, uint64_t position, uint32_t len,
                            uint64_t fence);

/* Everything whose fence is <= completed is free again. */
void pushbuffer_ring_retire(struct pushbuffer_ring *ring, uint64_t completed);

/* The fence of the oldest submission in flight; false if none. */
bool pushbuffer_ring_oldest_fence(const struct pushbuffer_ring *ring, uint64_t *fence);

static inline uint32_t pushbuffer_ring_offset(const struct pushbuffer_ring *ring,
                                              uint64_t position)
{
	return (uint32_t)(position % ring->bytes);
}

#endif /* VGPU_GUEST_PUSHBUFFER_RING_H */
