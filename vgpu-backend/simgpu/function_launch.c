// SPDX-License-Identifier: MIT
/* function_launch.c - LAUNCH_FUNCTION on the compute engine (see
 * function_launch.h). */
#include "function_launch.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "module.h"
#include "ptx/ptx_exec.h"
#include "simgpu_device.h"
#include "vgpu/abi/commands.h"
#include "vgpu/util.h"

#define DEFAULT_THREAD_INSTRUCTIONS_PER_SECOND UINT64_C(20000000000000)
#define MAX_HOST_THREADS 64u
/* A piece of a grid: this many blocks per host thread before the engine
 * checks whether its turn is up. */
#define BLOCKS_PER_THREAD 4u
#define DEFAULT_WALL_WATCHDOG_MS 5000u
#define DEFAULT_LAUNCH_WALL_MS 120000u
/* Host time one turn of a launch may take before it yields to the other
 * channels, whatever the modeled clock says: interpreting a grid is much
 * slower than the GPU it models, and a drain for a relocation must not
 * wait for a whole modeled timeslice of interpreted blocks. */
#define TURN_WALL_NS (20u * 1000000u)

/* What makes a running piece stop early: a kill or removal of its channel
 * (they wait for the piece), or the piece running past the wall-clock
 * watchdog (modeled time cannot stop a block that loops forever in
 * reasonable host time), or the whole launch running past its host-time
 * limit (a grid of billions of blocks that each cost next to nothing): for
 * that, the host time of all of a launch's pieces counts, not the time it
 * waited for its turn. */
struct piece_stop {
	const struct simgpu_channel *channel;
	uint64_t deadline_ns;
};

static int piece_poll(void *opaque)
{
	const struct piece_stop *stop = opaque;

	return __atomic_load_n(&stop->channel->killing, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&stop->channel->removing, __ATOMIC_RELAXED) ||
	       vgpu_monotonic_ns() >= stop->deadline_ns;
}

/*
 * The executor's view of the VM's memory. Host thread 0 is the engine's own
 * (the PFIFO thread, with its engine context); the executor's other host
 * threads each take an engine context of their own the first time they
 * touch memory (an engine context is used by one thread at a time).
 */
struct function_memory {
	struct simgpu_address_space *as;
	pthread_t engine_thread;
	struct engine_context *engine;
	struct engine_context *helpers; /* threads - 1 */
	unsigned helper_count;
	unsigned next_helper; /* atomic */
	uint64_t piece;       /* which piece: a helper thread's binding is per piece */
};

static __thread struct {
	const struct function_memory *memory;
	uint64_t piece;
	struct engine_context *context;
} thread_binding;

static struct engine_context *thread_context(struct function_memory *memory)
{
	unsigned slot;

	if (pthread_equal(pthread_self(), memory->engine_thread))
		return memory->engine;
	if (thread_binding.memory == memory && thread_binding.piece == memory->piece)
		return thread_binding.context;
	slot = __atomic_fetch_add(&memory->next_helper, 1, __ATOMIC_RELAXED);
	if (slot >= memory->helper_count)
		return NULL; /* more threads than the piece asked for: cannot happen */
	thread_binding.memory = memory;
	thread_binding.piece = memory->piece;
	thread_binding.context = &memory->helpers[slot];
	return thread_binding.context;
}

static int memory_read(void *opaque, uint64_t va, void *dst, size_t n)
{
	struct function_memory *memory = opaque;
	struct engine_context *ctx = thread_context(memory);

	return ctx ? gpu_read(ctx, memory->as, va, dst, n) : -EIO;
}

static int memory_write(void *opaque, uint64_t va, const void *src, size_t n)
{
	struct function_memory *memory = opaque;
	struct engine_context *ctx = thread_context(memory);

	return ctx ? gpu_write(ctx, memory->as, va, src, n) : -EIO;
}

