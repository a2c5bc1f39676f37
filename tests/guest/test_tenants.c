// SPDX-License-Identifier: MIT
/*
 * test_tenants.c - vgpu-tenant against a real vgpud (subprocesses, private
 * sockets): oversubscription with byte-exact integrity, submissions that
 * never reach vgpud, the tool's user-facing behaviour, and a tenant's
 * pending fence when vgpud is killed.
 */
#include <errno.h>
#include <pthread.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "daemon_runner.h"
#include "vgpu/abi/commands.h"
#include "vgpu_guest.h"
#include "vgpu_guest_local.h"
#include "vgpu_workloads.h"

/* 64 MiB of simgpu VRAM (60 usable), 2 MiB chunks. */
static const char *const small_gpu[] = {
	"--vram", "64M", "--chunk-size", "2M", "--log-level", "info", NULL,
};

static int setup(void **state)
{
	struct daemon_runner *runner = calloc(1, sizeof(*runner));
	int ret = daemon_start(runner, small_gpu);

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

static json_object *tenant_json(struct tenant_run *run)
{
	char *text = read_file(run->out);
	json_object *json = text ? json_tokener_parse(text) : NULL;

	if (!json) {
		char *err = read_file(run->err);

		print_error("tenant output is not JSON:\n%s\nstderr:\n%s\n", text ? text : "",
		            err ? err : "");
		free(err);
	}
	free(text);
	return json;
}

static uint64_t json_u64(json_object *object, const char *key)
{
	json_object *value;

	if (!json_object_object_get_ex(object, key, &value))
		fail_msg("no '%s' in the tenant's JSON", key);
	return (uint64_t)json_object_get_int64(value);
}

/*
 * Four tenants whose data together is almost three times the VRAM: every
 * one verifies every buffer, and vgpud evicted memory to make it fit.
 */
static void test_oversubscription_integrity(void **state)
{
	struct daemon_runner *runner = *state;
	const char *const tenants[][16] = {
		{ "vgpu-tenant", "--socket", runner->socket, "--name", "stream", "--workload",
		  "stream", "--size", "40M", "--buffer-size", "4M", "--iterations", "4", "--json",
		  NULL },
		{ "vgpu-tenant", "--socket", runner->socket, "--name", "gups", "--workload", "gups",
		  "--size", "32M", "--buffer-size", "4M", "--iterations", "3", "--json", NULL },
		/* More than the VRAM on its own: eviction happens even if the
		 * others happened not to overlap with it. */
		{ "vgpu-tenant", "--socket", runner->socket, "--name", "alloc", "--workload",
		  "alloc-leak", "--size", "72M", "--buffer-size", "4M", "--duration", "1s", "--json",
		  NULL },
		{ "vgpu-tenant", "--socket", runner->socket, "--name", "stencil", "--workload",
		  "stencil", "--size", "32M", "--buffer-size", "4M", "--iterations", "3", "--json",
		  NULL },
	};
	struct tenant_run runs[4];
	uint64_t total = 0, evicted = 0, evictions = 0;
	unsigned i;

	for (i = 0; i < 4; i++)
		assert_int_equal(tenant_spawn(runner, tenants[i], &runs[i]), 0);
	for (i = 0; i < 4; i++) {
		int status = tenant_wait(&runs[i], 240);
		json_object *json = tenant_json(&runs[i]), *stats, *verified;

		assert_non_null(json);
		assert_true(json_object_object_get_ex(json, "verified", &verified));
		print_message("%s: exit %d, verified %d, %llu MiB, evicted %llu MiB\n",
		              tenants[i][4], status, json_object_get_boolean(verified),
		              (unsigned long long)(json_u64(json, "bytes_allocated") >> 20),
		              json_object_object_get_ex(json, "stats_before_free", &stats) ?
		                      (unsigned long long)(json_u64(stats, "evicted_bytes") >> 20) :
		                      0ull);
		assert_int_equal(status, 0);
		assert_true(json_object_get_boolean(verified));
		assert_int_equal(json_u64(json, "mismatches"), 0);
		assert_true(json_u64(json, "checksums") > 0);
		total += json_u64(json, "bytes_allocated");
		if (json_object_object_get_ex(json, "stats_before_free", &stats)) {
			evicted += json_u64(stats, "evicted_bytes");
			evictions += json_u64(stats, "evictions");
		}
		json_object_put(json);
	}
	assert_int_equal(total, 176ull << 20); /* 2.9 x the 60 MiB of VRAM */
	assert_true(evictions > 0);
	assert_true(evicted > 0);
}

/*
 * In process, over the same transport: a submission-heavy run costs a
 * handful of mailbox requests, one doorbell (trapped BAR0 write) each, and
 * nothing per submission.
 */
static void test_submissions_do_not_trap(void **state)
{
	struct daemon_runner *runner = *state;
	struct vgpu_local_device_config config = {
		.socket_path = runner->socket,
		.vm_name = "in-process",
	};
	struct vgpu_workload_options options = {
		.kind = VGPU_WORKLOAD_STREAM,
		.size_bytes = 1ull << 20,
		.buffer_bytes = 64ull << 10,
		.iterations = 200,
		.gpfifo_entries = 64,
	};
	struct vgpu_workload_result result;
	struct vgpu_guest_device *dev;
	struct vgpu_proto *proto;
	char why[512];

	assert_int_equal(vgpu_device_open_local(&config, 0, &dev, why, sizeof(why)), 0);
	proto = vgpu_guest_local_proto(dev);
	assert_non_null(proto);
	assert_string_equal(vgpu_device_info(dev)->backend, "local");
	assert_int_equal(vgpu_workload_run(dev, &options, &result), 0);
	assert_true(result.verified);
	print_message("%llu submissions, %llu mailbox requests, %llu doorbells\n",
	              (unsigned long long)result.submissions,
	              (unsigned long long)proto->counters.requests,
	              (unsigned long long)proto->counters.doorbells);
	assert_true(result.submissions > 3000);
	/* HELLO, QUERY, CHANNEL_CREATE, 16 ALLOC, STATS, 16 FREE so far. */
	assert_true(proto->counters.requests < 40);
	assert_int_equal(proto->counters.doorbells, proto->counters.requests);
	assert_int_equal(proto->counters.malformed_responses, 0);
	vgpu_device_close(dev);
}

static void test_daemon_not_running(void **state)
{
	struct daemon_runner *runner = *state;
	char missing[400];
	const char *args[] = { "vgpu-tenant", "--socket", missing, "--workload", "stream", NULL };
	struct tenant_run run;
	char *err;

	snprintf(missing, sizeof(missing), "%s/nobody-here.sock", runner->dir);
	assert_int_equal(tenant_spawn(runner, args, &run), 0);
	assert_int_equal(tenant_wait(&run, 30), 2);
	err = read_file(run.err);
	assert_non_null(err);
	assert_non_null(strstr(err, missing)); /* names the socket it tried */
	assert_non_null(strstr(err, "vgpud"));
	assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
	free(err);
}

static void test_usage(void **state)
{
	struct daemon_runner *runner = *state;
	static const char *const help[] = { "vgpu-tenant", "--help", NULL };
	static const char *const bad[][8] = {
		{ "vgpu-tenant", "--workload", "stream", "--size", "lots", NULL },
		{ "vgpu-tenant", "--workload", "fly", NULL },
		{ "vgpu-tenant", "--size", "1G", NULL },
		{ "vgpu-tenant", "--workload", "gups", "--duration", "soon", NULL },
		{ "vgpu-tenant", "--workload", "gups", "--priority", "16", NULL },
		{ "vgpu-tenant", "--workload", "gups", "extra", NULL },
	};
	static const char *const options[] = { "--socket", "--name", "--profile", "--workload",
		                               "--size", "--buffer-size", "--duration",
		                               "--iterations", "--seed", "--json", "stream",
		                               "stencil", "gups", "alloc-leak", "escape",
		                               "copy-flood", "Exit status" };
	struct tenant_run run;
	char *text;
	size_t i;

	assert_int_equal(tenant_spawn(runner, help, &run), 0);
	assert_int_equal(tenant_wait(&run, 30), 0);
	text = read_file(run.out);
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (!strstr(text, options[i]))
			fail_msg("--help does not mention %s", options[i]);
	free(text);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tenant_spawn(runner, bad[i], &run), 0);
		assert_int_equal(tenant_wait(&run, 30), 2);
		text = read_file(run.err);
		assert_non_null(strstr(text, "vgpu-tenant: "));
		assert_non_null(strstr(text, "--help"));
		free(text);
	}
}

