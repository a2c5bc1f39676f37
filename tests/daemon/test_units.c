// SPDX-License-Identifier: MIT
/*
 * test_units.c - vgpud's pure parts: configuration file and flags (with the
 * shipped example), the metrics listen address, size parsing, profiles and their instance counts, the
 * guest handle table, and the mailbox parser's field checks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "vgpu/core.h"
#include "vgpu/util.h"
#include "config.h"
#include "handle_table.h"
#include "listen_address.h"
#include "log.h"
#include "mailbox.h"
#include "profiles.h"

static const char *example_path;

static char *write_temp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/vgpud-conf-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_example_config(void **state)
{
	struct vgpud_config c;
	struct vgpu_error why = VGPU_ERROR_INIT;

	(void)state;
	vgpud_config_defaults(&c);
	assert_int_equal(vgpud_config_load_file(&c, example_path, &why), 0);
	assert_int_equal(vgpud_config_validate(&c, &why), 0);
	assert_int_equal(c.gpu.vram_bytes, 1ull << 30);
	assert_int_equal(c.gpu.vram_bandwidth, 900000000000ull);
	assert_int_equal(c.chunk_bytes, 4ull << 20);
	assert_string_equal(c.policy, "random");
	assert_false(c.whole_buffer_eviction);
	assert_int_equal(c.host_budget_bytes, 8ull << 30);
	assert_int_equal(c.return_interval_ms, 50);
	assert_int_equal(c.accounting_mode, VGPU_ACCOUNTING_LOGA);
	assert_string_equal(c.socket_path, "/run/vgpud/vgpud.sock");
	assert_string_equal(c.control_path, "/run/vgpud/control.sock");
	assert_string_equal(c.socket_group, "");
	assert_int_equal(c.log_level, VGPUD_LOG_INFO);
	assert_int_equal(c.profile_count, 3);
	assert_string_equal(c.profiles[1].name, "vgpu-2G");
	assert_int_equal(c.profiles[1].weight, 2);
	assert_int_equal(c.profiles[1].cap_bytes, 2ull << 30);
	assert_int_equal(c.profiles[1].max_instances, 8);
	assert_true(c.profiles_from_file);
	assert_string_equal(c.metrics, "off");
}

static void expect_error(const char *text, const char *needle)
{
	struct vgpud_config c;
	struct vgpu_error why = VGPU_ERROR_INIT;
	char *path = write_temp(text);

	vgpud_config_defaults(&c);
	assert_int_equal(vgpud_config_load_file(&c, path, &why), -EINVAL);
	if (!strstr(vgpu_error_msg(&why), needle))
		fail_msg("error '%s' does not mention '%s'", vgpu_error_msg(&why), needle);
	assert_non_null(strstr(vgpu_error_msg(&why), path)); /* names the file */
	unlink(path);
}

static void test_config_errors(void **state)
{
	(void)state;
	expect_error("vram = 1G\n", ":1: 'vram' outside a section");
	expect_error("[gpu]\n", ":1: unknown section [gpu]");
	expect_error("[simgpu]\nvram 1G\n", ":2: expected 'key = value'");
	expect_error("[simgpu]\nvram = lots\n", ":2: vram = 'lots': expected a size");
	expect_error("[simgpu]\nvram = 1Q\n", "expected a size");
	expect_error("[core]\nvram = 1G\n", "unknown key 'vram' in [core]");
	expect_error("[daemon]\nlog_level = chatty\n", "error, warn, info or debug");
	expect_error("[core]\nwhole_buffer_eviction = maybe\n",
	             ":2: whole_buffer_eviction = 'maybe': expected yes or no");
	expect_error("[core]\naccounting_mode = sampling\n",
	             ":2: accounting_mode = 'sampling': expected loga or neon");
	expect_error("[profile bad name]\n", "profile name 'bad name' is invalid");
	expect_error("[profile p]\nweight = 0\n", "weight must be 1..1000000");
	expect_error("[profile p]\ncap = 5000\n", "whole 4K pages");
	expect_error("[profile p]\ncolour = red\n", "unknown profile key 'colour'");
	expect_error("[simgpu\n", "section header");
	expect_error("[daemon]\nmetrics = example.org:9464\n",
	             ":2: metrics = 'example.org:9464': 'example.org' is not an IPv4 address");
	expect_error("[daemon]\nmetrics = 127.0.0.1:70000\n", "port must be 0..65535");
}

