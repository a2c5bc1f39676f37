// SPDX-License-Identifier: MIT
/*
 * mdev-client - the vgpu_mdev tests' user of a vGPU mdev, from either side
 * of it: the host (L1), opening the mdev through VFIO as QEMU does, and the
 * guest (L2), using the PCI device QEMU made of it. Both drive
 * fake-vgpud --mode commands through the test-only command block of
 * test_protocol.h, except --vgpud, which speaks the real mailbox protocol
 * of device_abi.h to vgpud's mdev transport.
 *
 * Usage:
 *   mdev-client UUID          host: container, type1 v2 IOMMU, group, device
 *                             fd; checks config space, BAR0 registers, the
 *                             BAR2 mapping, interrupts in all three modes,
 *                             DMA and pins (with the guest mapping going
 *                             away), the fault-time shadow swap under
 *                             concurrent writes, reset, and bad inputs
 *   mdev-client --vgpud UUID  host: the real vgpud through its mdev transport
 *                             (HELLO, QUERY, ALLOC, STATS, sysfs statistics,
 *                             a channel, FREE, reset)
 *   mdev-client --guest find  guest: print the vGPU's sysfs PCI device dir
 *   mdev-client --guest CHECK DIR
 *                             guest, through DIR's resource0/resource2
 *                             (KVM maps BAR2 straight to the module's
 *                             pages); CHECK: ids regs pattern ping
 *                             raise:VEC:BITS dma swap die
 *
 * Prints one "ok: ..." / "FAIL: ..." line per check (in the guest prefixed
 * "VGPU-L2-CHECK "), on the host last "mdev-client: N passed, N failed";
 * exits 1 if any check failed, 2 for bad usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/abi/device_abi.h>
#include <vgpu/abi/mdev_control.h>

#include "test_protocol.h"

#define REGION(i) ((uint64_t)(i) << 40) /* what the module reports; checked below */

static int device = -1, container = -1; /* host: VFIO */
static uint64_t region_offset[VFIO_PCI_NUM_REGIONS];
static volatile uint8_t *guest_bar0; /* guest: resource0 mapped */
static volatile uint8_t *bar2;	     /* either side: BAR2 mapped */
static const char *check_prefix = "";
static int passed, failed;
static __thread sigjmp_buf *sigbus_jmp; /* where a SIGBUS in this thread lands */
static volatile sig_atomic_t sigbus_seen;

/* "<prefix>ok: what" or "<prefix>FAIL: what", flushed; returns ok. */
static bool __attribute__((format(printf, 2, 3))) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s%s: ", check_prefix, ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (ok)
		passed++;
	else
		failed++;
	return ok;
}

/* CLOCK_MONOTONIC in seconds. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_sigbus(int sig)
{
	sigbus_seen = 1;
	if (sigbus_jmp)
		siglongjmp(*sigbus_jmp, 1);
	_exit(3); /* a SIGBUS where none was expected */
}

static ssize_t region_rw(int index, uint64_t off, void *buf, size_t n, bool write)
{
	return write ? pwrite(device, buf, n, region_offset[index] + off)
		     : pread(device, buf, n, region_offset[index] + off);
}

static uint32_t cfg32(unsigned int off)
{
	uint32_t v = 0;

	region_rw(VFIO_PCI_CONFIG_REGION_INDEX, off, &v, 4, false);
	return v;
}

static void cfg32_write(unsigned int off, uint32_t v)
{
	region_rw(VFIO_PCI_CONFIG_REGION_INDEX, off, &v, 4, true);
}

/* BAR0 register: trapped either way, by pread on the host, a load in the guest */
static uint32_t reg(unsigned int off)
{
	uint32_t v = 0xdeadbeef;

	if (guest_bar0)
		return *(volatile uint32_t *)(guest_bar0 + off);
	region_rw(VFIO_PCI_BAR0_REGION_INDEX, off, &v, 4, false);
	return v;
}

static void reg_write(unsigned int off, uint32_t v)
{
	if (guest_bar0)
		*(volatile uint32_t *)(guest_bar0 + off) = v;
	else
		region_rw(VFIO_PCI_BAR0_REGION_INDEX, off, &v, 4, true);
}

/* test_protocol.h through the mapped mailbox and the BAR0 doorbell */
static uint32_t command(uint32_t cmd, uint64_t arg0, uint64_t arg1, uint64_t *value0,
			uint64_t *value1)
{
	volatile uint8_t *m = bar2;
	uint32_t seq = *(volatile uint32_t *)(m + T_SEQ) + 1;
	double t0 = now();

	*(volatile uint32_t *)(m + T_CMD) = cmd;
	*(volatile uint64_t *)(m + T_ARG0) = arg0;
	*(volatile uint64_t *)(m + T_ARG1) = arg1;
	__atomic_store_n((uint32_t *)(m + T_SEQ), seq, __ATOMIC_RELEASE);
	reg_write(VGPU_REG_MAILBOX_DOORBELL, 1);
	while (__atomic_load_n((uint32_t *)(m + T_DONE_SEQ), __ATOMIC_ACQUIRE) != seq) {
		if (now() - t0 > 20) {
			printf("  command %u: no answer from fake-vgpud in 20 s\n", cmd);
			return ETIMEDOUT;
		}
		usleep(100);
	}
	if (value0)
		*value0 = *(volatile uint64_t *)(m + T_VALUE0);
	if (value1)
		*value1 = *(volatile uint64_t *)(m + T_VALUE1);
	if (*(volatile uint32_t *)(m + T_RESULT))
		printf("  fake-vgpud: %s\n", (const char *)(m + T_MESSAGE));
	return *(volatile uint32_t *)(m + T_RESULT);
}

/* ---- checks of both sides ------------------------------------------------- */

/* Words of the mailbox page's pattern (test_protocol.h) BAR2 does not show. */
static uint32_t pattern_bad_words(void)
{
	uint32_t bad = 0;

	for (uint32_t w = T_PATTERN_OFFSET / 4; w < VGPU_MAILBOX_SIZE / 4; w++)
		bad += ((volatile uint32_t *)bar2)[w] != t_pattern(w);
	return bad;
}

