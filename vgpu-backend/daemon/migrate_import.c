// SPDX-License-Identifier: MIT
/* migrate_import.c - the destination side of a migration or restore, and
 * the adoption of an imported VM by its frontend; see migrate.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/core_migrate.h"
#include "vgpu/error.h"
#include "vgpu/util.h"

#include "channel_window.h"
#include "config.h"
#include "daemon.h"
#include "device.h"
#include "log.h"
#include "migrate.h"
#include "migrate_stream.h"

/* ----------------------------------------------- the parked transport */

static int parked_map_region(struct vgpu_transport *t, const struct vgpu_bar2_segment *seg)
{
	(void)t;
	(void)seg;
	return 0;
}

static int parked_unmap_region(struct vgpu_transport *t, uint64_t bar2_offset, uint64_t bytes)
{
	(void)t;
	(void)bar2_offset;
	(void)bytes;
	return 0;
}

static int parked_window_block(struct vgpu_transport *t, uint32_t index, uint64_t bar2_offset,
                               uint64_t bytes)
{
	(void)t;
	(void)index;
	(void)bar2_offset;
	(void)bytes;
	return 0;
}

static int parked_window_map(struct vgpu_transport *t, uint32_t index, bool shadow,
                             const struct vgpu_bar2_segment *segments, unsigned count)
{
	(void)t;
	(void)index;
	(void)shadow;
	(void)segments;
	(void)count;
	return 0;
}

static void parked_raise_irq(struct vgpu_transport *t, unsigned vector)
{
	(void)t;
	(void)vector;
}

static int parked_dma_read(struct vgpu_transport *t, uint64_t a, void *dst, size_t bytes)
{
	(void)t;
	(void)a;
	(void)dst;
	(void)bytes;
	return -ENOTSUP;
}

static int parked_dma_write(struct vgpu_transport *t, uint64_t a, const void *src, size_t bytes)
{
	(void)t;
	(void)a;
	(void)src;
	(void)bytes;
	return -ENOTSUP;
}

/* A VM between its import and its frontend's ATTACH: nobody to map
 * anything into; interrupts are recorded in its registers only. */
static const struct vgpu_transport_ops parked_ops = {
	.map_region = parked_map_region,
	.unmap_region = parked_unmap_region,
	.window_block = parked_window_block,
	.window_map = parked_window_map,
	.raise_irq = parked_raise_irq,
	.dma_read = parked_dma_read,
	.dma_write = parked_dma_write,
};

static struct vgpu_transport parked_transport = {
	.ops = &parked_ops,
	.kind = "migration (parked)",
};

bool migrate_is_parked(const struct vgpud_device *dev)
{
	return dev->parked;
}

/* ------------------------------------------------------------- import */

struct imported_buffer {
	uint64_t source_handle; /* the source core's */
	uint64_t handle;        /* ours */
	uint64_t gpu_va;
	uint64_t bytes;
	bool named;             /* by the HANDLES record */
	bool module_owned;      /* a module's variables */
};

struct import {
	struct vgpud *d;
	struct vgpud_device *dev;
	struct imported_buffer *buffers;
	size_t count, capacity;
	bool handles_done, device_done;
	/* the module whose pieces are arriving (module.image non-NULL) */
	struct vgpu_core_module_desc module;
	uint64_t module_received;
};

static struct imported_buffer *find_buffer(struct import *im, uint64_t source_handle)
{
	for (size_t i = 0; i < im->count; i++)
		if (im->buffers[i].source_handle == source_handle)
			return &im->buffers[i];
	return NULL;
}

