// SPDX-License-Identifier: MIT
/*
 * test_proto.c - the guest-side mailbox protocol code against a fake device:
 * encodings, seq matching, status -> errno, malformed responses, ring
 * wrap-around, a full request ring, late and lost answers.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_device.h"
#include "vgpu_proto.h"

struct fixture {
	struct fake_device *fake;
	struct vgpu_proto proto;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->fake = fake_device_create();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fake_device_destroy(f->fake);
	free(f);
	return 0;
}

static void init_proto(struct fixture *f, int timeout_ms)
{
	struct vgpu_proto_config config = fake_device_proto_config(f->fake, timeout_ms);

	assert_int_equal(vgpu_proto_init(&f->proto, &config), 0);
}

static void init_and_hello(struct fixture *f, int timeout_ms)
{
	init_proto(f, timeout_ms);
	assert_int_equal(vgpu_proto_hello(&f->proto, VGPU_FEATURE_PRIORITY_HINTS |
	                                                     VGPU_FEATURE_STATS |
	                                                     VGPU_FEATURE_DOORBELL_KICK,
	                                  NULL),
	                 0);
}

/* ------------------------------------------------------------------------ */
/* Attach                                                                   */

static void test_init_checks_device(void **state)
{
	struct fixture *f = *state;
	struct vgpu_proto_config config = fake_device_proto_config(f->fake, 50);

	f->fake->magic = 0x12345678;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -ENODEV);
	f->fake->magic = 0xffffffff;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -ENODEV);
	f->fake->magic = VGPU_MAGIC;

	f->fake->abi_version = (2u << 16) | 0;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EPROTONOSUPPORT);
	f->fake->abi_version = (1u << 16) | 7; /* newer minor: fine */

	f->fake->status = 0;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EAGAIN);
	f->fake->status = VGPU_STATUS_READY | VGPU_STATUS_BACKEND_GONE;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -ENODEV);
	f->fake->status = VGPU_STATUS_READY;

	((struct vgpu_mailbox_header *)f->fake->mailbox)->entries = htole32(128);
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EPROTO);
	((struct vgpu_mailbox_header *)f->fake->mailbox)->entries = htole32(VGPU_MAILBOX_ENTRIES);

	config.mailbox = f->fake->mailbox + 4; /* misaligned */
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EINVAL);
	config.mailbox = f->fake->mailbox;
	config.ops = NULL;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EINVAL);
	config.ops = fake_device_ops();

	assert_int_equal(vgpu_proto_init(&f->proto, &config), 0);
	assert_int_equal(f->fake->doorbells, 0); /* attaching sends nothing */
}

/* A reloaded driver: the predecessor's requests are answered and dropped. */
static void test_init_adopts_predecessor(void **state)
{
	struct fixture *f = *state;
	struct vgpu_proto_config config = fake_device_proto_config(f->fake, 1000);
	struct vgpu_request slot = { 0 };
	uint32_t i;

	/* The predecessor posted 3 HELLOs the backend has not taken yet. */
	fake_device_set_indices(f->fake, 40, 37, 37, 30);
	for (i = 37; i < 40; i++) {
		slot.opcode = htole16(VGPU_OP_HELLO);
		slot.payload_size = htole16(8);
		slot.seq = htole32(1000 + i);
		memcpy(f->fake->mailbox + VGPU_MAILBOX_REQ_RING_OFFSET +
		               (i % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE,
		       &slot, sizeof(slot));
	}
	f->fake->answer_in_wait = true;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), 0);
	assert_int_equal(f->fake->requests_seen, 3);
	f->fake->answer_in_wait = false;

	/* Responses 30..39 were dropped: our own requests work at once. */
	assert_int_equal(vgpu_proto_hello(&f->proto, 0, NULL), 0);
	assert_int_equal(f->proto.counters.stale_responses, 0);
	assert_int_equal(f->proto.counters.malformed_responses, 0);

	/* A predecessor whose requests are never answered: -EBUSY. */
	fake_device_destroy(f->fake);
	f->fake = fake_device_create();
	config = fake_device_proto_config(f->fake, 20);
	fake_device_set_indices(f->fake, 5, 2, 2, 2);
	f->fake->stalled = true;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EBUSY);
	/* Garbage indices are a protocol error, not a wait. */
	f->fake->stalled = false;
	fake_device_set_indices(f->fake, 1000, 2, 2, 2);
	assert_int_equal(vgpu_proto_init(&f->proto, &config), -EPROTO);
}

/* ------------------------------------------------------------------------ */
/* Requests as the device sees them, responses as the caller sees them      */

