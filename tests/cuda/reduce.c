// SPDX-License-Identifier: MIT
/*
 * reduce - the sum of BYTES/4 random 32-bit words on the GPU
 * (kernels/reduce.cu: a shared-memory tree per block, dynamic shared
 * memory, a 64-bit atomicAdd per block), checked against the CPU's sum.
 * With $CUDA_PROG_REPEAT the same data is summed again each round (the
 * checksum of a long-running tenant).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define BLOCK 256

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr din, dtotal;
	size_t bytes;
	uint64_t rng = cuda_prog_seed(), want = 0, got = 0;
	unsigned repeat = cuda_prog_repeat();
	char summary[160];

	cuda_prog_start("reduce", argc, argv, 8u << 20, &bytes, &dev);
	int n = (int)(bytes / 4 > 0x40000000 ? 0x40000000 : bytes / 4);
	uint32_t *in = cuda_prog_alloc((size_t)n * 4);

	for (int i = 0; i < n; i++) {
		in[i] = cuda_prog_rand(&rng);
		want += in[i];
	}
	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("reduce.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "reduce_sum"));
	CK(cuMemAlloc(&din, (size_t)n * 4));
	CK(cuMemAlloc(&dtotal, sizeof(uint64_t)));
	CK(cuMemcpyHtoD(din, in, (size_t)n * 4));
	for (unsigned r = 0; r < repeat; r++) {
		unsigned grid = (unsigned)(((size_t)n + 2 * BLOCK - 1) / (2 * BLOCK));
		void *params[] = { &din, &dtotal, &n };

		CK(cuMemsetD32(dtotal, 0, 2));
		CK(cuLaunchKernel(fn, grid, 1, 1, BLOCK, 1, 1, BLOCK * sizeof(uint64_t), NULL,
		                  params, NULL));
		CK(cuMemcpyDtoH(&got, dtotal, sizeof(got)));
		if (got != want)
			cuda_prog_fail("round %u: sum of %d words = %" PRIu64 ", expected %" PRIu64,
			               r, n, got, want);
	}
	cuda_prog_hold();
	CK(cuMemFree(din));
	CK(cuMemFree(dtotal));
	CK(cuModuleUnload(mod));
	free(in);
	snprintf(summary, sizeof(summary), "sum of %d words = %" PRIu64 ", %u rounds exact",
	         n, want, repeat);
	return cuda_prog_finish(dev, summary);
}
