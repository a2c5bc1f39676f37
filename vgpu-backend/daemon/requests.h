/* SPDX-License-Identifier: MIT */
/*
 * requests.h - what each mailbox request does to its VM (requests.c): the
 * handler the device's mailbox worker runs, and the channel windows it
 * creates, released at detach.
 *
 * Threads: vgpu_device_handle_request runs on the device's mailbox worker
 * only (it may wait for the core: an allocation that evicts, a channel
 * drain); vgpu_device_destroy_windows runs at detach, after the worker
 * stopped.
 */
#ifndef VGPUD_REQUESTS_H
#define VGPUD_REQUESTS_H

#include "mailbox.h"

struct vgpud_device;

/* The mailbox handler: ctx = the device. Fills response (status and
 * payload) for request; never fails otherwise. */
void vgpu_device_handle_request(void *ctx, const struct vgpu_request *request,
                                struct vgpu_response *response);

/* Release every channel window of dev (detach). */
void vgpu_device_destroy_windows(struct vgpud_device *dev);

#endif /* VGPUD_REQUESTS_H */
