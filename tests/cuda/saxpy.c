// SPDX-License-Identifier: MIT
/*
 * saxpy - y = a*x + y on the GPU (kernels/saxpy.cu, loaded as PTX from a
 * file with cuModuleLoad, launched with kernelParams), checked against
 * the CPU. Working set: x and y, BYTES/2 each. The inputs are small
 * integers, so every result is exact whatever the rounding. Each launch is
 * timed with events (cuEventRecord around it, cuEventElapsedTime): the
 * summary gives the kernel's mean and fastest time over the rounds.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy;
	size_t bytes;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	char summary[160];
	CUevent start, stop;
	double kernel_ms = 0, fastest_ms = 0;

	cuda_prog_start("saxpy", argc, argv, 8u << 20, &bytes, &dev);
	int n = (int)(bytes / (2 * sizeof(float)) > 0x40000000 ? 0x40000000 : bytes / (2 * sizeof(float)));
	float *x = cuda_prog_alloc((size_t)n * sizeof(float));
	float *y = cuda_prog_alloc((size_t)n * sizeof(float));
	float *want = cuda_prog_alloc((size_t)n * sizeof(float));

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("saxpy.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "saxpy"));
	CK(cuMemAlloc(&dx, (size_t)n * sizeof(float)));
	CK(cuMemAlloc(&dy, (size_t)n * sizeof(float)));
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	for (unsigned r = 0; r < repeat; r++) {
		float a = (float)(r % 5) - 2.0f;

		for (int i = 0; i < n; i++) {
			x[i] = (float)(cuda_prog_rand(&rng) % 2001) - 1000.0f;
			y[i] = (float)(cuda_prog_rand(&rng) % 2001) - 1000.0f;
			want[i] = a * x[i] + y[i];
		}
		CK(cuMemcpyHtoD(dx, x, (size_t)n * sizeof(float)));
		CK(cuMemcpyHtoD(dy, y, (size_t)n * sizeof(float)));
		void *params[] = { &n, &a, &dx, &dy };
		float ms = 0;

		CK(cuEventRecord(start, NULL));
		CK(cuLaunchKernel(fn, cuda_prog_blocks((size_t)n, 256, 4096), 1, 1, 256, 1, 1,
		                  0, NULL, params, NULL));
		CK(cuEventRecord(stop, NULL));
		CK(cuEventSynchronize(stop));
		CK(cuEventElapsedTime(&ms, start, stop));
		kernel_ms += ms;
		if (r == 0 || ms < fastest_ms)
			fastest_ms = ms;
		CK(cuMemcpyDtoH(y, dy, (size_t)n * sizeof(float)));
		for (int i = 0; i < n; i++)
			if (y[i] != want[i])
				cuda_prog_fail("round %u: y[%d] = %g, expected %g (a = %g, x = %g)",
				               r, i, y[i], want[i], a, x[i]);
	}
	CK(cuEventDestroy(start));
	CK(cuEventDestroy(stop));
	cuda_prog_hold();
	CK(cuMemFree(dx));
	CK(cuMemFree(dy));
	CK(cuModuleUnload(mod));
	free(x);
	free(y);
	free(want);
	snprintf(summary, sizeof(summary),
	         "%d elements, %u rounds exact, kernel mean %.4f ms fastest %.4f ms", n, repeat,
	         kernel_ms / repeat, fastest_ms);
	return cuda_prog_finish(dev, summary);
}
