// SPDX-License-Identifier: GPL-2.0-only
/*
 * One vGPU mdev: probe/remove and the vfio_device ops.
 *
 * Lifetime. probe asks vgpud (CREATE) and registers an emulated-IOMMU
 * vfio_device; remove unregisters it, which waits until QEMU has closed
 * the device (the .request op asks QEMU to unplug it from the guest), and
 * tells vgpud (REMOVE). The device's memory lives as long as its vfio
 * refcount: vgpud's ioctls hold a reference (vgpu_mdev_device_get) while
 * they work on it, so a device removed under an ioctl stays valid.
 *
 * open/close/reset are requests to vgpud, made under state_lock; vgpud's
 * ioctls never take state_lock, so vgpud can map memory and set registers
 * while it handles them.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu_mdev.h"

static struct vgpu_mdev_device *to_vgpu(struct vfio_device *vdev)
{
	return container_of(vdev, struct vgpu_mdev_device, vdev);
}

struct vgpu_mdev_device *vgpu_mdev_device_get(u32 id)
{
	struct vgpu_mdev_device *vgpu;

	spin_lock(&vgpu_mdev.idr_lock);
	vgpu = id <= INT_MAX ? idr_find(&vgpu_mdev.devices, id) : NULL;
	if (vgpu)
		get_device(&vgpu->vdev.device);
	spin_unlock(&vgpu_mdev.idr_lock);
	return vgpu;
}

void vgpu_mdev_device_put(struct vgpu_mdev_device *vgpu)
{
	put_device(&vgpu->vdev.device);
}

/*
 * vgpud went away: nothing waits for it, and the VM's device reports it
 * (STATUS = BACKEND_GONE) and interrupts (VGPU_IRQ_DEVICE_LOST on the error
 * vector, if the guest enabled it), so the guest fails its pending waits now.
 */
void vgpu_mdev_device_backend_gone(struct vgpu_mdev_device *vgpu)
{
	unsigned long flags;
	bool open, interrupt = false;

	spin_lock(&vgpu_mdev.event_lock);
	if (vgpu->request_seq && !vgpu->request_done) {
		vgpu->request_done = true;
		vgpu->request_status = -ENODEV;
		wake_up(&vgpu->request_wq);
	}
	spin_unlock(&vgpu_mdev.event_lock);

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	open = vgpu->open;
	if (open && !vgpu->backend_gone) {
		vgpu->backend_gone = true;
		vgpu->regs[VGPU_REG_STATUS / 4] = VGPU_STATUS_BACKEND_GONE;
		vgpu->regs[VGPU_REG_IRQ_STATUS / 4] |= VGPU_IRQ_DEVICE_LOST;
		interrupt = vgpu->regs[VGPU_REG_IRQ_MASK / 4] & VGPU_IRQ_DEVICE_LOST;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);

	vgpu_mdev_bar2_unblock_all(vgpu);
	if (interrupt)
		vgpu_mdev_raise(vgpu, BIT(VGPU_MSIX_VECTOR_ERROR));
	if (open)
		dev_warn(&vgpu->mdev->dev,
			 "vgpud disconnected while the VM uses this vGPU: it reports BACKEND_GONE until the VM closes it\n");
}

static int vgpu_mdev_init_dev(struct vfio_device *vdev)
{
	struct vgpu_mdev_device *vgpu = to_vgpu(vdev);
	struct mdev_device *mdev = to_mdev_device(vdev->dev);

	vgpu->mdev = mdev;
	vgpu->type = container_of(mdev->type, struct vgpu_mdev_type, mtype);
	mutex_init(&vgpu->state_lock);
	init_waitqueue_head(&vgpu->request_wq);
	INIT_LIST_HEAD(&vgpu->request.link);
	vgpu->request.kind = VGPU_MDEV_PENDING_REQUEST;
	vgpu->request.vgpu = vgpu;
	spin_lock_init(&vgpu->reg_lock);
	INIT_LIST_HEAD(&vgpu->regs_event.link);
	vgpu->regs_event.kind = VGPU_MDEV_PENDING_REGS;
	vgpu->regs_event.vgpu = vgpu;
	vgpu->irq_type = -1;
	init_rwsem(&vgpu->dma_lock);
	mutex_init(&vgpu->pin_lock);
	INIT_LIST_HEAD(&vgpu->pins);
	vgpu->next_pin_id = 1;
	vgpu_mdev_config_init(vgpu);
	vgpu_mdev_regs_reset(vgpu);
	return vgpu_mdev_bar2_init(vgpu);
}

