// SPDX-License-Identifier: MIT
/*
 * test_hal_modules.c - the HAL's modules: a program a VM brings (PTX,
 * tests/ptx/modules.cu) is parsed, its variables placed by the caller, bound
 * into an address space and run by LAUNCH_FUNCTION in channel order, its
 * every access through the address space's mappings (data in VRAM or in
 * host memory alike). Faults, bad launches, a function that never ends, a
 * kill and an unbind hurt only the channel that ran them. A backend that
 * runs no user programs must say so at parse time, with a reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_conformance.h"

#define MODULE_PATH module_path()

/* tests/ptx/modules.ptx: from $VGPU_TEST_PTX_DIR where the tree moved (a
 * GPU machine's copy, tests/cudagpu/gpu-session.sh), else the build's. */
static const char *module_path(void)
{
	static char path[4096];
	const char *dir = getenv("VGPU_TEST_PTX_DIR");

	snprintf(path, sizeof(path), "%s/modules.ptx", dir && *dir ? dir : TEST_PTX_DIR);
	return path;
}

/* cudagpu runs a VM's kernels on the GPU itself: the driver reports
 * neither the address a kernel faulted at nor the bytes it moved. */
static bool sees_inside_kernels(void)
{
	return strcmp(suite.backend, "cuda") != 0;
}
#define VARIABLES_VA UINT64_C(0x20000000)

enum { F_VADD, F_SCALE_BIAS, F_SPIN, F_POKE, F_SUM };
static const char *const function_names[] = { "vadd_u32", "scale_bias", "spin", "poke",
	                                       "sum_u32" };

static char *read_text(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long size;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size > 0);
	rewind(f);
	text = xmalloc((size_t)size + 1);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	text[size] = 0;
	fclose(f);
	*bytes = (size_t)size;
	return text;
}

/* A module bound into a space, its variables in a VRAM area of it. */
struct tmodule {
	struct vgpu_hal_module *module;
	struct vgpu_hal_module_info info;
	struct tmem *variables;
	uint64_t *variable_va;
	uint32_t id;
	int function[5]; /* index of function_names[i] */
};

static bool modules_supported(void)
{
	struct vgpu_hal_module *module = NULL;
	struct vgpu_error error = VGPU_ERROR_INIT;
	size_t bytes;
	char *text = read_text(MODULE_PATH, &bytes);
	int err = vgpu_hal_module_parse(suite.hal, text, bytes, "modules.ptx", &module, &error);

	free(text);
	if (err == -ENOTSUP && !module) {
		/* Fine, if it says why. */
		assert_int_equal(error.code, -ENOTSUP);
		assert_true(error.msg[0] != 0);
		printf("# %s runs no user programs: %s\n", suite.backend, vgpu_error_msg(&error));
		return false;
	}
	assert_int_equal(err, 0);
	assert_false(vgpu_error_is_set(&error)); /* success leaves the carrier alone */
	vgpu_hal_module_free(module);
	return true;
}

#define BIND_ANY_ID UINT32_MAX

/* Parse the test module, place its variables, and bind it: under an id
 * the GPU picks (BIND_ANY_ID), or under at_id as a migration does (then
 * the return value of module_bind_at, the module freed if it failed). */
