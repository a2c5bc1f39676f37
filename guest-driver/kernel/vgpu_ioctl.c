// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_ioctl.c - the driver's ioctls (include/uapi/vgpu_drm.h). Each one
 * checks its arguments, then works inside drm_dev_enter()/drm_dev_exit()
 * so that it either completes against the device or fails with ENODEV
 * once the device is unbound.
 */
#include <linux/log2.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_ioctl.h>

#include "vgpu_drv.h"

static int vgpu_ioctl_get_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vgpu_drm_device *vdev = to_vgpu(drm);
	struct drm_vgpu_get_info *args = data;
	struct vgpu_query_response query;
	int idx, ret;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vgpu_proto_query(&vdev->proto, &query);
	if (ret) {
		vgpu_host_report(vdev, ret, "QUERY failed");
		goto out;
	}
	args->uapi_version = DRM_VGPU_UAPI_VERSION;
	args->abi_version = vdev->proto.hello.abi_version;
	args->features = vdev->proto.hello.features;
	args->max_channels = vdev->max_channels;
	args->vram_share_bytes = query.vram_share_bytes;
	args->cap_bytes = query.cap_bytes;
	args->chunk_bytes = query.chunk_bytes;
	args->vram_total_bytes = query.vram_total_bytes;
	args->page_size_mask = query.page_size_mask;
	args->irq_mode = vdev->irq_mode;
out:
	drm_dev_exit(idx);
	return ret;
}

static int vgpu_ioctl_alloc(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_alloc *args = data;
	int idx, ret;

	if (!args->bytes || args->priority > DRM_VGPU_PRIORITY_MAX || args->flags)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vgpu_bo_create(to_vgpu(drm), file, args);
	drm_dev_exit(idx);
	return ret;
}

static int vgpu_ioctl_free(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_free *args = data;
	struct vgpu_bo *buf;

	if (args->pad)
		return -EINVAL;
	buf = vgpu_bo_lookup(file, args->handle);
	if (!buf)
		return -EINVAL;
	drm_gem_object_put(&buf->base);
	/* The host FREE runs when the last reference goes (usually now). */
	return drm_gem_handle_delete(file, args->handle);
}

static int vgpu_ioctl_set_priority(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vgpu_drm_device *vdev = to_vgpu(drm);
	struct drm_vgpu_set_priority *args = data;
	struct vgpu_bo *buf;
	int idx, ret;

	if (args->priority > DRM_VGPU_PRIORITY_MAX)
		return -EINVAL;
	buf = vgpu_bo_lookup(file, args->handle);
	if (!buf)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_put;
	}
	ret = vgpu_proto_set_priority(&vdev->proto, buf->host_handle, args->priority);
	if (ret)
		vgpu_host_report(vdev, ret, "SET_PRIORITY of buffer %u to %u failed",
				 buf->host_handle, args->priority);
	else
		WRITE_ONCE(buf->priority, args->priority);
	drm_dev_exit(idx);
out_put:
	drm_gem_object_put(&buf->base);
	return ret;
}

static int vgpu_ioctl_channel_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_channel_create *args = data;
	int idx, ret;

	if (args->flags || args->pad ||
	    (args->gpfifo_entries && !is_power_of_2(args->gpfifo_entries)))
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vgpu_channel_create(to_vgpu(drm), file, args);
	drm_dev_exit(idx);
	return ret;
}

static int vgpu_ioctl_channel_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_channel_destroy *args = data;
	struct vgpu_channel *ch;

	if (args->pad)
		return -EINVAL;
	ch = vgpu_channel_lookup(file, args->handle);
	if (!ch)
		return -EINVAL;
	drm_gem_object_put(&ch->base);
	/* The host CHANNEL_DESTROY runs once the window is unmapped too. */
	return drm_gem_handle_delete(file, args->handle);
}