/* A doorbell round trip and the mailbox interrupt's status bit. */
static void check_ping(uint64_t arg)
{
	uint64_t v = 0;
	double t0;
	bool ok;

	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_ALL);
	t0 = now();
	ok = command(T_PING, arg, 0, &v, NULL) == 0 && v == arg + 1;
	check(ok, "doorbell: fake-vgpud answered PING %lu with %lu (%.1f ms)", (unsigned long)arg,
	      (unsigned long)v, (now() - t0) * 1000);
	check(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX,
	      "IRQ_STATUS has MAILBOX after the answer");
	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_MAILBOX);
	check(!(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX), "IRQ_ACK clears it at once");
}

/* fake-vgpud reads buf (bytes at DMA address addr), pins, unpins, writes back. */
static void check_dma(uint32_t *buf, size_t bytes, uint64_t addr)
{
	uint64_t good = 0;
	uint32_t bad = 0;
	bool ok;

	for (uint32_t w = 0; w < bytes / 4; w++)
		buf[w] = t_dma_pattern(w);
	ok = command(T_DMA, addr, bytes, &good, NULL) == 0;
	check(ok && good == bytes / 4,
	      "DMA: fake-vgpud read all %lu words at %#llx, pinned and unpinned them, wrote back",
	      (unsigned long)good, (unsigned long long)addr);
	for (uint32_t w = 0; w < bytes / 4; w++)
		bad += buf[w] != ~t_dma_pattern(w);
	check(bad == 0, "DMA: its write arrived in our memory (%u words wrong)", bad);
}

struct writer {
	volatile uint32_t *window;
	uint32_t words;
	unsigned int delay_us, every; /* sleep delay_us after every `every` words */
};

/* Writes i + 1 to word i; a SIGBUS ends it (and is counted). */
static void *write_window(void *arg)
{
	struct writer *w = arg;
	sigjmp_buf here;

	sigbus_jmp = &here;
	if (!sigsetjmp(here, 1)) {
		for (uint32_t i = 0; i < w->words; i++) {
			w->window[i] = i + 1;
			if (w->delay_us && !(i % w->every))
				usleep(w->delay_us);
		}
	}
	sigbus_jmp = NULL;
	return NULL;
}

/* Writers on window 0's swappable part while fake-vgpud swaps it to its
 * shadow and back every period_us: no fault may fail, no write get lost. */
static void check_swap(uint64_t period_us, int writers, const struct writer *how,
		       uint64_t min_swaps)
{
	volatile uint32_t *window = (volatile uint32_t *)(bar2 + T_WINDOW_OFFSET);
	const uint32_t words = T_SWAP_BYTES / 4;
	struct writer w = *how;
	uint64_t swaps = 0, first_bad = 0;
	uint32_t bad = ~0u;
	pthread_t t[4];
	double t0;
	bool ok;

	w.window = window;
	w.words = words;
	for (uint32_t i = 0; i < words; i++)
		window[i] = 0;
	if (!check(command(T_SWAP_START, period_us, 0, NULL, NULL) == 0,
		   "swap: fake-vgpud swaps window 0 (control page + GPFIFO) every %.1f ms",
		   period_us / 1000.0))
		return;
	sigbus_seen = 0;
	t0 = now();
	for (int i = 0; i < writers && i < 4; i++)
		pthread_create(&t[i], NULL, write_window, &w);
	for (int i = 0; i < writers && i < 4; i++)
		pthread_join(t[i], NULL);
	check(!sigbus_seen,
	      "swap: %d writer(s) wrote %u words in %.2f s while it swapped, no SIGBUS", writers,
	      words, now() - t0);
	ok = command(T_SWAP_STOP, words, 0, &swaps, &first_bad) == 0;
	check(ok && first_bad == ~0ull && swaps >= min_swaps,
	      "swap: after %lu round trips (want >= %lu) the real pages hold every write",
	      (unsigned long)swaps, (unsigned long)min_swaps);
	for (uint32_t i = 0; i < words; i++)
		if (window[i] != i + 1) {
			bad = i;
			break;
		}
	check(bad == ~0u, "swap: our view agrees (first wrong word %d)", (int)bad);
}

/* ---- the host: VFIO -------------------------------------------------------- */

static bool eventfd_fired(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	return read(fd, &v, sizeof(v)) == sizeof(v);
}

static int set_irqs(uint32_t index, uint32_t flags, uint32_t start, uint32_t count,
		    const int32_t *fds)
{
	char buf[sizeof(struct vfio_irq_set) + 8 * sizeof(int32_t)];
	struct vfio_irq_set *s = (struct vfio_irq_set *)buf;

	s->argsz = sizeof(*s) + ((flags & VFIO_IRQ_SET_DATA_EVENTFD) ? count * 4 : 0);
	s->flags = flags;
	s->index = index;
	s->start = start;
	s->count = count;
	if (flags & VFIO_IRQ_SET_DATA_EVENTFD)
		memcpy(s->data, fds, count * 4);
	return ioctl(device, VFIO_DEVICE_SET_IRQS, s) ? -errno : 0;
}

static void open_device(const char *uuid)
{
	char path[256], link[256];
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	ssize_t n;
	int group;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/iommu_group", uuid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		perror(path);
		exit(1);
	}
	link[n] = 0;
	snprintf(path, sizeof(path), "/dev/vfio/%s", basename(link));
	container = open("/dev/vfio/vfio", O_RDWR);
	group = open(path, O_RDWR);
	if (container < 0 || group < 0) {
		perror("open /dev/vfio");
		exit(1);
	}
	check(ioctl(container, VFIO_GET_API_VERSION) == VFIO_API_VERSION, "VFIO API version");
	check(ioctl(group, VFIO_GROUP_GET_STATUS, &gs) == 0 && (gs.flags & VFIO_GROUP_FLAGS_VIABLE),
	      "group %s viable", path);
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) ||
	    ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
		perror("container setup");
		exit(1);
	}
	device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, uuid);
	if (!check(device >= 0, "open device %s (fake-vgpud attaches the VM)", uuid))
		exit(1);
}

