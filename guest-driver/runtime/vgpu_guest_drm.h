/* SPDX-License-Identifier: MIT */
/*
 * vgpu_guest_drm.h - libvgpu-guest inside a VM: the vGPU through vgpu.ko's
 * DRM render node, with libdrm (library vgpu_guest_drm_dep).
 *
 * Resource requests are ioctls (include/uapi/vgpu_drm.h) that the kernel
 * driver turns into mailbox requests; channel windows are mmap()ed from the
 * render node, and submission writes them directly - no system call, no
 * trap. Fence waits (fences submitted with VGPU_SUBMIT_INTERRUPT) sleep in
 * the driver's interrupt-driven WAIT_FENCE ioctl.
 */
#ifndef VGPU_GUEST_DRM_H
#define VGPU_GUEST_DRM_H

#include <stddef.h>

#include "vgpu_drm.h"
#include "vgpu_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Environment variable naming the node to open when the caller gives none. */
#define VGPU_GUEST_DRM_DEVICE_ENV "VGPU_DRM_DEVICE"

/*
 * Open a vGPU render node: path (e.g. /dev/dri/renderD128), else
 * $VGPU_DRM_DEVICE, else the first render node whose driver is "vgpu".
 * On failure why says what happened and what to do (-ENODEV: no vGPU
 * render node; load vgpu.ko / check the device).
 */
int vgpu_device_open_drm(const char *path, struct vgpu_guest_device **out, char *why,
                         size_t why_len);

/* For tools: the render node's path and descriptor, and the driver's
 * statistics (the VM's shares plus the driver's counters). NULL / -1 /
 * -EINVAL when dev is not a DRM device. */
const char *vgpu_guest_drm_path(const struct vgpu_guest_device *dev);
int vgpu_guest_drm_fd(const struct vgpu_guest_device *dev);
int vgpu_guest_drm_stats(struct vgpu_guest_device *dev, struct drm_vgpu_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_DRM_H */
