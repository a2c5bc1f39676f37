/* SPDX-License-Identifier: MIT */
/*
 * vgpu_guest.h - libvgpu-guest: what a GPU workload in a guest (or in a
 * process posing as one, vgpu-tenant) uses to drive a vGPU.
 *
 * A struct vgpu_guest_device is one vGPU reached through a backend
 * (vgpu_guest_backend.h): over vgpud's local transport
 * (vgpu_guest_local.h), on an in-process simgpu (vgpu_guest_simgpu.h, tests
 * and benchmarks), or later through the guest kernel driver's DRM render node.
 * Resource requests (memory, channels) go to the backend; submission never
 * does.
 *
 * Submission is direct, as on hardware: vgpu_channel_begin hands out space in
 * the channel's pushbuffer (mapped device memory; write commands with the
 * encoders of vgpu/abi/commands.h), vgpu_channel_submit appends a fence
 * (SEMAPHORE_RELEASE of a per-channel counter into the notifier page), writes
 * one GPFIFO entry, publishes GP_PUT with release order and writes the
 * doorbell word. No system call, no trap, no message to the backend.
 * Pushbuffer space and GPFIFO slots are reused only once the fence of the
 * submission that used them has passed, i.e. the GPU is done with them.
 *
 * Fences are 64-bit values, increasing per channel. vgpu_channel_wait polls
 * the notifier, spinning briefly and then backing off; a fence submitted
 * with VGPU_SUBMIT_INTERRUPT lets the backend sleep until the fence
 * interrupt instead.
 *
 * Errors are negative errno values; vgpu_device_last_error() says in words
 * what the last failing call of a device ran into.
 *
 * Threads: a device and everything made from it are used by one thread at a
 * time. Different devices are independent (several "VMs" in one process).
 */
#ifndef VGPU_GUEST_H
#define VGPU_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/abi/device_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_guest_device;
struct vgpu_channel;

/* What HELLO and QUERY said, plus the backend's name. */
struct vgpu_device_info {
	const char *backend;       /* "local", "simgpu", ... */
	uint32_t abi_version;      /* the backend's VGPU_ABI_VERSION */
	uint32_t features;         /* negotiated VGPU_FEATURE_* */
	uint32_t max_channels;
	uint64_t vram_share_bytes; /* fair share of VRAM now */
	uint64_t cap_bytes;        /* 0 = unlimited */
	uint64_t chunk_bytes;
	uint64_t vram_total_bytes;
	uint32_t page_size_mask;
};

/* GPU memory of this VM. */
struct vgpu_guest_buffer {
	uint32_t handle;
	uint64_t gpu_va;
	uint64_t bytes; /* as allocated */
};

void vgpu_device_close(struct vgpu_guest_device *dev);
const struct vgpu_device_info *vgpu_device_info(const struct vgpu_guest_device *dev);
/* The last failure of a call on dev, in words ("" if none). */
const char *vgpu_device_last_error(const struct vgpu_guest_device *dev);

/* ALLOC with priority 0..15 (VGPU_PRIORITY_DEFAULT is 7). -ENOMEM when the
 * VM's cap or the host is exhausted. */
int vgpu_buffer_alloc(struct vgpu_guest_device *dev, uint64_t bytes, uint32_t priority,
                      struct vgpu_guest_buffer *out);
int vgpu_buffer_free(struct vgpu_guest_device *dev, const struct vgpu_guest_buffer *buf);
int vgpu_buffer_set_priority(struct vgpu_guest_device *dev, const struct vgpu_guest_buffer *buf,
                             uint32_t priority);

/* This VM's allocated/resident/evicted bytes. */
int vgpu_device_stats(struct vgpu_guest_device *dev, struct vgpu_stats_response *out);

/* ------------------------------------------------------------------------ */
/* Channels                                                                 */

/* Layout of the notifier page as the runtime uses it. */
#define VGPU_NOTIFIER_FENCE_OFFSET 0u    /* the channel's fence counter */
#define VGPU_NOTIFIER_SCRATCH_OFFSET 64u /* then 64-bit scratch words */

