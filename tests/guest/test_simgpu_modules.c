// SPDX-License-Identifier: MIT
/*
 * test_simgpu_modules.c - GPU programs on the runtime's in-process simgpu
 * backend (backend_simgpu.c), no vgpud: vgpu_module_load reads the image
 * from the device's memory, the backend parses and binds it through the
 * HAL with its variables in a buffer of its own and writes the device
 * ABI's table (vgpu/abi/module_table.h, the same builder vgpud uses); the
 * runtime checks the table, launches, unloads. Also what vgpud does for a
 * guest: refusals with the GPU's reason, a variables buffer that does not
 * fit, a module of another device, CHANNEL_FAULT.
 *
 * tests/ptx/modules.ptx comes from $MODULES_PTX.
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

#include <cmocka.h>

#include "vgpu/abi/commands.h"
#include "vgpu_guest.h"
#include "vgpu_guest_simgpu.h"

static char *ptx_image;

struct sim {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
};

static int sim_open_on(struct sim *s, struct vgpu_hal *hal, uint64_t cap_bytes)
{
	struct simgpu_config gpu;
	struct vgpu_guest_simgpu_config config = { .hal = hal, .simgpu = &gpu,
		                                   .cap_bytes = cap_bytes };
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

static uint64_t alloc(struct sim *s, uint64_t bytes)
{
	struct vgpu_guest_buffer buf;

	assert_int_equal(vgpu_buffer_alloc(s->dev, bytes, VGPU_PRIORITY_DEFAULT, &buf), 0);
	return buf.gpu_va;
}

static uint64_t allocated(struct sim *s)
{
	struct vgpu_stats_response stats;

	assert_int_equal(vgpu_device_stats(s->dev, &stats), 0);
	return stats.allocated_bytes;
}

static void launch(struct sim *s, const struct vgpu_guest_module *m,
                   const struct vgpu_guest_function *f, uint32_t blocks, uint32_t threads,
                   const void *params, uint32_t param_bytes)
{
	struct vgpu_launch_dims dims = { .grid = { blocks, 1, 1 }, .block = { threads, 1, 1 } };
	uint32_t *words, n;

	assert_int_equal(vgpu_channel_begin(s->ch, vgpu_launch_function_words(param_bytes),
	                                    &words), 0);
	n = vgpu_push_launch_function(words, m->handle, f->index, &dims, params, param_bytes);
	assert_int_equal(vgpu_channel_submit(s->ch, n, 0, NULL), 0);
}

/* The device offers modules; the table names the kernels with their
 * parameters and the variables with their initial values; vadd and
 * scale_bias compute what the CPU does; the variables' buffer is
 * allocated while the module is loaded, and only then. */
static void test_load_and_launch(void **state)
{
	enum { N = 3000 };
	const struct vgpu_guest_function *vadd, *scale_bias;
	const struct vgpu_guest_variable *bias, *scale, *launches;
	struct vgpu_guest_module *m;
	static uint32_t a[N], b[N], c[N];
	uint64_t va_a, va_b, va_c, params[4], count = 0, before;
	uint32_t value;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, 0), 0);
	assert_true(vgpu_device_info(s.dev)->features & VGPU_FEATURE_MODULES);
	before = allocated(&s);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image) + 1, &m), 0);
	assert_int_equal(m->function_count, 5);
	assert_int_equal(m->variable_count, 3);
	assert_true(m->variables_bytes >= 16);
	/* only the variables stay allocated: image and table went */
	assert_int_equal(allocated(&s), before + 4096);
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
	launches = vgpu_module_variable(m, "launches");
	assert_non_null(bias);
	assert_non_null(scale);
	assert_non_null(launches);
	assert_int_equal(bias->space, VGPU_MODULE_VARIABLE_GLOBAL);
	assert_int_equal(scale->space, VGPU_MODULE_VARIABLE_CONST);
	assert_int_equal(launches->gpu_va % 8, 0);
	assert_int_equal(vgpu_channel_download(s.ch, &value, bias->gpu_va, 4), 0);
	assert_int_equal(value, 7);
	assert_int_equal(vgpu_channel_download(s.ch, &value, scale->gpu_va, 4), 0);
	assert_int_equal(value, 3);

	for (uint32_t i = 0; i < N; i++) {
		a[i] = i * 2654435761u;
		b[i] = i ^ 0x5a5a5a5au;
	}
	va_a = alloc(&s, sizeof(a));
	va_b = alloc(&s, sizeof(b));
	va_c = alloc(&s, sizeof(c));
	assert_int_equal(vgpu_channel_upload(s.ch, va_a, a, sizeof(a), NULL), 0);
	assert_int_equal(vgpu_channel_upload(s.ch, va_b, b, sizeof(b), NULL), 0);
	params[0] = va_a;
	params[1] = va_b;
	params[2] = va_c;
	params[3] = N;
	launch(&s, m, vadd, (N + 255) / 256, 256, params, vadd->param_bytes);
	assert_int_equal(vgpu_channel_download(s.ch, c, va_c, sizeof(c)), 0);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(c[i], a[i] + b[i]);

	value = 11;
	assert_int_equal(vgpu_channel_upload(s.ch, bias->gpu_va, &value, 4, NULL), 0);
	params[0] = va_c;
	params[1] = N;
	launch(&s, m, scale_bias, (N + 127) / 128, 128, params, scale_bias->param_bytes);
	launch(&s, m, scale_bias, 1, 1, params, scale_bias->param_bytes); /* c[0] again */
	assert_int_equal(vgpu_channel_download(s.ch, c, va_c, sizeof(c)), 0);
	assert_int_equal(c[0], ((a[0] + b[0]) * 3 + 11) * 3 + 11);
	for (uint32_t i = 1; i < N; i++)
		assert_int_equal(c[i], (a[i] + b[i]) * 3 + 11);
	assert_int_equal(vgpu_channel_download(s.ch, &count, launches->gpu_va, 8), 0);
	assert_int_equal(count, 2);
	assert_int_equal(vgpu_module_unload(s.dev, m), 0);
	assert_int_equal(allocated(&s), before + 3 * 12288);
	sim_close(&s);
}

