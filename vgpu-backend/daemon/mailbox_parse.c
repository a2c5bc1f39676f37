// SPDX-License-Identifier: MIT
/* mailbox_parse.c - validate one mailbox request, see mailbox.h. */
#include <endian.h>
#include <string.h>

#include "mailbox.h"

struct opcode_info {
	const char *name;
	uint16_t payload_size;
};

static const struct opcode_info opcodes[] = {
	[VGPU_OP_HELLO] = { "HELLO", sizeof(struct vgpu_hello_request) },
	[VGPU_OP_QUERY] = { "QUERY", 0 },
	[VGPU_OP_ALLOC] = { "ALLOC", sizeof(struct vgpu_alloc_request) },
	[VGPU_OP_FREE] = { "FREE", sizeof(struct vgpu_free_request) },
	[VGPU_OP_CHANNEL_CREATE] = { "CHANNEL_CREATE", sizeof(struct vgpu_channel_create_request) },
	[VGPU_OP_CHANNEL_DESTROY] = { "CHANNEL_DESTROY",
		                      sizeof(struct vgpu_channel_destroy_request) },
	[VGPU_OP_SET_PRIORITY] = { "SET_PRIORITY", sizeof(struct vgpu_set_priority_request) },
	[VGPU_OP_STATS] = { "STATS", 0 },
	[VGPU_OP_MODULE_LOAD] = { "MODULE_LOAD", sizeof(struct vgpu_module_load_request) },
	[VGPU_OP_MODULE_UNLOAD] = { "MODULE_UNLOAD", sizeof(struct vgpu_module_unload_request) },
	[VGPU_OP_CHANNEL_FAULT] = { "CHANNEL_FAULT", sizeof(struct vgpu_channel_fault_request) },
};

#define OPCODE_LIMIT (sizeof(opcodes) / sizeof(opcodes[0]))

