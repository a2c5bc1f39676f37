/* SPDX-License-Identifier: MIT */
/*
 * control_server.h - vgpud's control socket: a UNIX stream socket (mode
 * 0660) carrying JSON requests and responses, one object per line
 * (CONTROL_API.md). Served by one thread; requests are short, but one
 * that needs the core's statistics may wait for an eviction in progress.
 * A client may send several requests on one connection. At most
 * CONTROL_MAX_CLIENTS connections at once; a line longer than
 * CONTROL_MAX_LINE bytes gets an error and the connection is closed.
 */
#ifndef VGPUD_CONTROL_SERVER_H
#define VGPUD_CONTROL_SERVER_H

struct vgpud;
struct control_server;

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_MAX_LINE 65536

int control_server_create(struct vgpud *d, const char *path, const char *group,
                          struct control_server **out);
void control_server_destroy(struct control_server *server);

/* Answer one request line (the JSON text of a request); returns the
 * response JSON text (malloc'd, no newline), never NULL unless out of
 * memory. In control_commands.c. */
char *vgpud_control_handle(struct vgpud *d, const char *request);

#endif /* VGPUD_CONTROL_SERVER_H */
