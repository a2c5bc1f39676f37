// SPDX-License-Identifier: MIT
/*
 * workloads.c - stream, stencil, gups, alloc-leak, soak, throttle and the
 * hostile escape, copy-flood, never-release, hog and stall on a vGPU, verified
 * by checksum (see vgpu_workloads.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"
#include "vgpu_workloads.h"
#include "device_internal.h"
#include "workload_reference.h"

#define STENCIL_WIDTH 1024u /* cells per row: one 4 KiB row */
#define STENCIL_ROW_BYTES (STENCIL_WIDTH * 4u)
#define HOLD_STEP_NS 20000000ull
/* ALLOC answered BUSY: retry this often, waiting 10 ms, 20 ms, ... 320 ms. */
#define ALLOC_RETRIES 20
#define ALLOC_RETRY_NS 10000000ull

struct soak;

struct run {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
	const struct vgpu_workload_options *options;
	struct vgpu_workload_result *result;
	struct vgpu_guest_buffer *buffers;
	uint64_t *data_bytes; /* bytes of each buffer the workload uses */
	uint64_t count;
	uint64_t capacity;
	uint64_t held;
	uint64_t start_ns;
	uint64_t phase_start_ns; /* iterations (or the hold) began */
	uint64_t verify_ns;
	/* escape: the buffer attempt (a) ran over and the STREAM passes it
	 * took of it (0 or 1). */
	uint64_t escape_stream_index;
	uint64_t escape_stream_passes;
	struct soak *soak; /* soak: what each buffer must hold */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

static bool stopped(const struct run *run)
{
	return run->options->stop && *run->options->stop;
}

/* End the run with err and a message; returns err. */
static int fail(struct run *run, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct run *run, int err, const char *fmt, ...)
{
	va_list args;

	if (run->result->error)
		return run->result->error; /* keep the first */
	va_start(args, fmt);
	vsnprintf(run->result->message, sizeof(run->result->message), fmt, args);
	va_end(args);
	run->result->error = err;
	return err;
}

static int fail_device(struct run *run, int err)
{
	return fail(run, err, "%s", vgpu_device_last_error(run->dev));
}

static int fail_channel(struct run *run, int err, const char *doing)
{
	if (err == -EIO)
		return fail(run, err, "%s: the GPU killed the channel (a fault or a bad command)",
		            doing);
	if (err == -ETIMEDOUT)
		return fail(run, err, "%s: the GPU did not finish in time", doing);
	return fail(run, err, "%s: %s", doing, vgpu_guest_explain(err));
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */

static int allocate(struct run *run, uint64_t bytes)
{
	struct vgpu_guest_buffer buffer;
	uint64_t start, elapsed;
	unsigned int attempt;
	int ret;

	if (run->count == run->capacity) {
		uint64_t capacity = run->capacity ? run->capacity * 2 : 16;
		struct vgpu_guest_buffer *buffers = realloc(run->buffers, capacity * sizeof(*buffers));
		uint64_t *data_bytes;

		if (!buffers)
			return fail(run, -ENOMEM, "out of host memory");
		run->buffers = buffers;
		data_bytes = realloc(run->data_bytes, capacity * sizeof(*data_bytes));
		if (!data_bytes)
			return fail(run, -ENOMEM, "out of host memory");
		run->data_bytes = data_bytes;
		run->capacity = capacity;
	}
	/* BUSY (-EAGAIN) is transient: the backend changed nothing; retry. */
	for (attempt = 0;; attempt++) {
		start = now_ns();
		ret = vgpu_buffer_alloc(run->dev, bytes, run->options->priority, &buffer);
		elapsed = now_ns() - start;
		if (ret != -EAGAIN || attempt == ALLOC_RETRIES || stopped(run))
			break;
		run->result->alloc_retries++;
		sleep_ns(ALLOC_RETRY_NS << (attempt < 5 ? attempt : 5));
	}
	if (ret)
		return ret; /* the caller decides (alloc-leak carries on at -ENOMEM) */
	run->result->alloc_ns_total += elapsed;
	if (elapsed > run->result->alloc_ns_max)
		run->result->alloc_ns_max = elapsed;
	run->buffers[run->count] = buffer;
	run->data_bytes[run->count] = bytes;
	run->count++;
	run->held += buffer.bytes;
	run->result->buffers = run->count;
	if (run->held > run->result->bytes_allocated)
		run->result->bytes_allocated = run->held;
	return 0;
}

static void free_all(struct run *run)
{
	while (run->count) {
		run->count--;
		if (vgpu_buffer_free(run->dev, &run->buffers[run->count]))
			fail_device(run, -EIO);
		run->held -= run->buffers[run->count].bytes;
	}
}

/* ------------------------------------------------------------------------ */
/* Submission                                                               */

static int submit_words(struct run *run, uint32_t *words, uint32_t count, uint32_t flags,
                        uint64_t *fence)
{
	int ret = vgpu_channel_submit(run->ch, count, flags, fence);

	(void)words;
	if (ret)
		return fail_channel(run, ret, "submitting work");
	run->result->submissions++;
	return 0;
}

static int begin(struct run *run, uint32_t **words)
{
	int ret = vgpu_channel_begin(run->ch, VGPU_COMMAND_MAX_WORDS, words);

	if (ret)
		return fail_channel(run, ret, "waiting for pushbuffer space");
	return 0;
}

static int fill(struct run *run, uint64_t index, uint64_t seed, uint64_t *fence)
{
	uint32_t *words;
	int ret = begin(run, &words);

	if (ret)
		return ret;
	return submit_words(run, words,
	                    vgpu_push_launch_fill(words, run->buffers[index].gpu_va,
	                                          run->data_bytes[index], seed),
	                    VGPU_SUBMIT_INTERRUPT, fence);
}

static int wait_fence(struct run *run, uint64_t fence)
{
	int ret = vgpu_channel_wait(run->ch, fence, -1);

	if (ret)
		return fail_channel(run, ret, "waiting for the GPU");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Verification                                                             */

/* expected[i] for buffers first..first+count-1. */
typedef int (*expected_fn)(struct run *run, uint64_t index, uint64_t *checksum);

static int verify(struct run *run, expected_fn expected, uint64_t first, uint64_t count,
                  uint64_t step)
{
	uint32_t slots = vgpu_channel_scratch_count(run->ch);
	uint64_t start = now_ns(), done = 0, fence = 0, i;
	int ret = 0;

	if (run->options->before_verify)
		run->options->before_verify(run->options->hook_arg, run->dev, run->buffers,
		                            run->count);

	while (done < count) {
		uint64_t batch = count - done < slots ? count - done : slots;

		for (i = 0; i < batch; i++) {
			uint64_t index = first + (done + i) * step;
			uint32_t *words;

			ret = begin(run, &words);
			if (ret)
				goto out;
			ret = submit_words(run, words,
			                   vgpu_push_launch_checksum(
			                           words, run->buffers[index].gpu_va,
			                           run->data_bytes[index],
			                           vgpu_channel_scratch_va(run->ch, (uint32_t)i)),
			                   i + 1 == batch ? VGPU_SUBMIT_INTERRUPT : 0, &fence);
			if (ret)
				goto out;
		}
		ret = wait_fence(run, fence);
		if (ret)
			goto out;
		for (i = 0; i < batch; i++) {
			uint64_t index = first + (done + i) * step, want;
			uint64_t got = vgpu_channel_read_scratch(run->ch, (uint32_t)i);

			ret = expected(run, index, &want);
			if (ret) {
				fail(run, ret, "computing the reference checksum: %s", strerror(-ret));
				goto out;
			}
			run->result->checksums++;
			if (got != want) {
				if (!run->result->mismatches)
					snprintf(run->result->message, sizeof(run->result->message),
					         "buffer %" PRIu64 " (GPU VA 0x%" PRIx64 ", %" PRIu64
					         " bytes): checksum 0x%016" PRIx64
					         ", expected 0x%016" PRIx64,
					         index, run->buffers[index].gpu_va,
					         run->data_bytes[index], got, want);
				run->result->mismatches++;
			}
		}
		done += batch;
	}
out:
	run->verify_ns += now_ns() - start;
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Iterations                                                               */

/* Whether another iteration should run after done ones: always a first one
 * (unless stopped), then until the count or the duration (measured from the
 * first iteration, after allocation) is reached. */
static bool more_iterations(const struct run *run, uint64_t done)
{
	const struct vgpu_workload_options *o = run->options;

	if (stopped(run))
		return false;
	if (done == 0)
		return true; /* at least one, whatever the duration */
	if (o->iterations && done >= o->iterations)
		return false;
	if (o->duration_ns && now_ns() - run->phase_start_ns >= o->duration_ns)
		return false;
	return o->iterations || o->duration_ns;
}

/* One iteration: submit(run, buffer, iteration) for every buffer index
 * first, first + step, ...; the last submission carries an interrupt fence. */
typedef uint32_t (*encode_fn)(struct run *run, uint32_t *words, uint64_t index,
                              uint64_t iteration);

static int iterate(struct run *run, encode_fn encode, uint64_t first, uint64_t step)
{
	uint64_t previous = 0, fence = 0, iteration = 0, index;
	int ret;

	run->phase_start_ns = now_ns();
	while (more_iterations(run, iteration)) {
		for (index = first; index < run->count; index += step) {
			uint32_t *words;

			ret = begin(run, &words);
			if (ret)
				return ret;
			ret = submit_words(run, words, encode(run, words, index, iteration),
			                   index + step >= run->count ? VGPU_SUBMIT_INTERRUPT : 0,
			                   &fence);
			if (ret)
				return ret;
		}
		/* Keep at most two iterations in flight. */
		if (previous) {
			ret = wait_fence(run, previous);
			if (ret)
				return ret;
		}
		previous = fence;
		iteration++;
		run->result->iterations = iteration;
	}
	return previous ? wait_fence(run, previous) : 0;
}

/* Allocate size_bytes as buffers of at most buffer_bytes (multiples of
 * unit), each FILLed with its seed. */
static int allocate_filled(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	uint64_t left = size, fence = 0;
	int ret;

	while (left) {
		uint64_t bytes = left < buffer_bytes ? left : buffer_bytes;

		ret = allocate(run, bytes);
		if (ret)
			return fail_device(run, ret);
		ret = fill(run, run->count - 1,
		           vgpu_workload_buffer_seed(run->options->seed, run->count - 1, 0), &fence);
		if (ret)
			return ret;
		left -= bytes;
	}
	run->result->target_reached = true;
	return fence ? wait_fence(run, fence) : 0;
}

/* stream ------------------------------------------------------------------ */

static uint32_t encode_stream(struct run *run, uint32_t *words, uint64_t index,
                              uint64_t iteration)
{
	(void)iteration;
	return vgpu_push_launch_stream(words, run->buffers[index].gpu_va, run->data_bytes[index],
	                               1);
}

static int expected_stream(struct run *run, uint64_t index, uint64_t *checksum)
{
	*checksum = vgpu_reference_fill_stream_checksum(
	        vgpu_workload_buffer_seed(run->options->seed, index, 0), run->data_bytes[index],
	        run->result->iterations);
	return 0;
}

static int run_stream(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	int ret = allocate_filled(run, size, buffer_bytes);

	if (!ret)
		ret = iterate(run, encode_stream, 0, 1);
	if (!ret)
		ret = verify(run, expected_stream, 0, run->count, 1);
	return ret;
}

/* stencil ----------------------------------------------------------------- */

/* Buffers 2k (A, FILLed) and 2k + 1 (B) form grid k. */
static uint32_t encode_stencil(struct run *run, uint32_t *words, uint64_t index,
                               uint64_t iteration)
{
	const struct vgpu_guest_buffer *a = &run->buffers[index], *b = &run->buffers[index + 1];
	uint32_t height = (uint32_t)(run->data_bytes[index] / STENCIL_ROW_BYTES);

	if (iteration & 1)
		return vgpu_push_launch_stencil(words, b->gpu_va, a->gpu_va, STENCIL_WIDTH,
		                                height);
	return vgpu_push_launch_stencil(words, a->gpu_va, b->gpu_va, STENCIL_WIDTH, height);
}

static int expected_stencil(struct run *run, uint64_t index, uint64_t *checksum)
{
	uint64_t grid = index & ~1ull;

	return workload_reference_stencil(vgpu_workload_buffer_seed(run->options->seed, grid, 0),
	                                  STENCIL_WIDTH,
	                                  (uint32_t)(run->data_bytes[grid] / STENCIL_ROW_BYTES),
	                                  run->result->iterations, checksum);
}

static int run_stencil(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	uint64_t grid_bytes = buffer_bytes < size / 2 ? buffer_bytes : size / 2;
	uint64_t grids, k, fence = 0;
	int ret;

	grid_bytes -= grid_bytes % STENCIL_ROW_BYTES;
	if (!grid_bytes)
		return fail(run, -EINVAL, "stencil needs at least %u bytes (two %u-byte rows)",
		            2 * STENCIL_ROW_BYTES, STENCIL_ROW_BYTES);
	grids = size / (2 * grid_bytes);
	for (k = 0; k < grids; k++) {
		ret = allocate(run, grid_bytes);
		if (!ret)
			ret = allocate(run, grid_bytes);
		if (ret)
			return fail_device(run, ret);
		ret = fill(run, 2 * k, vgpu_workload_buffer_seed(run->options->seed, 2 * k, 0),
		           &fence);
		if (ret)
			return ret;
	}
	run->result->target_reached = true;
	ret = wait_fence(run, fence);
	if (!ret)
		ret = iterate(run, encode_stencil, 0, 2);
	/* The result is in A after an even number of steps, else in B. */
	if (!ret)
		ret = verify(run, expected_stencil, run->result->iterations & 1, grids, 2);
	return ret;
}

/* gups -------------------------------------------------------------------- */

static uint64_t gups_updates(const struct run *run, uint64_t index)
{
	return run->data_bytes[index] / 8 / 4;
}

static uint32_t encode_gups(struct run *run, uint32_t *words, uint64_t index, uint64_t iteration)
{
	return vgpu_push_launch_random_access(
	        words, run->buffers[index].gpu_va, run->data_bytes[index], gups_updates(run, index),
	        vgpu_workload_buffer_seed(run->options->seed, index, iteration + 1));
}

static int expected_gups(struct run *run, uint64_t index, uint64_t *checksum)
{
	return workload_reference_gups(run->options->seed, index, run->data_bytes[index],
	                               gups_updates(run, index), run->result->iterations,
	                               checksum);
}

static int run_gups(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	int ret = allocate_filled(run, size, buffer_bytes);

	if (!ret)
		ret = iterate(run, encode_gups, 0, 1);
	if (!ret)
		ret = verify(run, expected_gups, 0, run->count, 1);
	return ret;
}

/* alloc-leak -------------------------------------------------------------- */

static int expected_fill(struct run *run, uint64_t index, uint64_t *checksum)
{
	*checksum = vgpu_reference_fill_stream_checksum(
	        vgpu_workload_buffer_seed(run->options->seed, index, 0), run->data_bytes[index], 0);
	return 0;
}

static int run_alloc_leak(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	uint64_t left = size, fence = 0, hold_until;
	int ret;

	while (left && !stopped(run)) {
		uint64_t bytes = left < buffer_bytes ? left : buffer_bytes;

		ret = allocate(run, bytes);
		if (ret == -ENOMEM || ret == -ENOSPC) {
			/* The paper's alloc keeps what it got. */
			snprintf(run->result->message, sizeof(run->result->message),
			         "allocation stopped at %" PRIu64 " of %" PRIu64 " bytes: %s",
			         run->held, size, vgpu_device_last_error(run->dev));
			break;
		}
		if (ret)
			return fail_device(run, ret);
		ret = fill(run, run->count - 1,
		           vgpu_workload_buffer_seed(run->options->seed, run->count - 1, 0), &fence);
		if (ret)
			return ret;
		left -= bytes;
		run->result->iterations = run->count;
	}
	run->result->target_reached = left == 0;
	if (fence) {
		ret = wait_fence(run, fence);
		if (ret)
			return ret;
	}
	hold_until = now_ns() + run->options->duration_ns;
	while (!stopped(run) && now_ns() < hold_until) {
		uint64_t left_ns = hold_until - now_ns();

		sleep_ns(left_ns < HOLD_STEP_NS ? left_ns : HOLD_STEP_NS);
	}
	return verify(run, expected_fill, 0, run->count, 1);
}

/* escape ------------------------------------------------------------------ */

#define ESCAPE_ALIGN (2ull << 20) /* the largest GPU page of any HAL */

enum escape_kind {
	ESCAPE_STREAM_PAST_END, /* (a) */
	ESCAPE_FILL_FAR,        /* (b) */
	ESCAPE_COPY_OUT,        /* (c) */
};

static uint64_t align_up(uint64_t value, uint64_t align)
{
	return (value + align - 1) & ~(align - 1);
}

/* Whether [va, va + bytes) overlaps one of the run's buffers. */
static bool overlaps_own(const struct run *run, uint64_t va, uint64_t bytes)
{
	uint64_t i;

	for (i = 0; i < run->count; i++) {
		const struct vgpu_guest_buffer *b = &run->buffers[i];

		if (va < b->gpu_va + b->bytes && b->gpu_va < va + bytes)
			return true;
	}
	return false;
}

/* One attempt on a fresh channel: 0 when it ended as it must (the GPU killed
 * the channel, or it completed: the caller judges), else the run's error. */
static int escape_try(struct run *run, enum escape_kind kind, uint64_t first, uint64_t last,
                      struct vgpu_escape_attempt *a)
{
	const struct vgpu_guest_buffer *from = &run->buffers[first], *buf = &run->buffers[last];
	struct vgpu_channel *ch;
	uint64_t fence = 0;
	uint32_t *words, used = 0;
	int ret;

	if (run->options->before_escape)
		run->options->before_escape(run->options->hook_arg, run->dev, a);
	ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &ch);
	if (ret)
		return fail(run, ret, "escape %s: cannot create a channel for it: %s", a->name,
		            vgpu_device_last_error(run->dev));
	vgpu_channel_set_timeout(ch, VGPU_ESCAPE_TIMEOUT_MS);
	a->tried = true;
	run->result->escapes_tried++;
	ret = vgpu_channel_begin(ch, VGPU_COMMAND_MAX_WORDS, &words);
	if (!ret) {
		switch (kind) {
		case ESCAPE_STREAM_PAST_END:
			used = vgpu_push_launch_stream(words, buf->gpu_va, buf->bytes + a->bytes,
			                               1);
			break;
		case ESCAPE_FILL_FAR:
			used = vgpu_push_launch_fill(words, a->gpu_va, a->bytes,
			                             vgpu_workload_buffer_seed(run->options->seed,
			                                                       run->count, 0));
			break;
		case ESCAPE_COPY_OUT:
			used = vgpu_push_copy(words, a->gpu_va, from->gpu_va, a->bytes);
			break;
		}
		ret = vgpu_channel_submit(ch, used, VGPU_SUBMIT_INTERRUPT, &fence);
	}
	if (!ret) {
		run->result->submissions++;
		ret = vgpu_channel_wait(ch, fence, -1);
	}
	vgpu_channel_destroy(ch);
	a->error = ret;
	a->refused = ret == -EIO;
	if (a->refused)
		run->result->escapes_refused++;
	if (ret && ret != -EIO)
		return fail_channel(run, ret, a->what);
	return 0;
}

/* How many STREAM passes the buffer escape (a) ran over holds now: 1 if its
 * checksum says streamed once (the GPU ran the kernel page by page up to the
 * fault at the buffer's end), else 0 (refused before it ran; anything else
 * then shows as a mismatch in the verification). */
static int escape_stream_state(struct run *run, uint64_t index, uint64_t *passes)
{
	uint64_t seed = vgpu_workload_buffer_seed(run->options->seed, index, 0), fence, got;
	uint32_t *words;
	int ret = begin(run, &words);

	if (ret)
		return ret;
	ret = submit_words(run, words,
	                   vgpu_push_launch_checksum(words, run->buffers[index].gpu_va,
	                                             run->data_bytes[index],
	                                             vgpu_channel_scratch_va(run->ch, 0)),
	                   VGPU_SUBMIT_INTERRUPT, &fence);
	if (!ret)
		ret = wait_fence(run, fence);
	if (ret)
		return ret;
	got = vgpu_channel_read_scratch(run->ch, 0);
	*passes = got == vgpu_reference_fill_stream_checksum(seed, run->data_bytes[index], 1) ? 1 : 0;
	return 0;
}

static int expected_escape(struct run *run, uint64_t index, uint64_t *checksum)
{
	*checksum = vgpu_reference_fill_stream_checksum(
	        vgpu_workload_buffer_seed(run->options->seed, index, 0), run->data_bytes[index],
	        index == run->escape_stream_index ? run->escape_stream_passes : 0);
	return 0;
}

static int run_escape(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	static const struct {
		enum escape_kind kind;
		const char *name, *what;
	} plan[VGPU_ESCAPE_ATTEMPTS] = {
		{ ESCAPE_STREAM_PAST_END, "stream-past-end",
		  "(a) a STREAM kernel over its last buffer and past its end" },
		{ ESCAPE_FILL_FAR, "fill-far",
		  "(b) a FILL kernel far from anything it allocated" },
		{ ESCAPE_COPY_OUT, "copy-out",
		  "(c) a COPY of its first buffer to addresses it does not own" },
	};
	struct vgpu_workload_result *r = run->result;
	uint64_t first = 0, last = 0, top = 0, far, i;
	char done[160];
	size_t used = 0;
	int ret = allocate_filled(run, size, buffer_bytes);

	if (ret)
		return ret;
	/* The last buffer is the highest (nothing was freed), but say so
	 * rather than assume it. */
	for (i = 0; i < run->count; i++) {
		const struct vgpu_guest_buffer *b = &run->buffers[i];

		if (b->gpu_va + b->bytes > top) {
			top = b->gpu_va + b->bytes;
			last = i;
		}
	}
	/* (a) buffer_bytes past the end of the last buffer as allocated. */
	r->escapes[0].gpu_va = run->buffers[last].gpu_va + run->buffers[last].bytes;
	r->escapes[0].bytes = buffer_bytes;
	/* (b) see VGPU_ESCAPE_FAR_BYTES. */
	far = run->buffers[first].gpu_va + VGPU_ESCAPE_FAR_BYTES;
	if (far > VGPU_ESCAPE_VA_LIMIT - align_up(buffer_bytes, ESCAPE_ALIGN))
		far = VGPU_ESCAPE_VA_LIMIT - align_up(buffer_bytes, ESCAPE_ALIGN);
	far &= ~(ESCAPE_ALIGN - 1);
	if (far < top + (1ull << 30)) /* a VM holding almost 64 GiB: further up */
		far = align_up(top, 1ull << 30) + (1ull << 30);
	r->escapes[1].gpu_va = far;
	r->escapes[1].bytes = buffer_bytes;
	/* (c) the addresses right after everything it holds. */
	r->escapes[2].gpu_va = align_up(top, ESCAPE_ALIGN);
	r->escapes[2].bytes = run->data_bytes[first];

	for (i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
		struct vgpu_escape_attempt *a = &r->escapes[i];

		a->name = plan[i].name;
		a->what = plan[i].what;
		if (overlaps_own(run, a->gpu_va, a->bytes))
			return fail(run, -EINVAL,
			            "escape %s: its target (GPU VA 0x%" PRIx64 ", %" PRIu64
			            " bytes) overlaps the VM's own buffers; nothing to try",
			            a->name, a->gpu_va, a->bytes);
	}
	for (i = 0; i < VGPU_ESCAPE_ATTEMPTS && !stopped(run); i++) {
		ret = escape_try(run, plan[i].kind, first, last, &r->escapes[i]);
		if (ret)
			return ret;
	}
	if (r->escapes_tried < VGPU_ESCAPE_ATTEMPTS)
		return fail(run, -EINTR, "stopped after %u of %u escape attempts", r->escapes_tried,
		            VGPU_ESCAPE_ATTEMPTS);

	/* Its own data: as filled, but for what (a) may have streamed of its
	 * own buffer before it faulted at the buffer's end. */
	run->escape_stream_index = last;
	ret = escape_stream_state(run, last, &run->escape_stream_passes);
	if (!ret)
		ret = verify(run, expected_escape, 0, run->count, 1);
	if (ret)
		return ret;

	done[0] = '\0';
	for (i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
		const struct vgpu_escape_attempt *a = &r->escapes[i];
		int n;

		if (a->refused || used >= sizeof(done))
			continue;
		n = snprintf(done + used, sizeof(done) - used, "%s%s (GPU VA 0x%" PRIx64 ")",
		             used ? ", " : "", a->name, a->gpu_va);
		if (n > 0)
			used += (size_t)n;
	}
	if (r->escapes_refused < r->escapes_tried)
		return fail(run, -EACCES,
		            "%u of %u escapes refused by the GPU; completed without error: %s%s",
		            r->escapes_refused, r->escapes_tried, done,
		            r->mismatches ? "; its own data changed too" : "");
	if (!r->mismatches)
		snprintf(r->message, sizeof(r->message),
		         "%u of %u escapes refused by the GPU; own data intact%s", r->escapes_refused,
		         r->escapes_tried,
		         run->escape_stream_passes ?
		                 " (stream-past-end ran over its own last buffer up to the "
		                 "fault at its end)" :
		                 "");
	else
		snprintf(r->message + strlen(r->message), sizeof(r->message) - strlen(r->message),
		         "; %u of %u escapes refused by the GPU, but its own data changed",
		         r->escapes_refused, r->escapes_tried);
	return 0;
}


/* soak -------------------------------------------------------------------- */

/* What a soak buffer must hold: FILL(seed), then passes STREAM passes. */
struct soak_buffer {
	uint64_t seed;
	uint64_t passes;
};

struct soak {
	struct soak_buffer *state; /* parallel to run->buffers */
	uint64_t capacity;
	uint64_t rng;
	uint64_t serial; /* buffers allocated so far: each one's seed index */
};

/* splitmix64: a small, well-mixed PRNG; the steps follow from the seed. */
static uint64_t soak_random(struct soak *soak)
{
	uint64_t z = (soak->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static uint64_t soak_below(struct soak *soak, uint64_t n)
{
	return soak_random(soak) % n;
}

static struct soak *soak_of(struct run *run)
{
	return run->soak;
}

static int expected_soak(struct run *run, uint64_t index, uint64_t *checksum)
{
	const struct soak_buffer *b = &soak_of(run)->state[index];

	*checksum = vgpu_reference_fill_stream_checksum(b->seed, run->data_bytes[index], b->passes);
	return 0;
}

/* Checksum count buffers from first. A before_verify hook sees the buffers
 * at rest, as the other workloads show them: the GPU finishes first. */
static int soak_verify(struct run *run, uint64_t first, uint64_t count)
{
	int ret;

	if (run->options->before_verify) {
		ret = vgpu_channel_finish(run->ch, -1);
		if (ret)
			return fail_channel(run, ret, "waiting for the GPU");
	}
	return verify(run, expected_soak, first, count, 1);
}

/* Allocate bytes and FILL the new buffer. Refusals (-ENOMEM, -ENOSPC, and
 * -EAGAIN once allocate's retries are spent) are counted and returned
 * without ending the run. */
static int soak_allocate(struct run *run, uint64_t bytes)
{
	struct soak *soak = soak_of(run);
	uint64_t fence;
	int ret = allocate(run, bytes);

	if (ret == -ENOMEM || ret == -ENOSPC || ret == -EAGAIN) {
		run->result->soak.alloc_refused++;
		return ret;
	}
	if (ret)
		return fail_device(run, ret);
	if (run->capacity > soak->capacity) {
		struct soak_buffer *state = realloc(soak->state, run->capacity * sizeof(*state));

		if (!state)
			return fail(run, -ENOMEM, "out of host memory");
		soak->state = state;
		soak->capacity = run->capacity;
	}
	soak->state[run->count - 1] = (struct soak_buffer){
		.seed = vgpu_workload_buffer_seed(run->options->seed, soak->serial++, 0),
	};
	run->result->soak.allocs++;
	return fill(run, run->count - 1, soak->state[run->count - 1].seed, &fence);
}

/* Verify buffer index, then free it; the last buffer takes its place. */
static int soak_free(struct run *run, uint64_t index)
{
	struct soak *soak = soak_of(run);
	uint64_t last = run->count - 1;
	int ret = soak_verify(run, index, 1);

	if (ret)
		return ret;
	if (vgpu_buffer_free(run->dev, &run->buffers[index]))
		return fail_device(run, -EIO);
	run->held -= run->buffers[index].bytes;
	run->buffers[index] = run->buffers[last];
	run->data_bytes[index] = run->data_bytes[last];
	soak->state[index] = soak->state[last];
	run->count--;
	run->result->soak.frees++;
	return 0;
}

static int soak_stream(struct run *run, uint64_t index)
{
	uint64_t fence;
	uint32_t *words;
	int ret = begin(run, &words);

	if (ret)
		return ret;
	ret = submit_words(run, words,
	                   vgpu_push_launch_stream(words, run->buffers[index].gpu_va,
	                                           run->data_bytes[index], 1),
	                   VGPU_SUBMIT_INTERRUPT, &fence);
	if (ret)
		return ret;
	soak_of(run)->state[index].passes++;
	run->result->soak.streams++;
	return 0;
}

/* Check every buffer, then detach holding them and attach again. */
static int soak_detach(struct run *run)
{
	char why[256] = "";
	int ret = soak_verify(run, 0, run->count);

	if (ret)
		return ret;
	vgpu_channel_destroy(run->ch);
	run->ch = NULL;
	run->result->soak.buffers_dropped += run->count;
	/* The backend frees them with the VM: forget them here. */
	run->count = 0;
	run->held = 0;
	ret = run->options->reattach(run->options->reattach_arg, &run->dev, why, sizeof(why));
	if (ret)
		return fail(run, ret, "attaching again after a detach: %s",
		            why[0] ? why : strerror(-ret));
	ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &run->ch);
	if (ret)
		return fail_device(run, ret);
	run->result->soak.detaches++;
	return 0;
}

/* Size of a new buffer: 1 .. max_chunks chunks, one in four shortened by a
 * random number of pages (a remainder chunk). */
static uint64_t soak_size(struct run *run, struct soak *soak, uint64_t buffer_bytes)
{
	uint64_t chunk = vgpu_device_info(run->dev)->chunk_bytes;
	uint64_t max_chunks, bytes;

	if (!chunk || chunk % VGPU_PAGE_SIZE)
		chunk = VGPU_PAGE_SIZE;
	max_chunks = buffer_bytes / chunk ? buffer_bytes / chunk : 1;
	bytes = (1 + soak_below(soak, max_chunks)) * chunk;
	if (chunk > VGPU_PAGE_SIZE && soak_below(soak, 4) == 0)
		bytes -= VGPU_PAGE_SIZE * (1 + soak_below(soak, chunk / VGPU_PAGE_SIZE - 1));
	return bytes;
}

enum soak_step { SOAK_ALLOCATE, SOAK_FREE, SOAK_STREAM, SOAK_VERIFY, SOAK_DETACH };

/* Steps out of 100: allocate 30, free 25, stream 30, verify 13, detach 2. */
static enum soak_step soak_pick(struct soak *soak)
{
	uint64_t roll = soak_below(soak, 100);

	if (roll < 30)
		return SOAK_ALLOCATE;
	if (roll < 55)
		return SOAK_FREE;
	if (roll < 85)
		return SOAK_STREAM;
	if (roll < 98)
		return SOAK_VERIFY;
	return SOAK_DETACH;
}

static bool soak_more(const struct run *run, uint64_t done)
{
	const struct vgpu_workload_options *o = run->options;

	if (!o->iterations && !o->duration_ns)
		return !stopped(run) && done < VGPU_SOAK_DEFAULT_STEPS;
	return more_iterations(run, done);
}

static int run_soak(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	struct soak soak = { .rng = run->options->seed };
	uint64_t steps = 0;
	int ret = 0;

	run->soak = &soak;
	run->phase_start_ns = now_ns();
	run->result->target_reached = true;
	while (!ret && soak_more(run, steps)) {
		enum soak_step step = soak_pick(&soak);
		uint64_t bytes;

		if (run->held < size / 4)
			step = SOAK_ALLOCATE;
		if (step == SOAK_DETACH && !run->options->reattach)
			step = SOAK_VERIFY;
		if (step != SOAK_ALLOCATE && !run->count)
			step = SOAK_ALLOCATE;
		switch (step) {
		case SOAK_ALLOCATE:
			bytes = soak_size(run, &soak, buffer_bytes);
			if (run->held + bytes > size && run->count) {
				ret = soak_free(run, soak_below(&soak, run->count));
				break;
			}
			ret = soak_allocate(run, bytes);
			if (ret == -ENOMEM || ret == -ENOSPC || ret == -EAGAIN)
				ret = 0;
			break;
		case SOAK_FREE:
			ret = soak_free(run, soak_below(&soak, run->count));
			break;
		case SOAK_STREAM:
			ret = soak_stream(run, soak_below(&soak, run->count));
			break;
		case SOAK_VERIFY:
			ret = soak_verify(run, soak_below(&soak, run->count), 1);
			run->result->soak.verifies++;
			break;
		case SOAK_DETACH:
			ret = soak_detach(run);
			break;
		}
		steps++;
		run->result->iterations = steps;
	}
	if (!ret)
		ret = soak_verify(run, 0, run->count);
	/* ALLOC's mean is over every buffer allocated, not those left. */
	run->result->buffers = run->result->soak.allocs;
	free(soak.state);
	run->soak = NULL;
	return ret;
}

/* copy-flood -------------------------------------------------------------- */

#define FLOOD_POLL_MS 20
#define FLOOD_IN_FLIGHT 2 /* submissions per flood channel */

/* Buffer 1 holds a copy of buffer 0's first data_bytes[1] bytes. */
static int expected_flood(struct run *run, uint64_t index, uint64_t *checksum)
{
	*checksum = vgpu_reference_fill_stream_checksum(
	        vgpu_workload_buffer_seed(run->options->seed, index == 1 ? 0 : index, 0),
	        run->data_bytes[index], 0);
	return 0;
}

/* Wait for fence on ch: 0 when passed, 1 when the run was stopped first. */
static int flood_wait(struct run *run, struct vgpu_channel *ch, uint64_t fence)
{
	while (!vgpu_channel_fence_passed(ch, fence)) {
		int ret;

		if (stopped(run))
			return 1;
		ret = vgpu_channel_wait(ch, fence, FLOOD_POLL_MS);
		if (ret && ret != -ETIMEDOUT)
			return fail_channel(run, ret, "flooding the GPU with copies");
	}
	return 0;
}

static int run_copy_flood(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	struct vgpu_workload_result *r = run->result;
	struct vgpu_channel *flood[VGPU_MAX_CHANNELS] = { NULL };
	uint64_t *fences = NULL, a, b, bytes, fence = 0, total;
	uint32_t per_submission, submissions, channels = 0, made = 0, s, *words;
	int ret;

	if (size < 2 * VGPU_PAGE_SIZE)
		return fail(run, -EINVAL, "copy-flood needs at least two pages (--size 8K)");
	if (buffer_bytes > size / 2)
		buffer_bytes = size / 2 - size / 2 % VGPU_PAGE_SIZE;
	ret = allocate_filled(run, size, buffer_bytes);
	if (ret)
		return ret;
	a = run->buffers[0].gpu_va;
	b = run->buffers[1].gpu_va;
	bytes = run->data_bytes[1]; /* <= data_bytes[0] */
	r->flood_copy_bytes = bytes;

	/* buffer 1 := buffer 0, so the flood's copies change nothing */
	ret = begin(run, &words);
	if (!ret)
		ret = submit_words(run, words, vgpu_push_copy(words, b, a, bytes),
		                   VGPU_SUBMIT_INTERRUPT, &fence);
	if (!ret)
		ret = wait_fence(run, fence);
	if (ret)
		return ret;

	/* VGPU_FLOOD_BYTES of COPYs in the largest submissions a channel
	 * takes, FLOOD_IN_FLIGHT per channel (its pushbuffer ring holds that
	 * many), on as many channels as it needs: all queued at once */
	total = VGPU_FLOOD_BYTES / (4 * (1 + VGPU_COPY_ARG_WORDS));
	per_submission = vgpu_channel_max_words(run->ch) / (1 + VGPU_COPY_ARG_WORDS);
	submissions = (uint32_t)((total + per_submission - 1) / per_submission);
	channels = (submissions + FLOOD_IN_FLIGHT - 1) / FLOOD_IN_FLIGHT;
	if (channels >= VGPU_MAX_CHANNELS)
		return fail(run, -ENOSPC, "copy-flood would need %u channels", channels);
	fences = calloc(submissions, sizeof(*fences));
	if (!fences)
		return fail(run, -ENOMEM, "out of host memory");
	for (s = 0; s < channels; s++) {
		ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &flood[s]);
		if (ret) {
			fail_device(run, ret);
			goto out;
		}
	}
	for (made = 0; made < submissions && !stopped(run); made++) {
		struct vgpu_channel *ch = flood[made / FLOOD_IN_FLIGHT];
		uint64_t copies = total - r->flood_copies, k;
		uint32_t n = 0;

		if (copies > per_submission)
			copies = per_submission;
		ret = vgpu_channel_begin(ch, (uint32_t)copies * (1 + VGPU_COPY_ARG_WORDS), &words);
		if (ret) {
			fail_channel(run, ret, "flooding the GPU with copies");
			goto out;
		}
		for (k = 0; k < copies; k++)
			n += vgpu_push_copy(words + n, k % 2 ? b : a, k % 2 ? a : b, bytes);
		ret = vgpu_channel_submit(ch, n, VGPU_SUBMIT_INTERRUPT, &fences[made]);
		if (ret) {
			fail_channel(run, ret, "flooding the GPU with copies");
			goto out;
		}
		r->submissions++;
		r->flood_copies += copies;
		r->flood_pushbuffer_bytes += (uint64_t)n * 4;
	}
	r->iterations = made;
	/* until the GPU did it all, or the run is stopped */
	for (s = 0; s < made; s++) {
		ret = flood_wait(run, flood[s / FLOOD_IN_FLIGHT], fences[s]);
		if (ret)
			break;
	}
	if (ret < 0)
		goto out;
	for (s = 0; s < made; s++)
		if (vgpu_channel_fence_passed(flood[s / FLOOD_IN_FLIGHT], fences[s]))
			r->flood_copies_done += s + 1 < made ? per_submission
			                                     : r->flood_copies - (uint64_t)s * per_submission;

	/* Let the rest go: the GPU drops it with the channels. */
	for (s = 0; s < channels; s++) {
		vgpu_channel_set_timeout(flood[s], 1);
		vgpu_channel_destroy(flood[s]);
		flood[s] = NULL;
	}
	ret = verify(run, expected_flood, 0, run->count, 1);
	if (!ret && !r->mismatches)
		snprintf(r->message, sizeof(r->message),
		         "copy flood: the GPU completed %" PRIu64 " of %" PRIu64
		         " COPYs of %" PRIu64 " bytes (%" PRIu64
		         " bytes of pushbuffer on %u channels) before it ended; own data intact",
		         r->flood_copies_done, r->flood_copies, bytes, r->flood_pushbuffer_bytes,
		         channels);
out:
	for (s = 0; s < channels; s++) {
		if (flood[s]) {
			vgpu_channel_set_timeout(flood[s], 1);
			vgpu_channel_destroy(flood[s]);
		}
	}
	free(fences);
	return ret;
}

/* throttle ---------------------------------------------------------------- */

static int run_throttle(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	uint64_t kernel_ns = run->options->kernel_ns ? run->options->kernel_ns
	                                             : VGPU_THROTTLE_DEFAULT_KERNEL_NS;
	uint64_t iteration = 0, fence = 0;
	int ret = allocate_filled(run, size, buffer_bytes);

	run->phase_start_ns = now_ns();
	while (!ret && more_iterations(run, iteration)) {
		uint32_t *words;

		ret = begin(run, &words);
		if (!ret)
			ret = submit_words(run, words, vgpu_push_launch_throttle(words, kernel_ns),
			                   VGPU_SUBMIT_INTERRUPT, &fence);
		/* throttle waits for each kernel before the next (LoGA §5.2) */
		if (!ret)
			ret = wait_fence(run, fence);
		if (!ret && run->options->gap_ns)
			sleep_ns(run->options->gap_ns);
		run->result->iterations = ++iteration;
	}
	if (!ret)
		ret = verify(run, expected_fill, 0, run->count, 1);
	return ret;
}

/* never-release ----------------------------------------------------------- */

#define STATS_PROBE_NS 20000000ull
/* How long the stuck channel's fate is awaited once the hold is over. */
#define NEVER_RELEASE_SETTLE_MS 100

/* One STATS request, timed. */
static void probe_stats(struct run *run)
{
	struct vgpu_stats_response stats;
	uint64_t start = now_ns(), elapsed;

	if (vgpu_device_stats(run->dev, &stats))
		return;
	elapsed = now_ns() - start;
	run->result->stats_probes++;
	if (elapsed > run->result->stats_ns_max)
		run->result->stats_ns_max = elapsed;
}

/* Park run->ch on an acquire of its last scratch word, which nothing
 * writes (it stays 0): the channel never drains. */
static int park(struct run *run, uint64_t *fence)
{
	uint32_t *words;
	int ret = begin(run, &words);

	if (ret)
		return ret;
	return submit_words(run, words,
	                    vgpu_push_semaphore_acquire(
	                            words,
	                            vgpu_channel_scratch_va(run->ch,
	                                                    vgpu_channel_scratch_count(run->ch) - 1),
	                            UINT64_MAX),
	                    0, fence);
}

/* never-release, and staller (rearm: a killed channel is replaced by a
 * fresh one parked the same way, at once). */
static int run_never_release(struct run *run, uint64_t size, uint64_t buffer_bytes, bool rearm)
{
	struct vgpu_workload_result *r = run->result;
	struct vgpu_channel *stuck;
	uint64_t fence = 0, hold_until;
	int ret = allocate_filled(run, size, buffer_bytes);

	if (ret)
		return ret;
	ret = park(run, &fence);
	if (ret)
		return ret;
	r->acquire_submitted = true;
	if (run->options->on_hold)
		run->options->on_hold(run->options->hook_arg);

	run->phase_start_ns = now_ns();
	hold_until = run->options->duration_ns ? run->phase_start_ns + run->options->duration_ns
	                                       : UINT64_MAX;
	while (!stopped(run) && now_ns() < hold_until) {
		probe_stats(run);
		if (rearm && vgpu_channel_wait(run->ch, fence, 0) == -EIO) {
			stuck = run->ch;
			ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &run->ch);
			if (ret) {
				run->ch = stuck;
				return fail_device(run, ret);
			}
			vgpu_channel_set_timeout(stuck, 1);
			vgpu_channel_destroy(stuck);
			r->hog_rearms++;
			ret = park(run, &fence);
			if (ret)
				return ret;
		}
		sleep_ns(STATS_PROBE_NS);
	}
	ret = vgpu_channel_wait(run->ch, fence, NEVER_RELEASE_SETTLE_MS);
	r->acquire_killed = ret == -EIO || r->hog_rearms > 0;
	if (ret == 0)
		return fail(run, -EPROTO, "the acquire on a word nothing releases completed");

	/* Its data, on a fresh channel; the stuck one goes (a channel still
	 * waiting is destroyed without waiting for it). */
	stuck = run->ch;
	ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &run->ch);
	if (ret) {
		run->ch = stuck;
		return fail_device(run, ret);
	}
	vgpu_channel_set_timeout(stuck, 1);
	vgpu_channel_destroy(stuck);
	ret = verify(run, expected_fill, 0, run->count, 1);
	if (ret)
		return ret;
	snprintf(r->message, sizeof(r->message),
	         "held %" PRIu64 " bytes behind an acquire nothing releases; the channel %s; "
	         "slowest of %" PRIu64 " STATS requests meanwhile %.1f ms",
	         run->held, r->acquire_killed ? "was killed by the backend" : "was still waiting",
	         r->stats_probes, (double)r->stats_ns_max / 1e6);
	return 0;
}

/* hog --------------------------------------------------------------------- */

#define HOG_PASSES 16     /* per STREAM kernel */
#define HOG_IN_FLIGHT 2   /* submissions queued on the channel */

/* The hog's channel was killed: go on on a fresh one. */
static int hog_rearm(struct run *run, uint64_t *fences)
{
	struct vgpu_channel *dead = run->ch;
	int ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &run->ch);

