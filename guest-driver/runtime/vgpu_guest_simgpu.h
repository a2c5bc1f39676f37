/* SPDX-License-Identifier: MIT */
/*
 * vgpu_guest_simgpu.h - libvgpu-guest on an in-process simgpu, without vgpud
 * (library vgpu_guest_simgpu_dep).
 *
 * The same runtime and workloads as on a real vGPU, but the "device" is a
 * GPU address space of a simgpu in this process: ALLOC maps VRAM pages at a
 * fresh GPU VA, CHANNEL_CREATE makes a HAL channel whose control page and
 * GPFIFO are the real ones and maps a notifier page and a pushbuffer (host
 * buffers behind the IOMMU) into the address space. MODULE_LOAD reads the
 * image from the device's memory, parses and binds it through the HAL with
 * its variables in a buffer of this device (counted against cap_bytes) and
 * writes the device ABI's table (vgpu/abi/module_table.h) as vgpud does;
 * MODULE_UNLOAD unbinds it and frees the variables; CHANNEL_FAULT answers
 * from the HAL's channel state. Nothing is oversubscribed and nothing is
 * ever evicted. For unit tests of the submission path, as the baseline of
 * the submission benchmark ("the same work on simgpu alone") and behind
 * the in-process variant of libcuda (guest-driver/cuda/inproc).
 *
 * Several devices may share one HAL (one address space each, like VMs on
 * one GPU); each device is used by one thread at a time.
 */
#ifndef VGPU_GUEST_SIMGPU_H
#define VGPU_GUEST_SIMGPU_H

#include "vgpu/hal.h"
#include "vgpu/hal_open.h" /* struct simgpu_config, as vgpu_hal_open takes it */
#include "vgpu_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_guest_simgpu_config {
	/* A GPU shared with others (not destroyed at close), or NULL to create
	 * a private simgpu from simgpu (NULL: simgpu's defaults). */
	struct vgpu_hal *hal;
	const struct simgpu_config *simgpu;
	uint64_t cap_bytes;        /* ALLOC beyond this is -ENOMEM; 0 = none */
	uint32_t max_channels;     /* 0 = VGPU_MAX_CHANNELS */
	uint32_t pushbuffer_bytes; /* per channel, multiple of 4 KiB; 0 = 64 KiB */
	uint32_t notifier_bytes;   /* per channel, multiple of 4 KiB; 0 = 4 KiB */
};

int vgpu_device_open_simgpu(const struct vgpu_guest_simgpu_config *config,
                            struct vgpu_guest_device **out, char *why, size_t why_len);

/* For tests: the device's HAL and GPU address space (NULL if dev is not a
 * simgpu device), e.g. to read buffers through vgpu_hal_as_read. */
struct vgpu_hal *vgpu_guest_simgpu_hal(struct vgpu_guest_device *dev);
struct vgpu_hal_as *vgpu_guest_simgpu_as(struct vgpu_guest_device *dev);
/* The HAL channel behind a window index of dev (NULL if none). */
struct vgpu_hal_channel *vgpu_guest_simgpu_channel(struct vgpu_guest_device *dev, uint32_t index);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_SIMGPU_H */
