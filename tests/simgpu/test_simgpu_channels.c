// SPDX-License-Identifier: MIT
/*
 * test_simgpu_channels.c - channels and PFIFO: faults kill only their
 * channel, GP_GET belongs to the GPU, round-robin per entry, semaphores
 * (release with interrupt, acquire across channels without blocking others),
 * fetch enable, bad commands, privileged fences and NOPs, engine registers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "simgpu_test.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

static void wait_gp_get(struct test_channel *tc, uint32_t expected)
{
	int i;

	for (i = 0; i < 10000 && vgpu_hal_channel_gp_get(tc->channel) != expected; i++)
		usleep(1000);
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), expected);
}

static void test_fault_kills_only_its_channel(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *victim = test_channel_create(gpu, NULL, 0);
	struct test_channel *bystander = test_channel_create(gpu, NULL, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error, state_error;
	uint64_t ticket;
	unsigned i, errors = 0, count;

	test_map_vram(gpu, bystander->as, TEST_DATA_VA, 64 * KIB, VGPU_PAGE_64K, 0, NULL);
	assert_true(test_submit_wait(victim, NULL, 0));
	/* an access to an unmapped VA, with more work queued behind it */
	test_submit(victim, words, vgpu_push_memset(words, TEST_DATA_VA + 0x1230, 7, 16));
	test_submit(victim, words, vgpu_push_semaphore_release(words, victim->semaphore_va, 99,
	                                                       true));
	assert_true(test_wait_error(victim, &error));
	assert_int_equal(error.type, VGPU_EVENT_CHANNEL_ERROR);
	assert_int_equal(error.channel_id, victim->info.id);
	assert_int_equal(error.cause, VGPU_FAULT_UNMAPPED);
	assert_true(error.address == TEST_DATA_VA + 0x1230);
	assert_int_equal(vgpu_hal_channel_state(victim->channel, &state_error), VGPU_CHANNEL_ERROR);
	assert_memory_equal(&state_error, &error, sizeof(error));
	assert_int_equal(vgpu_hal_channel_priv_submit(victim->channel, VGPU_PRIV_FENCE, &ticket),
	                 -EIO);

	/* the other channel keeps completing work */
	for (i = 0; i < 20; i++) {
		test_submit(bystander, words, vgpu_push_launch_fill(words, TEST_DATA_VA, 64 * KIB, i));
		assert_true(test_submit_wait(bystander, NULL, 0));
	}
	assert_int_equal(vgpu_hal_channel_state(bystander->channel, NULL), VGPU_CHANNEL_OK);
	/* the dead channel executed nothing after the fault and raised exactly
	 * one error */
	count = test_event_count(gpu);
	for (i = 0; i < count; i++) {
		if (gpu->events[i].channel_id != victim->info.id)
			continue;
		assert_false(gpu->events[i].type == VGPU_EVENT_FENCE && gpu->events[i].value == 99);
		errors += gpu->events[i].type == VGPU_EVENT_CHANNEL_ERROR;
	}
	assert_int_equal(errors, 1);
	test_channel_destroy(victim);
	test_channel_destroy(bystander);
	test_gpu_destroy(gpu);
}

static void test_gp_get_software_writes_ignored(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 16);
	uint32_t *gp_get_word = (uint32_t *)((uint8_t *)tc->info.control +
	                                     tc->info.layout.gp_get_offset);
	unsigned i;

	assert_int_equal(tc->info.layout.gpfifo_entries, 16);
	assert_int_equal(tc->info.layout.gpfifo_entry_bytes, VGPU_GPFIFO_ENTRY_BYTES);
	assert_true(tc->info.memfd >= 0);
	assert_true(test_submit_wait(tc, NULL, 0)); /* one entry: the fence */
	wait_gp_get(tc, 1);
	/* software scribbles over GP_GET: the GPU neither follows nor keeps it */
	__atomic_store_n(gp_get_word, 9, __ATOMIC_RELEASE);
	for (i = 0; i < 1000 && vgpu_control_read_gp_get(tc->info.control) != 1; i++)
		usleep(1000);
	assert_int_equal(vgpu_control_read_gp_get(tc->info.control), 1);
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), 1);
	/* and the channel keeps running from its own GP_GET, across the wrap */
	for (i = 0; i < 20; i++)
		assert_true(test_submit_wait(tc, NULL, 0));
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), (1 + 20) % 16);
	assert_int_equal(vgpu_control_read_gp_get(tc->info.control), (1 + 20) % 16);
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* Three channels on one address space, all waiting on one gate: once it
 * opens, PFIFO must serve one entry per channel per turn. */
