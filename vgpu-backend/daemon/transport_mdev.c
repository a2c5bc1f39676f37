// SPDX-License-Identifier: MIT
/*
 * transport_mdev.c - vgpud's mdev transport: vgpu/transport.h over the
 * control device of vgpu_mdev.ko (vgpu/mdev_control.h, host-kmod/README.md).
 *
 * One server per vgpud: it opens /dev/vgpu_mdev, registers one mdev type per
 * configured profile (type directory "vgpu-<name without a vgpu- prefix>",
 * available_instances = max_instances minus the mdevs of that type, 256 for
 * "no limit") and runs one thread that reads the module's events:
 *
 *	CREATE   accept unless the profile's max_instances mdevs exist
 *	OPEN     attach the VM (under the mdev UUID; the stats thread renames it
 *	         once domain_names.h finds its libvirt domain or QEMU -name;
 *	         a RESET keeps the name), map its mailbox, push
 *	         FEATURES, IRQ_MASK and STATUS into the module's register file
 *	CLOSE    detach (on a worker thread: detach may wait for an eviction),
 *	RESET    detach + attach likewise; the kernel waits for our reply
 *	REG_WRITE doorbells -> vgpu_device_kick, IRQ_ACK/IRQ_MASK ->
 *	         vgpu_device_reg_write (the module has applied them already)
 *	REMOVE / EXISTS bookkeeping
 *
 * Registers. The module answers the guest's BAR0 reads from its own
 * register file, so whatever the device model changes must be pushed:
 * raise_irq ORs the source's bit into IRQ_STATUS, moves the device model's
 * pending FENCE_CHANNELS / ERROR_CHANNELS bits into the module's
 * (read-to-clear there) and raises the vector, in one REG_UPDATE. Detach's
 * STATUS = BACKEND_GONE is pushed when detach returns. A second thread
 * pushes the statistics of the mdev's sysfs vendor/ group once a second.
 *
 * Failure. The module is always reachable; an op fails only when the device
 * is closed or removed (ENODEV/ENOENT), which the kernel follows with CLOSE
 * or REMOVE events that detach the device here.
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

#include "vgpu/core.h"
#include "vgpu/device_abi.h"
#include "vgpu/mdev_control.h"
#include "vgpu/transport.h"

#include "config.h"
#include "daemon.h"
#include "device.h"
#include "domain_names.h"
#include "log.h"
#include "transport_mdev.h"

/* ------------------------------------------------------------ state */

#define MDEV_UNLIMITED_INSTANCES 256u
#define MDEV_STATS_INTERVAL_MS 1000

struct mdev_vgpu {
	struct vgpu_transport base; /* first: the transport ops get this */
	struct mdev_server *server;
	uint32_t id;          /* the module's device_id */
	uint32_t type_index;
	char uuid[37];
	pthread_mutex_t lock; /* device, busy, querying */
	pthread_cond_t idle;  /* querying became false */
	struct vgpu_device *device;
	_Atomic(struct vgpu_device *) irq_device; /* for raise_irq, no lock */
	bool busy;            /* a worker is detaching/resetting it */
	bool querying;        /* the stats thread reads device's statistics */
	/* the VM's name from domain_names.h as given to the registry ("" =
	 * the UUID), what sysfs vendor/vm shows; under lock */
	char found_name[DOMAIN_NAME_MAX];
	char name[DOMAIN_NAME_MAX];
	enum domain_name_source name_source;
	pthread_t worker;
	bool worker_started;
	struct mdev_vgpu *next;
};

struct mdev_server {
	int fd;
	int stop_fd; /* eventfd: the thread exits */
	struct vgpu_device_host host;
	struct vgpud_profile_spec profiles[VGPU_MDEV_MAX_TYPES];
	unsigned type_count;
	unsigned instances[VGPU_MDEV_MAX_TYPES];
	pthread_t thread;
	pthread_t stats_thread;
	/* vgpus (changed by the event thread only), instances and
	 * profiles[].max_instances (changed by mdev_server_update_profile) */
	pthread_mutex_t lock;
	struct mdev_vgpu *vgpus;
	struct domain_names *names; /* libvirt domain / QEMU -name of each VM */
};