static void expect_address(const char *text, int family, const char *host, unsigned port)
{
	struct vgpud_listen_address a;
	char shown[96], expect[96];
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (vgpud_listen_address_parse(text, &a, &why))
		fail_msg("'%s' rejected: %s", text, vgpu_error_msg(&why));
	assert_true(a.enabled);
	assert_int_equal(a.addr.ss_family, family);
	assert_int_equal(a.addr_len, family == AF_INET ? sizeof(struct sockaddr_in)
	                                               : sizeof(struct sockaddr_in6));
	vgpud_listen_address_format(&a, -1, shown, sizeof(shown));
	snprintf(expect, sizeof(expect), family == AF_INET ? "%s:%u" : "[%s]:%u", host, port);
	assert_string_equal(shown, expect);
}

static void expect_bad_address(const char *text, const char *needle)
{
	struct vgpud_listen_address a;
	struct vgpu_error why = VGPU_ERROR_INIT;

	assert_int_equal(vgpud_listen_address_parse(text, &a, &why), -EINVAL);
	if (!strstr(vgpu_error_msg(&why), needle))
		fail_msg("error '%s' for '%s' does not mention '%s'", vgpu_error_msg(&why), text,
		         needle);
}

static void test_listen_address(void **state)
{
	struct vgpud_listen_address a;
	struct vgpud_config c;
	struct vgpu_error why = VGPU_ERROR_INIT;
	char shown[96];
	char *flag[] = { "vgpud", "--metrics", "[::1]:9464", NULL };
	enum vgpud_config_action action;
	char *bad_flag[] = { "vgpud", "--metrics", "9464:127.0.0.1", NULL };
	FILE *saved;

	(void)state;
	assert_int_equal(vgpud_listen_address_parse("off", &a, &why), 0);
	assert_false(a.enabled);
	vgpud_listen_address_format(&a, -1, shown, sizeof(shown));
	assert_string_equal(shown, "off");
	expect_address("127.0.0.1:9464", AF_INET, "127.0.0.1", 9464);
	expect_address("localhost:9464", AF_INET, "127.0.0.1", 9464);
	expect_address("9464", AF_INET, "127.0.0.1", 9464); /* a port alone: localhost */
	expect_address("0.0.0.0:0", AF_INET, "0.0.0.0", 0);
	expect_address("[::1]:9464", AF_INET6, "::1", 9464);
	expect_address("[::]:65535", AF_INET6, "::", 65535);
	expect_bad_address("", "empty");
	expect_bad_address("::1:9464", "brackets");
	expect_bad_address("[::1]9464", "brackets");
	expect_bad_address("[1.2.3.4]:80", "not an IPv6 address");
	expect_bad_address("host.example:80", "not an IPv4 address");
	expect_bad_address("127.0.0.1:", "port must be");
	expect_bad_address("127.0.0.1:65536", "port must be");
	expect_bad_address("127.0.0.1:-1", "port must be");
	expect_bad_address("127.0.0.1:80x", "port must be");

	/* the key: default off, a flag, validation */
	vgpud_config_defaults(&c);
	assert_string_equal(c.metrics, "off");
	assert_int_equal(vgpud_config_from_args(&c, 3, flag, &action), 0);
	assert_string_equal(c.metrics, "[::1]:9464");
	strcpy(c.metrics, "nowhere");
	assert_int_equal(vgpud_config_validate(&c, &why), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&why), "metrics = 'nowhere'"));
	saved = stderr;
	stderr = fopen("/dev/null", "w");
	vgpud_config_defaults(&c);
	assert_true(vgpud_config_from_args(&c, 3, bad_flag, &action) < 0);
	fclose(stderr);
	stderr = saved;
}

