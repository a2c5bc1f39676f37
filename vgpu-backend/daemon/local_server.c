// SPDX-License-Identifier: MIT
/* local_server.c - vgpud's side of the local transport, see local_server.h. */
#include "local_server.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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
#include "work_pool.h"

/* Connections at once (attached or still attaching). */
#define LOCAL_MAX_CONNECTIONS 1024
/* Messages of one tenant handled per wakeup before the others' turn. */
#define LOCAL_MESSAGES_PER_WAKEUP 16
/* How late a connection's deadline may fire (sd-event coalesces timers). */
#define LOCAL_TIMER_ACCURACY_US 1000

/* The loop's view of a connection (see conn_watch). */
enum conn_state {
	CONN_ATTACHING, /* waiting for ATTACH or IMPORT (then its job) */
	CONN_SERVING,   /* attached: messages and kicks */
	CONN_ENDING,    /* its detach job runs; then it is freed */
};

/* What a connection hands to a worker (it waits for the core or tenant). */
enum conn_job_kind {
	CONN_JOB_HANDSHAKE, /* ATTACH (the device's attach) or IMPORT */
	CONN_JOB_EXPORT,    /* an EXPORT request */
	CONN_JOB_IDLE,      /* does the quiet tenant hold anything? */
	CONN_JOB_DETACH,    /* the end: detach the device */
};

struct local_conn {
	struct vgpu_transport base; /* first: the transport ops get this */
	struct local_server *server;
	int sock;
	int backend;
	int kick_fd;
	int irq_fds[VGPU_MSIX_VECTORS];
	atomic_bool dead;
	pthread_mutex_t backend_lock; /* one backend request at a time */
	uint32_t backend_seq;
	struct vgpud_device *device;
	char vm_name[VGPU_LOCAL_NAME_MAX];
	uid_t uid; /* the peer's (SO_PEERCRED) */
	uint32_t attach_seq; /* the ATTACH request's seq, echoed in its reply */
	struct migrate_local migrate; /* EXPORT (the connection's jobs) */

	/* The loop's, or its job's while busy (the pool orders the two). */
	enum conn_state state;
	sd_event_source *io, *kick_io, *timer;
	int64_t accepted, last_activity; /* ms, CLOCK_MONOTONIC */
	bool busy;                       /* a job of it is with the pool */
	struct work_job job;
	enum conn_job_kind job_kind;
	int job_result;
	struct vgpu_local_msg msg; /* the message being served */
	bool detach_requested;
	uint32_t detach_seq;
	/* a reply the socket did not take yet (the tenant does not read) */
	bool out_pending;
	uint32_t out_type, out_seq, out_size;
	int64_t out_ms;
	uint8_t out[sizeof(struct vgpu_local_reg)];

	struct local_conn *next; /* the server's list (its lock) */
};

struct local_server {
	char path[108];
	char group[64];
	uint32_t attach_timeout_ms;
	uint32_t swap_timeout_ms;
	uint32_t idle_timeout_ms;
	uint32_t max_connections_per_uid;
	struct vgpu_device_host host;
	struct work_pool *pool;
	sd_event *loop;
	int listen_fd;
	sd_event_source *listen_source;
	bool stopping; /* local_server_destroy: jobs' completions stop there */
	pthread_mutex_t lock; /* conns, live (local_server_connections) */
	struct local_conn *conns;
	unsigned live;
	struct vgpud_ratelimit refusals; /* the accepting thread's */
};

static struct local_conn *conn_of(struct vgpu_transport *t)
{
	return (struct local_conn *)t;
}

/* The frontend is gone or misbehaves: every further op fails at once and
 * the loop, seeing the connection shut down, has a worker detach it. gone_after_export: the
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

/* The first message, msg (the loop received it): IMPORT, or ATTACH and
 * the device's attach (a worker: it waits for the core). */