static void test_requests_round_trip(void **state)
{
	struct fixture *f = *state;
	struct vgpu_hello_response hello;
	struct vgpu_query_response query;
	struct vgpu_alloc_response alloc, alloc2;
	struct vgpu_channel_create_response ch;
	struct vgpu_stats_response stats;
	struct vgpu_request *last = &f->fake->last_request;

	init_proto(f, 1000);
	assert_int_equal(vgpu_proto_hello(&f->proto, VGPU_FEATURE_STATS | VGPU_FEATURE_MSIX,
	                                  &hello),
	                 0);
	assert_int_equal(le16toh(last->opcode), VGPU_OP_HELLO);
	assert_int_equal(le16toh(last->payload_size), 8);
	assert_int_equal(le32toh(last->seq), 1);
	assert_int_equal(last->reserved, 0);
	assert_int_equal(last->payload[0], VGPU_ABI_VERSION & 0xff);
	assert_int_equal(last->payload[2], 1); /* major, little-endian */
	assert_int_equal(last->payload[4], VGPU_FEATURE_STATS | VGPU_FEATURE_MSIX);
	assert_int_equal(hello.abi_version, VGPU_ABI_VERSION);
	assert_int_equal(hello.features, VGPU_FEATURE_STATS); /* MSIX not offered */
	assert_int_equal(hello.max_channels, 4);
	assert_true(f->proto.ready);

	assert_int_equal(vgpu_proto_query(&f->proto, &query), 0);
	assert_int_equal(le32toh(last->seq), 2);
	assert_int_equal(le16toh(last->payload_size), 0);
	assert_int_equal(query.chunk_bytes, 2u << 20);
	assert_int_equal(query.vram_total_bytes, 1ull << 30);
	assert_int_equal(query.vram_share_bytes, 512ull << 20);
	assert_int_equal(query.page_size_mask, 3);

	assert_int_equal(vgpu_proto_alloc(&f->proto, 5000, 9, 0, &alloc), 0);
	assert_int_equal(le16toh(last->opcode), VGPU_OP_ALLOC);
	assert_int_equal(le16toh(last->payload_size), 16);
	assert_int_equal(last->payload[0], 5000 & 0xff);
	assert_int_equal(last->payload[1], 5000 >> 8);
	assert_int_equal(last->payload[8], 9);
	assert_int_equal(alloc.bytes, 8192);
	assert_int_equal(alloc.gpu_va, 1ull << 32);
	assert_int_equal(alloc.handle, 1);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 1, VGPU_PRIORITY_MAX, 0, &alloc2), 0);
	assert_int_equal(alloc2.handle, 2);
	assert_true(alloc2.gpu_va >= alloc.gpu_va + alloc.bytes);

	assert_int_equal(vgpu_proto_set_priority(&f->proto, alloc.handle, 3), 0);
	assert_int_equal(le16toh(last->opcode), VGPU_OP_SET_PRIORITY);
	assert_int_equal(last->payload[4], 3);

	assert_int_equal(vgpu_proto_channel_create(&f->proto, 64, &ch), 0);
	assert_int_equal(last->payload[0], 64);
	assert_int_equal(ch.index, 0);
	assert_int_equal(ch.gpfifo_entries, 64);
	assert_int_equal(ch.gpfifo_offset, 0x1000);
	assert_int_equal(ch.pushbuf_bytes, 0x10000);
	assert_int_equal(ch.notifier_gpu_va, 0x10000000ull);
	assert_int_equal(vgpu_proto_channel_create(&f->proto, 0, &ch), 0);
	assert_int_equal(ch.index, 1);
	assert_int_equal(ch.gpfifo_entries, 512);
	assert_int_equal(vgpu_proto_channel_destroy(&f->proto, 1), 0);

	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), 0);
	assert_int_equal(stats.allocated_bytes, 8192 + 4096);
	assert_int_equal(stats.evictions, 3);
	assert_int_equal(stats.returns, 2);

	assert_int_equal(vgpu_proto_free(&f->proto, alloc.handle), 0);
	assert_int_equal(vgpu_proto_free(&f->proto, alloc.handle), -ENOENT);

	/* One trapped access per request, and nothing else. */
	assert_int_equal(f->proto.counters.requests, 11);
	assert_int_equal(f->proto.counters.responses, 11);
	assert_int_equal(f->proto.counters.doorbells, 11);
	assert_int_equal(f->fake->doorbells, 11);
	assert_int_equal(f->fake->reg_reads, 3); /* magic, version, status at init */
	assert_int_equal(f->proto.counters.error_statuses, 1);
}

