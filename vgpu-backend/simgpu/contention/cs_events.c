// SPDX-License-Identifier: MIT
/* cs_events.c - binary min-heap of timed callbacks (see cs_events.h). */
#include "cs_events.h"

#include <errno.h>
#include <stdlib.h>

struct cs_event {
	uint64_t time;
	uint64_t order;
	cs_event_fn fn;
	void *target;
	void *arg;
};

struct cs_events {
	struct cs_event *heap;
	size_t count, capacity;
	uint64_t next_order;
	uint64_t now;
};

struct cs_events *cs_events_create(void)
{
	return calloc(1, sizeof(struct cs_events));
}

void cs_events_destroy(struct cs_events *q)
{
	if (!q)
		return;
	free(q->heap);
	free(q);
}

static bool earlier(const struct cs_event *a, const struct cs_event *b)
{
	return a->time < b->time || (a->time == b->time && a->order < b->order);
}

int cs_events_at(struct cs_events *q, uint64_t time, cs_event_fn fn, void *target, void *arg)
{
	size_t i;

	if (q->count == q->capacity) {
		size_t capacity = q->capacity ? 2 * q->capacity : 1024;
		struct cs_event *heap = realloc(q->heap, capacity * sizeof(*heap));

		if (!heap)
			return -ENOMEM;
		q->heap = heap;
		q->capacity = capacity;
	}
	if (time < q->now)
		time = q->now;
	i = q->count++;
	q->heap[i] = (struct cs_event){ time, q->next_order++, fn, target, arg };
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		struct cs_event swap;

		if (!earlier(&q->heap[i], &q->heap[parent]))
			break;
		swap = q->heap[i];
		q->heap[i] = q->heap[parent];
		q->heap[parent] = swap;
		i = parent;
	}
	return 0;
}

bool cs_events_run_one(struct cs_events *q, uint64_t limit)
{
	struct cs_event event;
	size_t i = 0;

	if (q->count == 0 || q->heap[0].time > limit)
		return false;
	event = q->heap[0];
	q->heap[0] = q->heap[--q->count];
	for (;;) {
		size_t left = 2 * i + 1, right = left + 1, least = i;
		struct cs_event swap;

		if (left < q->count && earlier(&q->heap[left], &q->heap[least]))
			least = left;
		if (right < q->count && earlier(&q->heap[right], &q->heap[least]))
			least = right;
		if (least == i)
			break;
		swap = q->heap[i];
		q->heap[i] = q->heap[least];
		q->heap[least] = swap;
		i = least;
	}
	q->now = event.time;
	event.fn(event.target, event.arg, event.time);
	return true;
}

uint64_t cs_events_now(const struct cs_events *q)
{
	return q->now;
}
