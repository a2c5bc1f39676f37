// SPDX-License-Identifier: MIT
/*
 * launch_forms - saxpy from a PTX-only fatbin (kernels/saxpy.fatbin, as
 * nvcc compresses it) loaded from memory with cuModuleLoadData, launched
 * alternately with both cuLaunchKernel parameter forms: kernelParams (an
 * array of pointers to each argument) and extra (one packed argument
 * buffer, CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE). Each launch builds on the
 * last, so a launch that read wrong arguments shows in the end result.
 * Working set: x and y, BYTES/2 each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_prog.h"

/* saxpy(int n, float a, const float *x, float *y) as the PTX lays it out. */
struct saxpy_args {
	int n;
	float a;
	CUdeviceptr x;
	CUdeviceptr y;
};

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy;
	size_t bytes, image_len;
	uint64_t rng = cuda_prog_seed();
	unsigned launches = 6 * cuda_prog_repeat();
	char summary[128];

	cuda_prog_start("launch_forms", argc, argv, 4u << 20, &bytes, &dev);
	int n = (int)(bytes / (2 * sizeof(float)) > 0x40000000 ? 0x40000000 : bytes / (2 * sizeof(float)));
	float *x = cuda_prog_alloc((size_t)n * sizeof(float));
	float *y = cuda_prog_alloc((size_t)n * sizeof(float));
	float *want = cuda_prog_alloc((size_t)n * sizeof(float));
	void *image = cuda_prog_read_file(cuda_prog_kernel_path("saxpy.fatbin"), &image_len);

	CK(cuModuleLoadData(&mod, image));
	free(image); /* the driver keeps what it needs */
	CK(cuModuleGetFunction(&fn, mod, "saxpy"));
	CK(cuMemAlloc(&dx, (size_t)n * sizeof(float)));
	CK(cuMemAlloc(&dy, (size_t)n * sizeof(float)));
	for (int i = 0; i < n; i++) {
		x[i] = (float)(cuda_prog_rand(&rng) % 201) - 100.0f;
		want[i] = y[i] = (float)(cuda_prog_rand(&rng) % 201) - 100.0f;
	}
	CK(cuMemcpyHtoD(dx, x, (size_t)n * sizeof(float)));
	CK(cuMemcpyHtoD(dy, y, (size_t)n * sizeof(float)));
	for (unsigned l = 0; l < launches; l++) {
		float a = l & 1 ? -1.0f : 2.0f; /* keeps |y| small: exact */
		unsigned grid = cuda_prog_blocks((size_t)n, 128, 2048);

		if (l % 2 == 0) {
			void *params[] = { &n, &a, &dx, &dy };

			CK(cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
		} else {
			struct saxpy_args args;
			size_t size = sizeof(args);

			memset(&args, 0, sizeof(args));
			args.n = n;
			args.a = a;
			args.x = dx;
			args.y = dy;
			void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &args,
			                  CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
			CK(cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
		}
		for (int i = 0; i < n; i++)
			want[i] = a * x[i] + want[i];
	}
	CK(cuMemcpyDtoH(y, dy, (size_t)n * sizeof(float)));
	for (int i = 0; i < n; i++)
		if (y[i] != want[i])
			cuda_prog_fail("after %u launches (both forms): y[%d] = %g, expected %g",
			               launches, i, y[i], want[i]);
	CK(cuMemFree(dx));
	CK(cuMemFree(dy));
	CK(cuModuleUnload(mod));
	free(x);
	free(y);
	free(want);
	snprintf(summary, sizeof(summary),
	         "fatbin (%zu bytes), %u launches in both parameter forms, %d elements exact",
	         image_len, launches, n);
	return cuda_prog_finish(dev, summary);
}
