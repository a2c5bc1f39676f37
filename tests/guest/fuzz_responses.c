// SPDX-License-Identifier: MIT
/* fuzz_responses.c - a hostile device for the guest protocol code (see fuzz_responses.h). */
#include "fuzz_responses.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_device.h"
#include "vgpu_proto.h"

struct input {
	const uint8_t *data;
	size_t size;
	size_t used;
};

static bool take(struct input *in, void *out, size_t bytes)
{
	if (in->size - in->used < bytes)
		return false;
	memcpy(out, in->data + in->used, bytes);
	in->used += bytes;
	return true;
}

static uint8_t take_byte(struct input *in, uint8_t fallback)
{
	uint8_t value;

	return take(in, &value, 1) ? value : fallback;
}

/* Each response: a control byte, then maybe replacement bytes. */
static enum fake_action hostile(void *arg, const struct vgpu_request *request,
                                struct vgpu_response *response)
{
	struct input *in = arg;
	uint8_t control = take_byte(in, 0);
	uint16_t size;

	(void)request;
	switch (control & 7) {
	case 0: /* honest */
		return FAKE_POST;
	case 1:
		return FAKE_DROP;
	case 2:
		return FAKE_TWICE;
	case 3: /* payload only */
		take(in, response->payload, sizeof(response->payload));
		return FAKE_POST;
	case 4: /* status only */
		response->status = take_byte(in, 0) % 12;
		return FAKE_POST;
	case 5: /* seq drift */
		response->seq += (int8_t)take_byte(in, 1);
		return FAKE_POST;
	case 6: /* payload size */
		if (take(in, &size, sizeof(size)))
			response->payload_size = size;
		return FAKE_POST;
	default: /* everything */
		take(in, response, sizeof(*response));
		return FAKE_POST;
	}
}

static void check_errno(int ret)
{
	switch (ret) {
	case 0:
	case -EINVAL:
	case -EOPNOTSUPP:
	case -ENOMEM:
	case -ENOENT:
	case -ENOSPC:
	case -EPROTONOSUPPORT:
	case -ENOTCONN:
	case -EIO:
	case -EAGAIN:
	case -EPROTO:
	case -ETIMEDOUT:
	case -EBUSY:
	case -ENODEV:
		return;
	default:
		fprintf(stderr, "fuzz: unexpected return %d\n", ret);
		abort();
	}
}

#define PROMISE(cond)                                                         \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "fuzz: broken promise: %s\n", #cond); \
			abort();                                              \
		}                                                             \
	} while (0)

static bool power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void check_channel(const struct vgpu_proto *proto,
                          const struct vgpu_channel_create_response *ch, uint32_t wanted)
{
	uint64_t areas[4][2] = {
		{ ch->control_offset, 4096 },
		{ ch->gpfifo_offset, ((uint64_t)ch->gpfifo_entries * 16 + 4095) & ~4095ull },
		{ ch->notifier_offset, ch->notifier_bytes },
		{ ch->pushbuf_offset, ch->pushbuf_bytes },
	};
	int i, j;

	PROMISE(ch->index < proto->hello.max_channels && ch->index < VGPU_MAX_CHANNELS);
	PROMISE(power_of_two(ch->gpfifo_entries) && ch->gpfifo_entries >= 2);
	PROMISE(!wanted || ch->gpfifo_entries == wanted);
	PROMISE(ch->control_offset % 4096 == 0 && ch->gpfifo_offset % 4096 == 0);
	for (i = 0; i < 4; i++) {
		PROMISE(areas[i][1] > 0);
		PROMISE(areas[i][0] + areas[i][1] <= VGPU_CHANNEL_WINDOW_STRIDE);
		for (j = 0; j < i; j++)
			PROMISE(areas[i][0] + areas[i][1] <= areas[j][0] ||
			        areas[j][0] + areas[j][1] <= areas[i][0]);
	}
	PROMISE(ch->notifier_gpu_va % 8 == 0 && ch->pushbuf_gpu_va % 8 == 0);
	PROMISE(ch->notifier_gpu_va + ch->notifier_bytes >= ch->notifier_gpu_va);
	PROMISE(ch->pushbuf_gpu_va + ch->pushbuf_bytes >= ch->pushbuf_gpu_va);
}

