// SPDX-License-Identifier: MIT
/* channel_window.c - a live channel window of a VM, see channel_window.h. */
#include "channel_window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgpu/error.h"

#include "daemon.h"
#include "device.h"
#include "log.h"
#include "vgpu/memfd.h"

#define PAGE VGPU_PAGE_SIZE
/* Shadow memfd: the control page at 0 (room for 64 KiB), the ring at
 * SHADOW_GPFIFO_OFFSET. Sparse: only what the HAL's layout uses is touched.
 * get_shadow runs inside channel creation, before the layout is known, so
 * it reserves the most any accepted layout needs. */
#define SHADOW_CONTROL_MAX (64u * 1024u)
#define SHADOW_GPFIFO_OFFSET SHADOW_CONTROL_MAX
#define SHADOW_GPFIFO_MAX (1024u * 1024u)
#define SHADOW_BYTES (SHADOW_GPFIFO_OFFSET + SHADOW_GPFIFO_MAX)

static struct vgpu_transport *transport_of(struct channel_window *win)
{
	return vgpu_device_transport(win->dev);
}

/* The segments backing the swappable part (control + GPFIFO). */
static unsigned swap_segments(struct channel_window *win, bool shadow,
                              struct vgpu_bar2_segment *seg)
{
	uint64_t base = channel_window_bar2_offset(win->index);

	seg[0] = (struct vgpu_bar2_segment){
		.bar2_offset = base,
		.bytes = win->control_bytes,
		.fd = shadow ? win->shadow_fd : win->info.memfd,
		.fd_offset = shadow ? 0 : win->info.control_offset,
	};
	seg[1] = (struct vgpu_bar2_segment){
		.bar2_offset = base + win->control_bytes,
		.bytes = win->gpfifo_bytes,
		.fd = shadow ? win->shadow_fd : win->info.memfd,
		.fd_offset = shadow ? SHADOW_GPFIFO_OFFSET : win->info.gpfifo_offset,
	};
	/* One segment when the two are contiguous in the same file. */
	if (seg[1].fd == seg[0].fd && seg[1].fd_offset == seg[0].fd_offset + seg[0].bytes) {
		seg[0].bytes += seg[1].bytes;
		return 1;
	}
	return 2;
}

/* ------------------------------------------------------ guest window ops */

