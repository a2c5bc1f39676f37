// SPDX-License-Identifier: MIT
/*
 * nvrtc-saxpy - the plainest JIT client: CUDA C compiled at run time with
 * NVRTC, the PTX loaded with cuModuleLoadData, one launch, checked
 * against the CPU (--fmad=false: a*x+y rounds twice on both sides, so the
 * results are equal bit for bit).
 *
 * Usage: nvrtc-saxpy [elements]   (default 65536)
 */
#include <stdint.h>
#include <string.h>

#include "nvrtc_common.h"

static const char source[] =
	"extern \"C\" __global__ void saxpy(float a, const float *x, const float *y,\n"
	"                                   float *out, unsigned int n)\n"
	"{\n"
	"	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i < n)\n"
	"		out[i] = a * x[i] + y[i];\n"
	"}\n";

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 65536u;
	float a = 2.5f, *x, *y, *out;
	CUdeviceptr dx, dy, dout;
	CUmodule mod;
	CUfunction f;
	unsigned int bad = 0;
	uint64_t seed = 12345;
	char *ptx;
	void *params[] = { &a, &dx, &dy, &dout, &n };

	nv_start("nvrtc-saxpy");
	ptx = nv_compile(source, "saxpy.cu", 0, NULL, NULL, 0, NULL, NULL);
	CU(cuModuleLoadData(&mod, ptx));
	CU(cuModuleGetFunction(&f, mod, "saxpy"));
	x = malloc(n * sizeof(float));
	y = malloc(n * sizeof(float));
	out = malloc(n * sizeof(float));
	if (!x || !y || !out || !n)
		return 1;
	for (unsigned int i = 0; i < n; i++) {
		x[i] = (float)(nv_rand(&seed) % 100000) / 1000.0f;
		y[i] = (float)(nv_rand(&seed) % 100000) / 7.0f;
	}
	CU(cuMemAlloc(&dx, n * sizeof(float)));
	CU(cuMemAlloc(&dy, n * sizeof(float)));
	CU(cuMemAlloc(&dout, n * sizeof(float)));
	CU(cuMemcpyHtoD(dx, x, n * sizeof(float)));
	CU(cuMemcpyHtoD(dy, y, n * sizeof(float)));
	CU(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
	CU(cuMemcpyDtoH(out, dout, n * sizeof(float)));
	for (unsigned int i = 0; i < n; i++) {
		volatile float prod = a * x[i];
		float want = prod + y[i];

		if (memcmp(&want, &out[i], sizeof(float)) && bad++ < 5)
			fprintf(stderr, "nvrtc-saxpy: out[%u] = %.9g, CPU %.9g\n", i, (double)out[i],
			        (double)want);
	}
	CU(cuMemFree(dx));
	CU(cuMemFree(dy));
	CU(cuMemFree(dout));
	CU(cuModuleUnload(mod));
	free(ptx);
	free(x);
	free(y);
	free(out);
	printf("nvrtc-saxpy: %u elements, %u wrong\n", n, bad);
	return bad ? 1 : 0;
}