static int handshake(struct local_conn *conn, struct vgpu_local_msg *msg)
{
	struct local_server *server = conn->server;
	const struct vgpu_local_attach *a = &msg->payload.attach;
	struct vgpu_attach_params params;
	struct vgpu_bar2_segment mailbox;
	char why[VGPU_LOCAL_MESSAGE_MAX];
	struct vgpu_error error = VGPU_ERROR_INIT;
	unsigned i;
	int err;

	conn->attach_seq = msg->header.seq;
	if (msg->header.type == VGPU_LOCAL_IMPORT) {
		serve_import(conn, msg);
		return -ECONNABORTED; /* the connection ends after the reply */
	}
	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_ATTACH, false, sizeof(*a), VGPU_LOCAL_MAX_FDS)) {
		vgpu_local_msg_close_fds(msg);
		attach_reply(conn, -EPROTO, "the first message must be ATTACH with 5 descriptors "
		             "(backend channel, kick, 3 interrupts); see local_protocol.h", NULL, 0);
		return -EPROTO;
	}
	/* Take the descriptors now so every exit closes them. */
	conn->backend = msg->fds[0];
	conn->kick_fd = msg->fds[1];
	for (i = 0; i < VGPU_MSIX_VECTORS; i++)
		conn->irq_fds[i] = msg->fds[2 + i];
	msg->nfds = 0;

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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_end(struct local_conn *conn, int err);
static void conn_watch(struct local_conn *conn);

/* The connection ends (worker, or local_server_destroy): an export in
 * progress is cancelled, the device detached, a DETACH confirmed. */
static void conn_detach(struct local_conn *conn)
{
	migrate_local_release(&conn->migrate);
	if (conn->device) {
		vgpu_device_detach(conn->device);
		conn->device = NULL;
	}
	if (conn->detach_requested && !atomic_load(&conn->dead)) {
		struct vgpu_local_status status = { 0 };
		int err;

		/* detached either way; the tenant may have gone without waiting */
		err = vgpu_local_send(conn->sock, VGPU_LOCAL_DETACH, conn->detach_seq,
		                      VGPU_LOCAL_FLAG_REPLY, &status, sizeof(status), NULL, 0,
		                      (int)conn->server->swap_timeout_ms);
		if (err < 0 && err != -EPIPE)
			log_debug("tenant '%s': cannot confirm its DETACH: %s", conn->vm_name,
			          strerror(-err));
	}
	atomic_store(&conn->dead, true);
	shutdown(conn->sock, SHUT_RDWR);
}

/* A worker: what conn's message asks for waits for the core or the tenant. */
static void conn_job_run(struct work_job *job)
{
	struct local_conn *conn = (struct local_conn *)((char *)job -
	                                                offsetof(struct local_conn, job));

	switch (conn->job_kind) {
	case CONN_JOB_HANDSHAKE:
		conn->job_result = handshake(conn, &conn->msg);
		break;
	case CONN_JOB_EXPORT:
		conn->job_result = migrate_local_serve(&conn->migrate, conn->server->host.ctx,
		                                       conn->device, conn->sock, &conn->msg,
		                                       (int)conn->server->swap_timeout_ms);
		break;
	case CONN_JOB_IDLE:
		conn->job_result = vgpu_device_holds_resources(conn->device);
		break;
	case CONN_JOB_DETACH:
		conn_detach(conn);
		break;
	}
}

