// SPDX-License-Identifier: MIT
/*
 * commands.c - what cudagpu's submission thread does with one channel's
 * turn: fetch its next GPFIFO entries (runs of NOPs at once), copy the
 * pushbuffer out, check every command against the channel's address space
 * (a command that leaves it kills the channel with simgpu's error) and issue
 * it on the channel's CUDA stream. A turn issues at most
 * config.timeslice_commands units (commands, 4 MiB windows of a COPY or
 * MEMSET, which resume next turn), over as many entries as the budget and
 * config.max_entries_in_flight allow, timed as one span (two CUDA events,
 * one completion), and no command while the channel has
 * config.max_ops_in_flight GPU operations unfinished (the turn ends, its
 * span closed so that their completion is seen); a SEMAPHORE_ACQUIRE that cannot complete yields the turn
 * and times out after config.acquire_timeout_ms. The format is simgpu's
 * (vgpu/abi/commands.h), so a guest drives both backends alike.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudagpu_internal.h"
#include "ptx_module.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define KERNEL_VA_LIMIT (UINT64_C(1) << 40) /* simgpu's rule for kernel ranges */
#define COMMAND_WINDOW (UINT64_C(4) << 20)  /* copies/memsets resolved 4 MiB at a time */
#define RANDOM_THREADS_MAX 65536u

enum cudagpu_run_status {
	RUN_DONE,
	RUN_YIELDED, /* the turn's budget is spent; carry on next turn */
	RUN_BLOCKED,
	RUN_FAULT,
};

static uint64_t arg64(const uint32_t *args, unsigned index)
{
	return (uint64_t)le32toh(args[index]) | (uint64_t)le32toh(args[index + 1]) << 32;
}

static bool range_ok(uint64_t va, uint64_t bytes)
{
	return bytes != 0 && va < KERNEL_VA_LIMIT && bytes <= KERNEL_VA_LIMIT - va;
}

static bool words_ok(uint64_t va, uint64_t bytes)
{
	return range_ok(va, bytes) && va % 8 == 0 && bytes % 8 == 0;
}

struct run_context {
	struct cudagpu *gpu;
	struct cg_channel *ch;
	struct cg_issue_scratch *scratch;
	uint32_t budget; /* units the turn may still issue */
	bool throttled;  /* the turn ended at config.max_ops_in_flight */
	bool issued;     /* the turn issued a GPU operation */
	uint64_t fault_va;
	enum vgpu_hal_error_cause cause;
};

/* n GPU operations went to the channel's stream. */
static void issued(struct run_context *rc, uint32_t n)
{
	rc->ch->ops_in_flight += n;
	rc->ch->span_ops += n;
	rc->issued = true;
}

/* Has the channel as many operations unfinished as it may have? */
static bool ops_full(const struct run_context *rc)
{
	return rc->ch->ops_in_flight >= rc->gpu->config.max_ops_in_flight;
}

static enum cudagpu_run_status run_fault(struct run_context *rc, uint64_t va,
					 enum vgpu_hal_error_cause cause)
{
	rc->fault_va = va;
	rc->cause = cause;
	return RUN_FAULT;
}

/*
 * Resolve a kernel buffer to one contiguous device range. In an address
 * space every 2 MiB page sits at base + va whether it is in VRAM or evicted,
 * so a buffer whose chunks are partly evicted is still contiguous; ranges
 * of 4 KiB host pages are contiguous only within one host buffer. Resolved a
 * window at a time so any size works; bytes are counted per target.
 */
static enum cudagpu_run_status kernel_buffer(struct run_context *rc, uint64_t va, uint64_t bytes,
					     enum cg_access access, cg_deviceptr *device)
{
	struct cg_segment *segs = rc->scratch->a;
	cg_deviceptr next = 0;
	uint64_t done;
	unsigned count, i;

	for (done = 0; done < bytes; done += COMMAND_WINDOW) {
		uint64_t n = bytes - done < COMMAND_WINDOW ? bytes - done : COMMAND_WINDOW;
		int err;

		pthread_mutex_lock(&rc->gpu->memory_lock);
		err = cg_resolve(rc->gpu, rc->ch->as, va + done, n, access, CG_RESOLVE_USER, segs,
		                 CG_WINDOW_SEGMENTS, &count, &rc->fault_va, &rc->cause);
		if (!err)
			cg_count_bytes(rc->ch->as, segs, count, access);
		pthread_mutex_unlock(&rc->gpu->memory_lock);
		if (err)
			return RUN_FAULT;
		for (i = 0; i < count; i++) {
			if (done || i) {
				if (segs[i].device != next) /* not contiguous on the GPU */
					return run_fault(rc, va, VGPU_FAULT_BAD_KERNEL_ARGS);
			} else {
				*device = segs[0].device;
			}
			next = segs[i].device + segs[i].bytes;
		}
	}
	return RUN_DONE;
}

static enum cudagpu_run_status launched(struct run_context *rc, cg_result r)
{
	/* A launch the driver refused is the channel's fault, not the GPU's. */
	if (r != CG_SUCCESS)
		return run_fault(rc, 0, VGPU_FAULT_BAD_KERNEL_ARGS);
	issued(rc, 1);
	return RUN_DONE;
}

