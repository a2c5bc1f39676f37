// SPDX-License-Identifier: MIT
/*
 * test_submission.c - the runtime's direct submission path and the
 * workloads on simgpu itself (no vgpud): results read back byte for byte
 * through the GPU's aperture, GPFIFO wrap-around, pushbuffer reuse, fences,
 * a killed channel, and every workload verifying (and catching corruption);
 * escape refused everywhere, and failing where an escape gets through; soak's
 * random steps, detaches included, verifying and catching corruption.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"
#include "vgpu_guest.h"
#include "vgpu_guest_simgpu.h"
#include "vgpu_workloads.h"

struct fixture {
	struct vgpu_guest_device *dev;
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
};

static struct simgpu_config small_gpu(void)
{
	struct simgpu_config config;

	simgpu_config_defaults(&config);
	config.vram_bytes = 128ull << 20;
	config.pfifo_idle_sleep_max_us = 200;
	return config;
}

static int open_device(struct fixture *f, uint32_t pushbuffer_bytes, uint64_t cap)
{
	struct simgpu_config gpu = small_gpu();
	struct vgpu_guest_simgpu_config config = {
		.simgpu = &gpu,
		.pushbuffer_bytes = pushbuffer_bytes,
		.cap_bytes = cap,
	};
	char why[256];
	int ret = vgpu_device_open_simgpu(&config, &f->dev, why, sizeof(why));

	if (ret) {
		print_error("%s\n", why);
		return ret;
	}
	f->hal = vgpu_guest_simgpu_hal(f->dev);
	f->as = vgpu_guest_simgpu_as(f->dev);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	*state = f;
	return open_device(f, 0, 0);
}

/* A 4 KiB pushbuffer: reuse and wrap-around happen all the time. */
static int setup_small_pushbuffer(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	*state = f;
	return open_device(f, 4096, 0);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vgpu_device_close(f->dev);
	free(f);
	return 0;
}

static uint64_t read_u64(struct fixture *f, uint64_t va)
{
	uint64_t value = 0;

	assert_int_equal(vgpu_hal_as_read(f->as, va, &value, sizeof(value)), 0);
	return le64toh(value);
}

/* ------------------------------------------------------------------------ */

static void test_device_info(void **state)
{
	struct fixture *f = *state;
	const struct vgpu_device_info *info = vgpu_device_info(f->dev);
	struct vgpu_stats_response stats;
	struct vgpu_guest_buffer buf;

	assert_string_equal(info->backend, "simgpu");
	assert_int_equal(info->abi_version, VGPU_ABI_VERSION);
	assert_int_equal(info->max_channels, VGPU_MAX_CHANNELS);
	assert_true(info->vram_total_bytes > 64ull << 20);
	assert_int_equal(vgpu_buffer_alloc(f->dev, 5000, 3, &buf), 0);
	assert_int_equal(buf.bytes, 8192);
	assert_int_equal(buf.gpu_va % 4096, 0);
	assert_int_equal(vgpu_device_stats(f->dev, &stats), 0);
	assert_int_equal(stats.allocated_bytes, 8192);
	assert_int_equal(vgpu_buffer_set_priority(f->dev, &buf, 15), 0);
	assert_int_equal(vgpu_buffer_set_priority(f->dev, &buf, 16), -EINVAL);
	assert_int_equal(vgpu_buffer_free(f->dev, &buf), 0);
	assert_int_equal(vgpu_buffer_free(f->dev, &buf), -ENOENT);
	assert_non_null(strstr(vgpu_device_last_error(f->dev), "no such buffer"));
	assert_int_equal(vgpu_buffer_alloc(f->dev, 0, 3, &buf), -EINVAL);
}