static void test_info(void)
{
	struct vfio_device_info info = { .argsz = sizeof(info) };
	struct vfio_region_info ri = { .argsz = sizeof(ri) };
	char buf[256];
	struct vfio_region_info *big = (struct vfio_region_info *)buf;
	struct vfio_irq_info ii = { .argsz = sizeof(ii) };
	static const uint32_t want_irqs[] = { 1, 1, VGPU_MSIX_VECTORS, 1, 1 };

	bool ok = !ioctl(device, VFIO_DEVICE_GET_INFO, &info);

	check(ok && (info.flags & VFIO_DEVICE_FLAGS_PCI) &&
		      (info.flags & VFIO_DEVICE_FLAGS_RESET) &&
		      info.num_regions == VFIO_PCI_NUM_REGIONS &&
		      info.num_irqs == VFIO_PCI_NUM_IRQS,
	      "device info: PCI, reset, %u regions, %u irqs", info.num_regions, info.num_irqs);
	for (uint32_t i = 0; i < VFIO_PCI_NUM_REGIONS; i++) {
		ri.argsz = sizeof(ri);
		ri.index = i;
		if (ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &ri)) {
			check(false, "region %u info: %s", i, strerror(errno));
			continue;
		}
		region_offset[i] = ri.offset;
		switch (i) {
		case VFIO_PCI_CONFIG_REGION_INDEX:
			check(ri.size == 256 && ri.offset == REGION(i), "config region: 256 bytes");
			break;
		case VFIO_PCI_BAR0_REGION_INDEX:
			check(ri.size == VGPU_BAR0_SIZE && !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
			      "BAR0 region: %#llx bytes, trapped", (unsigned long long)ri.size);
			break;
		case VFIO_PCI_BAR2_REGION_INDEX:
			check(ri.size == VGPU_MDEV_BAR2_REGION_SIZE &&
				      (ri.flags & VFIO_REGION_INFO_FLAG_MMAP) &&
				      (ri.flags & VFIO_REGION_INFO_FLAG_CAPS) &&
				      ri.argsz > sizeof(ri),
			      "BAR2 region: %#llx bytes, mmap, caps (argsz %u asked)",
			      (unsigned long long)ri.size, ri.argsz);
			break;
		case 4:
			check(ri.size == 0x1000, "BAR4 (MSI-X) region: 4 KiB");
			break;
		default:
			check(ri.size == 0, "region %u: none", i);
			break;
		}
	}
	memset(buf, 0, sizeof(buf));
	big->argsz = sizeof(buf);
	big->index = VFIO_PCI_BAR2_REGION_INDEX;
	if (!ioctl(device, VFIO_DEVICE_GET_REGION_INFO, big) && big->cap_offset) {
		struct vfio_region_info_cap_sparse_mmap *s = (void *)(buf + big->cap_offset);

		check(s->header.id == VFIO_REGION_INFO_CAP_SPARSE_MMAP && s->nr_areas == 1 &&
			      s->areas[0].offset == 0 && s->areas[0].size == VGPU_BAR2_SIZE,
		      "BAR2 sparse mmap: one area [0, %#llx)",
		      (unsigned long long)s->areas[0].size);
	} else {
		check(false, "BAR2 sparse mmap capability");
	}
	for (uint32_t i = 0; i < VFIO_PCI_NUM_IRQS; i++) {
		ii.argsz = sizeof(ii);
		ii.index = i;
		ok = !ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &ii);
		check(ok && ii.count == want_irqs[i], "irq index %u: count %u", i, ii.count);
	}
	ri.index = 99;
	check(ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &ri) && errno == EINVAL,
	      "bad: region index 99 -> EINVAL");
	ii.index = 42;
	check(ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &ii) && errno == EINVAL,
	      "bad: irq index 42 -> EINVAL");
}

static void test_config(void)
{
	uint32_t id = cfg32(PCI_VENDOR_ID), class = cfg32(PCI_CLASS_REVISION) >> 8;
	uint32_t sub = cfg32(PCI_SUBSYSTEM_VENDOR_ID);
	uint8_t cap, caps[4] = { 0 };
	int ncaps = 0;
	uint8_t b, all[256];

	check(id == (VGPU_PCI_DEVICE_ID << 16 | VGPU_PCI_VENDOR_ID), "config: ID %04x:%04x",
	      id & 0xffff, id >> 16);
	check(class == VGPU_PCI_CLASS, "config: class %06x", class);
	check(sub == (VGPU_PCI_SUBSYSTEM_ID << 16 | VGPU_PCI_SUBSYSTEM_VENDOR_ID),
	      "config: subsystem %04x:%04x", sub & 0xffff, sub >> 16);
	check((cfg32(PCI_INTERRUPT_LINE) >> 8 & 0xff) == 1, "config: interrupt pin INTA");

	cfg32_write(PCI_BASE_ADDRESS_0, 0xffffffff);
	check(cfg32(PCI_BASE_ADDRESS_0) == 0xfffff000, "BAR0 sizes as 4 KiB, 32-bit (%#x)",
	      cfg32(PCI_BASE_ADDRESS_0));
	cfg32_write(PCI_BASE_ADDRESS_2, 0xffffffff);
	cfg32_write(PCI_BASE_ADDRESS_3, 0xffffffff);
	check(cfg32(PCI_BASE_ADDRESS_2) == 0xff80000c && cfg32(PCI_BASE_ADDRESS_3) == 0xffffffff,
	      "BAR2 sizes as 8 MiB, 64-bit prefetchable (%#x %#x)", cfg32(PCI_BASE_ADDRESS_2),
	      cfg32(PCI_BASE_ADDRESS_3));
	cfg32_write(PCI_BASE_ADDRESS_4, 0xffffffff);
	check(cfg32(PCI_BASE_ADDRESS_4) == 0xfffff000, "BAR4 sizes as 4 KiB");
	cfg32_write(PCI_BASE_ADDRESS_1, 0xffffffff);
	check(cfg32(PCI_BASE_ADDRESS_1) == 0, "BAR1 is not implemented");
	cfg32_write(PCI_BASE_ADDRESS_0, 0xfe000000);
	check(cfg32(PCI_BASE_ADDRESS_0) == 0xfe000000, "BAR0 keeps an assigned address");
	cfg32_write(PCI_VENDOR_ID, 0);
	check(cfg32(PCI_VENDOR_ID) == id, "IDs are read-only");

	cap = cfg32(PCI_CAPABILITY_LIST) & 0xff;
	while (cap && ncaps < 4) {
		uint32_t h = cfg32(cap);

		caps[ncaps++] = h & 0xff;
		if ((h & 0xff) == PCI_CAP_ID_MSIX)
			check((h >> 16 & 0x7ff) == VGPU_MSIX_VECTORS - 1 &&
				      cfg32(cap + PCI_MSIX_TABLE) == 4 &&
				      cfg32(cap + PCI_MSIX_PBA) == (0x800 | 4),
			      "MSI-X capability: %u vectors, table and PBA in BAR4",
			      (h >> 16 & 0x7ff) + 1);
		cap = h >> 8 & 0xff;
	}
	check(ncaps == 2 && caps[0] == PCI_CAP_ID_MSIX && caps[1] == PCI_CAP_ID_MSI,
	      "capability list: MSI-X, MSI");
	check(region_rw(VFIO_PCI_CONFIG_REGION_INDEX, 0, all, sizeof(all), false) == sizeof(all) &&
		      !memcmp(all, &id, 4),
	      "config: one 256-byte read, as QEMU does");
	check(region_rw(VFIO_PCI_CONFIG_REGION_INDEX, 256, &b, 1, false) < 0 && errno == EINVAL,
	      "bad: config read at 256 -> EINVAL");
	check(region_rw(VFIO_PCI_CONFIG_REGION_INDEX, 255, &id, 4, false) == 1,
	      "config read crossing the end is short (1 byte)");
}

