// SPDX-License-Identifier: MIT
/*
 * transport_mdev.c - vgpud's mdev transport: daemon/transport.h over the
 * control device of vgpu_mdev.ko (vgpu/abi/mdev_control.h, host-kmod/README.md).
 * This file is its byte-carrying core: the transport ops (the device
 * model's calls become ioctls) and the event handler on vgpud's event loop
 * (the module's events become calls of the hooks, of an mdev's worker and
 * of the device model).
 * Its other files are listed in transport_mdev_internal.h.
 *
 * The event handler (on the loop) reads the module's events:
 *
 *	CREATE    hooks.create decides; the mdev gets its worker thread
 *	          (mdev_worker.c)
 *	EXISTS    an mdev from before this vgpud: likewise, never refused
 *	OPEN      on the mdev's worker: hooks.attach, map the mailbox, push
 *	          FEATURES, IRQ_MASK and STATUS into the module's register file
 *	CLOSE     on the worker: detach (it may wait for an eviction)
 *	RESET     on the worker: detach + hooks.attach (the same VM again)
 *	REMOVE    on the worker: detach if still attached, hooks.remove; the
 *	          worker ends and the event handler reaps it
 *	REG_WRITE doorbells -> vgpu_device_kick, IRQ_ACK/IRQ_MASK ->
 *	          vgpu_device_reg_write (the module has applied them already,
 *	          mdev_registers.c): on the loop, which never waits for the
 *	          core
 *
 * The module sends one request per mdev at a time and waits for its reply;
 * a worker answers its own mdev's requests, so a VM whose reset waits for
 * the core holds up nothing but itself.
 *
 * Failure. The module is always reachable; an op fails only when the device
 * is closed or removed (ENODEV/ENOENT), which the kernel follows with CLOSE
 * or REMOVE events that detach the device here. Every ioctl's result is
 * checked: what cannot be undone is logged.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/mdev_control.h"
#include "vgpu/error.h"
#include "transport.h"

#include "log.h"
#include "transport_mdev.h"
#include "transport_mdev_internal.h"

static struct mdev_vgpu *vgpu_of(struct vgpu_transport *t)
{
	return (struct mdev_vgpu *)t;
}

/* An ioctl on the control device: 0 or a negative errno. */
int mdev_control(struct mdev_server *s, unsigned long request, void *arg)
{
	if (s->control_ioctl)
		return s->control_ioctl(s->control_ctx, s->fd, request, arg);
	return ioctl(s->fd, request, arg) < 0 ? -errno : 0;
}

/* ------------------------------------------------------ transport ops */

static int op_map_region(struct vgpu_transport *t, const struct vgpu_bar2_segment *seg)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_region r = {
		.device_id = v->id,
		.fd = seg->fd,
		.bar2_offset = seg->bar2_offset,
		.bytes = seg->bytes,
		.fd_offset = seg->fd_offset,
	};

	return mdev_control(v->server, VGPU_MDEV_MAP_REGION, &r);
}

static int op_unmap_region(struct vgpu_transport *t, uint64_t bar2_offset, uint64_t bytes)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_region r = {
		.device_id = v->id, .fd = -1, .bar2_offset = bar2_offset, .bytes = bytes,
	};

	return mdev_control(v->server, VGPU_MDEV_UNMAP_REGION, &r);
}

static int op_window_block(struct vgpu_transport *t, uint32_t index, uint64_t bar2_offset,
                           uint64_t bytes)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_window_block b = {
		.device_id = v->id, .index = index, .bar2_offset = bar2_offset, .bytes = bytes,
	};

	return mdev_control(v->server, VGPU_MDEV_WINDOW_BLOCK, &b);
}

static int op_window_map(struct vgpu_transport *t, uint32_t index, bool shadow,
                         const struct vgpu_bar2_segment *segments, unsigned count)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_window_map m = {
		.device_id = v->id,
		.index = index,
		.target = shadow ? VGPU_MDEV_WINDOW_SHADOW : VGPU_MDEV_WINDOW_REAL,
		.count = count,
	};

	if (!count || count > VGPU_MDEV_WINDOW_SEGMENTS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < count; i++) {
		m.segment[i].bar2_offset = segments[i].bar2_offset;
		m.segment[i].bytes = segments[i].bytes;
		m.segment[i].fd = segments[i].fd;
		m.segment[i].fd_offset = segments[i].fd_offset;
	}
	return mdev_control(v->server, VGPU_MDEV_WINDOW_MAP, &m);
}