static void test_arguments_checked_before_sending(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;
	struct vgpu_channel_create_response ch;
	struct vgpu_query_response query;

	init_proto(f, 100);
	/* Before HELLO nothing but HELLO goes out. */
	assert_int_equal(vgpu_proto_query(&f->proto, &query), -ENOTCONN);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -ENOTCONN);
	assert_int_equal(f->fake->doorbells, 0);

	assert_int_equal(vgpu_proto_hello(&f->proto, 0, NULL), 0);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 0, 0, 0, &alloc), -EINVAL);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 16, 0, &alloc), -EINVAL);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 1, &alloc), -EINVAL);
	assert_int_equal(vgpu_proto_alloc(&f->proto, UINT64_MAX, 0, 0, &alloc), -EINVAL);
	assert_int_equal(vgpu_proto_alloc(&f->proto, VGPU_ALLOC_MAX_BYTES + 1, 0, 0, &alloc),
	                 -EINVAL);
	assert_int_equal(vgpu_proto_channel_create(&f->proto, 1, &ch), -EINVAL);
	assert_int_equal(vgpu_proto_channel_create(&f->proto, 2 * VGPU_CHANNEL_GPFIFO_ENTRIES_MAX,
	                                           &ch),
	                 -EINVAL);
	assert_int_equal(vgpu_proto_set_priority(&f->proto, 1, 99), -EINVAL);
	assert_int_equal(vgpu_proto_channel_create(&f->proto, 3, &ch), -EINVAL);
	assert_int_equal(vgpu_proto_channel_destroy(&f->proto, VGPU_MAX_CHANNELS), -EINVAL);
	assert_int_equal(f->fake->doorbells, 1); /* only the HELLO */
}

/* ------------------------------------------------------------------------ */
/* Status codes                                                             */

static uint32_t forced_status;

static enum fake_action force_status(void *arg, const struct vgpu_request *request,
                                     struct vgpu_response *response)
{
	(void)arg;
	if (request->opcode != VGPU_OP_HELLO) {
		response->status = forced_status;
		response->payload_size = 0;
	}
	return FAKE_POST;
}

static void test_status_to_errno(void **state)
{
	struct fixture *f = *state;
	static const struct {
		uint32_t status;
		int err;
	} table[] = {
		{ VGPU_STATUS_INVALID, -EINVAL },
		{ VGPU_STATUS_UNSUPPORTED, -EOPNOTSUPP },
		{ VGPU_STATUS_NO_MEMORY, -ENOMEM },
		{ VGPU_STATUS_NOT_FOUND, -ENOENT },
		{ VGPU_STATUS_LIMIT, -ENOSPC },
		{ VGPU_STATUS_VERSION, -EPROTONOSUPPORT },
		{ VGPU_STATUS_NOT_READY, -ENOTCONN },
		{ VGPU_STATUS_INTERNAL, -EIO },
		{ VGPU_STATUS_BUSY, -EAGAIN },
		{ 77, -EPROTO }, /* not a status of the ABI */
	};
	struct vgpu_alloc_response alloc;
	size_t i;

	init_and_hello(f, 200);
	f->fake->mutate = force_status;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		forced_status = table[i].status;
		assert_int_equal(vgpu_status_to_errno(table[i].status), table[i].err);
		assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), table[i].err);
		assert_int_equal(vgpu_proto_free(&f->proto, 1), table[i].err);
	}
	assert_int_equal(vgpu_status_to_errno(VGPU_STATUS_OK), 0);
	assert_string_equal(vgpu_status_name(VGPU_STATUS_NO_MEMORY), "NO_MEMORY");
	assert_string_equal(vgpu_status_name(1234), "unknown");
	assert_string_equal(vgpu_opcode_name(VGPU_OP_CHANNEL_CREATE), "CHANNEL_CREATE");
	/* An unknown status is malformed; known errors are not. */
	assert_int_equal(f->proto.counters.malformed_responses, 2);
	assert_int_equal(f->proto.counters.error_statuses, 18);

	/* HELLO refused for our version. */
	f->fake->mutate = NULL;
	f->fake->offered_features = 0;
	{
		struct vgpu_proto_raw_request raw = {
			.opcode = VGPU_OP_HELLO,
			.payload_size = 8,
			.payload = (uint32_t[]){ htole32(2u << 16), 0 },
			.payload_len = 8,
		};
		struct vgpu_response resp;

		assert_int_equal(vgpu_proto_call_raw(&f->proto, &raw, &resp), 0);
		assert_int_equal(resp.status, VGPU_STATUS_VERSION);
		assert_int_equal(vgpu_status_to_errno(resp.status), -EPROTONOSUPPORT);
	}
}

/* ------------------------------------------------------------------------ */
/* Malformed responses                                                      */

enum corruption {
	CORRUPT_SEQ_FUTURE,
	CORRUPT_SEQ_PAST,
	CORRUPT_OPCODE,
	CORRUPT_PAYLOAD_OVERSIZED,
	CORRUPT_PAYLOAD_SHORT,
	CORRUPT_ALLOC_VA_MISALIGNED,
	CORRUPT_ALLOC_TOO_SMALL,
	CORRUPT_ALLOC_TOO_LARGE,
	CORRUPT_ALLOC_WRAPS,
	CORRUPT_CHANNEL_INDEX,
	CORRUPT_CHANNEL_OVERLAP,
	CORRUPT_CHANNEL_OUTSIDE,
	CORRUPT_CHANNEL_ENTRIES,
	CORRUPT_CHANNEL_VA_WRAPS,
	CORRUPT_HELLO_FEATURES,
	CORRUPT_HELLO_MAJOR,
	CORRUPT_QUERY_CHUNK,
	CORRUPT_QUERY_SHARE,
	CORRUPT_QUERY_PAGE_SIZES,
	CORRUPT_MODULE_PAYLOAD_SHORT,
	CORRUPT_MODULE_TABLE_BELOW_HEADER,
	CORRUPT_MODULE_TABLE_BEYOND_ROOM,
	CORRUPT_MODULE_VARIABLES_MISALIGNED,
	CORRUPT_MODULE_VARIABLES_WRAP,
	CORRUPT_MODULE_UNKNOWN_STATUS,
	CORRUPT_COUNT
};