static void test_fill_reads_back_byte_exact(void **state)
{
	struct fixture *f = *state;
	const uint64_t bytes = 1u << 20;
	uint8_t *got = malloc(bytes), *want = malloc(bytes);
	struct vgpu_channel *ch;
	struct vgpu_guest_buffer buf;
	uint32_t *words;
	uint64_t fence;

	assert_int_equal(vgpu_buffer_alloc(f->dev, bytes, VGPU_PRIORITY_DEFAULT, &buf), 0);
	assert_int_equal(vgpu_channel_create(f->dev, 8, &ch), 0);
	assert_int_equal(vgpu_channel_begin(ch, VGPU_COMMAND_MAX_WORDS, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, vgpu_push_launch_fill(words, buf.gpu_va, bytes,
	                                                               42),
	                                     VGPU_SUBMIT_INTERRUPT, &fence),
	                 0);
	assert_int_equal(vgpu_channel_wait(ch, fence, 10000), 0);
	assert_true(vgpu_channel_fence_passed(ch, fence));
	assert_int_equal(vgpu_hal_as_read(f->as, buf.gpu_va, got, bytes), 0);
	vgpu_kernel_reference_fill(want, bytes, 42);
	assert_memory_equal(got, want, bytes);
	vgpu_channel_destroy(ch);
	assert_int_equal(vgpu_buffer_free(f->dev, &buf), 0);
	free(got);
	free(want);
}

static void test_fences(void **state)
{
	struct fixture *f = *state;
	struct vgpu_channel *ch;
	struct vgpu_channel_stats stats;
	uint64_t fence, first;
	uint32_t *words;

	assert_int_equal(vgpu_channel_create(f->dev, 0, &ch), 0);
	vgpu_channel_stats(ch, &stats);
	assert_int_equal(stats.gpfifo_entries, 512); /* simgpu's default */
	first = stats.last_fence + 1;
	/* An empty submission is just its fence. */
	assert_int_equal(vgpu_channel_begin(ch, 1, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, 0, 0, &fence), 0);
	assert_int_equal(fence, first);
	assert_int_equal(vgpu_channel_begin(ch, 1, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, vgpu_push_nop(words), 0, &fence), 0);
	assert_int_equal(fence, first + 1);
	assert_int_equal(vgpu_channel_wait(ch, fence + 1, 100), -EINVAL); /* never submitted */
	assert_int_equal(vgpu_channel_finish(ch, 10000), 0);
	assert_true(vgpu_channel_fence_passed(ch, first));
	/* Misuse. */
	assert_int_equal(vgpu_channel_submit(ch, 0, 0, &fence), -EINVAL); /* no begin */
	assert_int_equal(vgpu_channel_begin(ch, 0, &words), -EINVAL);
	assert_int_equal(vgpu_channel_begin(ch, vgpu_channel_max_words(ch) + 1, &words), -EINVAL);
	assert_int_equal(vgpu_channel_begin(ch, 2, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, 3, 0, &fence), -EINVAL); /* more than begun */
	assert_int_equal(vgpu_channel_submit(ch, 0, 0x80, &fence), -EINVAL);
	assert_int_equal(vgpu_channel_submit(ch, 0, 0, &fence), 0);
	/* Scratch words are the notifier page after the fence. */
	assert_int_equal(vgpu_channel_scratch_count(ch), (4096 - VGPU_NOTIFIER_SCRATCH_OFFSET) / 8);
	assert_int_equal(vgpu_channel_scratch_va(ch, 1) - vgpu_channel_scratch_va(ch, 0), 8);
	vgpu_channel_destroy(ch);
}

/*
 * 4 GPFIFO entries (3 in flight at most), 600 submissions: each runs one
 * non-idempotent STREAM pass over a counter and logs its number, so the
 * result proves that every submission ran exactly once and in order.
 */
static void test_gpfifo_wraps_in_order(void **state)
{
	struct fixture *f = *state;
	const unsigned n = 600;
	struct vgpu_channel_stats stats;
	struct vgpu_channel *ch;
	struct vgpu_guest_buffer counter, log;
	uint64_t fence, want;
	uint32_t *words, count;
	unsigned i;

	assert_int_equal(vgpu_buffer_alloc(f->dev, 4096, 0, &counter), 0);
	assert_int_equal(vgpu_buffer_alloc(f->dev, 8ull * n, 0, &log), 0);
	assert_int_equal(vgpu_channel_create(f->dev, 4, &ch), 0);
	assert_int_equal(vgpu_channel_begin(ch, VGPU_COMMAND_MAX_WORDS, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, vgpu_push_launch_fill(words, counter.gpu_va, 8, 9),
	                                     0, NULL),
	                 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(vgpu_channel_begin(ch, 2 * VGPU_COMMAND_MAX_WORDS, &words), 0);
		count = vgpu_push_launch_stream(words, counter.gpu_va, 8, 1);
		count += vgpu_push_semaphore_release(words + count, log.gpu_va + 8ull * i, i + 1,
		                                     false);
		assert_int_equal(vgpu_channel_submit(ch, count, 0, &fence), 0);
	}
	assert_int_equal(vgpu_channel_wait(ch, fence, 20000), 0);

	want = vgpu_fill_word(9, 0);
	for (i = 0; i < n; i++)
		want = vgpu_stream_word(want);
	assert_int_equal(read_u64(f, counter.gpu_va), want);
	for (i = 0; i < n; i++)
		assert_int_equal(read_u64(f, log.gpu_va + 8ull * i), i + 1);
	vgpu_channel_stats(ch, &stats);
	assert_int_equal(stats.submissions, n + 1);
	assert_int_equal(stats.gpfifo_entries, 4);
	assert_true(stats.waits_for_space > 0);
	/* GP_PUT as the GPU sees it went round the ring many times. */
	assert_int_equal(vgpu_hal_channel_gp_get(vgpu_guest_simgpu_channel(f->dev, stats.index)),
	                 (n + 1) % 4);
	vgpu_channel_destroy(ch);
	vgpu_buffer_free(f->dev, &counter);
	vgpu_buffer_free(f->dev, &log);
}

