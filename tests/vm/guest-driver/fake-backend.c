// SPDX-License-Identifier: MIT
/*
 * fake-backend - a stand-in for vgpud on vgpu_mdev.ko's control device
 * (/dev/vgpu_mdev), for testing the guest driver vgpu.ko in L2 before
 * vgpud's mdev transport exists. It speaks the real mailbox protocol of
 * vgpu/abi/device_abi.h with bookkeeping only (no GPU memory, nothing evicted)
 * and plays the toy GPU of toy_gpu.h.
 *
 * Registers one mdev type "vgpu-gdtest" (sysfs type dir vgpu-gdtest),
 * backs all of BAR2 of every opened device with one memfd, sets FEATURES
 * (MSI-X, priority hints, stats), STATUS = READY and IRQ_MASK, and answers
 * requests on every doorbell (and every 2 ms, in case a doorbell event was
 * coalesced). Logs one line per request ("FAKE-BACKEND: ...") to stdout.
 *
 * Usage: fake-backend [--ready-file PATH]      SIGTERM/SIGINT: exit
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/abi/device_abi.h>
#include <vgpu/abi/mdev_control.h>

#include "toy_gpu.h"

#define MAX_DEVICES 8
#define MAX_BUFFERS 256
#define GPFIFO_ENTRY_BYTES 16u
#define VA_BASE 0x100000000ull
#define FEATURES                                                                    \
	(VGPU_FEATURE_MSIX | VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS | \
	 VGPU_FEATURE_MODULES)

struct buffer {
	uint32_t handle; /* 0 = free slot */
	uint32_t priority;
	uint64_t bytes;
};

struct channel {
	bool live;
	uint32_t notifier_offset;
	uint64_t last_kick;
	uint64_t pending_kick;
	uint64_t due_ns; /* 0: nothing pending */
};

struct device {
	bool used, open;
	uint32_t id;
	int fd;
	uint8_t *bar2;
	bool hello;
	uint32_t features;
	uint32_t req_tail, resp_head;
	uint32_t irq_mask;
	uint32_t next_handle;
	uint64_t next_va, allocated;
	struct buffer buffers[MAX_BUFFERS];
	struct channel channels[TOY_MAX_CHANNELS];
	uint32_t modules; /* bit mask of loaded module handles */
	uint64_t requests;
};