static void test_bar0(void)
{
	uint16_t half = 0;
	uint8_t big[16];
	uint32_t *whole;

	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "BAR0 MAGIC %#x", reg(VGPU_REG_MAGIC));
	check(reg(VGPU_REG_ABI_VERSION) == VGPU_ABI_VERSION, "BAR0 ABI_VERSION %#x",
	      reg(VGPU_REG_ABI_VERSION));
	check(reg(VGPU_REG_STATUS) == VGPU_STATUS_READY, "BAR0 STATUS READY (set by fake-vgpud)");
	check(reg(VGPU_REG_FEATURES) == (VGPU_FEATURE_MSIX | VGPU_FEATURE_STATS),
	      "BAR0 FEATURES pushed by fake-vgpud");
	check(reg(VGPU_REG_BAR2_SIZE_LO) == VGPU_BAR2_SIZE && reg(VGPU_REG_BAR2_SIZE_HI) == 0 &&
		      reg(VGPU_REG_MAX_CHANNELS) == VGPU_MAX_CHANNELS &&
		      reg(VGPU_REG_CHANNEL_STRIDE) == VGPU_CHANNEL_WINDOW_STRIDE,
	      "BAR0 BAR2_SIZE, MAX_CHANNELS, CHANNEL_STRIDE");
	check(reg(VGPU_REG_IRQ_MASK) == VGPU_IRQ_ALL, "BAR0 IRQ_MASK = ALL after attach");
	reg_write(VGPU_REG_MAGIC, 0);
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "writes to read-only registers are ignored");
	region_rw(VFIO_PCI_BAR0_REGION_INDEX, VGPU_REG_MAGIC + 2, &half, 2, false);
	check(half == VGPU_MAGIC >> 16, "16-bit read of MAGIC's upper half");
	check(region_rw(VFIO_PCI_BAR0_REGION_INDEX, 0x3ff0, big, 4, false) < 0 && errno == EINVAL,
	      "bad: BAR0 read beyond 4 KiB -> EINVAL");
	check(region_rw(VFIO_PCI_BAR0_REGION_INDEX, 0xff8, big, 16, false) == 8,
	      "BAR0 read crossing the end is short");
	check(region_rw(VFIO_PCI_BAR0_REGION_INDEX, 0x1, big, 7, false) == 7,
	      "misaligned BAR0 read works (no side effects)");
	whole = malloc(VGPU_BAR0_SIZE);
	check(region_rw(VFIO_PCI_BAR0_REGION_INDEX, 0, whole, VGPU_BAR0_SIZE, false) ==
			      VGPU_BAR0_SIZE &&
		      whole[0] == VGPU_MAGIC,
	      "all of BAR0 in one read");
	free(whole);
	check(pread(device, big, 4, REGION(9)) < 0 && errno == EINVAL,
	      "bad: read of region 9 -> EINVAL");
	check(pread(device, big, 4, REGION(1)) < 0 && errno == EINVAL,
	      "bad: read of absent BAR1 -> EINVAL");
}

static void test_bar2_map(void)
{
	sigjmp_buf here;
	uint32_t bad, v;
	void *p;

	p = mmap(NULL, VGPU_BAR0_SIZE, PROT_READ, MAP_SHARED, device,
		 region_offset[VFIO_PCI_BAR0_REGION_INDEX]);
	check(p == MAP_FAILED, "bad: mmap of BAR0 refused");
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, device,
		 region_offset[VFIO_PCI_BAR2_REGION_INDEX]);
	check(p == MAP_FAILED, "bad: private mmap of BAR2 refused");
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, device,
		 region_offset[VFIO_PCI_BAR2_REGION_INDEX] + VGPU_BAR2_SIZE - 4096);
	check(p == MAP_FAILED, "bad: mmap beyond the sparse area refused");

	p = mmap(NULL, VGPU_BAR2_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, device,
		 region_offset[VFIO_PCI_BAR2_REGION_INDEX]);
	if (!check(p != MAP_FAILED, "mmap BAR2 [0, %#x)", VGPU_BAR2_SIZE))
		exit(1);
	bar2 = p;
	bad = pattern_bad_words();
	check(bad == 0, "BAR2 mailbox pattern through the mapping (%u bad words)", bad);
	v = 0;
	pread(device, &v, 4, region_offset[VFIO_PCI_BAR2_REGION_INDEX] + T_PATTERN_OFFSET + 40);
	check(v == t_pattern(T_PATTERN_OFFSET / 4 + 10), "BAR2 pattern through pread");
	v = 0x1234;
	pread(device, &v, 4, region_offset[VFIO_PCI_BAR2_REGION_INDEX] + 0x7f0000);
	check(v == 0, "BAR2 beyond VGPU_BAR2_SIZE reads zero through pread");
	v = 0x1234;
	pread(device, &v, 4,
	      region_offset[VFIO_PCI_BAR2_REGION_INDEX] + VGPU_CHANNEL_WINDOW_BASE +
		      5 * VGPU_CHANNEL_WINDOW_STRIDE);
	check(v == 0, "unbacked BAR2 page (window 5) reads zero through pread");

	sigbus_seen = 0;
	sigbus_jmp = &here;
	if (!sigsetjmp(here, 1)) {
		volatile uint32_t *unbacked =
			(volatile uint32_t *)(bar2 + VGPU_CHANNEL_WINDOW_BASE +
					      5 * VGPU_CHANNEL_WINDOW_STRIDE);
		unbacked[0] = 0xabcd;
		v = unbacked[0];
	}
	sigbus_jmp = NULL;
	check(!sigbus_seen, "unbacked BAR2 page is accessible through the mapping (no SIGBUS)");
}

