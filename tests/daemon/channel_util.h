/* SPDX-License-Identifier: MIT */
/*
 * channel_util.h - submitting work into a channel window through BAR2, the
 * way a guest does: pushbuffer in the window's pushbuffer area, a GPFIFO
 * entry, GP_PUT. No mailbox, no register.
 */
#ifndef TESTS_DAEMON_CHANNEL_UTIL_H
#define TESTS_DAEMON_CHANNEL_UTIL_H

#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/commands.h"

#include "harness.h"

struct test_channel {
	struct vgpu_channel_create_response info;
	uint8_t *window;   /* in BAR2 */
	uint8_t *control;
	uint8_t *gpfifo;
	uint8_t *notifier;
	uint32_t *pushbuf;
	uint32_t put;          /* our GP_PUT */
	uint32_t pushbuf_used; /* bytes */
	uint64_t fence;        /* last value test_channel_finish released */
};

/* CHANNEL_CREATE and locate the window. Returns the status. */
int test_channel_create(struct tenant *t, uint32_t entries, struct test_channel *c);

/* Append words to the pushbuffer and submit them as one GPFIFO entry. */
void test_channel_submit(struct test_channel *c, const uint32_t *words, uint32_t count);

/* A 64-bit word of the notifier page. */
uint64_t test_channel_notifier(struct test_channel *c, uint32_t offset);

/* The last 8 bytes of the notifier page: test_channel_finish's fence. */
#define TEST_CHANNEL_FENCE_OFFSET 4088u

/* Submit a semaphore release after everything queued and wait (up to
 * timeout_ms) until it landed in the notifier: all earlier work finished.
 * (GP_GET reaching GP_PUT only says the entries were fetched.) 0 or
 * -ETIMEDOUT. */
int test_channel_finish(struct test_channel *c, int timeout_ms);

/* Copy bytes into GPU memory at va through the second half of the
 * pushbuffer area (the channel idles first), a COPY at a time; and out of
 * GPU memory through the notifier page's bytes [1024, 3072). 0 or
 * -ETIMEDOUT. */
int test_channel_upload(struct test_channel *c, uint64_t va, const void *data, uint64_t bytes);
int test_channel_download(struct test_channel *c, uint64_t va, void *data, uint64_t bytes);

#endif /* TESTS_DAEMON_CHANNEL_UTIL_H */
