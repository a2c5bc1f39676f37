// SPDX-License-Identifier: MIT
/* local_server.c - vgpud's side of the local transport, see local_server.h. */
#include "local_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/local_protocol.h"

#include "device.h"
#include "local_socket.h"
#include "log.h"
#include "migrate.h"
#include "migrate_local.h"
#include "unix_listen.h"

/* Connections at once (attached or still attaching): each costs a thread. */
#define LOCAL_MAX_CONNECTIONS 1024

struct local_conn {
	struct vgpu_transport base; /* first: the transport ops get this */
	struct local_server *server;
	int sock;
	int backend;
	int kick_fd;
	int irq_fds[VGPU_MSIX_VECTORS];
	pthread_t thread;
	atomic_bool dead;
	atomic_bool finished;
	pthread_mutex_t backend_lock; /* one backend request at a time */
	uint32_t backend_seq;
	struct vgpud_device *device;
	char vm_name[VGPU_LOCAL_NAME_MAX];
	uid_t uid; /* the peer's (SO_PEERCRED) */
	uint32_t attach_seq; /* the ATTACH request's seq, echoed in its reply */
	struct migrate_local migrate; /* EXPORT (the connection's thread) */
	struct local_conn *next;
};

struct local_server {
	char path[108];
	char group[64];
	uint32_t attach_timeout_ms;
	uint32_t swap_timeout_ms;
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid;
	struct vgpu_device_host host;
	int listen_fd;
	int finished_fd; /* eventfd: a connection's thread finished */
	sd_event_source *listen_source, *finished_source;
	pthread_mutex_t lock;
	struct local_conn *conns;
	unsigned live;
	struct vgpud_ratelimit refusals; /* the accepting thread's */
};

static struct local_conn *conn_of(struct vgpu_transport *t)
{
	return (struct local_conn *)t;
}

/* The frontend is gone or misbehaves: every further op fails at once and
 * the connection thread wakes up to detach. gone_after_export: the
 * frontend went away after its VM was exported (a source QEMU quits once
 * its migration completed): the expected end, not an error. */
static void mark_dead(struct local_conn *conn, const char *why, bool gone_after_export)
{
	if (atomic_exchange(&conn->dead, true))
		return;
	if (gone_after_export)
		log_info("tenant '%s': its frontend went away after the VM migrated (%s); "
		         "releasing it here", conn->vm_name[0] ? conn->vm_name : "?", why);
	else
		log_warn("tenant '%s': %s; detaching it", conn->vm_name[0] ? conn->vm_name : "?",
		         why);
	shutdown(conn->sock, SHUT_RDWR);
	if (conn->backend >= 0)
		shutdown(conn->backend, SHUT_RDWR);
}

/* ------------------------------------------------------ transport ops */

static int backend_request(struct local_conn *conn, uint32_t type, const void *payload,
                           uint32_t size, const int *fds, unsigned nfds)
{
	const int timeout = (int)conn->server->swap_timeout_ms;
	struct vgpu_local_msg ack;
	char why[160];
	uint32_t seq;
	int err;

	pthread_mutex_lock(&conn->backend_lock);
	if (atomic_load(&conn->dead)) {
		pthread_mutex_unlock(&conn->backend_lock);
		return -ENODEV;
	}
	seq = ++conn->backend_seq;
	err = vgpu_local_send(conn->backend, type, seq, 0, payload, size, fds, nfds, timeout);
	if (!err)
		err = vgpu_local_recv(conn->backend, &ack, timeout);
	if (err) {
		snprintf(why, sizeof(why), "%s on the backend channel failed: %s",
		         vgpu_local_msg_name(type),
		         err == -ETIMEDOUT ? "no acknowledgement within swap_timeout_ms"
		                           : strerror(-err));
		goto dead;
	}
	if (vgpu_local_msg_expect(&ack, type, true, sizeof(struct vgpu_local_status), 0) ||
	    ack.header.seq != seq) {
		vgpu_local_msg_close_fds(&ack);
		snprintf(why, sizeof(why), "malformed acknowledgement of %s",
		         vgpu_local_msg_name(type));
		err = -EPROTO;
		goto dead;
	}
	if (ack.payload.status.status) {
		err = ack.payload.status.status < 0 ? ack.payload.status.status : -EPROTO;
		snprintf(why, sizeof(why), "it could not perform %s: %s", vgpu_local_msg_name(type),
		         strerror(-err));
		goto dead;
	}
	pthread_mutex_unlock(&conn->backend_lock);
	return 0;
dead:
	pthread_mutex_unlock(&conn->backend_lock);
	{
		struct vgpud_device *dev = __atomic_load_n(&conn->device, __ATOMIC_ACQUIRE);

		mark_dead(conn, why,
		          (err == -EPIPE || err == -ECONNRESET) && dev &&
		                  atomic_load(&dev->migrated));
	}
	return err;
}

