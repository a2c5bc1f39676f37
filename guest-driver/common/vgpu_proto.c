// SPDX-License-Identifier: MIT
/*
 * vgpu_proto.c - the mailbox requests of the vGPU ABI, guest side: encode
 * each request, decode and check each response (see vgpu_proto.h).
 * Compiled in the kernel and in userspace.
 */
#include "vgpu_proto.h"

#include "vgpu_mailbox.h"

/*
 * One GPFIFO entry (struct vgpu_gpfifo_entry of vgpu/abi/commands.h,
 * which is userspace-only; the runtime asserts that they agree).
 */
#define PROTO_GPFIFO_ENTRY_BYTES 16u
/* Largest page an ALLOC may be rounded up to. */
#define PROTO_ALLOC_MAX_ROUNDING (2u << 20)
/* QUERY page sizes the ABI defines: 4 KiB, 64 KiB, 2 MiB. */
#define PROTO_PAGE_SIZE_BITS 0x7u

#define PROTO_PAGE_MASK ((u64)VGPU_PAGE_SIZE - 1)

static bool proto_is_power_of_two(u64 value)
{
	return value && !(value & (value - 1));
}

static u64 proto_round_up(u64 value, u64 align)
{
	return (value + align - 1) & ~(align - 1);
}

static void proto_lock(struct vgpu_proto *proto)
{
	if (proto->lock)
		proto->lock->lock(proto->lock_ctx);
}

static void proto_unlock(struct vgpu_proto *proto)
{
	if (proto->lock)
		proto->lock->unlock(proto->lock_ctx);
}

static void proto_assert_held(struct vgpu_proto *proto)
{
	if (proto->lock && proto->lock->assert_held)
		proto->lock->assert_held(proto->lock_ctx);
}

int vgpu_proto_init(struct vgpu_proto *proto, const struct vgpu_proto_config *config)
{
	u32 magic, version, status;
	int ret;

	if (!proto || !config || !config->ops || !config->ops->reg_read ||
	    !config->ops->reg_write || !config->ops->wait_irq || !config->mailbox ||
	    ((uintptr_t)config->mailbox & 7) || config->timeout_ms < 0 ||
	    (config->lock && (!config->lock->lock || !config->lock->unlock)))
		return -EINVAL;

	vgpu_memset(proto, 0, sizeof(*proto));
	proto->ops = config->ops;
	proto->ctx = config->ctx;
	proto->mailbox = config->mailbox;
	proto->timeout_ms = config->timeout_ms ? config->timeout_ms : VGPU_PROTO_DEFAULT_TIMEOUT_MS;
	proto->lock = config->lock;
	proto->lock_ctx = config->lock_ctx;
	proto->next_seq = config->first_seq ? config->first_seq : 1;

	magic = proto->ops->reg_read(proto->ctx, VGPU_REG_MAGIC);
	if (magic != VGPU_MAGIC)
		return -ENODEV;
	version = proto->ops->reg_read(proto->ctx, VGPU_REG_ABI_VERSION);
	if (version >> 16 != VGPU_ABI_VERSION_MAJOR)
		return version == 0xffffffffu ? -ENODEV : -EPROTONOSUPPORT;
	status = proto->ops->reg_read(proto->ctx, VGPU_REG_STATUS);
	if (status == 0xffffffffu || (status & VGPU_STATUS_BACKEND_GONE))
		return -ENODEV;
	if (!(status & VGPU_STATUS_READY))
		return -EAGAIN;

	proto_lock(proto);
	ret = vgpu_mailbox_attach(proto);
	proto_unlock(proto);
	return ret;
}

int vgpu_proto_call_raw(struct vgpu_proto *proto, const struct vgpu_proto_raw_request *request,
			struct vgpu_response *resp)
{
	int ret;

	if (!request || !resp || request->payload_len > VGPU_MAILBOX_PAYLOAD_SIZE ||
	    (request->payload_len && !request->payload))
		return -EINVAL;
	proto_lock(proto);
	ret = vgpu_mailbox_call(proto, request, resp);
	proto_unlock(proto);
	return ret;
}