/* A malformed image is refused with the GPU's reason in the table; the
 * device keeps its channel, nothing stays allocated, and a good image
 * loads afterwards. */
static void test_refused(void **state)
{
	static const char bad[] = ".version 8.0\n.target sm_70\n.address_size 64\n"
	                          ".visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n}\n";
	struct vgpu_guest_module *m = NULL;
	const char *why;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, 0), 0);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, bad, sizeof(bad), &m), -EINVAL);
	assert_null(m);
	why = vgpu_device_last_error(s.dev);
	if (!strstr(why, "MODULE_LOAD: ") || !strstr(why, "frobnicate")) {
		print_error("message: %s\n", why);
		fail();
	}
	assert_int_equal(allocated(&s), 0);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, "", 1, &m), -EINVAL);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image), &m), 0);
	assert_int_equal(vgpu_module_unload(s.dev, m), 0);
	assert_int_equal(allocated(&s), 0);
	sim_close(&s);
}

/* The variables' buffer counts against the device's cap like any buffer:
 * with room for the image and the table only, the load fails for memory
 * and says so, and leaves nothing allocated. */
static void test_variables_over_cap(void **state)
{
	uint64_t image = (strlen(ptx_image) + 4095) / 4096 * 4096;
	struct vgpu_guest_module *m = NULL;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, image + (64u << 10)), 0);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image), &m),
	                 -ENOMEM);
	assert_null(m);
	if (!strstr(vgpu_device_last_error(s.dev), "variables")) {
		print_error("message: %s\n", vgpu_device_last_error(s.dev));
		fail();
	}
	assert_int_equal(allocated(&s), 0);
	sim_close(&s);
}

/* A launch of an unloaded module is a bad command: the channel dies with
 * the cause CHANNEL_FAULT names; the device does not. */
static void test_launch_after_unload(void **state)
{
	struct vgpu_guest_function f;
	struct vgpu_guest_module *m, copy;
	struct vgpu_channel *other;
	uint64_t params[2] = { 0, 0 }, address = 1;
	uint32_t cause = 99;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, 0), 0);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image), &m), 0);
	assert_non_null(vgpu_module_function(m, "scale_bias"));
	f = *vgpu_module_function(m, "scale_bias");
	copy = *m;
	assert_int_equal(vgpu_module_unload(s.dev, m), 0);
	assert_int_equal(vgpu_channel_fault(s.ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_NONE);
	assert_int_equal(address, 0);
	launch(&s, &copy, &f, 1, 1, params, 12);
	assert_int_equal(vgpu_channel_finish(s.ch, -1), -EIO);
	assert_int_equal(vgpu_channel_fault(s.ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_BAD_KERNEL_ARGS);
	assert_int_equal(vgpu_channel_create(s.dev, 0, &other), 0);
	assert_int_equal(vgpu_module_load(s.dev, other, ptx_image, strlen(ptx_image), &m), 0);
	assert_int_equal(vgpu_module_unload(s.dev, m), 0);
	vgpu_channel_destroy(other);
	sim_close(&s);
}

/* A store outside the device's memory: the channel dies, CHANNEL_FAULT
 * names the cause and the address. */
static void test_fault_names_address(void **state)
{
	const struct vgpu_guest_function *poke;
	struct vgpu_guest_module *m;
	uint64_t params[2] = { 1ull << 46, 5 }, address = 0;
	uint32_t cause = 0;
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, 0), 0);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image), &m), 0);
	poke = vgpu_module_function(m, "poke");
	assert_non_null(poke);
	launch(&s, m, poke, 1, 1, params, poke->param_bytes);
	assert_int_equal(vgpu_channel_finish(s.ch, -1), -EIO);
	assert_int_equal(vgpu_channel_fault(s.ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_UNMAPPED);
	assert_true(address >= (1ull << 46) - 4096 && address <= (1ull << 46) + 4096);
	assert_int_equal(vgpu_module_unload(s.dev, m), 0);
	sim_close(&s);
}

