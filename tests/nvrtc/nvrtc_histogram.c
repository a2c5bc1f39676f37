// SPDX-License-Identifier: MIT
/*
 * nvrtc-histogram - a program with a header of its own (passed to
 * nvrtcCreateProgram), a module global (__device__ counter read and reset
 * through cuModuleGetGlobal), shared-memory and global atomics, a
 * stream with async copies and timing events, and pitched memory
 * (cuMemAllocPitch, cuMemcpy2D): a 2D image of bytes, binned per row band,
 * checked against the CPU's histogram.
 *
 * Usage: nvrtc-histogram [width [height]]   (default 1000 x 300)
 */
#include <stdint.h>
#include <string.h>

#include "nvrtc_common.h"

static const char header[] =
	"#define NBINS 64\n"
	"__device__ unsigned int pixels_seen;\n";

static const char source[] =
	"#include \"bins.h\"\n"
	"extern \"C\" __global__ void histogram(const unsigned char *img, unsigned long long pitch,\n"
	"                                        unsigned int w, unsigned int h,\n"
	"                                        unsigned int *bins)\n"
	"{\n"
	"	__shared__ unsigned int local[NBINS];\n"
	"	for (unsigned int b = threadIdx.x; b < NBINS; b += blockDim.x)\n"
	"		local[b] = 0;\n"
	"	__syncthreads();\n"
	"	unsigned int y = blockIdx.x;\n"
	"	unsigned int seen = 0;\n"
	"	if (y < h)\n"
	"		for (unsigned int x = threadIdx.x; x < w; x += blockDim.x) {\n"
	"			atomicAdd(&local[img[y * pitch + x] % NBINS], 1u);\n"
	"			seen++;\n"
	"		}\n"
	"	__syncthreads();\n"
	"	for (unsigned int b = threadIdx.x; b < NBINS; b += blockDim.x)\n"
	"		atomicAdd(&bins[b], local[b]);\n"
	"	atomicAdd(&pixels_seen, seen);\n"
	"}\n";

#define NBINS 64

int main(int argc, char **argv)
{
	unsigned int w = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 1000u;
	unsigned int h = argc > 2 ? (unsigned int)strtoul(argv[2], NULL, 0) : 300u;
	const char *headers[] = { header }, *names[] = { "bins.h" };
	unsigned int bins[NBINS], want[NBINS] = { 0 }, seen = 0, bad = 0;
	unsigned long long pitch;
	CUdeviceptr dimg, dbins, dseen;
	size_t seen_bytes, dpitch;
	CUDA_MEMCPY2D copy;
	CUevent start, stop;
	CUstream s;
	CUmodule mod;
	CUfunction f;
	uint8_t *img;
	uint64_t seed = 99;
	float ms = -1;
	char *ptx;
	void *params[] = { &dimg, &pitch, &w, &h, &dbins };

	nv_start("nvrtc-histogram");
	if (!w || !h)
		return 1;
	ptx = nv_compile(source, "histogram.cu", 1, headers, names, 0, NULL, NULL);
	CU(cuModuleLoadData(&mod, ptx));
	CU(cuModuleGetFunction(&f, mod, "histogram"));
	CU(cuModuleGetGlobal(&dseen, &seen_bytes, mod, "pixels_seen"));
	if (seen_bytes != sizeof(unsigned int))
		return 1;

	img = malloc((size_t)w * h);
	if (!img)
		return 1;
	for (size_t i = 0; i < (size_t)w * h; i++) {
		img[i] = (uint8_t)(nv_rand(&seed) >> 11);
		want[img[i] % NBINS]++;
	}
	CU(cuMemAllocPitch(&dimg, &dpitch, w, h, 4));
	pitch = dpitch;
	CU(cuMemAlloc(&dbins, sizeof(bins)));
	CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));

	memset(&copy, 0, sizeof(copy));
	copy.srcMemoryType = CU_MEMORYTYPE_HOST;
	copy.srcHost = img;
	copy.srcPitch = w;
	copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	copy.dstDevice = dimg;
	copy.dstPitch = dpitch;
	copy.WidthInBytes = w;
	copy.Height = h;
	CU(cuMemcpy2DAsync(&copy, s));
	CU(cuMemsetD32Async(dbins, 0, NBINS, s));
	CU(cuMemsetD32Async(dseen, 0, 1, s));
	CU(cuEventRecord(start, s));
	CU(cuLaunchKernel(f, h, 1, 1, 128, 1, 1, 0, s, params, NULL));
	CU(cuEventRecord(stop, s));
	CU(cuMemcpyDtoHAsync(bins, dbins, sizeof(bins), s));
	CU(cuMemcpyDtoHAsync(&seen, dseen, sizeof(seen), s));
	CU(cuStreamSynchronize(s));
	CU(cuEventElapsedTime(&ms, start, stop));

	for (unsigned int b = 0; b < NBINS; b++)
		if (bins[b] != want[b] && bad++ < 5)
			fprintf(stderr, "nvrtc-histogram: bin %u = %u, CPU %u\n", b, bins[b], want[b]);
	if (seen != w * h) {
		fprintf(stderr, "nvrtc-histogram: pixels_seen %u, want %u\n", seen, w * h);
		bad++;
	}
	if (!(ms >= 0)) {
		fprintf(stderr, "nvrtc-histogram: elapsed time %f\n", (double)ms);
		bad++;
	}
	CU(cuEventDestroy(start));
	CU(cuEventDestroy(stop));
	CU(cuStreamDestroy(s));
	CU(cuMemFree(dimg));
	CU(cuMemFree(dbins));
	CU(cuModuleUnload(mod));
	free(ptx);
	free(img);
	printf("nvrtc-histogram: %ux%u pixels (pitch %llu), kernel %.3f ms, %u wrong\n", w, h,
	       pitch, (double)ms, bad);
	return bad ? 1 : 0;
}