static int ctl = -1;
static struct device devices[MAX_DEVICES];
static volatile sig_atomic_t quit;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAKE-BACKEND: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct device *find_device(uint32_t id, bool create)
{
	struct device *free_slot = NULL;

	for (int i = 0; i < MAX_DEVICES; i++) {
		if (devices[i].used && devices[i].id == id)
			return &devices[i];
		if (!devices[i].used && !free_slot)
			free_slot = &devices[i];
	}
	if (!create || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->id = id;
	free_slot->fd = -1;
	return free_slot;
}

static void reply(uint32_t id, uint32_t seq, int status, const char *message)
{
	struct vgpu_mdev_reply r = { .device_id = id, .seq = seq, .status = status };

	if (message)
		snprintf(r.message, sizeof(r.message), "%s", message);
	if (ioctl(ctl, VGPU_MDEV_REPLY, &r) < 0)
		say("REPLY device %u seq %u failed: %s", id, seq, strerror(errno));
}

/* Apply up to three register ops, then raise vectors. */
static void reg_update(struct device *d, uint32_t vectors, int n, const uint32_t ops[][3])
{
	struct vgpu_mdev_reg_update u = { .device_id = d->id, .irq_vectors = vectors, .count = n };

	for (int i = 0; i < n; i++) {
		u.ops[i].offset = ops[i][0];
		u.ops[i].op = ops[i][1];
		u.ops[i].value = ops[i][2];
	}
	if (ioctl(ctl, VGPU_MDEV_REG_UPDATE, &u) < 0)
		say("REG_UPDATE device %u failed: %s", d->id, strerror(errno));
}

/* Raise an interrupt source: status bit always, vector only if unmasked. */
static void raise_irq(struct device *d, uint32_t irq_bit, uint32_t vector, uint32_t reg,
		      uint32_t reg_bits)
{
	uint32_t ops[2][3] = {
		{ VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR, irq_bit },
		{ reg, VGPU_MDEV_REG_OR, reg_bits },
	};

	reg_update(d, (d->irq_mask & irq_bit) ? 1u << vector : 0, reg ? 2 : 1, ops);
}

static void detach(struct device *d)
{
	if (d->bar2)
		munmap(d->bar2, VGPU_BAR2_SIZE);
	if (d->fd >= 0)
		close(d->fd);
	d->bar2 = NULL;
	d->fd = -1;
}

/* What vgpud does at OPEN and RESET: a fresh VM state and fresh BAR2. */
static int attach(struct device *d)
{
	struct vgpu_mdev_region r = { .device_id = d->id, .bar2_offset = 0,
				      .bytes = VGPU_BAR2_SIZE };
	uint32_t ops[3][3] = {
		{ VGPU_REG_FEATURES, VGPU_MDEV_REG_SET, FEATURES },
		{ VGPU_REG_STATUS, VGPU_MDEV_REG_SET, VGPU_STATUS_READY },
		{ VGPU_REG_IRQ_MASK, VGPU_MDEV_REG_SET, VGPU_IRQ_ALL },
	};
	struct vgpu_mailbox_header *h;
	uint32_t id = d->id;

	detach(d);
	memset(d, 0, sizeof(*d));
	d->used = d->open = true;
	d->id = id;
	d->next_va = VA_BASE;
	d->irq_mask = VGPU_IRQ_ALL;
	d->fd = memfd_create("fake-backend-bar2", MFD_CLOEXEC);
	if (d->fd < 0 || ftruncate(d->fd, VGPU_BAR2_SIZE) < 0)
		return -errno;
	d->bar2 = mmap(NULL, VGPU_BAR2_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	if (d->bar2 == MAP_FAILED) {
		d->bar2 = NULL;
		return -errno;
	}
	h = (struct vgpu_mailbox_header *)d->bar2;
	h->entries = VGPU_MAILBOX_ENTRIES;
	r.fd = d->fd;
	if (ioctl(ctl, VGPU_MDEV_MAP_REGION, &r) < 0) {
		say("MAP_REGION device %u failed: %s", d->id, strerror(errno));
		return -errno;
	}
	reg_update(d, 0, 3, ops);
	return 0;
}

static uint8_t *window(struct device *d, uint32_t index)
{
	return d->bar2 + VGPU_CHANNEL_WINDOW_BASE + (size_t)index * VGPU_CHANNEL_WINDOW_STRIDE;
}

/* Channel window layout: control page, GPFIFO, notifier, pushbuffer. */
static void channel_layout(uint32_t index, uint32_t entries, struct vgpu_channel_create_response *c)
{
	uint32_t gpfifo_bytes = (entries * GPFIFO_ENTRY_BYTES + VGPU_PAGE_SIZE - 1) &
				~(VGPU_PAGE_SIZE - 1);
	uint64_t va = 0x7f0000000000ull + (uint64_t)index * VGPU_CHANNEL_WINDOW_STRIDE;

	memset(c, 0, sizeof(*c));
	c->index = index;
	c->gpfifo_entries = entries;
	c->control_offset = 0;
	c->gpfifo_offset = VGPU_PAGE_SIZE;
	c->notifier_offset = VGPU_PAGE_SIZE + gpfifo_bytes;
	c->notifier_bytes = TOY_NOTIFIER_BYTES;
	c->pushbuf_offset = c->notifier_offset + TOY_NOTIFIER_BYTES;
	c->pushbuf_bytes = TOY_PUSHBUF_BYTES;
	c->notifier_gpu_va = va + c->notifier_offset;
	c->pushbuf_gpu_va = va + c->pushbuf_offset;
}

static struct buffer *find_buffer(struct device *d, uint32_t handle)
{
	for (int i = 0; handle && i < MAX_BUFFERS; i++)
		if (d->buffers[i].handle == handle)
			return &d->buffers[i];
	return NULL;
}

/* One request -> status and response payload (little-endian host assumed). */
static uint32_t handle_request(struct device *d, const struct vgpu_request *req, void *payload,
			       uint16_t *size)
{
	const void *in = req->payload;

	*size = 0;
	if (req->reserved || req->payload_size > VGPU_MAILBOX_PAYLOAD_SIZE)
		return VGPU_STATUS_INVALID;
	if (req->opcode != VGPU_OP_HELLO && !d->hello)
		return VGPU_STATUS_NOT_READY;
	switch (req->opcode) {
	case VGPU_OP_HELLO: {
		const struct vgpu_hello_request *h = in;
		struct vgpu_hello_response *r = payload;

		if (h->abi_version >> 16 != VGPU_ABI_VERSION_MAJOR)
			return VGPU_STATUS_VERSION;
		d->features = FEATURES & h->guest_features;
		d->hello = true;
		r->abi_version = VGPU_ABI_VERSION;
		r->features = d->features;
		r->max_channels = TOY_MAX_CHANNELS;
		*size = sizeof(*r);
		say("device %u: HELLO guest ABI %#x wants %#x -> features %#x, %u channels", d->id,
		    h->abi_version, h->guest_features, d->features, TOY_MAX_CHANNELS);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_QUERY: {
		struct vgpu_query_response *r = payload;

		r->vram_share_bytes = TOY_VRAM_SHARE;
		r->cap_bytes = TOY_CAP;
		r->chunk_bytes = TOY_CHUNK;
		r->vram_total_bytes = TOY_VRAM_TOTAL;
		r->page_size_mask = 1;
		*size = sizeof(*r);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_ALLOC: {
		const struct vgpu_alloc_request *a = in;
		struct vgpu_alloc_response *r = payload;
		uint64_t bytes = (a->bytes + VGPU_PAGE_SIZE - 1) & ~(uint64_t)(VGPU_PAGE_SIZE - 1);
		struct buffer *b = NULL;

		if (a->bytes == TOY_DIE_BYTES) {
			say("device %u: ALLOC of TOY_DIE_BYTES: exiting without an answer", d->id);
			_exit(0);
		}
		if (!a->bytes || a->bytes > (1ull << 40) || a->priority > VGPU_PRIORITY_MAX ||
		    a->flags)
			return VGPU_STATUS_INVALID;
		if (d->allocated + bytes > TOY_CAP) {
			say("device %u: ALLOC %llu bytes -> NO_MEMORY", d->id,
			    (unsigned long long)a->bytes);
			return VGPU_STATUS_NO_MEMORY;
		}
		for (int i = 0; !b && i < MAX_BUFFERS; i++)
			if (!d->buffers[i].handle)
				b = &d->buffers[i];
		if (!b)
			return VGPU_STATUS_LIMIT;
		b->handle = ++d->next_handle;
		b->bytes = bytes;
		b->priority = a->priority;
		d->allocated += bytes;
		r->handle = b->handle;
		r->bytes = bytes;
		r->gpu_va = d->next_va;
		d->next_va += (bytes + TOY_CHUNK - 1) & ~(TOY_CHUNK - 1);
		*size = sizeof(*r);
		say("device %u: ALLOC %llu bytes priority %u -> handle %u", d->id,
		    (unsigned long long)a->bytes, a->priority, b->handle);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_FREE: {
		const struct vgpu_free_request *f = in;
		struct buffer *b = find_buffer(d, f->handle);

		if (!b)
			return VGPU_STATUS_NOT_FOUND;
		d->allocated -= b->bytes;
		say("device %u: FREE handle %u (%llu bytes)", d->id, f->handle,
		    (unsigned long long)b->bytes);
		memset(b, 0, sizeof(*b));
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_SET_PRIORITY: {
		const struct vgpu_set_priority_request *p = in;
		struct buffer *b = find_buffer(d, p->handle);

		if (p->priority > VGPU_PRIORITY_MAX)
			return VGPU_STATUS_INVALID;
		if (!b)
			return VGPU_STATUS_NOT_FOUND;
		b->priority = p->priority;
		say("device %u: SET_PRIORITY handle %u -> %u", d->id, p->handle, p->priority);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_CHANNEL_CREATE: {
		const struct vgpu_channel_create_request *c = in;
		uint32_t entries = c->gpfifo_entries ? c->gpfifo_entries :
						       VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT;
		uint32_t index;

		if (entries < 2 || entries > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX ||
		    (entries & (entries - 1)))
			return VGPU_STATUS_INVALID;
		for (index = 0; index < TOY_MAX_CHANNELS && d->channels[index].live; index++)
			;
		if (index == TOY_MAX_CHANNELS) {
			say("device %u: CHANNEL_CREATE -> LIMIT", d->id);
			return VGPU_STATUS_LIMIT;
		}
		memset(window(d, index), 0, VGPU_CHANNEL_WINDOW_STRIDE);
		memset(&d->channels[index], 0, sizeof(d->channels[index]));
		d->channels[index].live = true;
		channel_layout(index, entries, payload);
		d->channels[index].notifier_offset =
			((struct vgpu_channel_create_response *)payload)->notifier_offset;
		*size = sizeof(struct vgpu_channel_create_response);
		say("device %u: CHANNEL_CREATE %u entries -> window %u", d->id, entries, index);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_CHANNEL_DESTROY: {
		const struct vgpu_channel_destroy_request *c = in;

		if (c->index >= TOY_MAX_CHANNELS || !d->channels[c->index].live)
			return VGPU_STATUS_NOT_FOUND;
		d->channels[c->index].live = false;
		say("device %u: CHANNEL_DESTROY window %u", d->id, c->index);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_STATS: {
		struct vgpu_stats_response *r = payload;

		r->allocated_bytes = d->allocated;
		r->resident_bytes = d->allocated;
		r->fair_share_bytes = TOY_VRAM_SHARE;
		*size = sizeof(*r);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_MODULE_LOAD: {
		const struct vgpu_module_load_request *m = in;
		struct vgpu_module_load_response *r = payload;
		uint32_t module;

		if (!(d->features & VGPU_FEATURE_MODULES))
			return VGPU_STATUS_UNSUPPORTED;
		if (req->payload_size < sizeof(*m) || !m->image_va || !m->image_bytes || m->flags)
			return VGPU_STATUS_INVALID;
		if (m->table_bytes < TOY_MODULE_TABLE_BYTES) {
			r->table_bytes = TOY_MODULE_TABLE_BYTES;
			*size = sizeof(*r);
			return VGPU_STATUS_LIMIT;
		}
		for (module = 0; module < TOY_MAX_MODULES && (d->modules & (1u << module)); module++)
			;
		if (module == TOY_MAX_MODULES)
			return VGPU_STATUS_LIMIT;
		d->modules |= 1u << module;
		r->module = module;
		r->function_count = TOY_MODULE_FUNCTIONS;
		r->table_bytes = TOY_MODULE_TABLE_BYTES;
		*size = sizeof(*r);
		say("device %u: MODULE_LOAD %llu bytes -> module %u", d->id,
		    (unsigned long long)m->image_bytes, module);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_MODULE_UNLOAD: {
		const struct vgpu_module_unload_request *m = in;

		if (m->module >= TOY_MAX_MODULES || !(d->modules & (1u << m->module)))
			return VGPU_STATUS_NOT_FOUND;
		d->modules &= ~(1u << m->module);
		say("device %u: MODULE_UNLOAD module %u", d->id, m->module);
		return VGPU_STATUS_OK;
	}
	default:
		return VGPU_STATUS_UNSUPPORTED;
	}
}

/* Answer every queued request the response ring has room for. */
static void serve_mailbox(struct device *d)
{
	struct vgpu_mailbox_header *h = (struct vgpu_mailbox_header *)d->bar2;
	uint32_t head, resp_tail;
	bool answered = false;

	if (!d->bar2)
		return;
	for (;;) {
		struct vgpu_request req;
		struct vgpu_response resp;
		uint8_t *slot;

		head = __atomic_load_n(&h->req_head, __ATOMIC_ACQUIRE);
		resp_tail = __atomic_load_n(&h->resp_tail, __ATOMIC_ACQUIRE);
		if (head == d->req_tail || head - d->req_tail > VGPU_MAILBOX_ENTRIES)
			break;
		if (d->resp_head - resp_tail >= VGPU_MAILBOX_ENTRIES)
			break; /* response ring full: wait for the guest */
		slot = d->bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
		       (d->req_tail % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
		memcpy(&req, slot, sizeof(req));
		memset(&resp, 0, sizeof(resp));
		resp.opcode = req.opcode;
		resp.seq = req.seq;
		resp.status = handle_request(d, &req, resp.payload, &resp.payload_size);
		if (resp.status != VGPU_STATUS_OK)
			say("device %u: request %u opcode %u -> status %u", d->id, req.seq,
			    req.opcode, resp.status);
		d->requests++;
		slot = d->bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
		       (d->resp_head % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
		memcpy(slot, &resp, sizeof(resp));
		d->req_tail++;
		d->resp_head++;
		__atomic_store_n(&h->req_tail, d->req_tail, __ATOMIC_RELEASE);
		__atomic_store_n(&h->resp_head, d->resp_head, __ATOMIC_RELEASE);
		answered = true;
	}
	if (answered)
		raise_irq(d, VGPU_IRQ_MAILBOX, VGPU_MSIX_VECTOR_MAILBOX, 0, 0);
}

/* The toy GPU: kick words -> fences or kills (toy_gpu.h). */
static void run_toy_gpu(struct device *d)
{
	uint64_t now = now_ns();

	if (!d->bar2)
		return;
	for (uint32_t i = 0; i < TOY_MAX_CHANNELS; i++) {
		struct channel *c = &d->channels[i];
		uint8_t *w = window(d, i);
		uint64_t kick;

		if (!c->live)
			continue;
		kick = __atomic_load_n((uint64_t *)(w + TOY_KICK_OFFSET), __ATOMIC_ACQUIRE);
		if (kick && kick != c->last_kick && !c->due_ns) {
			c->last_kick = kick;
			c->pending_kick = kick;
			c->due_ns = now + TOY_DELAY_MS * 1000000ull;
		}
		if (!c->due_ns || now < c->due_ns)
			continue;
		c->due_ns = 0;
		if (c->pending_kick == TOY_KILL) {
			say("device %u: toy GPU kills channel %u", d->id, i);
			raise_irq(d, VGPU_IRQ_CHANNEL_ERROR, VGPU_MSIX_VECTOR_ERROR,
				  VGPU_REG_ERROR_CHANNELS, 1u << i);
			continue;
		}
		__atomic_store_n((uint64_t *)(w + c->notifier_offset + TOY_FENCE_OFFSET),
				 c->pending_kick, __ATOMIC_RELEASE);
		say("device %u: toy GPU fence %llu on channel %u", d->id,
		    (unsigned long long)c->pending_kick, i);
		raise_irq(d, VGPU_IRQ_FENCE, VGPU_MSIX_VECTOR_FENCE, VGPU_REG_FENCE_CHANNELS,
			  1u << i);
	}
}

static void event(const struct vgpu_mdev_event *e)
{
	struct device *d;

	switch (e->type) {
	case VGPU_MDEV_EVENT_CREATE:
		d = find_device(e->device_id, true);
		say("CREATE device %u", e->device_id);
		reply(e->device_id, e->seq, d ? 0 : -ENOSPC, d ? NULL : "fake-backend: full");
		break;
	case VGPU_MDEV_EVENT_EXISTS:
		find_device(e->device_id, true);
		break;
	case VGPU_MDEV_EVENT_OPEN:
	case VGPU_MDEV_EVENT_RESET:
		say("%s device %u", e->type == VGPU_MDEV_EVENT_OPEN ? "OPEN" : "RESET", e->device_id);
		d = find_device(e->device_id, true);
		reply(e->device_id, e->seq, d ? attach(d) : -ENOSPC, NULL);
		break;
	case VGPU_MDEV_EVENT_CLOSE:
		say("CLOSE device %u", e->device_id);
		d = find_device(e->device_id, false);
		if (d) {
			detach(d);
			d->open = false;
		}
		reply(e->device_id, e->seq, 0, NULL);
		break;
	case VGPU_MDEV_EVENT_REMOVE:
		d = find_device(e->device_id, false);
		if (d) {
			detach(d);
			d->used = false;
		}
		break;
	case VGPU_MDEV_EVENT_REG_WRITE:
		d = find_device(e->device_id, false);
		if (!d)
			break;
		if (e->payload.regs.changed & VGPU_MDEV_REG_IRQ_MASK)
			d->irq_mask = e->payload.regs.irq_mask;
		if (e->payload.regs.changed & VGPU_MDEV_REG_DOORBELL)
			serve_mailbox(d);
		break;
	default:
		break;
	}
}

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

int main(int argc, char **argv)
{
	struct vgpu_mdev_type_info type;
	struct vgpu_mdev_set_types st = { .count = 1, .types = (uintptr_t)&type };
	struct sigaction sa = { .sa_handler = on_signal };
	struct vgpu_mdev_version v;
	const char *ready_file = NULL;
	struct vgpu_mdev_event e;
	struct pollfd pfd;

	if (argc == 3 && !strcmp(argv[1], "--ready-file")) {
		ready_file = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--ready-file PATH]\n", argv[0]);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	ctl = open(VGPU_MDEV_CONTROL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (ctl < 0) {
		perror(VGPU_MDEV_CONTROL_PATH);
		return 1;
	}
	if (ioctl(ctl, VGPU_MDEV_GET_VERSION, &v) < 0 || v.version != VGPU_MDEV_CONTROL_VERSION ||
	    v.event_size != sizeof(struct vgpu_mdev_event)) {
		fprintf(stderr, "fake-backend: control device version mismatch\n");
		return 1;
	}
	memset(&type, 0, sizeof(type));
	strcpy(type.sysfs_name, "gdtest");
	strcpy(type.name, "vgpu-gdtest");
	strcpy(type.description, "guest driver test profile (fake-backend)");
	type.available = 4;
	if (ioctl(ctl, VGPU_MDEV_SET_TYPES, &st) < 0) {
		perror("SET_TYPES");
		return 1;
	}
	say("control version %u, device ABI %#x, features %#x; type vgpu-gdtest registered",
	    v.version, v.abi_version, v.features);
	if (ready_file) {
		FILE *f = fopen(ready_file, "w");

		if (f)
			fclose(f);
	}

	pfd.fd = ctl;
	pfd.events = POLLIN;
	while (!quit) {
		int n = poll(&pfd, 1, 2);

		if (n < 0 && errno != EINTR) {
			perror("poll");
			break;
		}
		while (read(ctl, &e, sizeof(e)) == (ssize_t)sizeof(e))
			event(&e);
		for (int i = 0; i < MAX_DEVICES; i++) {
			if (!devices[i].used || !devices[i].open)
				continue;
			serve_mailbox(&devices[i]);
			run_toy_gpu(&devices[i]);
		}
	}
	for (int i = 0; i < MAX_DEVICES; i++)
		if (devices[i].used)
			say("device %u: %llu requests answered", devices[i].id,
			    (unsigned long long)devices[i].requests);
	close(ctl);
	return 0;
}