static int vgpu_ioctl_wait_fence(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_wait_fence *args = data;
	struct vgpu_channel *ch;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	ch = vgpu_channel_lookup(file, args->channel);
	if (!ch)
		return -EINVAL;
	ret = vgpu_fence_wait(to_vgpu(drm), ch, args->offset, args->value, args->deadline_ns);
	drm_gem_object_put(&ch->base);
	return ret;
}

static int vgpu_ioctl_stats(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vgpu_drm_device *vdev = to_vgpu(drm);
	const struct vgpu_proto_counters *mailbox = &vdev->proto.counters;
	struct vgpu_counters *counters = &vdev->counters;
	struct drm_vgpu_stats *args = data;
	struct vgpu_stats_response stats;
	int idx, ret;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vgpu_proto_stats(&vdev->proto, &stats);
	if (ret) {
		vgpu_host_report(vdev, ret, "STATS failed");
		goto out;
	}
	args->allocated_bytes = stats.allocated_bytes;
	args->resident_bytes = stats.resident_bytes;
	args->evicted_bytes = stats.evicted_bytes;
	args->fair_share_bytes = stats.fair_share_bytes;
	args->evictions = stats.evictions;
	args->returns = stats.returns;

	/* Read without the lock: the protocol allows torn values here. */
	args->mailbox_requests = READ_ONCE(mailbox->requests);
	args->mailbox_errors = READ_ONCE(mailbox->error_statuses);
	args->mailbox_timeouts = READ_ONCE(mailbox->timeouts);
	args->mailbox_doorbells = READ_ONCE(mailbox->doorbells);
	args->irq_mailbox = atomic64_read(&counters->irq[VGPU_IRQ_SOURCE_MAILBOX]);
	args->irq_fence = atomic64_read(&counters->irq[VGPU_IRQ_SOURCE_FENCE]);
	args->irq_error = atomic64_read(&counters->irq[VGPU_IRQ_SOURCE_ERROR]);
	args->fence_waits = atomic64_read(&counters->fence_waits);
	args->killed_channels = atomic_read(&counters->killed_channels);

	mutex_lock(&vdev->objects_lock);
	args->live_buffer_bytes = vdev->live_buffer_bytes;
	args->live_buffers = vdev->live_buffers;
	args->live_channels = vdev->live_channels;
	args->live_modules = vdev->live_modules;
	mutex_unlock(&vdev->objects_lock);
out:
	drm_dev_exit(idx);
	return ret;
}

static int vgpu_ioctl_module_load(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_module_load *args = data;
	int idx, ret;

	if (args->flags || args->pad || !args->image_bytes ||
	    args->image_bytes > DRM_VGPU_MODULE_IMAGE_MAX_BYTES || !args->table_bytes ||
	    args->table_bytes > DRM_VGPU_MODULE_TABLE_MAX_BYTES ||
	    args->image_va + args->image_bytes < args->image_va)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vgpu_module_load(to_vgpu(drm), file, args);
	drm_dev_exit(idx);
	return ret;
}

static int vgpu_ioctl_module_unload(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vgpu_module_unload *args = data;

	if (args->pad)
		return -EINVAL;
	/* vgpu_module_release reaches the host only while the device is there. */
	return vgpu_module_unload(to_vgpu(drm), file, args->module);
}

const struct drm_ioctl_desc vgpu_ioctls[VGPU_NUM_IOCTLS] = {
	DRM_IOCTL_DEF_DRV(VGPU_GET_INFO, vgpu_ioctl_get_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_ALLOC, vgpu_ioctl_alloc, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_FREE, vgpu_ioctl_free, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_SET_PRIORITY, vgpu_ioctl_set_priority, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_CHANNEL_CREATE, vgpu_ioctl_channel_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_CHANNEL_DESTROY, vgpu_ioctl_channel_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_WAIT_FENCE, vgpu_ioctl_wait_fence, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_STATS, vgpu_ioctl_stats, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_MODULE_LOAD, vgpu_ioctl_module_load, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(VGPU_MODULE_UNLOAD, vgpu_ioctl_module_unload, DRM_RENDER_ALLOW),
};
