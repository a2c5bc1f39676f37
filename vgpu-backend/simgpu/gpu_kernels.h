/* SPDX-License-Identifier: MIT */
/*
 * gpu_kernels.h - the built-in kernels, COPY and MEMSET as the compute
 * engine runs them: resumable.
 *
 * Semantics and argument rules: vgpu/abi/kernels.h. Every access goes
 * through memory_access.h page span by page span. After each span (each row
 * for STENCIL, each update for RANDOM_ACCESS) the work checks
 * engine_should_yield; when the engine's turn is used up it returns
 * GPU_YIELD with its place kept in struct command_progress, and the next
 * call with the same arguments and progress carries on from there. The
 * bytes written and the modeled time charged are the same however often a
 * command is split: splitting only moves the span boundaries at which other
 * channels may run in between. At least one span is done per call, so a
 * command always advances.
 */
#ifndef SIMGPU_GPU_KERNELS_H
#define SIMGPU_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "memory_access.h"

/* Returned by resumable work that stopped because the engine must yield. */
#define GPU_YIELD 1

/*
 * Where one command stands. command_progress_reset before a command's first
 * call; the rows buffer (STENCIL's three input rows and one output row)
 * belongs to the progress and survives resets.
 */
struct command_progress {
	uint64_t spent_ps;      /* modeled engine time the command used so far */
	uint64_t done;          /* bytes done (of the current STREAM pass) */
	uint64_t step;          /* STREAM pass, STENCIL row, RANDOM_ACCESS update */
	uint64_t value;         /* CHECKSUM running sum, RANDOM_ACCESS state */
	uint64_t wait_start_ns; /* SEMAPHORE_ACQUIRE: first unsatisfied poll, 0 = none */
	uint64_t host_ns;       /* LAUNCH_FUNCTION: host time its pieces took so far */
	unsigned north, centre; /* STENCIL: which rows hold the rows above and at step */
	uint32_t *rows;
	size_t rows_bytes;
};

void command_progress_reset(struct command_progress *progress);
/* Free the rows buffer. */
void command_progress_release(struct command_progress *progress);

/* 0 (complete), GPU_YIELD, -EFAULT with ctx->fault set, or -EINVAL for bad
 * arguments (unknown kernel, wrong count, misaligned, out of bounds). */
int gpu_kernel_launch(struct engine_context *ctx, struct simgpu_address_space *as,
                      uint32_t kernel, const uint64_t *args, uint32_t nargs,
                      struct command_progress *progress);

/* COPY and MEMSET from *done on, shared by the commands, the kernels and the
 * copy engine: 0 (complete), GPU_YIELD or -EFAULT; *done says how far. */
int gpu_copy(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
             uint64_t src, uint64_t bytes, uint64_t *done);
int gpu_memset(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
               uint32_t pattern, uint64_t bytes, uint64_t *done);

#endif /* SIMGPU_GPU_KERNELS_H */
