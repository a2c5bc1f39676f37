// SPDX-License-Identifier: MIT
/*
 * test_cuda_unit.c - the parts of the guest libcuda.so.1 that need no
 * vGPU: the pointer table (against a brute-force model, randomized: the
 * seed is printed on failure, VGPU_TEST_SEED replays it), parameter
 * packing in both cuLaunchKernel forms, launch checks and occupancy,
 * cuLaunchKernelEx's attributes, the cuGetProcAddress table, error names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cuda.h"
#include "device_limits.h"
#include "launch_attrs.h"
#include "launch_params.h"
#include "ptrtable.h"

/* ------------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_ptrtable_model(void **state)
{
	enum { SLOTS = 64, SLOT = 1 << 16 };
	struct cu_ptr_table t = { 0 };
	uint64_t model_len[SLOTS] = { 0 };
	const char *env = getenv("VGPU_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);

	rng_state = seed | 1;
	for (int step = 0; step < 20000; step++) {
		unsigned int slot = (unsigned int)(rng() % SLOTS);
		uint64_t base = 0x100000000ull + (uint64_t)slot * SLOT;

		if (model_len[slot]) {
			struct cu_range out;

			if (rng() % 2) {
				if (cu_ptr_remove(&t, base, &out) != 0 || out.bytes != model_len[slot]) {
					fail_msg("seed %llu: remove of slot %u", (unsigned long long)seed,
					         slot);
				}
				model_len[slot] = 0;
			} else if (cu_ptr_remove(&t, base + 1, NULL) != -ENOENT) {
				fail_msg("seed %llu: removed by an inner address", (unsigned long long)seed);
			}
		} else {
			struct cu_range r = { .va = base, .bytes = 1 + rng() % SLOT };

			if (cu_ptr_insert(&t, &r) != 0)
				fail_msg("seed %llu: insert", (unsigned long long)seed);
			model_len[slot] = r.bytes;
		}
		/* probe any address against the model */
		uint64_t probe = 0x100000000ull - 16 + rng() % ((uint64_t)SLOTS * SLOT + 32);
		const struct cu_range *found = cu_ptr_find(&t, probe);
		bool expect = false;

		if (probe >= 0x100000000ull) {
			uint64_t off = probe - 0x100000000ull;
			unsigned int s = (unsigned int)(off / SLOT);

			expect = s < SLOTS && model_len[s] && off % SLOT < model_len[s];
		}
		if ((found != NULL) != expect)
			fail_msg("seed %llu: find(0x%llx) %s", (unsigned long long)seed,
			         (unsigned long long)probe, found ? "found" : "missed");
	}
	cu_ptr_table_free(&t);
}

static void test_ptrtable_edges(void **state)
{
	struct cu_ptr_table t = { 0 };
	struct cu_range a = { .va = 0x1000, .bytes = 0x1000 }, b = a, z = { .va = 0x9000 };

	assert_int_equal(cu_ptr_insert(&t, &a), 0);
	assert_int_equal(cu_ptr_insert(&t, &b), -EEXIST);
	b.va = 0x1800;
	assert_int_equal(cu_ptr_insert(&t, &b), -EEXIST);
	b.va = 0x800;
	assert_int_equal(cu_ptr_insert(&t, &b), -EEXIST);
	b.va = 0x2000;
	assert_int_equal(cu_ptr_insert(&t, &b), 0);
	assert_int_equal(cu_ptr_insert(&t, &z), -EEXIST); /* empty */
	assert_true(cu_ptr_contains(&t, 0x1000, 0x1000));
	assert_false(cu_ptr_contains(&t, 0x1000, 0x1001)); /* spans two ranges */
	assert_true(cu_ptr_contains(&t, 0x2fff, 1));
	assert_false(cu_ptr_contains(&t, 0x3000, 1));
	assert_false(cu_ptr_contains(&t, 0xfff, 1));
	assert_false(cu_ptr_contains(&t, 0x1800, UINT64_MAX));
	cu_ptr_table_free(&t);
}

/* ------------------------------------------------------------------------ */

