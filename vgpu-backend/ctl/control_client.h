/* SPDX-License-Identifier: MIT */
/*
 * control_client.h - vgpuctl's side of vgpud's control socket
 * (vgpu-backend/daemon/CONTROL_API.md): one JSON object per line each way.
 */
#ifndef VGPUCTL_CONTROL_CLIENT_H
#define VGPUCTL_CONTROL_CLIENT_H

#include <json-c/json.h>

#define VGPUCTL_DEFAULT_SOCKET "/run/vgpud/control.sock"

struct control_client {
	int fd;
	const char *path;
	char *buf;
	size_t len, cap;
};

/* The socket to use: path if given, else $VGPUD_CONTROL_SOCKET, else the
 * default. */
const char *control_socket_path(const char *path);

/* Connect. -errno when nobody listens there. */
int control_connect(struct control_client *c, const char *path);
void control_close(struct control_client *c);

/* Send request (consumed) and wait up to timeout_ms for the response.
 * Returns the response object (caller puts it), or NULL with *err set to a
 * negative errno (-EPIPE: vgpud closed the connection, -ETIMEDOUT,
 * -EPROTO: not JSON). */
struct json_object *control_request(struct control_client *c, struct json_object *request,
                                    int timeout_ms, int *err);

#endif /* VGPUCTL_CONTROL_CLIENT_H */