	if (ret) {
		run->ch = dead;
		return fail_device(run, ret);
	}
	vgpu_channel_set_timeout(dead, 1);
	vgpu_channel_destroy(dead);
	run->result->hog_rearms++;
	memset(fences, 0, HOG_IN_FLIGHT * sizeof(*fences));
	return 0;
}

static int run_hog(struct run *run, uint64_t size, uint64_t buffer_bytes)
{
	struct vgpu_workload_result *r = run->result;
	uint64_t fences[HOG_IN_FLIGHT] = { 0 }, end;
	uint32_t per_submission, launch_words, *words, n = 0;
	unsigned slot = 0;
	int ret = allocate_filled(run, size, buffer_bytes);

	if (ret)
		return ret;
	{
		uint32_t probe[VGPU_COMMAND_MAX_WORDS];

		launch_words = vgpu_push_launch_stream(probe, run->buffers[0].gpu_va,
		                                       run->data_bytes[0], HOG_PASSES);
	}
	run->phase_start_ns = now_ns();
	end = run->options->duration_ns ? run->phase_start_ns + run->options->duration_ns
	                                : UINT64_MAX;
	while (!stopped(run) && now_ns() < end) {
		/* keep HOG_IN_FLIGHT submissions of kernels queued */
		if (fences[slot] && !vgpu_channel_fence_passed(run->ch, fences[slot])) {
			ret = vgpu_channel_wait(run->ch, fences[slot], FLOOD_POLL_MS);
			if (ret == -ETIMEDOUT)
				continue;
			if (ret == -EIO) { /* killed: re-arm on a fresh channel */
				ret = hog_rearm(run, fences);
				if (ret)
					return ret;
				continue;
			}
			if (ret)
				return fail_channel(run, ret, "hogging the GPU");
		}
		per_submission = vgpu_channel_max_words(run->ch) / launch_words;
		ret = vgpu_channel_begin(run->ch, per_submission * launch_words, &words);
		if (ret == -EIO) {
			ret = hog_rearm(run, fences);
			if (ret)
				return ret;
			continue;
		}
		if (ret)
			return fail_channel(run, ret, "hogging the GPU");
		n = 0;
		for (uint32_t k = 0; k < per_submission; k++)
			n += vgpu_push_launch_stream(words + n, run->buffers[0].gpu_va,
			                             run->data_bytes[0], HOG_PASSES);
		ret = vgpu_channel_submit(run->ch, n, VGPU_SUBMIT_INTERRUPT, &fences[slot]);
		if (ret == -EIO) {
			ret = hog_rearm(run, fences);
			if (ret)
				return ret;
			continue;
		}
		if (ret)
			return fail_channel(run, ret, "hogging the GPU");
		r->hog_kernels += per_submission;
		r->submissions++;
		slot = (slot + 1) % HOG_IN_FLIGHT;
	}
	r->iterations = r->submissions;
	/* Let the queue go with the channel: a fresh one verifies. */
	{
		struct vgpu_channel *busy = run->ch;

		ret = vgpu_channel_create(run->dev, run->options->gpfifo_entries, &run->ch);
		if (ret) {
			run->ch = busy;
			return fail_device(run, ret);
		}
		vgpu_channel_set_timeout(busy, 1);
		vgpu_channel_destroy(busy);
	}
	/* buffers 1.. hold what allocate_filled wrote (0 is the hog's) */
	ret = verify(run, expected_fill, 1, run->count - 1, 1);
	if (ret)
		return ret;
	snprintf(r->message, sizeof(r->message),
	         "queued %" PRIu64 " STREAM kernels of %u passes over %" PRIu64
	         " bytes; %" PRIu64 " channels killed under it (re-armed); other buffers intact",
	         r->hog_kernels, HOG_PASSES, run->data_bytes[0], r->hog_rearms);
	return 0;
}

