/* SPDX-License-Identifier: MIT */
/*
 * mdev_control.h - the control device of vgpu_mdev.ko, version 1.
 *
 * vgpu_mdev.ko is the VFIO mediated-device parent driver behind every vGPU
 * a VM sees through stock QEMU's vfio-pci (host-kmod/README.md). It emulates
 * the PCI function of device_abi.h and keeps the guest's mapping of BAR2 in
 * the kernel; everything a vGPU *means* is decided by vgpud, which drives
 * the module through one character device:
 *
 *	/dev/vgpu_mdev (misc device), opened by at most one process at a time
 *	(vgpud; a second open fails with EBUSY).
 *
 * Included verbatim by the module and by vgpud's mdev transport; never copy
 * it. Every field is fixed-width and naturally aligned, structures have no
 * implicit padding, reserved fields and flags must be zero (else EINVAL).
 *
 * Parent and types. The first VGPU_MDEV_SET_TYPES registers the mdev parent
 * /sys/class/mdev_bus/vgpu with one mdev type per vGPU profile, as
 * mdev_supported_types/vgpu-<sysfs_name> (name, description, device_api
 * "vfio-pci", available_instances = what vgpud last set). When vgpud closes
 * the device the parent is unregistered if no mdev exists; otherwise it
 * stays, available_instances reads 0 and creating an mdev fails (ENODEV)
 * until vgpud is back, and it is unregistered when the last mdev is removed.
 * A new vgpud may call SET_TYPES with the same sysfs names (descriptions and
 * availability are updated) or, when no mdev exists, with any set.
 *
 * Devices. The module numbers every mdev with a device_id (>= 1, not reused
 * while the module is loaded) that all ioctls and events use; events also
 * carry the mdev UUID. Lifecycle events are *requests* (seq != 0): the
 * kernel waits for VGPU_MDEV_REPLY with that seq (module parameter
 * request_timeout_ms, default 5000) and a non-zero status fails the
 * operation with that errno (the reply's message goes to the kernel log):
 *
 *	CREATE  echo UUID > .../create: accept or refuse an mdev of a type
 *	OPEN    QEMU opened the device: attach the VM (device_abi.h registers,
 *	        STATUS = READY, mailbox MAP_REGION), then reply
 *	CLOSE   QEMU closed it: detach the VM, then reply (not failable; after
 *	        the reply or the timeout the module drops every BAR2 mapping,
 *	        DMA pin and interrupt of the device)
 *	RESET   VFIO_DEVICE_RESET (every VM boot and reboot): detach + attach
 *
 * and notifications (seq == 0): REMOVE (the mdev is gone, device_id is
 * invalid from now on), EXISTS (sent once to a newly connected vgpud for
 * every mdev created under an earlier one; it will OPEN as usual),
 * REG_WRITE, PIN_RELEASED.
 *
 * BAR0 is a register file in the kernel: guest reads are answered from it
 * without waking vgpud (VGPU_REG_FENCE_CHANNELS / _ERROR_CHANNELS read as
 * read-to-clear), vgpud changes it with VGPU_MDEV_REG_UPDATE. Guest writes
 * that mean something are relayed asynchronously - the vCPU never waits
 * for vgpud: VGPU_REG_IRQ_ACK clears the bits in IRQ_STATUS at once;
 * VGPU_REG_IRQ_MASK is stored; both, and VGPU_REG_MAILBOX_DOORBELL, set
 * pending state that reaches vgpud as one coalesced REG_WRITE event per
 * device (a doorbell goes to the kick eventfd instead when vgpud set one
 * with VGPU_MDEV_SET_KICK_EVENTFD). Other writes are ignored. Defaults at
 * open: MAGIC, ABI_VERSION, BAR2_SIZE, MAX_CHANNELS, CHANNEL_STRIDE from
 * device_abi.h, everything else 0 (vgpud sets FEATURES, STATUS, IRQ_MASK).
 * When vgpud goes away STATUS becomes VGPU_STATUS_BACKEND_GONE.
 *
 * BAR2 is a VFIO region of VGPU_MDEV_BAR2_REGION_SIZE (PCI needs a power of
 * two); [0, VGPU_BAR2_SIZE) is mmappable and QEMU maps it straight into the
 * guest. Its pages come from vgpud's shared memory (memfd/shmem files only)
 * with VGPU_MDEV_MAP_REGION; the module inserts them into the guest's
 * mapping at fault time. Unbacked pages hit a per-device scratch page
 * (through an mmap) or read as zero and ignore writes (through read/write).
 * The module holds a reference on every page it maps until it is unmapped,
 * replaced or the device is closed; the descriptor itself is not kept.
 *
 * Shadow swap (vgpu/guest_window.h): VGPU_MDEV_WINDOW_BLOCK marks a range
 * of one channel window blocked and zaps the guest's mapping of it; guest
 * accesses then fault and wait in the kernel (never SIGBUS). The ioctl
 * returns once no guest access to the old pages can be in progress, so
 * vgpud may copy them. VGPU_MDEV_WINDOW_MAP installs new pages for exactly
 * that range (shadow or real) and wakes the waiters, whose accesses go to
 * the new pages. If vgpud exits while a window is blocked, the window is
 * unblocked with its current pages.
 *
 * Interrupts: VGPU_MDEV_RAISE_IRQ (or REG_UPDATE's irq_vectors) signals a
 * VGPU_MSIX_VECTOR_* through the eventfd QEMU registered: MSI-X vector n,
 * or the single MSI vector, or INTx, which the module keeps asserted while
 * IRQ_STATUS & IRQ_MASK != 0 (level semantics, VFIO automask/unmask).
 * vgpud sets IRQ_STATUS bits before raising, and gates on IRQ_MASK.
 *
 * Guest memory: VGPU_MDEV_DMA_RW copies from/to guest-physical addresses
 * (IOVAs of the VM's container: guest-physical without a vIOMMU) through
 * vfio_dma_rw. VGPU_MDEV_PIN pins guest pages (vfio_pin_pages) until
 * VGPU_MDEV_UNPIN, until the guest's memory mapping goes away (then the
 * module unpins and sends PIN_RELEASED) or until close.
 *
 * read() returns whole struct vgpu_mdev_event records (count must be at
 * least one record; blocks unless O_NONBLOCK; poll()/epoll report POLLIN).
 * Events are never lost: requests are one at a time per device, and
 * REG_WRITE state is coalesced per device.
 */
