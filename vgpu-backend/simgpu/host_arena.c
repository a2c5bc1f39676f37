// SPDX-License-Identifier: MIT
/* host_arena.c - pinned host memory carved out of large memfds (see host_arena.h). */
#include "host_arena.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgpu/memfd.h"

#define PAGE UINT64_C(4096)

struct free_range {
	uint64_t offset;
	uint64_t bytes;
};

struct host_arena {
	int memfd;
	uint8_t *memory;
	uint64_t used;
	struct free_range *free; /* sorted by offset, never adjacent */
	size_t free_count;
	size_t free_capacity;
	struct host_arena *next;
};

static int memfd_of(uint64_t bytes, const char *name, int *fd, uint8_t **memory)
{
	*fd = vgpu_memfd_create(name, bytes);
	if (*fd < 0)
		return *fd;
	*memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, *fd, 0);
	if (*memory == MAP_FAILED) {
		int err = -errno;

		close(*fd);
		return err;
	}
	return 0;
}

static struct host_arena *arena_create(void)
{
	struct host_arena *arena = calloc(1, sizeof(*arena));

	if (!arena)
		return NULL;
	arena->free = malloc(sizeof(*arena->free));
	if (!arena->free || memfd_of(HOST_ARENA_BYTES, "simgpu-host-arena", &arena->memfd,
	                             &arena->memory)) {
		free(arena->free);
		free(arena);
		return NULL;
	}
	arena->free[0] = (struct free_range){ .offset = 0, .bytes = HOST_ARENA_BYTES };
	arena->free_count = 1;
	arena->free_capacity = 1;
	return arena;
}

static void arena_destroy(struct host_arena *arena)
{
	munmap(arena->memory, HOST_ARENA_BYTES);
	close(arena->memfd);
	free(arena->free);
	free(arena);
}

/* First fit. Returns the offset or UINT64_MAX. */
static uint64_t arena_take(struct host_arena *arena, uint64_t bytes)
{
	for (size_t i = 0; i < arena->free_count; i++) {
		struct free_range *range = &arena->free[i];
		uint64_t offset = range->offset;

		if (range->bytes < bytes)
			continue;
		range->offset += bytes;
		range->bytes -= bytes;
		if (range->bytes == 0) {
			memmove(range, range + 1, (arena->free_count - i - 1) * sizeof(*range));
			arena->free_count--;
		}
		arena->used += bytes;
		return offset;
	}
	return UINT64_MAX;
}

/* Give [offset, offset + bytes) back, merging with free neighbours. Only
 * fails (-ENOMEM) when the range must become a new entry and the array
 * cannot grow; then nothing changed. */
static int arena_give(struct host_arena *arena, uint64_t offset, uint64_t bytes)
{
	size_t low = 0, high = arena->free_count;

	while (low < high) { /* first range after offset */
		size_t middle = (low + high) / 2;

		if (arena->free[middle].offset < offset)
			low = middle + 1;
		else
			high = middle;
	}
	bool joins_previous = low > 0 &&
	                      arena->free[low - 1].offset + arena->free[low - 1].bytes == offset;
	bool joins_next = low < arena->free_count && offset + bytes == arena->free[low].offset;

	if (joins_previous && joins_next) {
		arena->free[low - 1].bytes += bytes + arena->free[low].bytes;
		memmove(&arena->free[low], &arena->free[low + 1],
		        (arena->free_count - low - 1) * sizeof(*arena->free));
		arena->free_count--;
	} else if (joins_previous) {
		arena->free[low - 1].bytes += bytes;
	} else if (joins_next) {
		arena->free[low].offset = offset;
		arena->free[low].bytes += bytes;
	} else {
		if (arena->free_count == arena->free_capacity) {
			size_t capacity = arena->free_capacity * 2;
			struct free_range *grown = realloc(arena->free, capacity * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			arena->free = grown;
			arena->free_capacity = capacity;
		}
		memmove(&arena->free[low + 1], &arena->free[low],
		        (arena->free_count - low) * sizeof(*arena->free));
		arena->free[low] = (struct free_range){ .offset = offset, .bytes = bytes };
		arena->free_count++;
	}
	arena->used -= bytes;
	return 0;
}

int host_arena_set_init(struct host_arena_set *set)
{
	memset(set, 0, sizeof(*set));
	return -pthread_mutex_init(&set->lock, NULL);
}

void host_arena_set_destroy(struct host_arena_set *set)
{
	while (set->arenas) {
		struct host_arena *arena = set->arenas;

		set->arenas = arena->next;
		arena_destroy(arena);
	}
	pthread_mutex_destroy(&set->lock);
}

int host_arena_alloc(struct host_arena_set *set, uint64_t bytes, struct host_extent *out)
{
	struct host_arena *arena;
	uint64_t offset = UINT64_MAX;

	if (bytes == 0 || bytes % PAGE)
		return -EINVAL;
	if (bytes > HOST_ARENA_MAX_BUFFER_BYTES) {
		*out = (struct host_extent){ .arena = NULL, .offset = 0, .bytes = bytes };
		return memfd_of(bytes, "simgpu-host-buffer", &out->fd, &out->memory);
	}
	pthread_mutex_lock(&set->lock);
	for (arena = set->arenas; arena; arena = arena->next) {
		offset = arena_take(arena, bytes);
		if (offset != UINT64_MAX)
			break;
	}
	if (!arena) {
		arena = arena_create();
		if (!arena) {
			pthread_mutex_unlock(&set->lock);
			return -ENOMEM;
		}
		arena->next = set->arenas;
		set->arenas = arena;
		set->arena_count++;
		offset = arena_take(arena, bytes);
	}
	pthread_mutex_unlock(&set->lock);
	*out = (struct host_extent){
		.arena = arena,
		.fd = arena->memfd,
		.offset = offset,
		.bytes = bytes,
		.memory = arena->memory + offset,
	};
	return 0;
}

void host_arena_free(struct host_arena_set *set, const struct host_extent *extent)
{
	struct host_arena *arena = extent->arena;

	if (!arena) {
		munmap(extent->memory, extent->bytes);
		close(extent->fd);
		return;
	}
	/* Back to the host, and zero for the next owner. */
	if (fallocate(arena->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	              (off_t)extent->offset, (off_t)extent->bytes) < 0)
		memset(extent->memory, 0, extent->bytes);
	pthread_mutex_lock(&set->lock);
	/* If the range cannot be recorded (out of memory) it stays out of use:
	 * a leak of zeroed pages, never a double allocation. */
	if (arena_give(arena, extent->offset, extent->bytes) == 0 && arena->used == 0) {
		struct host_arena **link = &set->arenas;

		while (*link != arena)
			link = &(*link)->next;
		*link = arena->next;
		set->arena_count--;
		arena_destroy(arena);
	}
	pthread_mutex_unlock(&set->lock);
}

uint32_t host_arena_count(struct host_arena_set *set)
{
	uint32_t count;

	pthread_mutex_lock(&set->lock);
	count = set->arena_count;
	pthread_mutex_unlock(&set->lock);
	return count;
}
