// SPDX-License-Identifier: MIT
/* host_memory.c - pinned host buffers (see host_memory.h). */
#include "host_memory.h"

#include <errno.h>
#include <stdlib.h>

int host_buf_create(struct vgpu_hal *hal, struct host_arena_set *arenas, uint64_t bytes,
                    struct simgpu_host_buf **out)
{
	struct simgpu_host_buf *buf;
	int ret;

	if (bytes == 0 || bytes % 4096 || bytes > (UINT64_C(1) << 46))
		return -EINVAL;
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	ret = host_arena_alloc(arenas, bytes, &buf->extent);
	if (ret) {
		free(buf);
		return ret == -EINVAL ? ret : -ENOMEM;
	}
	buf->memory = buf->extent.memory;
	buf->base.hal = hal;
	buf->base.bytes = bytes;
	*out = buf;
	return 0;
}

void host_buf_destroy(struct host_arena_set *arenas, struct simgpu_host_buf *buf)
{
	if (!buf)
		return;
	host_arena_free(arenas, &buf->extent);
	free(buf);
}