static void test_round_robin_one_entry_per_turn(void **state)
{
	enum { CHANNELS = 3, ENTRIES = 6 };
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc[CHANNELS];
	uint64_t gate_va = TEST_DATA_VA, one = 1;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	unsigned c, k, start, seen = 0, i, first = 0, entries_seen[CHANNELS] = { 0 };

	tc[0] = test_channel_create(gpu, NULL, 0);
	for (c = 1; c < CHANNELS; c++)
		tc[c] = test_channel_create(gpu, tc[0]->as, 0);
	test_map_vram(gpu, tc[0]->as, gate_va, 4096, VGPU_PAGE_4K, 0, NULL);
	start = test_event_count(gpu);
	for (c = 0; c < CHANNELS; c++) {
		test_submit(tc[c], words, vgpu_push_semaphore_acquire(words, gate_va, 1));
		vgpu_hal_channel_kick(tc[c]->channel);
		wait_gp_get(tc[c], 1); /* fetched and waiting on the gate */
	}
	for (k = 0; k < ENTRIES; k++)
		for (c = 0; c < CHANNELS; c++)
			test_submit(tc[c], words,
			            vgpu_push_semaphore_release(words, tc[c]->semaphore_va,
			                                        (uint64_t)c << 16 | k, true));
	assert_int_equal(vgpu_hal_as_write(tc[0]->as, gate_va, &one, 8), 0);
	assert_true(test_wait_event(gpu, VGPU_EVENT_FENCE, tc[CHANNELS - 1]->info.id, false,
	                            (uint64_t)(CHANNELS - 1) << 16 | (ENTRIES - 1), start, NULL));
	for (i = start; i < test_event_count(gpu); i++) {
		const struct vgpu_hal_event *event = &gpu->events[i];

		if (event->type != VGPU_EVENT_FENCE)
			continue;
		/* The gate may open while PFIFO's round is past channel 0, so
		 * the first release may come from any channel; from there on
		 * the channels must take turns in slot order, one entry each,
		 * and each channel's entries come in submission order. */
		if (seen == 0) {
			for (first = 0; first < CHANNELS; first++)
				if (event->channel_id == tc[first]->info.id)
					break;
			assert_true(first < CHANNELS);
		}
		c = (first + seen) % CHANNELS;
		assert_int_equal(event->channel_id, tc[c]->info.id);
		assert_int_equal(event->value, (uint64_t)c << 16 | entries_seen[c]);
		entries_seen[c]++;
		seen++;
	}
	assert_int_equal(seen, CHANNELS * ENTRIES);
	for (c = CHANNELS; c-- > 0;)
		test_channel_destroy(tc[c]);
	test_gpu_destroy(gpu);
}

