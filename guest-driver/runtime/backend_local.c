// SPDX-License-Identifier: MIT
/*
 * backend_local.c - the runtime's backend over vgpud's local transport and
 * the shared mailbox protocol code (see vgpu_guest_local.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"
#include "vgpu_guest_local.h"

#define WANTED_FEATURES \
	(VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS | VGPU_FEATURE_DOORBELL_KICK | \
	 VGPU_FEATURE_MODULES | VGPU_FEATURE_CHANNEL_FAULT | VGPU_FEATURE_SEMAPHORE_TIMESTAMP)
/* Longest single sleep of a fence wait: bounds what a lost interrupt costs. */
#define FENCE_SLICE_MS 20

struct local_backend {
	struct vgpu_local_device *dev;
	uint8_t *bar2;
	struct vgpu_proto proto;
	uint32_t pending_irqs;  /* VGPU_IRQ_* seen but not yet looked at */
	uint32_t dead_channels; /* VGPU_REG_ERROR_CHANNELS, accumulated */
};

static const struct vgpu_backend_ops local_ops;

static uint32_t local_reg_read(void *ctx, uint32_t offset)
{
	struct local_backend *b = ctx;

	return vgpu_local_device_reg_read(b->dev, offset);
}

static void local_reg_write(void *ctx, uint32_t offset, uint32_t value)
{
	struct local_backend *b = ctx;

	vgpu_local_device_reg_write(b->dev, offset, value);
}

/* Every interrupt seen, whoever waited for it, is remembered for the fence
 * waiters (the mailbox waits consume the eventfd too). */
static int local_wait_irq(void *ctx, int timeout_ms)
{
	struct local_backend *b = ctx;
	int ret = vgpu_local_device_wait_irq(b->dev, timeout_ms);

	if (ret > 0)
		b->pending_irqs |= (uint32_t)ret;
	return ret;
}

static const struct vgpu_proto_device_ops local_device_ops = {
	.reg_read = local_reg_read,
	.reg_write = local_reg_write,
	.wait_irq = local_wait_irq,
};

static int local_info(void *backend, struct vgpu_device_info *out)
{
	struct local_backend *b = backend;
	struct vgpu_query_response query;
	int ret;

	if (!b->proto.ready) {
		ret = vgpu_proto_hello(&b->proto, WANTED_FEATURES, NULL);
		if (ret)
			return ret;
	}
	ret = vgpu_proto_query(&b->proto, &query);
	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->abi_version = b->proto.hello.abi_version;
	out->features = b->proto.hello.features;
	out->max_channels = b->proto.hello.max_channels;
	out->vram_share_bytes = query.vram_share_bytes;
	out->cap_bytes = query.cap_bytes;
	out->chunk_bytes = query.chunk_bytes;
	out->vram_total_bytes = query.vram_total_bytes;
	out->page_size_mask = query.page_size_mask;
	return 0;
}

static int local_alloc(void *backend, uint64_t bytes, uint32_t priority, uint32_t flags,
                       struct vgpu_alloc_response *out)
{
	struct local_backend *b = backend;

	return vgpu_proto_alloc(&b->proto, bytes, priority, flags, out);
}

static int local_free(void *backend, uint32_t handle)
{
	struct local_backend *b = backend;

	return vgpu_proto_free(&b->proto, handle);
}

static int local_set_priority(void *backend, uint32_t handle, uint32_t priority)
{
	struct local_backend *b = backend;

	return vgpu_proto_set_priority(&b->proto, handle, priority);
}

static int local_stats(void *backend, struct vgpu_stats_response *out)
{
	struct local_backend *b = backend;

	return vgpu_proto_stats(&b->proto, out);
}

static int local_channel_open(void *backend, uint32_t gpfifo_entries,
                              struct vgpu_channel_window *out)
{
	struct local_backend *b = backend;
	struct vgpu_channel_create_response ch;
	uint8_t *window;
	int ret;

