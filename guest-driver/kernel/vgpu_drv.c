// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_drv.c - vgpu.ko: the PCI driver of the paravirtual vGPU
 * (vgpu/abi/device_abi.h) and its DRM render-node driver.
 *
 * Probe: enable the function, map BAR0 (trapped registers) and BAR2
 * (mailbox and channel windows, write-back), check the device's identity
 * and layout, set up interrupts, attach to the backend (mailbox, HELLO),
 * QUERY once for the log line, register the DRM device.
 *
 * Remove (unbind, unload, hot-unplug), with userspace possibly still
 * holding buffers, channels and mapped windows:
 *   1. drm_dev_unplug(): no new ioctl, fault or wait reaches the device;
 *      waits for those in flight;
 *   2. zap every user mapping of a channel window (later accesses get a
 *      dummy page) and wake fence waiters (they return ENODEV);
 *   3. destroy the host channels, unload the modules and free the host
 *      buffers userspace still holds, so the VM's GPU memory is not leaked;
 *   4. mask and release interrupts; devres unmaps the BARs.
 * Open files keep working and fail with ENODEV; their GEM objects are
 * freed when userspace lets go. The module cannot be unloaded while a file
 * is open (the DRM fops hold a module reference).
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_print.h>

#include "vgpu_drv.h"

DEFINE_DRM_GEM_FOPS(vgpu_fops);

/* A file is closed: its GPU programs go (its GEM objects go with their handles). */
static void vgpu_postclose(struct drm_device *drm, struct drm_file *file)
{
	vgpu_modules_close_file(to_vgpu(drm), file);
}

static const struct drm_driver vgpu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_RENDER,
	.ioctls = vgpu_ioctls,
	.num_ioctls = VGPU_NUM_IOCTLS,
	.postclose = vgpu_postclose,
	.fops = &vgpu_fops,
	.name = VGPU_DRIVER_NAME,
	.desc = VGPU_DRIVER_DESC,
	.date = VGPU_DRIVER_DATE,
	.major = VGPU_DRIVER_MAJOR,
	.minor = VGPU_DRIVER_MINOR,
	.patchlevel = VGPU_DRIVER_PATCHLEVEL,
};

/* Map BAR0 and BAR2 and check that this is a vGPU we can drive. */
static int vgpu_map_device(struct vgpu_drm_device *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	struct drm_device *drm = &vdev->drm;
	u32 magic, version, stride, channels;
	resource_size_t bar2_size;
	int ret;

	if (!(pci_resource_flags(pdev, VGPU_BAR0_INDEX) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, VGPU_BAR0_INDEX) < VGPU_BAR0_SIZE) {
		drm_err(drm, "BAR0 is not a memory BAR of at least %u bytes\n", VGPU_BAR0_SIZE);
		return -ENODEV;
	}
	if (!(pci_resource_flags(pdev, VGPU_BAR2_INDEX) & IORESOURCE_MEM)) {
		drm_err(drm, "BAR2 is not a memory BAR\n");
		return -ENODEV;
	}
	ret = pcim_iomap_regions(pdev, BIT(VGPU_BAR0_INDEX), VGPU_DRIVER_NAME);
	if (ret) {
		drm_err(drm, "cannot map BAR0 (%d)\n", ret);
		return ret;
	}
	vdev->regs = pcim_iomap_table(pdev)[VGPU_BAR0_INDEX];

	magic = vgpu_reg_read(vdev, VGPU_REG_MAGIC);
	if (magic != VGPU_MAGIC) {
		drm_err(drm, "no vGPU behind BAR0: magic 0x%08x, expected 0x%08x\n",
			magic, VGPU_MAGIC);
		return -ENODEV;
	}
	version = vgpu_reg_read(vdev, VGPU_REG_ABI_VERSION);
	if (version >> 16 != VGPU_ABI_VERSION_MAJOR) {
		drm_err(drm, "device speaks ABI %u.%u, this driver %u.%u: update the driver or the host\n",
			version >> 16, version & 0xffff, VGPU_ABI_VERSION_MAJOR,
			VGPU_ABI_VERSION_MINOR);
		return -ENODEV;
	}
	stride = vgpu_reg_read(vdev, VGPU_REG_CHANNEL_STRIDE);
	channels = vgpu_reg_read(vdev, VGPU_REG_MAX_CHANNELS);
	if (stride != VGPU_CHANNEL_WINDOW_STRIDE || !channels || channels > VGPU_MAX_CHANNELS) {
		drm_err(drm, "unsupported channel layout: %u windows of 0x%x bytes\n",
			channels, stride);
		return -ENODEV;
	}
	vdev->max_channels = channels;

	vdev->bar2_phys = pci_resource_start(pdev, VGPU_BAR2_INDEX);
	bar2_size = pci_resource_len(pdev, VGPU_BAR2_INDEX);
	vdev->bar2_len = VGPU_CHANNEL_WINDOW_BASE +
			 (resource_size_t)channels * VGPU_CHANNEL_WINDOW_STRIDE;
	if (bar2_size < vdev->bar2_len) {
		drm_err(drm, "BAR2 has %pa bytes, %u channel windows need %pa\n",
			&bar2_size, channels, &vdev->bar2_len);
		return -ENODEV;
	}
	if (!devm_request_mem_region(&pdev->dev, vdev->bar2_phys, bar2_size, VGPU_DRIVER_NAME)) {
		drm_err(drm, "BAR2 at %pa is in use\n", &vdev->bar2_phys);
		return -EBUSY;
	}
	/*
	 * Host RAM shared with vgpud, not registers: cacheable. Only the
	 * mailbox and the channel windows; the BAR may be larger (a power of
	 * two) and the rest is not backed.
	 */
	vdev->bar2 = devm_memremap(&pdev->dev, vdev->bar2_phys, vdev->bar2_len, MEMREMAP_WB);
	if (IS_ERR(vdev->bar2)) {
		ret = PTR_ERR(vdev->bar2);
		vdev->bar2 = NULL;
		drm_err(drm, "cannot map BAR2 (%d)\n", ret);
		return ret;
	}
	return 0;
}

