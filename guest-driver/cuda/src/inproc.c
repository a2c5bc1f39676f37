// SPDX-License-Identifier: MIT
/*
 * inproc.c - cuInit's in-process simgpu (see inproc.h), only in the
 * variant of the library for tests and benchmarks.
 */
#include "inproc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "vgpu_guest_simgpu.h"
#include "vgpu_workloads.h" /* vgpu_parse_size */

int cu_open_inproc(struct vgpu_guest_device **out, char *why, size_t why_len)
{
	const char *vram = getenv("VGPU_SIMGPU_VRAM");
	struct simgpu_config gpu;
	struct vgpu_guest_simgpu_config config = { .simgpu = &gpu };

	simgpu_config_defaults(&gpu);
	if (vram && *vram) {
		uint64_t bytes;

		if (vgpu_parse_size(vram, &bytes) || bytes < (16ull << 20) ||
		    bytes % (64u << 10)) {
			snprintf(why, why_len,
			         "VGPU_SIMGPU_VRAM=%s is not a size of at least 16M in 64K steps",
			         vram);
			return -EINVAL;
		}
		gpu.vram_bytes = bytes;
	}
	return vgpu_device_open_simgpu(&config, out, why, why_len);
}
