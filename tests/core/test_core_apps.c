// SPDX-License-Identifier: MIT
/*
 * test_core_apps.c - kernels as users write them (tests/ptx/apps.cu: vector
 * add, saxpy, tiled SGEMM, 2-D stencil, block scan, a double-precision
 * kernel, a kernel with a local array and a device function call, a
 * Needleman-Wunsch wavefront, BFS over a random graph) through the core on
 * simgpu at more than twice the GPU's memory, while another VM allocates and
 * frees so that the kernels' chunks move under their feet. Each kernel runs
 * twice on the same inputs at the same GPU addresses: through the core and
 * the HAL (LAUNCH_FUNCTION in a VM's channel), and through the PTX executor
 * on plain host memory (which tests/ptx checks bit for bit against C). Every
 * output byte must match: what the page tables, eviction and the modeled
 * bus do to a kernel must never change its results.
 */
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
#include "ptx_exec.h"
#include "vgpu/abi/commands.h"

#define VRAM (32 * MiB)
#define REGIONS 32

static struct core_harness h;

/* A VM's buffers and their host copies for the flat reference. */
struct region {
	struct vgpu_buffer_info buffer;
	uint8_t *host;
};

struct app {
	struct vgpu_vm *vm;
	struct harness_guest guest;
	struct vgpu_module_loaded module;
	struct ptx_module *flat_module; /* the same image, for the reference */
	struct region regions[REGIONS];
	unsigned count;
	uint8_t *variables;             /* the reference's module variables */
};

static struct region *flat_region(struct app *a, uint64_t va, size_t n)
{
	for (unsigned i = 0; i < a->count; i++) {
		struct region *r = &a->regions[i];

		if (va >= r->buffer.gpu_va && va - r->buffer.gpu_va + n <= r->buffer.bytes)
			return r;
	}
	return NULL;
}

static int flat_read(void *ctx, uint64_t va, void *dst, size_t n)
{
	struct region *r = flat_region(ctx, va, n);

	if (!r)
		return -EFAULT;
	memcpy(dst, r->host + (va - r->buffer.gpu_va), n);
	return 0;
}

static int flat_write(void *ctx, uint64_t va, const void *src, size_t n)
{
	struct region *r = flat_region(ctx, va, n);

	if (!r)
		return -EFAULT;
	memcpy(r->host + (va - r->buffer.gpu_va), src, n);
	return 0;
}

static int flat_atomic(void *ctx, uint64_t va, const struct ptx_atomic *op, uint64_t *old)
{
	struct region *r = flat_region(ctx, va, op->size);
	uint64_t value = 0, next;

	if (!r)
		return -EFAULT;
	memcpy(&value, r->host + (va - r->buffer.gpu_va), op->size);
	*old = value;
	next = ptx_atomic_apply(op, value);
	memcpy(r->host + (va - r->buffer.gpu_va), &next, op->size);
	return 0;
}

static const struct ptx_memory_ops flat_ops = { flat_read, flat_write, flat_atomic };

static int setup(void **state)
{
	struct core_harness_config config = { .vram_bytes = VRAM, .chunk_bytes = MiB };

	core_harness_setup(&h, &config);
	return 0;
}

static void pressure_stop(void);

static int teardown(void **state)
{
	pressure_stop();
	harness_assert_invariants(&h);
	core_harness_teardown(&h);
	return 0;
}

/* A buffer of the VM holding contents[bytes] (also its reference copy). */
static uint64_t buffer(struct app *a, const void *contents, uint64_t bytes)
{
	struct region *r;

	assert_true(a->count < REGIONS);
	r = &a->regions[a->count++];
	assert_int_equal(vgpu_core_alloc(a->vm, bytes, VGPU_PRIORITY_DEFAULT, 0, &r->buffer, NULL),
	                 0);
	r->host = calloc(1, r->buffer.bytes);
	assert_non_null(r->host);
	if (contents)
		memcpy(r->host, contents, bytes);
	assert_int_equal(vgpu_core_vm_write(a->vm, r->buffer.gpu_va, r->host, r->buffer.bytes,
	                                    NULL), 0);
	return r->buffer.gpu_va;
}

