// SPDX-License-Identifier: MIT
/* builtin_kernels.c - load and launch the built-in kernels, see
 * builtin_kernels.h. */
#include "builtin_kernels.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vgpu/abi/kernels.h"
#include "vgpu/error.h"

#define BLOCK_THREADS 256u
#define BLOCKS_PER_SM 8u /* 2048 resident threads per SM from Volta on */
#define MAX_GRID_Y 65535u

int cudagpu_kernels_load(const struct cuda_api *api, struct cudagpu_kernels *k, int sm_count,
                         struct vgpu_error *error)
{
	static const struct {
		const char *name;
		size_t offset;
	} entries[] = {
		{ "vgpu_fill", offsetof(struct cudagpu_kernels, fill) },
		{ "vgpu_copy", offsetof(struct cudagpu_kernels, copy) },
		{ "vgpu_stream", offsetof(struct cudagpu_kernels, stream) },
		{ "vgpu_stencil", offsetof(struct cudagpu_kernels, stencil) },
		{ "vgpu_random_access", offsetof(struct cudagpu_kernels, random_access) },
		{ "vgpu_checksum", offsetof(struct cudagpu_kernels, checksum) },
		{ "vgpu_memset_pattern", offsetof(struct cudagpu_kernels, memset_pattern) },
		{ "vgpu_semaphore_timestamp", offsetof(struct cudagpu_kernels, semaphore_timestamp) },
	};
	char text[160];
	cg_result err;
	size_t i;

	memset(k, 0, sizeof(*k));
	err = api->cuModuleLoadData(&k->module, cudagpu_builtin_ptx);
	if (err != CG_SUCCESS) {
		k->module = NULL;
		return vgpu_error_set(error, -EIO, "cudagpu: loading the built-in kernels: %s",
		                      cuda_api_error(api, err, text, sizeof(text)));
	}
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		cg_function *f = (cg_function *)((char *)k + entries[i].offset);

		err = api->cuModuleGetFunction(f, k->module, entries[i].name);
		if (err != CG_SUCCESS) {
			vgpu_error_set(error, -EIO, "cudagpu: built-in kernel %s: %s",
			               entries[i].name, cuda_api_error(api, err, text, sizeof(text)));
			cudagpu_kernels_unload(api, k);
			return -EIO;
		}
	}
	k->sm_count = sm_count > 0 ? sm_count : 1;
	return 0;
}

void cudagpu_kernels_unload(const struct cuda_api *api, struct cudagpu_kernels *k)
{
	if (k->module)
		api->cuModuleUnload(k->module);
	memset(k, 0, sizeof(*k));
}

/* Blocks of per_block threads for work items, one per thread per
 * grid-stride step: enough to cover them, at most most, at least one. */
static unsigned cover(uint64_t work, unsigned per_block, unsigned most)
{
	uint64_t blocks = (work + per_block - 1) / per_block;

	if (blocks > most)
		blocks = most;
	return blocks ? (unsigned)blocks : 1;
}

static unsigned most_blocks(const struct cudagpu_kernels *k)
{
	return (unsigned)k->sm_count * BLOCKS_PER_SM;
}

static unsigned blocks_for(const struct cudagpu_kernels *k, uint64_t work)
{
	return cover(work, BLOCK_THREADS, most_blocks(k));
}

static cg_result launch(const struct cuda_api *api, cg_function f, cg_stream stream,
                        unsigned grid, void **params)
{
	return api->cuLaunchKernel(f, grid, 1, 1, BLOCK_THREADS, 1, 1, 0, stream, params, NULL);
}

cg_result cudagpu_launch_fill(const struct cuda_api *api, const struct cudagpu_kernels *k,
                              cg_stream stream, cg_deviceptr dst, uint64_t words, uint64_t seed,
                              uint64_t first_word)
{
	unsigned long long a_dst = dst, a_words = words, a_seed = seed, a_first = first_word;
	void *params[] = { &a_dst, &a_words, &a_seed, &a_first };

	return launch(api, k->fill, stream, blocks_for(k, words), params);
}

cg_result cudagpu_launch_copy(const struct cuda_api *api, const struct cudagpu_kernels *k,
                              cg_stream stream, cg_deviceptr dst, cg_deviceptr src,
                              uint64_t bytes)
{
	unsigned long long a_dst = dst, a_src = src, a_bytes = bytes;
	void *params[] = { &a_dst, &a_src, &a_bytes };

	return launch(api, k->copy, stream, blocks_for(k, (bytes + 15) / 16), params);
}

cg_result cudagpu_launch_stream(const struct cuda_api *api, const struct cudagpu_kernels *k,
                                cg_stream stream, cg_deviceptr buf, uint64_t words,
                                uint32_t passes)
{
	unsigned long long a_buf = buf, a_words = words;
	unsigned int a_passes = passes;
	void *params[] = { &a_buf, &a_words, &a_passes };

	return launch(api, k->stream, stream, blocks_for(k, words), params);
}

/* Blocks of 256 threads shaped to the row (x: the smallest of 32, 64, 128
 * and 256 that covers the width, or 256; y: the rest), grid x covering a
 * row, grid y as many rows as keep the grid within sm_count * BLOCKS_PER_SM
 * blocks. */
