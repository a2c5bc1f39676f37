// SPDX-License-Identifier: MIT
/* control_server.c - the control socket on vgpud's event loop, and its
 * worker; see control_server.h. */
#include "control_server.h"

#include <errno.h>
#include <grp.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/error.h"

#include "log.h"
#include "unix_listen.h"

struct control_conn {
	struct control_server *server;
	int fd;     /* -1: free */
	sd_event_source *io;
	uint64_t generation; /* counts the slot's connections (worker answers) */
	struct vgpud_control_peer peer;
	int64_t last_ms;  /* when it last sent something */
	int64_t line_ms;  /* when the incomplete line began (-1: none) */
	char *buf;  /* CONTROL_MAX_LINE + 1 */
	size_t len;
	char *out;  /* responses not yet written */
	size_t out_len, out_cap;
	int64_t out_ms;   /* when out became non-empty */
	bool closing;     /* close once out is written */
	bool busy;        /* a request of it is with the worker */
};

/* A request for the worker, and then its answer. */
struct control_job {
	struct control_job *next;
	unsigned slot;
	uint64_t generation;
	struct vgpud_control_peer peer;
	char *request;
	char *response;
};

struct control_server {
	control_handler_fn handler;
	void *handler_ctx;
	sd_event *loop;
	sd_event_source *listen_source, *timer, *answered_source;
	char path[108];
	int listen_fd;
	int answered_fd; /* eventfd: the worker answered a job */
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid;
	bool has_operator_gid;
	gid_t operator_gid;
	/* the worker and its queues (lock) */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	struct control_job *todo, **todo_tail;
	struct control_job *answered;
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
	c->io = sd_event_source_disable_unref(c->io);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->busy = false;
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

/* Hand one request line of c to the worker. false: out of memory. */
static bool submit(struct control_server *server, struct control_conn *c, const char *line)
{
	struct control_job *job = calloc(1, sizeof(*job));

	if (!job || !(job->request = strdup(line))) {
		free(job);
		return false;
	}
	job->slot = (unsigned)(c - server->clients);
	job->generation = c->generation;
	job->peer = c->peer;
	pthread_mutex_lock(&server->lock);
	*server->todo_tail = job;
	server->todo_tail = &job->next;
	pthread_cond_signal(&server->wake);
	pthread_mutex_unlock(&server->lock);
	c->busy = true;
	return true;
}

/* Give c's next complete line to the worker, unless one is there already
 * or responses wait to be written. false: close. */
static bool client_answer(struct control_server *server, struct control_conn *c)
{
	char *newline;

	while (!c->out_len && !c->busy && (newline = memchr(c->buf, '\n', c->len))) {
		size_t used = (size_t)(newline - c->buf) + 1;
		bool ok = true;

		*newline = '\0';
		if (newline > c->buf)
			ok = submit(server, c, c->buf);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->buf[c->len] = '\0';
		if (!ok)
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

static int on_client(sd_event_source *source, int fd, uint32_t revents, void *userdata);

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
		if (sd_event_add_io(server->loop, &c->io, fd, EPOLLIN, on_client, c) < 0) {
			refuse(fd, "{\"ok\":false,\"error\":\"vgpud is out of memory\"}\n");
			continue;
		}
		c->fd = fd;
		c->generation++;
		c->peer.uid = cred.uid;
		c->peer.operator = is_operator(server, fd, &cred);
		c->last_ms = now_ms();
		c->line_ms = -1;
		c->len = 0;
		c->out_len = 0;
		c->closing = false;
		c->busy = false;
	}
}

/* Close connections past a deadline (idle, line, output); the time until
 * the next deadline in ms (-1: none). A connection whose request is with
 * the worker is not idle. */
static int64_t close_expired(struct control_server *server)
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
		on[0] = server->idle_timeout_ms && !c->out_len && !c->busy;
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
	return next;
}

/* The loop's view of c: write while output waits, nothing while its
 * request is with the worker or it is closing, else read. */
