// SPDX-License-Identifier: GPL-2.0-only
/*
 * Guest memory for vgpud, through the VM's VFIO container (the
 * emulated IOMMU of vfio_iommu_type1: IOVA = guest-physical address).
 *
 * DMA_RW uses vfio_dma_rw(), which reaches the VM's memory only from
 * QEMU's mm or from a kernel thread; vgpud's ioctl therefore hands the copy
 * to an unbound workqueue and waits for it. PIN uses vfio_pin_pages() and
 * keeps the pages until UNPIN, close, reset or the guest's memory mapping
 * going away: vfio calls .dma_unmap, which must unpin everything in the
 * range before returning, and we tell vgpud with PIN_RELEASED.
 *
 * dma_lock (read) keeps the device open while a copy runs; close takes it
 * for writing. pin_lock orders pins against .dma_unmap.
 */
#include <linux/iommu.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "vgpu_mdev.h"

#define VGPU_MDEV_DMA_CHUNK (64 * 1024)

struct vgpu_mdev_dma_work {
	struct work_struct work;
	struct vfio_device *vdev;
	dma_addr_t iova;
	void *buf;
	size_t len;
	bool write;
	int ret;
	struct completion done;
};

static void vgpu_mdev_dma_work_fn(struct work_struct *work)
{
	struct vgpu_mdev_dma_work *w = container_of(work, struct vgpu_mdev_dma_work, work);

	w->ret = vfio_dma_rw(w->vdev, w->iova, w->buf, w->len, w->write);
	complete(&w->done);
}

void vgpu_mdev_dma_open(struct vgpu_mdev_device *vgpu)
{
	down_write(&vgpu->dma_lock);
	vgpu->dma_open = true;
	up_write(&vgpu->dma_lock);
}

