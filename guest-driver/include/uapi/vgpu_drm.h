/* SPDX-License-Identifier: MIT */
/*
 * vgpu_drm.h - the userspace API of vgpu.ko, the guest DRM render-node
 * driver of the paravirtual vGPU (vgpu/abi/device_abi.h).
 *
 * Userspace opens /dev/dri/renderD* (drmOpenWithType("vgpu", NULL,
 * DRM_NODE_RENDER) or drmGetDevices2) and calls these ioctls with libdrm's
 * drmIoctl(). Include with libdrm's include path (pkg-config --cflags
 * libdrm), which provides "drm.h".
 *
 * Objects. Memory buffers and channels are GEM objects with handles in the
 * file's GEM handle space:
 *  - a buffer is GPU memory of this VM on the host (ALLOC); it has a GPU
 *    virtual address and no CPU mapping (ABI v1 has none);
 *  - a channel is a command channel whose window (control page, GPFIFO
 *    ring, notifier, pushbuffer) userspace maps with mmap() at the
 *    offset CHANNEL_CREATE returns and then submits into directly, with
 *    no system call per submission.
 * An object lives while a handle or a mapping refers to it: FREE and
 * CHANNEL_DESTROY (or DRM_IOCTL_GEM_CLOSE) drop the handle, and the host
 * releases the buffer or channel when the last reference is gone, i.e. a
 * channel stays alive until its window is unmapped. Handles of one kind
 * passed to an ioctl of the other kind fail with EINVAL.
 *
 * GPU programs (uAPI 2, when GET_INFO's features has VGPU_FEATURE_MODULES,
 * bit 4): MODULE_LOAD loads a module whose image userspace placed in a
 * buffer of its own; its handle is not a GEM handle but the device's
 * (LAUNCH_FUNCTION commands name it) and belongs to the file that loaded
 * it: only that file can unload it, and closing the file unloads it.
 *
 * Errors are negative errno values from drmIoctl (errno): the host's
 * status codes map as INVALID -> EINVAL, UNSUPPORTED -> EOPNOTSUPP,
 * NO_MEMORY -> ENOMEM (the VM's cap or the host budget is exhausted),
 * NOT_FOUND -> ENOENT, LIMIT -> ENOSPC (too many buffers or channels),
 * INTERNAL -> EIO, BUSY -> EAGAIN (transient: nothing changed, retry after
 * a short delay; note that drmIoctl() retries EAGAIN at once, in a tight
 * loop, so call ioctl() directly for ALLOC to back off); a backend that
 * does not answer gives ETIMEDOUT, a device that broke the protocol EPROTO,
 * a device that is gone (unbound, backend stopped) ENODEV. The kernel log
 * says what happened.
 *
 * Versioning. DRM_VGPU_UAPI_VERSION grows with compatible additions;
 * GET_INFO reports the driver's. Structs only ever grow at the end (the
 * DRM core zero-fills what an older userspace did not pass and truncates
 * what it does not read); fields named flags or pad must be zero.
 */
#ifndef VGPU_DRM_H
#define VGPU_DRM_H

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_VGPU_DRIVER_NAME "vgpu"
#define DRM_VGPU_UAPI_VERSION 2 /* 2: MODULE_LOAD, MODULE_UNLOAD */

#define DRM_VGPU_GET_INFO 0x00
#define DRM_VGPU_ALLOC 0x01
#define DRM_VGPU_FREE 0x02
#define DRM_VGPU_SET_PRIORITY 0x03
#define DRM_VGPU_CHANNEL_CREATE 0x04
#define DRM_VGPU_CHANNEL_DESTROY 0x05
#define DRM_VGPU_WAIT_FENCE 0x06
#define DRM_VGPU_STATS 0x07
#define DRM_VGPU_MODULE_LOAD 0x08   /* uAPI 2 */
#define DRM_VGPU_MODULE_UNLOAD 0x09 /* uAPI 2 */

/* How the driver receives interrupts (drm_vgpu_get_info.irq_mode). */
#define DRM_VGPU_IRQ_MODE_POLL 0 /* none: mailbox and fence waits poll */
#define DRM_VGPU_IRQ_MODE_INTX 1
#define DRM_VGPU_IRQ_MODE_MSI 2
#define DRM_VGPU_IRQ_MODE_MSIX 3 /* one vector per source */

/*
 * GET_INFO: the device as HELLO negotiated it and this VM's view of GPU
 * memory (a fresh QUERY of the backend).
 */
