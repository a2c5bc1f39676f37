/* SPDX-License-Identifier: MIT */
/*
 * device_limits.h - the virtual device the guest libcuda.so.1 presents,
 * and what follows from it: launch checks and occupancy. Pure functions
 * of their arguments (no device, no locks), tested on their own.
 */
#ifndef VGPU_CUDA_DEVICE_LIMITS_H
#define VGPU_CUDA_DEVICE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

struct cu_limits {
	int cc_major, cc_minor;         /* compute capability */
	int multiprocessors;
	int warp_size;
	int max_threads_per_block;
	int max_block[3];
	int max_grid[3];
	int shared_per_block;           /* bytes, static + dynamic */
	int shared_per_block_optin;
	int shared_per_multiprocessor;
	int registers_per_block;
	int registers_per_multiprocessor;
	int registers_per_thread;       /* what cuFuncGetAttribute(NUM_REGS) says */
	int max_threads_per_multiprocessor;
	int max_blocks_per_multiprocessor;
	int clock_khz;
	int memory_clock_khz;
	int memory_bus_width;
	int l2_bytes;
	int constant_bytes;
};

/* The virtual device's limits (independent of the backend). */
void cu_limits_default(struct cu_limits *out);

/* Blocks of block_size threads using shared bytes each that fit on one
 * multiprocessor at once (0 if not even one fits, or block_size is out of
 * range). */
int cu_occupancy_blocks(const struct cu_limits *l, int block_size, size_t shared_bytes);

/*
 * The block size (a multiple of the warp size, <= limit and <=
 * max_threads, limit 0 = no limit) that keeps the most threads resident
 * per multiprocessor; shared(block) is the shared memory a block of that
 * size uses (static + dynamic). *min_grid: the blocks that fill the
 * device at that size. 0, or -1 if no size fits.
 */
int cu_occupancy_best_block(const struct cu_limits *l, int limit, int max_threads,
                            size_t (*shared)(int block, void *arg), void *arg, int *block,
                            int *min_grid);

/* A grid and block the device can run: 0, or -1 with *why. */
int cu_launch_dims_check(const struct cu_limits *l, const unsigned int grid[3],
                         const unsigned int block[3], unsigned int function_max_threads,
                         size_t shared_bytes, size_t shared_limit, const char **why);

#endif /* VGPU_CUDA_DEVICE_LIMITS_H */
