/* SPDX-License-Identifier: MIT */
/*
 * mailbox.h - the backend side of a vGPU's mailbox (device_abi.h): the ring
 * server that consumes request slots and produces response slots in memory
 * the guest shares, and the parser that validates one request.
 *
 * Neither part trusts the guest:
 *  - The server keeps req_tail and resp_head to itself and only publishes
 *    them (again at every run, so a guest that scribbled over them can
 *    resynchronise); req_head and resp_tail, the only values it reads back,
 *    are checked against the ring size before use. Each slot is copied out of
 *    shared memory once and only the copy is looked at, so a guest changing
 *    a slot while it is read cannot make a field valid for the check and
 *    different for the use.
 *  - One call serves at most `budget` requests, and never more than the
 *    response ring has room for, so nothing a guest writes makes it loop.
 *  - The parser checks every field: opcode, payload_size (exactly the
 *    opcode's payload), the header's reserved word, reserved payload words,
 *    flags, sizes and ranges. Whatever it accepts is safe to hand to the
 *    request handlers; what it rejects gets a status and a reason.
 *
 * Both are pure (no threads, no I/O), for the fuzzer and the unit tests.
 */
#ifndef VGPUD_MAILBOX_H
#define VGPUD_MAILBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/abi/device_abi.h"

/* ---------------------------------------------------------------- parser */

struct vgpu_mailbox_request {
	uint16_t opcode; /* enum vgpu_opcode, known */
	uint32_t seq;
	union {
		struct vgpu_hello_request hello;
		struct vgpu_alloc_request alloc;
		struct vgpu_free_request free;
		struct vgpu_set_priority_request set_priority;
		struct vgpu_channel_create_request channel_create;
		struct vgpu_channel_destroy_request channel_destroy;
		struct vgpu_module_load_request module_load;
		struct vgpu_module_unload_request module_unload;
		struct vgpu_channel_fault_request channel_fault;
	} u; /* host byte order */
};

/*
 * Validate the request slot *slot (a private copy) and decode it into *out.
 * Returns VGPU_STATUS_OK, VGPU_STATUS_UNSUPPORTED (unknown opcode) or
 * VGPU_STATUS_INVALID, with *why (a static string) saying what was wrong.
 */
enum vgpu_status vgpu_mailbox_parse(const struct vgpu_request *slot,
                                    struct vgpu_mailbox_request *out, const char **why);

/* Name of an opcode for logs ("ALLOC"), "unknown" otherwise. */
const char *vgpu_mailbox_opcode_name(uint32_t opcode);

/* ---------------------------------------------------------------- server */

struct vgpu_mailbox_server {
	uint8_t *memory;    /* VGPU_MAILBOX_SIZE bytes shared with the guest */
	uint32_t req_tail;  /* next request to consume: the truth, not the header */
	uint32_t resp_head; /* next response slot to fill */
	uint64_t answered;      /* requests answered */
	uint64_t ring_errors;   /* runs that found insane indices */
};

/* Take over memory (zeroed): write the header (entries, indices 0). */
void vgpu_mailbox_server_init(struct vgpu_mailbox_server *server, void *memory);

/*
 * Fill *response for *request (a private copy). opcode and seq are already
 * set to the request's; the handler sets status, payload_size and payload.
 */
typedef void (*vgpu_mailbox_handler_fn)(void *ctx, const struct vgpu_request *request,
                                        struct vgpu_response *response);

struct vgpu_mailbox_run {
	unsigned answered; /* responses written in this run */
	bool more;         /* budget exhausted with requests and room left */
	bool ring_error;   /* req_head or resp_tail was insane: nothing consumed */
	bool response_full; /* stopped because the response ring is full */
};

/* Serve up to budget queued requests in order. */
void vgpu_mailbox_server_run(struct vgpu_mailbox_server *server, unsigned budget,
                             vgpu_mailbox_handler_fn handler, void *ctx,
                             struct vgpu_mailbox_run *out);

#endif /* VGPUD_MAILBOX_H */
