// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_irq.c - interrupts: mailbox completion, fence, channel error.
 *
 * Preferred is one MSI-X vector per source (VGPU_MSIX_VECTOR_*), which the
 * device uses once HELLO negotiated VGPU_FEATURE_MSIX; then a handler knows
 * its source and only acknowledges it. Otherwise one MSI or (shared) INTx
 * interrupt serves all sources and the handler reads VGPU_REG_IRQ_STATUS.
 * Until HELLO settled the question, and whenever the device did not agree
 * to MSI-X, the MSI-X handlers behave like the shared one. With no
 * interrupt at all (or irq_mode=poll) the driver still works: mailbox and
 * fence waits poll.
 *
 * Every register access here traps to the host, so handlers do the least:
 * acknowledge (before looking at the state, so no event is lost), wake the
 * waiters, and read VGPU_REG_ERROR_CHANNELS only for an error interrupt.
 * VGPU_IRQ_DEVICE_LOST (on the error vector) marks the device lost and wakes
 * every waiter, which then fails with ENODEV (vgpu_device_lost).
 * Fence waiters re-check their notifier word themselves.
 */
#include <linux/interrupt.h>
#include <linux/moduleparam.h>

#include <drm/drm_print.h>

#include "vgpu_drv.h"
#include "vgpu_drm.h"

static char *irq_mode = "auto";
module_param(irq_mode, charp, 0444);
MODULE_PARM_DESC(irq_mode,
		 "Interrupts to use: auto (MSI-X, else MSI, else INTx, else polling), msix, msi, intx, poll");

static const char *const source_names[VGPU_IRQ_SOURCES] = {
	[VGPU_IRQ_SOURCE_MAILBOX] = "mailbox",
	[VGPU_IRQ_SOURCE_FENCE] = "fence",
	[VGPU_IRQ_SOURCE_ERROR] = "error",
};

const char *vgpu_irq_mode_name(int mode)
{
	switch (mode) {
	case DRM_VGPU_IRQ_MODE_MSIX:
		return "MSI-X";
	case DRM_VGPU_IRQ_MODE_MSI:
		return "MSI";
	case DRM_VGPU_IRQ_MODE_INTX:
		return "INTx";
	default:
		return "none (polling)";
	}
}

/* React to the VGPU_IRQ_* bits in status (already acknowledged). */
static void vgpu_irq_dispatch(struct vgpu_drm_device *vdev, u32 status)
{
	if (status & VGPU_IRQ_MAILBOX) {
		atomic64_inc(&vdev->counters.irq[VGPU_IRQ_SOURCE_MAILBOX]);
		atomic_set(&vdev->mailbox_irq_pending, 1);
		wake_up(&vdev->mailbox_wq);
	}
	if (status & VGPU_IRQ_CHANNEL_ERROR) {
		atomic64_inc(&vdev->counters.irq[VGPU_IRQ_SOURCE_ERROR]);
		vgpu_channels_mark_killed(vdev, vgpu_reg_read(vdev, VGPU_REG_ERROR_CHANNELS));
	}
	if (status & (VGPU_IRQ_FENCE | VGPU_IRQ_CHANNEL_ERROR)) {
		if (status & VGPU_IRQ_FENCE)
			atomic64_inc(&vdev->counters.irq[VGPU_IRQ_SOURCE_FENCE]);
		wake_up_all(&vdev->fence_wq);
	}
	if (status & VGPU_IRQ_DEVICE_LOST) {
		atomic64_inc(&vdev->counters.irq[VGPU_IRQ_SOURCE_ERROR]);
		vgpu_device_lost(vdev);
	}
}

/* One interrupt for every source (INTx, MSI, MSI-X before/without HELLO). */
static irqreturn_t vgpu_irq_shared(int irq, void *arg)
{
	struct vgpu_drm_device *vdev = arg;
	u32 status = vgpu_reg_read(vdev, VGPU_REG_IRQ_STATUS);

	/* 0: not ours (shared INTx); all ones: the device is gone. */
	if (!status || status == U32_MAX)
		return IRQ_NONE;
	vgpu_reg_write(vdev, VGPU_REG_IRQ_ACK, status);
	vgpu_irq_dispatch(vdev, status & VGPU_IRQ_ALL);
	return IRQ_HANDLED;
}

