// SPDX-License-Identifier: MIT
/*
 * streams - BYTES of floats in pinned host memory (cuMemAllocHost), cut
 * into NSTREAMS pieces; each piece on its own stream goes up with
 * cuMemcpyHtoDAsync, through kernels/streams.cu's scale_add (a different
 * factor per stream) and back with cuMemcpyDtoHAsync, all queued before
 * any stream is waited for. Checked against the CPU: a copy that overtook
 * its stream's kernel, or a piece done with another stream's factor,
 * shows. cuStreamQuery must say done once a stream is synchronized.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_prog.h"

#define NSTREAMS 4

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUstream streams[NSTREAMS];
	CUdeviceptr dbuf;
	size_t bytes;
	float *host;
	uint64_t rng = cuda_prog_seed();
	unsigned repeat = cuda_prog_repeat();
	char summary[128];

	cuda_prog_start("streams", argc, argv, 8u << 20, &bytes, &dev);
	size_t n = bytes / sizeof(float);
	if (n < NSTREAMS)
		n = NSTREAMS;
	if (n > 0x40000000)
		n = 0x40000000;
	float *in = cuda_prog_alloc(n * sizeof(float));

	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("streams.ptx")));
	CK(cuModuleGetFunction(&fn, mod, "scale_add"));
	CK(cuMemAllocHost((void **)&host, n * sizeof(float)));
	CK(cuMemAlloc(&dbuf, n * sizeof(float)));
	for (int s = 0; s < NSTREAMS; s++)
		CK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
	for (unsigned r = 0; r < repeat; r++) {
		size_t piece = (n + NSTREAMS - 1) / NSTREAMS;

		for (size_t i = 0; i < n; i++)
			host[i] = in[i] = (float)(cuda_prog_rand(&rng) % 1000);
		for (int s = 0; s < NSTREAMS; s++) {
			size_t first = (size_t)s * piece;
			int len = (int)(first >= n ? 0 : n - first < piece ? n - first : piece);
			CUdeviceptr d = dbuf + first * sizeof(float);
			float mul = (float)(s + 2), add = (float)(s + 1) * 1000.0f;
			void *params[] = { &d, &len, &mul, &add };

			if (!len)
				continue;
			CK(cuMemcpyHtoDAsync(d, host + first, (size_t)len * sizeof(float), streams[s]));
			CK(cuLaunchKernel(fn, cuda_prog_blocks((size_t)len, 256, 1u << 30), 1, 1, 256, 1,
			                  1, 0, streams[s], params, NULL));
			CK(cuMemcpyDtoHAsync(host + first, d, (size_t)len * sizeof(float), streams[s]));
		}
		for (int s = 0; s < NSTREAMS; s++) {
			CK(cuStreamSynchronize(streams[s]));
			CK(cuStreamQuery(streams[s]));
		}
		for (size_t i = 0; i < n; i++) {
			size_t s = i / piece;
			float want = in[i] * (float)(s + 2) + (float)(s + 1) * 1000.0f;

			if (host[i] != want)
				cuda_prog_fail("round %u: element %zu (stream %zu) = %g, expected %g", r, i,
				               s, host[i], want);
		}
	}
	for (int s = 0; s < NSTREAMS; s++)
		CK(cuStreamDestroy(streams[s]));
	cuda_prog_hold();
	CK(cuMemFree(dbuf));
	CK(cuMemFreeHost(host));
	CK(cuModuleUnload(mod));
	free(in);
	snprintf(summary, sizeof(summary), "%zu floats on %d streams, %u rounds exact", n, NSTREAMS,
	         repeat);
	return cuda_prog_finish(dev, summary);
}
