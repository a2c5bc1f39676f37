// SPDX-License-Identifier: MIT
/*
 * backend_drm.c - the runtime's backend on vgpu.ko's render node, through
 * libdrm (see vgpu_guest_drm.h and include/uapi/vgpu_drm.h).
 *
 * Every operation is one ioctl; channel windows are mappings of the render
 * node. Buffer handles the runtime sees are GEM handles; module handles are
 * the device's (LAUNCH_FUNCTION names them), owned by this file: closing
 * the device unloads what is still loaded.
 *
 * drmIoctl() retries EINTR and EAGAIN at once. The driver returns EAGAIN for
 * the backend's BUSY ("nothing changed, retry later"), which the workloads
 * retry with backoff, so requests that can be answered BUSY go through
 * vgpu_ioctl() below, which retries EINTR only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

#include "device_internal.h"
#include "vgpu_guest_drm.h"

#define DRM_MAX_DEVICES 64

struct drm_backend {
	int fd;
	char path[64];
};

struct drm_window {
	uint32_t handle; /* GEM handle of the channel */
	void *map;
	size_t map_bytes;
};

static const struct vgpu_backend_ops drm_ops;

/* ioctl() retrying only EINTR: a negative errno or 0. */
static int vgpu_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret == -1 && errno == EINTR);
	return ret == -1 ? -errno : 0;
}

static int drm_backend_info(void *backend, struct vgpu_device_info *out)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_get_info info = { 0 };
	int ret = vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_GET_INFO, &info);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->abi_version = info.abi_version;
	out->features = info.features;
	out->max_channels = info.max_channels;
	out->vram_share_bytes = info.vram_share_bytes;
	out->cap_bytes = info.cap_bytes;
	out->chunk_bytes = info.chunk_bytes;
	out->vram_total_bytes = info.vram_total_bytes;
	out->page_size_mask = info.page_size_mask;
	return 0;
}

static int drm_backend_alloc(void *backend, uint64_t bytes, uint32_t priority, uint32_t flags,
                     struct vgpu_alloc_response *out)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_alloc args = { .bytes = bytes, .priority = priority, .flags = flags };
	int ret = vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_ALLOC, &args);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->handle = args.handle;
	out->gpu_va = args.gpu_va;
	out->bytes = args.bytes;
	return 0;
}

static int drm_backend_free(void *backend, uint32_t handle)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_free args = { .handle = handle };

	return vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_FREE, &args);
}

static int drm_backend_set_priority(void *backend, uint32_t handle, uint32_t priority)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_set_priority args = { .handle = handle, .priority = priority };

	return vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_SET_PRIORITY, &args);
}

static int drm_backend_stats(void *backend, struct vgpu_stats_response *out)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_stats stats = { 0 };
	int ret = vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_STATS, &stats);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->allocated_bytes = stats.allocated_bytes;
	out->resident_bytes = stats.resident_bytes;
	out->evicted_bytes = stats.evicted_bytes;
	out->fair_share_bytes = stats.fair_share_bytes;
	out->evictions = stats.evictions;
	out->returns = stats.returns;
	return 0;
}

static int drm_backend_channel_open(void *backend, uint32_t gpfifo_entries,
                            struct vgpu_channel_window *out)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_channel_create args = { .gpfifo_entries = gpfifo_entries };
	struct drm_vgpu_channel_destroy destroy = { 0 };
	struct drm_window *w;
	uint8_t *map;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	ret = vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_CHANNEL_CREATE, &args);
	if (ret) {
		free(w);
		return ret;
	}
	map = mmap(NULL, args.window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd,
	           (off_t)args.mmap_offset);
	if (map == MAP_FAILED) {
		ret = -errno;
		destroy.handle = args.handle;
		vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_CHANNEL_DESTROY, &destroy);
		free(w);
		return ret;
	}
	w->handle = args.handle;
	w->map = map;
	w->map_bytes = args.window_bytes;
	*out = (struct vgpu_channel_window){
		.index = args.index,
		.gpfifo_entries = args.gpfifo_entries,
		.control = map + args.control_offset,
		.gpfifo = map + args.gpfifo_offset,
		.notifier = map + args.notifier_offset,
		.pushbuffer = map + args.pushbuf_offset,
		.notifier_bytes = args.notifier_bytes,
		.pushbuffer_bytes = args.pushbuf_bytes,
		.notifier_gpu_va = args.notifier_gpu_va,
		.pushbuffer_gpu_va = args.pushbuf_gpu_va,
		.backend_data = w,
	};
	return 0;
}