static int module_load_at(struct tspace *sp, struct tmodule *m, uint32_t at_id)
{
	uint64_t offset = 0;
	size_t bytes;
	char *text = read_text(MODULE_PATH, &bytes);
	int err;

	memset(m, 0, sizeof(*m));
	assert_int_equal(vgpu_hal_module_parse(suite.hal, text, bytes, "modules.ptx", &m->module,
	                                       NULL),
	                 0);
	free(text);
	vgpu_hal_module_info(m->module, &m->info);
	for (unsigned f = 0; f < 5; f++) {
		m->function[f] = -1;
		for (uint32_t i = 0; i < m->info.function_count; i++)
			if (!strcmp(m->info.functions[i].name, function_names[f]))
				m->function[f] = (int)i;
		assert_true(m->function[f] >= 0);
	}
	/* The variables, one after the other in one VRAM area. */
	m->variable_va = xmalloc((m->info.variable_count + 1) * sizeof(uint64_t));
	m->variables = mem_vram(sp->as, VARIABLES_VA, suite.vram_page, suite.vram_page, 0);
	for (uint32_t i = 0; i < m->info.variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &m->info.variables[i];
		uint32_t align = v->align ? v->align : 1;

		offset = (offset + align - 1) / align * align;
		m->variable_va[i] = VARIABLES_VA + offset;
		write_ok(sp->as, m->variable_va[i], v->init, v->bytes);
		offset += v->bytes;
	}
	assert_true(offset <= suite.vram_page);
	if (at_id == BIND_ANY_ID) {
		assert_int_equal(vgpu_hal_module_bind(sp->as, m->module, m->variable_va, &m->id), 0);
		return 0;
	}
	m->id = at_id;
	err = vgpu_hal_module_bind_at(sp->as, m->module, m->variable_va, at_id);
	if (err) {
		vgpu_hal_module_free(m->module);
		mem_free(m->variables);
		free(m->variable_va);
	}
	return err;
}

static void module_load(struct tspace *sp, struct tmodule *m)
{
	module_load_at(sp, m, BIND_ANY_ID);
}

static void module_unload(struct tspace *sp, struct tmodule *m)
{
	assert_int_equal(vgpu_hal_module_unbind(sp->as, m->id), 0);
	mem_free(m->variables);
	free(m->variable_va);
}

static uint64_t variable_va(const struct tmodule *m, const char *name)
{
	for (uint32_t i = 0; i < m->info.variable_count; i++)
		if (!strcmp(m->info.variables[i].name, name))
			return m->variable_va[i];
	fail_msg("no variable %s", name);
	return 0;
}

/* Push one LAUNCH_FUNCTION; params is the parameter block. */
static void push_launch(struct tchan *tc, const struct tmodule *m, uint32_t module_id,
                        int function, uint32_t grid, uint32_t block, const void *params,
                        uint32_t param_bytes)
{
	struct vgpu_launch_dims dims = { { grid, 1, 1 }, { block, 1, 1 }, 0 };
	uint32_t words[64];

	assert_true(vgpu_launch_function_words(param_bytes) <= 64);
	chan_push(tc, words,
	          vgpu_push_launch_function(words, module_id, (uint32_t)function, &dims, params,
	                                    param_bytes));
	(void)m;
}

struct vadd_params {
	uint64_t a, b, c;
	int32_t n;
	uint32_t pad;
};

/* vadd over n words in memory of target. */
static void run_vadd(struct tspace *sp, struct tchan *tc, struct tmodule *m,
                     enum vgpu_hal_target target, uint32_t n)
{
	uint64_t bytes = (uint64_t)n * 4;
	struct tmem *a = target == VGPU_TARGET_VRAM
	                         ? mem_vram(sp->as, DATA_VA, bytes, suite.vram_page, 0)
	                         : mem_sysmem(sp->as, DATA_VA, bytes, suite.vram_page, target, 0);
	struct tmem *b = mem_vram(sp->as, DATA2_VA, bytes, suite.vram_page, 0);
	struct tmem *c = mem_vram(sp->as, DATA3_VA, bytes, suite.vram_page, 0);
	uint32_t *x = xmalloc(bytes), *y = xmalloc(bytes), *z = xmalloc(bytes);
	struct vadd_params params = { DATA_VA, DATA2_VA, DATA3_VA, (int32_t)n, 0 };
	const struct vgpu_hal_module_function *f = &m->info.functions[m->function[F_VADD]];

