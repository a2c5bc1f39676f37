// SPDX-License-Identifier: GPL-2.0-only
/*
 * A minimal guest driver for the vgpu_mdev tests (L2 only): binds to the vGPU
 * (1af4:10f0), enables interrupts in the mode asked for (mode=msix|msi|intx),
 * acknowledges VGPU_REG_IRQ_STATUS in its handler and counts interrupts per
 * vector in /sys/bus/pci/devices/<dev>/irqtest_counts:
 *	"<mode> <vectors> <count0> <count1> <count2> <status bits seen>"
 * It does not request the BARs, so the test program can still map them.
 * Not the product's guest driver (guest-driver/).
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>

#include <vgpu/abi/device_abi.h>

static char *mode = "msix";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "msix, msi or intx");

struct irqtest_vector {
	struct irqtest *t;
	unsigned int index;
};

struct irqtest {
	void __iomem *bar0;
	unsigned int nvec;
	bool intx;
	atomic_t counts[VGPU_MSIX_VECTORS];
	u32 seen;
	struct irqtest_vector vec[VGPU_MSIX_VECTORS];
};

static irqreturn_t irqtest_handler(int irq, void *arg)
{
	struct irqtest_vector *v = arg;
	struct irqtest *t = v->t;
	u32 status = ioread32(t->bar0 + VGPU_REG_IRQ_STATUS);

	if (!status && t->intx)
		return IRQ_NONE;
	iowrite32(status, t->bar0 + VGPU_REG_IRQ_ACK);
	t->seen |= status;
	atomic_inc(&t->counts[v->index]);
	return IRQ_HANDLED;
}

static ssize_t irqtest_counts_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct irqtest *t = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%s %u %d %d %d %#x\n", mode, t->nvec, atomic_read(&t->counts[0]),
			  atomic_read(&t->counts[1]), atomic_read(&t->counts[2]), t->seen);
}
static DEVICE_ATTR_RO(irqtest_counts);

static int irqtest_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	unsigned int flags, want, i;
	struct irqtest *t;
	int ret;

	if (!strcmp(mode, "msix")) {
		flags = PCI_IRQ_MSIX;
		want = VGPU_MSIX_VECTORS;
	} else if (!strcmp(mode, "msi")) {
		flags = PCI_IRQ_MSI;
		want = 1;
	} else if (!strcmp(mode, "intx")) {
		flags = PCI_IRQ_LEGACY;
		want = 1;
	} else {
		return -EINVAL;
	}
	t = devm_kzalloc(&pdev->dev, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	t->bar0 = pcim_iomap(pdev, VGPU_BAR0_INDEX, VGPU_BAR0_SIZE);
	if (!t->bar0)
		return -ENOMEM;
	t->intx = flags == PCI_IRQ_LEGACY;
	ret = pci_alloc_irq_vectors(pdev, want, want, flags);
	if (ret < 0) {
		dev_err(&pdev->dev, "irqtest: no %s vectors (%d)\n", mode, ret);
		return ret;
	}
	t->nvec = ret;
	for (i = 0; i < t->nvec; i++) {
		t->vec[i].t = t;
		t->vec[i].index = i;
		ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, i), irqtest_handler,
				       t->intx ? IRQF_SHARED : 0, "vgpu_irqtest", &t->vec[i]);
		if (ret) {
			pci_free_irq_vectors(pdev);
			return ret;
		}
	}
	pci_set_drvdata(pdev, t);
	iowrite32(VGPU_IRQ_ALL, t->bar0 + VGPU_REG_IRQ_ACK);
	ret = device_create_file(&pdev->dev, &dev_attr_irqtest_counts);
	if (ret)
		return ret;
	dev_info(&pdev->dev, "irqtest: %u %s vector(s)\n", t->nvec, mode);
	return 0;
}

static void irqtest_remove(struct pci_dev *pdev)
{
	struct irqtest *t = pci_get_drvdata(pdev);
	unsigned int i;

	device_remove_file(&pdev->dev, &dev_attr_irqtest_counts);
	for (i = 0; i < t->nvec; i++)
		devm_free_irq(&pdev->dev, pci_irq_vector(pdev, i), &t->vec[i]);
	pci_free_irq_vectors(pdev);
}

static const struct pci_device_id irqtest_ids[] = {
	{ PCI_DEVICE(VGPU_PCI_VENDOR_ID, VGPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, irqtest_ids);

static struct pci_driver irqtest_driver = {
	.name = "vgpu_irqtest",
	.id_table = irqtest_ids,
	.probe = irqtest_probe,
	.remove = irqtest_remove,
};
module_pci_driver(irqtest_driver);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vgpu_mdev test: counts the vGPU's interrupts in the guest");
