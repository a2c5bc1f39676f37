/* SPDX-License-Identifier: MIT */
/*
 * cs_kernel_stream.h - the memory requests a built-in simgpu kernel makes,
 * derived from its LAUNCH arguments the way gpu_kernels.c walks memory.
 *
 * Promise: the kernel's work is cut into warp tasks of 32 lanes (32 elements:
 * 8-byte words, 4-byte cells for STENCIL, 32 updates for RANDOM_ACCESS), in
 * the order the kernel visits memory. A task names the 128-byte lines it
 * reads, then the lines it writes, and its instruction-equivalents: the warp
 * instructions one pass of the kernel's loop body over 32 elements takes
 * (counted from the C loop bodies in gpu_kernels.c; see the table in the .c).
 * RANDOM_ACCESS replays the kernel's own xorshift64 stream from its seed, so
 * the addresses are exactly the ones the kernel touches. The argument rules
 * are vgpu/abi/kernels.h's (and gpu_kernels.c's limits are not imposed:
 * this is a timing input, not an execution).
 */
#ifndef SIMGPU_CS_KERNEL_STREAM_H
#define SIMGPU_CS_KERNEL_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#define CS_LINE_BYTES 128u
#define CS_WARP_LANES 32u
#define CS_TASK_MAX_LINES 40u

struct cs_task {
	uint32_t reads, writes;
	uint64_t read_va[CS_TASK_MAX_LINES];  /* line-aligned */
	uint64_t write_va[CS_TASK_MAX_LINES];
	uint32_t instructions;
};

struct cs_kernel_stream {
	uint32_t kernel; /* SIMGPU_KERNEL_* */
	uint64_t args[4];
	/* position */
	uint64_t pass, offset, done, state;
	bool finished;
};

/* 0, or -EINVAL for an unknown kernel, a wrong argument count or arguments
 * that break the kernel's rules. */
int cs_kernel_stream_init(struct cs_kernel_stream *s, uint32_t kernel, const uint64_t *args,
                          uint32_t nargs);
/* Rewinds to the start of the launch (a relaunch with the same arguments). */
void cs_kernel_stream_restart(struct cs_kernel_stream *s);
/* The next task; false when the launch has no more. */
bool cs_kernel_stream_next(struct cs_kernel_stream *s, struct cs_task *task);

/* The kernel's id from its name ("fill", "copy", "stream", "stencil",
 * "gups" or "random_access", "checksum"); 0 if unknown. */
uint32_t cs_kernel_from_name(const char *name);
const char *cs_kernel_name(uint32_t kernel);

#endif /* SIMGPU_CS_KERNEL_STREAM_H */