#ifndef VGPU_MDEV_CONTROL_H
#define VGPU_MDEV_CONTROL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <stdint.h>
#include <linux/ioctl.h>
#endif

#include "device_abi.h"

#define VGPU_MDEV_CONTROL_VERSION 1u
#define VGPU_MDEV_CONTROL_PATH "/dev/vgpu_mdev"
#define VGPU_MDEV_CLASS_NAME "vgpu"        /* parent /sys/class/mdev_bus/vgpu */
#define VGPU_MDEV_PARENT_NAME "vgpu"

#define VGPU_MDEV_MAX_TYPES 16u
#define VGPU_MDEV_SYSFS_NAME_MAX 32u   /* [A-Za-z0-9_.-]+, NUL-terminated */
#define VGPU_MDEV_NAME_MAX 64u         /* printable, NUL-terminated */
#define VGPU_MDEV_DESCRIPTION_MAX 256u /* printable, NUL-terminated */
#define VGPU_MDEV_MESSAGE_MAX 128u

/* BAR2 as a VFIO region: the next power of two above VGPU_BAR2_SIZE. */
#define VGPU_MDEV_BAR2_REGION_SIZE 0x800000ull

#define VGPU_MDEV_IOCTL_TYPE 0xBA

/* ------------------------------------------------------------------------ */
/* ioctls                                                                    */

/* VGPU_MDEV_GET_VERSION: what the module implements. */
struct vgpu_mdev_version {
	uint32_t version;     /* VGPU_MDEV_CONTROL_VERSION */
	uint32_t abi_version; /* VGPU_ABI_VERSION of the device the module emulates */
	uint32_t event_size;  /* sizeof(struct vgpu_mdev_event) */
	uint32_t max_types;   /* VGPU_MDEV_MAX_TYPES */
	uint64_t bar2_region_size;
	uint32_t features;    /* VGPU_MDEV_FEATURE_* */
	uint32_t reserved;
};

#define VGPU_MDEV_FEATURE_MSIX (1u << 0) /* MSI-X with VGPU_MSIX_VECTORS vectors */
#define VGPU_MDEV_FEATURE_MSI (1u << 1)  /* one MSI vector */
#define VGPU_MDEV_FEATURE_INTX (1u << 2)
#define VGPU_MDEV_FEATURE_KICK (1u << 3) /* VGPU_MDEV_SET_KICK_EVENTFD */

/* One mdev type = one vGPU profile. */
struct vgpu_mdev_type_info {
	char sysfs_name[VGPU_MDEV_SYSFS_NAME_MAX]; /* type dir "vgpu-<sysfs_name>" */
	char name[VGPU_MDEV_NAME_MAX];             /* the profile, e.g. "vgpu-2G" */
	char description[VGPU_MDEV_DESCRIPTION_MAX];
	uint32_t available; /* available_instances */
	uint32_t reserved;
};