const char *vgpu_mailbox_opcode_name(uint32_t opcode)
{
	return opcode < OPCODE_LIMIT && opcodes[opcode].name ? opcodes[opcode].name : "unknown";
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#define INVALID(text)                     \
	do {                              \
		*why = text;              \
		return VGPU_STATUS_INVALID; \
	} while (0)

static bool power_of_two(uint32_t v)
{
	return v && !(v & (v - 1));
}

enum vgpu_status vgpu_mailbox_parse(const struct vgpu_request *slot,
                                    struct vgpu_mailbox_request *out, const char **why)
{
	uint16_t opcode = le16toh(slot->opcode);
	uint16_t size = le16toh(slot->payload_size);
	const uint8_t *p = slot->payload;

	memset(out, 0, sizeof(*out));
	out->opcode = opcode;
	out->seq = le32toh(slot->seq);
	*why = "ok";

	if (opcode >= OPCODE_LIMIT || !opcodes[opcode].name) {
		*why = "unknown opcode";
		return VGPU_STATUS_UNSUPPORTED;
	}
	if (slot->reserved)
		INVALID("reserved header field is not zero");
	if (size > VGPU_MAILBOX_PAYLOAD_SIZE)
		INVALID("payload_size is larger than a slot's payload");
	if (size != opcodes[opcode].payload_size)
		INVALID("payload_size does not match the opcode's payload");

	switch (opcode) {
	case VGPU_OP_HELLO:
		out->u.hello.abi_version = get32(p);
		out->u.hello.guest_features = get32(p + 4);
		break;
	case VGPU_OP_QUERY:
	case VGPU_OP_STATS:
		break;
	case VGPU_OP_ALLOC:
		out->u.alloc.bytes = get64(p);
		out->u.alloc.priority = get32(p + 8);
		out->u.alloc.flags = get32(p + 12);
		if (!out->u.alloc.bytes)
			INVALID("ALLOC of 0 bytes");
		if (out->u.alloc.bytes > VGPU_ALLOC_MAX_BYTES)
			INVALID("ALLOC larger than VGPU_ALLOC_MAX_BYTES");
		if (out->u.alloc.priority > VGPU_PRIORITY_MAX)
			INVALID("ALLOC priority above 15");
		if (out->u.alloc.flags & ~VGPU_ALLOC_FLAGS_ALL)
			INVALID("ALLOC flags has undefined bits set");
		break;
	case VGPU_OP_FREE:
		out->u.free.handle = get32(p);
		out->u.free.reserved = get32(p + 4);
		if (out->u.free.reserved)
			INVALID("FREE reserved field is not zero");
		break;
	case VGPU_OP_SET_PRIORITY:
		out->u.set_priority.handle = get32(p);
		out->u.set_priority.priority = get32(p + 4);
		if (out->u.set_priority.priority > VGPU_PRIORITY_MAX)
			INVALID("SET_PRIORITY priority above 15");
		break;
	case VGPU_OP_CHANNEL_CREATE:
		out->u.channel_create.gpfifo_entries = get32(p);
		out->u.channel_create.reserved = get32(p + 4);
		if (out->u.channel_create.reserved)
			INVALID("CHANNEL_CREATE reserved field is not zero");
		if (out->u.channel_create.gpfifo_entries &&
		    (!power_of_two(out->u.channel_create.gpfifo_entries) ||
		     out->u.channel_create.gpfifo_entries < 2 ||
		     out->u.channel_create.gpfifo_entries > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX))
			INVALID("CHANNEL_CREATE gpfifo_entries is not 0 or a power of two in "
			        "[2, VGPU_CHANNEL_GPFIFO_ENTRIES_MAX]");
		break;
	case VGPU_OP_CHANNEL_DESTROY:
		out->u.channel_destroy.index = get32(p);
		out->u.channel_destroy.reserved = get32(p + 4);
		if (out->u.channel_destroy.reserved)
			INVALID("CHANNEL_DESTROY reserved field is not zero");
		if (out->u.channel_destroy.index >= VGPU_MAX_CHANNELS)
			INVALID("CHANNEL_DESTROY index beyond the channel windows");
		break;
	case VGPU_OP_MODULE_LOAD:
		out->u.module_load.image_va = get64(p);
		out->u.module_load.image_bytes = get64(p + 8);
		out->u.module_load.table_va = get64(p + 16);
		out->u.module_load.table_bytes = get32(p + 24);
		out->u.module_load.flags = get32(p + 28);
		if (!out->u.module_load.image_bytes ||
		    out->u.module_load.image_bytes > VGPU_MODULE_IMAGE_MAX_BYTES)
			INVALID("MODULE_LOAD image_bytes is 0 or above VGPU_MODULE_IMAGE_MAX_BYTES");
		if (out->u.module_load.table_bytes > VGPU_MODULE_TABLE_MAX_BYTES)
			INVALID("MODULE_LOAD table_bytes above VGPU_MODULE_TABLE_MAX_BYTES");
		if (out->u.module_load.flags)
			INVALID("MODULE_LOAD flags has undefined bits set");
		if (out->u.module_load.image_va + out->u.module_load.image_bytes <
		            out->u.module_load.image_va ||
		    out->u.module_load.table_va + out->u.module_load.table_bytes <
		            out->u.module_load.table_va)
			INVALID("MODULE_LOAD range wraps around");
		break;
	case VGPU_OP_MODULE_UNLOAD:
		out->u.module_unload.module = get32(p);
		out->u.module_unload.reserved = get32(p + 4);
		if (out->u.module_unload.reserved)
			INVALID("MODULE_UNLOAD reserved field is not zero");
		break;
	case VGPU_OP_CHANNEL_FAULT:
		out->u.channel_fault.index = get32(p);
		out->u.channel_fault.reserved = get32(p + 4);
		if (out->u.channel_fault.reserved)
			INVALID("CHANNEL_FAULT reserved field is not zero");
		if (out->u.channel_fault.index >= VGPU_MAX_CHANNELS)
			INVALID("CHANNEL_FAULT index beyond the channel windows");
		break;
	}
	return VGPU_STATUS_OK;
}