static irqreturn_t vgpu_irq_one(struct vgpu_drm_device *vdev, int irq, u32 source_bit)
{
	if (!vdev->irq_per_source)
		return vgpu_irq_shared(irq, vdev);
	vgpu_reg_write(vdev, VGPU_REG_IRQ_ACK, source_bit);
	vgpu_irq_dispatch(vdev, source_bit);
	return IRQ_HANDLED;
}

static irqreturn_t vgpu_irq_mailbox(int irq, void *arg)
{
	return vgpu_irq_one(arg, irq, VGPU_IRQ_MAILBOX);
}

static irqreturn_t vgpu_irq_fence(int irq, void *arg)
{
	return vgpu_irq_one(arg, irq, VGPU_IRQ_FENCE);
}

/*
 * The error vector serves two sources: a killed channel and the lost
 * device. Both are rare, so it reads which (one more trap).
 */
static irqreturn_t vgpu_irq_error(int irq, void *arg)
{
	struct vgpu_drm_device *vdev = arg;
	u32 status;

	if (!vdev->irq_per_source)
		return vgpu_irq_shared(irq, vdev);
	status = vgpu_reg_read(vdev, VGPU_REG_IRQ_STATUS);
	if (status == U32_MAX)
		status = VGPU_IRQ_DEVICE_LOST;
	status &= VGPU_IRQ_CHANNEL_ERROR | VGPU_IRQ_DEVICE_LOST;
	if (!status)
		status = VGPU_IRQ_CHANNEL_ERROR; /* acknowledged meanwhile: look anyway */
	vgpu_reg_write(vdev, VGPU_REG_IRQ_ACK, status);
	vgpu_irq_dispatch(vdev, status);
	return IRQ_HANDLED;
}

static const irq_handler_t msix_handlers[VGPU_IRQ_SOURCES] = {
	[VGPU_IRQ_SOURCE_MAILBOX] = vgpu_irq_mailbox,
	[VGPU_IRQ_SOURCE_FENCE] = vgpu_irq_fence,
	[VGPU_IRQ_SOURCE_ERROR] = vgpu_irq_error,
};

static const unsigned int msix_vectors[VGPU_IRQ_SOURCES] = {
	[VGPU_IRQ_SOURCE_MAILBOX] = VGPU_MSIX_VECTOR_MAILBOX,
	[VGPU_IRQ_SOURCE_FENCE] = VGPU_MSIX_VECTOR_FENCE,
	[VGPU_IRQ_SOURCE_ERROR] = VGPU_MSIX_VECTOR_ERROR,
};

static void vgpu_irq_free(struct vgpu_drm_device *vdev)
{
	unsigned int i;

	for (i = 0; i < VGPU_IRQ_SOURCES; i++) {
		if (!vdev->irq_requested[i])
			continue;
		free_irq(pci_irq_vector(vdev->pdev, vdev->irq_mode == DRM_VGPU_IRQ_MODE_MSIX ?
					msix_vectors[i] : 0), vdev);
		vdev->irq_requested[i] = false;
	}
	if (vdev->nr_vectors)
		pci_free_irq_vectors(vdev->pdev);
	vdev->nr_vectors = 0;
	vdev->irq_mode = DRM_VGPU_IRQ_MODE_POLL;
}

static int vgpu_irq_try_msix(struct vgpu_drm_device *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	unsigned int i;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, VGPU_MSIX_VECTORS, VGPU_MSIX_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	vdev->nr_vectors = ret;
	vdev->irq_mode = DRM_VGPU_IRQ_MODE_MSIX;
	for (i = 0; i < VGPU_IRQ_SOURCES; i++) {
		snprintf(vdev->irq_names[i], sizeof(vdev->irq_names[i]), "vgpu-%s@%s",
			 source_names[i], pci_name(pdev));
		ret = request_irq(pci_irq_vector(pdev, msix_vectors[i]), msix_handlers[i], 0,
				  vdev->irq_names[i], vdev);
		if (ret) {
			vgpu_irq_free(vdev);
			return ret;
		}
		vdev->irq_requested[i] = true;
	}
	return 0;
}

