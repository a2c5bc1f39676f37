// SPDX-License-Identifier: GPL-2.0-only
/*
 * The GPU as the mdev parent: the PCI driver "vgpu".
 *
 * By default the mdev types of vgpud's profiles live under a virtual
 * device, /sys/class/mdev_bus/vgpu. An operator may instead bind the PCI
 * function that stands for the GPU (the one vgpud's HAL drives) to this
 * module's PCI driver "vgpu":
 *
 *	echo vgpu > /sys/bus/pci/devices/0000:00:10.0/driver_override
 *	echo 0000:00:10.0 > /sys/bus/pci/drivers_probe
 *
 * and the types then live under that PCI device, as with hardware vGPUs:
 * /sys/bus/pci/devices/0000:00:10.0/mdev_supported_types/vgpu-<profile>
 * (the type directory is "<parent's driver>-<sysfs name>", still "vgpu-").
 * libvirt's node-device driver (virsh nodedev-define / nodedev-create)
 * creates mdevs only on PCI, CCW and AP parents, so libvirt needs this.
 *
 * One GPU at a time. Binding moves a registered parent with no mdevs to the
 * PCI device (its types are registered again there); with mdevs it is
 * refused. Unbinding removes the parent from the PCI device, with its mdevs
 * (VMs using one are asked to release it first, as on rmmod), and moves it
 * back to the virtual device if vgpud is connected.
 */
#include <linux/pci.h>

#include "vgpu_mdev.h"

static int vgpu_mdev_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret = vgpu_mdev_parent_move(&pdev->dev, false);

	if (ret == -EBUSY)
		pci_err(pdev, "vgpu_mdev: cannot use this function as the GPU: another GPU is bound, or mdevs exist on the current parent (remove them first)\n");
	else if (ret)
		pci_err(pdev, "vgpu_mdev: cannot use this function as the GPU (%d)\n", ret);
	else
		pci_info(pdev, "vgpu_mdev: this function is the GPU; the mdev types of vgpud's profiles live under it\n");
	return ret;
}

static void vgpu_mdev_pci_remove(struct pci_dev *pdev)
{
	vgpu_mdev_parent_move(NULL, true);
	pci_info(pdev, "vgpu_mdev: no longer the GPU; mdev types are back under /sys/class/mdev_bus/%s\n",
		 VGPU_MDEV_PARENT_NAME);
}

/* No IDs: a function is bound only through its driver_override. */
static struct pci_driver vgpu_mdev_pci_driver = {
	.name = VGPU_MDEV_CLASS_NAME,
	.id_table = NULL,
	.probe = vgpu_mdev_pci_probe,
	.remove = vgpu_mdev_pci_remove,
};

int vgpu_mdev_pci_init(void)
{
	return pci_register_driver(&vgpu_mdev_pci_driver);
}

void vgpu_mdev_pci_exit(void)
{
	pci_unregister_driver(&vgpu_mdev_pci_driver);
}
