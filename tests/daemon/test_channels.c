// SPDX-License-Identifier: MIT
/*
 * test_channels.c - channel windows through vgpud and the local transport:
 * the window is mapped where CHANNEL_CREATE says, work submitted directly
 * (no mailbox) runs, fences and channel errors raise their interrupts and
 * channel bits, a VM's channel cannot reach another VM's memory, and
 * CHANNEL_DESTROY unmaps the window.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel_util.h"
#include "harness.h"

/* Wait for the given interrupt (other vectors are collected meanwhile). */
static uint32_t wait_for_irq(struct tenant *t, uint32_t want, int timeout_ms)
{
	uint32_t seen = 0;
	int waited;

	for (waited = 0; waited < timeout_ms && !(seen & want); waited += 20) {
		int mask = vgpu_local_device_wait_irq(t->dev, 20);

		if (mask > 0)
			seen |= (uint32_t)mask;
	}
	return seen;
}

static void test_window_layout(void **state)
{
	struct harness *h = *state;
	struct test_channel c, c2;
	struct tenant t;

	assert_int_equal(tenant_open(h, &t, "layout", NULL), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&t, 0, &c), VGPU_STATUS_OK);
	assert_int_equal(c.info.index, 0);
	assert_int_equal(c.info.gpfifo_entries, VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT);
	assert_int_equal(c.info.control_offset, 0);
	assert_int_equal(c.info.gpfifo_offset, VGPU_CONTROL_BYTES);
	assert_int_equal(c.info.notifier_offset,
	                 VGPU_CONTROL_BYTES + VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT * 16);
	assert_int_equal(c.info.notifier_bytes, 4096);
	assert_int_equal(c.info.pushbuf_offset, c.info.notifier_offset + 4096);
	assert_int_equal(c.info.pushbuf_offset + c.info.pushbuf_bytes, VGPU_CHANNEL_WINDOW_STRIDE);
	assert_true(c.info.notifier_gpu_va != 0);
	assert_int_equal(c.info.pushbuf_gpu_va, c.info.notifier_gpu_va + 4096);
	/* the control page is the GPU's: its version word is set */
	assert_int_equal(*(uint32_t *)(c.control + VGPU_CONTROL_VERSION), VGPU_COMMANDS_VERSION);
	assert_int_equal(vgpu_control_read_gp_get(c.control), 0);

	assert_int_equal(test_channel_create(&t, VGPU_CHANNEL_GPFIFO_ENTRIES_MAX, &c2),
	                 VGPU_STATUS_OK);
	assert_int_equal(c2.info.index, 1);
	assert_true(c2.info.pushbuf_bytes >= 64 * 1024);
	assert_int_equal(*(uint32_t *)(c2.control + VGPU_CONTROL_VERSION),
	                 VGPU_COMMANDS_VERSION);

	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_DESTROY,
	                             &(struct vgpu_channel_destroy_request){ 0, 0 },
	                             sizeof(struct vgpu_channel_destroy_request), NULL),
	                 VGPU_STATUS_OK);
	/* the window reads as zero once destroyed */
	assert_int_equal(*(uint32_t *)(c.control + VGPU_CONTROL_VERSION), 0);
	/* index 0 is free again */
	assert_int_equal(test_channel_create(&t, 8, &c), VGPU_STATUS_OK);
	assert_int_equal(c.info.index, 0);
	tenant_close(&t);
}

