// SPDX-License-Identifier: MIT
/* mailbox_ring.c - the mailbox ring server, see mailbox.h. */
#include <endian.h>
#include <string.h>

#include "mailbox.h"

#define ENTRIES VGPU_MAILBOX_ENTRIES

static struct vgpu_mailbox_header *header_of(struct vgpu_mailbox_server *server)
{
	return (struct vgpu_mailbox_header *)(server->memory + VGPU_MAILBOX_OFFSET);
}

/* Shared words are accessed atomically: the guest may write them at any
 * time, and a torn or stale value must only ever be a wrong value. */
static uint32_t load_shared(uint32_t *word)
{
	return le32toh(__atomic_load_n(word, __ATOMIC_ACQUIRE));
}

static void store_shared(uint32_t *word, uint32_t value)
{
	__atomic_store_n(word, htole32(value), __ATOMIC_RELEASE);
}

static void copy_from_shared(void *dst, const uint8_t *src, size_t bytes)
{
	uint64_t *d = dst;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		d[i] = __atomic_load_n((const uint64_t *)(src + 8 * i), __ATOMIC_RELAXED);
}

static void copy_to_shared(uint8_t *dst, const void *src, size_t bytes)
{
	const uint64_t *s = src;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		__atomic_store_n((uint64_t *)(dst + 8 * i), s[i], __ATOMIC_RELAXED);
}

void vgpu_mailbox_server_init(struct vgpu_mailbox_server *server, void *memory)
{
	struct vgpu_mailbox_header *header;

	memset(server, 0, sizeof(*server));
	server->memory = memory;
	header = header_of(server);
	store_shared(&header->req_head, 0);
	store_shared(&header->req_tail, 0);
	store_shared(&header->resp_head, 0);
	store_shared(&header->resp_tail, 0);
	store_shared(&header->entries, ENTRIES);
}

void vgpu_mailbox_server_run(struct vgpu_mailbox_server *server, unsigned budget,
                             vgpu_mailbox_handler_fn handler, void *ctx,
                             struct vgpu_mailbox_run *out)
{
	struct vgpu_mailbox_header *header = header_of(server);
	uint8_t *requests = server->memory + VGPU_MAILBOX_REQ_RING_OFFSET;
	uint8_t *responses = server->memory + VGPU_MAILBOX_RESP_RING_OFFSET;
	uint32_t req_head = load_shared(&header->req_head);
	uint32_t pending = req_head - server->req_tail;

	memset(out, 0, sizeof(*out));
	/* Whatever the guest wrote over them, the backend's words say the
	 * truth again after every doorbell: a confused guest can resync. */
	if (load_shared(&header->req_tail) != server->req_tail)
		store_shared(&header->req_tail, server->req_tail);
	if (load_shared(&header->resp_head) != server->resp_head)
		store_shared(&header->resp_head, server->resp_head);
	if (load_shared(&header->entries) != ENTRIES)
		store_shared(&header->entries, ENTRIES);
	if (pending > ENTRIES) {
		out->ring_error = true;
		server->ring_errors++;
		return;
	}
	while (pending && out->answered < budget) {
		uint32_t resp_tail = load_shared(&header->resp_tail);
		uint32_t outstanding = server->resp_head - resp_tail;
		struct vgpu_request request;
		struct vgpu_response response;

		if (outstanding > ENTRIES) {
			out->ring_error = true;
			server->ring_errors++;
			break;
		}
		if (outstanding == ENTRIES) {
			out->response_full = true;
			break;
		}
		copy_from_shared(&request,
		                 requests + (size_t)(server->req_tail % ENTRIES) *
		                                    VGPU_MAILBOX_SLOT_SIZE,
		                 sizeof(request));
		memset(&response, 0, sizeof(response));
		response.opcode = request.opcode;
		response.seq = request.seq;
		handler(ctx, &request, &response);
		if (response.payload_size > VGPU_MAILBOX_PAYLOAD_SIZE)
			response.payload_size = VGPU_MAILBOX_PAYLOAD_SIZE;
		copy_to_shared(responses + (size_t)(server->resp_head % ENTRIES) *
		                                   VGPU_MAILBOX_SLOT_SIZE,
		               &response, sizeof(response));
		server->resp_head++;
		server->req_tail++;
		/* Response slot before resp_head; consumption before req_tail. */
		store_shared(&header->resp_head, server->resp_head);
		store_shared(&header->req_tail, server->req_tail);
		server->answered++;
		out->answered++;
		pending--;
	}
	if (pending && out->answered >= budget && !out->ring_error)
		out->more = true;
}