/* stall ------------------------------------------------------------------- */

static int run_stall(struct run *run)
{
	uint64_t wait_ns = run->options->duration_ns ? run->options->duration_ns :
	                                               VGPU_STALL_DEFAULT_NS;
	uint64_t fence, start;
	uint32_t *words;
	double waited;
	int ret;

	ret = begin(run, &words);
	if (ret)
		return ret;
	/* The scratch word is never written: the acquire waits forever. */
	ret = submit_words(run, words,
	                   vgpu_push_semaphore_acquire(words, vgpu_channel_scratch_va(run->ch, 0),
	                                               UINT64_MAX),
	                   VGPU_SUBMIT_INTERRUPT, &fence);
	if (ret)
		return ret;
	/* Timed from before the hook: whatever the hook sets off happens
	 * within stall_wait_ns. */
	start = now_ns();
	if (run->options->stalled)
		run->options->stalled(run->options->hook_arg, run->dev, wait_ns);
	ret = vgpu_channel_wait(run->ch, fence,
	                        wait_ns / 1000000u > INT32_MAX ? INT32_MAX :
	                                                         (int)(wait_ns / 1000000u));
	run->result->stall_wait_ns = now_ns() - start;
	waited = (double)run->result->stall_wait_ns / 1e9;
	/* Its fence never passes: destroying the channel must not wait for it. */
	vgpu_channel_set_timeout(run->ch, 1);
	switch (ret) {
	case 0:
		return fail(run, -EPROTO,
		            "the fence behind a semaphore nobody released passed after %.3f s", waited);
	case -ENODEV:
		return fail(run, ret, "device lost after %.3f s of waiting: %s", waited,
		            vgpu_guest_explain(ret));
	case -EIO:
		return fail(run, ret, "the GPU killed the stalled channel after %.3f s", waited);
	case -ETIMEDOUT:
		return fail(run, ret, "the stalled fence did not pass in %.3f s, and nothing ended "
		            "the wait", waited);
	default:
		return fail_channel(run, ret, "waiting for the stalled fence");
	}
}