/* A read-modify-write transaction at va (aligned: one span). */
static int memory_atomic(void *opaque, uint64_t va, const struct ptx_atomic *op, uint64_t *old)
{
	struct function_memory *memory = opaque;
	struct engine_context *ctx = thread_context(memory);
	struct access_span span;
	int ret;

	if (!ctx)
		return -EIO;
	access_begin(ctx, memory->as);
	ret = access_translate(ctx, memory->as, va, op->size, ACCESS_READ_WRITE, true, &span);
	if (ret == 0 && span.bytes < op->size)
		ret = -EFAULT; /* the executor checks alignment: not reached */
	if (ret == 0 && op->size == 4) {
		uint32_t *word = (uint32_t *)span.host, seen = __atomic_load_n(word, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(word, &seen,
		                                    htole32((uint32_t)ptx_atomic_apply(op,
		                                                                       le32toh(seen))),
		                                    false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			;
		*old = le32toh(seen);
	} else if (ret == 0) {
		uint64_t *word = (uint64_t *)span.host, seen = __atomic_load_n(word, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(word, &seen,
		                                    htole64(ptx_atomic_apply(op, le64toh(seen))),
		                                    false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			;
		*old = le64toh(seen);
	}
	access_end(ctx, memory->as);
	return ret;
}

static const struct ptx_memory_ops memory_ops = {
	.read = memory_read,
	.write = memory_write,
	.atomic = memory_atomic,
};

static unsigned host_threads(const struct simgpu *gpu)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = gpu->config.function_host_threads;

	if (!threads)
		threads = online > 0 ? (unsigned)online : 1;
	return threads < MAX_HOST_THREADS ? threads : MAX_HOST_THREADS;
}

static uint64_t instruction_ps(const struct simgpu *gpu, uint64_t thread_instructions)
{
	uint64_t rate = gpu->config.thread_instructions_per_second;

	if (!rate)
		rate = DEFAULT_THREAD_INSTRUCTIONS_PER_SECOND;
	return (uint64_t)((unsigned __int128)thread_instructions * PICOSECONDS_PER_SECOND / rate);
}

/*
 * What an instruction of each class costs, in issue slots of a simple one
 * (an integer or single-precision operation): double precision at half the
 * rate, the special function unit's transcendentals at a quarter, atomics
 * twice (their memory transaction is charged apart, like every access).
 */
static const uint8_t class_slots[PTX_CLASS_COUNT] = {
	[PTX_CLASS_INT] = 1,     [PTX_CLASS_FP32] = 1,    [PTX_CLASS_FP64] = 2,
	[PTX_CLASS_SFU] = 4,     [PTX_CLASS_CONVERT] = 1, [PTX_CLASS_CONTROL] = 1,
	[PTX_CLASS_MEMORY] = 1,  [PTX_CLASS_ATOMIC] = 2,  [PTX_CLASS_WARP] = 1,
	[PTX_CLASS_SYNC] = 1,
};

static uint64_t executed_slots(const struct ptx_stats *stats)
{
	uint64_t slots = 0;

	for (int c = 0; c < PTX_CLASS_COUNT; c++)
		slots += stats->thread_instructions_by_class[c] * class_slots[c];
	return slots;
}

/* Charge what the piece executed: its threads' transactions (the helpers'
 * contexts) and its instructions by class, to the engine's context. */
static void charge_piece(struct engine_context *ctx, struct simgpu_address_space *as,
                         const struct function_memory *memory,
                         const struct ptx_launch_result *result)
{
	uint64_t ps = instruction_ps(ctx->gpu, executed_slots(&result->stats));

	for (unsigned i = 0; i < memory->helper_count; i++)
		ctx->charged_ps += memory->helpers[i].charged_ps;
	pthread_mutex_lock(&as->lock);
	as->busy_ps[ctx->engine] += ps;
	pthread_mutex_unlock(&as->lock);
	ctx->charged_ps += ps;
	gpu_clock_add(&ctx->gpu->clock, ctx->engine, ps);
}

/* The fault a failed piece reports, in the engine's context. */
static void piece_fault(struct engine_context *ctx, const struct function_memory *memory,
                        const struct ptx_launch_result *result, uint64_t command_va)
{
	if (result->fault == PTX_FAULT_MEMORY) {
		for (unsigned i = 0; i < memory->helper_count; i++)
			if (memory->helpers[i].fault.cause != VGPU_FAULT_NONE &&
			    ctx->fault.cause == VGPU_FAULT_NONE)
				ctx->fault = memory->helpers[i].fault;
		if (ctx->fault.cause == VGPU_FAULT_NONE) /* out of the executor's bounds */
			ctx->fault = (struct gpu_fault){ result->fault_address, VGPU_FAULT_UNMAPPED };
		return;
	}
	ctx->fault.address = result->fault_address ? result->fault_address : command_va;
	ctx->fault.cause = result->fault == PTX_FAULT_WATCHDOG ? VGPU_FAULT_TIMEOUT
	                                                       : VGPU_FAULT_KERNEL_ERROR;
}

struct launch_args {
	uint32_t module, function;
	struct ptx_dim3 grid, block;
	uint32_t shared_bytes, param_bytes;
	const void *params;
};

static int decode(const uint32_t *args, uint32_t nargs, struct launch_args *out)
{
	if (nargs < VGPU_LAUNCH_FUNCTION_FIXED_WORDS)
		return -EINVAL;
	out->module = le32toh(args[0]);
	out->function = le32toh(args[1]);
	out->grid = (struct ptx_dim3){ le32toh(args[2]), le32toh(args[3]), le32toh(args[4]) };
	out->block = (struct ptx_dim3){ le32toh(args[5]), le32toh(args[6]), le32toh(args[7]) };
	out->shared_bytes = le32toh(args[8]);
	out->param_bytes = le32toh(args[9]);
	out->params = args + VGPU_LAUNCH_FUNCTION_FIXED_WORDS;
	if (out->param_bytes > VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES ||
	    nargs != VGPU_LAUNCH_FUNCTION_FIXED_WORDS + (out->param_bytes + 3) / 4)
		return -EINVAL;
	return 0;
}

static uint64_t grid_blocks(const struct ptx_dim3 *grid)
{
	return (uint64_t)grid->x * grid->y * grid->z;
}

/* Run blocks [first, first + count) as one piece; 0 or a fault's errno. */
static int run_piece(struct engine_context *ctx, struct simgpu_channel *ch,
                     struct simgpu_module *module, const struct launch_args *a,
                     uint64_t first, uint64_t count, unsigned threads, uint64_t budget_ps,
                     uint64_t wall_left_ns, uint64_t command_va)
{
	struct simgpu_address_space *as = ch->as;
	uint32_t wall_ms = ctx->gpu->config.function_wall_watchdog_ms;
	uint64_t piece_ns = (uint64_t)(wall_ms ? wall_ms : DEFAULT_WALL_WATCHDOG_MS) * 1000000u;
	struct piece_stop stop = {
		.channel = ch,
		.deadline_ns = vgpu_monotonic_ns() + (piece_ns < wall_left_ns ? piece_ns : wall_left_ns),
	};
	struct function_memory memory = {
		.as = as, .engine_thread = pthread_self(), .engine = ctx, .piece = first + 1,
	};
	struct ptx_launch launch = {
		.module = module->ptx,
		.entry = a->function,
		.grid = a->grid,
		.block = a->block,
		.dynamic_shared_bytes = a->shared_bytes,
		.params = a->params,
		.param_size = a->param_bytes,
		.var_addresses = module->variable_va,
		.var_count = module->info.variable_count,
		.mem = &memory_ops,
		.mem_ctx = &memory,
		.host_threads = threads,
		.first_block = first,
		.block_count = count,
		.poll = piece_poll,
		.poll_ctx = &stop,
	};
	struct ptx_launch_result result;
	uint64_t warp_ps = instruction_ps(ctx->gpu, PTX_WARP_SIZE);
	int ret;

	/* The watchdog: no more warp instructions than its time allows. */
	launch.instruction_budget = budget_ps / (warp_ps ? warp_ps : 1) + 1;
	if (threads > 1) {
		memory.helper_count = threads - 1;
		memory.helpers = calloc(memory.helper_count, sizeof(*memory.helpers));
		if (!memory.helpers)
			return -ENOMEM;
		for (unsigned i = 0; i < memory.helper_count; i++)
			if (engine_context_init(&memory.helpers[i], ctx->gpu, ctx->engine)) {
				memory.helper_count = i;
				break;
			}
		launch.host_threads = memory.helper_count + 1;
	}
	memset(&result, 0, sizeof(result));
	ret = ptx_launch(&launch, &result);
	charge_piece(ctx, as, &memory, &result);
	if (ret == -EINVAL && result.fault == PTX_FAULT_LAUNCH)
		ret = -EINVAL; /* a bad launch: the caller's BAD_KERNEL_ARGS */
	else if (ret) {
		piece_fault(ctx, &memory, &result, command_va);
		ret = -EFAULT;
	}
	for (unsigned i = 0; i < memory.helper_count; i++)
		engine_context_destroy(&memory.helpers[i]);
	free(memory.helpers);
	return ret;
}

int gpu_function_launch(struct engine_context *ctx, struct simgpu_channel *ch,
                        const uint32_t *args, uint32_t nargs, uint64_t command_va,
                        uint64_t watchdog_left_ps, struct command_progress *progress)
{
	struct simgpu_address_space *as = ch->as;
	struct simgpu_module *module;
	struct launch_args a;
	uint64_t blocks;
	unsigned threads = host_threads(ctx->gpu);
	uint32_t wall_ms = ctx->gpu->config.function_launch_wall_ms;
	uint64_t wall_ns = (uint64_t)(wall_ms ? wall_ms : DEFAULT_LAUNCH_WALL_MS) * 1000000u;
	uint64_t turn_start = vgpu_monotonic_ns();
	int ret = decode(args, nargs, &a);

	if (ret)
		return ret;
	module = module_get(&as->modules, a.module);
	if (!module)
		return -EINVAL;
	blocks = grid_blocks(&a.grid);
	if (a.function >= module->info.function_count ||
	    a.param_bytes != module->functions[a.function].param_bytes || !blocks ||
	    !a.block.x || !a.block.y || !a.block.z) {
		module_put(module);
		return -EINVAL;
	}
	while (progress->step < blocks) {
		uint64_t count = (uint64_t)threads * BLOCKS_PER_THREAD;
		uint64_t started = ctx->charged_ps, host_started = vgpu_monotonic_ns();

		/* A kill or removal between pieces ends the launch here. */
		if (__atomic_load_n(&ch->killing, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&ch->removing, __ATOMIC_RELAXED)) {
			ret = GPU_YIELD;
			break;
		}
		if (progress->host_ns >= wall_ns) {
			ctx->fault = (struct gpu_fault){ command_va, VGPU_FAULT_TIMEOUT };
			ret = -EFAULT;
			break;
		}
		if (count > blocks - progress->step)
			count = blocks - progress->step;
		ret = run_piece(ctx, ch, module, &a, progress->step, count,
		                count < threads ? (unsigned)count : threads, watchdog_left_ps,
		                wall_ns - progress->host_ns, command_va);
		progress->host_ns += vgpu_monotonic_ns() - host_started;
		if (ret)
			break;
		progress->step += count;
		if (watchdog_left_ps <= ctx->charged_ps - started) {
			ctx->fault = (struct gpu_fault){ command_va, VGPU_FAULT_TIMEOUT };
			ret = -EFAULT;
			break;
		}
		watchdog_left_ps -= ctx->charged_ps - started;
		if (progress->step < blocks &&
		    (engine_should_yield(ctx) || vgpu_monotonic_ns() - turn_start >= TURN_WALL_NS)) {
			ret = GPU_YIELD;
			break;
		}
	}
	module_put(module);
	return ret;
}