static enum cudagpu_run_status launch_random_access(struct run_context *rc, cg_deviceptr table,
						    uint64_t words, uint64_t updates, uint64_t seed)
{
	struct cudagpu *gpu = rc->gpu;
	struct cg_channel *ch = rc->ch;
	const struct cuda_api *api = &gpu->api;
	uint64_t threads = updates < RANDOM_THREADS_MAX ? updates : RANDOM_THREADS_MAX;
	uint64_t per_thread = (updates + threads - 1) / threads;
	cg_deviceptr starts;
	cg_result r;

	threads = (updates + per_thread - 1) / per_thread;
	if (!ch->starts) {
		void *host;

		if (api->cuMemHostAlloc(&host, RANDOM_THREADS_MAX * sizeof(uint64_t),
		                        CG_MEMHOSTALLOC_PORTABLE) != CG_SUCCESS)
			return run_fault(rc, 0, VGPU_FAULT_BAD_KERNEL_ARGS);
		ch->starts = host;
		ch->starts_event = cg_event_get(gpu);
	} else {
		/* The previous launch may still read the start states. */
		api->cuEventSynchronize(ch->starts_event);
	}
	cudagpu_xorshift_starts(seed, per_thread, (uint32_t)threads, ch->starts);
	if (api->cuMemHostGetDevicePointer(&starts, ch->starts, 0) != CG_SUCCESS)
		return run_fault(rc, 0, VGPU_FAULT_BAD_KERNEL_ARGS);
	r = cudagpu_launch_random_access(api, &gpu->kernels, ch->stream, table, words, updates,
	                                 starts, per_thread, (uint32_t)threads);
	if (r == CG_SUCCESS)
		api->cuEventRecord(ch->starts_event, ch->stream);
	return launched(rc, r);
}

static enum cudagpu_run_status run_launch(struct run_context *rc, uint32_t kernel,
					  const uint64_t *args, uint32_t nargs)
{
	static const uint8_t arg_count[] = {
		[VGPU_KERNEL_FILL] = 3, [VGPU_KERNEL_COPY] = 3, [VGPU_KERNEL_STREAM] = 3,
		[VGPU_KERNEL_STENCIL] = 4, [VGPU_KERNEL_RANDOM_ACCESS] = 4,
		[VGPU_KERNEL_CHECKSUM] = 3,
	};
	struct cudagpu *gpu = rc->gpu;
	const struct cuda_api *api = &gpu->api;
	const struct cudagpu_kernels *k = &gpu->kernels;
	cg_stream stream = rc->ch->stream;
	cg_deviceptr a, b;
	enum cudagpu_run_status s;

	if (kernel >= sizeof(arg_count) || !arg_count[kernel] || arg_count[kernel] != nargs)
		return run_fault(rc, 0, VGPU_FAULT_BAD_KERNEL_ARGS);
	switch (kernel) {
	case VGPU_KERNEL_FILL:
		if (!words_ok(args[0], args[1]))
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[0], args[1], CG_WRITE, &a);
		if (s != RUN_DONE)
			return s;
		return launched(rc, cudagpu_launch_fill(api, k, stream, a, args[1] / 8, args[2], 0));
	case VGPU_KERNEL_COPY:
		if (!range_ok(args[0], args[2]) || !range_ok(args[1], args[2]))
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[1], args[2], CG_READ, &b);
		if (s == RUN_DONE)
			s = kernel_buffer(rc, args[0], args[2], CG_WRITE, &a);
		if (s != RUN_DONE)
			return s;
		return launched(rc, cudagpu_launch_copy(api, k, stream, a, b, args[2]));
	case VGPU_KERNEL_STREAM:
		if (!words_ok(args[0], args[1]) || args[2] == 0 ||
		    args[2] > gpu->config.max_stream_passes)
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[0], args[1], CG_READ, &a);
		if (s == RUN_DONE)
			s = kernel_buffer(rc, args[0], args[1], CG_WRITE, &a);
		if (s != RUN_DONE)
			return s;
		return launched(rc, cudagpu_launch_stream(api, k, stream, a, args[1] / 8,
		                                          (uint32_t)args[2]));
	case VGPU_KERNEL_STENCIL: {
		uint64_t width = args[2], height = args[3], total;

		if (width == 0 || width > VGPU_STENCIL_MAX_WIDTH || height == 0 ||
		    height > KERNEL_VA_LIMIT / (width * 4))
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		total = width * 4 * height;
		if (args[0] % 4 || args[1] % 4 || !range_ok(args[0], total) ||
		    !range_ok(args[1], total) ||
		    (args[0] < args[1] + total && args[1] < args[0] + total))
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[0], total, CG_READ, &a);
		if (s == RUN_DONE)
			s = kernel_buffer(rc, args[1], total, CG_WRITE, &b);
		if (s != RUN_DONE)
			return s;
		return launched(rc, cudagpu_launch_stencil(api, k, stream, a, b, (uint32_t)width,
		                                           (uint32_t)height));
	}
	case VGPU_KERNEL_RANDOM_ACCESS:
		if (!words_ok(args[0], args[1]) || args[2] > gpu->config.max_random_updates)
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[0], args[1], CG_WRITE, &a);
		if (s != RUN_DONE || args[2] == 0)
			return s;
		return launch_random_access(rc, a, args[1] / 8, args[2], args[3]);
	case VGPU_KERNEL_CHECKSUM:
		if (!words_ok(args[0], args[1]) || !words_ok(args[2], 8))
			return run_fault(rc, args[0], VGPU_FAULT_BAD_KERNEL_ARGS);
		s = kernel_buffer(rc, args[0], args[1], CG_READ, &a);
		if (s == RUN_DONE)
			s = kernel_buffer(rc, args[2], 8, CG_WRITE, &b);
		if (s != RUN_DONE)
			return s;
		return launched(rc, cudagpu_launch_checksum(api, k, stream, a, args[1] / 8, b));
	}
	return run_fault(rc, 0, VGPU_FAULT_BAD_KERNEL_ARGS);
}