static void app_open(struct app *a)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	size_t bytes;
	char *text = harness_read_file(TEST_PTX_DIR "/apps.ptx", &bytes);
	struct ptx_error err;

	memset(a, 0, sizeof(*a));
	a->vm = harness_vm(&h, "apps", 1, 0, 0);
	harness_guest_setup(&h, a->vm, &a->guest, 64, 0, 1);
	if (vgpu_core_module_load(a->vm, text, bytes, "apps.ptx", VGPU_PRIORITY_DEFAULT,
	                          &a->module, &error))
		fail_msg("apps.ptx: %s", vgpu_error_msg(&error));
	assert_int_equal(ptx_module_load(text, bytes, "apps.ptx", &a->flat_module, &err), 0);
	free(text);
	/* The reference sees the module's variables at the same addresses. */
	if (a->module.variables_bytes) {
		struct region *r = &a->regions[a->count++];

		r->buffer.gpu_va = a->module.variables_va;
		r->buffer.bytes = a->module.variables_bytes;
		r->host = calloc(1, a->module.variables_bytes);
		for (uint32_t i = 0; i < a->module.info.variable_count; i++) {
			const struct vgpu_hal_module_variable *v = &a->module.info.variables[i];

			memcpy(r->host + (a->module.variable_va[i] - a->module.variables_va), v->init,
			       v->bytes);
		}
	}
}

static void app_close(struct app *a)
{
	for (unsigned i = 0; i < a->count; i++)
		free(a->regions[i].host);
	ptx_module_free(a->flat_module);
	assert_int_equal(vgpu_core_module_unload(a->vm, a->module.id, NULL), 0);
	harness_guest_teardown(&a->guest);
}

static uint32_t function(const struct app *a, const char *name)
{
	for (uint32_t i = 0; i < a->module.info.function_count; i++)
		if (!strcmp(a->module.info.functions[i].name, name))
			return i;
	fail_msg("no function %s", name);
	return 0;
}

/* Run name both ways over grid x block with params. */
static void run(struct app *a, const char *name, struct ptx_dim3 grid, struct ptx_dim3 block,
                uint32_t shared, const void *params, uint32_t param_bytes)
{
	uint32_t f = function(a, name), words[64];
	struct vgpu_launch_dims dims = {
		{ grid.x, grid.y, grid.z }, { block.x, block.y, block.z }, shared,
	};
	struct ptx_launch launch = {
		.module = a->flat_module,
		.grid = grid,
		.block = block,
		.dynamic_shared_bytes = shared,
		.params = params,
		.param_size = param_bytes,
		.var_addresses = a->module.variable_va,
		.var_count = a->module.info.variable_count,
		.mem = &flat_ops,
		.mem_ctx = a,
	};
	struct ptx_launch_result result;
	int entry = ptx_module_find_entry(a->flat_module, name);

	assert_true(entry >= 0);
	launch.entry = (uint32_t)entry;
	assert_int_equal(a->module.info.functions[f].param_bytes, param_bytes);
	harness_guest_run(&h, &a->guest, words,
	                  vgpu_push_launch_function(words, a->module.id, f, &dims, params,
	                                            param_bytes));
	if (ptx_launch(&launch, &result))
		fail_msg("%s on the reference: %s", name, result.message);
}

/* Every region, through the core, equals its reference copy. */
static void compare(struct app *a, const char *what)
{
	for (unsigned i = 0; i < a->count; i++) {
		struct region *r = &a->regions[i];
		uint8_t *got = malloc(r->buffer.bytes);

		assert_non_null(got);
		assert_int_equal(vgpu_core_vm_read(a->vm, r->buffer.gpu_va, got, r->buffer.bytes,
		                                   NULL), 0);
		for (uint64_t k = 0; k < r->buffer.bytes; k++)
			if (got[k] != r->host[k])
				fail_msg("%s: region %u differs at byte %llu (%#x, reference %#x)", what,
				         i, (unsigned long long)k, got[k], r->host[k]);
		free(got);
	}
}

/* The other VM's pressure, on a thread; stopped by the teardown too, so a
 * failed check does not leave it running on a dead test. */
static struct pressure {
	struct vgpu_vm *vm;
	volatile int stop;
	pthread_t thread;
	bool running;
} pressure;

static void pressure_stop(void)
{
	if (!pressure.running)
		return;
	pressure.stop = 1;
	pthread_join(pressure.thread, NULL);
	pressure.running = false;
}

static void *press(void *arg)
{
	struct pressure *p = arg;
	struct vgpu_buffer_info b;

	while (!p->stop) {
		if (vgpu_core_alloc(p->vm, 24 * MiB, VGPU_PRIORITY_DEFAULT, 0, &b, NULL) == 0) {
			harness_sleep_ms(1);
			vgpu_core_free(p->vm, b.handle, NULL);
		}
		vgpu_core_return_pass(h.core, NULL);
	}
	return NULL;
}

static float *floats(size_t n, uint64_t seed)
{
	float *v = malloc(n * sizeof(*v));
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v[i] = (float)(int32_t)(s % 20001 - 10000) / 977.0f;
	}
	return v;
}

