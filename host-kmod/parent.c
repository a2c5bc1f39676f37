// SPDX-License-Identifier: GPL-2.0-only
/*
 * The mdev parent /sys/class/mdev_bus/vgpu and its types.
 *
 * The types are vgpud's vGPU profiles. The parent device is a virtual one,
 * or the PCI function bound as the GPU (pci_parent.c). It is registered by the
 * first VGPU_MDEV_SET_TYPES and unregistered when vgpud is gone and no mdev
 * exists any more (mdev_unregister_parent() would otherwise remove devices
 * that VMs use). Type structures embed kobjects whose last reference the
 * mdev core drops whenever it likes, so every set of types ever registered
 * is kept until module exit (a few hundred bytes per vgpud restart).
 */
#include <linux/ctype.h>
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "vgpu_mdev.h"

static struct class *vgpu_mdev_class;
static struct device *vgpu_mdev_virtual_parent; /* /sys/devices/virtual/vgpu/vgpu */

static struct vgpu_mdev_type *to_vgpu_type(struct mdev_type *mtype)
{
	return container_of(mtype, struct vgpu_mdev_type, mtype);
}

static unsigned int vgpu_mdev_get_available(struct mdev_type *mtype)
{
	if (!vgpu_mdev_controller_present())
		return 0;
	return READ_ONCE(to_vgpu_type(mtype)->info.available);
}

static ssize_t vgpu_mdev_show_description(struct mdev_type *mtype, char *buf)
{
	ssize_t ret;

	mutex_lock(&vgpu_mdev.lock);
	ret = sysfs_emit(buf, "%s\n", to_vgpu_type(mtype)->info.description);
	mutex_unlock(&vgpu_mdev.lock);
	return ret;
}

struct mdev_driver vgpu_mdev_driver = {
	.device_api = VFIO_DEVICE_API_PCI_STRING,
	.driver = {
		.name = VGPU_MDEV_DRIVER_NAME,
		.owner = THIS_MODULE,
		.mod_name = KBUILD_MODNAME,
		.dev_groups = vgpu_mdev_dev_groups,
	},
	.probe = vgpu_mdev_probe,
	.remove = vgpu_mdev_remove,
	.get_available = vgpu_mdev_get_available,
	.show_description = vgpu_mdev_show_description,
};

static bool vgpu_mdev_string_ok(const char *s, size_t size, bool sysfs_name)
{
	size_t len = strnlen(s, size);
	size_t i;

	if (len == 0 || len == size)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (sysfs_name ? !(isalnum(c) || c == '_' || c == '-' || c == '.') : !isprint(c))
			return false;
	}
	/* a type directory must not be "." or ".." */
	return !sysfs_name || (strcmp(s, ".") && strcmp(s, ".."));
}

static int vgpu_mdev_check_types(const struct vgpu_mdev_type_info *infos, unsigned int count)
{
	unsigned int i, j;

	if (count == 0 || count > VGPU_MDEV_MAX_TYPES)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		const struct vgpu_mdev_type_info *t = &infos[i];

		if (t->reserved ||
		    !vgpu_mdev_string_ok(t->sysfs_name, sizeof(t->sysfs_name), true) ||
		    !vgpu_mdev_string_ok(t->name, sizeof(t->name), false) ||
		    strnlen(t->description, sizeof(t->description)) == sizeof(t->description))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (!strcmp(t->sysfs_name, infos[j].sysfs_name))
				return -EINVAL;
	}
	return 0;
}

/* parent_lock held, vgpu_mdev.lock not held. */
static int vgpu_mdev_register_locked(const struct vgpu_mdev_type_info *infos,
				     unsigned int count)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&vgpu_mdev.parent_lock);

	for (i = 0; i < count; i++) {
		struct vgpu_mdev_type *t = kzalloc(sizeof(*t), GFP_KERNEL);

		if (!t)
			return -ENOMEM; /* earlier ones stay in type_generations */
		t->index = i;
		t->info = infos[i];
		t->mtype.sysfs_name = t->info.sysfs_name;
		t->mtype.pretty_name = t->info.name;
		mutex_lock(&vgpu_mdev.lock);
		list_add_tail(&t->generation, &vgpu_mdev.type_generations);
		vgpu_mdev.types[i] = t;
		vgpu_mdev.type_ptrs[i] = &t->mtype;
		mutex_unlock(&vgpu_mdev.lock);
	}
	ret = mdev_register_parent(&vgpu_mdev.parent, vgpu_mdev.parent_dev, &vgpu_mdev_driver,
				   vgpu_mdev.type_ptrs, count);
	mutex_lock(&vgpu_mdev.lock);
	if (!ret) {
		vgpu_mdev.parent_registered = true;
		vgpu_mdev.nr_types = count;
		vgpu_mdev.accepting = true;
	}
	mutex_unlock(&vgpu_mdev.lock);
	return ret;
}

