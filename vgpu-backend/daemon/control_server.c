// SPDX-License-Identifier: MIT
/* control_server.c - the control socket's thread, see control_server.h. */
#include "control_server.h"

#include <errno.h>
#include <grp.h>
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

struct control_conn {
	int fd;     /* -1: free */
	struct vgpud_control_peer peer;
	int64_t last_ms;  /* when it last sent something */
	int64_t line_ms;  /* when the incomplete line began (-1: none) */
	char *buf;  /* CONTROL_MAX_LINE + 1 */
	size_t len;
	char *out;  /* responses not yet written */
	size_t out_len, out_cap;
	int64_t out_ms;   /* when out became non-empty */
	bool closing;     /* close once out is written */
};

struct control_server {
	struct vgpud *daemon;
	char path[108];
	int listen_fd;
	int stop_fd;
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid;
	bool has_operator_gid;
	gid_t operator_gid;
	pthread_t thread;
	struct control_conn clients[CONTROL_MAX_CLIENTS];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void client_close(struct control_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
	c->out_len = 0;
	c->closing = false;
	free(c->out);
	c->out = NULL;
	c->out_cap = 0;
}

/* Queue data for c; false when its output budget would be exceeded. */
static bool queue_output(struct control_conn *c, const char *data, size_t len)
{
	if (c->out_len + len > CONTROL_OUTPUT_BUDGET)
		return false;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *grown;

		while (cap < c->out_len + len)
			cap *= 2;
		grown = realloc(c->out, cap);
		if (!grown)
			return false;
		c->out = grown;
		c->out_cap = cap;
	}
	if (!c->out_len)
		c->out_ms = now_ms();
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return true;
}

/* Write what the socket takes now. false: the peer is gone. */
static bool flush_output(struct control_conn *c)
{
	size_t done = 0;

	while (done < c->out_len) {
		ssize_t n = send(c->fd, c->out + done, c->out_len - done,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		return false;
	}
	memmove(c->out, c->out + done, c->out_len - done);
	c->out_len -= done;
	if (c->out_len && done)
		c->out_ms = now_ms(); /* it reads: the deadline is for the rest */
	return true;
}

static bool respond(struct control_server *server, struct control_conn *c, const char *line)
{
	char *response = vgpud_control_handle(server->daemon, line, &c->peer);
	bool ok;

	if (!response)
		return false;
	ok = queue_output(c, response, strlen(response)) && queue_output(c, "\n", 1);
	free(response);
	if (!ok)
		log_debug("control socket: dropping a client of user %u that does not read its "
		          "responses (more than %u bytes waiting)", (unsigned)c->peer.uid,
		          CONTROL_OUTPUT_BUDGET);
	return ok;
}

/* Answer up to CONTROL_REQUESTS_PER_TURN complete lines of c. false: close. */
static bool client_answer(struct control_server *server, struct control_conn *c)
{
	char *newline;
	unsigned answered = 0;

	while (!c->out_len && answered < CONTROL_REQUESTS_PER_TURN &&
	       (newline = memchr(c->buf, '\n', c->len))) {
		size_t used = (size_t)(newline - c->buf) + 1;

		*newline = '\0';
		if (newline > c->buf) {
			if (!respond(server, c, c->buf))
				return false;
			answered++;
		}
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->buf[c->len] = '\0';
		if (!flush_output(c))
			return false;
	}
	c->line_ms = c->len && !memchr(c->buf, '\n', c->len) ? (c->line_ms >= 0 ? c->line_ms
	                                                                        : now_ms())
	                                                     : -1;
	return true;
}

/* Complete lines wait in c's buffer. */
static bool has_lines(const struct control_conn *c)
{
	return c->len && memchr(c->buf, '\n', c->len);
}

/* Read what is there (only when no complete line waits). false: close. */
static bool client_read(struct control_server *server, struct control_conn *c)
{
	ssize_t n;

	if (has_lines(c))
		return client_answer(server, c);
	n = recv(c->fd, c->buf + c->len, CONTROL_MAX_LINE - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
	if (n == 0)
		return false;
	if (c->len == 0)
		c->line_ms = now_ms();
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if (!has_lines(c) && c->len == CONTROL_MAX_LINE) {
		const char *err = "{\"ok\":false,\"error\":\"request line longer than 65536 bytes; "
		                  "send one JSON object per line\"}\n";

		c->len = 0;
		c->closing = true;
		return queue_output(c, err, strlen(err)) && flush_output(c);
	}
	return client_answer(server, c);
}

/* Send a one-line JSON error (what the socket takes at once) and close fd. */
static void refuse(int fd, const char *line)
{
	ssize_t n = send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)n;
	close(fd);
}

/* A free slot for a new connection of uid, or -1 (*why says which limit).
 * The last CONTROL_ROOT_RESERVED free slots are root's. */
static int find_slot(struct control_server *server, uid_t uid, const char **why)
{
	int i, slot = -1;
	unsigned mine = 0, free_slots = 0;

	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		if (server->clients[i].fd < 0) {
			free_slots++;
			if (slot < 0)
				slot = i;
		} else if (server->clients[i].peer.uid == uid) {
			mine++;
		}
	}
	if (mine >= server->max_connections_per_uid) {
		*why = "{\"ok\":false,\"error\":\"too many control connections of this user "
		       "(control_max_connections_per_uid); close one or retry later\"}\n";
		return -1;
	}
	if (slot >= 0 && uid != 0 && free_slots <= CONTROL_ROOT_RESERVED)
		slot = -1;
	if (slot < 0)
		*why = "{\"ok\":false,\"error\":\"too many control connections; retry later\"}\n";
	return slot;
}

