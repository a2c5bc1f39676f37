// SPDX-License-Identifier: MIT
/*
 * vgpu-mdev-guest - runs inside the L2 guest (static, busybox initramfs) and
 * checks the vGPU from the guest's side through sysfs: PCI identity and
 * BARs, BAR0 registers (trapped), BAR2 through a mapping of resource2
 * (KVM maps it straight to the module's pages), doorbell round trips with
 * fake-vgpud, DMA into guest memory, the shadow swap under guest writes,
 * and vgpud dying while a window is blocked.
 *
 * Usage: vgpu-mdev-guest find
 *        vgpu-mdev-guest CHECK PCI_DEVICE_DIR     CHECK: ids regs pattern ping
 *                                                  raise:VEC:BITS dma swap die
 * Prints "VGPU-L2-CHECK ok: ..." / "VGPU-L2-CHECK FAIL: ..." lines; exits 1 if
 * any check failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/abi/device_abi.h>

#define TEST_CHECK_PREFIX "VGPU-L2-CHECK "
#include "test_check.h"
#include "test_protocol.h"

static volatile uint8_t *bar0, *bar2;
static sigjmp_buf sigbus_jmp;
static volatile sig_atomic_t sigbus_seen;



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

static uint32_t reg(unsigned int off)
{
	return *(volatile uint32_t *)(bar0 + off);
}

static void reg_write(unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(bar0 + off) = v;
}

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
			printf("  command %u: no answer in 20 s\n", cmd);
			return ETIMEDOUT;
		}
		usleep(200);
	}
	if (value0)
		*value0 = *(volatile uint64_t *)(m + T_VALUE0);
	if (value1)
		*value1 = *(volatile uint64_t *)(m + T_VALUE1);
	if (*(volatile uint32_t *)(m + T_RESULT))
		printf("  fake-vgpud: %s\n", (const char *)(m + T_MESSAGE));
	return *(volatile uint32_t *)(m + T_RESULT);
}

static int find(void)
{
	struct dirent *e;
	DIR *d = opendir("/sys/bus/pci/devices");
	char dir[512];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", e->d_name);
		if (sysfs_ulong(dir, "vendor") == VGPU_PCI_VENDOR_ID &&
		    sysfs_ulong(dir, "device") == VGPU_PCI_DEVICE_ID) {
			printf("%s\n", dir);
			return 0;
		}
	}
	return 1;
}

static void check_ids(const char *dir)
{
	char path[512], line[256];
	unsigned long long start, end, flags, size[6] = { 0 };
	FILE *f;
	int i = 0;

	check(sysfs_ulong(dir, "vendor") == VGPU_PCI_VENDOR_ID &&
		      sysfs_ulong(dir, "device") == VGPU_PCI_DEVICE_ID,
	      "PCI ID %04lx:%04lx", sysfs_ulong(dir, "vendor"), sysfs_ulong(dir, "device"));
	check(sysfs_ulong(dir, "class") == VGPU_PCI_CLASS, "class %06lx", sysfs_ulong(dir, "class"));
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

static void check_regs(void)
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

static void check_pattern(void)
{
	uint32_t bad = 0;

	for (uint32_t w = T_PATTERN_OFFSET / 4; w < VGPU_MAILBOX_SIZE / 4; w++)
		bad += ((volatile uint32_t *)bar2)[w] != t_pattern(w);
	check(bad == 0, "BAR2 pattern through resource2 (%u of %u words wrong)", bad,
	      (VGPU_MAILBOX_SIZE - T_PATTERN_OFFSET) / 4);
}

static void check_ping(void)
{
	uint64_t v = 0;
	double t0 = now();

	bool ok;

	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_ALL);
	ok = command(T_PING, 1000, 0, &v, NULL) == 0 && v == 1001;
	check(ok, "doorbell round trip with fake-vgpud (%.1f ms)", (now() - t0) * 1000);
	check(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX, "IRQ_STATUS shows MAILBOX");
	reg_write(VGPU_REG_IRQ_ACK, VGPU_IRQ_MAILBOX);
	check(!(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_MAILBOX), "IRQ_ACK cleared it");
}

static uint64_t gpa_of(void *p)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	pread(fd, &entry, 8, ((uintptr_t)p / 4096) * 8);
	close(fd);
	if (!(entry >> 63))
		return 0;
	return (entry & ((1ull << 55) - 1)) * 4096;
}

static void check_dma(void)
{
	uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1, 0);
	uint64_t gpa, good = 0;
	uint32_t bad = 0;

	for (uint32_t w = 0; w < 1024; w++)
		page[w] = t_dma_pattern(w);
	gpa = gpa_of(page);
	if (!check(gpa != 0, "guest-physical address of a locked page: %#llx",
		   (unsigned long long)gpa))
		return;
	bool ok = command(T_DMA, gpa, 4096, &good, NULL) == 0;

	check(ok && good == 1024,
	      "fake-vgpud read our page by DMA (%lu words right), pinned it, wrote back",
	      (unsigned long)good);
	for (uint32_t w = 0; w < 1024; w++)
		bad += page[w] != ~t_dma_pattern(w);
	check(bad == 0, "its DMA write is in our memory (%u words wrong)", bad);
}

static void on_sigbus(int sig)
{
	sigbus_seen = 1;
	siglongjmp(sigbus_jmp, 1);
}

static void check_swap(void)
{
	volatile uint32_t *window = (volatile uint32_t *)(bar2 + T_WINDOW_OFFSET);
	const uint32_t words = T_SWAP_BYTES / 4;
	volatile uint32_t bad = ~0u;
	uint64_t swaps = 0, first_bad = 0;
	volatile double t0;
	bool ok;

	for (uint32_t i = 0; i < words; i++)
		window[i] = 0;
	if (!check(command(T_SWAP_START, 1000, 0, NULL, NULL) == 0,
		   "fake-vgpud swaps window 0 (control + GPFIFO) every 1 ms"))
		return;
	signal(SIGBUS, on_sigbus);
	t0 = now();
	if (!sigsetjmp(sigbus_jmp, 1)) {
		for (uint32_t i = 0; i < words; i++) {
			window[i] = i + 1;
			if (!(i % 4))
				usleep(200);
		}
	}
	check(!sigbus_seen, "%u guest writes in %.2f s while the window swapped, no SIGBUS",
	      words, now() - t0);
	ok = command(T_SWAP_STOP, words, 0, &swaps, &first_bad) == 0;
	check(ok && first_bad == ~0ull && swaps >= 10,
	      "after %lu shadow round trips the real pages hold every guest write",
	      (unsigned long)swaps);
	for (uint32_t i = 0; i < words; i++)
		if (window[i] != i + 1) {
			bad = i;
			break;
		}
	check(bad == ~0u, "the guest's view agrees (first wrong word %d)", (int)bad);
}

static void check_die(void)
{
	volatile uint32_t *window = (volatile uint32_t *)(bar2 + T_WINDOW_OFFSET);
	volatile double t0;
	double waited;

	check(command(T_DIE_BLOCKED, 1500, 0, NULL, NULL) == 0,
	      "fake-vgpud will block window 0 and exit in 1.5 s");
	usleep(300000);
	signal(SIGBUS, on_sigbus);
	sigbus_seen = 0;
	t0 = now();
	if (!sigsetjmp(sigbus_jmp, 1))
		window[1] = 0x600df00d;
	waited = now() - t0;
	check(!sigbus_seen && waited > 0.5,
	      "a write to the blocked window waited %.2f s for vgpud to go, then completed", waited);
	check(window[1] == 0x600df00d, "the write is visible afterwards");
	check(reg(VGPU_REG_STATUS) == VGPU_STATUS_BACKEND_GONE,
	      "STATUS is BACKEND_GONE (%#x)", reg(VGPU_REG_STATUS));
	check(reg(VGPU_REG_IRQ_STATUS) & VGPU_IRQ_DEVICE_LOST,
	      "IRQ_STATUS has DEVICE_LOST (%#x)",
	      reg(VGPU_REG_IRQ_STATUS));
	check(reg(VGPU_REG_MAGIC) == VGPU_MAGIC, "registers still read sanely");
	reg_write(VGPU_REG_MAILBOX_DOORBELL, 1);
	check(true, "a doorbell with no backend is harmless");
}

int main(int argc, char **argv)
{
	const char *dir;
	char *what;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "find"))
		return find();
	if (argc != 3) {
		fprintf(stderr, "usage: %s find | CHECK PCI_DEVICE_DIR\n", argv[0]);
		return 2;
	}
	what = argv[1];
	dir = argv[2];
	if (!strcmp(what, "ids")) {
		check_ids(dir);
		return !!failed;
	}
	bar0 = map_resource(dir, 0, VGPU_BAR0_SIZE);
	bar2 = map_resource(dir, 2, VGPU_BAR2_SIZE);
	if (!strcmp(what, "regs"))
		check_regs();
	else if (!strcmp(what, "pattern"))
		check_pattern();
	else if (!strcmp(what, "ping"))
		check_ping();
	else if (!strncmp(what, "raise:", 6)) {
		unsigned long vec = strtoul(what + 6, &what, 0);
		unsigned long bits = strtoul(what + 1, NULL, 0);

		check(command(T_RAISE, vec, bits, NULL, NULL) == 0,
		      "fake-vgpud raised vectors %#lx with IRQ_STATUS bits %#lx", vec, bits);
	} else if (!strcmp(what, "dma"))
		check_dma();
	else if (!strcmp(what, "swap"))
		check_swap();
	else if (!strcmp(what, "die"))
		check_die();
	else {
		fprintf(stderr, "unknown check %s\n", what);
		return 2;
	}
	return !!failed;
}
