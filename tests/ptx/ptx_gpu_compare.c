// SPDX-License-Identifier: MIT
/*
 * ptx_gpu_compare.c - the corpus on a real NVIDIA GPU against the PTX
 * executor: each case loads the committed PTX through the CUDA driver
 * (libcuda.so.1, opened at run time) and through ptx_module_load, feeds both
 * the same generated inputs (random values mixed with zeros, infinities,
 * NaNs, subnormals and extreme integers), and compares every output byte
 * for byte (.approx outputs within a relative tolerance).
 *
 * Usage: ptx-gpu-compare [--executor-only] [corpus-dir]. Exit 0: identical;
 * 1: a difference (each printed); 77: no CUDA driver or GPU (skipped, not
 * passed). --executor-only runs the executor's side alone (a dry run).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_env.h"

/* ---- the few driver entry points used, declared here (no cuda.h) ---- */

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction;
typedef unsigned long long CUdeviceptr;

static struct {
	CUresult (*init)(unsigned);
	CUresult (*device_get)(int *, int);
	CUresult (*primary_retain)(CUcontext *, int);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*module_load)(CUmodule *, const void *, unsigned, void *, void **);
	CUresult (*module_unload)(CUmodule);
	CUresult (*get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, unsigned, void *, void **, void **);
	CUresult (*sync)(void);
	CUresult (*set_attr)(CUfunction, int, int);
} cu;

static int cuda_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -1;
#define SYM(field, name) \
	if (!(*(void **)&cu.field = dlsym(lib, name))) \
		return -1;
	SYM(init, "cuInit")
	SYM(device_get, "cuDeviceGet")
	SYM(primary_retain, "cuDevicePrimaryCtxRetain")
	SYM(ctx_set, "cuCtxSetCurrent")
	SYM(module_load, "cuModuleLoadDataEx")
	SYM(module_unload, "cuModuleUnload")
	SYM(get_function, "cuModuleGetFunction")
	SYM(mem_alloc, "cuMemAlloc_v2")
	SYM(mem_free, "cuMemFree_v2")
	SYM(htod, "cuMemcpyHtoD_v2")
	SYM(dtoh, "cuMemcpyDtoH_v2")
	SYM(launch, "cuLaunchKernel")
	SYM(sync, "cuCtxSynchronize")
	SYM(set_attr, "cuFuncSetAttribute")
#undef SYM
	int dev;
	CUcontext ctx;
	if (cu.init(0) || cu.device_get(&dev, 0) || cu.primary_retain(&ctx, dev) ||
	    cu.ctx_set(ctx))
		return -1;
	return 0;
}

/* ---- cases ---- */

enum arg_kind { A_END, I32, I64, U8, F32, F64, I32R, OUT, SI32, SF32, SF64, SBYTES };

struct arg {
	enum arg_kind kind;
	uint32_t count;     /* elements (OUT: bytes per element) */
	int64_t lo, hi;     /* I32R range; scalar value in lo; OUT element bytes in lo */
	double f;           /* SF32/SF64 value */
};

struct gcase {
	const char *file, *entry;
	struct ptx_dim3 grid, block;
	uint32_t dyn;
	double tolerance;   /* 0: bit for bit */
	struct arg args[8];
};

#define G(x) ((struct ptx_dim3){ (x), 1, 1 })
#define OUTB(n, bytes) { OUT, (n), (bytes), 0, 0 }
#define IN(k, n) { k, (n), 0, 0, 0 }
#define RANGE(n, lo, hi) { I32R, (n), (lo), (hi), 0 }
#define S32(v) { SI32, 1, (v), 0, 0 }

