/* SPDX-License-Identifier: MIT */
/*
 * util.h - the small helpers the host side shares (vgpud, the core and the
 * shadow layer, the HALs, vgpu-sim, vgpuctl, the benchmarks), so that each
 * exists once. The guest side has its own (guest-driver/common/vgpu_compat.h).
 */
#ifndef VGPU_UTIL_H
#define VGPU_UTIL_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t vgpu_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* bytes exactly, in the largest binary unit that divides it: "4 MiB",
 * "1536 KiB", "100 bytes". Returns buf. */
static inline const char *vgpu_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned unit = 0;

	while (unit < 4 && bytes >= 1024 && !(bytes % 1024)) {
		bytes /= 1024;
		unit++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, units[unit]);
	return buf;
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_UTIL_H */