static int begin(struct import *im, const struct migrate_begin *b, uint32_t peer_uid,
                 struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct vgpud *d = im->d;
	struct vgpu_attach_params params;
	char name[MIGRATE_NAME_MAX], profile[MIGRATE_NAME_MAX], scheduler[17];
	int err;

	memcpy(name, b->vm_name, sizeof(name));
	memcpy(profile, b->profile, sizeof(profile));
	memcpy(scheduler, b->scheduler, sizeof(b->scheduler));
	name[sizeof(name) - 1] = profile[sizeof(profile) - 1] = scheduler[16] = '\0';
	if (b->stream_version != MIGRATE_STREAM_VERSION)
		return vgpu_error_set(error, -EPROTO,
		                      "the stream has version %u; this vgpud reads %u",
		                      b->stream_version, MIGRATE_STREAM_VERSION);
	if (peer_uid != 0 && peer_uid != (uint32_t)getuid() && peer_uid != b->owner_uid)
		return vgpu_error_set(error, -EPERM, "user %u may not import a VM of user %u",
		                      peer_uid,
		                      b->owner_uid);
	/* the host's policy binds imports as it binds attaches */
	if (!vgpud_config_profile_allowed(&d->config, profile))
		return vgpu_error_set(error, -EPERM, "profile '%s' of VM '%s' is not allowed here "
		                      "(allowed_profiles '%s')", profile, name,
		                      d->config.allowed_profiles[0] ? d->config.allowed_profiles
		                      : d->config.default_profile);
	params.vm_name = name;
	params.profile = profile;
	params.owner_uid = b->owner_uid;
	err = vgpud_device_attach(d, &parked_transport, &params, false, &im->dev, error);
	if (err)
		return err;
	im->dev->parked = true;
	if (im->dev->va_window_base != b->va_window_base)
		return vgpu_error_set(error, -EINVAL,
		                      "the VM's channel windows are at GPU address %#llx here, "
		                      "%#llx on the source",
		                      (unsigned long long)im->dev->va_window_base,
		                      (unsigned long long)b->va_window_base);
	if (b->weight_overridden && b->weight) {
		vgpu_core_set_weight(im->dev->vm, b->weight, &core_error);
		atomic_store(&im->dev->weight_overridden, true);
	}
	if (scheduler[0] && vgpu_core_scheduler_known(scheduler))
		vgpu_core_vm_set_scheduler(im->dev->vm, scheduler, &core_error);
	/* channels created from now on start suspended */
	err = vgpu_core_vm_stop_channels(im->dev->vm, &core_error);
	if (err)
		vgpu_error_propagate(error, &core_error);
	return err;
}

static int buffer(struct import *im, const struct migrate_buffer *b, struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct vgpu_buffer_info info;
	int err;

	if (find_buffer(im, b->handle))
		return vgpu_error_set(error, -EPROTO, "the stream announces buffer %#llx twice",
		                      (unsigned long long)b->handle);
	if (im->count == im->capacity) {
		size_t capacity = im->capacity ? 2 * im->capacity : 64;
		struct imported_buffer *grown = realloc(im->buffers, capacity * sizeof(*grown));

		if (!grown)
			return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
		im->buffers = grown;
		im->capacity = capacity;
	}
	if (b->bytes > UINT64_MAX - b->gpu_va)
		return vgpu_error_set(error, -EPROTO, "a BUFFER record's range wraps around");
	/* A buffer announced earlier where this one lies was freed on the
	 * source meanwhile (two live buffers never overlap there): it goes. */
	for (size_t i = 0; i < im->count;) {
		struct imported_buffer *old = &im->buffers[i];

		if (old->gpu_va < b->gpu_va + b->bytes && b->gpu_va < old->gpu_va + old->bytes) {
			vgpu_core_free(im->dev->vm, old->handle, NULL);
			*old = im->buffers[--im->count];
		} else {
			i++;
		}
	}
	err = vgpu_core_import_buffer(im->dev->vm, b->gpu_va, b->bytes, b->priority, &info,
	                              &core_error);
	if (err)
		return vgpu_error_propagate(error, &core_error);
	im->buffers[im->count++] = (struct imported_buffer){
		.source_handle = b->handle,
		.handle = info.handle,
		.gpu_va = b->gpu_va,
		.bytes = info.bytes,
	};
	return 0;
}

static int data(struct import *im, const uint8_t *payload, uint32_t length,
                struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct migrate_data h;
	struct imported_buffer *b;
	int err;

	memcpy(&h, payload, sizeof(h));
	b = find_buffer(im, h.handle);
	if (!b || h.bytes != length - sizeof(h) || h.offset > b->bytes ||
	    h.bytes > b->bytes - h.offset) {
		return vgpu_error_set(error, -EPROTO,
		                      "a DATA record names no announced buffer or a range outside "
		                      "it");
	}
	err = vgpu_core_buffer_write(im->dev->vm, b->handle, h.offset, payload + sizeof(h), h.bytes,
	                             &core_error);
	if (err)
		vgpu_error_propagate(error, &core_error);
	return err;
}

static int channel(struct import *im, const uint8_t *payload, uint32_t length,
                   struct vgpu_error *error)
{
	struct vgpud_device *dev = im->dev;
	struct vgpu_channel_create_response response;
	struct migrate_channel c;
	struct channel_window *win;
	uint8_t *control, *gpfifo, *host;
	const uint8_t *p = payload + sizeof(c);
	enum vgpu_status status;
	int err;