static void test_config_validate(void **state)
{
	struct vgpud_config c;
	struct vgpu_error why = VGPU_ERROR_INIT;

	(void)state;
	vgpud_config_defaults(&c);
	assert_int_equal(vgpud_config_validate(&c, &why), 0);
	strcpy(c.default_profile, "nope");
	assert_int_equal(vgpud_config_validate(&c, &why), -EINVAL);
	assert_non_null(strstr(vgpu_error_msg(&why), "default_profile 'nope'"));
	vgpud_config_defaults(&c);
	strcpy(c.control_path, c.socket_path);
	assert_int_equal(vgpud_config_validate(&c, &why), -EINVAL);
	vgpud_config_defaults(&c);
	c.profile_count = 0;
	assert_int_equal(vgpud_config_validate(&c, &why), -EINVAL);
}

/* [socket] and the host budget: bounded by default (issue 12 item 5). */
static void test_resource_bounds(void **state)
{
	char *conf = write_temp("[core]\nhost_budget = auto\n"
	                        "[socket]\nallowed_profiles = vgpu-2G, vgpu-4G\n"
	                        "idle_timeout_ms = 1500\nmax_connections_per_uid = 3\n"
	                        "control_idle_timeout_ms = 700\n"
	                        "control_max_connections_per_uid = 2\n");
	struct vgpud_config c;
	struct vgpu_error why = VGPU_ERROR_INIT;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	(void)state;
	vgpud_config_defaults(&c);
	/* defaults: half of the RAM, the default profile only, limits on */
	assert_int_equal(c.host_budget_bytes, VGPUD_HOST_BUDGET_AUTO);
	assert_int_equal(vgpud_config_host_budget(&c), (uint64_t)pages * (uint64_t)page / 2);
	assert_true(vgpud_config_profile_allowed(&c, "vgpu-1G"));
	assert_true(vgpud_config_profile_allowed(&c, NULL)); /* the default */
	assert_true(vgpud_config_profile_allowed(&c, ""));
	assert_false(vgpud_config_profile_allowed(&c, "vgpu-2G"));
	assert_true(c.idle_timeout_ms > 0 && c.max_connections_per_uid > 0);
	assert_true(c.control_idle_timeout_ms > 0 && c.control_max_connections_per_uid > 0);

	assert_int_equal(vgpud_config_load_file(&c, conf, &why), 0);
	assert_int_equal(c.host_budget_bytes, VGPUD_HOST_BUDGET_AUTO);
	assert_false(vgpud_config_profile_allowed(&c, "vgpu-1G"));
	assert_false(vgpud_config_profile_allowed(&c, NULL));
	assert_true(vgpud_config_profile_allowed(&c, "vgpu-2G"));
	assert_true(vgpud_config_profile_allowed(&c, "vgpu-4G"));
	assert_false(vgpud_config_profile_allowed(&c, "vgpu-4"));
	assert_int_equal(c.idle_timeout_ms, 1500);
	assert_int_equal(c.max_connections_per_uid, 3);
	assert_int_equal(c.control_idle_timeout_ms, 700);
	assert_int_equal(c.control_max_connections_per_uid, 2);
	strcpy(c.allowed_profiles, "*");
	assert_true(vgpud_config_profile_allowed(&c, "anything"));
	c.host_budget_bytes = 0; /* explicit: no limit */
	assert_int_equal(vgpud_config_host_budget(&c), 0);
	c.max_connections_per_uid = 0;
	assert_int_equal(vgpud_config_validate(&c, &why), -EINVAL);
	unlink(conf);
}