/* VGPU_MDEV_SET_TYPES: types[0..count) (a user pointer); the index in this
 * array is the type_index of events. count 1..VGPU_MDEV_MAX_TYPES. */
struct vgpu_mdev_set_types {
	uint32_t count;
	uint32_t flags;
	uint64_t types; /* struct vgpu_mdev_type_info * */
};

/* VGPU_MDEV_SET_AVAILABLE: a type's available_instances. */
struct vgpu_mdev_set_available {
	uint32_t type_index;
	uint32_t available;
};

/* VGPU_MDEV_REPLY: the answer to a request event. */
struct vgpu_mdev_reply {
	uint32_t device_id;
	uint32_t seq;    /* the event's seq */
	int32_t status;  /* 0 or a negative errno */
	uint32_t reserved;
	char message[VGPU_MDEV_MESSAGE_MAX]; /* status != 0: what was wrong, what to do */
};

/* VGPU_MDEV_REG_UPDATE: apply ops[0..count) to the BAR0 register file in
 * order, atomically with respect to guest accesses, then raise the
 * interrupt vectors in irq_vectors (bit n = VGPU_MSIX_VECTOR n). */
#define VGPU_MDEV_REG_UPDATE_MAX 16u

enum vgpu_mdev_reg_op_kind {
	VGPU_MDEV_REG_SET = 0,   /* reg = value */
	VGPU_MDEV_REG_OR = 1,    /* reg |= value */
	VGPU_MDEV_REG_CLEAR = 2, /* reg &= ~value */
};

struct vgpu_mdev_reg_op {
	uint32_t offset; /* VGPU_REG_*, 4-byte aligned, < VGPU_BAR0_SIZE */
	uint32_t op;     /* enum vgpu_mdev_reg_op_kind */
	uint32_t value;
	uint32_t reserved;
};

struct vgpu_mdev_reg_update {
	uint32_t device_id;
	uint32_t count; /* 0..VGPU_MDEV_REG_UPDATE_MAX */
	uint32_t irq_vectors;
	uint32_t flags;
	struct vgpu_mdev_reg_op ops[VGPU_MDEV_REG_UPDATE_MAX];
};

/* VGPU_MDEV_REG_READ: the register file as the guest would read it (without
 * the read-to-clear side effect). */
struct vgpu_mdev_reg_read {
	uint32_t device_id;
	uint32_t offset;
	uint32_t value; /* out */
	uint32_t reserved;
};

/* VGPU_MDEV_MAP_REGION: BAR2 [bar2_offset, +bytes) is backed by the shmem
 * file fd at fd_offset from now on (replacing what was there; the guest's
 * mapping of the old pages is zapped first). VGPU_MDEV_UNMAP_REGION: backed
 * by nothing again (fd must be -1, fd_offset 0). Page-aligned, within
 * VGPU_BAR2_SIZE. */
struct vgpu_mdev_region {
	uint32_t device_id;
	int32_t fd;
	uint64_t bar2_offset;
	uint64_t bytes;
	uint64_t fd_offset;
};

/* VGPU_MDEV_WINDOW_BLOCK: guest accesses to [bar2_offset, +bytes) of
 * channel window index wait from now on (the range must lie within that
 * window). Returns once no access to the current pages is in progress.
 * EBUSY if the window is already blocked. */
struct vgpu_mdev_window_block {
	uint32_t device_id;
	uint32_t index; /* < VGPU_MAX_CHANNELS */
	uint64_t bar2_offset;
	uint64_t bytes;
};

#define VGPU_MDEV_WINDOW_SEGMENTS_MAX 4u

struct vgpu_mdev_segment {
	uint64_t bar2_offset;
	uint64_t bytes;
	uint64_t fd_offset;
	int32_t fd; /* shmem file */
	uint32_t reserved;
};

enum vgpu_mdev_window_target {
	VGPU_MDEV_WINDOW_REAL = 0,
	VGPU_MDEV_WINDOW_SHADOW = 1,
};

/* VGPU_MDEV_WINDOW_MAP: back the blocked range of window index with
 * segment[0..count) (in BAR2 order, covering it exactly), then let waiting
 * accesses proceed. target is informational (statistics). EINVAL (and the
 * window stays blocked) if the segments do not cover the blocked range. */
