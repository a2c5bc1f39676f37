// SPDX-License-Identifier: MIT
/*
 * test_swap.c - the shadow swap through the local transport, with a guest
 * thread writing into its channel window all along:
 *
 *  - driven directly (block, copy, map shadow, ..., block, copy back, map
 *    real, hundreds of times): every write either lands before a block (and
 *    is copied) or waits in the SIGSEGV handler until the map and lands in
 *    the new pages; none faults out, none is lost, and the real pages end
 *    up holding the last value written to every word;
 *  - driven by GPUswap: another VM's allocations evict this VM's chunks and
 *    the return pass brings them back, suspending and resuming its channel
 *    each time, while the guest keeps writing.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel_util.h"
#include "channel_window.h"
#include "device.h"
#include "harness.h"
#include "vgpu/memfd.h"

/* The guest: word i % words of its window area gets value i, i = 1..n.
 * Skips the control page's first 16 bytes (GP_PUT, GP_GET, doorbell,
 * version) so the GPU never sees a ring entry. */
struct writer {
	uint32_t *words;
	uint32_t count;
	uint32_t n;
	volatile bool stop;
	uint32_t written;
};

#define FIRST_WORD 4u

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t i;

	for (i = 1; i <= w->n && !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); i++)
		__atomic_store_n(&w->words[FIRST_WORD + i % (w->count - FIRST_WORD)], i,
		                 __ATOMIC_RELAXED);
	__atomic_store_n(&w->written, i - 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint32_t expected_word(const struct writer *w, uint32_t index)
{
	uint32_t span = w->count - FIRST_WORD, k = index - FIRST_WORD, last;

	/* the largest i <= written with i % span == k */
	if (w->written < k && k)
		return 0;
	last = w->written - ((w->written - k) % span);
	return last == 0 && k ? 0 : last;
}

/* Control words are shared with the GPU, which reads GP_PUT and writes
 * GP_GET at any time: copy them as 32-bit atomics, never writing GP_GET of
 * the real page (as the shadow module does). */
static void copy_control(void *dst, const void *src, uint32_t bytes, bool to_real)
{
	uint32_t i;

	for (i = 0; i < bytes / 4; i++) {
		if (to_real && i * 4 == VGPU_CONTROL_GP_GET)
			continue;
		__atomic_store_n((uint32_t *)dst + i,
		                 __atomic_load_n((const uint32_t *)src + i, __ATOMIC_ACQUIRE),
		                 __ATOMIC_RELEASE);
	}
}

static struct vgpud_device *only_device(struct harness *h)
{
	struct vgpud_device *dev;

	vgpu_mutex_lock(&h->d->registry.lock);
	dev = h->d->registry.first;
	vgpu_mutex_unlock(&h->d->registry.lock);
	return dev;
}

static void test_direct_swaps(void **state)
{
	struct harness *h = *state;
	struct test_channel c;
	struct channel_window *win;
	struct vgpu_transport *t;
	struct writer w = { 0 };
	struct vgpu_bar2_segment real[2], shadow[2];
	uint64_t waits_before = vgpu_local_device_swap_waits();
	uint8_t *shadow_pages;
	uint32_t bytes, i;
	pthread_t thread;
	struct tenant ten;
	int shadow_fd, round;

	assert_int_equal(tenant_open(h, &ten, "swapped", NULL), 0);
	assert_int_equal(tenant_hello(&ten), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&ten, 512, &c), VGPU_STATUS_OK);
	win = __atomic_load_n(&only_device(h)->windows[c.info.index], __ATOMIC_ACQUIRE);
	t = only_device(h)->transport;
	bytes = win->control_bytes + win->gpfifo_bytes;
	assert_int_equal(bytes, c.info.notifier_offset);

	shadow_fd = vgpu_memfd_create("test-shadow", bytes); /* sealed, as vgpud's */
	assert_true(shadow_fd >= 0);
	shadow_pages = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, shadow_fd, 0);
	assert_true(shadow_pages != MAP_FAILED);
	real[0] = (struct vgpu_bar2_segment){ channel_window_bar2_offset(win->index),
		                              win->control_bytes, win->info.memfd,
		                              win->info.control_offset };
	real[1] = (struct vgpu_bar2_segment){ real[0].bar2_offset + win->control_bytes,
		                              win->gpfifo_bytes, win->info.memfd,
		                              win->info.gpfifo_offset };
	shadow[0] = (struct vgpu_bar2_segment){ real[0].bar2_offset, bytes, shadow_fd, 0 };

	w.words = (uint32_t *)c.window;
	w.count = bytes / 4;
	w.n = 40u * 1000 * 1000;
	assert_int_equal(pthread_create(&thread, NULL, writer_main, &w), 0);
	/* Nothing else swaps this window meanwhile: hold its swap lock. */
	pthread_mutex_lock(&win->swap_lock);
	for (round = 0; round < 150 && !__atomic_load_n(&w.written, __ATOMIC_ACQUIRE); round++) {
		assert_int_equal(t->ops->window_block(t, win->index, real[0].bar2_offset, bytes), 0);
		copy_control(shadow_pages, win->info.control, win->control_bytes, false);
		memcpy(shadow_pages + win->control_bytes, win->info.gpfifo, win->gpfifo_bytes);
		usleep(200); /* a copy that takes a while: the writer must wait */
		assert_int_equal(t->ops->window_map(t, win->index, true, shadow, 1), 0);
		usleep(300);
		assert_int_equal(t->ops->window_block(t, win->index, real[0].bar2_offset, bytes), 0);
		copy_control(win->info.control, shadow_pages, win->control_bytes, true);
		memcpy(win->info.gpfifo, shadow_pages + win->control_bytes, win->gpfifo_bytes);
		usleep(200);
		assert_int_equal(t->ops->window_map(t, win->index, false, real, 2), 0);
		usleep(300);
	}
	pthread_mutex_unlock(&win->swap_lock);
	__atomic_store_n(&w.stop, true, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	printf("# %d swap round trips, %u writes, %llu waits\n", round, w.written,
	       (unsigned long long)(vgpu_local_device_swap_waits() - waits_before));
	assert_true(round >= 10);
	assert_true(vgpu_local_device_swap_waits() > waits_before);
	/* every word holds its last value, in the real pages and as the guest
	 * sees it */
	for (i = FIRST_WORD; i < w.count; i++) {
		uint32_t real_value =
			i * 4 < win->control_bytes
				? __atomic_load_n((uint32_t *)win->info.control + i, __ATOMIC_ACQUIRE)
				: ((uint32_t *)win->info.gpfifo)[i - win->control_bytes / 4];

		if (real_value != expected_word(&w, i) || w.words[i] != real_value)
			fail_msg("word %u: real %u, guest %u, expected %u", i, real_value, w.words[i],
			         expected_word(&w, i));
	}
	munmap(shadow_pages, bytes);
	close(shadow_fd);
	tenant_close(&ten);
}

