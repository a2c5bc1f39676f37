/* SPDX-License-Identifier: MIT */
/*
 * commands.h - the pushbuffer interpreter (format: vgpu/simgpu_commands.h).
 *
 * Executes the in-flight pushbuffer of a channel on the compute engine,
 * from where it stopped. Every word is validated before use; anything
 * malformed ends the run with a VGPU_FAULT_BAD_COMMAND (or
 * VGPU_FAULT_BAD_KERNEL_ARGS) fault, never with undefined behaviour.
 */
#ifndef SIMGPU_COMMANDS_H
#define SIMGPU_COMMANDS_H

#include "channel.h"
#include "memory_access.h"

enum run_status {
	RUN_DONE,    /* the pushbuffer completed */
	RUN_BLOCKED, /* a SEMAPHORE_ACQUIRE is not satisfied yet; run again later */
	RUN_FAULT,   /* ctx->fault tells why; the channel must die */
};

enum run_status commands_run(struct engine_context *ctx, struct simgpu_channel *ch);

#endif /* SIMGPU_COMMANDS_H */
