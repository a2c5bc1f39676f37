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

#include <arpa/inet.h>
#include <microhttpd.h>

#include "listen_address.h"
#include "log.h"
#include "metrics.h"

#define METRICS_PATH "/metrics"
#define MAX_CONNECTIONS 16
#define CONNECTION_TIMEOUT_S 10

struct metrics_http {
	struct vgpud *daemon;
	struct MHD_Daemon *mhd;
	uint16_t port;
	char url[128];             /* http://ADDRESS:PORT/metrics */
	atomic_bool started;       /* after MHD_start_daemon returned */
	char startup_error[256];   /* libmicrohttpd's last message before that */
	struct vgpud_ratelimit log_limit;
};

/* libmicrohttpd's messages: kept while starting (for the error), then
 * logged as warnings, rate-limited (its thread only). */
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

int metrics_http_create(struct vgpud *d, const struct vgpud_listen_address *address,
                        struct metrics_http **out, char *why, size_t why_len)
{
	struct metrics_http *server = calloc(1, sizeof(*server));
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	char where[96];

	if (!server) {
		snprintf(why, why_len, "vgpud is out of memory");
		return -ENOMEM;
	}
	server->daemon = d;
	vgpud_listen_address_format(address, -1, where, sizeof(where));
	if (address->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the port argument is only for libmicrohttpd's messages: the
	 * address has it */
	server->mhd = MHD_start_daemon(flags, port_of(address), NULL, NULL, handle_request, server,
	                               MHD_OPTION_EXTERNAL_LOGGER, mhd_log, server,
	                               MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&address->addr,
	                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
	                               MHD_OPTION_CONNECTION_TIMEOUT,
	                               (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	if (!server->mhd) {
		snprintf(why, why_len, "cannot serve metrics on %s: %s; choose another address or "
		         "port in [daemon] metrics (--metrics), or set it to off", where,
		         server->startup_error[0] ? server->startup_error
		                                  : "libmicrohttpd did not start");
		free(server);
		return -EADDRNOTAVAIL;
	}
	atomic_store(&server->started, true);
	info = MHD_get_daemon_info(server->mhd, MHD_DAEMON_INFO_BIND_PORT);
	server->port = info ? info->port : 0;
	vgpud_listen_address_format(address, server->port, where, sizeof(where));
	snprintf(server->url, sizeof(server->url), "http://%s" METRICS_PATH, where);
	log_info("metrics on %s", server->url);
	*out = server;
	return 0;
}

void metrics_http_destroy(struct metrics_http *server)
{
	if (!server)
		return;
	MHD_stop_daemon(server->mhd);
	free(server);
}

uint16_t metrics_http_port(const struct metrics_http *server)
{
	return server->port;
}

const char *metrics_http_url(const struct metrics_http *server)
{
	return server->url;
}