/*
 * A 4 KiB pushbuffer and submissions of about 1 KiB padded with NOP
 * arguments that are junk commands if the GPU ever read an overwritten
 * pushbuffer: space is reused constantly, and only once the GPU is done.
 */
static void test_pushbuffer_reuse(void **state)
{
	struct fixture *f = *state;
	const unsigned n = 400;
	struct vgpu_channel_stats stats;
	struct vgpu_channel *ch;
	struct vgpu_guest_buffer log;
	uint64_t fence, rng = 77;
	uint32_t *words, count, pad, j;
	unsigned i;

	assert_int_equal(vgpu_buffer_alloc(f->dev, 8ull * n, 0, &log), 0);
	assert_int_equal(vgpu_channel_create(f->dev, 64, &ch), 0);
	assert_true(vgpu_channel_max_words(ch) < 512);
	for (i = 0; i < n; i++) {
		pad = 100 + (uint32_t)(vgpu_xorshift64(&rng) % 150);
		assert_int_equal(vgpu_channel_begin(ch, pad + 1 + 5, &words), 0);
		words[0] = htole32(VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, pad));
		for (j = 1; j <= pad; j++)
			words[j] = htole32(VGPU_COMMAND_HEADER(0x66, 0xff, 0xffff)); /* junk */
		count = pad + 1;
		count += vgpu_push_semaphore_release(words + count, log.gpu_va + 8ull * i, i + 1,
		                                     false);
		assert_int_equal(vgpu_channel_submit(ch, count, 0, &fence), 0);
	}
	assert_int_equal(vgpu_channel_wait(ch, fence, 20000), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(read_u64(f, log.gpu_va + 8ull * i), i + 1);
	vgpu_channel_stats(ch, &stats);
	assert_int_equal(stats.pushbuffer_bytes, 4096);
	assert_true(stats.pushbuffer_wraps > 50);
	assert_true(stats.waits_for_space > 0);
	assert_int_equal(vgpu_hal_channel_state(vgpu_guest_simgpu_channel(f->dev, stats.index),
	                                        NULL),
	                 VGPU_CHANNEL_OK);
	vgpu_channel_destroy(ch);
	vgpu_buffer_free(f->dev, &log);
}

static void test_killed_channel(void **state)
{
	struct fixture *f = *state;
	struct vgpu_channel *ch;
	uint32_t *words;
	uint64_t fence;

	assert_int_equal(vgpu_channel_create(f->dev, 8, &ch), 0);
	vgpu_channel_set_timeout(ch, 5000);
	/* FILL of an unmapped address kills the channel. */
	assert_int_equal(vgpu_channel_begin(ch, VGPU_COMMAND_MAX_WORDS, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, vgpu_push_launch_fill(words, 0x7000000000ull,
	                                                               4096, 1),
	                                     0, &fence),
	                 0);
	assert_int_equal(vgpu_channel_wait(ch, fence, 5000), -EIO);
	assert_int_equal(vgpu_channel_begin(ch, 4, &words), -EIO);
	vgpu_channel_destroy(ch);
	/* The device itself is fine. */
	assert_int_equal(vgpu_channel_create(f->dev, 8, &ch), 0);
	assert_int_equal(vgpu_channel_begin(ch, 4, &words), 0);
	assert_int_equal(vgpu_channel_submit(ch, 0, VGPU_SUBMIT_INTERRUPT, &fence), 0);
	assert_int_equal(vgpu_channel_wait(ch, fence, 5000), 0);
	vgpu_channel_destroy(ch);
}

