/* SPDX-License-Identifier: MIT */
/*
 * util.h - the small helpers the host side shares (vgpud, the core and the
 * shadow layer, the HALs, vgpu-sim, vgpuctl, the benchmarks), so that each
 * exists once. The guest side has its own (guest-driver/common/vgpu_compat.h).
 */
#ifndef VGPU_UTIL_H
#define VGPU_UTIL_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/*
 * A whole number with an optional K, M, G or T (any case) scaling it by
 * unit, unit², ...: "4096", "64K", "10k" (unit 1000: 10000). With unit 1024
 * the letter may be followed by "iB" or "B" ("512MiB", "1GB": binary both)
 * and a number alone by "B" ("100b"). No sign, space or fraction. 0, or
 * -EINVAL (not such a number, or more than 2^64 - 1).
 */
static inline int vgpu_parse_scaled(const char *text, uint64_t unit, uint64_t *out)
{
	static const char letters[] = "KMGT";
	unsigned long long value;
	uint64_t scale = 1;
	const char *letter;
	char *end;

	if (!text || !isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno)
		return -EINVAL;
	letter = *end ? strchr(letters, toupper((unsigned char)*end)) : NULL;
	if (letter) {
		for (const char *l = letters; l <= letter; l++)
			scale *= unit;
		end++;
		if (unit == 1024 && !strcasecmp(end, "iB"))
			end += 2;
	}
	if (unit == 1024 && !strcasecmp(end, "B"))
		end++;
	if (*end || (value && scale > UINT64_MAX / value))
		return -EINVAL;
	*out = (uint64_t)value * scale;
	return 0;
}

/* A size in bytes: vgpu_parse_scaled with unit 1024 ("64K", "512MiB",
 * "2G", "1t", "100b"). */
static inline int vgpu_parse_bytes(const char *text, uint64_t *bytes)
{
	return vgpu_parse_scaled(text, 1024, bytes);
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_UTIL_H */
