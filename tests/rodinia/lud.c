// SPDX-License-Identifier: MIT
/*
 * lud - LU decomposition of a diagonally dominant n x n matrix in place,
 * in 16 x 16 tiles (kernels/lud.cu: lud_diagonal, lud_perimeter,
 * lud_internal per tile step). Each repetition copies the matrix to the
 * GPU, decomposes it and copies the factors back.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   matrix  n x n floats  12  the only buffer: every step reads and
 *                             writes its trailing part
 *
 * Check: the factors against the CPU's (unblocked Doolittle) within 1e-4
 * relative + 1e-5 (the blocked order of the sums differs).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define BS 16

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "lud", "lud.ptx", argc, argv, 16u << 20);
	int n = (int)sqrt((double)r.bytes / sizeof(float)) / BS * BS;
	n = n < BS ? BS : n > 16384 ? 16384 : n;
	size_t bytes = (size_t)n * n * sizeof(float);
	float *a = rodinia_malloc(bytes), *got = rodinia_malloc(bytes), *want = rodinia_malloc(bytes);

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			a[i * n + j] = i == j ? (float)n + rodinia_randf(&r) : rodinia_randf(&r);
	CUfunction diagonal = rodinia_function(&r, "lud_diagonal");
	CUfunction perimeter = rodinia_function(&r, "lud_perimeter");
	CUfunction internal = rodinia_function(&r, "lud_internal");
	CUdeviceptr d_m = rodinia_alloc(bytes, 12);

	for (unsigned rep = 0; rep < r.repeat; rep++) {
		CK(cuMemcpyHtoD(d_m, a, bytes));
		rodinia_kernels_begin(&r);
		for (int off = 0; off < n; off += BS) {
			void *p[] = { &d_m, &n, &off };
			unsigned rest = (unsigned)((n - off) / BS - 1);

			CK(cuLaunchKernel(diagonal, 1, 1, 1, BS, 1, 1, 0, NULL, p, NULL));
			if (!rest)
				break;
			CK(cuLaunchKernel(perimeter, rest, 1, 1, 2 * BS, 1, 1, 0, NULL, p, NULL));
			CK(cuLaunchKernel(internal, rest, rest, 1, BS, BS, 1, 0, NULL, p, NULL));
		}
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(got, d_m, bytes));
	}
	memcpy(want, a, bytes);
	for (int k = 0; k < n; k++)
		for (int i = k + 1; i < n; i++) {
			want[i * n + k] /= want[k * n + k];
			for (int j = k + 1; j < n; j++)
				want[i * n + j] -= want[i * n + k] * want[k * n + j];
		}
	rodinia_check_floats("LU", got, want, (size_t)n * n, 1e-4f, 1e-5f);
	CK(cuMemFree(d_m));
	snprintf(summary, sizeof(summary), "%d x %d, %u decompositions within 1e-4", n, n,
	         r.repeat);
	return rodinia_finish(&r, summary);
}
