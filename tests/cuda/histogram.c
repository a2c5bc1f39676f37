// SPDX-License-Identifier: MIT
/*
 * histogram - a 256-bin histogram of BYTES random bytes on the GPU
 * (kernels/histogram.cu: shared-memory bins with shared atomics, then
 * global atomics), checked bin by bin against the CPU. The bytes are
 * skewed (a quarter are 0x42) so that atomics on one bin collide.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_prog.h"

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr ddata, dbins;
	size_t bytes;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	uint32_t want[256], bins[256];
	char summary[128];

	cuda_prog_start("histogram", argc, argv, 4u << 20, &bytes, &dev);
	int n = (int)(bytes > 0x40000000 ? 0x40000000 : bytes);
	unsigned char *data = cuda_prog_alloc((size_t)n);

	memset(want, 0, sizeof(want));
	for (int i = 0; i < n; i++) {
		uint32_t v = cuda_prog_rand(&rng);

		data[i] = (v & 3) == 0 ? 0x42 : (unsigned char)(v >> 8);
		want[data[i]]++;
	}
	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("histogram.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "histogram256"));
	CK(cuMemAlloc(&ddata, (size_t)n));
	CK(cuMemAlloc(&dbins, sizeof(bins)));
	CK(cuMemcpyHtoD(ddata, data, (size_t)n));
	for (unsigned r = 0; r < repeat; r++) {
		void *params[] = { &ddata, &dbins, &n };

		CK(cuMemsetD8(dbins, 0, sizeof(bins)));
		CK(cuLaunchKernel(fn, cuda_prog_blocks((size_t)n, 256, 240), 1, 1, 256, 1, 1, 0,
		                  NULL, params, NULL));
		CK(cuMemcpyDtoH(bins, dbins, sizeof(bins)));
		for (int b = 0; b < 256; b++)
			if (bins[b] != want[b])
				cuda_prog_fail("round %u: bin %d = %u, expected %u", r, b, bins[b],
				               want[b]);
	}
	CK(cuMemFree(ddata));
	CK(cuMemFree(dbins));
	CK(cuModuleUnload(mod));
	free(data);
	snprintf(summary, sizeof(summary), "%d bytes, 256 bins, %u rounds exact", n, repeat);
	return cuda_prog_finish(dev, summary);
}