static int window_get_shadow(void *ctx, uint32_t channel_id, void **control, void **gpfifo)
{
	struct channel_window *win = ctx;
	void *map;

	(void)channel_id;
	if (win->shadow)
		return -EBUSY;
	win->shadow_fd = vgpu_memfd_create("vgpud-shadow", SHADOW_BYTES);
	if (win->shadow_fd < 0) {
		int err = win->shadow_fd;

		win->shadow_fd = -1;
		return err;
	}
	map = mmap(NULL, SHADOW_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, win->shadow_fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	win->shadow = map;
	*control = win->shadow;
	*gpfifo = win->shadow + SHADOW_GPFIFO_OFFSET;
	return 0;
fail:
	close(win->shadow_fd);
	win->shadow_fd = -1;
	return -ENOMEM;
}

static void window_release_shadow(void *ctx, uint32_t channel_id)
{
	struct channel_window *win = ctx;

	(void)channel_id;
	if (win->shadow)
		munmap(win->shadow, SHADOW_BYTES);
	win->shadow = NULL;
	if (win->shadow_fd >= 0)
		close(win->shadow_fd);
	win->shadow_fd = -1;
}

static void window_block(void *ctx, uint32_t channel_id)
{
	struct channel_window *win = ctx;
	struct vgpu_transport *t = transport_of(win);

	(void)channel_id;
	/* Held until the matching map(): nothing publishes meanwhile. */
	pthread_mutex_lock(&win->swap_lock);
	if (win->published)
		t->ops->window_block(t, win->index, channel_window_bar2_offset(win->index),
		                     (uint64_t)win->control_bytes + win->gpfifo_bytes);
}

static void window_map(void *ctx, uint32_t channel_id, bool shadow)
{
	struct channel_window *win = ctx;
	struct vgpu_transport *t = transport_of(win);
	struct vgpu_bar2_segment seg[2];

	(void)channel_id;
	win->shadow_mapped = shadow;
	if (win->published)
		t->ops->window_map(t, win->index, shadow, seg, swap_segments(win, shadow, seg));
	pthread_mutex_unlock(&win->swap_lock);
}

static const struct vgpu_guest_window_ops window_ops = {
	.get_shadow = window_get_shadow,
	.release_shadow = window_release_shadow,
	.block = window_block,
	.map = window_map,
};

/* ------------------------------------------------------------ GPU side */

/* The notifier and pushbuffer are host memory in 4 KiB pages (the guest's
 * page size). A GPU maps system memory with them even when its VRAM pages
 * are larger (cudagpu): what counts is caps.sysmem_page_size_mask. */
static int map_gpu(struct channel_window *win)
{
	const struct vgpu_hal_caps *caps = &win->dev->daemon->caps;
	struct vgpu_hal_as *as = vgpu_core_vm_address_space(win->dev->vm);
	uint64_t count = win->host_bytes / PAGE, i;
	uint64_t *addresses;
	int err;

	if (!(caps->sysmem_page_size_mask & VGPU_HAL_PAGE_MASK_4K)) {
		log_error("GPU '%s' cannot map system memory with 4 KiB pages (page sizes %#x); "
		          "channel windows need them",
		          caps->name ? caps->name : "?", caps->sysmem_page_size_mask);
		return -ENOTSUP;
	}
	addresses = calloc(count, sizeof(*addresses));
	if (!addresses)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		addresses[i] = win->iova + i * PAGE;
	err = vgpu_hal_as_map(as, win->gpu_va, VGPU_PAGE_4K, count, VGPU_TARGET_SYSMEM_COHERENT,
	                      addresses, 0);
	free(addresses);
	if (!err) {
		vgpu_hal_as_tlb_invalidate(as);
		win->gpu_mapped = true;
	}
	return err;
}

static void release_host_area(struct channel_window *win)
{
	struct vgpud *d = win->dev->daemon;

	if (win->gpu_mapped) {
		struct vgpu_hal_as *as = vgpu_core_vm_address_space(win->dev->vm);

		vgpu_hal_as_unmap(as, win->gpu_va, win->host_bytes);
		vgpu_hal_as_tlb_invalidate(as);
		win->gpu_mapped = false;
	}
	if (win->iommu_mapped) {
		vgpu_hal_iommu_unmap(d->hal, win->iova, win->host_bytes);
		win->iommu_mapped = false;
	}
	if (win->host) {
		vgpu_hal_host_free(d->hal, win->host);
		win->host = NULL;
	}
}

/* Notifier + pushbuffer: host memory the guest maps and the GPU reaches. */
static int create_host_area(struct channel_window *win)
{
	struct vgpud *d = win->dev->daemon;
	static atomic_bool warned;
	int err;

	win->host_bytes = (uint64_t)win->notifier_bytes + win->pushbuf_bytes;
	err = vgpu_hal_host_alloc(d->hal, win->host_bytes, &win->host);
	if (err)
		return err;
	err = vgpu_hal_host_share(win->host, &win->host_fd, &win->host_fd_offset);
	if (err == -ENOTSUP) {
		if (!atomic_exchange(&warned, true))
			log_warn("the GPU cannot share host memory with guests "
			         "(vgpu_hal_host_share: not supported): channel windows get no "
			         "notifier or pushbuffer area; update the HAL");
		vgpu_hal_host_free(d->hal, win->host);
		win->host = NULL;
		win->notifier_bytes = win->pushbuf_bytes = 0;
		win->notifier_offset = win->pushbuf_offset = 0;
		win->host_bytes = 0;
		return 0;
	}
	if (err)
		goto fail;
	if (win->host_fd_offset % PAGE) {
		err = -EINVAL;
		goto fail;
	}
	err = vgpu_hal_iommu_map(d->hal, win->host, 0, win->host_bytes, &win->iova);
	if (err)
		goto fail;
	win->iommu_mapped = true;
	win->gpu_va = win->dev->va_window_base + (uint64_t)win->index * VGPU_CHANNEL_WINDOW_STRIDE +
	              win->notifier_offset;
	err = map_gpu(win);
	if (err)
		goto fail;
	return 0;
fail:
	release_host_area(win);
	return err;
}

/* --------------------------------------------------------------- guest */

static int publish(struct channel_window *win)
{
	struct vgpu_transport *t = transport_of(win);
	struct vgpu_bar2_segment seg[2];
	unsigned i, n;
	int err = 0;

	pthread_mutex_lock(&win->swap_lock);
	n = swap_segments(win, win->shadow_mapped, seg);
	for (i = 0; i < n && !err; i++)
		err = t->ops->map_region(t, &seg[i]);
	if (!err && win->host_bytes) {
		struct vgpu_bar2_segment area = {
			.bar2_offset = channel_window_bar2_offset(win->index) + win->notifier_offset,
			.bytes = win->host_bytes,
			.fd = win->host_fd,
			.fd_offset = win->host_fd_offset,
		};

		err = t->ops->map_region(t, &area);
	}
	/* Even a partial publication must be undone at destroy. */
	win->published = true;
	pthread_mutex_unlock(&win->swap_lock);
	return err;
}

static bool page_multiple(uint64_t v)
{
	return v && v % PAGE == 0;
}

/* Check the HAL's window and derive ours. */
static int plan_layout(struct channel_window *win)
{
	const struct vgpu_hal_channel_layout *l = &win->info.layout;
	uint64_t swap_bytes = (uint64_t)l->control_bytes + l->gpfifo_bytes;

	if (win->info.memfd < 0 || !page_multiple(l->control_bytes) ||
	    !page_multiple(l->gpfifo_bytes) || l->control_bytes > SHADOW_CONTROL_MAX ||
	    l->gpfifo_bytes > SHADOW_GPFIFO_MAX || win->info.control_offset % PAGE ||
	    win->info.gpfifo_offset % PAGE ||
	    swap_bytes + CHANNEL_WINDOW_NOTIFIER_BYTES + CHANNEL_WINDOW_PUSHBUF_MIN_BYTES >
	            VGPU_CHANNEL_WINDOW_STRIDE)
		return -EINVAL;
	win->control_bytes = l->control_bytes;
	win->gpfifo_bytes = l->gpfifo_bytes;
	win->notifier_offset = (uint32_t)swap_bytes;
	win->notifier_bytes = CHANNEL_WINDOW_NOTIFIER_BYTES;
	win->pushbuf_offset = win->notifier_offset + CHANNEL_WINDOW_NOTIFIER_BYTES;
	win->pushbuf_bytes = VGPU_CHANNEL_WINDOW_STRIDE - win->pushbuf_offset;
	return 0;
}

static enum vgpu_status status_of(int err)
{
	switch (err) {
	case -ENOSPC: return VGPU_STATUS_LIMIT;
	case -ENOMEM: return VGPU_STATUS_NO_MEMORY;
	case -EINVAL: return VGPU_STATUS_INVALID;
	default: return VGPU_STATUS_INTERNAL;
	}
}

enum vgpu_status channel_window_create(struct vgpud_device *dev, uint32_t index,
                                       uint32_t gpfifo_entries,
                                       struct vgpu_channel_create_response *response,
                                       struct channel_window **out)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpud *d = dev->daemon;
	struct channel_window *win = calloc(1, sizeof(*win));
	enum vgpu_status status;
	int err;

	if (!win)
		return VGPU_STATUS_NO_MEMORY;
	win->dev = dev;
	win->index = index;
	win->shadow_fd = -1;
	win->host_fd = -1;
	pthread_mutex_init(&win->swap_lock, NULL);
	if (!gpfifo_entries)
		gpfifo_entries = VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT;
	if (gpfifo_entries > d->caps.gpfifo_entries_max) {
		free(win);
		return VGPU_STATUS_INVALID;
	}

	err = vgpu_core_channel_create(dev->vm, gpfifo_entries, &window_ops, win, &win->channel,
	                               &win->info, &error);
	if (err) {
		log_info("VM '%s': CHANNEL_CREATE with %u GPFIFO entries failed: %s", dev->name,
		         gpfifo_entries, vgpu_error_msg(&error));
		window_release_shadow(win, 0);
		pthread_mutex_destroy(&win->swap_lock);
		free(win);
		return status_of(err);
	}
	win->hal_channel_id = vgpu_core_channel_id(win->channel);
	if (plan_layout(win)) {
		log_error("the GPU's channel window (control %u bytes at %llu, GPFIFO %u bytes "
		          "at %llu, memfd %d) does not fit a %u-byte window; this HAL cannot "
		          "serve guests", win->info.layout.control_bytes,
		          (unsigned long long)win->info.control_offset,
		          win->info.layout.gpfifo_bytes,
		          (unsigned long long)win->info.gpfifo_offset, win->info.memfd,
		          VGPU_CHANNEL_WINDOW_STRIDE);
		status = VGPU_STATUS_INTERNAL;
		goto fail;
	}
	err = create_host_area(win);
	if (err) {
		log_warn("VM '%s': no notifier/pushbuffer memory for channel window %u: %s",
		         dev->name, index, strerror(-err));
		status = status_of(err);
		goto fail;
	}
	vgpud_event_routes_set(&d->routes, win->hal_channel_id, dev, index);
	err = publish(win);
	if (err) {
		log_info("VM '%s': cannot map channel window %u into the guest: %s", dev->name,
		         index, strerror(-err));
		status = VGPU_STATUS_INTERNAL;
		goto fail;
	}

	memset(response, 0, sizeof(*response));
	response->index = index;
	response->gpfifo_entries = win->info.layout.gpfifo_entries;
	response->control_offset = 0;
	response->gpfifo_offset = win->control_bytes;
	response->notifier_offset = win->notifier_offset;
	response->notifier_bytes = win->notifier_bytes;
	response->pushbuf_offset = win->pushbuf_offset;
	response->pushbuf_bytes = win->pushbuf_bytes;
	if (win->host_bytes) {
		response->notifier_gpu_va = win->gpu_va;
		response->pushbuf_gpu_va = win->gpu_va + CHANNEL_WINDOW_NOTIFIER_BYTES;
	}
	*out = win;
	return VGPU_STATUS_OK;

fail:
	channel_window_destroy(win);
	return status;
}

