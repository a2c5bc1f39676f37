// SPDX-License-Identifier: MIT
/*
 * test_hal_channels.c - conformance of channels: creation and layout, the
 * GPFIFO ring and GP_GET, semaphores and fences, MEMSET and COPY, fetch
 * enable, privileged entries, malformed input, faults that kill only their
 * channel, destruction with work pending, limits, counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hal_conformance.h"
#include "vgpu/simgpu.h"

static const enum vgpu_hal_target data_targets[] = {
	VGPU_TARGET_VRAM,
	VGPU_TARGET_SYSMEM_COHERENT,
};

static const char *target_name(enum vgpu_hal_target target)
{
	return target == VGPU_TARGET_VRAM ? "VRAM" : target == VGPU_TARGET_SYSMEM_COHERENT
	                                                  ? "SYSMEM coherent"
	                                                  : "SYSMEM non-coherent";
}

/* Data memory of the suite's VRAM page size on a target. */
static struct tmem *data_mem(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                             enum vgpu_hal_target target, uint32_t flags)
{
	if (target == VGPU_TARGET_VRAM)
		return mem_vram(as, va, bytes, suite.vram_page, flags);
	return mem_sysmem(as, va, bytes, suite.vram_page, target, flags);
}

static uint64_t now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

static void assert_no_fence(struct tchan *tc, uint64_t value, unsigned start)
{
	unsigned i, count = event_mark();

	for (i = start; i < count; i++) {
		struct vgpu_hal_event event = event_at(i);

		if (event.type == VGPU_EVENT_FENCE && event.channel_id == tc->info.id &&
		    event.value == value)
			fail_msg("channel %u released fence %llu it should not have reached",
			         tc->info.id, (unsigned long long)value);
	}
}

/* The channel died with cause and is refused privileged entries. */
static struct vgpu_hal_event expect_error(struct tchan *tc, unsigned start,
                                          enum vgpu_hal_error_cause cause, const char *what)
{
	struct vgpu_hal_event error;
	uint64_t ticket;

	if (!chan_wait_error(tc, start, &error))
		fail_msg("%s: channel %u raised no CHANNEL_ERROR", what, tc->info.id);
	if (error.cause != cause)
		fail_msg("%s: channel %u died with cause %d, expected %d", what, tc->info.id,
		         error.cause, cause);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket), -EIO);
	return error;
}

static void test_channel_create_layout(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *a = chan_create(sp, 16), *b = chan_create(sp, 0);
	struct vgpu_hal_channel *extra;
	struct vgpu_hal_channel_info info;
	struct tchan *both[2] = { a, b };
	unsigned i;

	for (i = 0; i < 2; i++) {
		struct vgpu_hal_channel_info *in = &both[i]->info;
		const struct vgpu_hal_channel_layout *l = &in->layout;

		assert_true(in->id < suite.caps.max_channels);
		assert_non_null(in->control);
		assert_non_null(in->gpfifo);
		/* the window in the format of vgpu/abi/commands.h */
		assert_true(l->control_bytes >= VGPU_CONTROL_BYTES && l->control_bytes % 4096 == 0);
		assert_int_equal(l->gp_put_offset, VGPU_CONTROL_GP_PUT);
		assert_int_equal(l->gp_get_offset, VGPU_CONTROL_GP_GET);
		assert_int_equal(l->doorbell_offset, VGPU_CONTROL_DOORBELL);
		assert_int_equal(l->gpfifo_entry_bytes, VGPU_GPFIFO_ENTRY_BYTES);
		assert_true(l->gpfifo_entries >= 2 && !(l->gpfifo_entries & (l->gpfifo_entries - 1)));
		assert_true(l->gpfifo_entries <= suite.caps.gpfifo_entries_max);
		assert_true(l->gpfifo_bytes >= l->gpfifo_entries * l->gpfifo_entry_bytes);
		assert_int_equal(l->gpfifo_bytes % 4096, 0);
		assert_int_equal(le32toh(*vgpu_control_word(in->control, VGPU_CONTROL_VERSION)),
		                 VGPU_COMMANDS_VERSION);
		/* starts empty, fetching, healthy */
		assert_int_equal(vgpu_control_read_gp_put(in->control), 0);
		assert_int_equal(vgpu_control_read_gp_get(in->control), 0);
		assert_int_equal(vgpu_hal_channel_gp_get(both[i]->channel), 0);
		assert_int_equal(vgpu_hal_channel_state(both[i]->channel, NULL), VGPU_CHANNEL_OK);
		if (in->memfd >= 0) {
			assert_int_equal(in->control_offset % 4096, 0);
			assert_int_equal(in->gpfifo_offset % 4096, 0);
		}
	}
	assert_int_equal(a->info.layout.gpfifo_entries, 16);
	assert_true(a->info.id != b->info.id);

	/* ring sizes: a power of two up to the maximum */
	assert_int_equal(vgpu_hal_channel_create(sp->as, 3, &extra, &info), -EINVAL);
	assert_int_equal(vgpu_hal_channel_create(sp->as, 24, &extra, &info), -EINVAL);
	if (suite.caps.gpfifo_entries_max < (1u << 31))
		assert_int_equal(vgpu_hal_channel_create(sp->as, suite.caps.gpfifo_entries_max * 2,
		                                         &extra, &info),
		                 -EINVAL);
	assert_int_equal(vgpu_hal_channel_create(sp->as, suite.caps.gpfifo_entries_max, &extra,
	                                         &info),
	                 0);
	assert_int_equal(info.layout.gpfifo_entries, suite.caps.gpfifo_entries_max);
	vgpu_hal_channel_destroy(extra);

	/* both channels work */
	assert_true(chan_sync(a));
	assert_true(chan_sync(b));
	chan_destroy(b);
	chan_destroy(a);
	space_destroy(sp);
}

/* SEMAPHORE_RELEASE writes its value; with the interrupt flag it raises
 * FENCE (value, address); GP_GET follows, around a small ring. */
static void test_channel_fence_and_gp_get(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 4);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	struct vgpu_hal_event event;
	uint64_t value = 0;
	unsigned start = event_mark(), i;

	n = vgpu_push_semaphore_release(words, tc->sem_va + 8, 0x1122334455667788ull, false);
	n += vgpu_push_semaphore_release(words + n, tc->sem_va + 16, 42, true);
	chan_push(tc, words, n);
	vgpu_hal_channel_kick(tc->channel);
	assert_true(wait_event(VGPU_EVENT_FENCE, tc->info.id, false, 42, start, &event));
	assert_int_equal(event.channel_id, tc->info.id);
	assert_true(event.address == tc->sem_va + 16);
	read_ok(sp->as, tc->sem_va + 8, &value, 8);
	assert_true(value == 0x1122334455667788ull);
	read_ok(sp->as, tc->sem_va + 16, &value, 8);
	assert_int_equal(value, 42);
	assert_int_equal(count_events(VGPU_EVENT_FENCE, tc->info.id, start), 1);
	assert_true(chan_wait_gp_get(tc, 1));
	assert_int_equal(vgpu_control_read_gp_get(tc->info.control), 1);

	/* around the ring several times; NOP entries (length 0) included */
	for (i = 0; i < 10; i++) {
		if (i % 3 == 0)
			chan_push(tc, NULL, 0);
		assert_true(chan_sync(tc));
		read_ok(sp->as, tc->sem_va, &value, 8);
		assert_true(value == tc->fence_value);
		assert_true(chan_wait_gp_get(tc, tc->put));
		assert_int_equal(vgpu_control_read_gp_get(tc->info.control), tc->put);
	}
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(tc);
	space_destroy(sp);
}