static enum corruption corruption;

/* Room the module tests give the table: the fake device needs 1024. */
#define MODULE_ROOM 4096u

static const struct vgpu_module_load_request module_request = {
	.image_va = 0x100000000ull,
	.image_bytes = 5000,
	.table_va = 0x100200000ull,
	.table_bytes = MODULE_ROOM,
};

static void put32(struct vgpu_response *response, size_t offset, uint32_t value)
{
	value = htole32(value);
	memcpy(response->payload + offset, &value, 4);
}

static void put64(struct vgpu_response *response, size_t offset, uint64_t value)
{
	value = htole64(value);
	memcpy(response->payload + offset, &value, 8);
}

static enum fake_action corrupt(void *arg, const struct vgpu_request *request,
                                struct vgpu_response *r)
{
	(void)arg;
	(void)request;
	switch (corruption) {
	case CORRUPT_SEQ_FUTURE:
		r->seq += 5;
		break;
	case CORRUPT_SEQ_PAST:
		r->seq -= 1000;
		break;
	case CORRUPT_OPCODE:
		r->opcode = r->opcode == VGPU_OP_FREE ? VGPU_OP_ALLOC : VGPU_OP_FREE;
		break;
	case CORRUPT_PAYLOAD_OVERSIZED:
		r->payload_size = VGPU_MAILBOX_PAYLOAD_SIZE + 1;
		break;
	case CORRUPT_PAYLOAD_SHORT:
		r->payload_size = 8;
		break;
	case CORRUPT_ALLOC_VA_MISALIGNED:
		put64(r, offsetof(struct vgpu_alloc_response, gpu_va), 0x100000123ull);
		break;
	case CORRUPT_ALLOC_TOO_SMALL:
		put64(r, offsetof(struct vgpu_alloc_response, bytes), 4096);
		break;
	case CORRUPT_ALLOC_TOO_LARGE:
		put64(r, offsetof(struct vgpu_alloc_response, bytes), 1ull << 30);
		break;
	case CORRUPT_ALLOC_WRAPS:
		put64(r, offsetof(struct vgpu_alloc_response, gpu_va), ~0ull - 4095);
		break;
	case CORRUPT_CHANNEL_INDEX:
		put32(r, offsetof(struct vgpu_channel_create_response, index), VGPU_MAX_CHANNELS);
		break;
	case CORRUPT_CHANNEL_OVERLAP:
		put32(r, offsetof(struct vgpu_channel_create_response, notifier_offset), 0x800);
		break;
	case CORRUPT_CHANNEL_OUTSIDE:
		put32(r, offsetof(struct vgpu_channel_create_response, pushbuf_offset),
		      VGPU_CHANNEL_WINDOW_STRIDE - 0x1000);
		break;
	case CORRUPT_CHANNEL_ENTRIES:
		put32(r, offsetof(struct vgpu_channel_create_response, gpfifo_entries), 48);
		break;
	case CORRUPT_CHANNEL_VA_WRAPS:
		put64(r, offsetof(struct vgpu_channel_create_response, pushbuf_gpu_va),
		      ~0ull - 0xfff);
		break;
	case CORRUPT_HELLO_FEATURES:
		put32(r, offsetof(struct vgpu_hello_response, features), VGPU_FEATURE_MSIX);
		break;
	case CORRUPT_HELLO_MAJOR:
		put32(r, offsetof(struct vgpu_hello_response, abi_version), 3u << 16);
		break;
	case CORRUPT_QUERY_CHUNK:
		put64(r, offsetof(struct vgpu_query_response, chunk_bytes), 3u << 20);
		break;
	case CORRUPT_QUERY_SHARE:
		put64(r, offsetof(struct vgpu_query_response, vram_share_bytes), 2ull << 30);
		break;
	case CORRUPT_QUERY_PAGE_SIZES:
		put32(r, offsetof(struct vgpu_query_response, page_size_mask), 1u << 3);
		break;
	case CORRUPT_MODULE_PAYLOAD_SHORT:
		r->payload_size = sizeof(struct vgpu_module_load_response) - 8;
		break;
	case CORRUPT_MODULE_TABLE_BELOW_HEADER:
		put32(r, offsetof(struct vgpu_module_load_response, table_bytes),
		      sizeof(struct vgpu_module_table) - 4);
		break;
	case CORRUPT_MODULE_TABLE_BEYOND_ROOM:
		put32(r, offsetof(struct vgpu_module_load_response, table_bytes), MODULE_ROOM + 4);
		break;
	case CORRUPT_MODULE_VARIABLES_MISALIGNED:
		put64(r, offsetof(struct vgpu_module_load_response, variables_va), 0x20000100ull);
		break;
	case CORRUPT_MODULE_VARIABLES_WRAP:
		put64(r, offsetof(struct vgpu_module_load_response, variables_va), ~0ull - 0xfff);
		put64(r, offsetof(struct vgpu_module_load_response, variables_bytes), 0x2000);
		break;
	case CORRUPT_MODULE_UNKNOWN_STATUS:
		r->status = 99;
		break;
	case CORRUPT_COUNT:
		break;
	}
	return FAKE_POST;
}

