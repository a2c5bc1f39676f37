/* SPDX-License-Identifier: MIT */
/*
 * host_arena.h - pinned host memory carved out of a few large memfds.
 *
 * Evicted chunks need many host buffers (one per chunk). Giving each its own
 * memfd and mapping would cost a file descriptor and a VMA per chunk and run
 * a busy backend into RLIMIT_NOFILE or vm.max_map_count. Instead buffers up
 * to HOST_ARENA_MAX_BUFFER_BYTES are extents of an arena: one memfd of
 * HOST_ARENA_BYTES, mapped once, handed out first-fit in 4 KiB units with
 * free neighbours coalesced. Larger buffers get a memfd of their own.
 *
 * Every buffer starts zeroed: freeing an extent punches a hole in the memfd,
 * which gives the pages back to the host and makes them read as zero when
 * the range is handed out again. An arena that becomes empty is released,
 * so a GPU holding no host memory holds no descriptor for it.
 *
 * Thread-safe: one mutex per arena set.
 */
#ifndef SIMGPU_HOST_ARENA_H
#define SIMGPU_HOST_ARENA_H

#include <pthread.h>
#include <stdint.h>

#define HOST_ARENA_BYTES (UINT64_C(256) << 20)
#define HOST_ARENA_MAX_BUFFER_BYTES (UINT64_C(64) << 20)

struct host_arena;

struct host_arena_set {
	pthread_mutex_t lock;
	struct host_arena *arenas; /* under lock */
	uint32_t arena_count;      /* under lock */
};

/* Where a buffer's memory lives. arena is NULL for a buffer with its own
 * memfd (then offset is 0 and the caller owns fd and memory). */
struct host_extent {
	struct host_arena *arena;
	int fd;
	uint64_t offset;
	uint64_t bytes;
	uint8_t *memory;
};

int host_arena_set_init(struct host_arena_set *set);
/* Releases every arena; extents still out become invalid. */
void host_arena_set_destroy(struct host_arena_set *set);

/* Zeroed memory of bytes (a nonzero 4 KiB multiple). -ENOMEM. */
int host_arena_alloc(struct host_arena_set *set, uint64_t bytes, struct host_extent *out);
void host_arena_free(struct host_arena_set *set, const struct host_extent *extent);

/* Descriptors the set holds open (arenas and dedicated buffers), for tests. */
uint32_t host_arena_count(struct host_arena_set *set);

#endif /* SIMGPU_HOST_ARENA_H */
