/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vgpu_drv.h - internals of vgpu.ko, the guest DRM render-node driver of the
 * paravirtual vGPU (vgpu/abi/device_abi.h; uAPI in include/uapi/vgpu_drm.h).
 *
 * One struct vgpu_drm_device per bound PCI function. It owns
 *  - BAR0 (trapped registers, pci_iomap) and BAR2 (mailbox and channel
 *    windows: host RAM shared with vgpud, mapped write-back),
 *  - the mailbox protocol state of guest-driver/common (struct vgpu_proto),
 *    driven through the hooks in vgpu_host.c,
 *  - the interrupt vectors (vgpu_irq.c),
 *  - the live buffers (vgpu_gem.c), channels (vgpu_channel.c) and GPU
 *    programs (vgpu_module.c), so that unbind can release them on the host
 *    while userspace still holds them.
 *
 * Lifetime. The drm_device (and this struct, embedded in it) lives until the
 * last open file is closed; every GEM object is reachable only through a
 * file (handles) or a mapping (which holds the file), so objects never
 * outlive it. The PCI resources (BARs, vectors) go away at unbind. Anything
 * that touches them runs inside drm_dev_enter()/drm_dev_exit(); unbind
 * calls drm_dev_unplug() first, which waits for those sections, and then
 * nothing reaches the hardware any more except unbind itself.
 */
#ifndef VGPU_DRV_H
#define VGPU_DRV_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <drm/drm_device.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>

#include "vgpu_drm.h"
#include "vgpu_proto.h"

#define VGPU_DRIVER_NAME "vgpu"
#define VGPU_DRIVER_DESC "paravirtual vGPU with GPU memory oversubscription"
#define VGPU_DRIVER_DATE "20261121"
#define VGPU_DRIVER_MAJOR 1
#define VGPU_DRIVER_MINOR 0
#define VGPU_DRIVER_PATCHLEVEL 0

/*
 * Features this driver can use: HELLO asks for these (and MSI-X if it got the
 * vectors). SEMAPHORE_TIMESTAMP needs nothing of the driver (a flag in the
 * commands userspace writes): asked for so that userspace, which reads the
 * features through DRM_IOCTL_VGPU_INFO, may time events on the GPU.
 */
#define VGPU_DRIVER_FEATURES \
	(VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS | VGPU_FEATURE_DOORBELL_KICK | \
	 VGPU_FEATURE_MODULES | VGPU_FEATURE_SEMAPHORE_TIMESTAMP)

enum vgpu_irq_source {
	VGPU_IRQ_SOURCE_MAILBOX,
	VGPU_IRQ_SOURCE_FENCE,
	VGPU_IRQ_SOURCE_ERROR,
	VGPU_IRQ_SOURCES
};

struct vgpu_channel;

struct vgpu_counters {
	atomic64_t irq[VGPU_IRQ_SOURCES];
	atomic64_t fence_waits;
	atomic_t killed_channels;
};

struct vgpu_drm_device {
	struct drm_device drm;
	struct pci_dev *pdev;

	void __iomem *regs;      /* BAR0 */
	void *bar2;              /* BAR2, write-back */
	resource_size_t bar2_phys;
	resource_size_t bar2_len; /* mapped: mailbox + channel windows */
	u32 offered_features;    /* VGPU_REG_FEATURES */
	u32 max_channels;        /* min(register, HELLO) */

	/* Mailbox (vgpu_host.c). */
	struct vgpu_proto proto;
	struct mutex proto_lock; /* serialises requests (vgpu_proto lock hook) */
	wait_queue_head_t mailbox_wq;
	atomic_t mailbox_irq_pending;
	bool host_unreachable;   /* during unbind: a request timed out */
	/*
	 * The backend went away (VGPU_IRQ_DEVICE_LOST, or STATUS read as
	 * BACKEND_GONE): every wait fails with -ENODEV, for good.
	 */
	atomic_t device_lost;

	/* Interrupts (vgpu_irq.c). */
	int irq_mode;            /* DRM_VGPU_IRQ_MODE_* */
	unsigned int nr_vectors;
	bool irq_requested[VGPU_IRQ_SOURCES];
	bool irq_per_source;     /* MSI-X negotiated: a vector is its source */
	char irq_names[VGPU_IRQ_SOURCES][40];

	/* Fence waiters sleep here; fence/error interrupts and unbind wake them. */
	wait_queue_head_t fence_wq;

	/* Live objects, for unbind (vgpu_gem.c, vgpu_channel.c, vgpu_module.c). */
	struct mutex objects_lock;
	struct list_head buffers;
	struct list_head channels;
	u64 live_buffer_bytes;
	u32 live_buffers;
	u32 live_channels;
	u32 live_modules;        /* under objects_lock */
	/* Host module handle -> struct vgpu_module (the xarray's own lock). */
	struct xarray modules;

