// SPDX-License-Identifier: MIT
/* simgpu_test.c - fixtures for simgpu's tests (see simgpu_test.h). */
#include "simgpu_test.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

uint64_t test_seed(const char *test_name)
{
	const char *env = getenv("SIMGPU_TEST_SEED");
	uint64_t seed;

	if (env && *env)
		seed = strtoull(env, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	/* printed up front so a failing run can be replayed */
	printf("# %s: seed %llu (replay with SIMGPU_TEST_SEED=%llu)\n", test_name,
	       (unsigned long long)seed, (unsigned long long)seed);
	fflush(stdout);
	return seed;
}

void test_config(struct simgpu_config *config)
{
	simgpu_config_defaults(config);
	config->vram_bytes = UINT64_C(256) << 20;
	config->pfifo_idle_sleep_max_us = 200;
}

static void record_event(void *ctx, const struct vgpu_hal_event *event)
{
	struct test_gpu *gpu = ctx;

	pthread_mutex_lock(&gpu->lock);
	if (gpu->event_count < TEST_EVENT_LOG) {
		gpu->compute_channel_at_event[gpu->event_count] =
			vgpu_hal_engine_current_channel(gpu->hal, VGPU_ENGINE_COMPUTE);
		gpu->events[gpu->event_count++] = *event;
	}
	pthread_cond_broadcast(&gpu->changed);
	pthread_mutex_unlock(&gpu->lock);
}

struct test_gpu *test_gpu_create(const struct simgpu_config *config)
{
	struct test_gpu *gpu = calloc(1, sizeof(*gpu));
	struct simgpu_config defaults;

	assert_non_null(gpu);
	if (!config) {
		test_config(&defaults);
		config = &defaults;
	}
	assert_int_equal(simgpu_create(config, &gpu->hal), 0);
	vgpu_hal_get_caps(gpu->hal, &gpu->caps);
	pthread_mutex_init(&gpu->lock, NULL);
	pthread_cond_init(&gpu->changed, NULL);
	vgpu_hal_set_event_handler(gpu->hal, record_event, gpu);
	return gpu;
}

void test_gpu_destroy(struct test_gpu *gpu)
{
	vgpu_hal_destroy(gpu->hal);
	pthread_cond_destroy(&gpu->changed);
	pthread_mutex_destroy(&gpu->lock);
	free(gpu);
}

unsigned test_event_count(struct test_gpu *gpu)
{
	unsigned count;

	pthread_mutex_lock(&gpu->lock);
	count = gpu->event_count;
	pthread_mutex_unlock(&gpu->lock);
	return count;
}

static void deadline_after(struct timespec *deadline, unsigned milliseconds)
{
	clock_gettime(CLOCK_REALTIME, deadline);
	deadline->tv_sec += milliseconds / 1000;
	deadline->tv_nsec += (long)(milliseconds % 1000) * 1000000L;
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_nsec -= 1000000000L;
		deadline->tv_sec++;
	}
}

bool test_wait_event(struct test_gpu *gpu, enum vgpu_hal_event_type type, uint32_t channel_id,
                     bool any_value, uint64_t value, unsigned start, struct vgpu_hal_event *out)
{
	struct timespec deadline;
	bool found = false;
	unsigned i = start;

	deadline_after(&deadline, TEST_TIMEOUT_MS);
	pthread_mutex_lock(&gpu->lock);
	while (!found) {
		for (; i < gpu->event_count; i++) {
			const struct vgpu_hal_event *event = &gpu->events[i];

			if (event->type == type &&
			    (type == VGPU_EVENT_COPY_DONE || event->channel_id == channel_id) &&
			    (any_value || event->value == value)) {
				if (out)
					*out = *event;
				found = true;
				break;
			}
		}
		if (found)
			break;
		if (pthread_cond_timedwait(&gpu->changed, &gpu->lock, &deadline) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&gpu->lock);
	return found;
}

void test_map_vram(struct test_gpu *gpu, struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                   uint32_t page_size, uint32_t flags, uint64_t *addresses)
{
	uint64_t count = bytes / page_size;
	uint64_t *pages = addresses ? addresses : calloc(count, sizeof(uint64_t));

	assert_non_null(pages);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, page_size, count, pages), 0);
	assert_int_equal(vgpu_hal_as_map(as, va, page_size, count, VGPU_TARGET_VRAM, pages, flags),
	                 0);
	if (!addresses)
		free(pages);
}

struct vgpu_hal_host_buf *test_map_sysmem(struct test_gpu *gpu, struct vgpu_hal_as *as,
                                          uint64_t va, uint64_t bytes, uint32_t page_size,
                                          enum vgpu_hal_target target, uint64_t *iova_out)
{
	struct vgpu_hal_host_buf *buf;
	uint64_t iova, count = bytes / page_size, i;
	uint64_t *pages = calloc(count, sizeof(uint64_t));

