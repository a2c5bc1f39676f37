// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/bus/mdev/devices/<uuid>/vendor/: what operators read
 * about one vGPU. The memory figures are vgpud's (VGPU_MDEV_SET_STATS);
 * state and swaps are the module's own.
 *
 *	profile     the mdev type's profile name
 *	id          the module's device_id (what vgpud logs)
 *	vm          the VM's name as vgpud knows it ("" until set)
 *	state       closed | open | backend-gone
 *	allocated resident evicted fair_share   bytes
 *	evictions returns                        counts
 *	swaps       "<to shadow> <to real> <faults that waited>"
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "vgpu_mdev.h"

static struct vgpu_mdev_device *to_vdev(struct device *dev)
{
	return dev_get_drvdata(dev);
}

#define VGPU_MDEV_STAT_ATTR(name, field)					\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	struct vgpu_mdev_device *vgpu = to_vdev(dev);				\
	unsigned long flags;							\
	u64 v;									\
										\
	if (!vgpu)								\
		return -ENODEV;							\
	spin_lock_irqsave(&vgpu->reg_lock, flags);				\
	v = vgpu->stats.field;							\
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);				\
	return sysfs_emit(buf, "%llu\n", v);					\
}										\
static DEVICE_ATTR_RO(name)

VGPU_MDEV_STAT_ATTR(allocated, allocated_bytes);
VGPU_MDEV_STAT_ATTR(resident, resident_bytes);
VGPU_MDEV_STAT_ATTR(evicted, evicted_bytes);
VGPU_MDEV_STAT_ATTR(fair_share, fair_share_bytes);
VGPU_MDEV_STAT_ATTR(evictions, evictions);
VGPU_MDEV_STAT_ATTR(returns, returns);

static ssize_t profile_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_mdev_device *vgpu = to_vdev(dev);

	return vgpu ? sysfs_emit(buf, "%s\n", vgpu->type->info.name) : -ENODEV;
}
static DEVICE_ATTR_RO(profile);

static ssize_t id_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_mdev_device *vgpu = to_vdev(dev);

	return vgpu ? sysfs_emit(buf, "%u\n", vgpu->id) : -ENODEV;
}
static DEVICE_ATTR_RO(id);

static ssize_t vm_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_mdev_device *vgpu = to_vdev(dev);
	char name[VGPU_MDEV_NAME_MAX];
	unsigned long flags;

	if (!vgpu)
		return -ENODEV;
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	memcpy(name, vgpu->stats.vm_name, sizeof(name));
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	name[sizeof(name) - 1] = 0;
	return sysfs_emit(buf, "%s\n", name);
}
static DEVICE_ATTR_RO(vm);

static ssize_t state_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_mdev_device *vgpu = to_vdev(dev);
	unsigned long flags;
	const char *s;

	if (!vgpu)
		return -ENODEV;
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	s = !vgpu->open ? "closed" : vgpu->backend_gone ? "backend-gone" : "open";
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return sysfs_emit(buf, "%s\n", s);
}
static DEVICE_ATTR_RO(state);

static ssize_t swaps_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_mdev_device *vgpu = to_vdev(dev);

	if (!vgpu)
		return -ENODEV;
	return sysfs_emit(buf, "%d %d %d\n", atomic_read(&vgpu->swaps_to_shadow),
			  atomic_read(&vgpu->swaps_to_real), atomic_read(&vgpu->fault_waits));
}
static DEVICE_ATTR_RO(swaps);

static struct attribute *vgpu_mdev_vendor_attrs[] = {
	&dev_attr_profile.attr,
	&dev_attr_id.attr,
	&dev_attr_vm.attr,
	&dev_attr_state.attr,
	&dev_attr_allocated.attr,
	&dev_attr_resident.attr,
	&dev_attr_evicted.attr,
	&dev_attr_fair_share.attr,
	&dev_attr_evictions.attr,
	&dev_attr_returns.attr,
	&dev_attr_swaps.attr,
	NULL,
};

static const struct attribute_group vgpu_mdev_vendor_group = {
	.name = "vendor",
	.attrs = vgpu_mdev_vendor_attrs,
};

const struct attribute_group *vgpu_mdev_dev_groups[] = {
	&vgpu_mdev_vendor_group,
	NULL,
};