/* parent_lock held; the caller made sure no device exists. */
static void vgpu_mdev_unregister_locked(void)
{
	lockdep_assert_held(&vgpu_mdev.parent_lock);
	mutex_lock(&vgpu_mdev.lock);
	vgpu_mdev.accepting = false;
	mutex_unlock(&vgpu_mdev.lock);

	mdev_unregister_parent(&vgpu_mdev.parent);

	mutex_lock(&vgpu_mdev.lock);
	vgpu_mdev.parent_registered = false;
	vgpu_mdev.nr_types = 0;
	mutex_unlock(&vgpu_mdev.lock);
}

int vgpu_mdev_set_types(const struct vgpu_mdev_type_info *infos, unsigned int count)
{
	unsigned int i;
	int ret;

	ret = vgpu_mdev_check_types(infos, count);
	if (ret)
		return ret;

	mutex_lock(&vgpu_mdev.parent_lock);
	mutex_lock(&vgpu_mdev.lock);
	if (vgpu_mdev.parent_registered && vgpu_mdev.nr_devices) {
		/* mdevs exist: only what the mdev core does not cache may change */
		ret = 0;
		if (count != vgpu_mdev.nr_types)
			ret = -EBUSY;
		for (i = 0; !ret && i < count; i++)
			if (strcmp(infos[i].sysfs_name, vgpu_mdev.types[i]->info.sysfs_name) ||
			    strcmp(infos[i].name, vgpu_mdev.types[i]->info.name))
				ret = -EBUSY;
		for (i = 0; !ret && i < count; i++) {
			struct vgpu_mdev_type_info *t = &vgpu_mdev.types[i]->info;

			memcpy(t->description, infos[i].description, sizeof(t->description));
			WRITE_ONCE(t->available, infos[i].available);
		}
		if (ret)
			pr_warn("vgpu_mdev: vgpud's profiles differ from the registered mdev types while mdevs exist; remove the mdevs or keep the profiles\n");
		mutex_unlock(&vgpu_mdev.lock);
		mutex_unlock(&vgpu_mdev.parent_lock);
		return ret;
	}
	mutex_unlock(&vgpu_mdev.lock);

	if (vgpu_mdev.parent_registered)
		vgpu_mdev_unregister_locked();
	ret = vgpu_mdev_register_locked(infos, count);
	mutex_unlock(&vgpu_mdev.parent_lock);
	if (ret)
		pr_err("vgpu_mdev: registering the mdev parent failed (%d)\n", ret);
	else
		pr_info("vgpu_mdev: mdev parent registered with %u type(s)\n", count);
	return ret;
}

int vgpu_mdev_set_available(u32 type_index, u32 available)
{
	int ret = 0;

	mutex_lock(&vgpu_mdev.lock);
	if (type_index >= vgpu_mdev.nr_types)
		ret = -EINVAL;
	else
		WRITE_ONCE(vgpu_mdev.types[type_index]->info.available, available);
	mutex_unlock(&vgpu_mdev.lock);
	return ret;
}

/*
 * Unregister the parent if vgpud is gone and no mdev exists. May sleep;
 * never call it from mdev callbacks (they hold the parent's unreg_sem):
 * schedule unregister_work instead.
 */