	ret = vgpu_proto_channel_create(&b->proto, gpfifo_entries, &ch);
	if (ret)
		return ret;
	/* The protocol code checked that every area lies inside the window. */
	window = b->bar2 + VGPU_CHANNEL_WINDOW_BASE + (size_t)ch.index * VGPU_CHANNEL_WINDOW_STRIDE;
	b->dead_channels &= ~(1u << ch.index);
	*out = (struct vgpu_channel_window){
		.index = ch.index,
		.gpfifo_entries = ch.gpfifo_entries,
		.control = window + ch.control_offset,
		.gpfifo = window + ch.gpfifo_offset,
		.notifier = window + ch.notifier_offset,
		.pushbuffer = window + ch.pushbuf_offset,
		.notifier_bytes = ch.notifier_bytes,
		.pushbuffer_bytes = ch.pushbuf_bytes,
		.notifier_gpu_va = ch.notifier_gpu_va,
		.pushbuffer_gpu_va = ch.pushbuf_gpu_va,
	};
	return 0;
}

static void local_channel_close(void *backend, struct vgpu_channel_window *window)
{
	struct local_backend *b = backend;

	vgpu_proto_channel_destroy(&b->proto, window->index);
	b->dead_channels &= ~(1u << window->index);
}

/* Read VGPU_REG_ERROR_CHANNELS (read-clear, a trap) into dead_channels;
 * -ENODEV if the device is gone (all ones, like a surprise-removed PCI
 * device). */
static int refresh_dead_channels(struct local_backend *b)
{
	uint32_t dead = vgpu_local_device_reg_read(b->dev, VGPU_REG_ERROR_CHANNELS);

	if (dead == 0xffffffffu)
		return -ENODEV;
	b->dead_channels |= dead;
	return 0;
}

static int local_channel_status(void *backend, struct vgpu_channel_window *window)
{
	struct local_backend *b = backend;

	if (refresh_dead_channels(b))
		return -ENODEV;
	return b->dead_channels & (1u << window->index) ? -EIO : 0;
}

static uint64_t read_notifier(struct vgpu_channel_window *window, uint32_t offset)
{
	return le64toh(__atomic_load_n((uint64_t *)((uint8_t *)window->notifier + offset),
	                               __ATOMIC_ACQUIRE));
}

static int local_wait_fence(void *backend, struct vgpu_channel_window *window, uint32_t offset,
                            uint64_t value, int timeout_ms)
{
	struct local_backend *b = backend;
	uint64_t deadline = vgpu_now_ns() + (uint64_t)timeout_ms * 1000000ull, now;
	int ret, slice;

	for (;;) {
		if (read_notifier(window, offset) >= value)
			return 0;
		if ((b->pending_irqs & VGPU_IRQ_CHANNEL_ERROR) && refresh_dead_channels(b))
			return -ENODEV;
		b->pending_irqs = 0;
		if (b->dead_channels & (1u << window->index))
			return -EIO;
		now = vgpu_now_ns();
		if (now >= deadline)
			return local_channel_status(b, window) ?: -ETIMEDOUT;
		slice = (int)((deadline - now + 999999) / 1000000);
		if (slice > FENCE_SLICE_MS)
			slice = FENCE_SLICE_MS;
		ret = local_wait_irq(b, slice);
		if (ret < 0)
			return ret;
	}
}

static void local_destroy(void *backend)
{
	struct local_backend *b = backend;

	vgpu_local_device_close(b->dev);
	free(b);
}

static int local_module_load(void *backend, const struct vgpu_module_load_request *req,
                             struct vgpu_module_load_response *out)
{
	struct local_backend *b = backend;

	return vgpu_proto_module_load(&b->proto, req, out);
}

static int local_module_unload(void *backend, uint32_t module)
{
	struct local_backend *b = backend;

	return vgpu_proto_module_unload(&b->proto, module);
}

