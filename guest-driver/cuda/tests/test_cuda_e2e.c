// SPDX-License-Identifier: MIT
/*
 * test_cuda_e2e.c - the guest libcuda.so.1 against a real vgpud on simgpu,
 * as a local tenant: device queries, a PTX module (tests/ptx/modules.ptx),
 * allocations, copies, both cuLaunchKernel parameter forms, module
 * globals, streams and events, refused launches, and a faulting kernel
 * that kills only its own context.
 *
 * vgpud comes from $VGPUD, the PTX from $CUDA_TEST_PTX (meson passes both).
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

#include "../../../tests/guest/daemon_runner.h"

#define N 1000u

static struct daemon_runner runner;

#define CHECK(call) assert_int_equal((call), CUDA_SUCCESS)

static int setup(void **state)
{
	static const char *const args[] = { "--vram", "128M", "--chunk-size", "2M", NULL };
	int ret = daemon_start(&runner, args);

	if (ret) {
		fprintf(stderr, "vgpud did not start (%d); log %s\n", ret, runner.log);
		return -1;
	}
	setenv("VGPUD_SOCKET", runner.socket, 1);
	setenv("VGPU_VM_NAME", "cuda-e2e", 1);
	unsetenv("VGPU_DRM_DEVICE");
	return cuInit(0) == CUDA_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
	return daemon_stop(&runner) == 0 ? 0 : -1;
}

static CUmodule load_module(void)
{
	const char *path = getenv("CUDA_TEST_PTX");
	CUmodule mod;

	assert_non_null(path);
	CHECK(cuModuleLoad(&mod, path));
	return mod;
}

static void test_device(void **state)
{
	char name[64];
	int count, major, minor, warp, threads, sms;
	size_t total;
	CUdevice dev;

	CHECK(cuDeviceGetCount(&count));
	assert_int_equal(count, 1);
	CHECK(cuDeviceGet(&dev, 0));
	assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetName(name, sizeof(name), dev));
	assert_string_equal(name, "vGPU (local)");
	CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	assert_true(major >= 7);
	CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
	assert_int_equal(warp, 32);
	CHECK(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
	assert_int_equal(threads, 1024);
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	assert_true(sms > 0);
	CHECK(cuDeviceTotalMem(&total, dev));
	/* the VM's cap (the default profile's 1 GiB: oversubscribing the
	 * 128 MiB GPU is allowed), else its share */
	assert_true(total >= 64u << 20);
	assert_int_equal(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev),
	                 CUDA_ERROR_INVALID_VALUE);
}