/* MODULE_LOAD with room bytes for the table: what the caller may rely on. */
static void fuzz_module(struct vgpu_proto *proto, struct input *in)
{
	static const struct vgpu_module_load_response zero;
	struct vgpu_module_load_request req = {
		.image_va = 0x100000000ull,
		.image_bytes = 1 + take_byte(in, 0) * 4096ull,
		.table_va = 0x100200000ull,
		.table_bytes = 320u << (take_byte(in, 2) % 8),
	};
	struct vgpu_module_load_response loaded;
	int ret = vgpu_proto_module_load(proto, &req, &loaded);

	check_errno(ret);
	if (!ret) {
		PROMISE(loaded.table_bytes >= sizeof(struct vgpu_module_table));
		PROMISE(loaded.table_bytes <= req.table_bytes);
		PROMISE(!loaded.variables_bytes ||
		        (loaded.variables_va % 4096 == 0 &&
		         loaded.variables_va + loaded.variables_bytes > loaded.variables_va));
		check_errno(vgpu_proto_module_unload(proto, loaded.module));
	} else if (ret == -ENOSPC) {
		/* At most the room needed, believable, and nothing else. */
		PROMISE(!loaded.table_bytes || (loaded.table_bytes > req.table_bytes &&
		                                loaded.table_bytes <= VGPU_MODULE_TABLE_MAX_BYTES));
		loaded.table_bytes = 0;
		PROMISE(!memcmp(&loaded, &zero, sizeof(zero)));
	} else {
		PROMISE(!memcmp(&loaded, &zero, sizeof(zero)));
	}
}

int fuzz_guest_responses(const uint8_t *data, size_t size)
{
	struct input in = { data, size, 0 };
	struct fake_device *fake = fake_device_create();
	struct vgpu_proto_config config = fake_device_proto_config(fake, 1);
	struct vgpu_hello_response hello;
	struct vgpu_query_response query;
	struct vgpu_alloc_response alloc;
	struct vgpu_channel_create_response ch;
	struct vgpu_stats_response stats;
	struct vgpu_response raw_resp;
	struct vgpu_proto_raw_request raw = { .opcode = VGPU_OP_STATS };
	struct vgpu_proto proto;
	uint64_t bytes = 0;
	uint32_t entries = 0, wanted, round;
	uint32_t indices[4];
	int ret;

	/* Sometimes a device that starts with garbage in its rings. */
	if (take_byte(&in, 0) == 0xa5 && take(&in, indices, sizeof(indices)))
		fake_device_set_indices(fake, indices[0], indices[1], indices[2], indices[3]);
	fake->mutate = hostile;
	fake->mutate_arg = &in;
	ret = vgpu_proto_init(&proto, &config);
	check_errno(ret);
	if (ret)
		goto out;

	for (round = 0; round < 4 && in.used < in.size; round++) {
		wanted = take_byte(&in, 0xff) & 0xf;
		ret = vgpu_proto_hello(&proto, wanted, &hello);
		check_errno(ret);
		if (!ret) {
			PROMISE(hello.abi_version >> 16 == VGPU_ABI_VERSION_MAJOR);
			PROMISE(!(hello.features & ~wanted));
			PROMISE(hello.max_channels <= VGPU_MAX_CHANNELS);
		}
		ret = vgpu_proto_query(&proto, &query);
		check_errno(ret);
		if (!ret) {
			PROMISE(power_of_two(query.chunk_bytes) && query.chunk_bytes >= 4096);
			PROMISE(query.vram_share_bytes <= query.vram_total_bytes);
			PROMISE(query.page_size_mask && query.page_size_mask <= 7);
		}
		take(&in, &bytes, sizeof(bytes));
		bytes &= (1ull << 41) - 1;
		ret = vgpu_proto_alloc(&proto, bytes, take_byte(&in, 7) & 0x1f, 0, &alloc);
		check_errno(ret);
		if (!ret) {
			uint64_t rounded = (bytes + 4095) & ~4095ull;

			PROMISE(bytes > 0 && bytes <= VGPU_ALLOC_MAX_BYTES);
			PROMISE(alloc.bytes >= rounded && alloc.bytes % 4096 == 0);
			PROMISE(alloc.bytes <= ((rounded + (2u << 20) - 1) & ~((2ull << 20) - 1)));
			PROMISE(alloc.gpu_va % 4096 == 0 && alloc.gpu_va + alloc.bytes >= alloc.gpu_va);
			check_errno(vgpu_proto_set_priority(&proto, alloc.handle, take_byte(&in, 0)));
			check_errno(vgpu_proto_free(&proto, alloc.handle));
		}
		take(&in, &entries, sizeof(entries));
		entries = entries & 1 ? 0 : 1u << (entries % 14);
		ret = vgpu_proto_channel_create(&proto, entries, &ch);
		check_errno(ret);
		if (!ret) {
			check_channel(&proto, &ch, entries);
			check_errno(vgpu_proto_channel_destroy(&proto, ch.index));
		}
		check_errno(vgpu_proto_stats(&proto, &stats));
		fuzz_module(&proto, &in);
		ret = vgpu_proto_call_raw(&proto, &raw, &raw_resp);
		check_errno(ret);
		if (!ret)
			PROMISE(raw_resp.opcode == VGPU_OP_STATS &&
			        raw_resp.payload_size <= VGPU_MAILBOX_PAYLOAD_SIZE);
		PROMISE(proto.counters.responses <= proto.counters.requests);
	}
out:
	fake_device_destroy(fake);
	return 0;
}