static void vgpu_mdev_release_dev(struct vfio_device *vdev)
{
	struct vgpu_mdev_device *vgpu = to_vgpu(vdev);

	vgpu_mdev_bar2_free(vgpu);
	vfio_free_device(vdev);
}

static int vgpu_mdev_open_device(struct vfio_device *vdev)
{
	struct vgpu_mdev_device *vgpu = to_vgpu(vdev);
	unsigned long flags;
	int ret;

	mutex_lock(&vgpu->state_lock);
	vgpu_mdev_config_init(vgpu);
	vgpu_mdev_regs_reset(vgpu);
	ret = vgpu_mdev_bar2_open(vgpu);
	if (ret)
		goto out;
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	vgpu->open = true;
	vgpu->backend_gone = false;
	vgpu->session++;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	vgpu_mdev_dma_open(vgpu);

	ret = vgpu_mdev_request(vgpu, VGPU_MDEV_EVENT_OPEN, vgpu_mdev_request_timeout_ms, true);
	if (ret) {
		dev_warn(&vgpu->mdev->dev, "open refused: %s (%d)\n",
			 vgpu_mdev_request_failure(ret, "vgpud could not attach the VM"), ret);
		vgpu_mdev_dma_close(vgpu);
		spin_lock_irqsave(&vgpu->reg_lock, flags);
		vgpu->open = false;
		spin_unlock_irqrestore(&vgpu->reg_lock, flags);
		vgpu_mdev_bar2_close(vgpu);
		vgpu_mdev_regs_reset(vgpu);
	}
out:
	mutex_unlock(&vgpu->state_lock);
	return ret;
}

static void vgpu_mdev_close_device(struct vfio_device *vdev)
{
	struct vgpu_mdev_device *vgpu = to_vgpu(vdev);
	unsigned long flags;
	int ret;

	mutex_lock(&vgpu->state_lock);
	if (!vgpu->backend_gone) {
		ret = vgpu_mdev_request(vgpu, VGPU_MDEV_EVENT_CLOSE, vgpu_mdev_close_timeout_ms,
					false);
		if (ret && ret != -ENODEV)
			dev_warn(&vgpu->mdev->dev, "vgpud did not confirm the close (%d)\n", ret);
	}
	vgpu_mdev_irq_disable_all(vgpu);
	vgpu_mdev_eventfd_clear(vgpu, &vgpu->kick);
	vgpu_mdev_dma_close(vgpu);
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	vgpu->open = false;
	vgpu->backend_gone = false;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	vgpu_mdev_bar2_close(vgpu);
	vgpu_mdev_regs_reset(vgpu);
	mutex_unlock(&vgpu->state_lock);
}

/*
 * VFIO_DEVICE_RESET: the device's state goes back to what open gives,
 * then vgpud resets the VM (detach + attach) before the ioctl returns.
 */
static int vgpu_mdev_reset(struct vgpu_mdev_device *vgpu)
{
	unsigned long flags;
	bool gone;
	int ret;

	mutex_lock(&vgpu->state_lock);
	vgpu_mdev_dma_unpin_all(vgpu);
	vgpu_mdev_bar2_reset(vgpu);
	vgpu_mdev_regs_reset(vgpu);
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	gone = vgpu->backend_gone;
	if (gone)
		vgpu->regs[VGPU_REG_STATUS / 4] = VGPU_STATUS_BACKEND_GONE;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	ret = 0;
	if (!gone) {
		ret = vgpu_mdev_request(vgpu, VGPU_MDEV_EVENT_RESET, vgpu_mdev_request_timeout_ms,
					true);
		if (ret == -ENODEV) {
			vgpu_mdev_device_backend_gone(vgpu);
			ret = 0;
		} else if (ret) {
			dev_warn(&vgpu->mdev->dev, "vgpud could not reset the vGPU (%d)\n", ret);
			ret = -EIO;
		}
	}
	mutex_unlock(&vgpu->state_lock);
	return ret;
}

