// SPDX-License-Identifier: MIT
/*
 * fake-vgpud-local.c - fake-vgpud's local-socket mode (fake-vgpud --local):
 * vgpud's side of vgpu/abi/local_protocol.h, for QEMU's vgpu-pci device,
 * with descriptors no real vgpud sends. It attaches the first frontend
 * (a mailbox memfd sealed as vgpud's is), answers register reads (the
 * identity registers as vgpud, STATUS = READY, 0 elsewhere) and DETACH,
 * and once the frontend has read its identity (the end of its realize)
 * sends MAP_REGION on the backend channel with, in turn:
 *   short      a memfd sealed against shrinking, shorter than the range
 *   pipe       a pipe's write end (not shared memory)
 *   unsealed   a memfd of the right size without seals (truncatable)
 *   good       a memfd as vgpud sends it (sealed), filled with 0x5a
 * The frontend must refuse the first three (nonzero status) and map the
 * last (status 0). The unsealed one is truncated to 0 after the answer: a
 * frontend that mapped it would fault on the guest's next access there.
 * Prints one line per event ("FAKE-VGPUD: ..."), then "FAKE-VGPUD: fd
 * checks: N ok, N wrong" once all four were answered, the BAR2 offset of
 * each case ("FAKE-VGPUD: case NAME at 0x..."); serves the frontend until
 * SIGTERM/SIGINT or its end of file; exits 0 only if every answer was as
 * expected.
 *
 * Usage: fake-vgpud --local SOCKET
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/abi/device_abi.h>
#include <vgpu/abi/local_protocol.h>

#include "fake-vgpud-local.h"

#define REGION_BYTES (64u * 1024u)
#define CASES 4

static volatile sig_atomic_t local_stop;

static void local_on_signal(int sig)
{
	(void)sig;
	local_stop = 1;
}

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

/* One datagram: header + payload, with up to max_fds descriptors. */
static ssize_t recv_msg(int sock, void *buf, size_t len, int *fds, unsigned max_fds,
                        unsigned *nfds)
{
	char control[CMSG_SPACE(sizeof(int) * VGPU_LOCAL_MAX_FDS)];
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                     .msg_controllen = sizeof(control) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

	*nfds = 0;
	for (c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;
		int got[VGPU_LOCAL_MAX_FDS];

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		memcpy(got, CMSG_DATA(c), count * sizeof(int));
		for (i = 0; i < count; i++) {
			if (*nfds < max_fds)
				fds[(*nfds)++] = got[i];
			else
				close(got[i]);
		}
	}
	return n;
}

static int send_msg(int sock, uint32_t type, uint32_t seq, uint32_t flags, const void *payload,
                    uint32_t size, const int *fds, unsigned nfds)
{
	char buf[VGPU_LOCAL_MSG_MAX];
	char control[CMSG_SPACE(sizeof(int) * VGPU_LOCAL_MAX_FDS)];
	struct vgpu_local_header h = { .type = type, .size = size, .seq = seq, .flags = flags };
	struct iovec iov = { buf, sizeof(h) + size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, size);
	if (nfds) {
		struct cmsghdr *c;

		memset(control, 0, sizeof(control));
		mh.msg_control = control;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* A memfd of bytes; sealed against shrinking (and the seals sealed) or not. */
static int make_memfd(const char *name, uint64_t bytes, bool sealed, int fill)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0)
		return -1;
	if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -1;
	if (fill && bytes) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return -1;
		memset(p, fill, bytes);
		munmap(p, bytes);
	}
	return fd;
}

static int serve_register(int sock, const struct vgpu_local_header *h, const void *payload);

/* Serve one message of the main socket (false: it is gone). Sets *last
 * to the register offset a REG_READ asked for. */
static bool serve_main(int sock, uint32_t *last)
{
	char buf[VGPU_LOCAL_MSG_MAX];
	struct vgpu_local_header h;
	int fds[VGPU_LOCAL_MAX_FDS];
	unsigned nfds;
	ssize_t n = recv_msg(sock, buf, sizeof(buf), fds, VGPU_LOCAL_MAX_FDS, &nfds);

	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	if (n <= 0)
		return false;
	if (n < (ssize_t)sizeof(h))
		return true;
	memcpy(&h, buf, sizeof(h));
	if (h.type == VGPU_LOCAL_REG_READ && h.size >= 4 && last)
		memcpy(last, buf + sizeof(h), 4);
	return serve_register(sock, &h, buf + sizeof(h)) == 0;
}

struct fd_case {
	const char *name;
	bool accept; /* the frontend must map it */
	int fd;
	uint64_t offset;
};

