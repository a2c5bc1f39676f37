// SPDX-License-Identifier: MIT
/*
 * test_garbage.c - seeded random garbage (the fuzzer's regression test):
 *
 *  - the fuzz harness (fuzz_mailbox.h) on random byte strings, and on the
 *    files of a corpus directory if one is given;
 *  - a live vgpud: one tenant writes random request slots and ring indices
 *    and rings the doorbell at random, another allocates, frees and runs GPU
 *    work meanwhile and must never see an error; afterwards the garbage
 *    tenant recovers with sane indices, vgpud's invariants hold and
 *    detaching both releases everything.
 *
 * The seed is printed; VGPU_SEED repeats a run.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel_util.h"
#include "fuzz_mailbox.h"
#include "harness.h"

static const char *corpus_dir;
static uint64_t seed;

static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

static void test_harness_on_random_bytes(void **state)
{
	uint64_t rng = seed | 1;
	uint8_t buf[4096];
	unsigned i, answered = 0;

	(void)state;
	for (i = 0; i < 3000; i++) {
		size_t len = next_random(&rng) % sizeof(buf), j;

		for (j = 0; j < len; j++)
			buf[j] = (uint8_t)next_random(&rng);
		/* bias towards doorbells and well-formed-looking requests */
		for (j = 0; j < len; j += 1 + next_random(&rng) % 80)
			buf[j] = (uint8_t)(next_random(&rng) % 3 ? 1 : 5);
		answered += fuzz_mailbox_run(buf, len);
	}
	printf("# %u requests answered\n", answered);
	assert_true(answered > 0);
}

static void test_corpus(void **state)
{
	struct dirent *entry;
	unsigned files = 0;
	DIR *dir;

	(void)state;
	if (!corpus_dir)
		skip();
	dir = opendir(corpus_dir);
	if (!dir)
		skip();
	while ((entry = readdir(dir))) {
		char path[4096];
		uint8_t data[65536];
		size_t len;
		FILE *f;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", corpus_dir, entry->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		len = fread(data, 1, sizeof(data), f);
		fclose(f);
		fuzz_mailbox_run(data, len);
		files++;
	}
	closedir(dir);
	printf("# %u corpus files replayed\n", files);
}

struct worker {
	struct harness *h;
	volatile bool stop;
	unsigned rounds;
	int failures;
};

/* The well-behaved tenant: allocations and GPU work, verified. */
static void *good_tenant(void *arg)
{
	struct worker *w = arg;
	struct test_channel c;
	struct tenant t;
	uint32_t words[32], n, handle;
	uint64_t va;

	if (tenant_open(w->h, &t, "good", "big") || tenant_hello(&t) != VGPU_STATUS_OK ||
	    test_channel_create(&t, 64, &c) != VGPU_STATUS_OK) {
		w->failures++;
		return NULL;
	}
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint32_t pattern = 0x01010101u * (w->rounds & 0xff);

		int status = tenant_alloc(&t, 2u << 20, 7, &handle, &va);

		if (status != VGPU_STATUS_OK) {
			printf("# good tenant: ALLOC failed with status %d\n", status);
			w->failures++;
			break;
		}
		n = vgpu_push_memset(words, va, pattern, 2u << 20);
		n += vgpu_push_copy(words + n, c.info.notifier_gpu_va + 8, va + 4096, 8);
		test_channel_submit(&c, words, n);
		if (test_channel_finish(&c, 10000)) {
			printf("# good tenant: channel did not finish in 10 s (GP_GET %u, GP_PUT %u, "
			       "errors %#x)\n", vgpu_control_read_gp_get(c.control), c.put,
			       vgpu_local_device_reg_read(t.dev, VGPU_REG_ERROR_CHANNELS));
			w->failures++;
		} else if (test_channel_notifier(&c, 8) != ((uint64_t)pattern << 32 | pattern)) {
			printf("# good tenant: read %#llx, expected pattern %#x\n",
			       (unsigned long long)test_channel_notifier(&c, 8), pattern);
			w->failures++;
		}
		status = tenant_free(&t, handle);
		if (status != VGPU_STATUS_OK) {
			printf("# good tenant: FREE failed with status %d\n", status);
			w->failures++;
		}
		w->rounds++;
	}
	tenant_close(&t);
	return NULL;
}