/* MEMSET and COPY commands, on VRAM and on host memory the GPU reaches
 * through the IOMMU, across page boundaries, unaligned. */
static void test_channel_memset_copy(void **state)
{
	uint64_t page = suite.vram_page, bytes = 2 * page;
	unsigned t;

	for (t = 0; t < 2; t++) {
		enum vgpu_hal_target target = data_targets[t], other = data_targets[1 - t];
		struct tspace *sp = space_create();
		struct tchan *tc = chan_create(sp, 0);
		struct tmem *a = data_mem(sp->as, DATA_VA, bytes, target, 0);
		struct tmem *b = data_mem(sp->as, DATA2_VA, bytes, other, 0);
		uint8_t *ea = reference_fill(bytes, 1), *eb = reference_fill(bytes, 2);
		uint32_t words[4 * VGPU_COMMAND_MAX_WORDS], n;
		const uint32_t pattern = 0xa1b2c3d4;
		uint64_t i, memset_at = page - 1001, memset_bytes = 2003;
		char what[64];

		write_ok(sp->as, DATA_VA, ea, bytes);
		write_ok(sp->as, DATA2_VA, eb, bytes);
		n = vgpu_push_memset(words, DATA_VA + memset_at, pattern, memset_bytes);
		n += vgpu_push_copy(words + n, DATA2_VA + page - 3333, DATA_VA + 17, 7777);
		n += vgpu_push_memset(words + n, DATA_VA + bytes - 8, 0x01020304, 8);
		assert_true(chan_run(tc, words, n));
		for (i = 0; i < memset_bytes; i++)
			ea[memset_at + i] = (uint8_t)(pattern >> (8 * (i % 4)));
		memcpy(eb + page - 3333, ea + 17, 7777);
		for (i = 0; i < 8; i++)
			ea[bytes - 8 + i] = (uint8_t)(0x01020304 >> (8 * (i % 4)));
		snprintf(what, sizeof(what), "MEMSET on %s", target_name(target));
		expect_bytes(sp->as, DATA_VA, ea, bytes, what);
		snprintf(what, sizeof(what), "COPY from %s to %s", target_name(target),
		         target_name(other));
		expect_bytes(sp->as, DATA2_VA, eb, bytes, what);
		chan_destroy(tc);
		mem_free(b);
		mem_free(a);
		space_destroy(sp);
		free(ea);
		free(eb);
	}
}

/* A channel waiting in SEMAPHORE_ACQUIRE holds up only itself, until the
 * word reaches the value (written through the aperture). */
static void test_semaphore_acquire(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *waiter = chan_create(sp, 0), *other = chan_create(sp, 0);
	uint64_t gate = space_sem_va(sp, 20), value;
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	unsigned start = event_mark(), i;

	n = vgpu_push_semaphore_acquire(words, gate, 2);
	n += vgpu_push_semaphore_release(words + n, waiter->sem_va, 1000, true);
	chan_push(waiter, words, n);
	vgpu_hal_channel_kick(waiter->channel);
	assert_true(chan_wait_gp_get(waiter, 1)); /* fetched, waiting */
	for (i = 0; i < 5; i++)
		assert_true(chan_sync(other));
	value = 1; /* below the value: still waiting */
	write_ok(sp->as, gate, &value, 8);
	assert_true(chan_sync(other));
	sleep_ms(20);
	assert_no_fence(waiter, 1000, start);
	assert_int_equal(vgpu_hal_channel_state(waiter->channel, NULL), VGPU_CHANNEL_OK);
	value = 2;
	write_ok(sp->as, gate, &value, 8);
	assert_true(chan_wait_fence(waiter, 1000, start));
	/* and it keeps working */
	waiter->fence_value = 1000;
	assert_true(chan_sync(waiter));
	chan_destroy(other);
	chan_destroy(waiter);
	space_destroy(sp);
}

/*
 * A channel whose one GPFIFO entry is a pushbuffer slice full of 16 MiB
 * COPYs (about 2300 of them: half a terabyte of traffic on a CPU stand-in)
 * does not hold up another channel: that one's small entries complete, each
 * before the flood's entry does, and destroying the flooding channel drops
 * the rest. The backend shares the engine (simgpu: time slices of modeled
 * time; cudagpu: a bounded number of 4 MiB windows issued per turn).
 */
