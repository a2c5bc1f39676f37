// SPDX-License-Identifier: MIT
/*
 * test_transfer_modules.c - the runtime's transfers (upload/download
 * through the pushbuffer) on an in-process simgpu, and its GPU programs
 * (MODULE_LOAD, the table, LAUNCH_FUNCTION, MODULE_UNLOAD) against a real
 * vgpud on simgpu over the local transport.
 *
 * The random transfer sizes take a seed from $TEST_SEED (else the time);
 * it is printed when a check fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "daemon_runner.h"
#include "vgpu/abi/commands.h"
#include "vgpu_guest.h"
#include "vgpu_guest_local.h"
#include "vgpu_guest_simgpu.h"

static unsigned seed;

static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 33);
}

/* ---------------------------------------------------------- transfers */

struct sim {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
};

static int sim_open(struct sim *s, uint32_t pushbuffer_bytes)
{
	struct simgpu_config gpu;
	struct vgpu_guest_simgpu_config config = { .simgpu = &gpu,
		                                   .pushbuffer_bytes = pushbuffer_bytes };
	char why[256];
	int ret;

	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = 64ull << 20;
	gpu.pfifo_idle_sleep_max_us = 200;
	ret = vgpu_device_open_simgpu(&config, &s->dev, why, sizeof(why));
	if (ret) {
		print_error("%s\n", why);
		return ret;
	}
	return vgpu_channel_create(s->dev, 0, &s->ch);
}

static void sim_close(struct sim *s)
{
	vgpu_channel_destroy(s->ch);
	vgpu_device_close(s->dev);
}

/* Random sizes and offsets, in pieces of a small and of the default
 * pushbuffer: what goes up comes back byte for byte. */
static void test_round_trip(uint32_t pushbuffer_bytes)
{
	enum { BUFFER = 1 << 20 };
	uint8_t *host = malloc(BUFFER), *back = malloc(BUFFER);
	uint64_t state = seed, fence;
	struct vgpu_guest_buffer buf;
	struct sim s;

	assert_non_null(host);
	assert_non_null(back);
	assert_int_equal(sim_open(&s, pushbuffer_bytes), 0);
	assert_int_equal(vgpu_buffer_alloc(s.dev, BUFFER, VGPU_PRIORITY_DEFAULT, &buf), 0);
	for (size_t i = 0; i < BUFFER; i++)
		host[i] = (uint8_t)next_random(&state);
	assert_int_equal(vgpu_channel_upload(s.ch, buf.gpu_va, host, BUFFER, &fence), 0);
	assert_int_equal(vgpu_channel_wait(s.ch, fence, -1), 0);
	for (int round = 0; round < 40; round++) {
		uint32_t offset = next_random(&state) % BUFFER;
		uint32_t bytes = 1 + next_random(&state) % (BUFFER - offset);

		if (round % 2)
			bytes = 1 + bytes % 13; /* odd little ones too */
		for (uint32_t i = 0; i < bytes; i++)
			host[offset + i] = (uint8_t)next_random(&state);
		assert_int_equal(vgpu_channel_upload(s.ch, buf.gpu_va + offset, host + offset,
		                                     bytes, NULL), 0);
		memset(back, 0xa5, BUFFER);
		assert_int_equal(vgpu_channel_download(s.ch, back, buf.gpu_va, BUFFER), 0);
		if (memcmp(host, back, BUFFER)) {
			print_error("seed %u: round %d (%u bytes at %u) came back changed\n", seed,
			            round, bytes, offset);
			fail();
		}
	}
	vgpu_buffer_free(s.dev, &buf);
	sim_close(&s);
	free(host);
	free(back);
}

static void test_round_trip_default(void **state)
{
	(void)state;
	test_round_trip(0);
}

static void test_round_trip_small_pushbuffer(void **state)
{
	(void)state;
	test_round_trip(4096);
}

static void test_bad_transfers(void **state)
{
	uint8_t byte = 1;
	uint64_t fence;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open(&s, 0), 0);
	assert_true(vgpu_channel_transfer_max(s.ch) >= 4096);
	assert_int_equal(vgpu_channel_upload(s.ch, 0x1000, &byte, 0, NULL), -EINVAL);
	assert_int_equal(vgpu_channel_upload(s.ch, UINT64_MAX, &byte, 2, NULL), -EINVAL);
	assert_int_equal(vgpu_channel_download(s.ch, NULL, 0x1000, 1), -EINVAL);
	/* Nothing is mapped there: the GPU kills the channel. */
	assert_int_equal(vgpu_channel_upload(s.ch, 1ull << 46, &byte, 1, &fence), 0);
	assert_int_equal(vgpu_channel_wait(s.ch, fence, -1), -EIO);
	assert_int_equal(vgpu_channel_download(s.ch, &byte, 1ull << 46, 1), -EIO);
	/* Outside begin, no pointer has a GPU address. */
	assert_int_equal(vgpu_channel_pushbuffer_va(s.ch, &byte), 0);
	sim_close(&s);
}

/* ------------------------------------------------------------ modules */

static char *ptx_image;

struct module_tenant {
	struct daemon_runner runner;
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
};

