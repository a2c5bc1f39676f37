// SPDX-License-Identifier: MIT
/*
 * test_mailbox.c - the mailbox through vgpud and the local transport:
 * registers, HELLO first, QUERY/ALLOC/FREE/SET_PRIORITY/STATS round trips,
 * and malformed traffic (bad fields, unknown opcodes, foreign handles, garbage
 * ring indices, floods) answered with errors while another tenant keeps
 * working.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static void test_registers(void **state)
{
	struct harness *h = *state;
	struct tenant t;

	assert_int_equal(tenant_open(h, &t, "regs", NULL), 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_MAGIC), VGPU_MAGIC);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_ABI_VERSION), VGPU_ABI_VERSION);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_STATUS), VGPU_STATUS_READY);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_BAR2_SIZE_LO), VGPU_BAR2_SIZE);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_BAR2_SIZE_HI), 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_MAX_CHANNELS),
	                 VGPU_MAX_CHANNELS);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_CHANNEL_STRIDE),
	                 VGPU_CHANNEL_WINDOW_STRIDE);
	assert_true(vgpu_local_device_reg_read(t.dev, VGPU_REG_FEATURES) & VGPU_FEATURE_STATS);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_MASK), VGPU_IRQ_ALL);
	/* unaligned and unknown offsets read as 0 */
	assert_int_equal(vgpu_local_device_reg_read(t.dev, 0x3), 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, 0xffc), 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, 0xfffffff0u), 0);
	/* read-only registers ignore writes */
	vgpu_local_device_reg_write(t.dev, VGPU_REG_MAGIC, 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_MAGIC), VGPU_MAGIC);
	/* the mailbox header is initialised */
	assert_int_equal(tenant_header(&t)->entries, VGPU_MAILBOX_ENTRIES);

	/* IRQ: a masked source stays pending, is delivered when unmasked,
	 * and ACK clears it. */
	vgpu_local_device_reg_write(t.dev, VGPU_REG_IRQ_MASK, 0);
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_MASK), 0);
	tenant_put_op(&t, VGPU_OP_HELLO, &(struct vgpu_hello_request){ VGPU_ABI_VERSION, 0 },
	              sizeof(struct vgpu_hello_request));
	tenant_kick(&t);
	for (int i = 0; i < 200 && !(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_STATUS) &
	                             VGPU_IRQ_MAILBOX); i++)
		usleep(5000);
	assert_true(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX);
	assert_int_equal(vgpu_local_device_wait_irq(t.dev, 0), 0);
	vgpu_local_device_reg_write(t.dev, VGPU_REG_IRQ_MASK, VGPU_IRQ_ALL);
	assert_int_equal(vgpu_local_device_wait_irq(t.dev, 2000), VGPU_IRQ_MAILBOX);
	vgpu_local_device_reg_write(t.dev, VGPU_REG_IRQ_ACK, VGPU_IRQ_MAILBOX);
	assert_false(vgpu_local_device_reg_read(t.dev, VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX);
	tenant_close(&t);
}

static void test_hello_first_and_versions(void **state)
{
	struct harness *h = *state;
	struct vgpu_hello_request bad = { .abi_version = (2u << 16), .guest_features = ~0u };
	struct vgpu_hello_request good = { .abi_version = VGPU_ABI_VERSION + 7, /* newer minor */
		                           .guest_features = ~0u };
	struct vgpu_hello_response hello;
	struct vgpu_response response;
	struct tenant t;

	assert_int_equal(tenant_open(h, &t, "hello", NULL), 0);
	assert_int_equal(tenant_call(&t, VGPU_OP_QUERY, NULL, 0, NULL), VGPU_STATUS_NOT_READY);
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC,
	                             &(struct vgpu_alloc_request){ 4096, 0, 0 },
	                             sizeof(struct vgpu_alloc_request), NULL),
	                 VGPU_STATUS_NOT_READY);
	assert_int_equal(tenant_call(&t, VGPU_OP_HELLO, &bad, sizeof(bad), &response),
	                 VGPU_STATUS_VERSION);
	memcpy(&hello, response.payload, sizeof(hello));
	assert_int_equal(hello.abi_version, VGPU_ABI_VERSION);
	assert_int_equal(tenant_call(&t, VGPU_OP_QUERY, NULL, 0, NULL), VGPU_STATUS_NOT_READY);
	assert_int_equal(tenant_call(&t, VGPU_OP_HELLO, &good, sizeof(good), &response),
	                 VGPU_STATUS_OK);
	memcpy(&hello, response.payload, sizeof(hello));
	/* only offered features are granted; simgpu runs modules; every
	 * backend takes semaphore timestamps and says why a channel died */
	assert_int_equal(hello.features & ~(VGPU_FEATURE_MSIX | VGPU_FEATURE_PRIORITY_HINTS |
	                                    VGPU_FEATURE_STATS | VGPU_FEATURE_MODULES |
	                                    VGPU_FEATURE_SEMAPHORE_TIMESTAMP |
	                                    VGPU_FEATURE_CHANNEL_FAULT), 0);
	assert_true(hello.features & VGPU_FEATURE_MODULES);
	assert_true(hello.features & VGPU_FEATURE_SEMAPHORE_TIMESTAMP);
	assert_true(hello.features & VGPU_FEATURE_CHANNEL_FAULT);
	assert_true(hello.max_channels >= 1 && hello.max_channels <= VGPU_MAX_CHANNELS);
	assert_int_equal(tenant_call(&t, VGPU_OP_QUERY, NULL, 0, NULL), VGPU_STATUS_OK);
	tenant_close(&t);
}

