// SPDX-License-Identifier: MIT
/*
 * test_control.c - vgpud's control socket (JSON lines) and vgpuctl's output:
 * status table and JSON, watch, types, set-weight, set-profile, health,
 * config, errors, and the daemon-not-running message with exit status 2;
 * list and a guest's QUERY answer during another VM's large eviction.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "channel_util.h"
#include "control_commands.h"
#include "device.h"
#include "harness.h"

static const char *vgpuctl_path;

struct fixture {
	struct harness h;
	struct tenant a, b;
};

static int setup(void **state)
{
	static struct fixture f;

	harness_config(&f.h);
	harness_start_two_tenants(&f.h, &f.a, &f.b);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	harness_stop_two_tenants(&f->h, &f->a, &f->b);
	return 0;
}


static bool ok(struct json_object *response)
{
	struct json_object *v;

	return json_object_object_get_ex(response, "ok", &v) && json_object_get_boolean(v);
}

static const char *error_text(struct json_object *response)
{
	struct json_object *v;

	return json_object_object_get_ex(response, "error", &v) ? json_object_get_string(v) : "";
}

static struct json_object *vm_named(struct json_object *list, const char *name)
{
	struct json_object *vms, *v;
	size_t i;

	assert_true(json_object_object_get_ex(list, "vms", &vms));
	for (i = 0; i < json_object_array_length(vms); i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i);

		if (json_object_object_get_ex(vm, "name", &v) &&
		    !strcmp(json_object_get_string(v), name))
			return vm;
	}
	return NULL;
}

static uint64_t field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("field '%s' missing", key);
	return json_object_get_uint64(v);
}

/* Run vgpuctl with args; capture stdout and stderr. Returns the exit status. */
static int run_vgpuctl(const char *socket, char *out, size_t out_len, char *err, size_t err_len,
                       const char *const *args)
{
	char command[2048];
	char out_file[] = "/tmp/vgpuctl-out-XXXXXX", err_file[] = "/tmp/vgpuctl-err-XXXXXX";
	int out_fd = mkstemp(out_file), err_fd = mkstemp(err_file), status;
	size_t i, n;
	FILE *f;

	close(out_fd);
	close(err_fd);
	n = (size_t)snprintf(command, sizeof(command), "'%s' --socket '%s'", vgpuctl_path, socket);
	for (i = 0; args[i]; i++)
		n += (size_t)snprintf(command + n, sizeof(command) - n, " '%s'", args[i]);
	snprintf(command + n, sizeof(command) - n, " >%s 2>%s", out_file, err_file);
	status = system(command);
	f = fopen(out_file, "r");
	n = fread(out, 1, out_len - 1, f);
	out[n] = '\0';
	fclose(f);
	f = fopen(err_file, "r");
	n = fread(err, 1, err_len - 1, f);
	err[n] = '\0';
	fclose(f);
	unlink(out_file);
	unlink(err_file);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_list_and_stats(void **state)
{
	struct fixture *f = *state;
	struct json_object *r = harness_control(&f->h, "{\"command\":\"list\"}"), *gpu, *vm, *share;
	static const char *const fields[] = { "id", "name", "profile", "weight", "allocated",
		                              "resident", "evicted", "fair_share", "evictions",
		                              "returns", "debug_modeled_runtime_ns", "verify",
		                              "gpu_time_share", NULL };
	size_t i;

	assert_true(ok(r));
	assert_true(json_object_object_get_ex(r, "gpu", &gpu));
	assert_int_equal(field(gpu, "vram"), f->h.d->caps.vram_bytes);
	assert_int_equal(field(gpu, "chunk"), 1u << 20);
	vm = vm_named(r, "alpha");
	assert_non_null(vm);
	for (i = 0; fields[i]; i++)
		if (!json_object_object_get_ex(vm, fields[i], NULL))
			fail_msg("field %s missing", fields[i]);
	assert_int_equal(field(vm, "allocated"), 8u << 20);
	assert_int_equal(field(vm, "weight"), 1);
	assert_true(json_object_object_get_ex(vm, "gpu_time_share", &share));
	assert_null(share); /* no GPU work yet: not measured */
	vm = vm_named(r, "beta");
	assert_int_equal(field(vm, "allocated"), 64u << 20);
	assert_true(field(vm, "evicted") > 0);
	assert_true(field(vm, "evictions") > 0);
	assert_int_equal(field(vm, "resident") + field(vm, "evicted"), 64u << 20);
	assert_int_equal(field(vm, "id"), vgpu_local_device_vm_id(f->b.dev));
	json_object_put(r);

	r = harness_control(&f->h, "{\"command\":\"stats\",\"vm\":\"beta\"}");
	assert_true(ok(r));
	assert_true(json_object_object_get_ex(r, "vm", &vm));
	assert_true(field(vm, "requests") >= 3);
	assert_int_equal(field(vm, "buffers"), 2);
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"stats\",\"vm\":\"gamma\"}");
	assert_false(ok(r));
	assert_non_null(strstr(error_text(r), "gamma"));
	json_object_put(r);
}