enum vgpu_hal_error_cause cg_function_fault_cause(cg_result r)
{
	switch (r) {
	case CG_ERROR_INVALID_VALUE:
	case CG_ERROR_LAUNCH_OUT_OF_RESOURCES:
		return VGPU_FAULT_BAD_KERNEL_ARGS; /* refused before it ran */
	case CG_ERROR_ILLEGAL_ADDRESS:
	case CG_ERROR_MISALIGNED_ADDRESS:
		return VGPU_FAULT_UNMAPPED;
	case CG_ERROR_LAUNCH_TIMEOUT:
		return VGPU_FAULT_TIMEOUT;
	default:
		return VGPU_FAULT_KERNEL_ERROR;
	}
}

/*
 * Copy a module's variables between the VM's memory and the driver's
 * storage of them, in the channel's stream: in before a launch (all of
 * them), out after it (the .global ones: a kernel cannot store to .const).
 */
static enum cudagpu_run_status copy_variables(struct run_context *rc,
					      const struct cg_user_module *um, bool in)
{
	for (uint32_t i = 0; i < um->variable_count; i++) {
		const struct ptx_var_info *v = ptx_module_var(um->ptx, i);
		enum cudagpu_run_status s;
		cg_deviceptr vm;
		cg_result r;

		if (!v->size || (!in && v->space != PTX_VAR_GLOBAL))
			continue;
		s = kernel_buffer(rc, um->variable_va[i], v->size, in ? CG_READ : CG_WRITE, &vm);
		if (s != RUN_DONE)
			return s;
		r = in ? rc->gpu->api.cuMemcpyAsync(um->globals[i], vm, v->size, rc->ch->stream)
		       : rc->gpu->api.cuMemcpyAsync(vm, um->globals[i], v->size, rc->ch->stream);
		if (r != CG_SUCCESS)
			return run_fault(rc, um->variable_va[i], cg_function_fault_cause(r));
		issued(rc, 1);
	}
	return RUN_DONE;
}

#define LAUNCH_PARAM_END ((void *)0x00)            /* CU_LAUNCH_PARAM_END */
#define LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01) /* CU_LAUNCH_PARAM_BUFFER_POINTER */
#define LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)    /* CU_LAUNCH_PARAM_BUFFER_SIZE */

/*
 * LAUNCH_FUNCTION (vgpu/abi/commands.h), in the worker: a function of a
 * module the VM bound, on the channel's stream with the parameter block as
 * the guest wrote it (its pointers are the VM's addresses, which the
 * worker's identity range makes the driver's). What the GPU cannot run is
 * a bad launch; what the kernel does wrong shows as a context fault.
 */
static enum cudagpu_run_status run_launch_function(struct run_context *rc, const uint32_t *args,
						   uint32_t nargs, uint64_t command_va)
{
	struct cudagpu *gpu = rc->gpu;
	struct cg_channel *ch = rc->ch;
	const struct cg_user_module *um;
	uint64_t params[VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES / 8 + 1];
	uint32_t grid[3], block[3], module, function, shared, param_bytes, i;
	uint64_t threads;
	size_t size;
	void *extra[5];
	enum cudagpu_run_status s;
	cg_result r;

	if (nargs < VGPU_LAUNCH_FUNCTION_FIXED_WORDS)
		return run_fault(rc, command_va, VGPU_FAULT_BAD_KERNEL_ARGS);
	module = le32toh(args[0]);
	function = le32toh(args[1]);
	for (i = 0; i < 3; i++) {
		grid[i] = le32toh(args[2 + i]);
		block[i] = le32toh(args[5 + i]);
	}
	shared = le32toh(args[8]);
	param_bytes = le32toh(args[9]);
	if (param_bytes > VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES ||
	    nargs != VGPU_LAUNCH_FUNCTION_FIXED_WORDS + (param_bytes + 3) / 4)
		return run_fault(rc, command_va, VGPU_FAULT_BAD_KERNEL_ARGS);
	um = module < CG_MAX_MODULES ? ch->as->modules[module] : NULL;
	threads = (uint64_t)block[0] * block[1] * block[2];
	if (!um || function >= um->function_count ||
	    param_bytes != ptx_module_entry(um->ptx, function)->param_bytes ||
	    !grid[0] || !grid[1] || !grid[2] || grid[0] > 0x7fffffffu || grid[1] > 65535u ||
	    grid[2] > 65535u || !threads || threads > CG_MAX_BLOCK_THREADS || block[2] > 64)
		return run_fault(rc, command_va, VGPU_FAULT_BAD_KERNEL_ARGS);
	s = copy_variables(rc, um, true);
	if (s != RUN_DONE)
		return s;
	memcpy(params, args + VGPU_LAUNCH_FUNCTION_FIXED_WORDS, param_bytes);
	size = param_bytes;
	extra[0] = LAUNCH_PARAM_BUFFER_POINTER;
	extra[1] = params;
	extra[2] = LAUNCH_PARAM_BUFFER_SIZE;
	extra[3] = &size;
	extra[4] = LAUNCH_PARAM_END;
	r = gpu->api.cuLaunchKernel(um->functions[function], grid[0], grid[1], grid[2], block[0],
	                            block[1], block[2], shared, ch->stream, NULL, extra);
	if (r != CG_SUCCESS)
		return run_fault(rc, r == CG_ERROR_INVALID_VALUE ? command_va : 0,
		                 cg_function_fault_cause(r));
	issued(rc, 1);
	s = copy_variables(rc, um, false);
	if (s != RUN_DONE)
		return s;
	/* The watchdog's mark: the channel's last kernel, and since when. */
	if (!ch->function_event)
		ch->function_event = cg_event_get(gpu);
	if (ch->function_event && !ch->function_since_ns)
		ch->function_since_ns = cg_now_ns();
	if (ch->function_event)
		gpu->api.cuEventRecord(ch->function_event, ch->stream);
	return RUN_DONE;
}