static void test_apps_under_pressure(void **state)
{
	struct vgpu_vm *other = harness_vm(&h, "other", 1, 0, 0);
	struct vgpu_vm_stats stats;
	struct app a;

	app_open(&a);
	/* 8 MiB of filler so that the VM alone holds more than VRAM later */
	assert_int_equal(vgpu_core_alloc(a.vm, 8 * MiB, VGPU_PRIORITY_DEFAULT, 0,
	                                 &(struct vgpu_buffer_info){ 0 }, NULL),
	                 0);
	pressure = (struct pressure){ .vm = other };
	assert_int_equal(pthread_create(&pressure.thread, NULL, press, &pressure), 0);
	pressure.running = true;
	{ /* vector_add and saxpy over 1 Mi floats */
		const int n = 1 << 20;
		float *x = floats((size_t)n, 1), *y = floats((size_t)n, 2);
		uint64_t xa = buffer(&a, x, (uint64_t)n * 4), ya = buffer(&a, y, (uint64_t)n * 4);
		uint64_t za = buffer(&a, NULL, (uint64_t)n * 4);
		struct {
			uint64_t a, b, c;
			int32_t n;
		} __attribute__((packed)) add = { xa, ya, za, n };
		struct {
			int32_t n;
			float alpha;
			uint64_t x, y;
		} axpy = { n, 1.5f, xa, ya };

		run(&a, "vector_add", (struct ptx_dim3){ (uint32_t)n / 256, 1, 1 },
		    (struct ptx_dim3){ 256, 1, 1 }, 0, &add, 28);
		run(&a, "saxpy", (struct ptx_dim3){ 256, 1, 1 }, (struct ptx_dim3){ 256, 1, 1 }, 0,
		    &axpy, 24);
		compare(&a, "vector_add, saxpy");
		free(x);
		free(y);
	}
	{ /* tiled SGEMM 192 x 160 x 128, a 2-D stencil 300 x 200 */
		const int m = 192, n = 160, k = 128, w = 300, hh = 200;
		float *A = floats((size_t)m * k, 3), *B = floats((size_t)k * n, 4);
		float *img = floats((size_t)w * hh, 5);
		uint64_t Aa = buffer(&a, A, (uint64_t)m * k * 4), Ba = buffer(&a, B, (uint64_t)k * n * 4);
		uint64_t Ca = buffer(&a, NULL, (uint64_t)m * n * 4);
		struct {
			uint64_t A, B, C;
			int32_t M, N, K;
		} __attribute__((packed)) gemm = { Aa, Ba, Ca, m, n, k };

		run(&a, "sgemm_tiled", (struct ptx_dim3){ (uint32_t)n / 16, (uint32_t)m / 16, 1 },
		    (struct ptx_dim3){ 16, 16, 1 }, 0, &gemm, 36);
		compare(&a, "sgemm_tiled");
		{
			uint64_t in = buffer(&a, img, (uint64_t)w * hh * 4);
			uint64_t out = buffer(&a, NULL, (uint64_t)w * hh * 4);
			struct {
				uint64_t in, out;
				int32_t w, h;
			} st = { in, out, w, hh };

			run(&a, "stencil2d", (struct ptx_dim3){ (w + 15) / 16, (hh + 15) / 16, 1 },
			    (struct ptx_dim3){ 16, 16, 1 }, 0, &st, 24);
		}
		compare(&a, "stencil2d");
		free(A);
		free(B);
		free(img);
	}
	{ /* block scan, double precision, a local array with a call */
		const int n = 1 << 16;
		int32_t *ints = malloc((size_t)n * 4);
		double *dx = malloc((size_t)n * 8), *dy = malloc((size_t)n * 8);
		float *in = floats((size_t)n, 6);

		for (int i = 0; i < n; i++) {
			ints[i] = (i * 7919) % 1000 - 500;
			dx[i] = (double)i / 3.0;
			dy[i] = 1.0 / (double)(i + 1);
		}
		{
			uint64_t si = buffer(&a, ints, (uint64_t)n * 4), so = buffer(&a, NULL, (uint64_t)n * 4);
			struct {
				uint64_t in, out;
				int32_t n;
			} __attribute__((packed)) sc = { si, so, n };

			run(&a, "scan_block", (struct ptx_dim3){ (uint32_t)n / 256, 1, 1 },
			    (struct ptx_dim3){ 256, 1, 1 }, 0, &sc, 20);
		}
		{
			uint64_t x = buffer(&a, dx, (uint64_t)n * 8), y = buffer(&a, dy, (uint64_t)n * 8);
			uint64_t dot = buffer(&a, NULL, (uint64_t)n * 8);
			struct {
				int32_t n, pad;
				double alpha;
				uint64_t x, y, dot;
			} dd = { n, 0, 0.75, x, y, dot };

			run(&a, "daxpy_dot", (struct ptx_dim3){ (uint32_t)n / 256, 1, 1 },
			    (struct ptx_dim3){ 256, 1, 1 }, 0, &dd, 40);
		}
		{
			uint64_t li = buffer(&a, in, (uint64_t)n * 4), lo = buffer(&a, NULL, (uint64_t)n * 4);
			struct {
				uint64_t in, out;
				int32_t n;
			} __attribute__((packed)) lc = { li, lo, n };

			run(&a, "local_call", (struct ptx_dim3){ (uint32_t)n / 128, 1, 1 },
			    (struct ptx_dim3){ 128, 1, 1 }, 0, &lc, 20);
		}
		compare(&a, "scan_block, daxpy_dot, local_call");
		free(ints);
		free(dx);
		free(dy);
		free(in);
	}
	pressure_stop();
	vgpu_core_vm_stats(a.vm, &stats);
	printf("# the apps VM: %llu evictions, %llu returns while its kernels ran\n",
	       (unsigned long long)stats.evictions, (unsigned long long)stats.returns);
	assert_true(stats.evictions > 0);
	app_close(&a);
}

