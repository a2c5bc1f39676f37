// SPDX-License-Identifier: MIT
/*
 * test_metrics.c - vgpud's Prometheus metrics (metrics.h, metrics_http.h):
 * the formatter's label escaping and exposition syntax, the HTTP endpoint
 * of a real in-process vgpud on an ephemeral port (status line, content
 * type, per-VM values equal to what the control API's "list" reports, 404,
 * 405, HEAD), `vgpuctl metrics` printing the same text as HTTP, scrapes
 * racing allocations and frees, a port already taken, and metrics = off.
 *
 * The HTTP client is a plain socket (no curl): one request per connection,
 * "Connection: close", read until EOF.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "channel_util.h"
#include "control_commands.h"
#include "harness.h"
#include "metrics.h"
#include "metrics_http.h"
#include "stats_snapshot.h"

static const char *vgpuctl_path;

/* ------------------------------------------------------------ HTTP client */

struct http_reply {
	int status;
	char *raw;          /* the whole response */
	char *headers;      /* into raw: after the status line */
	char *body;         /* into raw */
	size_t body_len;
};

static void http_reply_free(struct http_reply *r)
{
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* One request to 127.0.0.1:port; body may be NULL. Asserts on I/O errors. */
static void http_request(uint16_t port, const char *method, const char *path, const char *body,
                         struct http_reply *out)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval timeout = { .tv_sec = 20 };
	char request[512];
	size_t len = 0, cap = 65536;
	ssize_t n;
	int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char *end;

	memset(out, 0, sizeof(*out));
	assert_true(sock >= 0);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	n = snprintf(request, sizeof(request),
	             "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
	             "%s%.0zu%s\r\n%s",
	             method, path, port, body ? "Content-Length: " : "", body ? strlen(body) : 0,
	             body ? "\r\n" : "", body ? body : "");
	assert_int_equal(send(sock, request, (size_t)n, MSG_NOSIGNAL), n);
	out->raw = malloc(cap + 1);
	assert_non_null(out->raw);
	while ((n = recv(sock, out->raw + len, cap - len, 0)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			cap *= 2;
			out->raw = realloc(out->raw, cap + 1);
			assert_non_null(out->raw);
		}
	}
	assert_int_equal(n, 0); /* EOF, not a timeout */
	close(sock);
	out->raw[len] = '\0';
	assert_int_equal(sscanf(out->raw, "HTTP/1.1 %d ", &out->status), 1);
	out->headers = strstr(out->raw, "\r\n");
	assert_non_null(out->headers);
	out->headers += 2;
	end = strstr(out->headers, "\r\n\r\n");
	assert_non_null(end);
	end[2] = '\0'; /* headers: lines ending in \r\n */
	out->body = end + 4;
	out->body_len = len - (size_t)(out->body - out->raw);
}

/* A header's value (copied into value), or false. */
static bool http_header(const struct http_reply *r, const char *name, char *value, size_t len)
{
	const char *line = r->headers;

	while (line && *line) {
		const char *eol = strstr(line, "\r\n"), *colon = strchr(line, ':');

		if (colon && colon < eol && (size_t)(colon - line) == strlen(name) &&
		    !strncasecmp(line, name, strlen(name))) {
			colon++;
			while (*colon == ' ')
				colon++;
			snprintf(value, len, "%.*s", (int)(eol - colon), colon);
			return true;
		}
		line = eol ? eol + 2 : NULL;
	}
	return false;
}

/* ------------------------------------------------ exposition format check */

#define MAX_FAMILIES 128

struct family {
	char name[128];
	bool help, type, samples_done;
};

static struct family *family_find(struct family *families, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(families[i].name, name))
			return &families[i];
	return NULL;
}

static bool name_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':' || (!first && isdigit((unsigned char)c));
}

/* Parse one sample line "name{l="v",...} value" into its metric name;
 * fails the test with the line when it is not one. */
