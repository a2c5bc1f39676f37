// SPDX-License-Identifier: MIT
/*
 * transport_mdev.c - vgpud's mdev transport: vgpu/transport.h over the
 * control device of vgpu_mdev.ko (vgpu/mdev_control.h, host-kmod/README.md).
 *
 * One server per vgpud: it opens /dev/vgpu_mdev, registers the mdev types
 * its hooks describe (one per profile) and runs one event thread:
 *
 *	CREATE    hooks.create decides; the mdev gets its worker thread
 *	          (mdev_worker.c)
 *	EXISTS    an mdev from before this vgpud: likewise, never refused
 *	OPEN      on the mdev's worker: hooks.attach, map the mailbox, push
 *	          FEATURES, IRQ_MASK and STATUS into the module's register file
 *	CLOSE     on the worker: detach (it may wait for an eviction)
 *	RESET     on the worker: detach + hooks.attach (the same VM again)
 *	REMOVE    on the worker: detach if still attached, hooks.remove; the
 *	          worker ends and the event thread reaps it
 *	REG_WRITE doorbells -> vgpu_device_kick, IRQ_ACK/IRQ_MASK ->
 *	          vgpu_device_reg_write (the module has applied them already):
 *	          on the event thread, which never waits for the core
 *
 * The module sends one request per mdev at a time and waits for its reply;
 * a worker answers its own mdev's requests, so a VM whose reset waits for
 * the core holds up nothing but itself.
 *
 * Registers. The module answers the guest's BAR0 reads from its own
 * register file, so whatever the device model changes must be pushed:
 * raise_irq ORs the source's bit into IRQ_STATUS, moves the device model's
 * pending FENCE_CHANNELS / ERROR_CHANNELS bits into the module's
 * (read-to-clear there) and raises the vector, in one REG_UPDATE. Detach's
 * STATUS = BACKEND_GONE is pushed when detach returns.
 *
 * Failure. The module is always reachable; an op fails only when the device
 * is closed or removed (ENODEV/ENOENT), which the kernel follows with CLOSE
 * or REMOVE events that detach the device here. Every ioctl's result is
 * checked: what cannot be undone is logged.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vgpu/device_abi.h"
#include "vgpu/mdev_control.h"
#include "vgpu/transport.h"

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

static uint32_t source_of(unsigned vector)
{
	switch (vector) {
	case VGPU_MSIX_VECTOR_FENCE: return VGPU_IRQ_FENCE;
	case VGPU_MSIX_VECTOR_ERROR: return VGPU_IRQ_CHANNEL_ERROR;
	default: return VGPU_IRQ_MAILBOX;
	}
}

/* Never blocks: one ioctl that takes a spinlock and signals an eventfd. */
static void op_raise_irq(struct vgpu_transport *t, unsigned vector)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpud_device *dev = atomic_load(&v->irq_device);
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .irq_vectors = 1u << vector };
	int err;

	if (vector >= VGPU_MSIX_VECTORS)
		return;
	u.ops[u.count++] = (struct vgpu_mdev_reg_op){
		.offset = VGPU_REG_IRQ_STATUS, .op = VGPU_MDEV_REG_OR, .value = source_of(vector),
	};
	if (dev && vector == VGPU_MSIX_VECTOR_FENCE)
		u.ops[u.count++] = (struct vgpu_mdev_reg_op){
			.offset = VGPU_REG_FENCE_CHANNELS, .op = VGPU_MDEV_REG_OR,
			.value = vgpu_device_reg_read(dev, VGPU_REG_FENCE_CHANNELS),
		};
	if (dev && vector == VGPU_MSIX_VECTOR_ERROR)
		u.ops[u.count++] = (struct vgpu_mdev_reg_op){
			.offset = VGPU_REG_ERROR_CHANNELS, .op = VGPU_MDEV_REG_OR,
			.value = vgpu_device_reg_read(dev, VGPU_REG_ERROR_CHANNELS),
		};
	err = mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
	if (err && err != -ENOENT)
		log_debug("mdev %s: raising vector %u failed: %s", v->uuid, vector, strerror(-err));
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

