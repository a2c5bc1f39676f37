// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_module.c - GPU programs a guest loads (device ABI 1.3,
 * VGPU_FEATURE_MODULES): the MODULE_LOAD and MODULE_UNLOAD ioctls.
 *
 * The image and the table the backend writes are GPU memory of this VM, in
 * buffers userspace allocated and filled through a channel; the driver
 * passes their GPU VAs through and the backend checks them. What the driver
 * keeps is who owns a module: its host handle belongs to the DRM file that
 * loaded it, which alone may unload it and which unloads it when it is
 * closed, as buffers and channels go with their handles. At unbind the
 * modules still loaded are unloaded on the host (their variables are VM
 * memory there); the bookkeeping stays until the files are closed.
 *
 * Locking. vgpu_drm_device.modules (host handle -> struct vgpu_module) has
 * its own lock: taking a module out of it is what makes a caller its only
 * releaser, and a module is freed only after that. host_released and
 * live_modules are under objects_lock, as for buffers and channels; a
 * module leaves the xarray before its releaser takes objects_lock, so
 * unbind, walking the xarray under objects_lock, never sees one freed.
 */
#include <linux/slab.h>
#include <linux/xarray.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "vgpu_drv.h"

static_assert(DRM_VGPU_MODULE_IMAGE_MAX_BYTES == VGPU_MODULE_IMAGE_MAX_BYTES,
	      "uAPI and device ABI agree on the image bound");
static_assert(DRM_VGPU_MODULE_TABLE_MAX_BYTES == VGPU_MODULE_TABLE_MAX_BYTES,
	      "uAPI and device ABI agree on the table bound");

static void vgpu_modules_fini(struct drm_device *drm, void *data)
{
	struct vgpu_drm_device *vdev = data;

	/* Every file is closed, and each took its modules out. */
	drm_WARN_ON(drm, !xa_empty(&vdev->modules));
	xa_destroy(&vdev->modules);
}

/* Probe: the module table, destroyed with the drm_device. */
int vgpu_modules_init(struct vgpu_drm_device *vdev)
{
	xa_init(&vdev->modules);
	return drmm_add_action_or_reset(&vdev->drm, vgpu_modules_fini, vdev);
}

/*
 * Take the host side of mod: true when it is still loaded there and the
 * caller must unload it; from now on nobody else will.
 */
static bool vgpu_module_claim_host_locked(struct vgpu_drm_device *vdev, struct vgpu_module *mod)
{
	bool loaded;

	lockdep_assert_held(&vdev->objects_lock);
	loaded = !mod->host_released;
	mod->host_released = true;
	return loaded;
}

/* mod, already out of the xarray: unload it on the host and free it. */
static void vgpu_module_release(struct vgpu_drm_device *vdev, struct vgpu_module *mod)
{
	bool release;
	int idx, ret;
	bool entered = drm_dev_enter(&vdev->drm, &idx);

	mutex_lock(&vdev->objects_lock);
	release = vgpu_module_claim_host_locked(vdev, mod) && entered;
	vdev->live_modules--;
	mutex_unlock(&vdev->objects_lock);

	if (release) {
		ret = vgpu_proto_module_unload(&vdev->proto, mod->handle);
		if (ret)
			vgpu_host_report(vdev, ret,
					 "MODULE_UNLOAD of module %u failed; the host keeps it until the VM ends",
					 mod->handle);
	}
	if (entered)
		drm_dev_exit(idx);
	kfree(mod);
}

/* What a failed MODULE_LOAD means; a refused image is the user's business. */
static void vgpu_module_report(struct vgpu_drm_device *vdev, int err,
			       const struct drm_vgpu_module_load *args)
{
	if (err == -EINVAL || err == -ENOSPC)
		drm_dbg(&vdev->drm, "MODULE_LOAD of %llu bytes at GPU VA 0x%llx refused (%d)\n",
			args->image_bytes, args->image_va, err);
	else
		vgpu_host_report(vdev, err, "MODULE_LOAD of %llu bytes at GPU VA 0x%llx failed",
				 args->image_bytes, args->image_va);
}

/*
 * MODULE_LOAD on the host with args' image and table and record the module
 * as file's; fill in args (on -ENOSPC only table_bytes, the room needed).
 */
int vgpu_module_load(struct vgpu_drm_device *vdev, struct drm_file *file,
		     struct drm_vgpu_module_load *args)
{
	struct vgpu_module_load_request req = {
		.image_va = args->image_va,
		.image_bytes = args->image_bytes,
		.table_va = args->table_va,
		.table_bytes = args->table_bytes,
	};
	struct vgpu_module_load_response loaded;
	struct vgpu_module *mod;
	int ret;

