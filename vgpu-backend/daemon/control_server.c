// SPDX-License-Identifier: MIT
/* control_server.c - the control socket's thread, see control_server.h. */
#include "control_server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "unix_listen.h"

#define WRITE_TIMEOUT_MS 2000

struct control_client {
	int fd;     /* -1: free */
	uid_t uid;  /* the peer's */
	int64_t last_ms; /* when it last sent something */
	char *buf;  /* CONTROL_MAX_LINE + 1 */
	size_t len;
};

struct control_server {
	struct vgpud *daemon;
	char path[108];
	int listen_fd;
	int stop_fd;
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid;
	pthread_t thread;
	struct control_client clients[CONTROL_MAX_CLIENTS];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void client_close(struct control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

static bool write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			data += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (poll(&pfd, 1, WRITE_TIMEOUT_MS) > 0)
				continue;
		}
		return false;
	}
	return true;
}

static bool respond(struct control_server *server, struct control_client *c, const char *line)
{
	char *response = vgpud_control_handle(server->daemon, line);
	bool ok;

	if (!response)
		return false;
	ok = write_all(c->fd, response, strlen(response)) && write_all(c->fd, "\n", 1);
	free(response);
	return ok;
}

/* Read what is there; answer every complete line. false: close. */
static bool client_read(struct control_server *server, struct control_client *c)
{
	ssize_t n = recv(c->fd, c->buf + c->len, CONTROL_MAX_LINE - c->len, MSG_DONTWAIT);
	char *newline;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
	if (n == 0)
		return false;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while ((newline = memchr(c->buf, '\n', c->len))) {
		size_t used = (size_t)(newline - c->buf) + 1;

		*newline = '\0';
		if (newline > c->buf && !respond(server, c, c->buf))
			return false;
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->buf[c->len] = '\0';
	}
	if (c->len == CONTROL_MAX_LINE) {
		const char *err = "{\"ok\":false,\"error\":\"request line longer than 65536 bytes; "
		                  "send one JSON object per line\"}\n";

		write_all(c->fd, err, strlen(err));
		return false;
	}
	return true;
}

/* Send a one-line JSON error and close fd. */
static void refuse(int fd, const char *line)
{
	write_all(fd, line, strlen(line));
	close(fd);
}

/* A free slot for a new connection of uid, or -1 (*why says which limit). */
static int find_slot(struct control_server *server, uid_t uid, const char **why)
{
	int i, slot = -1;
	unsigned mine = 0;

	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (server->clients[i].fd < 0) {
			if (slot < 0)
				slot = i;
		} else if (server->clients[i].uid == uid) {
			mine++;
		}
	}
	if (mine >= server->max_connections_per_uid) {
		*why = "{\"ok\":false,\"error\":\"too many control connections of this user "
		       "(control_max_connections_per_uid); close one or retry later\"}\n";
		return -1;
	}
	if (slot < 0)
		*why = "{\"ok\":false,\"error\":\"too many control connections; retry later\"}\n";
	return slot;
}

static void accept_clients(struct control_server *server)
{
	for (;;) {
		int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC), i;
		struct ucred cred;
		socklen_t len = sizeof(cred);
		const char *why = NULL;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			refuse(fd, "{\"ok\":false,\"error\":\"no peer credentials\"}\n");
			continue;
		}
		i = find_slot(server, cred.uid, &why);
		if (i < 0) {
			log_debug("control socket: refusing a connection of user %u (pid %d)",
			          (unsigned)cred.uid, (int)cred.pid);
			refuse(fd, why);
			continue;
		}
		server->clients[i].fd = fd;
		server->clients[i].uid = cred.uid;
		server->clients[i].last_ms = now_ms();
		server->clients[i].len = 0;
	}
}

/* Close connections silent for idle_timeout_ms; the poll timeout until the
 * next one would be (-1: none). */
static int close_idle(struct control_server *server)
{
	int64_t now = now_ms(), next = -1;

	if (!server->idle_timeout_ms)
		return -1;
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		struct control_client *c = &server->clients[i];
		int64_t left;

		if (c->fd < 0)
			continue;
		left = c->last_ms + server->idle_timeout_ms - now;
		if (left <= 0) {
			log_debug("control socket: closing a connection idle for %u ms",
			          server->idle_timeout_ms);
			client_close(c);
		} else if (next < 0 || left < next) {
			next = left;
		}
	}
	return (int)next;
}

static void *control_main(void *arg)
{
	struct control_server *server = arg;

	for (;;) {
		struct pollfd pfd[CONTROL_MAX_CLIENTS + 2];
		int map[CONTROL_MAX_CLIENTS + 2];
		int timeout = close_idle(server);
		nfds_t n = 0, i;

		pfd[n] = (struct pollfd){ .fd = server->stop_fd, .events = POLLIN };
		map[n++] = -1;
		pfd[n] = (struct pollfd){ .fd = server->listen_fd, .events = POLLIN };
		map[n++] = -1;
		for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			if (server->clients[i].fd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = server->clients[i].fd, .events = POLLIN };
			map[n++] = (int)i;
		}
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			log_error("control socket: poll failed: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			accept_clients(server);
		for (i = 2; i < n; i++) {
			struct control_client *c = &server->clients[map[i]];

			if (!pfd[i].revents)
				continue;
			c->last_ms = now_ms();
			if (!client_read(server, c))
				client_close(c);
		}
	}
	return NULL;
}

int control_server_create(struct vgpud *d, const struct control_server_config *config,
                          struct control_server **out, char *why, size_t why_len)
{
	const char *path = config->path, *group = config->group;
	struct control_server *server = calloc(1, sizeof(*server));
	int i, err;

	if (!server) {
		snprintf(why, why_len, "vgpud is out of memory");
		return -ENOMEM;
	}
	server->daemon = d;
	server->stop_fd = -1;
	server->idle_timeout_ms = config->idle_timeout_ms;
	server->max_connections_per_uid = config->max_connections_per_uid;
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		server->clients[i].fd = -1;
	server->listen_fd = vgpud_listen_unix(path, SOCK_STREAM, group, "control socket", why,
	                                      why_len);
	if (server->listen_fd < 0) {
		err = server->listen_fd;
		free(server);
		return err;
	}
	snprintf(server->path, sizeof(server->path), "%s", path);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		server->clients[i].buf = malloc(CONTROL_MAX_LINE + 1);
		if (!server->clients[i].buf) {
			err = -ENOMEM;
			goto fail;
		}
	}
	server->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (server->stop_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&server->thread, NULL, control_main, server);
	if (err)
		goto fail;
	*out = server;
	return 0;
fail:
	snprintf(why, why_len, "cannot start the control socket: %s", strerror(-err));
	if (server->stop_fd >= 0)
		close(server->stop_fd);
	close(server->listen_fd);
	vgpud_unlink_unix(server->path);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++)
		free(server->clients[i].buf);
	free(server);
	return err;
}

void control_server_destroy(struct control_server *server)
{
	uint64_t one = 1;
	int i;

	if (!server)
		return;
	if (write(server->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_warn("control socket: cannot stop its thread: %s", strerror(errno));
	pthread_join(server->thread, NULL);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		client_close(&server->clients[i]);
		free(server->clients[i].buf);
	}
	close(server->listen_fd);
	close(server->stop_fd);
	vgpud_unlink_unix(server->path);
	free(server);
}
