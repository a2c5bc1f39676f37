/* SPDX-License-Identifier: MIT */
/*
 * vram.h - allocator of VRAM frames.
 *
 * Hands out 4 KiB frames and 64 KiB-aligned 64 KiB pages from a range of GPU
 * physical addresses. State: a bitmap of used 4 KiB frames, the free-frame
 * count of every 64 KiB block, and two block bitmaps (entirely free, partly
 * free) so searches skip 64 blocks per word. A block's 16 frame bits lie in
 * one bitmap word, so taking or freeing a block's frames is a mask operation
 * on that word, not 16 bit operations. 4 KiB requests fill partly used
 * blocks first to keep whole blocks free for 64 KiB pages. Allocation is all
 * or nothing and deterministic (lowest addresses first). Thread-safe.
 */
#ifndef SIMGPU_VRAM_H
#define SIMGPU_VRAM_H

#include <pthread.h>
#include <stdint.h>

#define VRAM_FRAME_BYTES 4096u
#define VRAM_BLOCK_BYTES 65536u
#define VRAM_FRAMES_PER_BLOCK 16u
/* A block's bits in frame_used, shifted down: blocks never straddle a word. */
#define VRAM_BLOCK_MASK ((UINT64_C(1) << VRAM_FRAMES_PER_BLOCK) - 1)
_Static_assert(64 % VRAM_FRAMES_PER_BLOCK == 0, "a block's frame bits share one word");

struct vram_allocator {
	pthread_mutex_t lock;
	uint64_t base;            /* GPU physical address of the first frame */
	uint64_t blocks;          /* 64 KiB blocks managed */
	uint64_t *frame_used;     /* one bit per 4 KiB frame */
	uint64_t *block_empty;    /* block has 16 free frames */
	uint64_t *block_partial;  /* block has 1..15 free frames */
	uint64_t *block_large;    /* block is allocated as one 64 KiB page */
	uint8_t *block_free;      /* free frames per block */
	uint64_t free_frames;
	uint64_t empty_blocks;
};

/* Manage [base, base + bytes); both multiples of 64 KiB. */
int vram_allocator_init(struct vram_allocator *allocator, uint64_t base, uint64_t bytes);
void vram_allocator_destroy(struct vram_allocator *allocator);

/* count pages of page_size (4 KiB or 64 KiB) into addresses; -ENOMEM (nothing
 * taken) when they do not all fit, -EINVAL for a bad size or count 0. */
int vram_allocator_alloc(struct vram_allocator *allocator, uint32_t page_size, uint64_t count,
                         uint64_t *addresses);

/* Return pages. Addresses that were not allocated with this page size are
 * skipped (and counted in the return value); returns 0 when all were valid. */
int vram_allocator_free(struct vram_allocator *allocator, uint32_t page_size, uint64_t count,
                        const uint64_t *addresses);

uint64_t vram_allocator_free_bytes(struct vram_allocator *allocator);

#endif /* SIMGPU_VRAM_H */
