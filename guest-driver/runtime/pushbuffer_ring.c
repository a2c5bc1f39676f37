// SPDX-License-Identifier: MIT
/* pushbuffer_ring.c - pushbuffer and GPFIFO bookkeeping (see pushbuffer_ring.h). */
#include "pushbuffer_ring.h"

#include <errno.h>
#include <stdlib.h>

int pushbuffer_ring_init(struct pushbuffer_ring *ring, uint32_t bytes, uint32_t max_inflight)
{
	*ring = (struct pushbuffer_ring){ 0 };
	bytes &= ~7u;
	if (bytes < 64 || max_inflight < 1)
		return -EINVAL;
	ring->inflight = calloc(max_inflight, sizeof(*ring->inflight));
	if (!ring->inflight)
		return -ENOMEM;
	ring->bytes = bytes;
	ring->max_inflight = max_inflight;
	return 0;
}

void pushbuffer_ring_fini(struct pushbuffer_ring *ring)
{
	free(ring->inflight);
	ring->inflight = NULL;
}

uint32_t pushbuffer_ring_span_bytes(uint32_t len)
{
	return (len + 7u) & ~7u;
}

int pushbuffer_ring_place(const struct pushbuffer_ring *ring, uint32_t len, uint64_t *position)
{
	uint64_t position_now = ring->head;
	uint32_t offset = pushbuffer_ring_offset(ring, position_now);

	len = pushbuffer_ring_span_bytes(len);
	if (len == 0 || len > ring->bytes / 2)
		return -EINVAL;
	if (ring->count == ring->max_inflight)
		return -EAGAIN;
	if ((uint64_t)offset + len > ring->bytes)
		position_now += ring->bytes - offset; /* skip the tail */
	if (position_now + len - ring->tail > ring->bytes)
		return -EAGAIN;
	*position = position_now;
	return 0;
}

void pushbuffer_ring_commit(struct pushbuffer_ring *ring, uint64_t position, uint32_t len,
                            uint64_t fence)
{
	struct pushbuffer_span *span;

	if (position && pushbuffer_ring_offset(ring, position) == 0)
		ring->wraps++;
	ring->head = position + pushbuffer_ring_span_bytes(len);
	span = &ring->inflight[(ring->first + ring->count) % ring->max_inflight];
	span->fence = fence;
	span->end = ring->head;
	ring->count++;
}

void pushbuffer_ring_retire(struct pushbuffer_ring *ring, uint64_t completed)
{
	while (ring->count && ring->inflight[ring->first].fence <= completed) {
		ring->tail = ring->inflight[ring->first].end;
		ring->first = (ring->first + 1) % ring->max_inflight;
		ring->count--;
	}
}

bool pushbuffer_ring_oldest_fence(const struct pushbuffer_ring *ring, uint64_t *fence)
{
	if (!ring->count)
		return false;
	*fence = ring->inflight[ring->first].fence;
	return true;
}