static void test_doorbell_and_irqs(void)
{
	int32_t fds[VGPU_MSIX_VECTORS], fd_msi, fd_intx;
	uint64_t v0 = 0, v1 = 0;
	bool ok;

	check_ping(41);

	for (int i = 0; i < VGPU_MSIX_VECTORS; i++)
		fds[i] = eventfd(0, EFD_NONBLOCK);
	check(set_irqs(VFIO_PCI_MSIX_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0,
		       VGPU_MSIX_VECTORS, fds) == 0,
	      "MSI-X: %u eventfds registered", VGPU_MSIX_VECTORS);
	check(command(T_PING, 1, 0, NULL, NULL) == 0 && eventfd_fired(fds[0], 2000),
	      "MSI-X: mailbox answer fired vector 0");
	check(command(T_RAISE, 1u << VGPU_MSIX_VECTOR_FENCE, VGPU_IRQ_FENCE, NULL, NULL) == 0 &&
		      eventfd_fired(fds[1], 2000) && !eventfd_fired(fds[2], 0),
	      "MSI-X: fence raise fired vector 1 only");
	check(command(T_RAISE, 1u << VGPU_MSIX_VECTOR_ERROR, 0, NULL, NULL) == 0 &&
		      eventfd_fired(fds[2], 2000),
	      "MSI-X: error raise fired vector 2");
	eventfd_fired(fds[0], 100);
	check(set_irqs(VFIO_PCI_MSI_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1,
		       fds) == -EINVAL,
	      "bad: enabling MSI while MSI-X is active -> EINVAL");
	check(set_irqs(VFIO_PCI_MSIX_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 2, 2,
		       fds) == -EINVAL,
	      "bad: MSI-X vectors beyond the count -> EINVAL");
	check(set_irqs(VFIO_PCI_MSIX_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0, NULL) == 0,
	      "MSI-X disabled");

	fd_msi = eventfd(0, EFD_NONBLOCK);
	check(set_irqs(VFIO_PCI_MSI_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1, &fd_msi) == 0,
	      "MSI enabled");
	eventfd_fired(fd_msi, 0);
	check(command(T_RAISE, 1u << VGPU_MSIX_VECTOR_ERROR, 0, NULL, NULL) == 0 &&
		      eventfd_fired(fd_msi, 2000),
	      "MSI: a vector-2 raise fires the single MSI");
	eventfd_fired(fd_msi, 100); /* the command's own mailbox interrupt */
	set_irqs(VFIO_PCI_MSI_IRQ_INDEX, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0,
		 NULL);

	/* INTx: level = IRQ_STATUS & IRQ_MASK, automasked until unmask */
	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_ALL);
	fd_intx = eventfd(0, EFD_NONBLOCK);
	check(set_irqs(VFIO_PCI_INTX_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1,
		       &fd_intx) == 0,
	      "INTx enabled");
	check(command(T_RAISE, 1, VGPU_IRQ_FENCE, NULL, NULL) == 0 && eventfd_fired(fd_intx, 2000),
	      "INTx: raise with a status bit asserts the line");
	check(!eventfd_fired(fd_intx, 200), "INTx: automasked, no second signal");
	check(cfg32(PCI_COMMAND) >> 16 & PCI_STATUS_INTERRUPT,
	      "INTx: PCI_STATUS_INTERRUPT reflects the level");
	set_irqs(VFIO_PCI_INTX_IRQ_INDEX, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK, 0, 1,
		 NULL);
	check(eventfd_fired(fd_intx, 2000), "INTx: unmask with the level still high re-signals");
	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_ALL);
	set_irqs(VFIO_PCI_INTX_IRQ_INDEX, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK, 0, 1,
		 NULL);
	check(!eventfd_fired(fd_intx, 200) && !(cfg32(PCI_COMMAND) >> 16 & PCI_STATUS_INTERRUPT),
	      "INTx: after IRQ_ACK the line is low, unmask does not signal");
	set_irqs(VFIO_PCI_INTX_IRQ_INDEX, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0,
		 0, NULL);
	ok = command(T_STATS, 0, 0, &v0, &v1) == 0;
	check(ok && v1 >= 6, "fake-vgpud saw %lu doorbell events", (unsigned long)v1);
}

static void test_dma(void)
{
	struct vfio_iommu_type1_dma_map map = { .argsz = sizeof(map) };
	struct vfio_iommu_type1_dma_unmap unmap = { .argsz = sizeof(unmap) };
	const size_t bytes = 64 * 1024;
	uint32_t *buf;
	uint64_t v0 = 0;
	bool ok;

	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!check(buf != MAP_FAILED, "64 KiB of DMA memory"))
		return;
	map.vaddr = (uintptr_t)buf;
	map.iova = 0x100000;
	map.size = bytes;
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	if (!check(!ioctl(container, VFIO_IOMMU_MAP_DMA, &map), "container: 64 KiB at IOVA 1 MiB"))
		return;
	check_dma(buf, bytes, 0x100000);
	check(command(T_DMA, 0x900000, 4096, NULL, NULL) != 0,
	      "bad: DMA at an unmapped IOVA fails (no crash)");
	ok = command(T_PIN, 0x104000, 4, &v0, NULL) == 0;
	check(ok, "PIN 4 pages at IOVA 0x104000 (pin %lu)", (unsigned long)v0);
	unmap.iova = 0x100000;
	unmap.size = bytes;
	check(!ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap),
	      "container: unmap the range while pinned (module unpins in dma_unmap)");
	usleep(300000);
	ok = command(T_STATS, 0, 0, &v0, NULL) == 0;
	check(ok && v0 == 1, "fake-vgpud got PIN_RELEASED (%lu)", (unsigned long)v0);
	munmap(buf, bytes);
}

