/* SPDX-License-Identifier: MIT */
/*
 * function_launch.h - LAUNCH_FUNCTION as the compute engine runs it: a
 * function of a module the VM bound (module.h), executed by the PTX
 * executor (ptx/ptx_exec.h) with every global access going through the
 * address space's GMMU (memory_access.h), so evicted chunks are read over
 * the modeled bus, faults kill the channel with the GPU's usual cause, and
 * the bytes, reference bits and busy time land in the same counters as a
 * built-in kernel's.
 *
 * Resumable like the built-in kernels (gpu_kernels.h): a grid runs in
 * pieces of whole blocks; after each piece the work checks
 * engine_should_yield and, when the engine's turn is up, returns GPU_YIELD
 * with the next block in progress->step. A block always runs to its end (or
 * its fault) once started. Modeled time: each transaction as memory_access.h
 * charges it, plus every executed thread instruction at
 * config.thread_instructions_per_second, weighted by its class (FP64 and
 * atomics 2 slots, the SFU 4); identical work charges identical
 * time whatever the host threads or the split. The watchdog: a piece that
 * would run past the command's modeled-time limit (watchdog_left_ps) is
 * stopped by the executor's instruction budget, a piece that runs past
 * config.function_wall_watchdog_ms of host time (a block looping forever)
 * and a launch whose pieces together took more than
 * config.function_launch_wall_ms of host time (a grid of billions of
 * nearly free blocks) stop at once: the channel dies with
 * VGPU_FAULT_TIMEOUT. A launch whose channel is being killed or removed
 * stops within its running piece, or before the next one. A turn yields
 * to the other channels after its modeled timeslice or 20 ms of host time,
 * whichever comes first (interpreting is slower than the modeled GPU).
 */
#ifndef SIMGPU_FUNCTION_LAUNCH_H
#define SIMGPU_FUNCTION_LAUNCH_H

#include <stdint.h>

#include "channel.h"
#include "gpu_kernels.h"
#include "memory_access.h"

/*
 * Run (or resume) LAUNCH_FUNCTION with its nargs argument words (the
 * command's, little-endian). 0 complete, GPU_YIELD, -EINVAL bad arguments
 * (no such module or function, parameter block of the wrong size,
 * impossible grid or block: VGPU_FAULT_BAD_KERNEL_ARGS), -EFAULT a fault
 * (ctx->fault says where and why: an access outside the mappings, or
 * VGPU_FAULT_TIMEOUT for the watchdog), -ENOMEM.
 */
int gpu_function_launch(struct engine_context *ctx, struct simgpu_channel *ch,
                        const uint32_t *args, uint32_t nargs, uint64_t command_va,
                        uint64_t watchdog_left_ps, struct command_progress *progress);

#endif /* SIMGPU_FUNCTION_LAUNCH_H */