/* Send MAP_REGION of each case on the backend channel, one at a time,
 * and check the answers. Returns the wrong ones. */
static int map_cases(int sock, int backend, struct fd_case *cases)
{
	int wrong = 0;

	for (unsigned i = 0; i < CASES; i++) {
		struct vgpu_local_region region = {
			.bar2_offset = cases[i].offset, .bytes = REGION_BYTES, .fd_offset = 0,
		};
		char buf[VGPU_LOCAL_MSG_MAX];
		struct vgpu_local_header h;
		struct vgpu_local_status status = { .status = 1 };
		unsigned nfds;
		int fds[VGPU_LOCAL_MAX_FDS];
		struct pollfd p[2] = { { backend, POLLIN, 0 }, { sock, POLLIN, 0 } };
		uint64_t waited = 0;
		ssize_t n;

		say("case %s at 0x%llx", cases[i].name, (unsigned long long)cases[i].offset);
		if (send_msg(backend, VGPU_LOCAL_MAP_REGION, 100 + i, 0, &region, sizeof(region),
		             &cases[i].fd, 1)) {
			say("MAP_REGION %s: cannot send", cases[i].name);
			return CASES;
		}
		/* the frontend's register reads go on meanwhile */
		for (;;) {
			p[0].revents = p[1].revents = 0;
			if (poll(p, 2, 100) < 0 && errno != EINTR)
				return CASES;
			if (p[0].revents)
				break;
			if (p[1].revents && !serve_main(sock, NULL)) {
				say("MAP_REGION %s: the frontend went", cases[i].name);
				return CASES;
			}
			if (!p[1].revents && (waited += 100) >= 10000) {
				say("MAP_REGION %s: no answer in 10 s", cases[i].name);
				return CASES;
			}
		}
		n = recv_msg(backend, buf, sizeof(buf), fds, VGPU_LOCAL_MAX_FDS, &nfds);
		for (unsigned f = 0; f < nfds; f++)
			close(fds[f]);
		if (n < (ssize_t)(sizeof(h) + sizeof(status))) {
			say("MAP_REGION %s: the frontend closed the backend channel", cases[i].name);
			return CASES;
		}
		memcpy(&h, buf, sizeof(h));
		memcpy(&status, buf + sizeof(h), sizeof(status));
		if (h.type != VGPU_LOCAL_MAP_REGION || !(h.flags & VGPU_LOCAL_FLAG_REPLY) ||
		    h.seq != 100 + i) {
			say("MAP_REGION %s: a wrong answer (type %u seq %u)", cases[i].name, h.type,
			    h.seq);
			return CASES;
		}
		if ((status.status == 0) != cases[i].accept) {
			wrong++;
			say("MAP_REGION %s: status %d: WRONG (expected %s)", cases[i].name,
			    status.status, cases[i].accept ? "0" : "a refusal");
		} else {
			say("MAP_REGION %s: status %d: as expected", cases[i].name, status.status);
		}
	}
	return wrong;
}

static int serve_register(int sock, const struct vgpu_local_header *h, const void *payload)
{
	struct vgpu_local_reg reg;

	if (h->type == VGPU_LOCAL_REG_WRITE)
		return 0;
	if (h->type == VGPU_LOCAL_DETACH) {
		struct vgpu_local_status st = { 0 };

		say("DETACH");
		return send_msg(sock, h->type, h->seq, VGPU_LOCAL_FLAG_REPLY, &st, sizeof(st), NULL,
		                0);
	}
	if (h->type != VGPU_LOCAL_REG_READ || h->size != sizeof(reg))
		return 0;
	memcpy(&reg, payload, sizeof(reg));
	switch (reg.offset) {
	case VGPU_REG_MAGIC: reg.value = VGPU_MAGIC; break;
	case VGPU_REG_ABI_VERSION: reg.value = VGPU_ABI_VERSION; break;
	case VGPU_REG_STATUS: reg.value = VGPU_STATUS_READY; break;
	case VGPU_REG_BAR2_SIZE_LO: reg.value = (uint32_t)VGPU_BAR2_SIZE; break;
	case VGPU_REG_BAR2_SIZE_HI: reg.value = (uint32_t)((uint64_t)VGPU_BAR2_SIZE >> 32); break;
	case VGPU_REG_MAX_CHANNELS: reg.value = VGPU_MAX_CHANNELS; break;
	case VGPU_REG_CHANNEL_STRIDE: reg.value = VGPU_CHANNEL_WINDOW_STRIDE; break;
	default: reg.value = 0; break;
	}
	return send_msg(sock, h->type, h->seq, VGPU_LOCAL_FLAG_REPLY, &reg, sizeof(reg), NULL, 0);
}