static void drm_backend_channel_close(void *backend, struct vgpu_channel_window *window)
{
	struct drm_backend *b = backend;
	struct drm_window *w = window->backend_data;
	struct drm_vgpu_channel_destroy destroy = { 0 };

	if (!w)
		return;
	/* The driver destroys the channel once both the handle and the
	 * mapping are gone. */
	munmap(w->map, w->map_bytes);
	destroy.handle = w->handle;
	vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_CHANNEL_DESTROY, &destroy);
	free(w);
	window->backend_data = NULL;
}

static int drm_backend_module_load(void *backend, const struct vgpu_module_load_request *req,
                                   struct vgpu_module_load_response *out)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_module_load args = {
		.image_va = req->image_va,
		.image_bytes = req->image_bytes,
		.table_va = req->table_va,
		.table_bytes = req->table_bytes,
		.flags = req->flags,
	};
	int ret = vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_MODULE_LOAD, &args);

	memset(out, 0, sizeof(*out));
	if (ret) {
		/* LIMIT: the room the table needs (0: another limit). */
		if (ret == -ENOSPC && args.table_bytes > req->table_bytes)
			out->table_bytes = args.table_bytes;
		return ret;
	}
	out->module = args.module;
	out->function_count = args.function_count;
	out->variable_count = args.variable_count;
	out->table_bytes = args.table_bytes;
	out->variables_va = args.variables_va;
	out->variables_bytes = args.variables_bytes;
	return 0;
}

static int drm_backend_module_unload(void *backend, uint32_t module)
{
	struct drm_backend *b = backend;
	struct drm_vgpu_module_unload args = { .module = module };

	return vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_MODULE_UNLOAD, &args);
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int wait_fence_until(struct drm_backend *b, struct vgpu_channel_window *window,
                            uint32_t offset, uint64_t value, int64_t deadline_ns)
{
	struct drm_window *w = window->backend_data;
	struct drm_vgpu_wait_fence args = {
		.channel = w->handle,
		.offset = offset,
		.value = value,
		.deadline_ns = deadline_ns,
	};

	/* The deadline is absolute: retrying after a signal waits no longer. */
	return vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_WAIT_FENCE, &args);
}

static int drm_backend_wait_fence(void *backend, struct vgpu_channel_window *window, uint32_t offset,
                          uint64_t value, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? DRM_VGPU_WAIT_FOREVER :
	                                    monotonic_ns() + (int64_t)timeout_ms * 1000000ll;

	return wait_fence_until(backend, window, offset, value, deadline);
}

/* WAIT_FENCE for value 0 without sleeping: 0 while the channel lives,
 * -EIO once the GPU killed it, -ENODEV once the device is gone. */
static int drm_backend_channel_status(void *backend, struct vgpu_channel_window *window)
{
	return wait_fence_until(backend, window, 0, 0, 0);
}

static void drm_backend_destroy(void *backend)
{
	struct drm_backend *b = backend;

	close(b->fd);
	free(b);
}

static const struct vgpu_backend_ops drm_ops = {
	.name = "drm",
	.destroy = drm_backend_destroy,
	.info = drm_backend_info,
	.alloc = drm_backend_alloc,
	.free = drm_backend_free,
	.set_priority = drm_backend_set_priority,
	.stats = drm_backend_stats,
	.channel_open = drm_backend_channel_open,
	.channel_close = drm_backend_channel_close,
	.wait_fence = drm_backend_wait_fence,
	.channel_status = drm_backend_channel_status,
	.module_load = drm_backend_module_load,
	.module_unload = drm_backend_module_unload,
};