static int op_map_region(struct vgpu_transport *t, const struct vgpu_bar2_segment *seg)
{
	struct vgpu_local_region region = {
		.bar2_offset = seg->bar2_offset,
		.bytes = seg->bytes,
		.fd_offset = seg->fd_offset,
	};

	return backend_request(conn_of(t), VGPU_LOCAL_MAP_REGION, &region, sizeof(region),
	                       &seg->fd, 1);
}

static int op_unmap_region(struct vgpu_transport *t, uint64_t bar2_offset, uint64_t bytes)
{
	struct vgpu_local_region region = { .bar2_offset = bar2_offset, .bytes = bytes };

	return backend_request(conn_of(t), VGPU_LOCAL_UNMAP_REGION, &region, sizeof(region),
	                       NULL, 0);
}

static int op_window_block(struct vgpu_transport *t, uint32_t index, uint64_t bar2_offset,
                           uint64_t bytes)
{
	struct vgpu_local_window_block block = {
		.index = index,
		.bar2_offset = bar2_offset,
		.bytes = bytes,
	};

	return backend_request(conn_of(t), VGPU_LOCAL_WINDOW_BLOCK, &block, sizeof(block), NULL,
	                       0);
}

static int op_window_map(struct vgpu_transport *t, uint32_t index, bool shadow,
                         const struct vgpu_bar2_segment *segments, unsigned count)
{
	struct vgpu_local_window_map map;
	int fds[VGPU_LOCAL_WINDOW_SEGMENTS_MAX];
	unsigned i;

	if (!count || count > VGPU_LOCAL_WINDOW_SEGMENTS_MAX)
		return -EINVAL;
	memset(&map, 0, sizeof(map));
	map.index = index;
	map.target = shadow ? VGPU_LOCAL_WINDOW_SHADOW : VGPU_LOCAL_WINDOW_REAL;
	map.segments = count;
	for (i = 0; i < count; i++) {
		map.segment[i].bar2_offset = segments[i].bar2_offset;
		map.segment[i].bytes = segments[i].bytes;
		map.segment[i].fd_offset = segments[i].fd_offset;
		fds[i] = segments[i].fd;
	}
	return backend_request(conn_of(t), VGPU_LOCAL_WINDOW_MAP, &map, sizeof(map), fds, count);
}

static void op_raise_irq(struct vgpu_transport *t, unsigned vector)
{
	struct local_conn *conn = conn_of(t);
	uint64_t one = 1;

	if (vector >= VGPU_MSIX_VECTORS || atomic_load(&conn->dead))
		return;
	/* Non-blocking eventfd: a full counter just means "already raised". */
	(void)!write(conn->irq_fds[vector], &one, sizeof(one));
}

static int op_dma_read(struct vgpu_transport *t, uint64_t guest_address, void *dst,
                       size_t bytes)
{
	return -ENOTSUP;
}

static int op_dma_write(struct vgpu_transport *t, uint64_t guest_address, const void *src,
                        size_t bytes)
{
	return -ENOTSUP;
}

static const struct vgpu_transport_ops local_ops = {
	.map_region = op_map_region,
	.unmap_region = op_unmap_region,
	.window_block = op_window_block,
	.window_map = op_window_map,
	.raise_irq = op_raise_irq,
	.dma_read = op_dma_read,
	.dma_write = op_dma_write,
};

