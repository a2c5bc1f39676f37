/* SPDX-License-Identifier: MIT */
/*
 * control_server.h - vgpud's control socket: a UNIX stream socket (mode
 * 0660) carrying JSON requests and responses, one object per line
 * (CONTROL_API.md). Served by one thread; requests are short, but one
 * that needs the core's statistics may wait for an eviction in progress.
 * A client may send several requests on one connection. At most
 * CONTROL_MAX_CLIENTS connections at once, max_connections_per_uid of one
 * peer user (SO_PEERCRED); a connection that sends nothing for
 * idle_timeout_ms is closed; a line longer than CONTROL_MAX_LINE bytes
 * gets an error and the connection is closed. Refusals get a JSON error.
 */
#ifndef VGPUD_CONTROL_SERVER_H
#define VGPUD_CONTROL_SERVER_H

struct vgpud;
struct control_server;

#include <stddef.h>
#include <stdint.h>

#define CONTROL_MAX_CLIENTS 64
#define CONTROL_MAX_LINE 65536

struct control_server_config {
	const char *path;
	const char *group;                /* owning group name, NULL/"" = unchanged */
	uint32_t idle_timeout_ms;         /* 0 = never */
	uint32_t max_connections_per_uid; /* >= 1 */
};

/* Listen on config->path and serve d's control commands on a thread of its
 * own. 0, or a negative errno after writing what was wrong and what to do
 * into why. */
int control_server_create(struct vgpud *d, const struct control_server_config *config,
                          struct control_server **out, char *why, size_t why_len);
void control_server_destroy(struct control_server *server);

/* Answer one request line (the JSON text of a request); returns the
 * response JSON text (malloc'd, no newline), never NULL unless out of
 * memory. In control_commands.c. */
char *vgpud_control_handle(struct vgpud *d, const char *request);

#endif /* VGPUD_CONTROL_SERVER_H */
