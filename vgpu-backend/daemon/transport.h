/* SPDX-License-Identifier: MIT */
/*
 * transport.h - how a vGPU instance in vgpud reaches its VM.
 *
 * vgpud's device model (one struct vgpud_device per VM: BAR0 registers, the
 * mailbox server, channel windows, interrupts; device_abi.h) knows nothing
 * about how the VM is connected. A transport does: the local UNIX-socket
 * transport for processes that act as a VM (vgpu/abi/local_protocol.h), and the
 * mdev relay (vgpu_mdev.ko's character device, later), which holds the
 * guest's mapping of BAR2 in the kernel and swaps pages at fault time.
 *
 * The two directions
 *
 *   transport -> device   the vgpu_device_* calls below: attach a VM,
 *                         trapped BAR0 reads and writes, doorbell kicks,
 *                         detach. A transport calls them from its own
 *                         threads; each may be called concurrently with the
 *                         others for the same device except attach/detach.
 *   device -> transport   struct vgpu_transport_ops: back a BAR2 range with
 *                         shared memory, block and remap a channel window's
 *                         swappable pages, raise an interrupt vector, reach
 *                         guest memory. The device calls them from any
 *                         vgpud thread (the VM's mailbox worker, another
 *                         VM's eviction, the core's return thread, the HAL
 *                         event thread for raise_irq).
 *
 * Memory. Everything a VM maps of BAR2 is shared memory named by a file
 * descriptor and an offset (a memfd of vgpud, a HAL channel's memfd, a HAL
 * host buffer shared with vgpu_hal_host_share): struct vgpu_bar2_segment.
 * A transport maps such a segment into the guest however it can (the local
 * frontend with mmap(MAP_FIXED); QEMU as a RAM memory region; the mdev
 * module by inserting the pages at fault time). Descriptors passed to the
 * ops are borrowed: a transport that needs one later dup()s it.
 *
 * Failure. An op that cannot reach the VM (peer dead, timed out) returns a
 * negative errno and marks the transport dead: from then on every op
 * returns -ENODEV at once and the transport arranges for
 * vgpu_device_detach to be called from its own thread. A dead VM therefore
 * never makes another VM's eviction wait longer than one timeout.
 */
#ifndef VGPU_TRANSPORT_H
#define VGPU_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_transport;
struct vgpud_device;

/* A page-aligned range of BAR2 and the shared memory behind it. */
struct vgpu_bar2_segment {
	uint64_t bar2_offset;
	uint64_t bytes;
	int fd;             /* borrowed */
	uint64_t fd_offset;
};

struct vgpu_transport_ops {
	/* BAR2 [seg->bar2_offset, +bytes) is backed by seg's memory from now
	 * on. Returns once the VM's mapping is in place (the device writes the
	 * response that mentions the range only after that). */
	int (*map_region)(struct vgpu_transport *t, const struct vgpu_bar2_segment *seg);
	/* The range is backed by nothing again (reads zero, writes dropped). */
	int (*unmap_region)(struct vgpu_transport *t, uint64_t bar2_offset, uint64_t bytes);
	/* Guest accesses to [bar2_offset, +bytes) of channel window index must
	 * wait from now on; returns once no access to the current pages is in
	 * progress (vgpu/guest_window.h block()). */
	int (*window_block)(struct vgpu_transport *t, uint32_t index, uint64_t bar2_offset,
	                    uint64_t bytes);
	/* Back the blocked range with segments[0..count) (shadow or real
	 * pages, in BAR2 order, covering it exactly), then let waiting accesses
	 * proceed. shadow says which, for logs and statistics. */
	int (*window_map)(struct vgpu_transport *t, uint32_t index, bool shadow,
	                  const struct vgpu_bar2_segment *segments, unsigned count);
	/* Signal interrupt vector (VGPU_MSIX_VECTOR_*). Must not block: it is
	 * called from the HAL's event thread. */
	void (*raise_irq)(struct vgpu_transport *t, unsigned vector);
	/* Guest-physical memory, for DMA the device model may need (nothing in
	 * ABI 1.0 uses it). -ENOTSUP when the transport has none (local). */
	int (*dma_read)(struct vgpu_transport *t, uint64_t guest_address, void *dst, size_t bytes);
	int (*dma_write)(struct vgpu_transport *t, uint64_t guest_address, const void *src,
	                 size_t bytes);
};

struct vgpu_transport {
	const struct vgpu_transport_ops *ops;
	const char *kind; /* "local socket", "mdev": for logs and vgpuctl, never compared */
	/* The VM is attached under its mdev UUID (reports show it as "uuid"
	 * and name it "uuid" until a better name is known). */
	bool named_by_uuid;
};

/* ------------------------------------------------------------------------ */
/* What a transport calls (implemented by vgpud's device model)             */

struct vgpu_attach_params {
	const char *vm_name; /* 1..63 printable characters, unique among attached VMs */
	const char *profile; /* NULL or "": the configured default profile */
	uint32_t owner_uid;  /* the user the VM belongs to: the tenant's peer
	                        UID (local socket), 0 (mdev: made by root); its
	                        limits and what it may read on the control socket */
};

/*
 * Who creates devices for a transport: vgpud passes one to each transport
 * server it starts. attach creates the VM in the core (with the profile's
 * weight and cap), its mailbox and registers, and starts its mailbox
 * worker. On failure it returns a negative errno and writes what was wrong
 * and what to do into error (shown to the VM's operator).
 */
struct vgpu_device_host {
	int (*attach)(void *ctx, struct vgpu_transport *t, const struct vgpu_attach_params *params,
	              struct vgpud_device **out, struct vgpu_error *error);
	void *ctx;
};

/* The mailbox memory (BAR2 [VGPU_MAILBOX_OFFSET, +VGPU_MAILBOX_SIZE)): the
 * transport maps it into the VM right after attach. The fd stays valid
 * until vgpu_device_detach. */
void vgpu_device_mailbox_segment(struct vgpud_device *dev, struct vgpu_bar2_segment *out);

/* vgpud's id of the device's VM. */
uint32_t vgpu_device_vm_id(const struct vgpud_device *dev);

/* Trapped BAR0 accesses (VGPU_REG_*). Unaligned or unknown offsets read as
 * 0 and ignore writes. Never wait for the core. */
uint32_t vgpu_device_reg_read(struct vgpud_device *dev, uint32_t offset);
void vgpu_device_reg_write(struct vgpud_device *dev, uint32_t offset, uint32_t value);

/* Does the VM hold GPU memory or a channel? (A transport's idle timeout
 * spares those: only a VM that holds nothing is detached for silence.) */
bool vgpu_device_holds_resources(struct vgpud_device *dev);

/* The doorbell was rung without a register write (an ioeventfd). */
void vgpu_device_kick(struct vgpud_device *dev);

/*
 * The VM is gone (detach requested, connection lost, transport dead).
 * Stops the mailbox worker and releases everything the VM owns: channels,
 * their windows and GPU mappings, buffers, chunks in VRAM and host memory,
 * the VM in the core, the mailbox. May still call the transport's ops
 * (which return -ENODEV if it is dead) and may wait for an eviction in
 * progress. After it returns the device is freed and no op of t is called
 * for it again.
 */
void vgpu_device_detach(struct vgpud_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_TRANSPORT_H */
