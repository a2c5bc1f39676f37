// SPDX-License-Identifier: MIT
/*
 * local_agent.c - the frontend's agent thread: services vgpud's requests on
 * the backend channel (vgpu/abi/local_protocol.h). It maps BAR2 regions as they
 * become live and performs the window swaps of the shadow channel protocol:
 *
 *   WINDOW_BLOCK  mark the window blocked (faults now wait, window_trap.h),
 *                 mprotect(PROT_NONE), ack: once mprotect returned no store
 *                 to the old pages is in flight any more.
 *   WINDOW_MAP    mmap(MAP_FIXED) the given pages over the window, unblock
 *                 (waiting accesses retry against the new pages), ack.
 *
 * A descriptor that could not back its range for good (not a memfd, too
 * short, or one that can still be truncated: no F_SEAL_SHRINK, which
 * vgpud's all have, vgpu/memfd.h) is refused (-EBADFD): a later access
 * there would be SIGBUS. QEMU's vgpu-pci checks the same.
 *
 * If vgpud goes away mid-swap, blocked windows are backed by zero pages and
 * released, so no thread of the process waits forever. A device opened with
 * never_ack_window_swaps (hostile-tenant tests) ignores both swap requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "local_device_internal.h"
#include "local_socket.h"
#include "window_trap.h"

#define PAGE_MASK ((uint64_t)VGPU_PAGE_SIZE - 1)

struct blocked_range {
	uint64_t offset, bytes; /* bytes == 0: not blocked */
};

static bool range_ok(uint64_t offset, uint64_t bytes, uint64_t lo, uint64_t hi)
{
	return !(offset & PAGE_MASK) && bytes && !(bytes & PAGE_MASK) && offset >= lo &&
	       offset <= hi && bytes <= hi - offset;
}

static uint64_t window_start(uint32_t index)
{
	return VGPU_CHANNEL_WINDOW_BASE + (uint64_t)index * VGPU_CHANNEL_WINDOW_STRIDE;
}

/*
 * Replace the pages behind part of BAR2 (always MAP_FIXED inside our own
 * reservation). Through the system call, not the libc wrapper: a race
 * detector that intercepts mmap() models it as a write by this thread to
 * the whole range, and would then report every later guest access as a
 * race, because what orders them (the mailbox response or the swap
 * protocol's wait) travels through shared memory it does not see.
 */
static int remap(void *address, uint64_t bytes, int flags, int fd, uint64_t offset)
{
	void *p = (void *)syscall(SYS_mmap, address, (size_t)bytes, PROT_READ | PROT_WRITE,
	                          flags | MAP_FIXED, fd, (off_t)offset);

	return p == MAP_FAILED ? -errno : 0;
}

static int map_zero(struct vgpu_local_device *dev, uint64_t offset, uint64_t bytes)
{
	return remap(dev->bar2 + offset, bytes, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

/* May fd's [fd_offset, +bytes) back BAR2 for good? (see the top) */
static bool fd_fit(int fd, uint64_t fd_offset, uint64_t bytes)
{
	struct statfs fs;
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0 || fstatfs(fd, &fs) < 0 || !S_ISREG(st.st_mode) ||
	    fs.f_type != TMPFS_MAGIC || st.st_size < 0 || fd_offset > (uint64_t)st.st_size ||
	    bytes > (uint64_t)st.st_size - fd_offset)
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_SHRINK) && !(seals & F_SEAL_WRITE);
}

static int map_fd(struct vgpu_local_device *dev, uint64_t offset, uint64_t bytes, int fd,
                  uint64_t fd_offset)
{
	if (fd_offset & PAGE_MASK)
		return -EINVAL;
	if (!fd_fit(fd, fd_offset, bytes))
		return -EBADFD;
	return remap(dev->bar2 + offset, bytes, MAP_SHARED, fd, fd_offset);
}

static int handle_map_region(struct vgpu_local_device *dev, struct vgpu_local_msg *msg)
{
	const struct vgpu_local_region *r = &msg->payload.region;

	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_MAP_REGION, false, sizeof(*r), 1))
		return -EPROTO;
	if (!range_ok(r->bar2_offset, r->bytes, 0, VGPU_BAR2_SIZE))
		return -EINVAL;
	return map_fd(dev, r->bar2_offset, r->bytes, msg->fds[0], r->fd_offset);
}

static int handle_unmap_region(struct vgpu_local_device *dev, struct vgpu_local_msg *msg)
{
	const struct vgpu_local_region *r = &msg->payload.region;

	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_UNMAP_REGION, false, sizeof(*r), 0))
		return -EPROTO;
	if (!range_ok(r->bar2_offset, r->bytes, VGPU_CHANNEL_WINDOW_BASE, VGPU_BAR2_SIZE))
		return -EINVAL;
	return map_zero(dev, r->bar2_offset, r->bytes);
}

static int handle_block(struct vgpu_local_device *dev, struct vgpu_local_msg *msg,
                        struct blocked_range *blocked)
{
	const struct vgpu_local_window_block *b = &msg->payload.block;
	uint64_t lo;

