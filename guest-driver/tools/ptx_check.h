/* SPDX-License-Identifier: MIT */
/*
 * ptx_check.h - a GPU program the guest brings, end to end through the
 * runtime: the module of tests/ptx/modules.ptx (vadd_u32, scale_bias,
 * sum_u32; variables bias, scale, launches) loaded with vgpu_module_load,
 * its kernels launched with LAUNCH_FUNCTION commands in one channel, every
 * result checked against the CPU. What vgpu-ptx-run runs, in a VM on
 * vgpu.ko or as a tenant of vgpud.
 *
 * The program: size_bytes of data in groups of three buffers a, b, c of
 * buffer_bytes each (uint32 words). a and b are uploaded from a seeded
 * generator; per group c = a + b (vadd_u32), then iterations times
 * c = c * scale + bias (scale_bias, which also counts its launches in the
 * module's variable launches), then sum_u32 adds up c into a 64-bit word.
 * Then every c is downloaded and compared word by word with the CPU's
 * reference, every sum with the CPU's, the variables with what the module
 * declares and with the launches made. Finally a malformed image must be
 * refused with -EINVAL, and the module is unloaded.
 *
 * Threads: the device's (one thread at a time).
 */
#ifndef VGPU_TOOLS_PTX_CHECK_H
#define VGPU_TOOLS_PTX_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu_guest.h"

struct ptx_check_options {
	const void *image;     /* the PTX text of tests/ptx/modules.ptx */
	size_t image_bytes;
	uint64_t size_bytes;   /* data in all (at least one group) */
	uint64_t buffer_bytes; /* each of a, b, c: a multiple of 4, >= 4 KiB */
	uint64_t seed;
	uint32_t iterations;   /* scale_bias passes over each c, >= 1 */
	uint32_t priority;     /* ALLOC priority 0..15 */
};

struct ptx_check_result {
	uint32_t module;          /* the device's handle */
	uint32_t function_count;
	uint32_t variable_count;
	uint64_t groups;
	uint64_t elements;        /* words of c in all */
	uint64_t launches;        /* LAUNCH_FUNCTION commands submitted */
	uint64_t allocated_bytes; /* data buffers */
	uint64_t uploaded_bytes;
	uint64_t downloaded_bytes;
	uint64_t mismatches;      /* words of c that differ from the CPU's */
	uint64_t sum_mismatches;  /* groups whose sum differs */
	/* The VM's statistics once every launch was done, all data held. */
	uint64_t vm_allocated_bytes;
	uint64_t vm_evicted_bytes;
	uint32_t vm_evictions;
	bool variables_ok;        /* bias, scale, launches as expected */
	bool bad_image_refused;   /* -EINVAL for a malformed image */
	double seconds;
	char message[512];        /* what failed, or a summary */
};

/*
 * Run the program on dev. 0: every value matched; -EBADMSG: the program ran
 * but some result differs (r says which); another negative errno: a step
 * failed (r->message says which and why, with the runtime's words).
 */
int ptx_check_run(struct vgpu_guest_device *dev, const struct ptx_check_options *options,
                  struct ptx_check_result *r);

#endif /* VGPU_TOOLS_PTX_CHECK_H */