static void test_swaps_by_eviction(void **state)
{
	struct harness *h = *state;
	struct vgpu_vm_stats stats;
	struct test_channel c;
	struct tenant a, b;
	struct writer w = { 0 };
	uint32_t handle, i, words[32], n, bytes;
	uint64_t va;
	pthread_t thread;
	int round;

	assert_int_equal(tenant_open(h, &a, "suspended", "big"), 0);
	assert_int_equal(tenant_open(h, &b, "pressure", "big"), 0);
	assert_int_equal(tenant_hello(&a), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(&b), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&a, 40u << 20, 7, NULL, &va), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&a, 512, &c), VGPU_STATUS_OK);
	/* the channel has work of its own in flight too */
	n = vgpu_push_launch_stream(words, va, 8u << 20, 1);
	n += vgpu_push_semaphore_release(words + n, c.info.notifier_gpu_va, 1, false);
	test_channel_submit(&c, words, n);

	bytes = c.info.notifier_offset;
	w.words = (uint32_t *)c.window;
	w.count = bytes / 4;
	w.n = 4000u * 1000 * 1000;
	/* the writer must not touch ring entries the GPU will fetch: start
	 * past the one we submitted */
	assert_int_equal(test_channel_finish(&c, 10000), 0);
	assert_int_equal(pthread_create(&thread, NULL, writer_main, &w), 0);
	for (round = 0; round < 6; round++) {
		/* 40 + 40 > 60 MiB: A's chunks go to host memory */
		assert_int_equal(tenant_alloc(&b, 40u << 20, 7, &handle, NULL), VGPU_STATUS_OK);
		/* and come back with the return pass */
		assert_int_equal(tenant_free(&b, handle), VGPU_STATUS_OK);
		for (i = 0; i < 200; i++) {
			struct vgpu_stats_response s;

			assert_int_equal(tenant_stats(&a, &s), VGPU_STATUS_OK);
			if (!s.evicted_bytes)
				break;
			usleep(5000);
		}
	}
	__atomic_store_n(&w.stop, true, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	vgpu_core_vm_stats(only_device(h)->vm, &stats);
	printf("# %llu suspensions, %llu evictions, %llu returns, guest blocked %llu us\n",
	       (unsigned long long)stats.suspensions, (unsigned long long)stats.evictions,
	       (unsigned long long)stats.returns, (unsigned long long)stats.guest_blocked_ns / 1000);
	assert_true(stats.suspensions >= 6);
	assert_true(stats.evictions > 0);
	assert_true(stats.returns > 0);
	/* GP_PUT is the guest's; the channel still works afterwards */
	c.put = vgpu_control_read_gp_put(c.control);
	for (i = FIRST_WORD; i < w.count; i++) {
		uint32_t expected = expected_word(&w, i);

		if (w.words[i] != expected)
			fail_msg("word %u: guest sees %u, expected %u", i, w.words[i], expected);
	}
	/* clean the ring up and use the channel once more */
	memset(c.gpfifo, 0, c.info.gpfifo_offset ? c.info.notifier_offset - c.info.gpfifo_offset
	                                          : 0);
	n = vgpu_push_semaphore_release(words, c.info.notifier_gpu_va, 2, false);
	test_channel_submit(&c, words, n);
	assert_int_equal(test_channel_finish(&c, 10000), 0);
	assert_int_equal(test_channel_notifier(&c, 0), 2);
	assert_int_equal(vgpu_core_check_invariants(h->d->core, NULL), 0);
	tenant_close(&b);
	tenant_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_direct_swaps, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_swaps_by_eviction, harness_setup, harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