static void test_copy_flood_does_not_starve(void **state)
{
	const uint64_t half = 16 * MIB;
	struct tspace *sp = space_create(), *other_sp = space_create();
	struct tchan *flood = chan_create(sp, 0), *other = chan_create(other_sp, 0);
	struct tmem *data = mem_vram(sp->as, DATA_VA, 2 * half, suite.vram_page, 0);
	struct tmem *small = mem_vram(other_sp->as, DATA_VA, suite.vram_page, suite.vram_page, 0);
	uint32_t *words = xmalloc(CMD_SLICE_BYTES), n = 0;
	uint32_t copy_words = 1 + VGPU_COPY_ARG_WORDS, release_words = 1 + VGPU_SEMAPHORE_ARG_WORDS;
	unsigned start = event_mark(), i;

	/* the slice, less the room chan_push keeps for fences (64 bytes) */
	while ((n + copy_words + release_words) * 4 <= CMD_SLICE_BYTES - 64) {
		bool forward = (n / copy_words) % 2 == 0;

		n += vgpu_push_copy(words + n, forward ? DATA_VA + half : DATA_VA,
		                    forward ? DATA_VA : DATA_VA + half, half);
	}
	n += vgpu_push_semaphore_release(words + n, flood->sem_va, 777, true);
	chan_push(flood, words, n);
	vgpu_hal_channel_kick(flood->channel);
	assert_true(chan_wait_gp_get(flood, 1)); /* fetched: the flood runs */
	for (i = 0; i < 5; i++) {
		n = vgpu_push_memset(words, DATA_VA, i, suite.vram_page);
		assert_true(chan_run(other, words, n));
		assert_no_fence(flood, 777, start);
	}
	assert_int_equal(vgpu_hal_channel_state(flood->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(flood);
	assert_true(chan_sync(other));
	chan_destroy(other);
	mem_free(small);
	mem_free(data);
	space_destroy(other_sp);
	space_destroy(sp);
	free(words);
}

/*
 * A SEMAPHORE_ACQUIRE that waits longer than the acquire timeout (here
 * 100 ms, on a GPU of its own: the suite's has the 10 s default) is killed
 * by the watchdog: VGPU_FAULT_TIMEOUT at the command's VA, after no less
 * than the timeout.
 */
static void test_acquire_timeout(void **state)
{
	struct simgpu_config sim;
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel *ch;
	struct vgpu_hal_channel_info info;
	struct vgpu_hal_event error = { 0 };
	uint32_t page = suite.vram_page, words[VGPU_COMMAND_MAX_WORDS], n;
	uint64_t frame, va = CMD_VA, gate = CMD_VA + 4096, started, elapsed_ms;
	unsigned i;

	simgpu_config_defaults(&sim);
	sim.pfifo_idle_sleep_max_us = 200;
	sim.vram_bytes = HAL_TEST_VRAM_BYTES;
	sim.acquire_timeout_ms = 100;
	assert_int_equal(hal_suite_open_config(&sim, &hal, NULL), 0);
	assert_int_equal(vgpu_hal_as_create(hal, &as), 0);
	assert_int_equal(vgpu_hal_vram_alloc(hal, page, 1, &frame), 0);
	assert_int_equal(vgpu_hal_as_map(as, va, page, 1, VGPU_TARGET_VRAM, &frame, 0), 0);
	assert_int_equal(vgpu_hal_channel_create(as, 0, &ch, &info), 0);
	n = vgpu_push_semaphore_acquire(words, gate, 1);
	write_ok(as, va, words, (uint64_t)n * 4);
	started = now_ms();
	vgpu_gpfifo_write(info.gpfifo, info.layout.gpfifo_entries, 0, va, n * 4);
	vgpu_control_write_gp_put(info.control, 1);
	vgpu_hal_channel_kick(ch);
	for (i = 0; i < HAL_TEST_TIMEOUT_MS; i++) {
		if (vgpu_hal_channel_state(ch, &error) == VGPU_CHANNEL_ERROR)
			break;
		sleep_ms(1);
	}
	elapsed_ms = now_ms() - started;
	assert_int_equal(vgpu_hal_channel_state(ch, NULL), VGPU_CHANNEL_ERROR);
	assert_int_equal(error.type, VGPU_EVENT_CHANNEL_ERROR);
	assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
	assert_true(error.address == va);
	assert_true(elapsed_ms >= 100);
	vgpu_hal_channel_destroy(ch);
	assert_int_equal(vgpu_hal_as_unmap(as, va, page), 0);
	vgpu_hal_as_tlb_invalidate(as);
	vgpu_hal_vram_free(hal, page, 1, &frame);
	vgpu_hal_as_destroy(as);
	vgpu_hal_destroy(hal);
}

/* A channel waiting on an acquire nothing releases is killed by the host:
 * one CHANNEL_ERROR with VGPU_FAULT_TIMEOUT, nothing after the acquire
 * runs, a second kill changes nothing, and another channel goes on. */
static void test_channel_kill(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *stuck = chan_create(sp, 0), *other = chan_create(sp, 0);
	uint64_t gate = space_sem_va(sp, 21);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	unsigned start = event_mark();

	n = vgpu_push_semaphore_acquire(words, gate, 1);
	n += vgpu_push_semaphore_release(words + n, stuck->sem_va, 1000, true);
	chan_push(stuck, words, n);
	vgpu_hal_channel_kick(stuck->channel);
	assert_true(chan_wait_gp_get(stuck, 1)); /* fetched, waiting */
	/* an entry waiting on an acquire is work in progress */
	assert_true(vgpu_hal_channel_pending(suite.hal, stuck->info.id));
	vgpu_hal_channel_kill(stuck->channel, VGPU_FAULT_TIMEOUT);
	expect_error(stuck, start, VGPU_FAULT_TIMEOUT, "killed by the host");
	assert_int_equal(vgpu_hal_channel_state(stuck->channel, NULL), VGPU_CHANNEL_ERROR);
	vgpu_hal_channel_kill(stuck->channel, VGPU_FAULT_TIMEOUT);
	assert_true(chan_sync(other));
	assert_int_equal(count_events(VGPU_EVENT_CHANNEL_ERROR, stuck->info.id, start), 1);
	assert_no_fence(stuck, 1000, start);
	assert_int_equal(vgpu_hal_channel_state(other->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(other);
	chan_destroy(stuck);
	space_destroy(sp);
}

/* With fetch disabled GP_GET stays and nothing runs; GP_PUT writes are
 * kept and run once fetch is enabled again. */
static void test_set_fetch(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	unsigned start = event_mark();
	uint64_t v1, v2, v3;

	vgpu_hal_channel_set_fetch(tc->channel, false);
	v1 = chan_fence(tc);
	v2 = chan_fence(tc);
	v3 = chan_fence(tc);
	sleep_ms(50);
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), 0);
	assert_int_equal(count_events(VGPU_EVENT_FENCE, tc->info.id, start), 0);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(chan_wait_fence(tc, v1, start));
	assert_true(chan_wait_fence(tc, v2, start));
	assert_true(chan_wait_fence(tc, v3, start));
	assert_true(chan_wait_gp_get(tc, 3));
	/* off and on again */
	vgpu_hal_channel_set_fetch(tc->channel, false);
	start = event_mark();
	v1 = chan_fence(tc);
	sleep_ms(30);
	assert_int_equal(vgpu_hal_channel_gp_get(tc->channel), 3);
	assert_int_equal(count_events(VGPU_EVENT_FENCE, tc->info.id, start), 0);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(chan_wait_fence(tc, v1, start));
	chan_destroy(tc);
	space_destroy(sp);
}

/* The channel table's pending bit: set while work is queued (fetching off
 * included) or executing, clear once the channel has run dry, for a free id
 * and for a killed channel. */
static bool wait_not_pending(uint32_t id)
{
	for (int ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		if (!vgpu_hal_channel_pending(suite.hal, id))
			return true;
		sleep_ms(1);
	}
	return false;
}

static void test_channel_pending(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	unsigned start = event_mark();
	uint64_t value;

	assert_false(vgpu_hal_channel_pending(suite.hal, tc->info.id));
	assert_false(vgpu_hal_channel_pending(suite.hal, suite.caps.max_channels));
	assert_false(vgpu_hal_channel_pending(suite.hal, UINT32_MAX));
	/* queued behind disabled fetching: pending, and it stays so */
	vgpu_hal_channel_set_fetch(tc->channel, false);
	value = chan_fence(tc);
	assert_true(vgpu_hal_channel_pending(suite.hal, tc->info.id));
	sleep_ms(20);
	assert_true(vgpu_hal_channel_pending(suite.hal, tc->info.id));
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(chan_wait_fence(tc, value, start));
	assert_true(wait_not_pending(tc->info.id));
	/* work again, then a kill: a killed channel has nothing pending */
	vgpu_hal_channel_set_fetch(tc->channel, false);
	chan_fence(tc);
	assert_true(vgpu_hal_channel_pending(suite.hal, tc->info.id));
	start = event_mark();
	vgpu_hal_channel_kill(tc->channel, VGPU_FAULT_TIMEOUT);
	assert_true(chan_wait_error(tc, start, NULL));
	assert_false(vgpu_hal_channel_pending(suite.hal, tc->info.id));
	chan_destroy(tc);
	space_destroy(sp);
}

/* A privileged fence completes after the entries before it: when its event
 * comes, the kernel before it has finished. */
static void test_priv_fence_after_work(void **state)
{
	const unsigned passes = 16;
	uint64_t bytes = 4ull * suite.vram_page, ticket = 0, ticket2 = 0, checksum;
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	struct tmem *mem = mem_vram(sp->as, DATA_VA, bytes, suite.vram_page, 0);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	struct vgpu_hal_event event;
	unsigned start = event_mark();
	uint8_t *actual = xmalloc(bytes);

	n = vgpu_push_launch_fill(words, DATA_VA, bytes, 3);
	n += vgpu_push_launch_stream(words + n, DATA_VA, bytes, passes);
	chan_push(tc, words, n);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket), 0);
	chan_resync_put(tc);
	assert_true(wait_event(VGPU_EVENT_PRIV_FENCE, tc->info.id, false, ticket, start, &event));
	assert_int_equal(event.channel_id, tc->info.id);
	read_ok(sp->as, DATA_VA, actual, bytes);
	checksum = vgpu_kernel_reference_checksum(actual, bytes);
	assert_true(checksum == vgpu_kernel_reference_fill_stream_checksum(3, bytes, passes));
	/* a second one gets another ticket; user work goes on after both */
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket2), 0);
	chan_resync_put(tc);
	assert_true(ticket2 != ticket);
	assert_true(wait_event(VGPU_EVENT_PRIV_FENCE, tc->info.id, false, ticket2, start, NULL));
	assert_true(chan_sync(tc));
	chan_destroy(tc);
	mem_free(mem);
	space_destroy(sp);
	free(actual);
}

