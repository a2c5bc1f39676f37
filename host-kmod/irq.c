// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interrupts: VFIO_DEVICE_SET_IRQS and raising them.
 *
 * QEMU registers eventfds (KVM irqfds) per interrupt type; one type is
 * active at a time. vgpud raises VGPU_MSIX_VECTOR_* numbers:
 *
 *	MSI-X	vector n signals MSI-X entry n (VGPU_MSIX_VECTORS entries)
 *	MSI	any vector signals the single MSI vector (the guest demuxes
 *		with VGPU_REG_IRQ_STATUS)
 *	INTx	a level: asserted while IRQ_STATUS & IRQ_MASK != 0 and
 *		PCI_COMMAND_INTX_DISABLE is clear; VFIO semantics: signalling
 *		automasks it until QEMU/KVM unmasks it (resample eventfd via
 *		vfio_virqfd, or SET_IRQS UNMASK), which re-signals if the level
 *		is still high
 *
 * ERR (count 1) takes an eventfd but is never signalled (QEMU would stop
 * the VM); REQ (count 1) is how .request asks QEMU to release the device
 * when it is being removed.
 */
#include <linux/eventfd.h>
#include <linux/slab.h>

#include "vgpu_mdev.h"

int vgpu_mdev_irq_info(struct vgpu_mdev_device *vgpu, struct vfio_irq_info *info)
{
	switch (info->index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
		info->count = 1;
		info->flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE |
			      VFIO_IRQ_INFO_AUTOMASKED;
		return 0;
	case VFIO_PCI_MSI_IRQ_INDEX:
		info->count = 1;
		info->flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE;
		return 0;
	case VFIO_PCI_MSIX_IRQ_INDEX:
		info->count = VGPU_MSIX_VECTORS;
		info->flags = VFIO_IRQ_INFO_EVENTFD;
		return 0;
	case VFIO_PCI_ERR_IRQ_INDEX:
		/*
		 * accepted so QEMU does not warn; never signalled: an error
		 * here would stop the VM, the guest sees BACKEND_GONE instead
		 */
		info->count = 1;
		info->flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE;
		return 0;
	case VFIO_PCI_REQ_IRQ_INDEX:
		info->count = 1;
		info->flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Fire INTx if its level is high and nothing masks it; never from an
 * eventfd wakeup (see the unmask handler).
 */
void vgpu_mdev_intx_reevaluate_locked(struct vgpu_mdev_device *vgpu)
{
	u32 status, mask;

	lockdep_assert_held(&vgpu->reg_lock);
	status = vgpu->regs[VGPU_REG_IRQ_STATUS / 4];
	mask = vgpu->regs[VGPU_REG_IRQ_MASK / 4];
	vgpu->intx_level = (status & mask) != 0;
	if (vgpu->irq_type == VFIO_PCI_INTX_IRQ_INDEX && vgpu->intx_trigger &&
	    vgpu->intx_level && !vgpu->intx_masked && !vgpu->intx_disabled) {
		vgpu->intx_masked = true;
		eventfd_signal(vgpu->intx_trigger, 1);
	}
}

/*
 * Unmask from KVM's resample eventfd: runs inside an eventfd wakeup, where
 * eventfd_signal() is not allowed, so a re-signal goes to the thread.
 */
static int vgpu_mdev_intx_unmask_handler(void *opaque, void *unused)
{
	struct vgpu_mdev_device *vgpu = opaque;
	unsigned long flags;
	int fire = 0;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	vgpu->intx_masked = false;
	if (vgpu->irq_type == VFIO_PCI_INTX_IRQ_INDEX && vgpu->intx_trigger &&
	    vgpu->intx_level && !vgpu->intx_disabled) {
		vgpu->intx_masked = true;
		fire = 1;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return fire;
}

static void vgpu_mdev_intx_unmask_thread(void *opaque, void *unused)
{
	struct vgpu_mdev_device *vgpu = opaque;
	unsigned long flags;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	if (vgpu->intx_trigger)
		eventfd_signal(vgpu->intx_trigger, 1);
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

/*
 * The device's eventfds (interrupt triggers, vgpud's kick) live in slots
 * that signallers read under reg_lock, so an old one is released only once
 * nobody can signal it any more.
 */
static void vgpu_mdev_eventfd_swap(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot,
				   struct eventfd_ctx *ctx)
{
	struct eventfd_ctx *old;
	unsigned long flags;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	old = *slot;
	*slot = ctx;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	if (old)
		eventfd_ctx_put(old);
}

void vgpu_mdev_eventfd_clear(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot)
{
	vgpu_mdev_eventfd_swap(vgpu, slot, NULL);
}

/* *slot := the eventfd fd, or none for -1. */
int vgpu_mdev_eventfd_set(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot, s32 fd)
{
	struct eventfd_ctx *ctx;

	if (fd == -1) {
		vgpu_mdev_eventfd_clear(vgpu, slot);
		return 0;
	}
	if (fd < 0)
		return -EINVAL;
	ctx = eventfd_ctx_fdget(fd);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	vgpu_mdev_eventfd_swap(vgpu, slot, ctx);
	return 0;
}

static void vgpu_mdev_set_irq_type(struct vgpu_mdev_device *vgpu)
{
	unsigned long flags;
	unsigned int i;
	int type = -1;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	if (vgpu->intx_trigger)
		type = VFIO_PCI_INTX_IRQ_INDEX;
	else if (vgpu->msi_trigger)
		type = VFIO_PCI_MSI_IRQ_INDEX;
	for (i = 0; i < VGPU_MSIX_VECTORS; i++)
		if (vgpu->msix_trigger[i])
			type = VFIO_PCI_MSIX_IRQ_INDEX;
	if (type != vgpu->irq_type) {
		vgpu->irq_type = type;
		vgpu->intx_masked = false;
		vgpu_mdev_intx_reevaluate_locked(vgpu);
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

static bool vgpu_mdev_other_type_active(struct vgpu_mdev_device *vgpu, int index)
{
	return vgpu->irq_type >= 0 && vgpu->irq_type != index;
}

/* DATA_NONE or DATA_BOOL (true) for entries [start, start + count). */
static bool vgpu_mdev_irq_bool(struct vfio_irq_set *hdr, void *data, unsigned int i)
{
	if ((hdr->flags & VFIO_IRQ_SET_DATA_TYPE_MASK) == VFIO_IRQ_SET_DATA_BOOL)
		return ((u8 *)data)[i] != 0;
	return true;
}

static void vgpu_mdev_signal(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot)
{
	unsigned long flags;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	if (*slot)
		eventfd_signal(*slot, 1);
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

static int vgpu_mdev_set_intx(struct vgpu_mdev_device *vgpu, struct vfio_irq_set *hdr,
			      void *data)
{
	u32 action = hdr->flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
	u32 dtype = hdr->flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	unsigned long flags;
	s32 fd;
	int ret;

	switch (action) {
	case VFIO_IRQ_SET_ACTION_MASK:
		if (dtype == VFIO_IRQ_SET_DATA_EVENTFD || !hdr->count)
			return -EINVAL;
		if (vgpu_mdev_irq_bool(hdr, data, 0)) {
			spin_lock_irqsave(&vgpu->reg_lock, flags);
			vgpu->intx_masked = true;
			spin_unlock_irqrestore(&vgpu->reg_lock, flags);
		}
		return 0;
	case VFIO_IRQ_SET_ACTION_UNMASK:
		if (!hdr->count)
			return -EINVAL;
		if (dtype == VFIO_IRQ_SET_DATA_EVENTFD) {
			fd = *(s32 *)data;
			if (fd >= 0)
				return vfio_virqfd_enable(vgpu, vgpu_mdev_intx_unmask_handler,
							  vgpu_mdev_intx_unmask_thread, NULL,
							  &vgpu->intx_unmask, fd);
			vfio_virqfd_disable(&vgpu->intx_unmask);
			return 0;
		}
		if (vgpu_mdev_irq_bool(hdr, data, 0)) {
			spin_lock_irqsave(&vgpu->reg_lock, flags);
			vgpu->intx_masked = false;
			vgpu_mdev_intx_reevaluate_locked(vgpu);
			spin_unlock_irqrestore(&vgpu->reg_lock, flags);
		}
		return 0;
	case VFIO_IRQ_SET_ACTION_TRIGGER:
		if (dtype == VFIO_IRQ_SET_DATA_NONE && !hdr->count) {
			vfio_virqfd_disable(&vgpu->intx_unmask);
			vgpu_mdev_eventfd_clear(vgpu, &vgpu->intx_trigger);
			vgpu_mdev_set_irq_type(vgpu);
			return 0;
		}
		if (dtype == VFIO_IRQ_SET_DATA_EVENTFD) {
			fd = *(s32 *)data;
			if (fd >= 0 && vgpu_mdev_other_type_active(vgpu, VFIO_PCI_INTX_IRQ_INDEX))
				return -EINVAL;
			if (fd < 0)
				vfio_virqfd_disable(&vgpu->intx_unmask);
			ret = vgpu_mdev_eventfd_set(vgpu, &vgpu->intx_trigger, fd);
			vgpu_mdev_set_irq_type(vgpu);
			return ret;
		}
		if (hdr->count && vgpu_mdev_irq_bool(hdr, data, 0))
			vgpu_mdev_signal(vgpu, &vgpu->intx_trigger);
		return 0;
	}
	return -EINVAL;
}

static int vgpu_mdev_set_msi(struct vgpu_mdev_device *vgpu, struct vfio_irq_set *hdr,
			     void *data, bool msix)
{
	u32 dtype = hdr->flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	int index = msix ? VFIO_PCI_MSIX_IRQ_INDEX : VFIO_PCI_MSI_IRQ_INDEX;
	unsigned int i;
	int ret = 0;

	if ((hdr->flags & VFIO_IRQ_SET_ACTION_TYPE_MASK) != VFIO_IRQ_SET_ACTION_TRIGGER)
		return -EINVAL;
	if (dtype == VFIO_IRQ_SET_DATA_NONE && !hdr->count) {
		if (msix)
			for (i = 0; i < VGPU_MSIX_VECTORS; i++)
				vgpu_mdev_eventfd_clear(vgpu, &vgpu->msix_trigger[i]);
		else
			vgpu_mdev_eventfd_clear(vgpu, &vgpu->msi_trigger);
		vgpu_mdev_set_irq_type(vgpu);
		return 0;
	}
	for (i = 0; i < hdr->count; i++) {
		unsigned int n = hdr->start + i;
		struct eventfd_ctx **slot = msix ? &vgpu->msix_trigger[n] : &vgpu->msi_trigger;

		if (dtype == VFIO_IRQ_SET_DATA_EVENTFD) {
			s32 fd = ((s32 *)data)[i];

			if (fd >= 0 && vgpu_mdev_other_type_active(vgpu, index)) {
				ret = -EINVAL;
				break;
			}
			ret = vgpu_mdev_eventfd_set(vgpu, slot, fd);
			if (ret)
				break;
		} else if (vgpu_mdev_irq_bool(hdr, data, i)) {
			vgpu_mdev_signal(vgpu, slot);
		}
	}
	vgpu_mdev_set_irq_type(vgpu);
	return ret;
}

int vgpu_mdev_set_irqs_locked(struct vgpu_mdev_device *vgpu, struct vfio_irq_set *hdr,
			      void *data)
{
	u32 dtype = hdr->flags & VFIO_IRQ_SET_DATA_TYPE_MASK;

	lockdep_assert_held(&vgpu->state_lock);

	switch (hdr->index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
		return vgpu_mdev_set_intx(vgpu, hdr, data);
	case VFIO_PCI_MSI_IRQ_INDEX:
		return vgpu_mdev_set_msi(vgpu, hdr, data, false);
	case VFIO_PCI_MSIX_IRQ_INDEX:
		return vgpu_mdev_set_msi(vgpu, hdr, data, true);
	case VFIO_PCI_ERR_IRQ_INDEX:
	case VFIO_PCI_REQ_IRQ_INDEX: {
		struct eventfd_ctx **slot = hdr->index == VFIO_PCI_REQ_IRQ_INDEX ?
					    &vgpu->req_trigger : &vgpu->err_trigger;

		if ((hdr->flags & VFIO_IRQ_SET_ACTION_TYPE_MASK) != VFIO_IRQ_SET_ACTION_TRIGGER)
			return -EINVAL;
		if (dtype == VFIO_IRQ_SET_DATA_NONE && !hdr->count)
			return vgpu_mdev_eventfd_set(vgpu, slot, -1);
		if (dtype == VFIO_IRQ_SET_DATA_EVENTFD)
			return vgpu_mdev_eventfd_set(vgpu, slot, *(s32 *)data);
		if (hdr->count && vgpu_mdev_irq_bool(hdr, data, 0))
			vgpu_mdev_signal(vgpu, slot);
		return 0;
	}
	default:
		return -EINVAL;
	}
}

void vgpu_mdev_irq_disable_all(struct vgpu_mdev_device *vgpu)
{
	unsigned int i;

	vfio_virqfd_disable(&vgpu->intx_unmask);
	vgpu_mdev_eventfd_clear(vgpu, &vgpu->intx_trigger);
	vgpu_mdev_eventfd_clear(vgpu, &vgpu->msi_trigger);
	for (i = 0; i < VGPU_MSIX_VECTORS; i++)
		vgpu_mdev_eventfd_clear(vgpu, &vgpu->msix_trigger[i]);
	vgpu_mdev_eventfd_clear(vgpu, &vgpu->req_trigger);
	vgpu_mdev_eventfd_clear(vgpu, &vgpu->err_trigger);
	vgpu_mdev_set_irq_type(vgpu);
}

/* From vgpud: never blocks. */
void vgpu_mdev_raise(struct vgpu_mdev_device *vgpu, u32 vectors)
{
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	switch (vgpu->irq_type) {
	case VFIO_PCI_MSIX_IRQ_INDEX:
		for (i = 0; i < VGPU_MSIX_VECTORS; i++)
			if ((vectors & BIT(i)) && vgpu->msix_trigger[i])
				eventfd_signal(vgpu->msix_trigger[i], 1);
		break;
	case VFIO_PCI_MSI_IRQ_INDEX:
		if (vectors && vgpu->msi_trigger)
			eventfd_signal(vgpu->msi_trigger, 1);
		break;
	case VFIO_PCI_INTX_IRQ_INDEX:
		if (vectors)
			vgpu_mdev_intx_reevaluate_locked(vgpu);
		break;
	default:
		break;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

/* vfio .request: the device is being removed; ask QEMU to unplug it. */
void vgpu_mdev_request_release(struct vgpu_mdev_device *vgpu, unsigned int count)
{
	unsigned long flags;
	bool sent = false;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	if (vgpu->req_trigger) {
		eventfd_signal(vgpu->req_trigger, 1);
		sent = true;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	if (sent && !(count % 10))
		dev_notice(&vgpu->mdev->dev, "asking the VM to release the device (%u)\n", count);
	else if (!sent && !count)
		dev_notice(&vgpu->mdev->dev,
			   "no request channel registered: removal waits until the user closes the device\n");
}
