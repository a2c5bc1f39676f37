// SPDX-License-Identifier: MIT
/*
 * test_hal_kill.c - cudagpu's kill of a channel with a deep backlog of
 * long kernels (vgpu/cudagpu.h, "Kill"), beside an honest tenant:
 *  - the hog's backlog does not stall the submission thread: the honest
 *    VM's work goes on meanwhile (the driver's queue is small here, and
 *    max_ops_in_flight keeps the hog below it);
 *  - channel_kill and channel_destroy return within kill_wait_ms and a
 *    margin, however much is queued;
 *  - the hog's VRAM, freed while its work still runs, is not handed out
 *    again (vram_free_bytes does not count it, an allocation of all free
 *    VRAM gets none of it) until the work is done; then it comes back;
 *  - the honest VM's data checks out by checksum on the GPU throughout.
 *
 * Under process isolation the worker does the bounded wait and, the work
 * still running, vgpud kills that worker (the VM's context alone): the
 * kill returns within the same bound, nothing is held back, and the
 * honest VM in its own worker goes on.
 *
 * Long kernels are the CPU stand-in driver's (tests/cudagpu/fake_libcuda.c):
 * FAKE_CUDA_STREAM_PASS_US gives each pass of the STREAM kernel a
 * duration and FAKE_CUDA_STREAM_QUEUE the queue's depth. The group is
 * skipped unless the backend is cudagpu on the stand-in with those set;
 * VGPU_CUDA_KILL_WAIT_MS sets the bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal_conformance.h"
#include "vgpu/cudagpu.h"

#define VM_BYTES (4 * MIB)
#define HOG_BUFFER (64 * KIB)
#define HOG_LAUNCHES 1000u
#define HOG_PASSES 10u
#define MARGIN_MS 1500u /* a loaded 2-core machine's scheduling */

struct vm {
	struct tspace *sp;
	struct tmem *data;
	struct tchan *tc;
	uint64_t seed;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static unsigned env_u(const char *name)
{
	const char *text = getenv(name);

	return text && *text ? (unsigned)strtoul(text, NULL, 10) : 0;
}

static bool process_mode(void)
{
	const char *isolation = getenv("VGPU_CUDA_ISOLATION");

	return isolation && !strcmp(isolation, "process");
}

/* cudagpu on the stand-in with timed kernels, in one process (or with a
 * worker per VM: process)? */
static bool timed_fake(bool process)
{
	return cudagpu_is_cudagpu(suite.hal) && getenv("VGPU_CUDA_LIBRARY") &&
	       env_u("FAKE_CUDA_STREAM_PASS_US") && env_u("VGPU_CUDA_KILL_WAIT_MS") &&
	       process_mode() == process;
}

static void vm_start(struct vm *vm, uint64_t seed)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	vm->sp = space_create();
	vm->data = mem_vram(vm->sp->as, DATA_VA, VM_BYTES, suite.vram_page, 0);
	vm->tc = chan_create(vm->sp, 0);
	vm->seed = seed;
	assert_true(chan_run(vm->tc, words, vgpu_push_launch_fill(words, DATA_VA, VM_BYTES,
	                                                           seed)));
}

/* The honest VM: a fresh fill and its checksum on the GPU, exact; how
 * long it took (ms). */
static uint64_t vm_check(struct vm *vm, uint64_t seed)
{
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS];
	uint8_t *expected = reference_fill(VM_BYTES, seed);
	uint64_t want = vgpu_kernel_reference_checksum(expected, VM_BYTES - 8), result = 0;
	uint64_t t0 = now_ms();
	uint32_t n;

	n = vgpu_push_launch_fill(words, DATA_VA, VM_BYTES, seed);
	n += vgpu_push_launch_checksum(words + n, DATA_VA, VM_BYTES - 8, DATA_VA + VM_BYTES - 8);
	assert_true(chan_run(vm->tc, words, n));
	t0 = now_ms() - t0;
	read_ok(vm->sp->as, DATA_VA + VM_BYTES - 8, &result, 8);
	free(expected);
	if (result != want)
		fail_msg("the honest VM's checksum 0x%llx, expected 0x%llx",
		         (unsigned long long)result, (unsigned long long)want);
	return t0;
}

/* The hog: one entry of HOG_LAUNCHES long STREAM kernels, seconds of
 * work; waits until some of it runs. */
