/* SPDX-License-Identifier: MIT */
/*
 * error.h - how the core's functions report errors (error.c): a negative
 * errno returned, and the calling thread's last error (vgpu_core_last_error)
 * set to a sentence saying what was wrong and what to do. vgpu_core_fail
 * does both in one step: return vgpu_core_fail(-ENOMEM, "...").
 *
 * A helper at the bottom of the core: it knows nothing of the core's
 * objects. Any thread.
 */
#ifndef VGPU_CORE_ERROR_H
#define VGPU_CORE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "vgpu/util.h"

void vgpu_core_set_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
int vgpu_core_fail(int err, const char *format, ...) __attribute__((format(printf, 2, 3)));
void vgpu_core_clear_error(void);

/* Human-readable size ("64 MiB") into buf, for messages. */
static inline const char *vgpu_core_format_size(uint64_t bytes, char *buf, size_t len)
{
	return vgpu_format_size(bytes, buf, len);
}

#endif /* VGPU_CORE_ERROR_H */