struct drm_vgpu_get_info {
	__u32 uapi_version;     /* DRM_VGPU_UAPI_VERSION of the driver */
	__u32 abi_version;      /* the device's (major << 16 | minor) */
	__u32 features;         /* negotiated VGPU_FEATURE_* */
	__u32 max_channels;     /* channel windows of this vGPU */
	__u64 vram_share_bytes; /* current fair share of VRAM */
	__u64 cap_bytes;        /* most bytes the VM may hold, 0 = no cap */
	__u64 chunk_bytes;      /* accounting and eviction granularity */
	__u64 vram_total_bytes; /* the physical GPU's allocatable VRAM */
	__u32 page_size_mask;   /* bit 0: 4 KiB, bit 1: 64 KiB, bit 2: 2 MiB */
	__u32 irq_mode;         /* DRM_VGPU_IRQ_MODE_* */
};

#define DRM_VGPU_PRIORITY_MIN 0
#define DRM_VGPU_PRIORITY_DEFAULT 7
#define DRM_VGPU_PRIORITY_MAX 15

/*
 * ALLOC: GPU memory in the VM's GPU address space. priority 0..15 is the
 * eviction hint (higher = keep resident longer). ENOMEM when the VM's cap
 * or the host budget is exhausted, ENOSPC when it holds too many buffers.
 */
struct drm_vgpu_alloc {
	__u64 bytes;       /* in: > 0; out: as allocated (4 KiB multiple) */
	__u32 priority;    /* in: DRM_VGPU_PRIORITY_* range */
	__u32 flags;       /* in: 0 */
	__u64 gpu_va;      /* out: GPU virtual address */
	__u32 handle;      /* out: GEM handle */
	__u32 host_handle; /* out: the backend's handle (diagnostics) */
};

/* FREE: drop a buffer handle (CHANNEL_DESTROY for channels). */
struct drm_vgpu_free {
	__u32 handle;
	__u32 pad;
};

/* SET_PRIORITY: change a buffer's eviction hint (0..15). */
struct drm_vgpu_set_priority {
	__u32 handle;
	__u32 priority;
};

/*
 * CHANNEL_CREATE: a command channel with a GPFIFO ring of gpfifo_entries
 * (a power of two, 0 = the backend's default). Map its window with
 *   mmap(NULL, window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
 *        mmap_offset)
 * (MAP_SHARED only; the mapping must start at mmap_offset and may be
 * shorter than window_bytes). The area offsets are relative to the start
 * of the mapping; the notifier and pushbuffer are also mapped in the VM's
 * GPU address space at the returned GPU VAs. ENOSPC when every channel
 * window is in use.
 */
struct drm_vgpu_channel_create {
	__u32 gpfifo_entries;  /* in: power of two or 0; out: the ring's */
	__u32 flags;           /* in: 0 */
	__u32 handle;          /* out: GEM handle of the channel */
	__u32 index;           /* out: window index in the device */
	__u64 mmap_offset;     /* out: offset for mmap() on this fd */
	__u32 window_bytes;    /* out: bytes to map (page multiple) */
	__u32 control_offset;  /* out: GP_PUT / GP_GET / doorbell page */
	__u32 gpfifo_offset;   /* out: GPFIFO ring */
	__u32 notifier_offset; /* out: memory the GPU writes (fences) */
	__u32 notifier_bytes;
	__u32 pushbuf_offset;  /* out: command memory the GPU reads */
	__u32 pushbuf_bytes;
	__u32 pad;
	__u64 notifier_gpu_va; /* out */
	__u64 pushbuf_gpu_va;  /* out */
};

/* CHANNEL_DESTROY: drop a channel handle. */
struct drm_vgpu_channel_destroy {
	__u32 handle;
	__u32 pad;
};

/* WAIT_FENCE: no deadline. */
#define DRM_VGPU_WAIT_FOREVER ((__s64)0x7fffffffffffffffll)

/*
 * WAIT_FENCE: sleep until the little-endian 64-bit word at offset in the
 * channel's notifier area is >= value, woken by the fence interrupt (a
 * fence submitted with the interrupt flag) and re-checked periodically.
 * deadline_ns is absolute CLOCK_MONOTONIC time; a deadline in the past
 * (e.g. 0) checks once without sleeping. Interruptible: a signal ends the
 * wait with EINTR, or restarts it (SA_RESTART) with the same deadline.
 * Returns 0, ETIMEDOUT, EIO once the GPU killed the channel (checked
 * first, so value 0 with deadline 0 reads the channel's state), ENODEV
 * when the device is gone, EINVAL for an offset that is not an 8-byte
 * aligned word inside the notifier.
 */
struct drm_vgpu_wait_fence {
	__u32 channel;     /* GEM handle of the channel */
	__u32 offset;      /* byte offset in the notifier area */
	__u64 value;       /* wait for word >= value */
	__s64 deadline_ns; /* CLOCK_MONOTONIC; DRM_VGPU_WAIT_FOREVER */
	__u32 flags;       /* 0 */
	__u32 pad;
};

/*
 * STATS: this VM's memory shares from the backend (STATS request) and
 * the driver's own counters (since the device was bound).
 */