/*
 * One typed request under the lock: send payload, map the status, and on
 * VGPU_STATUS_OK copy at least out_size payload bytes to out (raw, the
 * caller converts byte order). Payloads may be longer than we know (minor
 * versions append fields); shorter is a protocol error.
 */
static int proto_call_locked(struct vgpu_proto *proto, u16 opcode, const void *payload,
			     u32 payload_size, void *out, u32 out_size)
{
	struct vgpu_proto_raw_request request = {
		.opcode = opcode,
		.payload_size = (u16)payload_size,
		.payload = payload,
		.payload_len = payload_size,
	};
	struct vgpu_response resp;
	int ret;

	proto_assert_held(proto);
	if (!proto->ready && opcode != VGPU_OP_HELLO)
		return -ENOTCONN;
	ret = vgpu_mailbox_call(proto, &request, &resp);
	if (ret)
		return ret;
	if (!vgpu_status_is_known(resp.status)) {
		proto->counters.malformed_responses++;
		return -EPROTO;
	}
	if (resp.status != VGPU_STATUS_OK) {
		proto->counters.error_statuses++;
		return vgpu_status_to_errno(resp.status);
	}
	if (resp.payload_size < out_size) {
		proto->counters.malformed_responses++;
		return -EPROTO;
	}
	if (out_size)
		vgpu_memcpy(out, resp.payload, out_size);
	return 0;
}

static int proto_call(struct vgpu_proto *proto, u16 opcode, const void *payload,
		      u32 payload_size, void *out, u32 out_size)
{
	int ret;

	proto_lock(proto);
	ret = proto_call_locked(proto, opcode, payload, payload_size, out, out_size);
	proto_unlock(proto);
	return ret;
}

/* A payload the device sent but the ABI forbids. */
static int proto_reject(struct vgpu_proto *proto)
{
	proto_lock(proto);
	proto->counters.malformed_responses++;
	proto_unlock(proto);
	return -EPROTO;
}

int vgpu_proto_hello(struct vgpu_proto *proto, u32 wanted_features,
		     struct vgpu_hello_response *out)
{
	struct vgpu_hello_request request = {
		.abi_version = vgpu_cpu_to_le32(VGPU_ABI_VERSION),
		.guest_features = vgpu_cpu_to_le32(wanted_features),
	};
	struct vgpu_hello_response hello;
	int ret;

	proto_lock(proto);
	ret = proto_call_locked(proto, VGPU_OP_HELLO, &request, sizeof(request), &hello,
				sizeof(hello));
	if (ret)
		goto out;
	hello.abi_version = vgpu_le32_to_cpu(hello.abi_version);
	hello.features = vgpu_le32_to_cpu(hello.features);
	hello.max_channels = vgpu_le32_to_cpu(hello.max_channels);
	hello.reserved = vgpu_le32_to_cpu(hello.reserved);
	if (hello.abi_version >> 16 != VGPU_ABI_VERSION_MAJOR ||
	    (hello.features & ~wanted_features) || hello.max_channels > VGPU_MAX_CHANNELS) {
		proto->counters.malformed_responses++;
		ret = -EPROTO;
		goto out;
	}
	proto->hello = hello;
	proto->ready = true;
	if (out)
		*out = hello;
out:
	proto_unlock(proto);
	return ret;
}

int vgpu_proto_query(struct vgpu_proto *proto, struct vgpu_query_response *out)
{
	struct vgpu_query_response query;
	int ret;

	if (!out)
		return -EINVAL;
	ret = proto_call(proto, VGPU_OP_QUERY, NULL, 0, &query, sizeof(query));
	if (ret)
		return ret;
	query.vram_share_bytes = vgpu_le64_to_cpu(query.vram_share_bytes);
	query.cap_bytes = vgpu_le64_to_cpu(query.cap_bytes);
	query.chunk_bytes = vgpu_le64_to_cpu(query.chunk_bytes);
	query.vram_total_bytes = vgpu_le64_to_cpu(query.vram_total_bytes);
	query.page_size_mask = vgpu_le32_to_cpu(query.page_size_mask);
	query.reserved = vgpu_le32_to_cpu(query.reserved);
	if (!proto_is_power_of_two(query.chunk_bytes) || query.chunk_bytes < VGPU_PAGE_SIZE ||
	    !query.vram_total_bytes || query.vram_share_bytes > query.vram_total_bytes ||
	    !query.page_size_mask || (query.page_size_mask & ~PROTO_PAGE_SIZE_BITS))
		return proto_reject(proto);
	*out = query;
	return 0;
}

