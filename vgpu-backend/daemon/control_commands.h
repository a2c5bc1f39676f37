/* SPDX-License-Identifier: MIT */
/*
 * control_commands.h - the control API's commands (CONTROL_API.md): the
 * handler vgpud gives its control server (control_server.h).
 */
#ifndef VGPUD_CONTROL_COMMANDS_H
#define VGPUD_CONTROL_COMMANDS_H

#include "control_server.h"

struct vgpud;

/* Answer one request line (the JSON text of a request) of peer (NULL: an
 * operator, for vgpud's own callers); returns the response JSON text
 * (malloc'd, no newline), never NULL unless out of memory. A tenant peer
 * gets the read-only commands about its own VMs only. Any thread; a
 * command may wait for the core (CONTROL_API.md says which). */
char *vgpud_control_handle(struct vgpud *d, const char *request,
                           const struct vgpud_control_peer *peer);

/* The same as a control_handler_fn (ctx = the struct vgpud). */
char *vgpud_control_handler(void *ctx, const char *request,
                            const struct vgpud_control_peer *peer);

#endif /* VGPUD_CONTROL_COMMANDS_H */
