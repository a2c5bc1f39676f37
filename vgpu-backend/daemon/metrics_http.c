// SPDX-License-Identifier: MIT
/* metrics_http.c - GET /metrics over HTTP with libmicrohttpd; see
 * metrics_http.h. */
#include "metrics_http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <microhttpd.h>

#include "vgpu/error.h"

#include "listen_address.h"
#include "log.h"
#include "metrics.h"

#define METRICS_PATH "/metrics"
#define CONNECTION_TIMEOUT_S 10

/* One TCP connection (MHD's socket context), on server->conns. */
struct metrics_conn {
	int fd;
	char peer[48];        /* peer_key */
	int64_t since_ms;     /* accepted, or its last answer */
	bool shut;            /* the reaper shut it down */
	struct metrics_conn *next;
};

struct metrics_http {
	struct vgpud *daemon;
	struct MHD_Daemon *mhd;
	/* libmicrohttpd runs on the loop: its epoll descriptor, and a timer
	 * for its timeouts and the connections' deadlines */
	sd_event_source *io, *timer;
	/* connections: libmicrohttpd's callbacks add and remove them and the
	 * timer reads them, all on the loop; the lock orders them for
	 * readers elsewhere (none today) */
	pthread_mutex_t lock;
	struct metrics_conn *conns;
	unsigned conn_count;
	char pending_peer[48]; /* the accept policy's, for the STARTED notice */
	uint16_t port;
	char url[128];             /* http://ADDRESS:PORT/metrics */
	atomic_bool started;       /* after MHD_start_daemon returned */
	char startup_error[256];   /* libmicrohttpd's last message before that */
	struct vgpud_ratelimit log_limit;
};

/* libmicrohttpd's messages: kept while starting (for the error), then
 * logged as warnings, rate-limited (the loop only). */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct metrics_http *server = cls;
	char text[256];
	size_t len;

	vsnprintf(text, sizeof(text), fmt, ap);
	len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == '.'))
		text[--len] = '\0';
	if (!atomic_load(&server->started))
		snprintf(server->startup_error, sizeof(server->startup_error), "%s", text);
	else
		vgpud_log_ratelimited(&server->log_limit, VGPUD_LOG_WARN, "metrics endpoint: %s",
		                      text);
}

static enum MHD_Result reply(struct MHD_Connection *connection, unsigned status,
                             const char *content_type, char *body, size_t len, bool owned,
                             const char *allow)
{
	struct MHD_Response *response;
	enum MHD_Result result;

	response = MHD_create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE
	                                                             : MHD_RESPMEM_PERSISTENT);
	if (!response) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (allow)
		MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
	result = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return result;
}

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status,
                                  const char *text, const char *allow)
{
	return reply(connection, status, "text/plain; charset=utf-8", (char *)text, strlen(text),
	             false, allow);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The local user owning the TCP socket at the other end of a loopback
 * connection from peer_port to our_port (/proc/net/tcp and tcp6), or -1. */
static long loopback_peer_uid(unsigned peer_port, unsigned our_port)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	long uid = -1;

	for (size_t t = 0; t < 2 && uid < 0; t++) {
		FILE *f = fopen(tables[t], "re");
		char line[512];

		if (!f)
			continue;
		while (uid < 0 && fgets(line, sizeof(line), f)) {
			char local[64], remote[64];
			unsigned lport, rport, state;
			long owner;
			char *colon_l, *colon_r;

			if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %ld", local, remote, &state,
			           &owner) != 4)
				continue;
			colon_l = strrchr(local, ':');
			colon_r = strrchr(remote, ':');
			if (!colon_l || !colon_r || state == 0x0a /* LISTEN */)
				continue;
			lport = (unsigned)strtoul(colon_l + 1, NULL, 16);
			rport = (unsigned)strtoul(colon_r + 1, NULL, 16);
			if (lport == peer_port && rport == our_port)
				uid = owner;
		}
		fclose(f);
	}
	return uid;
}

/* Who a client is, for the per-peer limit: "uid N" for a loopback peer
 * whose socket's owner is known, else its IP address. *root: uid 0. */
static void peer_key(const struct metrics_http *server, const struct sockaddr *addr,
                     char *key, size_t len, bool *root)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	bool loopback = false;
	unsigned port = 0;

	*root = false;
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		port = ntohs(in->sin_port);
	} else if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		           (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
		port = ntohs(in6->sin6_port);
	}
	if (loopback) {
		long uid = loopback_peer_uid(port, __atomic_load_n(&server->port, __ATOMIC_RELAXED));

		if (uid >= 0) {
			snprintf(key, len, "uid %ld", uid);
			*root = uid == 0;
			return;
		}
	}
	snprintf(key, len, "%s", ip);
}