static void test_channel_limit(void **state)
{
	struct fixture *f = *state;
	struct vgpu_channel *ch[VGPU_MAX_CHANNELS + 1];
	unsigned i;

	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		assert_int_equal(vgpu_channel_create(f->dev, 2, &ch[i]), 0);
	assert_int_equal(vgpu_channel_create(f->dev, 2, &ch[i]), -ENOSPC);
	assert_non_null(strstr(vgpu_device_last_error(f->dev), "CHANNEL_CREATE"));
	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		vgpu_channel_destroy(ch[i]);
}

/* ------------------------------------------------------------------------ */
/* Workloads                                                                */

static void run_workload(struct fixture *f, enum vgpu_workload_kind kind, uint64_t iterations,
                         struct vgpu_workload_result *result)
{
	struct vgpu_workload_options options = {
		.kind = kind,
		.size_bytes = 6ull << 20,
		.buffer_bytes = 1ull << 20,
		.iterations = iterations,
		.seed = 1234,
		.priority = 5,
		.gpfifo_entries = 16,
	};

	assert_int_equal(vgpu_workload_run(f->dev, &options, result), 0);
	print_message("%s: %s, %llu iterations, %llu checksums, %.2f s\n", result->workload,
	              result->verified ? "verified" : result->message,
	              (unsigned long long)result->iterations,
	              (unsigned long long)result->checksums, result->wall_seconds);
}

static void test_workloads_verify(void **state)
{
	struct fixture *f = *state;
	struct vgpu_workload_result result;
	struct vgpu_stats_response stats;

	run_workload(f, VGPU_WORKLOAD_STREAM, 5, &result);
	assert_true(result.verified);
	assert_int_equal(result.buffers, 6);
	assert_int_equal(result.checksums, 6);
	assert_int_equal(result.iterations, 5);
	assert_int_equal(result.bytes_allocated, 6ull << 20);
	assert_true(result.submissions >= 6 + 5 * 6 + 6);

	run_workload(f, VGPU_WORKLOAD_STENCIL, 3, &result);
	assert_true(result.verified);
	assert_int_equal(result.buffers, 6); /* 3 grids of in + out */
	assert_int_equal(result.checksums, 3);

	run_workload(f, VGPU_WORKLOAD_STENCIL, 4, &result); /* result back in A */
	assert_true(result.verified);

	run_workload(f, VGPU_WORKLOAD_GUPS, 2, &result);
	assert_true(result.verified);
	assert_int_equal(result.checksums, 6);

	run_workload(f, VGPU_WORKLOAD_ALLOC_LEAK, 0, &result);
	assert_true(result.verified);
	assert_true(result.target_reached);
	assert_int_equal(result.buffers, 6);
	assert_true(result.have_stats);
	assert_int_equal(result.stats.allocated_bytes, 6ull << 20);

	/* Everything was freed. */
	assert_int_equal(vgpu_device_stats(f->dev, &stats), 0);
	assert_int_equal(stats.allocated_bytes, 0);
}

static void test_workload_duration(void **state)
{
	struct fixture *f = *state;
	struct vgpu_workload_result result;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_STREAM,
		.size_bytes = 1ull << 20,
		.buffer_bytes = 256ull << 10,
		.duration_ns = 300000000ull,
		.seed = 3,
	};

	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
	assert_true(result.verified);
	assert_true(result.iterations > 1);
	assert_true(result.wall_seconds >= 0.3);

	options.kind = VGPU_WORKLOAD_ALLOC_LEAK;
	options.duration_ns = 200000000ull;
	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
	assert_true(result.verified);
	assert_true(result.wall_seconds >= 0.2);
}

static void corrupt_one_byte(void *arg, struct vgpu_guest_device *dev,
                             const struct vgpu_guest_buffer *buffers, uint64_t count)
{
	struct vgpu_hal_as *as = vgpu_guest_simgpu_as(dev);
	uint8_t byte;

	(void)arg;
	assert_true(count > 2);
	assert_int_equal(vgpu_hal_as_read(as, buffers[2].gpu_va + 12345, &byte, 1), 0);
	byte ^= 0x10;
	assert_int_equal(vgpu_hal_as_write(as, buffers[2].gpu_va + 12345, &byte, 1), 0);
}

