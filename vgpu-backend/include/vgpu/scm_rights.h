/* SPDX-License-Identifier: MIT */
/*
 * scm_rights.h - putting descriptors into a sendmsg() and taking them out of
 * a recvmsg() as one SCM_RIGHTS control message. Shared by the host side's
 * socket protocols (the local transport's local_socket.c, cudagpu's
 * worker_wire.c); each keeps its own framing, timeouts and errors.
 * No state, no locks: callable from any thread.
 */
#ifndef VGPU_SCM_RIGHTS_H
#define VGPU_SCM_RIGHTS_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * Attach fds[0..nfds) to mh as one SCM_RIGHTS message built in control,
 * which must be cmsghdr-aligned and hold CMSG_SPACE(sizeof(int) * nfds)
 * bytes (control_bytes, checked by the caller's limit on nfds). With nfds 0
 * mh is left without control data.
 */
static inline void vgpu_scm_rights_attach(struct msghdr *mh, void *control, size_t control_bytes,
                                          const int *fds, unsigned nfds)
{
	struct cmsghdr *cmsg;

	if (!nfds)
		return;
	memset(control, 0, control_bytes);
	mh->msg_control = control;
	mh->msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cmsg = CMSG_FIRSTHDR(mh);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
}

/*
 * Move every descriptor that arrived with mh into fds, counting them in
 * *nfds (not reset: the caller starts it), and close those beyond max_fds.
 * 0, or -EPROTO when a descriptor had to be closed for lack of room or a
 * control message other than SCM_RIGHTS came (skipped); either way every
 * descriptor received is either in fds or closed.
 */
static inline int vgpu_scm_rights_take(struct msghdr *mh, int *fds, unsigned max_fds,
                                       unsigned *nfds)
{
	struct cmsghdr *cmsg;
	int err = 0;

	for (cmsg = CMSG_FIRSTHDR(mh); cmsg; cmsg = CMSG_NXTHDR(mh, cmsg)) {
		size_t count, i;

		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
			err = -EPROTO;
			continue;
		}
		count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < count; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			if (*nfds < max_fds) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				err = -EPROTO;
			}
		}
	}
	return err;
}

#endif /* VGPU_SCM_RIGHTS_H */