/* On the loop: admit a client, or not (per-peer limit, root's slot). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct metrics_http *server = cls;
	unsigned mine = 0;
	bool root, ok;
	char key[48];

	(void)addrlen;
	peer_key(server, addr, key, sizeof(key), &root);
	pthread_mutex_lock(&server->lock);
	for (const struct metrics_conn *c = server->conns; c; c = c->next)
		mine += !strcmp(c->peer, key);
	ok = mine < METRICS_MAX_PER_PEER &&
	     (root || server->conn_count + METRICS_ROOT_RESERVED < METRICS_MAX_CONNECTIONS);
	if (ok)
		snprintf(server->pending_peer, sizeof(server->pending_peer), "%s", key);
	pthread_mutex_unlock(&server->lock);
	if (!ok)
		vgpud_log_ratelimited(&server->log_limit, VGPUD_LOG_DEBUG,
		                      "metrics endpoint: refusing a connection of %s (%u open)", key,
		                      mine);
	return ok ? MHD_YES : MHD_NO;
}

static void notify_connection(void *cls, struct MHD_Connection *connection,
                              void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
	struct metrics_http *server = cls;
	struct metrics_conn *c = *socket_context, **p;

	pthread_mutex_lock(&server->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info =
		        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = calloc(1, sizeof(*c));
		if (c) {
			c->fd = info ? info->connect_fd : -1;
			snprintf(c->peer, sizeof(c->peer), "%s", server->pending_peer);
			c->since_ms = now_ms();
			c->next = server->conns;
			server->conns = c;
			server->conn_count++;
		}
		*socket_context = c;
	} else if (c) {
		for (p = &server->conns; *p; p = &(*p)->next) {
			if (*p == c) {
				*p = c->next;
				server->conn_count--;
				break;
			}
		}
		free(c);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&server->lock);
}

/* A connection answered: its deadline starts again. */
static void answered(struct metrics_http *server, struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *info =
	        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	if (!info || !info->socket_context)
		return;
	pthread_mutex_lock(&server->lock);
	((struct metrics_conn *)info->socket_context)->since_ms = now_ms();
	pthread_mutex_unlock(&server->lock);
}

/* Shut down connections that did not complete a request within
 * METRICS_REQUEST_DEADLINE_MS of their start or last answer (libmicrohttpd
 * then closes them): a client that trickles bytes, or does not read,
 * holds its slot that long at most. Returns the ms until the next such
 * deadline (-1: none). */
static int64_t shut_expired(struct metrics_http *server)
{
	int64_t now = now_ms(), next = -1;

	pthread_mutex_lock(&server->lock);
	for (struct metrics_conn *c = server->conns; c; c = c->next) {
		int64_t left = c->since_ms + METRICS_REQUEST_DEADLINE_MS - now;

		if (c->shut || c->fd < 0)
			continue;
		if (left <= 0) {
			shutdown(c->fd, SHUT_RDWR);
			c->shut = true;
		} else if (next < 0 || left < next) {
			next = left;
		}
	}
	pthread_mutex_unlock(&server->lock);
	return next;
}

/* Let libmicrohttpd do what is due, then arm the timer for whatever comes
 * first: its own timeout or a connection's deadline. */