	assert_int_equal(f->param_count, 4);
	assert_int_equal(f->param_bytes, 28);
	assert_int_equal(f->params[3].offset, 24);
	assert_int_equal(f->params[3].size, 4);
	for (uint32_t i = 0; i < n; i++) {
		x[i] = i * 2654435761u;
		y[i] = ~i;
	}
	write_ok(sp->as, DATA_VA, x, bytes);
	write_ok(sp->as, DATA2_VA, y, bytes);
	push_launch(tc, m, m->id, m->function[F_VADD], (n + 127) / 128, 128, &params,
	            f->param_bytes);
	assert_true(chan_sync(tc));
	read_ok(sp->as, DATA3_VA, z, bytes);
	for (uint32_t i = 0; i < n; i++)
		if (z[i] != x[i] + y[i])
			fail_msg("vadd on %s: word %u is %#x, not %#x",
			         target == VGPU_TARGET_VRAM ? "VRAM" : "host memory", i, z[i],
			         x[i] + y[i]);
	free(x);
	free(y);
	free(z);
	mem_free(c);
	mem_free(b);
	mem_free(a);
}

/* A user's function runs where its data is: VRAM or host memory behind the
 * IOMMU (an evicted chunk), with the same results. */
static void test_module_vadd(void **state)
{
	struct tspace *sp;
	struct tchan *tc;
	struct tmodule m;
	struct vgpu_hal_as_counters before, after;

	if (!modules_supported())
		return;
	sp = space_create();
	tc = chan_create(sp, 0);
	module_load(sp, &m);
	assert_int_equal(m.info.function_count, 5);
	assert_int_equal(m.info.variable_count, 3);
	run_vadd(sp, tc, &m, VGPU_TARGET_VRAM, 1000);
	vgpu_hal_as_counters(sp->as, &before);
	run_vadd(sp, tc, &m, VGPU_TARGET_SYSMEM_NONCOHERENT, 3000);
	vgpu_hal_as_counters(sp->as, &after);
	/* The function read its input over the bus. */
	if (sees_inside_kernels())
		assert_true(after.bytes_read[VGPU_TARGET_SYSMEM_NONCOHERENT] >
		            before.bytes_read[VGPU_TARGET_SYSMEM_NONCOHERENT]);
	assert_true(after.busy_ns[VGPU_ENGINE_COMPUTE] > before.busy_ns[VGPU_ENGINE_COMPUTE]);
	assert_int_equal(vgpu_hal_channel_state(tc->channel, NULL), VGPU_CHANNEL_OK);
	module_unload(sp, &m);
	chan_destroy(tc);
	space_destroy(sp);
}

/* .const and .global variables where the caller placed them: read, and
 * written by an atomic. */
static void test_module_variables(void **state)
{
	struct tspace *sp;
	struct tchan *tc;
	struct tmodule m;
	struct tmem *data;
	uint32_t n = 700, p[700];
	uint64_t launches = 0;
	struct {
		uint64_t p;
		int32_t n;
		uint32_t pad;
	} params = { DATA_VA, 700, 0 };

	if (!modules_supported())
		return;
	sp = space_create();
	tc = chan_create(sp, 0);
	module_load(sp, &m);
	data = mem_vram(sp->as, DATA_VA, sizeof(p), suite.vram_page, 0);
	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	write_ok(sp->as, DATA_VA, p, sizeof(p));
	for (int round = 0; round < 2; round++)
		push_launch(tc, &m, m.id, m.function[F_SCALE_BIAS], 3, 256, &params, 12);
	assert_true(chan_sync(tc));
	read_ok(sp->as, DATA_VA, p, sizeof(p));
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(p[i], (i * 3 + 7) * 3 + 7);
	read_ok(sp->as, variable_va(&m, "launches"), &launches, 8);
	assert_int_equal(launches, 2);
	mem_free(data);
	module_unload(sp, &m);
	chan_destroy(tc);
	space_destroy(sp);
}

/* A store outside the address space's mappings kills that channel with
 * UNMAPPED at the address; another VM's launches go on. */