static void test_fence_release_with_interrupt(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	struct vgpu_hal_event event;
	uint64_t value = 0;
	unsigned start = test_event_count(gpu), i;

	/* without interrupt: memory changes, no event */
	n = vgpu_push_semaphore_release(words, tc->semaphore_va + 8, 0x1122334455667788ull, false);
	n += vgpu_push_semaphore_release(words + n, tc->semaphore_va + 16, 42, true);
	test_submit(tc, words, n);
	vgpu_hal_channel_kick(tc->channel);
	assert_true(test_wait_event(gpu, VGPU_EVENT_FENCE, tc->info.id, false, 42, start, &event));
	assert_int_equal(event.address, tc->semaphore_va + 16);
	assert_int_equal(vgpu_hal_as_read(tc->as, tc->semaphore_va + 8, &value, 8), 0);
	assert_true(value == 0x1122334455667788ull);
	assert_int_equal(vgpu_hal_as_read(tc->as, tc->semaphore_va + 16, &value, 8), 0);
	assert_int_equal(value, 42);
	for (i = start; i < test_event_count(gpu); i++)
		assert_false(gpu->events[i].type == VGPU_EVENT_FENCE &&
		             gpu->events[i].value == 0x1122334455667788ull);
	/* the event is raised while the compute engine runs that channel */
	for (i = start; i < test_event_count(gpu); i++)
		if (gpu->events[i].type == VGPU_EVENT_FENCE)
			assert_int_equal(gpu->compute_channel_at_event[i], (int32_t)tc->info.id);
	/* and the register reads -1 once idle */
	for (i = 0; i < 1000 && vgpu_hal_engine_current_channel(gpu->hal, VGPU_ENGINE_COMPUTE) != -1;
	     i++)
		usleep(1000);
	assert_int_equal(vgpu_hal_engine_current_channel(gpu->hal, VGPU_ENGINE_COMPUTE), -1);
	assert_int_equal(vgpu_hal_engine_current_channel(gpu->hal, VGPU_ENGINE_COPY), -1);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* Channel A waits for B's release before it writes; B keeps working while
 * A waits, and A's writes land after B's. */
static void test_acquire_release_between_channels(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *a = test_channel_create(gpu, NULL, 0);
	struct test_channel *b = test_channel_create(gpu, NULL, 0);
	uint64_t shared_page, sem_va = TEST_DATA_VA, data_va = TEST_DATA_VA + 8;
	uint32_t words[4 * VGPU_COMMAND_MAX_WORDS], n;
	uint64_t value;
	unsigned start = test_event_count(gpu), i;

	/* one VRAM page mapped into both address spaces */
	test_map_vram(gpu, a->as, TEST_DATA_VA, 4096, VGPU_PAGE_4K, 0, &shared_page);
	assert_int_equal(vgpu_hal_as_map(b->as, TEST_DATA_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM,
	                                 &shared_page, 0),
	                 0);
	/* A: wait for sem >= 2, then overwrite data with 0xaaaaaaaa */
	n = vgpu_push_semaphore_acquire(words, sem_va, 2);
	n += vgpu_push_memset(words + n, data_va, 0xaaaaaaaa, 8);
	n += vgpu_push_semaphore_release(words + n, a->semaphore_va, 1, true);
	test_submit(a, words, n);
	vgpu_hal_channel_kick(a->channel);
	wait_gp_get(a, 1);
	usleep(20000);
	assert_false(test_event_count(gpu) > start); /* A is waiting */

	/* B does unrelated work meanwhile, then writes data and releases */
	for (i = 0; i < 5; i++)
		assert_true(test_submit_wait(b, NULL, 0));
	assert_int_equal(vgpu_hal_as_read(a->as, data_va, &value, 8), 0);
	assert_int_equal(value, 0);
	n = vgpu_push_memset(words, data_va, 0xbbbbbbbb, 8);
	n += vgpu_push_semaphore_release(words + n, sem_va, 2, false);
	assert_true(test_submit_wait(b, words, n));
	assert_true(test_wait_event(gpu, VGPU_EVENT_FENCE, a->info.id, false, 1, start, NULL));
	assert_int_equal(vgpu_hal_as_read(a->as, data_va, &value, 8), 0);
	assert_true(value == 0xaaaaaaaaaaaaaaaaull);
	test_channel_destroy(a);
	test_channel_destroy(b);
	test_gpu_destroy(gpu);
}

static void test_fetch_enable(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	unsigned start = test_event_count(gpu);

	vgpu_hal_channel_set_fetch(tc->channel, false);
	test_submit(tc, words, vgpu_push_semaphore_release(words, tc->semaphore_va, 5, true));
	vgpu_hal_channel_kick(tc->channel);
	usleep(20000);
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), 0);
	assert_int_equal(test_event_count(gpu), start);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(test_wait_event(gpu, VGPU_EVENT_FENCE, tc->info.id, false, 5, start, NULL));
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), 1);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* Each malformed input kills its channel with the documented cause. */
static void test_bad_commands(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *good = test_channel_create(gpu, NULL, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error;
	unsigned i;
	struct {
		uint32_t words[8];
		uint32_t count;
		enum vgpu_hal_error_cause cause;
	} cases[] = {
		{ { VGPU_COMMAND_HEADER(0x42, 0, 0) }, 1, VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_COPY, 0, 6), 1, 2 }, 3, VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE, 0, 3), 0, 0, 0 }, 4,
		  VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE, 0x80, 4), 0, 0, 0, 0 }, 5,
		  VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_ACQUIRE, 0, 4), 4, 0, 0, 0 }, 5,
		  VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_PRIV_FENCE, 0, 0) }, 1, VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH, 0, 2), 3, 0 }, 3, VGPU_FAULT_BAD_COMMAND },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH, 0, 1), 99 }, 2,
		  VGPU_FAULT_BAD_KERNEL_ARGS },
		{ { VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH, 0, 7), VGPU_KERNEL_STREAM, 0x1000, 0,
		    64, 0, 0, 0 }, 8, VGPU_FAULT_BAD_KERNEL_ARGS },
	};

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct test_channel *tc = test_channel_create(gpu, NULL, 0);

		test_submit(tc, cases[i].words, cases[i].count);
		if (!test_wait_error(tc, &error))
			fail_msg("case %u: no channel error", i);
		assert_int_equal(error.cause, cases[i].cause);
		assert_int_equal(error.address, tc->pushbuffer_va);
		test_channel_destroy(tc);
	}
	/* a GPFIFO entry with a bad length, with flags, and a wild GP_PUT */
	{
		struct test_channel *tc = test_channel_create(gpu, NULL, 0);

		vgpu_gpfifo_write(tc->info.gpfifo, tc->info.layout.gpfifo_entries, 0,
		                  TEST_PUSHBUFFER_VA, 6);
		vgpu_control_write_gp_put(tc->info.control, 1);
		assert_true(test_wait_error(tc, &error));
		assert_int_equal(error.cause, VGPU_FAULT_BAD_COMMAND);
		test_channel_destroy(tc);

		tc = test_channel_create(gpu, NULL, 0);
		vgpu_control_write_gp_put(tc->info.control, 1u << 30);
		assert_true(test_wait_error(tc, &error));
		assert_int_equal(error.cause, VGPU_FAULT_BAD_COMMAND);
		test_channel_destroy(tc);

		tc = test_channel_create(gpu, NULL, 0);
		vgpu_gpfifo_write(tc->info.gpfifo, tc->info.layout.gpfifo_entries, 0,
		                  TEST_PUSHBUFFER_VA, 4);
		((struct vgpu_gpfifo_entry *)tc->info.gpfifo)[0].flags = 1;
		vgpu_control_write_gp_put(tc->info.control, 1);
		assert_true(test_wait_error(tc, &error));
		assert_int_equal(error.cause, VGPU_FAULT_BAD_COMMAND);
		test_channel_destroy(tc);
	}
	/* NOP padding with arguments and zero-length entries are fine */
	words[0] = VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, 3);
	words[1] = words[2] = words[3] = 0xffffffff;
	assert_true(test_submit_wait(good, words, 4));
	test_submit(good, NULL, 0);
	assert_true(test_submit_wait(good, NULL, 0));
	assert_int_equal(vgpu_hal_channel_state(good->channel, NULL), VGPU_CHANNEL_OK);
	test_channel_destroy(good);
	test_gpu_destroy(gpu);
}

