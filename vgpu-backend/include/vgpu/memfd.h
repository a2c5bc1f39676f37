/* SPDX-License-Identifier: MIT */
/*
 * memfd.h - the memfds vgpud hands out as guest memory (BAR2 backing sent
 * with MAP_REGION, vgpu/abi/local_protocol.h): sized once and sealed
 * against shrinking, so the frontend that maps them (QEMU's vgpu-pci)
 * can check that no later truncation turns the guest's next access into
 * SIGBUS. They may still grow; nothing of vgpud shrinks one. Needs
 * _GNU_SOURCE (memfd_create).
 */
#ifndef VGPU_MEMFD_H
#define VGPU_MEMFD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* A close-on-exec memfd of bytes, F_SEAL_SHRINK set: the fd, or -errno. */
static inline int vgpu_memfd_create(const char *name, uint64_t bytes)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

#endif /* VGPU_MEMFD_H */