/* A privileged NOP takes a ring slot; a full ring refuses with -ENOSPC;
 * unknown commands are -EINVAL. */
static void test_priv_nop_and_full_ring(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 4);
	uint64_t ticket = 0;
	unsigned start = event_mark();

	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, (enum vgpu_hal_priv_cmd)7, NULL),
	                 -EINVAL);
	vgpu_hal_channel_set_fetch(tc->channel, false);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), 0);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket), 0);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), 0);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 3);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_NOP, NULL), -ENOSPC);
	assert_int_equal(vgpu_hal_channel_priv_submit(tc->channel, VGPU_PRIV_FENCE, &ticket),
	                 -ENOSPC);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 3);
	sleep_ms(20);
	assert_int_equal(count_events(VGPU_EVENT_PRIV_FENCE, tc->info.id, start), 0);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	assert_true(wait_event(VGPU_EVENT_PRIV_FENCE, tc->info.id, false, ticket, start, NULL));
	chan_resync_put(tc);
	assert_true(chan_wait_gp_get(tc, 3));
	/* the ring wraps with user entries after the privileged ones */
	assert_true(chan_sync(tc));
	assert_true(chan_sync(tc));
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(tc);
	space_destroy(sp);
}

/* NOPs in a batch: as many as the ring has room for, GP_PUT advanced once,
 * fetched like single ones (the resume's NOP fill). */
static void test_priv_nops_batch(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 8);

	vgpu_hal_channel_set_fetch(tc->channel, false);
	assert_int_equal(vgpu_hal_channel_priv_nops(tc->channel, 0), 0);
	assert_int_equal(vgpu_hal_channel_priv_nops(tc->channel, 5), 5);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 5);
	/* room for two more: one slot always stays empty */
	assert_int_equal(vgpu_hal_channel_priv_nops(tc->channel, 100), 2);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 7);
	assert_int_equal(vgpu_hal_channel_priv_nops(tc->channel, 1), 0);
	vgpu_hal_channel_set_fetch(tc->channel, true);
	vgpu_hal_channel_kick(tc->channel);
	assert_true(chan_wait_gp_get(tc, 7));
	/* wraps around the ring */
	assert_int_equal(vgpu_hal_channel_priv_nops(tc->channel, 3), 3);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 2);
	vgpu_hal_channel_kick(tc->channel);
	assert_true(chan_wait_gp_get(tc, 2));
	chan_resync_put(tc);
	assert_true(chan_sync(tc));
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	chan_destroy(tc);
	space_destroy(sp);
}

/* SEMAPHORE_RELEASE with VGPU_SEMAPHORE_TIMESTAMP (revision 3): the value at
 * va, the GPU's nanosecond clock at va + 8, never decreasing, and a long
 * launch between two releases lies between their timestamps (on simgpu, its
 * modeled time); a va that is not 16-byte aligned is a bad command. */
static void test_semaphore_timestamp(void **state)
{
	uint64_t bytes = 8 * MIB < suite.vram_page ? suite.vram_page : 8 * MIB;
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	struct tmem *data = data_mem(sp->as, DATA_VA, bytes, VGPU_TARGET_VRAM, 0);
	struct tmem *sem = data_mem(sp->as, DATA2_VA, suite.vram_page, VGPU_TARGET_VRAM, 0);
	bool simgpu = !strncmp(suite.backend, "simgpu", 6);
	uint32_t words[4 * VGPU_COMMAND_MAX_WORDS], n;
	uint64_t got[6], zero[6] = { 0 }, before, fence_ns, launch_ns, all_ns;
	unsigned start;

	write_ok(sp->as, DATA2_VA, zero, sizeof(zero));
	/* the launch alone, for its duration (less the fence that ends a run) */
	before = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE);
	assert_true(chan_sync(tc));
	fence_ns = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) - before;
	before = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE);
	assert_true(chan_run(tc, words, vgpu_push_launch_stream(words, DATA_VA, bytes, 4)));
	launch_ns = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) - before;
	launch_ns = launch_ns > fence_ns ? launch_ns - fence_ns : 0;

	/* release, launch, release, release */
	before = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE);
	n = vgpu_push_semaphore_release_timestamp(words, DATA2_VA, 0x1111, false);
	n += vgpu_push_launch_stream(words + n, DATA_VA, bytes, 4);
	n += vgpu_push_semaphore_release_timestamp(words + n, DATA2_VA + 16, 0x2222, false);
	n += vgpu_push_semaphore_release_timestamp(words + n, DATA2_VA + 32, 0x3333, true);
	assert_true(chan_run(tc, words, n));
	all_ns = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) - before;
	read_ok(sp->as, DATA2_VA, got, sizeof(got));
	assert_true(got[0] == 0x1111 && got[2] == 0x2222 && got[4] == 0x3333);
	print_message("timestamps %llu, +%llu ns, +%llu ns; the launch alone %llu ns\n",
	              (unsigned long long)got[1], (unsigned long long)(got[3] - got[1]),
	              (unsigned long long)(got[5] - got[3]), (unsigned long long)launch_ns);
	assert_true(got[1] > 0);
	assert_true(got[3] > got[1]); /* the launch took time */
	assert_true(got[5] >= got[3]);
	if (simgpu) {
		/* the modeled clock: the launch's cost lies between the first
		 * two (launch_ns also holds fetching its pushbuffer, a few
		 * ns), and nothing outside the run's modeled time */
		assert_true(launch_ns > 1000);
		assert_true(got[3] - got[1] >= launch_ns - launch_ns / 100);
		assert_true(got[3] - got[1] <= launch_ns + launch_ns / 100);
		assert_true(got[5] - got[1] <= all_ns);
	}

	/* a second run continues the clock */
	assert_true(chan_run(tc, words, vgpu_push_semaphore_release_timestamp(words, DATA2_VA,
	                                                                        0x4444, false)));
	read_ok(sp->as, DATA2_VA, got, 16);
	assert_true(got[0] == 0x4444 && got[1] >= got[5]);

	/* 8-byte but not 16-byte aligned: a bad command, nothing written */
	write_ok(sp->as, DATA2_VA, zero, sizeof(zero));
	start = event_mark();
	chan_push(tc, words, vgpu_push_semaphore_release_timestamp(words, DATA2_VA + 8, 7, false));
	chan_push(tc, words, vgpu_push_semaphore_release(words, tc->sem_va, 99, true));
	vgpu_hal_channel_kick(tc->channel);
	expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, "timestamp release at a 16n + 8 VA");
	assert_no_fence(tc, 99, start);
	read_ok(sp->as, DATA2_VA, got, sizeof(got));
	assert_memory_equal(got, zero, sizeof(zero));

	chan_destroy(tc);
	mem_free(sem);
	mem_free(data);
	space_destroy(sp);
}

/* Each malformed pushbuffer or GPFIFO entry kills its channel with
 * VGPU_FAULT_BAD_COMMAND and nothing after it runs. */