/* Issue the request a corruption targets; every one must fail with -EPROTO. */
static int request_for(struct fixture *f, enum corruption c)
{
	struct vgpu_alloc_response alloc;
	struct vgpu_channel_create_response ch;
	struct vgpu_query_response query;

	switch (c) {
	case CORRUPT_CHANNEL_INDEX:
	case CORRUPT_CHANNEL_OVERLAP:
	case CORRUPT_CHANNEL_OUTSIDE:
	case CORRUPT_CHANNEL_ENTRIES:
	case CORRUPT_CHANNEL_VA_WRAPS:
		return vgpu_proto_channel_create(&f->proto, 32, &ch);
	case CORRUPT_HELLO_FEATURES:
	case CORRUPT_HELLO_MAJOR:
		return vgpu_proto_hello(&f->proto, VGPU_FEATURE_STATS, NULL);
	case CORRUPT_QUERY_CHUNK:
	case CORRUPT_QUERY_SHARE:
	case CORRUPT_QUERY_PAGE_SIZES:
		return vgpu_proto_query(&f->proto, &query);
	case CORRUPT_MODULE_PAYLOAD_SHORT:
	case CORRUPT_MODULE_TABLE_BELOW_HEADER:
	case CORRUPT_MODULE_TABLE_BEYOND_ROOM:
	case CORRUPT_MODULE_VARIABLES_MISALIGNED:
	case CORRUPT_MODULE_VARIABLES_WRAP:
	case CORRUPT_MODULE_UNKNOWN_STATUS: {
		struct vgpu_module_load_response loaded;
		int ret = vgpu_proto_module_load(&f->proto, &module_request, &loaded);
		static const struct vgpu_module_load_response zero;

		/* Nothing of a rejected answer reaches the caller. */
		assert_memory_equal(&loaded, &zero, sizeof(zero));
		return ret;
	}
	default:
		return vgpu_proto_alloc(&f->proto, 8192, 0, 0, &alloc);
	}
}

static void test_malformed_responses_rejected(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;
	uint64_t malformed = 0;
	int c;

	f->fake->max_channels = VGPU_MAX_CHANNELS;
	init_and_hello(f, 100);
	for (c = 0; c < CORRUPT_COUNT; c++) {
		corruption = (enum corruption)c;
		f->fake->mutate = corrupt;
		print_message("corruption %d\n", c);
		assert_int_equal(request_for(f, corruption), -EPROTO);
		assert_true(f->proto.counters.malformed_responses > malformed);
		malformed = f->proto.counters.malformed_responses;
		/* The protocol recovers: the next request works. */
		f->fake->mutate = NULL;
		assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), 0);
	}
	/* A rejected HELLO does not make an unready proto ready, nor the
	 * other way round; the hello above kept us ready throughout. */
	assert_true(f->proto.ready);
}

/* MODULE_LOAD / MODULE_UNLOAD (device ABI 1.3): fields, LIMIT saying the
 * room the table needs, arguments checked before anything is sent. */