static void test_round_trips(void **state)
{
	struct harness *h = *state;
	struct vgpu_query_response query;
	struct vgpu_stats_response stats;
	struct vgpu_response response;
	struct tenant t;
	uint32_t handle, handle2;
	uint64_t va, va2;

	assert_int_equal(tenant_open(h, &t, "trips", "small"), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	assert_int_equal(tenant_call(&t, VGPU_OP_QUERY, NULL, 0, &response), VGPU_STATUS_OK);
	assert_int_equal(response.payload_size, sizeof(query));
	memcpy(&query, response.payload, sizeof(query));
	assert_int_equal(query.cap_bytes, 32ull << 20);
	assert_int_equal(query.chunk_bytes, 1ull << 20);
	assert_int_equal(query.vram_total_bytes, h->d->caps.vram_bytes);

	assert_int_equal(tenant_alloc(&t, 3u << 20, 7, &handle, &va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&t, 5000, 15, &handle2, &va2), VGPU_STATUS_OK);
	assert_true(va != 0 && va2 != va);
	assert_int_equal(tenant_stats(&t, &stats), VGPU_STATUS_OK);
	assert_int_equal(stats.allocated_bytes, (3u << 20) + 8192);
	assert_int_equal(stats.resident_bytes, stats.allocated_bytes);
	assert_int_equal(stats.evicted_bytes, 0);

	assert_int_equal(tenant_call(&t, VGPU_OP_SET_PRIORITY,
	                             &(struct vgpu_set_priority_request){ handle, 3 },
	                             sizeof(struct vgpu_set_priority_request), NULL),
	                 VGPU_STATUS_OK);
	/* beyond the cap */
	assert_int_equal(tenant_alloc(&t, 30u << 20, 7, NULL, NULL), VGPU_STATUS_NO_MEMORY);
	assert_int_equal(tenant_free(&t, handle), VGPU_STATUS_OK);
	assert_int_equal(tenant_free(&t, handle), VGPU_STATUS_NOT_FOUND);
	assert_int_equal(tenant_free(&t, handle2), VGPU_STATUS_OK);
	assert_int_equal(tenant_stats(&t, &stats), VGPU_STATUS_OK);
	assert_int_equal(stats.allocated_bytes, 0);
	tenant_close(&t);
}

static void test_foreign_handles(void **state)
{
	struct harness *h = *state;
	struct vgpu_stats_response stats;
	struct tenant a, b;
	uint32_t handle;

	assert_int_equal(tenant_open(h, &a, "owner", NULL), 0);
	assert_int_equal(tenant_open(h, &b, "thief", NULL), 0);
	assert_int_equal(tenant_hello(&a), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(&b), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&a, 1u << 20, 7, &handle, NULL), VGPU_STATUS_OK);
	assert_int_equal(tenant_free(&b, handle), VGPU_STATUS_NOT_FOUND);
	assert_int_equal(tenant_call(&b, VGPU_OP_SET_PRIORITY,
	                             &(struct vgpu_set_priority_request){ handle, 1 },
	                             sizeof(struct vgpu_set_priority_request), NULL),
	                 VGPU_STATUS_NOT_FOUND);
	assert_int_equal(tenant_free(&b, 0), VGPU_STATUS_NOT_FOUND);
	assert_int_equal(tenant_free(&b, 0xffffffffu), VGPU_STATUS_NOT_FOUND);
	assert_int_equal(tenant_stats(&a, &stats), VGPU_STATUS_OK);
	assert_int_equal(stats.allocated_bytes, 1u << 20);
	assert_int_equal(tenant_free(&a, handle), VGPU_STATUS_OK);
	tenant_close(&b);
	tenant_close(&a);
}

