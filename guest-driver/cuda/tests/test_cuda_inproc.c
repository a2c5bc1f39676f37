// SPDX-License-Identifier: MIT
/*
 * test_cuda_inproc.c - one program binary, linked with -lcuda like any
 * user's, against both variants of the library (LD_LIBRARY_PATH picks one,
 * as for the overhead figures):
 *
 *   test_cuda_inproc run      with inproc/libcuda.so.1 and
 *                             VGPU_BACKEND=simgpu VGPU_SIMGPU_VRAM=64M: the
 *                             device is the in-process simgpu of that size,
 *                             a module loads, its globals hold their
 *                             initializers, kernels compute what the CPU
 *                             does, events time them on the GPU's clock.
 *   test_cuda_inproc refused  with the library users get and
 *                             VGPU_BACKEND=simgpu: cuInit finds no device
 *                             and says where the in-process GPU is.
 *   test_cuda_inproc bad-vram with inproc/libcuda.so.1 and a VRAM size
 *                             simgpu cannot have: no device, the reason.
 *
 * The PTX is $CUDA_TEST_PTX (tests/ptx/modules.ptx).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda.h"
#include "vgpu_cuda_ext.h"

static char *ptx;

static void expect_message(const char *part)
{
	const char *message = NULL;

	assert_int_equal(vgpuGetLastErrorMessage(&message), CUDA_SUCCESS);
	assert_non_null(message);
	if (!strstr(message, part)) {
		print_error("message '%s' lacks '%s'\n", message, part);
		fail();
	}
}

static void test_run(void **state)
{
	enum { N = 4096 };
	static uint32_t a[N], b[N], c[N];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction vadd;
	CUdeviceptr da, db, dc, bias;
	CUevent start, stop;
	size_t total = 0, bytes = 0;
	uint32_t value = 0, n = N;
	float ms = -1;
	char name[128];

	(void)state;
	assert_int_equal(cuInit(0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetName(name, sizeof(name), dev), CUDA_SUCCESS);
	if (!strstr(name, "simgpu")) {
		print_error("device '%s' is not the in-process simgpu\n", name);
		fail();
	}
	assert_int_equal(cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
	/* 64 MiB less what simgpu keeps for page tables (at least 4 MiB) */
	assert_true(total > (32u << 20) && total <= (64u << 20) - (4u << 20));
	assert_int_equal(cuCtxCreate(&ctx, NULL, 0, dev), CUDA_SUCCESS);
	assert_int_equal(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&vadd, mod, "vadd_u32"), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetGlobal(&bias, &bytes, mod, "bias"), CUDA_SUCCESS);
	assert_int_equal(bytes, 4);
	assert_int_equal(cuMemcpyDtoH(&value, bias, 4), CUDA_SUCCESS);
	assert_int_equal(value, 7);

	for (uint32_t i = 0; i < N; i++) {
		a[i] = i * 2654435761u;
		b[i] = ~i;
	}
	assert_int_equal(cuMemAlloc(&da, sizeof(a)), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&db, sizeof(b)), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&dc, sizeof(c)), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(da, a, sizeof(a)), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(db, b, sizeof(b)), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&start, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&stop, 0), CUDA_SUCCESS);
	void *params[] = { &da, &db, &dc, &n };
	assert_int_equal(cuEventRecord(start, NULL), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(vadd, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(stop, NULL), CUDA_SUCCESS);
	assert_int_equal(cuEventSynchronize(stop), CUDA_SUCCESS);
	assert_int_equal(cuEventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
	assert_true(ms > 0);
	assert_int_equal(cuMemcpyDtoH(c, dc, sizeof(c)), CUDA_SUCCESS);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(c[i], a[i] + b[i]);
	assert_int_equal(cuEventDestroy(start), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(stop), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(da), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(db), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(dc), CUDA_SUCCESS);
	assert_int_equal(cuModuleUnload(mod), CUDA_SUCCESS);
	assert_int_equal(cuCtxDestroy(ctx), CUDA_SUCCESS);
}

static void test_refused(void **state)
{
	(void)state;
	assert_int_equal(cuInit(0), CUDA_ERROR_NO_DEVICE);
	expect_message("inproc/libcuda.so.1");
}

static void test_bad_vram(void **state)
{
	(void)state;
	assert_int_equal(cuInit(0), CUDA_ERROR_NO_DEVICE);
	expect_message("VGPU_SIMGPU_VRAM");
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		text = malloc((size_t)size + 1);
		if (text && fread(text, 1, (size_t)size, f) == (size_t)size) {
			text[size] = 0;
		} else {
			free(text);
			text = NULL;
		}
	}
	fclose(f);
	return text;
}

int main(int argc, char **argv)
{
	const char *path = getenv("CUDA_TEST_PTX");
	const struct CMUnitTest run[] = { cmocka_unit_test(test_run) };
	const struct CMUnitTest refused[] = { cmocka_unit_test(test_refused) };
	const struct CMUnitTest bad_vram[] = { cmocka_unit_test(test_bad_vram) };
	int failed;

	if (argc != 2) {
		fprintf(stderr, "usage: %s run|refused|bad-vram\n", argv[0]);
		return 2;
	}
	ptx = path ? read_text(path) : NULL;
	if (!ptx) {
		fprintf(stderr, "CUDA_TEST_PTX must name tests/ptx/modules.ptx\n");
		return 1;
	}
	if (!strcmp(argv[1], "run"))
		failed = cmocka_run_group_tests_name("inproc-run", run, NULL, NULL);
	else if (!strcmp(argv[1], "refused"))
		failed = cmocka_run_group_tests_name("inproc-refused", refused, NULL, NULL);
	else if (!strcmp(argv[1], "bad-vram"))
		failed = cmocka_run_group_tests_name("inproc-bad-vram", bad_vram, NULL, NULL);
	else
		failed = 2;
	free(ptx);
	return failed;
}
