// SPDX-License-Identifier: MIT
/*
 * worker_wire.c - sending and receiving worker_protocol.h's messages with
 * their descriptors (SCM_RIGHTS).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vgpu/scm_rights.h"
#include "worker_protocol.h"

static int wait_for(int sock, short what, int timeout_ms)
{
	struct pollfd p = { .fd = sock, .events = what };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if ((p.revents & (POLLERR | POLLNVAL)) || ((p.revents & POLLHUP) && what == POLLOUT))
		return -EPIPE;
	return 0;
}

int cg_wire_send(int sock, const void *header, size_t header_bytes, const uint64_t *words,
                 uint32_t count, const int *fds, unsigned nfds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CG_WIRE_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct iovec iov[2] = {
		{ .iov_base = (void *)header, .iov_len = header_bytes },
		{ .iov_base = (void *)words, .iov_len = (size_t)count * sizeof(uint64_t) },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = count ? 2 : 1 };
	ssize_t n;
	int err;

	if (nfds > CG_WIRE_MAX_FDS || count > CG_WIRE_MAX_WORDS)
		return -EINVAL;
	vgpu_scm_rights_attach(&msg, control.buf, sizeof(control), fds, nfds);
	for (;;) {
		n = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno == ECONNRESET || errno == ENOTCONN ? -EPIPE : -errno;
		err = wait_for(sock, POLLOUT, timeout_ms);
		if (err)
			return err;
	}
}

long cg_wire_recv(int sock, void *buf, size_t bytes, int *fds, unsigned max_fds, unsigned *nfds,
                  int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CG_WIRE_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct iovec iov = { .iov_base = buf, .iov_len = bytes };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	ssize_t n;
	int err;

	*nfds = 0;
	for (;;) {
		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno == ECONNRESET ? 0 : -errno;
		err = wait_for(sock, POLLIN, timeout_ms);
		if (err)
			return err;
	}
	/* Foreign control messages are skipped, descriptors beyond max_fds closed. */
	(void)vgpu_scm_rights_take(&msg, fds, max_fds, nfds);
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		while (*nfds)
			close(fds[--*nfds]);
		return -EMSGSIZE;
	}
	return (long)n;
}
