/* SPDX-License-Identifier: MIT */
/*
 * log.h - vgpud's log: one line per message on stderr, with a level.
 *
 * Levels: error, warn, info, debug. Messages below the configured level are
 * dropped. Under systemd (JOURNAL_STREAM set) each line starts with the
 * sd-daemon priority prefix ("<3>" ...) so the journal records the level;
 * otherwise with a timestamp and the level name. Thread-safe: a line is
 * written with one write(2).
 *
 * vgpud_log_ratelimited() is for messages a guest can provoke at will
 * (malformed requests): it passes at most a burst per interval per counter
 * and then says how many were suppressed.
 */
#ifndef VGPUD_LOG_H
#define VGPUD_LOG_H

#include <stdint.h>

enum vgpud_log_level {
	VGPUD_LOG_ERROR = 0,
	VGPUD_LOG_WARN = 1,
	VGPUD_LOG_INFO = 2,
	VGPUD_LOG_DEBUG = 3,
};

void vgpud_log_set_level(enum vgpud_log_level level);
enum vgpud_log_level vgpud_log_get_level(void);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int vgpud_log_parse_level(const char *name);
const char *vgpud_log_level_name(enum vgpud_log_level level);

void vgpud_log(enum vgpud_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Per-source rate limit state (zero-initialise). */
struct vgpud_ratelimit {
	uint64_t window_start_ns;
	uint32_t in_window;
	uint32_t suppressed;
};

void vgpud_log_ratelimited(struct vgpud_ratelimit *rl, enum vgpud_log_level level,
                           const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) vgpud_log(VGPUD_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) vgpud_log(VGPUD_LOG_WARN, __VA_ARGS__)
#define log_info(...) vgpud_log(VGPUD_LOG_INFO, __VA_ARGS__)
#define log_debug(...) vgpud_log(VGPUD_LOG_DEBUG, __VA_ARGS__)

#endif /* VGPUD_LOG_H */
