// SPDX-License-Identifier: MIT
/*
 * fake-vgpud - stands in for vgpud on vgpu_mdev.ko's control device
 * (/dev/vgpu_mdev, vgpu/abi/mdev_control.h) in the VM tests: the module's
 * own test (tests/vm/vgpu-mdev.sh) and the guest driver's
 * (tests/vm/guest-driver.sh). It keeps no GPU memory and evicts nothing.
 *
 * Usage: fake-vgpud [--mode commands|mailbox] [--ready-file PATH]
 *        fake-vgpud --local SOCKET
 *
 *   --mode commands  (default) what the vgpu_mdev tests drive through
 *                    mdev-client: mdev types "vgpu-test" (sysfs "test", 4
 *                    instances) and "vgpu-refuse" (sysfs "refuse"; every
 *                    CREATE is refused with "profile vgpu-refuse has no
 *                    capacity (test)"). BAR2 of an opened device is three
 *                    memfds: the mailbox page (t_pattern() from
 *                    T_PATTERN_OFFSET on), channel window 0 and a shadow of
 *                    its swappable part. FEATURES = MSIX | STATS, sysfs
 *                    statistics pushed at attach (vm "fake-vm-ID"). On a
 *                    doorbell it runs the test-only command block of
 *                    test_protocol.h (ping, raise, DMA, pins, shadow swaps,
 *                    dying with a window blocked, register reads).
 *   --mode mailbox   what a guest driver needs: mdev type "vgpu-gdtest"
 *                    (sysfs "gdtest", 4 instances). BAR2 is one memfd; it
 *                    answers the real mailbox protocol of device_abi.h with
 *                    bookkeeping only and plays the toy GPU of toy_gpu.h
 *                    (fences and channel kills from a kick word). FEATURES =
 *                    MSIX | PRIORITY_HINTS | STATS | MODULES. The mailbox
 *                    is also polled every 2 ms, in case a doorbell event
 *                    was coalesced.
 *   --ready-file PATH  created once the types are registered, so a script
 *                    can wait for the parent device to appear.
 *   --local SOCKET   instead of all of the above: QEMU's vgpu-pci device on
 *                    vgpud's local socket, answering MAP_REGION with unfit
 *                    descriptors (fake-vgpud-local.c; tests/vgpu-pci/bad-fds.sh).
 *
 * Both modes answer CREATE/OPEN/RESET/CLOSE as vgpud does (OPEN and RESET
 * give the device a fresh BAR2 and set STATUS = READY, IRQ_MASK = ALL and
 * FEATURES), replay-accept EXISTS, and count PIN_RELEASED events.
 *
 * Output: one line per event or request on stdout, "FAKE-VGPUD: ...";
 * the vgpu-mdev test greps "CLOSE device N", "REMOVE device N" and
 * "EXISTS device" there, the guest driver test "requests answered",
 * "toy GPU kills", "LIMIT", "NO_MEMORY" and "exiting".
 * Exit: 0 on SIGTERM/SIGINT (closing the control device, as a dying
 * vgpud would), after T_DIE_BLOCKED (commands) or an ALLOC of
 * TOY_DIE_BYTES (mailbox), both without cleaning up; 1 when the control
 * device cannot be opened or speaks another version (another vgpud holds
 * it: EBUSY); 2 for bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

#include "fake-vgpud-local.h"
#include "test_protocol.h"
#include "toy_gpu.h"

#define MAX_DEVICES	   16
#define MAX_BUFFERS	   256
#define GPFIFO_ENTRY_BYTES 16u
#define VA_BASE		   0x100000000ull

/* --mode commands: test_protocol.h's command block and the swapper thread */
struct commands_state {
	int mailbox_fd, window_fd, shadow_fd;
	uint8_t *mailbox, *window, *shadow;
	uint32_t last_seq;
	pthread_t swapper;
	bool swapping;
	volatile bool stop_swapping;
	uint64_t swap_period_us;
	uint64_t swaps;
	int swap_error;
};

struct toy_buffer {
	uint32_t handle; /* 0 = free slot */
	uint32_t priority;
	uint64_t bytes;
};

struct toy_channel {
	bool live;
	uint32_t notifier_offset;
	uint64_t last_kick;
	uint64_t pending_kick;
	uint64_t due_ns; /* 0: nothing pending */
};

/* --mode mailbox: device_abi.h's mailbox and the toy GPU */
struct mailbox_state {
	int fd;
	uint8_t *bar2;
	bool hello;
	uint32_t features;
	uint32_t req_tail, resp_head;
	uint32_t next_handle;
	uint64_t next_va, allocated;
	struct toy_buffer buffers[MAX_BUFFERS];
	struct toy_channel channels[TOY_MAX_CHANNELS];
	uint32_t modules; /* bit mask of loaded module handles */
};

struct served_device {
	bool used, open;
	uint32_t id;
	uint32_t type_index;
	uint32_t irq_mask;
	uint64_t requests; /* commands or mailbox requests answered */
	struct commands_state c;
	struct mailbox_state m;
};

struct fake_type {
	const char *sysfs_name, *name, *description;
	uint32_t available;
	const char *refusal; /* non-NULL: every CREATE of it fails with this */
};

/* What differs between the modes; the control device plumbing does not. */
struct fake_mode {
	const char *name;
	const struct fake_type *types;
	uint32_t type_count;
	int tick_ms; /* poll timeout */
	bool log_reg_writes;
	void (*init)(struct served_device *d);	 /* a new slot: no backing */
	int (*attach)(struct served_device *d);	 /* OPEN, RESET: fresh BAR2 */
	void (*detach)(struct served_device *d); /* CLOSE, REMOVE: drop BAR2 */
	void (*doorbell)(struct served_device *d);
	void (*tick)(struct served_device *d); /* every tick_ms, open devices */
};

