/* SPDX-License-Identifier: MIT */
/*
 * local_server.h - vgpud's side of the local transport
 * (vgpu/abi/local_protocol.h): the listening socket for tenants, and per
 * connection a struct vgpu_transport plus a thread that reads the main
 * socket and the kick eventfd.
 *
 * A peer user (SO_PEERCRED) may hold max_connections_per_uid connections at
 * once; more are closed at accept. A connection must ATTACH within
 * attach_timeout_ms; an attached tenant that holds nothing (no GPU memory,
 * no channel) and sends nothing for idle_timeout_ms is detached, so
 * attaching and going quiet holds no resources for long. After ATTACH its thread
 * answers REG_READ, applies REG_WRITE, turns kicks into doorbells, and on
 * DETACH, end of file or a malformed message detaches the device (which
 * releases everything) and closes the connection. Window swaps and region
 * maps are requests on the backend channel, one at a time per connection,
 * each waiting at most swap_timeout_ms for the ack; a frontend that misses
 * it is dead: its sockets are shut down, every further op returns -ENODEV
 * at once, and its thread detaches it.
 *
 * Descriptors from a frontend are checked before use: the backend channel
 * must be a SOCK_SEQPACKET socket, kick and interrupts must be eventfds
 * (set non-blocking, so raising an interrupt never blocks the GPU's event
 * thread).
 */
#ifndef VGPUD_LOCAL_SERVER_H
#define VGPUD_LOCAL_SERVER_H

#include <stdint.h>

#include <systemd/sd-event.h>

#include "vgpu/error.h"

#include "transport.h"

struct local_server;

struct local_server_config {
	const char *path;      /* socket path (created mode 0660) */
	const char *group;     /* owning group name, NULL/"" = unchanged */
	uint32_t attach_timeout_ms;
	uint32_t swap_timeout_ms;
	/* an attached tenant that holds no GPU memory or channel and sends
	 * nothing (no message, no kick) for this long is detached; 0 = never */
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid; /* connections of one peer user at once */
	struct vgpu_device_host host;
};

/* Bind and listen, accepting tenants on loop (which also joins the threads
 * of connections that ended). 0, or a negative errno after writing what
 * was wrong and what to do into error. */
int local_server_create(sd_event *loop, const struct local_server_config *config,
                        struct local_server **out, struct vgpu_error *error);

/* Number of live connections. */
unsigned local_server_connections(struct local_server *server);

/* Close the listening socket (removing its file), shut every connection
 * down, wait until each has detached its device, free. */
void local_server_destroy(struct local_server *server);

#endif /* VGPUD_LOCAL_SERVER_H */
