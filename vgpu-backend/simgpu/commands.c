// SPDX-License-Identifier: MIT
/* commands.c - the pushbuffer interpreter (see commands.h). */
#include "commands.h"

#include <endian.h>
#include <errno.h>
#include <time.h>

#include "function_launch.h"
#include "gpu_kernels.h"
#include "simgpu_device.h"
#include "spatial.h"
#include "vgpu/abi/commands.h"
#include "vgpu/util.h"

static inline uint64_t arg64(const uint32_t *args, unsigned index)
{
	return (uint64_t)le32toh(args[index]) | (uint64_t)le32toh(args[index + 1]) << 32;
}

static enum run_status bad(struct engine_context *ctx, uint64_t va,
                           enum vgpu_hal_error_cause cause)
{
	ctx->fault.address = va;
	ctx->fault.cause = cause;
	return RUN_FAULT;
}

static void raise_event(struct simgpu_channel *ch, enum vgpu_hal_event_type type, uint64_t value,
                        uint64_t address)
{
	struct vgpu_hal_event event = {
		.type = type,
		.channel_id = ch->id,
		.value = value,
		.address = address,
		.cause = VGPU_FAULT_NONE,
		.status = 0,
	};

	event_sink_raise(&ch->gpu->events, &event);
}

/* SEMAPHORE_ACQUIRE: satisfied (0), not yet (1) or a fault (-EFAULT). */
static int semaphore_check(struct engine_context *ctx, struct simgpu_address_space *as,
                           uint64_t va, uint64_t value)
{
	struct access_span span;
	uint64_t current;
	int ret;

	access_begin(ctx, as);
	ret = access_translate(ctx, as, va, 8, ACCESS_READ, false, &span);
	if (ret == 0) {
		current = le64toh(*(const uint64_t *)span.host);
		if (current >= value)
			access_charge(ctx, as, span.target, ACCESS_READ, 8);
		else
			ret = 1;
	}
	access_end(ctx, as);
	return ret;
}

/* An unsatisfied acquire: wait (yield) or, past the limit, time out. */
static enum run_status acquire_waits(struct engine_context *ctx, struct simgpu_channel *ch,
                                     uint64_t command_va)
{
	struct command_progress *progress = &ch->run.command;
	uint64_t limit_ns = (uint64_t)ch->gpu->config.acquire_timeout_ms * 1000000u;
	uint64_t now = vgpu_monotonic_ns();

	if (!progress->wait_start_ns)
		progress->wait_start_ns = now;
	else if (limit_ns && now - progress->wait_start_ns >= limit_ns)
		return bad(ctx, command_va, VGPU_FAULT_TIMEOUT);
	return RUN_BLOCKED;
}

/* What a resumable operation's return value means for the run. */
static enum run_status resumable(int ret)
{
	if (ret == GPU_YIELD)
		return RUN_YIELDED;
	return ret ? RUN_FAULT : RUN_DONE;
}

