// SPDX-License-Identifier: MIT
/* fuzz_mailbox.c - a hostile guest against the mailbox server, see fuzz_mailbox.h. */
#include "fuzz_mailbox.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle_table.h"
#include "mailbox.h"

#define CHECK(cond)                                                                \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_mailbox: %s:%d: broken promise: %s\n", \
			        __FILE__, __LINE__, #cond);                          \
			abort();                                                    \
		}                                                                   \
	} while (0)

struct model {
	bool hello;
	struct handle_table handles;
	uint64_t next_core_handle;
	uint32_t channels; /* bit mask of live channel windows */
	/* what the server must answer next, to check order */
	uint32_t expected_seq[VGPU_MAILBOX_ENTRIES];
	uint32_t answered;
};

static uint8_t memory[VGPU_MAILBOX_SIZE] __attribute__((aligned(4096)));

static void handler(void *ctx, const struct vgpu_request *request, struct vgpu_response *response)
{
	struct model *m = ctx;
	struct vgpu_mailbox_request req;
	const char *why = NULL;
	enum vgpu_status status = vgpu_mailbox_parse(request, &req, &why);
	uint64_t core;

	CHECK(response->seq == request->seq && response->opcode == request->opcode);
	CHECK(why != NULL);
	m->answered++;
	if (status != VGPU_STATUS_OK) {
		CHECK(status == VGPU_STATUS_INVALID || status == VGPU_STATUS_UNSUPPORTED);
		response->status = status;
		return;
	}
	/* what the parser accepted must be in range */
	CHECK(request->reserved == 0);
	CHECK(request->payload_size <= VGPU_MAILBOX_PAYLOAD_SIZE);
	if (!m->hello && req.opcode != VGPU_OP_HELLO) {
		response->status = VGPU_STATUS_NOT_READY;
		return;
	}
	response->status = VGPU_STATUS_OK;
	switch (req.opcode) {
	case VGPU_OP_HELLO:
		m->hello = req.u.hello.abi_version >> 16 == VGPU_ABI_VERSION_MAJOR;
		if (!m->hello)
			response->status = VGPU_STATUS_VERSION;
		break;
	case VGPU_OP_ALLOC: {
		uint32_t handle;

		CHECK(req.u.alloc.bytes > 0 && req.u.alloc.bytes <= VGPU_ALLOC_MAX_BYTES);
		CHECK(req.u.alloc.priority <= VGPU_PRIORITY_MAX && !req.u.alloc.flags);
		if (m->handles.live >= 512 ||
		    handle_table_add(&m->handles, ++m->next_core_handle << 8, &handle)) {
			response->status = VGPU_STATUS_LIMIT;
			break;
		}
		CHECK(handle != 0);
		CHECK(handle_table_lookup(&m->handles, handle, &core) == 0);
		CHECK(core == m->next_core_handle << 8);
		response->payload_size = 4;
		memcpy(response->payload, &handle, 4);
		break;
	}
	case VGPU_OP_FREE:
		CHECK(!req.u.free.reserved);
		if (handle_table_lookup(&m->handles, req.u.free.handle, &core)) {
			response->status = VGPU_STATUS_NOT_FOUND;
			break;
		}
		handle_table_remove(&m->handles, req.u.free.handle);
		CHECK(handle_table_lookup(&m->handles, req.u.free.handle, &core) == -ENOENT);
		break;
	case VGPU_OP_SET_PRIORITY:
		CHECK(req.u.set_priority.priority <= VGPU_PRIORITY_MAX);
		if (handle_table_lookup(&m->handles, req.u.set_priority.handle, &core))
			response->status = VGPU_STATUS_NOT_FOUND;
		break;
	case VGPU_OP_CHANNEL_CREATE: {
		uint32_t e = req.u.channel_create.gpfifo_entries;

		CHECK(!req.u.channel_create.reserved);
		CHECK(e == 0 || (e >= 2 && e <= VGPU_CHANNEL_GPFIFO_ENTRIES_MAX && !(e & (e - 1))));
		if (m->channels == 0xffff)
			response->status = VGPU_STATUS_LIMIT;
		else
			m->channels |= m->channels + 1; /* lowest free index */
		break;
	}
	case VGPU_OP_CHANNEL_DESTROY:
		CHECK(req.u.channel_destroy.index < VGPU_MAX_CHANNELS);
		CHECK(!req.u.channel_destroy.reserved);
		if (!(m->channels & (1u << req.u.channel_destroy.index)))
			response->status = VGPU_STATUS_NOT_FOUND;
		m->channels &= ~(1u << req.u.channel_destroy.index);
		break;
	default:
		CHECK(req.opcode == VGPU_OP_QUERY || req.opcode == VGPU_OP_STATS);
		break;
	}
}