static void test_bad_commands(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *good = chan_create(sp, 0);
	struct {
		const char *what;
		uint32_t words[8];
		uint32_t count;
	} cases[] = {
		{ "unknown opcode", { VGPU_COMMAND_HEADER(0x42, 0, 0) }, 1 },
		{ "COPY overrunning the pushbuffer", { VGPU_COMMAND_HEADER(VGPU_CMD_COPY, 0, 6), 1, 2 }, 3 },
		{ "SEMAPHORE_RELEASE with 3 argument words",
		  { VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE, 0, 3), 0, 0, 0 }, 4 },
		{ "SEMAPHORE_RELEASE with an unknown flag",
		  { VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE, 0x80, 4), 0, 0, 0, 0 }, 5 },
		{ "MEMSET with a flag", { VGPU_COMMAND_HEADER(VGPU_CMD_MEMSET, 1, 5), 0, 0, 0, 0, 0 }, 6 },
		{ "COPY with 5 argument words",
		  { VGPU_COMMAND_HEADER(VGPU_CMD_COPY, 0, 5), 0, 0, 0, 0, 0 }, 6 },
		{ "PRIV_FENCE in a user pushbuffer", { VGPU_COMMAND_HEADER(VGPU_CMD_PRIV_FENCE, 0, 0) }, 1 },
		{ "LAUNCH with an even argument count",
		  { VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH, 0, 2), VGPU_KERNEL_FILL, 0 }, 3 },
		{ "NOP overrunning the pushbuffer", { VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, 9), 0 }, 2 },
	};
	unsigned i, start;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tchan *tc = chan_create(sp, 0);
		uint32_t fence[VGPU_COMMAND_MAX_WORDS];

		start = event_mark();
		chan_push(tc, cases[i].words, cases[i].count);
		chan_push(tc, fence, vgpu_push_semaphore_release(fence, tc->sem_va, 99, true));
		expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, cases[i].what);
		assert_no_fence(tc, 99, start);
		chan_destroy(tc);
	}

	/* GPFIFO entries: a length that is not a multiple of 4, one above the
	 * maximum, nonzero flags; a GP_PUT outside the ring */
	{
		struct tchan *tc = chan_create(sp, 0);

		start = event_mark();
		chan_push_entry(tc, tc->push_va, 6);
		expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, "GPFIFO length 6");
		chan_destroy(tc);

		tc = chan_create(sp, 0);
		start = event_mark();
		chan_push_entry(tc, tc->push_va, VGPU_PUSHBUFFER_MAX_BYTES + 4);
		expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, "GPFIFO length above the maximum");
		chan_destroy(tc);

		tc = chan_create(sp, 0);
		start = event_mark();
		vgpu_gpfifo_write(tc->info.gpfifo, tc->info.layout.gpfifo_entries, 0, tc->push_va, 4);
		((struct vgpu_gpfifo_entry *)tc->info.gpfifo)[0].flags = htole32(1);
		vgpu_control_write_gp_put(tc->info.control, 1);
		expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, "GPFIFO entry with flags");
		chan_destroy(tc);

		tc = chan_create(sp, 0);
		start = event_mark();
		vgpu_control_write_gp_put(tc->info.control, tc->info.layout.gpfifo_entries + 1);
		expect_error(tc, start, VGPU_FAULT_BAD_COMMAND, "GP_PUT outside the ring");
		chan_destroy(tc);
	}

	/* well-formed oddities are fine: NOP padding with arguments, a NOP
	 * entry; and the bystander never noticed */
	{
		uint32_t words[4] = { VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, 3), 0xffffffff,
		                      0xffffffff, 0xffffffff };

		assert_true(chan_run(good, words, 4));
		chan_push(good, NULL, 0);
		assert_true(chan_sync(good));
		assert_int_equal(vgpu_hal_channel_state(good->channel, NULL), VGPU_CHANNEL_OK);
	}
	chan_destroy(good);
	space_destroy(sp);
}

/* LAUNCH with arguments a kernel refuses: VGPU_FAULT_BAD_KERNEL_ARGS. */
static void test_bad_kernel_args(void **state)
{
	uint64_t page = suite.vram_page, bytes = 2 * page;
	struct tspace *sp = space_create();
	struct tmem *mem = mem_vram(sp->as, DATA_VA, bytes, suite.vram_page, 0);
	struct tmem *out = mem_vram(sp->as, DATA2_VA, bytes, suite.vram_page, 0);
	struct {
		const char *what;
		enum vgpu_kernel kernel;
		uint64_t args[4];
		uint32_t nargs;
	} cases[] = {
		{ "unknown kernel", (enum vgpu_kernel)99, { 0 }, 0 },
		{ "FILL misaligned", VGPU_KERNEL_FILL, { DATA_VA + 4, 64, 1 }, 3 },
		{ "FILL of 0 bytes", VGPU_KERNEL_FILL, { DATA_VA, 0, 1 }, 3 },
		{ "FILL of 12 bytes", VGPU_KERNEL_FILL, { DATA_VA, 12, 1 }, 3 },
		{ "COPY of 0 bytes", VGPU_KERNEL_COPY, { DATA2_VA, DATA_VA, 0 }, 3 },
		{ "STREAM of 0 passes", VGPU_KERNEL_STREAM, { DATA_VA, 64, 0 }, 3 },
		{ "STREAM misaligned", VGPU_KERNEL_STREAM, { DATA_VA + 4, 64, 1 }, 3 },
		{ "STENCIL of width 0", VGPU_KERNEL_STENCIL, { DATA_VA, DATA2_VA, 0, 4 }, 4 },
		{ "STENCIL too wide", VGPU_KERNEL_STENCIL,
		  { DATA_VA, DATA2_VA, VGPU_STENCIL_MAX_WIDTH + 1, 1 }, 4 },
		{ "STENCIL of height 0", VGPU_KERNEL_STENCIL, { DATA_VA, DATA2_VA, 4, 0 }, 4 },
		{ "STENCIL in place", VGPU_KERNEL_STENCIL, { DATA_VA, DATA_VA + 16, 16, 4 }, 4 },
		{ "STENCIL misaligned", VGPU_KERNEL_STENCIL, { DATA_VA + 2, DATA2_VA, 16, 4 }, 4 },
		{ "RANDOM_ACCESS of 0 bytes", VGPU_KERNEL_RANDOM_ACCESS, { DATA_VA, 0, 10, 1 }, 4 },
		{ "RANDOM_ACCESS misaligned", VGPU_KERNEL_RANDOM_ACCESS, { DATA_VA + 1, 64, 10, 1 },
		  4 },
		{ "CHECKSUM of 0 bytes", VGPU_KERNEL_CHECKSUM, { DATA_VA, 0, DATA2_VA }, 3 },
		{ "CHECKSUM misaligned result", VGPU_KERNEL_CHECKSUM, { DATA_VA, 64, DATA2_VA + 4 },
		  3 },
	};
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tchan *tc = chan_create(sp, 0);
		uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
		unsigned start = event_mark();

		n = vgpu_push_launch(words, cases[i].kernel, cases[i].args, cases[i].nargs);
		n += vgpu_push_semaphore_release(words + n, tc->sem_va, 99, true);
		chan_push(tc, words, n);
		expect_error(tc, start, VGPU_FAULT_BAD_KERNEL_ARGS, cases[i].what);
		assert_no_fence(tc, 99, start);
		chan_destroy(tc);
	}
	mem_free(out);
	mem_free(mem);
	space_destroy(sp);
}

/*
 * Isolation: a channel of address space A touching a VA that only B maps
 * faults (VGPU_FAULT_UNMAPPED at that VA), runs nothing after, raises one
 * error; B's data and B's channel are untouched.
 */