/* 1 if fd is a vGPU node, 0 if another driver's. */
static int is_vgpu_node(int fd)
{
	drmVersionPtr version = drmGetVersion(fd);
	int match;

	if (!version)
		return 0;
	match = version->name && strcmp(version->name, DRM_VGPU_DRIVER_NAME) == 0;
	drmFreeVersion(version);
	return match;
}

/* The first render node of driver "vgpu" into path; -ENODEV if none. */
static int find_render_node(char *path, size_t len)
{
	drmDevicePtr devices[DRM_MAX_DEVICES];
	int count, i, fd, found = -ENODEV;

	count = drmGetDevices2(0, devices, DRM_MAX_DEVICES);
	if (count < 0)
		return -ENODEV;
	for (i = 0; i < count && found; i++) {
		if (!(devices[i]->available_nodes & (1 << DRM_NODE_RENDER)))
			continue;
		fd = open(devices[i]->nodes[DRM_NODE_RENDER], O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (is_vgpu_node(fd)) {
			snprintf(path, len, "%s", devices[i]->nodes[DRM_NODE_RENDER]);
			found = 0;
		}
		close(fd);
	}
	drmFreeDevices(devices, count);
	return found;
}

int vgpu_device_open_drm(const char *path, struct vgpu_guest_device **out, char *why,
                         size_t why_len)
{
	struct drm_backend *b;
	const char *env = getenv(VGPU_GUEST_DRM_DEVICE_ENV);
	char node[sizeof(b->path)];
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	if (!path && env && *env)
		path = env;
	if (path) {
		snprintf(b->path, sizeof(b->path), "%s", path);
	} else if (find_render_node(b->path, sizeof(b->path))) {
		snprintf(why, why_len,
		         "no vGPU render node (no /dev/dri/renderD* of driver '%s'): load vgpu.ko "
		         "and check that the VM has a vGPU (lspci -d 1af4:10f0, dmesg | grep vgpu)",
		         DRM_VGPU_DRIVER_NAME);
		free(b);
		return -ENODEV;
	}
	b->fd = open(b->path, O_RDWR | O_CLOEXEC);
	if (b->fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "cannot open %s: %s", b->path, strerror(-ret));
		free(b);
		return ret;
	}
	if (!is_vgpu_node(b->fd)) {
		snprintf(why, why_len, "%s is not a vGPU render node (driver is not '%s')", b->path,
		         DRM_VGPU_DRIVER_NAME);
		drm_backend_destroy(b);
		return -ENODEV;
	}
	snprintf(node, sizeof(node), "%s", b->path);
	/* Runs GET_INFO; destroys b on failure. */
	ret = vgpu_device_create(&drm_ops, b, out, why, why_len);
	if (ret) {
		size_t len = strlen(why);

		snprintf(why + len, why_len > len ? why_len - len : 0, " (%s; see dmesg)", node);
	}
	return ret;
}

static struct drm_backend *drm_backend_of(const struct vgpu_guest_device *dev)
{
	if (!dev || dev->ops != &drm_ops)
		return NULL;
	return dev->backend;
}

const char *vgpu_guest_drm_path(const struct vgpu_guest_device *dev)
{
	struct drm_backend *b = drm_backend_of(dev);

	return b ? b->path : NULL;
}

int vgpu_guest_drm_fd(const struct vgpu_guest_device *dev)
{
	struct drm_backend *b = drm_backend_of(dev);

	return b ? b->fd : -1;
}

int vgpu_guest_drm_stats(struct vgpu_guest_device *dev, struct drm_vgpu_stats *out)
{
	struct drm_backend *b = drm_backend_of(dev);

	if (!b)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	return vgpu_ioctl(b->fd, DRM_IOCTL_VGPU_STATS, out);
}
