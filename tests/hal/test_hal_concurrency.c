// SPDX-License-Identifier: MIT
/*
 * test_hal_concurrency.c - two threads each drive their own channel and
 * address space (kernels and fences, checked every round) while the copy
 * engine is kept busy from a third; nothing interferes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_conformance.h"

#define WORKERS 2
#define ROUNDS 25

struct worker {
	struct tspace *sp;
	struct tchan *tc;
	struct tmem *data, *result;
	uint64_t bytes, seed_base;
	pthread_t thread;
	unsigned rounds_done;
	bool failed;
	char failure[256];
};

/* Runs on its own thread: no cmocka assertions here, failures are
 * recorded and asserted by the main thread. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tchan *tc = w->tc;
	uint32_t words[4 * VGPU_COMMAND_MAX_WORDS], n, mask = tc->info.layout.gpfifo_entries - 1;
	uint64_t checksum, expected;
	unsigned round;

	for (round = 0; round < ROUNDS; round++) {
		uint64_t seed = w->seed_base + round, value = round + 1;
		unsigned start = event_mark();
		int err;

		n = vgpu_push_launch_fill(words, DATA_VA, w->bytes, seed);
		n += vgpu_push_launch_stream(words + n, DATA_VA, w->bytes, 1);
		n += vgpu_push_launch_checksum(words + n, DATA_VA, w->bytes, DATA2_VA);
		n += vgpu_push_semaphore_release(words + n, tc->sem_va, value, true);
		/* the previous round has completed: its pushbuffer is free */
		err = vgpu_hal_as_write(w->sp->as, tc->push_va, words, n * 4);
		if (err) {
			snprintf(w->failure, sizeof(w->failure), "round %u: as_write = %d", round, err);
			__atomic_store_n(&w->failed, true, __ATOMIC_RELEASE);
			break;
		}
		vgpu_gpfifo_write(tc->info.gpfifo, mask + 1, tc->put, tc->push_va, n * 4);
		tc->put = (tc->put + 1) & mask;
		vgpu_control_write_gp_put(tc->info.control, tc->put);
		vgpu_hal_channel_kick(tc->channel);
		if (!wait_event(VGPU_EVENT_FENCE, tc->info.id, false, value, start, NULL)) {
			snprintf(w->failure, sizeof(w->failure), "round %u: no fence %llu", round,
			         (unsigned long long)value);
			__atomic_store_n(&w->failed, true, __ATOMIC_RELEASE);
			break;
		}
		err = vgpu_hal_as_read(w->sp->as, DATA2_VA, &checksum, 8);
		expected = vgpu_kernel_reference_fill_stream_checksum(seed, w->bytes, 1);
		if (err || checksum != expected) {
			snprintf(w->failure, sizeof(w->failure),
			         "round %u: checksum 0x%llx (read %d), expected 0x%llx", round,
			         (unsigned long long)checksum, err, (unsigned long long)expected);
			__atomic_store_n(&w->failed, true, __ATOMIC_RELEASE);
			break;
		}
		__atomic_fetch_add(&w->rounds_done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_concurrent_channels_and_copies(void **state)
{
	struct worker workers[WORKERS];
	const uint64_t bytes = 2ull * suite.vram_page;
	struct vgpu_hal_as *dma = as_create_ok();
	struct tmem *src = mem_vram(dma, DATA_VA, bytes, suite.vram_page, 0);
	struct tmem *dst = mem_sysmem(dma, DATA2_VA, bytes, suite.vram_page,
	                              VGPU_TARGET_SYSMEM_NONCOHERENT, 0);
	uint8_t *data = reference_fill(bytes, 4242);
	uint64_t compute0 = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE);
	uint64_t copy0 = vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY);
	uint64_t cookie = 0;
	unsigned i, copies = 0;
	bool running;
	int ms;

	write_ok(dma, DATA_VA, data, bytes);
	memset(workers, 0, sizeof(workers));
	for (i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];

		w->sp = space_create();
		w->tc = chan_create(w->sp, 0);
		w->bytes = bytes;
		w->seed_base = 1000 * (i + 1);
		w->data = mem_vram(w->sp->as, DATA_VA, bytes, suite.vram_page, 0);
		w->result = i % 2 ? mem_sysmem(w->sp->as, DATA2_VA, suite.vram_page, suite.vram_page,
		                               VGPU_TARGET_SYSMEM_COHERENT, 0)
		                  : mem_vram(w->sp->as, DATA2_VA, suite.vram_page, suite.vram_page, 0);
	}
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]),
		                 0);

	/* keep the copy engine busy meanwhile, one copy at a time */
	do {
		unsigned start = event_mark();
		struct vgpu_hal_event event;

		cookie++;
		assert_int_equal(vgpu_hal_copy(dma, DATA2_VA, DATA_VA, bytes, cookie), 0);
		assert_true(wait_event(VGPU_EVENT_COPY_DONE, 0, false, cookie, start, &event));
		assert_int_equal(event.status, 0);
		copies++;
		running = false;
		for (i = 0; i < WORKERS; i++)
			running |= __atomic_load_n(&workers[i].rounds_done, __ATOMIC_ACQUIRE) < ROUNDS &&
			           !__atomic_load_n(&workers[i].failed, __ATOMIC_ACQUIRE);
	} while (running);

	for (i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];

		assert_int_equal(pthread_join(w->thread, NULL), 0);
		if (w->failed)
			fail_msg("worker %u: %s", i, w->failure);
		assert_int_equal(w->rounds_done, ROUNDS);
		assert_int_equal(vgpu_hal_channel_state(w->tc->channel, NULL), VGPU_CHANNEL_OK);
	}
	printf("# %u rounds on each of %u channels, %u copies meanwhile\n", ROUNDS, WORKERS,
	       copies);
	expect_bytes(dma, DATA2_VA, data, bytes, "the copy engine's last copy");
	/* both engines worked (their time may be accounted a little later) */
	for (ms = 0; ms < HAL_TEST_TIMEOUT_MS; ms++) {
		if (vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) > compute0 &&
		    vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY) > copy0)
			break;
		sleep_ms(1);
	}
	assert_true(vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COMPUTE) > compute0);
	assert_true(vgpu_hal_engine_modeled_ns(suite.hal, VGPU_ENGINE_COPY) > copy0);
	for (i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];

		chan_destroy(w->tc);
		mem_free(w->result);
		mem_free(w->data);
		space_destroy(w->sp);
	}
	mem_free(dst);
	mem_free(src);
	as_destroy_ok(dma);
	free(data);
}

static const struct CMUnitTest concurrency_tests[] = {
	HAL_TEST(test_concurrent_channels_and_copies),
};

const struct hal_test_group hal_concurrency_group = {
	"hal-concurrency", concurrency_tests,
	sizeof(concurrency_tests) / sizeof(concurrency_tests[0]),
};
