/* SPDX-License-Identifier: MIT */
/* device_internal.h - struct vgpu_guest_device, shared by the runtime's files. */
#ifndef VGPU_GUEST_DEVICE_INTERNAL_H
#define VGPU_GUEST_DEVICE_INTERNAL_H

#include "vgpu_guest_backend.h"

struct vgpu_guest_device {
	const struct vgpu_backend_ops *ops;
	void *backend;
	struct vgpu_device_info info;
	uint32_t channels; /* open channels */
	char error[384];
};

/* Record a failure for vgpu_device_last_error: "<what>: <explanation>". */
void device_fail(struct vgpu_guest_device *dev, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What an errno from a backend means for a user. */
const char *vgpu_guest_explain(int err);

#endif /* VGPU_GUEST_DEVICE_INTERNAL_H */
