// SPDX-License-Identifier: MIT
/*
 * test_hal_open.c - the HAL's opener and module parse on the host side's
 * error carrier (vgpu/error.h): a failure returns the negative errno and
 * sets the carrier to it with the sentence operators read; a success leaves
 * the carrier as it found it; a NULL carrier only loses the sentence.
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

#include "vgpu/hal_open.h"

#define MIB (UINT64_C(1) << 20)

/* A carrier holding an earlier failure: a success must leave it alone. */
static void preset(struct vgpu_error *error)
{
	vgpu_error_set(error, -EPERM, "an earlier failure");
}

static void assert_preset(const struct vgpu_error *error)
{
	assert_int_equal(error->code, -EPERM);
	assert_string_equal(error->msg, "an earlier failure");
}

static void test_spec_parse_accepts(void **state)
{
	struct vgpu_error error;
	struct vgpu_hal_spec spec;

	(void)state;
	preset(&error);
	assert_int_equal(vgpu_hal_spec_parse("simgpu", &spec, &error), 0);
	assert_int_equal(spec.backend, VGPU_HAL_BACKEND_SIMGPU);
	assert_int_equal(vgpu_hal_spec_parse(NULL, &spec, &error), 0);
	assert_int_equal(spec.backend, VGPU_HAL_BACKEND_SIMGPU);
	assert_int_equal(vgpu_hal_spec_parse("cuda", &spec, &error), 0);
	assert_int_equal(spec.backend, VGPU_HAL_BACKEND_CUDA);
	assert_int_equal(spec.cuda_device, 0);
	assert_int_equal(vgpu_hal_spec_parse("cuda:3", &spec, &error), 0);
	assert_int_equal(spec.backend, VGPU_HAL_BACKEND_CUDA);
	assert_int_equal(spec.cuda_device, 3);
	assert_preset(&error);
}

static void test_spec_parse_refuses(void **state)
{
	static const char *const bad[] = { "gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1024" };
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_hal_spec spec;
	char expected[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vgpu_error_clear(&error);
		assert_int_equal(vgpu_hal_spec_parse(bad[i], &spec, &error), -EINVAL);
		assert_int_equal(error.code, -EINVAL);
		snprintf(expected, sizeof(expected), "unknown GPU '%s': expected simgpu, cuda or "
		         "cuda:N (a CUDA device ordinal)", bad[i]);
		assert_string_equal(vgpu_error_msg(&error), expected);
		/* no carrier: the errno alone */
		assert_int_equal(vgpu_hal_spec_parse(bad[i], &spec, NULL), -EINVAL);
	}
}

static void test_open_simgpu(void **state)
{
	struct vgpu_hal_spec spec = { .backend = VGPU_HAL_BACKEND_SIMGPU };
	struct vgpu_error error;
	struct vgpu_hal *hal = NULL;
	struct vgpu_hal_caps caps;
	int err;

	(void)state;
	preset(&error);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 64 * MIB, &hal, &error), 0);
	assert_non_null(hal);
	vgpu_hal_get_caps(hal, &caps);
	/* the size asked for, less what simgpu keeps for itself */
	assert_in_range(caps.vram_bytes, 32 * MIB, 64 * MIB);
	assert_preset(&error);
	vgpu_hal_destroy(hal);

	/* not a multiple of 64 KiB: simgpu's errno, said as such */
	vgpu_error_clear(&error);
	hal = NULL;
	err = vgpu_hal_open(&spec, NULL, 12345, &hal, &error);
	assert_true(err < 0);
	assert_null(hal);
	assert_int_equal(error.code, err);
	assert_non_null(strstr(error.msg, "simgpu: "));
	assert_non_null(strstr(error.msg, strerror(-err)));
	assert_int_equal(vgpu_hal_open(&spec, NULL, 12345, &hal, NULL), err);
}

static void unset_cuda_env(void)
{
	unsetenv("VGPU_CUDA_ISOLATION");
	unsetenv("VGPU_CUDA_WORKER_TIMEOUT_MS");
	unsetenv("VGPU_CUDA_KILL_WAIT_MS");
	unsetenv("VGPU_CUDA_LIBRARY");
}

/* cuda's settings from the environment, and cudagpu_create's own failure
 * (no driver), reach the carrier with their sentences. */
