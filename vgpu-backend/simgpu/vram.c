// SPDX-License-Identifier: MIT
/* vram.c - allocator of VRAM frames (see vram.h). */
#include "vram.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static inline bool bit_test(const uint64_t *bitmap, uint64_t bit)
{
	return (bitmap[bit / 64] >> (bit % 64)) & 1u;
}

static inline void bit_set(uint64_t *bitmap, uint64_t bit)
{
	bitmap[bit / 64] |= 1ull << (bit % 64);
}

static inline void bit_clear(uint64_t *bitmap, uint64_t bit)
{
	bitmap[bit / 64] &= ~(1ull << (bit % 64));
}

/* First set bit at or after start, or limit when none. */
static uint64_t bitmap_find_next(const uint64_t *bitmap, uint64_t limit, uint64_t start)
{
	uint64_t word_index = start / 64;
	uint64_t word;

	if (start >= limit)
		return limit;
	word = bitmap[word_index] & (~0ull << (start % 64));
	for (;;) {
		if (word) {
			uint64_t bit = word_index * 64 + (uint64_t)__builtin_ctzll(word);

			return bit < limit ? bit : limit;
		}
		word_index++;
		if (word_index * 64 >= limit)
			return limit;
		word = bitmap[word_index];
	}
}

/* Update the block bitmaps after block_free[block] changed. */
static void block_classify(struct vram_allocator *allocator, uint64_t block)
{
	uint8_t free_frames = allocator->block_free[block];

	bit_clear(allocator->block_empty, block);
	bit_clear(allocator->block_partial, block);
	if (free_frames == VRAM_FRAMES_PER_BLOCK)
		bit_set(allocator->block_empty, block);
	else if (free_frames > 0)
		bit_set(allocator->block_partial, block);
}

int vram_allocator_init(struct vram_allocator *allocator, uint64_t base, uint64_t bytes)
{
	uint64_t block_words, frame_words, block;

	if (bytes == 0 || bytes % VRAM_BLOCK_BYTES || base % VRAM_BLOCK_BYTES)
		return -EINVAL;
	allocator->base = base;
	allocator->blocks = bytes / VRAM_BLOCK_BYTES;
	block_words = (allocator->blocks + 63) / 64;
	frame_words = (allocator->blocks * VRAM_FRAMES_PER_BLOCK + 63) / 64;
	allocator->frame_used = calloc(frame_words, sizeof(uint64_t));
	allocator->block_empty = calloc(block_words, sizeof(uint64_t));
	allocator->block_partial = calloc(block_words, sizeof(uint64_t));
	allocator->block_large = calloc(block_words, sizeof(uint64_t));
	allocator->block_free = malloc(allocator->blocks);
	if (!allocator->frame_used || !allocator->block_empty || !allocator->block_partial ||
	    !allocator->block_large || !allocator->block_free) {
		vram_allocator_destroy(allocator);
		return -ENOMEM;
	}
	for (block = 0; block < allocator->blocks; block++) {
		allocator->block_free[block] = VRAM_FRAMES_PER_BLOCK;
		bit_set(allocator->block_empty, block);
	}
	allocator->free_frames = allocator->blocks * VRAM_FRAMES_PER_BLOCK;
	allocator->empty_blocks = allocator->blocks;
	pthread_mutex_init(&allocator->lock, NULL);
	return 0;
}

void vram_allocator_destroy(struct vram_allocator *allocator)
{
	if (allocator->block_free)
		pthread_mutex_destroy(&allocator->lock);
	free(allocator->frame_used);
	free(allocator->block_empty);
	free(allocator->block_partial);
	free(allocator->block_large);
	free(allocator->block_free);
	allocator->frame_used = NULL;
	allocator->block_empty = NULL;
	allocator->block_partial = NULL;
	allocator->block_large = NULL;
	allocator->block_free = NULL;
}

/* The 16 frame_used bits of block, as the low bits of a mask. A block's bits
 * never straddle a bitmap word (16 divides 64). */
static inline uint64_t block_used_mask(const struct vram_allocator *allocator, uint64_t block)
{
	uint64_t frame = block * VRAM_FRAMES_PER_BLOCK;

	return (allocator->frame_used[frame / 64] >> (frame % 64)) & VRAM_BLOCK_MASK;
}

/* Mark the frames of block in mask (low 16 bits) used or free. */
static inline void block_set_used(struct vram_allocator *allocator, uint64_t block, uint64_t mask,
                                  bool used)
{
	uint64_t frame = block * VRAM_FRAMES_PER_BLOCK;

	if (used)
		allocator->frame_used[frame / 64] |= mask << (frame % 64);
	else
		allocator->frame_used[frame / 64] &= ~(mask << (frame % 64));
}

/* Take up to wanted free frames of block (lowest first) into addresses;
 * returns how many were taken. Works on the block's 16 bits at once. */
