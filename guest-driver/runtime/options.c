// SPDX-License-Identifier: MIT
/* options.c - sizes, durations and workload names as users write them,
 * and sizes as they read them (see vgpu_workloads.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vgpu_workloads.h"

/* A number (decimal fraction allowed) followed by a unit looked up in units. */
struct unit {
	const char *name;
	double scale;
};

static int parse_scaled(const char *text, const struct unit *units, double default_scale,
                        uint64_t *out)
{
	char *end;
	double value, scale = 0;
	size_t i;

	if (!text || !*text || isspace((unsigned char)*text) || *text == '-' || *text == '+')
		return -EINVAL;
	errno = 0;
	value = strtod(text, &end);
	if (end == text || errno || !isfinite(value) || value < 0)
		return -EINVAL;
	if (!*end) {
		scale = default_scale;
	} else {
		for (i = 0; units[i].name; i++) {
			if (!strcasecmp(end, units[i].name)) {
				scale = units[i].scale;
				break;
			}
		}
		if (!units[i].name)
			return -EINVAL;
	}
	value *= scale;
	if (value >= 18446744073709551616.0)
		return -ERANGE;
	*out = (uint64_t)value;
	return 0;
}

int vgpu_parse_size(const char *text, uint64_t *bytes)
{
	static const struct unit units[] = {
		{ "b", 1.0 },
		{ "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
		{ "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
		{ "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
		{ "t", 1099511627776.0 }, { "tb", 1099511627776.0 }, { "tib", 1099511627776.0 },
		{ NULL, 0 },
	};

	return parse_scaled(text, units, 1.0, bytes);
}

void vgpu_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double value = (double)bytes;
	unsigned int unit = 0;

	while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
		value /= 1024;
		unit++;
	}
	if (unit == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", value, units[unit]);
}

int vgpu_parse_duration(const char *text, uint64_t *ns)
{
	static const struct unit units[] = {
		{ "ns", 1.0 },
		{ "us", 1e3 },
		{ "ms", 1e6 },
		{ "s", 1e9 }, { "sec", 1e9 },
		{ "m", 60e9 }, { "min", 60e9 },
		{ "h", 3600e9 },
		{ NULL, 0 },
	};

	return parse_scaled(text, units, 1e9, ns);
}

const char *vgpu_workload_name(enum vgpu_workload_kind kind)
{
	switch (kind) {
	case VGPU_WORKLOAD_STREAM:
		return "stream";
	case VGPU_WORKLOAD_STENCIL:
		return "stencil";
	case VGPU_WORKLOAD_GUPS:
		return "gups";
	case VGPU_WORKLOAD_ALLOC_LEAK:
		return "alloc-leak";
	case VGPU_WORKLOAD_ESCAPE:
		return "escape";
	case VGPU_WORKLOAD_SOAK:
		return "soak";
	case VGPU_WORKLOAD_COPY_FLOOD:
		return "copy-flood";
	case VGPU_WORKLOAD_NEVER_RELEASE:
		return "never-release";
	case VGPU_WORKLOAD_STALL:
		return "stall";
	case VGPU_WORKLOAD_THROTTLE:
		return "throttle";
	case VGPU_WORKLOAD_HOG:
		return "hog";
	case VGPU_WORKLOAD_STALLER:
		return "staller";
	}
	return "unknown";
}

int vgpu_workload_parse(const char *name, enum vgpu_workload_kind *out)
{
	if (!name)
		return -EINVAL;
	if (!strcmp(name, "stream"))
		*out = VGPU_WORKLOAD_STREAM;
	else if (!strcmp(name, "stencil"))
		*out = VGPU_WORKLOAD_STENCIL;
	else if (!strcmp(name, "gups"))
		*out = VGPU_WORKLOAD_GUPS;
	else if (!strcmp(name, "alloc-leak") || !strcmp(name, "alloc"))
		*out = VGPU_WORKLOAD_ALLOC_LEAK;
	else if (!strcmp(name, "stall"))
		*out = VGPU_WORKLOAD_STALL;
	else if (!strcmp(name, "escape"))
		*out = VGPU_WORKLOAD_ESCAPE;
	else if (!strcmp(name, "soak"))
		*out = VGPU_WORKLOAD_SOAK;
	else if (!strcmp(name, "copy-flood"))
		*out = VGPU_WORKLOAD_COPY_FLOOD;
	else if (!strcmp(name, "never-release"))
		*out = VGPU_WORKLOAD_NEVER_RELEASE;
	else if (!strcmp(name, "throttle"))
		*out = VGPU_WORKLOAD_THROTTLE;
	else if (!strcmp(name, "hog"))
		*out = VGPU_WORKLOAD_HOG;
	else if (!strcmp(name, "staller"))
		*out = VGPU_WORKLOAD_STALLER;
	else
		return -EINVAL;
	return 0;
}