	assert_non_null(pages);
	assert_int_equal(vgpu_hal_host_alloc(gpu->hal, bytes, &buf), 0);
	assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 0, bytes, &iova), 0);
	/* 64 KiB pages need 64 KiB aligned IOVAs: the first fit may not be */
	if (iova % page_size) {
		struct vgpu_hal_host_buf *pad;
		uint64_t pad_iova, pad_bytes = page_size - iova % page_size;

		assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, iova, bytes), 0);
		assert_int_equal(vgpu_hal_host_alloc(gpu->hal, pad_bytes, &pad), 0);
		assert_int_equal(vgpu_hal_iommu_map(gpu->hal, pad, 0, pad_bytes, &pad_iova), 0);
		assert_int_equal(vgpu_hal_iommu_map(gpu->hal, buf, 0, bytes, &iova), 0);
		assert_int_equal(vgpu_hal_iommu_unmap(gpu->hal, pad_iova, pad_bytes), 0);
		vgpu_hal_host_free(gpu->hal, pad);
		assert_int_equal(iova % page_size, 0);
	}
	for (i = 0; i < count; i++)
		pages[i] = iova + i * page_size;
	assert_int_equal(vgpu_hal_as_map(as, va, page_size, count, target, pages, 0), 0);
	free(pages);
	if (iova_out)
		*iova_out = iova;
	return buf;
}

struct test_channel *test_channel_create(struct test_gpu *gpu, struct vgpu_hal_as *as,
                                         uint32_t gpfifo_entries)
{
	struct test_channel *tc = calloc(1, sizeof(*tc));

	assert_non_null(tc);
	tc->gpu = gpu;
	if (!as) {
		assert_int_equal(vgpu_hal_as_create(gpu->hal, &tc->as), 0);
		tc->owns_as = true;
		test_map_vram(gpu, tc->as, TEST_PUSHBUFFER_VA, TEST_PUSHBUFFER_BYTES, VGPU_PAGE_64K,
		              0, NULL);
		test_map_vram(gpu, tc->as, TEST_SEMAPHORE_VA, VGPU_PAGE_4K, VGPU_PAGE_4K, 0, NULL);
	} else {
		tc->as = as;
	}
	assert_int_equal(vgpu_hal_channel_create(tc->as, gpfifo_entries, &tc->channel, &tc->info),
	                 0);
	/* channels sharing an address space split its pushbuffer area */
	tc->pushbuffer_va = TEST_PUSHBUFFER_VA + (uint64_t)(tc->info.id % 16) * (64 << 10);
	tc->semaphore_va = TEST_SEMAPHORE_VA + (uint64_t)(tc->info.id % 64) * 64;
	return tc;
}

void test_channel_destroy(struct test_channel *tc)
{
	vgpu_hal_channel_destroy(tc->channel);
	if (tc->owns_as)
		vgpu_hal_as_destroy(tc->as);
	free(tc);
}

void test_submit(struct test_channel *tc, const uint32_t *words, uint32_t count)
{
	uint64_t bytes = (uint64_t)count * 4;
	uint32_t entries = tc->info.layout.gpfifo_entries;

	if (tc->push_offset + bytes > (64 << 10))
		tc->push_offset = 0; /* tests wait before wrapping */
	assert_true(bytes <= (64 << 10));
	if (bytes)
		assert_int_equal(vgpu_hal_as_write(tc->as, tc->pushbuffer_va + tc->push_offset,
		                                   words, bytes),
		                 0);
	vgpu_gpfifo_write(tc->info.gpfifo, entries, tc->put,
	                  tc->pushbuffer_va + tc->push_offset, (uint32_t)bytes);
	tc->push_offset += (bytes + 63) & ~UINT64_C(63);
	tc->put = (tc->put + 1) & (entries - 1);
	vgpu_control_write_gp_put(tc->info.control, tc->put);
}

bool test_submit_wait(struct test_channel *tc, const uint32_t *words, uint32_t count)
{
	uint32_t fence[VGPU_COMMAND_MAX_WORDS];
	unsigned start = test_event_count(tc->gpu);
	uint64_t value = ++tc->fence_value;

	if (count)
		test_submit(tc, words, count);
	test_submit(tc, fence, vgpu_push_semaphore_release(fence, tc->semaphore_va, value, true));
	vgpu_hal_channel_kick(tc->channel);
	return test_wait_event(tc->gpu, VGPU_EVENT_FENCE, tc->info.id, false, value, start, NULL);
}

bool test_wait_error(struct test_channel *tc, struct vgpu_hal_event *error)
{
	int i;

	vgpu_hal_channel_kick(tc->channel);
	for (i = 0; i < TEST_TIMEOUT_MS; i++) {
		if (vgpu_hal_channel_state(tc->channel, error) == VGPU_CHANNEL_ERROR)
			return true;
		usleep(1000);
	}
	return false;
}