void channel_window_destroy(struct channel_window *win)
{
	struct vgpud_device *dev = win->dev;
	struct vgpu_transport *t = transport_of(win);

	vgpud_event_routes_clear(&dev->daemon->routes, win->hal_channel_id, dev);
	/* Resumes the channel first if it is suspended (window ops run). */
	vgpu_core_channel_destroy(win->channel);
	win->channel = NULL;

	pthread_mutex_lock(&win->swap_lock);
	if (win->published)
		t->ops->unmap_region(t, channel_window_bar2_offset(win->index),
		                     VGPU_CHANNEL_WINDOW_STRIDE);
	win->published = false;
	pthread_mutex_unlock(&win->swap_lock);

	release_host_area(win);
	window_release_shadow(win, 0);
	pthread_mutex_destroy(&win->swap_lock);
	free(win);
}

void channel_window_migration_pages(struct channel_window *win, uint8_t **control,
                                    uint8_t **gpfifo, uint8_t **host)
{
	*control = win->shadow;
	*gpfifo = win->shadow ? win->shadow + SHADOW_GPFIFO_OFFSET : NULL;
	*host = win->host ? vgpu_hal_host_cpu_pointer(win->dev->daemon->hal, win->host) : NULL;
}

int channel_window_republish(struct channel_window *win, struct vgpu_transport *t)
{
	struct vgpud_device *dev = win->dev;
	int err;

	/* no swap in progress; the next ones go to t */
	pthread_mutex_lock(&win->swap_lock);
	__atomic_store_n(&dev->transport, t, __ATOMIC_RELEASE);
	win->published = false;
	pthread_mutex_unlock(&win->swap_lock);
	err = publish(win);
	return err;
}