/* vgpud dies under a running tenant: the tenant notices at once, says so,
 * and fails instead of hanging. */
static void test_vgpud_dies(void **state)
{
	struct daemon_runner *runner = *state;
	const char *const args[] = { "vgpu-tenant", "--socket", runner->socket, "--name", "orphan",
		                     "--workload", "stream", "--size", "8M", "--buffer-size", "1M",
		                     "--duration", "60s", NULL };
	struct tenant_run run;
	int status, i;
	char *text;

	assert_int_equal(tenant_spawn(runner, args, &run), 0);
	for (i = 0; i < 100; i++) { /* until it is attached and running */
		struct timespec pause = { 0, 100000000 };

		text = read_file(runner->log);
		nanosleep(&pause, NULL);
		if (text && strstr(text, "'orphan'")) {
			free(text);
			break;
		}
		free(text);
	}
	{
		struct timespec pause = { 0, 500000000 };

		nanosleep(&pause, NULL);
	}
	kill(runner->pid, SIGKILL);
	waitpid(runner->pid, &status, 0);
	runner->pid = 0;
	assert_int_equal(tenant_wait(&run, 20), 1);
	text = read_file(run.err);
	print_message("tenant said: %s", text);
	assert_non_null(strstr(text, "gone"));
	free(text);
}