static void parse_sample(const char *line, char *name, size_t name_len)
{
	const char *p = line;
	size_t n = 0;
	char *end;

	if (!name_char(*p, true))
		fail_msg("sample line does not start with a metric name: '%s'", line);
	while (name_char(*p, false)) {
		if (n + 1 < name_len)
			name[n++] = *p;
		p++;
	}
	name[n] = '\0';
	if (*p == '{') {
		p++;
		while (*p != '}') {
			if (!name_char(*p, true))
				fail_msg("bad label name in '%s'", line);
			while (name_char(*p, false))
				p++;
			if (p[0] != '=' || p[1] != '"')
				fail_msg("label without =\"value\" in '%s'", line);
			p += 2;
			while (*p != '"') {
				if (!*p || *p == '\n')
					fail_msg("unterminated label value in '%s'", line);
				if (*p == '\\') {
					if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
						fail_msg("bad escape in '%s'", line);
					p++;
				}
				p++;
			}
			p++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				fail_msg("labels not separated by ',' in '%s'", line);
		}
		p++;
	}
	if (*p != ' ')
		fail_msg("no ' value' after the name in '%s'", line);
	p++;
	errno = 0;
	strtod(p, &end);
	if (end == p || *end || errno)
		fail_msg("value '%s' is not a number in '%s'", p, line);
}

/* Every line is a HELP, a TYPE or a sample; every sample's family has HELP
 * and TYPE before it; a family's samples are contiguous; the text ends
 * with a newline. Returns the number of families. */
static size_t check_exposition(const char *text)
{
	static struct family families[MAX_FAMILIES];
	struct family *current = NULL;
	char *copy = strdup(text), *line, *save = NULL;
	size_t n = 0, samples = 0;

	assert_non_null(copy);
	assert_true(strlen(text) > 0);
	assert_int_equal(text[strlen(text) - 1], '\n');
	assert_null(strstr(text, "\n\n"));
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];
		struct family *f;

		if (line[0] == '#') {
			char kind[8], type[16];

			if (sscanf(line, "# %7s %127s", kind, name) != 2 ||
			    (strcmp(kind, "HELP") && strcmp(kind, "TYPE")))
				fail_msg("comment is neither HELP nor TYPE: '%s'", line);
			if (strncmp(name, "vgpu_", 5))
				fail_msg("metric '%s' does not start with vgpu_", name);
			f = family_find(families, n, name);
			if (!f) {
				assert_true(n < MAX_FAMILIES);
				f = &families[n++];
				memset(f, 0, sizeof(*f));
				snprintf(f->name, sizeof(f->name), "%s", name);
			}
			if (current && current != f)
				current->samples_done = true;
			current = f;
			if (!strcmp(kind, "HELP")) {
				assert_false(f->help);
				f->help = true;
				assert_true(strlen(line) > strlen("# HELP  ") + strlen(name));
			} else {
				assert_false(f->type);
				f->type = true;
				assert_int_equal(sscanf(line, "# TYPE %*s %15s", type), 1);
				if (strcmp(type, "gauge") && strcmp(type, "counter"))
					fail_msg("type '%s' of %s", type, name);
				if (!strcmp(type, "counter") &&
				    strcmp(name + strlen(name) - 6, "_total"))
					fail_msg("counter %s does not end in _total", name);
			}
			continue;
		}
		parse_sample(line, name, sizeof(name));
		f = family_find(families, n, name);
		if (!f || !f->help || !f->type)
			fail_msg("sample of %s without HELP and TYPE before it", name);
		if (f != current || f->samples_done)
			fail_msg("samples of %s are not together under its HELP/TYPE", name);
		samples++;
	}
	free(copy);
	assert_true(samples > 0);
	return n;
}

