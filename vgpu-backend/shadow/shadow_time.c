// SPDX-License-Identifier: MIT
/*
 * shadow_time.c - monotonic wall time and back-off polling.
 */
#include "shadow_time.h"

#include <sched.h>
#include <time.h>

#include "vgpu/channel_shadow.h"
#include "vgpu/util.h"

/* Rounds that only yield before the first sleep. */
#define BACKOFF_YIELD_ROUNDS 8
/* First and longest sleep of a poll loop. */
#define BACKOFF_FIRST_SLEEP_NS 10000ull
#define BACKOFF_MAX_SLEEP_NS 500000ull

uint64_t shadow_now_ns(void)
{
	return vgpu_monotonic_ns();
}

uint64_t shadow_deadline_ns(unsigned timeout_ms)
{
	return shadow_now_ns() + (uint64_t)timeout_ms * SHADOW_NS_PER_MS;
}

void shadow_backoff_wait(struct shadow_backoff *backoff, uint64_t deadline_ns)
{
	uint64_t sleep_ns = BACKOFF_FIRST_SLEEP_NS;
	uint64_t now;
	unsigned i;
	struct timespec ts;

	if (backoff->rounds < BACKOFF_YIELD_ROUNDS) {
		backoff->rounds++;
		sched_yield();
		return;
	}
	for (i = BACKOFF_YIELD_ROUNDS; i < backoff->rounds && sleep_ns < BACKOFF_MAX_SLEEP_NS; i++)
		sleep_ns *= 2;
	if (sleep_ns > BACKOFF_MAX_SLEEP_NS)
		sleep_ns = BACKOFF_MAX_SLEEP_NS;
	backoff->rounds++;

	now = shadow_now_ns();
	if (now >= deadline_ns)
		return;
	if (deadline_ns - now < sleep_ns)
		sleep_ns = deadline_ns - now;
	ts.tv_sec = (time_t)(sleep_ns / 1000000000ull);
	ts.tv_nsec = (long)(sleep_ns % 1000000000ull);
	nanosleep(&ts, NULL);
}