static int ctl = -1;
static const struct fake_mode *mode;
static struct served_device devices[MAX_DEVICES];
static uint64_t pin_released_events, doorbell_events;
static volatile sig_atomic_t quit;

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAKE-VGPUD: ");
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

static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static struct served_device *find_device(uint32_t id, bool create)
{
	struct served_device *free_slot = NULL;

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
	free_slot->irq_mask = VGPU_IRQ_ALL;
	mode->init(free_slot);
	return free_slot;
}

/* ---- the control device ---------------------------------------------------- */

static void reply(uint32_t id, uint32_t seq, int status, const char *message)
{
	struct vgpu_mdev_reply r = { .device_id = id, .seq = seq, .status = status };

	if (message)
		snprintf(r.message, sizeof(r.message), "%s", message);
	if (ioctl(ctl, VGPU_MDEV_REPLY, &r) < 0)
		say("REPLY device %u seq %u failed: %s", id, seq, strerror(errno));
}

/* Apply n (<= 3) register ops {offset, op, value}, then raise vectors. */
static void reg_update(struct served_device *d, uint32_t vectors, int n, const uint32_t ops[][3])
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

/* What vgpud sets at attach: FEATURES, STATUS = READY, IRQ_MASK = ALL. */
static void set_ready(struct served_device *d, uint32_t features)
{
	const uint32_t ops[3][3] = {
		{ VGPU_REG_FEATURES, VGPU_MDEV_REG_SET, features },
		{ VGPU_REG_STATUS, VGPU_MDEV_REG_SET, VGPU_STATUS_READY },
		{ VGPU_REG_IRQ_MASK, VGPU_MDEV_REG_SET, VGPU_IRQ_ALL },
	};

	reg_update(d, 0, 3, ops);
}

/* Raise an interrupt source: status bit (and reg |= reg_bits when reg is
 * nonzero) always, the vector only if the guest left it unmasked. */
static void raise_irq(struct served_device *d, uint32_t irq_bit, uint32_t vector, uint32_t reg,
		      uint32_t reg_bits)
{
	const uint32_t ops[2][3] = {
		{ VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR, irq_bit },
		{ reg, VGPU_MDEV_REG_OR, reg_bits },
	};

	reg_update(d, (d->irq_mask & irq_bit) ? 1u << vector : 0, reg ? 2 : 1, ops);
}

static int map_region(struct served_device *d, int fd, uint64_t bar2_offset, uint64_t bytes)
{
	struct vgpu_mdev_region r = {
		.device_id = d->id,
		.fd = fd,
		.bar2_offset = bar2_offset,
		.bytes = bytes,
	};

	if (ioctl(ctl, VGPU_MDEV_MAP_REGION, &r) < 0) {
		int err = errno;

		say("MAP_REGION device %u %#lx+%#lx failed: %s", d->id, (unsigned long)bar2_offset,
		    (unsigned long)bytes, strerror(err));
		return -err;
	}
	return 0;
}

/* A shared memfd of bytes mapped at *map, or -errno (*map NULL). */
static int memfd_map(const char *name, size_t bytes, uint8_t **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC), err;

	*map = NULL;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, bytes) < 0)
		goto fail;
	*map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map != MAP_FAILED)
		return fd;
	*map = NULL;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* ---- --mode commands: test_protocol.h ------------------------------------- */

static void commands_init(struct served_device *d)
{
	d->c.mailbox_fd = d->c.window_fd = d->c.shadow_fd = -1;
}

static void commands_detach(struct served_device *d)
{
	struct commands_state *c = &d->c;

	if (c->swapping) {
		c->stop_swapping = true;
		pthread_join(c->swapper, NULL);
		c->swapping = false;
	}
	if (c->mailbox)
		munmap(c->mailbox, VGPU_MAILBOX_SIZE);
	if (c->window)
		munmap(c->window, T_WINDOW_BYTES);
	if (c->shadow)
		munmap(c->shadow, T_SWAP_BYTES);
	if (c->mailbox_fd >= 0)
		close(c->mailbox_fd);
	if (c->window_fd >= 0)
		close(c->window_fd);
	if (c->shadow_fd >= 0)
		close(c->shadow_fd);
	memset(c, 0, sizeof(*c));
	commands_init(d);
}