	memcpy(&c, payload, sizeof(c));
	if (c.index >= VGPU_MAX_CHANNELS || dev->windows[c.index] ||
	    (uint64_t)c.control_bytes + c.gpfifo_bytes + c.host_bytes != length - sizeof(c)) {
		return vgpu_error_set(error, -EPROTO, "a CHANNEL record is malformed");
	}
	status = channel_window_create(dev, c.index, c.gpfifo_entries, &response, &win);
	if (status != VGPU_STATUS_OK)
		return vgpu_error_set(error, -ENOSPC,
		                      "cannot create channel %u (%u GPFIFO entries) here",
		                      c.index, c.gpfifo_entries);
	__atomic_store_n(&dev->windows[c.index], win, __ATOMIC_RELEASE);
	atomic_fetch_add(&dev->channels, 1);
	channel_window_migration_pages(win, &control, &gpfifo, &host);
	if (c.control_bytes != win->control_bytes || c.gpfifo_bytes != win->gpfifo_bytes ||
	    (c.host_bytes && (!host || c.host_bytes != win->host_bytes)) || !control) {
		return vgpu_error_set(error, -EINVAL, "channel %u's window layout differs here",
		                      c.index);
	}
	memcpy(control, p, c.control_bytes);
	memcpy(gpfifo, p + c.control_bytes, c.gpfifo_bytes);
	if (c.host_bytes)
		memcpy(host, p + c.control_bytes + c.gpfifo_bytes, c.host_bytes);
	err = vgpu_core_channel_set_guest_state(win->channel, c.guest_put, c.guest_get);
	if (err)
		vgpu_error_set(error, err, "channel %u's GP_PUT/GP_GET are out of its ring",
		               c.index);
	return err;
}

static void module_reset(struct import *im)
{
	free(im->module.image);
	free(im->module.variable_va);
	memset(&im->module, 0, sizeof(im->module));
	im->module_received = 0;
}

/* A complete module: load it again under its id, in its variables' buffer. */
static int module_restore(struct import *im, struct vgpu_error *error)
{
	struct vgpud_device *dev = im->dev;
	struct vgpu_core_module_desc *m = &im->module;
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct imported_buffer *b = NULL;
	int err;

	if (m->variable_count) {
		b = find_buffer(im, m->variables_handle);
		if (!b || b->named || b->module_owned)
			return vgpu_error_set(error, -EPROTO, "module %u names no announced "
			                      "buffer, or one taken, for its variables", m->id);
		m->variables_handle = b->handle;
	}
	if (dev->modules >= dev->daemon->config.max_modules_per_vm)
		return vgpu_error_set(error, -ENOSPC, "the VM has more modules than "
		                      "max_modules_per_vm (%u) here",
		                      dev->daemon->config.max_modules_per_vm);
	err = vgpu_core_module_restore(dev->vm, m, "module", &core_error);
	if (err)
		return vgpu_error_set(error, err, "cannot load the VM's GPU program (module %u) "
		                      "here: %s", m->id, vgpu_error_msg(&core_error));
	if (b)
		b->module_owned = true;
	dev->modules++; /* the mailbox worker serves nothing yet */
	return 0;
}

static int module_piece(struct import *im, const uint8_t *payload, uint32_t length,
                        struct vgpu_error *error)
{
	struct vgpu_core_module_desc *m = &im->module;
	struct migrate_module rec;
	uint64_t head;
	int err = 0;

