// SPDX-License-Identifier: MIT
/*
 * test_simgpu_vram.c - white-box tests of simgpu's VRAM frame allocator
 * (vgpu-backend/simgpu/vram.h): exact addresses for whole 64 KiB blocks
 * taken and freed with one mask operation, blocks that share a bitmap word
 * with blocks in other states, mixed 4 KiB / 64 KiB fragmentation,
 * all-or-nothing on -ENOMEM, invalid frees, and a randomised run against a
 * reference model that works one frame at a time. And vgpu_hal_vram_scrub:
 * every page reads as zero afterwards, pages with host memory keep it (the
 * next write does not fault) unless config.vram_scrub_release, pages without
 * stay without.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "simgpu_device.h"
#include "simgpu_test.h"
#include "vram.h"

#define KIB (UINT64_C(1) << 10)
#define FRAME VRAM_FRAME_BYTES
#define BLOCK VRAM_BLOCK_BYTES
/* A base that is not 0, so addresses are checked relative to it. */
#define BASE (UINT64_C(1) << 30)

static void init(struct vram_allocator *allocator, uint64_t blocks)
{
	assert_int_equal(vram_allocator_init(allocator, BASE, blocks * BLOCK), 0);
	assert_int_equal(vram_allocator_free_bytes(allocator), blocks * BLOCK);
}

static uint64_t frame_address(uint64_t block, uint64_t frame)
{
	return BASE + block * BLOCK + frame * FRAME;
}

/* 4 KiB requests that cover whole empty blocks get every frame of them, in
 * order; a 64 KiB page then goes to the next empty block. */
static void test_vram_whole_blocks_of_small_frames(void **state)
{
	struct vram_allocator allocator;
	uint64_t small[3 * VRAM_FRAMES_PER_BLOCK + 4], large[2];
	uint64_t i;

	(void)state;
	init(&allocator, 8);
	/* 3 whole blocks and 4 frames of a fourth */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 3 * 16 + 4, small), 0);
	for (i = 0; i < 3 * 16 + 4; i++)
		assert_int_equal(small[i], frame_address(i / 16, i % 16));
	assert_int_equal(vram_allocator_free_bytes(&allocator), 8 * BLOCK - (3 * 16 + 4) * FRAME);
	/* 64 KiB pages skip the partly used block 3 */
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 2, large), 0);
	assert_int_equal(large[0], frame_address(4, 0));
	assert_int_equal(large[1], frame_address(5, 0));
	/* the whole block 0 back (16 frame frees), then as one 64 KiB page */
	assert_int_equal(vram_allocator_free(&allocator, FRAME, 16, small), 0);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 1, large), 0);
	assert_int_equal(large[0], frame_address(0, 0));
	/* the frames of a 64 KiB page are not 4 KiB pages */
	assert_int_equal(vram_allocator_free(&allocator, FRAME, 1, large), 1);
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 1, large), 0);
	/* a block allocated as 16 frames is not a 64 KiB page */
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 1, small + 16), 1);
	/* double free and out-of-range addresses are counted, not applied */
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 1, large), 1);
	{
		uint64_t bad[4] = { BASE - BLOCK, BASE + 8 * BLOCK, frame_address(1, 1) + 1,
		                    frame_address(7, 3) };

		assert_int_equal(vram_allocator_free(&allocator, FRAME, 4, bad), 4);
		assert_int_equal(vram_allocator_free(&allocator, BLOCK, 4, bad), 4);
	}
	vram_allocator_destroy(&allocator);
}

/* Blocks 0..3 share one 64-bit word of frame_used: taking or freeing one
 * of them must leave the others' bits alone. */
