/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of vgpu_mdev.ko promise each other.
 *
 * One file per concept:
 *	main.c		module init/exit, parameters, the pseudo file system
 *	parent.c	the mdev parent, its types (vGPU profiles) and lifetime
 *	pci_parent.c	the PCI driver "vgpu": a PCI function as the parent (the GPU)
 *	device.c	one mdev: probe/remove and the vfio_device ops
 *	pci_config.c	the emulated PCI configuration space
 *	bar0.c		the BAR0 register file and relayed guest writes
 *	bar2.c		BAR2 backing pages, the guest's mapping, the shadow swap
 *	irq.c		VFIO_DEVICE_SET_IRQS and raising MSI-X/MSI/INTx
 *	dma.c		guest memory access and pins for vgpud
 *	control.c	/dev/vgpu_mdev: ioctls, events, requests to vgpud
 *	sysfs.c		the mdev's vendor/ attributes
 *
 * The device and control ABIs are vgpu/abi/device_abi.h and
 * vgpu/abi/mdev_control.h.
 *
 * Names follow the kernel's mdev samples (samples/vfio-mdev/mbochs.c):
 * `vdev` is always the struct vfio_device, `vgpu` this module's state of
 * one mdev (struct vgpu_mdev_device), which embeds its vdev.
 */
#ifndef VGPU_MDEV_H
#define VGPU_MDEV_H

#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/mdev.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/vfio.h>
#include <linux/wait.h>

#include <vgpu/abi/device_abi.h>
#include <vgpu/abi/mdev_control.h>

#define VGPU_MDEV_DRIVER_NAME "vgpu_mdev"

/* VFIO region offsets: index << 40, as vfio-pci does. */
#define VGPU_MDEV_REGION_SHIFT 40
#define VGPU_MDEV_REGION_OFFSET(index) ((u64)(index) << VGPU_MDEV_REGION_SHIFT)
#define VGPU_MDEV_REGION_INDEX(off) ((off) >> VGPU_MDEV_REGION_SHIFT)
#define VGPU_MDEV_REGION_MASK (VGPU_MDEV_REGION_OFFSET(1) - 1)

/*
 * The MSI-X table and PBA live in a BAR of their own, so BAR0 stays the
 * register file of device_abi.h and BAR2 stays fully mappable.
 */
#define VGPU_MDEV_MSIX_BAR 4
#define VGPU_MDEV_MSIX_BAR_SIZE 0x1000u
#define VGPU_MDEV_MSIX_TABLE_OFFSET 0x0u
#define VGPU_MDEV_MSIX_PBA_OFFSET 0x800u

#define VGPU_MDEV_CONFIG_SIZE 256
#define VGPU_MDEV_BAR2_PAGES (VGPU_BAR2_SIZE >> PAGE_SHIFT)
#define VGPU_MDEV_REGS (VGPU_BAR0_SIZE / 4)

struct vgpu_mdev_control;
struct vgpu_mdev_device;

/* A queued event: a standalone record, or a slot embedded in a device. */
enum vgpu_mdev_pending_kind {
	VGPU_MDEV_PENDING_RECORD,  /* rec is complete; kfree after delivery */
	VGPU_MDEV_PENDING_REQUEST, /* the device's request slot */
	VGPU_MDEV_PENDING_REGS,    /* the device's coalesced REG_WRITE state */
};

struct vgpu_mdev_pending {
	struct list_head link; /* in the control's queue, or empty */
	enum vgpu_mdev_pending_kind kind;
	struct vgpu_mdev_device *vgpu; /* REQUEST, REGS */
	struct vgpu_mdev_event rec;    /* RECORD, REQUEST */
};

/* One vGPU profile as an mdev type. */
struct vgpu_mdev_type {
	struct mdev_type mtype;
	unsigned int index;
	struct vgpu_mdev_type_info info;
	struct list_head generation; /* all types ever registered */
};

/* A pin of guest pages for vgpud. */
struct vgpu_mdev_pin_entry {
	struct list_head link;
	u64 id;
	u64 iova;
	unsigned int npages;
	struct page **pages;
	struct vgpu_mdev_pending *released; /* preallocated PIN_RELEASED */
};

struct vgpu_mdev_window {
	bool blocked;
	u32 first_page; /* blocked BAR2 pages [first_page, +npages) */
	u32 npages;
};