int vgpu_proto_alloc(struct vgpu_proto *proto, u64 bytes, u32 priority,
		     u32 flags, struct vgpu_alloc_response *out)
{
	struct vgpu_alloc_request request = {
		.bytes = vgpu_cpu_to_le64(bytes),
		.priority = vgpu_cpu_to_le32(priority),
		.flags = vgpu_cpu_to_le32(flags),
	};
	struct vgpu_alloc_response alloc;
	u64 wanted;
	int ret;

	if (!out || !bytes || bytes > VGPU_ALLOC_MAX_BYTES ||
	    priority > VGPU_PRIORITY_MAX || (flags & ~VGPU_ALLOC_FLAGS_ALL))
		return -EINVAL;
	ret = proto_call(proto, VGPU_OP_ALLOC, &request, sizeof(request), &alloc, sizeof(alloc));
	if (ret)
		return ret;
	alloc.gpu_va = vgpu_le64_to_cpu(alloc.gpu_va);
	alloc.bytes = vgpu_le64_to_cpu(alloc.bytes);
	alloc.handle = vgpu_le32_to_cpu(alloc.handle);
	alloc.reserved = vgpu_le32_to_cpu(alloc.reserved);
	wanted = proto_round_up(bytes, VGPU_PAGE_SIZE);
	if (alloc.bytes < wanted ||
	    alloc.bytes > proto_round_up(wanted, PROTO_ALLOC_MAX_ROUNDING) ||
	    (alloc.bytes & PROTO_PAGE_MASK) || (alloc.gpu_va & PROTO_PAGE_MASK) ||
	    alloc.gpu_va + alloc.bytes < alloc.gpu_va)
		return proto_reject(proto);
	*out = alloc;
	return 0;
}

int vgpu_proto_free(struct vgpu_proto *proto, u32 handle)
{
	struct vgpu_free_request request = {
		.handle = vgpu_cpu_to_le32(handle),
	};

	return proto_call(proto, VGPU_OP_FREE, &request, sizeof(request), NULL, 0);
}

int vgpu_proto_set_priority(struct vgpu_proto *proto, u32 handle, u32 priority)
{
	struct vgpu_set_priority_request request = {
		.handle = vgpu_cpu_to_le32(handle),
		.priority = vgpu_cpu_to_le32(priority),
	};

	if (priority > VGPU_PRIORITY_MAX)
		return -EINVAL;
	return proto_call(proto, VGPU_OP_SET_PRIORITY, &request, sizeof(request), NULL, 0);
}

int vgpu_proto_channel_destroy(struct vgpu_proto *proto, u32 index)
{
	struct vgpu_channel_destroy_request request = {
		.index = vgpu_cpu_to_le32(index),
	};

	if (index >= VGPU_MAX_CHANNELS)
		return -EINVAL;
	return proto_call(proto, VGPU_OP_CHANNEL_DESTROY, &request, sizeof(request), NULL, 0);
}

/* [offset, offset + bytes) inside a channel window. */
static bool proto_in_window(u64 offset, u64 bytes)
{
	return bytes && offset < VGPU_CHANNEL_WINDOW_STRIDE &&
	       bytes <= VGPU_CHANNEL_WINDOW_STRIDE - offset;
}

static bool proto_disjoint(u64 a, u64 a_bytes, u64 b, u64 b_bytes)
{
	return a + a_bytes <= b || b + b_bytes <= a;
}