static void test_set_weight_and_profiles(void **state)
{
	struct fixture *f = *state;
	struct json_object *r, *list, *profiles;
	struct vgpu_vm_stats stats;

	r = harness_control(&f->h, "{\"command\":\"set-weight\",\"vm\":\"alpha\",\"weight\":7}");
	assert_true(ok(r));
	json_object_put(r);
	list = harness_control(&f->h, "{\"command\":\"list\"}");
	assert_int_equal(field(vm_named(list, "alpha"), "weight"), 7);
	json_object_put(list);
	r = harness_control(&f->h, "{\"command\":\"set-weight\",\"vm\":\"alpha\",\"weight\":0}");
	assert_false(ok(r));
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"set-weight\",\"vm\":\"alpha\",\"weight\":\"x\"}");
	assert_false(ok(r));
	json_object_put(r);

	/* profile weight: applies to beta (profile big), not to alpha's own */
	r = harness_control(&f->h, "{\"command\":\"set-profile\",\"profile\":\"big\",\"weight\":9,"
	                   "\"cap\":\"128M\",\"max_instances\":3}");
	assert_true(ok(r));
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"set-profile\",\"profile\":\"small\",\"weight\":4}");
	assert_true(ok(r));
	json_object_put(r);
	vgpu_core_vm_stats(f->h.d->registry.first->vm, &stats);
	assert_string_equal(stats.name, "alpha");
	assert_int_equal(stats.weight, 7);
	vgpu_core_vm_stats(f->h.d->registry.first->registry_next->vm, &stats);
	assert_int_equal(stats.weight, 9);

	r = harness_control(&f->h, "{\"command\":\"types\"}");
	assert_true(ok(r));
	assert_true(json_object_object_get_ex(r, "profiles", &profiles));
	for (size_t i = 0; i < json_object_array_length(profiles); i++) {
		struct json_object *p = json_object_array_get_idx(profiles, i), *name;

		json_object_object_get_ex(p, "name", &name);
		if (!strcmp(json_object_get_string(name), "big")) {
			assert_int_equal(field(p, "weight"), 9);
			assert_int_equal(field(p, "cap"), 128u << 20);
			assert_int_equal(field(p, "instances"), 1);
			assert_int_equal(field(p, "available"), 2);
		}
	}
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"set-profile\",\"profile\":\"nope\",\"weight\":1}");
	assert_false(ok(r));
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"set-profile\",\"profile\":\"big\"}");
	assert_false(ok(r));
	json_object_put(r);
}

