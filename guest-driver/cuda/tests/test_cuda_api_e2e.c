// SPDX-License-Identifier: MIT
/*
 * test_cuda_api_e2e.c - the breadth of the guest libcuda.so.1 that
 * JIT-based clients and cuda-python use, against a real vgpud on simgpu
 * as a local tenant: cuLaunchKernelEx and its attributes, the library
 * API, the PTX linker, pointer attributes, host-registered memory, pitched
 * copies and fills, device properties, limits, function names.
 *
 * vgpud comes from $VGPUD, the PTX (tests/ptx/modules.ptx: vadd_u32,
 * scale_bias with its globals, and three more) from $CUDA_TEST_PTX.
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

#include "../../../tests/guest/daemon_runner.h"

#define N 777u

static struct daemon_runner runner;
static CUcontext ctx;
static char *ptx;

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
	setenv("VGPU_VM_NAME", "cuda-api-e2e", 1);
	unsetenv("VGPU_DRM_DEVICE");
	ptx = read_file(getenv("CUDA_TEST_PTX"));
	if (!ptx || cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, NULL, 0, 0) != CUDA_SUCCESS)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	free(ptx);
	if (cuCtxDestroy(ctx) != CUDA_SUCCESS)
		return -1;
	return daemon_stop(&runner) == 0 ? 0 : -1;
}

/* Run vadd (c = a + b) through f with launch, check c. */
static void run_vadd(CUfunction f, bool ex)
{
	uint32_t a[N], b[N], c[N];
	CUdeviceptr da, db, dc;
	unsigned int n = N;
	void *params[] = { &da, &db, &dc, &n };

	for (unsigned int i = 0; i < N; i++) {
		a[i] = i * 7u;
		b[i] = 3u * i + 11u;
	}
	CHECK(cuMemAlloc(&da, sizeof(a)));
	CHECK(cuMemAlloc(&db, sizeof(b)));
	CHECK(cuMemAlloc(&dc, sizeof(c)));
	CHECK(cuMemcpyHtoD(da, a, sizeof(a)));
	CHECK(cuMemcpyHtoD(db, b, sizeof(b)));
	CHECK(cuMemsetD32(dc, 0xdeadbeef, N));
	if (ex) {
		CUlaunchAttribute attr[2];
		CUlaunchConfig cfg = { .gridDimX = (N + 127) / 128, .gridDimY = 1, .gridDimZ = 1,
		                       .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
		                       .attrs = attr, .numAttrs = 2 };

		memset(attr, 0, sizeof(attr));
		attr[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		attr[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE; /* 0: an ordinary launch */
		CHECK(cuLaunchKernelEx(&cfg, f, params, NULL));
		attr[1].value.cooperative = 1;
		assert_int_equal(cuLaunchKernelEx(&cfg, f, params, NULL), CUDA_ERROR_NOT_SUPPORTED);
		assert_int_equal(cuLaunchKernelEx(NULL, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
	} else {
		CHECK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	}
	CHECK(cuMemcpyDtoH(c, dc, sizeof(c)));
	for (unsigned int i = 0; i < N; i++)
		assert_int_equal(c[i], a[i] + b[i]);
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
}

static void test_launch_ex(void **state)
{
	CUmodule mod;
	CUfunction f;
	const char *name = NULL;
	unsigned int count = 0;
	CUmodule owner;

	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&f, mod, "vadd_u32"));
	CHECK(cuFuncGetName(&name, f));
	assert_string_equal(name, "vadd_u32");
	CHECK(cuFuncGetModule(&owner, f));
	assert_ptr_equal(owner, mod);
	CHECK(cuModuleGetFunctionCount(&count, mod));
	assert_int_equal(count, 5);
	run_vadd(f, true);
	CHECK(cuModuleUnload(mod));
	assert_int_equal(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
}

static void test_library(void **state)
{
	CUlibrary lib, lib2;
	CUkernel k, ks[8];
	CUfunction f;
	CUmodule mod;
	CUdeviceptr bias;
	size_t bytes;
	uint32_t v = 0;
	unsigned int count;
	const char *name;
	CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
	void *optval = NULL;
	int threads;

	CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, &opt, &optval, 1));
	CHECK(cuLibraryGetKernel(&k, lib, "vadd_u32"));
	assert_int_equal(cuLibraryGetKernel(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND);
	CHECK(cuLibraryGetKernel(&k, lib, "vadd_u32"));
	CHECK(cuKernelGetFunction(&f, k));
	CHECK(cuKernelGetName(&name, k));
	assert_string_equal(name, "vadd_u32");
	CHECK(cuKernelGetLibrary(&lib2, k));
	assert_ptr_equal(lib2, lib);
	CHECK(cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
	assert_true(threads >= 128);
	run_vadd(f, false);
	run_vadd((CUfunction)k, true); /* a CUkernel launches as a CUfunction */
	CHECK(cuLibraryGetKernelCount(&count, lib));
	assert_int_equal(count, 5);
	CHECK(cuLibraryEnumerateKernels(ks, count, lib));
	for (unsigned int i = 0; i < count; i++)
		CHECK(cuKernelGetName(&name, ks[i]));
	CHECK(cuLibraryGetModule(&mod, lib));
	CHECK(cuModuleGetFunction(&f, mod, "scale_bias"));
	CHECK(cuLibraryGetGlobal(&bias, &bytes, lib, "bias"));
	assert_int_equal(bytes, 4);
	CHECK(cuMemcpyDtoH(&v, bias, 4));
	assert_int_equal(v, 7);
	CHECK(cuLibraryUnload(lib));
	assert_int_equal(cuLibraryGetKernel(&k, lib, "vadd_u32"), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);

	CHECK(cuLibraryLoadFromFile(&lib, getenv("CUDA_TEST_PTX"), NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k, lib, "vadd_u32"));
	run_vadd((CUfunction)k, false);
	CHECK(cuLibraryUnload(lib));
	assert_int_equal(cuLibraryLoadFromFile(&lib, "/nonexistent.ptx", NULL, NULL, 0, NULL, NULL,
	                                       0),
	                 CUDA_ERROR_FILE_NOT_FOUND);
}

static void test_link(void **state)
{
	char info[256], error[256];
	CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
	                        CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
	                        CU_JIT_OPTIMIZATION_LEVEL };
	void *vals[] = { info, (void *)(uintptr_t)sizeof(info), error,
	                 (void *)(uintptr_t)sizeof(error), (void *)(uintptr_t)4 };
	CUlinkState link;
	void *image;
	size_t size;
	CUmodule mod;
	CUfunction f;
	char elf[] = "\177ELF....";

	CHECK(cuLinkCreate(5, opts, vals, &link));
	assert_int_equal(cuLinkComplete(link, &image, &size), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLinkAddData(link, CU_JIT_INPUT_CUBIN, elf, sizeof(elf), "x.cubin", 0,
	                               NULL, NULL),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "modules.ptx", 0, NULL,
	                    NULL));
	error[0] = 0;
	assert_int_equal(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "second.ptx",
	                               0, NULL, NULL),
	                 CUDA_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(error, "second PTX input"));
	CHECK(cuLinkComplete(link, &image, &size));
	assert_int_equal(size, strlen(ptx) + 1);
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuLinkDestroy(link));
	assert_int_equal(cuLinkDestroy(link), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuModuleGetFunction(&f, mod, "vadd_u32"));
	run_vadd(f, false);
	CHECK(cuModuleUnload(mod));

	CHECK(cuLinkCreate(0, NULL, NULL, &link));
	CHECK(cuLinkAddFile(link, CU_JIT_INPUT_PTX, getenv("CUDA_TEST_PTX"), 0, NULL, NULL));
	CHECK(cuLinkComplete(link, &image, &size));
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuLinkDestroy(link));
	CHECK(cuModuleUnload(mod));
	CHECK(cuLinkCreate(0, NULL, NULL, &link));
	assert_int_equal(cuLinkAddData(link, CU_JIT_INPUT_PTX, "not ptx", 8, NULL, 0, NULL, NULL),
	                 CUDA_ERROR_INVALID_PTX);
	CHECK(cuLinkDestroy(link));
}

