// SPDX-License-Identifier: MIT
/*
 * test_concurrency.c - the guest side with threads against each other (run
 * under ThreadSanitizer in the 'concurrency' suite):
 *  - GP_PUT ordering: a "GPU" thread consumes a channel the runtime fills
 *    and checks every GPFIFO entry and pushbuffer it is allowed to see, and
 *    the runtime reuses pushbuffer space only after that GPU is done;
 *  - the mailbox protocol with a lock hook: several callers, a device thread;
 *  - two "VMs" on one simgpu, each driven by its own thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_device.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"
#include "vgpu_guest.h"
#include "vgpu_guest_backend.h"
#include "vgpu_guest_simgpu.h"
#include "vgpu_proto.h"
#include "vgpu_workloads.h"

/* ------------------------------------------------------------------------ */
/* A channel window in plain memory and a GPU thread that checks it         */

#define WINDOW_ENTRIES 8u
#define WINDOW_PUSHBUFFER_BYTES 8192u
#define NOTIFIER_VA 0x10000000ull
#define PUSHBUFFER_VA 0x20000000ull

struct window_gpu {
	uint8_t *control;
	uint8_t *gpfifo;
	uint8_t *notifier;
	uint8_t *pushbuffer;
	pthread_t thread;
	int stop;              /* atomic */
	uint64_t executed;     /* atomic: entries run */
	uint64_t errors;       /* atomic */
	char first_error[160]; /* written before errors becomes nonzero */
};

static void gpu_error(struct window_gpu *gpu, const char *what, uint64_t a, uint64_t b)
{
	if (__atomic_load_n(&gpu->errors, __ATOMIC_RELAXED) == 0)
		snprintf(gpu->first_error, sizeof(gpu->first_error), "%s (%llu, %llu)", what,
		         (unsigned long long)a, (unsigned long long)b);
	__atomic_add_fetch(&gpu->errors, 1, __ATOMIC_RELEASE);
}

/* Runs one entry: the pushbuffer must be NOP(n) with n words equal to the
 * fence's low half, then SEMAPHORE_RELEASE(notifier, fence). */
static void gpu_run_entry(struct window_gpu *gpu, uint32_t get, uint64_t *last_fence)
{
	struct vgpu_gpfifo_entry entry;
	uint32_t words[WINDOW_PUSHBUFFER_BYTES / 4], count, nop, i;
	uint64_t va, fence, offset;

	memcpy(&entry, gpu->gpfifo + (size_t)get * VGPU_GPFIFO_ENTRY_BYTES, sizeof(entry));
	va = le64toh(entry.pushbuffer_va);
	count = le32toh(entry.length_bytes) / 4;
	offset = va - PUSHBUFFER_VA;
	if (va < PUSHBUFFER_VA || offset + count * 4ull > WINDOW_PUSHBUFFER_BYTES ||
	    entry.length_bytes % 4 || count < 6 || entry.flags) {
		gpu_error(gpu, "bad GPFIFO entry", va, entry.length_bytes);
		return;
	}
	memcpy(words, gpu->pushbuffer + offset, count * 4ull);
	nop = le32toh(words[0]);
	if (VGPU_COMMAND_OPCODE(nop) != VGPU_CMD_NOP ||
	    VGPU_COMMAND_ARG_WORDS(nop) + 1 + 5 != count) {
		gpu_error(gpu, "bad NOP", nop, count);
		return;
	}
	if (VGPU_COMMAND_OPCODE(le32toh(words[count - 5])) != VGPU_CMD_SEMAPHORE_RELEASE ||
	    le32toh(words[count - 4]) != (uint32_t)NOTIFIER_VA) {
		gpu_error(gpu, "bad fence command", le32toh(words[count - 5]), count);
		return;
	}
	fence = (uint64_t)le32toh(words[count - 2]) | (uint64_t)le32toh(words[count - 1]) << 32;
	if (fence != *last_fence + 1) {
		gpu_error(gpu, "fence out of order", fence, *last_fence);
		return;
	}
	for (i = 1; i + 5 < count; i++) {
		if (le32toh(words[i]) != (uint32_t)fence) {
			gpu_error(gpu, "pushbuffer not what was submitted", fence, i);
			return;
		}
	}
	*last_fence = fence;
	/* "Execute": release the fence, then let the ring slot go. */
	__atomic_store_n((uint64_t *)(gpu->notifier + VGPU_NOTIFIER_FENCE_OFFSET), htole64(fence),
	                 __ATOMIC_RELEASE);
}