bool cg_function_watchdog_expired(struct cudagpu *gpu)
{
	uint64_t limit_ns = (uint64_t)gpu->config.function_watchdog_ms * 1000000u, now;
	bool expired = false;

	if (!limit_ns)
		return false;
	cg_pfifo_lock(gpu);
	now = cg_now_ns();
	for (uint32_t id = 0; id < gpu->config.max_channels && !expired; id++) {
		struct cg_channel *ch = gpu->channels[id];

		if (!ch || !ch->function_since_ns)
			continue;
		if (gpu->api.cuEventQuery(ch->function_event) == CG_ERROR_NOT_READY)
			expired = now - ch->function_since_ns >= limit_ns;
		else
			ch->function_since_ns = 0; /* done (or the context's fault) */
	}
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return expired;
}

/* Resolve one window of a COPY/MEMSET range (memory_lock taken here). */
static int resolve_window(struct run_context *rc, uint64_t va, uint64_t bytes,
                          enum cg_access access, struct cg_segment *segs, unsigned *count)
{
	int err;

	pthread_mutex_lock(&rc->gpu->memory_lock);
	err = cg_resolve(rc->gpu, rc->ch->as, va, bytes, access, CG_RESOLVE_USER, segs,
	                 CG_WINDOW_SEGMENTS, count, &rc->fault_va, &rc->cause);
	if (!err)
		cg_count_bytes(rc->ch->as, segs, *count, access);
	pthread_mutex_unlock(&rc->gpu->memory_lock);
	return err;
}

/* Both ranges are checked whole before anything is issued. */
static enum cudagpu_run_status check_ranges(struct run_context *rc, uint64_t dst, uint64_t src,
					    uint64_t bytes, bool has_src)
{
	uint64_t done;
	unsigned count;

	for (done = 0; done < bytes; done += COMMAND_WINDOW) {
		uint64_t n = bytes - done < COMMAND_WINDOW ? bytes - done : COMMAND_WINDOW;
		int err = 0;

		pthread_mutex_lock(&rc->gpu->memory_lock);
		if (has_src)
			err = cg_resolve(rc->gpu, rc->ch->as, src + done, n, CG_READ, CG_RESOLVE_USER,
			                 rc->scratch->a, CG_WINDOW_SEGMENTS, &count, &rc->fault_va,
			                 &rc->cause);
		if (!err)
			err = cg_resolve(rc->gpu, rc->ch->as, dst + done, n, CG_WRITE, CG_RESOLVE_USER,
			                 rc->scratch->b, CG_WINDOW_SEGMENTS, &count, &rc->fault_va,
			                 &rc->cause);
		pthread_mutex_unlock(&rc->gpu->memory_lock);
		if (err)
			return RUN_FAULT;
	}
	return RUN_DONE;
}

/* Before each 4 MiB window of a COPY/MEMSET: false (keeping done) when the
 * turn's budget is spent or the channel's operations in flight are at
 * their bound; the command's first window this turn always goes (run_entry
 * checked the bound before it). */
static bool window_allowed(struct run_context *rc, uint64_t done, bool first)
{
	if (!first && (!rc->budget || ops_full(rc))) {
		rc->throttled = ops_full(rc);
		rc->ch->command_done = done;
		return false;
	}
	if (rc->budget)
		rc->budget--;
	return true;
}