static void test_workload_catches_corruption(void **state)
{
	struct fixture *f = *state;
	struct vgpu_workload_result result;
	enum vgpu_workload_kind kinds[] = { VGPU_WORKLOAD_STREAM, VGPU_WORKLOAD_GUPS,
		                            VGPU_WORKLOAD_ALLOC_LEAK };
	struct vgpu_workload_options options = {
		.size_bytes = 4ull << 20,
		.buffer_bytes = 1ull << 20,
		.iterations = 2,
		.before_verify = corrupt_one_byte,
	};
	unsigned i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		options.kind = kinds[i];
		assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
		assert_false(result.verified);
		assert_int_equal(result.mismatches, 1);
		assert_int_equal(result.checksums, 4);
		assert_non_null(strstr(result.message, "buffer 2 "));
	}
}

static void test_alloc_leak_stops_at_cap(void **state)
{
	struct fixture *f = *state;
	struct vgpu_workload_result result;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_ALLOC_LEAK,
		.size_bytes = 8ull << 20,
		.buffer_bytes = 1ull << 20,
	};

	vgpu_device_close(f->dev);
	assert_int_equal(open_device(f, 0, 3ull << 20), 0);
	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
	assert_true(result.verified);
	assert_false(result.target_reached);
	assert_int_equal(result.buffers, 3);
	assert_int_equal(result.bytes_allocated, 3ull << 20);
	assert_non_null(strstr(result.message, "allocation stopped"));

	/* The other workloads need all their memory: a clear error. */
	options.kind = VGPU_WORKLOAD_STREAM;
	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), -ENOMEM);
	assert_false(result.verified);
	assert_non_null(strstr(result.message, "out of GPU memory"));
}

/* soak: a second "VM" on the fixture's GPU that detaches and attaches again. */
struct soak_vm {
	struct vgpu_hal *hal;
	struct vgpu_guest_device *current; /* the workload's device, kept in step */
	unsigned int reattaches;
	bool corrupted;
};

static int soak_reattach(void *arg, struct vgpu_guest_device **dev, char *why, size_t why_len)
{
	struct soak_vm *vm = arg;
	struct vgpu_guest_simgpu_config config = { .hal = vm->hal };
	int ret;

	vgpu_device_close(*dev); /* with its buffers: the address space goes */
	*dev = NULL;
	vm->reattaches++;
	ret = vgpu_device_open_simgpu(&config, dev, why, why_len);
	vm->current = *dev;
	return ret;
}

/* Once: flip a byte of the first buffer held. */
static void soak_corrupt_once(void *arg, struct vgpu_guest_device *dev,
                              const struct vgpu_guest_buffer *buffers, uint64_t count)
{
	struct soak_vm *vm = arg;
	struct vgpu_hal_as *as = vgpu_guest_simgpu_as(dev);
	uint8_t byte;

	if (vm->corrupted || !count)
		return;
	assert_int_equal(vgpu_hal_as_read(as, buffers[0].gpu_va + 100, &byte, 1), 0);
	byte ^= 0x04;
	assert_int_equal(vgpu_hal_as_write(as, buffers[0].gpu_va + 100, &byte, 1), 0);
	vm->corrupted = true;
}

