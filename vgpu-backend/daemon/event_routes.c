// SPDX-License-Identifier: MIT
/* event_routes.c - GPU channel events to VM devices, see event_routes.h. */
#include "event_routes.h"

#include <errno.h>
#include <stdlib.h>

#include "device.h"

int vgpud_event_routes_init(struct vgpud_event_routes *r, uint32_t max_channels)
{
	r->routes = calloc(max_channels ? max_channels : 1, sizeof(*r->routes));
	if (!r->routes)
		return -ENOMEM;
	r->count = max_channels;
	r->fences = r->errors = r->unrouted = 0;
	pthread_mutex_init(&r->lock, NULL);
	return 0;
}

void vgpud_event_routes_fini(struct vgpud_event_routes *r)
{
	free(r->routes);
	r->routes = NULL;
	pthread_mutex_destroy(&r->lock);
}

void vgpud_event_routes_set(struct vgpud_event_routes *r, uint32_t channel_id,
                            struct vgpu_device *device, uint32_t index)
{
	if (channel_id >= r->count)
		return;
	pthread_mutex_lock(&r->lock);
	r->routes[channel_id].device = device;
	r->routes[channel_id].index = index;
	pthread_mutex_unlock(&r->lock);
}

void vgpud_event_routes_clear(struct vgpud_event_routes *r, uint32_t channel_id,
                              struct vgpu_device *device)
{
	if (channel_id >= r->count)
		return;
	pthread_mutex_lock(&r->lock);
	if (r->routes[channel_id].device == device)
		r->routes[channel_id].device = NULL;
	pthread_mutex_unlock(&r->lock);
}

static void dispatch(struct vgpud_event_routes *r, const struct vgpu_hal_event *event, bool error)
{
	pthread_mutex_lock(&r->lock);
	if (event->channel_id < r->count && r->routes[event->channel_id].device) {
		struct vgpud_event_route *route = &r->routes[event->channel_id];

		if (error) {
			r->errors++;
			vgpu_device_channel_error(route->device, route->index);
		} else {
			r->fences++;
			vgpu_device_channel_fence(route->device, route->index);
		}
	} else {
		r->unrouted++;
	}
	pthread_mutex_unlock(&r->lock);
}

void vgpud_event_on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	(void)vm;
	dispatch(ctx, event, false);
}

void vgpud_event_on_channel_error(void *ctx, struct vgpu_vm *vm,
                                  const struct vgpu_hal_event *event)
{
	(void)vm;
	dispatch(ctx, event, true);
}