static void test_module_fault(void **state)
{
	struct tspace *bad_sp, *good_sp;
	struct tchan *bad, *good;
	struct tmodule bad_m, good_m;
	struct vgpu_hal_event error;
	struct {
		uint64_t address;
		uint32_t v, pad;
	} params = { DATA3_VA + 0x1230, 42, 0 };
	unsigned start;

	if (!modules_supported())
		return;
	bad_sp = space_create();
	good_sp = space_create();
	bad = chan_create(bad_sp, 0);
	good = chan_create(good_sp, 0);
	module_load(bad_sp, &bad_m);
	module_load(good_sp, &good_m);
	start = event_mark();
	push_launch(bad, &bad_m, bad_m.id, bad_m.function[F_POKE], 1, 1, &params, 12);
	assert_true(chan_wait_error(bad, start, &error));
	assert_int_equal(error.cause, VGPU_FAULT_UNMAPPED);
	assert_true(error.address == DATA3_VA + 0x1230 ||
	            (!sees_inside_kernels() && error.address == 0));
	run_vadd(good_sp, good, &good_m, VGPU_TARGET_VRAM, 512);
	assert_int_equal(vgpu_hal_channel_state(good->channel, NULL), VGPU_CHANNEL_OK);
	module_unload(good_sp, &good_m);
	module_unload(bad_sp, &bad_m);
	chan_destroy(good);
	chan_destroy(bad);
	space_destroy(good_sp);
	space_destroy(bad_sp);
}

/* Launches the GPU cannot run: each kills its channel with
 * BAD_KERNEL_ARGS, before any thread runs. */
static void test_module_bad_launches(void **state)
{
	struct vadd_params params = { DATA_VA, DATA2_VA, DATA3_VA, 10, 0 };
	struct tspace *sp;
	struct tmodule m;

	if (!modules_supported())
		return;
	sp = space_create();
	module_load(sp, &m);
	for (int what = 0; what < 5; what++) {
		struct tchan *tc = chan_create(sp, 0);
		struct vgpu_hal_event error;
		unsigned start = event_mark();

		switch (what) {
		case 0: /* no such module */
			push_launch(tc, &m, m.id + 17, m.function[F_VADD], 1, 32, &params, 28);
			break;
		case 1: /* no such function */
			push_launch(tc, &m, m.id, 99, 1, 32, &params, 28);
			break;
		case 2: /* a parameter block of the wrong size */
			push_launch(tc, &m, m.id, m.function[F_VADD], 1, 32, &params, 24);
			break;
		case 3: /* 2^31 blocks of 2048 threads */
			push_launch(tc, &m, m.id, m.function[F_VADD], 0x80000000u, 2048, &params, 28);
			break;
		case 4: /* an empty grid */
			push_launch(tc, &m, m.id, m.function[F_VADD], 0, 32, &params, 28);
			break;
		}
		assert_true(chan_wait_error(tc, start, &error));
		assert_int_equal(error.cause, VGPU_FAULT_BAD_KERNEL_ARGS);
		chan_destroy(tc);
	}
	module_unload(sp, &m);
	space_destroy(sp);
}

/* A function that never ends: a kill gets in at once, and without a kill
 * the watchdog ends it; the module can be unbound meanwhile. */
static void test_module_runaway(void **state)
{
	struct tspace *sp;
	struct tmodule m;
	struct tmem *flag;
	uint64_t params = DATA_VA;
	int32_t zero = 0;

	if (!modules_supported())
		return;
	sp = space_create();
	module_load(sp, &m);
	flag = mem_vram(sp->as, DATA_VA, 4096, suite.vram_page, 0);
	write_ok(sp->as, DATA_VA, &zero, 4);
	for (int kill = 1; kill >= 0; kill--) {
		struct tchan *tc = chan_create(sp, 0);
		struct vgpu_hal_event error;
		unsigned start = event_mark();

		push_launch(tc, &m, m.id, m.function[F_SPIN], 2, 64, &params, 8);
		vgpu_hal_channel_kick(tc->channel);
		sleep_ms(50);
		if (kill)
			vgpu_hal_channel_kill(tc->channel, VGPU_FAULT_TIMEOUT);
		assert_true(chan_wait_error(tc, start, &error));
		assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
		chan_destroy(tc);
	}
	mem_free(flag);
	module_unload(sp, &m);
	space_destroy(sp);
}