static void test_reset(void)
{
	uint32_t bad;

	check(!ioctl(device, VFIO_DEVICE_RESET), "VFIO_DEVICE_RESET (fake-vgpud re-attaches)");
	check(reg(VGPU_REG_STATUS) == VGPU_STATUS_READY, "after reset: STATUS READY");
	bad = pattern_bad_words();
	check(bad == 0, "after reset: the same mapping shows the new mailbox (%u bad)", bad);
	check(command(T_PING, 7, 0, NULL, NULL) == 0, "after reset: doorbell works");
}

/* ---- the real vgpud: device_abi.h's mailbox through the mdev transport ---- */

static uint32_t mailbox_seq = 1;

static int mailbox_call(uint16_t opcode, const void *payload, size_t size,
			struct vgpu_response *out, int irq_fd, bool *irq_seen)
{
	volatile struct vgpu_mailbox_header *h = (volatile void *)bar2;
	uint32_t head = h->req_head, tail;
	struct vgpu_request r = { .opcode = opcode, .payload_size = size, .seq = mailbox_seq++ };
	double t0 = now();

	memcpy(r.payload, payload, size);
	memcpy((void *)(bar2 + VGPU_MAILBOX_REQ_RING_OFFSET +
			(head % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE),
	       &r, sizeof(r));
	__atomic_store_n((uint32_t *)&h->req_head, head + 1, __ATOMIC_RELEASE);
	reg_write(VGPU_REG_MAILBOX_DOORBELL, 1);
	while (__atomic_load_n((uint32_t *)&h->resp_head, __ATOMIC_ACQUIRE) == h->resp_tail) {
		if (now() - t0 > 10)
			return -ETIMEDOUT;
		usleep(200);
	}
	tail = h->resp_tail;
	memcpy(out,
	       (void *)(bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
			(tail % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE),
	       sizeof(*out));
	__atomic_store_n((uint32_t *)&h->resp_tail, tail + 1, __ATOMIC_RELEASE);
	*irq_seen = eventfd_fired(irq_fd, 2000);
	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_MAILBOX);
	return out->seq == r.seq && out->opcode == opcode ? 0 : -EPROTO;
}

static uint64_t sysfs_u64(const char *uuid, const char *name)
{
	char path[256], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/vendor/%s", uuid, name);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return strtoull(buf, NULL, 0);
}

static void test_vgpud(const char *uuid)
{
	struct vgpu_hello_request hello = { .abi_version = VGPU_ABI_VERSION,
					    .guest_features =
						    VGPU_FEATURE_MSIX | VGPU_FEATURE_STATS };
	struct vgpu_alloc_request alloc = { .bytes = 8 << 20, .priority = 7 };
	struct vgpu_channel_create_request cc = { 0 };
	struct vgpu_response resp;
	struct vgpu_hello_response hr;
	struct vgpu_query_response qr;
	struct vgpu_alloc_response ar;
	struct vgpu_stats_response sr;
	struct vgpu_channel_create_response cr;
	int32_t fds[VGPU_MSIX_VECTORS];
	bool irq = false, ok;
	volatile uint32_t handle = 0;
	void *p;

	for (uint32_t i = 0; i < VFIO_PCI_NUM_REGIONS; i++) {
		struct vfio_region_info ri = { .argsz = sizeof(ri), .index = i };

		if (!ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &ri))
			region_offset[i] = ri.offset;
	}
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC && reg(VGPU_REG_STATUS) == VGPU_STATUS_READY,
	      "vgpud: BAR0 MAGIC, STATUS READY (pushed by the transport at OPEN)");
	check((reg(VGPU_REG_FEATURES) & VGPU_FEATURE_MSIX) &&
		      reg(VGPU_REG_IRQ_MASK) == VGPU_IRQ_ALL,
	      "vgpud: FEATURES %#x, IRQ_MASK %#x from the device model", reg(VGPU_REG_FEATURES),
	      reg(VGPU_REG_IRQ_MASK));
	p = mmap(NULL, VGPU_BAR2_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, device,
		 region_offset[VFIO_PCI_BAR2_REGION_INDEX]);
	if (!check(p != MAP_FAILED, "vgpud: mmap BAR2"))
		return;
	bar2 = p;
	check(((volatile struct vgpu_mailbox_header *)bar2)->entries == VGPU_MAILBOX_ENTRIES,
	      "vgpud: the mailbox (vgpud's memfd) is mapped: entries %u",
	      ((volatile struct vgpu_mailbox_header *)bar2)->entries);
	for (int i = 0; i < VGPU_MSIX_VECTORS; i++)
		fds[i] = eventfd(0, EFD_NONBLOCK);
	set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
		 0, VGPU_MSIX_VECTORS, fds);

	ok = !mailbox_call(VGPU_OP_HELLO, &hello, sizeof(hello), &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	memcpy(&hr, resp.payload, sizeof(hr));
	check(ok && hr.abi_version == VGPU_ABI_VERSION && (hr.features & VGPU_FEATURE_MSIX),
	      "vgpud: HELLO answered (features %#x, %u channels)", hr.features, hr.max_channels);
	check(irq, "vgpud: the answer raised MSI-X vector 0 (transport raise_irq)");
	ok = !mailbox_call(VGPU_OP_QUERY, NULL, 0, &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	memcpy(&qr, resp.payload, sizeof(qr));
	check(ok && qr.vram_total_bytes && qr.chunk_bytes,
	      "vgpud: QUERY: VRAM %llu MiB, share %llu MiB, chunk %llu KiB",
	      (unsigned long long)(qr.vram_total_bytes >> 20),
	      (unsigned long long)(qr.vram_share_bytes >> 20),
	      (unsigned long long)(qr.chunk_bytes >> 10));
	ok = !mailbox_call(VGPU_OP_ALLOC, &alloc, sizeof(alloc), &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	memcpy(&ar, resp.payload, sizeof(ar));
	handle = ar.handle;
	check(ok && ar.bytes == alloc.bytes, "vgpud: ALLOC 8 MiB -> handle %u at GPU VA %#llx",
	      ar.handle, (unsigned long long)ar.gpu_va);
	ok = !mailbox_call(VGPU_OP_STATS, NULL, 0, &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	memcpy(&sr, resp.payload, sizeof(sr));
	check(ok && sr.allocated_bytes == alloc.bytes, "vgpud: STATS: allocated %llu bytes",
	      (unsigned long long)sr.allocated_bytes);
	usleep(2500000); /* the transport pushes statistics once a second */
	check(sysfs_u64(uuid, "allocated") == alloc.bytes,
	      "vgpud: sysfs vendor/allocated shows it (%llu)",
	      (unsigned long long)sysfs_u64(uuid, "allocated"));
	ok = !mailbox_call(VGPU_OP_CHANNEL_CREATE, &cc, sizeof(cc), &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	memcpy(&cr, resp.payload, sizeof(cr));
	if (check(ok && cr.index < VGPU_MAX_CHANNELS,
		  "vgpud: CHANNEL_CREATE -> window %u, control at %#x, GPFIFO at %#x", cr.index,
		  cr.control_offset, cr.gpfifo_offset)) {
		volatile uint32_t *ctl =
			(volatile uint32_t *)(bar2 + VGPU_CHANNEL_WINDOW_BASE +
					      (size_t)cr.index * VGPU_CHANNEL_WINDOW_STRIDE +
					      cr.control_offset);
		volatile uint32_t before = 0;
		sigjmp_buf here;

		sigbus_seen = 0;
		sigbus_jmp = &here;
		if (!sigsetjmp(here, 1))
			before = ctl[0];
		sigbus_jmp = NULL;
		check(!sigbus_seen,
		      "vgpud: the channel's control page (HAL memory) is mapped (word 0 = %#x)",
		      before);
		struct vgpu_channel_destroy_request cd = { .index = cr.index };

		ok = !mailbox_call(VGPU_OP_CHANNEL_DESTROY, &cd, sizeof(cd), &resp, fds[0], &irq) &&
		     resp.status == VGPU_STATUS_OK;
		check(ok, "vgpud: CHANNEL_DESTROY");
	}
	struct vgpu_free_request fr = { .handle = handle };

	ok = !mailbox_call(VGPU_OP_FREE, &fr, sizeof(fr), &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	check(ok, "vgpud: FREE");
	ok = !mailbox_call(99, NULL, 0, &resp, fds[0], &irq);
	check(ok && resp.status == VGPU_STATUS_UNSUPPORTED, "vgpud: unknown opcode -> UNSUPPORTED");
	check(!ioctl(device, VFIO_DEVICE_RESET) && reg(VGPU_REG_STATUS) == VGPU_STATUS_READY,
	      "vgpud: VFIO_DEVICE_RESET (detach + attach) leaves the device READY");
	mailbox_seq = 1;
	ok = !mailbox_call(VGPU_OP_HELLO, &hello, sizeof(hello), &resp, fds[0], &irq) &&
	     resp.status == VGPU_STATUS_OK;
	check(ok, "vgpud: HELLO on the fresh VM after reset");
	munmap((void *)bar2, VGPU_BAR2_SIZE);
}

/* ---- the guest: the PCI device through sysfs ----------------------------------- */

static unsigned long sysfs_ulong(const char *dir, const char *name)
{
	char path[512], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return ~0ul;
	}
	fclose(f);
	return strtoul(buf, NULL, 0);
}

static volatile uint8_t *map_resource(const char *dir, int bar, size_t size)
{
	char path[512];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/resource%d", dir, bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		check(false, "open %s: %s", path, strerror(errno));
		exit(1);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		check(false, "mmap %s: %s", path, strerror(errno));
		exit(1);
	}
	return p;
}

/* Print the sysfs dir of the first 1af4:10f0 device; 1 if there is none. */
static int guest_find(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	char dir[512];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", e->d_name);
		if (sysfs_ulong(dir, "vendor") == VGPU_PCI_VENDOR_ID &&
		    sysfs_ulong(dir, "device") == VGPU_PCI_DEVICE_ID) {
			printf("%s\n", dir);
			closedir(d);
			return 0;
		}
	}
	if (d)
		closedir(d);
	return 1;
}

static void guest_ids(const char *dir)
{
	unsigned long long start, end, flags, size[6] = { 0 };
	char path[512], line[256];
	FILE *f;
	int i = 0;

	check(sysfs_ulong(dir, "vendor") == VGPU_PCI_VENDOR_ID &&
		      sysfs_ulong(dir, "device") == VGPU_PCI_DEVICE_ID,
	      "PCI ID %04lx:%04lx", sysfs_ulong(dir, "vendor"), sysfs_ulong(dir, "device"));
	check(sysfs_ulong(dir, "class") == VGPU_PCI_CLASS, "class %06lx",
	      sysfs_ulong(dir, "class"));
	check(sysfs_ulong(dir, "subsystem_vendor") == VGPU_PCI_SUBSYSTEM_VENDOR_ID &&
		      sysfs_ulong(dir, "subsystem_device") == VGPU_PCI_SUBSYSTEM_ID,
	      "subsystem %04lx:%04lx", sysfs_ulong(dir, "subsystem_vendor"),
	      sysfs_ulong(dir, "subsystem_device"));
	check(sysfs_ulong(dir, "revision") == VGPU_PCI_REVISION, "revision %lu",
	      sysfs_ulong(dir, "revision"));
	snprintf(path, sizeof(path), "%s/resource", dir);
	f = fopen(path, "r");
	while (f && i < 6 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) == 3 && end)
			size[i] = end - start + 1;
		i++;
	}
	if (f)
		fclose(f);
	check(size[0] == VGPU_BAR0_SIZE, "BAR0 %llu bytes", size[0]);
	check(size[2] == 0x800000, "BAR2 %llu bytes (64-bit prefetchable)", size[2]);
	check(size[4] == 0x1000, "BAR4 (MSI-X) %llu bytes", size[4]);
}