static void test_submission_fence_and_memory(void **state)
{
	struct harness *h = *state;
	uint32_t words[64], n;
	struct test_channel c;
	struct tenant t;
	uint64_t va;
	uint32_t seen;

	assert_int_equal(tenant_open(h, &t, "worker", NULL), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&t, 1u << 20, 7, NULL, &va), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&t, 64, &c), VGPU_STATUS_OK);

	/* memset the buffer, copy 16 bytes of it into the notifier, release a
	 * semaphore with interrupt */
	n = vgpu_push_memset(words, va, 0xa5a55a5au, 1u << 20);
	n += vgpu_push_copy(words + n, c.info.notifier_gpu_va + 64, va + 4096, 16);
	n += vgpu_push_semaphore_release(words + n, c.info.notifier_gpu_va, 42, true);
	test_channel_submit(&c, words, n);
	seen = wait_for_irq(&t, VGPU_IRQ_FENCE, 5000);
	assert_true(seen & VGPU_IRQ_FENCE);
	assert_int_equal(test_channel_notifier(&c, 0), 42);
	assert_int_equal(test_channel_notifier(&c, 64), 0xa5a55a5aa5a55a5aull);
	assert_int_equal(test_channel_notifier(&c, 72), 0xa5a55a5aa5a55a5aull);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_FENCE_CHANNELS),
	                 1u << c.info.index);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_FENCE_CHANNELS), 0);
	assert_true(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_STATUS) & VGPU_IRQ_FENCE);
	vgpu_local_device_reg_write(t.dev, VGPU_REG_IRQ_ACK, VGPU_IRQ_FENCE);

	/* many submissions, no mailbox involved */
	for (uint32_t i = 1; i <= 40; i++) {
		n = vgpu_push_semaphore_release(words, c.info.notifier_gpu_va + 8, i, false);
		test_channel_submit(&c, words, n);
	}
	assert_int_equal(test_channel_finish(&c, 5000), 0);
	assert_int_equal(test_channel_notifier(&c, 8), 40);
	tenant_close(&t);
}

static void test_channel_error_and_isolation(void **state)
{
	struct harness *h = *state;
	struct test_channel ca, cb;
	struct tenant a, b;
	uint32_t words[16], n, seen;
	uint64_t va_a;

	assert_int_equal(tenant_open(h, &a, "victim", NULL), 0);
	assert_int_equal(tenant_open(h, &b, "attacker", NULL), 0);
	assert_int_equal(tenant_hello(&a), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(&b), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&a, 1u << 20, 7, NULL, &va_a), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&a, 16, &ca), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&b, 16, &cb), VGPU_STATUS_OK);
	n = vgpu_push_memset(words, va_a, 0x11111111u, 4096);
	n += vgpu_push_semaphore_release(words + n, ca.info.notifier_gpu_va, 1, false);
	test_channel_submit(&ca, words, n);
	assert_int_equal(test_channel_finish(&ca, 5000), 0);

	/* B writes to A's buffer address: not mapped in B's address space */
	n = vgpu_push_memset(words, va_a, 0xdeadbeefu, 4096);
	test_channel_submit(&cb, words, n);
	seen = wait_for_irq(&b, VGPU_IRQ_CHANNEL_ERROR, 5000);
	assert_true(seen & VGPU_IRQ_CHANNEL_ERROR);
	assert_int_equal(vgpu_local_device_reg_read(b.dev, VGPU_REG_ERROR_CHANNELS),
	                 1u << cb.info.index);
	assert_int_equal(vgpu_local_device_reg_read(a.dev, VGPU_REG_ERROR_CHANNELS), 0);

	/* A's memory is untouched and its channel still works */
	n = vgpu_push_copy(words, ca.info.notifier_gpu_va + 16, va_a, 8);
	n += vgpu_push_semaphore_release(words + n, ca.info.notifier_gpu_va, 2, true);
	test_channel_submit(&ca, words, n);
	assert_true(wait_for_irq(&a, VGPU_IRQ_FENCE, 5000) & VGPU_IRQ_FENCE);
	assert_int_equal(test_channel_notifier(&ca, 16), 0x1111111111111111ull);

	/* a malformed GPFIFO entry kills only that channel */
	vgpu_gpfifo_write(ca.gpfifo, 16, ca.put, ca.info.pushbuf_gpu_va, 3);
	ca.put = (ca.put + 1) & 15;
	vgpu_control_write_gp_put(ca.control, ca.put);
	assert_true(wait_for_irq(&a, VGPU_IRQ_CHANNEL_ERROR, 5000) & VGPU_IRQ_CHANNEL_ERROR);
	tenant_close(&b);
	tenant_close(&a);
}

static void test_channel_limits(void **state)
{
	struct harness *h = *state;
	struct test_channel c;
	struct tenant t;
	unsigned i;

	assert_int_equal(tenant_open(h, &t, "greedy", NULL), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		assert_int_equal(test_channel_create(&t, 2, &c), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&t, 2, &c), VGPU_STATUS_LIMIT);
	tenant_close(&t);
	assert_true(harness_wait_vms(h, 0, 5000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window_layout, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_submission_fence_and_memory, harness_setup,
		                                harness_teardown),
		cmocka_unit_test_setup_teardown(test_channel_error_and_isolation, harness_setup,
		                                harness_teardown),
		cmocka_unit_test_setup_teardown(test_channel_limits, harness_setup, harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