/* Iterative kernels: a Needleman-Wunsch wavefront, one launch per
 * anti-diagonal, and BFS levels until nothing changes, through the core
 * with the VM's memory evicted part of the time. */
static void test_iterative_apps(void **state)
{
	struct vgpu_vm *other = harness_vm(&h, "other", 1, 0, 0);
	struct app a;
	const int dim = 96, nodes = 4096, degree = 6;

	app_open(&a);
	pressure = (struct pressure){ .vm = other };
	assert_int_equal(pthread_create(&pressure.thread, NULL, press, &pressure), 0);
	pressure.running = true;
	{
		int32_t *score = calloc((size_t)dim * dim, 4), *sim = malloc((size_t)dim * dim * 4);

		for (int i = 0; i < dim; i++) {
			score[i] = -i;
			score[i * dim] = -i;
		}
		for (int i = 0; i < dim * dim; i++)
			sim[i] = (i * 31) % 11 - 5;
		{
			uint64_t sc = buffer(&a, score, (uint64_t)dim * dim * 4);
			uint64_t si = buffer(&a, sim, (uint64_t)dim * dim * 4);

			for (int diag = 2; diag < 2 * dim - 1; diag++) {
				struct {
					uint64_t score, sim;
					int32_t dim, diag, penalty;
				} __attribute__((packed)) nw = { sc, si, dim, diag, 2 };

				run(&a, "nw_diagonal", (struct ptx_dim3){ 1, 1, 1 },
				    (struct ptx_dim3){ 128, 1, 1 }, 0, &nw, 28);
			}
		}
		compare(&a, "nw_diagonal");
		free(score);
		free(sim);
	}
	{
		int32_t *row = malloc((size_t)(nodes + 1) * 4), *col = malloc((size_t)nodes * degree * 4);
		int32_t *dist = malloc((size_t)nodes * 4), changed = 1;
		uint64_t s = 12345;

		for (int v = 0; v <= nodes; v++)
			row[v] = v * degree;
		for (int e = 0; e < nodes * degree; e++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			col[e] = (int32_t)((s >> 33) % (uint64_t)nodes);
		}
		for (int v = 0; v < nodes; v++)
			dist[v] = v ? -1 : 0;
		{
			uint64_t ra = buffer(&a, row, (uint64_t)(nodes + 1) * 4);
			uint64_t ca = buffer(&a, col, (uint64_t)nodes * degree * 4);
			uint64_t da = buffer(&a, dist, (uint64_t)nodes * 4);
			uint64_t ch = buffer(&a, &changed, 4);

			for (int level = 0; level < 64; level++) {
				struct {
					uint64_t row, col, dist;
					int32_t level, pad;
					uint64_t changed;
					int32_t n;
				} __attribute__((packed)) bfs = { ra, ca, da, level, 0, ch, nodes };
				int32_t zero = 0, flag = 0;

				/* both sides clear the flag, run a level, read the flag */
				assert_int_equal(vgpu_core_vm_write(a.vm, ch, &zero, 4, NULL), 0);
				memcpy(a.regions[a.count - 1].host, &zero, 4);
				run(&a, "bfs_level", (struct ptx_dim3){ (uint32_t)nodes / 128, 1, 1 },
				    (struct ptx_dim3){ 128, 1, 1 }, 0, &bfs, 44);
				assert_int_equal(vgpu_core_vm_read(a.vm, ch, &flag, 4, NULL), 0);
				if (!flag)
					break;
			}
		}
		compare(&a, "bfs_level");
		free(row);
		free(col);
		free(dist);
	}
	pressure_stop();
	app_close(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_apps_under_pressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iterative_apps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