static const struct gcase cases[] = {
	{ "int_arith", "int32_ops", G(4), G(64), 0, 0,
	  { IN(I32, 256), IN(I32, 256), OUTB(256 * 24, 4), S32(256) } },
	{ "int_arith", "int64_ops", G(4), G(64), 0, 0,
	  { IN(I64, 256), IN(I64, 256), OUTB(256 * 12, 8), S32(256) } },
	{ "int_arith", "small_ints", G(4), G(64), 0, 0,
	  { IN(I32, 256), OUTB(256, 2), OUTB(256, 1), S32(256) } },
	{ "int128", "int128_ops", G(4), G(64), 0, 0,
	  { IN(I64, 512), IN(I64, 512), OUTB(256 * 4, 16), S32(256) } },
	{ "builtins", "checked_square", G(2), G(32), 0, 0, { OUTB(64, 4), S32(64) } },
	{ "f32_arith", "f32_ops", G(8), G(128), 0, 0,
	  { IN(F32, 1024), IN(F32, 1024), IN(F32, 1024), OUTB(1024 * 28, 4), S32(1024) } },
	{ "f32_arith", "f32_default", G(8), G(128), 0, 0,
	  { IN(F32, 1024), IN(F32, 1024), OUTB(1024, 4), S32(1024) } },
	{ "f32_ftz", "f32_ftz", G(8), G(128), 0, 0,
	  { IN(F32, 1024), IN(F32, 1024), OUTB(1024 * 6, 4), S32(1024) } },
	{ "f64_arith", "f64_ops", G(8), G(128), 0, 0,
	  { IN(F64, 1024), IN(F64, 1024), IN(F64, 1024), OUTB(1024 * 20, 8), S32(1024) } },
	{ "convert", "cvt_f2i", G(8), G(128), 0, 0,
	  { IN(F32, 1024), IN(F64, 1024), OUTB(1024 * 12, 4), OUTB(1024 * 4, 8), S32(1024) } },
	{ "convert", "cvt_i2f", G(8), G(128), 0, 0,
	  { IN(I32, 1024), IN(I64, 1024), OUTB(1024 * 12, 4), OUTB(1024 * 4, 8), S32(1024) } },
	{ "control", "diverge", G(5), G(64), 0, 0,
	  { RANGE(320, 0, 1000), OUTB(320, 4), S32(300) } },
	{ "control", "early_exit", G(5), G(64), 0, 0, { OUTB(320, 4), S32(300) } },
	{ "spaces", "spaces", G(2), G(64), 256, 0,
	  { IN(F32, 512), OUTB(128, 16), OUTB(128, 8), { SBYTES, 16, 0, 0, 0 }, S32(100) } },
	{ "warp", "warp_ops", G(4), G(64), 0, 0,
	  { RANGE(256, -3000, 2000), OUTB(256 * 10, 4), S32(256) } },
	{ "calls", "calls", G(3), G(32), 0, 0,
	  { RANGE(96, 0, 40), OUTB(96 * 3, 4), S32(96) } },
	{ "calls", "recurse", G(1), G(64), 0, 0, { OUTB(64, 4), S32(25) } },
	{ "approx", "approx", G(4), G(64), 0, 1e-5,
	  { RANGE(256, -3, 3), OUTB(256 * 7, 4), S32(256) } },
	{ "sync_misc", "block_votes", G(4), G(128), 0, 0,
	  { RANGE(512, -100, 1000), OUTB(512 * 3, 4) } },
	{ "sync_misc", "warp_reduce", G(4), G(128), 0, 0,
	  { IN(I32, 512), OUTB(512 * 6, 4) } },
	{ "sync_misc", "halves", G(4), G(128), 0, 0,
	  { IN(F32, 512), IN(F64, 512), OUTB(512 * 5, 2), OUTB(512, 4), S32(512) } },
	{ "apps", "vector_add", G(40), G(256), 0, 0,
	  { IN(F32, 10240), IN(F32, 10240), OUTB(10240, 4), S32(10000) } },
	{ "apps", "saxpy", G(8), G(128), 0, 0,
	  { S32(10000), { SF32, 1, 0, 0, 1.75 }, IN(F32, 10000), IN(F32, 10000) } },
	{ "apps", "reduce_sum", G(20), G(256), 1024, 0,
	  { RANGE(10240, -500, 500), OUTB(20, 4), S32(10240) } },
	{ "apps", "sgemm_tiled", { 3, 4, 1 }, { 16, 16, 1 }, 0, 0,
	  { IN(F32, 50 * 70), IN(F32, 70 * 40), OUTB(50 * 40, 4), S32(50), S32(40), S32(70) } },
	{ "apps", "stencil2d", { 5, 6, 1 }, { 16, 8, 1 }, 0, 0,
	  { IN(F32, 70 * 45), OUTB(70 * 45, 4), S32(70), S32(45) } },
	{ "apps", "histogram", G(16), G(256), 0, 0, { IN(U8, 100000), OUTB(256, 4), S32(100000) } },
	{ "apps", "scan_block", G(4), G(256), 0, 0,
	  { RANGE(1024, 0, 100), OUTB(1024, 4), S32(1000) } },
	{ "apps", "daxpy_dot", G(24), G(128), 0, 0,
	  { S32(3000), { SF64, 1, 0, 0, -0.3 }, IN(F64, 3072), IN(F64, 3072), OUTB(3072, 8) } },
	{ "apps", "local_call", G(8), G(64), 0, 0, { IN(F32, 512), OUTB(512, 4), S32(500) } },
	{ "bench_kernels", "compute_bound", G(8), G(256), 0, 0, { OUTB(2048, 4), S32(100) } },
};

