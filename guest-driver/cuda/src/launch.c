// SPDX-License-Identifier: MIT
/*
 * launch.c - cuLaunchKernel: one LAUNCH_FUNCTION command (vgpu/abi/
 * commands.h) with the parameter block inline, written into the stream's
 * pushbuffer and submitted directly: a launch needs no system call. The
 * grid, block and shared memory are checked against the virtual device
 * (device_limits.h) and the parameters against the module's table
 * (launch_params.h) first, so a bad launch is a CUDA error here, not a
 * killed channel.
 */
#include "internal.h"
#include "launch_params.h"
#include "vgpu/abi/commands.h"

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra)
{
	uint8_t params[VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES];
	const unsigned int grid[3] = { gridDimX, gridDimY, gridDimZ };
	const unsigned int block[3] = { blockDimX, blockDimY, blockDimZ };
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	struct CUfunc_st *fn;
	const char *why = "";
	uint32_t *buf, words;
	struct vgpu_launch_dims dims;
	size_t shared;
	CUresult res;

	cu_lock();
	res = cu_enter(&ctx);
	if (res)
		goto out;
	fn = cu_function_get(f);
	if (!fn) {
		res = cu_fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: not a function");
		goto out;
	}
	shared = (size_t)fn->f->static_shared_bytes + sharedMemBytes;
	if (cu_launch_dims_check(&cu_g.limits, grid, block, fn->f->max_threads_per_block, shared,
	                         (size_t)fn->f->static_shared_bytes +
	                                 (size_t)fn->max_dynamic_shared,
	                         &why) < 0) {
		res = cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: %s", fn->f->name, why);
		goto out;
	}
	res = cu_pack_params(fn->f, kernelParams, extra, params, sizeof(params), &why);
	if (res) {
		cu_fail(res, "cuLaunchKernel %s: %s", fn->f->name, why);
		goto out;
	}
	res = cu_stream_get(ctx, hStream, &s);
	if (res == CUDA_SUCCESS)
		res = cu_stream_order(s);
	if (res)
		goto out;
	words = vgpu_launch_function_words(fn->f->param_bytes);
	res = cu_stream_begin(s, words, &buf);
	if (res)
		goto out;
	for (int i = 0; i < 3; i++) {
		dims.grid[i] = grid[i];
		dims.block[i] = block[i];
	}
	dims.shared_bytes = sharedMemBytes;
	res = cu_stream_submit(s, vgpu_push_launch_function(buf, fn->mod->m->handle, fn->f->index,
	                                                    &dims, params,
	                                                    fn->f->param_bytes));
out:
	cu_unlock();
	return res;
}
