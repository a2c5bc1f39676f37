/* SPDX-License-Identifier: MIT */
/*
 * local_socket.h - sending and receiving one message of the local vGPU
 * protocol (vgpu/abi/local_protocol.h) with its descriptors. Shared by vgpud's
 * local transport and the client library; nothing here knows which side it
 * runs on.
 *
 * Promises
 *  - A message is sent as one datagram (SOCK_SEQPACKET) with MSG_NOSIGNAL;
 *    descriptors go as SCM_RIGHTS in the same datagram.
 *  - A received message is complete or rejected: truncated data or
 *    descriptors, a size that does not match the datagram, or more than
 *    VGPU_LOCAL_MAX_FDS descriptors are -EPROTO, and every descriptor that
 *    arrived is closed. Received descriptors are close-on-exec.
 *  - Nothing blocks longer than the timeout given (-1: no limit).
 */
#ifndef VGPU_LOCAL_SOCKET_H
#define VGPU_LOCAL_SOCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/abi/local_protocol.h"

struct vgpu_local_msg {
	struct vgpu_local_header header;
	union {
		uint8_t bytes[VGPU_LOCAL_MSG_MAX - sizeof(struct vgpu_local_header)];
		struct vgpu_local_attach attach;
		struct vgpu_local_import import;
		struct vgpu_local_import_reply import_reply;
		struct vgpu_local_export export_request;
		struct vgpu_local_export_reply export_reply;
		struct vgpu_local_attach_reply attach_reply;
		struct vgpu_local_reg reg;
		struct vgpu_local_status status;
		struct vgpu_local_region region;
		struct vgpu_local_window_block block;
		struct vgpu_local_window_map window_map;
	} payload;
	int fds[VGPU_LOCAL_MAX_FDS];
	unsigned nfds;
};

/* Send one message. 0, -EPIPE when the peer is gone, -ETIMEDOUT when the
 * socket stayed full for timeout_ms, or another negative errno. */
int vgpu_local_send(int sock, uint32_t type, uint32_t seq, uint32_t flags, const void *payload,
                    uint32_t size, const int *fds, unsigned nfds, int timeout_ms);

/* Receive one message into *msg. 0, -EPIPE at end of file, -ETIMEDOUT,
 * -EPROTO for a malformed datagram, or another negative errno. On success
 * the caller owns msg->fds[0..nfds). */
int vgpu_local_recv(int sock, struct vgpu_local_msg *msg, int timeout_ms);

/* Check that msg is type (as a reply or not) with exactly payload_size bytes
 * and nfds descriptors. 0 or -EPROTO. */
int vgpu_local_msg_expect(const struct vgpu_local_msg *msg, uint32_t type, bool reply,
                          uint32_t payload_size, unsigned nfds);

/* Close every descriptor msg carries and forget them. */
void vgpu_local_msg_close_fds(struct vgpu_local_msg *msg);

/* Wait until fd is readable (or hung up) for up to timeout_ms. 1 readable,
 * 0 timeout, negative errno. */
int vgpu_local_wait_readable(int fd, int timeout_ms);

/* Name of a message type, for logs. */
const char *vgpu_local_msg_name(uint32_t type);

#endif /* VGPU_LOCAL_SOCKET_H */
