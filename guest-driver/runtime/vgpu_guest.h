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

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_H */
