// SPDX-License-Identifier: MIT
/* device.c - a vGPU device over a backend (see vgpu_guest.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"

const char *vgpu_guest_explain(int err)
{
	switch (err) {
	case -ENOMEM:
		return "out of GPU memory: the VM's cap or the host's budget for evicted memory "
		       "is exhausted";
	case -ENOSPC:
		return "a per-VM limit (buffers or channels) is reached";
	case -ENOENT:
		return "no such buffer or channel for this VM";
	case -EINVAL:
		return "invalid argument";
	case -EOPNOTSUPP:
		return "the vGPU does not support this request";
	case -EPROTONOSUPPORT:
		return "the vGPU speaks an incompatible ABI version";
	case -ENOTCONN:
		return "the vGPU was not initialised (no HELLO)";
	case -EIO:
		return "the GPU or the backend reported an error";
	case -ETIMEDOUT:
		return "the vGPU did not answer in time";
	case -EBUSY:
		return "the vGPU's request ring stayed full";
	case -EAGAIN:
		return "the backend is busy (another VM's channels did not drain in time); "
		       "try again";
	case -ENODEV:
		return "the vGPU is gone (vgpud stopped or detached this VM)";
	case -EPROTO:
		return "the vGPU broke the protocol (malformed response)";
	default:
		return strerror(-err);
	}
}

void device_fail(struct vgpu_guest_device *dev, int err, const char *fmt, ...)
{
	char what[160];
	va_list args;

	va_start(args, fmt);
	vsnprintf(what, sizeof(what), fmt, args);
	va_end(args);
	snprintf(dev->error, sizeof(dev->error), "%s: %s", what, vgpu_guest_explain(err));
}

int vgpu_device_create(const struct vgpu_backend_ops *ops, void *backend,
                       struct vgpu_guest_device **out, char *why, size_t why_len)
{
	struct vgpu_guest_device *dev;
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		ops->destroy(backend);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	dev->ops = ops;
	dev->backend = backend;
	ret = ops->info(backend, &dev->info);
	if (ret) {
		snprintf(why, why_len, "querying the vGPU failed: %s", vgpu_guest_explain(ret));
		ops->destroy(backend);
		free(dev);
		return ret;
	}
	dev->info.backend = ops->name;
	*out = dev;
	return 0;
}

void vgpu_device_close(struct vgpu_guest_device *dev)
{
	if (!dev)
		return;
	dev->ops->destroy(dev->backend);
	free(dev);
}

const struct vgpu_device_info *vgpu_device_info(const struct vgpu_guest_device *dev)
{
	return &dev->info;
}

const char *vgpu_device_last_error(const struct vgpu_guest_device *dev)
{
	return dev->error;
}

int vgpu_buffer_alloc(struct vgpu_guest_device *dev, uint64_t bytes, uint32_t priority,
                      struct vgpu_guest_buffer *out)
{
	struct vgpu_alloc_response resp;
	int ret;

	if (!bytes || priority > VGPU_PRIORITY_MAX) {
		device_fail(dev, -EINVAL, "ALLOC of %" PRIu64 " bytes at priority %u", bytes,
		            priority);
		return -EINVAL;
	}
	ret = dev->ops->alloc(dev->backend, bytes, priority, VGPU_ALLOC_FLAGS_ALL, &resp);
	if (ret) {
		device_fail(dev, ret, "ALLOC of %" PRIu64 " bytes", bytes);
		return ret;
	}
	out->handle = resp.handle;
	out->gpu_va = resp.gpu_va;
	out->bytes = resp.bytes;
	return 0;
}

int vgpu_buffer_free(struct vgpu_guest_device *dev, const struct vgpu_guest_buffer *buf)
{
	int ret = dev->ops->free(dev->backend, buf->handle);

	if (ret)
		device_fail(dev, ret, "FREE of buffer %u", buf->handle);
	return ret;
}

int vgpu_buffer_set_priority(struct vgpu_guest_device *dev, const struct vgpu_guest_buffer *buf,
                             uint32_t priority)
{
	int ret;

	if (priority > VGPU_PRIORITY_MAX)
		ret = -EINVAL;
	else
		ret = dev->ops->set_priority(dev->backend, buf->handle, priority);
	if (ret)
		device_fail(dev, ret, "SET_PRIORITY %u of buffer %u", priority, buf->handle);
	return ret;
}

int vgpu_device_stats(struct vgpu_guest_device *dev, struct vgpu_stats_response *out)
{
	int ret = dev->ops->stats(dev->backend, out);

	if (ret)
		device_fail(dev, ret, "STATS");
	return ret;
}