static const struct vgpu_transport_ops mdev_transport_ops = {
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

/* Tell the module the type's available_instances, as the hooks say. */
void mdev_push_available(struct mdev_server *s, unsigned type)
{
	struct vgpu_mdev_type_info info;
	struct vgpu_mdev_set_available a = { .type_index = type };
	int err;

	if (!s->hooks.describe_type(s->hooks.ctx, s->types[type].name, &info))
		a.available = info.available;
	err = mdev_control(s, VGPU_MDEV_SET_AVAILABLE, &a);
	if (err)
		log_warn("mdev: cannot update available_instances of %s: %s", s->types[type].name,
		         strerror(-err));
}

int mdev_push_registers(struct mdev_vgpu *v, struct vgpud_device *dev)
{
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .count = 3 };

	u.ops[0] = (struct vgpu_mdev_reg_op){ VGPU_REG_FEATURES, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_FEATURES), 0 };
	u.ops[1] = (struct vgpu_mdev_reg_op){ VGPU_REG_IRQ_MASK, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_IRQ_MASK), 0 };
	u.ops[2] = (struct vgpu_mdev_reg_op){ VGPU_REG_STATUS, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_STATUS), 0 };
	return mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
}

/* STATUS = BACKEND_GONE in the module's register file. The mdev may be
 * closed or removed already (ENODEV/ENOENT): nobody is left to tell. */
void mdev_push_gone(struct mdev_vgpu *v)
{
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .count = 1 };
	int err;

	u.ops[0] = (struct vgpu_mdev_reg_op){ VGPU_REG_STATUS, VGPU_MDEV_REG_SET,
		                              VGPU_STATUS_BACKEND_GONE, 0 };
	err = mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
	if (err && err != -ENOENT && err != -ENODEV)
		log_warn("mdev %s: cannot mark the device gone: %s", v->uuid, strerror(-err));
}

/* Join and free the removed mdevs whose worker has ended (all: wait). */
static void reap_retired(struct mdev_server *s, bool all)
{
	struct mdev_vgpu **p = &s->retired;

	while (*p) {
		struct mdev_vgpu *v = *p;

		if (!all && !atomic_load(&v->finished)) {
			p = &v->next;
			continue;
		}
		pthread_mutex_lock(&s->lock);
		*p = v->next;
		pthread_mutex_unlock(&s->lock);
		pthread_join(v->worker, NULL);
		mdev_vgpu_free(v);
	}
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

/* A known mdev with its worker. 0, or a negative errno + why. */
static int add_vgpu(struct mdev_server *s, const struct vgpu_mdev_event *e, char *why,
                    size_t why_len)
{
	struct mdev_vgpu *v = calloc(1, sizeof(*v));
	int err;

	if (!v) {
		snprintf(why, why_len, "vgpud is out of memory");
		return -ENOMEM;
	}
	v->base.ops = &mdev_transport_ops;
	v->base.kind = "mdev";
	v->base.named_by_uuid = true;
	v->server = s;
	v->id = e->device_id;
	v->type_index = e->payload.device.type_index;
	v->jobs_tail = &v->jobs;
	format_uuid(e, v->uuid);
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->wake, NULL);
	err = -pthread_create(&v->worker, NULL, mdev_worker_main, v);
	if (err) {
		snprintf(why, why_len, "vgpud cannot start a thread: %s", strerror(-err));
		mdev_vgpu_free(v);
		return err;
	}
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
	char why[VGPU_MDEV_MESSAGE_MAX] = "", uuid[37];
	int err;

	format_uuid(e, uuid);
	if (type >= s->type_count) {
		err = -EINVAL;
		snprintf(why, sizeof(why), "unknown mdev type");
	} else if (find_vgpu(s, e->device_id)) {
		err = -EEXIST;
		snprintf(why, sizeof(why), "vgpud: device table");
	} else {
		err = s->hooks.create(s->hooks.ctx, s->types[type].name, uuid, existing, why,
		                      sizeof(why));
		if (!err) {
			err = add_vgpu(s, e, why, sizeof(why));
			if (err)
				s->hooks.remove(s->hooks.ctx, s->types[type].name, uuid);
		}
	}
	if (!existing)
		mdev_reply(s, e->device_id, e->seq, err, err ? why : NULL);
	else if (err)
		log_warn("mdev %s of %s (created before vgpud started): %s", uuid,
		         type < s->type_count ? s->types[type].name : "an unknown type", why);
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

/* BAR0 writes the module applied already; never waits for the core. */
static void handle_reg_write(struct mdev_vgpu *v, const struct vgpu_mdev_event_regs *regs)
{
	pthread_mutex_lock(&v->lock);
	if (v->device) {
		if (regs->changed & VGPU_MDEV_REG_IRQ_ACK)
			vgpu_device_reg_write(v->device, VGPU_REG_IRQ_ACK, regs->irq_ack);
		if (regs->changed & VGPU_MDEV_REG_IRQ_MASK)
			vgpu_device_reg_write(v->device, VGPU_REG_IRQ_MASK, regs->irq_mask);
		if (regs->changed & VGPU_MDEV_REG_DOORBELL)
			vgpu_device_kick(v->device);
	}
	pthread_mutex_unlock(&v->lock);
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
			handle_reg_write(v, &e->payload.regs);
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

static void *server_main(void *arg)
{
	struct mdev_server *s = arg;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = s->fd, .events = POLLIN },
			{ .fd = s->stop_fd, .events = POLLIN },
		};
		struct vgpu_mdev_event ev[32];
		ssize_t n;

		if (poll(p, 2, -1) < 0 && errno != EINTR) {
			log_error("mdev: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		n = read(s->fd, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			log_error("mdev: reading events from vgpu_mdev.ko: %s", strerror(errno));
			break;
		}
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
			handle_event(s, &ev[i]);
		reap_retired(s, false);
	}
	return NULL;
}