static void test_flags(void **state)
{
	char *conf = write_temp("[core]\nchunk_size = 2M\npolicy = priority\n"
	                        "[profile a]\nweight = 3\n[profile b]\ncap = 1G\n"
	                        "[daemon]\ndefault_profile = a\n");
	char *argv[] = { "vgpud", "--config", conf, "--chunk-size", "8M", "--vram", "512M",
		         "--profile", "c:weight=5,cap=256M,max_instances=2", "--profile",
		         "a:weight=4", "--log-level", "debug", "--swap-timeout-ms", "100",
		         NULL };
	char *bad[] = { "vgpud", "--vram", "huge", NULL };
	char *bad_profile[] = { "vgpud", "--profile", "x:weight", NULL };
	char *extra[] = { "vgpud", "surplus", NULL };
	char *help[] = { "vgpud", "--help", NULL };
	enum vgpud_config_action action;
	struct vgpud_config c;
	FILE *saved;

	(void)state;
	vgpud_config_defaults(&c);
	assert_int_equal(vgpud_config_from_args(&c, 15, argv, &action), 0);
	assert_int_equal(action, VGPUD_CONFIG_RUN);
	assert_int_equal(c.chunk_bytes, 8ull << 20); /* flag over file */
	assert_string_equal(c.policy, "priority");    /* file over default */
	assert_int_equal(c.gpu.vram_bytes, 512ull << 20);
	assert_int_equal(c.profile_count, 3);
	assert_string_equal(c.profiles[0].name, "a");
	assert_int_equal(c.profiles[0].weight, 4);
	assert_string_equal(c.profiles[2].name, "c");
	assert_int_equal(c.profiles[2].cap_bytes, 256ull << 20);
	assert_int_equal(c.profiles[2].max_instances, 2);
	assert_int_equal(c.log_level, VGPUD_LOG_DEBUG);
	assert_int_equal(c.swap_timeout_ms, 100);
	unlink(conf);

	saved = stderr;
	stderr = fopen("/dev/null", "w");
	vgpud_config_defaults(&c);
	assert_true(vgpud_config_from_args(&c, 3, bad, &action) < 0);
	vgpud_config_defaults(&c);
	assert_true(vgpud_config_from_args(&c, 3, bad_profile, &action) < 0);
	vgpud_config_defaults(&c);
	assert_true(vgpud_config_from_args(&c, 2, extra, &action) < 0);
	fclose(stderr);
	stderr = saved;
	saved = stdout;
	stdout = fopen("/dev/null", "w");
	vgpud_config_defaults(&c);
	assert_int_equal(vgpud_config_from_args(&c, 2, help, &action), 0);
	assert_int_equal(action, VGPUD_CONFIG_PRINTED); /* --help printed: exit 0 */
	fclose(stdout);
	stdout = saved;
}