static uint64_t take_frames(struct vram_allocator *allocator, uint64_t block, uint64_t wanted,
                            uint64_t *addresses)
{
	uint64_t first = allocator->base + block * VRAM_BLOCK_BYTES;
	uint64_t free_mask = ~block_used_mask(allocator, block) & VRAM_BLOCK_MASK;
	uint64_t taken_mask = 0, taken = 0;

	if (allocator->block_free[block] == VRAM_FRAMES_PER_BLOCK)
		allocator->empty_blocks--;
	if (wanted >= VRAM_FRAMES_PER_BLOCK && free_mask == VRAM_BLOCK_MASK) {
		/* the whole block: no bit to search */
		for (taken = 0; taken < VRAM_FRAMES_PER_BLOCK; taken++)
			addresses[taken] = first + taken * VRAM_FRAME_BYTES;
		taken_mask = VRAM_BLOCK_MASK;
	} else {
		while (free_mask && taken < wanted) {
			unsigned i = (unsigned)__builtin_ctzll(free_mask);

			free_mask &= free_mask - 1;
			taken_mask |= UINT64_C(1) << i;
			addresses[taken++] = first + (uint64_t)i * VRAM_FRAME_BYTES;
		}
	}
	block_set_used(allocator, block, taken_mask, true);
	allocator->block_free[block] -= (uint8_t)taken;
	allocator->free_frames -= taken;
	block_classify(allocator, block);
	return taken;
}

/* Take the empty block as one 64 KiB page. */
static void take_block(struct vram_allocator *allocator, uint64_t block)
{
	block_set_used(allocator, block, VRAM_BLOCK_MASK, true);
	allocator->block_free[block] = 0;
	allocator->free_frames -= VRAM_FRAMES_PER_BLOCK;
	allocator->empty_blocks--;
	bit_clear(allocator->block_empty, block);
	bit_set(allocator->block_large, block);
}

static void alloc_small(struct vram_allocator *allocator, uint64_t count, uint64_t *addresses)
{
	uint64_t done = 0, block = 0;

	/* partly used blocks first, then whole ones */
	while (done < count) {
		block = bitmap_find_next(allocator->block_partial, allocator->blocks, block);
		if (block == allocator->blocks)
			break;
		done += take_frames(allocator, block, count - done, addresses + done);
		block++;
	}
	block = 0;
	while (done < count) {
		block = bitmap_find_next(allocator->block_empty, allocator->blocks, block);
		/* free_frames was checked: a block must exist */
		done += take_frames(allocator, block, count - done, addresses + done);
		block++;
	}
}

int vram_allocator_alloc(struct vram_allocator *allocator, uint32_t page_size, uint64_t count,
                         uint64_t *addresses)
{
	int ret = 0;

	if (count == 0 || (page_size != VRAM_FRAME_BYTES && page_size != VRAM_BLOCK_BYTES))
		return -EINVAL;
	pthread_mutex_lock(&allocator->lock);
	if (page_size == VRAM_FRAME_BYTES) {
		if (allocator->free_frames < count)
			ret = -ENOMEM;
		else
			alloc_small(allocator, count, addresses);
	} else {
		if (allocator->empty_blocks < count) {
			ret = -ENOMEM;
		} else {
			uint64_t i, block = 0;

			for (i = 0; i < count; i++) {
				/* empty_blocks was checked: a block must exist */
				block = bitmap_find_next(allocator->block_empty, allocator->blocks,
				                         block);
				take_block(allocator, block);
				addresses[i] = allocator->base + block * VRAM_BLOCK_BYTES;
				block++;
			}
		}
	}
	pthread_mutex_unlock(&allocator->lock);
	return ret;
}

static bool free_one(struct vram_allocator *allocator, uint32_t page_size, uint64_t address)
{
	uint64_t offset, frame, block;

	if (address < allocator->base || address % page_size)
		return false;
	offset = address - allocator->base;
	block = offset / VRAM_BLOCK_BYTES;
	if (block >= allocator->blocks)
		return false;
	frame = offset / VRAM_FRAME_BYTES;
	if (page_size == VRAM_BLOCK_BYTES) {
		if (!bit_test(allocator->block_large, block))
			return false;
		bit_clear(allocator->block_large, block);
		block_set_used(allocator, block, VRAM_BLOCK_MASK, false);
		allocator->block_free[block] = VRAM_FRAMES_PER_BLOCK;
		allocator->free_frames += VRAM_FRAMES_PER_BLOCK;
	} else {
		if (bit_test(allocator->block_large, block) ||
		    !bit_test(allocator->frame_used, frame))
			return false;
		bit_clear(allocator->frame_used, frame);
		allocator->block_free[block]++;
		allocator->free_frames++;
	}
	if (allocator->block_free[block] == VRAM_FRAMES_PER_BLOCK)
		allocator->empty_blocks++;
	block_classify(allocator, block);
	return true;
}

int vram_allocator_free(struct vram_allocator *allocator, uint32_t page_size, uint64_t count,
                        const uint64_t *addresses)
{
	uint64_t i;
	int invalid = 0;

	if (page_size != VRAM_FRAME_BYTES && page_size != VRAM_BLOCK_BYTES)
		return -EINVAL;
	pthread_mutex_lock(&allocator->lock);
	for (i = 0; i < count; i++)
		if (!free_one(allocator, page_size, addresses[i]))
			invalid++;
	pthread_mutex_unlock(&allocator->lock);
	return invalid;
}

uint64_t vram_allocator_free_bytes(struct vram_allocator *allocator)
{
	uint64_t bytes;

	pthread_mutex_lock(&allocator->lock);
	bytes = allocator->free_frames * VRAM_FRAME_BYTES;
	pthread_mutex_unlock(&allocator->lock);
	return bytes;
}
