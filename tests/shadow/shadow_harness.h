/* SPDX-License-Identifier: MIT */
/*
 * shadow_harness.h - one simgpu, one address space, one channel, its shadow,
 * a guest window double and a guest submitter: the fixture of the shadow
 * tests. The HAL event handler plays the core's part and forwards the
 * channel's PRIV_FENCE (and, if asked, CHANNEL_ERROR) events to the shadow.
 */
#ifndef VGPU_TESTS_SHADOW_HARNESS_H
#define VGPU_TESTS_SHADOW_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_double.h"
#include "vgpu/channel_shadow.h"
#include "vgpu/hal.h"

/* Guest VAs of the submitter's memory, and one that is never mapped. */
#define HARNESS_DATA_VA 0x100000000ull
#define HARNESS_PUSHBUFFER_VA 0x200000000ull
#define HARNESS_UNMAPPED_VA 0x300000000ull
/* Where tests put the memory of further guests in the same address space. */
#define HARNESS_EXTRA_VA(n) (0x400000000ull + (uint64_t)(n) * 0x100000000ull)
#define HARNESS_MAX_FORWARD 64

struct shadow_harness_config {
	uint32_t gpfifo_entries;  /* 0 = simgpu default */
	uint32_t max_submissions; /* 0 = 4096 */
	uint32_t max_pause_us;    /* guest thread pacing */
	uint64_t seed;
	bool forward_errors;      /* forward VGPU_EVENT_CHANNEL_ERROR */
};

struct shadow_harness {
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	uint32_t entries;
	struct guest_window_double *window;
	struct vgpu_shadow_channel *shadow; /* atomic: read by the event thread */
	/* Events of other channels go to the shadow registered for their id
	 * (shadow_harness_forward), atomic pointers. */
	struct vgpu_shadow_channel *forward[HARNESS_MAX_FORWARD];
	struct guest_submitter *guest;
	bool forward_errors;
	uint64_t priv_fence_events; /* atomic */
	uint64_t error_events;      /* atomic */
};

/* 0 or a negative errno; on failure everything is undone. */
int shadow_harness_setup(struct shadow_harness *harness, const struct shadow_harness_config *config);
void shadow_harness_teardown(struct shadow_harness *harness);

/* Forward the events of channel_id to shadow (NULL to stop; after stopping,
 * a delivery may still be in progress until the handler is removed). */
void shadow_harness_forward(struct shadow_harness *harness, uint32_t channel_id,
                            struct vgpu_shadow_channel *shadow);

/* Snapshot of what the GPU did for the address space: counters + compute
 * engine time. Equal snapshots mean nothing of the channel ran between. */
struct harness_gpu_activity {
	struct vgpu_hal_as_counters counters;
	uint64_t compute_ns;
	uint64_t executed;
};
void shadow_harness_activity(struct shadow_harness *harness, struct harness_gpu_activity *out);
bool harness_activity_equal(const struct harness_gpu_activity *a,
                            const struct harness_gpu_activity *b);

/* The real GP_GET (what the GPU has fetched), through the HAL. */
uint32_t shadow_harness_real_gp_get(struct shadow_harness *harness);

/* Submit n ordered submissions from the test thread, failing on a full ring. */
int shadow_harness_submit(struct shadow_harness *harness, uint32_t n);
/* Submit one raw submission that kills the channel (MEMSET to an unmapped VA). */
int shadow_harness_submit_fault(struct shadow_harness *harness);

/* Sleep for ms milliseconds. */
void harness_sleep_ms(unsigned ms);
uint64_t harness_now_ns(void);

#endif /* VGPU_TESTS_SHADOW_HARNESS_H */