	if (!(vdev->proto.hello.features & VGPU_FEATURE_MODULES))
		return -EOPNOTSUPP;
	mod = kzalloc(sizeof(*mod), GFP_KERNEL);
	if (!mod)
		return -ENOMEM;

	ret = vgpu_proto_module_load(&vdev->proto, &req, &loaded);
	if (ret) {
		if (ret == -ENOSPC)
			args->table_bytes = loaded.table_bytes;
		vgpu_module_report(vdev, ret, args);
		kfree(mod);
		return ret;
	}
	mod->file = file;
	mod->handle = loaded.module;
	mod->variables_bytes = loaded.variables_bytes;

	mutex_lock(&vdev->objects_lock);
	vdev->live_modules++;
	mutex_unlock(&vdev->objects_lock);

	ret = xa_insert(&vdev->modules, loaded.module, mod, GFP_KERNEL);
	if (ret) {
		mutex_lock(&vdev->objects_lock);
		vdev->live_modules--;
		mutex_unlock(&vdev->objects_lock);
		if (ret == -EBUSY) {
			/* The handle is another module's: leave that one alone. */
			drm_warn(&vdev->drm, "MODULE_LOAD returned module %u, which is in use\n",
				 loaded.module);
			ret = -EPROTO;
		} else if (vgpu_proto_module_unload(&vdev->proto, loaded.module)) {
			drm_warn(&vdev->drm, "could not undo MODULE_LOAD of module %u\n",
				 loaded.module);
		}
		kfree(mod);
		return ret;
	}

	/* Another thread of file may unload it at any time now. */
	args->module = loaded.module;
	args->table_bytes = loaded.table_bytes;
	args->function_count = loaded.function_count;
	args->variable_count = loaded.variable_count;
	args->variables_va = loaded.variables_va;
	args->variables_bytes = loaded.variables_bytes;
	return 0;
}

/* MODULE_UNLOAD of a module file loaded; -EINVAL for any other handle. */
int vgpu_module_unload(struct vgpu_drm_device *vdev, struct drm_file *file, u32 handle)
{
	struct vgpu_module *mod;

	xa_lock(&vdev->modules);
	mod = xa_load(&vdev->modules, handle);
	if (mod && mod->file == file)
		__xa_erase(&vdev->modules, handle);
	else
		mod = NULL;
	xa_unlock(&vdev->modules);
	if (!mod)
		return -EINVAL;
	vgpu_module_release(vdev, mod);
	return 0;
}

/* The file is closing: unload every module it loaded. */
void vgpu_modules_close_file(struct vgpu_drm_device *vdev, struct drm_file *file)
{
	struct vgpu_module *mod, *next;
	unsigned long handle;
	LIST_HEAD(owned);

	xa_lock(&vdev->modules);
	xa_for_each(&vdev->modules, handle, mod) {
		if (mod->file != file)
			continue;
		__xa_erase(&vdev->modules, handle);
		list_add_tail(&mod->close_node, &owned);
	}
	xa_unlock(&vdev->modules);

	list_for_each_entry_safe(mod, next, &owned, close_node)
		vgpu_module_release(vdev, mod);
}

/*
 * Unbind (after drm_dev_unplug): unload on the host every module files
 * still hold, so their variables' memory is not leaked while the guest runs
 * on. The handles stay until their files close.
 */
void vgpu_modules_release_all(struct vgpu_drm_device *vdev)
{
	struct vgpu_module *mod;
	unsigned int unloaded = 0, left = 0;
	unsigned long handle;
	int ret;

	mutex_lock(&vdev->objects_lock);
	xa_for_each(&vdev->modules, handle, mod) {
		if (!vgpu_module_claim_host_locked(vdev, mod))
			continue;
		if (vdev->host_unreachable) {
			left++;
			continue;
		}
		ret = vgpu_proto_module_unload(&vdev->proto, mod->handle);
		if (ret) {
			vgpu_host_report(vdev, ret, "unbind: MODULE_UNLOAD of module %u failed",
					 mod->handle);
			vdev->host_unreachable = vgpu_host_gone(ret);
			left++;
			continue;
		}
		unloaded++;
	}
	mutex_unlock(&vdev->objects_lock);

	if (unloaded)
		drm_info(&vdev->drm, "unbind: unloaded %u modules still held by userspace\n",
			 unloaded);
	if (left)
		drm_warn(&vdev->drm, "unbind: %u modules left to the host\n", left);
}