static int vgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vgpu_query_response query;
	struct vgpu_drm_device *vdev;
	struct drm_device *drm;
	int ret;

	vdev = devm_drm_dev_alloc(&pdev->dev, &vgpu_drm_driver, struct vgpu_drm_device, drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	drm = &vdev->drm;
	vdev->pdev = pdev;
	pci_set_drvdata(pdev, vdev);
	mutex_init(&vdev->proto_lock);
	mutex_init(&vdev->objects_lock);
	init_waitqueue_head(&vdev->mailbox_wq);
	init_waitqueue_head(&vdev->fence_wq);
	INIT_LIST_HEAD(&vdev->buffers);
	INIT_LIST_HEAD(&vdev->channels);
	spin_lock_init(&vdev->channel_table_lock);
	ret = vgpu_modules_init(vdev);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret) {
		drm_err(drm, "cannot enable the PCI device (%d)\n", ret);
		return ret;
	}
	ret = vgpu_map_device(vdev);
	if (ret)
		return ret;
	pci_set_master(pdev);

	/* The features are valid once the backend has attached. */
	ret = vgpu_host_wait_ready(vdev);
	if (ret)
		return ret;
	vdev->offered_features = vgpu_reg_read(vdev, VGPU_REG_FEATURES);

	vgpu_irq_init(vdev);
	vgpu_reg_write(vdev, VGPU_REG_IRQ_MASK,
		       vdev->irq_mode == DRM_VGPU_IRQ_MODE_POLL ? 0 : VGPU_IRQ_ALL);

	ret = vgpu_host_attach(vdev);
	if (ret)
		goto err_irq;
	vgpu_irq_negotiated(vdev, vdev->proto.hello.features);

	ret = vgpu_proto_query(&vdev->proto, &query);
	if (ret) {
		vgpu_host_report(vdev, ret, "QUERY failed");
		goto err_irq;
	}

	ret = drm_dev_register(drm, 0);
	if (ret) {
		drm_err(drm, "cannot register the DRM device (%d)\n", ret);
		goto err_irq;
	}
	drm_info(drm, "vGPU ABI %u.%u, features 0x%x, %u channels, VRAM share %llu of %llu MiB, chunk %llu KiB, cap %llu MiB, interrupts %s, render node %s\n",
		 vdev->proto.hello.abi_version >> 16, vdev->proto.hello.abi_version & 0xffff,
		 vdev->proto.hello.features, vdev->max_channels, query.vram_share_bytes >> 20,
		 query.vram_total_bytes >> 20, query.chunk_bytes >> 10, query.cap_bytes >> 20,
		 vgpu_irq_mode_name(vdev->irq_mode),
		 drm->render ? dev_name(drm->render->kdev) : "none");
	return 0;

err_irq:
	vgpu_irq_fini(vdev);
	return ret;
}

static void vgpu_remove(struct pci_dev *pdev)
{
	struct vgpu_drm_device *vdev = pci_get_drvdata(pdev);
	struct drm_device *drm = &vdev->drm;

	drm_dev_unplug(drm);
	unmap_mapping_range(drm->anon_inode->i_mapping, 0, 0, 1);
	wake_up_all(&vdev->fence_wq);

	if (pci_dev_is_disconnected(pdev))
		vdev->host_unreachable = true;
	vgpu_channels_release_all(vdev);
	vgpu_modules_release_all(vdev);
	vgpu_bos_release_all(vdev);
	vgpu_irq_fini(vdev);
	drm_info(drm, "unbound (%llu mailbox requests, %llu timeouts)\n",
		 vdev->proto.counters.requests, vdev->proto.counters.timeouts);
}

static void vgpu_shutdown(struct pci_dev *pdev)
{
	struct vgpu_drm_device *vdev = pci_get_drvdata(pdev);

	/* Quiet the device for kexec; the host tears the VM's state down. */
	if (vdev && !pci_dev_is_disconnected(pdev))
		vgpu_reg_write(vdev, VGPU_REG_IRQ_MASK, 0);
}

static const struct pci_device_id vgpu_pci_ids[] = {
	{ PCI_DEVICE(VGPU_PCI_VENDOR_ID, VGPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vgpu_pci_ids);

static struct pci_driver vgpu_pci_driver = {
	.name = VGPU_DRIVER_NAME,
	.id_table = vgpu_pci_ids,
	.probe = vgpu_probe,
	.remove = vgpu_remove,
	.shutdown = vgpu_shutdown,
};
module_pci_driver(vgpu_pci_driver);

MODULE_DESCRIPTION("DRM render-node driver for the " VGPU_DRIVER_DESC);
MODULE_AUTHOR("vGPU project");
MODULE_LICENSE("Dual MIT/GPL");