static void test_vram_blocks_sharing_a_word(void **state)
{
	struct vram_allocator allocator;
	uint64_t first[5], large[2], fill[20], more[24];
	uint64_t i;

	(void)state;
	init(&allocator, 8);
	/* block 0: frames 0..4 used */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 5, first), 0);
	/* blocks 1 and 2: 64 KiB pages (the same word as block 0) */
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 2, large), 0);
	assert_int_equal(large[0], frame_address(1, 0));
	assert_int_equal(large[1], frame_address(2, 0));
	/* 20 frames: the 11 left in block 0 first, then 9 of block 3 */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 20, fill), 0);
	for (i = 0; i < 11; i++)
		assert_int_equal(fill[i], frame_address(0, 5 + i));
	for (i = 0; i < 9; i++)
		assert_int_equal(fill[11 + i], frame_address(3, i));
	/* free frames 2 and 9 of block 0 and the 64 KiB page of block 1 */
	{
		uint64_t holes[2] = { frame_address(0, 2), frame_address(0, 9) };

		assert_int_equal(vram_allocator_free(&allocator, FRAME, 2, holes), 0);
	}
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 1, large), 0);
	assert_int_equal(vram_allocator_free_bytes(&allocator),
	                 8 * BLOCK - (16 - 2 + 16 + 9) * FRAME);
	/* partly used blocks first, lowest frames first: 0:2, 0:9, 3:9..15;
	 * then the lowest empty block: 1:0..14 */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 24, more), 0);
	assert_int_equal(more[0], frame_address(0, 2));
	assert_int_equal(more[1], frame_address(0, 9));
	for (i = 0; i < 7; i++)
		assert_int_equal(more[2 + i], frame_address(3, 9 + i));
	for (i = 0; i < 15; i++)
		assert_int_equal(more[9 + i], frame_address(1, i));
	/* block 2 is still a 64 KiB page, untouched by all of that */
	assert_int_equal(vram_allocator_free(&allocator, FRAME, 1, large + 1), 1);
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 1, large + 1), 0);
	/* block 1 is the only partly used block: its frame 15 comes first */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 1, more), 0);
	assert_int_equal(more[0], frame_address(1, 15));
	vram_allocator_destroy(&allocator);
}

/* Every block keeps one used frame: 15 * 8 frames are free, but no 64 KiB
 * page. Failed requests take nothing. */
static void test_vram_fragmented_all_or_nothing(void **state)
{
	struct vram_allocator allocator;
	uint64_t all[8 * VRAM_FRAMES_PER_BLOCK], got[8 * VRAM_FRAMES_PER_BLOCK], large[8];
	uint64_t i, block;

	(void)state;
	init(&allocator, 8);
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 128, all), 0);
	assert_int_equal(vram_allocator_free_bytes(&allocator), 0);
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 1, got), -ENOMEM);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 1, large), -ENOMEM);
	/* free all but frame (block % 16) of every block */
	for (block = 0; block < 8; block++)
		for (i = 0; i < 16; i++)
			if (i != block)
				assert_int_equal(vram_allocator_free(&allocator, FRAME, 1,
				                                     &all[block * 16 + i]),
				                 0);
	assert_int_equal(vram_allocator_free_bytes(&allocator), 8 * 15 * FRAME);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 1, large), -ENOMEM);
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 8 * 15 + 1, got), -ENOMEM);
	assert_int_equal(vram_allocator_free_bytes(&allocator), 8 * 15 * FRAME);

	/* the frame of block 5 goes: block 5 is empty again, one 64 KiB page
	 * fits, two do not */
	assert_int_equal(vram_allocator_free(&allocator, FRAME, 1, &all[5 * 16 + 5]), 0);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 2, large), -ENOMEM);
	assert_int_equal(vram_allocator_free_bytes(&allocator), (8 * 15 + 1) * FRAME);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 1, large), 0);
	assert_int_equal(large[0], frame_address(5, 0));

	/* 105 frames take every free frame, block by block, skipping the used
	 * one; the 64 KiB page's block is skipped entirely */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 7 * 15, got), 0);
	i = 0;
	for (block = 0; block < 8; block++) {
		uint64_t frame;

		if (block == 5)
			continue;
		for (frame = 0; frame < 16; frame++)
			if (frame != block)
				assert_int_equal(got[i++], frame_address(block, frame));
	}
	assert_int_equal(vram_allocator_free_bytes(&allocator), 0);
	vram_allocator_destroy(&allocator);
}

/* -ENOMEM for 64 KiB pages when some but not all fit: nothing taken, so the
 * same request minus one then gets the lowest blocks. Also argument errors. */