static void test_module_requests(void **state)
{
	struct fixture *f = *state;
	struct vgpu_module_load_request req = module_request;
	struct vgpu_module_load_response loaded;
	uint64_t requests;

	init_and_hello(f, 200);
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), 0);
	assert_int_equal(f->fake->last_request.opcode, htole16(VGPU_OP_MODULE_LOAD));
	assert_int_equal(le16toh(f->fake->last_request.payload_size), sizeof(req));
	assert_int_equal(loaded.module, 0);
	assert_int_equal(loaded.function_count, 2);
	assert_int_equal(loaded.variable_count, 1);
	assert_int_equal(loaded.table_bytes, 1024);
	assert_int_equal(loaded.variables_va, 0x20000000ull);
	assert_int_equal(loaded.variables_bytes, 4096);
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), 0);
	assert_int_equal(loaded.module, 1);

	/* Too little room: LIMIT, and how much is needed. */
	req.table_bytes = 512;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -ENOSPC);
	assert_int_equal(loaded.table_bytes, 1024);
	assert_int_equal(loaded.module, 0);
	/* An image the backend refuses. */
	req = module_request;
	req.image_va = 0;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);

	assert_int_equal(vgpu_proto_module_unload(&f->proto, 1), 0);
	assert_int_equal(f->fake->modules_live, 1);
	assert_int_equal(vgpu_proto_module_unload(&f->proto, 1), -ENOENT);
	assert_int_equal(vgpu_proto_module_unload(&f->proto, 0), 0);
	assert_int_equal(f->fake->modules_live, 0);

	/* Bad arguments never reach the device. */
	requests = f->fake->requests_seen;
	req = module_request;
	req.image_bytes = 0;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	req.image_bytes = VGPU_MODULE_IMAGE_MAX_BYTES + 1ull;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	req = module_request;
	req.table_bytes = 0;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	req.table_bytes = VGPU_MODULE_TABLE_MAX_BYTES + 1;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	req = module_request;
	req.flags = 1;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	req = module_request;
	req.image_va = ~0ull - 100;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &req, &loaded), -EINVAL);
	assert_int_equal(vgpu_proto_module_load(&f->proto, NULL, &loaded), -EINVAL);
	assert_int_equal(vgpu_proto_module_load(&f->proto, &module_request, NULL), -EINVAL);
	assert_int_equal(f->fake->requests_seen, requests);

	/* A backend without the feature, and one that did not say HELLO. */
	forced_status = VGPU_STATUS_UNSUPPORTED;
	f->fake->mutate = force_status;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &module_request, &loaded), -EOPNOTSUPP);
	assert_int_equal(vgpu_proto_module_unload(&f->proto, 0), -EOPNOTSUPP);
	f->fake->mutate = NULL;
	f->proto.ready = false;
	assert_int_equal(vgpu_proto_module_load(&f->proto, &module_request, &loaded), -ENOTCONN);
}

/* LIMIT whose room is not believable: -ENOSPC, but no room reported. */
static enum fake_action limit_with_room(void *arg, const struct vgpu_request *request,
                                        struct vgpu_response *r)
{
	(void)request;
	r->status = VGPU_STATUS_LIMIT;
	r->payload_size = sizeof(struct vgpu_module_load_response);
	put32(r, offsetof(struct vgpu_module_load_response, table_bytes), *(uint32_t *)arg);
	return FAKE_POST;
}

static void test_module_limit_room_checked(void **state)
{
	struct fixture *f = *state;
	struct vgpu_module_load_response loaded;
	/* not more than the room given; beyond the ABI's bound; believable */
	uint32_t rooms[] = { MODULE_ROOM, VGPU_MODULE_TABLE_MAX_BYTES + 1, MODULE_ROOM * 2 };
	uint32_t want[] = { 0, 0, MODULE_ROOM * 2 };

	init_and_hello(f, 200);
	f->fake->mutate = limit_with_room;
	for (size_t i = 0; i < sizeof(rooms) / sizeof(rooms[0]); i++) {
		f->fake->mutate_arg = &rooms[i];
		assert_int_equal(vgpu_proto_module_load(&f->proto, &module_request, &loaded),
		                 -ENOSPC);
		assert_int_equal(loaded.table_bytes, want[i]);
		assert_int_equal(loaded.module, 0);
	}
}

/* A backend whose GPU has 2 MiB VRAM pages only (cudagpu): QUERY says so
 * and ALLOC rounds up to 2 MiB; both are accepted. */
static enum fake_action two_mib_pages(void *arg, const struct vgpu_request *request,
                                      struct vgpu_response *r)
{
	uint64_t bytes;

	(void)arg;
	if (le16toh(r->opcode) == VGPU_OP_QUERY)
		put32(r, offsetof(struct vgpu_query_response, page_size_mask), 1u << 2);
	if (le16toh(r->opcode) == VGPU_OP_ALLOC) {
		memcpy(&bytes, request->payload + offsetof(struct vgpu_alloc_request, bytes), 8);
		bytes = (le64toh(bytes) + (2u << 20) - 1) & ~((2ull << 20) - 1);
		put64(r, offsetof(struct vgpu_alloc_response, bytes), bytes);
	}
	return FAKE_POST;
}

static void test_backend_with_2m_pages(void **state)
{
	struct fixture *f = *state;
	struct vgpu_query_response query;
	struct vgpu_alloc_response alloc;

	init_and_hello(f, 100);
	f->fake->mutate = two_mib_pages;
	assert_int_equal(vgpu_proto_query(&f->proto, &query), 0);
	assert_int_equal(query.page_size_mask, 1u << 2);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 5000, 0, 0, &alloc), 0);
	assert_int_equal(alloc.bytes, 2u << 20);
	assert_int_equal(f->proto.counters.malformed_responses, 0);
}

