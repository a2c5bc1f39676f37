// SPDX-License-Identifier: MIT
/*
 * scan - the inclusive prefix sum of BYTES/8 random ints on the GPU
 * (kernels/scan.cu: each block scans its part in shared memory, then the
 * blocks' totals are scanned the same way, level by level, and added
 * back), checked element by element against the CPU (sums wrap at 32
 * bits on both sides).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define BLOCK 256

static CUfunction scan_blocks, add_offsets;

/* out = inclusive scan of in (n ints); the blocks' totals recursively. */
static void scan(CUdeviceptr in, CUdeviceptr out, int n)
{
	int blocks = (n + BLOCK - 1) / BLOCK;
	CUdeviceptr sums;

	CK(cuMemAlloc(&sums, (size_t)blocks * sizeof(int)));
	void *p1[] = { &in, &out, &sums, &n };
	CK(cuLaunchKernel(scan_blocks, (unsigned)blocks, 1, 1, BLOCK, 1, 1,
	                  2 * BLOCK * sizeof(int), NULL, p1, NULL));
	if (blocks > 1) {
		CUdeviceptr scanned;

		CK(cuMemAlloc(&scanned, (size_t)blocks * sizeof(int)));
		scan(sums, scanned, blocks);
		void *p2[] = { &out, &scanned, &n };
		CK(cuLaunchKernel(add_offsets, (unsigned)blocks, 1, 1, BLOCK, 1, 1, 0, NULL, p2,
		                  NULL));
		CK(cuCtxSynchronize());
		CK(cuMemFree(scanned));
	}
	CK(cuCtxSynchronize());
	CK(cuMemFree(sums));
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUdeviceptr din, dout;
	size_t bytes;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	char summary[128];

	cuda_prog_start("scan", argc, argv, 4u << 20, &bytes, &dev);
	int n = (int)(bytes / 8 > 0x10000000 ? 0x10000000 : bytes / 8);
	if (n < 1)
		n = 1;
	int32_t *in = cuda_prog_alloc((size_t)n * 4);
	int32_t *out = cuda_prog_alloc((size_t)n * 4);

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("scan.ptx")));
	CK(cuModuleGetFunction(&scan_blocks, mod, "scan_blocks"));
	CK(cuModuleGetFunction(&add_offsets, mod, "add_offsets"));
	CK(cuMemAlloc(&din, (size_t)n * 4));
	CK(cuMemAlloc(&dout, (size_t)n * 4));
	for (unsigned r = 0; r < repeat; r++) {
		uint32_t sum = 0;

		for (int i = 0; i < n; i++)
			in[i] = (int32_t)(cuda_prog_rand(&rng) % 201) - 100;
		CK(cuMemcpyHtoD(din, in, (size_t)n * 4));
		scan(din, dout, n);
		CK(cuMemcpyDtoH(out, dout, (size_t)n * 4));
		for (int i = 0; i < n; i++) {
			sum += (uint32_t)in[i];
			if ((uint32_t)out[i] != sum)
				cuda_prog_fail("round %u: prefix sum [%d] = %d, expected %d", r, i,
				               out[i], (int32_t)sum);
		}
	}
	CK(cuMemFree(din));
	CK(cuMemFree(dout));
	CK(cuModuleUnload(mod));
	free(in);
	free(out);
	snprintf(summary, sizeof(summary), "%d elements, %u rounds exact", n, repeat);
	return cuda_prog_finish(dev, summary);
}