static void test_vram_large_all_or_nothing(void **state)
{
	struct vram_allocator allocator;
	uint64_t small[1], large[70];
	uint64_t i;

	(void)state;
	init(&allocator, 70); /* more than one word of block bitmaps */
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 1, small), 0);
	assert_int_equal(small[0], frame_address(0, 0));
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 70, large), -ENOMEM);
	assert_int_equal(vram_allocator_free_bytes(&allocator), 70 * BLOCK - FRAME);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 69, large), 0);
	for (i = 0; i < 69; i++)
		assert_int_equal(large[i], frame_address(1 + i, 0));
	assert_int_equal(vram_allocator_free_bytes(&allocator), 15 * FRAME);
	assert_int_equal(vram_allocator_alloc(&allocator, FRAME, 16, large), -ENOMEM);
	assert_int_equal(vram_allocator_alloc(&allocator, 8192, 1, large), -EINVAL);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 0, large), -EINVAL);
	assert_int_equal(vram_allocator_free(&allocator, 8192, 1, large), -EINVAL);
	assert_int_equal(vram_allocator_free(&allocator, BLOCK, 69, large), 0);
	assert_int_equal(vram_allocator_free(&allocator, FRAME, 1, small), 0);
	assert_int_equal(vram_allocator_free_bytes(&allocator), 70 * BLOCK);
	assert_int_equal(vram_allocator_alloc(&allocator, BLOCK, 70, large), 0);
	assert_int_equal(large[69], frame_address(69, 0));
	vram_allocator_destroy(&allocator);

	assert_int_equal(vram_allocator_init(&allocator, BASE, BLOCK + FRAME), -EINVAL);
	assert_int_equal(vram_allocator_init(&allocator, BASE + FRAME, BLOCK), -EINVAL);
	assert_int_equal(vram_allocator_init(&allocator, BASE, 0), -EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Randomised, against a model that works frame by frame                   */

#define MODEL_BLOCKS 200
#define MODEL_FRAMES (MODEL_BLOCKS * VRAM_FRAMES_PER_BLOCK)

struct model {
	bool used[MODEL_FRAMES];
};

static unsigned model_block_free(const struct model *m, uint64_t block)
{
	unsigned i, n = 0;

	for (i = 0; i < VRAM_FRAMES_PER_BLOCK; i++)
		n += !m->used[block * VRAM_FRAMES_PER_BLOCK + i];
	return n;
}

/* The documented policy, one frame at a time: 4 KiB frames from partly
 * used blocks first (lowest block, lowest frame), then from empty blocks;
 * 64 KiB pages in the lowest empty blocks. All or nothing. */
static int model_alloc(struct model *m, uint32_t page_size, uint64_t count, uint64_t *out)
{
	uint64_t block, done = 0, free_frames = 0, empty = 0;
	unsigned pass, i;

	for (block = 0; block < MODEL_BLOCKS; block++) {
		unsigned n = model_block_free(m, block);

		free_frames += n;
		empty += n == VRAM_FRAMES_PER_BLOCK;
	}
	if (page_size == BLOCK) {
		if (empty < count)
			return -ENOMEM;
		for (block = 0; done < count; block++) {
			if (model_block_free(m, block) != VRAM_FRAMES_PER_BLOCK)
				continue;
			for (i = 0; i < VRAM_FRAMES_PER_BLOCK; i++)
				m->used[block * VRAM_FRAMES_PER_BLOCK + i] = true;
			out[done++] = frame_address(block, 0);
		}
		return 0;
	}
	if (free_frames < count)
		return -ENOMEM;
	for (pass = 0; pass < 2; pass++) {
		for (block = 0; block < MODEL_BLOCKS && done < count; block++) {
			unsigned n = model_block_free(m, block);

			if (pass == 0 ? (n == 0 || n == VRAM_FRAMES_PER_BLOCK) :
			                n != VRAM_FRAMES_PER_BLOCK)
				continue;
			for (i = 0; i < VRAM_FRAMES_PER_BLOCK && done < count; i++) {
				uint64_t frame = block * VRAM_FRAMES_PER_BLOCK + i;

				if (m->used[frame])
					continue;
				m->used[frame] = true;
				out[done++] = frame_address(block, i);
			}
		}
	}
	return 0;
}

static void model_free(struct model *m, uint32_t page_size, uint64_t count,
                       const uint64_t *addresses)
{
	uint64_t k, i;

	for (k = 0; k < count; k++) {
		uint64_t frame = (addresses[k] - BASE) / FRAME;

		if (page_size == BLOCK) {
			for (i = 0; i < VRAM_FRAMES_PER_BLOCK; i++)
				m->used[frame + i] = false;
		} else {
			m->used[frame] = false;
		}
	}
}

struct allocation {
	uint32_t page_size;
	uint64_t count;
	uint64_t *addresses;
};

static uint64_t next_random(uint64_t *state)
{
	/* xorshift64* */
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * UINT64_C(2685821657736338717);
}

static void test_vram_random_against_model(void **state)
{
	enum { LIVE = 64, STEPS = 10000 };
	uint64_t seed = test_seed("test_vram_random_against_model") | 1;
	struct model *m = calloc(1, sizeof(*m));
	struct allocation live[LIVE] = { 0 };
	uint64_t *expected = malloc(MODEL_FRAMES * sizeof(uint64_t));
	struct vram_allocator allocator;
	unsigned step, failures = 0, successes = 0;

	(void)state;
	assert_non_null(m);
	assert_non_null(expected);
	init(&allocator, MODEL_BLOCKS);
	for (step = 0; step < STEPS; step++) {
		unsigned slot = (unsigned)(next_random(&seed) % LIVE);
		struct allocation *a = &live[slot];

		if (a->addresses) {
			/* free it, in a random order of its pages half the time */
			if (next_random(&seed) & 1) {
				uint64_t i;

				for (i = a->count; i > 1; i--) {
					uint64_t j = next_random(&seed) % i, t = a->addresses[i - 1];

					a->addresses[i - 1] = a->addresses[j];
					a->addresses[j] = t;
				}
			}
			assert_int_equal(vram_allocator_free(&allocator, a->page_size, a->count,
			                                     a->addresses),
			                 0);
			model_free(m, a->page_size, a->count, a->addresses);
			free(a->addresses);
			a->addresses = NULL;
		} else {
			uint32_t page_size = (next_random(&seed) % 3) ? FRAME : BLOCK;
			/* mostly small, sometimes whole blocks, sometimes large */
			uint64_t r = next_random(&seed) % 8;
			uint64_t count = r < 4 ? 1 + next_random(&seed) % 20 :
			                 r < 7 ? VRAM_FRAMES_PER_BLOCK * (1 + next_random(&seed) % 4) :
			                         1 + next_random(&seed) % (MODEL_FRAMES / 8);
			int want, got;

			if (page_size == BLOCK)
				count = 1 + count % 40;
			a->addresses = malloc(count * sizeof(uint64_t));
			assert_non_null(a->addresses);
			want = model_alloc(m, page_size, count, expected);
			got = vram_allocator_alloc(&allocator, page_size, count, a->addresses);
			assert_int_equal(got, want);
			if (got) {
				failures++;
				free(a->addresses);
				a->addresses = NULL;
			} else {
				successes++;
				assert_memory_equal(a->addresses, expected, count * sizeof(uint64_t));
				a->page_size = page_size;
				a->count = count;
			}
		}
		{
			uint64_t block, free_frames = 0;

			for (block = 0; block < MODEL_BLOCKS; block++)
				free_frames += model_block_free(m, block);
			assert_int_equal(vram_allocator_free_bytes(&allocator), free_frames * FRAME);
		}
	}
	/* both outcomes were exercised */
	assert_true(failures > 0);
	assert_true(successes > 0);
	for (unsigned slot = 0; slot < LIVE; slot++) {
		if (!live[slot].addresses)
			continue;
		assert_int_equal(vram_allocator_free(&allocator, live[slot].page_size,
		                                     live[slot].count, live[slot].addresses),
		                 0);
		free(live[slot].addresses);
	}
	assert_int_equal(vram_allocator_free_bytes(&allocator), MODEL_BLOCKS * BLOCK);
	vram_allocator_destroy(&allocator);
	free(expected);
	free(m);
}

/* ------------------------------------------------------------------------ */
/* Scrubbing                                                                */

#define MIB (UINT64_C(1) << 20)

/* The host view of GPU physical address (white-box). */
static uint8_t *vram_host(struct test_gpu *gpu, uint64_t address)
{
	return to_simgpu(gpu->hal)->vram + address;
}

/* Whether the host page behind a VRAM frame has memory. */
static bool frame_resident(struct test_gpu *gpu, uint64_t address)
{
	unsigned char vec = 0;

	assert_int_equal(mincore(vram_host(gpu, address), VRAM_FRAME_BYTES, &vec), 0);
	return vec & 1;
}

static bool frame_is_zero(struct test_gpu *gpu, uint64_t address)
{
	const uint8_t *p = vram_host(gpu, address);
	uint64_t i;

	for (i = 0; i < VRAM_FRAME_BYTES; i++)
		if (p[i])
			return false;
	return true;
}

/* What a frame held before a scrub. */
enum frame_state { UNTOUCHED, READ_ONLY, DATA, DATA_LAST_BYTE, ZEROED };

static void prepare_frame(struct test_gpu *gpu, uint64_t address, enum frame_state state)
{
	uint8_t *p = vram_host(gpu, address);
	volatile uint8_t sink;

	switch (state) {
	case UNTOUCHED:
		break;
	case READ_ONLY:
		sink = p[100];
		(void)sink;
		break;
	case DATA:
		memset(p, 0xa5, VRAM_FRAME_BYTES);
		break;
	case DATA_LAST_BYTE: /* only the page's last byte: nothing stops early */
		p[VRAM_FRAME_BYTES - 1] = 1;
		break;
	case ZEROED: /* has memory, already zero */
		memset(p, 0xa5, VRAM_FRAME_BYTES);
		memset(p, 0, VRAM_FRAME_BYTES);
		break;
	}
}

static bool page_size_supported(void)
{
	return sysconf(_SC_PAGESIZE) == VRAM_FRAME_BYTES;
}

/*
 * 6 MiB of 64 KiB pages scrubbed in one call: one physically contiguous run
 * longer than the 4 MiB mincore window, frames in every state mixed within
 * one window and across its boundary. Afterwards every frame reads zero;
 * frames that had memory still have it (in place), untouched ones still
 * have none.
 */
static void check_scrub_states(bool release)
{
	static const enum frame_state pattern[] = {
		DATA, UNTOUCHED, DATA_LAST_BYTE, DATA, READ_ONLY, ZEROED, UNTOUCHED, UNTOUCHED, DATA,
	};
	struct simgpu_config config;
	struct test_gpu *gpu;
	uint64_t count = 6 * MIB / BLOCK, frames = 6 * MIB / FRAME, i;
	uint64_t *pages = calloc(count, sizeof(uint64_t));
	enum frame_state *state = calloc(frames, sizeof(*state));

	assert_non_null(pages);
	assert_non_null(state);
	test_config(&config);
	config.vram_scrub_release = release;
	gpu = test_gpu_create(&config);
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_64K, count, pages), 0);
	for (i = 1; i < count; i++)
		assert_int_equal(pages[i], pages[0] + i * BLOCK); /* one run */
	for (i = 0; i < frames; i++) {
		state[i] = pattern[(i * 7 + i / 13) % (sizeof(pattern) / sizeof(pattern[0]))];
		/* data on both sides of the 4 MiB window boundary */
		if (i == 4 * MIB / FRAME - 1 || i == 4 * MIB / FRAME)
			state[i] = DATA;
		prepare_frame(gpu, pages[0] + i * FRAME, state[i]);
	}
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_64K, count, pages), 0);
	for (i = 0; i < frames; i++) {
		uint64_t address = pages[0] + i * FRAME;

		/* residency first: reading maps the shared zero page */
		if (release) {
			assert_false(frame_resident(gpu, address));
		} else if (state[i] == DATA || state[i] == DATA_LAST_BYTE || state[i] == ZEROED) {
			assert_true(frame_resident(gpu, address));
		} else if (state[i] == UNTOUCHED) {
			assert_false(frame_resident(gpu, address));
		}
		assert_true(frame_is_zero(gpu, address));
	}
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_64K, count, pages);
	test_gpu_destroy(gpu);
	free(state);
	free(pages);
}

