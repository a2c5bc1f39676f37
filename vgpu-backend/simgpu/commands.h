/* SPDX-License-Identifier: MIT */
/*
 * commands.h - the pushbuffer interpreter (format: vgpu/abi/commands.h).
 *
 * Executes the in-flight pushbuffer of a channel on the compute engine,
 * from where it stopped (a command and the place inside it). Every word is
 * validated before use; anything malformed ends the run with a
 * VGPU_FAULT_BAD_COMMAND (or VGPU_FAULT_BAD_KERNEL_ARGS) fault, never with
 * undefined behaviour.
 *
 * One call is one turn of the channel (pfifo.h). The turn ends
 *  - with RUN_YIELDED once it completed config.timeslice_commands commands,
 *    or the engine has charged config.timeslice_ns of modeled time since
 *    turn_start_ps; a COPY, MEMSET or kernel that reaches the time slice
 *    stops at its next span boundary and carries on next turn
 *    (gpu_kernels.h). The first command of a turn always runs, so every turn
 *    advances;
 *  - with RUN_BLOCKED when a SEMAPHORE_ACQUIRE is not satisfied: the channel
 *    yields the engine and the acquire is polled again on its next turn;
 *  - with RUN_FAULT VGPU_FAULT_TIMEOUT (the watchdog) when one command has
 *    used more than config.watchdog_ns of modeled engine time, summed over
 *    its turns, or one SEMAPHORE_ACQUIRE has waited longer than
 *    config.acquire_timeout_ms of wall time (the GPU idles while it waits, so
 *    modeled time does not pass). Either limit 0 switches that check off.
 */
#ifndef SIMGPU_COMMANDS_H
#define SIMGPU_COMMANDS_H

#include "channel.h"
#include "memory_access.h"

enum run_status {
	RUN_DONE,    /* the pushbuffer completed */
	RUN_YIELDED, /* the turn's budget is used up; run again next turn */
	RUN_BLOCKED, /* a SEMAPHORE_ACQUIRE is not satisfied yet; run again later */
	RUN_FAULT,   /* ctx->fault tells why; the channel must die */
};

/* Run ch's pushbuffer for one turn that began when the engine had charged
 * turn_start_ps (before the pushbuffer was loaded). */
enum run_status commands_run(struct engine_context *ctx, struct simgpu_channel *ch,
                             uint64_t turn_start_ps);

#endif /* SIMGPU_COMMANDS_H */