static void test_open_cuda_refusals(void **state)
{
	struct vgpu_hal_spec spec = { .backend = VGPU_HAL_BACKEND_CUDA };
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_hal *hal = NULL;

	(void)state;
	unset_cuda_env();
	setenv("VGPU_CUDA_ISOLATION", "bogus", 1);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 0, &hal, &error), -EINVAL);
	assert_int_equal(error.code, -EINVAL);
	assert_string_equal(error.msg, "VGPU_CUDA_ISOLATION=bogus: expected none or process");
	unset_cuda_env();

	vgpu_error_clear(&error);
	setenv("VGPU_CUDA_WORKER_TIMEOUT_MS", "0", 1);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 0, &hal, &error), -EINVAL);
	assert_string_equal(error.msg,
	                    "VGPU_CUDA_WORKER_TIMEOUT_MS=0: expected a number of milliseconds");
	unset_cuda_env();

	vgpu_error_clear(&error);
	setenv("VGPU_CUDA_KILL_WAIT_MS", "5s", 1);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 0, &hal, &error), -EINVAL);
	assert_string_equal(error.msg, "VGPU_CUDA_KILL_WAIT_MS=5s: expected a number of "
	                               "milliseconds");
	unset_cuda_env();

	vgpu_error_clear(&error);
	setenv("VGPU_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 0, &hal, &error), -ENOENT);
	assert_int_equal(error.code, -ENOENT);
	assert_string_equal(error.msg, "no CUDA driver: /nonexistent/libcuda.so.1 not found");
	assert_null(hal);
	assert_int_equal(vgpu_hal_open(&spec, NULL, 0, &hal, NULL), -ENOENT);
	unset_cuda_env();
}

/* ---- vgpu_hal_module_parse's contract over backends that say little --- */

static int silent_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                        struct vgpu_hal_module **out, struct vgpu_error *error)
{
	(void)hal, (void)image, (void)bytes, (void)name, (void)out, (void)error;
	return -EIO; /* a backend that forgot to say why */
}

static int saying_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                        struct vgpu_hal_module **out, struct vgpu_error *error)
{
	(void)hal, (void)image, (void)bytes, (void)out;
	return vgpu_error_set(error, -E2BIG, "%s:1: too many functions", name);
}

static struct vgpu_hal_module parsed;

static int accepting_parse(struct vgpu_hal *hal, const void *image, size_t bytes,
                           const char *name, struct vgpu_hal_module **out,
                           struct vgpu_error *error)
{
	(void)image, (void)bytes, (void)name, (void)error;
	parsed.hal = hal;
	*out = &parsed;
	return 0;
}

static void test_module_parse_carrier(void **state)
{
	static const struct vgpu_hal_ops none = { 0 };
	static const struct vgpu_hal_ops silent = { .module_parse = silent_parse };
	static const struct vgpu_hal_ops saying = { .module_parse = saying_parse };
	static const struct vgpu_hal_ops accepting = { .module_parse = accepting_parse };
	struct vgpu_hal hal = { .ops = &none };
	struct vgpu_hal_module *module = NULL;
	struct vgpu_error error = VGPU_ERROR_INIT;

	(void)state;
	assert_int_equal(vgpu_hal_module_parse(&hal, "x", 1, "m.ptx", &module, &error), -ENOTSUP);
	assert_int_equal(error.code, -ENOTSUP);
	assert_string_equal(error.msg, "this GPU runs no user programs");

	hal.ops = &silent;
	vgpu_error_clear(&error);
	assert_int_equal(vgpu_hal_module_parse(&hal, "x", 1, "m.ptx", &module, &error), -EIO);
	assert_int_equal(error.code, -EIO);
	assert_string_equal(error.msg, strerror(EIO));

	hal.ops = &saying;
	vgpu_error_clear(&error);
	assert_int_equal(vgpu_hal_module_parse(&hal, "x", 1, "m.ptx", &module, &error), -E2BIG);
	assert_int_equal(error.code, -E2BIG);
	assert_string_equal(error.msg, "m.ptx:1: too many functions");
	assert_int_equal(vgpu_hal_module_parse(&hal, "x", 1, "m.ptx", &module, NULL), -E2BIG);

	hal.ops = &accepting;
	preset(&error);
	assert_int_equal(vgpu_hal_module_parse(&hal, "x", 1, "m.ptx", &module, &error), 0);
	assert_ptr_equal(module, &parsed);
	assert_preset(&error);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_parse_accepts),
		cmocka_unit_test(test_spec_parse_refuses),
		cmocka_unit_test(test_open_simgpu),
		cmocka_unit_test(test_open_cuda_refusals),
		cmocka_unit_test(test_module_parse_carrier),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