static void test_health_config_and_errors(void **state)
{
	struct fixture *f = *state;
	struct json_object *r, *config, *core;
	char *text;

	r = harness_control(&f->h, "{\"command\":\"health\",\"invariants\":true}");
	assert_true(ok(r));
	assert_int_equal(field(r, "vms"), 2);
	{
		struct json_object *inv;

		assert_true(json_object_object_get_ex(r, "invariants", &inv));
		assert_string_equal(json_object_get_string(inv), "ok");
	}
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"config\"}");
	assert_true(ok(r));
	assert_true(json_object_object_get_ex(r, "config", &config));
	assert_true(json_object_object_get_ex(config, "core", &core));
	assert_int_equal(field(core, "chunk_size"), 1u << 20);
	json_object_put(r);

	r = harness_control(&f->h, "not json");
	assert_false(ok(r));
	json_object_put(r);
	r = harness_control(&f->h, "[1,2]");
	assert_false(ok(r));
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"explode\"}");
	assert_false(ok(r));
	assert_non_null(strstr(error_text(r), "explode"));
	json_object_put(r);
	r = harness_control(&f->h, "{\"command\":\"list\"} trailing");
	assert_false(ok(r));
	json_object_put(r);
	/* direct handler: same answers */
	text = vgpud_control_handle(f->h.d, "{\"command\":\"health\"}", NULL);
	assert_non_null(strstr(text, "\"ok\":true"));
	free(text);
	/* several requests on one connection */
	{
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		const char *two = "{\"command\":\"health\"}\n{\"command\":\"types\"}\n";
		char buf[8192];
		size_t len = 0, lines = 0, i;
		ssize_t n;
		int sock = socket(AF_UNIX, SOCK_STREAM, 0);

		strcpy(addr.sun_path, f->h.config.control_path);
		assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
		assert_int_equal(write(sock, two, strlen(two)), (ssize_t)strlen(two));
		while (lines < 2 && (n = read(sock, buf + len, sizeof(buf) - len)) > 0) {
			for (i = len; i < len + (size_t)n; i++)
				lines += buf[i] == '\n';
			len += (size_t)n;
		}
		assert_int_equal(lines, 2);
		close(sock);
	}
}

static int connect_control(struct harness *h)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(sock >= 0);
	strcpy(addr.sun_path, h->config.control_path);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return sock;
}

/* Wait up to timeout_ms for vgpud to close sock (what it sent first goes
 * to out). true: closed. */
static bool closed_by_vgpud(int sock, int timeout_ms, char *out, size_t out_len)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	size_t len = 0;

	out[0] = 0;
	while (poll(&p, 1, timeout_ms) > 0) {
		ssize_t n = read(sock, out + len, out_len - 1 - len);

		if (n <= 0)
			return true;
		len += (size_t)n;
		out[len] = 0;
	}
	return false;
}