static int vgpu_irq_try_single(struct vgpu_drm_device *vdev, unsigned int type)
{
	struct pci_dev *pdev = vdev->pdev;
	int ret;

	if (type == PCI_IRQ_LEGACY && !pdev->irq)
		return -ENODEV;
	ret = pci_alloc_irq_vectors(pdev, 1, 1, type);
	if (ret < 0)
		return ret;
	vdev->nr_vectors = ret;
	vdev->irq_mode = type == PCI_IRQ_MSI ? DRM_VGPU_IRQ_MODE_MSI : DRM_VGPU_IRQ_MODE_INTX;
	snprintf(vdev->irq_names[0], sizeof(vdev->irq_names[0]), "vgpu@%s", pci_name(pdev));
	ret = request_irq(pci_irq_vector(pdev, 0), vgpu_irq_shared,
			  type == PCI_IRQ_LEGACY ? IRQF_SHARED : 0, vdev->irq_names[0], vdev);
	if (ret) {
		vgpu_irq_free(vdev);
		return ret;
	}
	vdev->irq_requested[0] = true;
	return 0;
}

/*
 * Set up the best interrupt mode allowed by irq_mode and offered by the
 * device and platform, falling back step by step; each fallback is logged.
 * Never fails: the last resort is polling.
 */
int vgpu_irq_init(struct vgpu_drm_device *vdev)
{
	struct drm_device *drm = &vdev->drm;
	/* 3: MSI-X, then MSI, then INTx; 2: MSI, then INTx; 1: INTx; 0: poll */
	int level = 3;
	int ret;

	if (sysfs_streq(irq_mode, "poll"))
		level = 0;
	else if (sysfs_streq(irq_mode, "intx"))
		level = 1;
	else if (sysfs_streq(irq_mode, "msi"))
		level = 2;
	else if (!sysfs_streq(irq_mode, "msix") && !sysfs_streq(irq_mode, "auto"))
		drm_warn(drm, "unknown irq_mode '%s', using auto\n", irq_mode);

	vdev->irq_mode = DRM_VGPU_IRQ_MODE_POLL;
	vdev->irq_per_source = false;

	if (level >= 3) {
		if (!(vdev->offered_features & VGPU_FEATURE_MSIX)) {
			drm_dbg_driver(drm, "device does not offer MSI-X vectors\n");
		} else {
			ret = vgpu_irq_try_msix(vdev);
			if (!ret)
				return 0;
			drm_info(drm, "%u MSI-X vectors unavailable (%d), falling back to MSI/INTx\n",
				 VGPU_MSIX_VECTORS, ret);
		}
	}
	if (level >= 2) {
		ret = vgpu_irq_try_single(vdev, PCI_IRQ_MSI);
		if (!ret)
			return 0;
		drm_dbg_driver(drm, "MSI unavailable (%d)\n", ret);
	}
	if (level >= 1) {
		ret = vgpu_irq_try_single(vdev, PCI_IRQ_LEGACY);
		if (!ret)
			return 0;
		drm_warn(drm, "no usable interrupt (INTx: %d); mailbox and fence waits will poll\n",
			 ret);
	}
	return 0;
}

/* After HELLO: may each MSI-X vector trust its source? */
void vgpu_irq_negotiated(struct vgpu_drm_device *vdev, u32 features)
{
	vdev->irq_per_source = vdev->irq_mode == DRM_VGPU_IRQ_MODE_MSIX &&
			       (features & VGPU_FEATURE_MSIX);
}

/* Silence the device (unless it is gone) and release the vectors. */
void vgpu_irq_fini(struct vgpu_drm_device *vdev)
{
	if (!pci_dev_is_disconnected(vdev->pdev))
		vgpu_reg_write(vdev, VGPU_REG_IRQ_MASK, 0);
	vgpu_irq_free(vdev);
}
