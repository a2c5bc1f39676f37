/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the modeled clock and the engines' status registers.
 *
 * Modeled time never depends on wall time: a memory transaction of bytes on
 * a target costs latency + bytes / bandwidth, computed in integer picoseconds,
 * and engines add the cost of what they execute to their busy time. Identical
 * work therefore gives identical figures on every run and host.
 *
 * The "current channel" register of each engine holds the id of the channel
 * whose work it executes, or -1. Both the busy times and the registers are
 * read lock-free (atomics) by any thread.
 */
#ifndef SIMGPU_CLOCK_H
#define SIMGPU_CLOCK_H

#include <stdint.h>

#include "vgpu/hal.h"
#include "vgpu/simgpu.h"

#define PICOSECONDS_PER_SECOND UINT64_C(1000000000000)

struct clock_model {
	uint64_t bandwidth[VGPU_TARGET_COUNT];  /* bytes per second */
	uint64_t latency_ps[VGPU_TARGET_COUNT]; /* per transaction */
};

struct gpu_clock {
	struct clock_model model;
	uint64_t busy_ps[VGPU_ENGINE_COUNT];        /* atomic */
	int32_t current_channel[VGPU_ENGINE_COUNT]; /* atomic */
};

void gpu_clock_init(struct gpu_clock *clock, const struct simgpu_config *config);

/* Cost of one transaction (bytes <= 2^32). */
static inline uint64_t clock_transaction_ps(const struct clock_model *model, unsigned target,
                                            uint64_t bytes)
{
	return model->latency_ps[target] +
	       (uint64_t)((unsigned __int128)bytes * PICOSECONDS_PER_SECOND /
	                  model->bandwidth[target]);
}

static inline void gpu_clock_add(struct gpu_clock *clock, enum vgpu_hal_engine engine,
                                 uint64_t picoseconds)
{
	__atomic_fetch_add(&clock->busy_ps[engine], picoseconds, __ATOMIC_RELAXED);
}

static inline uint64_t gpu_clock_busy_ns(struct gpu_clock *clock, enum vgpu_hal_engine engine)
{
	return __atomic_load_n(&clock->busy_ps[engine], __ATOMIC_RELAXED) / 1000;
}

static inline void gpu_clock_set_current_channel(struct gpu_clock *clock,
                                                 enum vgpu_hal_engine engine, int32_t channel)
{
	__atomic_store_n(&clock->current_channel[engine], channel, __ATOMIC_RELAXED);
}

static inline int32_t gpu_clock_current_channel(struct gpu_clock *clock,
                                                enum vgpu_hal_engine engine)
{
	return __atomic_load_n(&clock->current_channel[engine], __ATOMIC_RELAXED);
}

#endif /* SIMGPU_CLOCK_H */