static void test_scrub_zeroes_in_place(void **state)
{
	(void)state;
	if (!page_size_supported())
		skip();
	check_scrub_states(false);
}

static void test_scrub_release(void **state)
{
	(void)state;
	if (!page_size_supported())
		skip();
	check_scrub_states(true);
}

/* 4 KiB pages out of order and with gaps (many runs); frames not in the
 * list keep their data. Argument errors change nothing. */
static void test_scrub_small_pages_and_gaps(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	uint64_t frames[64], list[32], bad;
	unsigned i, n = 0;

	(void)state;
	assert_int_equal(vgpu_hal_vram_alloc(gpu->hal, VGPU_PAGE_4K, 64, frames), 0);
	for (i = 0; i < 64; i++)
		memset(vram_host(gpu, frames[i]), (int)(i + 1), VRAM_FRAME_BYTES);
	/* every frame i with i % 4 != 1, backwards, up to 32 of them */
	for (i = 64; i-- > 0 && n < 32;)
		if (i % 4 != 1)
			list[n++] = frames[i];
	/* argument errors first: nothing is scrubbed */
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, 8192, n, list), -EINVAL);
	bad = list[0] + 1;
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_4K, 1, &bad), -EINVAL);
	bad = gpu->caps.vram_bytes; /* the reserved top */
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_4K, 1, &bad), -EINVAL);
	list[n - 1] += 1; /* a bad address at the end: the earlier ones untouched */
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_4K, n, list), -EINVAL);
	list[n - 1] -= 1;
	for (i = 0; i < 64; i++)
		assert_int_equal(vram_host(gpu, frames[i])[7], (uint8_t)(i + 1));

	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_4K, n, list), 0);
	for (i = 0; i < 64; i++) {
		bool listed = false;
		unsigned k;

		for (k = 0; k < n; k++)
			listed |= list[k] == frames[i];
		if (listed) {
			assert_true(frame_is_zero(gpu, frames[i]));
			if (page_size_supported())
				assert_true(frame_resident(gpu, frames[i]));
		} else {
			assert_int_equal(vram_host(gpu, frames[i])[0], (uint8_t)(i + 1));
			assert_int_equal(vram_host(gpu, frames[i])[VRAM_FRAME_BYTES - 1],
			                 (uint8_t)(i + 1));
		}
	}
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_4K, 0, list), 0);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_4K, 64, frames);
	test_gpu_destroy(gpu);
}

