// SPDX-License-Identifier: GPL-2.0-only
/*
 * The vGPU's PCI configuration space (type 0 header).
 *
 *	00 1af4:10f0, class 030200 (3D controller), revision, subsystem
 *	10 BAR0: 32-bit memory, VGPU_BAR0_SIZE (registers, trapped)
 *	18 BAR2: 64-bit prefetchable memory, VGPU_MDEV_BAR2_REGION_SIZE
 *	20 BAR4: 32-bit memory, MSI-X table and PBA
 *	3d interrupt pin INTA
 *	40 MSI-X capability, VGPU_MSIX_VECTORS vectors -> 50
 *	50 MSI capability, 64-bit address, one vector
 *
 * Every byte has a write mask; BARs therefore size themselves the PCI way
 * (write all ones, read back ~(size - 1) | flags). QEMU's vfio-pci
 * virtualizes BARs and the MSI/MSI-X capabilities itself but passes writes
 * through, so the masks keep those copies sane. PCI_STATUS_INTERRUPT
 * reflects the emulated INTx line and PCI_COMMAND_INTX_DISABLE masks it
 * (PCI 2.3 INTx masking).
 */
#include <linux/pci_regs.h>

#include "vgpu_mdev.h"

#define VGPU_MDEV_CAP_MSIX 0x40
#define VGPU_MDEV_CAP_MSI 0x50

static void put8(u8 *p, unsigned int off, u8 v)
{
	p[off] = v;
}

static void put16(u8 *p, unsigned int off, u16 v)
{
	p[off] = v & 0xff;
	p[off + 1] = v >> 8;
}

static void put32(u8 *p, unsigned int off, u32 v)
{
	put16(p, off, v & 0xffff);
	put16(p, off + 2, v >> 16);
}

void vgpu_mdev_config_init(struct vgpu_mdev_device *vgpu)
{
	u8 *c = vgpu->config, *w = vgpu->config_wmask;
	unsigned long flags;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	memset(c, 0, VGPU_MDEV_CONFIG_SIZE);
	memset(w, 0, VGPU_MDEV_CONFIG_SIZE);

	put16(c, PCI_VENDOR_ID, VGPU_PCI_VENDOR_ID);
	put16(c, PCI_DEVICE_ID, VGPU_PCI_DEVICE_ID);
	put16(w, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | PCI_COMMAND_PARITY |
		 PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE);
	put16(c, PCI_STATUS, PCI_STATUS_CAP_LIST);
	put8(c, PCI_REVISION_ID, VGPU_PCI_REVISION);
	put8(c, PCI_CLASS_PROG, VGPU_PCI_CLASS & 0xff);
	put16(c, PCI_CLASS_DEVICE, VGPU_PCI_CLASS >> 8);
	put8(w, PCI_CACHE_LINE_SIZE, 0xff);
	put8(w, PCI_LATENCY_TIMER, 0xff);
	put8(c, PCI_HEADER_TYPE, PCI_HEADER_TYPE_NORMAL);

	put32(c, PCI_BASE_ADDRESS_0, PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_32);
	put32(w, PCI_BASE_ADDRESS_0, ~(VGPU_BAR0_SIZE - 1));
	put32(c, PCI_BASE_ADDRESS_2, PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64 |
		 PCI_BASE_ADDRESS_MEM_PREFETCH);
	put32(w, PCI_BASE_ADDRESS_2, ~(u32)(VGPU_MDEV_BAR2_REGION_SIZE - 1));
	put32(w, PCI_BASE_ADDRESS_3, 0xffffffff);
	put32(c, PCI_BASE_ADDRESS_4, PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_32);
	put32(w, PCI_BASE_ADDRESS_4, ~(VGPU_MDEV_MSIX_BAR_SIZE - 1));

	put16(c, PCI_SUBSYSTEM_VENDOR_ID, VGPU_PCI_SUBSYSTEM_VENDOR_ID);
	put16(c, PCI_SUBSYSTEM_ID, VGPU_PCI_SUBSYSTEM_ID);
	put8(c, PCI_CAPABILITY_LIST, VGPU_MDEV_CAP_MSIX);
	put8(w, PCI_INTERRUPT_LINE, 0xff);
	put8(c, PCI_INTERRUPT_PIN, 1); /* INTA */

	put8(c, VGPU_MDEV_CAP_MSIX + PCI_CAP_LIST_ID, PCI_CAP_ID_MSIX);
	put8(c, VGPU_MDEV_CAP_MSIX + PCI_CAP_LIST_NEXT, VGPU_MDEV_CAP_MSI);
	put16(c, VGPU_MDEV_CAP_MSIX + PCI_MSIX_FLAGS, VGPU_MSIX_VECTORS - 1);
	put16(w, VGPU_MDEV_CAP_MSIX + PCI_MSIX_FLAGS,
	      PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	put32(c, VGPU_MDEV_CAP_MSIX + PCI_MSIX_TABLE,
	      VGPU_MDEV_MSIX_TABLE_OFFSET | VGPU_MDEV_MSIX_BAR);
	put32(c, VGPU_MDEV_CAP_MSIX + PCI_MSIX_PBA, VGPU_MDEV_MSIX_PBA_OFFSET | VGPU_MDEV_MSIX_BAR);

	put8(c, VGPU_MDEV_CAP_MSI + PCI_CAP_LIST_ID, PCI_CAP_ID_MSI);
	put8(c, VGPU_MDEV_CAP_MSI + PCI_CAP_LIST_NEXT, 0);
	put16(c, VGPU_MDEV_CAP_MSI + PCI_MSI_FLAGS, PCI_MSI_FLAGS_64BIT);
	put16(w, VGPU_MDEV_CAP_MSI + PCI_MSI_FLAGS, PCI_MSI_FLAGS_ENABLE | PCI_MSI_FLAGS_QSIZE);
	put32(w, VGPU_MDEV_CAP_MSI + PCI_MSI_ADDRESS_LO, 0xfffffffc);
	put32(w, VGPU_MDEV_CAP_MSI + PCI_MSI_ADDRESS_HI, 0xffffffff);
	put16(w, VGPU_MDEV_CAP_MSI + PCI_MSI_DATA_64, 0xffff);

	vgpu->intx_disabled = false;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

/* Accesses of any size and alignment inside the 256 bytes. */
ssize_t vgpu_mdev_config_rw(struct vgpu_mdev_device *vgpu, char *buf, size_t count, loff_t pos,
			    bool write)
{
	unsigned long flags;
	size_t i;

	if (pos < 0 || pos >= VGPU_MDEV_CONFIG_SIZE)
		return -EINVAL;
	count = min_t(size_t, count, VGPU_MDEV_CONFIG_SIZE - pos);

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	for (i = 0; i < count; i++) {
		unsigned int off = pos + i;
		u8 *c = &vgpu->config[off], m = vgpu->config_wmask[off];

		if (write) {
			*c = (*c & ~m) | (buf[i] & m);
		} else {
			buf[i] = *c;
			if (off == PCI_STATUS && vgpu->intx_level)
				buf[i] |= PCI_STATUS_INTERRUPT;
		}
	}
	if (write && pos <= PCI_COMMAND + 1 && pos + count > PCI_COMMAND) {
		bool disabled = vgpu->config[PCI_COMMAND + 1] & (PCI_COMMAND_INTX_DISABLE >> 8);

		if (disabled != vgpu->intx_disabled) {
			vgpu->intx_disabled = disabled;
			vgpu_mdev_intx_reevaluate_locked(vgpu);
		}
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return count;
}
