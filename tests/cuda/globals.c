// SPDX-License-Identifier: MIT
/*
 * globals - module variables through cuModuleGetGlobal
 * (kernels/globals.cu): the host writes the __constant__ coefficients and
 * the __device__ table with cuMemcpyHtoD, zeroes the __device__ counter,
 * runs poly_table twice over BYTES/8 elements and reads the counter back
 * (2 n) and the table (unchanged). Sizes from cuModuleGetGlobal must be
 * those of the declarations; the outputs are checked against the CPU
 * (small integers: exact).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

static CUdeviceptr global(CUmodule mod, const char *name, size_t want_bytes)
{
	CUdeviceptr ptr;
	size_t bytes = 0;

	CK(cuModuleGetGlobal(&ptr, &bytes, mod, name));
	if (bytes != want_bytes)
		cuda_prog_fail("cuModuleGetGlobal(%s) says %zu bytes, expected %zu", name, bytes,
		               want_bytes);
	if (!ptr)
		cuda_prog_fail("cuModuleGetGlobal(%s) gave address 0", name);
	return ptr;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy, dcoeffs, dtable, dcounter;
	size_t bytes;
	uint64_t rng = cuda_prog_seed(), counter;
	unsigned repeat = cuda_prog_repeat();
	float coeffs[4];
	int32_t table[256], table_back[256];
	char summary[128];

	cuda_prog_start("globals", argc, argv, 2u << 20, &bytes, &dev);
	int n = (int)(bytes / 8 > 0x40000000 ? 0x40000000 : bytes / 8);
	float *x = cuda_prog_alloc((size_t)n * sizeof(float));
	float *y = cuda_prog_alloc((size_t)n * sizeof(float));

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("globals.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "poly_table"));
	dcoeffs = global(mod, "coeffs", sizeof(coeffs));
	dtable = global(mod, "table", sizeof(table));
	dcounter = global(mod, "counter", sizeof(counter));
	CK(cuMemAlloc(&dx, (size_t)n * sizeof(float)));
	CK(cuMemAlloc(&dy, (size_t)n * sizeof(float)));
	for (unsigned r = 0; r < repeat; r++) {
		for (int k = 0; k < 4; k++)
			coeffs[k] = (float)(cuda_prog_rand(&rng) % 7) - 3.0f;
		for (int k = 0; k < 256; k++)
			table[k] = (int32_t)(cuda_prog_rand(&rng) % 2001) - 1000;
		for (int i = 0; i < n; i++)
			x[i] = (float)(cuda_prog_rand(&rng) % 17) - 8.0f;
		CK(cuMemcpyHtoD(dcoeffs, coeffs, sizeof(coeffs)));
		CK(cuMemcpyHtoD(dtable, table, sizeof(table)));
		CK(cuMemsetD8(dcounter, 0, sizeof(counter)));
		CK(cuMemcpyHtoD(dx, x, (size_t)n * sizeof(float)));
		void *params[] = { &dx, &dy, &n };
		for (int l = 0; l < 2; l++)
			CK(cuLaunchKernel(fn, cuda_prog_blocks((size_t)n, 256, 1u << 30), 1, 1, 256, 1,
			                  1, 0, NULL, params, NULL));
		CK(cuMemcpyDtoH(y, dy, (size_t)n * sizeof(float)));
		CK(cuMemcpyDtoH(&counter, dcounter, sizeof(counter)));
		CK(cuMemcpyDtoH(table_back, dtable, sizeof(table_back)));
		for (int i = 0; i < n; i++) {
			float v = x[i];
			float want = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0] +
			             (float)table[i & 255];

			if (y[i] != want)
				cuda_prog_fail("round %u: y[%d] = %g, expected %g (x = %g)", r, i, y[i],
				               want, v);
		}
		if (counter != 2 * (uint64_t)n)
			cuda_prog_fail("round %u: the __device__ counter is %" PRIu64 ", expected %" PRIu64,
			               r, counter, 2 * (uint64_t)n);
		for (int k = 0; k < 256; k++)
			if (table_back[k] != table[k])
				cuda_prog_fail("round %u: table[%d] read back %d, written %d", r, k,
				               table_back[k], table[k]);
	}
	CK(cuMemFree(dx));
	CK(cuMemFree(dy));
	CK(cuModuleUnload(mod));
	free(x);
	free(y);
	snprintf(summary, sizeof(summary), "%d elements, 3 module variables, %u rounds exact", n,
	         repeat);
	return cuda_prog_finish(dev, summary);
}
