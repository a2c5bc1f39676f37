// SPDX-License-Identifier: MIT
/*
 * test_fairness.c - fairness across three tenants with different weights
 * (issue 4 §6), end to end: a real vgpud and three vgpu-tenant processes
 * with weights 1:2:1 whose memory is twice the VRAM.
 *
 *   1. Once every tenant holds all its memory and nothing moves any more,
 *      each VM's resident memory is within one chunk of its fair share
 *      (vgpud's water filling of the VRAM by weight), and the fair shares
 *      follow the weights.
 *   2. One tenant leaves; once the return pass has settled (VRAM full
 *      again, or nothing left to return), the other two are within one
 *      chunk of their new, larger fair shares and got chunks back.
 *   3. Every tenant verifies all its data (exit status 0).
 *
 * The tenants run alloc-leak (allocate, fill, hold, verify, free): they
 * hold their memory until the test tells them to stop (SIGTERM), so no
 * step depends on how fast the machine is.
 */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "control_client.h"
#include "daemon_runner.h"

#define MIB (1024ull * 1024ull)
#define CHUNK (2 * MIB)
#define SETTLE_TIMEOUT_S 90

/* 64 MiB of simgpu VRAM (60 MiB for VMs: 30 chunks), 2 MiB chunks. */
static const char *const gpu_args[] = {
	"--vram", "64M", "--chunk-size", "2M", "--return-interval-ms", "50",
	"--log-level", "info", NULL,
};

struct tenant_spec {
	const char *name;
	const char *profile; /* built-in: vgpu-1G weight 1, vgpu-2G weight 2 */
	unsigned weight;
	const char *size;
	uint64_t bytes;
};

/* 120 MiB together: twice the VRAM. */
static const struct tenant_spec tenants[] = {
	{ "light-a", "vgpu-1G", 1, "40M", 40 * MIB },
	{ "heavy", "vgpu-2G", 2, "48M", 48 * MIB },
	{ "light-b", "vgpu-1G", 1, "32M", 32 * MIB },
};
#define TENANTS (sizeof(tenants) / sizeof(tenants[0]))