	if (vgpu_local_msg_expect(msg, VGPU_LOCAL_WINDOW_BLOCK, false, sizeof(*b), 0) ||
	    b->reserved)
		return -EPROTO;
	if (b->index >= VGPU_MAX_CHANNELS)
		return -EINVAL;
	lo = window_start(b->index);
	if (!range_ok(b->bar2_offset, b->bytes, lo, lo + VGPU_CHANNEL_WINDOW_STRIDE))
		return -EINVAL;
	if (blocked[b->index].bytes)
		return -EALREADY;
	if (vgpu_window_trap_ensure_handler())
		return -EFAULT; /* cannot make accesses wait: refuse the block */
	/* Mark first: a thread that faults from here on waits. */
	vgpu_window_trap_block(dev->trap_slot, b->index);
	if (mprotect(dev->bar2 + b->bar2_offset, b->bytes, PROT_NONE) < 0) {
		int err = -errno;

		vgpu_window_trap_unblock(dev->trap_slot, b->index);
		return err;
	}
	blocked[b->index].offset = b->bar2_offset;
	blocked[b->index].bytes = b->bytes;
	return 0;
}

static int handle_window_map(struct vgpu_local_device *dev, struct vgpu_local_msg *msg,
                             struct blocked_range *blocked)
{
	const struct vgpu_local_window_map *m = &msg->payload.window_map;
	uint64_t lo;
	uint32_t i;
	int err = 0;

	if (msg->header.type != VGPU_LOCAL_WINDOW_MAP || msg->header.size != sizeof(*m) ||
	    msg->header.flags || m->reserved || m->segments < 1 ||
	    m->segments > VGPU_LOCAL_WINDOW_SEGMENTS_MAX || msg->nfds != m->segments)
		return -EPROTO;
	if (m->index >= VGPU_MAX_CHANNELS)
		return -EINVAL;
	lo = window_start(m->index);
	for (i = 0; i < m->segments; i++) {
		if (!range_ok(m->segment[i].bar2_offset, m->segment[i].bytes, lo,
		              lo + VGPU_CHANNEL_WINDOW_STRIDE))
			return -EINVAL;
	}
	for (i = 0; i < m->segments && !err; i++)
		err = map_fd(dev, m->segment[i].bar2_offset, m->segment[i].bytes, msg->fds[i],
		             m->segment[i].fd_offset);
	if (err && blocked[m->index].bytes) {
		/* Never leave a guest thread waiting on pages that will not come. */
		map_zero(dev, blocked[m->index].offset, blocked[m->index].bytes);
	}
	blocked[m->index].bytes = 0;
	dev->swaps++;
	vgpu_window_trap_unblock(dev->trap_slot, m->index);
	return err;
}

/* vgpud is gone: release every blocked window onto zero pages. */
static void release_blocked(struct vgpu_local_device *dev, struct blocked_range *blocked)
{
	unsigned i;

	for (i = 0; i < VGPU_MAX_CHANNELS; i++) {
		if (!blocked[i].bytes)
			continue;
		map_zero(dev, blocked[i].offset, blocked[i].bytes);
		blocked[i].bytes = 0;
		vgpu_window_trap_unblock(dev->trap_slot, i);
	}
}

static void *agent_main(void *arg)
{
	struct vgpu_local_device *dev = arg;
	struct blocked_range blocked[VGPU_MAX_CHANNELS];

	memset(blocked, 0, sizeof(blocked));
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = dev->backend_sock, .events = POLLIN },
			{ .fd = dev->agent_stop_fd, .events = POLLIN },
		};
		struct vgpu_local_msg msg;
		struct vgpu_local_status ack = { 0 };
		int ret;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (!pfd[0].revents)
			continue;
		ret = vgpu_local_recv(dev->backend_sock, &msg, 0);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret < 0) {
			/* End of file or garbage from vgpud: the device is gone. */
			atomic_store(&dev->gone, true);
			break;
		}
		if (dev->never_ack_window_swaps && (msg.header.type == VGPU_LOCAL_WINDOW_BLOCK ||
		                                    msg.header.type == VGPU_LOCAL_WINDOW_MAP)) {
			vgpu_local_msg_close_fds(&msg); /* hostile: no ack, ever */
			continue;
		}
		switch (msg.header.type) {
		case VGPU_LOCAL_MAP_REGION:
			ret = handle_map_region(dev, &msg);
			break;
		case VGPU_LOCAL_UNMAP_REGION:
			ret = handle_unmap_region(dev, &msg);
			break;
		case VGPU_LOCAL_WINDOW_BLOCK:
			ret = handle_block(dev, &msg, blocked);
			break;
		case VGPU_LOCAL_WINDOW_MAP:
			ret = handle_window_map(dev, &msg, blocked);
			break;
		default:
			ret = -EPROTO;
			break;
		}
		vgpu_local_msg_close_fds(&msg);
		ack.status = ret;
		if (vgpu_local_send(dev->backend_sock, msg.header.type, msg.header.seq,
		                    VGPU_LOCAL_FLAG_REPLY, &ack, sizeof(ack), NULL, 0, 10000) < 0) {
			atomic_store(&dev->gone, true);
			break;
		}
	}
	release_blocked(dev, blocked);
	return NULL;
}

int vgpu_local_agent_start(struct vgpu_local_device *dev)
{
	int err;

	dev->agent_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->agent_stop_fd < 0)
		return -errno;
	err = pthread_create(&dev->agent, NULL, agent_main, dev);
	if (err)
		return -err;
	dev->agent_started = true;
	return 0;
}

void vgpu_local_agent_stop(struct vgpu_local_device *dev)
{
	uint64_t one = 1;

	if (dev->agent_started) {
		/* Adding 1 to a fresh eventfd cannot fail. */
		(void)!write(dev->agent_stop_fd, &one, sizeof(one));
		pthread_join(dev->agent, NULL);
		dev->agent_started = false;
	}
	if (dev->agent_stop_fd >= 0)
		close(dev->agent_stop_fd);
	dev->agent_stop_fd = -1;
}
