/* SPDX-License-Identifier: MIT */
/*
 * sim_guest_window.h - an in-process guest's view of one channel window, for
 * the programs that play a guest inside vgpud's process (vgpu-sim's guests,
 * core-bench, cuda-bench).
 *
 * It implements struct vgpu_guest_window_ops (vgpu/guest_window.h) the way a
 * transport does: it owns the shadow pages, remembers whether the guest's
 * "mapping" shows the real or the shadow pages, and traps guest accesses
 * while the backend swaps them (a mutex and condition variable instead of
 * page faults: an access waits, never fails). Guest code brackets every
 * access with sim_guest_window_enter/leave and uses the pointers enter
 * returns, as a guest dereferences whatever its page tables map.
 */
#ifndef VGPU_SIM_GUEST_WINDOW_H
#define VGPU_SIM_GUEST_WINDOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/guest_window.h"
#include "vgpu/hal.h"

struct sim_guest_window {
	const struct vgpu_hal_channel_info *info; /* the real pages */
	uint32_t gpfifo_entries;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool blocked, shadow;
	unsigned accesses; /* guest accesses in progress */
	void *shadow_control, *shadow_gpfifo;
};

/* Ready a window for a channel of gpfifo_entries whose info the channel's
 * creation will fill in *info (read at each access, not now). */
void sim_guest_window_init(struct sim_guest_window *window,
                           const struct vgpu_hal_channel_info *info, uint32_t gpfifo_entries);
void sim_guest_window_fini(struct sim_guest_window *window);

/* The ops to create the channel with, the window as their ctx. */
extern const struct vgpu_guest_window_ops sim_guest_window_ops;

/* A guest access: waits while the window is blocked, then gives the pages
 * the guest's mapping shows now. */
void sim_guest_window_enter(struct sim_guest_window *window, void **control, void **gpfifo);
void sim_guest_window_leave(struct sim_guest_window *window);

#endif /* VGPU_SIM_GUEST_WINDOW_H */
