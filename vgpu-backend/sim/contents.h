/* SPDX-License-Identifier: MIT */
/*
 * contents.h - what a buffer must contain, computed on the CPU with
 * simgpu's reference kernels (vgpu/abi/kernels.h).
 *
 * A filled buffer starts as FILL(seed); STREAM passes on it are counted, so
 * its content stays a formula and costs no memory (buffers of gigabytes are
 * fine). Kernels that cannot be expressed that way (stencil, gups) make the
 * content explicit: it is then kept as bytes. A buffer allocated with
 * "nofill" has unspecified content, and so does everything computed from
 * it: such buffers are not verified.
 */
#ifndef VGPU_SIM_CONTENTS_H
#define VGPU_SIM_CONTENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/hal.h"

struct sim_contents {
	uint64_t bytes;
	bool known;     /* false: unspecified (nofill) */
	uint64_t seed;  /* FILL seed */
	unsigned passes; /* STREAM passes since the fill (formula form) */
	uint8_t *data;  /* explicit form, or NULL */
};

void sim_contents_init(struct sim_contents *contents, uint64_t bytes);
void sim_contents_fini(struct sim_contents *contents);
void sim_contents_fill(struct sim_contents *contents, uint64_t seed);
void sim_contents_unknown(struct sim_contents *contents);
void sim_contents_stream(struct sim_contents *contents, unsigned passes);
/* Switch to the explicit form. -ENOMEM. */
int sim_contents_materialize(struct sim_contents *contents);
uint64_t sim_contents_checksum(struct sim_contents *contents);
/* Compare with what the GPU shows at va in as, byte for byte. 0, or
 * -EINVAL with the first difference described in error (a HAL read's
 * failure: its errno). */
int sim_contents_verify(const struct sim_contents *contents, struct vgpu_hal_as *as, uint64_t va,
                        struct vgpu_error *error);

#endif /* VGPU_SIM_CONTENTS_H */