static struct mdev_vgpu *vgpu_of(struct vgpu_transport *t)
{
	return (struct mdev_vgpu *)t;
}

/* ------------------------------------------------------ transport ops */

static int ioctl_errno(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

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

	return ioctl_errno(v->server->fd, VGPU_MDEV_MAP_REGION, &r);
}

static int op_unmap_region(struct vgpu_transport *t, uint64_t bar2_offset, uint64_t bytes)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_region r = {
		.device_id = v->id, .fd = -1, .bar2_offset = bar2_offset, .bytes = bytes,
	};

	return ioctl_errno(v->server->fd, VGPU_MDEV_UNMAP_REGION, &r);
}

static int op_window_block(struct vgpu_transport *t, uint32_t index, uint64_t bar2_offset,
                           uint64_t bytes)
{
	struct mdev_vgpu *v = vgpu_of(t);
	struct vgpu_mdev_window_block b = {
		.device_id = v->id, .index = index, .bar2_offset = bar2_offset, .bytes = bytes,
	};

	return ioctl_errno(v->server->fd, VGPU_MDEV_WINDOW_BLOCK, &b);
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
	return ioctl_errno(v->server->fd, VGPU_MDEV_WINDOW_MAP, &m);
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
	struct vgpu_device *dev = atomic_load(&v->irq_device);
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .irq_vectors = 1u << vector };

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
	if (ioctl(v->server->fd, VGPU_MDEV_REG_UPDATE, &u) < 0 && errno != ENOENT)
		log_debug("mdev %s: raising vector %u failed: %s", v->uuid, vector, strerror(errno));
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
		err = ioctl_errno(v->server->fd, VGPU_MDEV_DMA_RW, &d);
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

/* ------------------------------------------------------ requests */

static void reply(struct mdev_server *s, uint32_t id, uint32_t seq, int status, const char *why)
{
	struct vgpu_mdev_reply r = { .device_id = id, .seq = seq, .status = status };

	if (why)
		snprintf(r.message, sizeof(r.message), "%s", why);
	if (ioctl(s->fd, VGPU_MDEV_REPLY, &r) < 0)
		log_warn("mdev device %u: the module no longer waits for our answer (%s)", id,
		         strerror(errno));
}

/* Tell the module the type's available_instances. Called with s->lock held. */
static void push_available_locked(struct mdev_server *s, unsigned type)
{
	const struct vgpud_profile_spec *p = &s->profiles[type];
	struct vgpu_mdev_set_available a = { .type_index = type };

	if (!p->max_instances)
		a.available = MDEV_UNLIMITED_INSTANCES;
	else if (s->instances[type] < p->max_instances)
		a.available = p->max_instances - s->instances[type];
	if (ioctl(s->fd, VGPU_MDEV_SET_AVAILABLE, &a) < 0)
		log_warn("mdev: cannot update available_instances of %s: %s", p->name,
		         strerror(errno));
}

static void push_available(struct mdev_server *s, unsigned type)
{
	pthread_mutex_lock(&s->lock);
	push_available_locked(s, type);
	pthread_mutex_unlock(&s->lock);
}

/* The profile's instance limit is reached (then *max is that limit). */
static bool type_full(struct mdev_server *s, unsigned type, unsigned *max)
{
	bool full;

	pthread_mutex_lock(&s->lock);
	*max = s->profiles[type].max_instances;
	full = *max && s->instances[type] >= *max;
	pthread_mutex_unlock(&s->lock);
	return full;
}

static void push_registers(struct mdev_vgpu *v, struct vgpu_device *dev)
{
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .count = 3 };

	u.ops[0] = (struct vgpu_mdev_reg_op){ VGPU_REG_FEATURES, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_FEATURES), 0 };
	u.ops[1] = (struct vgpu_mdev_reg_op){ VGPU_REG_IRQ_MASK, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_IRQ_MASK), 0 };
	u.ops[2] = (struct vgpu_mdev_reg_op){ VGPU_REG_STATUS, VGPU_MDEV_REG_SET,
		                              vgpu_device_reg_read(dev, VGPU_REG_STATUS), 0 };
	if (ioctl(v->server->fd, VGPU_MDEV_REG_UPDATE, &u) < 0)
		log_warn("mdev %s: cannot set its registers: %s", v->uuid, strerror(errno));
}