/* Mailbox page with the pattern, window 0, its shadow; statistics. */
static int commands_attach(struct served_device *d)
{
	struct vgpu_mdev_stats st = { .device_id = d->id };
	struct commands_state *c = &d->c;
	int ret;

	c->mailbox_fd = memfd_map("fake-mailbox", VGPU_MAILBOX_SIZE, &c->mailbox);
	c->window_fd = memfd_map("fake-window0", T_WINDOW_BYTES, &c->window);
	c->shadow_fd = memfd_map("fake-shadow0", T_SWAP_BYTES, &c->shadow);
	if (c->mailbox_fd < 0 || c->window_fd < 0 || c->shadow_fd < 0) {
		say("device %u: memfd: %s", d->id, strerror(ENOMEM));
		commands_detach(d);
		return -ENOMEM;
	}
	for (uint32_t w = T_PATTERN_OFFSET / 4; w < VGPU_MAILBOX_SIZE / 4; w++)
		((uint32_t *)c->mailbox)[w] = t_pattern(w);
	ret = map_region(d, c->mailbox_fd, VGPU_MAILBOX_OFFSET, VGPU_MAILBOX_SIZE);
	if (!ret)
		ret = map_region(d, c->window_fd, T_WINDOW_OFFSET, T_WINDOW_BYTES);
	if (ret)
		return ret;
	set_ready(d, VGPU_FEATURE_MSIX | VGPU_FEATURE_STATS);
	st.allocated_bytes = 1ull << 30;
	st.resident_bytes = 768ull << 20;
	st.evicted_bytes = 256ull << 20;
	st.fair_share_bytes = 512ull << 20;
	st.evictions = 3;
	st.returns = 1;
	snprintf(st.vm_name, sizeof(st.vm_name), "fake-vm-%u", d->id);
	if (ioctl(ctl, VGPU_MDEV_SET_STATS, &st) < 0)
		say("SET_STATS failed: %s", strerror(errno));
	return 0;
}

static int window_block(struct served_device *d)
{
	struct vgpu_mdev_window_block b = {
		.device_id = d->id,
		.index = 0,
		.bar2_offset = T_WINDOW_OFFSET,
		.bytes = T_SWAP_BYTES,
	};

	return ioctl(ctl, VGPU_MDEV_WINDOW_BLOCK, &b) < 0 ? -errno : 0;
}

static int window_map(struct served_device *d, bool shadow)
{
	struct vgpu_mdev_window_map m = {
		.device_id = d->id,
		.index = 0,
		.count = 1,
		.target = shadow ? VGPU_MDEV_WINDOW_SHADOW : VGPU_MDEV_WINDOW_REAL,
	};

	m.segment[0].bar2_offset = T_WINDOW_OFFSET;
	m.segment[0].bytes = T_SWAP_BYTES;
	m.segment[0].fd = shadow ? d->c.shadow_fd : d->c.window_fd;
	m.segment[0].fd_offset = 0;
	return ioctl(ctl, VGPU_MDEV_WINDOW_MAP, &m) < 0 ? -errno : 0;
}

/* The suspend/resume of docs/DESIGN.md §3.4 without a GPU: block, copy, map. */
static void *swapper(void *arg)
{
	struct served_device *d = arg;
	struct commands_state *c = &d->c;
	int ret = 0;

	while (!c->stop_swapping && !ret) {
		ret = window_block(d);
		if (ret)
			break;
		memcpy(c->shadow, c->window, T_SWAP_BYTES);
		ret = window_map(d, true);
		if (ret)
			break;
		sleep_us(c->swap_period_us);
		ret = window_block(d);
		if (ret)
			break;
		memcpy(c->window, c->shadow, T_SWAP_BYTES);
		ret = window_map(d, false);
		if (ret)
			break;
		c->swaps++;
		sleep_us(c->swap_period_us);
	}
	c->swap_error = ret;
	return NULL;
}

/* As a device does: status bit, then the answer, then the interrupt. */
static void finish(struct served_device *d, uint32_t seq, uint32_t result)
{
	static const uint32_t status[1][3] = {
		{ VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR, VGPU_IRQ_MAILBOX },
	};
	struct vgpu_mdev_irq irq = { .device_id = d->id,
				     .vectors = 1u << VGPU_MSIX_VECTOR_MAILBOX };
	uint8_t *m = d->c.mailbox;

	reg_update(d, 0, 1, status);
	*(volatile uint32_t *)(m + T_RESULT) = result;
	__atomic_store_n((uint32_t *)(m + T_DONE_SEQ), seq, __ATOMIC_RELEASE);
	d->requests++;
	if (ioctl(ctl, VGPU_MDEV_RAISE_IRQ, &irq) < 0)
		say("RAISE_IRQ device %u failed: %s", d->id, strerror(errno));
}

static void __attribute__((format(printf, 2, 3)))
message(struct served_device *d, const char *fmt, ...)
{
	char *text = (char *)d->c.mailbox + T_MESSAGE;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, T_MESSAGE_MAX, fmt, ap);
	va_end(ap);
	say("device %u: %s", d->id, text);
}

/* T_DMA: read and check the guest's buffer, pin/unpin it, write back. */
static uint32_t command_dma(struct served_device *d, uint64_t iova, uint64_t bytes, uint64_t *good)
{
	struct vgpu_mdev_dma dma = { .device_id = d->id, .iova = iova, .bytes = bytes };
	struct vgpu_mdev_pin pin = { .device_id = d->id, .iova = iova & ~4095ull };
	uint32_t *buf, result = 0;

	*good = 0;
	if (!bytes || bytes > (1 << 20) || bytes % 4)
		return EINVAL;
	buf = malloc(bytes);
	if (!buf)
		return ENOMEM;
	dma.buffer = (uintptr_t)buf;
	if (ioctl(ctl, VGPU_MDEV_DMA_RW, &dma) < 0) {
		result = errno;
		message(d, "DMA read of %#lx failed: %s", (unsigned long)iova, strerror(result));
		goto out;
	}
	for (uint32_t w = 0; w < bytes / 4; w++)
		*good += buf[w] == t_dma_pattern(w);
	pin.npages = (iova + bytes - pin.iova + 4095) / 4096;
	if (ioctl(ctl, VGPU_MDEV_PIN, &pin) < 0) {
		result = errno;
		message(d, "PIN failed: %s", strerror(result));
	} else {
		struct vgpu_mdev_pin unpin = { .device_id = d->id, .pin_id = pin.pin_id };

		if (ioctl(ctl, VGPU_MDEV_UNPIN, &unpin) < 0) {
			result = errno;
			message(d, "UNPIN failed: %s", strerror(result));
		}
	}
	for (uint32_t w = 0; w < bytes / 4; w++)
		buf[w] = ~t_dma_pattern(w);
	dma.flags = VGPU_MDEV_DMA_WRITE;
	if (!result && ioctl(ctl, VGPU_MDEV_DMA_RW, &dma) < 0) {
		result = errno;
		message(d, "DMA write failed: %s", strerror(result));
	}
	if (!result && *good != bytes / 4) {
		message(d, "DMA read %lu of %lu words right", (unsigned long)*good,
			(unsigned long)(bytes / 4));
		result = EIO;
	}
out:
	free(buf);
	return result;
}