static enum cudagpu_run_status run_copy(struct run_context *rc, uint64_t dst, uint64_t src,
					uint64_t bytes)
{
	const struct cuda_api *api = &rc->gpu->api;
	uint64_t done = rc->ch->command_done, start = done;

	if (!bytes)
		return RUN_DONE;
	if (dst + bytes < dst || src + bytes < src)
		return run_fault(rc, dst, VGPU_FAULT_UNMAPPED);
	if (!done && check_ranges(rc, dst, src, bytes, true) != RUN_DONE)
		return RUN_FAULT;
	for (; done < bytes; done += COMMAND_WINDOW) {
		uint64_t n = bytes - done < COMMAND_WINDOW ? bytes - done : COMMAND_WINDOW;
		unsigned ns, nd, i = 0, j = 0;
		uint64_t si = 0, dj = 0;
		cg_result r = CG_SUCCESS;

		if (!window_allowed(rc, done, done == start))
			return RUN_YIELDED;

		if (resolve_window(rc, src + done, n, CG_READ, rc->scratch->a, &ns) ||
		    resolve_window(rc, dst + done, n, CG_WRITE, rc->scratch->b, &nd))
			return RUN_FAULT;
		while (r == CG_SUCCESS && i < ns && j < nd) {
			struct cg_segment *s = &rc->scratch->a[i], *d = &rc->scratch->b[j];
			uint64_t piece = s->bytes - si < d->bytes - dj ? s->bytes - si : d->bytes - dj;

			r = api->cuMemcpyAsync(d->device + dj, s->device + si, piece, rc->ch->stream);
			if (r == CG_SUCCESS)
				issued(rc, 1);
			si += piece;
			dj += piece;
			if (si == s->bytes) {
				i++;
				si = 0;
			}
			if (dj == d->bytes) {
				j++;
				dj = 0;
			}
		}
		if (r != CG_SUCCESS)
			return run_fault(rc, dst + done, VGPU_FAULT_BAD_COMMAND);
	}
	return RUN_DONE;
}

static enum cudagpu_run_status run_memset(struct run_context *rc, uint64_t dst, uint32_t pattern,
					  uint64_t bytes)
{
	const struct cuda_api *api = &rc->gpu->api;
	uint64_t done = rc->ch->command_done, start = done, offset = done;

	if (!bytes)
		return RUN_DONE;
	if (dst + bytes < dst)
		return run_fault(rc, dst, VGPU_FAULT_UNMAPPED);
	if (!done && check_ranges(rc, dst, 0, bytes, false) != RUN_DONE)
		return RUN_FAULT;
	for (; done < bytes; done += COMMAND_WINDOW) {
		uint64_t n = bytes - done < COMMAND_WINDOW ? bytes - done : COMMAND_WINDOW;
		unsigned count, i;

		if (!window_allowed(rc, done, done == start))
			return RUN_YIELDED;

		if (resolve_window(rc, dst + done, n, CG_WRITE, rc->scratch->b, &count))
			return RUN_FAULT;
		for (i = 0; i < count; i++) {
			cg_result r = cudagpu_launch_memset_pattern(api, &rc->gpu->kernels,
			                                            rc->ch->stream,
			                                            rc->scratch->b[i].device,
			                                            rc->scratch->b[i].bytes, pattern,
			                                            (uint32_t)(offset % 4));

			if (r != CG_SUCCESS)
				return run_fault(rc, dst + offset, VGPU_FAULT_BAD_COMMAND);
			issued(rc, 1);
			offset += rc->scratch->b[i].bytes;
		}
	}
	return RUN_DONE;
}

/* Read the 64-bit semaphore at va for an ACQUIRE: 1 satisfied, 0 not yet,
 * RUN_FAULT-style -1 on a fault. */
static int semaphore_reached(struct run_context *rc, uint64_t va, uint64_t value)
{
	struct cg_segment seg;
	unsigned count;
	uint64_t current = 0;
	cg_result r = CG_SUCCESS;
	int err;

	pthread_mutex_lock(&rc->gpu->memory_lock);
	err = cg_resolve(rc->gpu, rc->ch->as, va, 8, CG_READ, CG_RESOLVE_USER, &seg, 1, &count,
	                 &rc->fault_va, &rc->cause);
	if (!err && seg.cpu)
		current = __atomic_load_n((uint64_t *)seg.cpu, __ATOMIC_ACQUIRE);
	else if (!err)
		r = rc->gpu->api.cuMemcpyDtoH(&current, seg.device, 8);
	pthread_mutex_unlock(&rc->gpu->memory_lock);
	if (err || r != CG_SUCCESS)
		return -1;
	return le64toh(current) >= value;
}

/* An acquire that cannot complete yet yields the turn, until it has waited
 * config.acquire_timeout_ms: then the watchdog kills the channel. */
static enum cudagpu_run_status acquire_waits(struct run_context *rc, uint64_t command_va)
{
	struct cg_channel *ch = rc->ch;
	uint64_t limit_ns = (uint64_t)rc->gpu->config.acquire_timeout_ms * 1000000u;
	uint64_t now = cg_now_ns();

	if (!ch->acquire_since_ns)
		ch->acquire_since_ns = now;
	else if (limit_ns && now - ch->acquire_since_ns >= limit_ns)
		return run_fault(rc, command_va, VGPU_FAULT_TIMEOUT);
	return RUN_BLOCKED;
}

