/* SPDX-License-Identifier: MIT */
/*
 * vgpu_mailbox.h - the mailbox rings as the guest drives them (internal to
 * the shared protocol code; callers use vgpu_proto.h).
 *
 * vgpu_mailbox_call is one round trip: take a seq, wait for a free request
 * slot, write the slot, publish req_head (release), ring the doorbell, then
 * consume responses until the one with our seq arrives. It checks the
 * envelope (ring indices within the ring, seq among the requests still
 * unanswered, opcode echoed, payload_size <= VGPU_MAILBOX_PAYLOAD_SIZE); the
 * payload is the caller's to check. The caller holds the proto lock.
 */
#ifndef VGPU_MAILBOX_H
#define VGPU_MAILBOX_H

#include "vgpu_proto.h"

/* Adopt the device's ring indices (see vgpu_proto_init). */
int vgpu_mailbox_attach(struct vgpu_proto *proto);

/*
 * One request/response round trip. On 0, *resp has its header fields in CPU
 * byte order and the raw payload.
 */
int vgpu_mailbox_call(struct vgpu_proto *proto, const struct vgpu_proto_raw_request *request,
		      struct vgpu_response *resp);

#endif /* VGPU_MAILBOX_H */
