// SPDX-License-Identifier: MIT
/*
 * nvrtc-reduce - a C++ template kernel compiled at run time, found by its
 * name expression (nvrtcAddNameExpression / nvrtcGetLoweredName, as JIT
 * frameworks do), its PTX put through the linker (cuLinkCreate,
 * cuLinkAddData with CU_JIT_INPUT_PTX, cuLinkComplete) and loaded as a
 * CUDA 12 library (cuLibraryLoadData, cuLibraryGetKernel), launched with
 * cuLaunchKernelEx: a block-wise shared-memory sum, applied until one
 * value is left, checked against the CPU's sum (exact, modulo 2^32).
 *
 * Usage: nvrtc-reduce [elements]   (default 1000000)
 */
#include <stdint.h>
#include <string.h>

#include "nvrtc_common.h"

#define BLOCK 256

static const char source[] =
	"template <typename T, int BLOCK>\n"
	"__global__ void block_sum(const T *in, T *out, unsigned int n)\n"
	"{\n"
	"	__shared__ T s[BLOCK];\n"
	"	unsigned int i = blockIdx.x * BLOCK * 2 + threadIdx.x;\n"
	"	T v = 0;\n"
	"	if (i < n)\n"
	"		v = in[i];\n"
	"	if (i + BLOCK < n)\n"
	"		v += in[i + BLOCK];\n"
	"	s[threadIdx.x] = v;\n"
	"	__syncthreads();\n"
	"	for (int half = BLOCK / 2; half > 0; half /= 2) {\n"
	"		if (threadIdx.x < half)\n"
	"			s[threadIdx.x] += s[threadIdx.x + half];\n"
	"		__syncthreads();\n"
	"	}\n"
	"	if (threadIdx.x == 0)\n"
	"		out[blockIdx.x] = s[0];\n"
	"}\n";

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 1000000u;
	const char *expr[] = { "block_sum<unsigned int, 256>" };
	char *lowered[1], *ptx, info[256] = "", error[256] = "";
	CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
	                        CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { info, (void *)(uintptr_t)sizeof(info), error,
	                 (void *)(uintptr_t)sizeof(error) };
	CUlinkState link;
	CUlibrary lib;
	CUkernel kernel;
	CUdeviceptr buf[2];
	uint32_t *in, want = 0, got;
	uint64_t seed = 777;
	unsigned int len, cur = 0, passes = 0;
	void *image;
	size_t image_bytes;
	CUresult res;

	nv_start("nvrtc-reduce");
	if (!n)
		return 1;
	ptx = nv_compile(source, "reduce.cu", 0, NULL, NULL, 1, expr, lowered);

	CU(cuLinkCreate(4, opts, vals, &link));
	CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "reduce.ptx", 0, NULL,
	                 NULL));
	CU(cuLinkComplete(link, &image, &image_bytes));
	CU(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLinkDestroy(link)); /* the library keeps what it loaded */
	CU(cuLibraryGetKernel(&kernel, lib, lowered[0]));

	in = malloc(n * sizeof(uint32_t));
	if (!in)
		return 1;
	for (unsigned int i = 0; i < n; i++) {
		in[i] = (uint32_t)nv_rand(&seed);
		want += in[i];
	}
	CU(cuMemAlloc(&buf[0], n * sizeof(uint32_t)));
	CU(cuMemAlloc(&buf[1], ((n + 2 * BLOCK - 1) / (2 * BLOCK)) * sizeof(uint32_t)));
	CU(cuMemcpyHtoD(buf[0], in, n * sizeof(uint32_t)));
	for (len = n; len > 1; len = (len + 2 * BLOCK - 1) / (2 * BLOCK), cur ^= 1, passes++) {
		CUlaunchAttribute attr;
		CUlaunchConfig cfg;
		void *params[] = { &buf[cur], &buf[cur ^ 1], &len };

		memset(&attr, 0, sizeof(attr));
		attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = (len + 2 * BLOCK - 1) / (2 * BLOCK);
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = BLOCK;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.attrs = &attr;
		cfg.numAttrs = 1;
		/* a CUkernel launches as a CUfunction */
		CU(cuLaunchKernelEx(&cfg, (CUfunction)kernel, params, NULL));
	}
	CU(cuMemcpyDtoH(&got, buf[cur], sizeof(got)));

	/* a second PTX input is refused by name: there is no PTX linker */
	CU(cuLinkCreate(4, opts, vals, &link));
	CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "a.ptx", 0, NULL, NULL));
	res = cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "b.ptx", 0, NULL, NULL);
	CU(cuLinkDestroy(link));
	if (res == CUDA_SUCCESS)
		printf("nvrtc-reduce: this driver links two PTX inputs\n");
	else
		printf("nvrtc-reduce: a second PTX input: error %d (%s)\n", (int)res, error);

	CU(cuMemFree(buf[0]));
	CU(cuMemFree(buf[1]));
	CU(cuLibraryUnload(lib));
	free(lowered[0]);
	free(ptx);
	free(in);
	printf("nvrtc-reduce: %u elements in %u passes: sum %u, CPU %u\n", n, passes, got, want);
	return got == want ? 0 : 1;
}
