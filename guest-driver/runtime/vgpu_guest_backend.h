/* SPDX-License-Identifier: MIT */
/*
 * vgpu_guest_backend.h - the seam between libvgpu-guest and whatever reaches
 * the vGPU: a backend carries resource requests to the device and maps
 * channel windows; the runtime (vgpu_guest.h) does everything else, in
 * particular all of submission, which never involves the backend.
 *
 * Backends:
 *   local   vgpud's local transport (vgpu/local_device.h) + the shared
 *           mailbox protocol code (guest-driver/common) - vgpu_guest_local.h
 *   simgpu  an in-process simgpu through the HAL, no vgpud - for tests,
 *           the benchmarks' baselines and libcuda's in-process variant;
 *           modules too - vgpu_guest_simgpu.h
 *   drm     vgpu.ko's render node through libdrm: info = the
 *           QUERY/HELLO ioctl, alloc/free/set_priority/stats = ioctls,
 *           channel_open = CHANNEL_CREATE ioctl + mmap of the window,
 *           wait_fence = the interruptible fence-wait ioctl. It fills this
 *           same struct; nothing above it changes.
 *
 * Every operation returns 0 or a negative errno; the device turns it into a
 * message for users. A backend is used by one thread at a time (the
 * device's).
 */
#ifndef VGPU_GUEST_BACKEND_H
#define VGPU_GUEST_BACKEND_H

#include "vgpu_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A channel window as mapped into this process. */
struct vgpu_channel_window {
	uint32_t index;          /* window index (BAR2 slot) */
	uint32_t gpfifo_entries; /* power of two */
	void *control;           /* control page: GP_PUT, GP_GET, doorbell */
	void *gpfifo;            /* gpfifo_entries GPFIFO entries */
	void *notifier;          /* notifier_bytes the GPU writes, we read */
	void *pushbuffer;        /* pushbuffer_bytes we write, the GPU reads */
	uint32_t notifier_bytes;
	uint32_t pushbuffer_bytes;
	uint64_t notifier_gpu_va;
	uint64_t pushbuffer_gpu_va;
	void *backend_data;      /* the backend's own */
};

struct vgpu_backend_ops {
	const char *name;
	/* Release everything (channels were closed first). */
	void (*destroy)(void *backend);
	/* HELLO/QUERY results (called once at open and on demand). */
	int (*info)(void *backend, struct vgpu_device_info *out);
	int (*alloc)(void *backend, uint64_t bytes, uint32_t priority, uint32_t flags,
	             struct vgpu_alloc_response *out);
	int (*free)(void *backend, uint32_t handle);
	int (*set_priority)(void *backend, uint32_t handle, uint32_t priority);
	int (*stats)(void *backend, struct vgpu_stats_response *out);
	/* Create a channel and map its window. */
	int (*channel_open)(void *backend, uint32_t gpfifo_entries,
	                    struct vgpu_channel_window *out);
	void (*channel_close)(void *backend, struct vgpu_channel_window *window);

	/* Optional (NULL: the runtime does without). */

	/* Sleep until the 64-bit notifier word at offset is >= value, for a
	 * fence submitted with VGPU_SUBMIT_INTERRUPT. 0, -ETIMEDOUT, -EIO if
	 * the channel died, -ENODEV. */
	int (*wait_fence)(void *backend, struct vgpu_channel_window *window, uint32_t offset,
	                  uint64_t value, int timeout_ms);
	/* Read a 64-bit notifier word (CPU order). Default: an acquire load
	 * of the mapped page. */
	uint64_t (*notifier_read)(void *backend, struct vgpu_channel_window *window,
	                          uint32_t offset);
	/* 0 while the channel runs, -EIO once the GPU killed it, -ENODEV
	 * when the device is gone. May trap; the runtime calls it only while
	 * a wait is overdue. */
	int (*channel_status)(void *backend, struct vgpu_channel_window *window);
	/* MODULE_LOAD / MODULE_UNLOAD (device ABI 1.3), fields in CPU order.
	 * NULL: the backend cannot, vgpu_module_load says -ENOTSUP. */
	int (*module_load)(void *backend, const struct vgpu_module_load_request *req,
	                   struct vgpu_module_load_response *out);
	int (*module_unload)(void *backend, uint32_t module);
	/* CHANNEL_FAULT (1.4): why the GPU killed the window's channel.
	 * NULL: unknown, vgpu_channel_fault says -ENOTSUP. */
	int (*channel_fault)(void *backend, struct vgpu_channel_window *window,
	                     struct vgpu_channel_fault_response *out);
};

/*
 * Wrap a backend into a device: calls ops->info and takes ownership of
 * backend (ops->destroy on failure and at vgpu_device_close).
 */
int vgpu_device_create(const struct vgpu_backend_ops *ops, void *backend,
                       struct vgpu_guest_device **out, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_BACKEND_H */