static void test_pointer_attributes(void **state)
{
	CUdeviceptr d1, d2, base, devptr;
	unsigned int type = 0;
	CUcontext c = NULL;
	unsigned long long id1, id2;
	size_t size;
	void *host, *hp;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	                                CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
	                                CU_POINTER_ATTRIBUTE_RANGE_SIZE,
	                                CU_POINTER_ATTRIBUTE_CONTEXT };
	void *data[] = { &type, &base, &size, &c };
	int local = 5;

	CHECK(cuMemAlloc(&d1, 1000));
	CHECK(cuMemAlloc(&d2, 4096));
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d1 + 10));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	CHECK(cuPointerGetAttribute(&devptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d1 + 10));
	assert_int_equal(devptr, d1 + 10);
	CHECK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d1));
	assert_ptr_equal(c, ctx);
	CHECK(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d2 + 4000));
	assert_int_equal(base, d2);
	CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d2 + 4000));
	assert_int_equal(size, 4096);
	CHECK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, d1));
	CHECK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, d2 + 1));
	assert_true(id1 != id2 && id1 && id2);
	assert_int_equal(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d1),
	                 CUDA_ERROR_INVALID_VALUE);

	CHECK(cuPointerGetAttributes(4, attrs, data, d2 + 8));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	assert_int_equal(base, d2);
	assert_int_equal(size, 4096);
	assert_ptr_equal(c, ctx);

	CHECK(cuMemAllocHost(&host, 256));
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	                            (CUdeviceptr)(uintptr_t)host + 5));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	CHECK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER,
	                            (CUdeviceptr)(uintptr_t)host));
	assert_ptr_equal(hp, host);
	assert_int_equal(cuPointerGetAttribute(&devptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
	                                       (CUdeviceptr)(uintptr_t)host),
	                 CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuMemFreeHost(host));

	/* memory the library does not know */
	assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	                                       (CUdeviceptr)(uintptr_t)&local),
	                 CUDA_ERROR_INVALID_VALUE);
	type = 9;
	c = ctx;
	CHECK(cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)(uintptr_t)&local));
	assert_int_equal(type, 0);
	assert_null(c);
	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
}