static void guest_regs(void)
{
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "BAR0 MAGIC %#x", reg(VGPU_REG_MAGIC));
	check(reg(VGPU_REG_ABI_VERSION) == VGPU_ABI_VERSION, "BAR0 ABI_VERSION %#x",
	      reg(VGPU_REG_ABI_VERSION));
	check(reg(VGPU_REG_STATUS) == VGPU_STATUS_READY, "BAR0 STATUS READY");
	check(reg(VGPU_REG_BAR2_SIZE_LO) == VGPU_BAR2_SIZE &&
		      reg(VGPU_REG_MAX_CHANNELS) == VGPU_MAX_CHANNELS &&
		      reg(VGPU_REG_CHANNEL_STRIDE) == VGPU_CHANNEL_WINDOW_STRIDE,
	      "BAR0 geometry registers");
}

static uint64_t gpa_of(void *p)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &entry, 8, ((uintptr_t)p / 4096) * 8) != 8)
		entry = 0;
	close(fd);
	if (!(entry >> 63))
		return 0;
	return (entry & ((1ull << 55) - 1)) * 4096;
}

/* DMA into a locked page of guest memory, by its guest-physical address. */
static void guest_dma(void)
{
	uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1, 0);
	uint64_t gpa;

	if (!check(page != MAP_FAILED, "a locked page of guest memory"))
		return;
	gpa = gpa_of(page);
	if (!check(gpa != 0, "guest-physical address of a locked page: %#llx",
		   (unsigned long long)gpa))
		return;
	check_dma(page, 4096, gpa);
}

