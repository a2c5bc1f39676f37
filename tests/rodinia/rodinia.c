// SPDX-License-Identifier: MIT
/*
 * rodinia.c - the Rodinia programs' shared helpers (rodinia.h).
 */
#define _GNU_SOURCE
#include "rodinia.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef RODINIA_KERNEL_DIR
#define RODINIA_KERNEL_DIR "kernels"
#endif

static const char *prog_name = "rodinia";

static const char *error_text(CUresult result)
{
	static char text[256];
	const char *name = NULL, *desc = NULL;

	if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUresult";
	if (cuGetErrorString(result, &desc) != CUDA_SUCCESS || !desc)
		desc = "no description";
	snprintf(text, sizeof(text), "%s (%d: %s)", name, (int)result, desc);
	return text;
}

void rodinia_check(CUresult result, const char *call)
{
	if (result == CUDA_SUCCESS)
		return;
	fprintf(stderr, "%s: %s failed: %s\n", prog_name, call, error_text(result));
	exit(RODINIA_FAILED);
}

static void vsay(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rodinia_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(RODINIA_FAILED);
}

void rodinia_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(RODINIA_USAGE);
}

double rodinia_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Host buffers, freed together by rodinia_finish. */
static void **host_buffers;
static size_t host_count, host_room;

void *rodinia_malloc(size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);

	if (!p)
		rodinia_die("out of host memory (%zu bytes)", bytes);
	if (host_count == host_room) {
		size_t room = host_room ? 2 * host_room : 32;
		void **more = realloc(host_buffers, room * sizeof(*more));

		if (!more)
			rodinia_die("out of host memory");
		host_buffers = more;
		host_room = room;
	}
	host_buffers[host_count++] = p;
	return p;
}

static void free_host_buffers(void)
{
	for (size_t i = 0; i < host_count; i++)
		free(host_buffers[i]);
	free(host_buffers);
	host_buffers = NULL;
	host_count = host_room = 0;
}

static size_t parse_size(const char *text)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text)
		rodinia_die("bad size '%s': a number with an optional K, M or G", text);
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end || !v)
		rodinia_die("bad size '%s': a number with an optional K, M or G", text);
	return (size_t)v;
}

static void usage(const char *name, size_t default_bytes, int status)
{
	printf("usage: %s [--repeat N] [--seed S] [SIZE]\n"
	       "Runs %s on CUDA device 0 over about SIZE bytes of GPU memory (K, M, G\n"
	       "suffixes; default %zu), N times (default 100: the thesis's repetition\n"
	       "loop), and checks every result against the CPU. $RODINIA_KERNELS is\n"
	       "where the PTX is. Exit 0 correct, 1 a CUDA error or a wrong result,\n"
	       "2 usage. The last line: runtime_ms=.. kernel_ms=.. repeat=.. bytes=..\n",
	       name, name, default_bytes);
	exit(status);
}

static unsigned long long parse_number(const char *opt, const char *text,
                                       unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text ? text : "", &end, 0);
	if (!text || errno || end == text || *end || v > max)
		rodinia_die("bad %s '%s' (at most %llu)", opt, text ? text : "", max);
	return v;
}