static const char *const small_gpu[] = {
	"--vram", "64M", "--chunk-size", "2M", "--log-level", "info", NULL,
};

static int tenant_setup(void **state)
{
	struct module_tenant *t = calloc(1, sizeof(*t));
	struct vgpu_local_device_config config = { .vm_name = "modules" };
	char why[256];
	int ret;

	*state = t;
	if (!t)
		return -1;
	ret = daemon_start(&t->runner, small_gpu);
	if (ret) {
		char *log = read_file(t->runner.log);

		print_error("vgpud did not start (%s): %s\n", strerror(-ret), log ? log : "");
		free(log);
		return -1;
	}
	config.socket_path = t->runner.socket;
	ret = vgpu_device_open_local(&config, 0, &t->dev, why, sizeof(why));
	if (ret) {
		print_error("%s\n", why);
		return -1;
	}
	return vgpu_channel_create(t->dev, 0, &t->ch);
}

static int tenant_teardown(void **state)
{
	struct module_tenant *t = *state;

	vgpu_channel_destroy(t->ch);
	vgpu_device_close(t->dev);
	assert_int_equal(daemon_stop(&t->runner), 0);
	free(t);
	return 0;
}

static uint64_t alloc(struct module_tenant *t, uint64_t bytes)
{
	struct vgpu_guest_buffer buf;

	assert_int_equal(vgpu_buffer_alloc(t->dev, bytes, VGPU_PRIORITY_DEFAULT, &buf), 0);
	return buf.gpu_va;
}

static void launch(struct module_tenant *t, const struct vgpu_guest_module *m,
                   const struct vgpu_guest_function *f, uint32_t blocks, uint32_t threads,
                   const void *params, uint32_t param_bytes)
{
	struct vgpu_launch_dims dims = { .grid = { blocks, 1, 1 }, .block = { threads, 1, 1 } };
	uint32_t *words, n;

	assert_int_equal(vgpu_channel_begin(t->ch, vgpu_launch_function_words(param_bytes),
	                                    &words), 0);
	n = vgpu_push_launch_function(words, m->handle, f->index, &dims, params, param_bytes);
	assert_int_equal(vgpu_channel_submit(t->ch, n, 0, NULL), 0);
}

/* The table names the kernels with their parameters and the variables;
 * vadd and scale_bias (which reads both variables) compute what the CPU
 * does; the variables are read and written through their addresses. */
static void test_module_load_and_launch(void **state)
{
	enum { N = 5000 };
	struct module_tenant *t = *state;
	const struct vgpu_guest_function *vadd, *scale_bias;
	const struct vgpu_guest_variable *bias, *scale;
	struct vgpu_guest_module *m;
	static uint32_t a[N], b[N], c[N];
	uint64_t va_a, va_b, va_c, params[4];
	uint32_t value;

	assert_int_equal(vgpu_module_load(t->dev, t->ch, ptx_image, strlen(ptx_image) + 1, &m), 0);
	vadd = vgpu_module_function(m, "vadd_u32");
	scale_bias = vgpu_module_function(m, "scale_bias");
	assert_non_null(vadd);
	assert_non_null(scale_bias);
	assert_null(vgpu_module_function(m, "nonesuch"));
	assert_int_equal(vadd->param_count, 4);
	assert_int_equal(vadd->param_bytes, 28);
	assert_int_equal(vadd->params[3].offset, 24);
	assert_int_equal(vadd->params[3].size, 4);
	bias = vgpu_module_variable(m, "bias");
	scale = vgpu_module_variable(m, "scale");
	assert_non_null(bias);
	assert_non_null(scale);
	assert_int_equal(bias->space, VGPU_MODULE_VARIABLE_GLOBAL);
	assert_int_equal(scale->space, VGPU_MODULE_VARIABLE_CONST);
	assert_int_equal(vgpu_channel_download(t->ch, &value, bias->gpu_va, 4), 0);
	assert_int_equal(value, 7);

	for (uint32_t i = 0; i < N; i++) {
		a[i] = i * 2654435761u;
		b[i] = i ^ 0x5a5a5a5au;
	}
	va_a = alloc(t, sizeof(a));
	va_b = alloc(t, sizeof(b));
	va_c = alloc(t, sizeof(c));
	assert_int_equal(vgpu_channel_upload(t->ch, va_a, a, sizeof(a), NULL), 0);
	assert_int_equal(vgpu_channel_upload(t->ch, va_b, b, sizeof(b), NULL), 0);
	params[0] = va_a;
	params[1] = va_b;
	params[2] = va_c;
	params[3] = N;
	launch(t, m, vadd, (N + 255) / 256, 256, params, vadd->param_bytes);
	assert_int_equal(vgpu_channel_download(t->ch, c, va_c, sizeof(c)), 0);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(c[i], a[i] + b[i]);

	value = 11;
	assert_int_equal(vgpu_channel_upload(t->ch, bias->gpu_va, &value, 4, NULL), 0);
	params[0] = va_c;
	params[1] = N;
	launch(t, m, scale_bias, (N + 127) / 128, 128, params, scale_bias->param_bytes);
	assert_int_equal(vgpu_channel_download(t->ch, c, va_c, sizeof(c)), 0);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(c[i], (a[i] + b[i]) * 3 + 11);
	assert_int_equal(vgpu_module_unload(t->dev, m), 0);
}

