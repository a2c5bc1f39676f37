// SPDX-License-Identifier: MIT
/*
 * occupancy.c - the occupancy queries, answered from the virtual device's
 * limits (device_limits.c) and the function's static shared memory; the
 * registers a thread uses are the constant cuFuncGetAttribute(NUM_REGS)
 * reports.
 */
#include "internal.h"

struct shared_arg {
	size_t static_bytes;
	size_t dynamic_bytes;
	CUoccupancyB2DSize fn;
};

static size_t shared_of(int block, void *p)
{
	const struct shared_arg *a = p;

	return a->static_bytes + (a->fn ? a->fn(block) : a->dynamic_bytes);
}

/* Locked: the function and its shared memory. */
static CUresult function(CUfunction func, struct shared_arg *a, int *max_threads)
{
	struct CUfunc_st *fn;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	fn = cu_function_get(func);
	if (!fn)
		return CUDA_ERROR_INVALID_HANDLE;
	a->static_bytes = fn->f->static_shared_bytes;
	*max_threads = (int)fn->f->max_threads_per_block;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                                     CUfunction func,
                                                                     int blockSize,
                                                                     size_t dynamicSMemSize,
                                                                     unsigned int flags)
{
	struct shared_arg a = { .dynamic_bytes = dynamicSMemSize };
	int max_threads = 0;
	CUresult res;

	if (!numBlocks || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = function(func, &a, &max_threads);
	cu_unlock();
	if (res)
		return res;
	if (blockSize <= 0 || (max_threads > 0 && blockSize > max_threads))
		*numBlocks = 0;
	else
		*numBlocks = cu_occupancy_blocks(&cu_g.limits, blockSize, shared_of(blockSize, &a));
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                            int blockSize,
                                                            size_t dynamicSMemSize)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
	                                                            dynamicSMemSize, 0);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                          CUfunction func,
                                                          CUoccupancyB2DSize
                                                                  blockSizeToDynamicSMemSize,
                                                          size_t dynamicSMemSize,
                                                          int blockSizeLimit,
                                                          unsigned int flags)
{
	struct shared_arg a = { .dynamic_bytes = dynamicSMemSize,
		                .fn = blockSizeToDynamicSMemSize };
	int max_threads = 0;
	CUresult res;

	if (!minGridSize || !blockSize || blockSizeLimit < 0 ||
	    flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = function(func, &a, &max_threads);
	cu_unlock();
	if (res)
		return res;
	if (cu_occupancy_best_block(&cu_g.limits, blockSizeLimit, max_threads, shared_of, &a,
	                            blockSize, minGridSize) < 0) {
		*blockSize = 0;
		*minGridSize = 0;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                  CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                  size_t dynamicSMemSize, int blockSizeLimit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
	                                                 blockSizeToDynamicSMemSize,
	                                                 dynamicSMemSize, blockSizeLimit, 0);
}