	memcpy(&rec, payload, sizeof(rec));
	head = rec.image_offset ? 0 : (uint64_t)rec.variable_count * sizeof(uint64_t);
	if (rec.variable_count > MIGRATE_MODULE_VARIABLES_MAX || !rec.image_bytes ||
	    rec.image_bytes > VGPU_MODULE_IMAGE_MAX_BYTES ||
	    sizeof(rec) + head + rec.piece_bytes != length ||
	    rec.image_offset != im->module_received ||
	    rec.piece_bytes > rec.image_bytes - rec.image_offset ||
	    (!rec.piece_bytes && rec.image_offset < rec.image_bytes) ||
	    (m->image && (rec.id != m->id || rec.image_bytes != m->image_bytes ||
	                  rec.variable_count != m->variable_count)))
		return vgpu_error_set(error, -EPROTO, "a MODULE record is malformed or out of order");
	if (!rec.image_offset) {
		*m = (struct vgpu_core_module_desc){
			.id = rec.id,
			.variable_count = rec.variable_count,
			.variables_handle = rec.variables_handle,
			.variables_va = rec.variables_va,
			.variables_bytes = rec.variables_bytes,
			.image_bytes = (size_t)rec.image_bytes,
		};
		m->image = malloc((size_t)rec.image_bytes + 1);
		m->variable_va = malloc(head ? (size_t)head : 1);
		if (!m->image || !m->variable_va) {
			module_reset(im);
			return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
		}
		memcpy(m->variable_va, payload + sizeof(rec), (size_t)head);
	}
	memcpy((uint8_t *)m->image + rec.image_offset, payload + sizeof(rec) + head,
	       (size_t)rec.piece_bytes);
	im->module_received += rec.piece_bytes;
	if (im->module_received == m->image_bytes) {
		((uint8_t *)m->image)[m->image_bytes] = 0; /* PTX is text */
		err = module_restore(im, error);
		module_reset(im);
	}
	return err;
}

static int device_state(struct import *im, const uint8_t *payload, uint32_t length,
                        struct vgpu_error *error)
{
	struct vgpud_device *dev = im->dev;
	struct migrate_device m;

	memcpy(&m, payload, sizeof(m));
	if (m.mailbox_bytes != VGPU_MAILBOX_SIZE || length != sizeof(m) + VGPU_MAILBOX_SIZE)
		return vgpu_error_set(error, -EPROTO,
		                      "the DEVICE record's mailbox has the wrong size");
	memcpy(dev->mailbox, payload + sizeof(m), VGPU_MAILBOX_SIZE);
	dev->server.req_tail = m.req_tail; /* the parked worker serves nothing yet */
	dev->server.resp_head = m.resp_head;
	atomic_store(&dev->irq_status, m.irq_status & VGPU_IRQ_ALL);
	atomic_store(&dev->irq_mask, m.irq_mask & VGPU_IRQ_ALL);
	atomic_store(&dev->fence_channels, m.fence_channels);
	atomic_store(&dev->error_channels, m.error_channels);
	dev->features = m.features & dev->features_offered;
	dev->hello_done = m.hello_done != 0;
	im->device_done = true;
	return 0;
}

static int handles(struct import *im, const uint8_t *payload, uint32_t length,
                   struct vgpu_error *error)
{
	struct migrate_handles hs;
	uint32_t *guest;
	uint64_t *core;
	int err = 0;

	memcpy(&hs, payload, sizeof(hs));
	if ((uint64_t)hs.count * sizeof(struct migrate_handle) != length - sizeof(hs))
		return vgpu_error_set(error, -EPROTO, "the HANDLES record is malformed");
	guest = calloc(hs.count ? hs.count : 1, sizeof(*guest));
	core = calloc(hs.count ? hs.count : 1, sizeof(*core));
	if (!guest || !core)
		err = -ENOMEM;
	for (uint32_t i = 0; i < hs.count && !err; i++) {
		struct migrate_handle h;
		struct imported_buffer *b;

		memcpy(&h, payload + sizeof(hs) + i * sizeof(h), sizeof(h));
		b = find_buffer(im, h.core);
		if (!b || b->named) {
			err = -EPROTO;
			break;
		}
		b->named = true;
		guest[i] = h.guest;
		core[i] = b->handle;
	}
	if (!err)
		err = handle_table_restore(&im->dev->handles, guest, core, hs.count);
	if (err)
		vgpu_error_set(error, err,
		               "the HANDLES record names unknown or repeated buffers or handles");
	free(guest);
	free(core);
	im->handles_done = !err;
	return err;
}

/* END: drop buffers freed on the source meanwhile, start the channels. */
static int end(struct import *im, struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	int err;

	if (!im->handles_done || !im->device_done || im->module.image)
		return vgpu_error_set(error, -EPROTO, "the stream ends without the VM's device "
		                      "state, or inside a module");
	for (size_t i = 0; i < im->count; i++)
		if (!im->buffers[i].named && !im->buffers[i].module_owned)
			vgpu_core_free(im->dev->vm, im->buffers[i].handle, &core_error);
	err = vgpu_core_vm_start_channels(im->dev->vm, &core_error);
	if (err)
		vgpu_error_set(error, err, "cannot start the VM's channels: %s",
		               vgpu_error_msg(&core_error));
	return err;
}

