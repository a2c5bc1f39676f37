/* SPDX-License-Identifier: MIT */
/*
 * error.h - how the core's functions report errors: a negative errno
 * returned and, for the caller, the struct vgpu_error it passed filled with
 * a sentence saying what was wrong and what to do (vgpu/error.h; NULL: the
 * errno only). return vgpu_error_set(error, -ENOMEM, "...") does both.
 *
 * A helper at the bottom of the core: it knows nothing of the core's
 * objects. Any thread.
 */
#ifndef VGPU_CORE_ERROR_H
#define VGPU_CORE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/util.h"

/* Human-readable size ("64 MiB") into buf, for messages. */
static inline const char *vgpu_core_format_size(uint64_t bytes, char *buf, size_t len)
{
	return vgpu_format_size(bytes, buf, len);
}

#endif /* VGPU_CORE_ERROR_H */