struct vgpu_mdev_device {
	struct vfio_device vdev; /* first: vfio_alloc_device */
	struct mdev_device *mdev;
	struct vgpu_mdev_type *type;
	u32 id;
	bool removed; /* under vgpu_mdev.lock */

	/* open/close/reset/SET_IRQS, and the one request in flight */
	struct mutex state_lock;
	bool open;
	u32 session;
	bool backend_gone;
	/* the request in flight, under vgpu_mdev.event_lock */
	struct vgpu_mdev_pending request;
	wait_queue_head_t request_wq;
	u32 request_seq; /* 0: none */
	bool request_done;
	int request_status;
	bool events_off; /* removed: queue nothing more */

	/* PCI configuration space (pci_config.c), under state_lock */
	u8 config[VGPU_MDEV_CONFIG_SIZE];
	u8 config_wmask[VGPU_MDEV_CONFIG_SIZE];

	/* BAR0 register file and interrupt state (bar0.c, irq.c) */
	spinlock_t reg_lock;
	u32 regs[VGPU_MDEV_REGS];
	struct vgpu_mdev_pending regs_event;
	u32 pending_changed;
	u32 pending_doorbells;
	u32 pending_irq_ack;
	struct eventfd_ctx *kick;

	int irq_type; /* VFIO_PCI_*_IRQ_INDEX, or -1 */
	struct eventfd_ctx *intx_trigger;
	struct eventfd_ctx *msi_trigger;
	struct eventfd_ctx *msix_trigger[VGPU_MSIX_VECTORS];
	struct eventfd_ctx *req_trigger;
	struct eventfd_ctx *err_trigger; /* held, never signalled */
	struct virqfd *intx_unmask;
	bool intx_masked;   /* VFIO automask: asserted, waiting for unmask */
	bool intx_disabled; /* PCI_COMMAND_INTX_DISABLE */
	bool intx_level;

	/* BAR2 (bar2.c) */
	struct rw_semaphore bar2_lock;
	bool bar2_active;        /* between open and close */
	struct file *bar2_file;  /* its mapping holds the guest's vmas */
	struct page **bar2_pages; /* VGPU_MDEV_BAR2_PAGES, NULL = unbacked */
	struct page *scratch;
	struct vgpu_mdev_window windows[VGPU_MAX_CHANNELS];
	wait_queue_head_t bar2_wq;
	atomic_t swaps_to_shadow;
	atomic_t swaps_to_real;
	atomic_t fault_waits;

	/* guest memory (dma.c) */
	struct rw_semaphore dma_lock; /* read: DMA in flight; write: close */
	bool dma_open;
	struct mutex pin_lock; /* pins vs .dma_unmap */
	struct list_head pins;
	u64 next_pin_id;

	/* sysfs (sysfs.c), under reg_lock */
	struct vgpu_mdev_stats stats;
};

struct vgpu_mdev_module {
	/* registration of the parent; never taken inside lock */
	struct mutex parent_lock;
	bool parent_registered;
	struct mdev_parent parent;
	struct device *parent_dev;
	struct mdev_type *type_ptrs[VGPU_MDEV_MAX_TYPES];
	struct vgpu_mdev_type *types[VGPU_MDEV_MAX_TYPES];
	unsigned int nr_types;
	struct list_head type_generations;
	struct work_struct unregister_work;

	/* devices, controller, type contents */
	struct mutex lock;
	bool accepting;            /* probe may create devices */
	struct idr devices;        /* device_id -> device, also under idr_lock */
	spinlock_t idr_lock;
	unsigned int nr_devices;

	/* the connected vgpud and its event queue */
	spinlock_t event_lock;
	struct vgpu_mdev_control *controller;

	struct vfsmount *mnt;
};

extern struct vgpu_mdev_module vgpu_mdev;
extern unsigned int vgpu_mdev_request_timeout_ms;
extern unsigned int vgpu_mdev_close_timeout_ms;

/* main.c */
struct file *vgpu_mdev_new_bar2_file(struct vgpu_mdev_device *vgpu);

/* parent.c */
int vgpu_mdev_parent_init(void);
void vgpu_mdev_parent_exit(void);
int vgpu_mdev_set_types(const struct vgpu_mdev_type_info *infos, unsigned int count);
int vgpu_mdev_set_available(u32 type_index, u32 available);
void vgpu_mdev_parent_maybe_unregister(void);
int vgpu_mdev_parent_move(struct device *dev, bool force);
extern struct mdev_driver vgpu_mdev_driver;

