// SPDX-License-Identifier: MIT
/* host_memory.c - pinned host buffers (see host_memory.h). */
#include "host_memory.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int host_buf_create(struct vgpu_hal *hal, uint64_t bytes, struct simgpu_host_buf **out)
{
	struct simgpu_host_buf *buf;

	if (bytes == 0 || bytes % 4096 || bytes > (UINT64_C(1) << 46))
		return -EINVAL;
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->memfd = memfd_create("simgpu-host-buffer", MFD_CLOEXEC);
	if (buf->memfd < 0 || ftruncate(buf->memfd, (off_t)bytes) < 0) {
		if (buf->memfd >= 0)
			close(buf->memfd);
		free(buf);
		return -ENOMEM;
	}
	buf->memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, buf->memfd, 0);
	if (buf->memory == MAP_FAILED) {
		close(buf->memfd);
		free(buf);
		return -ENOMEM;
	}
	buf->base.hal = hal;
	buf->base.bytes = bytes;
	*out = buf;
	return 0;
}

void host_buf_destroy(struct simgpu_host_buf *buf)
{
	if (!buf)
		return;
	munmap(buf->memory, buf->base.bytes);
	close(buf->memfd);
	free(buf);
}