static uint32_t take32(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	size_t n = (size_t)(end - *p) < 4 ? (size_t)(end - *p) : 4;

	memcpy(&v, *p, n);
	*p += n;
	return v;
}

static struct vgpu_mailbox_header *header(void)
{
	return (struct vgpu_mailbox_header *)memory;
}

unsigned fuzz_mailbox_run(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct vgpu_mailbox_server server;
	struct model m;
	uint32_t guest_head = 0;
	unsigned total = 0;

	memset(memory, 0, sizeof(memory));
	memset(&m, 0, sizeof(m));
	handle_table_init(&m.handles);
	vgpu_mailbox_server_init(&server, memory);
	while (p < end) {
		uint8_t op = *p++;
		struct vgpu_mailbox_run run;
		uint32_t before_tail = server.req_tail, before_head = server.resp_head;
		uint32_t published;

		switch (op % 6) {
		case 0: { /* a request slot, as is */
			uint8_t *slot = memory + VGPU_MAILBOX_REQ_RING_OFFSET +
			                (size_t)(guest_head % VGPU_MAILBOX_ENTRIES) *
			                        VGPU_MAILBOX_SLOT_SIZE;
			size_t n = (size_t)(end - p) < VGPU_MAILBOX_SLOT_SIZE ? (size_t)(end - p)
			                                                       : VGPU_MAILBOX_SLOT_SIZE;

			memset(slot, 0, VGPU_MAILBOX_SLOT_SIZE);
			memcpy(slot, p, n);
			p += n;
			guest_head++;
			header()->req_head = guest_head;
			break;
		}
		case 1: /* a well-formed-looking request: opcode, size, payload word */
		{
			struct vgpu_request r = { 0 };
			uint32_t w = take32(&p, end);

			r.opcode = (uint16_t)(w & 0xf);
			r.payload_size = (uint16_t)((w >> 4) & 0x3f);
			r.seq = w;
			w = take32(&p, end);
			memcpy(r.payload, &w, 4);
			memcpy(memory + VGPU_MAILBOX_REQ_RING_OFFSET +
			               (size_t)(guest_head % VGPU_MAILBOX_ENTRIES) *
			                       VGPU_MAILBOX_SLOT_SIZE,
			       &r, sizeof(r));
			guest_head++;
			header()->req_head = guest_head;
			break;
		}
		case 2: /* any req_head */
			header()->req_head = take32(&p, end);
			break;
		case 3: /* any resp_tail, or any header word */
			if (p < end && (*p & 1)) {
				p++;
				header()->resp_tail = take32(&p, end);
			} else {
				uint32_t word = p < end ? *p++ % 16 : 0;

				((uint32_t *)memory)[word] = take32(&p, end);
			}
			break;
		case 4: /* the guest consumes every response */
			header()->resp_tail = server.resp_head;
			break;
		case 5: /* doorbell with a budget */
		{
			unsigned budget = p < end ? *p++ : 1;

			vgpu_mailbox_server_run(&server, budget, handler, &m, &run);
			total += run.answered;
			CHECK(run.answered <= budget);
			CHECK(server.req_tail - before_tail == run.answered);
			CHECK(server.resp_head - before_head == run.answered);
			CHECK(!(run.ring_error && run.more));
			published = header()->resp_head;
			CHECK(!run.answered || published == server.resp_head);
			/* responses carry the seqs of the consumed requests, in order */
			for (uint32_t i = before_head; i != server.resp_head; i++) {
				const struct vgpu_response *resp =
					(const void *)(memory + VGPU_MAILBOX_RESP_RING_OFFSET +
					               (size_t)(i % VGPU_MAILBOX_ENTRIES) *
					                       VGPU_MAILBOX_SLOT_SIZE);
				const struct vgpu_request *req =
					(const void *)(memory + VGPU_MAILBOX_REQ_RING_OFFSET +
					               (size_t)((before_tail + (i - before_head)) %
					                        VGPU_MAILBOX_ENTRIES) *
					                       VGPU_MAILBOX_SLOT_SIZE);

				CHECK(resp->seq == req->seq);
				CHECK(resp->status <= VGPU_STATUS_BUSY);
				CHECK(resp->payload_size <= VGPU_MAILBOX_PAYLOAD_SIZE);
			}
			break;
		}
		}
	}
	handle_table_fini(&m.handles);
	return total;
}