cg_result cudagpu_launch_stencil(const struct cuda_api *api, const struct cudagpu_kernels *k,
                                 cg_stream stream, cg_deviceptr in, cg_deviceptr out,
                                 uint32_t width, uint32_t height)
{
	unsigned long long a_in = in, a_out = out;
	unsigned int a_width = width, a_height = height;
	void *params[] = { &a_in, &a_out, &a_width, &a_height };
	unsigned block_x = 32, block_y, grid_x, grid_y;

	while (block_x < BLOCK_THREADS && block_x < width)
		block_x *= 2;
	block_y = BLOCK_THREADS / block_x;
	grid_x = cover(width, block_x, most_blocks(k));
	grid_y = cover(height, block_y, most_blocks(k) / grid_x);
	if (grid_y > MAX_GRID_Y)
		grid_y = MAX_GRID_Y;
	return api->cuLaunchKernel(k->stencil, grid_x, grid_y, 1, block_x, block_y, 1, 0, stream,
	                           params, NULL);
}

cg_result cudagpu_launch_random_access(const struct cuda_api *api,
                                       const struct cudagpu_kernels *k, cg_stream stream,
                                       cg_deviceptr table, uint64_t words, uint64_t updates,
                                       cg_deviceptr starts, uint64_t per_thread,
                                       uint32_t threads)
{
	unsigned long long a_table = table, a_words = words, a_updates = updates;
	unsigned long long a_starts = starts, a_per_thread = per_thread;
	unsigned int a_threads = threads;
	void *params[] = { &a_table, &a_words, &a_updates, &a_starts, &a_per_thread, &a_threads };

	return launch(api, k->random_access, stream, blocks_for(k, threads), params);
}

cg_result cudagpu_launch_checksum(const struct cuda_api *api, const struct cudagpu_kernels *k,
                                  cg_stream stream, cg_deviceptr src, uint64_t words,
                                  cg_deviceptr result)
{
	unsigned long long a_src = src, a_words = words, a_result = result;
	void *params[] = { &a_src, &a_words, &a_result };

	return launch(api, k->checksum, stream, 1, params);
}

cg_result cudagpu_launch_memset_pattern(const struct cuda_api *api,
                                        const struct cudagpu_kernels *k, cg_stream stream,
                                        cg_deviceptr dst, uint64_t bytes, uint32_t pattern,
                                        uint32_t phase)
{
	unsigned long long a_dst = dst, a_bytes = bytes;
	unsigned int a_pattern = pattern, a_phase = phase;
	void *params[] = { &a_dst, &a_bytes, &a_pattern, &a_phase };

	return launch(api, k->memset_pattern, stream, blocks_for(k, (bytes + 15) / 16), params);
}

cg_result cudagpu_launch_semaphore_timestamp(const struct cuda_api *api,
                                             const struct cudagpu_kernels *k, cg_stream stream,
                                             cg_deviceptr dst, uint64_t value)
{
	unsigned long long a_dst = dst, a_value = value;
	void *params[] = { &a_dst, &a_value };

	return api->cuLaunchKernel(k->semaphore_timestamp, 1, 1, 1, 1, 1, 1, 0, stream, params,
	                           NULL);
}

/*
 * xorshift64 is linear over GF(2)^64, so n steps are a 64x64 bit matrix. A
 * matrix is kept as its 64 columns: column j is the image of bit j, and the
 * image of any state is the XOR of the columns of its set bits.
 */
struct gf2_matrix {
	uint64_t column[64];
};

static uint64_t gf2_apply(const struct gf2_matrix *m, uint64_t v)
{
	uint64_t out = 0;

	for (; v; v &= v - 1)
		out ^= m->column[__builtin_ctzll(v)];
	return out;
}

/* *a = a * b (b first, then a). */
static void gf2_multiply(struct gf2_matrix *a, const struct gf2_matrix *b)
{
	struct gf2_matrix product;
	int j;

	for (j = 0; j < 64; j++)
		product.column[j] = gf2_apply(a, b->column[j]);
	*a = product;
}

/* The image of each byte value at each byte position of a state, so that a
 * jump costs eight lookups. */
struct gf2_byte_tables {
	uint64_t image[8][256];
};

static void gf2_tables(struct gf2_byte_tables *t, const struct gf2_matrix *m)
{
	int i, b;

	for (i = 0; i < 8; i++) {
		t->image[i][0] = 0;
		for (b = 1; b < 256; b++)
			t->image[i][b] = t->image[i][b & (b - 1)] ^ m->column[8 * i + __builtin_ctz(b)];
	}
}

static uint64_t gf2_tables_apply(const struct gf2_byte_tables *t, uint64_t v)
{
	uint64_t out = 0;
	int i;

	for (i = 0; i < 8; i++)
		out ^= t->image[i][(v >> (8 * i)) & 0xff];
	return out;
}

void cudagpu_xorshift_starts(uint64_t seed, uint64_t per_thread, uint32_t threads,
                             uint64_t *starts)
{
	struct gf2_matrix step, jump;
	struct gf2_byte_tables tables;
	uint32_t t;
	int j;

	if (!threads)
		return;
	for (j = 0; j < 64; j++) {
		uint64_t state = 1ull << j;

		step.column[j] = vgpu_xorshift64(&state);
		jump.column[j] = 1ull << j;
	}
	for (; per_thread; per_thread >>= 1) {
		if (per_thread & 1)
			gf2_multiply(&jump, &step);
		gf2_multiply(&step, &step);
	}
	gf2_tables(&tables, &jump);
	starts[0] = seed ? seed : VGPU_RANDOM_DEFAULT_SEED;
	for (t = 1; t < threads; t++)
		starts[t] = gf2_tables_apply(&tables, starts[t - 1]);
}