static void test_priv_fence_and_nop(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 4);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event event, error;
	uint64_t ticket = 0, ticket2 = 0, checksum = 0;
	const uint64_t bytes = 4 * MIB;
	unsigned start;

	test_map_vram(gpu, tc->as, TEST_DATA_VA, bytes, VGPU_PAGE_64K, 0, NULL);
	/* a long kernel, then a privileged fence: the fence completes after it */
	start = test_event_count(gpu);
	test_submit(tc, words, vgpu_push_launch_fill(words, TEST_DATA_VA, bytes, 9));
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket), 0);
	tc->put = (tc->put + 1) & 3;
	assert_true(ticket != 0);
	assert_true(test_wait_event(gpu, VGPU_EVENT_PRIV_FENCE, tc->info.id, false, ticket, start,
	                            &event));
	{
		uint8_t *expected = malloc(bytes), *actual = malloc(bytes);

		vgpu_kernel_reference_fill(expected, bytes, 9);
		assert_int_equal(vgpu_hal_as_read(tc->as, TEST_DATA_VA, actual, bytes), 0);
		assert_memory_equal(actual, expected, bytes);
		checksum = vgpu_kernel_reference_checksum(expected, bytes);
		free(expected);
		free(actual);
	}
	assert_true(checksum != 0);

	/* a NOP consumes one ring slot; a full ring refuses with -ENOSPC */
	vgpu_hal_channel_set_fetch(tc->channel, false);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), 0);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket2), 0);
	assert_true(ticket2 != ticket);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), 0);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), -ENOSPC);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, 7, NULL), -EINVAL);
	start = test_event_count(gpu);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(test_wait_event(gpu, VGPU_EVENT_PRIV_FENCE, tc->info.id, false, ticket2, start,
	                            NULL));
	tc->put = vgpu_control_read_gp_put(tc->info.control);
	{
		int i;

		for (i = 0; i < 1000 && vgpu_hal_channel_gp_get(tc->channel) != tc->put; i++)
			usleep(1000);
		assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), tc->put);
	}

	/* the guest cannot replay a privileged entry: pointing its own entry
	 * at the privileged pushbuffer faults */
	vgpu_gpfifo_write(tc->info.gpfifo, 4, tc->put, gpu->caps.va_reserved_base +
	                  (uint64_t)tc->info.id * 4096 + 64, 4);
	tc->put = (tc->put + 1) & 3;
	vgpu_control_write_gp_put(tc->info.control, tc->put);
	assert_true(test_wait_error(tc, &error));
	assert_int_equal(error.cause, VGPU_FAULT_PRIVILEGED);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