static void serve(struct metrics_http *server)
{
	MHD_UNSIGNED_LONG_LONG mhd_ms;
	int64_t next;

	MHD_run(server->mhd);
	next = shut_expired(server);
	if (MHD_get_timeout(server->mhd, &mhd_ms) == MHD_YES &&
	    (next < 0 || (int64_t)mhd_ms < next))
		next = (int64_t)mhd_ms;
	if (next < 0) {
		sd_event_source_set_enabled(server->timer, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time_relative(server->timer, (uint64_t)next * 1000);
	sd_event_source_set_enabled(server->timer, SD_EVENT_ONESHOT);
}

static int on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	(void)source, (void)fd, (void)revents;
	serve(userdata);
	return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
	(void)source, (void)usec;
	serve(userdata);
	return 0;
}

/* libmicrohttpd's epoll descriptor and the timer on the loop. */
static int watch(struct metrics_http *server, sd_event *loop)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->mhd,
	                                                       MHD_DAEMON_INFO_EPOLL_FD);
	int err;

	if (!info)
		return -ENOTSUP;
	err = sd_event_add_io(loop, &server->io, info->epoll_fd, EPOLLIN, on_io, server);
	if (err >= 0)
		err = sd_event_add_time_relative(loop, &server->timer, CLOCK_MONOTONIC, 0, 1000,
		                                 on_timer, server);
	return err < 0 ? err : 0;
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *connection,
                                      const char *url, const char *method,
                                      const char *version, const char *upload_data,
                                      size_t *upload_data_size, void **request_state)
{
	static int first_call_seen;
	struct metrics_http *server = cls;
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET), head = !strcmp(method,
	                                                                  MHD_HTTP_METHOD_HEAD);
	size_t len = 0;
	char *text;

	if (!get && !head) /* answered at once; an upload is not read */
		return reply_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
		                  "405 method not allowed: vgpud's metrics endpoint answers GET "
		                  "/metrics\n", "GET, HEAD");
	if (!*request_state) {
		/* the headers are in; answer on the next call */
		*request_state = &first_call_seen;
		return MHD_YES;
	}
	if (*upload_data_size) { /* a GET with a body: ignore the body */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, METRICS_PATH))
		return reply_text(connection, MHD_HTTP_NOT_FOUND,
		                  "404 not found: vgpud serves its metrics at " METRICS_PATH "\n",
		                  NULL);
	answered(server, connection);
	text = vgpud_metrics_text(server->daemon, &len);
	if (!text)
		return reply_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR,
		                  "500 vgpud is out of memory\n", NULL);
	return reply(connection, MHD_HTTP_OK, VGPUD_METRICS_CONTENT_TYPE, text, len, true, NULL);
}

static uint16_t port_of(const struct vgpud_listen_address *address)
{
	if (address->addr.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&address->addr)->sin6_port);
	return ntohs(((const struct sockaddr_in *)&address->addr)->sin_port);
}

int metrics_http_create(struct vgpud *d, sd_event *loop,
                        const struct vgpud_listen_address *address,
                        struct metrics_http **out, struct vgpu_error *error)
{
	struct metrics_http *server = calloc(1, sizeof(*server));
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG; /* no thread: the loop's */
	const union MHD_DaemonInfo *info;
	char where[96];
	int err;

	if (!server)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	server->daemon = d;
	pthread_mutex_init(&server->lock, NULL);
	vgpud_listen_address_format(address, -1, where, sizeof(where));
	if (address->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the port argument is only for libmicrohttpd's messages: the
	 * address has it */
	/* port 0: the kernel's choice is set below; MHD's thread reads it */
	__atomic_store_n(&server->port, port_of(address), __ATOMIC_RELAXED);
	server->mhd = MHD_start_daemon(flags, port_of(address), accept_policy, server,
	                               handle_request, server,
	                               MHD_OPTION_NOTIFY_CONNECTION, notify_connection, server,
	                               MHD_OPTION_EXTERNAL_LOGGER, mhd_log, server,
	                               MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&address->addr,
	                               MHD_OPTION_CONNECTION_LIMIT,
	                               (unsigned)METRICS_MAX_CONNECTIONS,
	                               MHD_OPTION_CONNECTION_TIMEOUT,
	                               (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	if (!server->mhd) {
		vgpu_error_set(error, -EADDRNOTAVAIL,
		               "cannot serve metrics on %s: %s; choose another address or port in "
		               "[daemon] metrics (--metrics), or set it to off", where,
		               server->startup_error[0] ? server->startup_error
		               : "libmicrohttpd did not start");
		pthread_mutex_destroy(&server->lock);
		free(server);
		return -EADDRNOTAVAIL;
	}
	atomic_store(&server->started, true);
	info = MHD_get_daemon_info(server->mhd, MHD_DAEMON_INFO_BIND_PORT);
	__atomic_store_n(&server->port, info ? info->port : 0, __ATOMIC_RELAXED);
	vgpud_listen_address_format(address, server->port, where, sizeof(where));
	snprintf(server->url, sizeof(server->url), "http://%s" METRICS_PATH, where);
	err = watch(server, loop);
	if (err) {
		vgpu_error_set(error, err, "cannot serve metrics on %s: %s", where, strerror(-err));
		metrics_http_destroy(server);
		return err;
	}
	log_info("metrics on %s", server->url);
	*out = server;
	return 0;
}

void metrics_http_destroy(struct metrics_http *server)
{
	if (!server)
		return;
	sd_event_source_disable_unref(server->io);
	sd_event_source_disable_unref(server->timer);
	MHD_stop_daemon(server->mhd);
	pthread_mutex_destroy(&server->lock);
	free(server);
}

uint16_t metrics_http_port(const struct metrics_http *server)
{
	return __atomic_load_n(&server->port, __ATOMIC_RELAXED);
}

const char *metrics_http_url(const struct metrics_http *server)
{
	return server->url;
}