struct malformed {
	const char *what;
	struct vgpu_request request;
	uint32_t status;
};

static void test_malformed_requests(void **state)
{
	struct harness *h = *state;
	static struct malformed cases[] = {
		{ "unknown opcode 0", { .opcode = 0 }, VGPU_STATUS_UNSUPPORTED },
		{ "unknown opcode 99", { .opcode = 99 }, VGPU_STATUS_UNSUPPORTED },
		{ "unknown opcode 0xffff", { .opcode = 0xffff, .payload_size = 0xffff },
		  VGPU_STATUS_UNSUPPORTED },
		{ "oversized payload", { .opcode = VGPU_OP_QUERY, .payload_size = 49 },
		  VGPU_STATUS_INVALID },
		{ "huge payload_size", { .opcode = VGPU_OP_ALLOC, .payload_size = 0xffff },
		  VGPU_STATUS_INVALID },
		{ "truncated ALLOC", { .opcode = VGPU_OP_ALLOC, .payload_size = 8 },
		  VGPU_STATUS_INVALID },
		{ "truncated FREE", { .opcode = VGPU_OP_FREE, .payload_size = 4 },
		  VGPU_STATUS_INVALID },
		{ "QUERY with payload", { .opcode = VGPU_OP_QUERY, .payload_size = 8 },
		  VGPU_STATUS_INVALID },
		{ "reserved header", { .opcode = VGPU_OP_STATS, .reserved = 1 }, VGPU_STATUS_INVALID },
	};
	struct vgpu_alloc_request alloc;
	struct vgpu_response response;
	struct tenant t;
	size_t i;

	assert_int_equal(tenant_open(h, &t, "garbage", "big"), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vgpu_request r = cases[i].request;

		r.seq = 5000 + (uint32_t)i;
		tenant_put(&t, &r);
		tenant_kick(&t);
		assert_int_equal(tenant_wait(&t, 1, &response, 5000), 0);
		assert_int_equal(response.seq, r.seq);
		assert_int_equal(response.opcode, r.opcode);
		if (response.status != cases[i].status)
			fail_msg("%s: status %u, expected %u", cases[i].what, response.status,
			         cases[i].status);
	}

	/* payload fields */
	alloc = (struct vgpu_alloc_request){ .bytes = 0 };
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                 VGPU_STATUS_INVALID);
	alloc = (struct vgpu_alloc_request){ .bytes = 1ull << 63 };
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                 VGPU_STATUS_INVALID);
	alloc = (struct vgpu_alloc_request){ .bytes = ~0ull };
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                 VGPU_STATUS_INVALID);
	alloc = (struct vgpu_alloc_request){ .bytes = 4096, .priority = 16 };
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                 VGPU_STATUS_INVALID);
	alloc = (struct vgpu_alloc_request){ .bytes = 4096, .flags = 1 };
	assert_int_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                 VGPU_STATUS_INVALID);
	/* absurd but well-formed: more than VRAM + no host budget is fine for
	 * "big"; 512 GiB fits VGPU_ALLOC_MAX_BYTES but not the GPU's VA */
	alloc = (struct vgpu_alloc_request){ .bytes = 1ull << 40 };
	assert_int_not_equal(tenant_call(&t, VGPU_OP_ALLOC, &alloc, sizeof(alloc), NULL),
	                     VGPU_STATUS_OK);
	assert_int_equal(tenant_call(&t, VGPU_OP_FREE, &(struct vgpu_free_request){ 1, 1 },
	                             sizeof(struct vgpu_free_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_SET_PRIORITY,
	                             &(struct vgpu_set_priority_request){ 1, 99 },
	                             sizeof(struct vgpu_set_priority_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_CREATE,
	                             &(struct vgpu_channel_create_request){ 3, 0 },
	                             sizeof(struct vgpu_channel_create_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_CREATE,
	                             &(struct vgpu_channel_create_request){ 1u << 20, 0 },
	                             sizeof(struct vgpu_channel_create_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_CREATE,
	                             &(struct vgpu_channel_create_request){ 0, 7 },
	                             sizeof(struct vgpu_channel_create_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_DESTROY,
	                             &(struct vgpu_channel_destroy_request){ 99, 0 },
	                             sizeof(struct vgpu_channel_destroy_request), NULL),
	                 VGPU_STATUS_INVALID);
	assert_int_equal(tenant_call(&t, VGPU_OP_CHANNEL_DESTROY,
	                             &(struct vgpu_channel_destroy_request){ 3, 0 },
	                             sizeof(struct vgpu_channel_destroy_request), NULL),
	                 VGPU_STATUS_NOT_FOUND);
	/* still serving */
	assert_int_equal(tenant_alloc(&t, 4096, 0, NULL, NULL), VGPU_STATUS_OK);
	tenant_close(&t);
}

/* Another tenant allocates and frees in a loop meanwhile. */
struct bystander {
	struct harness *h;
	volatile bool stop;
	unsigned rounds;
	int failures;
};

static void *bystander_main(void *arg)
{
	struct bystander *b = arg;
	struct tenant t;

	if (tenant_open(b->h, &t, "bystander", NULL) || tenant_hello(&t) != VGPU_STATUS_OK) {
		b->failures++;
		return NULL;
	}
	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		uint32_t handle;

		if (tenant_alloc(&t, 256 << 10, 7, &handle, NULL) != VGPU_STATUS_OK ||
		    tenant_free(&t, handle) != VGPU_STATUS_OK)
			b->failures++;
		b->rounds++;
	}
	tenant_close(&t);
	return NULL;
}

static void test_garbage_indices_and_flood(void **state)
{
	struct harness *h = *state;
	struct bystander b = { .h = h };
	struct vgpu_response responses[VGPU_MAILBOX_ENTRIES];
	struct vgpu_mailbox_header *header;
	pthread_t thread;
	struct tenant t;
	unsigned i;

	assert_int_equal(pthread_create(&thread, NULL, bystander_main, &b), 0);
	assert_int_equal(tenant_open(h, &t, "flooder", NULL), 0);
	header = tenant_header(&t);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);

	/* req_head far ahead: nothing is consumed, vgpud does not loop */
	__atomic_store_n(&header->req_head, t.req_head + 100000, __ATOMIC_RELEASE);
	for (i = 0; i < 50; i++)
		tenant_kick(&t);
	usleep(50000);
	assert_int_equal(__atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE), t.req_head);
	/* req_head behind: likewise */
	__atomic_store_n(&header->req_head, t.req_head - 5, __ATOMIC_RELEASE);
	tenant_kick(&t);
	usleep(20000);
	assert_int_equal(__atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE), t.req_head);
	/* the guest scribbles over the backend's indices: ignored, and
	 * republished with the next response */
	__atomic_store_n(&header->req_tail, 12345, __ATOMIC_RELEASE);
	__atomic_store_n(&header->resp_head, 777, __ATOMIC_RELEASE);
	__atomic_store_n(&header->entries, 3, __ATOMIC_RELEASE);
	__atomic_store_n(&header->req_head, t.req_head, __ATOMIC_RELEASE);
	tenant_put_op(&t, VGPU_OP_STATS, NULL, 0);
	tenant_kick(&t);
	for (i = 0; i < 400 && __atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE) != t.req_head;
	     i++)
		usleep(5000);
	assert_int_equal(__atomic_load_n(&header->resp_head, __ATOMIC_ACQUIRE), t.resp_tail + 1);
	assert_int_equal(tenant_wait(&t, 1, responses, 5000), 0);
	assert_int_equal(responses[0].status, VGPU_STATUS_OK);

	/* resp_tail insane: nothing is answered until it is sane again */
	__atomic_store_n(&header->resp_tail, t.resp_tail + 5000, __ATOMIC_RELEASE);
	tenant_put_op(&t, VGPU_OP_STATS, NULL, 0);
	tenant_kick(&t);
	usleep(20000);
	assert_int_equal(__atomic_load_n(&header->req_tail, __ATOMIC_ACQUIRE), t.req_head - 1);
	__atomic_store_n(&header->resp_tail, t.resp_tail, __ATOMIC_RELEASE);
	tenant_kick(&t);
	assert_int_equal(tenant_wait(&t, 1, responses, 5000), 0);
	assert_int_equal(responses[0].status, VGPU_STATUS_OK);

	/* a full ring of requests, one doorbell: every one answered, in order */
	for (i = 0; i < VGPU_MAILBOX_ENTRIES; i++) {
		if (i % 3 == 0)
			tenant_put_op(&t, VGPU_OP_STATS, NULL, 0);
		else if (i % 3 == 1)
			tenant_put_op(&t, VGPU_OP_FREE, &(struct vgpu_free_request){ 4242, 0 },
			              sizeof(struct vgpu_free_request));
		else
			tenant_put(&t, &(struct vgpu_request){ .opcode = 77, .seq = ++t.seq });
	}
	tenant_kick(&t);
	assert_int_equal(tenant_wait(&t, VGPU_MAILBOX_ENTRIES, responses, 20000), 0);
	for (i = 0; i < VGPU_MAILBOX_ENTRIES; i++) {
		assert_int_equal(responses[i].seq, responses[0].seq + i);
		assert_int_equal(responses[i].status, i % 3 == 0   ? VGPU_STATUS_OK
		                                      : i % 3 == 1 ? VGPU_STATUS_NOT_FOUND
		                                                   : VGPU_STATUS_UNSUPPORTED);
	}

	/* flooding faster than it reads responses: the response ring fills,
	 * vgpud stops, nothing is lost */
	for (i = 0; i < VGPU_MAILBOX_ENTRIES; i++)
		tenant_put_op(&t, VGPU_OP_STATS, NULL, 0);
	tenant_kick(&t);
	usleep(50000);
	assert_int_equal(tenant_wait(&t, VGPU_MAILBOX_ENTRIES, responses, 20000), 0);
	for (i = 0; i < VGPU_MAILBOX_ENTRIES; i++)
		tenant_put_op(&t, VGPU_OP_STATS, NULL, 0);
	tenant_kick(&t);
	assert_int_equal(tenant_wait(&t, VGPU_MAILBOX_ENTRIES, responses, 20000), 0);

	__atomic_store_n(&b.stop, true, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	assert_int_equal(b.failures, 0);
	assert_true(b.rounds > 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	tenant_close(&t);
}

static void test_attach_errors(void **state)
{
	struct harness *h = *state;
	struct tenant a, b;

	assert_int_equal(tenant_open(h, &a, "dup", "one"), 0);
	/* same name twice */
	assert_int_equal(tenant_open(h, &b, "dup", NULL), -EEXIST);
	assert_non_null(strstr(vgpu_error_msg(&b.error), "already attached"));
	/* unknown profile */
	assert_int_equal(tenant_open(h, &b, "other", "no-such-profile"), -ENOENT);
	assert_non_null(strstr(vgpu_error_msg(&b.error), "no-such-profile"));
	/* max_instances of "one" is 1 */
	assert_int_equal(tenant_open(h, &b, "other", "one"), -EUSERS);
	/* bad names never leave the process */
	assert_int_equal(tenant_open(h, &b, "has space", NULL), -EINVAL);
	assert_int_equal(tenant_open(h, &b, "", NULL), -EINVAL);
	tenant_close(&a);
	assert_true(harness_wait_vms(h, 0, 2000));
	assert_int_equal(tenant_open(h, &b, "other", "one"), 0);
	tenant_close(&b);
}

static void test_detach_releases_everything(void **state)
{
	struct harness *h = *state;
	struct vgpu_core_stats before, after;
	struct vgpu_channel_create_response channel;
	uint64_t free_before = vgpu_hal_vram_free_bytes(h->d->hal);
	int fds_before = count_open_fds();
	struct tenant t;
	int i;

	vgpu_core_stats(h->d->core, &before);
	assert_int_equal(tenant_open(h, &t, "leaky", "big"), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	for (i = 0; i < 8; i++)
		assert_int_equal(tenant_alloc(&t, 3u << 20, (uint32_t)i, NULL, NULL), VGPU_STATUS_OK);
	/* more than VRAM: some chunks go to host memory */
	assert_int_equal(tenant_alloc(&t, 48u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	assert_int_equal(tenant_channel_create(&t, 0, &channel), VGPU_STATUS_OK);
	assert_int_equal(tenant_channel_create(&t, 64, &channel), VGPU_STATUS_OK);
	vgpu_core_stats(h->d->core, &after);
	assert_true(after.evicted_bytes > 0);
	tenant_close(&t);
	assert_true(harness_wait_vms(h, 0, 5000));
	vgpu_core_stats(h->d->core, &after);
	assert_int_equal(after.allocated_bytes, before.allocated_bytes);
	assert_int_equal(after.evicted_bytes, 0);
	assert_int_equal(after.host_used_bytes, 0);
	assert_int_equal(after.vms, before.vms);
	assert_int_equal(vgpu_hal_vram_free_bytes(h->d->hal), free_before);
	assert_int_equal(vgpu_core_check_invariants(h->d->core, NULL), 0);
	/* vgpud's and the client's descriptors are all closed again (once
	 * the connection's detach job ran) */
	for (i = 0; i < 100 && count_open_fds() != fds_before; i++)
		usleep(10000);
	assert_int_equal(count_open_fds(), fds_before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_registers, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_hello_first_and_versions, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_round_trips, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_foreign_handles, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_malformed_requests, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_garbage_indices_and_flood, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_attach_errors, harness_setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_detach_releases_everything, harness_setup, harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
