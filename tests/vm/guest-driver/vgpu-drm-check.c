// SPDX-License-Identifier: MIT
/*
 * vgpu-drm-check - the uAPI of vgpu.ko (include/uapi/vgpu_drm.h) from
 * userspace, in an L2 guest whose vGPU is served by fake-vgpud --mode
 * mailbox (the toy GPU of tests/vm/mdev/toy_gpu.h). Static, raw ioctl(),
 * no libdrm needed at run time.
 *
 * Usage: vgpu-drm-check full  NODE   every ioctl, argument checks, host
 *                                    errors as errno, mmap rules, fences
 *                                    (interrupt, timeout, signal, killed
 *                                    channel), channel limit and lifetime,
 *                                    modules (MODULE_LOAD/UNLOAD, owned by
 *                                    the file that loaded them)
 *        vgpu-drm-check quick NODE   GET_INFO, ALLOC/FREE, a channel and a
 *                                    toy fence (for each interrupt mode)
 *        vgpu-drm-check gone  NODE   make fake-vgpud exit (TOY_DIE_BYTES)
 *                                    and check that requests and fence waits
 *                                    fail with ENODEV at once, not at the
 *                                    mailbox timeout
 *        vgpu-drm-check hold  NODE   keep a buffer, a channel and its mapped
 *                                    window, print HOLD-READY, wait for
 *                                    SIGUSR1 (the device is unbound
 *                                    meanwhile), then check that ioctls fail
 *                                    with ENODEV and the mapping still works
 * Prints "VGPU-GD-CHECK PASS|FAIL <what>" per check; exit status = failures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/abi/device_abi.h>

#include "toy_gpu.h"
#include "vgpu_drm.h"

static int failures;
static const char *mode = "";

static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("VGPU-GD-CHECK %s %s: ", ok ? "PASS" : "FAIL", mode);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (!ok)
		failures++;
	return ok;
}

/* ioctl -> 0 or errno */
static int io(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg) ? errno : 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static const char *err_name(int err)
{
	static char buf[64];

	switch (err) {
	case 0:
		return "ok";
	case EINVAL:
		return "EINVAL";
	case ENOMEM:
		return "ENOMEM";
	case ENOSPC:
		return "ENOSPC";
	case ENOENT:
		return "ENOENT";
	case ENODEV:
		return "ENODEV";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EINTR:
		return "EINTR";
	case EIO:
		return "EIO";
	case EACCES:
		return "EACCES";
	default:
		snprintf(buf, sizeof(buf), "errno %d (%s)", err, strerror(err));
		return buf;
	}
}

struct channel {
	struct drm_vgpu_channel_create c;
	uint8_t *map;
};

static int channel_open(int fd, uint32_t entries, struct channel *ch)
{
	int err;

	memset(ch, 0, sizeof(*ch));
	ch->c.gpfifo_entries = entries;
	err = io(fd, DRM_IOCTL_VGPU_CHANNEL_CREATE, &ch->c);
	if (err)
		return err;
	ch->map = mmap(NULL, ch->c.window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)ch->c.mmap_offset);
	if (ch->map == MAP_FAILED) {
		ch->map = NULL;
		return errno;
	}
	return 0;
}

static void channel_close(int fd, struct channel *ch)
{
	struct drm_vgpu_channel_destroy d = { .handle = ch->c.handle };

	if (ch->map)
		munmap(ch->map, ch->c.window_bytes);
	io(fd, DRM_IOCTL_VGPU_CHANNEL_DESTROY, &d);
	ch->map = NULL;
}

static void kick(struct channel *ch, uint64_t value)
{
	__atomic_store_n((uint64_t *)(ch->map + ch->c.control_offset + TOY_KICK_OFFSET), value,
			 __ATOMIC_RELEASE);
}

static int wait_fence(int fd, const struct channel *ch, uint32_t offset, uint64_t value,
		      int64_t deadline)
{
	struct drm_vgpu_wait_fence w = {
		.channel = ch->c.handle, .offset = offset, .value = value, .deadline_ns = deadline,
	};

	return io(fd, DRM_IOCTL_VGPU_WAIT_FENCE, &w);
}

