/* SPDX-License-Identifier: MIT */
/*
 * local_server.h - vgpud's side of the local transport
 * (vgpu/abi/local_protocol.h): the listening socket for tenants, and per
 * connection a struct vgpu_transport served on vgpud's event loop.
 *
 * A peer user (SO_PEERCRED) may hold max_connections_per_uid connections at
 * once; more are closed at accept. A connection must ATTACH within
 * attach_timeout_ms; an attached tenant that holds nothing (no GPU memory,
 * no channel) and sends nothing for idle_timeout_ms is detached, so
 * attaching and going quiet holds no resources for long. After ATTACH the
 * loop answers REG_READ, applies REG_WRITE, turns kicks into doorbells, and
 * on DETACH, end of file or a malformed message has the device detached
 * (which releases everything) and closes the connection. A reply the
 * tenant does not read within swap_timeout_ms ends the connection; nothing
 * more of it is read while one waits. Window swaps and region maps are
 * requests on the backend channel, one at a time per connection, each
 * waiting at most swap_timeout_ms for the ack; a frontend that misses it is
 * dead: its sockets are shut down, every further op returns -ENODEV at
 * once, and it is detached.
 *
 * Threads: connections are state machines on the loop (one message at a
 * time each). What waits for the core or the tenant runs as a job on the
 * daemon's worker pool (work_pool.h), one per connection at a time: the
 * attach (or IMPORT), EXPORT, the idle check and the detach; the
 * connection is not read meanwhile. The transport ops are called from the
 * device's threads (mailbox worker, evictions) and wait on the backend
 * channel there, never on the loop.
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

struct work_pool;

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
	struct work_pool *pool; /* where connections wait (the daemon's) */
};

/* Bind and listen, serving tenants on loop. 0, or a negative errno after
 * writing what was wrong and what to do into error. */
int local_server_create(sd_event *loop, const struct local_server_config *config,
                        struct local_server **out, struct vgpu_error *error);

/* Number of live connections. */
unsigned local_server_connections(struct local_server *server);

/* Close the listening socket (removing its file), shut every connection
 * down, wait for their jobs on the pool (work_pool_flush: the loop does
 * not run any more), detach every device left, free. */
void local_server_destroy(struct local_server *server);

#endif /* VGPUD_LOCAL_SERVER_H */
