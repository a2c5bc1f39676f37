// SPDX-License-Identifier: MIT
/* channel_util.c - guest-style submission through BAR2 for the tests. */
#include "channel_util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int test_channel_create(struct tenant *t, uint32_t entries, struct test_channel *c)
{
	int status;

	memset(c, 0, sizeof(*c));
	status = tenant_channel_create(t, entries, &c->info);
	if (status != VGPU_STATUS_OK)
		return status;
	c->window = t->bar2 + VGPU_CHANNEL_WINDOW_BASE +
	            (size_t)c->info.index * VGPU_CHANNEL_WINDOW_STRIDE;
	c->control = c->window + c->info.control_offset;
	c->gpfifo = c->window + c->info.gpfifo_offset;
	c->notifier = c->window + c->info.notifier_offset;
	c->pushbuf = (uint32_t *)(c->window + c->info.pushbuf_offset);
	return status;
}

void test_channel_submit(struct test_channel *c, const uint32_t *words, uint32_t count)
{
	uint32_t bytes = count * 4;

	if (c->pushbuf_used + bytes > c->info.pushbuf_bytes)
		c->pushbuf_used = 0; /* tests wait for idle before wrapping */
	memcpy((uint8_t *)c->pushbuf + c->pushbuf_used, words, bytes);
	vgpu_gpfifo_write(c->gpfifo, c->info.gpfifo_entries, c->put,
	                  c->info.pushbuf_gpu_va + c->pushbuf_used, bytes);
	c->pushbuf_used += (bytes + 63) & ~63u;
	c->put = (c->put + 1) & (c->info.gpfifo_entries - 1);
	vgpu_control_write_gp_put(c->control, c->put);
	vgpu_control_ring_doorbell(c->control);
}

uint64_t test_channel_notifier(struct test_channel *c, uint32_t offset)
{
	return __atomic_load_n((uint64_t *)(c->notifier + offset), __ATOMIC_ACQUIRE);
}

int test_channel_finish(struct test_channel *c, int timeout_ms)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint32_t n = vgpu_push_semaphore_release(words, c->info.notifier_gpu_va +
	                                                        TEST_CHANNEL_FENCE_OFFSET,
	                                         ++c->fence, false);
	int waited;

	test_channel_submit(c, words, n);
	for (waited = 0; waited < timeout_ms; waited++) {
		if (test_channel_notifier(c, TEST_CHANNEL_FENCE_OFFSET) == c->fence)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

int test_channel_upload(struct test_channel *c, uint64_t va, const void *data, uint64_t bytes)
{
	uint32_t half = c->info.pushbuf_bytes / 2, words[VGPU_COMMAND_MAX_WORDS];

	for (uint64_t done = 0; done < bytes; done += half) {
		uint64_t n = bytes - done < half ? bytes - done : half;

		if (test_channel_finish(c, 10000))
			return -ETIMEDOUT;
		c->pushbuf_used = 0; /* idle: the first half is free again */
		memcpy((uint8_t *)c->pushbuf + half, (const uint8_t *)data + done, n);
		test_channel_submit(c, words, vgpu_push_copy(words, va + done,
		                                             c->info.pushbuf_gpu_va + half, n));
	}
	return test_channel_finish(c, 10000);
}

int test_channel_download(struct test_channel *c, uint64_t va, void *data, uint64_t bytes)
{
	const uint32_t at = 1024, piece = 2048;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	for (uint64_t done = 0; done < bytes; done += piece) {
		uint64_t n = bytes - done < piece ? bytes - done : piece;

		test_channel_submit(c, words, vgpu_push_copy(words, c->info.notifier_gpu_va + at,
		                                             va + done, n));
		if (test_channel_finish(c, 10000))
			return -ETIMEDOUT;
		memcpy((uint8_t *)data + done, c->notifier + at, n);
	}
	return 0;
}