struct vgpu_mdev_window_map {
	uint32_t device_id;
	uint32_t index;
	uint32_t target; /* enum vgpu_mdev_window_target */
	uint32_t count;  /* 1..VGPU_MDEV_WINDOW_SEGMENTS_MAX */
	struct vgpu_mdev_segment segment[VGPU_MDEV_WINDOW_SEGMENTS_MAX];
};

/* VGPU_MDEV_RAISE_IRQ: signal vectors (bit n = VGPU_MSIX_VECTOR n). Never
 * blocks. Raising with no interrupt enabled by the guest is not an error. */
struct vgpu_mdev_irq {
	uint32_t device_id;
	uint32_t vectors;
};

/* VGPU_MDEV_DMA_RW: copy bytes (<= VGPU_MDEV_DMA_MAX) between guest
 * memory at iova and vgpud's buffer. EFAULT if the guest has no memory
 * there, ENODEV unless the device is open. */
#define VGPU_MDEV_DMA_WRITE (1u << 0) /* to the guest; else from it */
#define VGPU_MDEV_DMA_MAX (1u << 20)

struct vgpu_mdev_dma {
	uint32_t device_id;
	uint32_t flags;
	uint64_t iova;
	uint64_t buffer; /* user pointer */
	uint64_t bytes;
};

/* VGPU_MDEV_PIN: pin npages (1..VGPU_MDEV_PIN_MAX_PAGES) guest pages at
 * the page-aligned iova; returns pin_id. VGPU_MDEV_UNPIN: release pin_id. */
#define VGPU_MDEV_PIN_MAX_PAGES 512u

struct vgpu_mdev_pin {
	uint32_t device_id;
	uint32_t npages;
	uint64_t iova;
	uint64_t pin_id; /* PIN: out; UNPIN: in */
};

/* VGPU_MDEV_SET_STATS: what the mdev's sysfs vendor/ group shows. */
struct vgpu_mdev_stats {
	uint32_t device_id;
	uint32_t flags;
	uint64_t allocated_bytes;
	uint64_t resident_bytes;
	uint64_t evicted_bytes;
	uint64_t fair_share_bytes;
	uint32_t evictions;
	uint32_t returns;
	char vm_name[VGPU_MDEV_NAME_MAX]; /* the domain, "" = unknown */
};

/* VGPU_MDEV_SET_KICK_EVENTFD: doorbell writes signal this eventfd (an
 * ioeventfd) instead of a REG_WRITE event; fd -1 removes it. Cleared at
 * close. */
struct vgpu_mdev_kick {
	uint32_t device_id;
	int32_t fd;
};

#define VGPU_MDEV_GET_VERSION _IOR(VGPU_MDEV_IOCTL_TYPE, 0x00, struct vgpu_mdev_version)
#define VGPU_MDEV_SET_TYPES _IOW(VGPU_MDEV_IOCTL_TYPE, 0x01, struct vgpu_mdev_set_types)
#define VGPU_MDEV_SET_AVAILABLE _IOW(VGPU_MDEV_IOCTL_TYPE, 0x02, struct vgpu_mdev_set_available)
#define VGPU_MDEV_REPLY _IOW(VGPU_MDEV_IOCTL_TYPE, 0x03, struct vgpu_mdev_reply)
#define VGPU_MDEV_REG_UPDATE _IOW(VGPU_MDEV_IOCTL_TYPE, 0x04, struct vgpu_mdev_reg_update)
#define VGPU_MDEV_REG_READ _IOWR(VGPU_MDEV_IOCTL_TYPE, 0x05, struct vgpu_mdev_reg_read)
#define VGPU_MDEV_MAP_REGION _IOW(VGPU_MDEV_IOCTL_TYPE, 0x06, struct vgpu_mdev_region)
#define VGPU_MDEV_UNMAP_REGION _IOW(VGPU_MDEV_IOCTL_TYPE, 0x07, struct vgpu_mdev_region)
#define VGPU_MDEV_WINDOW_BLOCK _IOW(VGPU_MDEV_IOCTL_TYPE, 0x08, struct vgpu_mdev_window_block)
#define VGPU_MDEV_WINDOW_MAP _IOW(VGPU_MDEV_IOCTL_TYPE, 0x09, struct vgpu_mdev_window_map)
#define VGPU_MDEV_RAISE_IRQ _IOW(VGPU_MDEV_IOCTL_TYPE, 0x0a, struct vgpu_mdev_irq)
#define VGPU_MDEV_DMA_RW _IOW(VGPU_MDEV_IOCTL_TYPE, 0x0b, struct vgpu_mdev_dma)
#define VGPU_MDEV_PIN _IOWR(VGPU_MDEV_IOCTL_TYPE, 0x0c, struct vgpu_mdev_pin)
#define VGPU_MDEV_UNPIN _IOW(VGPU_MDEV_IOCTL_TYPE, 0x0d, struct vgpu_mdev_pin)
#define VGPU_MDEV_SET_STATS _IOW(VGPU_MDEV_IOCTL_TYPE, 0x0e, struct vgpu_mdev_stats)
#define VGPU_MDEV_SET_KICK_EVENTFD _IOW(VGPU_MDEV_IOCTL_TYPE, 0x0f, struct vgpu_mdev_kick)

