// SPDX-License-Identifier: MIT
/*
 * test_ptx_run.c - vgpu-ptx-run, a GPU program of the guest's own
 * (tests/ptx/modules.ptx), as tenants of a real vgpud on simgpu: three at
 * once at more than twice the VRAM, every word exact, memory evicted while
 * they ran; a module without the program's kernels and bad usage fail as
 * they should. The same tool runs inside the VMs of tests/vm/run and
 * tests/vgpu-pci/run on vgpu.ko.
 *
 * $VGPU_TENANT is vgpu-ptx-run here (daemon_runner spawns it), $PTX_DIR
 * the directory of the committed PTX.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_runner.h"

/* 64 MiB of simgpu VRAM (60 usable), 2 MiB chunks. */
static const char *const small_gpu[] = {
	"--vram", "64M", "--chunk-size", "2M", "--log-level", "info", NULL,
};

static char ptx_path[512], other_ptx_path[512];

static int setup(void **state)
{
	struct daemon_runner *runner = calloc(1, sizeof(*runner));
	const char *dir = getenv("PTX_DIR");
	int ret;

	if (!runner || !dir)
		return -1;
	snprintf(ptx_path, sizeof(ptx_path), "%s/modules.ptx", dir);
	snprintf(other_ptx_path, sizeof(other_ptx_path), "%s/bench_kernels.ptx", dir);
	ret = daemon_start(runner, small_gpu);
	if (ret) {
		char *log = read_file(runner->log);

		print_error("vgpud did not start (%s): %s\n", strerror(-ret), log ? log : "");
		free(log);
		free(runner);
		return -1;
	}
	*state = runner;
	return 0;
}

static int teardown(void **state)
{
	struct daemon_runner *runner = *state;
	int status = daemon_stop(runner);

	free(runner);
	assert_int_equal(status, 0); /* vgpud stopped cleanly */
	return 0;
}

/* The number after " key=" in line; fails the test if there is none. */
static uint64_t field(const char *line, const char *key)
{
	char pattern[64];
	const char *at;

	snprintf(pattern, sizeof(pattern), " %s=", key);
	at = strstr(line, pattern);
	if (!at)
		fail_msg("no '%s' in: %s", key, line);
	return strtoull(at + strlen(pattern), NULL, 10);
}

static void print_run(const struct tenant_run *run)
{
	char *out = read_file(run->out), *err = read_file(run->err);

	print_message("%s%s", out ? out : "", err ? err : "");
	free(out);
	free(err);
}

/*
 * Three programs whose data is 2.4 times the VRAM, at once: every word,
 * sum and variable exact in each, and vgpud moved memory meanwhile.
 */
static void test_three_oversubscribed(void **state)
{
	struct daemon_runner *runner = *state;
	struct tenant_run runs[3];
	const uint64_t size = 48ull << 20, vram = 64ull << 20;
	uint64_t evictions = 0, allocated = 0;
	char names[3][16], seeds[3][8];

	for (int i = 0; i < 3; i++) {
		snprintf(names[i], sizeof(names[i]), "ptx%d", i);
		snprintf(seeds[i], sizeof(seeds[i]), "%d", i + 1);
		const char *const args[] = { "vgpu-ptx-run", "--socket", runner->socket, "--name",
			                     names[i], "--ptx", ptx_path, "--size", "48M",
			                     "--buffer-size", "4M", "--seed", seeds[i], NULL };

		assert_int_equal(tenant_spawn(runner, args, &runs[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		int status = tenant_wait(&runs[i], 240);
		char *out = read_file(runs[i].out);

		print_run(&runs[i]);
		assert_int_equal(status, 0);
		assert_non_null(out);
		assert_non_null(strstr(out, "vgpu-ptx-run: PASS "));
		assert_int_equal(field(out, "mismatches"), 0);
		assert_int_equal(field(out, "sum_mismatches"), 0);
		assert_int_equal(field(out, "groups"), 4);
		assert_int_equal(field(out, "words"), 4 * (4ull << 20) / 4);
		/* vadd + 2 scale_bias + sum per group */
		assert_int_equal(field(out, "launches"), 4 * 4);
		assert_true(field(out, "allocated") >= size);
		assert_non_null(strstr(out, " variables=ok "));
		assert_non_null(strstr(out, " bad_image=refused "));
		evictions += field(out, "vm_evictions");
		allocated += field(out, "vm_allocated");
		free(out);
	}
	assert_true(allocated >= 2 * vram);
	assert_true(evictions > 0);
}

/* A module that is not the program's: a clear failure, exit status 1. */
static void test_wrong_module(void **state)
{
	struct daemon_runner *runner = *state;
	const char *const args[] = { "vgpu-ptx-run", "--socket", runner->socket, "--ptx",
		                     other_ptx_path, "--size", "1M", NULL };
	struct tenant_run run;
	char *out;

	assert_int_equal(tenant_spawn(runner, args, &run), 0);
	assert_int_equal(tenant_wait(&run, 60), 1);
	out = read_file(run.out);
	assert_non_null(out);
	assert_non_null(strstr(out, "vgpu-ptx-run: FAIL "));
	assert_non_null(strstr(out, "lacks vadd_u32"));
	free(out);
}

/* Bad usage and a missing file: exit status 2 with a reason. */
static void test_usage(void **state)
{
	struct daemon_runner *runner = *state;
	const char *const cases[][8] = {
		{ "vgpu-ptx-run", "--socket", runner->socket, NULL },
		{ "vgpu-ptx-run", "--ptx", "/nonexistent.ptx", "--socket", runner->socket, NULL },
		{ "vgpu-ptx-run", "--ptx", ptx_path, "--size", "lots", NULL },
		{ "vgpu-ptx-run", "--ptx", ptx_path, "--buffer-size", "1K", NULL },
		{ "vgpu-ptx-run", "--ptx", ptx_path, "--iterations", "0", NULL },
		{ "vgpu-ptx-run", "--ptx", ptx_path, "--device", "/dev/null", "--socket",
		  runner->socket, NULL },
	};
	const char *const help[] = { "vgpu-ptx-run", "--help", NULL };
	struct tenant_run run;
	char *text;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(tenant_spawn(runner, cases[i], &run), 0);
		assert_int_equal(tenant_wait(&run, 30), 2);
		text = read_file(run.err);
		assert_non_null(text);
		assert_non_null(strstr(text, "vgpu-ptx-run: "));
		free(text);
	}
	assert_int_equal(tenant_spawn(runner, help, &run), 0);
	assert_int_equal(tenant_wait(&run, 30), 0);
	text = read_file(run.out);
	assert_non_null(text);
	assert_non_null(strstr(text, "--ptx FILE"));
	assert_non_null(strstr(text, "--socket"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_three_oversubscribed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_module, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