/* The device claims more responses than the ring holds. */
static void test_overrun_response_ring(void **state)
{
	struct fixture *f = *state;
	struct vgpu_mailbox_header *header = (struct vgpu_mailbox_header *)f->fake->mailbox;
	struct vgpu_alloc_response alloc;

	init_and_hello(f, 50);
	f->fake->stalled = true;
	__atomic_store_n(&header->resp_head, htole32(le32toh(header->resp_tail) + 1000),
	                 __ATOMIC_RELEASE);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -EPROTO);
	/* Nothing was consumed from the bogus ring. */
	assert_int_equal(f->proto.counters.responses, 1);
}

/* ------------------------------------------------------------------------ */
/* Seq matching: late, lost and duplicate answers                           */

static void test_late_answer_is_dropped(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;

	init_and_hello(f, 20);
	f->fake->defer_answers = true;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -ETIMEDOUT);
	assert_int_equal(f->proto.counters.timeouts, 1);

	/* The answer to the abandoned ALLOC comes now, before ours. */
	f->fake->defer_answers = false;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 3 * 4096, 0, 0, &alloc), 0);
	assert_int_equal(alloc.bytes, 3 * 4096); /* ours, not the late one */
	assert_int_equal(alloc.handle, 2);
	assert_int_equal(f->proto.counters.stale_responses, 1);
	assert_int_equal(f->proto.counters.malformed_responses, 0);
}

static void test_response_in_wait(void **state)
{
	struct fixture *f = *state;
	struct vgpu_stats_response stats;

	init_and_hello(f, 1000);
	f->fake->answer_in_wait = true;
	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), 0);
	assert_true(f->proto.counters.irq_waits >= 1);
}

static enum fake_action drop_stats(void *arg, const struct vgpu_request *request,
                                   struct vgpu_response *response)
{
	(void)arg;
	(void)response;
	return request->opcode == VGPU_OP_STATS ? FAKE_DROP : FAKE_POST;
}

static void test_lost_answer_skipped(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;
	struct vgpu_stats_response stats;

	init_and_hello(f, 20);
	/* The device takes a request and never answers it. */
	f->fake->mutate = drop_stats;
	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), -ETIMEDOUT);
	/* The answer to the next request implies the lost one is over. */
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), 0);
	assert_int_equal(f->proto.oldest_seq, f->proto.next_seq);
	assert_int_equal(f->proto.counters.malformed_responses, 0);
}

static enum fake_action duplicate(void *arg, const struct vgpu_request *request,
                                  struct vgpu_response *response)
{
	(void)arg;
	(void)response;
	return request->opcode == VGPU_OP_FREE ? FAKE_TWICE : FAKE_POST;
}

static void test_duplicate_answer_rejected(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;

	init_and_hello(f, 50);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), 0);
	f->fake->mutate = duplicate;
	assert_int_equal(vgpu_proto_free(&f->proto, alloc.handle), 0);
	f->fake->mutate = NULL;
	/* The second copy answers a request that is no longer outstanding. */
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -EPROTO);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), 0);
}

static void test_backend_gone(void **state)
{
	struct fixture *f = *state;
	struct vgpu_alloc_response alloc;

	init_and_hello(f, 20);
	f->fake->defer_answers = true;
	f->fake->status = VGPU_STATUS_BACKEND_GONE;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -ENODEV);
	f->fake->status = 0xffffffff; /* surprise removal */
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -ENODEV);
	f->fake->status = VGPU_STATUS_READY;
	f->fake->wait_irq_error = -ENODEV;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -ENODEV);
	f->fake->wait_irq_error = -EINTR;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -EINTR);
}

/* ------------------------------------------------------------------------ */
/* Rings                                                                    */

static void test_ring_wraps(void **state)
{
	struct fixture *f = *state;
	struct vgpu_proto_config config = fake_device_proto_config(f->fake, 200);
	struct vgpu_alloc_response alloc;
	unsigned i;

	/* Indices and seqs both cross 2^32 within the run. */
	fake_device_set_indices(f->fake, 0xffffff00u, 0xffffff00u, 0xffffff00u, 0xffffff00u);
	config.first_seq = 0xfffffe00u;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), 0);
	assert_int_equal(vgpu_proto_hello(&f->proto, 0, NULL), 0);
	for (i = 0; i < 3 * VGPU_MAILBOX_ENTRIES + 7; i++) {
		assert_int_equal(vgpu_proto_alloc(&f->proto, 4096 * (i % 5 + 1), 0, 0, &alloc), 0);
		assert_int_equal(alloc.bytes, 4096 * (i % 5 + 1));
		assert_int_equal(vgpu_proto_free(&f->proto, alloc.handle), 0);
	}
	assert_true(f->proto.req_head < 0x1000); /* wrapped */
	assert_true(f->proto.next_seq < 0x1000);
	assert_int_equal(f->proto.counters.malformed_responses, 0);
	assert_int_equal(f->proto.counters.stale_responses, 0);
}