void vgpu_mdev_parent_maybe_unregister(void)
{
	bool go;

	mutex_lock(&vgpu_mdev.parent_lock);
	mutex_lock(&vgpu_mdev.lock);
	go = vgpu_mdev.parent_registered && !vgpu_mdev.nr_devices &&
	     !vgpu_mdev_controller_present();
	mutex_unlock(&vgpu_mdev.lock);
	if (go) {
		vgpu_mdev_unregister_locked();
		pr_info("vgpu_mdev: vgpud gone and no mdev left: mdev parent unregistered\n");
	}
	mutex_unlock(&vgpu_mdev.parent_lock);
}

static void vgpu_mdev_unregister_work(struct work_struct *work)
{
	vgpu_mdev_parent_maybe_unregister();
}

/*
 * Register the parent on dev from now on (NULL: the virtual device); see
 * pci_parent.c. One GPU at a time: -EBUSY if another PCI function is the
 * parent device. A registered parent moves along with the same types
 * (registered again on dev if vgpud is connected); if it has mdevs, -EBUSY
 * unless force, which removes them (VMs are asked to release open ones).
 */
int vgpu_mdev_parent_move(struct device *dev, bool force)
{
	struct device *target = dev ? dev : vgpu_mdev_virtual_parent;
	struct vgpu_mdev_type_info *infos = NULL;
	unsigned int count = 0, i;
	bool busy;
	int ret = 0;

	mutex_lock(&vgpu_mdev.parent_lock);
	if (vgpu_mdev.parent_dev == target)
		goto out;
	if (dev && vgpu_mdev.parent_dev != vgpu_mdev_virtual_parent) {
		ret = -EBUSY;
		goto out;
	}
	if (vgpu_mdev.parent_registered) {
		mutex_lock(&vgpu_mdev.lock);
		busy = vgpu_mdev.nr_devices != 0;
		count = vgpu_mdev.nr_types;
		mutex_unlock(&vgpu_mdev.lock);
		if (busy && !force) {
			ret = -EBUSY;
			goto out;
		}
		infos = kcalloc(count, sizeof(*infos), GFP_KERNEL);
		if (!infos) {
			ret = -ENOMEM;
			goto out;
		}
		mutex_lock(&vgpu_mdev.lock);
		for (i = 0; i < count; i++)
			infos[i] = vgpu_mdev.types[i]->info;
		mutex_unlock(&vgpu_mdev.lock);
		vgpu_mdev_unregister_locked();
	}
	vgpu_mdev.parent_dev = target;
	if (infos && vgpu_mdev_controller_present() && vgpu_mdev_register_locked(infos, count))
		pr_err("vgpu_mdev: registering the types on %s failed; restart vgpud\n",
		       dev_name(target));
out:
	mutex_unlock(&vgpu_mdev.parent_lock);
	kfree(infos);
	return ret;
}

int vgpu_mdev_parent_init(void)
{
	INIT_WORK(&vgpu_mdev.unregister_work, vgpu_mdev_unregister_work);
	vgpu_mdev_class = class_create(THIS_MODULE, VGPU_MDEV_CLASS_NAME);
	if (IS_ERR(vgpu_mdev_class))
		return PTR_ERR(vgpu_mdev_class);
	vgpu_mdev_virtual_parent = device_create(vgpu_mdev_class, NULL, MKDEV(0, 0), NULL,
						 VGPU_MDEV_PARENT_NAME);
	if (IS_ERR(vgpu_mdev_virtual_parent)) {
		class_destroy(vgpu_mdev_class);
		return PTR_ERR(vgpu_mdev_virtual_parent);
	}
	vgpu_mdev.parent_dev = vgpu_mdev_virtual_parent;
	return 0;
}

void vgpu_mdev_parent_exit(void)
{
	struct vgpu_mdev_type *t, *next;

	flush_work(&vgpu_mdev.unregister_work);
	mutex_lock(&vgpu_mdev.parent_lock);
	if (vgpu_mdev.parent_registered)
		vgpu_mdev_unregister_locked(); /* removes remaining (closed) mdevs */
	mutex_unlock(&vgpu_mdev.parent_lock);
	flush_work(&vgpu_mdev.unregister_work);
	device_unregister(vgpu_mdev_virtual_parent);
	class_destroy(vgpu_mdev_class);
	list_for_each_entry_safe(t, next, &vgpu_mdev.type_generations, generation) {
		list_del(&t->generation);
		kfree(t);
	}
}
