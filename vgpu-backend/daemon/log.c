// SPDX-License-Identifier: MIT
/* log.c - leveled one-line logging to stderr, see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "vgpu/util.h"

#define RATELIMIT_INTERVAL_NS 5000000000ull
#define RATELIMIT_BURST 10u

static atomic_int current_level = VGPUD_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void vgpud_log_set_level(enum vgpud_log_level level)
{
	atomic_store(&current_level, (int)level);
}

enum vgpud_log_level vgpud_log_get_level(void)
{
	return (enum vgpud_log_level)atomic_load(&current_level);
}

int vgpud_log_parse_level(const char *name)
{
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(name, level_names[i]))
			return i;
	if (!strcmp(name, "warning"))
		return VGPUD_LOG_WARN;
	return -1;
}

const char *vgpud_log_level_name(enum vgpud_log_level level)
{
	return (unsigned)level < 4 ? level_names[level] : "?";
}

static void vlog(enum vgpud_log_level level, const char *fmt, va_list ap)
{
	static const int syslog_priority[] = { 3, 4, 6, 7 };
	char line[1024];
	int n;

	if (getenv("JOURNAL_STREAM")) {
		n = snprintf(line, sizeof(line), "<%d>", syslog_priority[level]);
	} else {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld vgpud %s: ", tm.tm_hour,
		             tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
	}
	if (n < 0)
		return;
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

void vgpud_log(enum vgpud_log_level level, const char *fmt, ...)
{
	va_list ap;

	if ((int)level > atomic_load(&current_level))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void vgpud_log_ratelimited(struct vgpud_ratelimit *rl, enum vgpud_log_level level,
                           const char *fmt, ...)
{
	uint64_t now = vgpu_monotonic_ns();
	va_list ap;

	if ((int)level > atomic_load(&current_level))
		return;
	if (now - rl->window_start_ns > RATELIMIT_INTERVAL_NS) {
		if (rl->suppressed)
			vgpud_log(level, "(%u similar messages suppressed)", rl->suppressed);
		rl->window_start_ns = now;
		rl->in_window = 0;
		rl->suppressed = 0;
	}
	if (rl->in_window >= RATELIMIT_BURST) {
		rl->suppressed++;
		return;
	}
	rl->in_window++;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