static void push_gone(struct mdev_vgpu *v)
{
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .count = 1 };

	u.ops[0] = (struct vgpu_mdev_reg_op){ VGPU_REG_STATUS, VGPU_MDEV_REG_SET,
		                              VGPU_STATUS_BACKEND_GONE, 0 };
	ioctl(v->server->fd, VGPU_MDEV_REG_UPDATE, &u);
}

/* Attach the VM and make the device usable. 0 or a negative errno + why.
 * reset: the same VM again (VFIO_DEVICE_RESET), which keeps its name. */
static int attach(struct mdev_vgpu *v, bool reset, char *why, size_t why_len)
{
	struct mdev_server *s = v->server;
	struct vgpu_attach_params params = {
		.vm_name = v->uuid,
		.profile = s->profiles[v->type_index].name,
	};
	struct vgpu_mdev_stats st = { .device_id = v->id };
	char found[DOMAIN_NAME_MAX], given[DOMAIN_NAME_MAX];
	enum domain_name_source source;
	struct vgpu_bar2_segment seg;
	struct vgpu_device *dev;
	int err;

	err = s->host.attach(s->host.ctx, &v->base, &params, &dev, why, why_len);
	if (err)
		return err;
	atomic_store(&v->irq_device, dev);
	vgpu_device_mailbox_segment(dev, &seg);
	err = op_map_region(&v->base, &seg);
	if (err) {
		snprintf(why, why_len, "cannot map the mailbox into the VM: %s", strerror(-err));
		atomic_store(&v->irq_device, NULL);
		vgpu_device_detach(dev);
		return err;
	}
	push_registers(v, dev);
	pthread_mutex_lock(&v->lock);
	if (!reset) {
		v->found_name[0] = v->name[0] = 0;
		v->name_source = DOMAIN_NAME_NONE;
	}
	source = v->name_source;
	memcpy(found, v->found_name, sizeof(found));
	pthread_mutex_unlock(&v->lock);
	if (source != DOMAIN_NAME_NONE) /* a reset keeps the VM's name: at once */
		vgpud_registry_set_display_name(&dev->daemon->registry, dev, found,
		                                domain_name_source_string(source), given,
		                                sizeof(given));
	else /* who opened it: the stats thread applies the name once it is known */
		domain_names_watch(s->names, v->uuid);
	snprintf(st.vm_name, sizeof(st.vm_name), "%s",
	         source != DOMAIN_NAME_NONE ? given : v->uuid);
	ioctl(s->fd, VGPU_MDEV_SET_STATS, &st);
	pthread_mutex_lock(&v->lock);
	v->device = dev;
	if (source != DOMAIN_NAME_NONE)
		memcpy(v->name, given, sizeof(given));
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/* Worker thread for CLOSE and RESET: detach may wait for an eviction. */
struct mdev_job {
	struct mdev_vgpu *v;
	uint32_t type;
	uint32_t seq;
};

static void *job_main(void *arg)
{
	struct mdev_job *job = arg;
	struct mdev_vgpu *v = job->v;
	struct vgpu_device *dev;
	char why[VGPU_MDEV_MESSAGE_MAX] = "";
	int err = 0;

	pthread_mutex_lock(&v->lock);
	while (v->querying)
		pthread_cond_wait(&v->idle, &v->lock);
	dev = v->device;
	v->device = NULL;
	pthread_mutex_unlock(&v->lock);
	if (dev) {
		vgpu_device_detach(dev);
		atomic_store(&v->irq_device, NULL);
		push_gone(v);
	}
	if (job->type == VGPU_MDEV_EVENT_RESET) {
		err = attach(v, true, why, sizeof(why));
		if (err)
			log_warn("mdev %s: reset: %s", v->uuid, why);
	}
	/* Not busy before the reply: the reply lets the guest go on, and its
	 * first doorbell after a reset must not find the device busy (the
	 * event thread drops doorbells then). */
	pthread_mutex_lock(&v->lock);
	v->busy = false;
	pthread_mutex_unlock(&v->lock);
	reply(v->server, v->id, job->seq, err, err ? why : NULL);
	free(job);
	return NULL;
}

static void join_worker(struct mdev_vgpu *v)
{
	if (v->worker_started) {
		pthread_join(v->worker, NULL);
		v->worker_started = false;
	}
}

static struct mdev_vgpu *find_vgpu(struct mdev_server *s, uint32_t id)
{
	struct mdev_vgpu *v;

	for (v = s->vgpus; v; v = v->next)
		if (v->id == id)
			return v;
	return NULL;
}

static struct mdev_vgpu *add_vgpu(struct mdev_server *s, const struct vgpu_mdev_event *e)
{
	const uint8_t *u = e->payload.device.uuid;
	struct mdev_vgpu *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->base.ops = &mdev_transport_ops;
	v->base.kind = "mdev";
	v->server = s;
	v->id = e->device_id;
	v->type_index = e->payload.device.type_index;
	snprintf(v->uuid, sizeof(v->uuid),
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
	         u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
	         u[15]);
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->idle, NULL);
	pthread_mutex_lock(&s->lock);
	v->next = s->vgpus;
	s->vgpus = v;
	if (v->type_index < s->type_count)
		s->instances[v->type_index]++;
	pthread_mutex_unlock(&s->lock);
	return v;
}

