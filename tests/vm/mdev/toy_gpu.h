/* SPDX-License-Identifier: MIT */
/*
 * toy_gpu.h - the contract between fake-vgpud --mode mailbox (a stand-in
 * for vgpud on vgpu_mdev's control device, in L1) and vgpu-drm-check (the
 * uAPI test of vgpu.ko, in L2). Test-only; not part of any ABI.
 *
 * fake-vgpud --mode mailbox answers the real mailbox protocol of
 * device_abi.h (HELLO, QUERY, ALLOC, FREE, SET_PRIORITY,
 * CHANNEL_CREATE/DESTROY, STATS, MODULE_LOAD/UNLOAD) with the limits below,
 * and plays a toy GPU instead of running GPFIFO entries: a 64-bit "kick"
 * word in each live channel's control page. When the guest
 * writes a new nonzero value V there, after TOY_DELAY_MS the toy
 *   - V == TOY_KILL: kills the channel (VGPU_REG_ERROR_CHANNELS bit,
 *     VGPU_IRQ_CHANNEL_ERROR, error vector);
 *   - else: writes V to the notifier's 64-bit word TOY_FENCE_OFFSET and
 *     raises the fence interrupt (VGPU_REG_FENCE_CHANNELS bit,
 *     VGPU_IRQ_FENCE, fence vector).
 * MODULE_LOAD (VGPU_FEATURE_MODULES) loads nothing real: an image at GPU
 * VA 0 is INVALID, a table room below TOY_MODULE_TABLE_BYTES is LIMIT
 * saying that room, else the lowest free handle below TOY_MAX_MODULES
 * with TOY_MODULE_FUNCTIONS functions and no variables (so a handle that
 * comes back proves the host unloaded it); MODULE_UNLOAD of a handle not
 * loaded is NOT_FOUND.
 * An ALLOC of exactly TOY_DIE_BYTES makes fake-vgpud exit without
 * answering, as a crashing vgpud would (the module then reports
 * VGPU_STATUS_BACKEND_GONE to the guest).
 */
#ifndef VGPU_TOY_GPU_H
#define VGPU_TOY_GPU_H

#define TOY_KICK_OFFSET 0x800u  /* in the control page */
#define TOY_FENCE_OFFSET 0x0u   /* in the notifier */
#define TOY_KILL 0xdeadull
#define TOY_DELAY_MS 100
#define TOY_DIE_BYTES 0xdead000ull

#define TOY_MAX_CHANNELS 8u          /* HELLO's max_channels */
#define TOY_VRAM_SHARE (256ull << 20)
#define TOY_VRAM_TOTAL (512ull << 20)
#define TOY_CAP (1ull << 30)         /* ALLOC beyond: NO_MEMORY */
#define TOY_CHUNK (2ull << 20)
#define TOY_PUSHBUF_BYTES (64u << 10)
#define TOY_NOTIFIER_BYTES 4096u
#define TOY_MODULE_TABLE_BYTES 1024u
#define TOY_MAX_MODULES 16u
#define TOY_MODULE_FUNCTIONS 3u

#endif /* VGPU_TOY_GPU_H */
