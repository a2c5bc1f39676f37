/* SPDX-License-Identifier: MIT */
/*
 * guest_window.h - how the backend swaps the pages behind a guest's CPU
 * mapping of one channel window.
 *
 * A guest maps each of its channels' windows (the control page with
 * GP_PUT/GP_GET/doorbell and the GPFIFO ring, struct vgpu_hal_channel_layout)
 * straight into its address space and submits work without trapping. To
 * suspend a channel transparently (thesis §3.3.3) the backend must be able to
 * point that mapping at a shadow copy and back, and to hold guest accesses for
 * the few microseconds it takes to copy the pages. A transport provides that:
 * the VFIO mdev module does it with fault-time mapping, tests with a double.
 *
 * The channel module (vgpu/channel_shadow.h) is the only caller. For one
 * channel it always calls, in this order:
 *
 *	get_shadow                         once, when the channel is shadowed
 *	{ block; map(shadow=true);         suspend
 *	  block; map(shadow=false); }*     resume
 *	release_shadow                     once, at the end
 *
 * with nothing but page copies between a block and the following map. It
 * never calls two operations for the same channel at once; operations for
 * different channels may run concurrently.
 */
#ifndef VGPU_GUEST_WINDOW_H
#define VGPU_GUEST_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_guest_window_ops {
	/*
	 * Shadow pages for a channel: CPU pointers to control_bytes and
	 * gpfifo_bytes (the channel's layout) of zeroed, page-aligned memory
	 * the transport can map into the guest in place of the real pages.
	 * Valid until release_shadow. Returns 0 or a negative errno
	 * (-ENOMEM).
	 */
	int (*get_shadow)(void *ctx, uint32_t channel_id, void **control, void **gpfifo);
	void (*release_shadow)(void *ctx, uint32_t channel_id);
	/*
	 * Make guest accesses to the channel window trap and WAIT (never
	 * fail). Returns once no guest access to the currently mapped pages
	 * is in progress, so the caller may copy them.
	 */
	void (*block)(void *ctx, uint32_t channel_id);
	/*
	 * Point the guest's mapping at the shadow pages (shadow = true) or
	 * at the real pages (shadow = false), then let waiting accesses
	 * proceed. Everything the caller wrote to either set of pages before
	 * the call is visible to the guest's accesses after it.
	 */
	void (*map)(void *ctx, uint32_t channel_id, bool shadow);
};

#ifdef __cplusplus
}
#endif

#endif /* VGPU_GUEST_WINDOW_H */