static void test_fault_unmapped_isolation(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *a = space_create(), *b = space_create();
	struct tchan *victim = chan_create(a, 0), *bystander = chan_create(b, 0);
	struct tmem *mem = mem_vram(b->as, DATA_VA, 2 * page, suite.vram_page, 0);
	uint8_t *data = reference_fill(2 * page, 4);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error;
	unsigned start, i;

	write_ok(b->as, DATA_VA, data, 2 * page);
	assert_true(chan_sync(victim));
	start = event_mark();
	chan_push(victim, words, vgpu_push_memset(words, DATA_VA + 0x1230, 7, 16));
	chan_push(victim, words, vgpu_push_semaphore_release(words, victim->sem_va, 99, true));
	error = expect_error(victim, start, VGPU_FAULT_UNMAPPED, "MEMSET of another AS's VA");
	assert_int_equal(error.type, VGPU_EVENT_CHANNEL_ERROR);
	assert_int_equal(error.channel_id, victim->info.id);
	assert_true(error.address == DATA_VA + 0x1230);
	expect_bytes(b->as, DATA_VA, data, 2 * page, "the other address space's data");

	/* the bystander keeps working on that data */
	for (i = 0; i < 10; i++) {
		assert_true(chan_run(bystander, words,
		                     vgpu_push_launch_fill(words, DATA_VA, 2 * page, i)));
		assert_int_equal(vgpu_hal_channel_state(bystander->channel, NULL), VGPU_CHANNEL_OK);
	}
	free(data);
	data = reference_fill(2 * page, 9);
	expect_bytes(b->as, DATA_VA, data, 2 * page, "the bystander's FILL");
	/* more work for the dead channel is ignored */
	chan_fence(victim);
	assert_true(chan_sync(bystander));
	assert_no_fence(victim, 99, start);
	assert_int_equal(count_events(VGPU_EVENT_CHANNEL_ERROR, victim->info.id, start), 1);
	assert_int_equal(count_events(VGPU_EVENT_CHANNEL_ERROR, bystander->info.id, 0), 0);
	chan_destroy(bystander);
	chan_destroy(victim);
	mem_free(mem);
	space_destroy(b);
	space_destroy(a);
	free(data);
}

/* A kernel whose buffer runs past the mapping kills its channel (UNMAPPED,
 * at or past the end of the mapping); a channel on the same address space
 * is not harmed. */
static void test_fault_kernel_leaves_mapping(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *sp = space_create();
	struct tmem *mem = mem_vram(sp->as, DATA_VA, page, suite.vram_page, 0);
	struct tmem *result = mem_vram(sp->as, DATA2_VA, page, suite.vram_page, 0);
	struct tmem *own = mem_vram(sp->as, DATA3_VA, page, suite.vram_page, 0);
	struct tchan *bystander = chan_create(sp, 0);
	uint32_t words[2 * VGPU_COMMAND_MAX_WORDS], n;
	uint8_t *expected = reference_fill(page, 8);
	unsigned k;

	for (k = 0; k < 3; k++) {
		struct tchan *victim = chan_create(sp, 0);
		struct vgpu_hal_event error;
		unsigned start = event_mark();
		const char *what;

		if (k == 0) {
			what = "FILL past the mapping";
			n = vgpu_push_launch_fill(words, DATA_VA, 2 * page, 1);
		} else if (k == 1) {
			what = "CHECKSUM reading past the mapping";
			n = vgpu_push_launch_checksum(words, DATA_VA, 2 * page, DATA2_VA);
		} else {
			what = "COPY kernel writing past the mapping";
			n = vgpu_push_launch_copy(words, DATA_VA + page / 2, DATA2_VA, page);
		}
		/* the bystander has work queued at the same time */
		chan_push(bystander, words + n,
		          vgpu_push_launch_fill(words + n, DATA3_VA, page, 6 + k));
		chan_push(victim, words, n);
		chan_fence(bystander);
		error = expect_error(victim, start, VGPU_FAULT_UNMAPPED, what);
		if (error.address < DATA_VA + page || error.address >= DATA_VA + 2 * page)
			fail_msg("%s: fault address 0x%llx outside the unmapped part "
			         "[0x%llx, 0x%llx)",
			         what, (unsigned long long)error.address,
			         (unsigned long long)(DATA_VA + page),
			         (unsigned long long)(DATA_VA + 2 * page));
		assert_true(chan_sync(bystander));
		assert_int_equal(vgpu_hal_channel_state(bystander->channel, NULL), VGPU_CHANNEL_OK);
		chan_destroy(victim);
	}
	expect_bytes(sp->as, DATA3_VA, expected, page, "the bystander's FILL");
	chan_destroy(bystander);
	mem_free(own);
	mem_free(result);
	mem_free(mem);
	space_destroy(sp);
	free(expected);
}

/* A read-only mapping: the aperture writes it, channels read it, and a
 * channel writing it dies with VGPU_FAULT_READ_ONLY (nothing written). */
static void test_fault_read_only(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *sp = space_create();
	struct tmem *ro = mem_vram(sp->as, DATA_VA, page, suite.vram_page, VGPU_MAP_READ_ONLY);
	struct tmem *rw = mem_vram(sp->as, DATA2_VA, page, suite.vram_page, 0);
	uint8_t *data = reference_fill(page, 12);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct tchan *tc = chan_create(sp, 0);
	unsigned k;

	write_ok(sp->as, DATA_VA, data, page);
	expect_bytes(sp->as, DATA_VA, data, page, "aperture write to a read-only mapping");
	assert_true(chan_run(tc, words, vgpu_push_copy(words, DATA2_VA, DATA_VA, page)));
	expect_bytes(sp->as, DATA2_VA, data, page, "channel read of a read-only mapping");
	write_ok(sp->as, DATA2_VA, data + 1, page - 1); /* other content to copy back */
	for (k = 0; k < 2; k++) {
		struct tchan *victim = chan_create(sp, 0);
		struct vgpu_hal_event error;
		unsigned start = event_mark();

		if (k == 0)
			chan_push(victim, words, vgpu_push_copy(words, DATA_VA + 256, DATA2_VA, 512));
		else
			chan_push(victim, words, vgpu_push_launch_fill(words, DATA_VA + 256, 512, 1));
		error = expect_error(victim, start, VGPU_FAULT_READ_ONLY,
		                     k ? "FILL into a read-only mapping" :
		                         "COPY into a read-only mapping");
		assert_true(error.address >= DATA_VA && error.address < DATA_VA + page);
		chan_destroy(victim);
	}
	expect_bytes(sp->as, DATA_VA, data, page, "read-only mapping after the faults");
	assert_true(chan_sync(tc));
	chan_destroy(tc);
	mem_free(rw);
	mem_free(ro);
	space_destroy(sp);
	free(data);
}

/* A privileged mapping is out of reach of channels (VGPU_FAULT_PRIVILEGED)
 * but not of the aperture. */
