/* SPDX-License-Identifier: MIT */
/*
 * channel_window.h - one live channel window of a VM: BAR2
 * [VGPU_CHANNEL_WINDOW_BASE + index * VGPU_CHANNEL_WINDOW_STRIDE, +STRIDE).
 *
 * Layout within the window (offsets reported by CHANNEL_CREATE):
 *
 *   0                      control page   } the HAL channel's real pages
 *   control_bytes          GPFIFO ring    } (or vgpud's shadow copies)
 *   notifier_offset        notifier, 4 KiB        } one HAL host buffer, shared
 *   notifier_offset + 4K   pushbuffer, the rest    } with the guest, mapped in
 *                                                  } the VM's GPU address space
 *
 * The notifier and pushbuffer are also mapped into the VM's GPU address space
 * (SYSMEM coherent, through the IOMMU) at
 *   va_window_base + index * VGPU_CHANNEL_WINDOW_STRIDE + the same offset,
 * in a range the device reserved in the core at attach
 * (vgpu_core_reserve_va), so the core never maps a buffer there.
 *
 * Swaps. The window implements struct vgpu_guest_window_ops for the core's
 * shadow channel: shadow pages come from a memfd of vgpud's; block() and
 * map() forward to the transport's window_block/window_map. A swap and
 * the window's first publication to the guest exclude each other (one
 * mutex, held from block() to map()), so a channel suspended before the
 * guest mapped its window is mapped straight onto its shadow pages.
 *
 * If the HAL cannot share host buffers (vgpu_hal_host_share -ENOTSUP) the
 * window has no notifier or pushbuffer (their sizes and VAs are 0).
 */
#ifndef VGPUD_CHANNEL_WINDOW_H
#define VGPUD_CHANNEL_WINDOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/core.h"
#include "vgpu/abi/device_abi.h"

struct vgpud_device;
struct vgpu_transport;

#define CHANNEL_WINDOW_NOTIFIER_BYTES 4096u
#define CHANNEL_WINDOW_PUSHBUF_MIN_BYTES (64u * 1024u)

struct channel_window {
	struct vgpud_device *dev;
	uint32_t index;
	struct vgpu_core_channel *channel;
	uint32_t hal_channel_id;
	struct vgpu_hal_channel_info info;

	/* the guest's view */
	pthread_mutex_t swap_lock;
	bool published;
	bool shadow_mapped;

	/* shadow pages (get_shadow) */
	int shadow_fd;
	uint8_t *shadow;

	/* layout, set before publication */
	uint32_t control_bytes, gpfifo_bytes;
	uint32_t notifier_offset, notifier_bytes;
	uint32_t pushbuf_offset, pushbuf_bytes;

	/* notifier + pushbuffer */
	struct vgpu_hal_host_buf *host;
	int host_fd; /* the HAL's; valid while host lives */
	uint64_t host_fd_offset;
	uint64_t host_bytes;
	uint64_t iova;
	uint64_t gpu_va; /* of the notifier */
	bool iommu_mapped, gpu_mapped;
};

/*
 * Create channel window index for dev with gpfifo_entries (validated by the
 * parser: 0 or a power of two <= VGPU_CHANNEL_GPFIFO_ENTRIES_MAX), publish
 * it to the guest (transport map_region), and fill *response. Returns
 * VGPU_STATUS_OK or a status for the guest after logging why.
 */
enum vgpu_status channel_window_create(struct vgpud_device *dev, uint32_t index,
                                       uint32_t gpfifo_entries,
                                       struct vgpu_channel_create_response *response,
                                       struct channel_window **out);

/* Destroy the channel, unpublish the window, release GPU mappings and host
 * memory. */
void channel_window_destroy(struct channel_window *win);

/* Live migration: the window's shadow pages (control page, GPFIFO) and
 * its notifier + pushbuffer memory (NULL without), for export and import
 * while the channel is stopped. */
void channel_window_migration_pages(struct channel_window *win, uint8_t **control,
                                    uint8_t **gpfifo, uint8_t **host);

/* Adoption of a migrated-in VM: from now on the window's swaps go to t;
 * map the window into t's guest as it stands (shadow or real pages). */
int channel_window_republish(struct channel_window *win, struct vgpu_transport *t);

/* BAR2 offset of window index. */
static inline uint64_t channel_window_bar2_offset(uint32_t index)
{
	return VGPU_CHANNEL_WINDOW_BASE + (uint64_t)index * VGPU_CHANNEL_WINDOW_STRIDE;
}

#endif /* VGPUD_CHANNEL_WINDOW_H */
