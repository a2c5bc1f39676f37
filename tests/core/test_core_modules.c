// SPDX-License-Identifier: MIT
/*
 * test_core_modules.c - users' kernels (PTX) through the core, at more than
 * twice the GPU's memory: a VM loads tests/ptx's modules.ptx and apps.ptx
 * (its variables in a buffer of its own), runs vector add, a sum with
 * atomics, a shared-memory reduction with shuffles and a histogram with
 * shared and global atomics over data larger than VRAM, while a second VM
 * allocates and frees on another thread so that the first VM's chunks are
 * evicted and returned under the kernels' feet. Every result is checked
 * against the CPU. Also: the variables are accounted and evictable, a
 * kernel's stray store kills only its channel, unload frees the
 * variables, and VM destruction takes its modules along.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_harness.h"
#include "vgpu/abi/commands.h"

#define VRAM (32 * MiB) /* 28 MiB allocatable */
#define DATA (12 * MiB)

static struct core_harness h;

static int setup(void **state)
{
	struct core_harness_config config = { .vram_bytes = VRAM, .chunk_bytes = MiB };

	core_harness_setup(&h, &config);
	return 0;
}

static int teardown(void **state)
{
	harness_assert_invariants(&h);
	core_harness_teardown(&h);
	return 0;
}

static void load(struct vgpu_vm *vm, const char *file, struct vgpu_module_loaded *out)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	char path[512];
	size_t bytes;
	char *text;

	snprintf(path, sizeof(path), "%s/%s", TEST_PTX_DIR, file);
	text = harness_read_file(path, &bytes);
	if (vgpu_core_module_load(vm, text, bytes, file, VGPU_PRIORITY_DEFAULT, out, &error))
		fail_msg("loading %s: %s", file, vgpu_error_msg(&error));
	free(text);
}

static uint32_t function(const struct vgpu_module_loaded *m, const char *name)
{
	for (uint32_t i = 0; i < m->info.function_count; i++)
		if (!strcmp(m->info.functions[i].name, name))
			return i;
	fail_msg("no function %s", name);
	return 0;
}

static void launch(struct harness_guest *guest, const struct vgpu_module_loaded *m,
                   const char *name, uint32_t grid, uint32_t block, uint32_t shared,
                   const void *params, uint32_t param_bytes)
{
	struct vgpu_launch_dims dims = { { grid, 1, 1 }, { block, 1, 1 }, shared };
	uint32_t words[48];

	assert_int_equal(m->info.functions[function(m, name)].param_bytes, param_bytes);
	harness_guest_run(&h, guest, words,
	                  vgpu_push_launch_function(words, m->id, function(m, name), &dims, params,
	                                            param_bytes));
}

/* The other VM: allocations that evict the first VM's chunks, frees that
 * let the return pass bring them back, until told to stop. */
struct pressure {
	struct vgpu_vm *vm;
	volatile int stop;
	unsigned rounds;
};

static void *press(void *arg)
{
	struct pressure *p = arg;
	struct vgpu_buffer_info b;

	while (!p->stop) {
		if (vgpu_core_alloc(p->vm, 20 * MiB, VGPU_PRIORITY_DEFAULT, 0, &b, NULL) == 0) {
			harness_sleep_ms(2);
			vgpu_core_free(p->vm, b.handle, NULL);
		}
		vgpu_core_return_pass(h.core, NULL);
		p->rounds++;
	}
	return NULL;
}

static void pattern_words(uint32_t *w, uint64_t words, uint64_t seed)
{
	harness_pattern((uint8_t *)w, 0, words * 4, seed);
}