/* gpfifo_entries: power of two, 0 = the backend's default. -ENOSPC when all
 * channel windows are in use. */
int vgpu_channel_create(struct vgpu_guest_device *dev, uint32_t gpfifo_entries,
                        struct vgpu_channel **out);
/* Waits (bounded) until the GPU is done with the channel, then destroys it. */
void vgpu_channel_destroy(struct vgpu_channel *ch);

/* Longest submission: what one vgpu_channel_begin may ask for, in words. */
uint32_t vgpu_channel_max_words(const struct vgpu_channel *ch);

/*
 * Reserve max_words 32-bit words of pushbuffer for one submission and
 * return where to write them. Waits (up to the channel timeout) while the
 * GPU still uses the space or every GPFIFO slot. -EINVAL if max_words is 0
 * or above vgpu_channel_max_words, -ETIMEDOUT, -EIO if the channel died,
 * -ENODEV if the device is gone.
 */
int vgpu_channel_begin(struct vgpu_channel *ch, uint32_t max_words, uint32_t **words);

#define VGPU_SUBMIT_INTERRUPT (1u << 0) /* the fence raises the fence interrupt */

/*
 * Submit the first used_words (<= what begin reserved, may be 0) words
 * written since vgpu_channel_begin, followed by the fence. *fence (may be
 * NULL) receives the fence value that passes once the GPU has run it all.
 */
int vgpu_channel_submit(struct vgpu_channel *ch, uint32_t used_words, uint32_t flags,
                        uint64_t *fence);

/* True once fence has passed. */
bool vgpu_channel_fence_passed(struct vgpu_channel *ch, uint64_t fence);
/* Wait for a fence: 0, -ETIMEDOUT (timeout_ms < 0: the channel timeout),
 * -EIO if the channel was killed, -ENODEV if the device is gone (both
 * final: later calls on the channel fail the same way), -EINVAL for a fence
 * never submitted. */
int vgpu_channel_wait(struct vgpu_channel *ch, uint64_t fence, int timeout_ms);
/* Wait for everything submitted so far. */
int vgpu_channel_finish(struct vgpu_channel *ch, int timeout_ms);

/*
 * Why the GPU killed ch (device ABI 1.4, CHANNEL_FAULT): *cause is an enum
 * vgpu_channel_fault_cause (NONE while the channel runs), *address the
 * faulting GPU VA where the cause has one (may be NULL). -ENOTSUP when the
 * device cannot say, -ENODEV when it is gone.
 */
int vgpu_channel_fault(struct vgpu_channel *ch, uint32_t *cause, uint64_t *address);

/* Scratch words of the notifier page (for results such as CHECKSUM). */
uint32_t vgpu_channel_scratch_count(const struct vgpu_channel *ch);
uint64_t vgpu_channel_scratch_va(const struct vgpu_channel *ch, uint32_t index);
uint64_t vgpu_channel_read_scratch(struct vgpu_channel *ch, uint32_t index);

/* Default 60 s; how long begin and wait(-1) may block. */
void vgpu_channel_set_timeout(struct vgpu_channel *ch, int timeout_ms);

struct vgpu_channel_stats {
	uint32_t index;               /* window index */
	uint32_t gpfifo_entries;
	uint32_t pushbuffer_bytes;
	uint64_t submissions;
	uint64_t pushbuffer_wraps;    /* times the write position wrapped */
	uint64_t waits_for_space;     /* begins that had to wait for the GPU */
	uint64_t fence_waits;         /* waits that did not find the fence passed */
	uint64_t last_fence;          /* last fence submitted */
};
void vgpu_channel_stats(const struct vgpu_channel *ch, struct vgpu_channel_stats *out);

/* ------------------------------------------------------------------------ */
/* Moving data (transfer.c)                                                 */
/*
 * A guest reaches its GPU memory only through the GPU, so data travels
 * through the channel: an upload writes the bytes into the pushbuffer as
 * the argument words of a NOP (commands.h: "NOP: any number of argument
 * words, ignored") followed by a COPY from their GPU address; a download
 * COPYs into such a NOP's words and reads them once the fence passed. The
 * pushbuffer is mapped into the VM's GPU address space like the notifier,
 * so no device ABI beyond revision 1 is involved, and every door (mdev,
 * vgpu-pci, the local socket) carries it. A transfer larger than one
 * submission is cut into pieces of at most vgpu_channel_transfer_max bytes.
 */