static void remove_vgpu(struct mdev_server *s, struct mdev_vgpu *v)
{
	struct mdev_vgpu **p;

	join_worker(v);
	pthread_mutex_lock(&v->lock);
	while (v->querying)
		pthread_cond_wait(&v->idle, &v->lock);
	v->busy = true;
	pthread_mutex_unlock(&v->lock);
	if (v->device) { /* REMOVE without CLOSE: the module says it cannot happen */
		vgpu_device_detach(v->device);
		v->device = NULL;
	}
	pthread_mutex_lock(&s->lock);
	for (p = &s->vgpus; *p; p = &(*p)->next)
		if (*p == v) {
			*p = v->next;
			break;
		}
	if (v->type_index < s->type_count && s->instances[v->type_index])
		s->instances[v->type_index]--;
	pthread_mutex_unlock(&s->lock);
	domain_names_forget(s->names, v->uuid);
	pthread_cond_destroy(&v->idle);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

static void start_job(struct mdev_vgpu *v, const struct vgpu_mdev_event *e)
{
	struct mdev_job *job = malloc(sizeof(*job));
	int err;

	join_worker(v); /* the kernel sends one request per device at a time */
	if (!job) {
		reply(v->server, v->id, e->seq, -ENOMEM, "vgpud is out of memory");
		return;
	}
	job->v = v;
	job->type = e->type;
	job->seq = e->seq;
	pthread_mutex_lock(&v->lock);
	v->busy = true; /* the stats thread starts no query; job_main waits for one */
	pthread_mutex_unlock(&v->lock);
	err = -pthread_create(&v->worker, NULL, job_main, job);
	if (err) {
		pthread_mutex_lock(&v->lock);
		v->busy = false;
		pthread_mutex_unlock(&v->lock);
		free(job);
		reply(v->server, v->id, e->seq, err, "vgpud cannot start a thread");
		return;
	}
	v->worker_started = true;
}

static void handle_event(struct mdev_server *s, const struct vgpu_mdev_event *e)
{
	struct mdev_vgpu *v = find_vgpu(s, e->device_id);
	char why[VGPU_MDEV_MESSAGE_MAX] = "";
	unsigned type = e->payload.device.type_index;
	unsigned max;
	int err;

	switch (e->type) {
	case VGPU_MDEV_EVENT_CREATE:
		if (type >= s->type_count) {
			reply(s, e->device_id, e->seq, -EINVAL, "unknown mdev type");
			break;
		}
		if (type_full(s, type, &max)) {
			snprintf(why, sizeof(why),
			         "profile %.40s has all %u instances in use; remove one or raise "
			         "max_instances", s->profiles[type].name, max);
			reply(s, e->device_id, e->seq, -ENOSPC, why);
			break;
		}
		if (v || !add_vgpu(s, e)) {
			reply(s, e->device_id, e->seq, v ? -EEXIST : -ENOMEM, "vgpud: device table");
			break;
		}
		reply(s, e->device_id, e->seq, 0, NULL);
		push_available(s, type);
		log_info("mdev %u created as %s", e->device_id, s->profiles[type].name);
		break;
	case VGPU_MDEV_EVENT_EXISTS:
		if (!v && type < s->type_count && add_vgpu(s, e))
			push_available(s, type);
		break;
	case VGPU_MDEV_EVENT_OPEN:
		if (!v) {
			reply(s, e->device_id, e->seq, -ENOENT, "vgpud does not know this mdev");
			break;
		}
		join_worker(v);
		err = attach(v, false, why, sizeof(why));
		reply(s, e->device_id, e->seq, err, err ? why : NULL);
		break;
	case VGPU_MDEV_EVENT_CLOSE:
	case VGPU_MDEV_EVENT_RESET:
		if (!v) {
			reply(s, e->device_id, e->seq, e->type == VGPU_MDEV_EVENT_CLOSE ? 0 : -ENOENT,
			      NULL);
			break;
		}
		start_job(v, e);
		break;
	case VGPU_MDEV_EVENT_REMOVE:
		if (v) {
			type = v->type_index;
			remove_vgpu(s, v);
			if (type < s->type_count)
				push_available(s, type);
		}
		break;
	case VGPU_MDEV_EVENT_REG_WRITE:
		if (!v)
			break;
		pthread_mutex_lock(&v->lock);
		if (v->device && !v->busy) {
			if (e->payload.regs.changed & VGPU_MDEV_REG_IRQ_ACK)
				vgpu_device_reg_write(v->device, VGPU_REG_IRQ_ACK,
				                      e->payload.regs.irq_ack);
			if (e->payload.regs.changed & VGPU_MDEV_REG_IRQ_MASK)
				vgpu_device_reg_write(v->device, VGPU_REG_IRQ_MASK,
				                      e->payload.regs.irq_mask);
			if (e->payload.regs.changed & VGPU_MDEV_REG_DOORBELL)
				vgpu_device_kick(v->device);
		}
		pthread_mutex_unlock(&v->lock);
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

/*
 * The name domain_names.h found for the VM (its libvirt domain or QEMU
 * -name), given to the registry once it is known or changes: vgpuctl, the
 * control API and sysfs vendor/vm use it from then on.
 */
static void apply_name(struct mdev_server *s, struct mdev_vgpu *v, struct vgpu_device *dev)
{
	char found[DOMAIN_NAME_MAX], given[DOMAIN_NAME_MAX];
	enum domain_name_source source;
	bool changed;

	source = domain_names_get(s->names, v->uuid, found, sizeof(found));
	if (source == DOMAIN_NAME_NONE)
		return;
	pthread_mutex_lock(&v->lock);
	changed = source != v->name_source || strcmp(found, v->found_name);
	pthread_mutex_unlock(&v->lock);
	if (!changed)
		return;
	vgpud_registry_set_display_name(&dev->daemon->registry, dev, found,
	                                domain_name_source_string(source), given, sizeof(given));
	log_info("mdev %s: the VM is %s '%s'%s%s%s", v->uuid,
	         source == DOMAIN_NAME_LIBVIRT ? "libvirt domain" : "QEMU -name", found,
	         strcmp(found, given) ? " (another VM has that name: reported as '" : "",
	         strcmp(found, given) ? given : "", strcmp(found, given) ? "')" : "");
	pthread_mutex_lock(&v->lock);
	memcpy(v->found_name, found, sizeof(found));
	memcpy(v->name, given, sizeof(given));
	v->name_source = source;
	pthread_mutex_unlock(&v->lock);
}

/*
 * The stats thread: vendor/ statistics of every attached VM, once a second.
 * vgpu_core_vm_stats may wait for the core (an eviction), so no lock is
 * held meanwhile; "querying" keeps the device from being detached under it.
 */
static void push_stats(struct mdev_server *s)
{
	uint32_t ids[256];
	unsigned n = 0;
	struct mdev_vgpu *v;

	pthread_mutex_lock(&s->lock);
	for (v = s->vgpus; v && n < 256; v = v->next)
		ids[n++] = v->id;
	pthread_mutex_unlock(&s->lock);

	for (unsigned i = 0; i < n; i++) {
		struct vgpu_mdev_stats st = { .device_id = ids[i] };
		struct vgpu_device *dev = NULL;
		struct vgpu_vm_stats vs;

		pthread_mutex_lock(&s->lock);
		for (v = s->vgpus; v && v->id != ids[i]; v = v->next)
			;
		if (v) {
			pthread_mutex_lock(&v->lock);
			if (v->device && !v->busy) {
				dev = v->device;
				v->querying = true;
			}
			pthread_mutex_unlock(&v->lock);
		}
		pthread_mutex_unlock(&s->lock);
		if (!dev)
			continue;
		vgpu_core_vm_stats(dev->vm, &vs);
		apply_name(s, v, dev); /* dev stays attached while querying */
		pthread_mutex_lock(&v->lock); /* v stays: remove_vgpu waits for querying */
		v->querying = false;
		pthread_cond_broadcast(&v->idle);
		snprintf(st.vm_name, sizeof(st.vm_name), "%s", v->name[0] ? v->name : vs.name);
		pthread_mutex_unlock(&v->lock);
		st.allocated_bytes = vs.allocated_bytes;
		st.resident_bytes = vs.resident_bytes;
		st.evicted_bytes = vs.evicted_bytes;
		st.fair_share_bytes = vs.fair_share_bytes;
		st.evictions = (uint32_t)vs.evictions;
		st.returns = (uint32_t)vs.returns;
		ioctl(s->fd, VGPU_MDEV_SET_STATS, &st);
	}
}

static void *stats_main(void *arg)
{
	struct mdev_server *s = arg;
	struct pollfd p = { .fd = s->stop_fd, .events = POLLIN };

	for (;;) {
		int n = poll(&p, 1, MDEV_STATS_INTERVAL_MS);

		if (n > 0)
			break; /* stop */
		if (n == 0)
			push_stats(s);
	}
	return NULL;
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
	}
	return NULL;
}

/* ------------------------------------------------------ server */

static void type_info(const struct vgpud_profile_spec *p, struct vgpu_mdev_type_info *t)
{
	const char *name = strncmp(p->name, "vgpu-", 5) ? p->name : p->name + 5;
	size_t i;

	memset(t, 0, sizeof(*t));
	snprintf(t->sysfs_name, sizeof(t->sysfs_name), "%.31s", name[0] ? name : p->name);
	for (i = 0; t->sysfs_name[i]; i++) {
		char c = t->sysfs_name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			t->sysfs_name[i] = '_';
	}
	snprintf(t->name, sizeof(t->name), "%s", p->name);
	if (p->cap_bytes)
		snprintf(t->description, sizeof(t->description),
		         "vGPU profile %s: weight %u, GPU memory cap %llu MiB, oversubscribed by "
		         "vgpud (GPUswap)", p->name, p->weight,
		         (unsigned long long)(p->cap_bytes >> 20));
	else
		snprintf(t->description, sizeof(t->description),
		         "vGPU profile %s: weight %u, no GPU memory cap, oversubscribed by vgpud "
		         "(GPUswap)", p->name, p->weight);
	t->available = p->max_instances ? p->max_instances : MDEV_UNLIMITED_INSTANCES;
}

int mdev_server_create(const struct mdev_server_config *config, struct mdev_server **out)
{
	const char *path = config->path ? config->path : VGPU_MDEV_CONTROL_PATH;
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	struct vgpu_mdev_set_types st = { .types = (uintptr_t)types };
	struct vgpu_mdev_version version;
	struct mdev_server *s;
	int err;

	if (!config->profile_count)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (s->fd < 0) {
		err = -errno;
		log_error("mdev: cannot open %s: %s%s", path, strerror(errno),
		          errno == ENOENT ? " (load vgpu_mdev.ko)" :
		          errno == EBUSY ? " (another vgpud is connected)" : "");
		free(s);
		return err;
	}
	if (ioctl(s->fd, VGPU_MDEV_GET_VERSION, &version) < 0 ||
	    version.version != VGPU_MDEV_CONTROL_VERSION ||
	    version.event_size != sizeof(struct vgpu_mdev_event) ||
	    version.abi_version >> 16 != VGPU_ABI_VERSION_MAJOR) {
		log_error("mdev: %s speaks control version %u / device ABI %#x, vgpud %u / %#x: "
		          "install matching vgpu_mdev.ko and vgpud", path, version.version,
		          version.abi_version, VGPU_MDEV_CONTROL_VERSION, VGPU_ABI_VERSION);
		err = -EPROTO;
		goto fail_fd;
	}
	s->host = config->host;
	s->type_count = config->profile_count < VGPU_MDEV_MAX_TYPES ? config->profile_count
	                                                             : VGPU_MDEV_MAX_TYPES;
	if (config->profile_count > s->type_count)
		log_warn("mdev: only the first %u profiles become mdev types", s->type_count);
	for (unsigned i = 0; i < s->type_count; i++) {
		s->profiles[i] = config->profiles[i];
		type_info(&s->profiles[i], &types[i]);
	}
	st.count = s->type_count;
	if (ioctl(s->fd, VGPU_MDEV_SET_TYPES, &st) < 0) {
		err = -errno;
		log_error("mdev: registering %u mdev types failed: %s%s", s->type_count,
		          strerror(errno),
		          errno == EBUSY ? " (mdevs of other profiles still exist: remove them)" : "");
		goto fail_fd;
	}
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (s->stop_fd < 0) {
		err = -errno;
		goto fail_fd;
	}
	pthread_mutex_init(&s->lock, NULL);
	{
		struct domain_names_config nc = {
			.libvirt_uri = config->libvirt_uri && config->libvirt_uri[0]
			                       ? config->libvirt_uri : NULL,
		};

		err = domain_names_create(&nc, &s->names);
		if (err) {
			close(s->stop_fd);
			goto fail_fd;
		}
	}
	err = -pthread_create(&s->thread, NULL, server_main, s);
	if (err) {
		domain_names_destroy(s->names);
		close(s->stop_fd);
		goto fail_fd;
	}
	err = -pthread_create(&s->stats_thread, NULL, stats_main, s);
	if (err) {
		uint64_t one = 1;

		if (write(s->stop_fd, &one, sizeof(one)) < 0)
			abort();
		pthread_join(s->thread, NULL);
		domain_names_destroy(s->names);
		close(s->stop_fd);
		goto fail_fd;
	}
	log_info("mdev: %u profile(s) registered as mdev types of /sys/class/mdev_bus/%s",
	         s->type_count, VGPU_MDEV_PARENT_NAME);
	*out = s;
	return 0;

fail_fd:
	close(s->fd);
	free(s);
	return err;
}

bool mdev_server_update_profile(struct mdev_server *s, const struct vgpud_profile_spec *spec)
{
	for (unsigned type = 0; type < s->type_count; type++) {
		if (strcmp(s->profiles[type].name, spec->name))
			continue;
		pthread_mutex_lock(&s->lock);
		s->profiles[type].max_instances = spec->max_instances;
		push_available_locked(s, type);
		pthread_mutex_unlock(&s->lock);
		return true;
	}
	return false;
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
	if (write(s->stop_fd, &one, sizeof(one)) < 0)
		log_warn("mdev: cannot stop the event thread: %s", strerror(errno));
	pthread_join(s->thread, NULL);
	pthread_join(s->stats_thread, NULL);
	while (s->vgpus) {
		struct mdev_vgpu *v = s->vgpus;

		join_worker(v);
		if (v->device) {
			vgpu_device_detach(v->device);
			atomic_store(&v->irq_device, NULL);
			push_gone(v);
			v->device = NULL;
		}
		s->vgpus = v->next;
		pthread_cond_destroy(&v->idle);
		pthread_mutex_destroy(&v->lock);
		free(v);
	}
	domain_names_destroy(s->names);
	close(s->stop_fd);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