int vgpu_mdev_dma_rw(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_dma *d)
{
	bool write = d->flags & VGPU_MDEV_DMA_WRITE;
	void __user *ubuf = u64_to_user_ptr(d->buffer);
	struct vgpu_mdev_dma_work w;
	size_t done = 0, n;
	void *buf;
	int ret = 0;

	if (d->flags & ~VGPU_MDEV_DMA_WRITE || !d->bytes || d->bytes > VGPU_MDEV_DMA_MAX ||
	    d->iova + d->bytes < d->iova)
		return -EINVAL;
	buf = kvmalloc(min_t(u64, d->bytes, VGPU_MDEV_DMA_CHUNK), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	down_read(&vgpu->dma_lock);
	if (!vgpu->dma_open) {
		ret = -ENODEV;
		goto out;
	}
	while (done < d->bytes) {
		n = min_t(size_t, d->bytes - done, VGPU_MDEV_DMA_CHUNK);
		if (write && copy_from_user(buf, ubuf + done, n)) {
			ret = -EFAULT;
			break;
		}
		INIT_WORK_ONSTACK(&w.work, vgpu_mdev_dma_work_fn);
		init_completion(&w.done);
		w.vdev = &vgpu->vdev;
		w.iova = d->iova + done;
		w.buf = buf;
		w.len = n;
		w.write = write;
		queue_work(system_unbound_wq, &w.work);
		wait_for_completion(&w.done);
		destroy_work_on_stack(&w.work);
		ret = w.ret;
		if (ret)
			break;
		if (!write && copy_to_user(ubuf + done, buf, n)) {
			ret = -EFAULT;
			break;
		}
		done += n;
	}
out:
	up_read(&vgpu->dma_lock);
	kvfree(buf);
	return ret;
}

static void vgpu_mdev_pin_free(struct vgpu_mdev_pin_entry *pin)
{
	kfree(pin->released);
	kfree(pin->pages);
	kfree(pin);
}

int vgpu_mdev_pin(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_pin *p)
{
	struct vgpu_mdev_pin_entry *pin;
	int ret;

	if (!p->npages || p->npages > VGPU_MDEV_PIN_MAX_PAGES ||
	    p->npages > VFIO_PIN_PAGES_MAX_ENTRIES ||
	    !PAGE_ALIGNED(p->iova) || p->iova + ((u64)p->npages << PAGE_SHIFT) < p->iova)
		return -EINVAL;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	pin->pages = kcalloc(p->npages, sizeof(*pin->pages), GFP_KERNEL);
	pin->released = kzalloc(sizeof(*pin->released), GFP_KERNEL);
	if (!pin->pages || !pin->released) {
		vgpu_mdev_pin_free(pin);
		return -ENOMEM;
	}
	pin->iova = p->iova;
	pin->npages = p->npages;

	down_read(&vgpu->dma_lock);
	if (!vgpu->dma_open) {
		ret = -ENODEV;
		goto out;
	}
	mutex_lock(&vgpu->pin_lock);
	ret = vfio_pin_pages(&vgpu->vdev, pin->iova, pin->npages, IOMMU_READ | IOMMU_WRITE,
			     pin->pages);
	if (ret >= 0 && ret != pin->npages) {
		if (ret > 0)
			vfio_unpin_pages(&vgpu->vdev, pin->iova, ret);
		ret = -EFAULT;
	}
	if (ret >= 0) {
		pin->id = vgpu->next_pin_id++;
		list_add_tail(&pin->link, &vgpu->pins);
		p->pin_id = pin->id;
		pin = NULL;
		ret = 0;
	}
	mutex_unlock(&vgpu->pin_lock);
out:
	up_read(&vgpu->dma_lock);
	if (pin)
		vgpu_mdev_pin_free(pin);
	return ret;
}

int vgpu_mdev_unpin(struct vgpu_mdev_device *vgpu, u64 pin_id)
{
	struct vgpu_mdev_pin_entry *pin, *found = NULL;

	mutex_lock(&vgpu->pin_lock);
	list_for_each_entry(pin, &vgpu->pins, link) {
		if (pin->id == pin_id) {
			found = pin;
			list_del(&pin->link);
			vfio_unpin_pages(&vgpu->vdev, pin->iova, pin->npages);
			break;
		}
	}
	mutex_unlock(&vgpu->pin_lock);
	if (!found)
		return -ENOENT;
	vgpu_mdev_pin_free(found);
	return 0;
}

/* vfio: the VM's memory at [iova, +length) goes away; unpin what we hold. */
void vgpu_mdev_dma_unmap(struct vfio_device *vdev, u64 iova, u64 length)
{
	struct vgpu_mdev_device *vgpu = container_of(vdev, struct vgpu_mdev_device, vdev);
	struct vgpu_mdev_pin_entry *pin, *next;

	mutex_lock(&vgpu->pin_lock);
	list_for_each_entry_safe(pin, next, &vgpu->pins, link) {
		u64 end = pin->iova + ((u64)pin->npages << PAGE_SHIFT);
		struct vgpu_mdev_pending *ev = pin->released;

		if (end <= iova || pin->iova >= iova + length)
			continue;
		list_del(&pin->link);
		vfio_unpin_pages(vdev, pin->iova, pin->npages);
		INIT_LIST_HEAD(&ev->link);
		ev->kind = VGPU_MDEV_PENDING_RECORD;
		ev->rec.type = VGPU_MDEV_EVENT_PIN_RELEASED;
		ev->rec.device_id = vgpu->id;
		ev->rec.payload.pin.pin_id = pin->id;
		ev->rec.payload.pin.iova = pin->iova;
		ev->rec.payload.pin.npages = pin->npages;
		pin->released = NULL;
		vgpu_mdev_queue_record(ev);
		vgpu_mdev_pin_free(pin);
	}
	mutex_unlock(&vgpu->pin_lock);
}

/* Reset and close: release every pin (the device is still open for vfio). */
void vgpu_mdev_dma_unpin_all(struct vgpu_mdev_device *vgpu)
{
	struct vgpu_mdev_pin_entry *pin, *next;

	mutex_lock(&vgpu->pin_lock);
	list_for_each_entry_safe(pin, next, &vgpu->pins, link) {
		list_del(&pin->link);
		vfio_unpin_pages(&vgpu->vdev, pin->iova, pin->npages);
		vgpu_mdev_pin_free(pin);
	}
	mutex_unlock(&vgpu->pin_lock);
}

void vgpu_mdev_dma_close(struct vgpu_mdev_device *vgpu)
{
	down_write(&vgpu->dma_lock);
	vgpu->dma_open = false;
	up_write(&vgpu->dma_lock);
	vgpu_mdev_dma_unpin_all(vgpu);
}