/* A waiting channel can be destroyed; the GPU keeps serving the others. */
static void test_destroy_waiting_channel(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *waiter = test_channel_create(gpu, NULL, 0);
	struct test_channel *other = test_channel_create(gpu, NULL, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	test_submit(waiter, words, vgpu_push_semaphore_acquire(words, waiter->semaphore_va, 1000));
	vgpu_hal_channel_kick(waiter->channel);
	wait_gp_get(waiter, 1);
	assert_true(test_submit_wait(other, NULL, 0));
	test_channel_destroy(waiter);
	assert_true(test_submit_wait(other, NULL, 0));
	test_channel_destroy(other);
	test_gpu_destroy(gpu);
}

static void test_channel_limits(void **state)
{
	struct simgpu_config config;
	struct test_gpu *gpu;
	struct vgpu_hal_as *as, *extra;
	struct vgpu_hal_channel *channels[3];
	struct vgpu_hal_channel_info info;

	test_config(&config);
	config.max_channels = 2;
	config.max_address_spaces = 1;
	gpu = test_gpu_create(&config);
	assert_int_equal(vgpu_hal_as_create(gpu->hal, &as), 0);
	assert_int_equal(vgpu_hal_as_create(gpu->hal, &extra), -ENOSPC);
	assert_int_equal(vgpu_hal_channel_create(as, 3, &channels[0], &info), -EINVAL);
	assert_int_equal(vgpu_hal_channel_create(as, 1u << 20, &channels[0], &info), -EINVAL);
	assert_int_equal(vgpu_hal_channel_create(as, 0, &channels[0], &info), 0);
	assert_int_equal(info.layout.gpfifo_entries, config.default_gpfifo_entries);
	assert_int_equal(info.id, 0);
	assert_int_equal(vgpu_hal_channel_create(as, 2, &channels[1], &info), 0);
	assert_int_equal(info.id, 1);
	assert_int_equal(vgpu_hal_channel_create(as, 0, &channels[2], &info), -ENOSPC);
	vgpu_hal_channel_destroy(channels[0]);
	assert_int_equal(vgpu_hal_channel_create(as, 0, &channels[2], &info), 0);
	assert_int_equal(info.id, 0);
	vgpu_hal_channel_destroy(channels[1]);
	vgpu_hal_channel_destroy(channels[2]);
	vgpu_hal_as_destroy(as);
	test_gpu_destroy(gpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_kills_only_its_channel),
		cmocka_unit_test(test_gp_get_software_writes_ignored),
		cmocka_unit_test(test_round_robin_one_entry_per_turn),
		cmocka_unit_test(test_fence_release_with_interrupt),
		cmocka_unit_test(test_acquire_release_between_channels),
		cmocka_unit_test(test_fetch_enable),
		cmocka_unit_test(test_bad_commands),
		cmocka_unit_test(test_priv_fence_and_nop),
		cmocka_unit_test(test_destroy_waiting_channel),
		cmocka_unit_test(test_channel_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