/* A malformed image is refused with the backend's reason; the VM keeps
 * its channel and can load a good one afterwards. */
static void test_module_refused(void **state)
{
	static const char bad[] = ".version 8.0\n.target sm_70\n.address_size 64\n"
	                          ".visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n}\n";
	struct module_tenant *t = *state;
	struct vgpu_guest_module *m = NULL;
	const char *why;

	assert_int_equal(vgpu_module_load(t->dev, t->ch, bad, sizeof(bad), &m), -EINVAL);
	assert_null(m);
	why = vgpu_device_last_error(t->dev);
	if (!strstr(why, "MODULE_LOAD: ") || !strstr(why, "frobnicate")) {
		print_error("message: %s\n", why);
		fail();
	}
	assert_int_equal(vgpu_module_load(t->dev, t->ch, "", 1, &m), -EINVAL);
	assert_int_equal(vgpu_module_load(t->dev, t->ch, ptx_image, strlen(ptx_image), &m), 0);
	assert_int_equal(vgpu_module_unload(t->dev, m), 0);
}

/* A launch of an unloaded module is a bad command: the channel dies, the
 * device does not. */
static void test_launch_after_unload(void **state)
{
	struct module_tenant *t = *state;
	struct vgpu_guest_function f;
	struct vgpu_guest_module *m, copy;
	struct vgpu_channel *other;
	uint64_t params[2] = { 0, 0 };
	uint32_t cause = 99;
	uint64_t address;

	assert_int_equal(vgpu_module_load(t->dev, t->ch, ptx_image, strlen(ptx_image), &m), 0);
	assert_non_null(vgpu_module_function(m, "scale_bias"));
	f = *vgpu_module_function(m, "scale_bias");
	copy = *m;
	assert_int_equal(vgpu_module_unload(t->dev, m), 0);
	assert_int_equal(vgpu_channel_fault(t->ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_NONE);
	launch(t, &copy, &f, 1, 1, params, 12);
	assert_int_equal(vgpu_channel_finish(t->ch, -1), -EIO);
	assert_int_equal(vgpu_channel_fault(t->ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_BAD_KERNEL_ARGS);
	assert_int_equal(vgpu_channel_create(t->dev, 0, &other), 0);
	assert_int_equal(vgpu_module_load(t->dev, other, ptx_image, strlen(ptx_image), &m), 0);
	assert_int_equal(vgpu_module_unload(t->dev, m), 0);
	vgpu_channel_destroy(other);
}

/* A store outside the VM's memory: the channel dies, CHANNEL_FAULT names
 * the cause and the address. */
static void test_fault_names_address(void **state)
{
	struct module_tenant *t = *state;
	const struct vgpu_guest_function *poke;
	struct vgpu_guest_module *m;
	uint64_t params[2] = { 1ull << 46, 5 }, address = 0;
	uint32_t cause = 0;

	assert_int_equal(vgpu_module_load(t->dev, t->ch, ptx_image, strlen(ptx_image), &m), 0);
	poke = vgpu_module_function(m, "poke");
	assert_non_null(poke);
	launch(t, m, poke, 1, 1, params, poke->param_bytes);
	assert_int_equal(vgpu_channel_finish(t->ch, -1), -EIO);
	assert_int_equal(vgpu_channel_fault(t->ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_UNMAPPED);
	assert_true(address >= (1ull << 46) - 4096 && address <= (1ull << 46) + 4096);
	assert_int_equal(vgpu_module_unload(t->dev, m), 0);
}

int main(void)
{
	const char *path = getenv("MODULES_PTX");
	const char *env = getenv("TEST_SEED");
	const struct CMUnitTest transfers[] = {
		cmocka_unit_test(test_round_trip_default),
		cmocka_unit_test(test_round_trip_small_pushbuffer),
		cmocka_unit_test(test_bad_transfers),
	};
	const struct CMUnitTest modules[] = {
		cmocka_unit_test_setup_teardown(test_module_load_and_launch, tenant_setup,
		                                tenant_teardown),
		cmocka_unit_test_setup_teardown(test_module_refused, tenant_setup, tenant_teardown),
		cmocka_unit_test_setup_teardown(test_launch_after_unload, tenant_setup,
		                                tenant_teardown),
		cmocka_unit_test_setup_teardown(test_fault_names_address, tenant_setup,
		                                tenant_teardown),
	};
	int failed;

	seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL);
	printf("seed %u (TEST_SEED=%u repeats this run)\n", seed, seed);
	ptx_image = path ? read_file(path) : NULL;
	if (!ptx_image) {
		fprintf(stderr, "MODULES_PTX must name tests/ptx/modules.ptx\n");
		return 1;
	}
	failed = cmocka_run_group_tests_name("transfers", transfers, NULL, NULL);
	failed += cmocka_run_group_tests_name("modules", modules, NULL, NULL);
	free(ptx_image);
	return failed;
}