struct fixture {
	struct daemon_runner runner;
	struct tenant_run runs[TENANTS];
	bool running[TENANTS];
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return -1;
	ret = daemon_start(&f->runner, gpu_args);
	if (ret) {
		char *log = read_file(f->runner.log);

		print_error("vgpud did not start (%s): %s\n", strerror(-ret), log ? log : "");
		free(log);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	unsigned i;
	int status;

	for (i = 0; i < TENANTS; i++) {
		if (f->running[i]) {
			kill(f->runs[i].pid, SIGTERM);
			tenant_wait(&f->runs[i], 30);
		}
	}
	status = daemon_stop(&f->runner);
	free(f);
	assert_int_equal(status, 0); /* vgpud stopped cleanly */
	return 0;
}

/* `vgpuctl status --json` through the control socket (NULL on error). */
static json_object *status_json(struct fixture *f)
{
	struct control_client client;
	json_object *response;
	int err = 0;

	if (control_connect(&client, f->runner.control))
		return NULL;
	response = control_request(&client, json_tokener_parse("{\"command\":\"list\"}"), 30000,
	                           &err);
	control_close(&client);
	return response;
}

static uint64_t u64_of(json_object *object, const char *key)
{
	json_object *value;

	if (!json_object_object_get_ex(object, key, &value))
		fail_msg("no '%s' in %s", key, json_object_to_json_string(object));
	return (uint64_t)json_object_get_int64(value);
}

static json_object *vm_named(json_object *status, const char *name)
{
	json_object *vms, *name_value;
	size_t i, n;

	if (!json_object_object_get_ex(status, "vms", &vms))
		return NULL;
	n = json_object_array_length(vms);
	for (i = 0; i < n; i++) {
		json_object *vm = json_object_array_get_idx(vms, i);

		if (json_object_object_get_ex(vm, "name", &name_value) &&
		    !strcmp(json_object_get_string(name_value), name))
			return vm;
	}
	return NULL;
}

static void start_tenant(struct fixture *f, unsigned i)
{
	const char *const args[] = {
		"vgpu-tenant", "--socket", f->runner.socket, "--name", tenants[i].name,
		"--profile", tenants[i].profile, "--workload", "alloc-leak", "--size",
		tenants[i].size, "--buffer-size", "4M", "--duration", "10m", "--json", NULL,
	};

	assert_int_equal(tenant_spawn(&f->runner, args, &f->runs[i]), 0);
	f->running[i] = true;
}

/* Stop a tenant (it verifies, frees and exits) and check its data. */
static void stop_tenant(struct fixture *f, unsigned i)
{
	int status;

	kill(f->runs[i].pid, SIGTERM);
	status = tenant_wait(&f->runs[i], 60);
	f->running[i] = false;
	if (status != 0) {
		char *out = read_file(f->runs[i].out), *err = read_file(f->runs[i].err);

		print_error("%s exited %d\nstdout:\n%s\nstderr:\n%s\n", tenants[i].name, status,
		            out ? out : "", err ? err : "");
		free(out);
		free(err);
	}
	assert_int_equal(status, 0); /* every checksum matched */
}

/*
 * Wait until the VMs in `present` (and no others) are attached, each holds
 * its whole size, and the memory has settled: two samples 300 ms (six
 * return intervals) apart agree on every VM's resident bytes, and the VRAM
 * is full or nothing is evicted (the return pass has nothing left to do).
 * Returns the last sample.
 */
static json_object *wait_settled(struct fixture *f, const bool present[TENANTS])
{
	json_object *previous = NULL, *status = NULL;
	double deadline = now_s() + SETTLE_TIMEOUT_S;
	unsigned i, expected = 0;

	for (i = 0; i < TENANTS; i++)
		expected += present[i];
	while (now_s() < deadline) {
		json_object *gpu, *vms;
		bool settled;

		sleep_ms(300);
		status = status_json(f);
		assert_non_null(status);
		settled = json_object_object_get_ex(status, "gpu", &gpu) &&
		          json_object_object_get_ex(status, "vms", &vms) &&
		          json_object_array_length(vms) == expected &&
		          (u64_of(gpu, "free") < CHUNK || u64_of(gpu, "evicted") == 0);
		for (i = 0; settled && i < TENANTS; i++) {
			json_object *vm = vm_named(status, tenants[i].name), *before;

			if (!present[i])
				continue;
			before = previous ? vm_named(previous, tenants[i].name) : NULL;
			settled = vm && before && u64_of(vm, "allocated") == tenants[i].bytes &&
			          u64_of(vm, "resident") == u64_of(before, "resident");
		}
		json_object_put(previous);
		previous = status;
		if (settled)
			return status;
	}
	fail_msg("the VMs did not settle within %d s; last status: %s", SETTLE_TIMEOUT_S,
	         previous ? json_object_to_json_string(previous) : "(none)");
	return NULL;
}

/* |resident - fair share| <= one chunk for every VM in `present`. */
static void assert_fair(json_object *status, const bool present[TENANTS], const char *when)
{
	unsigned i;

	for (i = 0; i < TENANTS; i++) {
		json_object *vm;
		uint64_t resident, fair;
		uint64_t error;

		if (!present[i])
			continue;
		vm = vm_named(status, tenants[i].name);
		assert_non_null(vm);
		resident = u64_of(vm, "resident");
		fair = u64_of(vm, "fair_share");
		error = resident > fair ? resident - fair : fair - resident;
		print_message("%s: %-8s weight %u  allocated %3llu MiB  resident %5.1f MiB  "
		              "fair share %5.1f MiB  error %.2f chunks\n",
		              when, tenants[i].name, tenants[i].weight,
		              (unsigned long long)(u64_of(vm, "allocated") / MIB),
		              (double)resident / (double)MIB, (double)fair / (double)MIB,
		              (double)error / (double)CHUNK);
		assert_int_equal(u64_of(vm, "weight"), tenants[i].weight);
		if (error > CHUNK)
			fail_msg("%s: %s holds %llu bytes, fair share %llu: more than one chunk "
			         "(%llu) apart",
			         when, tenants[i].name, (unsigned long long)resident,
			         (unsigned long long)fair, (unsigned long long)CHUNK);
	}
}

static void test_three_weights(void **state)
{
	struct fixture *f = *state;
	const bool all[TENANTS] = { true, true, true };
	const bool without_first[TENANTS] = { false, true, true };
	json_object *status, *gpu, *heavy, *light;
	uint64_t vram, returns_before[TENANTS] = { 0 }, total_resident = 0;
	unsigned i;

	for (i = 0; i < TENANTS; i++)
		start_tenant(f, i);

	/* 1. Oversubscribed, settled: everyone within a chunk of its share. */
	status = wait_settled(f, all);
	assert_true(json_object_object_get_ex(status, "gpu", &gpu));
	vram = u64_of(gpu, "vram");
	assert_true(tenants[0].bytes + tenants[1].bytes + tenants[2].bytes >= 2 * vram);
	assert_true(u64_of(gpu, "evicted") > 0);
	assert_fair(status, all, "three VMs");
	for (i = 0; i < TENANTS; i++) {
		json_object *vm = vm_named(status, tenants[i].name);

		returns_before[i] = u64_of(vm, "returns");
		total_resident += u64_of(vm, "resident");
	}
	/* The VRAM is shared out (up to less than a chunk), by weight. */
	assert_true(total_resident + CHUNK > vram);
	heavy = vm_named(status, "heavy");
	light = vm_named(status, "light-a");
	assert_true(u64_of(heavy, "fair_share") == 2 * u64_of(light, "fair_share"));
	json_object_put(status);

	/* 2. light-a leaves: the return pass gives its VRAM to the others. */
	stop_tenant(f, 0);
	status = wait_settled(f, without_first);
	assert_fair(status, without_first, "after light-a left");
	for (i = 1; i < TENANTS; i++)
		assert_true(u64_of(vm_named(status, tenants[i].name), "returns") >=
		            returns_before[i]);
	assert_true(u64_of(vm_named(status, "heavy"), "returns") +
	                    u64_of(vm_named(status, "light-b"), "returns") >
	            returns_before[1] + returns_before[2]);
	json_object_put(status);

	/* 3. Everyone's data verified. */
	for (i = 1; i < TENANTS; i++)
		stop_tenant(f, i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_three_weights, setup, teardown),
	};

	if (!getenv("VGPUD") || !getenv("VGPU_TENANT")) {
		fprintf(stderr, "set VGPUD and VGPU_TENANT (meson test does)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