/* Root, vgpud's own user, or a member of the operator group. */
static bool is_operator(const struct control_server *server, int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	if (!server->has_operator_gid)
		return false;
	if (cred->gid == server->operator_gid)
		return true;
	/* the peer process's supplementary groups as they were at connect */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == server->operator_gid)
			return true;
	return false;
}

static void accept_clients(struct control_server *server)
{
	for (;;) {
		int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), i;
		struct ucred cred;
		socklen_t len = sizeof(cred);
		const char *why = NULL;
		struct control_conn *c;

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
		c = &server->clients[i];
		c->fd = fd;
		c->peer.uid = cred.uid;
		c->peer.operator = is_operator(server, fd, &cred);
		c->last_ms = now_ms();
		c->line_ms = -1;
		c->len = 0;
		c->out_len = 0;
		c->closing = false;
	}
}

/* Close connections past a deadline (idle, line, output); the poll timeout
 * until the next deadline (-1: none). */
static int close_expired(struct control_server *server)
{
	static const char *const why[3] = { "idle", "a request line not completed in time",
		                            "its responses not read in time" };
	int64_t now = now_ms(), next = -1;

	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		struct control_conn *c = &server->clients[i];
		bool on[3];
		int64_t deadline[3];

		if (c->fd < 0)
			continue;
		on[0] = server->idle_timeout_ms && !c->out_len;
		deadline[0] = c->last_ms + server->idle_timeout_ms;
		on[1] = c->line_ms >= 0;
		deadline[1] = c->line_ms + CONTROL_LINE_DEADLINE_MS;
		on[2] = c->out_len != 0;
		deadline[2] = c->out_ms + CONTROL_WRITE_DEADLINE_MS;
		for (int k = 0; k < 3; k++) {
			if (!on[k])
				continue;
			if (deadline[k] <= now) {
				log_debug("control socket: closing a connection of user %u: %s",
				          (unsigned)c->peer.uid, why[k]);
				client_close(c);
				break;
			}
			if (next < 0 || deadline[k] - now < next)
				next = deadline[k] - now;
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
		int timeout = close_expired(server);
		nfds_t n = 0, i;

		pfd[n] = (struct pollfd){ .fd = server->stop_fd, .events = POLLIN };
		map[n++] = -1;
		pfd[n] = (struct pollfd){ .fd = server->listen_fd, .events = POLLIN };
		map[n++] = -1;
		for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			struct control_conn *c = &server->clients[i];
			short events = 0;

			if (c->fd < 0)
				continue;
			if (c->out_len)
				events |= POLLOUT;
			else if (has_lines(c))
				timeout = 0; /* more to answer: another turn at once */
			else if (!c->closing)
				events |= POLLIN;
			pfd[n] = (struct pollfd){ .fd = c->fd, .events = events };
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
			struct control_conn *c = &server->clients[map[i]];
			bool ok = true;

			if (c->fd < 0)
				continue;
			if (pfd[i].revents & (POLLERR | POLLNVAL)) {
				client_close(c);
				continue;
			}
			if (c->out_len) {
				if (pfd[i].revents & (POLLOUT | POLLHUP))
					ok = flush_output(c);
				if (ok && !c->out_len && c->closing)
					ok = false;
			} else if (has_lines(c)) {
				ok = client_answer(server, c);
			} else if (pfd[i].revents) {
				c->last_ms = now_ms();
				ok = !c->closing && client_read(server, c);
			}
			if (!ok || (c->closing && !c->out_len))
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
	if (config->operator_group && config->operator_group[0]) {
		struct group *g = getgrnam(config->operator_group);

		if (!g) {
			snprintf(why, why_len, "operator_group '%s' is not a group of this host; "
			         "create it or set another", config->operator_group);
			free(server);
			return -ENOENT;
		}
		server->has_operator_gid = true;
		server->operator_gid = g->gr_gid;
	}
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