static void test_fault_privileged(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *sp = space_create();
	struct tmem *priv = mem_vram(sp->as, DATA_VA, page, suite.vram_page, VGPU_MAP_PRIVILEGED);
	struct tmem *rw = mem_vram(sp->as, DATA2_VA, page, suite.vram_page, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t value = 0x1234;
	unsigned k;

	write_ok(sp->as, DATA_VA, &value, 8);
	value = 0;
	read_ok(sp->as, DATA_VA, &value, 8);
	assert_int_equal(value, 0x1234);
	for (k = 0; k < 2; k++) {
		struct tchan *victim = chan_create(sp, 0);
		struct vgpu_hal_event error;
		unsigned start = event_mark();

		if (k == 0)
			chan_push(victim, words, vgpu_push_memset(words, DATA_VA + 64, 0, 64));
		else
			chan_push(victim, words,
			          vgpu_push_launch_checksum(words, DATA_VA, 64, DATA2_VA));
		error = expect_error(victim, start, VGPU_FAULT_PRIVILEGED,
		                     k ? "CHECKSUM of a privileged mapping" :
		                         "MEMSET of a privileged mapping");
		assert_true(error.address >= DATA_VA && error.address < DATA_VA + page);
		chan_destroy(victim);
	}
	read_ok(sp->as, DATA_VA, &value, 8);
	assert_int_equal(value, 0x1234);
	mem_free(rw);
	mem_free(priv);
	space_destroy(sp);
}

/* A SYSMEM PTE whose IOVA was unmapped: the channel touching it dies with
 * VGPU_FAULT_IOMMU. */
static void test_fault_unmapped_iova(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *sp = space_create();
	struct tmem *host = mem_sysmem(sp->as, DATA_VA, page, suite.vram_page,
	                               VGPU_TARGET_SYSMEM_COHERENT, 0);
	struct tmem *result = mem_vram(sp->as, DATA2_VA, page, suite.vram_page, 0);
	struct tchan *tc = chan_create(sp, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct vgpu_hal_event error;
	unsigned start;

	assert_true(chan_run(tc, words, vgpu_push_memset(words, DATA_VA, 0x55, 256)));
	assert_int_equal(vgpu_hal_iommu_unmap(suite.hal, host->iova, host->bytes), 0);
	host->iova_mapped = false;
	start = event_mark();
	chan_push(tc, words, vgpu_push_memset(words, DATA_VA + 128, 0x66, 64));
	error = expect_error(tc, start, VGPU_FAULT_IOMMU, "MEMSET of an unmapped IOVA");
	assert_true(error.address >= DATA_VA && error.address < DATA_VA + page);
	chan_destroy(tc);
	mem_free(result);
	mem_free(host);
	space_destroy(sp);
}

/* Destroying a channel with work pending (waiting on a semaphore, or not
 * fetched at all) returns, and the GPU goes on serving the others. */
static void test_destroy_with_pending_work(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *waiter = chan_create(sp, 0), *stopped = chan_create(sp, 0);
	struct tchan *dead = chan_create(sp, 0), *other = chan_create(sp, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS], waiter_id, stopped_id;
	unsigned i, start = event_mark();

	chan_push(waiter, words, vgpu_push_semaphore_acquire(words, space_sem_va(sp, 30), 1000));
	for (i = 0; i < 3; i++)
		chan_fence(waiter);
	assert_true(chan_wait_gp_get(waiter, 1));
	vgpu_hal_channel_set_fetch(stopped->channel, false);
	for (i = 0; i < 3; i++)
		chan_fence(stopped);
	chan_push(dead, words, vgpu_push_memset(words, DATA3_VA, 0, 8));
	chan_fence(dead);
	assert_true(chan_wait_error(dead, start, NULL));
	assert_true(chan_sync(other));
	waiter_id = waiter->info.id;
	stopped_id = stopped->info.id;
	chan_destroy(waiter);
	chan_destroy(stopped);
	chan_destroy(dead);
	for (i = 0; i < 3; i++)
		assert_true(chan_sync(other));
	/* nothing the destroyed channels had pending ever ran */
	assert_int_equal(count_events(VGPU_EVENT_FENCE, waiter_id, start), 0);
	assert_int_equal(count_events(VGPU_EVENT_FENCE, stopped_id, start), 0);
	chan_destroy(other);
	space_destroy(sp);
}

/* caps.max_channels channels can exist at once, not one more. */
static void test_channel_limit(void **state)
{
	uint32_t max = suite.caps.max_channels, i, j;
	struct vgpu_hal_channel **channels, *extra;
	struct vgpu_hal_channel_info info;
	uint32_t *ids;
	struct vgpu_hal_as *as;

	if (max > 256) {
		printf("# max_channels %u: too many to fill in a unit test\n", max);
		skip();
	}
	as = as_create_ok();
	channels = calloc(max, sizeof(*channels));
	ids = calloc(max, sizeof(*ids));
	assert_non_null(channels);
	assert_non_null(ids);
	for (i = 0; i < max; i++) {
		int err = vgpu_hal_channel_create(as, 16, &channels[i], &info);

		if (err)
			fail_msg("channel %u of %u: channel_create = %d", i + 1, max, err);
		track_channel(channels[i]);
		ids[i] = info.id;
		assert_true(info.id < max);
		for (j = 0; j < i; j++)
			assert_true(ids[j] != info.id);
	}
	assert_int_equal(vgpu_hal_channel_create(as, 16, &extra, &info), -ENOSPC);
	untrack_channel(channels[max / 2]);
	vgpu_hal_channel_destroy(channels[max / 2]);
	assert_int_equal(vgpu_hal_channel_create(as, 16, &channels[max / 2], &info), 0);
	track_channel(channels[max / 2]);
	assert_true(info.id < max);
	for (i = 0; i < max; i++) {
		untrack_channel(channels[i]);
		vgpu_hal_channel_destroy(channels[i]);
	}
	as_destroy_ok(as);
	free(channels);
	free(ids);
}

/* Where the backend shares a channel's window (memfd), a guest's view of it
 * drives the channel: ring entries and GP_PUT written through an mmap of
 * the descriptor run, and GP_GET shows up there. */
static void test_channel_window_memfd(void **state)
{
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	const struct vgpu_hal_channel_layout *l = &tc->info.layout;
	uint32_t words[VGPU_COMMAND_MAX_WORDS], n;
	uint8_t *control, *gpfifo;
	unsigned start = event_mark();
	int ms;

	if (tc->info.memfd < 0) {
		printf("# %s does not share channel windows (memfd -1)\n", suite.backend);
		chan_destroy(tc);
		space_destroy(sp);
		skip();
	}
	control = mmap(NULL, l->control_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, tc->info.memfd,
	               (off_t)tc->info.control_offset);
	assert_true(control != MAP_FAILED);
	gpfifo = mmap(NULL, l->gpfifo_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, tc->info.memfd,
	              (off_t)tc->info.gpfifo_offset);
	assert_true(gpfifo != MAP_FAILED);
	assert_int_equal(le32toh(*vgpu_control_word(control, VGPU_CONTROL_VERSION)),
	                 VGPU_COMMANDS_VERSION);
	n = vgpu_push_semaphore_release(words, tc->sem_va, 5150, true);
	write_ok(sp->as, tc->push_va, words, n * 4);
	vgpu_gpfifo_write(gpfifo, l->gpfifo_entries, 0, tc->push_va, n * 4);
	vgpu_control_write_gp_put(control, 1);
	vgpu_control_ring_doorbell(control);
	assert_true(wait_event(VGPU_EVENT_FENCE, tc->info.id, false, 5150, start, NULL));
	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS && vgpu_control_read_gp_get(control) != 1; ms++)
		sleep_ms(1);
	assert_int_equal(vgpu_control_read_gp_get(control), 1);
	assert_int_equal(vgpu_control_read_gp_put(tc->info.control), 1);
	munmap(gpfifo, l->gpfifo_bytes);
	munmap(control, l->control_bytes);
	chan_destroy(tc);
	space_destroy(sp);
}

static bool counters_grew(const struct vgpu_hal_as_counters *before,
                          const struct vgpu_hal_as_counters *after, bool read,
                          enum vgpu_hal_target target)
{
	if (after->busy_ns[VGPU_ENGINE_COMPUTE] <= before->busy_ns[VGPU_ENGINE_COMPUTE])
		return false;
	return read ? after->bytes_read[target] > before->bytes_read[target]
	            : after->bytes_written[target] > before->bytes_written[target];
}

static void assert_monotonic(const struct vgpu_hal_as_counters *before,
                             const struct vgpu_hal_as_counters *after)
{
	unsigned i;

	for (i = 0; i < VGPU_TARGET_COUNT; i++) {
		assert_true(after->bytes_read[i] >= before->bytes_read[i]);
		assert_true(after->bytes_written[i] >= before->bytes_written[i]);
	}
	for (i = 0; i < VGPU_ENGINE_COUNT; i++)
		assert_true(after->busy_ns[i] >= before->busy_ns[i]);
}

/* Counters and engine time grow with work (the values are the backend's:
 * modeled on simgpu, measured on hardware); the engines report idle (-1)
 * once the work is done. */
static void test_counters_grow_with_work(void **state)
{
	uint64_t bytes = 2ull * suite.vram_page;
	struct tspace *sp = space_create();
	struct tchan *tc = chan_create(sp, 0);
	struct tmem *vram = mem_vram(sp->as, DATA_VA, bytes, suite.vram_page, 0);
	struct tmem *host = mem_sysmem(sp->as, DATA2_VA, bytes, suite.vram_page,
	                               VGPU_TARGET_SYSMEM_COHERENT, 0);
	struct vgpu_hal_as_counters c0, c1, c2, last;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t e0 = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE), e1;
	int ms;
	int32_t current;

	vgpu_hal_as_counters(sp->as, &c0);
	assert_true(chan_run(tc, words, vgpu_push_launch_fill(words, DATA_VA, bytes, 1)));
	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		vgpu_hal_as_counters(sp->as, &c1);
		assert_monotonic(&c0, &c1);
		if (counters_grew(&c0, &c1, false, VGPU_TARGET_VRAM) &&
		    vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) > e0)
			break;
		sleep_ms(1);
	}
	if (ms == HAL_TEST_TIMEOUT_MS)
		fail_msg("FILL of VRAM: bytes written to VRAM %llu -> %llu, compute busy %llu -> "
		         "%llu ns, engine %llu -> %llu ns",
		         (unsigned long long)c0.bytes_written[VGPU_TARGET_VRAM],
		         (unsigned long long)c1.bytes_written[VGPU_TARGET_VRAM],
		         (unsigned long long)c0.busy_ns[VGPU_ENGINE_COMPUTE],
		         (unsigned long long)c1.busy_ns[VGPU_ENGINE_COMPUTE],
		         (unsigned long long)e0,
		         (unsigned long long)vgpu_hal_engine_modeled_ns(suite.hal,
		                                                        VGPU_ENGINE_COMPUTE));
	e1 = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE);
	assert_true(chan_run(tc, words, vgpu_push_launch_checksum(words, DATA2_VA, bytes,
	                                                          DATA_VA)));
	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		vgpu_hal_as_counters(sp->as, &c2);
		assert_monotonic(&c1, &c2);
		if (counters_grew(&c1, &c2, true, VGPU_TARGET_SYSMEM_COHERENT) &&
		    vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) > e1)
			break;
		sleep_ms(1);
	}
	if (ms == HAL_TEST_TIMEOUT_MS)
		fail_msg("CHECKSUM of host memory: bytes read from SYSMEM %llu -> %llu",
		         (unsigned long long)c1.bytes_read[VGPU_TARGET_SYSMEM_COHERENT],
		         (unsigned long long)c2.bytes_read[VGPU_TARGET_SYSMEM_COHERENT]);
	/* idle again: both engines report no channel; counters stay monotonic */
	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		current = vgpu_hal_engine_current_channel(suite.hal, VGPU_ENGINE_COMPUTE);
		assert_true(current == -1 || current == (int32_t)tc->info.id);
		if (current == -1)
			break;
		sleep_ms(1);
	}
	assert_int_equal(vgpu_hal_engine_current_channel(suite.hal, VGPU_ENGINE_COMPUTE), -1);
	assert_int_equal(vgpu_hal_engine_current_channel(suite.hal, VGPU_ENGINE_COPY), -1);
	vgpu_hal_as_counters(sp->as, &last);
	assert_monotonic(&c2, &last);
	chan_destroy(tc);
	mem_free(host);
	mem_free(vram);
	space_destroy(sp);
}