static void client_watch(struct control_conn *c)
{
	uint32_t events = c->out_len ? EPOLLOUT : c->busy || c->closing ? 0 : EPOLLIN;

	if (events)
		sd_event_source_set_io_events(c->io, events);
	sd_event_source_set_enabled(c->io, events ? SD_EVENT_ON : SD_EVENT_OFF);
}

/* After anything happened: close what expired, arm the timer for the
 * next deadline. */
static void rearm(struct control_server *server)
{
	int64_t next = close_expired(server);

	if (next < 0) {
		sd_event_source_set_enabled(server->timer, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time_relative(server->timer, (uint64_t)next * 1000 + 1);
	sd_event_source_set_enabled(server->timer, SD_EVENT_ONESHOT);
}

/* Answer what waits of c, and watch it again; or close it (ok false, or
 * closing with nothing left to write). */
static void client_continue(struct control_server *server, struct control_conn *c, bool ok)
{
	if (ok && !c->out_len && !c->closing)
		ok = client_answer(server, c);
	if (!ok || (c->closing && !c->out_len))
		client_close(c);
	else
		client_watch(c);
}

static int on_client(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct control_conn *c = userdata;
	struct control_server *server = c->server;
	bool ok = true;

	(void)fd;
	if (revents & EPOLLERR) {
		client_close(c);
	} else {
		if (c->out_len) {
			if (revents & (EPOLLOUT | EPOLLHUP))
				ok = flush_output(c);
		} else if (!c->busy && revents) {
			c->last_ms = now_ms();
			ok = !c->closing && client_read(server, c);
		}
		client_continue(server, c, ok);
	}
	rearm(server);
	return 0;
}

static int on_listen(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct control_server *server = userdata;

	(void)source, (void)fd, (void)revents;
	accept_clients(server);
	rearm(server);
	return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
	(void)source, (void)usec;
	rearm(userdata);
	return 0;
}

/* The worker's answers: queue them on their connections (if those are
 * still the ones that asked), write, and go on. */
static int on_answered(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct control_server *server = userdata;
	struct control_job *job;
	uint64_t count;

	(void)source, (void)revents;
	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warn("control socket: reading the worker's eventfd: %s", strerror(errno));
	pthread_mutex_lock(&server->lock);
	job = server->answered;
	server->answered = NULL;
	pthread_mutex_unlock(&server->lock);
	while (job) {
		struct control_job *next = job->next;
		struct control_conn *c = &server->clients[job->slot];

		if (c->fd >= 0 && c->generation == job->generation) {
			bool ok = job->response && queue_output(c, job->response,
			                                        strlen(job->response)) &&
			          queue_output(c, "\n", 1);

			c->busy = false;
			c->last_ms = now_ms();
			if (!ok)
				log_debug("control socket: dropping a client of user %u that does "
				          "not read its responses (more than %u bytes waiting)",
				          (unsigned)c->peer.uid, CONTROL_OUTPUT_BUDGET);
			client_continue(server, c, ok && flush_output(c));
		}
		free(job->request);
		free(job->response);
		free(job);
		job = next;
	}
	rearm(server);
	return 0;
}

/* The worker: answers requests in the order they came. */
static void *control_worker(void *arg)
{
	struct control_server *server = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&server->lock);
	while (!server->stopping) {
		struct control_job *job = server->todo;

		if (!job) {
			pthread_cond_wait(&server->wake, &server->lock);
			continue;
		}
		server->todo = job->next;
		if (!server->todo)
			server->todo_tail = &server->todo;
		pthread_mutex_unlock(&server->lock);
		job->response = server->handler(server->handler_ctx, job->request, &job->peer);
		pthread_mutex_lock(&server->lock);
		job->next = server->answered;
		server->answered = job;
		if (write(server->answered_fd, &one, sizeof(one)) != sizeof(one))
			log_warn("control socket: waking the loop: %s", strerror(errno));
	}
	pthread_mutex_unlock(&server->lock);
	return NULL;
}

static void free_jobs(struct control_job *job)
{
	while (job) {
		struct control_job *next = job->next;

		free(job->request);
		free(job->response);
		free(job);
		job = next;
	}
}

static int operator_gid(struct control_server *server, const char *name, struct vgpu_error *error)
{
	struct group *g;

	if (!name || !name[0])
		return 0;
	g = getgrnam(name);
	if (!g)
		return vgpu_error_set(error, -ENOENT,
		                      "operator_group '%s' is not a group of this host; create it "
		                      "or set another", name);
	server->has_operator_gid = true;
	server->operator_gid = g->gr_gid;
	return 0;
}

/* The loop's sources and the worker. */
static int start(struct control_server *server)
{
	int err;

	server->answered_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (server->answered_fd < 0)
		return -errno;
	err = sd_event_add_io(server->loop, &server->listen_source, server->listen_fd, EPOLLIN,
	                      on_listen, server);
	if (!err)
		err = sd_event_add_io(server->loop, &server->answered_source, server->answered_fd,
		                      EPOLLIN, on_answered, server);
	if (!err)
		err = sd_event_add_time_relative(server->loop, &server->timer, CLOCK_MONOTONIC,
		                                 UINT64_MAX / 2, 1000, on_timer, server);
	if (!err)
		err = sd_event_source_set_enabled(server->timer, SD_EVENT_OFF);
	if (err)
		return err;
	err = -pthread_create(&server->worker, NULL, control_worker, server);
	server->worker_started = !err;
	return err;
}

int control_server_create(sd_event *loop, const struct control_server_config *config,
                          struct control_server **out, struct vgpu_error *error)
{
	struct control_server *server = calloc(1, sizeof(*server));
	int i, err;

	if (!server)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	server->loop = sd_event_ref(loop);
	server->handler = config->handler;
	server->handler_ctx = config->handler_ctx;
	server->listen_fd = server->answered_fd = -1;
	server->idle_timeout_ms = config->idle_timeout_ms;
	server->max_connections_per_uid = config->max_connections_per_uid;
	server->todo_tail = &server->todo;
	pthread_mutex_init(&server->lock, NULL);
	pthread_cond_init(&server->wake, NULL);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		server->clients[i].fd = -1;
		server->clients[i].server = server;
	}
	err = operator_gid(server, config->operator_group, error);
	if (err) {
		control_server_destroy(server);
		return err;
	}
	server->listen_fd = vgpud_listen_unix(config->path, SOCK_STREAM, config->group,
	                                      "control socket", error);
	if (server->listen_fd < 0) {
		err = server->listen_fd;
		control_server_destroy(server);
		return err;
	}
	snprintf(server->path, sizeof(server->path), "%s", config->path);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		server->clients[i].buf = malloc(CONTROL_MAX_LINE + 1);
		if (!server->clients[i].buf) {
			err = -ENOMEM;
			break;
		}
	}
	if (!err)
		err = start(server);
	if (err) {
		vgpu_error_set(error, err, "cannot start the control socket: %s", strerror(-err));
		control_server_destroy(server);
		return err;
	}
	*out = server;
	return 0;
}

void control_server_destroy(struct control_server *server)
{
	int i;

	if (!server)
		return;
	if (server->worker_started) {
		pthread_mutex_lock(&server->lock);
		server->stopping = true;
		pthread_cond_signal(&server->wake);
		pthread_mutex_unlock(&server->lock);
		pthread_join(server->worker, NULL);
	}
	free_jobs(server->todo);
	free_jobs(server->answered);
	for (i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		client_close(&server->clients[i]);
		free(server->clients[i].buf);
	}
	sd_event_source_disable_unref(server->listen_source);
	sd_event_source_disable_unref(server->answered_source);
	sd_event_source_disable_unref(server->timer);
	if (server->listen_fd >= 0) {
		close(server->listen_fd);
		vgpud_unlink_unix(server->path);
	}
	if (server->answered_fd >= 0)
		close(server->answered_fd);
	pthread_cond_destroy(&server->wake);
	pthread_mutex_destroy(&server->lock);
	sd_event_unref(server->loop);
	free(server);
}