static void conn_free(struct local_conn *conn)
{
	unsigned i;

	sd_event_source_disable_unref(conn->io);
	sd_event_source_disable_unref(conn->kick_io);
	sd_event_source_disable_unref(conn->timer);
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

/* Off the server's list, and freed (the loop; its device is detached). */
static void conn_remove(struct local_conn *conn)
{
	struct local_server *server = conn->server;
	struct local_conn **link;

	pthread_mutex_lock(&server->lock);
	for (link = &server->conns; *link; link = &(*link)->next) {
		if (*link == conn) {
			*link = conn->next;
			server->live--;
			break;
		}
	}
	pthread_mutex_unlock(&server->lock);
	conn_free(conn);
}

/* The kicks of an attached tenant, on the loop. */
static int on_kick(sd_event_source *source, int fd, uint32_t revents, void *userdata);

/* The handshake job is done: serve the tenant, or end the connection. */
static void handshake_done(struct local_conn *conn)
{
	int err = conn->job_result;

	if (!err) {
		err = sd_event_add_io(conn->server->loop, &conn->kick_io,
		                      conn->kick_fd, EPOLLIN, on_kick, conn);
		if (err < 0)
			log_warn("tenant '%s': cannot watch its kicks (%s); detaching it",
			         conn->vm_name, strerror(-err));
	}
	if (err) {
		conn_end(conn, 0);
		return;
	}
	conn->state = CONN_SERVING;
	conn->last_activity = now_ms();
	conn_watch(conn);
}

/* The loop: conn's job ran; go on with it. */
static void conn_job_done(struct work_job *job)
{
	struct local_conn *conn = (struct local_conn *)((char *)job -
	                                                offsetof(struct local_conn, job));

	conn->busy = false;
	if (conn->job_kind == CONN_JOB_DETACH) {
		conn_remove(conn);
		return;
	}
	if (conn->server->stopping)
		return; /* local_server_destroy detaches what is left */
	switch (conn->job_kind) {
	case CONN_JOB_HANDSHAKE:
		handshake_done(conn);
		return;
	case CONN_JOB_EXPORT:
		if (conn->job_result) {
			conn_end(conn, conn->job_result);
			return;
		}
		break;
	case CONN_JOB_IDLE:
		if (!conn->job_result) {
			log_info("tenant '%s' holds nothing and sent nothing for %u ms "
			         "(idle_timeout_ms); detaching it", conn->vm_name,
			         conn->server->idle_timeout_ms);
			conn_end(conn, 0);
			return;
		}
		break; /* quiet but holding memory: look again later */
	case CONN_JOB_DETACH:
		break;
	}
	conn->last_activity = now_ms();
	conn_watch(conn);
}

/* Hand conn's next step to a worker. Without one (none could be started)
 * it runs here, late but correct. */
static void conn_submit(struct local_conn *conn, enum conn_job_kind kind)
{
	int err;

	conn->job_kind = kind;
	conn->busy = true;
	conn->job.run = conn_job_run;
	conn->job.done = conn_job_done;
	err = work_pool_submit(conn->server->pool, &conn->job);
	if (err) {
		log_warn("tenant '%s': no worker thread (%s); serving it on the event loop",
		         conn->vm_name[0] ? conn->vm_name : "?", strerror(-err));
		conn_job_run(&conn->job);
		conn_job_done(&conn->job);
	}
}

/* The connection ends (the loop): err < 0 is what the tenant did wrong.
 * Its device is detached by a worker, which then frees it on the loop. */
static void conn_end(struct local_conn *conn, int err)
{
	if (conn->state == CONN_SERVING && err < 0 && err != -EPIPE &&
	    !atomic_load(&conn->dead))
		log_warn("tenant '%s' sent a malformed message (%s); detaching it", conn->vm_name,
		         strerror(-err));
	conn->state = CONN_ENDING;
	sd_event_source_set_enabled(conn->io, SD_EVENT_OFF);
	if (conn->kick_io)
		sd_event_source_set_enabled(conn->kick_io, SD_EVENT_OFF);
	sd_event_source_set_enabled(conn->timer, SD_EVENT_OFF);
	if (!conn->device) {
		atomic_store(&conn->dead, true);
		conn_remove(conn);
		return;
	}
	conn_submit(conn, CONN_JOB_DETACH);
}

/* Reply to the tenant now, or (its socket is full) once it is writable:
 * the tenant then has swap_timeout_ms to read it, and nothing more of it
 * is read meanwhile. 0 or a negative errno (the connection ends). */
static int conn_reply(struct local_conn *conn, uint32_t type, uint32_t seq, const void *payload,
                      uint32_t size)
{
	int err = vgpu_local_send(conn->sock, type, seq, VGPU_LOCAL_FLAG_REPLY, payload, size,
	                          NULL, 0, 0);

	if (err != -ETIMEDOUT)
		return err;
	conn->out_type = type;
	conn->out_seq = seq;
	conn->out_size = size;
	memcpy(conn->out, payload, size);
	conn->out_pending = true;
	conn->out_ms = now_ms();
	return 0;
}

/* Write the reply that waits, if the socket takes it now. */
static int conn_flush(struct local_conn *conn)
{
	int err = vgpu_local_send(conn->sock, conn->out_type, conn->out_seq,
	                          VGPU_LOCAL_FLAG_REPLY, conn->out, conn->out_size, NULL, 0, 0);

	if (err == -ETIMEDOUT)
		return 0;
	conn->out_pending = false;
	return err;
}

/* One message of an attached tenant (in conn->msg). 0: go on (a job may
 * have taken it), 1: DETACH, or a negative errno: the connection ends. */
static int serve_message(struct local_conn *conn)
{
	struct vgpu_local_msg *msg = &conn->msg;

	switch (msg->header.type) {
	case VGPU_LOCAL_REG_READ:
		if (vgpu_local_msg_expect(msg, VGPU_LOCAL_REG_READ, false,
		                          sizeof(struct vgpu_local_reg), 0))
			break;
		msg->payload.reg.value = vgpu_device_reg_read(conn->device, msg->payload.reg.offset);
		return conn_reply(conn, VGPU_LOCAL_REG_READ, msg->header.seq, &msg->payload.reg,
		                  sizeof(msg->payload.reg));
	case VGPU_LOCAL_REG_WRITE:
		if (vgpu_local_msg_expect(msg, VGPU_LOCAL_REG_WRITE, false,
		                          sizeof(struct vgpu_local_reg), 0))
			break;
		vgpu_device_reg_write(conn->device, msg->payload.reg.offset, msg->payload.reg.value);
		return 0;
	case VGPU_LOCAL_EXPORT:
		conn_submit(conn, CONN_JOB_EXPORT);
		return 0;
	case VGPU_LOCAL_DETACH:
		if (vgpu_local_msg_expect(msg, VGPU_LOCAL_DETACH, false, 0, 0))
			break;
		conn->detach_requested = true;
		conn->detach_seq = msg->header.seq;
		return 1;
	default:
		break;
	}
	vgpu_local_msg_close_fds(msg);
	return -EPROTO;
}

/* The first message (within attach_timeout_ms): to a worker. */
static void read_first(struct local_conn *conn)
{
	int err = vgpu_local_recv(conn->sock, &conn->msg, 0);

	if (err == -ETIMEDOUT)
		return;
	if (err) {
		log_info("tenant connection closed before attaching: %s", strerror(-err));
		conn_end(conn, 0);
		return;
	}
	conn_submit(conn, CONN_JOB_HANDSHAKE);
	conn_watch(conn);
}

/* An attached tenant's messages, a few per wakeup (the others' turn
 * then), one at a time: none while a reply waits or a job runs. */
static void read_messages(struct local_conn *conn)
{
	for (unsigned i = 0; i < LOCAL_MESSAGES_PER_WAKEUP; i++) {
		int err;

		if (atomic_load(&conn->dead)) {
			conn_end(conn, 0);
			return;
		}
		if (conn->busy || conn->out_pending)
			break;
		err = vgpu_local_recv(conn->sock, &conn->msg, 0);
		if (err == -ETIMEDOUT)
			break;
		conn->last_activity = now_ms();
		if (!err)
			err = serve_message(conn);
		if (err) {
			conn_end(conn, err);
			return;
		}
	}
	conn_watch(conn);
}

static int on_sock(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct local_conn *conn = userdata;
	int err;

	(void)source, (void)fd;
	if (conn->out_pending) {
		err = conn_flush(conn);
		if (err)
			conn_end(conn, err);
		else if (conn->out_pending)
			conn_watch(conn);
		else
			read_messages(conn);
	} else if (conn->state == CONN_ATTACHING) {
		read_first(conn);
	} else if (revents) {
		read_messages(conn);
	}
	return 0;
}

static int on_kick(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct local_conn *conn = userdata;
	uint64_t count;

	(void)source, (void)revents;
	if (read(fd, &count, sizeof(count)) == sizeof(count))
		vgpu_device_kick(conn->device);
	conn->last_activity = now_ms();
	return 0;
}

/* Deadlines: a reply not read within swap_timeout_ms, no ATTACH within
 * attach_timeout_ms, idle_timeout_ms of silence (a worker looks whether
 * the tenant holds anything). */
static int on_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
	struct local_conn *conn = userdata;
	const int64_t now = now_ms();
	const struct local_server *server = conn->server;

	(void)source, (void)usec;
	if (conn->out_pending && now >= conn->out_ms + server->swap_timeout_ms) {
		conn_end(conn, -ETIMEDOUT);
		return 0;
	}
	if (!conn->busy && conn->state == CONN_ATTACHING &&
	    now >= conn->accepted + server->attach_timeout_ms) {
		log_info("tenant connection closed before attaching: %s",
		         "no ATTACH within attach_timeout_ms");
		conn_end(conn, 0);
		return 0;
	}
	if (!conn->busy && !conn->out_pending && conn->state == CONN_SERVING &&
	    server->idle_timeout_ms && now >= conn->last_activity + server->idle_timeout_ms) {
		conn_submit(conn, CONN_JOB_IDLE);
		conn_watch(conn);
		return 0;
	}
	conn_watch(conn);
	return 0;
}