/* Never blocks: one ioctl that takes a spinlock and signals an eventfd. */
static void op_raise_irq(struct vgpu_transport *t, unsigned vector)
{
	mdev_registers_raise_irq(vgpu_of(t), vector);
}

static int op_dma(struct mdev_vgpu *v, uint64_t guest_address, void *buf, size_t bytes,
                  bool write)
{
	struct vgpu_mdev_dma d = {
		.device_id = v->id,
		.flags = write ? VGPU_MDEV_DMA_WRITE : 0,
		.iova = guest_address,
	};
	int err = 0;

	while (bytes && !err) {
		size_t n = bytes < VGPU_MDEV_DMA_MAX ? bytes : VGPU_MDEV_DMA_MAX;

		d.buffer = (uintptr_t)buf;
		d.bytes = n;
		err = mdev_control(v->server, VGPU_MDEV_DMA_RW, &d);
		d.iova += n;
		buf = (uint8_t *)buf + n;
		bytes -= n;
	}
	return err;
}

static int op_dma_read(struct vgpu_transport *t, uint64_t guest_address, void *dst,
                       size_t bytes)
{
	return op_dma(vgpu_of(t), guest_address, dst, bytes, false);
}

static int op_dma_write(struct vgpu_transport *t, uint64_t guest_address, const void *src,
                        size_t bytes)
{
	return op_dma(vgpu_of(t), guest_address, (void *)src, bytes, true);
}

const struct vgpu_transport_ops mdev_transport_ops = {
	.map_region = op_map_region,
	.unmap_region = op_unmap_region,
	.window_block = op_window_block,
	.window_map = op_window_map,
	.raise_irq = op_raise_irq,
	.dma_read = op_dma_read,
	.dma_write = op_dma_write,
};

bool mdev_transport_is(const struct vgpu_transport *t)
{
	return t->ops == &mdev_transport_ops;
}

/* ------------------------------------------------------ to the module */

void mdev_reply(struct mdev_server *s, uint32_t id, uint32_t seq, int status, const char *why)
{
	struct vgpu_mdev_reply r = { .device_id = id, .seq = seq, .status = status };
	int err;

	if (why)
		snprintf(r.message, sizeof(r.message), "%s", why);
	err = mdev_control(s, VGPU_MDEV_REPLY, &r);
	if (err)
		log_warn("mdev device %u: the module no longer waits for our answer (%s)", id,
		         strerror(-err));
}

/* ------------------------------------------------------ events */

static struct mdev_vgpu *find_vgpu(struct mdev_server *s, uint32_t id)
{
	struct mdev_vgpu *v;

	for (v = s->vgpus; v; v = v->next)
		if (v->id == id)
			return v;
	return NULL;
}

/* The mdev's UUID as the kernel writes it (lower case). */
static void format_uuid(const struct vgpu_mdev_event *e, char out[37])
{
	const uint8_t *u = e->payload.device.uuid;

	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	         u[13], u[14], u[15]);
}

/* A known mdev with its worker, in the server's list. 0, or a negative
 * errno + why. */
static int add_vgpu(struct mdev_server *s, const struct vgpu_mdev_event *e, const char *uuid,
                    struct vgpu_error *error)
{
	struct mdev_vgpu *v;
	int err = mdev_vgpu_create(s, e->device_id, e->payload.device.type_index, uuid, &v, error);