/* fake-vgpud dies with window 0 blocked: the faulting write must wait for
 * the module to notice, then complete; the device says BACKEND_GONE. */
static void guest_die(void)
{
	volatile uint32_t *window = (volatile uint32_t *)(bar2 + T_WINDOW_OFFSET);
	volatile double t0;
	sigjmp_buf here;
	double waited;

	check(command(T_DIE_BLOCKED, 1500, 0, NULL, NULL) == 0,
	      "fake-vgpud will block window 0 and exit in 1.5 s");
	usleep(300000);
	sigbus_seen = 0;
	t0 = now();
	sigbus_jmp = &here;
	if (!sigsetjmp(here, 1))
		window[1] = 0x600df00d;
	sigbus_jmp = NULL;
	waited = now() - t0;
	check(!sigbus_seen && waited > 0.5,
	      "a write to the blocked window waited %.2f s for vgpud to go, then completed",
	      waited);
	check(window[1] == 0x600df00d, "the write is visible afterwards");
	check(reg(VGPU_REG_STATUS) == VGPU_STATUS_BACKEND_GONE, "STATUS is BACKEND_GONE (%#x)",
	      reg(VGPU_REG_STATUS));
	check(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_DEVICE_LOST, "IRQ_STATUS has DEVICE_LOST (%#x)",
	      reg(VGPU_REG_IRQ_STATUS));
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "registers still read sanely");
	reg_write(VGPU_REG_MAILBOX_DOORBELL, 1);
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "a doorbell with no backend is harmless");
}

static bool known_check(const char *what)
{
	static const char *const checks[] = {
		"ids", "regs", "pattern", "ping", "dma", "swap", "die"
	};

	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (!strcmp(what, checks[i]))
			return true;
	return !strncmp(what, "raise:", 6);
}

static int guest_main(int argc, char **argv)
{
	const char *what, *dir;
	char *end;

	check_prefix = "VGPU-L2-CHECK ";
	if (argc == 1 && !strcmp(argv[0], "find"))
		return guest_find();
	if (argc != 2)
		return -1;
	what = argv[0];
	dir = argv[1];
	if (!known_check(what)) {
		fprintf(stderr, "unknown check %s\n", what);
		return 2;
	}
	if (!strcmp(what, "ids")) {
		guest_ids(dir);
		return !!failed;
	}
	guest_bar0 = map_resource(dir, 0, VGPU_BAR0_SIZE);
	bar2 = map_resource(dir, 2, VGPU_BAR2_SIZE);
	if (!strcmp(what, "regs")) {
		guest_regs();
	} else if (!strcmp(what, "pattern")) {
		uint32_t bad = pattern_bad_words();

		check(bad == 0, "BAR2 pattern through resource2 (%u of %u words wrong)", bad,
		      (VGPU_MAILBOX_SIZE - T_PATTERN_OFFSET) / 4);
	} else if (!strcmp(what, "ping")) {
		check_ping(1000);
	} else if (!strncmp(what, "raise:", 6)) {
		unsigned long vec = strtoul(what + 6, &end, 0);
		unsigned long bits = *end == ':' ? strtoul(end + 1, NULL, 0) : 0;

		check(command(T_RAISE, vec, bits, NULL, NULL) == 0,
		      "fake-vgpud raised vectors %#lx with IRQ_STATUS bits %#lx", vec, bits);
	} else if (!strcmp(what, "dma")) {
		guest_dma();
	} else if (!strcmp(what, "swap")) {
		check_swap(1000, 1, &(struct writer){ .delay_us = 200, .every = 4 }, 10);
	} else if (!strcmp(what, "die")) {
		guest_die();
	} else {
		fprintf(stderr, "unknown check %s\n", what);
		return 2;
	}
	return !!failed;
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--vgpud] UUID | --guest find | --guest CHECK PCI_DEVICE_DIR\n",
		argv0);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigbus };
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGBUS, &sa, NULL);
	if (argc >= 2 && !strcmp(argv[1], "--guest")) {
		rc = guest_main(argc - 2, argv + 2);
		if (rc < 0) {
			usage(argv[0]);
			return 2;
		}
		return rc;
	}
	if (argc == 3 && !strcmp(argv[1], "--vgpud")) {
		open_device(argv[2]);
		test_vgpud(argv[2]);
		close(device);
		close(container);
		printf("mdev-client: %d passed, %d failed\n", passed, failed);
		return failed ? 1 : 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		usage(argv[0]);
		return 2;
	}
	open_device(argv[1]);
	test_info();
	test_config();
	test_bar0();
	test_bar2_map();
	test_doorbell_and_irqs();
	test_dma();
	check_swap(500, 2, &(struct writer){ .delay_us = 300, .every = 8 }, 20);
	test_reset();
	munmap((void *)bar2, VGPU_BAR2_SIZE);
	close(device);
	close(container);
	printf("mdev-client: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