/* The value of the sample whose line starts with prefix ("name{...} "). */
static bool sample_value(const char *text, const char *prefix, double *value)
{
	const char *p = text;
	size_t len = strlen(prefix);

	while (p && *p) {
		if (!strncmp(p, prefix, len)) {
			*value = strtod(p + len, NULL);
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static double vm_sample(const char *text, const char *metric, const char *name,
                        const char *profile)
{
	char prefix[512];
	double v;

	snprintf(prefix, sizeof(prefix),
	         "%s{uuid=\"\",name=\"%s\",profile=\"%s\",transport=\"local socket\"} ", metric,
	         name, profile);
	if (!sample_value(text, prefix, &v))
		fail_msg("no sample '%s'", prefix);
	return v;
}

/* ------------------------------------------------------------- formatter */

static void test_escape_label(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(vgpud_metrics_escape_label("plain-vm_1", out, sizeof(out)), 10);
	assert_string_equal(out, "plain-vm_1");
	assert_int_equal(vgpud_metrics_escape_label("a\"b\\c\nd", out, sizeof(out)), 10);
	assert_string_equal(out, "a\\\"b\\\\c\\nd");
	/* truncation never splits an escape and says what was needed */
	assert_int_equal(vgpud_metrics_escape_label("ab\"c", out, 4), 5);
	assert_string_equal(out, "ab");
	assert_int_equal(vgpud_metrics_escape_label("ab\"c", out, 5), 5);
	assert_string_equal(out, "ab\\\"");
	assert_int_equal(vgpud_metrics_escape_label("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(vgpud_metrics_escape_label("x", NULL, 0), 1);
}

static void test_format_odd_names(void **state)
{
	struct vgpud_vm_snapshot vms[2];
	struct vgpud_stats_snapshot s;
	char long_name[VGPU_VM_NAME_MAX];
	double v;
	size_t len = 0;
	char *text;

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(vms, 0, sizeof(vms));
	s.hal = "simgpu";
	s.policy = "random";
	s.chunk_bytes = 1 << 20;
	s.core.vram_bytes = 64u << 20;
	s.core.resident_bytes = 3u << 20;
	s.core.vms = 2;
	s.vms = vms;
	s.vm_count = 2;
	vms[0].id = 1;
	strcpy(vms[0].name, "we\"ird\\vm\nname");
	strcpy(vms[0].attach_name, vms[0].name);
	vms[0].name_source = "tenant";
	strcpy(vms[0].profile, "small");
	vms[0].transport = "local socket";
	vms[0].stats.allocated_bytes = 3u << 20;
	vms[0].stats.resident_bytes = 3u << 20;
	vms[0].stats.suspended_ns = 1500000001;
	/* a VM named by the longest name, quotes only: every byte escaped */
	memset(long_name, '"', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	vms[1].id = 2;
	strcpy(vms[1].name, long_name);
	strcpy(vms[1].uuid, "6f1a5c2e-3b7d-4e2a-9c1f-0d8e7b6a5f43");
	vms[1].name_source = "libvirt";
	strcpy(vms[1].profile, "big");
	vms[1].transport = "mdev";

	text = vgpud_metrics_format(&s, &len);
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	check_exposition(text);
	assert_non_null(strstr(text, "vgpu_vm_allocated_bytes{uuid=\"\",name=\"we\\\"ird\\\\vm\\nname\","
	                             "profile=\"small\",transport=\"local socket\"} 3145728\n"));
	assert_non_null(strstr(text, "vgpu_vm_info{uuid=\"\",name=\"we\\\"ird\\\\vm\\nname\","
	                             "profile=\"small\",transport=\"local socket\",id=\"1\","
	                             "name_source=\"tenant\"} 1\n"));
	/* nanoseconds as exact seconds */
	assert_true(sample_value(text, "vgpu_vm_suspended_seconds_total{uuid=\"\",name=\"we\\\"ird"
	                               "\\\\vm\\nname\",profile=\"small\",transport=\"local "
	                               "socket\"} ", &v));
	assert_non_null(strstr(text, "transport=\"local socket\"} 1.500000001\n"));
	{
		char expect[512], escaped[2 * VGPU_VM_NAME_MAX];

		vgpud_metrics_escape_label(long_name, escaped, sizeof(escaped));
		assert_int_equal(strlen(escaped), 2 * (VGPU_VM_NAME_MAX - 1));
		snprintf(expect, sizeof(expect),
		         "vgpu_vm_resident_bytes{uuid=\"6f1a5c2e-3b7d-4e2a-9c1f-0d8e7b6a5f43\","
		         "name=\"%s\",profile=\"big\",transport=\"mdev\"} 0\n", escaped);
		assert_non_null(strstr(text, expect));
	}
	assert_non_null(strstr(text, "vgpu_vms 2\n"));
	assert_non_null(strstr(text, "vgpu_gpu_info{hal=\"simgpu\",policy=\"random\"} 1\n"));
	/* no GPU time measured: the share is absent, its HELP/TYPE are not */
	assert_null(strstr(text, "vgpu_vm_gpu_time_share_ratio{"));
	assert_non_null(strstr(text, "# TYPE vgpu_vm_gpu_time_share_ratio gauge\n"));
	/* time-sliced GPU: no spatial-sharing figures, not even their families */
	assert_null(strstr(text, "vgpu_vm_page_walks_total"));
	free(text);

	/* no VM at all: still valid, every family announced */
	s.vm_count = 0;
	text = vgpud_metrics_format(&s, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "# HELP vgpu_vm_resident_bytes "));
	assert_non_null(strstr(text, "vgpu_vms 0\n"));
	free(text);
}

/* --------------------------------------------------------- a real vgpud */

struct fixture {
	struct harness h;
	struct tenant a, b;
	uint16_t port;
};

static int setup(void **state)
{
	static struct fixture f;

	harness_config(&f.h);
	strcpy(f.h.config.metrics, "127.0.0.1:0"); /* any free port */
	harness_start_two_tenants(&f.h, &f.a, &f.b);
	assert_non_null(f.h.d->metrics);
	f.port = metrics_http_port(f.h.d->metrics);
	assert_true(f.port > 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	harness_stop_two_tenants(&f->h, &f->a, &f->b);
	return 0;
}

/* The control API's answer to request (same handler as the socket). */
static struct json_object *control(struct harness *h, const char *request)
{
	char *text = vgpud_control_handle(h->d, request, NULL);
	struct json_object *response, *ok;

	assert_non_null(text);
	response = json_tokener_parse(text);
	free(text);
	assert_non_null(response);
	assert_true(json_object_object_get_ex(response, "ok", &ok) && json_object_get_boolean(ok));
	return response;
}

static struct json_object *status_vm(struct json_object *list, const char *name)
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
	fail_msg("status has no VM %s", name);
	return NULL;
}

static uint64_t field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("field '%s' missing", key);
	return json_object_get_uint64(v);
}

/* Run GPU work in alpha so GPU time is measured. */
/* alpha's accounted GPU time and share, "" while not measured. */
static void accounting_of(struct fixture *f, char *out, size_t len)
{
	struct json_object *list = control(&f->h, "{\"command\":\"list\"}");
	struct json_object *vm = status_vm(list, "alpha"), *share;

	out[0] = '\0';
	if (json_object_object_get_ex(vm, "gpu_time_share", &share) && share)
		snprintf(out, len, "%llu %.9f", (unsigned long long)field(vm, "gpu_time_ns"),
		         json_object_get_double(share));
	json_object_put(list);
}

/* The accounting thread keeps deciding while a channel exists; once the
 * work is done and it has measured once, alpha's figures stop changing
 * (idle: no GPU time, share 0). Wait for that, so that /metrics and status
 * read the same (up to 10 s on a loaded host). */
static void wait_accounting_settled(struct fixture *f)
{
	char before[64], after[64];

	for (int tries = 0;; tries++) {
		accounting_of(f, before, sizeof(before));
		usleep(50000);
		accounting_of(f, after, sizeof(after));
		if (before[0] && !strcmp(before, after))
			return;
		assert_true(tries < 200);
	}
}

static void run_gpu_work(struct fixture *f)
{
	struct test_channel c;
	uint32_t words[32], n;
	uint64_t va;

	assert_int_equal(tenant_alloc(&f->a, 1u << 20, 7, NULL, &va), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&f->a, 16, &c), VGPU_STATUS_OK);
	n = vgpu_push_launch_stream(words, va, 1u << 20, 2);
	test_channel_submit(&c, words, n);
	assert_int_equal(test_channel_finish(&c, 10000), 0);
	wait_accounting_settled(f);
}

static void test_http_metrics_match_status(void **state)
{
	static const struct {
		const char *metric, *field;
	} same[] = {
		{ "vgpu_vm_allocated_bytes", "allocated" },
		{ "vgpu_vm_resident_bytes", "resident" },
		{ "vgpu_vm_evicted_bytes", "evicted" },
		{ "vgpu_vm_fair_share_bytes", "fair_share" },
		{ "vgpu_vm_cap_bytes", "cap" },
		{ "vgpu_vm_weight", "weight" },
		{ "vgpu_vm_evictions_total", "evictions" },
		{ "vgpu_vm_returns_total", "returns" },
		{ "vgpu_vm_buffers", "buffers" },
		{ "vgpu_vm_channels", "channels" },
	};
	static const char *const profiles[] = { "small", "big" };
	static const char *const names[] = { "alpha", "beta" };
	struct fixture *f = *state;
	struct json_object *list, *gpu, *share;
	struct http_reply r;
	char value[128];
	size_t i, j;
	double v;

	run_gpu_work(f);
	http_request(f->port, "GET", "/metrics", NULL, &r);
	/* idle now (no pressure change, no work): status sees the same state */
	list = control(&f->h, "{\"command\":\"list\"}");
	assert_int_equal(r.status, 200);
	assert_true(http_header(&r, "Content-Type", value, sizeof(value)));
	assert_string_equal(value, "text/plain; version=0.0.4; charset=utf-8");
	assert_true(http_header(&r, "Content-Length", value, sizeof(value)));
	assert_int_equal(strtoull(value, NULL, 10), r.body_len);
	assert_int_equal(strlen(r.body), r.body_len);
	assert_true(check_exposition(r.body) >= 30);

	for (i = 0; i < 2; i++) {
		struct json_object *vm = status_vm(list, names[i]);

		for (j = 0; j < sizeof(same) / sizeof(same[0]); j++) {
			v = vm_sample(r.body, same[j].metric, names[i], profiles[i]);
			if ((uint64_t)v != field(vm, same[j].field))
				fail_msg("%s of %s: metrics %.0f, status %llu", same[j].metric,
				         names[i], v,
				         (unsigned long long)field(vm, same[j].field));
		}
		v = vm_sample(r.body, "vgpu_vm_debug_modeled_runtime_seconds_total", names[i],
		              profiles[i]);
		assert_true(fabs(v * 1e9 - (double)field(vm, "debug_modeled_runtime_ns")) < 1.0);
		v = vm_sample(r.body, "vgpu_vm_gpu_time_seconds_total", names[i], profiles[i]);
		assert_true(fabs(v * 1e9 - (double)field(vm, "gpu_time_ns")) < 1.0);
		v = vm_sample(r.body, "vgpu_vm_throttled", names[i], profiles[i]);
		assert_true(v == 0.0); /* best-effort */
		v = vm_sample(r.body, "vgpu_vm_throttled_seconds_total", names[i], profiles[i]);
		assert_true(fabs(v * 1e9 - (double)field(vm, "throttled_ns")) < 1.0);
		assert_true(json_object_object_get_ex(vm, "gpu_time_share", &share));
		assert_non_null(share); /* measured (alpha ran work; beta's share is 0) */
		v = vm_sample(r.body, "vgpu_vm_gpu_time_share_ratio", names[i], profiles[i]);
		assert_true(fabs(v - json_object_get_double(share)) < 1e-6);
		v = vm_sample(r.body, "vgpu_vm_vram_share_ratio", names[i], profiles[i]);
		assert_true(fabs(v - json_object_get_double(json_object_object_get(vm,
		                                                                   "vram_share"))) <
		            1e-6);
	}
	/* the state the fixture set up, as the figures show it */
	assert_int_equal(vm_sample(r.body, "vgpu_vm_allocated_bytes", "beta", "big"), 64u << 20);
	assert_true(vm_sample(r.body, "vgpu_vm_evicted_bytes", "beta", "big") > 0);
	assert_true(vm_sample(r.body, "vgpu_vm_evictions_total", "beta", "big") > 0);
	assert_true(vm_sample(r.body, "vgpu_vm_debug_modeled_runtime_seconds_total", "alpha",
	                      "small") > 0);
	assert_non_null(strstr(r.body, "vgpu_vm_scheduler_info{uuid=\"\",name=\"alpha\","
	                               "profile=\"small\",transport=\"local socket\","
	                               "scheduler=\"best-effort\"} 1\n"));
	{
		struct json_object *stats = control(&f->h, "{\"command\":\"stats\",\"vm\":\"alpha\"}");
		struct json_object *vm, *bytes;

		assert_true(json_object_object_get_ex(stats, "vm", &vm));
		assert_true(json_object_object_get_ex(vm, "gpu_bytes", &bytes));
		assert_true(sample_value(r.body, "vgpu_vm_gpu_read_bytes_total{uuid=\"\",name=\"alpha\","
		                                 "profile=\"small\",transport=\"local socket\","
		                                 "target=\"vram\"} ", &v));
		assert_true(v > 0);
		assert_int_equal((uint64_t)v, field(bytes, "vram_read"));
		v = vm_sample(r.body, "vgpu_vm_mailbox_requests_total", "alpha", "small");
		assert_true(v >= 3 && (uint64_t)v <= field(vm, "requests"));
		json_object_put(stats);
	}

	/* the GPU's figures */
	assert_true(json_object_object_get_ex(list, "gpu", &gpu));
	assert_true(sample_value(r.body, "vgpu_gpu_vram_bytes ", &v));
	assert_int_equal((uint64_t)v, field(gpu, "vram"));
	assert_true(sample_value(r.body, "vgpu_gpu_chunk_bytes ", &v));
	assert_int_equal((uint64_t)v, 1u << 20);
	assert_true(sample_value(r.body, "vgpu_gpu_evicted_bytes ", &v));
	assert_int_equal((uint64_t)v, field(gpu, "evicted"));
	assert_true(sample_value(r.body, "vgpu_gpu_host_used_bytes ", &v));
	assert_int_equal((uint64_t)v, field(gpu, "host_used"));
	assert_true(sample_value(r.body, "vgpu_gpu_vram_free_bytes ", &v));
	assert_int_equal((uint64_t)v, field(gpu, "free"));
	assert_true(sample_value(r.body, "vgpu_vms ", &v));
	assert_int_equal((uint64_t)v, 2);
	assert_true(sample_value(r.body, "vgpu_vm_info{uuid=\"\",name=\"alpha\",profile=\"small\","
	                                 "transport=\"local socket\",id=\"1\","
	                                 "name_source=\"tenant\"} ", &v));
	json_object_put(list);
	http_reply_free(&r);
}

/* Spatial sharing (simgpu): the per-VM shared-path figures in status and
 * /metrics agree. */
static int setup_spatial(void **state)
{
	static struct fixture f;

	harness_config(&f.h);
	strcpy(f.h.config.metrics, "127.0.0.1:0");
	f.h.config.gpu.sharing = SIMGPU_SHARING_SPATIAL;
	f.h.config.gpu.spatial_walkers = SIMGPU_WALKERS_DWS;
	harness_start_two_tenants(&f.h, &f.a, &f.b);
	f.port = metrics_http_port(f.h.d->metrics);
	*state = &f;
	return 0;
}

static void test_http_contention_matches_status(void **state)
{
	struct fixture *f = *state;
	struct json_object *list, *vm, *fig;
	struct http_reply r;
	double v;

	run_gpu_work(f);
	http_request(f->port, "GET", "/metrics", NULL, &r);
	list = control(&f->h, "{\"command\":\"status\"}");
	assert_int_equal(r.status, 200);
	check_exposition(r.body);
	vm = status_vm(list, "alpha");
	assert_true(json_object_object_get_ex(vm, "contention", &fig));
	assert_int_equal(field(fig, "kernels"), 1);
	assert_true(field(fig, "walks") > 0 && field(fig, "cycles") > 0);
	v = vm_sample(r.body, "vgpu_vm_page_walks_total", "alpha", "small");
	assert_int_equal((uint64_t)v, field(fig, "walks"));
	v = vm_sample(r.body, "vgpu_vm_ipc", "alpha", "small");
	assert_true(v > 0);
	assert_true(fabs(v - json_object_get_double(json_object_object_get(fig, "ipc"))) < 1e-6);
	v = vm_sample(r.body, "vgpu_vm_speed_vs_alone_ratio", "alpha", "small");
	assert_true(fabs(v - json_object_get_double(json_object_object_get(fig, "slowdown"))) <
	            1e-6);
	assert_true(vm_sample(r.body, "vgpu_vm_dram_bandwidth_bytes_per_second", "alpha",
	                      "small") > 0);
	/* beta ran nothing */
	vm = status_vm(list, "beta");
	assert_true(json_object_object_get_ex(vm, "contention", &fig));
	assert_int_equal(field(fig, "kernels"), 0);
	json_object_put(list);
	http_reply_free(&r);
}

static void test_http_errors(void **state)
{
	struct fixture *f = *state;
	struct http_reply r;
	char value[128];

	http_request(f->port, "GET", "/", NULL, &r);
	assert_int_equal(r.status, 404);
	http_reply_free(&r);
	http_request(f->port, "GET", "/metricsx", NULL, &r);
	assert_int_equal(r.status, 404);
	http_reply_free(&r);
	http_request(f->port, "POST", "/metrics", "a=b", &r);
	assert_int_equal(r.status, 405);
	assert_true(http_header(&r, "Allow", value, sizeof(value)));
	assert_string_equal(value, "GET, HEAD");
	http_reply_free(&r);
	http_request(f->port, "DELETE", "/metrics", NULL, &r);
	assert_int_equal(r.status, 405);
	http_reply_free(&r);
	/* HEAD: the headers of GET, no body */
	http_request(f->port, "HEAD", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(http_header(&r, "Content-Type", value, sizeof(value)));
	assert_string_equal(value, VGPUD_METRICS_CONTENT_TYPE);
	assert_int_equal(r.body_len, 0);
	http_reply_free(&r);
	/* a query string does not change the path */
	http_request(f->port, "GET", "/metrics?name[]=x", NULL, &r);
	assert_int_equal(r.status, 200);
	http_reply_free(&r);
	/* still serving */
	http_request(f->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	http_reply_free(&r);
}

/* Run vgpuctl ARGS; its stdout into out (malloc'd). Returns the exit status. */
static int run_vgpuctl(const char *socket, const char *args, char **out)
{
	char command[1024], *buf = NULL;
	size_t len = 0, n;
	FILE *p;
	int status;

	snprintf(command, sizeof(command), "'%s' --socket '%s' %s", vgpuctl_path, socket, args);
	p = popen(command, "r");
	assert_non_null(p);
	do {
		buf = realloc(buf, len + 65536 + 1);
		assert_non_null(buf);
		n = fread(buf + len, 1, 65536, p);
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	status = pclose(p);
	*out = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_vgpuctl_metrics_equals_http(void **state)
{
	struct fixture *f = *state;
	struct json_object *response, *v;
	struct http_reply r;
	char *out;

	/* idle: nothing changes between the two (no GPU work, no pressure
	 * change for the return pass), so the texts are equal byte for byte */
	assert_int_equal(run_vgpuctl(f->h.config.control_path, "metrics", &out), 0);
	http_request(f->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(out, r.body);
	check_exposition(out);
	free(out);
	http_reply_free(&r);

	/* the control command itself */
	response = control(&f->h, "{\"command\":\"metrics\"}");
	assert_true(json_object_object_get_ex(response, "content_type", &v));
	assert_string_equal(json_object_get_string(v), VGPUD_METRICS_CONTENT_TYPE);
	assert_true(json_object_object_get_ex(response, "text", &v));
	assert_non_null(strstr(json_object_get_string(v), "vgpu_vm_resident_bytes{"));
	json_object_put(response);
	response = control(&f->h, "{\"command\":\"health\"}");
	assert_true(json_object_object_get_ex(response, "metrics_url", &v));
	{
		char url[64];

		snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", f->port);
		assert_string_equal(json_object_get_string(v), url);
	}
	json_object_put(response);
	/* vgpuctl metrics without vgpud: exit status 2, nothing on stdout */
	assert_int_equal(run_vgpuctl("/tmp/vgpud-test-nowhere/control.sock", "metrics 2>/dev/null",
	                             &out),
	                 2);
	assert_string_equal(out, "");
	free(out);
}

/* Scrapes while the tenants allocate and free (ThreadSanitizer: the HTTP
 * thread reads what the mailbox workers change). */
struct scraper {
	uint16_t port;
	int scrapes;
};

static void *scrape_thread(void *arg)
{
	struct scraper *s = arg;
	int i;

	for (i = 0; i < s->scrapes; i++) {
		struct http_reply r;

		http_request(s->port, "GET", "/metrics", NULL, &r);
		assert_int_equal(r.status, 200);
		check_exposition(r.body);
		http_reply_free(&r);
	}
	return NULL;
}

static void test_scrapes_race_allocations(void **state)
{
	struct fixture *f = *state;
	struct scraper s = { .port = f->port, .scrapes = 40 };
	struct http_reply r;
	pthread_t thread;
	int i;

	assert_int_equal(pthread_create(&thread, NULL, scrape_thread, &s), 0);
	for (i = 0; i < 20; i++) {
		uint32_t a, b;

		assert_int_equal(tenant_alloc(&f->a, 4u << 20, 7, &a, NULL), VGPU_STATUS_OK);
		assert_int_equal(tenant_alloc(&f->b, 6u << 20, 7, &b, NULL), VGPU_STATUS_OK);
		assert_int_equal(tenant_free(&f->a, a), VGPU_STATUS_OK);
		assert_int_equal(tenant_free(&f->b, b), VGPU_STATUS_OK);
	}
	assert_int_equal(pthread_join(thread, NULL), 0);
	/* a VM detaching between scrapes disappears from them */
	tenant_close(&f->a);
	f->a.dev = NULL;
	assert_true(harness_wait_vms(&f->h, 1, 5000));
	http_request(f->port, "GET", "/metrics", NULL, &r);
	assert_null(strstr(r.body, "name=\"alpha\""));
	assert_non_null(strstr(r.body, "name=\"beta\""));
	assert_non_null(strstr(r.body, "\nvgpu_vms 1\n"));
	http_reply_free(&r);
}

/* ------------------------------------------------------- configuration */

static void test_port_taken_and_off(void **state)
{
	struct harness first, second;
	struct vgpud *d = NULL;
	struct json_object *response, *v;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int fds;

	(void)state;
	harness_config(&first);
	strcpy(first.config.metrics, "127.0.0.1:0");
	harness_start(&first);
	harness_config(&second);
	snprintf(second.config.metrics, sizeof(second.config.metrics), "127.0.0.1:%u",
	         metrics_http_port(first.d->metrics));
	/* the second vgpud does not start: the port is taken */
	assert_int_equal(vgpud_create(&second.config, false, &d, &why), -EADDRNOTAVAIL);
	assert_null(d);
	assert_non_null(strstr(vgpu_error_msg(&why), "cannot serve metrics on 127.0.0.1:"));
	harness_stop(&second);
	harness_stop(&first);

	/* off (the default): no endpoint, health says so; no descriptor left
	 * behind by a start and stop with one */
	harness_config(&first);
	assert_string_equal(first.config.metrics, "off");
	harness_start(&first);
	assert_null(first.d->metrics);
	response = control(&first, "{\"command\":\"health\"}");
	assert_true(json_object_object_get_ex(response, "metrics_url", &v));
	assert_null(v);
	json_object_put(response);
	/* the control command works without the endpoint */
	json_object_put(control(&first, "{\"command\":\"metrics\"}"));
	harness_stop(&first);

	fds = count_open_fds();
	harness_config(&first);
	strcpy(first.config.metrics, "[::1]:0");
	if (vgpud_create(&first.config, false, &first.d,
	                 &why) == 0) { /* IPv6 loopback may be absent */
		assert_non_null(first.d->metrics);
		assert_non_null(strstr(metrics_http_url(first.d->metrics), "http://[::1]:"));
	} else {
		first.d = NULL;
	}
	harness_stop(&first);
	assert_int_equal(count_open_fds(), fds);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_label),
		cmocka_unit_test(test_format_odd_names),
		cmocka_unit_test_setup_teardown(test_http_metrics_match_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_contention_matches_status, setup_spatial,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_vgpuctl_metrics_equals_http, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scrapes_race_allocations, setup, teardown),
		cmocka_unit_test(test_port_taken_and_off),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-OF-vgpuctl\n", argv[0]);
		return 2;
	}
	vgpuctl_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
