/* SPDX-License-Identifier: MIT */
/*
 * bench-common.h - what the *-bench programs share: a figure measured over
 * rounds (its median with the spread, min..max), printed beside the median
 * and written to a JSON object as KEY, KEY_min and KEY_max. `./vgpu-dev
 * bench` merges every program's --json object into build/bench/bench.json.
 *
 * A ratio is computed per round from two sides measured in that round, then
 * summarised over rounds (the median of per-round ratios): drift on a
 * shared machine hits both sides of a round alike.
 */
#ifndef VGPU_BENCH_COMMON_H
#define VGPU_BENCH_COMMON_H

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spread {
	double min, median, max;
};

static inline int bench_compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* min, median and max of count values (count >= 1). */
static inline struct spread spread_of(const double *values, int count)
{
	struct spread s = { 0, 0, 0 };
	double *sorted;

	if (count < 1)
		return s;
	sorted = malloc(sizeof(double) * (size_t)count);
	if (!sorted)
		abort();
	memcpy(sorted, values, sizeof(double) * (size_t)count);
	qsort(sorted, (size_t)count, sizeof(double), bench_compare_doubles);
	s.min = sorted[0];
	s.max = sorted[count - 1];
	s.median = count % 2 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
	free(sorted);
	return s;
}

/* "median (min..max)" with the given printf format for each number. */
static inline const char *spread_text(char *buffer, size_t size, const char *format, struct spread s)
{
	char a[32], b[32], c[32];

	snprintf(a, sizeof(a), format, s.median);
	snprintf(b, sizeof(b), format, s.min);
	snprintf(c, sizeof(c), format, s.max);
	snprintf(buffer, size, "%s (%s..%s)", a, b, c);
	return buffer;
}

#define SPREAD(format, s) spread_text((char[112]){ 0 }, 112, format, s)

/* KEY = median, KEY_min, KEY_max; NULL object: nothing. */
static inline void json_spread(struct json_object *object, const char *key, struct spread s)
{
	char name[128];

	if (!object)
		return;
	json_object_object_add(object, key, json_object_new_double(s.median));
	snprintf(name, sizeof(name), "%s_min", key);
	json_object_object_add(object, name, json_object_new_double(s.min));
	snprintf(name, sizeof(name), "%s_max", key);
	json_object_object_add(object, name, json_object_new_double(s.max));
}

static inline void json_number(struct json_object *object, const char *key, double value)
{
	if (object)
		json_object_object_add(object, key, json_object_new_double(value));
}

/* The per-round values themselves, as KEY_rounds. */
static inline void json_rounds(struct json_object *object, const char *key, const double *values,
                               int count)
{
	struct json_object *array;
	char name[128];

	if (!object)
		return;
	array = json_object_new_array();
	for (int i = 0; i < count; i++)
		json_object_array_add(array, json_object_new_double(values[i]));
	snprintf(name, sizeof(name), "%s_rounds", key);
	json_object_object_add(object, name, array);
}

/* The 1-minute load average: the machine is shared. */
static inline double load_average_1m(void)
{
	double load = -1;
	FILE *file = fopen("/proc/loadavg", "r");

	if (file) {
		if (fscanf(file, "%lf", &load) != 1)
			load = -1;
		fclose(file);
	}
	return load;
}

/* Writes object to path (nothing when path is NULL); 0 or -1. */
static inline int json_write(struct json_object *object, const char *path, const char *program)
{
	if (!path || !object)
		return 0;
	if (json_object_to_file_ext(path, object, JSON_C_TO_STRING_PRETTY) < 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", program, path, json_util_get_last_err());
		return -1;
	}
	return 0;
}

#endif