/* 2^31 - 1 blocks that each do next to nothing: a GPU runs them in a
 * second or so; simgpu, which interprets every block, ends the launch at
 * its host-time limit (function_launch_wall_ms, 2 s in this suite)
 * instead of running for hours, and a kill gets in between its pieces at
 * once. */
static void test_module_huge_grid(void **state)
{
	uint64_t params[4] = { DATA_VA, DATA_VA, DATA_VA, 0 }; /* n = 0: no access */

	if (!modules_supported())
		return;
	/* An address space each: on cudagpu a killed launch ends the VM's GPU
	 * worker, and the next channel would race its restart. */
	for (int kill = 1; kill >= 0; kill--) {
		struct tspace *sp = space_create();
		struct vgpu_hal_event error;
		struct tmodule m;
		struct tmem *data;
		struct tchan *tc;
		unsigned start;
		uint64_t fence;

		module_load(sp, &m);
		data = mem_vram(sp->as, DATA_VA, 4096, suite.vram_page, 0);
		tc = chan_create(sp, 0);
		start = event_mark();
		push_launch(tc, &m, m.id, m.function[F_VADD], 0x7fffffffu, 1, params, 28);
		fence = chan_fence(tc);
		vgpu_hal_channel_kick(tc->channel);
		sleep_ms(50);
		if (kill) {
			vgpu_hal_channel_kill(tc->channel, VGPU_FAULT_TIMEOUT);
			assert_true(chan_wait_error(tc, start, &error));
			assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
		} else if (strcmp(suite.backend, "cuda") != 0) {
			/* interpreted: the host-time limit ends it */
			assert_true(chan_wait_error(tc, start, &error));
			assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
		} else if (!chan_wait_fence(tc, fence, start)) {
			/* a real GPU finishes the grid, or its watchdog ends it */
			assert_true(chan_wait_error(tc, start, &error));
			assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
		}
		chan_destroy(tc);
		mem_free(data);
		module_unload(sp, &m);
		space_destroy(sp);
	}
}

/* After an unbind the id is gone: a launch of it is a bad launch; the id
 * is reused by the next bind. */
static void test_module_unbind(void **state)
{
	struct vadd_params params = { DATA_VA, DATA2_VA, DATA3_VA, 10, 0 };
	struct tspace *sp;
	struct tchan *tc;
	struct tmodule m, again;
	struct vgpu_hal_event error;
	unsigned start;
	uint32_t old_id;

	if (!modules_supported())
		return;
	sp = space_create();
	tc = chan_create(sp, 0);
	module_load(sp, &m);
	old_id = m.id;
	module_unload(sp, &m);
	assert_int_equal(vgpu_hal_module_unbind(sp->as, old_id), -ENOENT);
	start = event_mark();
	push_launch(tc, &m, old_id, 0, 1, 32, &params, 28);
	assert_true(chan_wait_error(tc, start, &error));
	assert_int_equal(error.cause, VGPU_FAULT_BAD_KERNEL_ARGS);
	module_load(sp, &again);
	assert_int_equal(again.id, old_id);
	module_unload(sp, &again);
	chan_destroy(tc);
	space_destroy(sp);
}

/* A module bound under a given id (what an imported VM's launches name)
 * runs under that id, with its variables where they were placed; a second
 * bind at a taken id is refused with -EEXIST and leaves the first intact.
 * A GPU without module_bind_at says -ENOTSUP. */