/* pci_parent.c */
int vgpu_mdev_pci_init(void);
void vgpu_mdev_pci_exit(void);

/* device.c */
int vgpu_mdev_probe(struct mdev_device *mdev);
void vgpu_mdev_remove(struct mdev_device *mdev);
struct vgpu_mdev_device *vgpu_mdev_device_get(u32 id);
void vgpu_mdev_device_put(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_device_backend_gone(struct vgpu_mdev_device *vgpu);

/* pci_config.c */
void vgpu_mdev_config_init(struct vgpu_mdev_device *vgpu);
ssize_t vgpu_mdev_config_rw(struct vgpu_mdev_device *vgpu, char *buf, size_t count,
			    loff_t pos, bool write);
void vgpu_mdev_config_update_intx(struct vgpu_mdev_device *vgpu);

/* bar0.c */
void vgpu_mdev_regs_reset(struct vgpu_mdev_device *vgpu);
ssize_t vgpu_mdev_bar0_rw(struct vgpu_mdev_device *vgpu, char *buf, size_t count,
			  loff_t pos, bool write);
int vgpu_mdev_regs_update(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_reg_op *ops,
			  unsigned int count);
int vgpu_mdev_regs_read(struct vgpu_mdev_device *vgpu, u32 offset, u32 *value);
bool vgpu_mdev_regs_fill_event(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_event *rec);

/* bar2.c */
int vgpu_mdev_bar2_init(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_bar2_free(struct vgpu_mdev_device *vgpu);
int vgpu_mdev_bar2_open(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_bar2_close(struct vgpu_mdev_device *vgpu);
int vgpu_mdev_bar2_mmap(struct vgpu_mdev_device *vgpu, struct vm_area_struct *vma);
ssize_t vgpu_mdev_bar2_rw(struct vgpu_mdev_device *vgpu, char __user *buf, size_t count,
			  loff_t pos, bool write);
int vgpu_mdev_map_region(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_region *r);
int vgpu_mdev_unmap_region(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_region *r);
int vgpu_mdev_window_block(struct vgpu_mdev_device *vgpu,
			   const struct vgpu_mdev_window_block *b);
int vgpu_mdev_window_map(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_window_map *m);
void vgpu_mdev_bar2_unblock_all(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_bar2_reset(struct vgpu_mdev_device *vgpu);

/* irq.c */
int vgpu_mdev_irq_info(struct vgpu_mdev_device *vgpu, struct vfio_irq_info *info);
int vgpu_mdev_set_irqs_locked(struct vgpu_mdev_device *vgpu, struct vfio_irq_set *hdr,
			      void *data);
int vgpu_mdev_eventfd_set(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot, s32 fd);
void vgpu_mdev_eventfd_clear(struct vgpu_mdev_device *vgpu, struct eventfd_ctx **slot);
void vgpu_mdev_irq_disable_all(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_raise(struct vgpu_mdev_device *vgpu, u32 vectors);
void vgpu_mdev_intx_reevaluate_locked(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_request_release(struct vgpu_mdev_device *vgpu, unsigned int count);

/* dma.c */
int vgpu_mdev_dma_rw(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_dma *d);
int vgpu_mdev_pin(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_pin *p);
int vgpu_mdev_unpin(struct vgpu_mdev_device *vgpu, u64 pin_id);
void vgpu_mdev_dma_unmap(struct vfio_device *vdev, u64 iova, u64 length);
void vgpu_mdev_dma_close(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_dma_open(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_dma_unpin_all(struct vgpu_mdev_device *vgpu);

/* control.c */
int vgpu_mdev_control_init(void);
void vgpu_mdev_control_exit(void);
int vgpu_mdev_request(struct vgpu_mdev_device *vgpu, u32 type, unsigned int timeout_ms,
		      bool killable);
const char *vgpu_mdev_request_failure(int err, const char *refused);
void vgpu_mdev_notify_regs(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_queue_record(struct vgpu_mdev_pending *p);
void vgpu_mdev_dequeue_device(struct vgpu_mdev_device *vgpu);
void vgpu_mdev_fill_device_event(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_event *rec,
				 u32 type);
bool vgpu_mdev_controller_present(void);

/* sysfs.c */
extern const struct attribute_group *vgpu_mdev_dev_groups[];

#endif /* VGPU_MDEV_H */