static const struct vgpu_module_param vadd_params[] = {
	{ 0, 8, 8, 0 }, { 8, 8, 8, 0 }, { 16, 8, 8, 0 }, { 24, 4, 4, 0 },
};
static const struct vgpu_guest_function vadd = {
	.name = "vadd", .param_count = 4, .params = vadd_params, .param_bytes = 28,
};
static const struct vgpu_guest_function none = { .name = "none" };

static void test_pack_kernel_params(void **state)
{
	uint64_t a = 0x1111222233334444ull, b = 5, c = 6;
	uint32_t n = 77, block[8];
	void *params[] = { &a, &b, &c, &n };
	void *with_null[] = { &a, NULL, &c, &n };
	const char *why;

	memset(block, 0xff, sizeof(block));
	assert_int_equal(cu_pack_params(&vadd, params, NULL, block, sizeof(block), &why),
	                 CUDA_SUCCESS);
	assert_memory_equal(block, &a, 8);
	assert_memory_equal((uint8_t *)block + 8, &b, 8);
	assert_memory_equal((uint8_t *)block + 16, &c, 8);
	assert_int_equal(block[6], 77);
	assert_int_equal(cu_pack_params(&vadd, with_null, NULL, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu_pack_params(&vadd, NULL, NULL, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu_pack_params(&vadd, params, NULL, block, 16, &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu_pack_params(&none, NULL, NULL, block, sizeof(block), &why),
	                 CUDA_SUCCESS);
}

static void test_pack_extra(void **state)
{
	uint8_t buffer[28], block[32];
	size_t size = 28, wrong = 24;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
		          &size, CU_LAUNCH_PARAM_END };
	void *bad_size[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
		             &wrong, CU_LAUNCH_PARAM_END };
	void *no_size[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_END };
	void *unknown[] = { (void *)7, buffer, CU_LAUNCH_PARAM_END };
	void *endless[80];
	uint64_t a = 1;
	void *params[] = { &a, &a, &a, &a };
	const char *why;

	for (unsigned int i = 0; i < sizeof(buffer); i++)
		buffer[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(cu_pack_params(&vadd, NULL, extra, block, sizeof(block), &why),
	                 CUDA_SUCCESS);
	assert_memory_equal(block, buffer, 28);
	assert_int_equal(cu_pack_params(&vadd, NULL, bad_size, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_non_null(strstr(why, "size"));
	assert_int_equal(cu_pack_params(&vadd, NULL, no_size, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu_pack_params(&vadd, NULL, unknown, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu_pack_params(&vadd, params, extra, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
	for (unsigned int i = 0; i < 80; i++)
		endless[i] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	assert_int_equal(cu_pack_params(&vadd, NULL, endless, block, sizeof(block), &why),
	                 CUDA_ERROR_INVALID_VALUE);
}

/* ------------------------------------------------------------------------ */

static size_t shared_fixed(int block, void *arg)
{
	return *(size_t *)arg;
}

static size_t shared_per_thread(int block, void *arg)
{
	return (size_t)block * 64;
}

static void test_occupancy(void **state)
{
	struct cu_limits l;
	size_t none_shared = 0, big = 100 * 1024;
	int block, grid;

	cu_limits_default(&l);
	/* 2048 threads per SM and 32 regs each: 64 warps fit */
	assert_int_equal(cu_occupancy_blocks(&l, 1024, 0), 2);
	assert_int_equal(cu_occupancy_blocks(&l, 256, 0), 8);
	assert_int_equal(cu_occupancy_blocks(&l, 32, 0), 32); /* the block limit */
	assert_int_equal(cu_occupancy_blocks(&l, 33, 0), 32);
	assert_int_equal(cu_occupancy_blocks(&l, 256, big), 2); /* 228K / 100K */
	assert_int_equal(cu_occupancy_blocks(&l, 2048, 0), 0);
	assert_int_equal(cu_occupancy_blocks(&l, 0, 0), 0);

	assert_int_equal(cu_occupancy_best_block(&l, 0, 0, shared_fixed, &none_shared, &block,
	                                         &grid), 0);
	assert_int_equal(block * cu_occupancy_blocks(&l, block, 0), 2048);
	assert_int_equal(grid, cu_occupancy_blocks(&l, block, 0) * l.multiprocessors);
	assert_int_equal(cu_occupancy_best_block(&l, 100, 0, shared_fixed, &none_shared, &block,
	                                         &grid), 0);
	assert_true(block <= 100 && block % 32 == 0);
	assert_int_equal(cu_occupancy_best_block(&l, 0, 0, shared_per_thread, NULL, &block, &grid),
	                 0);
	/* 64 B per thread: at most 228K/64 = 3648 threads' worth resident */
	assert_true(block * cu_occupancy_blocks(&l, block, (size_t)block * 64) <= 3648);
}

static void test_launch_dims(void **state)
{
	struct cu_limits l;
	const unsigned int ok_grid[3] = { 1u << 30, 2, 3 }, ok_block[3] = { 32, 8, 4 };
	const unsigned int big_grid[3] = { 1u << 31, 1, 1 }, zero[3] = { 0, 1, 1 };
	const unsigned int fat_block[3] = { 64, 32, 1 }, deep[3] = { 1, 1, 65 };
	const char *why;

	cu_limits_default(&l);
	assert_int_equal(cu_launch_dims_check(&l, ok_grid, ok_block, 0, 0, 48 << 10, &why), 0);
	assert_int_equal(cu_launch_dims_check(&l, big_grid, ok_block, 0, 0, 48 << 10, &why), -1);
	assert_int_equal(cu_launch_dims_check(&l, zero, ok_block, 0, 0, 48 << 10, &why), -1);
	assert_int_equal(cu_launch_dims_check(&l, ok_grid, fat_block, 0, 0, 48 << 10, &why), -1);
	assert_int_equal(cu_launch_dims_check(&l, ok_grid, deep, 0, 0, 48 << 10, &why), -1);
	assert_int_equal(cu_launch_dims_check(&l, ok_grid, ok_block, 512, 0, 48 << 10, &why), -1);
	assert_int_equal(cu_launch_dims_check(&l, ok_grid, ok_block, 0, 49 << 10, 48 << 10, &why),
	                 -1);
}

/* ------------------------------------------------------------------------ */

static void test_proc_address_versions(void **state)
{
	CUdriverProcAddressQueryResult status = 99;
	void *fn = NULL;

	assert_int_equal(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &status), CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuMemAlloc_v2);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &fn, 12000, 0, &status), CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuCtxCreate_v2);
	assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &fn, 13000, 0, &status), CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuCtxCreate_v4);
	assert_int_equal(cuGetProcAddress_v2("cuEventElapsedTime", &fn, 13000,
	                                     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
	                 CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuEventElapsedTime_v2);
	assert_int_equal(cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &status),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_null(fn);
	assert_int_equal(cuGetProcAddress_v2("cuMemAlloc_v2", &fn, 13000, 0, &status),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_int_equal(cuGetProcAddress_v2(NULL, &fn, 13000, 0, &status),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuInit", &fn, 13000, 1u << 9, &status),
	                 CUDA_ERROR_INVALID_VALUE);
}

static void test_proc_address_new_names(void **state)
{
	static const struct {
		const char *name;
		void *fn;
	} want[] = {
		{ "cuLaunchKernelEx", (void *)cuLaunchKernelEx },
		{ "cuLibraryLoadData", (void *)cuLibraryLoadData },
		{ "cuLibraryGetKernel", (void *)cuLibraryGetKernel },
		{ "cuKernelGetFunction", (void *)cuKernelGetFunction },
		{ "cuLinkCreate", (void *)cuLinkCreate_v2 },
		{ "cuLinkAddData", (void *)cuLinkAddData_v2 },
		{ "cuLinkAddFile", (void *)cuLinkAddFile_v2 },
		{ "cuMemcpy2D", (void *)cuMemcpy2D_v2 },
		{ "cuMemcpy2DAsync", (void *)cuMemcpy2DAsync_v2 },
		{ "cuMemsetD2D32", (void *)cuMemsetD2D32_v2 },
		{ "cuMemHostRegister", (void *)cuMemHostRegister_v2 },
		{ "cuPointerGetAttributes", (void *)cuPointerGetAttributes },
		{ "cuFuncGetName", (void *)cuFuncGetName },
		{ "cuDeviceGetProperties", (void *)cuDeviceGetProperties },
	};
	CUdriverProcAddressQueryResult status;
	void *fn;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		fn = NULL;
		assert_int_equal(cuGetProcAddress_v2(want[i].name, &fn, 13000, 0, &status),
		                 CUDA_SUCCESS);
		assert_ptr_equal(fn, want[i].fn);
	}
	/* the library API is CUDA 12's: not there for an 11.8 program */
	assert_int_equal(cuGetProcAddress_v2("cuLibraryLoadData", &fn, 11080, 0, &status),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void test_launch_attrs(void **state)
{
	CUlaunchAttribute a[3];
	const char *why;

	memset(a, 0, sizeof(a));
	assert_int_equal(cu_launch_attrs_check(NULL, 0, &why), CUDA_SUCCESS);
	assert_int_equal(cu_launch_attrs_check(NULL, 1, &why), CUDA_ERROR_INVALID_VALUE);
	a[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
	a[0].value.priority = -1;
	a[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	a[1].value.clusterDim.x = a[1].value.clusterDim.y = a[1].value.clusterDim.z = 1;
	a[2].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
	assert_int_equal(cu_launch_attrs_check(a, 3, &why), CUDA_SUCCESS);
	a[2].value.cooperative = 1;
	assert_int_equal(cu_launch_attrs_check(a, 3, &why), CUDA_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(why, "CU_LAUNCH_ATTRIBUTE_COOPERATIVE"));
	a[1].value.clusterDim.x = 2;
	assert_int_equal(cu_launch_attrs_check(a, 2, &why), CUDA_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(why, "CLUSTER_DIMENSION"));
	a[0].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
	assert_int_equal(cu_launch_attrs_check(a, 1, &why), CUDA_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(why, "LAUNCH_COMPLETION_EVENT"));
	a[0].id = (CUlaunchAttributeID)15; /* not known here */
	assert_int_equal(cu_launch_attrs_check(a, 1, &why), CUDA_ERROR_NOT_SUPPORTED);
	/* the layout programs fill: 8 bytes of id, then the 64-byte value */
	assert_int_equal(sizeof(CUlaunchAttribute), 72);
	assert_int_equal(offsetof(CUlaunchAttribute, value), 8);
}

static void test_error_names(void **state)
{
	const char *s;

	assert_int_equal(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
	assert_string_equal(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
	assert_int_equal(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
	assert_string_equal(s, "out of memory");
	/* every value 0..999 has a name if and only if it has a string */
	for (int v = 0; v <= 1000; v++) {
		const char *name = NULL, *text = NULL;
		CUresult a = cuGetErrorName((CUresult)v, &name);
		CUresult b = cuGetErrorString((CUresult)v, &text);

		assert_int_equal(a, b);
		if (a == CUDA_SUCCESS)
			assert_true(strncmp(name, "CUDA_", 5) == 0 && text && *text);
		else
			assert_null(name);
	}
	assert_int_equal(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_uninitialized(void **state)
{
	CUdeviceptr p;
	CUcontext ctx;
	int count;

	/* no cuInit in this process: everything says so, nothing crashes */
	assert_int_equal(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuCtxCreate(&ctx, NULL, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ptrtable_model),
		cmocka_unit_test(test_ptrtable_edges),
		cmocka_unit_test(test_pack_kernel_params),
		cmocka_unit_test(test_pack_extra),
		cmocka_unit_test(test_occupancy),
		cmocka_unit_test(test_launch_dims),
		cmocka_unit_test(test_proc_address_versions),
		cmocka_unit_test(test_proc_address_new_names),
		cmocka_unit_test(test_launch_attrs),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_uninitialized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