static void test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(vgpu_parse_bytes("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(vgpu_parse_bytes("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(vgpu_parse_bytes("2G", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(vgpu_parse_bytes("512MiB", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(vgpu_parse_bytes("1t", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(vgpu_parse_bytes("", &v), -EINVAL);
	assert_int_equal(vgpu_parse_bytes("-1", &v), -EINVAL);
	assert_int_equal(vgpu_parse_bytes("1X", &v), -EINVAL);
	assert_int_equal(vgpu_parse_bytes("99999999999T", &v), -EINVAL);
	assert_int_equal(vgpu_parse_bytes("1GB", &v), 0);
	assert_int_equal(vgpu_parse_bytes("1 G", &v), -EINVAL);
	/* the forms vgpu-sim's scenarios and cuda-bench's flags use */
	assert_int_equal(vgpu_parse_bytes("100b", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(vgpu_parse_bytes("4kib", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(vgpu_parse_bytes("1iB", &v), -EINVAL);
	assert_int_equal(vgpu_parse_bytes("1GBB", &v), -EINVAL);
	/* counts scale by 1000 and take no B */
	assert_int_equal(vgpu_parse_scaled("10K", 1000, &v), 0);
	assert_int_equal(v, 10000);
	assert_int_equal(vgpu_parse_scaled("10KB", 1000, &v), -EINVAL);
}

static void test_profiles(void **state)
{
	const struct vgpud_profile_spec specs[] = {
		{ "a", 1, 0, 2, "" }, { "b", 2, 1ull << 30, 0, "" },
	};
	struct vgpud_profile_spec spec;
	struct vgpud_profiles p;
	struct vgpud_profile snapshot[8];
	uint32_t weight = 6;

	(void)state;
	vgpud_profiles_init(&p, specs, 2, "a");
	assert_int_equal(vgpud_profiles_acquire(&p, NULL, &spec), 0);
	assert_string_equal(spec.name, "a");
	assert_int_equal(vgpud_profiles_acquire(&p, "a", &spec), 0);
	assert_int_equal(vgpud_profiles_acquire(&p, "a", &spec), -EUSERS);
	assert_int_equal(vgpud_profiles_acquire(&p, "zzz", &spec), -ENOENT);
	assert_int_equal(vgpud_profiles_acquire(&p, "b", &spec), 0);
	assert_int_equal(vgpud_profiles_update(&p, "b", &weight, NULL, NULL), 0);
	assert_int_equal(vgpud_profiles_get(&p, "b", &spec), 0);
	assert_int_equal(spec.weight, 6);
	weight = 0;
	assert_int_equal(vgpud_profiles_update(&p, "b", &weight, NULL, NULL), -EINVAL);
	/* reload without "b": kept while in use, not offered */
	assert_int_equal(vgpud_profiles_replace(&p, specs, 1), 0);
	assert_int_equal(vgpud_profiles_snapshot(&p, snapshot, 8), 1);
	assert_int_equal(vgpud_profiles_acquire(&p, "b", &spec), -ENOENT);
	vgpud_profiles_release(&p, "b");
	assert_int_equal(vgpud_profiles_get(&p, "b", &spec), -ENOENT);
	/* counts survive a reload */
	assert_int_equal(snapshot[0].instances, 2);
	vgpud_profiles_release(&p, "a");
	assert_int_equal(vgpud_profiles_acquire(&p, "a", &spec), 0);
	vgpud_profiles_fini(&p);
}

static void test_handle_table(void **state)
{
	struct handle_table t;
	uint32_t handles[1000], h, i;
	uint64_t core;

	(void)state;
	handle_table_init(&t);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(handle_table_add(&t, 0x1000000000ull + i, &handles[i]), 0);
		assert_int_not_equal(handles[i], 0);
	}
	for (i = 0; i < 1000; i++) {
		assert_int_equal(handle_table_lookup(&t, handles[i], &core), 0);
		assert_int_equal(core, 0x1000000000ull + i);
	}
	assert_int_equal(handle_table_lookup(&t, 0, &core), -ENOENT);
	assert_int_equal(handle_table_lookup(&t, 0xffffffffu, &core), -ENOENT);
	handle_table_remove(&t, handles[10]);
	assert_int_equal(handle_table_lookup(&t, handles[10], &core), -ENOENT);
	/* the slot's next handle differs: a stale handle finds nothing */
	for (i = 0; i < 5000; i++) {
		assert_int_equal(handle_table_add(&t, 7, &h), 0);
		assert_int_not_equal(h, handles[10]);
		handle_table_remove(&t, h);
	}
	assert_int_equal(t.live, 999);
	handle_table_fini(&t);
}

static enum vgpu_status parse(uint16_t opcode, uint16_t size, const void *payload,
                              struct vgpu_mailbox_request *out)
{
	struct vgpu_request r;
	const char *why;

	memset(&r, 0, sizeof(r));
	r.opcode = opcode;
	r.payload_size = size;
	r.seq = 77;
	if (payload)
		memcpy(r.payload, payload, size);
	return vgpu_mailbox_parse(&r, out, &why);
}

static void test_parser(void **state)
{
	struct vgpu_mailbox_request out;
	struct vgpu_alloc_request alloc = { 1 << 20, 15, 0 };
	struct vgpu_channel_create_request create = { 4096, 0 };

	(void)state;
	assert_int_equal(parse(VGPU_OP_ALLOC, 16, &alloc, &out), VGPU_STATUS_OK);
	assert_int_equal(out.seq, 77);
	assert_int_equal(out.u.alloc.bytes, 1 << 20);
	assert_int_equal(out.u.alloc.priority, 15);
	alloc.bytes = VGPU_ALLOC_MAX_BYTES;
	assert_int_equal(parse(VGPU_OP_ALLOC, 16, &alloc, &out), VGPU_STATUS_OK);
	alloc.bytes++;
	assert_int_equal(parse(VGPU_OP_ALLOC, 16, &alloc, &out), VGPU_STATUS_INVALID);
	assert_int_equal(parse(VGPU_OP_CHANNEL_CREATE, 8, &create, &out), VGPU_STATUS_OK);
	create.gpfifo_entries = 8192;
	assert_int_equal(parse(VGPU_OP_CHANNEL_CREATE, 8, &create, &out), VGPU_STATUS_INVALID);
	create.gpfifo_entries = 1;
	assert_int_equal(parse(VGPU_OP_CHANNEL_CREATE, 8, &create, &out), VGPU_STATUS_INVALID);
	create.gpfifo_entries = 0;
	assert_int_equal(parse(VGPU_OP_CHANNEL_CREATE, 8, &create, &out), VGPU_STATUS_OK);
	assert_int_equal(parse(VGPU_OP_STATS, 0, NULL, &out), VGPU_STATUS_OK);
	assert_int_equal(parse(VGPU_OP_CHANNEL_FAULT + 1, 0, NULL, &out), VGPU_STATUS_UNSUPPORTED);
	{
		struct vgpu_channel_fault_request fault = { .index = 3 };

		assert_int_equal(parse(VGPU_OP_CHANNEL_FAULT, sizeof(fault), &fault, &out),
		                 VGPU_STATUS_OK);
		assert_int_equal(out.u.channel_fault.index, 3);
		fault.index = VGPU_MAX_CHANNELS;
		assert_int_equal(parse(VGPU_OP_CHANNEL_FAULT, sizeof(fault), &fault, &out),
		                 VGPU_STATUS_INVALID);
		fault.index = 0;
		fault.reserved = 1;
		assert_int_equal(parse(VGPU_OP_CHANNEL_FAULT, sizeof(fault), &fault, &out),
		                 VGPU_STATUS_INVALID);
	}
	{
		struct vgpu_module_load_request load = {
			.image_va = 1 << 20, .image_bytes = 4096, .table_va = 2 << 20,
			.table_bytes = 4096,
		};
		struct vgpu_module_unload_request unload = { .module = 3 };

		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load), &load, &out),
		                 VGPU_STATUS_OK);
		assert_int_equal(out.u.module_load.image_bytes, 4096);
		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load) - 8, &load, &out),
		                 VGPU_STATUS_INVALID);
		load.image_bytes = 0;
		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load), &load, &out),
		                 VGPU_STATUS_INVALID);
		load.image_bytes = VGPU_MODULE_IMAGE_MAX_BYTES + 1ull;
		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load), &load, &out),
		                 VGPU_STATUS_INVALID);
		load.image_bytes = 4096;
		load.table_va = UINT64_MAX - 100; /* wraps */
		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load), &load, &out),
		                 VGPU_STATUS_INVALID);
		load.table_va = 2 << 20;
		load.flags = 1;
		assert_int_equal(parse(VGPU_OP_MODULE_LOAD, sizeof(load), &load, &out),
		                 VGPU_STATUS_INVALID);
		assert_int_equal(parse(VGPU_OP_MODULE_UNLOAD, sizeof(unload), &unload, &out),
		                 VGPU_STATUS_OK);
		unload.reserved = 1;
		assert_int_equal(parse(VGPU_OP_MODULE_UNLOAD, sizeof(unload), &unload, &out),
		                 VGPU_STATUS_INVALID);
	}
	assert_int_equal(parse(VGPU_OP_HELLO, 4, NULL, &out), VGPU_STATUS_INVALID);
	assert_int_equal(parse(VGPU_OP_HELLO, 48, NULL, &out), VGPU_STATUS_INVALID);
	assert_int_equal(parse(VGPU_OP_HELLO, 49, NULL, &out), VGPU_STATUS_INVALID);
	assert_string_equal(vgpu_mailbox_opcode_name(VGPU_OP_CHANNEL_DESTROY), "CHANNEL_DESTROY");
	assert_string_equal(vgpu_mailbox_opcode_name(1000), "unknown");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_config),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_validate),
		cmocka_unit_test(test_listen_address),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_resource_bounds),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_handle_table),
		cmocka_unit_test(test_parser),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s vgpud.conf.example\n", argv[0]);
		return 2;
	}
	example_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