static enum cudagpu_run_status run_command(struct run_context *rc, uint32_t header,
					   const uint32_t *args, uint64_t command_va)
{
	struct cudagpu *gpu = rc->gpu;
	struct cg_channel *ch = rc->ch;
	unsigned opcode = VGPU_COMMAND_OPCODE(header);
	unsigned flags = VGPU_COMMAND_FLAGS(header);
	unsigned nargs = VGPU_COMMAND_ARG_WORDS(header);
	cg_deviceptr device;
	uint64_t va, value;
	enum cudagpu_run_status s;
	int reached;

	switch (opcode) {
	case VGPU_CMD_NOP:
		return flags ? run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND) : RUN_DONE;

	case VGPU_CMD_SEMAPHORE_RELEASE:
		if (nargs != VGPU_SEMAPHORE_ARG_WORDS || (flags & ~VGPU_SEMAPHORE_RELEASE_FLAGS))
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		va = arg64(args, 0);
		value = arg64(args, 2);
		if (va % ((flags & VGPU_SEMAPHORE_TIMESTAMP) ? 16 : 8))
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		s = kernel_buffer(rc, va, (flags & VGPU_SEMAPHORE_TIMESTAMP) ? 16 : 8, CG_WRITE,
		                  &device);
		if (s != RUN_DONE)
			return s == RUN_FAULT && rc->cause == VGPU_FAULT_BAD_KERNEL_ARGS
			               ? run_fault(rc, va, VGPU_FAULT_BAD_COMMAND)
			               : s;
		if (flags & VGPU_SEMAPHORE_TIMESTAMP) {
			/* a one-thread kernel in the channel's stream: it runs
			 * after the channel's earlier work and reads the GPU's
			 * global timer (nanoseconds) */
			if (cudagpu_launch_semaphore_timestamp(&gpu->api, &gpu->kernels, ch->stream,
			                                       device, value) != CG_SUCCESS)
				return run_fault(rc, va, VGPU_FAULT_BAD_COMMAND);
		} else if (gpu->api.cuStreamWriteValue64(ch->stream, device, value,
		                                         CG_STREAM_WRITE_VALUE_DEFAULT) !=
		           CG_SUCCESS) {
			return run_fault(rc, va, VGPU_FAULT_BAD_COMMAND);
		}
		issued(rc, 1);
		if (flags & VGPU_SEMAPHORE_INTERRUPT) {
			struct cg_completion *done = calloc(1, sizeof(*done));

			if (done) {
				done->type = CG_DONE_FENCE;
				done->stream = ch->stream;
				done->end = cg_event_get(gpu);
				done->channel = ch;
				done->value = value;
				done->address = va;
				if (done->end)
					gpu->api.cuEventRecord(done->end, ch->stream);
				cg_completion_queue(gpu, done);
			}
		}
		return RUN_DONE;

	case VGPU_CMD_SEMAPHORE_ACQUIRE:
		if (nargs != VGPU_SEMAPHORE_ARG_WORDS || flags)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		va = arg64(args, 0);
		if (va % 8)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		if (!ch->acquire_event) {
			/* Earlier commands of the channel must finish first. */
			ch->acquire_event = cg_event_get(gpu);
			if (!ch->acquire_event ||
			    gpu->api.cuEventRecord(ch->acquire_event, ch->stream) != CG_SUCCESS)
				return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		}
		if (gpu->api.cuEventQuery(ch->acquire_event) != CG_SUCCESS)
			return acquire_waits(rc, command_va);
		reached = semaphore_reached(rc, va, arg64(args, 2));
		if (reached < 0)
			return RUN_FAULT;
		if (!reached)
			return acquire_waits(rc, command_va);
		cg_event_put(gpu, ch->acquire_event);
		ch->acquire_event = NULL;
		return RUN_DONE;

	case VGPU_CMD_COPY:
		if (nargs != VGPU_COPY_ARG_WORDS || flags)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		return run_copy(rc, arg64(args, 0), arg64(args, 2), arg64(args, 4));

	case VGPU_CMD_MEMSET:
		if (nargs != VGPU_MEMSET_ARG_WORDS || flags)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		return run_memset(rc, arg64(args, 0), le32toh(args[2]),
		                  (uint64_t)le32toh(args[3]) | (uint64_t)le32toh(args[4]) << 32);

	case VGPU_CMD_LAUNCH: {
		uint64_t kernel_args[VGPU_KERNEL_MAX_ARGS];
		uint32_t count, i;

		if (flags || nargs < 1 || (nargs - 1) % 2 ||
		    (nargs - 1) / 2 > VGPU_KERNEL_MAX_ARGS)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		count = (nargs - 1) / 2;
		for (i = 0; i < count; i++)
			kernel_args[i] = arg64(args, 1 + 2 * i);
		return run_launch(rc, le32toh(args[0]), kernel_args, count);
	}

	case VGPU_CMD_LAUNCH_FUNCTION:
		/* Only a worker binds modules: elsewhere no module exists. */
		if (flags)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		return run_launch_function(rc, args, nargs, command_va);

	default: /* PRIV_FENCE included: privileged entries never reach here */
		return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
	}
}

/* Run the channel's entry from where it stopped, for one turn: until the
 * entry is done, an acquire waits, or the turn's budget is spent (the first
 * command of a turn always runs). */
static enum cudagpu_run_status run_entry(struct run_context *rc)
{
	struct cg_channel *ch = rc->ch;
	bool first = true;