/* What the loop waits for on conn: its reply to be written, else (no job
 * running) its messages and kicks; and the next deadline. */
static void conn_watch(struct local_conn *conn)
{
	const struct local_server *server = conn->server;
	uint32_t events = conn->out_pending ? EPOLLOUT : conn->busy ? 0 : EPOLLIN;
	int64_t deadline = -1;

	if (conn->state == CONN_ENDING)
		return;
	if (events)
		sd_event_source_set_io_events(conn->io, events);
	sd_event_source_set_enabled(conn->io, events ? SD_EVENT_ON : SD_EVENT_OFF);
	if (conn->kick_io)
		sd_event_source_set_enabled(conn->kick_io, conn->busy ? SD_EVENT_OFF : SD_EVENT_ON);
	if (conn->out_pending)
		deadline = conn->out_ms + server->swap_timeout_ms;
	else if (conn->busy)
		deadline = -1;
	else if (conn->state == CONN_ATTACHING)
		deadline = conn->accepted + server->attach_timeout_ms;
	else if (server->idle_timeout_ms)
		deadline = conn->last_activity + server->idle_timeout_ms;
	if (deadline < 0) {
		sd_event_source_set_enabled(conn->timer, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(conn->timer, (uint64_t)deadline * 1000);
	sd_event_source_set_enabled(conn->timer, SD_EVENT_ONESHOT);
}

/* -------------------------------------------------------------- server */

static void local_server_accept(struct local_server *server);

static int on_listen(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	(void)source, (void)fd, (void)revents;
	local_server_accept(userdata);
	return 0;
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
	server->pool = config->pool;
	server->loop = loop;
	server->listen_fd = fd;
	pthread_mutex_init(&server->lock, NULL);
	err = sd_event_add_io(loop, &server->listen_source, server->listen_fd, EPOLLIN, on_listen,
	                      server);
	if (err < 0) {
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

/* A new connection on the loop: its first message within attach_timeout_ms.
 * 0 or a negative errno. */
static int conn_start(struct local_server *server, struct local_conn *conn)
{
	int err = sd_event_add_io(server->loop, &conn->io, conn->sock, EPOLLIN, on_sock, conn);

	if (err >= 0)
		err = sd_event_add_time(server->loop, &conn->timer, CLOCK_MONOTONIC, UINT64_MAX,
		                        LOCAL_TIMER_ACCURACY_US, on_timer, conn);
	if (err < 0)
		return err;
	conn->accepted = now_ms();
	conn_watch(conn);
	return 0;
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
		err = conn_start(server, conn);
		if (err) {
			log_warn("cannot watch a tenant connection: %s", strerror(-err));
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
	if (server->listen_fd >= 0) {
		close(server->listen_fd);
		vgpud_unlink_unix(server->path);
	}
	/* Wake what waits for a tenant; the frontends see end of file. The
	 * jobs that run finish (those that detach free their connection),
	 * then the rest is detached here. */
	server->stopping = true;
	pthread_mutex_lock(&server->lock);
	for (conn = server->conns; conn; conn = conn->next)
		shutdown(conn->sock, SHUT_RDWR);
	pthread_mutex_unlock(&server->lock);
	if (server->pool)
		work_pool_flush(server->pool);
	pthread_mutex_lock(&server->lock);
	conn = server->conns;
	server->conns = NULL;
	pthread_mutex_unlock(&server->lock);
	while (conn) {
		struct local_conn *next = conn->next;

		conn_detach(conn);
		conn_free(conn);
		conn = next;
	}
	pthread_mutex_destroy(&server->lock);
	free(server);
}
