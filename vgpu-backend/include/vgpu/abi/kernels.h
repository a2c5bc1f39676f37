/* SPDX-License-Identifier: MIT */
/*
 * vgpu/abi/kernels.h - the built-in kernels and their CPU references.
 *
 * Each kernel is launched with VGPU_CMD_LAUNCH (vgpu/abi/commands.h) and
 * touches memory only through the channel's GPU address space. Each has a
 * CPU reference here (library vgpu_kernels_reference) that works on flat
 * host memory and produces byte-identical results, so guests, tests and
 * scenario runners can compute what a buffer must contain.
 *
 * Data are little-endian 64-bit words (32-bit for STENCIL). Arguments (all
 * 64-bit, in LAUNCH order) and their rules; a violation is
 * VGPU_FAULT_BAD_KERNEL_ARGS. Limits written config.NAME are the backend's
 * (its configuration in vgpu/simgpu.h or vgpu/cudagpu.h):
 *
 *  FILL(dst, bytes, seed)
 *      dst 8-byte aligned, bytes a nonzero multiple of 8. The word at byte
 *      offset o of the range becomes vgpu_fill_word(seed, o), so a
 *      buffer's content is a function of (seed, offset) only.
 *  COPY(dst, src, bytes)
 *      bytes nonzero; forward copy page span by page span.
 *  STREAM(buffer, bytes, passes)
 *      buffer 8-byte aligned, bytes a nonzero multiple of 8,
 *      1 <= passes <= config.max_stream_passes. Each pass sweeps the buffer
 *      reading and writing every word: x := vgpu_stream_word(x).
 *  STENCIL(in, out, width, height)
 *      2-D 5-point stencil over width x height uint32 cells, row-major,
 *      in and out 4-byte aligned and not overlapping, 1 <= width <=
 *      VGPU_STENCIL_MAX_WIDTH, height >= 1. out[y][x] =
 *      (4 c + north + south + west + east) / 8 with neighbours clamped at the
 *      border (integer arithmetic, so results are exact). Each input row is
 *      read once, each output row written once.
 *  RANDOM_ACCESS(table, bytes, updates, seed)
 *      GUPS-like: table 8-byte aligned, bytes a nonzero multiple of 8,
 *      updates <= config.max_random_updates. An xorshift64 stream s starting
 *      from seed (0 becomes VGPU_RANDOM_DEFAULT_SEED) drives updates
 *      table[s % words] ^= s, each an 8-byte read and an 8-byte write.
 *  CHECKSUM(src, bytes, result)
 *      src 8-byte aligned, bytes a nonzero multiple of 8, result 8-byte
 *      aligned: writes vgpu_kernel_reference_checksum of the range to result.
 *  THROTTLE(duration_ns)
 *      1 <= duration_ns <= config.watchdog_ns (when set): occupies the
 *      compute engine for duration_ns of modeled time and touches no
 *      memory (LoGA §5.2's throttle: a tight loop of a given length; in
 *      paced mode it lasts that long in wall time). The software GPU only.
 */
#ifndef VGPU_ABI_KERNELS_H
#define VGPU_ABI_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_STENCIL_MAX_WIDTH 65536u
#define VGPU_RANDOM_DEFAULT_SEED 0x9e3779b97f4a7c15ull

/* STREAM's per-word transform (a 64-bit LCG step: deterministic, never
 * idempotent). */
#define VGPU_STREAM_MULTIPLIER 6364136223846793005ull
#define VGPU_STREAM_INCREMENT 1442695040888963407ull

/* CHECKSUM: FNV-1a over 64-bit words. */
#define VGPU_CHECKSUM_INITIAL 0xcbf29ce484222325ull
#define VGPU_CHECKSUM_PRIME 0x100000001b3ull

static inline uint64_t vgpu_stream_word(uint64_t x)
{
	return x * VGPU_STREAM_MULTIPLIER + VGPU_STREAM_INCREMENT;
}

/* The FILL word at byte offset (a multiple of 8) of a range filled with seed
 * (a splitmix64 finaliser of seed and the word index). */
static inline uint64_t vgpu_fill_word(uint64_t seed, uint64_t offset)
{
	uint64_t z = seed + (offset >> 3) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t vgpu_checksum_step(uint64_t checksum, uint64_t word)
{
	return (checksum ^ word) * VGPU_CHECKSUM_PRIME;
}

static inline uint64_t vgpu_xorshift64(uint64_t *state)
{
	uint64_t s = *state;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	*state = s;
	return s;
}

/* ------------------------------------------------------------------------ */
/* CPU references on flat host memory (bytes as the kernel rules say).     */

void vgpu_kernel_reference_fill(void *buffer, size_t bytes, uint64_t seed);
void vgpu_kernel_reference_copy(void *dst, const void *src, size_t bytes);
void vgpu_kernel_reference_stream(void *buffer, size_t bytes, unsigned passes);
void vgpu_kernel_reference_stencil(const void *in, void *out, uint32_t width, uint32_t height);
void vgpu_kernel_reference_random_access(void *table, size_t bytes, uint64_t updates,
                                         uint64_t seed);
uint64_t vgpu_kernel_reference_checksum(const void *buffer, size_t bytes);

/* Checksum of a FILL(seed) range of bytes after passes STREAM passes, without
 * materialising it (bytes a multiple of 8). Handy for huge buffers. */
uint64_t vgpu_kernel_reference_fill_stream_checksum(uint64_t seed, size_t bytes, unsigned passes);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ABI_KERNELS_H */