/* ---------------------------------------------------------- handshake */

static bool is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

static bool is_seqpacket_socket(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return false;
	len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return false;
	return type == SOCK_SEQPACKET && domain == AF_UNIX;
}

static bool set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

static bool name_ok(const char *name, size_t size, bool allow_empty)
{
	size_t len = strnlen(name, size), i;

	if (len == size || (!len && !allow_empty))
		return false;
	for (i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return false;
	return true;
}

static void attach_reply(struct local_conn *conn, int status, const char *message,
                         const struct vgpu_bar2_segment *mailbox, uint32_t vm_id)
{
	struct vgpu_local_attach_reply r;
	int err;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.protocol_version = VGPU_LOCAL_PROTOCOL_VERSION;
	r.bar2_size = VGPU_BAR2_SIZE;
	r.mailbox_offset = VGPU_MAILBOX_OFFSET;
	r.mailbox_size = VGPU_MAILBOX_SIZE;
	r.vm_id = vm_id;
	if (mailbox)
		r.mailbox_fd_offset = mailbox->fd_offset;
	snprintf(r.message, sizeof(r.message), "%s", message ? message : "");
	err = vgpu_local_send(conn->sock, VGPU_LOCAL_ATTACH, conn->attach_seq,
	                      VGPU_LOCAL_FLAG_REPLY, &r,
	                      sizeof(r), mailbox ? &mailbox->fd : NULL, mailbox ? 1 : 0,
	                      (int)conn->server->swap_timeout_ms);
	if (err && !status)
		mark_dead(conn, "cannot send the ATTACH reply", false);
}

/* IMPORT (live migration): read the stream the peer passed to its end,
 * creating the VM parked, and say how it went. */
static void serve_import(struct local_conn *conn, struct vgpu_local_msg *msg)
{
	struct vgpu_local_import_reply r;
	const struct vgpu_local_import *im = &msg->payload.import;
	int err;

	memset(&r, 0, sizeof(r));
	r.protocol_minor = VGPU_LOCAL_PROTOCOL_MINOR;
	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_IMPORT, false, sizeof(*im), 1)) {
		vgpu_local_msg_close_fds(msg);
		err = -EPROTO;
		snprintf(r.message, sizeof(r.message), "IMPORT takes its payload and one "
		         "descriptor (the stream); see local_protocol.h");
	} else if (im->protocol_version != VGPU_LOCAL_PROTOCOL_VERSION ||
	           im->protocol_minor < 1) {
		vgpu_local_msg_close_fds(msg);
		err = -EPROTONOSUPPORT;
		snprintf(r.message, sizeof(r.message), "IMPORT needs protocol %u.1 or later",
		         VGPU_LOCAL_PROTOCOL_VERSION);
	} else {
		struct vgpu_error error = VGPU_ERROR_INIT;
		int fd = msg->fds[0];

		msg->nfds = 0;
		err = migrate_import(conn->server->host.ctx, fd, conn->uid, &error);
		vgpu_error_text(&error, r.message, sizeof(r.message));
		close(fd);
	}
	r.status = err;
	if (err)
		log_info("IMPORT refused: %s", r.message);
	(void)vgpu_local_send(conn->sock, VGPU_LOCAL_IMPORT, msg->header.seq,
	                      VGPU_LOCAL_FLAG_REPLY, &r, sizeof(r), NULL, 0,
	                      (int)conn->server->swap_timeout_ms);
}