struct drm_vgpu_stats {
	/* this VM, from the backend */
	__u64 allocated_bytes;
	__u64 resident_bytes;   /* in VRAM */
	__u64 evicted_bytes;    /* moved to host memory */
	__u64 fair_share_bytes;
	__u32 evictions;
	__u32 returns;
	/* this driver instance */
	__u64 mailbox_requests;   /* requests posted to the backend */
	__u64 mailbox_errors;     /* answered with a status other than OK */
	__u64 mailbox_timeouts;
	__u64 mailbox_doorbells;  /* trapped BAR0 doorbell writes */
	__u64 irq_mailbox;        /* interrupts by source */
	__u64 irq_fence;
	__u64 irq_error;
	__u64 fence_waits;        /* WAIT_FENCE calls that slept */
	__u64 live_buffer_bytes;  /* buffers alive in this driver */
	__u32 live_buffers;
	__u32 live_channels;
	__u32 killed_channels;    /* channels the GPU killed */
	__u32 pad;
	/* uAPI 2 */
	__u32 live_modules;       /* modules loaded through this driver */
	__u32 pad2;
};

/* Bounds of MODULE_LOAD (the device ABI's). */
#define DRM_VGPU_MODULE_IMAGE_MAX_BYTES (64u << 20)
#define DRM_VGPU_MODULE_TABLE_MAX_BYTES (16u << 20)

/*
 * MODULE_LOAD (uAPI 2): load a GPU program (PTX text) into this VM. The
 * image and the room for the module's table are GPU memory of this VM (in
 * buffers of ALLOC, filled through a channel); the driver passes their GPU
 * VAs to the backend, which checks them, reads and checks the image, places
 * the module's variables in a buffer of the VM's own and writes the table
 * (struct vgpu_module_table of the device ABI: functions, parameter
 * layouts, variables, and the message saying why a load failed) at
 * table_va. Errors: EOPNOTSUPP when the device did not negotiate
 * VGPU_FEATURE_MODULES or its GPU runs no programs; EINVAL for bad
 * arguments, an image the GPU refuses or a range outside the VM's memory
 * (the table's message says why); ENOSPC when table_bytes is too small
 * (table_bytes then says the room needed) or the VM holds too many modules
 * (table_bytes 0); ENOMEM when the variables do not fit the VM's memory.
 */
struct drm_vgpu_module_load {
	__u64 image_va;        /* in: the image's GPU VA */
	__u64 image_bytes;     /* in: 1..DRM_VGPU_MODULE_IMAGE_MAX_BYTES */
	__u64 table_va;        /* in: where the table is written */
	__u32 table_bytes;     /* in: room at table_va (<= ..._TABLE_MAX_BYTES);
				  out: the table's size (ENOSPC: room needed) */
	__u32 flags;           /* in: 0 */
	__u32 module;          /* out: the module's handle */
	__u32 function_count;  /* out */
	__u32 variable_count;  /* out */
	__u32 pad;
	__u64 variables_va;    /* out: the buffer of its variables */
	__u64 variables_bytes; /* out: 0 = none */
};

/*
 * MODULE_UNLOAD (uAPI 2): unload a module this file loaded (EINVAL for any
 * other handle); its variables' buffer is freed, launches of it still queued
 * fault. The handle is gone even when the host could not be told (logged).
 */
struct drm_vgpu_module_unload {
	__u32 module;
	__u32 pad;
};

#define DRM_IOCTL_VGPU_GET_INFO \
	DRM_IOR(DRM_COMMAND_BASE + DRM_VGPU_GET_INFO, struct drm_vgpu_get_info)
#define DRM_IOCTL_VGPU_ALLOC \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGPU_ALLOC, struct drm_vgpu_alloc)
#define DRM_IOCTL_VGPU_FREE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGPU_FREE, struct drm_vgpu_free)
#define DRM_IOCTL_VGPU_SET_PRIORITY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGPU_SET_PRIORITY, struct drm_vgpu_set_priority)
#define DRM_IOCTL_VGPU_CHANNEL_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGPU_CHANNEL_CREATE, struct drm_vgpu_channel_create)
#define DRM_IOCTL_VGPU_CHANNEL_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGPU_CHANNEL_DESTROY, struct drm_vgpu_channel_destroy)
#define DRM_IOCTL_VGPU_WAIT_FENCE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGPU_WAIT_FENCE, struct drm_vgpu_wait_fence)
#define DRM_IOCTL_VGPU_STATS \
	DRM_IOR(DRM_COMMAND_BASE + DRM_VGPU_STATS, struct drm_vgpu_stats)
#define DRM_IOCTL_VGPU_MODULE_LOAD \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGPU_MODULE_LOAD, struct drm_vgpu_module_load)
#define DRM_IOCTL_VGPU_MODULE_UNLOAD \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGPU_MODULE_UNLOAD, struct drm_vgpu_module_unload)

#if defined(__cplusplus)
}
#endif

#endif /* VGPU_DRM_H */