/* T_SWAP_STOP: stop, then check words [0, words) of the real window. */
static uint32_t command_swap_stop(struct served_device *d, uint64_t words, uint64_t *swaps,
				  uint64_t *first_bad)
{
	struct commands_state *c = &d->c;
	const uint32_t *real = (const uint32_t *)c->window;

	*first_bad = ~0ull;
	if (!c->swapping)
		return EINVAL;
	c->stop_swapping = true;
	pthread_join(c->swapper, NULL);
	c->swapping = false;
	*swaps = c->swaps;
	for (uint64_t w = 0; w < words && w < T_SWAP_BYTES / 4; w++) {
		if (real[w] != w + 1) {
			*first_bad = w;
			break;
		}
	}
	if (c->swap_error) {
		message(d, "swap failed: %s", strerror(-c->swap_error));
		return -c->swap_error;
	}
	if (*first_bad != ~0ull) {
		message(d, "after %lu swaps word %lu of the real window is %u, not %lu",
			(unsigned long)c->swaps, (unsigned long)*first_bad, real[*first_bad],
			(unsigned long)*first_bad + 1);
		return EIO;
	}
	message(d, "%lu swaps, all %lu words arrived in the real pages", (unsigned long)c->swaps,
		(unsigned long)words);
	return 0;
}

static void commands_doorbell(struct served_device *d)
{
	struct commands_state *c = &d->c;
	uint8_t *m = c->mailbox;
	uint32_t seq, cmd, result = 0;
	uint64_t arg0, arg1, *value0, *value1;

	if (!m)
		return;
	seq = __atomic_load_n((uint32_t *)(m + T_SEQ), __ATOMIC_ACQUIRE);
	if (seq == c->last_seq)
		return; /* a doorbell without a new command */
	c->last_seq = seq;
	cmd = *(uint32_t *)(m + T_CMD);
	arg0 = *(uint64_t *)(m + T_ARG0);
	arg1 = *(uint64_t *)(m + T_ARG1);
	value0 = (uint64_t *)(m + T_VALUE0);
	value1 = (uint64_t *)(m + T_VALUE1);
	say("device %u: command %u seq %u args %#lx %#lx", d->id, cmd, seq, (unsigned long)arg0,
	    (unsigned long)arg1);
	switch (cmd) {
	case T_PING:
		*value0 = arg0 + 1;
		break;
	case T_RAISE: {
		const uint32_t op[1][3] = { { VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR,
					      (uint32_t)arg1 } };

		/* answered before the raise: the vectors are the test's own */
		*(volatile uint32_t *)(m + T_RESULT) = 0;
		__atomic_store_n((uint32_t *)(m + T_DONE_SEQ), seq, __ATOMIC_RELEASE);
		d->requests++;
		reg_update(d, (uint32_t)arg0, 1, op);
		return;
	}
	case T_DMA:
		result = command_dma(d, arg0, arg1, value0);
		break;
	case T_PIN: {
		struct vgpu_mdev_pin pin = { .device_id = d->id, .iova = arg0, .npages = arg1 };

		if (ioctl(ctl, VGPU_MDEV_PIN, &pin) < 0) {
			result = errno;
			message(d, "PIN failed: %s", strerror(result));
		}
		*value0 = pin.pin_id;
		break;
	}
	case T_SWAP_START:
		if (c->swapping) {
			result = EBUSY;
			break;
		}
		c->swap_period_us = arg0;
		c->swaps = 0;
		c->swap_error = 0;
		c->stop_swapping = false;
		c->swapping = !pthread_create(&c->swapper, NULL, swapper, d);
		result = c->swapping ? 0 : EAGAIN;
		break;
	case T_SWAP_STOP:
		result = command_swap_stop(d, arg0, value0, value1);
		break;
	case T_STATS:
		*value0 = pin_released_events;
		*value1 = doorbell_events;
		break;
	case T_DIE_BLOCKED:
		finish(d, seq, 0);
		if (window_block(d))
			say("block before dying failed: %s", strerror(errno));
		say("device %u: window 0 blocked, exiting in %lu ms without unblocking", d->id,
		    (unsigned long)arg0);
		sleep_us(arg0 * 1000);
		_exit(0);
	case T_READ_REG: {
		struct vgpu_mdev_reg_read r = { .device_id = d->id, .offset = (uint32_t)arg0 };

		if (ioctl(ctl, VGPU_MDEV_REG_READ, &r) < 0)
			result = errno;
		*value0 = r.value;
		break;
	}
	default:
		result = ENOSYS;
		break;
	}
	finish(d, seq, result);
}

