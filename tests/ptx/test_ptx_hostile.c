// SPDX-License-Identifier: MIT
/*
 * test_ptx_hostile.c - kernels that must be contained: an infinite loop
 * (instruction budget and poll callback), stores outside memory, misaligned
 * accesses, deep recursion, barriers that cannot complete, a wrong
 * parameter block, absurd grids and shared sizes, trap. Each launch fails
 * with its own error and the address or reason in the message; a launch
 * after it on the same memory works.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptx_env.h"

#define D3(x, y, z) ((struct ptx_dim3){ (x), (y), (z) })
#define HEAD ".version 8.5\n.target sm_90\n.address_size 64\n"

static int setup(void **state)
{
	struct flat_env *env = malloc(sizeof(*env));
	flat_init(env, 16u << 20);
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	flat_fini(*state);
	free(*state);
	return 0;
}

static void load(struct flat_env *env, const char *text)
{
	struct ptx_error err;
	int rc = flat_load_text(env, text, "hostile.ptx", &err);
	if (rc)
		fail_msg("load: %d %s", rc, err.message);
}

static const char spin[] = HEAD
	".visible .entry spin(.param .u64 p)\n{\n"
	".reg .b32 %r<2>;\n"
	"mov.u32 %r1, 0;\n"
	"$L_top:\n"
	"add.s32 %r1, %r1, 1;\n"
	"bra.uni $L_top;\n}\n";

static int poll_calls;

static int poll_stop(void *ctx)
{
	(void)ctx;
	return ++poll_calls >= 3;
}

static void test_watchdog(void **state)
{
	struct flat_env *env = *state;
	load(env, spin);
	uint64_t p = 0;
	env->budget = 100000;
	int rc = flat_run(env, "spin", D3(4, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &p });
	assert_int_equal(rc, -ETIMEDOUT);
	assert_int_equal(env->result.fault, PTX_FAULT_WATCHDOG);
	assert_non_null(strstr(env->result.message, "watchdog"));
	assert_true(env->result.stats.warp_instructions <= 100000 + 4 * 4096);
	env->budget = 0;

	/* the poll callback stops it too, with the default budget */
	int idx = ptx_module_find_entry(env->module, "spin");
	struct ptx_launch L = {
		.module = env->module, .entry = (uint32_t)idx, .grid = D3(1, 1, 1),
		.block = D3(32, 1, 1), .params = &p, .param_size = 8,
		.mem = &env->ops, .mem_ctx = env, .poll = poll_stop,
	};
	struct ptx_launch_result r;
	poll_calls = 0;
	assert_int_equal(ptx_launch(&L, &r), -ETIMEDOUT);
	assert_int_equal(poll_calls, 3);
	assert_non_null(strstr(r.message, "poll"));
}

static const char wild_store[] = HEAD
	".visible .entry wild(.param .u64 p)\n{\n"
	".reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n"
	"ld.param.u64 %rd1, [p];\n"
	"mov.u32 %r1, %tid.x;\n"
	"mul.wide.u32 %rd2, %r1, 4;\n"
	"add.s64 %rd1, %rd1, %rd2;\n"
	"st.global.u32 [%rd1], %r1;\n"
	"ret;\n}\n";

static void test_bad_store(void **state)
{
	struct flat_env *env = *state;
	load(env, wild_store);
	uint64_t p = 0x40;
	env->host_threads = 2;
	int rc = flat_run(env, "wild", D3(8, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &p });
	env->host_threads = 1;
	assert_int_equal(rc, -EFAULT);
	assert_int_equal(env->result.fault, PTX_FAULT_MEMORY);
	assert_true(env->result.fault_address >= 0x40 && env->result.fault_address < 0x40 + 4 * 64);
	if (!strstr(env->result.message, "hostile.ptx:12: global store"))
		fail_msg("message: %s", env->result.message);
	/* misaligned */
	p = FLAT_BASE + 2;
	rc = flat_run(env, "wild", D3(1, 1, 1), D3(32, 1, 1), 0, (const void *[]){ &p });
	assert_int_equal(rc, -EFAULT);
	assert_int_equal(env->result.fault, PTX_FAULT_MISALIGNED);
	/* the same kernel on good memory works */
	p = flat_alloc(env, 4 * 64);
	assert_int_equal(flat_run(env, "wild", D3(1, 1, 1), D3(64, 1, 1), 0,
				  (const void *[]){ &p }), 0);
	assert_int_equal(((uint32_t *)flat_ptr(env, p))[63], 63);
}