static int handshake(struct local_conn *conn)
{
	struct local_server *server = conn->server;
	struct vgpu_local_msg msg;
	const struct vgpu_local_attach *a = &msg.payload.attach;
	struct vgpu_attach_params params;
	struct vgpu_bar2_segment mailbox;
	char why[VGPU_LOCAL_MESSAGE_MAX];
	struct vgpu_error error = VGPU_ERROR_INIT;
	unsigned i;
	int err;

	err = vgpu_local_recv(conn->sock, &msg, (int)server->attach_timeout_ms);
	if (err) {
		log_info("tenant connection closed before attaching: %s",
		         err == -ETIMEDOUT ? "no ATTACH within attach_timeout_ms" : strerror(-err));
		return err;
	}
	conn->attach_seq = msg.header.seq;
	if (msg.header.type == VGPU_LOCAL_IMPORT) {
		serve_import(conn, &msg);
		return -ECONNABORTED; /* the connection ends after the reply */
	}
	if (vgpu_local_msg_expect(&msg, VGPU_LOCAL_ATTACH, false, sizeof(*a), VGPU_LOCAL_MAX_FDS)) {
		vgpu_local_msg_close_fds(&msg);
		attach_reply(conn, -EPROTO, "the first message must be ATTACH with 5 descriptors "
		             "(backend channel, kick, 3 interrupts); see local_protocol.h", NULL, 0);
		return -EPROTO;
	}
	/* Take the descriptors now so every exit closes them. */
	conn->backend = msg.fds[0];
	conn->kick_fd = msg.fds[1];
	for (i = 0; i < VGPU_MSIX_VECTORS; i++)
		conn->irq_fds[i] = msg.fds[2 + i];
	msg.nfds = 0;

	if (a->protocol_version != VGPU_LOCAL_PROTOCOL_VERSION ||
	    (a->flags & ~VGPU_LOCAL_ATTACH_FLAGS_ALL)) {
		snprintf(why, sizeof(why), "protocol version %u is not supported; vgpud speaks "
		         "%u", a->protocol_version, VGPU_LOCAL_PROTOCOL_VERSION);
		attach_reply(conn, -EPROTONOSUPPORT, why, NULL, 0);
		return -EPROTONOSUPPORT;
	}
	if (!name_ok(a->vm_name, sizeof(a->vm_name), false) ||
	    !name_ok(a->profile, sizeof(a->profile), true)) {
		attach_reply(conn, -EINVAL, "the VM name must be 1..63 printable characters "
		             "without spaces, the profile name at most 63", NULL, 0);
		return -EINVAL;
	}
	memcpy(conn->vm_name, a->vm_name, sizeof(conn->vm_name));
	if (!is_seqpacket_socket(conn->backend) || !is_eventfd(conn->kick_fd) ||
	    !is_eventfd(conn->irq_fds[0]) || !is_eventfd(conn->irq_fds[1]) ||
	    !is_eventfd(conn->irq_fds[2]) || !set_nonblocking(conn->kick_fd) ||
	    !set_nonblocking(conn->irq_fds[0]) || !set_nonblocking(conn->irq_fds[1]) ||
	    !set_nonblocking(conn->irq_fds[2])) {
		attach_reply(conn, -EBADF, "ATTACH descriptors must be a SOCK_SEQPACKET socket "
		             "and four eventfds", NULL, 0);
		return -EBADF;
	}

	params.vm_name = conn->vm_name;
	params.profile = a->profile;
	params.owner_uid = conn->uid;
	if (a->flags & VGPU_LOCAL_ATTACH_RESUME)
		err = migrate_adopt(server->host.ctx, &conn->base, conn->vm_name, conn->uid,
		                    &conn->device, &error);
	else
		err = server->host.attach(server->host.ctx, &conn->base, &params, &conn->device,
		                          &error);
	if (err) {
		vgpu_error_text(&error, why, sizeof(why));
		log_info("tenant '%s' not attached: %s", conn->vm_name, why);
		attach_reply(conn, err, why, NULL, 0);
		return err;
	}
	vgpu_device_mailbox_segment(conn->device, &mailbox);
	attach_reply(conn, 0, NULL, &mailbox, vgpu_device_vm_id(conn->device));
	return atomic_load(&conn->dead) ? -EPIPE : 0;
}

/* ------------------------------------------------------------- serving */