void rodinia_start(struct rodinia *r, const char *name, const char *ptx, int argc, char **argv,
                   size_t default_bytes)
{
	const char *dir = getenv("RODINIA_KERNELS");
	char path[4096];
	FILE *f;
	char *image;
	long size;
	CUcontext ctx;
	uint64_t seed = 1;
	const char *size_arg = NULL;

	memset(r, 0, sizeof(*r));
	prog_name = r->name = name;
	r->repeat = 100;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			usage(name, default_bytes, RODINIA_OK);
		else if (!strcmp(argv[i], "--repeat"))
			r->repeat = (unsigned)parse_number("--repeat", i + 1 < argc ? argv[++i] : NULL,
			                                  1000000);
		else if (!strcmp(argv[i], "--seed"))
			seed = parse_number("--seed", i + 1 < argc ? argv[++i] : NULL, UINT64_MAX);
		else if (argv[i][0] == '-' || size_arg)
			usage(name, default_bytes, RODINIA_USAGE);
		else
			size_arg = argv[i];
	}
	if (!r->repeat)
		rodinia_die("--repeat must be at least 1");
	r->rng = seed ? seed : 1;
	r->bytes = size_arg ? parse_size(size_arg) : default_bytes;

	if (!dir || !*dir)
		dir = RODINIA_KERNEL_DIR;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, ptx) >= sizeof(path))
		rodinia_die("kernel path too long: %s/%s", dir, ptx);
	f = fopen(path, "rb");
	if (!f)
		rodinia_die("cannot open %s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		rodinia_die("cannot size %s", path);
	image = malloc((size_t)size + 1);
	if (!image)
		rodinia_die("out of host memory (%ld bytes)", size + 1);
	if (fread(image, 1, (size_t)size, f) != (size_t)size)
		rodinia_die("cannot read %s", path);
	fclose(f);
	image[size] = '\0'; /* PTX images are NUL-terminated text */

	CK(cuInit(0));
	CK(cuDeviceGet(&r->dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, r->dev));
	CK(cuCtxSetCurrent(ctx));
	r->start_ms = rodinia_now_ms();
	CK(cuModuleLoadData(&r->module, image));
	free(image);
}

CUfunction rodinia_function(struct rodinia *r, const char *name)
{
	CUfunction fn;
	CUresult res = cuModuleGetFunction(&fn, r->module, name);

	if (res != CUDA_SUCCESS)
		rodinia_fail("the module has no function %s: %s", name, error_text(res));
	return fn;
}

typedef CUresult (*alloc_prio_fn)(CUdeviceptr *, size_t, unsigned int);

CUdeviceptr rodinia_alloc(size_t bytes, unsigned priority)
{
	static alloc_prio_fn alloc_prio;
	static int looked;
	CUdeviceptr p;

	if (!looked) {
		/* The project's libcuda has it; NVIDIA's does not. */
		*(void **)&alloc_prio = dlsym(RTLD_DEFAULT, "vgpuMemAllocWithPriority");
		looked = 1;
	}
	if (alloc_prio)
		CK(alloc_prio(&p, bytes, priority));
	else
		CK(cuMemAlloc(&p, bytes));
	return p;
}

void rodinia_kernels_begin(struct rodinia *r)
{
	r->kernel_begin = rodinia_now_ms();
}

void rodinia_kernels_end(struct rodinia *r)
{
	CK(cuCtxSynchronize());
	r->kernel_ms += rodinia_now_ms() - r->kernel_begin;
}

int rodinia_finish(struct rodinia *r, const char *summary)
{
	double runtime;

	CK(cuCtxSynchronize());
	CK(cuModuleUnload(r->module));
	runtime = rodinia_now_ms() - r->start_ms;
	CK(cuDevicePrimaryCtxRelease(r->dev));
	printf("%s: ok (%s)\n", r->name, summary);
	printf("runtime_ms=%.3f kernel_ms=%.3f repeat=%u bytes=%zu\n", runtime, r->kernel_ms,
	       r->repeat, r->bytes);
	free_host_buffers();
	fflush(stdout);
	return RODINIA_OK;
}

uint32_t rodinia_rand(struct rodinia *r)
{
	uint64_t x = r->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->rng = x;
	return (uint32_t)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 32);
}

float rodinia_randf(struct rodinia *r)
{
	return (float)(rodinia_rand(r) >> 8) * (1.0f / 16777216.0f);
}

void rodinia_check_floats(const char *what, const float *got, const float *want, size_t n,
                          float rel_tol, float abs_tol)
{
	for (size_t i = 0; i < n; i++) {
		float g = got[i], w = want[i];

		if (!isfinite(w) || !isfinite(g)) {
			if (memcmp(&g, &w, sizeof(g)))
				rodinia_fail("%s[%zu] = %.9g, expected %.9g", what, i, g, w);
			continue;
		}
		if (fabsf(g - w) > abs_tol + rel_tol * fabsf(w))
			rodinia_fail("%s[%zu] = %.9g, expected %.9g (tolerance %g + %g relative)",
			             what, i, g, w, abs_tol, rel_tol);
	}
}