/* Referenced bits, where the GPU has them; -ENOTSUP where not. */
static void test_referenced_bits(void **state)
{
	uint64_t page = suite.vram_page;
	struct tspace *sp = space_create();
	struct tmem *mem = mem_vram(sp->as, DATA_VA, 2 * page, suite.vram_page, 0);
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct tchan *tc;
	bool referenced = true;

	if (!suite.caps.has_reference_bits) {
		assert_int_equal(vgpu_hal_as_test_and_clear_referenced(sp->as, DATA_VA, 2 * page,
		                                                       &referenced),
		                 -ENOTSUP);
		mem_free(mem);
		space_destroy(sp);
		return;
	}
	tc = chan_create(sp, 0);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(sp->as, DATA_VA, 2 * page,
	                                                       &referenced), 0);
	assert_true(chan_run(tc, words, vgpu_push_launch_fill(words, DATA_VA, page, 1)));
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(sp->as, DATA_VA + page, page,
	                                                       &referenced), 0);
	assert_false(referenced);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(sp->as, DATA_VA, page, &referenced),
	                 0);
	assert_true(referenced);
	assert_int_equal(vgpu_hal_as_test_and_clear_referenced(sp->as, DATA_VA, page, &referenced),
	                 0);
	assert_false(referenced);
	chan_destroy(tc);
	mem_free(mem);
	space_destroy(sp);
}

static const struct CMUnitTest channel_tests[] = {
	HAL_TEST(test_channel_create_layout),
	HAL_TEST(test_channel_fence_and_gp_get),
	HAL_TEST(test_channel_memset_copy),
	HAL_TEST(test_semaphore_acquire),
	HAL_TEST(test_semaphore_timestamp),
	HAL_TEST(test_copy_flood_does_not_starve),
	HAL_TEST(test_acquire_timeout),
	HAL_TEST(test_channel_kill),
	HAL_TEST(test_set_fetch),
	HAL_TEST(test_channel_pending),
	HAL_TEST(test_priv_fence_after_work),
	HAL_TEST(test_priv_nop_and_full_ring),
	HAL_TEST(test_priv_nops_batch),
	HAL_TEST(test_bad_commands),
	HAL_TEST(test_bad_kernel_args),
	HAL_TEST(test_fault_unmapped_isolation),
	HAL_TEST(test_fault_kernel_leaves_mapping),
	HAL_TEST(test_fault_read_only),
	HAL_TEST(test_fault_privileged),
	HAL_TEST(test_fault_unmapped_iova),
	HAL_TEST(test_destroy_with_pending_work),
	HAL_TEST(test_channel_limit),
	HAL_TEST(test_channel_window_memfd),
	HAL_TEST(test_counters_grow_with_work),
	HAL_TEST(test_referenced_bits),
};

const struct hal_test_group hal_channel_group = {
	"hal-channels", channel_tests, sizeof(channel_tests) / sizeof(channel_tests[0]),
};