static void hog_queue(struct vm *hog)
{
	uint32_t *words = xmalloc((size_t)HOG_LAUNCHES * VGPU_COMMAND_MAX_WORDS * 4);
	uint32_t n = 0;

	for (unsigned i = 0; i < HOG_LAUNCHES; i++)
		n += vgpu_push_launch_stream(words + n, DATA_VA, HOG_BUFFER, HOG_PASSES);
	chan_push(hog->tc, words, n);
	vgpu_hal_channel_kick(hog->tc->channel);
	free(words);
	for (unsigned i = 0; i < 200 && !vgpu_hal_channel_pending(suite.hal, hog->tc->info.id);
	     i++)
		sleep_ms(1);
	sleep_ms(50);
	assert_true(vgpu_hal_channel_pending(suite.hal, hog->tc->info.id));
}

/* The hog's VRAM, freed as the core frees it (scrubbed, then freed) while
 * its work still runs: not handed out again. */
static uint64_t hog_free_memory(struct vm *hog, uint64_t *pages, uint64_t *count)
{
	uint64_t before, page = hog->data->page, n = VM_BYTES / page, free_pages, *all;

	*count = n;
	memcpy(pages, hog->data->vram, n * sizeof(*pages));
	before = vgpu_hal_vram_free_bytes(suite.hal);
	vgpu_hal_as_unmap(hog->sp->as, DATA_VA, VM_BYTES);
	vgpu_hal_as_tlb_invalidate(hog->sp->as);
	assert_int_equal(vgpu_hal_vram_scrub(suite.hal, (uint32_t)page, n, pages), 0);
	/* mem_free frees them (it unmaps again: a no-op) */
	mem_free(hog->data);
	hog->data = NULL;
	assert_int_equal(vgpu_hal_vram_free_bytes(suite.hal), before);
	assert_int_equal(vgpu_hal_vram_held_bytes(suite.hal), n * page);

	/* another VM takes all the free VRAM: none of the hog's pages */
	free_pages = before / page;
	all = xmalloc((size_t)(free_pages ? free_pages : 1) * sizeof(*all));
	if (free_pages) {
		assert_int_equal(vgpu_hal_vram_alloc(suite.hal, (uint32_t)page, free_pages, all),
		                 0);
		for (uint64_t i = 0; i < free_pages; i++)
			for (uint64_t j = 0; j < n; j++)
				if (all[i] == pages[j])
					fail_msg("VRAM page 0x%llx the killed VM's work still "
					         "reaches was handed out again",
					         (unsigned long long)pages[j]);
		vgpu_hal_vram_free(suite.hal, (uint32_t)page, free_pages, all);
	}
	free(all);
	return before;
}

/* The quarantine ends when the hog's work does: its pages come back. */
static void wait_released(uint64_t free_before, uint64_t count)
{
	uint64_t want = free_before + count * suite.vram_page, t0 = now_ms();

	while (vgpu_hal_vram_free_bytes(suite.hal) < want && now_ms() - t0 < 30000)
		sleep_ms(10);
	assert_int_equal(vgpu_hal_vram_free_bytes(suite.hal), want);
	assert_int_equal(vgpu_hal_vram_held_bytes(suite.hal), 0);
	printf("# quarantine released %llu ms after the memory was freed\n",
	       (unsigned long long)(now_ms() - t0));
}

static void test_kill_with_backlog(void **state)
{
	unsigned wait_ms = env_u("VGPU_CUDA_KILL_WAIT_MS");
	struct vm honest = { 0 }, hog = { 0 };
	uint64_t pages[VM_BYTES / (2 * MIB) + 1], count, t0, took, free_before;
	struct vgpu_hal_event error;
	unsigned mark;

	(void)state;
	if (!timed_fake(false))
		skip();
	vm_start(&honest, 1);
	vm_start(&hog, 2);
	vm_check(&honest, 3);
	hog_queue(&hog);

	/* the honest VM's work goes on beside the backlog */
	took = vm_check(&honest, 4);
	printf("# honest fill + checksum beside the backlog: %llu ms\n", (unsigned long long)took);
	assert_true(took < MARGIN_MS);

	mark = event_mark();
	t0 = now_ms();
	vgpu_hal_channel_kill(hog.tc->channel, VGPU_FAULT_TIMEOUT);
	took = now_ms() - t0;
	printf("# kill with a backlog: %llu ms (bound %u ms)\n", (unsigned long long)took,
	       wait_ms);
	assert_true(took < wait_ms + MARGIN_MS);
	assert_true(chan_wait_error(hog.tc, mark, &error));
	assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);

	free_before = hog_free_memory(&hog, pages, &count);
	vm_check(&honest, 5);

	/* destroying the killed channel and its address space waits for
	 * nothing either */
	t0 = now_ms();
	chan_destroy(hog.tc);
	space_destroy(hog.sp);
	took = now_ms() - t0;
	assert_true(took < MARGIN_MS);
	assert_true(vgpu_hal_vram_free_bytes(suite.hal) < free_before + count * suite.vram_page);

	vm_check(&honest, 6);
	wait_released(free_before, count);
	vm_check(&honest, 7);
	chan_destroy(honest.tc);
	mem_free(honest.data);
	space_destroy(honest.sp);
}

