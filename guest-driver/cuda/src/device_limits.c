// SPDX-License-Identifier: MIT
/*
 * device_limits.c - the virtual device's limits, launch checks and
 * occupancy (device_limits.h).
 *
 * The device is a compute capability 9.0 part: simgpu's PTX executor
 * accepts PTX for sm_70 and up and the project's PTX is built for sm_90
 * (vgpu-backend/simgpu/ptx/README.md); its grid, block and shared memory
 * limits are the executor's (ptx_exec.h, ptx_module.h).
 */
#include "device_limits.h"

#include <string.h>

void cu_limits_default(struct cu_limits *out)
{
	memset(out, 0, sizeof(*out));
	out->cc_major = 9;
	out->cc_minor = 0;
	out->multiprocessors = 16;
	out->warp_size = 32;
	out->max_threads_per_block = 1024;
	out->max_block[0] = 1024;
	out->max_block[1] = 1024;
	out->max_block[2] = 64;
	out->max_grid[0] = 0x7fffffff;
	out->max_grid[1] = 65535;
	out->max_grid[2] = 65535;
	out->shared_per_block = 48 * 1024;
	out->shared_per_block_optin = 227 * 1024;
	out->shared_per_multiprocessor = 228 * 1024;
	out->registers_per_block = 65536;
	out->registers_per_multiprocessor = 65536;
	out->registers_per_thread = 32;
	out->max_threads_per_multiprocessor = 2048;
	out->max_blocks_per_multiprocessor = 32;
	out->clock_khz = 1410000;
	out->memory_clock_khz = 1593000;
	out->memory_bus_width = 5120;
	out->l2_bytes = 50 * 1024 * 1024;
	out->constant_bytes = 64 * 1024;
}

int cu_occupancy_blocks(const struct cu_limits *l, int block_size, size_t shared_bytes)
{
	int warps, blocks, by_regs;

	if (block_size <= 0 || block_size > l->max_threads_per_block)
		return 0;
	if (shared_bytes > (size_t)l->shared_per_block_optin)
		return 0;
	warps = (block_size + l->warp_size - 1) / l->warp_size;
	blocks = l->max_threads_per_multiprocessor / (warps * l->warp_size);
	if (blocks > l->max_blocks_per_multiprocessor)
		blocks = l->max_blocks_per_multiprocessor;
	by_regs = l->registers_per_multiprocessor /
	          (warps * l->warp_size * l->registers_per_thread);
	if (blocks > by_regs)
		blocks = by_regs;
	if (shared_bytes) {
		size_t by_shared = (size_t)l->shared_per_multiprocessor / shared_bytes;

		if ((size_t)blocks > by_shared)
			blocks = (int)by_shared;
	}
	return blocks;
}

int cu_occupancy_best_block(const struct cu_limits *l, int limit, int max_threads,
                            size_t (*shared)(int block, void *arg), void *arg, int *block,
                            int *min_grid)
{
	int top = l->max_threads_per_block, best = 0, best_blocks = 0, best_threads = 0;

	if (max_threads > 0 && max_threads < top)
		top = max_threads;
	if (limit > 0 && limit < top)
		top = limit;
	for (int size = top / l->warp_size * l->warp_size; size > 0; size -= l->warp_size) {
		int blocks = cu_occupancy_blocks(l, size, shared(size, arg));

		if (blocks * size > best_threads) {
			best_threads = blocks * size;
			best = size;
			best_blocks = blocks;
		}
	}
	if (!best && top > 0 && top < l->warp_size) {
		/* a limit below one warp: the limit itself */
		best_blocks = cu_occupancy_blocks(l, top, shared(top, arg));
		if (best_blocks)
			best = top;
	}
	if (!best)
		return -1;
	*block = best;
	*min_grid = best_blocks * l->multiprocessors;
	return 0;
}

int cu_launch_dims_check(const struct cu_limits *l, const unsigned int grid[3],
                         const unsigned int block[3], unsigned int function_max_threads,
                         size_t shared_bytes, size_t shared_limit, const char **why)
{
	uint64_t threads = (uint64_t)block[0] * block[1] * block[2];

	for (int i = 0; i < 3; i++) {
		if (grid[i] == 0 || block[i] == 0) {
			*why = "a grid or block dimension is 0";
			return -1;
		}
		if (grid[i] > (unsigned int)l->max_grid[i]) {
			*why = "grid dimension above the device's maximum";
			return -1;
		}
		if (block[i] > (unsigned int)l->max_block[i]) {
			*why = "block dimension above the device's maximum";
			return -1;
		}
	}
	if (threads > (uint64_t)l->max_threads_per_block ||
	    (function_max_threads && threads > function_max_threads)) {
		*why = "more threads per block than the function or device allows";
		return -1;
	}
	if (shared_bytes > shared_limit) {
		*why = "more shared memory per block than allowed";
		return -1;
	}
	return 0;
}