/* Kills vgpud a little after the stall workload started waiting. */
struct stall_killer {
	pid_t vgpud;
	pthread_t thread;
	bool started;
	uint64_t killed_ns;
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *kill_vgpud_soon(void *arg)
{
	struct stall_killer *k = arg;
	struct timespec pause = { 0, 200000000 }; /* the tenant is in its wait */

	nanosleep(&pause, NULL);
	k->killed_ns = monotonic_ns();
	kill(k->vgpud, SIGKILL);
	return NULL;
}

static void stalled_kill_vgpud(void *arg, struct vgpu_guest_device *dev, uint64_t wait_ns)
{
	struct stall_killer *k = arg;

	(void)dev;
	(void)wait_ns;
	k->started = pthread_create(&k->thread, NULL, kill_vgpud_soon, k) == 0;
}

/*
 * vgpud killed (SIGKILL, no goodbye) while a tenant waits for a fence that
 * cannot pass (the stall workload: a semaphore nobody releases): the wait
 * ends with -ENODEV ("device lost") within 1 s of the kill, as issue 12
 * asks, and the device stays lost. The runtime notices the local socket's
 * hang-up in the interrupt wait (epoll, EPOLLRDHUP) at once; 1 s is the
 * issue's bound and leaves a loaded 2-core machine ample slack. The time
 * measured runs from the kill to the end of the whole workload (wait,
 * channel destroy, free), an upper bound of the wait's own latency.
 */
static void test_device_lost_ends_fence_wait(void **state)
{
	struct daemon_runner *runner = *state;
	struct vgpu_local_device_config config = { .socket_path = runner->socket,
		                                   .vm_name = "stalled" };
	struct vgpu_workload_options options = { .kind = VGPU_WORKLOAD_STALL,
		                                 .duration_ns = 30ull * 1000000000ull };
	struct stall_killer killer = { .vgpud = runner->pid };
	struct vgpu_workload_result result;
	struct vgpu_stats_response stats;
	struct vgpu_guest_device *dev;
	uint64_t ended_ns, latency_ns;
	char why[512];
	int status;

	assert_int_equal(vgpu_device_open_local(&config, 5000, &dev, why, sizeof(why)), 0);
	options.stalled = stalled_kill_vgpud;
	options.hook_arg = &killer;
	vgpu_workload_run(dev, &options, &result);
	ended_ns = monotonic_ns();
	assert_true(killer.started);
	pthread_join(killer.thread, NULL);
	waitpid(runner->pid, &status, 0);
	runner->pid = 0;

	print_message("stall: %s\n", result.message);
	assert_int_equal(result.error, -ENODEV);
	assert_non_null(strstr(result.message, "device lost"));
	latency_ns = ended_ns - killer.killed_ns;
	print_message("device lost noticed %.1f ms after the kill (waited %.1f ms in all)\n",
	              (double)latency_ns / 1e6, (double)result.stall_wait_ns / 1e6);
	assert_true(result.stall_wait_ns >= 150000000ull); /* it really waited for the kill */
	assert_true(latency_ns < 1000000000ull);
	/* Lost for good: a request fails the same way, at once. */
	assert_int_equal(vgpu_device_stats(dev, &stats), -ENODEV);
	vgpu_device_close(dev);
}

/* The text summary of a good run ends in PASS. */
static void test_text_summary(void **state)
{
	struct daemon_runner *runner = *state;
	const char *const args[] = { "vgpu-tenant", "--socket", runner->socket, "--name", "txt",
		                     "--workload", "gups", "--size", "4M", "--iterations", "2",
		                     NULL };
	struct tenant_run run;
	char *text;

	assert_int_equal(tenant_spawn(runner, args, &run), 0);
	assert_int_equal(tenant_wait(&run, 60), 0);
	text = read_file(run.out);
	assert_non_null(strstr(text, "vgpu-tenant txt"));
	assert_non_null(strstr(text, "checksums   1 verified, 0 wrong"));
	assert_non_null(strstr(text, "\nPASS\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_oversubscription_integrity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submissions_do_not_trap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_not_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_text_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpud_dies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_lost_ends_fence_wait, setup, teardown),
	};

	if (!getenv("VGPUD") || !getenv("VGPU_TENANT")) {
		fprintf(stderr, "test_tenants: set VGPUD and VGPU_TENANT (meson does)\n");
		return 77;
	}
	return cmocka_run_group_tests_name("guest tenants on vgpud", tests, NULL, NULL);
}