static ssize_t vgpu_mdev_rw(struct vgpu_mdev_device *vgpu, char __user *ubuf, size_t count,
			    loff_t *ppos, bool write)
{
	u64 pos = *ppos;
	unsigned int index = VGPU_MDEV_REGION_INDEX(pos);
	u64 off = pos & VGPU_MDEV_REGION_MASK;
	u64 size;
	char kbuf[64];
	ssize_t ret;

	switch (index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		size = VGPU_MDEV_CONFIG_SIZE;
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		size = VGPU_BAR0_SIZE;
		break;
	case VFIO_PCI_BAR2_REGION_INDEX:
		size = VGPU_MDEV_BAR2_REGION_SIZE;
		break;
	case VGPU_MDEV_MSIX_BAR:
		size = VGPU_MDEV_MSIX_BAR_SIZE;
		break;
	default:
		return -EINVAL;
	}
	if (off >= size)
		return -EINVAL;
	count = min_t(u64, count, size - off);
	if (!count)
		return 0;

	if (index == VFIO_PCI_BAR2_REGION_INDEX) {
		ret = vgpu_mdev_bar2_rw(vgpu, ubuf, count, off, write);
		goto done;
	}
	/* config space and registers: through a small bounce buffer */
	ret = 0;
	while (ret < count) {
		size_t n = min_t(size_t, count - ret, sizeof(kbuf));
		ssize_t got;

		if (write && copy_from_user(kbuf, ubuf + ret, n))
			return ret ? ret : -EFAULT;
		switch (index) {
		case VFIO_PCI_CONFIG_REGION_INDEX:
			got = vgpu_mdev_config_rw(vgpu, kbuf, n, off + ret, write);
			break;
		case VFIO_PCI_BAR0_REGION_INDEX:
			got = vgpu_mdev_bar0_rw(vgpu, kbuf, n, off + ret, write);
			break;
		default: /* the MSI-X BAR: QEMU emulates table and PBA itself */
			if (!write)
				memset(kbuf, 0, n);
			got = n;
			break;
		}
		if (got <= 0)
			return ret ? ret : got;
		if (!write && copy_to_user(ubuf + ret, kbuf, got))
			return ret ? ret : -EFAULT;
		ret += got;
	}
done:
	if (ret > 0)
		*ppos += ret;
	return ret;
}

static ssize_t vgpu_mdev_read(struct vfio_device *vdev, char __user *buf, size_t count,
			      loff_t *ppos)
{
	return vgpu_mdev_rw(to_vgpu(vdev), buf, count, ppos, false);
}

static ssize_t vgpu_mdev_write(struct vfio_device *vdev, const char __user *buf, size_t count,
			       loff_t *ppos)
{
	return vgpu_mdev_rw(to_vgpu(vdev), (char __user *)buf, count, ppos, true);
}

static int vgpu_mdev_mmap(struct vfio_device *vdev, struct vm_area_struct *vma)
{
	return vgpu_mdev_bar2_mmap(to_vgpu(vdev), vma);
}

static int vgpu_mdev_region_info(struct vgpu_mdev_device *vgpu, struct vfio_region_info *info,
				 struct vfio_info_cap *caps)
{
	struct vfio_region_info_cap_sparse_mmap *sparse;
	size_t size;
	int ret;