/* ------------------------------------------------------------------------ */

int vgpu_workload_run(struct vgpu_guest_device *dev, const struct vgpu_workload_options *options,
                      struct vgpu_workload_result *out)
{
	struct run run = {
		.dev = dev,
		.options = options,
		.result = out,
	};
	uint64_t size = options->size_bytes ? options->size_bytes : VGPU_WORKLOAD_DEFAULT_SIZE;
	uint64_t buffer_bytes = options->buffer_bytes ? options->buffer_bytes :
	                                                VGPU_WORKLOAD_DEFAULT_BUFFER;
	int ret;

	memset(out, 0, sizeof(*out));
	out->workload = vgpu_workload_name(options->kind);
	size -= size % VGPU_PAGE_SIZE;
	buffer_bytes -= buffer_bytes % VGPU_PAGE_SIZE;
	if (!size || !buffer_bytes || options->priority > VGPU_PRIORITY_MAX)
		return fail(&run, -EINVAL,
		            "size and buffer size must be at least %u bytes, priority at most %u",
		            VGPU_PAGE_SIZE, VGPU_PRIORITY_MAX);

	run.start_ns = now_ns();
	ret = vgpu_channel_create(dev, options->gpfifo_entries, &run.ch);
	if (ret)
		return fail_device(&run, ret);