static uint64_t rng;
static bool have_gpu;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(const struct arg *a, uint8_t *p)
{
	static const uint32_t f32s[] = { 0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
					 0x00000001, 0x807fffff, 0x3f800000, 0x7f7fffff, 0x4b000001 };
	static const uint64_t f64s[] = { 0, 0x8000000000000000ull, 0x7ff0000000000000ull,
					 0x7ff8000000000000ull, 1, 0x3ff0000000000000ull,
					 0x7fefffffffffffffull, 0x4330000000000001ull };
	static const int64_t ints[] = { 0, 1, -1, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX, 7 };
	for (uint32_t i = 0; i < a->count; i++) {
		uint64_t r = rnd();
		bool special = (r & 7) == 0;
		switch (a->kind) {
		case I32: {
			int32_t v = special ? (int32_t)ints[(r >> 8) % 8] : (int32_t)(rnd() >> (r & 31));
			memcpy(p + 4 * i, &v, 4);
			break;
		}
		case I64: {
			int64_t v = special ? ints[(r >> 8) % 8] : (int64_t)(rnd() >> (r & 63));
			memcpy(p + 8 * i, &v, 8);
			break;
		}
		case U8:
			p[i] = (uint8_t)(r >> 11);
			break;
		case I32R: {
			int32_t v = (int32_t)(a->lo + (int64_t)((r >> 8) % (uint64_t)(a->hi - a->lo)));
			memcpy(p + 4 * i, &v, 4);
			break;
		}
		case F32: {
			uint32_t b;
			if (special) {
				b = f32s[(r >> 8) % 10];
			} else {
				float f = (float)((int64_t)rnd() >> 40) / (float)(1 << ((r >> 8) % 24));
				memcpy(&b, &f, 4);
			}
			memcpy(p + 4 * i, &b, 4);
			break;
		}
		case F64: {
			uint64_t b;
			if (special) {
				b = f64s[(r >> 8) % 8];
			} else {
				double f = (double)((int64_t)rnd() >> 11) / ldexp(1.0, (int)((r >> 8) % 60));
				memcpy(&b, &f, 8);
			}
			memcpy(p + 8 * i, &b, 8);
			break;
		}
		default:
			break;
		}
	}
}

static size_t elem_bytes(const struct arg *a)
{
	switch (a->kind) {
	case I32: case I32R: case F32: return 4;
	case I64: case F64: return 8;
	case U8: return 1;
	case OUT: return (size_t)a->lo;
	default: return 0;
	}
}

static char *read_text(const char *dir, const char *file)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.ptx", dir, file);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *t = malloc((size_t)n + 1);
	if (!t || fread(t, 1, (size_t)n, f) != (size_t)n)
		abort();
	t[n] = '\0';
	fclose(f);
	return t;
}

static int compare(const struct gcase *c, int k, const uint8_t *emu, const uint8_t *gpu,
		   size_t bytes, size_t esize)
{
	int bad = 0;
	for (size_t i = 0; i < bytes; i += esize) {
		if (!memcmp(emu + i, gpu + i, esize))
			continue;
		if (c->tolerance > 0 && esize == 4) {
			float x, y;
			memcpy(&x, emu + i, 4);
			memcpy(&y, gpu + i, 4);
			if (fabsf(x - y) <= c->tolerance * (fabsf(y) > 1 ? fabsf(y) : 1))
				continue;
		}
		if (bad++ < 5) {
			uint64_t x = 0, y = 0;
			memcpy(&x, emu + i, esize > 8 ? 8 : esize);
			memcpy(&y, gpu + i, esize > 8 ? 8 : esize);
			printf("  %s/%s arg %d element %zu: executor 0x%llx, gpu 0x%llx\n",
			       c->file, c->entry, k, i / esize, (unsigned long long)x,
			       (unsigned long long)y);
		}
	}
	return bad;
}

