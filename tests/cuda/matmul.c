// SPDX-License-Identifier: MIT
/*
 * matmul - C = A * B for n x n matrices on the GPU (kernels/matmul.cu:
 * 16 x 16 tiles in shared memory, a 2-D grid), checked against the CPU.
 * n is the largest with 3 n^2 floats within BYTES (at most 1024), not a
 * multiple of the tile unless it happens to be. The entries are small
 * integers, so every sum is exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define TILE 16

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr da, db, dc;
	size_t bytes;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	char summary[128];

	cuda_prog_start("matmul", argc, argv, 768u << 10, &bytes, &dev);
	int n = (int)sqrt((double)bytes / (3 * sizeof(float)));
	if (n > 1024)
		n = 1024;
	if (n < 1)
		n = 1;
	size_t nn = (size_t)n * n;
	float *a = cuda_prog_alloc(nn * sizeof(float));
	float *b = cuda_prog_alloc(nn * sizeof(float));
	float *c = cuda_prog_alloc(nn * sizeof(float));

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("matmul.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "matmul_tiled"));
	CK(cuMemAlloc(&da, nn * sizeof(float)));
	CK(cuMemAlloc(&db, nn * sizeof(float)));
	CK(cuMemAlloc(&dc, nn * sizeof(float)));
	for (unsigned r = 0; r < repeat; r++) {
		unsigned g = (unsigned)((n + TILE - 1) / TILE);
		void *params[] = { &da, &db, &dc, &n };

		for (size_t i = 0; i < nn; i++) {
			a[i] = (float)(cuda_prog_rand(&rng) % 9) - 4.0f;
			b[i] = (float)(cuda_prog_rand(&rng) % 9) - 4.0f;
		}
		CK(cuMemcpyHtoD(da, a, nn * sizeof(float)));
		CK(cuMemcpyHtoD(db, b, nn * sizeof(float)));
		CK(cuMemsetD32(dc, 0x7fc00000u, nn)); /* NaN: unwritten shows */
		CK(cuLaunchKernel(fn, g, g, 1, TILE, TILE, 1, 0, NULL, params, NULL));
		CK(cuMemcpyDtoH(c, dc, nn * sizeof(float)));
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				float want = 0.0f;

				for (int k = 0; k < n; k++)
					want += a[(size_t)i * n + k] * b[(size_t)k * n + j];
				if (c[(size_t)i * n + j] != want)
					cuda_prog_fail("round %u: C[%d][%d] = %g, expected %g (n = %d)",
					               r, i, j, c[(size_t)i * n + j], want, n);
			}
	}
	CK(cuMemFree(da));
	CK(cuMemFree(db));
	CK(cuMemFree(dc));
	CK(cuModuleUnload(mod));
	free(a);
	free(b);
	free(c);
	snprintf(summary, sizeof(summary), "%d x %d, %u rounds exact", n, n, repeat);
	return cuda_prog_finish(dev, summary);
}
