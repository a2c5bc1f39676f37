// SPDX-License-Identifier: MIT
/* error.c - the core's error texts, see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

#include "vgpu/core.h"

static _Thread_local char last_error[512];

const char *vgpu_core_last_error(void)
{
	return last_error[0] ? last_error : "no error";
}

void vgpu_core_set_error(const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(last_error, sizeof(last_error), format, args);
	va_end(args);
}

int vgpu_core_fail(int err, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(last_error, sizeof(last_error), format, args);
	va_end(args);
	return err;
}

void vgpu_core_clear_error(void)
{
	last_error[0] = '\0';
}
