// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_gem.c - GPU memory buffers: GEM objects standing for an ALLOC of
 * this VM on the host.
 *
 * A buffer has a GPU virtual address and no CPU pages (ABI v1 gives the
 * guest no CPU view of GPU memory), so its GEM object is a private one
 * without backing storage or mmap offset. The host FREE happens when the
 * last reference is gone, normally when userspace drops the handle. At
 * unbind, vgpu_bos_release_all() frees on the host whatever userspace
 * still holds; the GEM objects themselves stay until their handles go.
 */
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>

#include "vgpu_drv.h"

static inline struct vgpu_bo *to_vgpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct vgpu_bo, base);
}

static void vgpu_bo_free(struct drm_gem_object *obj)
{
	struct vgpu_bo *buf = to_vgpu_bo(obj);
	struct vgpu_drm_device *vdev = to_vgpu(obj->dev);
	bool release;
	int idx, ret;
	bool entered = drm_dev_enter(obj->dev, &idx);

	mutex_lock(&vdev->objects_lock);
	list_del(&buf->node);
	vdev->live_buffers--;
	vdev->live_buffer_bytes -= buf->bytes;
	release = entered && !buf->host_released;
	buf->host_released = true;
	mutex_unlock(&vdev->objects_lock);

	if (release) {
		ret = vgpu_proto_free(&vdev->proto, buf->host_handle);
		if (ret)
			vgpu_host_report(vdev, ret,
					 "FREE of buffer %u (%llu bytes at GPU VA 0x%llx) failed; the host keeps it until the VM ends",
					 buf->host_handle, buf->bytes, buf->gpu_va);
	}
	if (entered)
		drm_dev_exit(idx);

	drm_gem_object_release(obj);
	kfree(buf);
}

static const struct drm_gem_object_funcs vgpu_bo_funcs = {
	.free = vgpu_bo_free,
};

/*
 * ALLOC (args->bytes, priority, flags) on the host and wrap the result in a
 * GEM object with a handle in file; fill in the rest of args.
 */
int vgpu_bo_create(struct vgpu_drm_device *vdev, struct drm_file *file,
		   struct drm_vgpu_alloc *args)
{
	u64 bytes = args->bytes;
	u32 priority = args->priority, flags = args->flags;
	struct vgpu_alloc_response alloc;
	struct vgpu_bo *buf;
	u32 handle;
	int ret;

	ret = vgpu_proto_alloc(&vdev->proto, bytes, priority, flags, &alloc);
	if (ret) {
		vgpu_host_report(vdev, ret, "ALLOC of %llu bytes (priority %u) failed",
				 bytes, priority);
		return ret;
	}
	if (alloc.bytes > SIZE_MAX || !PAGE_ALIGNED(alloc.bytes)) {
		/* Cannot happen on x86-64 with the protocol's checks. */
		ret = -EPROTO;
		goto err_free_host;
	}

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto err_free_host;
	}
	drm_gem_private_object_init(&vdev->drm, &buf->base, alloc.bytes);
	buf->base.funcs = &vgpu_bo_funcs;
	buf->gpu_va = alloc.gpu_va;
	buf->bytes = alloc.bytes;
	buf->host_handle = alloc.handle;
	buf->priority = priority;

	mutex_lock(&vdev->objects_lock);
	list_add_tail(&buf->node, &vdev->buffers);
	vdev->live_buffers++;
	vdev->live_buffer_bytes += buf->bytes;
	mutex_unlock(&vdev->objects_lock);

	/* From here on the object's free releases the host buffer. */
	ret = drm_gem_handle_create(file, &buf->base, &handle);
	if (!ret) {
		args->bytes = buf->bytes;
		args->gpu_va = buf->gpu_va;
		args->host_handle = buf->host_handle;
		args->handle = handle;
	}
	/* Another thread may close the new handle at any time now. */
	drm_gem_object_put(&buf->base);
	return ret;

err_free_host:
	if (vgpu_proto_free(&vdev->proto, alloc.handle))
		drm_warn(&vdev->drm, "could not undo ALLOC of buffer %u\n", alloc.handle);
	return ret;
}

/*
 * The buffer behind handle, with a reference (drm_gem_object_put), or NULL
 * if handle is not a buffer of file.
 */
struct vgpu_bo *vgpu_bo_lookup(struct drm_file *file, u32 handle)
{
	struct drm_gem_object *obj = drm_gem_object_lookup(file, handle);

	if (!obj)
		return NULL;
	if (obj->funcs != &vgpu_bo_funcs) {
		drm_gem_object_put(obj);
		return NULL;
	}
	return to_vgpu_bo(obj);
}

/*
 * Unbind (after drm_dev_unplug): free on the host every buffer userspace
 * still holds, so the VM's memory is not leaked while the guest runs on.
 * The objects stay (handles still refer to them) but no longer reach the
 * host.
 */
void vgpu_bos_release_all(struct vgpu_drm_device *vdev)
{
	struct vgpu_bo *buf;
	unsigned int freed = 0, left = 0;
	u64 bytes = 0;
	int ret;

	mutex_lock(&vdev->objects_lock);
	list_for_each_entry(buf, &vdev->buffers, node) {
		if (buf->host_released)
			continue;
		buf->host_released = true;
		if (vdev->host_unreachable) {
			left++;
			continue;
		}
		ret = vgpu_proto_free(&vdev->proto, buf->host_handle);
		if (ret) {
			vgpu_host_report(vdev, ret, "unbind: FREE of buffer %u failed",
					 buf->host_handle);
			vdev->host_unreachable = vgpu_host_gone(ret);
			left++;
			continue;
		}
		freed++;
		bytes += buf->bytes;
	}
	mutex_unlock(&vdev->objects_lock);

	if (freed)
		drm_info(&vdev->drm, "unbind: freed %u buffers (%llu KiB) still held by userspace\n",
			 freed, bytes >> 10);
	if (left)
		drm_warn(&vdev->drm, "unbind: %u buffers left to the host (released when the VM ends)\n",
			 left);
}
