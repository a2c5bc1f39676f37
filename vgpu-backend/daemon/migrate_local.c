// SPDX-License-Identifier: MIT
/* migrate_local.c - EXPORT on the local socket, see migrate_local.h. */
#include "migrate_local.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vgpu/core.h"
#include "vgpu/abi/local_protocol.h"

#include "device.h"
#include "local_socket.h"
#include "log.h"
#include "migrate.h"
#include "vgpu/error.h"

void migrate_local_init(struct migrate_local *m)
{
	memset(m, 0, sizeof(*m));
	m->stream_fd = -1;
}

static void close_stream(struct migrate_local *m)
{
	if (m->stream_fd >= 0)
		close(m->stream_fd);
	m->stream_fd = -1;
}

/* End an export in progress: the shutdown wakes a pre-copy blocked on a
 * stream nobody reads any more, before the cancel waits for it. */
static void cancel(struct migrate_local *m)
{
	if (m->stream_fd >= 0)
		shutdown(m->stream_fd, SHUT_RDWR);
	migrate_export_cancel(m->export);
	m->export = NULL;
	close_stream(m);
}

static int start(struct migrate_local *m, struct vgpud *d, struct vgpud_device *dev, int fd,
                 uint32_t flags, struct vgpu_local_export_reply *r)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	int err;

	if (m->export || m->held) {
		close(fd);
		snprintf(r->message, sizeof(r->message), "VM '%s' is being exported already",
		         dev->name);
		return -EBUSY;
	}
	err = migrate_export_start(d, dev->name, fd, -1, flags & VGPU_LOCAL_EXPORT_PRECOPY,
	                           &m->export, &error);
	if (err) {
		vgpu_error_text(&error, r->message, sizeof(r->message));
		close(fd);
		return err;
	}
	m->stream_fd = fd;
	r->dirty_tracking = migrate_export_tracking(m->export);
	log_info("VM '%s': its frontend exports it (%s)", dev->name,
	         flags & VGPU_LOCAL_EXPORT_PRECOPY ? "pre-copy" : "stop-and-copy");
	return 0;
}

static void figures(struct vgpud_device *dev, struct vgpu_local_export_reply *r)
{
	struct vgpu_vm_stats stats;

	vgpu_core_vm_stats(dev->vm, &stats);
	r->vm_bytes = stats.allocated_bytes;
}

int migrate_local_serve(struct migrate_local *m, struct vgpud *d, struct vgpud_device *dev,
                        int sock, struct vgpu_local_msg *msg, int timeout_ms)
{
	const struct vgpu_local_export *req = &msg->payload.export_request;
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_local_export_reply r;
	struct migrate_result result;
	bool is_start = msg->header.size == sizeof(*req) && req->op == VGPU_LOCAL_EXPORT_START;
	int err = 0;

	memset(&r, 0, sizeof(r));
	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_EXPORT, false, sizeof(*req), is_start ? 1 : 0) ||
	    (req->flags & ~(is_start ? VGPU_LOCAL_EXPORT_PRECOPY : 0u))) {
		vgpu_local_msg_close_fds(msg);
		return -EPROTO;
	}
	switch (req->op) {
	case VGPU_LOCAL_EXPORT_START:
		msg->nfds = 0;
		err = start(m, d, dev, msg->fds[0], req->flags, &r);
		break;
	case VGPU_LOCAL_EXPORT_PROGRESS:
		if (m->export) {
			uint64_t bytes, pending;
			unsigned throttle;

			migrate_export_progress(m->export, &r.rounds, &bytes, &pending, &throttle);
			r.bytes_sent = bytes;
			r.pending_kib = (uint32_t)((pending + 1023) >> 10);
			r.dirty_tracking = migrate_export_tracking(m->export);
		}
		break;
	case VGPU_LOCAL_EXPORT_FINISH:
		if (!m->export) {
			err = -EINVAL;
			snprintf(r.message, sizeof(r.message), "no export of VM '%s' to finish",
			         dev->name);
			break;
		}
		err = migrate_export_finish_held(m->export, &result, &error);
		vgpu_error_text(&error, r.message, sizeof(r.message));
		m->export = NULL;
		close_stream(m); /* the frontend reads to the end of the stream */
		m->held = !err;
		r.rounds = result.rounds;
		r.bytes_sent = result.bytes_sent;
		r.precopy_bytes = result.precopy_bytes;
		r.downtime_ns = result.downtime_ns;
		r.total_ns = result.total_ns;
		r.dirty_tracking = result.dirty_tracking;
		break;
	case VGPU_LOCAL_EXPORT_CANCEL:
		cancel(m);
		break;
	case VGPU_LOCAL_EXPORT_RESUME:
		cancel(m);
		if (m->held)
			migrate_export_thaw(dev);
		m->held = false;
		break;
	default:
		return -EPROTO;
	}
	if (err && !r.message[0])
		snprintf(r.message, sizeof(r.message), "%s", strerror(-err));
	r.status = err;
	figures(dev, &r);
	return vgpu_local_send(sock, VGPU_LOCAL_EXPORT, msg->header.seq, VGPU_LOCAL_FLAG_REPLY, &r,
	                       sizeof(r), NULL, 0, timeout_ms);
}

void migrate_local_release(struct migrate_local *m)
{
	cancel(m);
	m->held = false;
}