/* GPU virtual address of p, a pointer into the words the current
 * vgpu_channel_begin handed out (0 if p is not in them). */
uint64_t vgpu_channel_pushbuffer_va(const struct vgpu_channel *ch, const void *p);

/* Most bytes one piece of a transfer carries. */
uint64_t vgpu_channel_transfer_max(const struct vgpu_channel *ch);

/*
 * Copy bytes from host memory src to GPU address dst_va, in channel order
 * after everything submitted before. Returns once the data is in the
 * pushbuffer (src may be reused at once); *fence (may be NULL) receives the
 * fence after which the data is in GPU memory. Errors as
 * vgpu_channel_begin; an address outside the VM's memory kills the channel
 * (the wait for the fence says -EIO).
 */
int vgpu_channel_upload(struct vgpu_channel *ch, uint64_t dst_va, const void *src,
                        uint64_t bytes, uint64_t *fence);

/* Copy bytes at GPU address src_va to host memory dst after everything
 * submitted before on the channel; returns once dst holds them (it waits
 * for the fences). Errors as vgpu_channel_begin and vgpu_channel_wait. */
int vgpu_channel_download(struct vgpu_channel *ch, void *dst, uint64_t src_va,
                          uint64_t bytes);

/* ------------------------------------------------------------------------ */
/* GPU programs (module.c; device ABI 1.3, VGPU_FEATURE_MODULES)             */

/* A kernel of a loaded module: LAUNCH_FUNCTION's function is its index. */
struct vgpu_guest_function {
	const char *name;
	uint32_t index;
	uint32_t param_count;
	const struct vgpu_module_param *params; /* offset, size, align each */
	uint32_t param_bytes;                   /* the parameter block's size */
	uint32_t static_shared_bytes;
	uint32_t local_bytes;                   /* per thread */
	uint32_t max_threads_per_block;
};

/* A module-scope variable (.global, .const) in the VM's GPU memory. */
struct vgpu_guest_variable {
	const char *name;
	uint32_t space; /* VGPU_MODULE_VARIABLE_* */
	uint64_t gpu_va;
	uint64_t bytes;
};

struct vgpu_guest_module {
	uint32_t handle; /* LAUNCH_FUNCTION's module */
	uint32_t function_count;
	uint32_t variable_count;
	const struct vgpu_guest_function *functions;
	const struct vgpu_guest_variable *variables;
	uint64_t variables_va; /* the buffer holding them (0: none) */
	uint64_t variables_bytes;
};

/*
 * Load a GPU program (PTX text, image_bytes without or with its final NUL)
 * into this VM: the image is uploaded through ch into a buffer of the VM,
 * MODULE_LOAD asks the backend to check and load it, and the table it
 * writes is downloaded and checked (nothing the device wrote is trusted).
 * The temporary buffers are freed before it returns. -ENOTSUP when the
 * device does not offer VGPU_FEATURE_MODULES or its GPU runs no user
 * programs, -EINVAL for an image the GPU refuses (vgpu_device_last_error
 * has the backend's message, with the line), -ENOMEM, -EPROTO, or the
 * channel's errors.
 */
int vgpu_module_load(struct vgpu_guest_device *dev, struct vgpu_channel *ch, const void *image,
                     size_t image_bytes, struct vgpu_guest_module **out);

/* MODULE_UNLOAD and free m (NULL: nothing). Launches of it still queued
 * fault. */
int vgpu_module_unload(struct vgpu_guest_device *dev, struct vgpu_guest_module *m);

/* The function called name, or NULL. */
const struct vgpu_guest_function *vgpu_module_function(const struct vgpu_guest_module *m,
                                                       const char *name);
/* The variable called name, or NULL. */
const struct vgpu_guest_variable *vgpu_module_variable(const struct vgpu_guest_module *m,
                                                       const char *name);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_H */