static void test_host_register(void **state)
{
	enum { WORDS = 4096 };
	uint32_t *in = malloc(WORDS * 4), *out = malloc(WORDS * 4);
	CUdeviceptr d, dp;
	unsigned int type;
	CUstream s;

	assert_non_null(in);
	assert_non_null(out);
	for (unsigned int i = 0; i < WORDS; i++)
		in[i] = i * 2654435761u;
	memset(out, 0, WORDS * 4);
	CHECK(cuMemHostRegister(in, WORDS * 4, CU_MEMHOSTREGISTER_PORTABLE));
	CHECK(cuMemHostRegister(out, WORDS * 4, 0));
	assert_int_equal(cuMemHostRegister(in + 10, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	assert_int_equal(cuMemHostGetDevicePointer(&dp, in, 0), CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	                            (CUdeviceptr)(uintptr_t)(in + 100)));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);

	CHECK(cuMemAlloc(&d, WORDS * 4));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemcpyHtoDAsync(d, in, WORDS * 4, s));
	CHECK(cuMemcpyDtoHAsync(out, d, WORDS * 4, s));
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal(in, out, WORDS * 4);
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));

	CHECK(cuMemHostUnregister(in));
	CHECK(cuMemHostUnregister(out));
	assert_int_equal(cuMemHostUnregister(in), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	assert_int_equal(cuMemHostRegister(in, WORDS * 4, CU_MEMHOSTREGISTER_DEVICEMAP),
	                 CUDA_ERROR_NOT_SUPPORTED);
	free(in);
	free(out);
}

