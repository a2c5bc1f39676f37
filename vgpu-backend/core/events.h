/* SPDX-License-Identifier: MIT */
/*
 * events.h - the HAL's events for the core (channel errors, ...), dispatched through
 * the channel table. The HAL's event thread.
 * Implemented in events.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_EVENTS_H
#define VGPU_CORE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_hal_event;

void vgpu_core_handle_event(void *ctx, const struct vgpu_hal_event *event);

#endif /* VGPU_CORE_EVENTS_H */