/* Issue 12 item 5: the sockets bound what one user can hold. */
static void test_socket_limits(void **state)
{
	struct harness h;
	struct tenant quiet, busy, extra, wrong;
	struct json_object *r;
	char text[512];
	uint32_t handle;
	uint64_t va;
	int silent[2];
	(void)state;

	harness_config(&h);
	h.config.control_max_connections_per_uid = 2;
	h.config.control_idle_timeout_ms = 300;
	h.config.max_connections_per_uid = 2;
	h.config.idle_timeout_ms = 300;
	strcpy(h.config.allowed_profiles, "small, big");
	harness_start(&h);

	/* control: two silent connections are all this user gets ... */
	silent[0] = connect_control(&h);
	silent[1] = connect_control(&h);
	{
		int third = connect_control(&h);

		assert_true(closed_by_vgpud(third, 5000, text, sizeof(text)));
		assert_non_null(strstr(text, "control_max_connections_per_uid"));
		close(third);
	}
	/* ... until the idle timeout closes them */
	assert_true(closed_by_vgpud(silent[0], 5000, text, sizeof(text)));
	assert_true(closed_by_vgpud(silent[1], 5000, text, sizeof(text)));
	close(silent[0]);
	close(silent[1]);
	r = harness_control(&h, "{\"command\":\"health\"}");
	assert_true(ok(r));
	json_object_put(r);

	/* the host budget: auto = half of the RAM, as vgpuctl config shows */
	r = harness_control(&h, "{\"command\":\"config\"}");
	{
		struct json_object *config, *core, *sock;
		uint64_t half = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) / 2;

		assert_true(json_object_object_get_ex(r, "config", &config));
		assert_true(json_object_object_get_ex(config, "core", &core));
		assert_int_equal(field(core, "host_budget"), half);
		assert_true(json_object_object_get_ex(config, "socket", &sock));
		assert_int_equal(field(sock, "max_connections_per_uid"), 2);
	}
	json_object_put(r);

	/* tenants: a profile the socket does not allow */
	assert_int_equal(tenant_open(&h, &wrong, "wrong", "one"), -EPERM);
	/* two connections per user */
	assert_int_equal(tenant_open(&h, &quiet, "quiet", "small"), 0);
	assert_int_equal(tenant_open(&h, &busy, "busy", "big"), 0);
	assert_int_not_equal(tenant_open(&h, &extra, "extra", "small"), 0);
	/* one holds memory, one nothing: the idle timeout detaches only that */
	assert_int_equal(tenant_hello(&busy), 0);
	assert_int_equal(tenant_alloc(&busy, 1 << 20, 0, &handle, &va), 0);
	assert_true(harness_wait_vms(&h, 1, 5000));
	r = harness_control(&h, "{\"command\":\"stats\",\"vm\":\"busy\"}");
	assert_true(ok(r));
	json_object_put(r);
	/* its slot is free again */
	assert_int_equal(tenant_open(&h, &extra, "extra", "small"), 0);
	tenant_close(&extra);
	tenant_close(&quiet);
	tenant_close(&busy);
	harness_stop(&h);
}