/* ------------------------------------------------------ server */

static int open_control(const char *path, int *fd)
{
	*fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (*fd >= 0)
		return 0;
	log_error("mdev: cannot open %s: %s%s", path, strerror(errno),
	          errno == ENOENT ? " (load vgpu_mdev.ko)" :
	          errno == EBUSY ? " (another vgpud is connected)" : "");
	return -errno;
}

static int check_version(struct mdev_server *s, const char *path)
{
	struct vgpu_mdev_version version = { 0 };

	if (!mdev_control(s, VGPU_MDEV_GET_VERSION, &version) &&
	    version.version == VGPU_MDEV_CONTROL_VERSION &&
	    version.event_size == sizeof(struct vgpu_mdev_event) &&
	    version.abi_version >> 16 == VGPU_ABI_VERSION_MAJOR)
		return 0;
	log_error("mdev: %s speaks control version %u / device ABI %#x, vgpud %u / %#x: install "
	          "matching vgpu_mdev.ko and vgpud", path, version.version, version.abi_version,
	          VGPU_MDEV_CONTROL_VERSION, VGPU_ABI_VERSION);
	return -EPROTO;
}

/* Give the module s->types[0..type_count) with fresh descriptions. */
static int push_types(struct mdev_server *s)
{
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	struct vgpu_mdev_set_types st = { .count = s->type_count, .types = (uintptr_t)types };
	bool described[VGPU_MDEV_MAX_TYPES];
	int err;

	for (unsigned i = 0; i < s->type_count; i++) /* hooks: no lock held */
		described[i] = !s->hooks.describe_type(s->hooks.ctx, s->types[i].name, &types[i]);
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->type_count; i++) {
		if (described[i]) {
			memcpy(s->types[i].description, types[i].description,
			       sizeof(types[i].description));
			s->types[i].available = types[i].available;
		} else { /* the profile is gone (reload): no new mdev of it */
			s->types[i].available = 0;
		}
		types[i] = s->types[i]; /* names as registered */
	}
	err = mdev_control(s, VGPU_MDEV_SET_TYPES, &st);
	pthread_mutex_unlock(&s->lock);
	if (err)
		log_error("mdev: registering %u mdev types failed: %s%s", s->type_count,
		          strerror(-err),
		          err == -EBUSY ? " (mdevs of other profiles still exist: remove them)" : "");
	return err;
}

