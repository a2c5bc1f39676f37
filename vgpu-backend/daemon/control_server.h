/* SPDX-License-Identifier: MIT */
/*
 * control_server.h - vgpud's control socket: a UNIX stream socket (mode
 * 0660) carrying JSON requests and responses, one object per line
 * (CONTROL_API.md). Served by one thread that never blocks on a client:
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
 *    they are answered in order, at most CONTROL_REQUESTS_PER_TURN per
 *    turn of the thread (then the other clients get theirs), and none
 *    while its earlier responses still wait to be written. Requests it
 *    sends meanwhile wait in its line buffer (CONTROL_MAX_LINE), not in
 *    vgpud.
 * A request that needs the core's allocation lock (health with the
 * invariant check) waits for an eviction in progress, which is bounded by
 * the drain timeout. Refusals get a JSON error.
 */
#ifndef VGPUD_CONTROL_SERVER_H
#define VGPUD_CONTROL_SERVER_H

struct vgpud;
struct control_server;

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>
#include <sys/types.h>

#define CONTROL_MAX_CLIENTS 64
#define CONTROL_ROOT_RESERVED 1
#define CONTROL_MAX_LINE 65536
#define CONTROL_LINE_DEADLINE_MS 5000
#define CONTROL_OUTPUT_BUDGET (1u << 20)
#define CONTROL_WRITE_DEADLINE_MS 5000
#define CONTROL_REQUESTS_PER_TURN 4

struct control_server_config {
	const char *path;
	const char *group;                /* owning group name, NULL/"" = unchanged */
	const char *operator_group;       /* operators besides root, NULL/"" = none */
	uint32_t idle_timeout_ms;         /* 0 = never */
	uint32_t max_connections_per_uid; /* >= 1 */
};

/* Listen on config->path and serve d's control commands on a thread of its
 * own. 0, or a negative errno after writing what was wrong and what to do
 * into why. */
int control_server_create(struct vgpud *d, const struct control_server_config *config,
                          struct control_server **out, char *why, size_t why_len);
void control_server_destroy(struct control_server *server);

/* Who sent a request: its user, and whether it is an operator. */
struct vgpud_control_peer {
	uid_t uid;
	bool operator;
};

/* Answer one request line (the JSON text of a request) of peer (NULL: an
 * operator, for vgpud's own callers); returns the response JSON text
 * (malloc'd, no newline), never NULL unless out of memory. A tenant peer
 * gets the read-only commands about its own VMs only. In
 * control_commands.c. */
char *vgpud_control_handle(struct vgpud *d, const char *request,
                           const struct vgpud_control_peer *peer);

#endif /* VGPUD_CONTROL_SERVER_H */
