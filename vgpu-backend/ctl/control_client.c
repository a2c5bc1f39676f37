// SPDX-License-Identifier: MIT
/* control_client.c - JSON lines over vgpud's control socket. */
#include "control_client.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_RESPONSE (16u << 20)

const char *control_socket_path(const char *path)
{
	const char *env;

	if (path && path[0])
		return path;
	env = getenv("VGPUD_CONTROL_SOCKET");
	return env && env[0] ? env : VGPUCTL_DEFAULT_SOCKET;
}

int control_connect(struct control_client *c, const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int err;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->path = path;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		close(c->fd);
		c->fd = -1;
		return err;
	}
	return 0;
}

void control_close(struct control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

static int send_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until a newline; returns the line (in c->buf, NUL-terminated). */
static int read_line(struct control_client *c, int timeout_ms, size_t *line_len)
{
	for (;;) {
		char *newline = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t n;

		if (newline) {
			*newline = '\0';
			*line_len = (size_t)(newline - c->buf);
			return 0;
		}
		if (c->len + 4096 > c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 65536;
			char *buf;

			if (cap > MAX_RESPONSE)
				return -EPROTO;
			buf = realloc(c->buf, cap + 1);
			if (!buf)
				return -ENOMEM;
			c->buf = buf;
			c->cap = cap;
		}
		n = poll(&pfd, 1, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		c->len += (size_t)n;
	}
}

struct json_object *control_request(struct control_client *c, struct json_object *request,
                                    int timeout_ms, int *err)
{
	const char *text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
	struct json_object *response;
	size_t line_len = 0;

	*err = send_all(c->fd, text, strlen(text));
	if (!*err)
		*err = send_all(c->fd, "\n", 1);
	json_object_put(request);
	if (*err)
		return NULL;
	*err = read_line(c, timeout_ms, &line_len);
	if (*err)
		return NULL;
	response = json_tokener_parse(c->buf);
	memmove(c->buf, c->buf + line_len + 1, c->len - line_len - 1);
	c->len -= line_len + 1;
	if (!response || !json_object_is_type(response, json_type_object)) {
		json_object_put(response);
		*err = -EPROTO;
		return NULL;
	}
	return response;
}
