// SPDX-License-Identifier: MIT
/*
 * events - times a short and a long run of kernels/events.cu's lcg_work
 * (ITERS and 8 x ITERS generator steps per thread over BYTES/4 threads)
 * with events on a stream: cuEventRecord around each, cuEventSynchronize,
 * cuEventElapsedTime. Both times must be positive and the long one longer;
 * every output word is checked against the CPU, and cuEventQuery must say
 * done after the wait.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define ITERS 16

static uint32_t lcg(uint32_t x, int iters)
{
	for (int k = 0; k < iters; k++)
		x = x * 1664525u + 1013904223u;
	return x;
}

/* Run lcg_work with iters steps between two events; its time in ms. */
static float timed_run(CUfunction fn, CUstream stream, CUdeviceptr dout, uint32_t *out, int n,
                       int iters)
{
	CUevent start, stop;
	float ms = -1.0f;
	void *params[] = { &dout, &n, &iters };

	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	CK(cuEventRecord(start, stream));
	CK(cuLaunchKernel(fn, cuda_prog_blocks((size_t)n, 256, 1u << 30), 1, 1, 256, 1, 1, 0,
	                  stream, params, NULL));
	CK(cuEventRecord(stop, stream));
	CK(cuEventSynchronize(stop));
	CK(cuEventQuery(stop));
	CK(cuEventElapsedTime(&ms, start, stop));
	CK(cuEventDestroy(start));
	CK(cuEventDestroy(stop));
	CK(cuMemcpyDtoHAsync(out, dout, (size_t)n * 4, stream));
	CK(cuStreamSynchronize(stream));
	for (int i = 0; i < n; i++)
		if (out[i] != lcg((uint32_t)i, iters))
			cuda_prog_fail("%d steps: out[%d] = %u, expected %u", iters, i, out[i],
			               lcg((uint32_t)i, iters));
	return ms;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr dout;
	size_t bytes;
	unsigned repeat = cuda_prog_repeat();
	char summary[160];
	float short_ms = 0, long_ms = 0;

	cuda_prog_start("events", argc, argv, 1u << 20, &bytes, &dev);
	int n = (int)(bytes / 4 > 0x40000000 ? 0x40000000 : bytes / 4);
	uint32_t *out;

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("events.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "lcg_work"));
	CK(cuMemAllocHost((void **)&out, (size_t)n * 4));
	CK(cuMemAlloc(&dout, (size_t)n * 4));
	CK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
	for (unsigned r = 0; r < repeat; r++) {
		short_ms = timed_run(fn, stream, dout, out, n, ITERS);
		long_ms = timed_run(fn, stream, dout, out, n, 8 * ITERS);
		if (!(short_ms > 0.0f))
			cuda_prog_fail("round %u: the short kernel took %g ms (not > 0)", r, short_ms);
		if (!(long_ms > short_ms))
			cuda_prog_fail("round %u: the long kernel (8x the work) took %g ms, the short one %g ms",
			               r, long_ms, short_ms);
	}
	CK(cuStreamDestroy(stream));
	CK(cuMemFree(dout));
	CK(cuMemFreeHost(out));
	CK(cuModuleUnload(mod));
	snprintf(summary, sizeof(summary),
	         "%d threads: %d steps %.3f ms, %d steps %.3f ms, %u rounds exact", n, ITERS,
	         short_ms, 8 * ITERS, long_ms, repeat);
	return cuda_prog_finish(dev, summary);
}
