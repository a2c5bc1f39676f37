/* SPDX-License-Identifier: MIT */
/*
 * unix_listen.h - a listening UNIX socket file for vgpud's sockets.
 *
 * Creates the parent directory if it is missing (one level, mode 0755, as
 * systemd's RuntimeDirectory would), replaces a stale socket file left by a
 * crashed vgpud but refuses when a live server answers at the path, and
 * sets the file to mode 0660 (and the given group), so only root and that
 * group can connect.
 */
#ifndef VGPUD_UNIX_LISTEN_H
#define VGPUD_UNIX_LISTEN_H

#include <stddef.h>

#include "vgpu/error.h"

/* type: SOCK_SEQPACKET or SOCK_STREAM; what: "tenant socket", for messages.
 * Returns the descriptor (close-on-exec, non-blocking), or a negative errno
 * after writing what was wrong and what to do into error. A mode or group
 * that cannot be set is logged as a warning. */
int vgpud_listen_unix(const char *path, int type, const char *group, const char *what,
                      struct vgpu_error *error);

/* Remove the socket file (at shutdown). */
void vgpud_unlink_unix(const char *path);

#endif /* VGPUD_UNIX_LISTEN_H */