/* A destroy without a kill first: the same bound, the same quarantine. */
static void test_destroy_with_backlog(void **state)
{
	unsigned wait_ms = env_u("VGPU_CUDA_KILL_WAIT_MS");
	struct vm honest = { 0 }, hog = { 0 };
	uint64_t pages[VM_BYTES / (2 * MIB) + 1], count, t0, took, free_before;

	(void)state;
	if (!timed_fake(false))
		skip();
	vm_start(&honest, 11);
	vm_start(&hog, 12);
	hog_queue(&hog);
	t0 = now_ms();
	chan_destroy(hog.tc);
	took = now_ms() - t0;
	printf("# destroy with a backlog: %llu ms (bound %u ms)\n", (unsigned long long)took,
	       wait_ms);
	assert_true(took < wait_ms + MARGIN_MS);
	free_before = hog_free_memory(&hog, pages, &count);
	space_destroy(hog.sp);
	vm_check(&honest, 13);
	wait_released(free_before, count);
	chan_destroy(honest.tc);
	mem_free(honest.data);
	space_destroy(honest.sp);
}

/* Process isolation: the worker that cannot end its channel's work in
 * time goes; the honest VM's worker stays. */
static void test_kill_with_backlog_process(void **state)
{
	unsigned wait_ms = env_u("VGPU_CUDA_KILL_WAIT_MS");
	struct vm honest = { 0 }, hog = { 0 };
	uint64_t t0, took, free_before;
	struct vgpu_hal_event error;
	int honest_pid, hog_pid;
	unsigned mark;

	(void)state;
	if (!timed_fake(true))
		skip();
	vm_start(&honest, 21);
	vm_start(&hog, 22);
	honest_pid = cudagpu_worker_pid(honest.sp->as);
	hog_pid = cudagpu_worker_pid(hog.sp->as);
	assert_true(honest_pid > 0 && hog_pid > 0 && honest_pid != hog_pid);
	hog_queue(&hog);
	took = vm_check(&honest, 23);
	assert_true(took < MARGIN_MS);

	mark = event_mark();
	t0 = now_ms();
	vgpu_hal_channel_kill(hog.tc->channel, VGPU_FAULT_TIMEOUT);
	took = now_ms() - t0;
	printf("# kill with a backlog (process isolation): %llu ms (bound %u ms)\n",
	       (unsigned long long)took, wait_ms);
	assert_true(took < wait_ms + MARGIN_MS);
	assert_true(chan_wait_error(hog.tc, mark, &error));
	/* its worker went with the work (SIGKILL; its death is seen by
	 * vgpud's reader of it); nothing is held back */
	for (t0 = now_ms(); cudagpu_worker_pid(hog.sp->as) == hog_pid && now_ms() - t0 < 5000;)
		sleep_ms(10);
	assert_int_not_equal(cudagpu_worker_pid(hog.sp->as), hog_pid);
	assert_int_equal(vgpu_hal_vram_held_bytes(suite.hal), 0);
	free_before = vgpu_hal_vram_free_bytes(suite.hal);
	mem_free(hog.data);
	hog.data = NULL;
	assert_int_equal(vgpu_hal_vram_free_bytes(suite.hal), free_before + VM_BYTES);

	assert_int_equal(cudagpu_worker_pid(honest.sp->as), honest_pid);
	vm_check(&honest, 24);
	chan_destroy(hog.tc);
	space_destroy(hog.sp);
	chan_destroy(honest.tc);
	mem_free(honest.data);
	space_destroy(honest.sp);
}

static const struct CMUnitTest kill_tests[] = {
	HAL_TEST(test_kill_with_backlog),
	HAL_TEST(test_destroy_with_backlog),
	HAL_TEST(test_kill_with_backlog_process),
};

const struct hal_test_group hal_kill_group = {
	"hal-kill", kill_tests, sizeof(kill_tests) / sizeof(kill_tests[0]),
};