static void test_vgpuctl(void **state)
{
	struct fixture *f = *state;
	const char *socket = f->h.config.control_path;
	char out[65536], err[4096];
	struct json_object *doc, *vms, *vm;
	struct test_channel c;
	uint32_t words[32], n;
	uint64_t va;

	/* status table: a header, the GPU line, one row per VM */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "status", NULL }), 0);
	assert_non_null(strstr(out, "VM"));
	assert_non_null(strstr(out, "FAIR SHARE"));
	assert_non_null(strstr(out, "GPU TIME"));
	assert_non_null(strstr(out, "alpha"));
	assert_non_null(strstr(out, "beta"));
	assert_non_null(strstr(out, "small"));
	assert_non_null(strstr(out, " 8.0M"));
	assert_non_null(strstr(out, "64.0M"));
	/* GPU time not measured yet: no share */
	assert_non_null(strstr(out, " -  "));

	/* status --json */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "status", "--json", NULL }), 0);
	doc = json_tokener_parse(out);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "vms", &vms));
	assert_int_equal(json_object_array_length(vms), 2);
	vm = vm_named(doc, "beta");
	assert_string_equal(json_object_get_string(json_object_object_get(vm, "profile")), "big");
	assert_int_equal(field(vm, "allocated"), 64u << 20);
	assert_true(json_object_object_get_ex(vm, "id", NULL));
	assert_true(json_object_object_get_ex(vm, "debug_modeled_runtime_ns", NULL));
	json_object_put(doc);

	/* GPU work: the time share becomes a number */
	assert_int_equal(tenant_alloc(&f->a, 1u << 20, 7, NULL, &va), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&f->a, 16, &c), VGPU_STATUS_OK);
	n = vgpu_push_launch_stream(words, va, 1u << 20, 2);
	test_channel_submit(&c, words, n);
	assert_int_equal(test_channel_finish(&c, 10000), 0);
	/* the accounting thread decides once a channel exists (a period is a
	 * few ms; allow 10 s on a loaded host) */
	for (int tries = 0;; tries++) {
		struct json_object *share;

		assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
		                             (const char *const[]){ "status", "--json", NULL }),
		                 0);
		doc = json_tokener_parse(out);
		vm = vm_named(doc, "alpha");
		assert_true(json_object_object_get_ex(vm, "gpu_time_share", &share));
		if (share) {
			assert_true(json_object_get_double(share) >= 0);
			assert_true(json_object_get_double(share) <= 1);
			assert_string_equal(json_object_get_string(json_object_object_get(vm,
			                                                                  "scheduler")),
			                    "best-effort");
			assert_string_equal(json_object_get_string(json_object_object_get(vm,
			                                                                  "scheduling")),
			                    "running");
			json_object_put(doc);
			break;
		}
		json_object_put(doc);
		assert_true(tries < 1000);
		usleep(10000);
	}
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "status", NULL }), 0);
	assert_non_null(strstr(out, "SCHEDULER"));
	assert_non_null(strstr(out, "best-effort"));

	/* set-scheduler */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-scheduler", "beta", "equal-share",
	                                                    NULL }),
	                 0);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "stats", "beta", NULL }), 0);
	doc = json_tokener_parse(out);
	assert_string_equal(json_object_get_string(json_object_object_get(doc, "scheduler")),
	                    "equal-share");
	json_object_put(doc);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-scheduler", "beta", "fastest",
	                                                    NULL }),
	                 1);
	assert_non_null(strstr(err, "fastest"));
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-scheduler", "nobody", "weighted",
	                                                    NULL }),
	                 1);
	assert_non_null(strstr(err, "nobody"));

	/* set-weight */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-weight", "beta", "5", NULL }),
	                 0);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "status", "--json", NULL }), 0);
	doc = json_tokener_parse(out);
	assert_int_equal(field(vm_named(doc, "beta"), "weight"), 5);
	json_object_put(doc);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-weight", "nobody", "5", NULL }),
	                 1);
	assert_non_null(strstr(err, "nobody"));
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-weight", "beta", "zero", NULL }),
	                 64);

	/* watch --count */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "watch", "--interval", "0.05",
	                                                    "--count", "3", NULL }),
	                 0);
	{
		const char *p = out;
		int tables = 0;

		while ((p = strstr(p, "FAIR SHARE"))) {
			tables++;
			p++;
		}
		assert_int_equal(tables, 3);
	}

	/* types */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "types", NULL }), 0);
	assert_non_null(strstr(out, "small (default)"));
	assert_non_null(strstr(out, "unlimited"));
	/* set-profile: the name before or after the options, as --help shows it */
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-profile", "small",
	                                                    "--max-instances", "3", NULL }), 0);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-profile", "--max-instances", "5",
	                                                    "big", NULL }), 0);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "types", "--json", NULL }), 0);
	assert_non_null(strstr(out, "\"max_instances\":3"));
	assert_non_null(strstr(out, "\"max_instances\":5"));
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "set-profile", "small", "big",
	                                                    "--weight", "2", NULL }), 64);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "health", "--check", NULL }), 0);
	assert_non_null(strstr(out, "invariants ok"));
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "frobnicate", NULL }), 64);
	assert_int_equal(run_vgpuctl(socket, out, sizeof(out), err, sizeof(err),
	                             (const char *const[]){ "--help", NULL }), 0);
	assert_non_null(strstr(out, "set-weight VM N"));

	/* vgpud not running: one line naming the socket, exit status 2 */
	assert_int_equal(run_vgpuctl("/tmp/vgpud-test-nowhere/control.sock", out, sizeof(out),
	                             err, sizeof(err), (const char *const[]){ "status", NULL }),
	                 2);
	assert_non_null(strstr(err, "/tmp/vgpud-test-nowhere/control.sock"));
	assert_non_null(strstr(err, "not running"));
	assert_non_null(strchr(err, '\n'));
	assert_string_equal(strchr(err, '\n'), "\n"); /* exactly one line */
	assert_string_equal(out, "");
}

struct evicting_tenant {
	struct tenant *tenant;
	uint64_t bytes;
	int status;
	atomic_bool done;
};

