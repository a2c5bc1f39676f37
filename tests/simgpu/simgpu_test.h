/* SPDX-License-Identifier: MIT */
/*
 * simgpu_test.h - fixtures for simgpu's tests: a GPU with an event log, test
 * channels with their own pushbuffer and semaphore areas, buffer mapping and
 * a seed for randomised tests.
 */
#ifndef SIMGPU_TEST_H
#define SIMGPU_TEST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/hal.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define TEST_EVENT_LOG 8192
#define TEST_TIMEOUT_MS 10000

/* VA layout of a test channel's address space. */
#define TEST_PUSHBUFFER_VA UINT64_C(0x10000000)
#define TEST_PUSHBUFFER_BYTES (UINT64_C(1) << 20)
#define TEST_SEMAPHORE_VA UINT64_C(0x20000000)
#define TEST_DATA_VA UINT64_C(0x40000000)

struct test_gpu {
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct vgpu_hal_event events[TEST_EVENT_LOG];
	unsigned event_count;
	/* current-channel register of the compute engine seen at each FENCE */
	int32_t compute_channel_at_event[TEST_EVENT_LOG];
};

struct test_channel {
	struct test_gpu *gpu;
	struct vgpu_hal_as *as;
	bool owns_as;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	uint64_t pushbuffer_va;
	uint64_t push_offset;
	uint32_t put;
	uint64_t fence_value;
	uint64_t semaphore_va;
};

/* Seed for randomised tests: $SIMGPU_TEST_SEED or the time; printed. */
uint64_t test_seed(const char *test_name);

void test_config(struct simgpu_config *config);
struct test_gpu *test_gpu_create(const struct simgpu_config *config);
void test_gpu_destroy(struct test_gpu *gpu);

/* Wait for an event matching type/channel (and value unless any_value);
 * returns true and fills *out when seen within TEST_TIMEOUT_MS. Events
 * before index start are ignored. */
bool test_wait_event(struct test_gpu *gpu, enum vgpu_hal_event_type type, uint32_t channel_id,
                     bool any_value, uint64_t value, unsigned start, struct vgpu_hal_event *out);
unsigned test_event_count(struct test_gpu *gpu);

/* Allocate VRAM pages and map them at va; addresses (count = bytes/page)
 * may be NULL. */
void test_map_vram(struct test_gpu *gpu, struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                   uint32_t page_size, uint32_t flags, uint64_t *addresses);
/* Allocate a host buffer, IOMMU-map it, map it at va with target. */
struct vgpu_hal_host_buf *test_map_sysmem(struct test_gpu *gpu, struct vgpu_hal_as *as,
                                          uint64_t va, uint64_t bytes, uint32_t page_size,
                                          enum vgpu_hal_target target, uint64_t *iova);

/* A channel in a new address space (as NULL) or in as, with pushbuffer and
 * semaphore areas mapped (only once per address space). */
struct test_channel *test_channel_create(struct test_gpu *gpu, struct vgpu_hal_as *as,
                                         uint32_t gpfifo_entries);
void test_channel_destroy(struct test_channel *tc);

/* Write words as one pushbuffer and append its GPFIFO entry (no kick). */
void test_submit(struct test_channel *tc, const uint32_t *words, uint32_t count);
/* Submit, then a fence with interrupt, and wait for it: true when seen. */
bool test_submit_wait(struct test_channel *tc, const uint32_t *words, uint32_t count);
/* Wait until the channel is in error; fills *error. */
bool test_wait_error(struct test_channel *tc, struct vgpu_hal_event *error);

#endif /* SIMGPU_TEST_H */