static int run_case(const char *dir, const struct gcase *c)
{
	char *text = read_text(dir, c->file);
	if (!text) {
		printf("FAIL %s: cannot read %s/%s.ptx\n", c->entry, dir, c->file);
		return 1;
	}
	struct flat_env env;
	flat_init(&env, 64u << 20);
	struct ptx_error err;
	if (flat_load_text(&env, text, c->file, &err)) {
		printf("FAIL %s: %s\n", c->entry, err.message);
		free(text);
		flat_fini(&env);
		return 1;
	}
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	if (have_gpu && (cu.module_load(&mod, text, 0, NULL, NULL) || cu.get_function(&fn, mod, c->entry))) {
		printf("FAIL %s: the driver does not load it\n", c->entry);
		free(text);
		flat_fini(&env);
		return 1;
	}
	free(text);
	int idx = ptx_module_find_entry(env.module, c->entry);
	const struct ptx_entry_info *e = ptx_module_entry(env.module, (size_t)idx);
	uint8_t params[4096], gparams[4096];
	memset(params, 0, sizeof(params));
	memset(gparams, 0, sizeof(gparams));
	uint8_t *host[8] = { 0 };
	uint64_t va[8] = { 0 };
	CUdeviceptr dptr[8] = { 0 };
	size_t bytes[8] = { 0 };
	int bad = 0;
	rng = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)c;
	for (int k = 0; k < 8 && c->args[k].kind != A_END; k++) {
		const struct arg *a = &c->args[k];
		uint32_t off = e->params[k].offset, size = e->params[k].size;
		if (a->kind == SI32) {
			int32_t v = (int32_t)a->lo;
			memcpy(params + off, &v, 4);
			memcpy(gparams + off, &v, 4);
			continue;
		}
		if (a->kind == SF32 || a->kind == SF64 || a->kind == SBYTES) {
			uint8_t tmp[16] = { 0 };
			if (a->kind == SF32) {
				float f = (float)a->f;
				memcpy(tmp, &f, 4);
			} else if (a->kind == SF64) {
				memcpy(tmp, &a->f, 8);
			} else {
				const int32_t s = 3;
				const float bias = 0.5f;
				const double d = 2.75;
				memcpy(tmp, &s, 4);
				memcpy(tmp + 4, &bias, 4);
				memcpy(tmp + 8, &d, 8);
			}
			memcpy(params + off, tmp, size);
			memcpy(gparams + off, tmp, size);
			continue;
		}
		bytes[k] = (size_t)a->count * elem_bytes(a);
		host[k] = calloc(1, bytes[k]);
		fill(a, host[k]);
		va[k] = flat_copy_in(&env, host[k], bytes[k]);
		if (have_gpu && (cu.mem_alloc(&dptr[k], bytes[k]) ||
				 cu.htod(dptr[k], host[k], bytes[k]))) {
			printf("FAIL %s: device memory\n", c->entry);
			return 1;
		}
		memcpy(params + off, &va[k], 8);
		memcpy(gparams + off, &dptr[k], 8);
	}
	size_t psize = e->param_bytes;
	void *extra[] = { (void *)1, gparams, (void *)2, &psize, (void *)0 };
	const void *args[8];
	for (int k = 0; k < 8; k++)
		args[k] = params + (k < (int)e->param_count ? e->params[k].offset : 0);
	env.host_threads = 2;
	if (flat_run(&env, c->entry, c->grid, c->block, c->dyn, args)) {
		printf("FAIL %s: executor: %s\n", c->entry, env.result.message);
		bad++;
	}
	if (!have_gpu) {
		for (int k = 0; k < 8; k++)
			free(host[k]);
		flat_fini(&env);
		printf("%s %s/%s (executor only)\n", bad ? "FAIL" : "ran", c->file, c->entry);
		return bad != 0;
	}
	CUresult r = cu.launch(fn, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
			       c->block.z, c->dyn, NULL, NULL, extra);
	if (r || (r = cu.sync())) {
		printf("FAIL %s: gpu launch error %d\n", c->entry, r);
		bad++;
	}
	for (int k = 0; k < 8 && !bad; k++) {
		if (!host[k])
			continue;
		uint8_t *g = malloc(bytes[k]);
		cu.dtoh(g, dptr[k], bytes[k]);
		bad += compare(c, k, flat_ptr(&env, va[k]), g, bytes[k], elem_bytes(&c->args[k]));
		free(g);
	}
	for (int k = 0; k < 8; k++) {
		free(host[k]);
		if (dptr[k])
			cu.mem_free(dptr[k]);
	}
	cu.module_unload(mod);
	flat_fini(&env);
	printf("%s %s/%s\n", bad ? "DIFF" : "same", c->file, c->entry);
	return bad != 0;
}

int main(int argc, char **argv)
{
	bool dry = argc > 1 && !strcmp(argv[1], "--executor-only");
	const char *dir = argc > 1 + dry ? argv[1 + dry] : PTX_CORPUS_DIR;
	have_gpu = !dry && !cuda_open();
	if (!dry && !have_gpu) {
		printf("SKIP: no CUDA driver or GPU; the corpus is not compared with a GPU\n");
		return 77;
	}
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		failed += run_case(dir, &cases[i]);
	printf("%d of %zu cases differ\n", failed, sizeof(cases) / sizeof(cases[0]));
	return failed ? 1 : 0;
}