/* Two devices on one GPU (one address space each, like two VMs): each
 * runs its own module; a module id of one is nothing in the other, whose
 * channel a launch of it kills. */
static void test_two_devices(void **state)
{
	const struct vgpu_guest_function *scale_bias;
	struct vgpu_guest_module *m1, *m2, alien;
	uint64_t count1 = 0, count2 = 0, params[2], address;
	uint32_t value = 5, cause = 0;
	struct sim s1, s2;

	(void)state;
	assert_int_equal(sim_open_on(&s1, NULL, 0), 0);
	assert_int_equal(sim_open_on(&s2, vgpu_guest_simgpu_hal(s1.dev), 0), 0);
	assert_int_equal(vgpu_module_load(s1.dev, s1.ch, ptx_image, strlen(ptx_image), &m1), 0);
	assert_int_equal(vgpu_module_load(s2.dev, s2.ch, ptx_image, strlen(ptx_image), &m2), 0);
	scale_bias = vgpu_module_function(m1, "scale_bias");
	assert_non_null(scale_bias);
	params[0] = alloc(&s1, 4096);
	params[1] = 1;
	assert_int_equal(vgpu_channel_upload(s1.ch, params[0], &value, 4, NULL), 0);
	launch(&s1, m1, scale_bias, 1, 1, params, scale_bias->param_bytes);
	assert_int_equal(vgpu_channel_download(s1.ch, &value, params[0], 4), 0);
	assert_int_equal(value, 5 * 3 + 7);
	assert_int_equal(vgpu_channel_download(s1.ch, &count1,
	                                       vgpu_module_variable(m1, "launches")->gpu_va, 8), 0);
	assert_int_equal(vgpu_channel_download(s2.ch, &count2,
	                                       vgpu_module_variable(m2, "launches")->gpu_va, 8), 0);
	assert_int_equal(count1, 1);
	assert_int_equal(count2, 0);
	/* s1's module id one past s2's: no module of s2 */
	alien = *m1;
	alien.handle = m2->handle + 1;
	params[0] = alloc(&s2, 4096);
	launch(&s2, &alien, scale_bias, 1, 1, params, scale_bias->param_bytes);
	assert_int_equal(vgpu_channel_finish(s2.ch, -1), -EIO);
	assert_int_equal(vgpu_channel_fault(s2.ch, &cause, &address), 0);
	assert_int_equal(cause, VGPU_CHANNEL_FAULT_BAD_KERNEL_ARGS);
	assert_int_equal(vgpu_channel_finish(s1.ch, -1), 0);
	assert_int_equal(vgpu_module_unload(s1.dev, m1), 0);
	assert_int_equal(vgpu_module_unload(s2.dev, m2), 0);
	sim_close(&s2);
	sim_close(&s1);
}

/* Several modules at once, each with its own id and variables; a slot
 * freed by an unload is used again; everything goes at the end. */
static void test_several_modules(void **state)
{
	struct vgpu_guest_module *m[3];
	struct sim s;

	(void)state;
	assert_int_equal(sim_open_on(&s, NULL, 0), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image),
		                                  &m[i]), 0);
	assert_int_not_equal(m[0]->handle, m[1]->handle);
	assert_int_not_equal(m[1]->handle, m[2]->handle);
	assert_int_not_equal(m[0]->handle, m[2]->handle);
	assert_int_not_equal(m[0]->variables_va, m[1]->variables_va);
	assert_int_equal(allocated(&s), 3 * 4096);
	assert_int_equal(vgpu_module_unload(s.dev, m[1]), 0);
	assert_int_equal(allocated(&s), 2 * 4096);
	assert_int_equal(vgpu_module_load(s.dev, s.ch, ptx_image, strlen(ptx_image), &m[1]), 0);
	assert_non_null(vgpu_module_function(m[1], "vadd_u32"));
	for (int i = 0; i < 3; i++)
		assert_int_equal(vgpu_module_unload(s.dev, m[i]), 0);
	assert_int_equal(allocated(&s), 0);
	sim_close(&s);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		text = malloc((size_t)size + 1);
		if (text && fread(text, 1, (size_t)size, f) == (size_t)size) {
			text[size] = 0;
		} else {
			free(text);
			text = NULL;
		}
	}
	fclose(f);
	return text;
}

int main(void)
{
	const char *path = getenv("MODULES_PTX");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_launch),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_variables_over_cap),
		cmocka_unit_test(test_launch_after_unload),
		cmocka_unit_test(test_fault_names_address),
		cmocka_unit_test(test_two_devices),
		cmocka_unit_test(test_several_modules),
	};
	int failed;

	ptx_image = path ? read_text(path) : NULL;
	if (!ptx_image) {
		fprintf(stderr, "MODULES_PTX must name tests/ptx/modules.ptx\n");
		return 1;
	}
	failed = cmocka_run_group_tests_name("simgpu-modules", tests, NULL, NULL);
	free(ptx_image);
	return failed;
}