int fake_vgpud_local_main(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct sigaction sa = { .sa_handler = local_on_signal };
	struct fd_case cases[CASES] = {
		{ "short", false, -1, 0 },
		{ "pipe", false, -1, 0 },
		{ "unsealed", false, -1, 0 },
		{ "good", true, -1, 0 },
	};
	char buf[VGPU_LOCAL_MSG_MAX];
	struct vgpu_local_header h;
	struct vgpu_local_attach_reply reply;
	int lsock, sock, backend = -1, fds[VGPU_LOCAL_MAX_FDS], pipe_fds[2], mailbox, wrong;
	unsigned nfds, i;
	ssize_t n;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "fake-vgpud: socket path too long\n");
		return 2;
	}
	strcpy(addr.sun_path, path);
	unlink(path);
	lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(lsock, 4) < 0) {
		perror("fake-vgpud: local socket");
		return 1;
	}
	say("listening on %s", path);
	sock = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	if (sock < 0) {
		perror("fake-vgpud: accept");
		return 1;
	}
	n = recv_msg(sock, buf, sizeof(buf), fds, VGPU_LOCAL_MAX_FDS, &nfds);
	memcpy(&h, buf, sizeof(h));
	if (n < (ssize_t)sizeof(h) || h.type != VGPU_LOCAL_ATTACH || nfds != 5) {
		say("no ATTACH (type %u, %u fds)", n >= (ssize_t)sizeof(h) ? h.type : 0, nfds);
		return 1;
	}
	backend = fds[0];
	for (i = 1; i < nfds; i++)
		close(fds[i]);
	mailbox = make_memfd("fake-vgpud-mailbox", VGPU_MAILBOX_SIZE, true, 0);
	memset(&reply, 0, sizeof(reply));
	reply.protocol_version = VGPU_LOCAL_PROTOCOL_VERSION;
	reply.bar2_size = VGPU_BAR2_SIZE;
	reply.mailbox_offset = VGPU_MAILBOX_OFFSET;
	reply.mailbox_size = VGPU_MAILBOX_SIZE;
	reply.vm_id = 1;
	if (mailbox < 0 || send_msg(sock, VGPU_LOCAL_ATTACH, h.seq, VGPU_LOCAL_FLAG_REPLY, &reply,
	                            sizeof(reply), &mailbox, 1)) {
		say("cannot answer ATTACH");
		return 1;
	}
	say("ATTACH answered");
	/* the frontend reads its identity, the last register being the
	 * channel stride; then its realize ends */
	for (uint32_t last = UINT32_MAX; last != VGPU_REG_CHANNEL_STRIDE;) {
		struct pollfd p = { sock, POLLIN, 0 };

		if (poll(&p, 1, 10000) != 1 || !serve_main(sock, &last)) {
			say("the frontend did not read its identity");
			return 1;
		}
	}
	say("identity read");

	/* the cases, at the first channel windows' offsets */
	cases[0].fd = make_memfd("fake-vgpud-short", REGION_BYTES / 2, true, 0x5a);
	if (pipe2(pipe_fds, O_CLOEXEC) == 0) {
		cases[1].fd = pipe_fds[1];
		close(pipe_fds[0]);
	}
	cases[2].fd = make_memfd("fake-vgpud-unsealed", REGION_BYTES, false, 0x5a);
	cases[3].fd = make_memfd("fake-vgpud-good", REGION_BYTES, true, 0x5a);
	for (i = 0; i < CASES; i++) {
		cases[i].offset = VGPU_CHANNEL_WINDOW_BASE + (uint64_t)i * VGPU_CHANNEL_WINDOW_STRIDE;
		if (cases[i].fd < 0) {
			say("cannot make the %s descriptor", cases[i].name);
			return 1;
		}
	}
	wrong = map_cases(sock, backend, cases);
	/* what a frontend mapped unsealed now faults on the next access */
	if (ftruncate(cases[2].fd, 0) < 0)
		say("cannot truncate the unsealed memfd: %s", strerror(errno));
	say("fd checks: %d ok, %d wrong", CASES - (wrong > CASES ? CASES : wrong),
	    wrong > CASES ? CASES : wrong);

	/* serve the frontend until told to stop or it goes */
	while (!local_stop) {
		struct pollfd p[2] = { { sock, POLLIN, 0 }, { backend, POLLIN, 0 } };

		if (poll(p, 2, 200) < 0 && errno != EINTR)
			break;
		if (p[1].revents & (POLLHUP | POLLERR))
			break;
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (!serve_main(sock, NULL))
			break;
	}
	say("done");
	return wrong ? 1 : 0;
}