static void test_live_garbage(void **state)
{
	struct harness *h = *state;
	struct worker w = { .h = h };
	struct vgpu_mailbox_header *header;
	uint64_t rng = seed * 2654435761u + 1;
	struct vgpu_core_stats stats;
	struct tenant bad;
	pthread_t thread;
	unsigned i;

	assert_int_equal(pthread_create(&thread, NULL, good_tenant, &w), 0);
	assert_int_equal(tenant_open(h, &bad, "bad", "big"), 0);
	header = tenant_header(&bad);
	for (i = 0; i < 20000; i++) {
		uint64_t r = next_random(&rng);
		uint8_t *slot = bad.bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
		                (r >> 8) % VGPU_MAILBOX_ENTRIES * VGPU_MAILBOX_SLOT_SIZE;
		unsigned j;

		switch (r % 8) {
		case 0: case 1: case 2: /* random slot bytes */
			for (j = 0; j < VGPU_MAILBOX_SLOT_SIZE; j += 8) {
				uint64_t v = next_random(&rng);

				memcpy(slot + j, &v, 8);
			}
			if (r & 0x10000) /* a plausible opcode */
				slot[0] = (uint8_t)(1 + (r >> 20) % 8), slot[1] = 0;
			break;
		case 3: /* advance req_head a little */
			__atomic_store_n(&header->req_head,
			                 __atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE) +
			                         (uint32_t)((r >> 8) % 40),
			                 __ATOMIC_RELEASE);
			break;
		case 4: /* any req_head */
			__atomic_store_n(&header->req_head, (uint32_t)(r >> 16), __ATOMIC_RELEASE);
			break;
		case 5: /* any resp_tail, or all consumed */
			__atomic_store_n(&header->resp_tail,
			                 r & 0x100 ? (uint32_t)(r >> 16)
			                           : __atomic_load_n(&header->resp_head, __ATOMIC_ACQUIRE),
			                 __ATOMIC_RELEASE);
			break;
		case 6: /* scribble on the backend's words */
			__atomic_store_n(&((uint32_t *)header)[(r >> 8) % 16], (uint32_t)(r >> 32),
			                 __ATOMIC_RELEASE);
			break;
		default:
			tenant_kick(&bad);
			break;
		}
		if (i % 1000 == 0)
			vgpu_local_device_reg_write(bad.dev, (uint32_t)(r >> 8) & 0xffc, (uint32_t)r);
	}
	/* the garbage tenant gets sane again: a doorbell republishes vgpud's
	 * indices, and from them on vgpud answers it */
	__atomic_store_n(&header->req_head, 0x80000000u, __ATOMIC_RELEASE);
	tenant_kick(&bad);
	usleep(100000);
	bad.req_head = __atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE);
	__atomic_store_n(&header->req_head, bad.req_head, __ATOMIC_RELEASE);
	bad.resp_tail = __atomic_load_n(&header->resp_head, __ATOMIC_ACQUIRE);
	__atomic_store_n(&header->resp_tail, bad.resp_tail, __ATOMIC_RELEASE);
	vgpu_local_device_reg_write(bad.dev, VGPU_REG_IRQ_MASK, VGPU_IRQ_ALL);
	assert_int_equal(tenant_hello(&bad), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&bad, 1u << 20, 7, NULL, NULL), VGPU_STATUS_OK);

	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	printf("# good tenant: %u rounds, %d failures\n", w.rounds, w.failures);
	assert_int_equal(w.failures, 0);
	assert_true(w.rounds > 0);
	assert_int_equal(vgpu_core_check_invariants(h->d->core, NULL), 0);
	tenant_close(&bad);
	assert_true(harness_wait_vms(h, 0, 10000));
	vgpu_core_stats(h->d->core, &stats);
	assert_int_equal(stats.allocated_bytes, 0);
	assert_int_equal(vgpu_hal_vram_free_bytes(h->d->hal), h->d->caps.vram_bytes);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_harness_on_random_bytes),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test_setup_teardown(test_live_garbage, harness_setup, harness_teardown),
	};

	corpus_dir = argc > 1 ? argv[1] : NULL;
	seed = test_seed();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
