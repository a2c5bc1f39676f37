/* SPDX-License-Identifier: MIT */
/*
 * cuda_prog.h - what every CUDA program of tests/cuda shares: checking a
 * driver call, setting up a context, the working-set size, finding and
 * reading the kernels' images, a seeded generator.
 *
 * The programs are ordinary CUDA driver-API programs (#include <cuda.h>,
 * -lcuda); nothing here knows about the vGPU. Every failure ends the
 * program at once: a CUDA error or a result that differs from the CPU's
 * prints one line naming the program, what failed and why, and exits 1.
 * Single-threaded.
 */
#ifndef CUDA_PROG_H
#define CUDA_PROG_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/* Exit statuses: 0 every result exact, 1 a CUDA error or a wrong result,
 * 2 bad usage or a host-side failure (a file, host memory). */
enum { CUDA_PROG_OK = 0, CUDA_PROG_FAILED = 1, CUDA_PROG_USAGE = 2 };

/* The call's result must be CUDA_SUCCESS; otherwise "PROG: CALL failed:
 * CUDA_ERROR_NAME (description)" and exit 1. */
#define CK(call) cuda_prog_check((call), #call)
void cuda_prog_check(CUresult result, const char *call);

/* What a failed call returned, as "CUDA_ERROR_NAME (description)", in a
 * static buffer (valid until the next call). */
const char *cuda_prog_error(CUresult result);

/* A wrong result: prints "PROG: " and the message, exits 1. */
void cuda_prog_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A host-side problem (exit 2). */
void cuda_prog_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * Start: remember the program's name, cuInit, device 0, its primary
 * context made current. The working-set size in bytes is argv[1] if given,
 * else $CUDA_PROG_BYTES, else default_bytes (a number with an optional
 * K, M or G suffix, powers of 1024); *bytes gets it.
 */
void cuda_prog_start(const char *name, int argc, char **argv, size_t default_bytes,
                     size_t *bytes, CUdevice *dev);

/* Release the primary context; prints "PROG: ok (SUMMARY)" and returns 0. */
int cuda_prog_finish(CUdevice dev, const char *summary);

/* With $CUDA_PROG_HOLD=DIR set: create DIR/PROG.PID.held, then wait until
 * DIR/go or DIR/PROG.go exists (at most 60 s). Programs call it after their work, before
 * freeing their device memory, so that a test sees several programs'
 * working sets allocated at once however their run times fall. Without
 * the variable, nothing. */
void cuda_prog_hold(void);

/* How often to repeat the work ($CUDA_PROG_REPEAT, default 1). */
unsigned cuda_prog_repeat(void);

/* Path of a kernel image (e.g. "saxpy.ptx"): in $CUDA_PROG_KERNELS if set,
 * else in the source tree's tests/cuda/kernels. Static buffer. */
const char *cuda_prog_kernel_path(const char *file);

/* A whole file, NUL-terminated (PTX images must be), in malloc'ed memory;
 * *len without the NUL. Exits 2 when it cannot be read. */
void *cuda_prog_read_file(const char *path, size_t *len);

/* malloc that exits 2 on failure. */
void *cuda_prog_alloc(size_t bytes);

/* xorshift64*: deterministic inputs from a seed ($CUDA_PROG_SEED or 1). */
uint64_t cuda_prog_seed(void);
uint32_t cuda_prog_rand(uint64_t *state);

/* Blocks of `block` threads to cover n items, at most max_blocks. */
unsigned cuda_prog_blocks(size_t n, unsigned block, unsigned max_blocks);

#endif /* CUDA_PROG_H */