static int stats(int fd, struct drm_vgpu_stats *s)
{
	memset(s, 0, sizeof(*s));
	return io(fd, DRM_IOCTL_VGPU_STATS, s);
}

static int alloc(int fd, uint64_t bytes, uint32_t priority, uint32_t flags,
		 struct drm_vgpu_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->bytes = bytes;
	a->priority = priority;
	a->flags = flags;
	return io(fd, DRM_IOCTL_VGPU_ALLOC, a);
}

static int free_buffer(int fd, uint32_t handle)
{
	struct drm_vgpu_free f = { .handle = handle };

	return io(fd, DRM_IOCTL_VGPU_FREE, &f);
}

/* A toy fence through the interrupt: kick, wait, and how long it took. */
static void check_toy_fence(int fd, struct channel *ch, uint64_t value)
{
	struct drm_vgpu_stats before, after;
	int64_t t0, ms;
	int err;

	stats(fd, &before);
	kick(ch, value);
	t0 = now_ns();
	err = wait_fence(fd, ch, TOY_FENCE_OFFSET, value, t0 + 5000000000ll);
	ms = (now_ns() - t0) / 1000000;
	stats(fd, &after);
	check(err == 0 && ms >= TOY_DELAY_MS / 2,
	      "WAIT_FENCE for toy fence %" PRIu64 " returned %s after %" PRId64
	      " ms (fence irqs %" PRIu64 " -> %" PRIu64 ", waits that slept %" PRIu64 " -> %" PRIu64
	      ")",
	      value, err_name(err), ms, (uint64_t)before.irq_fence, (uint64_t)after.irq_fence,
	      (uint64_t)before.fence_waits, (uint64_t)after.fence_waits);
}