	while (ch->position < ch->word_count) {
		uint32_t header = le32toh(ch->words[ch->position]);
		uint32_t nargs = VGPU_COMMAND_ARG_WORDS(header);
		uint64_t command_va = ch->pushbuffer_va + (uint64_t)ch->position * 4;
		enum cudagpu_run_status s;

		if (ops_full(rc)) {
			/* the GPU has enough of this channel's work: no more
			 * until some of it is done (the first command too) */
			rc->throttled = true;
			return RUN_YIELDED;
		}
		if (!first && !rc->budget)
			return RUN_YIELDED;
		first = false;
		if (nargs > ch->word_count - ch->position - 1)
			return run_fault(rc, command_va, VGPU_FAULT_BAD_COMMAND);
		s = run_command(rc, header, ch->words + ch->position + 1, command_va);
		if (s != RUN_DONE)
			return s;
		if (rc->budget)
			rc->budget--;
		ch->position += 1 + nargs;
		ch->command_done = 0;
		ch->acquire_since_ns = 0;
	}
	return RUN_DONE;
}

/* Copy the entry's pushbuffer out of GPU-visible memory. */
static enum cudagpu_run_status load_pushbuffer(struct run_context *rc, uint64_t va, uint32_t bytes)
{
	struct cg_channel *ch = rc->ch;
	struct cudagpu *gpu = rc->gpu;
	unsigned count, i;
	uint64_t done = 0;
	cg_result r = CG_SUCCESS;
	int err;

	pthread_mutex_lock(&gpu->memory_lock);
	err = cg_resolve(gpu, ch->as, va, bytes, CG_READ, CG_RESOLVE_USER, rc->scratch->a,
	                 CG_WINDOW_SEGMENTS, &count, &rc->fault_va, &rc->cause);
	for (i = 0; !err && r == CG_SUCCESS && i < count; i++) {
		struct cg_segment *s = &rc->scratch->a[i];

		if (s->cpu)
			memcpy((char *)ch->words + done, s->cpu, s->bytes);
		else
			r = gpu->api.cuMemcpyDtoH((char *)ch->words + done, s->device, s->bytes);
		done += s->bytes;
	}
	if (!err)
		cg_count_bytes(ch->as, rc->scratch->a, count, CG_READ);
	pthread_mutex_unlock(&gpu->memory_lock);
	if (err == -E2BIG || r != CG_SUCCESS)
		return run_fault(rc, va, VGPU_FAULT_BAD_COMMAND);
	if (err)
		return RUN_FAULT;
	ch->word_count = bytes / 4;
	ch->position = 0;
	ch->command_done = 0;
	ch->acquire_since_ns = 0;
	ch->pushbuffer_va = va;
	return RUN_DONE;
}

/*
 * The end of a run of entries: time it. The entries a turn issues back to
 * back share one pair of events (recorded before the first and after the
 * last): an event and a completion per entry cost as much as the launch
 * they time (issue: launch overhead).
 */
static void span_finished(struct run_context *rc)
{
	struct cudagpu *gpu = rc->gpu;
	struct cg_channel *ch = rc->ch;
	struct cg_completion *done;

	if (!ch->entry_start && !ch->span_entries && !ch->span_ops)
		return;
	done = calloc(1, sizeof(*done));
	if (!done) {
		/* Untimed, and counted as finished (out of memory). */
		ch->entries_in_flight -= ch->span_entries;
		ch->ops_in_flight -= ch->span_ops;
		ch->span_entries = 0;
		ch->span_ops = 0;
		cg_event_put(gpu, ch->entry_start);
		ch->entry_start = NULL;
		return;
	}
	done->type = CG_DONE_TIMING;
	done->stream = ch->stream;
	done->channel = ch;
	done->as = ch->as;
	done->start = ch->entry_start;
	done->entries = ch->span_entries;
	done->ops = ch->span_ops;
	ch->entry_start = NULL;
	ch->span_entries = 0;
	ch->span_ops = 0;
	done->end = cg_event_get(gpu);
	if (done->end)
		gpu->api.cuEventRecord(done->end, ch->stream);
	cg_completion_queue(gpu, done);
}

static void priv_entry(struct cudagpu *gpu, struct cg_channel *ch, uint64_t ticket)
{
	struct cg_completion *done;

	if (ticket == CG_PRIV_NOP_TICKET)
		return;
	done = calloc(1, sizeof(*done));
	if (!done)
		return;
	done->type = CG_DONE_PRIV_FENCE;
	done->stream = ch->stream;
	done->channel = ch;
	done->value = ticket;
	done->end = cg_event_get(gpu);
	if (done->end)
		gpu->api.cuEventRecord(done->end, ch->stream);
	cg_completion_queue(gpu, done);
}

/* Is ring slot a NOP: a privileged NOP or an empty user entry? */
static bool slot_is_nop(struct cg_channel *ch, uint32_t slot)
{
	struct vgpu_gpfifo_entry entry;

	if (ch->priv_ticket[slot])
		return ch->priv_ticket[slot] == CG_PRIV_NOP_TICKET;
	memcpy(&entry, (char *)cg_gpfifo_of(ch) + (size_t)slot * VGPU_GPFIFO_ENTRY_BYTES,
	       sizeof(entry));
	return !entry.length_bytes && !entry.flags;
}

/*
 * Fetch the channel's next entry (pfifo_lock held). NOP entries are
 * consumed in a run, as a GPU's front end does: they need no engine, and the
 * NOP fill that resumes a channel (docs/DESIGN.md §3.4) is a ring of them.
 * Returns 0 when an entry with work is ready in *entry (its privileged
 * ticket in *ticket), 1 when there was nothing (more) to fetch, -1 when the
 * channel was killed.
 */
