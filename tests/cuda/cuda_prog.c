// SPDX-License-Identifier: MIT
/*
 * cuda_prog.c - the CUDA programs' shared helpers (cuda_prog.h).
 */
#include "cuda_prog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CUDA_PROG_KERNEL_DIR
#define CUDA_PROG_KERNEL_DIR "kernels"
#endif

static const char *prog_name = "cuda-program";

const char *cuda_prog_error(CUresult result)
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

void cuda_prog_check(CUresult result, const char *call)
{
	if (result == CUDA_SUCCESS)
		return;
	fprintf(stderr, "%s: %s failed: %s\n", prog_name, call, cuda_prog_error(result));
	exit(CUDA_PROG_FAILED);
}

void cuda_prog_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(CUDA_PROG_FAILED);
}

void cuda_prog_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(CUDA_PROG_USAGE);
}

static size_t parse_size(const char *text, const char *where)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text)
		cuda_prog_die("bad size '%s' (%s): a number with an optional K, M or G", text, where);
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end || !v)
		cuda_prog_die("bad size '%s' (%s): a number with an optional K, M or G", text, where);
	return (size_t)v;
}

void cuda_prog_start(const char *name, int argc, char **argv, size_t default_bytes,
                     size_t *bytes, CUdevice *dev)
{
	const char *env = getenv("CUDA_PROG_BYTES");
	CUcontext ctx;

	prog_name = name;
	if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
		printf("usage: %s [BYTES]\n"
		       "Runs its kernels on CUDA device 0 over about BYTES of GPU memory (default\n"
		       "$CUDA_PROG_BYTES, else %zu; K, M, G suffixes) and checks every result\n"
		       "against the CPU. $CUDA_PROG_REPEAT repeats the work, $CUDA_PROG_SEED\n"
		       "seeds the inputs, $CUDA_PROG_KERNELS is where the kernels are.\n"
		       "Exit 0 all exact, 1 a CUDA error or a wrong result, 2 usage.\n",
		       name, default_bytes);
		exit(argc == 2 ? CUDA_PROG_OK : CUDA_PROG_USAGE);
	}
	*bytes = argc == 2 ? parse_size(argv[1], "argument")
	         : env && *env ? parse_size(env, "CUDA_PROG_BYTES") : default_bytes;
	CK(cuInit(0));
	CK(cuDeviceGet(dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, *dev));
	CK(cuCtxSetCurrent(ctx));
}

/* See cuda_prog.h; HOLD_MAX_MS bounds the wait. */
#define HOLD_MAX_MS 60000

void cuda_prog_hold(void)
{
	const char *dir = getenv("CUDA_PROG_HOLD");
	char path[4096], all[4096];
	FILE *f;

	if (!dir || !*dir)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.%ld.held", dir, prog_name,
	                     (long)getpid()) >= sizeof(path))
		cuda_prog_die("CUDA_PROG_HOLD path too long: %s", dir);
	f = fopen(path, "w");
	if (!f)
		cuda_prog_die("cannot create %s: %s", path, strerror(errno));
	fclose(f);
	/* (no longer than the .held path above) */
	snprintf(path, sizeof(path), "%s/%s.go", dir, prog_name);
	snprintf(all, sizeof(all), "%s/go", dir);
	for (unsigned ms = 0; ms < HOLD_MAX_MS && access(path, F_OK) != 0 && access(all, F_OK) != 0;
	     ms += 10)
		usleep(10000);
}

int cuda_prog_finish(CUdevice dev, const char *summary)
{
	CK(cuCtxSynchronize());
	CK(cuDevicePrimaryCtxRelease(dev));
	printf("%s: ok (%s)\n", prog_name, summary);
	return CUDA_PROG_OK;
}

unsigned cuda_prog_repeat(void)
{
	const char *env = getenv("CUDA_PROG_REPEAT");
	unsigned long v;

	if (!env || !*env)
		return 1;
	v = strtoul(env, NULL, 10);
	if (!v || v > 1000000)
		cuda_prog_die("bad CUDA_PROG_REPEAT '%s' (1..1000000)", env);
	return (unsigned)v;
}

const char *cuda_prog_kernel_path(const char *file)
{
	static char path[4096];
	const char *dir = getenv("CUDA_PROG_KERNELS");

	if (!dir || !*dir)
		dir = CUDA_PROG_KERNEL_DIR;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		cuda_prog_die("kernel path too long: %s/%s", dir, file);
	return path;
}

void *cuda_prog_alloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	if (!p)
		cuda_prog_die("out of host memory (%zu bytes)", bytes);
	return p;
}

void *cuda_prog_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	if (!f)
		cuda_prog_die("cannot open %s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		cuda_prog_die("cannot size %s: %s", path, strerror(errno));
	buf = cuda_prog_alloc((size_t)size + 1);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size)
		cuda_prog_die("cannot read %s", path);
	fclose(f);
	buf[size] = '\0';
	*len = (size_t)size;
	return buf;
}

uint64_t cuda_prog_seed(void)
{
	const char *env = getenv("CUDA_PROG_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) : 1;

	return seed ? seed : 1;
}

uint32_t cuda_prog_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (uint32_t)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 32);
}

unsigned cuda_prog_blocks(size_t n, unsigned block, unsigned max_blocks)
{
	size_t blocks = (n + block - 1) / block;

	if (!blocks)
		blocks = 1;
	return blocks > max_blocks ? max_blocks : (unsigned)blocks;
}