int migrate_import(struct vgpud *d, int fd, uint32_t peer_uid, struct vgpu_error *error)
{
	struct import im = { .d = d };
	struct migrate_stream s;
	uint8_t *buf = malloc(MIGRATE_RECORD_MAX);
	bool ended = false;
	int err = 0;

	if (!buf)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	migrate_stream_init(&s, fd);
	while (!err && !ended) {
		uint16_t type;
		uint32_t length;
		const char *what;

		err = migrate_read(&s, buf, &type, &length, &what);
		if (err) {
			if (err == -EPIPE)
				vgpu_error_set(error, -EPROTO,
				               "the stream ends before its END record");
			else if (err == -EPROTO)
				vgpu_error_set(error, err, "malformed stream (record %llu): %s",
				               (unsigned long long)s.records, what);
			else
				vgpu_error_set(error, err, "cannot read the stream: %s",
				               strerror(-err));
			err = err == -EPIPE ? -EPROTO : err;
			break;
		}
		if ((type == MIGRATE_REC_BEGIN) != !im.dev) {
			err = vgpu_error_set(error, -EPROTO,
			                     "the stream does not start with BEGIN, or has two");
			break;
		}
		switch (type) {
		case MIGRATE_REC_BEGIN: {
			struct migrate_begin b;

			memcpy(&b, buf, sizeof(b));
			err = begin(&im, &b, peer_uid, error);
			break;
		}
		case MIGRATE_REC_BUFFER: {
			struct migrate_buffer b;

			memcpy(&b, buf, sizeof(b));
			err = buffer(&im, &b, error);
			break;
		}
		case MIGRATE_REC_DATA:
			err = data(&im, buf, length, error);
			break;
		case MIGRATE_REC_CHANNEL:
			err = channel(&im, buf, length, error);
			break;
		case MIGRATE_REC_DEVICE:
			err = device_state(&im, buf, length, error);
			break;
		case MIGRATE_REC_MODULE:
			err = module_piece(&im, buf, length, error);
			break;
		case MIGRATE_REC_HANDLES:
			err = im.handles_done ? -EPROTO : handles(&im, buf, length, error);
			break;
		case MIGRATE_REC_END:
			err = end(&im, error);
			ended = !err;
			break;
		default:
			err = -EPROTO;
			break;
		}
	}
	free(buf);
	free(im.buffers);
	module_reset(&im);
	if (err) {
		if (im.dev) /* everything it holds goes */
			vgpu_device_detach(im.dev);
		return err;
	}
	log_info("VM '%s' imported (%llu bytes); parked until its frontend attaches with "
	         "RESUME", im.dev->name, (unsigned long long)s.bytes);
	return 0;
}

/* ------------------------------------------------------------- adopt */

int migrate_adopt(struct vgpud *d, struct vgpu_transport *t, const char *vm_name,
                  uint32_t owner_uid, struct vgpud_device **out, struct vgpu_error *error)
{
	struct vgpud_device *dev;
	int err = 0;

	vgpu_mutex_lock(&d->registry.lock);
	dev = vgpud_registry_find_locked(&d->registry, vm_name);
	if (!dev || !dev->parked)
		err = -ENOENT;
	else if (owner_uid != 0 && owner_uid != dev->owner_uid)
		err = -EPERM;
	else
		dev->parked = false; /* ours now */
	vgpu_mutex_unlock(&d->registry.lock);
	if (err)
		return vgpu_error_set(error, err,
		                      err == -ENOENT ? "no imported VM '%s' waits here; import "
		                      "(migrate, restore) it first"
		                      : "VM '%s' belongs to another user",
		                      vm_name);
	vgpu_device_pause_worker(dev);
	__atomic_store_n(&dev->transport, t, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < VGPU_MAX_CHANNELS && !err; i++)
		if (dev->windows[i])
			err = channel_window_republish(dev->windows[i], t);
	vgpu_device_resume_worker(dev); /* serves what waits in the ring */
	if (err) {
		vgpu_error_set(error, err, "cannot map the VM's channel windows: %s",
		               strerror(-err));
		vgpu_device_detach(dev);
		return err;
	}
	/* whatever completed while parked */
	vgpu_device_raise(dev, atomic_load(&dev->irq_status) |
	                       (atomic_load(&dev->fence_channels) ? VGPU_IRQ_FENCE : 0));
	log_info("VM '%s' (id %u) adopted by its frontend over %s", dev->name, dev->vm_id,
	         t->kind);
	*out = dev;
	return 0;
}