	if (err)
		return err;
	pthread_mutex_lock(&s->lock);
	v->next = s->vgpus;
	s->vgpus = v;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* CREATE (existing = false; the module waits for the answer) or EXISTS. */
static void handle_create(struct mdev_server *s, const struct vgpu_mdev_event *e, bool existing)
{
	unsigned type = e->payload.device.type_index;
	struct vgpu_error why = VGPU_ERROR_INIT;
	char uuid[37];
	int err;

	format_uuid(e, uuid);
	if (type >= s->type_count) {
		err = vgpu_error_set(&why, -EINVAL, "unknown mdev type");
	} else if (find_vgpu(s, e->device_id)) {
		err = vgpu_error_set(&why, -EEXIST, "vgpud: device table");
	} else {
		err = s->hooks.create(s->hooks.ctx, s->types[type].name, uuid, existing, &why);
		if (!err) {
			err = add_vgpu(s, e, uuid, &why);
			if (err) /* what create took goes back */
				s->hooks.remove(s->hooks.ctx, s->types[type].name, uuid);
		}
	}
	if (!existing)
		mdev_reply(s, e->device_id, e->seq, err, vgpu_error_is_set(&why) ? why.msg : NULL);
	else if (err)
		log_warn("mdev %s of %s (created before vgpud started): %s", uuid,
		         type < s->type_count ? s->types[type].name : "an unknown type",
		         vgpu_error_msg(&why));
	if (err)
		return;
	mdev_push_available(s, type);
	if (!existing)
		log_info("mdev %u created as %s", e->device_id, s->types[type].name);
}

static void handle_remove(struct mdev_server *s, struct mdev_vgpu *v)
{
	struct mdev_vgpu **p;

	pthread_mutex_lock(&s->lock);
	for (p = &s->vgpus; *p; p = &(*p)->next)
		if (*p == v) {
			*p = v->next;
			break;
		}
	v->next = s->retired;
	s->retired = v;
	pthread_mutex_unlock(&s->lock);
	mdev_queue_job(v, VGPU_MDEV_EVENT_REMOVE, 0);
}

static void handle_event(struct mdev_server *s, const struct vgpu_mdev_event *e)
{
	struct mdev_vgpu *v = find_vgpu(s, e->device_id);

	switch (e->type) {
	case VGPU_MDEV_EVENT_CREATE:
	case VGPU_MDEV_EVENT_EXISTS:
		handle_create(s, e, e->type == VGPU_MDEV_EVENT_EXISTS);
		break;
	case VGPU_MDEV_EVENT_OPEN:
	case VGPU_MDEV_EVENT_CLOSE:
	case VGPU_MDEV_EVENT_RESET:
		if (!v)
			mdev_reply(s, e->device_id, e->seq, e->type == VGPU_MDEV_EVENT_CLOSE ? 0 : -ENOENT,
			      e->type == VGPU_MDEV_EVENT_CLOSE ? NULL : "vgpud does not know this mdev");
		else if (mdev_queue_job(v, e->type, e->seq))
			mdev_reply(s, e->device_id, e->seq, -ENOMEM, "vgpud is out of memory");
		break;
	case VGPU_MDEV_EVENT_REMOVE:
		if (v)
			handle_remove(s, v);
		break;
	case VGPU_MDEV_EVENT_REG_WRITE:
		if (v)
			mdev_registers_written(v, &e->payload.regs);
		break;
	case VGPU_MDEV_EVENT_PIN_RELEASED:
		log_debug("mdev %u: pin %llu released by the guest's memory going away",
		          e->device_id, (unsigned long long)e->payload.pin.pin_id);
		break;
	default:
		log_warn("mdev: unknown event %u from vgpu_mdev.ko", e->type);
		break;
	}
}

/* The control device is readable: up to 32 events, one read (the loop
 * calls again while more wait). A read that fails for good is logged and
 * turns the source off: no more events from the module. */
int mdev_on_events(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct mdev_server *s = userdata;
	struct vgpu_mdev_event ev[32];
	ssize_t n;

	(void)revents;
	n = read(fd, ev, sizeof(ev));
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		log_error("mdev: reading events from vgpu_mdev.ko: %s", strerror(errno));
		sd_event_source_set_enabled(source, SD_EVENT_OFF);
		return 0;
	}
	for (ssize_t i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
		handle_event(s, &ev[i]);
	mdev_reap_retired(s, false);
	return 0;
}
