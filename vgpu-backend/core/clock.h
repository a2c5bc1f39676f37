/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the core's clock: CLOCK_MONOTONIC in nanoseconds, for the
 * latencies and pass times it reports. Any thread.
 */
#ifndef VGPU_CORE_CLOCK_H
#define VGPU_CORE_CLOCK_H

#include <stdint.h>

#include "vgpu/util.h"

static inline uint64_t vgpu_core_now_ns(void)
{
	return vgpu_monotonic_ns();
}

#endif /* VGPU_CORE_CLOCK_H */