static void *gpu_thread(void *arg)
{
	struct window_gpu *gpu = arg;
	uint64_t last_fence = 0;
	uint32_t get = 0, put;

	while (!__atomic_load_n(&gpu->stop, __ATOMIC_ACQUIRE)) {
		put = vgpu_control_read_gp_put(gpu->control);
		if (put == get) {
			sched_yield();
			continue;
		}
		if (put >= WINDOW_ENTRIES) {
			gpu_error(gpu, "GP_PUT outside the ring", put, get);
			break;
		}
		gpu_run_entry(gpu, get, &last_fence);
		get = (get + 1) % WINDOW_ENTRIES;
		__atomic_store_n((uint32_t *)(gpu->control + VGPU_CONTROL_GP_GET), htole32(get),
		                 __ATOMIC_RELEASE);
		__atomic_add_fetch(&gpu->executed, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int window_info(void *backend, struct vgpu_device_info *out)
{
	(void)backend;
	memset(out, 0, sizeof(*out));
	out->abi_version = VGPU_ABI_VERSION;
	out->max_channels = 1;
	return 0;
}

static int window_alloc(void *backend, uint64_t bytes, uint32_t priority, uint32_t flags,
                        struct vgpu_alloc_response *out)
{
	(void)backend, (void)bytes, (void)priority, (void)flags, (void)out;
	return -EOPNOTSUPP;
}

static int window_free(void *backend, uint32_t handle)
{
	(void)backend, (void)handle;
	return -ENOENT;
}

static int window_set_priority(void *backend, uint32_t handle, uint32_t priority)
{
	(void)backend, (void)handle, (void)priority;
	return -ENOENT;
}

static int window_stats(void *backend, struct vgpu_stats_response *out)
{
	(void)backend;
	memset(out, 0, sizeof(*out));
	return 0;
}

static int window_open(void *backend, uint32_t gpfifo_entries, struct vgpu_channel_window *out)
{
	struct window_gpu *gpu = backend;

	(void)gpfifo_entries;
	*out = (struct vgpu_channel_window){
		.index = 0,
		.gpfifo_entries = WINDOW_ENTRIES,
		.control = gpu->control,
		.gpfifo = gpu->gpfifo,
		.notifier = gpu->notifier,
		.pushbuffer = gpu->pushbuffer,
		.notifier_bytes = 4096,
		.pushbuffer_bytes = WINDOW_PUSHBUFFER_BYTES,
		.notifier_gpu_va = NOTIFIER_VA,
		.pushbuffer_gpu_va = PUSHBUFFER_VA,
	};
	return 0;
}

static void window_close(void *backend, struct vgpu_channel_window *window)
{
	(void)backend, (void)window;
}

static void window_destroy(void *backend)
{
	(void)backend;
}

static const struct vgpu_backend_ops window_ops = {
	.name = "window-double",
	.destroy = window_destroy,
	.info = window_info,
	.alloc = window_alloc,
	.free = window_free,
	.set_priority = window_set_priority,
	.stats = window_stats,
	.channel_open = window_open,
	.channel_close = window_close,
};

static void test_gp_put_ordering(void **state)
{
	struct window_gpu gpu = { 0 };
	struct vgpu_channel_stats stats;
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
	uint64_t fence = 0, rng = 99;
	uint32_t *words, n, i;
	unsigned s;
	char why[128];

	(void)state;
	assert_int_equal(posix_memalign((void **)&gpu.control, 4096, 4 * 4096 +
	                                                                 WINDOW_PUSHBUFFER_BYTES),
	                 0);
	memset(gpu.control, 0, 4 * 4096 + WINDOW_PUSHBUFFER_BYTES);
	gpu.gpfifo = gpu.control + 4096;
	gpu.notifier = gpu.control + 2 * 4096;
	gpu.pushbuffer = gpu.control + 4 * 4096;
	*(uint32_t *)(gpu.control + VGPU_CONTROL_VERSION) = htole32(VGPU_COMMANDS_VERSION);
	assert_int_equal(vgpu_device_create(&window_ops, &gpu, &dev, why, sizeof(why)), 0);
	assert_int_equal(vgpu_channel_create(dev, 0, &ch), 0);
	assert_int_equal(pthread_create(&gpu.thread, NULL, gpu_thread, &gpu), 0);

	for (s = 0; s < 20000; s++) {
		n = (uint32_t)(vgpu_xorshift64(&rng) % 400) + 1;
		assert_int_equal(vgpu_channel_begin(ch, n + 1, &words), 0);
		words[0] = htole32(VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, n));
		/* The fence this submission will get. */
		for (i = 1; i <= n; i++)
			words[i] = htole32((uint32_t)(fence + 1));
		assert_int_equal(vgpu_channel_submit(ch, n + 1, 0, &fence), 0);
		assert_int_equal(fence, s + 1);
	}
	assert_int_equal(vgpu_channel_finish(ch, 20000), 0);
	__atomic_store_n(&gpu.stop, 1, __ATOMIC_RELEASE);
	pthread_join(gpu.thread, NULL);
	if (__atomic_load_n(&gpu.errors, __ATOMIC_ACQUIRE))
		fail_msg("the GPU saw: %s", gpu.first_error);
	assert_int_equal(__atomic_load_n(&gpu.executed, __ATOMIC_ACQUIRE), 20000);
	vgpu_channel_stats(ch, &stats);
	assert_true(stats.pushbuffer_wraps > 100);
	assert_int_equal(le32toh(*(uint32_t *)(gpu.control + VGPU_CONTROL_GP_PUT)),
	                 20000 % WINDOW_ENTRIES);
	vgpu_channel_destroy(ch);
	vgpu_device_close(dev);
	free(gpu.control);
}

/* ------------------------------------------------------------------------ */
/* The protocol with several callers                                        */

static void mutex_lock(void *ctx)
{
	pthread_mutex_lock(ctx);
}

static void mutex_unlock(void *ctx)
{
	pthread_mutex_unlock(ctx);
}

struct caller {
	struct vgpu_proto *proto;
	int failures;
};

static void *caller_thread(void *arg)
{
	struct caller *c = arg;
	struct vgpu_alloc_response alloc;
	struct vgpu_stats_response stats;
	int i;

	for (i = 0; i < 300; i++) {
		if (vgpu_proto_alloc(c->proto, 4096 * (i % 7 + 1), i % 16, 0, &alloc) ||
		    alloc.bytes != 4096ull * (i % 7 + 1))
			c->failures++;
		else if (vgpu_proto_free(c->proto, alloc.handle))
			c->failures++;
		if (i % 50 == 0 && vgpu_proto_stats(c->proto, &stats))
			c->failures++;
	}
	return NULL;
}

static void test_proto_concurrent_callers(void **state)
{
	static const struct vgpu_proto_lock_ops lock_ops = {
		.lock = mutex_lock,
		.unlock = mutex_unlock,
	};
	pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	struct fake_device *fake = fake_device_create();
	struct vgpu_proto_config config = fake_device_proto_config(fake, 10000);
	struct vgpu_proto proto;
	struct caller callers[4];
	pthread_t threads[4];
	int i;

	(void)state;
	config.lock = &lock_ops;
	config.lock_ctx = &mutex;
	fake_device_start_thread(fake);
	assert_int_equal(vgpu_proto_init(&proto, &config), 0);
	assert_int_equal(vgpu_proto_hello(&proto, 0, NULL), 0);
	for (i = 0; i < 4; i++) {
		callers[i] = (struct caller){ .proto = &proto };
		assert_int_equal(pthread_create(&threads[i], NULL, caller_thread, &callers[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(threads[i], NULL);
		assert_int_equal(callers[i].failures, 0);
	}
	pthread_mutex_lock(&mutex);
	assert_int_equal(proto.counters.requests, 1 + 4 * (600 + 6));
	assert_int_equal(proto.counters.responses, proto.counters.requests);
	assert_int_equal(proto.counters.malformed_responses, 0);
	assert_int_equal(proto.counters.stale_responses, 0);
	pthread_mutex_unlock(&mutex);
	fake_device_stop_thread(fake);
	fake_device_destroy(fake);
}

/* ------------------------------------------------------------------------ */
/* Two VMs on one simgpu                                                    */

struct vm_thread {
	struct vgpu_guest_device *dev;
	enum vgpu_workload_kind kind;
	struct vgpu_workload_result result;
	int ret;
};

static void *vm_thread_main(void *arg)
{
	struct vm_thread *vm = arg;
	struct vgpu_workload_options options = {
		.kind = vm->kind,
		.size_bytes = 4ull << 20,
		.buffer_bytes = 1ull << 20,
		.iterations = 4,
		.seed = (uint64_t)vm->kind + 1,
		.gpfifo_entries = 8,
	};

	vm->ret = vgpu_workload_run(vm->dev, &options, &vm->result);
	return NULL;
}

static void test_two_vms_in_parallel(void **state)
{
	struct simgpu_config gpu;
	struct vgpu_guest_simgpu_config config = { 0 };
	struct vgpu_hal *hal;
	struct vm_thread vms[2] = { { .kind = VGPU_WORKLOAD_STREAM },
		                    { .kind = VGPU_WORKLOAD_GUPS } };
	pthread_t threads[2];
	char why[128];
	int i;

	(void)state;
	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = 64ull << 20;
	assert_int_equal(simgpu_create(&gpu, &hal), 0);
	config.hal = hal;
	config.pushbuffer_bytes = 4096;
	for (i = 0; i < 2; i++)
		assert_int_equal(vgpu_device_open_simgpu(&config, &vms[i].dev, why, sizeof(why)), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, vm_thread_main, &vms[i]), 0);
	for (i = 0; i < 2; i++) {
		pthread_join(threads[i], NULL);
		assert_int_equal(vms[i].ret, 0);
		assert_true(vms[i].result.verified);
		vgpu_device_close(vms[i].dev);
	}
	vgpu_hal_destroy(hal);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gp_put_ordering),
		cmocka_unit_test(test_proto_concurrent_callers),
		cmocka_unit_test(test_two_vms_in_parallel),
	};

	return cmocka_run_group_tests_name("guest concurrency", tests, NULL, NULL);
}
