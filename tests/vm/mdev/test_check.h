/* SPDX-License-Identifier: MIT */
/*
 * test_check.h - what the vgpu_mdev test programs (vfio-client, the L2 guest
 * program) share: one line per check, counted, and a monotonic clock.
 *
 * Define TEST_CHECK_PREFIX (the start of every check line, e.g.
 * "VGPU-L2-CHECK ") before including it.
 */
#ifndef VGPU_MDEV_TEST_CHECK_H
#define VGPU_MDEV_TEST_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#ifndef TEST_CHECK_PREFIX
#define TEST_CHECK_PREFIX ""
#endif

static int passed, failed;

/* "<prefix>ok: what" or "<prefix>FAIL: what", flushed; returns ok. */
static bool __attribute__((format(printf, 2, 3))) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s%s: ", TEST_CHECK_PREFIX, ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (ok)
		passed++;
	else
		failed++;
	return ok;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* VGPU_MDEV_TEST_CHECK_H */