static int local_channel_fault(void *backend, struct vgpu_channel_window *window,
                               struct vgpu_channel_fault_response *out)
{
	struct local_backend *b = backend;

	if (!(b->proto.hello.features & VGPU_FEATURE_CHANNEL_FAULT))
		return -ENOTSUP;
	return vgpu_proto_channel_fault(&b->proto, window->index, out);
}

static const struct vgpu_backend_ops local_ops = {
	.name = "local",
	.destroy = local_destroy,
	.info = local_info,
	.alloc = local_alloc,
	.free = local_free,
	.set_priority = local_set_priority,
	.stats = local_stats,
	.channel_open = local_channel_open,
	.channel_close = local_channel_close,
	.wait_fence = local_wait_fence,
	.channel_status = local_channel_status,
	.module_load = local_module_load,
	.module_unload = local_module_unload,
	.channel_fault = local_channel_fault,
};

const char *vgpu_guest_local_socket_path(const struct vgpu_local_device_config *config)
{
	const char *env;

	if (config && config->socket_path)
		return config->socket_path;
	env = getenv("VGPUD_SOCKET");
	return env && *env ? env : VGPU_LOCAL_DEFAULT_SOCKET;
}

static const char *proto_init_problem(int err)
{
	switch (err) {
	case -ENODEV:
		return "no vGPU answers behind the connection (wrong magic or backend gone)";
	case -EPROTONOSUPPORT:
		return "vgpud speaks another major version of the device ABI; use matching builds";
	case -EAGAIN:
		return "the vGPU is not ready yet; try again";
	case -EPROTO:
		return "the vGPU's mailbox header is inconsistent";
	case -EBUSY:
		return "requests of a previous user of this vGPU were never answered";
	default:
		return strerror(-err);
	}
}

int vgpu_device_open_local(const struct vgpu_local_device_config *config, int timeout_ms,
                           struct vgpu_guest_device **out, char *why, size_t why_len)
{
	struct vgpu_proto_config proto_config = { 0 };
	struct vgpu_local_device_config resolved = { 0 };
	const char *socket_path = vgpu_guest_local_socket_path(config);
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct local_backend *b;
	int ret;

	if (config)
		resolved = *config;
	resolved.socket_path = socket_path;
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	ret = vgpu_local_device_open(&resolved, &b->dev, &error);
	if (ret) {
		/* The client library's message names the socket and what to do. */
		if (vgpu_error_is_set(&error) && error.msg[0])
			snprintf(why, why_len, "%s", error.msg);
		else if (ret == -ENOENT || ret == -ECONNREFUSED)
			snprintf(why, why_len,
			         "vgpud is not running at %s: start vgpud, or point --socket or "
			         "$VGPUD_SOCKET at its socket",
			         socket_path);
		else
			snprintf(why, why_len, "cannot attach a vGPU through %s: %s", socket_path,
			         strerror(-ret));
		free(b);
		return ret;
	}
	b->bar2 = vgpu_local_device_bar2(b->dev);
	proto_config.ops = &local_device_ops;
	proto_config.ctx = b;
	proto_config.mailbox = b->bar2 + VGPU_MAILBOX_OFFSET;
	proto_config.timeout_ms = timeout_ms;
	ret = b->bar2 ? vgpu_proto_init(&b->proto, &proto_config) : -ENODEV;
	if (ret) {
		snprintf(why, why_len, "vGPU at %s: %s", socket_path, proto_init_problem(ret));
		local_destroy(b);
		return ret;
	}
	ret = vgpu_device_create(&local_ops, b, out, why, why_len);
	if (ret) {
		size_t len = strlen(why);

		snprintf(why + len, why_len > len ? why_len - len : 0, " (vGPU at %s)",
		         socket_path);
	}
	return ret;
}

struct vgpu_proto *vgpu_guest_local_proto(struct vgpu_guest_device *dev)
{
	if (!dev || dev->ops != &local_ops)
		return NULL;
	return &((struct local_backend *)dev->backend)->proto;
}
