/* SPDX-License-Identifier: MIT */
/*
 * events.h - delivery of GPU events to the HAL's event handler.
 *
 * Events are delivered synchronously on the raising simgpu thread with no
 * simgpu lock held. Changing the handler from another thread waits until no
 * delivery to the old one is in progress; from inside the handler it takes
 * effect at once. With no handler installed, events are dropped.
 */
#ifndef SIMGPU_EVENTS_H
#define SIMGPU_EVENTS_H

#include <pthread.h>

#include "vgpu/hal.h"

struct event_sink {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	vgpu_hal_event_fn handler;
	void *context;
	unsigned deliveries; /* in progress */
};

void event_sink_init(struct event_sink *sink);
void event_sink_destroy(struct event_sink *sink);
void event_sink_set_handler(struct event_sink *sink, vgpu_hal_event_fn handler, void *context);
void event_sink_raise(struct event_sink *sink, const struct vgpu_hal_event *event);

#endif /* SIMGPU_EVENTS_H */