static void test_soak_steps_verify(void **state)
{
	struct fixture *f = *state;
	struct soak_vm vm = { .hal = f->hal };
	struct vgpu_guest_simgpu_config config = { .hal = f->hal };
	struct vgpu_workload_result result, again;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_SOAK,
		.size_bytes = 6ull << 20,
		.buffer_bytes = 1ull << 20,
		.iterations = 600,
		.seed = 7,
		.reattach = soak_reattach,
		.reattach_arg = &vm,
	};
	const struct vgpu_soak_counts *c = &result.soak;
	char why[256];

	assert_int_equal(vgpu_device_open_simgpu(&config, &vm.current, why, sizeof(why)), 0);
	assert_int_equal(vgpu_workload_run(vm.current, &options, &result), 0);
	print_message("soak: %" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64 " streams, %" PRIu64
	              " verifies, %" PRIu64 " detaches, %" PRIu64 " checksums\n",
	              c->allocs, c->frees, c->streams, c->verifies, c->detaches, result.checksums);
	assert_true(result.verified);
	assert_int_equal(result.iterations, 600);
	assert_int_equal(result.mismatches, 0);
	/* 600 steps of 30/25/30/13/2 in 100: every kind happens. */
	assert_true(c->allocs > 50 && c->frees > 50 && c->streams > 50 && c->verifies > 20);
	assert_true(c->detaches > 0);
	assert_int_equal(vm.reattaches, c->detaches);
	assert_int_equal(c->alloc_refused, 0);
	/* Every buffer freed or dropped was checksummed first, and the rest at
	 * the end: at least one checksum per buffer plus the verify steps. */
	assert_true(result.checksums >= c->allocs + c->verifies);
	assert_true(result.bytes_allocated <= options.size_bytes);

	/* The same seed takes the same steps. */
	assert_int_equal(vgpu_workload_run(vm.current, &options, &again), 0);
	assert_memory_equal(&again.soak, &result.soak, sizeof(result.soak));
	assert_int_equal(again.checksums, result.checksums);

	/* A byte changed behind the GPU's back is caught, whatever steps
	 * (STREAM passes, a detach) come between. */
	options.before_verify = soak_corrupt_once;
	options.hook_arg = &vm;
	assert_int_equal(vgpu_workload_run(vm.current, &options, &again), 0);
	assert_true(vm.corrupted);
	assert_false(again.verified);
	assert_true(again.mismatches >= 1);
	assert_non_null(strstr(again.message, "checksum"));

	/* Without a reattach hook there are no detaches. */
	options.reattach = NULL;
	options.before_verify = NULL;
	assert_int_equal(vgpu_workload_run(vm.current, &options, &again), 0);
	assert_true(again.verified);
	assert_int_equal(again.soak.detaches, 0);
	vgpu_device_close(vm.current);
}

/* Two "VMs" on one GPU: the same GPU VA means different memory. */
static void test_two_devices_share_a_gpu(void **state)
{
	struct fixture *f = *state;
	struct vgpu_guest_simgpu_config config = { .hal = f->hal };
	struct vgpu_workload_result result;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_STREAM,
		.size_bytes = 2ull << 20,
		.iterations = 2,
	};
	struct vgpu_guest_device *other;
	struct vgpu_guest_buffer a, b;
	uint64_t value = 0x1111, got;
	char why[256];

	assert_int_equal(vgpu_device_open_simgpu(&config, &other, why, sizeof(why)), 0);
	assert_int_equal(vgpu_buffer_alloc(f->dev, 4096, 0, &a), 0);
	assert_int_equal(vgpu_buffer_alloc(other, 4096, 0, &b), 0);
	assert_int_equal(a.gpu_va, b.gpu_va);
	assert_int_equal(vgpu_hal_as_write(f->as, a.gpu_va, &value, 8), 0);
	value = 0x2222;
	assert_int_equal(vgpu_hal_as_write(vgpu_guest_simgpu_as(other), b.gpu_va, &value, 8), 0);
	assert_int_equal(vgpu_hal_as_read(f->as, a.gpu_va, &got, 8), 0);
	assert_int_equal(got, 0x1111);
	assert_int_equal(vgpu_workload_run(other, &options, &result), 0);
	assert_true(result.verified);
	vgpu_buffer_free(other, &b);
	vgpu_device_close(other); /* leaves the shared GPU alone */
	assert_int_equal(vgpu_hal_as_read(f->as, a.gpu_va, &got, 8), 0);
	assert_int_equal(got, 0x1111);
	vgpu_buffer_free(f->dev, &a);
}