static int open_node(const char *node)
{
	int fd = open(node, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		check(false, "open %s: %s", node, strerror(errno));
	return fd;
}

static void check_info(int fd, struct drm_vgpu_get_info *info)
{
	int err;

	memset(info, 0, sizeof(*info));
	err = io(fd, DRM_IOCTL_VGPU_GET_INFO, info);
	check(!err && info->uapi_version == DRM_VGPU_UAPI_VERSION && info->abi_version >> 16 == 1 &&
		      info->max_channels == TOY_MAX_CHANNELS &&
		      info->vram_share_bytes == TOY_VRAM_SHARE &&
		      info->vram_total_bytes == TOY_VRAM_TOTAL && info->cap_bytes == TOY_CAP &&
		      info->chunk_bytes == TOY_CHUNK,
	      "GET_INFO %s: uAPI %u, ABI %#x, features %#x, %u channels, share %" PRIu64
	      " MiB of %" PRIu64 " MiB, cap %" PRIu64 " MiB, chunk %" PRIu64 " KiB, irq mode %u",
	      err_name(err), info->uapi_version, info->abi_version, info->features,
	      info->max_channels, (uint64_t)info->vram_share_bytes >> 20,
	      (uint64_t)info->vram_total_bytes >> 20, (uint64_t)info->cap_bytes >> 20,
	      (uint64_t)info->chunk_bytes >> 10, info->irq_mode);
}

static int quick(const char *node)
{
	struct drm_vgpu_get_info info;
	struct drm_vgpu_alloc a;
	struct channel ch;
	int fd = open_node(node), err;

	if (fd < 0)
		return 1;
	check_info(fd, &info);
	err = alloc(fd, 1 << 20, 7, 0, &a);
	check(!err && a.bytes == 1 << 20, "ALLOC 1 MiB: %s", err_name(err));
	err = free_buffer(fd, a.handle);
	check(!err, "FREE: %s", err_name(err));
	err = channel_open(fd, 0, &ch);
	if (check(!err, "CHANNEL_CREATE + mmap: %s", err_name(err))) {
		check_toy_fence(fd, &ch, 42);
		channel_close(fd, &ch);
	}
	close(fd);
	return failures;
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	(void)sig;
	got_signal = 1;
}

static void check_args(int fd)
{
	struct drm_vgpu_alloc a;
	struct drm_vgpu_set_priority p = { 0 };
	int err;

	err = alloc(fd, 0, 7, 0, &a);
	check(err == EINVAL, "ALLOC of 0 bytes: %s (want EINVAL)", err_name(err));
	err = alloc(fd, 4096, 16, 0, &a);
	check(err == EINVAL, "ALLOC with priority 16: %s (want EINVAL)", err_name(err));
	err = alloc(fd, 4096, 7, 1, &a);
	check(err == EINVAL, "ALLOC with flags 1: %s (want EINVAL)", err_name(err));
	err = alloc(fd, 2ull << 30, 7, 0, &a);
	check(err == ENOMEM, "ALLOC of 2 GiB over the 1 GiB cap: %s (want ENOMEM from the host)",
	      err_name(err));
	err = free_buffer(fd, 12345);
	check(err == EINVAL, "FREE of an unknown handle: %s (want EINVAL)", err_name(err));
	p.handle = 12345;
	err = io(fd, DRM_IOCTL_VGPU_SET_PRIORITY, &p);
	check(err == EINVAL, "SET_PRIORITY of an unknown handle: %s (want EINVAL)", err_name(err));
}

/* The arguments of a 4 KiB image at image_va, its table right after it. */
static struct drm_vgpu_module_load module_args(uint64_t image_va, uint32_t table_bytes)
{
	return (struct drm_vgpu_module_load){
		.image_va = image_va,
		.image_bytes = 4096,
		.table_va = image_va + 4096,
		.table_bytes = table_bytes,
	};
}

static int module_load(int fd, uint64_t image_va, uint32_t table_bytes,
		       struct drm_vgpu_module_load *m)
{
	*m = module_args(image_va, table_bytes);
	return io(fd, DRM_IOCTL_VGPU_MODULE_LOAD, m);
}

static int module_unload(int fd, uint32_t module)
{
	struct drm_vgpu_module_unload u = { .module = module };

	return io(fd, DRM_IOCTL_VGPU_MODULE_UNLOAD, &u);
}

/*
 * MODULE_LOAD / MODULE_UNLOAD (uAPI 2): arguments, the host's answers, and
 * that a module belongs to the file that loaded it: another file cannot
 * unload it, closing the file unloads it on the host (the toy gives the
 * lowest free handle, so the handle coming back proves it).
 */
static void check_modules(int fd, const char *node, const struct drm_vgpu_get_info *info,
			  uint64_t va)
{
	struct drm_vgpu_module_load m, m2;
	struct drm_vgpu_stats s0, s1;
	uint64_t requests;
	uint32_t theirs;
	int err, fd2;

	check(info->features & VGPU_FEATURE_MODULES, "HELLO negotiated VGPU_FEATURE_MODULES (%#x)",
	      info->features);
	stats(fd, &s0);
	requests = s0.mailbox_requests;
	err = module_load(fd, va, 0, &m);
	check(err == EINVAL, "MODULE_LOAD with no table room: %s (want EINVAL)", err_name(err));
	m.table_bytes = DRM_VGPU_MODULE_TABLE_MAX_BYTES + 1;
	err = io(fd, DRM_IOCTL_VGPU_MODULE_LOAD, &m);
	check(err == EINVAL, "MODULE_LOAD with a table room over 16 MiB: %s (want EINVAL)",
	      err_name(err));
	m = module_args(va, 4096);
	m.image_bytes = DRM_VGPU_MODULE_IMAGE_MAX_BYTES + 1;
	err = io(fd, DRM_IOCTL_VGPU_MODULE_LOAD, &m);
	check(err == EINVAL, "MODULE_LOAD of an image over 64 MiB: %s (want EINVAL)",
	      err_name(err));
	m = module_args(va, 4096);
	m.flags = 1;
	err = io(fd, DRM_IOCTL_VGPU_MODULE_LOAD, &m);
	check(err == EINVAL, "MODULE_LOAD with flags 1: %s (want EINVAL)", err_name(err));
	err = module_unload(fd, 0);
	check(err == EINVAL, "MODULE_UNLOAD of a module never loaded: %s (want EINVAL)",
	      err_name(err));
	stats(fd, &s1);
	check(s1.mailbox_requests == requests + 1, "none of those reached the host (%" PRIu64
	      " requests for 5 ioctls and a STATS)", (uint64_t)(s1.mailbox_requests - requests));

	err = module_load(fd, 0, 4096, &m);
	check(err == EINVAL, "MODULE_LOAD of an image the host refuses: %s (want EINVAL)",
	      err_name(err));
	err = module_load(fd, va, 512, &m);
	check(err == ENOSPC && m.table_bytes == TOY_MODULE_TABLE_BYTES,
	      "MODULE_LOAD with 512 bytes of table room: %s, room needed %u (want ENOSPC, %u)",
	      err_name(err), m.table_bytes, TOY_MODULE_TABLE_BYTES);
	err = module_load(fd, va, 4096, &m);
	stats(fd, &s1);
	check(!err && m.function_count == TOY_MODULE_FUNCTIONS &&
		      m.table_bytes == TOY_MODULE_TABLE_BYTES && !m.variables_bytes &&
		      s1.live_modules == s0.live_modules + 1,
	      "MODULE_LOAD: %s, module %u, %u functions, table %u bytes, %u live modules",
	      err_name(err), m.module, m.function_count, m.table_bytes, s1.live_modules);

	fd2 = open_node(node);
	err = module_unload(fd2, m.module);
	check(err == EINVAL, "another file cannot unload the module: %s (want EINVAL)",
	      err_name(err));
	err = module_load(fd2, va, 4096, &m2);
	check(!err && m2.module != m.module, "another file loads its own: %s, module %u",
	      err_name(err), m2.module);
	theirs = m2.module;
	close(fd2);
	stats(fd, &s1);
	check(s1.live_modules == s0.live_modules + 1, "closing that file unloads its module (%u live)",
	      s1.live_modules);
	err = module_load(fd, va, 4096, &m2);
	check(!err && m2.module == theirs,
	      "the host got the MODULE_UNLOAD: its handle %u is free again (%s, module %u)",
	      theirs, err_name(err), m2.module);

	err = module_unload(fd, m.module);
	check(!err, "MODULE_UNLOAD: %s", err_name(err));
	err = module_unload(fd, m.module);
	check(err == EINVAL, "MODULE_UNLOAD twice: %s (want EINVAL)", err_name(err));
	err = module_unload(fd, m2.module);
	stats(fd, &s1);
	check(!err && s1.live_modules == s0.live_modules, "all unloaded (%u live)",
	      s1.live_modules);
	/* A module left loaded: the close test below releases it. */
	err = module_load(fd, va, 4096, &m);
	check(!err, "a module for the close test: %s", err_name(err));
}

static int full(const char *node)
{
	struct drm_vgpu_alloc a1, a2;
	struct drm_vgpu_stats s0, s1;
	struct drm_vgpu_get_info info;
	struct drm_vgpu_set_priority p;
	struct drm_vgpu_channel_create cc;
	struct channel ch, extra[TOY_MAX_CHANNELS], victim;
	struct sigaction sa = { .sa_handler = on_signal };
	int fd = open_node(node), err, n, i;
	int64_t t0, ms;
	void *m;

	if (fd < 0)
		return 1;
	check_info(fd, &info);
	stats(fd, &s0);

	/* Buffers */
	err = alloc(fd, 1 << 20, 3, 0, &a1);
	check(!err && a1.bytes == 1 << 20 && a1.gpu_va && !(a1.gpu_va & 4095) && a1.handle,
	      "ALLOC 1 MiB priority 3: %s, handle %u, host handle %u, GPU VA %#" PRIx64,
	      err_name(err), a1.handle, a1.host_handle, (uint64_t)a1.gpu_va);
	err = alloc(fd, 5000, 15, 0, &a2);
	check(!err && a2.bytes == 8192, "ALLOC 5000 bytes rounds up: %s, %" PRIu64 " bytes",
	      err_name(err), (uint64_t)a2.bytes);
	err = stats(fd, &s1);
	check(!err && s1.allocated_bytes == s0.allocated_bytes + (1 << 20) + 8192 &&
		      s1.live_buffers == s0.live_buffers + 2 &&
		      s1.live_buffer_bytes == s0.live_buffer_bytes + (1 << 20) + 8192,
	      "STATS: host allocated %" PRIu64 " bytes, driver %u live buffers (%" PRIu64
	      " bytes), %" PRIu64 " mailbox requests, %" PRIu64 " doorbells",
	      (uint64_t)s1.allocated_bytes, s1.live_buffers, (uint64_t)s1.live_buffer_bytes,
	      (uint64_t)s1.mailbox_requests, (uint64_t)s1.mailbox_doorbells);
	p = (struct drm_vgpu_set_priority){ .handle = a1.handle, .priority = 12 };
	err = io(fd, DRM_IOCTL_VGPU_SET_PRIORITY, &p);
	check(!err, "SET_PRIORITY 12: %s", err_name(err));
	p.priority = 99;
	err = io(fd, DRM_IOCTL_VGPU_SET_PRIORITY, &p);
	check(err == EINVAL, "SET_PRIORITY 99: %s (want EINVAL)", err_name(err));
	check_args(fd);
	err = free_buffer(fd, a2.handle);
	stats(fd, &s1);
	check(!err && s1.allocated_bytes == s0.allocated_bytes + (1 << 20),
	      "FREE reaches the host at once: %s, host allocated %" PRIu64, err_name(err),
	      (uint64_t)s1.allocated_bytes);
	err = free_buffer(fd, a2.handle);
	check(err == EINVAL, "FREE twice: %s (want EINVAL)", err_name(err));

	/* GPU programs */
	check_modules(fd, node, &info, a1.gpu_va);

	/* Channels */
	memset(&cc, 0, sizeof(cc));
	cc.gpfifo_entries = 3;
	err = io(fd, DRM_IOCTL_VGPU_CHANNEL_CREATE, &cc);
	check(err == EINVAL, "CHANNEL_CREATE with 3 GPFIFO entries: %s (want EINVAL)",
	      err_name(err));
	memset(&cc, 0, sizeof(cc));
	cc.flags = 1;
	err = io(fd, DRM_IOCTL_VGPU_CHANNEL_CREATE, &cc);
	check(err == EINVAL, "CHANNEL_CREATE with flags: %s (want EINVAL)", err_name(err));
	memset(&cc, 0, sizeof(cc));
	cc.gpfifo_entries = 1024;
	err = io(fd, DRM_IOCTL_VGPU_CHANNEL_CREATE, &cc);
	check(!err && cc.gpfifo_entries == 1024 && cc.window_bytes == 0x40000 &&
		      !(cc.mmap_offset & 4095) && cc.notifier_bytes == TOY_NOTIFIER_BYTES &&
		      cc.pushbuf_bytes == TOY_PUSHBUF_BYTES,
	      "CHANNEL_CREATE 1024 entries: %s, window %u, %u bytes at mmap offset %#" PRIx64
	      ", control %#x, GPFIFO %#x, notifier %#x+%u, pushbuffer %#x+%u",
	      err_name(err), cc.index, cc.window_bytes, (uint64_t)cc.mmap_offset,
	      cc.control_offset, cc.gpfifo_offset, cc.notifier_offset, cc.notifier_bytes,
	      cc.pushbuf_offset, cc.pushbuf_bytes);
	ch.c = cc;
	err = free_buffer(fd, cc.handle);
	check(err == EINVAL, "FREE of a channel handle: %s (want EINVAL)", err_name(err));
	{
		struct drm_vgpu_wait_fence w = { .channel = a1.handle };

		err = io(fd, DRM_IOCTL_VGPU_WAIT_FENCE, &w);
		check(err == EINVAL, "WAIT_FENCE on a buffer handle: %s (want EINVAL)",
		      err_name(err));
	}
	m = mmap(NULL, cc.window_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
		 (off_t)cc.mmap_offset);
	check(m == MAP_FAILED && errno == EINVAL, "private mmap of the window refused: %s",
	      m == MAP_FAILED ? err_name(errno) : "mapped");
	if (m != MAP_FAILED)
		munmap(m, cc.window_bytes);
	m = mmap(NULL, 2 * cc.window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)cc.mmap_offset);
	check(m == MAP_FAILED, "mmap larger than the window refused: %s",
	      m == MAP_FAILED ? err_name(errno) : "mapped");
	if (m != MAP_FAILED)
		munmap(m, 2 * cc.window_bytes);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)cc.mmap_offset + 4096);
	check(m == MAP_FAILED, "mmap at an offset inside the window refused: %s",
	      m == MAP_FAILED ? err_name(errno) : "mapped");
	if (m != MAP_FAILED)
		munmap(m, 4096);
	ch.map = mmap(NULL, cc.window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      (off_t)cc.mmap_offset);
	if (!check(ch.map != MAP_FAILED, "shared mmap of the window: %s",
		   ch.map == MAP_FAILED ? err_name(errno) : "ok")) {
		close(fd);
		return failures;
	}
	{
		volatile uint32_t *push = (volatile uint32_t *)(ch.map + cc.pushbuf_offset);
		uint64_t fence = *(volatile uint64_t *)(ch.map + cc.notifier_offset);

		push[0] = 0x12345678;
		push[cc.pushbuf_bytes / 4 - 1] = 0x9abcdef0;
		check(push[0] == 0x12345678 && push[cc.pushbuf_bytes / 4 - 1] == 0x9abcdef0 &&
			      fence == 0,
		      "window is readable and writable (pushbuffer round trip, notifier reads 0)");
	}

	/* Fences */
	err = wait_fence(fd, &ch, 4, 1, 0);
	check(err == EINVAL, "WAIT_FENCE at a misaligned offset: %s (want EINVAL)", err_name(err));
	err = wait_fence(fd, &ch, cc.notifier_bytes, 1, 0);
	check(err == EINVAL, "WAIT_FENCE past the notifier: %s (want EINVAL)", err_name(err));
	err = wait_fence(fd, &ch, 0, 0, 0);
	check(err == 0, "channel status (WAIT_FENCE value 0, deadline 0): %s", err_name(err));
	err = wait_fence(fd, &ch, 0, 1, 0);
	check(err == ETIMEDOUT, "WAIT_FENCE not yet passed, deadline 0: %s (want ETIMEDOUT)",
	      err_name(err));
	t0 = now_ns();
	err = wait_fence(fd, &ch, 0, 1, t0 + 150000000ll);
	ms = (now_ns() - t0) / 1000000;
	check(err == ETIMEDOUT && ms >= 140 && ms < 2000,
	      "WAIT_FENCE times out at its deadline: %s after %" PRId64 " ms (deadline 150)",
	      err_name(err), ms);
	check_toy_fence(fd, &ch, 7);
	check_toy_fence(fd, &ch, 8);
	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: EINTR */
	alarm(1);
	t0 = now_ns();
	err = wait_fence(fd, &ch, 0, 1000, DRM_VGPU_WAIT_FOREVER);
	ms = (now_ns() - t0) / 1000000;
	check(err == EINTR && got_signal && ms < 3000,
	      "WAIT_FENCE without deadline is interrupted by a signal: %s after %" PRId64 " ms",
	      err_name(err), ms);

	/* The channel limit, then a killed channel */
	for (n = 0; n < (int)TOY_MAX_CHANNELS; n++) {
		err = channel_open(fd, 0, &extra[n]);
		if (err)
			break;
	}
	check(err == ENOSPC && n == (int)TOY_MAX_CHANNELS - 1,
	      "channels until the host's limit: %d more, then %s (want %u, ENOSPC)", n,
	      err_name(err), TOY_MAX_CHANNELS - 1);
	for (i = 0; i < n; i++)
		channel_close(fd, &extra[i]);
	err = channel_open(fd, 0, &victim);
	if (check(!err, "another channel after closing them: %s", err_name(err))) {
		stats(fd, &s0);
		kick(&victim, TOY_KILL);
		err = wait_fence(fd, &victim, 0, 1, now_ns() + 5000000000ll);
		stats(fd, &s1);
		check(err == EIO && s1.killed_channels == s0.killed_channels + 1,
		      "WAIT_FENCE on a channel the GPU kills: %s (want EIO), killed %u -> %u, "
		      "error irqs %" PRIu64 " -> %" PRIu64,
		      err_name(err), s0.killed_channels, s1.killed_channels,
		      (uint64_t)s0.irq_error, (uint64_t)s1.irq_error);
		err = wait_fence(fd, &victim, 0, 0, 0);
		check(err == EIO, "status of the killed channel: %s (want EIO)", err_name(err));
		err = wait_fence(fd, &ch, 0, 0, 0);
		check(err == 0, "other channel unaffected: %s", err_name(err));
		channel_close(fd, &victim);
	}

	/* Lifetime: the handle goes, the mapping keeps the channel */
	stats(fd, &s0);
	{
		struct drm_vgpu_channel_destroy d = { .handle = cc.handle };

		err = io(fd, DRM_IOCTL_VGPU_CHANNEL_DESTROY, &d);
	}
	stats(fd, &s1);
	check(!err && s1.live_channels == s0.live_channels && wait_fence(fd, &ch, 0, 0, 0) == EINVAL,
	      "CHANNEL_DESTROY drops the handle, the mapping keeps the channel (%u live)",
	      s1.live_channels);
	*(volatile uint32_t *)(ch.map + cc.pushbuf_offset) = 1;
	munmap(ch.map, cc.window_bytes);
	stats(fd, &s1);
	check(s1.live_channels == s0.live_channels - 1, "munmap releases it (%u -> %u live)",
	      s0.live_channels, s1.live_channels);

	/* Closing the file releases everything it holds */
	err = channel_open(fd, 0, &ch);
	check(!err, "channel for the close test: %s", err_name(err));
	close(fd);
	fd = open_node(node);
	stats(fd, &s1);
	check(s1.live_buffers == 1 && s1.live_channels == 1 && s1.live_modules == 1 &&
		      s1.allocated_bytes == (1 << 20),
	      "after close: %u buffers, %u channels, %u modules alive (the mapping keeps the file), host %" PRIu64
	      " bytes",
	      s1.live_buffers, s1.live_channels, s1.live_modules, (uint64_t)s1.allocated_bytes);
	munmap(ch.map, ch.c.window_bytes);
	stats(fd, &s1);
	check(s1.live_buffers == 0 && s1.live_channels == 0 && s1.live_modules == 0 &&
		      s1.allocated_bytes == 0,
	      "after munmap: %u buffers, %u channels, %u modules, host %" PRIu64 " bytes",
	      s1.live_buffers, s1.live_channels, s1.live_modules, (uint64_t)s1.allocated_bytes);
	check(s1.mailbox_timeouts == 0, "no mailbox timeouts (%" PRIu64 " requests, %" PRIu64
	      " errors answered)", (uint64_t)s1.mailbox_requests, (uint64_t)s1.mailbox_errors);
	close(fd);
	return failures;
}