static int serve_message(struct local_conn *conn, bool *detach_requested, uint32_t *detach_seq)
{
	struct vgpu_local_msg msg;
	int err = vgpu_local_recv(conn->sock, &msg, 0);

	if (err == -ETIMEDOUT)
		return 0;
	if (err)
		return err;
	switch (msg.header.type) {
	case VGPU_LOCAL_REG_READ:
		if (vgpu_local_msg_expect(&msg, VGPU_LOCAL_REG_READ, false,
		                          sizeof(struct vgpu_local_reg), 0))
			break;
		msg.payload.reg.value = vgpu_device_reg_read(conn->device, msg.payload.reg.offset);
		err = vgpu_local_send(conn->sock, VGPU_LOCAL_REG_READ, msg.header.seq,
		                      VGPU_LOCAL_FLAG_REPLY, &msg.payload.reg,
		                      sizeof(msg.payload.reg), NULL, 0,
		                      (int)conn->server->swap_timeout_ms);
		return err;
	case VGPU_LOCAL_REG_WRITE:
		if (vgpu_local_msg_expect(&msg, VGPU_LOCAL_REG_WRITE, false,
		                          sizeof(struct vgpu_local_reg), 0))
			break;
		vgpu_device_reg_write(conn->device, msg.payload.reg.offset, msg.payload.reg.value);
		return 0;
	case VGPU_LOCAL_EXPORT:
		return migrate_local_serve(&conn->migrate, conn->server->host.ctx, conn->device,
		                           conn->sock, &msg, (int)conn->server->swap_timeout_ms);
	case VGPU_LOCAL_DETACH:
		if (vgpu_local_msg_expect(&msg, VGPU_LOCAL_DETACH, false, 0, 0))
			break;
		*detach_requested = true;
		*detach_seq = msg.header.seq;
		return 1;
	default:
		break;
	}
	vgpu_local_msg_close_fds(&msg);
	return -EPROTO;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long serve may wait for the tenant (-1: forever); true when it has
 * been idle for idle_timeout_ms holding nothing: time to detach it. */
static bool idle_expired(struct local_conn *conn, int64_t *last_activity, int *wait_ms)
{
	const int64_t limit = conn->server->idle_timeout_ms;
	int64_t idle = now_ms() - *last_activity;

	*wait_ms = -1;
	if (!limit)
		return false;
	if (idle < limit) {
		*wait_ms = (int)(limit - idle);
		return false;
	}
	if (vgpu_device_holds_resources(conn->device)) {
		*last_activity = now_ms(); /* quiet but holding memory: look again later */
		*wait_ms = (int)limit;
		return false;
	}
	return true;
}

static void serve(struct local_conn *conn)
{
	bool detach_requested = false;
	uint32_t detach_seq = 0;
	int64_t last_activity = now_ms();
	int err = 0;

	while (!atomic_load(&conn->dead)) {
		struct pollfd pfd[2] = {
			{ .fd = conn->sock, .events = POLLIN },
			{ .fd = conn->kick_fd, .events = POLLIN },
		};
		int wait_ms, n;

		if (idle_expired(conn, &last_activity, &wait_ms)) {
			log_info("tenant '%s' holds nothing and sent nothing for %u ms "
			         "(idle_timeout_ms); detaching it", conn->vm_name,
			         conn->server->idle_timeout_ms);
			break;
		}
		n = poll(pfd, 2, wait_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n > 0)
			last_activity = now_ms();
		if (pfd[1].revents & POLLIN) {
			uint64_t count;

			if (read(conn->kick_fd, &count, sizeof(count)) == sizeof(count))
				vgpu_device_kick(conn->device);
		}
		if (pfd[0].revents) {
			err = serve_message(conn, &detach_requested, &detach_seq);
			if (err)
				break;
		}
	}
	if (err < 0 && err != -EPIPE && !atomic_load(&conn->dead))
		log_warn("tenant '%s' sent a malformed message (%s); detaching it", conn->vm_name,
		         strerror(-err));
	migrate_local_release(&conn->migrate);
	vgpu_device_detach(conn->device);
	conn->device = NULL;
	if (detach_requested && !atomic_load(&conn->dead)) {
		struct vgpu_local_status status = { 0 };

		/* detached either way; the tenant may have gone without waiting */
		err = vgpu_local_send(conn->sock, VGPU_LOCAL_DETACH, detach_seq,
		                      VGPU_LOCAL_FLAG_REPLY, &status, sizeof(status), NULL, 0,
		                      (int)conn->server->swap_timeout_ms);
		if (err < 0 && err != -EPIPE)
			log_debug("tenant '%s': cannot confirm its DETACH: %s", conn->vm_name,
			          strerror(-err));
	}
}

static void *conn_main(void *arg)
{
	struct local_conn *conn = arg;
	const uint64_t one = 1;

	if (handshake(conn) == 0) {
		serve(conn);
	} else if (conn->device) {
		vgpu_device_detach(conn->device);
		conn->device = NULL;
	}
	atomic_store(&conn->dead, true);
	shutdown(conn->sock, SHUT_RDWR);
	atomic_store(&conn->finished, true);
	/* the loop joins it; a full counter wakes it all the same */
	(void)!write(conn->server->finished_fd, &one, sizeof(one));
	return NULL;
}

static void conn_free(struct local_conn *conn)
{
	unsigned i;

	close(conn->sock);
	if (conn->backend >= 0)
		close(conn->backend);
	if (conn->kick_fd >= 0)
		close(conn->kick_fd);
	for (i = 0; i < VGPU_MSIX_VECTORS; i++)
		if (conn->irq_fds[i] >= 0)
			close(conn->irq_fds[i]);
	pthread_mutex_destroy(&conn->backend_lock);
	free(conn);
}

/* -------------------------------------------------------------- server */

static void local_server_accept(struct local_server *server);
static void local_server_reap(struct local_server *server);

static int on_listen(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	(void)source, (void)fd, (void)revents;
	local_server_accept(userdata);
	return 0;
}

static int on_finished(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	uint64_t count;

	(void)source, (void)revents;
	(void)!read(fd, &count, sizeof(count));
	local_server_reap(userdata);
	return 0;
}

/* The listening socket and the finished connections on the loop. */
static int watch(struct local_server *server, sd_event *loop)
{
	int err;

	server->finished_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (server->finished_fd < 0)
		return -errno;
	err = sd_event_add_io(loop, &server->listen_source, server->listen_fd, EPOLLIN, on_listen,
	                      server);
	if (err >= 0)
		err = sd_event_add_io(loop, &server->finished_source, server->finished_fd, EPOLLIN,
		                      on_finished, server);
	return err < 0 ? err : 0;
}

int local_server_create(sd_event *loop, const struct local_server_config *config,
                        struct local_server **out, struct vgpu_error *error)
{
	struct local_server *server = calloc(1, sizeof(*server));
	int fd, err;

	if (!server)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	fd = vgpud_listen_unix(config->path, SOCK_SEQPACKET, config->group, "tenant socket", error);
	if (fd < 0) {
		free(server);
		return fd;
	}
	snprintf(server->path, sizeof(server->path), "%s", config->path);
	snprintf(server->group, sizeof(server->group), "%s", config->group ? config->group : "");
	server->attach_timeout_ms = config->attach_timeout_ms;
	server->swap_timeout_ms = config->swap_timeout_ms;
	server->idle_timeout_ms = config->idle_timeout_ms;
	server->max_connections_per_uid = config->max_connections_per_uid;
	server->host = config->host;
	server->listen_fd = fd;
	server->finished_fd = -1;
	pthread_mutex_init(&server->lock, NULL);
	err = watch(server, loop);
	if (err) {
		vgpu_error_set(error, err, "cannot serve the tenant socket: %s", strerror(-err));
		local_server_destroy(server);
		return err;
	}
	*out = server;
	return 0;
}

/* May the peer on sock have another connection? (At most
 * LOCAL_MAX_CONNECTIONS in all, max_connections_per_uid per peer user.) */
static bool admit(struct local_server *server, int sock, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned all = 0, mine = 0;
	struct local_conn *conn;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn("refusing a tenant connection: no peer credentials: %s", strerror(errno));
		return false;
	}
	*uid = cred.uid;
	pthread_mutex_lock(&server->lock);
	for (conn = server->conns; conn; conn = conn->next) {
		if (atomic_load(&conn->finished))
			continue;
		all++;
		mine += conn->uid == cred.uid;
	}
	pthread_mutex_unlock(&server->lock);
	if (all >= LOCAL_MAX_CONNECTIONS) {
		vgpud_log_ratelimited(&server->refusals, VGPUD_LOG_WARN,
		                      "refusing a tenant connection: %d are open already",
		                      LOCAL_MAX_CONNECTIONS);
		return false;
	}
	if (mine >= server->max_connections_per_uid) {
		vgpud_log_ratelimited(&server->refusals, VGPUD_LOG_WARN,
		                      "refusing a tenant connection of user %u (pid %d): it has "
		                      "%u open (max_connections_per_uid)", (unsigned)cred.uid,
		                      (int)cred.pid, mine);
		return false;
	}
	return true;
}