	switch (options->kind) {
	case VGPU_WORKLOAD_STREAM:
		ret = run_stream(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_STENCIL:
		ret = run_stencil(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_GUPS:
		ret = run_gups(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_ALLOC_LEAK:
		ret = run_alloc_leak(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_ESCAPE:
		ret = run_escape(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_SOAK:
		ret = run_soak(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_COPY_FLOOD:
		ret = run_copy_flood(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_NEVER_RELEASE:
		ret = run_never_release(&run, size, buffer_bytes, false);
		break;
	case VGPU_WORKLOAD_STALLER:
		ret = run_never_release(&run, size, buffer_bytes, true);
		break;
	case VGPU_WORKLOAD_STALL:
		ret = run_stall(&run);
		break;
	case VGPU_WORKLOAD_THROTTLE:
		ret = run_throttle(&run, size, buffer_bytes);
		break;
	case VGPU_WORKLOAD_HOG:
		ret = run_hog(&run, size, buffer_bytes);
		break;
	default:
		ret = fail(&run, -EINVAL, "unknown workload %d", (int)options->kind);
		break;
	}

	/* Nothing may still use the buffers when they are freed. (soak's
	 * detach may have left no channel, and a new device; stall's channel
	 * never finishes, and it holds no buffer.) */
	if (run.ch && ret != -EIO && ret != -ENODEV && options->kind != VGPU_WORKLOAD_STALL)
		vgpu_channel_finish(run.ch, -1);
	vgpu_channel_destroy(run.ch);
	out->have_stats = run.dev && vgpu_device_stats(run.dev, &out->stats) == 0;
	if (run.dev)
		free_all(&run);
	free(run.buffers);
	free(run.data_bytes);

	out->verified = !out->error && out->checksums > 0 && out->mismatches == 0;
	if (!out->error && !out->checksums && !out->message[0])
		snprintf(out->message, sizeof(out->message), "nothing was verified");
	out->wall_seconds = (double)(now_ns() - run.start_ns) / 1e9;
	out->verify_seconds = (double)run.verify_ns / 1e9;
	return out->error;
}