static const struct fake_type commands_types[] = {
	{ "test", "vgpu-test", "test profile: 1 GiB share, weight 1 (fake-vgpud)", 4, NULL },
	{ "refuse", "vgpu-refuse", "a profile whose CREATE fake-vgpud refuses", 1,
	  "profile vgpu-refuse has no capacity (test)" },
};

static const struct fake_mode commands_mode = {
	.name = "commands",
	.types = commands_types,
	.type_count = 2,
	.tick_ms = 500,
	.log_reg_writes = true,
	.init = commands_init,
	.attach = commands_attach,
	.detach = commands_detach,
	.doorbell = commands_doorbell,
};

/* ---- --mode mailbox: device_abi.h and the toy GPU of toy_gpu.h --------------- */

#define MAILBOX_FEATURES                                                        \
	(VGPU_FEATURE_MSIX | VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS | \
	 VGPU_FEATURE_MODULES)

static void mailbox_init(struct served_device *d)
{
	d->m.fd = -1;
}

static void mailbox_detach(struct served_device *d)
{
	if (d->m.bar2)
		munmap(d->m.bar2, VGPU_BAR2_SIZE);
	if (d->m.fd >= 0)
		close(d->m.fd);
	memset(&d->m, 0, sizeof(d->m));
	mailbox_init(d);
}

/* A fresh VM: all of BAR2 one memfd with an empty mailbox. */
static int mailbox_attach(struct served_device *d)
{
	struct mailbox_state *s = &d->m;
	int ret;

	s->next_va = VA_BASE;
	d->irq_mask = VGPU_IRQ_ALL;
	s->fd = memfd_map("fake-vgpud-bar2", VGPU_BAR2_SIZE, &s->bar2);
	if (s->fd < 0) {
		ret = s->fd;
		mailbox_init(d);
		return ret;
	}
	((struct vgpu_mailbox_header *)s->bar2)->entries = VGPU_MAILBOX_ENTRIES;
	ret = map_region(d, s->fd, 0, VGPU_BAR2_SIZE);
	if (ret)
		return ret;
	set_ready(d, MAILBOX_FEATURES);
	return 0;
}

static uint8_t *window(struct served_device *d, uint32_t index)
{
	return d->m.bar2 + VGPU_CHANNEL_WINDOW_BASE + (size_t)index * VGPU_CHANNEL_WINDOW_STRIDE;
}

