// SPDX-License-Identifier: MIT
/* events.c - delivery of GPU events (see events.h). */
#include "events.h"

#include <stdbool.h>

/* Set while this thread runs a handler. */
static __thread bool in_handler;

void event_sink_init(struct event_sink *sink)
{
	pthread_mutex_init(&sink->lock, NULL);
	pthread_cond_init(&sink->idle, NULL);
	sink->handler = NULL;
	sink->context = NULL;
	sink->deliveries = 0;
}

void event_sink_destroy(struct event_sink *sink)
{
	pthread_cond_destroy(&sink->idle);
	pthread_mutex_destroy(&sink->lock);
}

void event_sink_set_handler(struct event_sink *sink, vgpu_hal_event_fn handler, void *context)
{
	pthread_mutex_lock(&sink->lock);
	while (sink->deliveries && !in_handler)
		pthread_cond_wait(&sink->idle, &sink->lock);
	sink->handler = handler;
	sink->context = context;
	pthread_mutex_unlock(&sink->lock);
}

void event_sink_raise(struct event_sink *sink, const struct vgpu_hal_event *event)
{
	vgpu_hal_event_fn handler;
	void *context;

	pthread_mutex_lock(&sink->lock);
	handler = sink->handler;
	context = sink->context;
	if (handler)
		sink->deliveries++;
	pthread_mutex_unlock(&sink->lock);
	if (!handler)
		return;
	in_handler = true;
	handler(context, event);
	in_handler = false;
	pthread_mutex_lock(&sink->lock);
	if (--sink->deliveries == 0)
		pthread_cond_broadcast(&sink->idle);
	pthread_mutex_unlock(&sink->lock);
}