/* Everything CHANNEL_CREATE returns must describe a usable window. */
static bool channel_response_ok(const struct vgpu_proto *proto,
				const struct vgpu_channel_create_response *ch,
				u32 wanted_entries)
{
	u64 control_bytes = VGPU_PAGE_SIZE;
	u64 gpfifo_bytes = proto_round_up((u64)ch->gpfifo_entries * PROTO_GPFIFO_ENTRY_BYTES,
					  VGPU_PAGE_SIZE);
	u64 areas[4][2] = {
		{ ch->control_offset, control_bytes },
		{ ch->gpfifo_offset, gpfifo_bytes },
		{ ch->notifier_offset, ch->notifier_bytes },
		{ ch->pushbuf_offset, ch->pushbuf_bytes },
	};
	unsigned int i, j;

	if (ch->index >= proto->hello.max_channels)
		return false;
	if (!proto_is_power_of_two(ch->gpfifo_entries) || ch->gpfifo_entries < 2 ||
	    (wanted_entries && ch->gpfifo_entries != wanted_entries))
		return false;
	if ((ch->control_offset & PROTO_PAGE_MASK) || (ch->gpfifo_offset & PROTO_PAGE_MASK) ||
	    (ch->notifier_offset & 7) || (ch->notifier_bytes & 7) || (ch->pushbuf_offset & 7) ||
	    (ch->pushbuf_bytes & 7))
		return false;
	for (i = 0; i < 4; i++) {
		if (!proto_in_window(areas[i][0], areas[i][1]))
			return false;
		for (j = 0; j < i; j++)
			if (!proto_disjoint(areas[i][0], areas[i][1], areas[j][0], areas[j][1]))
				return false;
	}
	if ((ch->notifier_gpu_va & 7) || (ch->pushbuf_gpu_va & 7) ||
	    ch->notifier_gpu_va + ch->notifier_bytes < ch->notifier_gpu_va ||
	    ch->pushbuf_gpu_va + ch->pushbuf_bytes < ch->pushbuf_gpu_va ||
	    !proto_disjoint(ch->notifier_gpu_va, ch->notifier_bytes, ch->pushbuf_gpu_va,
			    ch->pushbuf_bytes))
		return false;
	return true;
}

int vgpu_proto_channel_create(struct vgpu_proto *proto, u32 gpfifo_entries,
			      struct vgpu_channel_create_response *out)
{
	struct vgpu_channel_create_request request = {
		.gpfifo_entries = vgpu_cpu_to_le32(gpfifo_entries),
	};
	struct vgpu_channel_create_response ch;
	int ret;

	if (!out)
		return -EINVAL;
	if (gpfifo_entries && (!proto_is_power_of_two(gpfifo_entries) || gpfifo_entries < 2 ||
			       gpfifo_entries > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX))
		return -EINVAL;
	ret = proto_call(proto, VGPU_OP_CHANNEL_CREATE, &request, sizeof(request), &ch, sizeof(ch));
	if (ret)
		return ret;
	ch.index = vgpu_le32_to_cpu(ch.index);
	ch.gpfifo_entries = vgpu_le32_to_cpu(ch.gpfifo_entries);
	ch.control_offset = vgpu_le32_to_cpu(ch.control_offset);
	ch.gpfifo_offset = vgpu_le32_to_cpu(ch.gpfifo_offset);
	ch.notifier_offset = vgpu_le32_to_cpu(ch.notifier_offset);
	ch.pushbuf_offset = vgpu_le32_to_cpu(ch.pushbuf_offset);
	ch.pushbuf_bytes = vgpu_le32_to_cpu(ch.pushbuf_bytes);
	ch.notifier_bytes = vgpu_le32_to_cpu(ch.notifier_bytes);
	ch.notifier_gpu_va = vgpu_le64_to_cpu(ch.notifier_gpu_va);
	ch.pushbuf_gpu_va = vgpu_le64_to_cpu(ch.pushbuf_gpu_va);
	if (!channel_response_ok(proto, &ch, gpfifo_entries))
		return proto_reject(proto);
	*out = ch;
	return 0;
}

int vgpu_proto_stats(struct vgpu_proto *proto, struct vgpu_stats_response *out)
{
	struct vgpu_stats_response stats;
	int ret;

	if (!out)
		return -EINVAL;
	ret = proto_call(proto, VGPU_OP_STATS, NULL, 0, &stats, sizeof(stats));
	if (ret)
		return ret;
	stats.allocated_bytes = vgpu_le64_to_cpu(stats.allocated_bytes);
	stats.resident_bytes = vgpu_le64_to_cpu(stats.resident_bytes);
	stats.evicted_bytes = vgpu_le64_to_cpu(stats.evicted_bytes);
	stats.fair_share_bytes = vgpu_le64_to_cpu(stats.fair_share_bytes);
	stats.evictions = vgpu_le32_to_cpu(stats.evictions);
	stats.returns = vgpu_le32_to_cpu(stats.returns);
	stats.reserved = vgpu_le64_to_cpu(stats.reserved);
	*out = stats;
	return 0;
}