static void test_memcpy2d(void **state)
{
	enum { W = 100, H = 37, HP = 128 }; /* width in bytes, rows, host pitch */
	static uint8_t src[H * HP], back[H * HP], expect[H * HP];
	CUdeviceptr d1, d2;
	size_t p1, p2;
	CUDA_MEMCPY2D c;
	CUstream s;

	for (unsigned int i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 31u + 7u);
	CHECK(cuMemAllocPitch(&d1, &p1, W, H, 4));
	CHECK(cuMemAllocPitch(&d2, &p2, W + 20, H, 4));
	assert_true(p1 >= W && p2 >= W + 20);

	/* host (pitch HP) -> d1 -> d2 at column 8 -> host (pitch HP) */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = HP;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d1;
	c.dstPitch = p1;
	c.WidthInBytes = W;
	c.Height = H;
	CHECK(cuMemcpy2D(&c));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d1;
	c.srcPitch = p1;
	c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	c.dstDevice = d2;
	c.dstXInBytes = 8;
	c.dstPitch = p2;
	c.WidthInBytes = W;
	c.Height = H;
	CHECK(cuMemsetD2D8(d2, p2, 0x5a, W + 20, H));
	CHECK(cuMemcpy2D(&c));
	/* a 2x3 rectangle of 32-bit words at (row 1, byte 4) */
	CHECK(cuMemsetD2D32(d2 + p2 + 4, p2, 0x01020304u, 2, 3));

	memset(back, 0xee, sizeof(back));
	memcpy(expect, back, sizeof(expect));
	for (unsigned int y = 0; y < H; y++) {
		memset(expect + y * HP, 0x5a, W + 20);
		memcpy(expect + y * HP + 8, src + y * HP, W);
	}
	for (unsigned int y = 1; y < 4; y++)
		for (unsigned int x = 0; x < 2; x++) {
			uint32_t word = 0x01020304u;

			memcpy(expect + y * HP + 4 + 4 * x, &word, 4);
		}
	CHECK(cuStreamCreate(&s, 0));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d2;
	c.srcPitch = p2;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.dstPitch = HP;
	c.WidthInBytes = W + 20;
	c.Height = H;
	CHECK(cuMemcpy2DAsync(&c, s));
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal(back, expect, sizeof(back));

	/* rows past the allocation are refused, not sent */
	c.srcY = 1;
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.srcY = 0;
	c.WidthInBytes = p2 + 1; /* wider than the pitch */
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.WidthInBytes = W;
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
}

static void test_device_and_context(void **state)
{
	CUdevprop prop;
	int v;
	size_t limit;
	unsigned int api;

	CHECK(cuDeviceGetProperties(&prop, 0));
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
	assert_int_equal(prop.maxThreadsPerBlock, v);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 0));
	assert_int_equal(prop.maxGridSize[1], v);
	assert_int_equal(prop.SIMDWidth, 32);
	assert_int_equal(cuDeviceGetProperties(&prop, 1), CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0));
	assert_int_equal(v, 1);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0));
	assert_int_equal(v, 0);

	CHECK(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
	assert_true(limit > 0);
	CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
	CHECK(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
	assert_int_equal(limit, 4096);
	assert_int_equal(cuCtxGetLimit(&limit, (CUlimit)0x40), CUDA_ERROR_UNSUPPORTED_LIMIT);
	CHECK(cuCtxGetApiVersion(ctx, &api));
	assert_true(api >= 3020);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch_ex),
		cmocka_unit_test(test_library),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_pointer_attributes),
		cmocka_unit_test(test_host_register),
		cmocka_unit_test(test_memcpy2d),
		cmocka_unit_test(test_device_and_context),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
