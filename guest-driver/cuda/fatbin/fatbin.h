/* SPDX-License-Identifier: MIT */
/*
 * fatbin.h - the PTX of an NVIDIA fat binary, for cuModuleLoadData.
 *
 * A program hands cuModuleLoadData a pointer without a length: PTX text, a
 * fat binary (magic VGPU_FATBIN_MAGIC, its header says its size) or the
 * wrapper nvcc embeds in host objects (__fatbinwrap: magic
 * VGPU_FATBIN_WRAPPER_MAGIC, a version, a pointer to the fat binary). The
 * vGPU runs PTX only (simgpu's executor; cudagpu's driver JITs it), so the
 * machine code (SASS/cubin) entries of a fat binary are of no use to it; this
 * module finds the PTX entry to run and returns its text, decompressed when
 * nvcc compressed it (zstd, or lz4 in older toolkits).
 *
 * The format is described in README.md beside this file.
 *
 * Thread safety: the functions keep no state; any thread may call them.
 * Memory safety: nothing past `limit` bytes from `image` is read, nor past
 * what the fat binary's headers declare; a wrapper's fat binary is read
 * only as far as its own header declares (the wrapper does not bound it).
 */
#ifndef VGPU_FATBIN_H
#define VGPU_FATBIN_H

#include <stdbool.h>
#include <stddef.h>

#define VGPU_FATBIN_MAGIC 0xba55ed50u
#define VGPU_FATBIN_WRAPPER_MAGIC 0x466243b1u

/*
 * The PTX architectures (compute_XX) the vGPU runs: simgpu's executor
 * accepts `.target sm_70` and up; the virtual device is an sm_90 (H100)
 * class GPU, and PTX for a later architecture may use what it lacks (as a
 * real driver, such PTX is refused rather than tried).
 */
#define VGPU_FATBIN_PTX_ARCH_MIN 70u
#define VGPU_FATBIN_PTX_ARCH_MAX 90u

/* Largest decompressed PTX accepted (a bound on what a header can make us
 * allocate). */
#define VGPU_FATBIN_PTX_MAX ((size_t)256 << 20)

/*
 * Whether the image starts like a fat binary or its wrapper (reads at most
 * 4 bytes, none when limit < 4). Says nothing of the rest: PTX text starts
 * otherwise, so callers use this to tell the two apart.
 */
bool vgpu_fatbin_is_fatbin(const void *image, size_t limit);

/*
 * Extract the PTX to run from `image` (a fat binary or its wrapper), of which
 * at most `limit` bytes may be read (SIZE_MAX when the caller does not know).
 * The chosen entry is the PTX entry with the highest architecture in
 * [VGPU_FATBIN_PTX_ARCH_MIN, VGPU_FATBIN_PTX_ARCH_MAX]; among several of that
 * architecture, the newest PTX ISA version, then the last one.
 *
 * Returns 0 with *ptx a malloc'ed NUL-terminated string (the caller frees
 * it) and *ptx_len its strlen; on failure *ptx is NULL, *ptx_len 0 and a
 * message for a user is written to why (when why_len > 0; truncated to fit):
 *   -ENOENT  no PTX the vGPU runs: machine code only ("the fatbin carries
 *            only machine code for sm_XX; rebuild with -gencode
 *            arch=compute_XX,code=compute_XX"), PTX only for other
 *            architectures, or no entry at all;
 *   -EINVAL  malformed: a bad magic or version, a size past `limit` or that
 *            overflows, entries that do not tile the declared size, a
 *            compressed entry that does not decompress to its declared size,
 *            empty PTX;
 *   -ENOMEM  out of memory, or a PTX larger than VGPU_FATBIN_PTX_MAX.
 */
int vgpu_fatbin_ptx(const void *image, size_t limit, char **ptx, size_t *ptx_len,
		    char *why, size_t why_len);

#endif /* VGPU_FATBIN_H */
