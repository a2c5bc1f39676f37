/* SPDX-License-Identifier: MIT */
/*
 * control_server.h - vgpud's control socket: a UNIX stream socket (mode
 * 0660) carrying JSON requests and responses, one object per line
 * (CONTROL_API.md). Served on vgpud's event loop (sd-event), which never
 * blocks on a client; the requests themselves are answered by the
 * server's one worker thread, since some wait for the core:
 *
 *  - Authority: the peer's credentials (SO_PEERCRED, SO_PEERGROUPS) decide
 *    its role once, at accept. Root, vgpud's own user and members of
 *    operator_group are operators: every command. Anyone else is a
 *    tenant: read-only commands about the VMs its own user attached
 *    (health without the invariant check, list/status, stats), and an
 *    error naming the rule for everything else.
 *  - Connections: at most CONTROL_MAX_CLIENTS at once, the last
 *    CONTROL_ROOT_RESERVED of them for root only; max_connections_per_uid
 *    of one peer user (root's included). A connection that sends nothing
 *    for idle_timeout_ms is closed, and so is one whose request line is
 *    not complete CONTROL_LINE_DEADLINE_MS after its first byte (a
 *    trickle cannot hold a slot); a line longer than CONTROL_MAX_LINE
 *    bytes gets an error and the connection is closed.
 *  - Output: responses are queued per connection and written as the
 *    socket takes them; at most CONTROL_OUTPUT_BUDGET bytes may wait, and
 *    what waits must be taken within CONTROL_WRITE_DEADLINE_MS, or the
 *    client (one that does not read) is dropped.
 *  - Pipelining: a client may send several requests on one connection;
 *    they are answered in order, one at a time: a connection has at most
 *    one request with the worker, which takes the connections' requests
 *    in the order they came (so one client's pipeline never starves
 *    another), and none while its earlier responses still wait to be
 *    written. Requests it sends meanwhile wait in its line buffer
 *    (CONTROL_MAX_LINE), not in vgpud.
 * A request that needs the core's allocation lock (health with the
 * invariant check) waits for an eviction in progress, which is bounded by
 * the drain timeout; it holds up the worker (later requests), never the
 * loop (signals, the other sockets, deadlines). Refusals get a JSON error.
 *
 * Threads: create, destroy and the loop's callbacks run on the loop's
 * thread (or, create and destroy, while the loop is not running); the
 * handler runs on the worker only.
 */
#ifndef VGPUD_CONTROL_SERVER_H
#define VGPUD_CONTROL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "vgpu/error.h"

struct control_server;

#define CONTROL_MAX_CLIENTS 64
#define CONTROL_ROOT_RESERVED 1
#define CONTROL_MAX_LINE 65536
#define CONTROL_LINE_DEADLINE_MS 5000
#define CONTROL_OUTPUT_BUDGET (1u << 20)
#define CONTROL_WRITE_DEADLINE_MS 5000

/* Who sent a request: its user, and whether it is an operator. */
struct vgpud_control_peer {
	uid_t uid;
	bool operator;
};

/* Answer one request line (JSON text, no newline) of peer: the response
 * JSON text (malloc'd, no newline), or NULL (out of memory: the
 * connection is closed). Runs on the server's worker thread. */
typedef char *(*control_handler_fn)(void *ctx, const char *request,
                                    const struct vgpud_control_peer *peer);

struct control_server_config {
	const char *path;
	const char *group;                /* owning group name, NULL/"" = unchanged */
	const char *operator_group;       /* operators besides root, NULL/"" = none */
	uint32_t idle_timeout_ms;         /* 0 = never */
	uint32_t max_connections_per_uid; /* >= 1 */
	control_handler_fn handler;
	void *handler_ctx;
};

/* Listen on config->path and serve requests with config->handler, the
 * socket's descriptors on loop. 0, or a negative errno after writing what
 * was wrong and what to do into error. */
int control_server_create(sd_event *loop, const struct control_server_config *config,
                          struct control_server **out, struct vgpu_error *error);
/* Close every connection and the socket (removing its file) after the
 * worker finished its request in progress; NULL is fine. Not while the
 * loop runs a callback of it. */
void control_server_destroy(struct control_server *server);

#endif /* VGPUD_CONTROL_SERVER_H */