static int hold(const char *node)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct drm_vgpu_get_info info;
	struct drm_vgpu_alloc a;
	struct channel ch;
	sigset_t block, old;
	int fd = open_node(node), err;
	volatile uint64_t *word;
	uint64_t value;

	if (fd < 0)
		return 1;
	err = alloc(fd, 4 << 20, 7, 0, &a);
	check(!err, "hold: ALLOC 4 MiB: %s", err_name(err));
	err = channel_open(fd, 0, &ch);
	if (!check(!err, "hold: channel + mapping: %s", err_name(err)))
		return failures;
	word = (volatile uint64_t *)(ch.map + ch.c.pushbuf_offset);
	*word = 0x1122334455667788ull;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	printf("HOLD-READY\n");
	fflush(stdout);
	while (!got_signal)
		sigsuspend(&old);

	/* The device is unbound now. */
	memset(&info, 0, sizeof(info));
	err = io(fd, DRM_IOCTL_VGPU_GET_INFO, &info);
	check(err == ENODEV, "after unbind: GET_INFO %s (want ENODEV)", err_name(err));
	err = alloc(fd, 4096, 7, 0, &a);
	check(err == ENODEV, "after unbind: ALLOC %s (want ENODEV)", err_name(err));
	err = wait_fence(fd, &ch, 0, 0, 0);
	check(err == ENODEV, "after unbind: WAIT_FENCE %s (want ENODEV)", err_name(err));
	value = *word;
	*word = 42;
	check(value == 0 && *word == 42,
	      "after unbind: the window mapping is a dummy page (read %#" PRIx64
	      ", no SIGBUS, writes land)",
	      value);
	munmap(ch.map, ch.c.window_bytes);
	err = free_buffer(fd, a.handle);
	check(err == ENODEV, "after unbind: FREE %s (want ENODEV; close releases handles)",
	      err_name(err));
	close(fd);
	check(true, "after unbind: munmap and close");
	return failures;
}