static void *evicting_alloc_main(void *arg)
{
	struct evicting_tenant *e = arg;

	e->status = tenant_alloc(e->tenant, e->bytes, 7, NULL, NULL);
	atomic_store(&e->done, true);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Issue 16: `list` (vgpuctl status) and a guest's QUERY answer while another
 * VM's eviction of 256 MiB or more is in progress: beta's allocation evicts
 * alpha's memory on a copy engine slowed to 256 MiB/s of wall time (about a
 * second), while gamma, not involved, asks. Every answer within 100 ms (a
 * generous bound for a loaded machine: an answer takes microseconds of
 * work, while one that waited for the eviction would take about a second).
 */
static void test_status_during_large_eviction(void **state)
{
	struct harness h;
	struct tenant alpha, beta, gamma;
	struct evicting_tenant e = { .tenant = &beta, .bytes = 384ull << 20 };
	uint64_t list_worst = 0, query_worst = 0, probes = 0;
	struct json_object *r;
	pthread_t thread;

	(void)state;
	harness_config(&h);
	h.config.gpu.vram_bytes = 404ull << 20; /* 400 MiB for VMs */
	h.config.chunk_bytes = 4ull << 20;
	h.config.gpu.copy_wall_bandwidth = 256ull << 20;
	harness_start(&h);
	assert_int_equal(tenant_open(&h, &alpha, "alpha", "big"), 0);
	assert_int_equal(tenant_open(&h, &beta, "beta", "big"), 0);
	assert_int_equal(tenant_open(&h, &gamma, "gamma", "small"), 0);
	assert_int_equal(tenant_hello(&alpha), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(&beta), VGPU_STATUS_OK);
	assert_int_equal(tenant_hello(&gamma), VGPU_STATUS_OK);
	/* alpha stays the victim while beta's allocation is pending */
	r = harness_control(&h, "{\"command\":\"set-weight\",\"vm\":\"beta\",\"weight\":1000}");
	assert_true(ok(r));
	json_object_put(r);
	for (int i = 0; i < 9; i++)
		assert_int_equal(tenant_alloc(&alpha, 32ull << 20, 7, NULL, NULL), VGPU_STATUS_OK);

	atomic_init(&e.done, false);
	assert_int_equal(pthread_create(&thread, NULL, evicting_alloc_main, &e), 0);
	while (!atomic_load(&e.done)) {
		uint64_t start = now_ns(), listed, queried;

		r = harness_control(&h, "{\"command\":\"list\"}");
		listed = now_ns();
		assert_true(ok(r));
		json_object_put(r);
		assert_int_equal(tenant_call(&gamma, VGPU_OP_QUERY, NULL, 0, NULL), VGPU_STATUS_OK);
		queried = now_ns();
		if (listed - start > list_worst)
			list_worst = listed - start;
		if (queried - listed > query_worst)
			query_worst = queried - listed;
		probes++;
		usleep(10000);
	}
	pthread_join(thread, NULL);
	assert_int_equal(e.status, VGPU_STATUS_OK);
	r = harness_control(&h, "{\"command\":\"list\"}");
	print_message("alpha evicted %llu MiB; %llu probes meanwhile: slowest list %.2f ms, "
	              "slowest QUERY %.2f ms\n",
	              (unsigned long long)(field(vm_named(r, "alpha"), "evicted") >> 20),
	              (unsigned long long)probes, (double)list_worst / 1e6,
	              (double)query_worst / 1e6);
	assert_true(field(vm_named(r, "alpha"), "evicted") >= 256ull << 20);
	json_object_put(r);
	assert_true(probes >= 5);
	assert_true(list_worst < 100000000ull);
	assert_true(query_worst < 100000000ull);
	tenant_close(&gamma);
	tenant_close(&beta);
	tenant_close(&alpha);
	harness_stop(&h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_and_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_weight_and_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_health_config_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpuctl, setup, teardown),
		cmocka_unit_test(test_socket_limits),
		cmocka_unit_test(test_status_during_large_eviction),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-OF-vgpuctl\n", argv[0]);
		return 2;
	}
	vgpuctl_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