static void local_server_accept(struct local_server *server)
{
	for (;;) {
		struct local_conn *conn;
		unsigned i;
		uid_t uid;
		int sock = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC), err;

		if (sock < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("cannot accept a tenant connection: %s", strerror(errno));
			return;
		}
		if (!admit(server, sock, &uid)) {
			close(sock);
			continue;
		}
		conn = calloc(1, sizeof(*conn));
		if (!conn) {
			close(sock);
			continue;
		}
		conn->base.ops = &local_ops;
		conn->base.kind = "local socket";
		conn->server = server;
		conn->sock = sock;
		conn->uid = uid;
		conn->backend = conn->kick_fd = -1;
		migrate_local_init(&conn->migrate);
		for (i = 0; i < VGPU_MSIX_VECTORS; i++)
			conn->irq_fds[i] = -1;
		pthread_mutex_init(&conn->backend_lock, NULL);
		err = pthread_create(&conn->thread, NULL, conn_main, conn);
		if (err) {
			log_warn("cannot start a thread for a tenant connection: %s", strerror(err));
			conn_free(conn);
			continue;
		}
		pthread_mutex_lock(&server->lock);
		conn->next = server->conns;
		server->conns = conn;
		server->live++;
		pthread_mutex_unlock(&server->lock);
	}
}