	if (info->index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;
	info->offset = VGPU_MDEV_REGION_OFFSET(info->index);
	info->size = 0;
	info->flags = 0;
	switch (info->index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		info->size = VGPU_MDEV_CONFIG_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		info->size = VGPU_BAR0_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VGPU_MDEV_MSIX_BAR:
		info->size = VGPU_MDEV_MSIX_BAR_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_BAR2_REGION_INDEX:
		info->size = VGPU_MDEV_BAR2_REGION_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
			      VFIO_REGION_INFO_FLAG_MMAP;
		/* only the part device_abi.h defines is mappable */
		size = struct_size(sparse, areas, 1);
		sparse = kzalloc(size, GFP_KERNEL);
		if (!sparse)
			return -ENOMEM;
		sparse->header.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP;
		sparse->header.version = 1;
		sparse->nr_areas = 1;
		sparse->areas[0].offset = 0;
		sparse->areas[0].size = VGPU_BAR2_SIZE;
		ret = vfio_info_add_capability(caps, &sparse->header, size);
		kfree(sparse);
		return ret;
	default:
		break;
	}
	return 0;
}

static int vgpu_mdev_ioctl_region_info(struct vgpu_mdev_device *vgpu, unsigned long arg)
{
	struct vfio_info_cap caps = { .buf = NULL, .size = 0 };
	unsigned long minsz = offsetofend(struct vfio_region_info, offset);
	struct vfio_region_info info;
	int ret;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;
	ret = vgpu_mdev_region_info(vgpu, &info, &caps);
	if (ret)
		return ret;
	if (caps.size) {
		info.flags |= VFIO_REGION_INFO_FLAG_CAPS;
		if (info.argsz < sizeof(info) + caps.size) {
			info.argsz = sizeof(info) + caps.size;
			info.cap_offset = 0;
		} else {
			vfio_info_cap_shift(&caps, sizeof(info));
			if (copy_to_user((void __user *)arg + sizeof(info), caps.buf, caps.size)) {
				kfree(caps.buf);
				return -EFAULT;
			}
			info.cap_offset = sizeof(info);
		}
		kfree(caps.buf);
	}
	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

static long vgpu_mdev_ioctl(struct vfio_device *vdev, unsigned int cmd, unsigned long arg)
{
	struct vgpu_mdev_device *vgpu = to_vgpu(vdev);
	unsigned long minsz;
	int ret;

	switch (cmd) {
	case VFIO_DEVICE_GET_INFO: {
		struct vfio_device_info info;

		minsz = offsetofend(struct vfio_device_info, num_irqs);
		if (copy_from_user(&info, (void __user *)arg, minsz))
			return -EFAULT;
		if (info.argsz < minsz)
			return -EINVAL;
		info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
		info.num_regions = VFIO_PCI_NUM_REGIONS;
		info.num_irqs = VFIO_PCI_NUM_IRQS;
		return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
	}
	case VFIO_DEVICE_GET_REGION_INFO:
		return vgpu_mdev_ioctl_region_info(vgpu, arg);
	case VFIO_DEVICE_GET_IRQ_INFO: {
		struct vfio_irq_info info;

		minsz = offsetofend(struct vfio_irq_info, count);
		if (copy_from_user(&info, (void __user *)arg, minsz))
			return -EFAULT;
		if (info.argsz < minsz)
			return -EINVAL;
		ret = vgpu_mdev_irq_info(vgpu, &info);
		if (ret)
			return ret;
		return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
	}
	case VFIO_DEVICE_SET_IRQS: {
		struct vfio_irq_set hdr;
		struct vfio_irq_info info;
		size_t data_size = 0;
		void *data = NULL;

		minsz = offsetofend(struct vfio_irq_set, count);
		if (copy_from_user(&hdr, (void __user *)arg, minsz))
			return -EFAULT;
		info.index = hdr.index;
		if (hdr.index >= VFIO_PCI_NUM_IRQS || vgpu_mdev_irq_info(vgpu, &info))
			return -EINVAL;
		ret = vfio_set_irqs_validate_and_prepare(&hdr, info.count, VFIO_PCI_NUM_IRQS,
							 &data_size);
		if (ret)
			return ret;
		if (data_size) {
			data = memdup_user((void __user *)(arg + minsz), data_size);
			if (IS_ERR(data))
				return PTR_ERR(data);
		}
		mutex_lock(&vgpu->state_lock);
		ret = vgpu_mdev_set_irqs_locked(vgpu, &hdr, data);
		mutex_unlock(&vgpu->state_lock);
		kfree(data);
		return ret;
	}
	case VFIO_DEVICE_RESET:
		return vgpu_mdev_reset(vgpu);
	}
	return -ENOTTY;
}

static void vgpu_mdev_request_op(struct vfio_device *vdev, unsigned int count)
{
	vgpu_mdev_request_release(to_vgpu(vdev), count);
}

/*
 * No migration support is declared (no migration_flags, no mig_ops): the
 * kernels this targets (6.1) offer only VFIO migration v2, which Debian 12's
 * QEMU 7.2 does not speak (it knows v1, which 6.1 no longer has), so QEMU
 * blocks migration of an mdev vGPU itself. docs/migration.md says more.
 */
static const struct vfio_device_ops vgpu_mdev_dev_ops = {
	.name = "vgpu-mdev",
	.init = vgpu_mdev_init_dev,
	.release = vgpu_mdev_release_dev,
	.open_device = vgpu_mdev_open_device,
	.close_device = vgpu_mdev_close_device,
	.read = vgpu_mdev_read,
	.write = vgpu_mdev_write,
	.ioctl = vgpu_mdev_ioctl,
	.mmap = vgpu_mdev_mmap,
	.request = vgpu_mdev_request_op,
	.dma_unmap = vgpu_mdev_dma_unmap,
};

/*
 * Forget the device in the module: no more ioctls find it, no more events
 * are queued for it; the REMOVE event (if any) is queued last.
 */
static void vgpu_mdev_unpublish(struct vgpu_mdev_device *vgpu, bool tell_vgpud)
{
	struct vgpu_mdev_pending *removed = NULL;

	if (tell_vgpud) {
		removed = kzalloc(sizeof(*removed), GFP_KERNEL);
		if (removed) {
			removed->kind = VGPU_MDEV_PENDING_RECORD;
			INIT_LIST_HEAD(&removed->link);
			vgpu_mdev_fill_device_event(vgpu, &removed->rec, VGPU_MDEV_EVENT_REMOVE);
		}
	}
	mutex_lock(&vgpu_mdev.lock);
	spin_lock(&vgpu_mdev.idr_lock);
	idr_remove(&vgpu_mdev.devices, vgpu->id);
	spin_unlock(&vgpu_mdev.idr_lock);
	vgpu->removed = true;
	vgpu_mdev.nr_devices--;
	mutex_unlock(&vgpu_mdev.lock);
	vgpu_mdev_dequeue_device(vgpu);
	if (removed)
		vgpu_mdev_queue_record(removed);
	schedule_work(&vgpu_mdev.unregister_work);
}

int vgpu_mdev_probe(struct mdev_device *mdev)
{
	struct vgpu_mdev_device *vgpu;
	int ret, id;

	mutex_lock(&vgpu_mdev.lock);
	if (!vgpu_mdev.accepting) {
		mutex_unlock(&vgpu_mdev.lock);
		return -ENODEV;
	}
	vgpu_mdev.nr_devices++;
	mutex_unlock(&vgpu_mdev.lock);

	vgpu = vfio_alloc_device(vgpu_mdev_device, vdev, &mdev->dev, &vgpu_mdev_dev_ops);
	if (IS_ERR(vgpu)) {
		ret = PTR_ERR(vgpu);
		goto err_count;
	}

	idr_preload(GFP_KERNEL);
	mutex_lock(&vgpu_mdev.lock);
	spin_lock(&vgpu_mdev.idr_lock);
	id = idr_alloc_cyclic(&vgpu_mdev.devices, vgpu, 1, INT_MAX, GFP_NOWAIT);
	spin_unlock(&vgpu_mdev.idr_lock);
	mutex_unlock(&vgpu_mdev.lock);
	idr_preload_end();
	if (id < 0) {
		ret = id;
		vfio_put_device(&vgpu->vdev);
		goto err_count;
	}
	vgpu->id = id;

	ret = vgpu_mdev_request(vgpu, VGPU_MDEV_EVENT_CREATE, vgpu_mdev_request_timeout_ms, true);
	if (ret) {
		dev_warn(&mdev->dev, "not created: %s (%d)\n",
			 vgpu_mdev_request_failure(ret, "vgpud refused it (see its log)"), ret);
		goto err_unpublish;
	}
	ret = vfio_register_emulated_iommu_dev(&vgpu->vdev);
	if (ret)
		goto err_unpublish_tell;
	dev_set_drvdata(&mdev->dev, vgpu);
	dev_info(&mdev->dev, "vGPU %u of type %s created\n", vgpu->id, vgpu->type->info.name);
	return 0;

err_unpublish_tell:
	vgpu_mdev_unpublish(vgpu, true);
	vfio_put_device(&vgpu->vdev);
	return ret;
err_unpublish:
	vgpu_mdev_unpublish(vgpu, false);
	vfio_put_device(&vgpu->vdev);
	return ret;
err_count:
	mutex_lock(&vgpu_mdev.lock);
	vgpu_mdev.nr_devices--;
	mutex_unlock(&vgpu_mdev.lock);
	schedule_work(&vgpu_mdev.unregister_work);
	return ret;
}

void vgpu_mdev_remove(struct mdev_device *mdev)
{
	struct vgpu_mdev_device *vgpu = dev_get_drvdata(&mdev->dev);

	/* waits until QEMU closed it; .request asks QEMU to let go */
	vfio_unregister_group_dev(&vgpu->vdev);
	vgpu_mdev_unpublish(vgpu, true);
	dev_info(&mdev->dev, "vGPU %u removed\n", vgpu->id);
	vfio_put_device(&vgpu->vdev);
}