static void test_module_bind_at(void **state)
{
	struct tspace *sp;
	struct tchan *tc;
	struct vgpu_hal_module *again = NULL;
	struct tmodule m;
	struct tmem *data;
	uint32_t p[300];
	size_t bytes;
	char *text;
	uint64_t launches = 0;
	struct {
		uint64_t p;
		int32_t n;
		uint32_t pad;
	} params = { DATA_VA, 300, 0 };
	int err;

	if (!modules_supported())
		return;
	sp = space_create();
	tc = chan_create(sp, 0);
	err = module_load_at(sp, &m, 5);
	if (err == -ENOTSUP) {
		print_message("%s: no module_bind_at\n", suite.backend);
		chan_destroy(tc);
		space_destroy(sp);
		return;
	}
	assert_int_equal(err, 0);
	text = read_text(MODULE_PATH, &bytes);
	assert_int_equal(vgpu_hal_module_parse(suite.hal, text, bytes, "again.ptx", &again, NULL),
	                 0);
	free(text);
	assert_int_equal(vgpu_hal_module_bind_at(sp->as, again, m.variable_va, 5), -EEXIST);
	vgpu_hal_module_free(again);
	data = mem_vram(sp->as, DATA_VA, sizeof(p), suite.vram_page, 0);
	for (uint32_t i = 0; i < 300; i++)
		p[i] = i;
	write_ok(sp->as, DATA_VA, p, sizeof(p));
	push_launch(tc, &m, 5, m.function[F_SCALE_BIAS], 2, 256, &params, 12);
	assert_true(chan_sync(tc));
	read_ok(sp->as, DATA_VA, p, sizeof(p));
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(p[i], i * 3 + 7);
	read_ok(sp->as, variable_va(&m, "launches"), &launches, 8);
	assert_int_equal(launches, 1);
	mem_free(data);
	module_unload(sp, &m);
	assert_int_equal(vgpu_hal_module_unbind(sp->as, 5), -ENOENT);
	chan_destroy(tc);
	space_destroy(sp);
}

/* Images the GPU refuses, each with a reason that names the line. */
static void test_module_refused(void **state)
{
	static const char malformed[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
	                                ".visible .entry f(\n{\n\tret;\n}\n";
	static const char texture[] =
		".version 8.0\n.target sm_90\n.address_size 64\n"
		".global .texref t;\n"
		".visible .entry f(.param .u64 p)\n{\n\t.reg .f32 %f<5>;\n\t.reg .b32 %r<2>;\n"
		"\tmov.b32 %r1, 0;\n\ttex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n"
		"\tret;\n}\n";
	struct vgpu_hal_module *module = NULL;
	struct vgpu_error error = VGPU_ERROR_INIT;
	int err;

	if (!modules_supported())
		return;
	err = vgpu_hal_module_parse(suite.hal, malformed, sizeof(malformed) - 1, "bad.ptx",
	                            &module, &error);
	assert_int_not_equal(err, 0);
	assert_int_equal(error.code, err); /* the carrier holds the errno returned */
	assert_non_null(strstr(error.msg, "bad.ptx:"));
	vgpu_error_clear(&error);
	assert_int_equal(vgpu_hal_module_parse(suite.hal, texture, sizeof(texture) - 1, "tex.ptx",
	                                       &module, &error),
	                 -ENOTSUP);
	assert_int_equal(error.code, -ENOTSUP);
	assert_non_null(strstr(error.msg, "tex.ptx:"));
	assert_non_null(strstr(error.msg, "unsupported"));
	vgpu_error_clear(&error);
	err = vgpu_hal_module_parse(suite.hal, "\x7f" "ELF", 4, "elf", &module, &error);
	assert_int_not_equal(err, 0);
	assert_int_equal(error.code, err);
	assert_true(error.msg[0] != 0);
	/* NULL: only the errno */
	assert_int_not_equal(vgpu_hal_module_parse(suite.hal, "\x7f" "ELF", 4, "elf", &module,
	                                           NULL),
	                     0);
}

static const struct CMUnitTest module_tests[] = {
	HAL_TEST(test_module_vadd),
	HAL_TEST(test_module_variables),
	HAL_TEST(test_module_fault),
	HAL_TEST(test_module_bad_launches),
	HAL_TEST(test_module_runaway),
	HAL_TEST(test_module_huge_grid),
	HAL_TEST(test_module_unbind),
	HAL_TEST(test_module_bind_at),
	HAL_TEST(test_module_refused),
};

const struct hal_test_group hal_module_group = {
	"hal-modules", module_tests, sizeof(module_tests) / sizeof(module_tests[0]),
};
