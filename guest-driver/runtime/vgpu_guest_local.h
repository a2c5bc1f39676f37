/* SPDX-License-Identifier: MIT */
/*
 * vgpu_guest_local.h - libvgpu-guest over vgpud's local transport: a process
 * that is not a VM gets a vGPU exactly as a VM's guest driver does
 * (vgpu/local_device.h), and speaks the mailbox protocol with the shared
 * guest-side code (guest-driver/common).
 *
 * Opening performs HELLO (asking for priority hints, stats and doorbell
 * kicks) and QUERY. Resource requests are mailbox round trips: one trapped
 * doorbell write each. Channel windows are the device's BAR2, mapped in this
 * process; submission writes them directly. Fence waits sleep on the
 * device's interrupt eventfd.
 */
#ifndef VGPU_GUEST_LOCAL_H
#define VGPU_GUEST_LOCAL_H

#include "vgpu/local_device.h"
#include "vgpu_guest.h"
#include "vgpu_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Connect to vgpud (config->socket_path, else $VGPUD_SOCKET, else
 * VGPU_LOCAL_DEFAULT_SOCKET) as VM config->vm_name with config->profile.
 * timeout_ms bounds each mailbox request (0: VGPU_PROTO_DEFAULT_TIMEOUT_MS).
 * On failure why says what happened and what to do; -ENOENT or
 * -ECONNREFUSED mean vgpud is not listening there.
 */
int vgpu_device_open_local(const struct vgpu_local_device_config *config, int timeout_ms,
                           struct vgpu_guest_device **out, char *why, size_t why_len);

/* The socket path open would use for config (for messages). */
const char *vgpu_guest_local_socket_path(const struct vgpu_local_device_config *config);

/* For tests and tools: the mailbox protocol of a local device (NULL if dev
 * is not one), e.g. for its counters or raw requests. */
struct vgpu_proto *vgpu_guest_local_proto(struct vgpu_guest_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_LOCAL_H */