static int gone(const char *node)
{
	struct drm_vgpu_get_info info;
	struct drm_vgpu_alloc a;
	struct channel ch;
	int fd = open_node(node), err;
	int64_t t0, ms;

	if (fd < 0)
		return 1;
	err = channel_open(fd, 0, &ch);
	if (!check(!err, "channel before the backend dies: %s", err_name(err)))
		return failures;
	t0 = now_ns();
	err = alloc(fd, TOY_DIE_BYTES, 7, 0, &a);
	ms = (now_ns() - t0) / 1000000;
	check(err == ENODEV && ms < 3000,
	      "ALLOC that the dying backend never answers: %s after %" PRId64
	      " ms (want ENODEV, well before the 30 s mailbox timeout)",
	      err_name(err), ms);
	t0 = now_ns();
	memset(&info, 0, sizeof(info));
	err = io(fd, DRM_IOCTL_VGPU_GET_INFO, &info);
	ms = (now_ns() - t0) / 1000000;
	check(err == ENODEV && ms < 1000, "GET_INFO with the backend gone: %s after %" PRId64 " ms",
	      err_name(err), ms);
	t0 = now_ns();
	err = wait_fence(fd, &ch, 0, 1, t0 + 10000000000ll);
	ms = (now_ns() - t0) / 1000000;
	check(err == ENODEV && ms < 2000,
	      "WAIT_FENCE with the backend gone: %s after %" PRId64 " ms (deadline 10 s)",
	      err_name(err), ms);
	*(volatile uint32_t *)(ch.map + ch.c.pushbuf_offset) = 5;
	check(*(volatile uint32_t *)(ch.map + ch.c.pushbuf_offset) == 5,
	      "the window mapping still works");
	channel_close(fd, &ch);
	close(fd);
	check(true, "munmap and close with the backend gone");
	return failures;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s full|quick|hold|gone /dev/dri/renderDN\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	if (!strcmp(argv[1], "full"))
		return full(argv[2]);
	if (!strcmp(argv[1], "quick"))
		return quick(argv[2]);
	if (!strcmp(argv[1], "hold"))
		return hold(argv[2]);
	if (!strcmp(argv[1], "gone"))
		return gone(argv[2]);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