	/* Window index -> channel, for the error interrupt. */
	spinlock_t channel_table_lock;
	struct vgpu_channel *channel_table[VGPU_MAX_CHANNELS];

	struct vgpu_counters counters;
};

static inline struct vgpu_drm_device *to_vgpu(struct drm_device *drm)
{
	return container_of(drm, struct vgpu_drm_device, drm);
}

/* A GPU memory buffer of this VM (a GEM object without CPU pages). */
struct vgpu_bo {
	struct drm_gem_object base;
	struct list_head node;  /* vgpu_drm_device.buffers */
	u64 gpu_va;
	u64 bytes;
	u32 host_handle;
	u32 priority;
	bool host_released;     /* freed on the host (or left to it) */
};

/* A command channel; its GEM object maps the channel window. */
struct vgpu_channel {
	struct drm_gem_object base;
	struct list_head node;  /* vgpu_drm_device.channels */
	struct vgpu_channel_create_response info;
	resource_size_t window_phys;
	void *window;           /* kernel view (BAR2 mapping) */
	struct page *dummy_page; /* served to user mappings after unbind */
	atomic_t killed;        /* the GPU killed the channel */
	bool host_released;
};

/*
 * A GPU program a file loaded (MODULE_LOAD). Not a GEM object: its handle is
 * the host's, which LAUNCH_FUNCTION commands in the pushbuffer name.
 */
struct vgpu_module {
	struct drm_file *file;  /* the owner: only it unloads, its close does */
	struct list_head close_node; /* vgpu_modules_close_file()'s list */
	u32 handle;             /* the host's, the key in vgpu_drm_device.modules */
	u64 variables_bytes;
	bool host_released;     /* unloaded on the host (or left to it); objects_lock */
};

/* vgpu_host.c: the mailbox as the rest of the driver uses it. */
int vgpu_host_wait_ready(struct vgpu_drm_device *vdev);
int vgpu_host_attach(struct vgpu_drm_device *vdev);
void vgpu_host_report(struct vgpu_drm_device *vdev, int err, const char *fmt, ...) __printf(3, 4);
bool vgpu_host_gone(int err);
bool vgpu_backend_gone(struct vgpu_drm_device *vdev);
void vgpu_device_lost(struct vgpu_drm_device *vdev);
u32 vgpu_reg_read(struct vgpu_drm_device *vdev, u32 offset);
void vgpu_reg_write(struct vgpu_drm_device *vdev, u32 offset, u32 value);

/* vgpu_irq.c */
int vgpu_irq_init(struct vgpu_drm_device *vdev);
void vgpu_irq_negotiated(struct vgpu_drm_device *vdev, u32 features);
void vgpu_irq_fini(struct vgpu_drm_device *vdev);
const char *vgpu_irq_mode_name(int mode);

/* vgpu_gem.c */
int vgpu_bo_create(struct vgpu_drm_device *vdev, struct drm_file *file,
		   struct drm_vgpu_alloc *args);
struct vgpu_bo *vgpu_bo_lookup(struct drm_file *file, u32 handle);
void vgpu_bos_release_all(struct vgpu_drm_device *vdev);

/* vgpu_channel.c */
int vgpu_channel_create(struct vgpu_drm_device *vdev, struct drm_file *file,
			struct drm_vgpu_channel_create *args);
struct vgpu_channel *vgpu_channel_lookup(struct drm_file *file, u32 handle);
u32 vgpu_channel_window_bytes(const struct vgpu_channel *ch);
void vgpu_channels_mark_killed(struct vgpu_drm_device *vdev, u32 index_mask);
void vgpu_channels_release_all(struct vgpu_drm_device *vdev);

/* vgpu_module.c */
int vgpu_modules_init(struct vgpu_drm_device *vdev);
int vgpu_module_load(struct vgpu_drm_device *vdev, struct drm_file *file,
		     struct drm_vgpu_module_load *args);
int vgpu_module_unload(struct vgpu_drm_device *vdev, struct drm_file *file, u32 handle);
void vgpu_modules_close_file(struct vgpu_drm_device *vdev, struct drm_file *file);
void vgpu_modules_release_all(struct vgpu_drm_device *vdev);

/* vgpu_fence.c */
int vgpu_fence_wait(struct vgpu_drm_device *vdev, struct vgpu_channel *ch, u32 offset,
		    u64 value, s64 deadline_ns);

/* vgpu_ioctl.c */
#define VGPU_NUM_IOCTLS (DRM_VGPU_MODULE_UNLOAD + 1)
extern const struct drm_ioctl_desc vgpu_ioctls[VGPU_NUM_IOCTLS];

#endif /* VGPU_DRV_H */
