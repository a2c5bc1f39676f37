/* SPDX-License-Identifier: MIT */
/*
 * shadow_time.h - monotonic wall time, deadlines and polite polling for the
 * shadow channel module. Internal to vgpu-backend/shadow.
 */
#ifndef VGPU_SHADOW_TIME_H
#define VGPU_SHADOW_TIME_H

#include <stdint.h>

#define SHADOW_NS_PER_MS 1000000ull

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t shadow_now_ns(void);

/* Absolute deadline timeout_ms from now. */
uint64_t shadow_deadline_ns(unsigned timeout_ms);

/*
 * Polling with back-off: the first few waits only yield the CPU, later ones
 * sleep, doubling up to a small cap, never past deadline. Reset the
 * struct (= {0}) whenever progress was seen.
 */
struct shadow_backoff {
	unsigned rounds;
};

void shadow_backoff_wait(struct shadow_backoff *backoff, uint64_t deadline_ns);

#endif /* VGPU_SHADOW_TIME_H */