/* ------------------------------------------------------------------------ */
/* Events (read())                                                           */

enum vgpu_mdev_event_type {
	VGPU_MDEV_EVENT_CREATE = 1, /* request: payload.device */
	VGPU_MDEV_EVENT_OPEN = 2,   /* request: payload.device */
	VGPU_MDEV_EVENT_CLOSE = 3,  /* request: payload.device */
	VGPU_MDEV_EVENT_RESET = 4,  /* request: payload.device */
	VGPU_MDEV_EVENT_REMOVE = 5, /* payload.device */
	VGPU_MDEV_EVENT_EXISTS = 6, /* payload.device */
	VGPU_MDEV_EVENT_REG_WRITE = 7,    /* payload.regs */
	VGPU_MDEV_EVENT_PIN_RELEASED = 8, /* payload.pin */
};

struct vgpu_mdev_event_device {
	uint8_t uuid[16];    /* the mdev's UUID, RFC 4122 byte order */
	uint32_t type_index; /* index in SET_TYPES' array */
	uint32_t session;    /* counts opens of this device, from 1 */
	uint32_t open;       /* 1 while QEMU has the device open */
	uint32_t reserved[5];
};

/* What the guest wrote since the last REG_WRITE event of the device. */
#define VGPU_MDEV_REG_DOORBELL (1u << 0) /* VGPU_REG_MAILBOX_DOORBELL written */
#define VGPU_MDEV_REG_IRQ_ACK (1u << 1)  /* VGPU_REG_IRQ_ACK written */
#define VGPU_MDEV_REG_IRQ_MASK (1u << 2) /* VGPU_REG_IRQ_MASK written */

struct vgpu_mdev_event_regs {
	uint32_t changed;   /* VGPU_MDEV_REG_* */
	uint32_t doorbells; /* doorbell writes (saturating) */
	uint32_t irq_ack;   /* OR of the bits acknowledged (already cleared) */
	uint32_t irq_mask;  /* current VGPU_REG_IRQ_MASK */
	uint32_t reserved[8];
};

/* The guest's memory under a pin went away: the module unpinned it. */
struct vgpu_mdev_event_pin {
	uint64_t pin_id;
	uint64_t iova;
	uint64_t npages;
	uint32_t reserved[6];
};

struct vgpu_mdev_event {
	uint32_t type; /* enum vgpu_mdev_event_type */
	uint32_t device_id;
	uint32_t seq;  /* != 0: a request; answer with VGPU_MDEV_REPLY */
	uint32_t flags;
	union {
		struct vgpu_mdev_event_device device;
		struct vgpu_mdev_event_regs regs;
		struct vgpu_mdev_event_pin pin;
		uint8_t raw[48];
	} payload;
};

#ifndef __cplusplus
_Static_assert(sizeof(struct vgpu_mdev_event) == 64, "event record is 64 bytes");
_Static_assert(sizeof(struct vgpu_mdev_event_device) == 48, "device payload");
_Static_assert(sizeof(struct vgpu_mdev_event_regs) == 48, "regs payload");
_Static_assert(sizeof(struct vgpu_mdev_event_pin) == 48, "pin payload");
_Static_assert(sizeof(struct vgpu_mdev_type_info) == 360, "type info");
_Static_assert(sizeof(struct vgpu_mdev_reg_update) == 16 + 16 * VGPU_MDEV_REG_UPDATE_MAX,
	       "reg update");
_Static_assert(sizeof(struct vgpu_mdev_window_map) == 16 + 32 * VGPU_MDEV_WINDOW_SEGMENTS_MAX,
	       "window map");
_Static_assert(sizeof(struct vgpu_mdev_stats) == 112, "stats");
_Static_assert(VGPU_BAR2_SIZE <= VGPU_MDEV_BAR2_REGION_SIZE, "BAR2 fits its region");
_Static_assert((VGPU_MDEV_BAR2_REGION_SIZE & (VGPU_MDEV_BAR2_REGION_SIZE - 1)) == 0,
	       "BAR2 region is a power of two");
#endif

#endif /* VGPU_MDEV_CONTROL_H */