static void test_full_request_ring(void **state)
{
	struct fixture *f = *state;
	struct vgpu_stats_response stats;
	unsigned i;

	init_and_hello(f, 1);
	/* The backend takes nothing: every request times out and stays queued. */
	f->fake->stalled = true;
	for (i = 0; i < VGPU_MAILBOX_ENTRIES; i++)
		assert_int_equal(vgpu_proto_stats(&f->proto, &stats), -ETIMEDOUT);
	assert_int_equal(f->proto.counters.ring_full_waits, 0);
	/* Request 257 finds no slot. */
	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), -EBUSY);
	assert_int_equal(f->proto.counters.ring_full_waits, 1);
	assert_int_equal(f->proto.req_head - 1, VGPU_MAILBOX_ENTRIES); /* hello + 256 */

	/*
	 * The backend wakes up. Its 256 late answers fill the response ring, so
	 * it stops taking requests; the guest drains them while waiting for a
	 * slot and rings again, and its own request gets through.
	 */
	f->fake->stalled = false;
	f->proto.timeout_ms = 2000;
	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), 0);
	assert_int_equal(f->proto.counters.stale_responses, VGPU_MAILBOX_ENTRIES);
	assert_int_equal(f->proto.counters.malformed_responses, 0);
	assert_int_equal(vgpu_proto_stats(&f->proto, &stats), 0);
}

/* ------------------------------------------------------------------------ */
/* Raw requests and the lock hook                                           */

static void test_raw_request(void **state)
{
	struct fixture *f = *state;
	struct vgpu_response resp;
	uint8_t junk[VGPU_MAILBOX_PAYLOAD_SIZE];
	struct vgpu_proto_raw_request raw = {
		.opcode = 0x77,
		.payload_size = 0xffff, /* a lie */
		.reserved = 5,
		.payload = junk,
		.payload_len = sizeof(junk),
	};

	memset(junk, 0xab, sizeof(junk));
	init_proto(f, 100);
	assert_int_equal(vgpu_proto_call_raw(&f->proto, &raw, &resp), 0);
	assert_int_equal(le16toh(f->fake->last_request.payload_size), 0xffff);
	assert_int_equal(le64toh(f->fake->last_request.reserved), 5);
	assert_int_equal(resp.status, VGPU_STATUS_INVALID);
	assert_int_equal(resp.opcode, 0x77);

	raw.reserved = 0;
	raw.payload_size = 0;
	raw.payload_len = 0;
	assert_int_equal(vgpu_proto_call_raw(&f->proto, &raw, &resp), 0);
	assert_int_equal(resp.status, VGPU_STATUS_NOT_READY);
	raw.payload_len = VGPU_MAILBOX_PAYLOAD_SIZE + 1;
	assert_int_equal(vgpu_proto_call_raw(&f->proto, &raw, &resp), -EINVAL);
}

struct lock_count {
	int depth;
	int max_depth;
	int locks;
	int asserts;          /* assert_held calls */
	int asserts_unlocked; /* of which with the lock not held */
};

static void count_lock(void *ctx)
{
	struct lock_count *c = ctx;

	c->locks++;
	if (++c->depth > c->max_depth)
		c->max_depth = c->depth;
}

static void count_unlock(void *ctx)
{
	struct lock_count *c = ctx;

	c->depth--;
}

static void count_assert_held(void *ctx)
{
	struct lock_count *c = ctx;

	c->asserts++;
	if (c->depth < 1)
		c->asserts_unlocked++;
}

static void test_lock_hook(void **state)
{
	struct fixture *f = *state;
	static const struct vgpu_proto_lock_ops lock_ops = { count_lock, count_unlock,
		                                             count_assert_held };
	struct vgpu_proto_config config = fake_device_proto_config(f->fake, 100);
	struct lock_count count = { 0 };
	struct vgpu_alloc_response alloc;

	config.lock = &lock_ops;
	config.lock_ctx = &count;
	assert_int_equal(vgpu_proto_init(&f->proto, &config), 0);
	assert_int_equal(vgpu_proto_hello(&f->proto, 0, NULL), 0);
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), 0);
	f->fake->mutate = corrupt;
	corruption = CORRUPT_ALLOC_VA_MISALIGNED;
	assert_int_equal(vgpu_proto_alloc(&f->proto, 4096, 0, 0, &alloc), -EPROTO);
	assert_int_equal(count.depth, 0);
	assert_int_equal(count.max_depth, 1);
	assert_true(count.locks >= 4);
	/* The helpers that need the lock check it, and always find it held. */
	assert_true(count.asserts >= 3);
	assert_int_equal(count.asserts_unlocked, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_checks_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_adopts_predecessor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requests_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arguments_checked_before_sending, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_status_to_errno, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_responses_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_with_2m_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_limit_room_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrun_response_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_answer_is_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_response_in_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_answer_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_answer_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_request_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_hook, setup, teardown),
	};

	return cmocka_run_group_tests_name("guest protocol", tests, NULL, NULL);
}
