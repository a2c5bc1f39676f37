// SPDX-License-Identifier: MIT
/*
 * stencil - STEPS Jacobi steps of a 5-point stencil on a w x h grid
 * (BYTES/8 cells, two grids) on the GPU (kernels/stencil.cu, a 2-D grid of
 * 16 x 8 blocks, ping-pong buffers), checked against the CPU. The start
 * values are integers below 256 and each step divides by 4, so after
 * STEPS = 6 every value is still exact in a float.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define STEPS 6

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dbuf[2];
	size_t bytes;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	char summary[128];

	cuda_prog_start("stencil", argc, argv, 4u << 20, &bytes, &dev);
	size_t cells = bytes / (2 * sizeof(float));
	int w = (int)sqrt((double)cells) + 3; /* not a multiple of the block */
	if (w > 16384)
		w = 16384;
	int h = (int)(cells / (size_t)w);
	if (h < 3)
		h = 3;
	size_t count = (size_t)w * h;
	float *grid[2] = { cuda_prog_alloc(count * sizeof(float)),
	                   cuda_prog_alloc(count * sizeof(float)) };
	float *got = cuda_prog_alloc(count * sizeof(float));

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("stencil.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "jacobi5"));
	CK(cuMemAlloc(&dbuf[0], count * sizeof(float)));
	CK(cuMemAlloc(&dbuf[1], count * sizeof(float)));
	for (unsigned r = 0; r < repeat; r++) {
		int cur = 0;

		for (size_t i = 0; i < count; i++)
			grid[0][i] = (float)(cuda_prog_rand(&rng) & 255);
		CK(cuMemcpyHtoD(dbuf[0], grid[0], count * sizeof(float)));
		for (int s = 0; s < STEPS; s++) {
			void *params[] = { &dbuf[cur], &dbuf[1 - cur], &w, &h };

			CK(cuLaunchKernel(fn, (unsigned)((w + 15) / 16), (unsigned)((h + 7) / 8), 1,
			                  16, 8, 1, 0, NULL, params, NULL));
			for (int y = 0; y < h; y++)
				for (int x = 0; x < w; x++) {
					const float *in = grid[cur];
					size_t i = (size_t)y * w + x;

					if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
						grid[1 - cur][i] = in[i];
					else
						grid[1 - cur][i] = 0.25f * (in[i - w] + in[i + w] +
						                            in[i - 1] + in[i + 1]);
				}
			cur = 1 - cur;
		}
		CK(cuMemcpyDtoH(got, dbuf[cur], count * sizeof(float)));
		for (size_t i = 0; i < count; i++)
			if (got[i] != grid[cur][i])
				cuda_prog_fail("round %u: after %d steps cell (%zu, %zu) = %.9g, expected %.9g",
				               r, STEPS, i % (size_t)w, i / (size_t)w, got[i],
				               grid[cur][i]);
	}
	CK(cuMemFree(dbuf[0]));
	CK(cuMemFree(dbuf[1]));
	CK(cuModuleUnload(mod));
	free(grid[0]);
	free(grid[1]);
	free(got);
	snprintf(summary, sizeof(summary), "%d x %d grid, %d steps, %u rounds exact", w, h,
	         STEPS, repeat);
	return cuda_prog_finish(dev, summary);
}
