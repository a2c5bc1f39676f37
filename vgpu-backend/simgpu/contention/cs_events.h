/* SPDX-License-Identifier: MIT */
/*
 * cs_events.h - the contention model's modeled clock: a queue of timed
 * callbacks, run in (time, insertion) order.
 *
 * Promise: time is an integer count of GPU core cycles; two events at the same
 * time run in the order they were scheduled, so a run is deterministic.
 * Nothing here knows what an event means.
 */
#ifndef SIMGPU_CS_EVENTS_H
#define SIMGPU_CS_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*cs_event_fn)(void *target, void *arg, uint64_t now);

struct cs_events;

struct cs_events *cs_events_create(void);
void cs_events_destroy(struct cs_events *q);

/* Run fn(target, arg, time) at time (>= the time being run). 0 or -ENOMEM. */
int cs_events_at(struct cs_events *q, uint64_t time, cs_event_fn fn, void *target, void *arg);

/* Runs the earliest event if its time is <= limit and returns true; else
 * returns false and leaves it queued. */
bool cs_events_run_one(struct cs_events *q, uint64_t limit);

/* The time of the event being run or last run (0 before the first). */
uint64_t cs_events_now(const struct cs_events *q);

#endif /* SIMGPU_CS_EVENTS_H */
