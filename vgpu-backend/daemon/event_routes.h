/* SPDX-License-Identifier: MIT */
/*
 * event_routes.h - which VM's channel window a GPU channel event belongs to.
 *
 * The core reports fences and channel errors on the HAL's event thread with
 * the HAL channel id. The routes map that id to the device and the window
 * index, so the device can set the channel's bit in
 * VGPU_REG_FENCE_CHANNELS / VGPU_REG_ERROR_CHANNELS and raise the
 * interrupt. One mutex, a leaf: the event thread takes it while calling the
 * device's raise (which only touches atomics and the transport's
 * non-blocking raise_irq), and a device removes its routes under it before
 * it is freed, so an event never reaches a freed device. A channel error is
 * also logged (warn: "VM 'NAME': channel error: ...", the cause and the
 * faulting GPU VA), rate limited per VM since a guest can kill its own
 * channels at will: one write(2) of a line under the mutex.
 */
#ifndef VGPUD_EVENT_ROUTES_H
#define VGPUD_EVENT_ROUTES_H

#include <pthread.h>
#include <stdint.h>

#include "vgpu/core.h"

struct vgpud_device;

struct vgpud_event_route {
	struct vgpud_device *device; /* NULL: no route */
	uint32_t index;
};

struct vgpud_event_routes {
	pthread_mutex_t lock;
	struct vgpud_event_route *routes; /* indexed by HAL channel id */
	uint32_t count;
	uint64_t fences, errors, unrouted;
};

int vgpud_event_routes_init(struct vgpud_event_routes *r, uint32_t max_channels);
void vgpud_event_routes_fini(struct vgpud_event_routes *r);
void vgpud_event_routes_set(struct vgpud_event_routes *r, uint32_t channel_id,
                            struct vgpud_device *device, uint32_t index);
/* Remove the route if it still points at device. */
void vgpud_event_routes_clear(struct vgpud_event_routes *r, uint32_t channel_id,
                              struct vgpud_device *device);

/* The core's event callbacks (struct vgpu_core_config on_fence /
 * on_channel_error) with ctx = the routes. */
void vgpud_event_on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event);
void vgpud_event_on_channel_error(void *ctx, struct vgpu_vm *vm,
                                  const struct vgpu_hal_event *event);

#endif /* VGPUD_EVENT_ROUTES_H */
