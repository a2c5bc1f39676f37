/* SPDX-License-Identifier: MIT */
/*
 * rodinia.h - what the eight Rodinia-style programs of tests/rodinia share:
 * the command line (--repeat N, a working-set size), checking driver calls,
 * loading the program's PTX, allocating with an eviction priority, timing,
 * a seeded generator and the float comparison with a stated tolerance.
 *
 * The programs are ordinary CUDA driver-API programs (#include <cuda.h>,
 * -lcuda). The one call beyond NVIDIA's API is vgpuMemAllocWithPriority
 * (vgpu_cuda_ext.h), looked up with dlsym so a program also runs on a
 * library without it (then every buffer gets cuMemAlloc's default).
 *
 * Every failure ends the program: a CUDA error or a wrong result prints
 * one line "PROG: ..." on stderr and exits 1; usage and host problems exit
 * 2. On success the last line of stdout is
 *   runtime_ms=<total> kernel_ms=<kernels> repeat=<N> bytes=<working set>
 * Single-threaded.
 */
#ifndef RODINIA_H
#define RODINIA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

enum { RODINIA_OK = 0, RODINIA_FAILED = 1, RODINIA_USAGE = 2 };

#define CK(call) rodinia_check((call), #call)
void rodinia_check(CUresult result, const char *call);
void rodinia_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void rodinia_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

struct rodinia {
	const char *name;
	size_t bytes;     /* working set asked for (argument, else default) */
	unsigned repeat;  /* --repeat N (default 100, the thesis's loop) */
	uint64_t rng;     /* xorshift64* state, from --seed (default 1) */
	CUdevice dev;
	CUmodule module;
	double start_ms;  /* after the context exists */
	double kernel_ms; /* summed by rodinia_kernels_begin/end */
	double kernel_begin;
};

/*
 * Parse "[--repeat N] [--seed S] [SIZE]" (SIZE: bytes with an optional K,
 * M or G suffix, default default_bytes), cuInit, the primary context of
 * device 0, and load kernels/<ptx> (directory $RODINIA_KERNELS, else the
 * source tree's) with cuModuleLoadData.
 */
void rodinia_start(struct rodinia *r, const char *name, const char *ptx, int argc, char **argv,
                   size_t default_bytes);

/* The module's function `name` (exits 1 if missing). */
CUfunction rodinia_function(struct rodinia *r, const char *name);

/* cuMemAlloc with an eviction priority (0 lowest .. 15 highest). */
CUdeviceptr rodinia_alloc(size_t bytes, unsigned priority);

/* Kernel time: from begin to end, which synchronizes the context. */
void rodinia_kernels_begin(struct rodinia *r);
void rodinia_kernels_end(struct rodinia *r);

/* Unload, release the context, print "PROG: ok (SUMMARY)" and the
 * runtime line; returns 0 for main. */
int rodinia_finish(struct rodinia *r, const char *summary);

double rodinia_now_ms(void);
/* Zeroed host memory that lives until rodinia_finish frees it (exits 2
 * when there is none). */
void *rodinia_malloc(size_t bytes);
uint32_t rodinia_rand(struct rodinia *r);
/* Uniform in [0, 1) with 24 significant bits (exact in a float). */
float rodinia_randf(struct rodinia *r);

/*
 * got[i] against want[i] for i < n: |got - want| <= abs_tol + rel_tol *
 * |want| (both non-finite values must be identical). Fails naming what,
 * the index and both values.
 */
void rodinia_check_floats(const char *what, const float *got, const float *want, size_t n,
                          float rel_tol, float abs_tol);

/* Blocks of `block` to cover n. */
static inline unsigned rodinia_blocks(size_t n, unsigned block)
{
	return (unsigned)((n + block - 1) / block);
}

#endif /* RODINIA_H */