static void test_vadd_both_forms(void **state)
{
	uint32_t a[N], b[N], c[N];
	CUdeviceptr da, db, dc, dbias;
	unsigned int n = N;
	size_t free_bytes, total, bias_bytes;
	CUcontext ctx;
	CUfunction vadd, scale_bias;
	CUmodule mod;
	int n_int = N;

	CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
	mod = load_module();
	CHECK(cuModuleGetFunction(&vadd, mod, "vadd_u32"));
	CHECK(cuModuleGetFunction(&scale_bias, mod, "scale_bias"));
	assert_int_equal(cuModuleGetFunction(&vadd, mod, "nope"), CUDA_ERROR_NOT_FOUND);

	for (unsigned int i = 0; i < N; i++) {
		a[i] = i * 3u + 1;
		b[i] = 1000000u - i;
	}
	CHECK(cuMemAlloc(&da, sizeof(a)));
	CHECK(cuMemAlloc(&db, sizeof(b)));
	CHECK(vgpuMemAllocWithPriority(&dc, sizeof(c), 3));
	CHECK(cuMemGetInfo(&free_bytes, &total));
	assert_true(free_bytes < total);
	CHECK(cuMemcpyHtoD(da, a, sizeof(a)));
	CHECK(cuMemcpyHtoD(db, b, sizeof(b)));

	/* kernelParams */
	{
		void *params[] = { &da, &db, &dc, &n };

		CHECK(cuMemsetD32(dc, 0xdeadbeef, N));
		CHECK(cuLaunchKernel(vadd, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params,
		                     NULL));
		CHECK(cuCtxSynchronize());
		CHECK(cuMemcpyDtoH(c, dc, sizeof(c)));
		for (unsigned int i = 0; i < N; i++)
			assert_int_equal(c[i], a[i] + b[i]);
	}
	/* extra: the packed block, its size exactly the function's */
	{
		struct {
			uint64_t a, b, c;
			uint32_t n;
			uint32_t pad;
		} block = { da, dc, dc, n, 0 };
		size_t size = 28;
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &block, CU_LAUNCH_PARAM_BUFFER_SIZE,
			          &size, CU_LAUNCH_PARAM_END };
		size_t wrong = 32;
		void *bad[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &block, CU_LAUNCH_PARAM_BUFFER_SIZE,
			        &wrong, CU_LAUNCH_PARAM_END };

		assert_int_equal(cuLaunchKernel(vadd, 8, 1, 1, 128, 1, 1, 0, NULL, NULL, bad),
		                 CUDA_ERROR_INVALID_VALUE);
		CHECK(cuLaunchKernel(vadd, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
		CHECK(cuMemcpyDtoH(c, dc, sizeof(c)));
		for (unsigned int i = 0; i < N; i++)
			assert_int_equal(c[i], a[i] + a[i] + b[i]);
	}
	/* refused launches: nothing reaches the GPU */
	{
		void *params[] = { &da, &db, &dc, &n };

		assert_int_equal(cuLaunchKernel(vadd, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
		                 CUDA_ERROR_INVALID_VALUE);
		assert_int_equal(cuLaunchKernel(vadd, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
		                 CUDA_ERROR_INVALID_VALUE);
		assert_int_equal(cuLaunchKernel(vadd, 1u << 31, 1, 1, 32, 1, 1, 0, NULL, params,
		                                NULL),
		                 CUDA_ERROR_INVALID_VALUE);
		assert_int_equal(cuMemcpyHtoD(da + sizeof(a) - 4, a, 8), CUDA_ERROR_INVALID_VALUE);
	}
	/* module globals: bias = 7 (and scale = 3, .const) */
	{
		uint32_t bias = 0;
		void *params[] = { &da, &n_int };

		CHECK(cuModuleGetGlobal(&dbias, &bias_bytes, mod, "bias"));
		assert_int_equal(bias_bytes, 4);
		CHECK(cuMemcpyDtoH(&bias, dbias, 4));
		assert_int_equal(bias, 7);
		bias = 11;
		CHECK(cuMemcpyHtoD(dbias, &bias, 4));
		CHECK(cuLaunchKernel(scale_bias, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params,
		                     NULL));
		CHECK(cuMemcpyDtoH(c, da, sizeof(c)));
		for (unsigned int i = 0; i < N; i++)
			assert_int_equal(c[i], a[i] * 3u + 11u);
	}
	CHECK(cuMemFree(da));
	assert_int_equal(cuMemFree(da), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	CHECK(cuModuleUnload(mod));
	CHECK(cuCtxDestroy(ctx));
}

static void test_streams_events(void **state)
{
	enum { M = 4096 };
	CUstream s1, s2;
	CUevent start, stop, untimed;
	CUdeviceptr d1, d2;
	uint32_t *host, *back;
	CUcontext ctx;
	float ms = -1;

	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAllocHost((void **)&host, M * 4));
	CHECK(cuMemAllocHost((void **)&back, M * 4));
	assert_int_equal((uintptr_t)host % 4096, 0);
	for (unsigned int i = 0; i < M; i++)
		host[i] = i * 2654435761u;
	CHECK(cuMemAlloc(&d1, M * 4));
	CHECK(cuMemAlloc(&d2, M * 4));
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_DEFAULT));
	CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));

	CHECK(cuEventRecord(start, s1));
	CHECK(cuMemcpyHtoDAsync(d1, host, M * 4, s1));
	CHECK(cuEventRecord(stop, s1));
	/* s2 copies d1 -> d2 only after s1's copy: the event orders it */
	CHECK(cuStreamWaitEvent(s2, stop, 0));
	CHECK(cuMemcpyDtoDAsync(d2, d1, M * 4, s2));
	CHECK(cuEventRecord(untimed, s2));
	CHECK(cuEventSynchronize(untimed));
	CHECK(cuEventQuery(untimed));
	CHECK(cuStreamQuery(s2));
	CHECK(cuEventElapsedTime(&ms, start, stop));
	assert_true(ms >= 0.0f && ms < 10000.0f);
	assert_int_equal(cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
	/* the legacy stream after blocking stream s2 */
	CHECK(cuMemcpyDtoHAsync(back, d2, M * 4, NULL));
	CHECK(cuStreamSynchronize(NULL));
	assert_memory_equal(host, back, M * 4);

	CHECK(cuMemsetD8Async(d2, 0x5a, M * 4, s2));
	CHECK(cuStreamSynchronize(s2));
	CHECK(cuMemcpyDtoH(back, d2, M * 4));
	for (unsigned int i = 0; i < M; i++)
		assert_int_equal(back[i], 0x5a5a5a5au);

	CHECK(cuEventDestroy(start));
	CHECK(cuEventDestroy(stop));
	CHECK(cuEventDestroy(untimed));
	assert_int_equal(cuEventDestroy(untimed), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuStreamDestroy(s1));
	CHECK(cuStreamDestroy(s2));
	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
	CHECK(cuMemFreeHost(host));
	CHECK(cuMemFreeHost(back));
	CHECK(cuDevicePrimaryCtxRelease(0));
	CHECK(cuCtxSetCurrent(NULL));
}