static void test_shared_out_of_bounds(void **state)
{
	struct flat_env *env = *state;
	load(env, HEAD
	     ".visible .entry sh(.param .u32 off)\n{\n"
	     ".reg .b32 %r<3>;\n"
	     ".shared .align 4 .b8 buf[64];\n"
	     "ld.param.u32 %r1, [off];\n"
	     "st.shared.u32 [%r1], %r1;\n"
	     "ret;\n}\n");
	uint32_t off = 60;
	assert_int_equal(flat_run(env, "sh", D3(1, 1, 1), D3(32, 1, 1), 0,
				  (const void *[]){ &off }), 0);
	off = 4096;
	assert_int_equal(flat_run(env, "sh", D3(1, 1, 1), D3(32, 1, 1), 0,
				  (const void *[]){ &off }), -EFAULT);
	assert_non_null(strstr(env->result.message, "shared access"));
}

static void test_deep_recursion(void **state)
{
	struct flat_env *env = *state;
	struct ptx_error err;
	assert_int_equal(flat_load_file(env, "calls", &err), 0);
	uint64_t out = flat_alloc(env, 4 * 32);
	int depth = 100000;
	int rc = flat_run(env, "recurse", D3(1, 1, 1), D3(32, 1, 1), 0,
			  (const void *[]){ &out, &depth });
	assert_int_equal(rc, -ELOOP);
	assert_int_equal(env->result.fault, PTX_FAULT_STACK);
	/* a bounded depth still works */
	depth = 30;
	env->max_depth = 40;
	assert_int_equal(flat_run(env, "recurse", D3(1, 1, 1), D3(32, 1, 1), 0,
				  (const void *[]){ &out, &depth }), 0);
	assert_int_equal(((int32_t *)flat_ptr(env, out))[5], 30);
	env->max_depth = 0;
}

static const char split_barrier[] = HEAD
	".visible .entry split()\n{\n"
	".reg .b32 %r<2>;\n.reg .pred %p<2>;\n"
	"mov.u32 %r1, %tid.x;\n"
	"setp.lt.u32 %p1, %r1, 32;\n"
	"@%p1 bra $L_a;\n"
	"bar.sync 1;\n"
	"bra.uni $L_end;\n"
	"$L_a:\n"
	"bar.sync 2;\n"
	"$L_end:\n"
	"ret;\n}\n"
	".visible .entry exit_first()\n{\n"
	".reg .b32 %r<2>;\n.reg .pred %p<2>;\n"
	"mov.u32 %r1, %tid.x;\n"
	"setp.lt.u32 %p1, %r1, 40;\n"
	"@%p1 ret;\n"
	"bar.sync 0;\n"
	"ret;\n}\n";

static void test_barriers(void **state)
{
	struct flat_env *env = *state;
	load(env, split_barrier);
	int rc = flat_run(env, "split", D3(2, 1, 1), D3(64, 1, 1), 0, (const void *[]){ NULL });
	assert_int_equal(rc, -EDEADLK);
	assert_int_equal(env->result.fault, PTX_FAULT_DEADLOCK);
	assert_non_null(strstr(env->result.message, "barrier deadlock"));
	/* threads that exit release the barrier the others wait at */
	assert_int_equal(flat_run(env, "exit_first", D3(2, 1, 1), D3(96, 1, 1), 0,
				  (const void *[]){ NULL }), 0);
	assert_int_equal(env->result.stats.barriers, 2);
}

