// SPDX-License-Identifier: MIT
/*
 * fake-vgpud - stands in for vgpud on /dev/vgpu_mdev in the module tests.
 *
 * Registers two mdev types ("vgpu-test": accepted; "vgpu-refuse": every
 * CREATE is refused with a message), answers every request, backs BAR2 of
 * each opened device with memfds (mailbox with a pattern, channel window
 * 0, a shadow for its swappable part), sets the registers a real vgpud
 * sets (STATUS = READY, IRQ_MASK, FEATURES) and sysfs statistics, and runs
 * the commands of test_protocol.h when a doorbell event arrives.
 *
 * Prints one line per event ("FAKE-VGPUD: ...") to stdout. Exits on
 * SIGTERM/SIGINT (closing the control device, as a dying vgpud would) or
 * after T_DIE_BLOCKED.
 *
 * Usage: fake-vgpud [--ready-file PATH]
 *        fake-vgpud --local SOCKET   QEMU's vgpu-pci device on vgpud's local
 *                                    socket instead (fake-vgpud-local.c)
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

#include <vgpu/abi/mdev_control.h>

#include "fake-vgpud-local.h"
#include "test_protocol.h"

#define MAX_DEVICES 16

struct fake_device {
	bool used;
	uint32_t id;
	uint32_t type_index;
	bool open;
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

static int ctl = -1;
static struct fake_device devices[MAX_DEVICES];
static uint64_t pin_released_events, doorbell_events;
static volatile sig_atomic_t quit;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAKE-VGPUD: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static struct fake_device *find_device(uint32_t id, bool create)
{
	struct fake_device *free_slot = NULL;

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
	free_slot->mailbox_fd = free_slot->window_fd = free_slot->shadow_fd = -1;
	return free_slot;
}

static int memfd(const char *name, size_t bytes, uint8_t **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, bytes) < 0) {
		perror("memfd");
		exit(1);
	}
	*map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED) {
		perror("mmap memfd");
		exit(1);
	}
	return fd;
}

static void reply(uint32_t id, uint32_t seq, int status, const char *message)
{
	struct vgpu_mdev_reply r = { .device_id = id, .seq = seq, .status = status };

	if (message)
		snprintf(r.message, sizeof(r.message), "%s", message);
	if (ioctl(ctl, VGPU_MDEV_REPLY, &r) < 0)
		say("REPLY device %u seq %u failed: %s", id, seq, strerror(errno));
}

static int map_region(struct fake_device *d, int fd, uint64_t bar2_offset, uint64_t bytes,
		      uint64_t fd_offset)
{
	struct vgpu_mdev_region r = {
		.device_id = d->id, .fd = fd, .bar2_offset = bar2_offset, .bytes = bytes,
		.fd_offset = fd_offset,
	};

	if (ioctl(ctl, VGPU_MDEV_MAP_REGION, &r) < 0) {
		say("MAP_REGION %#lx+%#lx failed: %s", (unsigned long)bar2_offset,
		    (unsigned long)bytes, strerror(errno));
		return -errno;
	}
	return 0;
}

static void reg_update(struct fake_device *d, uint32_t vectors, int n, ...)
{
	struct vgpu_mdev_reg_update u = { .device_id = d->id, .irq_vectors = vectors };
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		u.ops[i].offset = va_arg(ap, uint32_t);
		u.ops[i].op = va_arg(ap, uint32_t);
		u.ops[i].value = va_arg(ap, uint32_t);
	}
	va_end(ap);
	u.count = n;
	if (ioctl(ctl, VGPU_MDEV_REG_UPDATE, &u) < 0)
		say("REG_UPDATE device %u failed: %s", d->id, strerror(errno));
}

static void close_backing(struct fake_device *d)
{
	if (d->swapping) {
		d->stop_swapping = true;
		pthread_join(d->swapper, NULL);
		d->swapping = false;
	}
	if (d->mailbox_fd >= 0) {
		munmap(d->mailbox, VGPU_MAILBOX_SIZE);
		munmap(d->window, T_WINDOW_BYTES);
		munmap(d->shadow, T_SWAP_BYTES);
		close(d->mailbox_fd);
		close(d->window_fd);
		close(d->shadow_fd);
	}
	d->mailbox_fd = d->window_fd = d->shadow_fd = -1;
}

/* What vgpud does at OPEN and RESET: attach, back BAR2, set registers. */
static int attach(struct fake_device *d)
{
	struct vgpu_mdev_stats st = { .device_id = d->id };
	int ret;

	close_backing(d);
	d->mailbox_fd = memfd("fake-mailbox", VGPU_MAILBOX_SIZE, &d->mailbox);
	d->window_fd = memfd("fake-window0", T_WINDOW_BYTES, &d->window);
	d->shadow_fd = memfd("fake-shadow0", T_SWAP_BYTES, &d->shadow);
	for (uint32_t w = T_PATTERN_OFFSET / 4; w < VGPU_MAILBOX_SIZE / 4; w++)
		((uint32_t *)d->mailbox)[w] = t_pattern(w);
	d->last_seq = 0;
	ret = map_region(d, d->mailbox_fd, VGPU_MAILBOX_OFFSET, VGPU_MAILBOX_SIZE, 0);
	if (!ret)
		ret = map_region(d, d->window_fd, T_WINDOW_OFFSET, T_WINDOW_BYTES, 0);
	if (ret)
		return ret;
	reg_update(d, 0, 3, VGPU_REG_FEATURES, VGPU_MDEV_REG_SET,
		   VGPU_FEATURE_MSIX | VGPU_FEATURE_STATS, VGPU_REG_STATUS, VGPU_MDEV_REG_SET,
		   VGPU_STATUS_READY, VGPU_REG_IRQ_MASK, VGPU_MDEV_REG_SET, VGPU_IRQ_ALL);
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

static int window_block(struct fake_device *d)
{
	struct vgpu_mdev_window_block b = {
		.device_id = d->id, .index = 0, .bar2_offset = T_WINDOW_OFFSET,
		.bytes = T_SWAP_BYTES,
	};

	return ioctl(ctl, VGPU_MDEV_WINDOW_BLOCK, &b) < 0 ? -errno : 0;
}

static int window_map(struct fake_device *d, bool shadow)
{
	struct vgpu_mdev_window_map m = {
		.device_id = d->id, .index = 0, .count = 1,
		.target = shadow ? VGPU_MDEV_WINDOW_SHADOW : VGPU_MDEV_WINDOW_REAL,
	};

	m.segment[0].bar2_offset = T_WINDOW_OFFSET;
	m.segment[0].bytes = T_SWAP_BYTES;
	m.segment[0].fd = shadow ? d->shadow_fd : d->window_fd;
	m.segment[0].fd_offset = 0;
	return ioctl(ctl, VGPU_MDEV_WINDOW_MAP, &m) < 0 ? -errno : 0;
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* The suspend/resume of docs/DESIGN.md §3.4 without a GPU: block, copy, map. */
static void *swapper(void *arg)
{
	struct fake_device *d = arg;
	int ret = 0;

	while (!d->stop_swapping && !ret) {
		ret = window_block(d);
		if (ret)
			break;
		memcpy(d->shadow, d->window, T_SWAP_BYTES);
		ret = window_map(d, true);
		if (ret)
			break;
		sleep_us(d->swap_period_us);
		ret = window_block(d);
		if (ret)
			break;
		memcpy(d->window, d->shadow, T_SWAP_BYTES);
		ret = window_map(d, false);
		if (ret)
			break;
		d->swaps++;
		sleep_us(d->swap_period_us);
	}
	d->swap_error = ret;
	return NULL;
}

/* As a device does: status bit, then the answer, then the interrupt. */
static void finish(struct fake_device *d, uint32_t seq, uint32_t result)
{
	struct vgpu_mdev_irq irq = { .device_id = d->id, .vectors = 1u << VGPU_MSIX_VECTOR_MAILBOX };

	reg_update(d, 0, 1, VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR, VGPU_IRQ_MAILBOX);
	*(volatile uint32_t *)(d->mailbox + T_RESULT) = result;
	__atomic_store_n((uint32_t *)(d->mailbox + T_DONE_SEQ), seq, __ATOMIC_RELEASE);
	if (ioctl(ctl, VGPU_MDEV_RAISE_IRQ, &irq) < 0)
		say("RAISE_IRQ device %u failed: %s", d->id, strerror(errno));
}

static void message(struct fake_device *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf((char *)d->mailbox + T_MESSAGE, T_MESSAGE_MAX, fmt, ap);
	va_end(ap);
	say("device %u: %s", d->id, (char *)d->mailbox + T_MESSAGE);
}

static void command(struct fake_device *d)
{
	uint8_t *m = d->mailbox;
	uint32_t seq = __atomic_load_n((uint32_t *)(m + T_SEQ), __ATOMIC_ACQUIRE);
	uint32_t cmd = *(uint32_t *)(m + T_CMD);
	uint64_t arg0 = *(uint64_t *)(m + T_ARG0), arg1 = *(uint64_t *)(m + T_ARG1);
	uint64_t *value0 = (uint64_t *)(m + T_VALUE0), *value1 = (uint64_t *)(m + T_VALUE1);
	uint32_t result = 0;

	if (seq == d->last_seq)
		return; /* a doorbell without a new command */
	d->last_seq = seq;
	say("device %u: command %u seq %u args %#lx %#lx", d->id, cmd, seq, (unsigned long)arg0,
	    (unsigned long)arg1);
	switch (cmd) {
	case T_PING:
		*value0 = arg0 + 1;
		break;
	case T_RAISE:
		*(volatile uint32_t *)(m + T_RESULT) = 0;
		__atomic_store_n((uint32_t *)(m + T_DONE_SEQ), seq, __ATOMIC_RELEASE);
		reg_update(d, (uint32_t)arg0, 1, VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR,
			   (uint32_t)arg1);
		return;
	case T_DMA: {
		struct vgpu_mdev_dma dma = {
			.device_id = d->id, .iova = arg0, .bytes = arg1,
		};
		struct vgpu_mdev_pin pin = { .device_id = d->id, .iova = arg0 & ~4095ull };
		uint32_t *buf = malloc(arg1 + 4);
		uint64_t good = 0;

		if (!buf || arg1 > (1 << 20) || arg1 % 4) {
			result = EINVAL;
			break;
		}
		dma.buffer = (uintptr_t)buf;
		if (ioctl(ctl, VGPU_MDEV_DMA_RW, &dma) < 0) {
			message(d, "DMA read of %#lx failed: %s", (unsigned long)arg0,
				strerror(errno));
			result = errno;
			free(buf);
			break;
		}
		for (uint32_t w = 0; w < arg1 / 4; w++)
			good += buf[w] == t_dma_pattern(w);
		*value0 = good;
		pin.npages = (arg0 + arg1 - pin.iova + 4095) / 4096;
		if (ioctl(ctl, VGPU_MDEV_PIN, &pin) < 0) {
			message(d, "PIN failed: %s", strerror(errno));
			result = errno;
		} else {
			struct vgpu_mdev_pin unpin = { .device_id = d->id, .pin_id = pin.pin_id };

			if (ioctl(ctl, VGPU_MDEV_UNPIN, &unpin) < 0) {
				message(d, "UNPIN failed: %s", strerror(errno));
				result = errno;
			}
		}
		for (uint32_t w = 0; w < arg1 / 4; w++)
			buf[w] = ~t_dma_pattern(w);
		dma.flags = VGPU_MDEV_DMA_WRITE;
		if (!result && ioctl(ctl, VGPU_MDEV_DMA_RW, &dma) < 0) {
			message(d, "DMA write failed: %s", strerror(errno));
			result = errno;
		}
		if (!result && good != arg1 / 4) {
			message(d, "DMA read %lu of %lu words right", (unsigned long)good,
				(unsigned long)(arg1 / 4));
			result = EIO;
		}
		free(buf);
		break;
	}
	case T_PIN: {
		struct vgpu_mdev_pin pin = { .device_id = d->id, .iova = arg0, .npages = arg1 };

		if (ioctl(ctl, VGPU_MDEV_PIN, &pin) < 0) {
			message(d, "PIN failed: %s", strerror(errno));
			result = errno;
		}
		*value0 = pin.pin_id;
		break;
	}
	case T_SWAP_START:
		if (d->swapping) {
			result = EBUSY;
			break;
		}
		d->swap_period_us = arg0;
		d->swaps = 0;
		d->swap_error = 0;
		d->stop_swapping = false;
		d->swapping = !pthread_create(&d->swapper, NULL, swapper, d);
		result = d->swapping ? 0 : EAGAIN;
		break;
	case T_SWAP_STOP: {
		uint64_t bad = ~0ull;

		if (!d->swapping) {
			result = EINVAL;
			break;
		}
		d->stop_swapping = true;
		pthread_join(d->swapper, NULL);
		d->swapping = false;
		for (uint64_t w = 0; w < arg0 && w < T_SWAP_BYTES / 4; w++) {
			if (((uint32_t *)d->window)[w] != w + 1) {
				bad = w;
				break;
			}
		}
		*value0 = d->swaps;
		*value1 = bad;
		if (d->swap_error) {
			message(d, "swap failed: %s", strerror(-d->swap_error));
			result = -d->swap_error;
		} else if (bad != ~0ull) {
			message(d, "after %lu swaps word %lu of the real window is %u, not %lu",
				(unsigned long)d->swaps, (unsigned long)bad,
				((uint32_t *)d->window)[bad], (unsigned long)bad + 1);
			result = EIO;
		} else {
			message(d, "%lu swaps, all %lu words arrived in the real pages",
				(unsigned long)d->swaps, (unsigned long)arg0);
		}
		break;
	}
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

static void uuid_str(const uint8_t *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

static void event(const struct vgpu_mdev_event *e)
{
	struct fake_device *d;
	char uuid[40];

	uuid_str(e->payload.device.uuid, uuid);
	switch (e->type) {
	case VGPU_MDEV_EVENT_CREATE:
		say("CREATE device %u uuid %s type %u", e->device_id, uuid,
		    e->payload.device.type_index);
		if (e->payload.device.type_index == 1) {
			reply(e->device_id, e->seq, -ENOSPC,
			      "profile vgpu-refuse has no capacity (test)");
			break;
		}
		d = find_device(e->device_id, true);
		if (!d) {
			reply(e->device_id, e->seq, -ENOSPC, "fake-vgpud: too many devices");
			break;
		}
		d->type_index = e->payload.device.type_index;
		reply(e->device_id, e->seq, 0, NULL);
		break;
	case VGPU_MDEV_EVENT_EXISTS:
		say("EXISTS device %u uuid %s", e->device_id, uuid);
		find_device(e->device_id, true);
		break;
	case VGPU_MDEV_EVENT_OPEN:
	case VGPU_MDEV_EVENT_RESET:
		say("%s device %u session %u", e->type == VGPU_MDEV_EVENT_OPEN ? "OPEN" : "RESET",
		    e->device_id, e->payload.device.session);
		d = find_device(e->device_id, true);
		if (!d) {
			reply(e->device_id, e->seq, -ENOSPC, "fake-vgpud: too many devices");
			break;
		}
		d->open = true;
		reply(e->device_id, e->seq, attach(d), NULL);
		break;
	case VGPU_MDEV_EVENT_CLOSE:
		say("CLOSE device %u", e->device_id);
		d = find_device(e->device_id, false);
		if (d) {
			close_backing(d);
			d->open = false;
		}
		reply(e->device_id, e->seq, 0, NULL);
		break;
	case VGPU_MDEV_EVENT_REMOVE:
		say("REMOVE device %u", e->device_id);
		d = find_device(e->device_id, false);
		if (d) {
			close_backing(d);
			d->used = false;
		}
		break;
	case VGPU_MDEV_EVENT_REG_WRITE:
		say("REG_WRITE device %u changed %#x doorbells %u ack %#x mask %#x", e->device_id,
		    e->payload.regs.changed, e->payload.regs.doorbells, e->payload.regs.irq_ack,
		    e->payload.regs.irq_mask);
		d = find_device(e->device_id, false);
		if (d && (e->payload.regs.changed & VGPU_MDEV_REG_DOORBELL)) {
			doorbell_events++;
			if (d->mailbox_fd >= 0)
				command(d);
		}
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

static void on_signal(int sig)
{
	quit = 1;
}

int main(int argc, char **argv)
{
	struct vgpu_mdev_type_info types[2];
	struct vgpu_mdev_set_types st = { .count = 2, .types = (uintptr_t)types };
	struct vgpu_mdev_version v;
	const char *ready_file = NULL;
	struct sigaction sa = { .sa_handler = on_signal };

	if (argc == 3 && !strcmp(argv[1], "--local"))
		return fake_vgpud_local_main(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--ready-file"))
		ready_file = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: %s [--ready-file PATH] | --local SOCKET\n", argv[0]);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	ctl = open(VGPU_MDEV_CONTROL_PATH, O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		perror(VGPU_MDEV_CONTROL_PATH);
		return 1;
	}
	if (ioctl(ctl, VGPU_MDEV_GET_VERSION, &v) < 0 || v.version != VGPU_MDEV_CONTROL_VERSION ||
	    v.event_size != sizeof(struct vgpu_mdev_event)) {
		fprintf(stderr, "fake-vgpud: control version mismatch\n");
		return 1;
	}
	say("control version %u, device ABI %#x, BAR2 region %#lx, features %#x", v.version,
	    v.abi_version, (unsigned long)v.bar2_region_size, v.features);

	memset(types, 0, sizeof(types));
	strcpy(types[0].sysfs_name, "test");
	strcpy(types[0].name, "vgpu-test");
	strcpy(types[0].description, "test profile: 1 GiB share, weight 1 (fake-vgpud)");
	types[0].available = 4;
	strcpy(types[1].sysfs_name, "refuse");
	strcpy(types[1].name, "vgpu-refuse");
	strcpy(types[1].description, "a profile whose CREATE fake-vgpud refuses");
	types[1].available = 1;
	if (ioctl(ctl, VGPU_MDEV_SET_TYPES, &st) < 0) {
		perror("VGPU_MDEV_SET_TYPES");
		return 1;
	}
	say("types registered");
	if (ready_file) {
		FILE *f = fopen(ready_file, "w");

		if (f)
			fclose(f);
	}

	while (!quit) {
		struct pollfd p = { .fd = ctl, .events = POLLIN };
		struct vgpu_mdev_event ev[16];
		ssize_t n;

		if (poll(&p, 1, 500) <= 0)
			continue;
		n = read(ctl, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			perror("read events");
			return 1;
		}
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(ev[0]); i++)
			event(&ev[i]);
	}
	say("exiting on signal");
	return 0;
}