/* Through the HAL only: one address space writes VRAM (CPU aperture and a
 * GPU kernel), the pages are unmapped, scrubbed and freed; another address
 * space gets the same pages and reads zeros, and its writes land. */
static void test_scrub_between_address_spaces(void **state)
{
	struct test_gpu *gpu = test_gpu_create(NULL);
	struct test_channel *tc = test_channel_create(gpu, NULL, 0);
	const uint64_t bytes = 1 * MIB, va = TEST_DATA_VA;
	uint64_t first[1 * MIB / BLOCK], second[1 * MIB / BLOCK];
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint8_t *buffer = malloc(bytes), *zeros = calloc(1, bytes);
	struct vgpu_hal_as *other;

	(void)state;
	assert_non_null(buffer);
	assert_non_null(zeros);
	test_map_vram(gpu, tc->as, va, bytes, VGPU_PAGE_64K, 0, first);
	memset(buffer, 0x3c, bytes);
	assert_int_equal(vgpu_hal_as_write(tc->as, va, buffer, bytes / 2), 0);
	assert_true(test_submit_wait(tc, words,
	                             vgpu_push_launch_fill(words, va + bytes / 2, bytes / 2, 7)));
	assert_int_equal(vgpu_hal_as_unmap(tc->as, va, bytes), 0);
	vgpu_hal_as_tlb_invalidate(tc->as);
	assert_int_equal(vgpu_hal_vram_scrub(gpu->hal, VGPU_PAGE_64K, bytes / BLOCK, first), 0);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_64K, bytes / BLOCK, first);

	assert_int_equal(vgpu_hal_as_create(gpu->hal, &other), 0);
	test_map_vram(gpu, other, va, bytes, VGPU_PAGE_64K, 0, second);
	/* the allocator is deterministic: the very same pages */
	assert_memory_equal(first, second, sizeof(first));
	assert_int_equal(vgpu_hal_as_read(other, va, buffer, bytes), 0);
	assert_memory_equal(buffer, zeros, bytes);
	memset(buffer, 0x42, bytes);
	assert_int_equal(vgpu_hal_as_write(other, va, buffer, bytes), 0);
	memset(buffer, 0, bytes);
	assert_int_equal(vgpu_hal_as_read(other, va, buffer, bytes), 0);
	assert_int_equal(buffer[0], 0x42);
	assert_int_equal(buffer[bytes - 1], 0x42);
	assert_int_equal(vgpu_hal_as_unmap(other, va, bytes), 0);
	vgpu_hal_as_tlb_invalidate(other);
	vgpu_hal_vram_free(gpu->hal, VGPU_PAGE_64K, bytes / BLOCK, second);
	vgpu_hal_as_destroy(other);
	free(buffer);
	free(zeros);
	test_channel_destroy(tc);
	test_gpu_destroy(gpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vram_whole_blocks_of_small_frames),
		cmocka_unit_test(test_vram_blocks_sharing_a_word),
		cmocka_unit_test(test_vram_fragmented_all_or_nothing),
		cmocka_unit_test(test_vram_large_all_or_nothing),
		cmocka_unit_test(test_vram_random_against_model),
		cmocka_unit_test(test_scrub_zeroes_in_place),
		cmocka_unit_test(test_scrub_release),
		cmocka_unit_test(test_scrub_small_pages_and_gaps),
		cmocka_unit_test(test_scrub_between_address_spaces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