static void test_kernels_under_pressure(void **state)
{
	struct vgpu_vm *user = harness_vm(&h, "user", 1, 0, 0);
	struct vgpu_vm *other = harness_vm(&h, "other", 1, 0, 0);
	struct vgpu_module_loaded mod, apps;
	struct vgpu_buffer_info a, b, c, small;
	struct harness_guest guest;
	struct pressure p = { .vm = other };
	const uint64_t words = DATA / 4;
	uint32_t *x = malloc(DATA), *y = malloc(DATA), *z = malloc(DATA);
	uint64_t expect_sum = 0, sum = 0;
	uint32_t bins[256], expect_bins[256] = { 0 };
	uint32_t partial[64], expect_partial[64] = { 0 }; /* the GPU's int sums wrap */
	pthread_t thread;
	struct vgpu_vm_stats stats;

	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(z);
	harness_guest_setup(&h, user, &guest, 64, 0, 1);
	load(user, "modules.ptx", &mod);
	load(user, "apps.ptx", &apps);
	assert_int_equal(vgpu_core_alloc(user, DATA, VGPU_PRIORITY_DEFAULT, 0, &a, NULL), 0);
	assert_int_equal(vgpu_core_alloc(user, DATA, VGPU_PRIORITY_DEFAULT, 0, &b, NULL), 0);
	assert_int_equal(vgpu_core_alloc(user, DATA, VGPU_PRIORITY_DEFAULT, 0, &c, NULL), 0);
	assert_int_equal(vgpu_core_alloc(user, 64 * KiB, VGPU_PRIORITY_DEFAULT, 0, &small, NULL),
	                 0);
	harness_fill(user, &a, 1);
	harness_fill(user, &b, 2);
	pattern_words(x, words, 1);
	pattern_words(y, words, 2);
	vgpu_core_vm_stats(user, &stats);
	assert_true(stats.evicted_bytes > 0); /* 36 MiB on 28 */

	assert_int_equal(pthread_create(&thread, NULL, press, &p), 0);
	{ /* c = a + b over 3 Mi words */
		struct {
			uint64_t a, b, c;
			int32_t n;
		} __attribute__((packed)) params = { a.gpu_va, b.gpu_va, c.gpu_va, (int32_t)words };

		launch(&guest, &mod, "vadd_u32", (uint32_t)((words + 255) / 256), 256, 0, &params, 28);
	}
	{ /* the sum of c, grid-stride with 64-bit atomics */
		struct {
			uint64_t p, n, sum;
		} params = { c.gpu_va, words, small.gpu_va };

		assert_int_equal(vgpu_core_vm_write(user, small.gpu_va, &sum, 8, NULL), 0);
		launch(&guest, &mod, "sum_u32", 64, 256, 0, &params, 24);
	}
	{ /* reduce_sum over the first 64 * 512 ints of a: shared + shuffles */
		struct {
			uint64_t in, out;
			int32_t n;
		} __attribute__((packed)) params = { a.gpu_va, small.gpu_va + 1024, 64 * 512 };

		launch(&guest, &apps, "reduce_sum", 64, 256, 256 * 4, &params, 20);
	}
	{ /* histogram of b's bytes (the first 4 MiB) */
		struct {
			uint64_t data, bins;
			int32_t n;
		} __attribute__((packed)) params = { b.gpu_va, small.gpu_va + 4096, 4 << 20 };
		uint8_t zero[1024] = { 0 };

		assert_int_equal(vgpu_core_vm_write(user, small.gpu_va + 4096, zero, sizeof(zero),
		                                    NULL), 0);
		launch(&guest, &apps, "histogram", 32, 256, 0, &params, 20);
	}
	p.stop = 1;
	pthread_join(thread, NULL);

	assert_int_equal(vgpu_core_vm_read(user, c.gpu_va, z, DATA, NULL), 0);
	for (uint64_t i = 0; i < words; i++) {
		if (z[i] != x[i] + y[i])
			fail_msg("vadd: word %llu is %#x, not %#x", (unsigned long long)i, z[i],
			         x[i] + y[i]);
		expect_sum += (uint32_t)(x[i] + y[i]);
	}
	assert_int_equal(vgpu_core_vm_read(user, small.gpu_va, &sum, 8, NULL), 0);
	assert_true(sum == expect_sum);
	for (int blk = 0; blk < 64; blk++)
		for (int i = 0; i < 512; i++)
			expect_partial[blk] += x[blk * 512 + i];
	assert_int_equal(vgpu_core_vm_read(user, small.gpu_va + 1024, partial, sizeof(partial),
	                                   NULL), 0);
	for (int blk = 0; blk < 64; blk++)
		assert_int_equal(partial[blk], expect_partial[blk]);
	for (uint64_t i = 0; i < (4u << 20); i++)
		expect_bins[((const uint8_t *)y)[i]]++;
	assert_int_equal(vgpu_core_vm_read(user, small.gpu_va + 4096, bins, sizeof(bins), NULL), 0);
	for (int k = 0; k < 256; k++)
		assert_int_equal(bins[k], expect_bins[k]);

	/* The kernels ran while the user's chunks moved. */
	vgpu_core_vm_stats(user, &stats);
	printf("# %u rounds of pressure; the user VM: %llu evictions, %llu returns\n", p.rounds,
	       (unsigned long long)stats.evictions, (unsigned long long)stats.returns);
	assert_true(stats.evictions > 0 && stats.returns > 0);
	assert_int_equal(vgpu_core_module_unload(user, mod.id, NULL), 0);
	assert_int_equal(vgpu_core_module_unload(user, apps.id, NULL), 0);
	harness_guest_teardown(&guest);
	free(x);
	free(y);
	free(z);
}

/* The variables are the VM's buffer: counted in its allocation, freed at
 * unload; a module stays until the VM goes. */
static void test_variables_accounted(void **state)
{
	struct vgpu_vm *vm = harness_vm(&h, "vars", 1, 0, 0);
	struct vgpu_module_loaded m;
	struct vgpu_vm_stats before, loaded, after;
	uint32_t bias = 0;

	vgpu_core_vm_stats(vm, &before);
	load(vm, "modules.ptx", &m);
	vgpu_core_vm_stats(vm, &loaded);
	assert_true(m.variables_bytes >= 16);
	assert_true(loaded.allocated_bytes > before.allocated_bytes);
	for (uint32_t i = 0; i < m.info.variable_count; i++)
		if (!strcmp(m.info.variables[i].name, "bias"))
			assert_int_equal(vgpu_core_vm_read(vm, m.variable_va[i], &bias, 4, NULL),
			                 0);
	assert_int_equal(bias, 7);
	assert_int_equal(vgpu_core_module_unload(vm, m.id, NULL), 0);
	assert_int_equal(vgpu_core_module_unload(vm, m.id, NULL), -ENOENT);
	vgpu_core_vm_stats(vm, &after);
	assert_int_equal(after.allocated_bytes, before.allocated_bytes);
	load(vm, "modules.ptx", &m); /* left for the VM's destruction */
}

/* A refused image says why, with its line; nothing is allocated. */
static void test_refused_image(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	static const char bad[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
	                          ".visible .entry f()\n{\n\tnot.an.instruction;\n}\n";
	struct vgpu_vm *vm = harness_vm(&h, "bad", 1, 0, 0);
	struct vgpu_module_loaded m;
	struct vgpu_vm_stats stats;

	assert_int_not_equal(vgpu_core_module_load(vm, bad, sizeof(bad) - 1, "bad.ptx",
	                                           VGPU_PRIORITY_DEFAULT, &m, &error),
	                     0);
	assert_non_null(strstr(vgpu_error_msg(&error), "bad.ptx:6"));
	vgpu_core_vm_stats(vm, &stats);
	assert_int_equal(stats.allocated_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernels_under_pressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_variables_accounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_image, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