static void local_server_reap(struct local_server *server)
{
	struct local_conn **link, *done = NULL;

	pthread_mutex_lock(&server->lock);
	link = &server->conns;
	while (*link) {
		struct local_conn *conn = *link;

		if (atomic_load(&conn->finished)) {
			*link = conn->next;
			conn->next = done;
			done = conn;
			server->live--;
		} else {
			link = &conn->next;
		}
	}
	pthread_mutex_unlock(&server->lock);
	while (done) {
		struct local_conn *next = done->next;

		pthread_join(done->thread, NULL);
		conn_free(done);
		done = next;
	}
}

unsigned local_server_connections(struct local_server *server)
{
	unsigned n;

	pthread_mutex_lock(&server->lock);
	n = server->live;
	pthread_mutex_unlock(&server->lock);
	return n;
}

void local_server_destroy(struct local_server *server)
{
	struct local_conn *conn;

	if (!server)
		return;
	sd_event_source_disable_unref(server->listen_source);
	sd_event_source_disable_unref(server->finished_source);
	close(server->listen_fd);
	vgpud_unlink_unix(server->path);
	pthread_mutex_lock(&server->lock);
	for (conn = server->conns; conn; conn = conn->next) {
		/* Wake the thread; the frontend sees end of file. Descriptors
		 * stay open until the thread is joined. */
		shutdown(conn->sock, SHUT_RDWR);
	}
	conn = server->conns;
	server->conns = NULL;
	pthread_mutex_unlock(&server->lock);
	while (conn) {
		struct local_conn *next = conn->next;

		pthread_join(conn->thread, NULL);
		conn_free(conn);
		conn = next;
	}
	if (server->finished_fd >= 0)
		close(server->finished_fd);
	pthread_mutex_destroy(&server->lock);
	free(server);
}