static enum run_status run_command(struct engine_context *ctx, struct simgpu_channel *ch,
                                   uint32_t header, const uint32_t *args, uint64_t command_va)
{
	struct simgpu_address_space *as = ch->as;
	struct command_progress *progress = &ch->run.command;
	unsigned opcode = VGPU_COMMAND_OPCODE(header);
	unsigned flags = VGPU_COMMAND_FLAGS(header);
	unsigned nargs = VGPU_COMMAND_ARG_WORDS(header);
	uint64_t va, value;
	int ret;

	switch (opcode) {
	case VGPU_CMD_NOP:
		if (flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		return RUN_DONE;

	case VGPU_CMD_SEMAPHORE_RELEASE:
		if (nargs != VGPU_SEMAPHORE_ARG_WORDS || (flags & ~VGPU_SEMAPHORE_RELEASE_FLAGS))
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		va = arg64(args, 0);
		value = htole64(arg64(args, 2));
		if (va % ((flags & VGPU_SEMAPHORE_TIMESTAMP) ? 16 : 8))
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		if (flags & VGPU_SEMAPHORE_TIMESTAMP) {
			/* The GPU's clock is the compute engine's modeled time
			 * (what every earlier command of the channel charged, and
			 * every other channel's work before it), as the engines'
			 * busy times and the fence timings are; written first, so
			 * a reader that sees the value sees its timestamp. */
			uint64_t stamp = htole64(ctx->charged_ps / 1000u);

			if (gpu_write(ctx, as, va + 8, &stamp, sizeof(stamp)))
				return RUN_FAULT;
		}
		if (gpu_write(ctx, as, va, &value, sizeof(value)))
			return RUN_FAULT;
		if (flags & VGPU_SEMAPHORE_INTERRUPT)
			raise_event(ch, VGPU_EVENT_FENCE, le64toh(value), va);
		return RUN_DONE;

	case VGPU_CMD_SEMAPHORE_ACQUIRE:
		if (nargs != VGPU_SEMAPHORE_ARG_WORDS || flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		va = arg64(args, 0);
		if (va % 8)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		ret = semaphore_check(ctx, as, va, arg64(args, 2));
		if (ret < 0)
			return RUN_FAULT;
		return ret ? acquire_waits(ctx, ch, command_va) : RUN_DONE;

	case VGPU_CMD_COPY:
		if (nargs != VGPU_COPY_ARG_WORDS || flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		return resumable(gpu_copy(ctx, as, arg64(args, 0), arg64(args, 2), arg64(args, 4),
		                          &progress->done));

	case VGPU_CMD_MEMSET:
		if (nargs != VGPU_MEMSET_ARG_WORDS || flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		return resumable(gpu_memset(ctx, as, arg64(args, 0), le32toh(args[2]),
		                            (uint64_t)le32toh(args[3]) |
		                                    (uint64_t)le32toh(args[4]) << 32,
		                            &progress->done));

	case VGPU_CMD_LAUNCH: {
		uint64_t kernel_args[VGPU_KERNEL_MAX_ARGS];
		uint32_t count, i;

		if (flags || nargs < 1 || (nargs - 1) % 2 ||
		    (nargs - 1) / 2 > VGPU_KERNEL_MAX_ARGS)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		count = (nargs - 1) / 2;
		for (i = 0; i < count; i++)
			kernel_args[i] = arg64(args, 1 + 2 * i);
		ret = gpu_kernel_launch(ctx, as, le32toh(args[0]), kernel_args, count, progress);
		if (ret == -EINVAL)
			return bad(ctx, command_va, VGPU_FAULT_BAD_KERNEL_ARGS);
		return resumable(ret);
	}

	case VGPU_CMD_LAUNCH_FUNCTION: {
		uint64_t watchdog_ps = ch->gpu->config.watchdog_ns * 1000u;

		if (flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		ret = gpu_function_launch(ctx, ch, args, nargs, command_va,
		                          !watchdog_ps ? UINT64_MAX
		                          : watchdog_ps > progress->spent_ps
		                                  ? watchdog_ps - progress->spent_ps : 0,
		                          progress);
		if (ret == -EINVAL)
			return bad(ctx, command_va, VGPU_FAULT_BAD_KERNEL_ARGS);
		if (ret == -ENOMEM)
			return bad(ctx, command_va, VGPU_FAULT_KERNEL_ERROR);
		return resumable(ret);
	}

	case VGPU_CMD_PRIV_FENCE:
		if (!ch->run.privileged || nargs || flags)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		raise_event(ch, VGPU_EVENT_PRIV_FENCE, ch->run.ticket, 0);
		return RUN_DONE;

	default:
		return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
	}
}

/* Spatial sharing: a completed LAUNCH takes its duration from the
 * contention model instead of its fixed cost (spatial.h). */
static void spatial_launch_done(struct simgpu_channel *ch, uint32_t header, const uint32_t *args,
                                uint64_t fixed_ps)
{
	uint64_t kernel_args[VGPU_KERNEL_MAX_ARGS];
	uint32_t count = (VGPU_COMMAND_ARG_WORDS(header) - 1) / 2, i;

	if (!ch->gpu->spatial || VGPU_COMMAND_OPCODE(header) != VGPU_CMD_LAUNCH)
		return;
	for (i = 0; i < count; i++)
		kernel_args[i] = arg64(args, 1 + 2 * i);
	spatial_kernel_done(ch->gpu->spatial, ch->as, le32toh(args[0]), kernel_args, count,
	                    fixed_ps);
}

enum run_status commands_run(struct engine_context *ctx, struct simgpu_channel *ch,
                             uint64_t turn_start_ps)
{
	const struct simgpu_config *config = &ch->gpu->config;
	uint64_t turn_end_ps = turn_start_ps + (uint64_t)config->timeslice_ns * 1000u;
	uint64_t watchdog_ps = config->watchdog_ns * 1000u;
	struct pushbuffer_run *run = &ch->run;
	struct command_progress *progress = &run->command;
	uint32_t completed = 0;

	ctx->privileged = run->privileged;
	while (run->position < run->count) {
		uint32_t header = le32toh(run->words[run->position]);
		uint32_t nargs = VGPU_COMMAND_ARG_WORDS(header);
		uint64_t command_va = run->va + (uint64_t)run->position * 4;
		uint64_t started_ps = ctx->charged_ps;
		enum run_status status;

		if (completed && (completed >= config->timeslice_commands ||
		                  ctx->charged_ps >= turn_end_ps))
			return RUN_YIELDED;
		if (nargs > run->count - run->position - 1)
			return bad(ctx, command_va, VGPU_FAULT_BAD_COMMAND);
		/* stop inside the command at the end of the turn, or when it
		 * reaches the watchdog's limit */
		ctx->yield_at_ps = turn_end_ps;
		if (watchdog_ps) {
			uint64_t left = watchdog_ps > progress->spent_ps
			                        ? watchdog_ps - progress->spent_ps : 0;

			if (started_ps + left < ctx->yield_at_ps)
				ctx->yield_at_ps = started_ps + left;
		}
		status = run_command(ctx, ch, header, run->words + run->position + 1, command_va);
		ctx->yield_at_ps = UINT64_MAX;
		progress->spent_ps += ctx->charged_ps - started_ps;
		if (status == RUN_YIELDED && watchdog_ps && progress->spent_ps >= watchdog_ps)
			return bad(ctx, command_va, VGPU_FAULT_TIMEOUT);
		if (status != RUN_DONE)
			return status;
		spatial_launch_done(ch, header, run->words + run->position + 1, progress->spent_ps);
		command_progress_reset(progress);
		run->position += 1 + nargs;
		completed++;
	}
	return RUN_DONE;
}