/* escape: every attempt refused (the channel killed), its data verified. */
static void test_escape_refused(void **state)
{
	struct fixture *f = *state;
	struct vgpu_workload_result result;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_ESCAPE,
		.size_bytes = 4ull << 20,
		.buffer_bytes = 1ull << 20,
		.seed = 5,
	};
	struct vgpu_stats_response stats;
	struct vgpu_guest_buffer buf;
	unsigned i;

	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
	assert_true(result.verified);
	assert_int_equal(result.buffers, 4);
	assert_int_equal(result.checksums, 4);
	assert_int_equal(result.mismatches, 0);
	assert_int_equal(result.escapes_tried, VGPU_ESCAPE_ATTEMPTS);
	assert_int_equal(result.escapes_refused, VGPU_ESCAPE_ATTEMPTS);
	for (i = 0; i < VGPU_ESCAPE_ATTEMPTS; i++) {
		assert_true(result.escapes[i].tried);
		assert_true(result.escapes[i].refused);
		assert_int_equal(result.escapes[i].error, -EIO);
		assert_true(result.escapes[i].gpu_va < VGPU_ESCAPE_VA_LIMIT);
	}
	assert_string_equal(result.escapes[0].name, "stream-past-end");
	assert_string_equal(result.escapes[1].name, "fill-far");
	assert_string_equal(result.escapes[2].name, "copy-out");
	assert_int_equal(result.escapes[0].bytes, 1ull << 20);
	/* simgpu runs STREAM page by page up to the fault: the last buffer was
	 * streamed once, and the verification knows it. */
	assert_non_null(strstr(result.message,
	                       "3 of 3 escapes refused by the GPU; own data intact"));
	assert_non_null(strstr(result.message, "up to the fault"));
	assert_int_equal(vgpu_device_stats(f->dev, &stats), 0);
	assert_int_equal(stats.allocated_bytes, 0);
	/* The device still works: the killed channels were the attempts' own. */
	assert_int_equal(vgpu_buffer_alloc(f->dev, 4096, 0, &buf), 0);
	assert_int_equal(vgpu_buffer_free(f->dev, &buf), 0);
	options.kind = VGPU_WORKLOAD_STREAM;
	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), 0);
	assert_true(result.verified);
}

/* A "GPU" that lets escape (b) through: memory mapped where it aims. */
struct escape_hole {
	struct fixture *f;
	const char *name; /* the attempt to let through */
	uint64_t va, pages[64];
	uint64_t count;
};

static void map_escape_target(void *arg, struct vgpu_guest_device *dev,
                              const struct vgpu_escape_attempt *attempt)
{
	struct escape_hole *hole = arg;

	(void)dev;
	if (strcmp(attempt->name, hole->name))
		return;
	hole->va = attempt->gpu_va;
	hole->count = attempt->bytes / 65536;
	assert_true(hole->count > 0 && hole->count <= 64);
	assert_int_equal(vgpu_hal_vram_alloc(hole->f->hal, 65536, hole->count, hole->pages), 0);
	assert_int_equal(vgpu_hal_as_map(hole->f->as, hole->va, 65536, hole->count,
	                                 VGPU_TARGET_VRAM, hole->pages, 0),
	                 0);
}

static void test_escape_that_completes_fails(void **state)
{
	struct fixture *f = *state;
	struct escape_hole hole = { .f = f, .name = "fill-far" };
	struct vgpu_workload_result result;
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_ESCAPE,
		.size_bytes = 2ull << 20,
		.buffer_bytes = 1ull << 20,
		.before_escape = map_escape_target,
		.hook_arg = &hole,
	};

	assert_int_equal(vgpu_workload_run(f->dev, &options, &result), -EACCES);
	assert_false(result.verified);
	assert_int_equal(result.escapes_tried, 3);
	assert_int_equal(result.escapes_refused, 2);
	assert_true(result.escapes[0].refused);
	assert_false(result.escapes[1].refused);
	assert_int_equal(result.escapes[1].error, 0);
	assert_true(result.escapes[2].refused);
	assert_non_null(strstr(result.message, "2 of 3 escapes refused"));
	assert_non_null(strstr(result.message, "fill-far"));
	assert_null(strstr(result.message, "stream-past-end"));
	assert_int_equal(result.checksums, 2); /* its own data still checked */
	assert_int_equal(result.mismatches, 0);
	assert_int_equal(vgpu_hal_as_unmap(f->as, hole.va, hole.count * 65536), 0);
	vgpu_hal_as_tlb_invalidate(f->as);
	vgpu_hal_vram_free(f->hal, 65536, hole.count, hole.pages);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_device_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fill_reads_back_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fences, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpfifo_wraps_in_order, setup_small_pushbuffer,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_pushbuffer_reuse, setup_small_pushbuffer,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_killed_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_channel_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workloads_verify, setup_small_pushbuffer,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_workload_duration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workload_catches_corruption, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_leak_stops_at_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_devices_share_a_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_soak_steps_verify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escape_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escape_that_completes_fails, setup, teardown),
	};

	return cmocka_run_group_tests_name("guest submission on simgpu", tests, NULL, NULL);
}