/* A module response's fields in CPU order, from its raw payload. */
static void module_response_decode(struct vgpu_module_load_response *r,
				   const struct vgpu_response *resp)
{
	vgpu_memcpy(r, resp->payload, sizeof(*r));
	r->module = vgpu_le32_to_cpu(r->module);
	r->function_count = vgpu_le32_to_cpu(r->function_count);
	r->variable_count = vgpu_le32_to_cpu(r->variable_count);
	r->table_bytes = vgpu_le32_to_cpu(r->table_bytes);
	r->variables_va = vgpu_le64_to_cpu(r->variables_va);
	r->variables_bytes = vgpu_le64_to_cpu(r->variables_bytes);
}

static bool module_response_ok(const struct vgpu_module_load_request *req,
			       const struct vgpu_module_load_response *r)
{
	if (r->table_bytes < sizeof(struct vgpu_module_table) ||
	    r->table_bytes > req->table_bytes)
		return false;
	if (!r->variables_bytes)
		return true;
	return !(r->variables_va & PROTO_PAGE_MASK) &&
	       r->variables_va + r->variables_bytes > r->variables_va;
}

int vgpu_proto_module_load(struct vgpu_proto *proto, const struct vgpu_module_load_request *req,
			   struct vgpu_module_load_response *out)
{
	struct vgpu_module_load_request request;
	struct vgpu_proto_raw_request raw = {
		.opcode = VGPU_OP_MODULE_LOAD,
		.payload_size = sizeof(request),
		.payload = &request,
		.payload_len = sizeof(request),
	};
	struct vgpu_response resp;
	int ret;

	if (!req || !out || !req->image_bytes || req->image_bytes > VGPU_MODULE_IMAGE_MAX_BYTES ||
	    !req->table_bytes || req->table_bytes > VGPU_MODULE_TABLE_MAX_BYTES || req->flags ||
	    req->image_va + req->image_bytes < req->image_va)
		return -EINVAL;
	request.image_va = vgpu_cpu_to_le64(req->image_va);
	request.image_bytes = vgpu_cpu_to_le64(req->image_bytes);
	request.table_va = vgpu_cpu_to_le64(req->table_va);
	request.table_bytes = vgpu_cpu_to_le32(req->table_bytes);
	request.flags = 0;
	vgpu_memset(out, 0, sizeof(*out));

	proto_lock(proto);
	ret = proto->ready ? vgpu_mailbox_call(proto, &raw, &resp) : -ENOTCONN;
	if (!ret && !vgpu_status_is_known(resp.status)) {
		proto->counters.malformed_responses++;
		ret = -EPROTO;
	} else if (!ret && resp.status != VGPU_STATUS_OK) {
		proto->counters.error_statuses++;
		ret = vgpu_status_to_errno(resp.status);
		/* LIMIT may say how much room the table needs. */
		if (ret == -ENOSPC && resp.payload_size >= sizeof(*out)) {
			struct vgpu_module_load_response r;

			module_response_decode(&r, &resp);
			if (r.table_bytes > req->table_bytes &&
			    r.table_bytes <= VGPU_MODULE_TABLE_MAX_BYTES)
				out->table_bytes = r.table_bytes;
		}
	} else if (!ret && resp.payload_size < sizeof(*out)) {
		proto->counters.malformed_responses++;
		ret = -EPROTO;
	}
	proto_unlock(proto);
	if (ret)
		return ret;
	module_response_decode(out, &resp);
	if (!module_response_ok(req, out)) {
		vgpu_memset(out, 0, sizeof(*out));
		return proto_reject(proto);
	}
	return 0;
}

int vgpu_proto_module_unload(struct vgpu_proto *proto, u32 module)
{
	struct vgpu_module_unload_request request = {
		.module = vgpu_cpu_to_le32(module),
	};

	return proto_call(proto, VGPU_OP_MODULE_UNLOAD, &request, sizeof(request), NULL, 0);
}