/* The mdev types of config->profiles (names fixed from now on). */
static int register_types(struct mdev_server *s, const struct mdev_server_config *config)
{
	unsigned n = 0;

	for (size_t i = 0; i < config->profile_count && n < VGPU_MDEV_MAX_TYPES; i++) {
		if (s->hooks.describe_type(s->hooks.ctx, config->profiles[i], &s->types[n])) {
			log_warn("mdev: profile '%s' has no mdev type", config->profiles[i]);
			continue;
		}
		n++;
	}
	if (config->profile_count > VGPU_MDEV_MAX_TYPES)
		log_warn("mdev: only the first %u profiles become mdev types", VGPU_MDEV_MAX_TYPES);
	if (!n)
		return -EINVAL;
	s->type_count = n;
	return push_types(s);
}

int mdev_server_create(const struct mdev_server_config *config, struct mdev_server **out)
{
	const char *path = config->path ? config->path : VGPU_MDEV_CONTROL_PATH;
	struct mdev_server *s;
	int err;

	if (!config->profile_count)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->hooks = config->hooks;
	s->control_ioctl = config->control_ioctl;
	s->control_ctx = config->control_ctx;
	s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	err = open_control(path, &s->fd);
	if (err)
		goto fail;
	err = check_version(s, path);
	if (!err)
		err = register_types(s, config);
	if (err)
		goto fail_fd;
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (s->stop_fd < 0) {
		err = -errno;
		log_error("mdev: eventfd: %s", strerror(errno));
		goto fail_fd;
	}
	err = -pthread_create(&s->thread, NULL, server_main, s);
	if (err) {
		log_error("mdev: cannot start the event thread: %s", strerror(-err));
		close(s->stop_fd);
		goto fail_fd;
	}
	log_info("mdev: %u profile(s) registered as mdev types of /sys/class/mdev_bus/%s",
	         s->type_count, VGPU_MDEV_PARENT_NAME);
	*out = s;
	return 0;

fail_fd:
	close(s->fd);
fail:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}

int mdev_server_refresh_types(struct mdev_server *s)
{
	return push_types(s);
}

void mdev_server_refresh_available(struct mdev_server *s)
{
	for (unsigned type = 0; type < s->type_count; type++)
		mdev_push_available(s, type);
}

bool mdev_server_has_type(struct mdev_server *s, const char *profile)
{
	for (unsigned i = 0; i < s->type_count; i++)
		if (!strcmp(s->types[i].name, profile))
			return true;
	return false;
}

int mdev_server_set_stats(struct mdev_server *s, const char *uuid, struct vgpu_mdev_stats *st)
{
	struct mdev_vgpu *v;
	int err = -ENOENT;

	pthread_mutex_lock(&s->lock);
	for (v = s->vgpus; v; v = v->next)
		if (!strcmp(v->uuid, uuid))
			break;
	if (v) {
		st->device_id = v->id;
		err = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return err ? err : mdev_control(s, VGPU_MDEV_SET_STATS, st);
}

unsigned mdev_server_devices(struct mdev_server *server)
{
	struct mdev_vgpu *v;
	unsigned n = 0;

	pthread_mutex_lock(&server->lock);
	for (v = server->vgpus; v; v = v->next)
		n++;
	pthread_mutex_unlock(&server->lock);
	return n;
}

/* Detach every attached VM (their devices report BACKEND_GONE until QEMU
 * closes them), then close the control device: the module unregisters the
 * parent if no mdev exists. */
void mdev_server_destroy(struct mdev_server *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (write(s->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_warn("mdev: cannot stop the event thread: %s", strerror(errno));
	pthread_join(s->thread, NULL);
	for (struct mdev_vgpu *v = s->vgpus; v; v = v->next)
		mdev_queue_job(v, JOB_STOP, 0);
	while (s->vgpus) {
		struct mdev_vgpu *v = s->vgpus;

		pthread_join(v->worker, NULL);
		s->vgpus = v->next;
		mdev_vgpu_free(v);
	}
	reap_retired(s, true);
	close(s->stop_fd);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