/* A kernel storing outside the VM's memory kills its context only. */
static void test_fault_is_sticky(void **state)
{
	CUcontext bad, good;
	CUfunction poke, vadd;
	CUmodule bad_mod, good_mod;
	CUdeviceptr d, d2;
	uint64_t wild = 0x7ff000000000ull;
	unsigned int value = 1, n = 1;
	uint32_t x = 0;
	void *params[] = { &wild, &value };
	const char *message;

	CHECK(cuCtxCreate(&good, NULL, 0, 0));
	good_mod = load_module();
	CHECK(cuModuleGetFunction(&vadd, good_mod, "vadd_u32"));
	CHECK(cuMemAlloc(&d, 4));
	CHECK(cuMemsetD32(d, 5, 1));

	CHECK(cuCtxCreate(&bad, NULL, 0, 0));
	bad_mod = load_module();
	CHECK(cuModuleGetFunction(&poke, bad_mod, "poke"));
	CHECK(cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK(vgpuGetLastErrorMessage(&message));
	assert_true(strlen(message) > 0);
	/* sticky */
	assert_int_equal(cuMemAlloc(&d2, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK(cuCtxDestroy(bad));

	/* the other context goes on */
	CHECK(cuCtxSetCurrent(good));
	{
		void *p[] = { &d, &d, &d, &n };

		CHECK(cuLaunchKernel(vadd, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
	}
	CHECK(cuMemcpyDtoH(&x, d, 4));
	assert_int_equal(x, 10);
	CHECK(cuCtxDestroy(good));
}

static void test_proc_address(void **state)
{
	CUdriverProcAddressQueryResult status;
	void *fn = NULL;

	CHECK(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, &status));
	assert_ptr_equal(fn, (void *)cuMemAlloc_v2);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SUCCESS);
	CHECK(cuGetProcAddress("cuCtxCreate", &fn, 13000, 0, &status));
	assert_ptr_equal(fn, (void *)cuCtxCreate_v4);
	assert_int_equal(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &status),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(fn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_vadd_both_forms),
		cmocka_unit_test(test_streams_events),
		cmocka_unit_test(test_fault_is_sticky),
		cmocka_unit_test(test_proc_address),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