static void test_bad_launches(void **state)
{
	struct flat_env *env = *state;
	load(env, wild_store);
	uint64_t p = flat_alloc(env, 4096);
	int idx = ptx_module_find_entry(env->module, "wild");
	struct ptx_launch L = {
		.module = env->module, .entry = (uint32_t)idx, .grid = D3(1, 1, 1),
		.block = D3(32, 1, 1), .params = &p, .param_size = 4,
		.mem = &env->ops, .mem_ctx = env,
	};
	struct ptx_launch_result r;
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	assert_int_equal(r.fault, PTX_FAULT_LAUNCH);
	assert_non_null(strstr(r.message, "parameter block of 4 bytes, expected 8"));
	L.param_size = 8;
	L.grid = D3(1u << 31, 1, 1);
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	assert_non_null(strstr(r.message, "invalid grid"));
	L.grid = D3(0, 1, 1);
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	L.grid = D3(1, 1, 1);
	L.block = D3(1025, 1, 1);
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	L.block = D3(1024, 1024, 1024);   /* the product overflows 32 bits */
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	L.block = D3(32, 1, 1);
	L.dynamic_shared_bytes = 1u << 30;
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	assert_non_null(strstr(r.message, "shared memory"));
	L.dynamic_shared_bytes = 0;
	L.first_block = 1;    /* a grid of one block has no block 1 */
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	assert_non_null(strstr(r.message, "outside a grid"));
	L.first_block = 0;
	L.block_count = 2;
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	L.block_count = 0;
	L.entry = 7;
	assert_int_equal(ptx_launch(&L, &r), -EINVAL);
	L.entry = (uint32_t)idx;
	/* the largest legal grid: the block count needs 64 bits; the budget
	 * stops it long before the end */
	L.grid = D3(PTX_MAX_GRID_X, PTX_MAX_GRID_YZ, PTX_MAX_GRID_YZ);
	L.instruction_budget = 20000;
	uint64_t store_to = p;
	(void)store_to;
	int rc = ptx_launch(&L, &r);
	assert_true(rc == -ETIMEDOUT || rc == -EFAULT);
}

static void test_trap(void **state)
{
	struct flat_env *env = *state;
	load(env, HEAD ".visible .entry t()\n{\ntrap;\n}\n");
	assert_int_equal(flat_run(env, "t", D3(1, 1, 1), D3(1, 1, 1), 0, (const void *[]){ NULL }),
			 -ECANCELED);
	assert_int_equal(env->result.fault, PTX_FAULT_TRAP);
}

static void test_printf_and_assert(void **state)
{
	struct flat_env *env = *state;
	struct ptx_error err;
	assert_int_equal(flat_load_file(env, "builtins", &err), 0);
	uint64_t out = flat_alloc(env, 4 * 64);
	int n = 64;
	assert_int_equal(flat_run(env, "checked_square", D3(2, 1, 1), D3(32, 1, 1), 0,
				  (const void *[]){ &out, &n }), 0);
	assert_int_equal(env->result.stats.printf_calls, 4);
	assert_int_equal(((int32_t *)flat_ptr(env, out))[63], 63 * 63);
	n = 40;
	assert_int_equal(flat_run(env, "checked_square", D3(2, 1, 1), D3(32, 1, 1), 0,
				  (const void *[]){ &out, &n }), -ECANCELED);
	assert_int_equal(env->result.fault, PTX_FAULT_TRAP);
	if (!strstr(env->result.message, "assertion 't < n' failed at builtins.cu:9"))
		fail_msg("message: %s", env->result.message);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_watchdog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_out_of_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep_recursion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_barriers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_launches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_printf_and_assert, setup, teardown),
	};
	return cmocka_run_group_tests_name("ptx-hostile", tests, NULL, NULL);
}