/* Channel window layout: control page, GPFIFO, notifier, pushbuffer. */
static void channel_layout(uint32_t index, uint32_t entries, struct vgpu_channel_create_response *c)
{
	uint32_t gpfifo_bytes =
		(entries * GPFIFO_ENTRY_BYTES + VGPU_PAGE_SIZE - 1) & ~(VGPU_PAGE_SIZE - 1);
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

static struct toy_buffer *find_buffer(struct served_device *d, uint32_t handle)
{
	for (int i = 0; handle && i < MAX_BUFFERS; i++)
		if (d->m.buffers[i].handle == handle)
			return &d->m.buffers[i];
	return NULL;
}

static uint32_t op_hello(struct served_device *d, const struct vgpu_hello_request *h,
			 struct vgpu_hello_response *r, uint16_t *size)
{
	if (h->abi_version >> 16 != VGPU_ABI_VERSION_MAJOR)
		return VGPU_STATUS_VERSION;
	d->m.features = MAILBOX_FEATURES & h->guest_features;
	d->m.hello = true;
	r->abi_version = VGPU_ABI_VERSION;
	r->features = d->m.features;
	r->max_channels = TOY_MAX_CHANNELS;
	*size = sizeof(*r);
	say("device %u: HELLO guest ABI %#x wants %#x -> features %#x, %u channels", d->id,
	    h->abi_version, h->guest_features, d->m.features, TOY_MAX_CHANNELS);
	return VGPU_STATUS_OK;
}

static uint32_t op_alloc(struct served_device *d, const struct vgpu_alloc_request *a,
			 struct vgpu_alloc_response *r, uint16_t *size)
{
	uint64_t bytes = (a->bytes + VGPU_PAGE_SIZE - 1) & ~(uint64_t)(VGPU_PAGE_SIZE - 1);
	struct toy_buffer *b = NULL;

	if (a->bytes == TOY_DIE_BYTES) {
		say("device %u: ALLOC of TOY_DIE_BYTES: exiting without an answer", d->id);
		_exit(0);
	}
	if (!a->bytes || a->bytes > (1ull << 40) || a->priority > VGPU_PRIORITY_MAX || a->flags)
		return VGPU_STATUS_INVALID;
	if (d->m.allocated + bytes > TOY_CAP) {
		say("device %u: ALLOC %llu bytes -> NO_MEMORY", d->id,
		    (unsigned long long)a->bytes);
		return VGPU_STATUS_NO_MEMORY;
	}
	for (int i = 0; !b && i < MAX_BUFFERS; i++)
		if (!d->m.buffers[i].handle)
			b = &d->m.buffers[i];
	if (!b)
		return VGPU_STATUS_LIMIT;
	b->handle = ++d->m.next_handle;
	b->bytes = bytes;
	b->priority = a->priority;
	d->m.allocated += bytes;
	r->handle = b->handle;
	r->bytes = bytes;
	r->gpu_va = d->m.next_va;
	d->m.next_va += (bytes + TOY_CHUNK - 1) & ~(TOY_CHUNK - 1);
	*size = sizeof(*r);
	say("device %u: ALLOC %llu bytes priority %u -> handle %u", d->id,
	    (unsigned long long)a->bytes, a->priority, b->handle);
	return VGPU_STATUS_OK;
}

static uint32_t op_channel_create(struct served_device *d,
				  const struct vgpu_channel_create_request *c,
				  struct vgpu_channel_create_response *r, uint16_t *size)
{
	uint32_t entries =
		c->gpfifo_entries ? c->gpfifo_entries : VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT;
	uint32_t index;

	if (entries < 2 || entries > VGPU_CHANNEL_GPFIFO_ENTRIES_MAX || (entries & (entries - 1)))
		return VGPU_STATUS_INVALID;
	for (index = 0; index < TOY_MAX_CHANNELS && d->m.channels[index].live; index++)
		;
	if (index == TOY_MAX_CHANNELS) {
		say("device %u: CHANNEL_CREATE -> LIMIT", d->id);
		return VGPU_STATUS_LIMIT;
	}
	memset(window(d, index), 0, VGPU_CHANNEL_WINDOW_STRIDE);
	memset(&d->m.channels[index], 0, sizeof(d->m.channels[index]));
	d->m.channels[index].live = true;
	channel_layout(index, entries, r);
	d->m.channels[index].notifier_offset = r->notifier_offset;
	*size = sizeof(*r);
	say("device %u: CHANNEL_CREATE %u entries -> window %u", d->id, entries, index);
	return VGPU_STATUS_OK;
}

static uint32_t op_module_load(struct served_device *d, const struct vgpu_request *req,
			       struct vgpu_module_load_response *r, uint16_t *size)
{
	const struct vgpu_module_load_request *m = (const void *)req->payload;
	uint32_t module;

	if (!(d->m.features & VGPU_FEATURE_MODULES))
		return VGPU_STATUS_UNSUPPORTED;
	if (req->payload_size < sizeof(*m) || !m->image_va || !m->image_bytes || m->flags)
		return VGPU_STATUS_INVALID;
	if (m->table_bytes < TOY_MODULE_TABLE_BYTES) {
		r->table_bytes = TOY_MODULE_TABLE_BYTES;
		*size = sizeof(*r);
		return VGPU_STATUS_LIMIT;
	}
	for (module = 0; module < TOY_MAX_MODULES && (d->m.modules & (1u << module)); module++)
		;
	if (module == TOY_MAX_MODULES)
		return VGPU_STATUS_LIMIT;
	d->m.modules |= 1u << module;
	r->module = module;
	r->function_count = TOY_MODULE_FUNCTIONS;
	r->table_bytes = TOY_MODULE_TABLE_BYTES;
	*size = sizeof(*r);
	say("device %u: MODULE_LOAD %llu bytes -> module %u", d->id,
	    (unsigned long long)m->image_bytes, module);
	return VGPU_STATUS_OK;
}

/* One request -> status and response payload (little-endian host assumed). */
static uint32_t handle_request(struct served_device *d, const struct vgpu_request *req, void *out,
			       uint16_t *size)
{
	const void *in = req->payload;

	*size = 0;
	if (req->reserved || req->payload_size > VGPU_MAILBOX_PAYLOAD_SIZE)
		return VGPU_STATUS_INVALID;
	if (req->opcode != VGPU_OP_HELLO && !d->m.hello)
		return VGPU_STATUS_NOT_READY;
	switch (req->opcode) {
	case VGPU_OP_HELLO:
		return op_hello(d, in, out, size);
	case VGPU_OP_QUERY: {
		struct vgpu_query_response *r = out;

		r->vram_share_bytes = TOY_VRAM_SHARE;
		r->cap_bytes = TOY_CAP;
		r->chunk_bytes = TOY_CHUNK;
		r->vram_total_bytes = TOY_VRAM_TOTAL;
		r->page_size_mask = 1;
		*size = sizeof(*r);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_ALLOC:
		return op_alloc(d, in, out, size);
	case VGPU_OP_FREE: {
		const struct vgpu_free_request *f = in;
		struct toy_buffer *b = find_buffer(d, f->handle);

		if (!b)
			return VGPU_STATUS_NOT_FOUND;
		d->m.allocated -= b->bytes;
		say("device %u: FREE handle %u (%llu bytes)", d->id, f->handle,
		    (unsigned long long)b->bytes);
		memset(b, 0, sizeof(*b));
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_SET_PRIORITY: {
		const struct vgpu_set_priority_request *p = in;
		struct toy_buffer *b = find_buffer(d, p->handle);

		if (p->priority > VGPU_PRIORITY_MAX)
			return VGPU_STATUS_INVALID;
		if (!b)
			return VGPU_STATUS_NOT_FOUND;
		b->priority = p->priority;
		say("device %u: SET_PRIORITY handle %u -> %u", d->id, p->handle, p->priority);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_CHANNEL_CREATE:
		return op_channel_create(d, in, out, size);
	case VGPU_OP_CHANNEL_DESTROY: {
		const struct vgpu_channel_destroy_request *c = in;

		if (c->index >= TOY_MAX_CHANNELS || !d->m.channels[c->index].live)
			return VGPU_STATUS_NOT_FOUND;
		d->m.channels[c->index].live = false;
		say("device %u: CHANNEL_DESTROY window %u", d->id, c->index);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_STATS: {
		struct vgpu_stats_response *r = out;

		r->allocated_bytes = d->m.allocated;
		r->resident_bytes = d->m.allocated;
		r->fair_share_bytes = TOY_VRAM_SHARE;
		*size = sizeof(*r);
		return VGPU_STATUS_OK;
	}
	case VGPU_OP_MODULE_LOAD:
		return op_module_load(d, req, out, size);
	case VGPU_OP_MODULE_UNLOAD: {
		const struct vgpu_module_unload_request *m = in;

		if (m->module >= TOY_MAX_MODULES || !(d->m.modules & (1u << m->module)))
			return VGPU_STATUS_NOT_FOUND;
		d->m.modules &= ~(1u << m->module);
		say("device %u: MODULE_UNLOAD module %u", d->id, m->module);
		return VGPU_STATUS_OK;
	}
	default:
		return VGPU_STATUS_UNSUPPORTED;
	}
}

/* Answer every queued request the response ring has room for. */
static void mailbox_serve(struct served_device *d)
{
	struct mailbox_state *s = &d->m;
	struct vgpu_mailbox_header *h = (struct vgpu_mailbox_header *)s->bar2;
	bool answered = false;

	if (!s->bar2)
		return;
	for (;;) {
		uint32_t head = __atomic_load_n(&h->req_head, __ATOMIC_ACQUIRE);
		uint32_t resp_tail = __atomic_load_n(&h->resp_tail, __ATOMIC_ACQUIRE);
		struct vgpu_request req;
		struct vgpu_response resp;
		uint8_t *slot;

		if (head == s->req_tail || head - s->req_tail > VGPU_MAILBOX_ENTRIES)
			break;
		if (s->resp_head - resp_tail >= VGPU_MAILBOX_ENTRIES)
			break; /* response ring full: wait for the guest */
		slot = s->bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
		       (s->req_tail % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
		memcpy(&req, slot, sizeof(req));
		memset(&resp, 0, sizeof(resp));
		resp.opcode = req.opcode;
		resp.seq = req.seq;
		resp.status = handle_request(d, &req, resp.payload, &resp.payload_size);
		if (resp.status != VGPU_STATUS_OK)
			say("device %u: request %u opcode %u -> status %u", d->id, req.seq,
			    req.opcode, resp.status);
		d->requests++;
		slot = s->bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
		       (s->resp_head % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
		memcpy(slot, &resp, sizeof(resp));
		s->req_tail++;
		s->resp_head++;
		__atomic_store_n(&h->req_tail, s->req_tail, __ATOMIC_RELEASE);
		__atomic_store_n(&h->resp_head, s->resp_head, __ATOMIC_RELEASE);
		answered = true;
	}
	if (answered)
		raise_irq(d, VGPU_IRQ_MAILBOX, VGPU_MSIX_VECTOR_MAILBOX, 0, 0);
}

/* The toy GPU: kick words -> fences or kills (toy_gpu.h). */
static void run_toy_gpu(struct served_device *d)
{
	uint64_t now = now_ns();

	if (!d->m.bar2)
		return;
	for (uint32_t i = 0; i < TOY_MAX_CHANNELS; i++) {
		struct toy_channel *c = &d->m.channels[i];
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

static void mailbox_tick(struct served_device *d)
{
	mailbox_serve(d);
	run_toy_gpu(d);
}

static const struct fake_type mailbox_types[] = {
	{ "gdtest", "vgpu-gdtest", "guest driver test profile (fake-vgpud --mode mailbox)", 4,
	  NULL },
};

static const struct fake_mode mailbox_mode = {
	.name = "mailbox",
	.types = mailbox_types,
	.type_count = 1,
	.tick_ms = 2,
	.init = mailbox_init,
	.attach = mailbox_attach,
	.detach = mailbox_detach,
	.doorbell = mailbox_serve,
	.tick = mailbox_tick,
};

/* ---- events ------------------------------------------------------------------ */

static void uuid_str(const uint8_t *u, char *out, size_t size)
{
	snprintf(out, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

static void event_create(const struct vgpu_mdev_event *e, const char *uuid)
{
	uint32_t type = e->payload.device.type_index;
	struct served_device *d;

	say("CREATE device %u uuid %s type %u", e->device_id, uuid, type);
	if (type < mode->type_count && mode->types[type].refusal) {
		reply(e->device_id, e->seq, -ENOSPC, mode->types[type].refusal);
		return;
	}
	d = find_device(e->device_id, true);
	if (!d) {
		reply(e->device_id, e->seq, -ENOSPC, "fake-vgpud: too many devices");
		return;
	}
	d->type_index = type;
	reply(e->device_id, e->seq, 0, NULL);
}

/* OPEN and RESET: what vgpud does, a fresh VM state and a fresh BAR2. */
static void event_attach(const struct vgpu_mdev_event *e)
{
	struct served_device *d;

	say("%s device %u session %u", e->type == VGPU_MDEV_EVENT_OPEN ? "OPEN" : "RESET",
	    e->device_id, e->payload.device.session);
	d = find_device(e->device_id, true);
	if (!d) {
		reply(e->device_id, e->seq, -ENOSPC, "fake-vgpud: too many devices");
		return;
	}
	mode->detach(d);
	d->open = true;
	d->irq_mask = VGPU_IRQ_ALL;
	reply(e->device_id, e->seq, mode->attach(d), NULL);
}

static void event_reg_write(const struct vgpu_mdev_event *e)
{
	struct served_device *d = find_device(e->device_id, false);

	if (mode->log_reg_writes)
		say("REG_WRITE device %u changed %#x doorbells %u ack %#x mask %#x", e->device_id,
		    e->payload.regs.changed, e->payload.regs.doorbells, e->payload.regs.irq_ack,
		    e->payload.regs.irq_mask);
	if (!d)
		return;
	if (e->payload.regs.changed & VGPU_MDEV_REG_IRQ_MASK)
		d->irq_mask = e->payload.regs.irq_mask;
	if (e->payload.regs.changed & VGPU_MDEV_REG_DOORBELL) {
		doorbell_events++;
		mode->doorbell(d);
	}
}

static void event(const struct vgpu_mdev_event *e)
{
	struct served_device *d;
	char uuid[40];

	uuid_str(e->payload.device.uuid, uuid, sizeof(uuid));
	switch (e->type) {
	case VGPU_MDEV_EVENT_CREATE:
		event_create(e, uuid);
		break;
	case VGPU_MDEV_EVENT_EXISTS:
		say("EXISTS device %u uuid %s", e->device_id, uuid);
		find_device(e->device_id, true);
		break;
	case VGPU_MDEV_EVENT_OPEN:
	case VGPU_MDEV_EVENT_RESET:
		event_attach(e);
		break;
	case VGPU_MDEV_EVENT_CLOSE:
		say("CLOSE device %u", e->device_id);
		d = find_device(e->device_id, false);
		if (d) {
			mode->detach(d);
			d->open = false;
		}
		reply(e->device_id, e->seq, 0, NULL);
		break;
	case VGPU_MDEV_EVENT_REMOVE:
		say("REMOVE device %u", e->device_id);
		d = find_device(e->device_id, false);
		if (d) {
			mode->detach(d);
			d->used = false;
		}
		break;
	case VGPU_MDEV_EVENT_REG_WRITE:
		event_reg_write(e);
		break;
	case VGPU_MDEV_EVENT_PIN_RELEASED:
		pin_released_events++;
		say("PIN_RELEASED device %u pin %lu iova %#lx pages %lu", e->device_id,
		    (unsigned long)e->payload.pin.pin_id, (unsigned long)e->payload.pin.iova,
		    (unsigned long)e->payload.pin.npages);
		break;
	default:
		say("unknown event %u", e->type);
		break;
	}
}

/* ---- main ---------------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* Open the control device, check its version, register the mode's types. */
static int connect_control(void)
{
	struct vgpu_mdev_type_info types[4];
	struct vgpu_mdev_set_types st = { .count = mode->type_count, .types = (uintptr_t)types };
	struct vgpu_mdev_version v;

	ctl = open(VGPU_MDEV_CONTROL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (ctl < 0) {
		perror(VGPU_MDEV_CONTROL_PATH);
		return -1;
	}
	if (ioctl(ctl, VGPU_MDEV_GET_VERSION, &v) < 0 || v.version != VGPU_MDEV_CONTROL_VERSION ||
	    v.event_size != sizeof(struct vgpu_mdev_event)) {
		fprintf(stderr, "fake-vgpud: control device version mismatch\n");
		return -1;
	}
	say("control version %u, device ABI %#x, BAR2 region %#lx, features %#x; mode %s",
	    v.version, v.abi_version, (unsigned long)v.bar2_region_size, v.features, mode->name);
	if (mode->type_count > sizeof(types) / sizeof(types[0]))
		abort();
	memset(types, 0, sizeof(types));
	for (uint32_t i = 0; i < mode->type_count; i++) {
		snprintf(types[i].sysfs_name, sizeof(types[i].sysfs_name), "%s",
			 mode->types[i].sysfs_name);
		snprintf(types[i].name, sizeof(types[i].name), "%s", mode->types[i].name);
		snprintf(types[i].description, sizeof(types[i].description), "%s",
			 mode->types[i].description);
		types[i].available = mode->types[i].available;
	}
	if (ioctl(ctl, VGPU_MDEV_SET_TYPES, &st) < 0) {
		perror("VGPU_MDEV_SET_TYPES");
		return -1;
	}
	say("types registered");
	return 0;
}

/* Events as they come; every tick_ms the mode's tick on open devices. */
static int serve(void)
{
	struct pollfd p = { .fd = ctl, .events = POLLIN };

	while (!quit) {
		struct vgpu_mdev_event ev[16];
		ssize_t n;

		if (poll(&p, 1, mode->tick_ms) < 0 && errno != EINTR) {
			perror("poll");
			return 1;
		}
		while ((n = read(ctl, ev, sizeof(ev))) > 0)
			for (ssize_t i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
				event(&ev[i]);
		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			perror("read events");
			return 1;
		}
		for (int i = 0; mode->tick && i < MAX_DEVICES; i++)
			if (devices[i].used && devices[i].open)
				mode->tick(&devices[i]);
	}
	return 0;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [--mode commands|mailbox] [--ready-file PATH] | --local SOCKET\n",
	        argv0);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *ready_file = NULL;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--local"))
		return fake_vgpud_local_main(argv[2]);
	mode = &commands_mode;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ready-file") && i + 1 < argc) {
			ready_file = argv[++i];
		} else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "commands")) {
				mode = &commands_mode;
			} else if (!strcmp(argv[i], "mailbox")) {
				mode = &mailbox_mode;
			} else {
				usage(stderr, argv[0]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout, argv[0]);
			return 0;
		} else {
			usage(stderr, argv[0]);
			return 2;
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (connect_control())
		return 1;
	if (ready_file) {
		FILE *f = fopen(ready_file, "w");

		if (f)
			fclose(f);
	}
	rc = serve();
	for (int i = 0; i < MAX_DEVICES; i++)
		if (devices[i].used)
			say("device %u: %llu requests answered", devices[i].id,
			    (unsigned long long)devices[i].requests);
	say("exiting (%s)", rc ? "error" : "signal");
	close(ctl);
	return rc;
}