static int fetch_entry(struct cudagpu *gpu, struct cg_channel *ch,
                       struct vgpu_gpfifo_entry *entry, uint64_t *ticket)
{
	uint32_t gp_put, slot;

	gp_put = le32toh(__atomic_load_n(cg_control_word(ch, VGPU_CONTROL_GP_PUT),
	                                 __ATOMIC_ACQUIRE));
	if (gp_put >= ch->entries) {
		cg_channel_kill(gpu, ch, 0, VGPU_FAULT_BAD_COMMAND);
		return -1;
	}
	while (gp_put != ch->gp_get && slot_is_nop(ch, ch->gp_get)) {
		ch->priv_ticket[ch->gp_get] = 0;
		ch->gp_get = (ch->gp_get + 1) & (ch->entries - 1);
	}
	cg_publish_gp_get(ch);
	if (gp_put == ch->gp_get)
		return 1;
	slot = ch->gp_get;
	memcpy(entry, (char *)cg_gpfifo_of(ch) + (size_t)slot * VGPU_GPFIFO_ENTRY_BYTES,
	       sizeof(*entry));
	ch->gp_get = (slot + 1) & (ch->entries - 1);
	cg_publish_gp_get(ch);
	*ticket = ch->priv_ticket[slot];
	ch->priv_ticket[slot] = 0;
	return 0;
}

/*
 * Start the channel's next user entry (pfifo_lock held): false when there
 * is none, or it was a privileged entry or a bad one (*progress says
 * whether anything happened).
 */
static bool start_entry(struct run_context *rc, bool *progress)
{
	struct cudagpu *gpu = rc->gpu;
	struct cg_channel *ch = rc->ch;
	struct vgpu_gpfifo_entry entry;
	uint32_t gp_get_before = ch->gp_get;
	uint64_t ticket;
	int fetched;

	if (!ch->fetch)
		return false;
	if (ch->entries_in_flight >= gpu->config.max_entries_in_flight || ops_full(rc)) {
		/* Wait for the GPU: its completions free room. */
		span_finished(rc);
		return false;
	}
	fetched = fetch_entry(gpu, ch, &entry, &ticket);
	if (fetched) {
		*progress |= fetched < 0 || ch->gp_get != gp_get_before;
		return false;
	}
	*progress = true;
	gpu->current_channel = (int32_t)ch->id;
	if (ticket) {
		/* Behind the user entries before it, in stream order. */
		span_finished(rc);
		priv_entry(gpu, ch, ticket);
		return false;
	}
	entry.pushbuffer_va = le64toh(entry.pushbuffer_va);
	entry.length_bytes = le32toh(entry.length_bytes);
	if (le32toh(entry.flags) || entry.length_bytes % 4 ||
	    entry.length_bytes > VGPU_PUSHBUFFER_MAX_BYTES) {
		span_finished(rc);
		cg_channel_kill(gpu, ch, entry.pushbuffer_va, VGPU_FAULT_BAD_COMMAND);
		return false;
	}
	if (load_pushbuffer(rc, entry.pushbuffer_va, entry.length_bytes) != RUN_DONE) {
		span_finished(rc);
		cg_channel_kill(gpu, ch, rc->fault_va, rc->cause);
		return false;
	}
	ch->running = true;
	ch->entries_in_flight++;
	ch->span_entries++;
	if (!ch->entry_start) {
		ch->entry_start = cg_event_get(gpu);
		if (ch->entry_start)
			gpu->api.cuEventRecord(ch->entry_start, ch->stream);
	}
	return true;
}

/*
 * One turn of a channel (pfifo_lock held): continue its blocked entry, then
 * fetch and issue the entries after it until the turn's budget
 * (config.timeslice_commands units) is spent, an entry blocks, or the ring
 * is empty. True if it made progress.
 */
bool cg_channel_turn(struct cudagpu *gpu, struct cg_channel *ch,
                     struct cg_issue_scratch *scratch)
{
	struct run_context rc = {
		.gpu = gpu, .ch = ch, .scratch = scratch,
		.budget = gpu->config.timeslice_commands,
	};
	bool progress = false;
	enum cudagpu_run_status s;

	if (ch->error)
		return false;
	if (ch->running && !ch->entry_start && !ops_full(&rc)) {
		/* an entry goes on after a closed span: a new one */
		ch->entry_start = cg_event_get(gpu);
		if (ch->entry_start)
			gpu->api.cuEventRecord(ch->entry_start, ch->stream);
	}
	for (;;) {
		if (!ch->running && !start_entry(&rc, &progress))
			break;
		s = run_entry(&rc);
		if (s == RUN_FAULT) {
			ch->running = false;
			span_finished(&rc);
			cg_channel_kill(gpu, ch, rc.fault_va, rc.cause);
			return true;
		}
		if (s == RUN_BLOCKED)
			return progress; /* the span goes on when the entry does */
		if (s == RUN_YIELDED && rc.throttled) {
			/* its completion must be seen for room to come */
			span_finished(&rc);
			return progress || rc.issued;
		}
		progress = true;
		if (s == RUN_YIELDED)
			return true;
		ch->running = false;
		if (!rc.budget)
			break;
	}
	span_finished(&rc);
	return progress;
}
