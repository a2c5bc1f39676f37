/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.h - vgpud's Prometheus endpoint: HTTP on a TCP address
 * ([daemon] metrics, listen_address.h), served by libmicrohttpd on vgpud's
 * event loop (its epoll descriptor and timeouts registered there; no
 * thread of its own).
 *
 *   GET or HEAD /metrics   200, Content-Type VGPUD_METRICS_CONTENT_TYPE, the
 *                          text of vgpud_metrics_text (metrics.h)
 *   another path           404
 *   another method         405 with "Allow: GET, HEAD"
 *
 * The handler only reads statistics (stats_snapshot.h: the registry lock,
 * then the core's), like the control socket's "list"; a scrape may wait
 * for an eviction in progress.
 *
 * No client can monopolise it: at most METRICS_MAX_CONNECTIONS connections
 * at once, the last METRICS_ROOT_RESERVED of them for root (a loopback
 * peer whose socket root owns), METRICS_MAX_PER_PEER of one peer (a
 * loopback peer is its local user, found in /proc/net/tcp*; another peer
 * is its IP address); a connection must complete each request within
 * METRICS_REQUEST_DEADLINE_MS of its start or of its previous answer, or
 * it is shut down (a slowloris that trickles bytes, or a client that does
 * not read its answer, holds a slot that long at most; an idle keep-alive
 * connection is closed as well, and the scraper reconnects). 10 s idle
 * timeout. No authentication and no TLS: keep it on localhost or behind a
 * firewall or reverse proxy.
 */
#ifndef VGPUD_METRICS_HTTP_H
#define VGPUD_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "vgpu/error.h"

#define METRICS_MAX_CONNECTIONS 16
#define METRICS_ROOT_RESERVED 1
#define METRICS_MAX_PER_PEER 4
#define METRICS_REQUEST_DEADLINE_MS 3000

struct vgpud;
struct vgpud_listen_address;
struct metrics_http;

/* Listen on address (enabled) and serve d's metrics. 0, or a negative
 * errno after writing what was wrong and what to do into error. */
int metrics_http_create(struct vgpud *d, sd_event *loop,
                        const struct vgpud_listen_address *address,
                        struct metrics_http **out, struct vgpu_error *error);
/* Stop serving (waits for a request in progress); NULL is fine. */
void metrics_http_destroy(struct metrics_http *server);

/* The TCP port it listens on (the kernel's choice for port 0). */
uint16_t metrics_http_port(const struct metrics_http *server);
/* "http://127.0.0.1:9464/metrics": where to scrape (with that port). */
const char *metrics_http_url(const struct metrics_http *server);

#endif /* VGPUD_METRICS_HTTP_H */
