// SPDX-License-Identifier: MIT
/* local_socket.c - one protocol message per datagram, see local_socket.h. */
#include "local_socket.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/scm_rights.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	return left > 0 ? (int)left : 0;
}

static int wait_for(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	for (;;) {
		int n = poll(&pfd, 1, remaining_ms(deadline));

		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int vgpu_local_wait_readable(int fd, int timeout_ms)
{
	return wait_for(fd, POLLIN, timeout_ms);
}

int vgpu_local_send(int sock, uint32_t type, uint32_t seq, uint32_t flags, const void *payload,
                    uint32_t size, const int *fds, unsigned nfds, int timeout_ms)
{
	struct vgpu_local_header header = { .type = type, .size = size, .seq = seq, .flags = flags };
	struct iovec iov[2] = {
		{ .iov_base = &header, .iov_len = sizeof(header) },
		{ .iov_base = (void *)payload, .iov_len = size },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int) * VGPU_LOCAL_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	if (nfds > VGPU_LOCAL_MAX_FDS || sizeof(header) + size > VGPU_LOCAL_MSG_MAX)
		return -EINVAL;
	vgpu_scm_rights_attach(&msg, control.buf, sizeof(control), fds, nfds);
	for (;;) {
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int ret;

		if (n >= 0)
			return (size_t)n == sizeof(header) + size ? 0 : -EPROTO;
		if (errno == EINTR)
			continue;
		if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
			return -EPIPE;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = wait_for(sock, POLLOUT, remaining_ms(deadline));
		if (ret < 0)
			return ret;
		if (ret == 0)
			return -ETIMEDOUT;
	}
}

void vgpu_local_msg_close_fds(struct vgpu_local_msg *msg)
{
	unsigned i;

	for (i = 0; i < msg->nfds; i++)
		if (msg->fds[i] >= 0)
			close(msg->fds[i]);
	msg->nfds = 0;
}

int vgpu_local_recv(int sock, struct vgpu_local_msg *msg, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * (VGPU_LOCAL_MAX_FDS + 1))];
		struct cmsghdr align;
	} control;
	uint8_t datagram[VGPU_LOCAL_MSG_MAX];
	struct iovec iov = { .iov_base = datagram, .iov_len = sizeof(datagram) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n;
	int err;

	memset(msg, 0, sizeof(*msg));
	for (;;) {
		int ready = wait_for(sock, POLLIN, timeout_ms);

		if (ready < 0)
			return ready;
		if (ready == 0)
			return -ETIMEDOUT;
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n >= 0)
			break;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			continue;
		if (errno == ECONNRESET || errno == ENOTCONN)
			return -EPIPE;
		return -errno;
	}
	err = vgpu_scm_rights_take(&mh, msg->fds, VGPU_LOCAL_MAX_FDS, &msg->nfds);
	if (n == 0) {
		vgpu_local_msg_close_fds(msg);
		return -EPIPE;
	}
	if (err || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    (size_t)n < sizeof(msg->header)) {
		vgpu_local_msg_close_fds(msg);
		return -EPROTO;
	}
	memcpy(&msg->header, datagram, sizeof(msg->header));
	if (msg->header.size != (size_t)n - sizeof(msg->header)) {
		vgpu_local_msg_close_fds(msg);
		return -EPROTO;
	}
	memcpy(msg->payload.bytes, datagram + sizeof(msg->header), msg->header.size);
	return 0;
}

int vgpu_local_msg_expect(const struct vgpu_local_msg *msg, uint32_t type, bool reply,
                          uint32_t payload_size, unsigned nfds)
{
	if (msg->header.type != type || msg->header.size != payload_size ||
	    msg->header.flags != (reply ? VGPU_LOCAL_FLAG_REPLY : 0u) || msg->nfds != nfds)
		return -EPROTO;
	return 0;
}

const char *vgpu_local_msg_name(uint32_t type)
{
	switch (type) {
	case VGPU_LOCAL_ATTACH: return "ATTACH";
	case VGPU_LOCAL_REG_READ: return "REG_READ";
	case VGPU_LOCAL_REG_WRITE: return "REG_WRITE";
	case VGPU_LOCAL_DETACH: return "DETACH";
	case VGPU_LOCAL_IMPORT: return "IMPORT";
	case VGPU_LOCAL_EXPORT: return "EXPORT";
	case VGPU_LOCAL_MAP_REGION: return "MAP_REGION";
	case VGPU_LOCAL_UNMAP_REGION: return "UNMAP_REGION";
	case VGPU_LOCAL_WINDOW_BLOCK: return "WINDOW_BLOCK";
	case VGPU_LOCAL_WINDOW_MAP: return "WINDOW_MAP";
	default: return "unknown";
	}
}
