// SPDX-License-Identifier: MIT
/*
 * builtin_kernels.cu - the project's built-in kernels on a real GPU, for
 * cudagpu. Each produces byte-identical results to simgpu's CPU reference
 * (vgpu/abi/kernels.h, abi/kernels_reference.c).
 *
 * Compiled to PTX by regen-ptx.sh; the PTX is committed beside this file and
 * embedded into the binary at build time, so no build needs CUDA.
 *
 * Pointers arrive as unsigned long long device (unified) addresses that the
 * caller has already validated: no kernel checks its arguments. Every kernel
 * except vgpu_checksum walks its data with grid-stride loops, so any grid
 * and block size gives the same result; blocks are one-dimensional except
 * vgpu_stencil's.
 */

typedef unsigned long long u64;
typedef unsigned int u32;

/* The constants and helpers of vgpu/abi/kernels.h, on the device. */
#define VGPU_STREAM_MULTIPLIER 6364136223846793005ull
#define VGPU_STREAM_INCREMENT 1442695040888963407ull
#define VGPU_CHECKSUM_INITIAL 0xcbf29ce484222325ull
#define VGPU_CHECKSUM_PRIME 0x100000001b3ull

static __device__ __forceinline__ u64 stream_word(u64 x)
{
	return x * VGPU_STREAM_MULTIPLIER + VGPU_STREAM_INCREMENT;
}

static __device__ __forceinline__ u64 fill_word(u64 seed, u64 offset)
{
	u64 z = seed + (offset >> 3) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * vgpu_checksum_step, (c ^ w) * P mod 2^64, in 32-bit halves. With x = c ^ w
 * and P = 2^40 + 0x1b3: x * P = xl * 0x1b3 + 2^32 (xh * 0x1b3 + (xl << 8))
 * mod 2^64, so the low half is a chain of its own and the high half adds
 * hi(xl * 0x1b3) + (xl << 8) off its critical path. On one thread this
 * folds a word in about 9 ns on an H100, against 12 with a 64-bit multiply.
 */
static_assert(VGPU_CHECKSUM_PRIME == (1ull << 40) + 0x1b3, "FNV-1a's 64-bit prime");

static __device__ __forceinline__ u64 checksum_step(u64 checksum, u64 word)
{
	const u32 c = 0x1b3;
	u32 xl = (u32)checksum ^ (u32)word, xh = (u32)(checksum >> 32) ^ (u32)(word >> 32);
	u32 carry = __umulhi(xl, c) + (xl << 8);

	return (u64)(xh * c + carry) << 32 | (xl * c);
}

static __device__ __forceinline__ u64 xorshift64(u64 s)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static __device__ __forceinline__ u64 global_thread(void)
{
	return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ u64 global_threads(void)
{
	return (u64)gridDim.x * blockDim.x;
}

/* FILL: word i at dst becomes vgpu_fill_word(seed, (first_word + i) * 8),
 * so a range filled in parts matches one filled at once. */
extern "C" __global__ void vgpu_fill(u64 dst, u64 words, u64 seed, u64 first_word)
{
	u64 *out = (u64 *)dst;

	for (u64 i = global_thread(); i < words; i += global_threads())
		out[i] = fill_word(seed, (first_word + i) * 8);
}

/*
 * Copy bytes [0, bytes) of s to d in units of T, where d and s are equally
 * aligned modulo sizeof(T): the bytes before d's first T boundary and after
 * its last one go singly, the middle as whole Ts.
 */
template <typename T>
static __device__ __forceinline__ void copy_as(unsigned char *d, const unsigned char *s,
                                               u64 bytes)
{
	u64 head = (sizeof(T) - ((u64)d & (sizeof(T) - 1))) & (sizeof(T) - 1);
	u64 units, tail, i;

	if (head > bytes)
		head = bytes;
	units = (bytes - head) / sizeof(T);
	tail = head + units * sizeof(T);
	for (i = global_thread(); i < units; i += global_threads())
		((T *)(d + head))[i] = ((const T *)(s + head))[i];
	for (i = global_thread(); i < head; i += global_threads())
		d[i] = s[i];
	for (i = tail + global_thread(); i < bytes; i += global_threads())
		d[i] = s[i];
}

/* COPY: bytes from src to dst, any alignment; the ranges do not overlap.
 * The widest unit (16, 8, 4 or 1 bytes) on which dst and src agree modulo
 * its size carries the body. */
extern "C" __global__ void vgpu_copy(u64 dst, u64 src, u64 bytes)
{
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;
	u64 skew = dst ^ src;

	if (!(skew & 15))
		copy_as<uint4>(d, s, bytes);
	else if (!(skew & 7))
		copy_as<u64>(d, s, bytes);
	else if (!(skew & 3))
		copy_as<u32>(d, s, bytes);
	else
		copy_as<unsigned char>(d, s, bytes);
}

/* STREAM: every word x becomes vgpu_stream_word applied passes times. As
 * in simgpu, each pass sweeps the whole buffer (a read and a write of every
 * word); a thread keeps the same words in every pass, so passes need no
 * synchronisation. */
extern "C" __global__ void vgpu_stream(u64 buf, u64 words, u32 passes)
{
	u64 *data = (u64 *)buf;

	for (u32 pass = 0; pass < passes; pass++)
		for (u64 i = global_thread(); i < words; i += global_threads())
			data[i] = stream_word(data[i]);
}

/* STENCIL: out[y][x] = (4 c + n + s + w + e) / 8 over width x height uint32
 * cells, neighbours clamped at the border, summed in 64 bits like the
 * reference. in and out do not overlap. Columns stride over the grid's and
 * block's x dimension, rows over their y dimension. */
extern "C" __global__ void vgpu_stencil(u64 in, u64 out, u32 width, u32 height)
{
	const u32 *__restrict__ cells = (const u32 *)in;
	u32 *__restrict__ result = (u32 *)out;
	const u64 rows = (u64)gridDim.y * blockDim.y;

	for (u64 y = (u64)blockIdx.y * blockDim.y + threadIdx.y; y < height; y += rows) {
		const u32 *centre = cells + y * width;
		const u32 *north = cells + (y > 0 ? y - 1 : y) * width;
		const u32 *south = cells + (y + 1 < height ? y + 1 : y) * width;

		for (u64 x = global_thread(); x < width; x += global_threads()) {
			u64 west = centre[x > 0 ? x - 1 : x];
			u64 east = centre[x + 1 < width ? x + 1 : x];
			u64 sum = 4 * (u64)centre[x] + north[x] + south[x] + west + east;

			result[y * width + x] = (u32)(sum / 8);
		}
	}
}

/*
 * RANDOM_ACCESS: thread t < threads performs updates [t * per_thread,
 * min(updates, (t + 1) * per_thread)) of the reference's sequence, starting
 * from starts[t], the xorshift64 state after t * per_thread steps from the
 * seed (cudagpu_xorshift_starts). Each update steps the state s, then
 * table[s % words] ^= s; XOR commutes, so the table ends as in the
 * sequential reference. words >= 1.
 */
extern "C" __global__ void vgpu_random_access(u64 table, u64 words, u64 updates, u64 starts,
                                              u64 per_thread, u32 threads)
{
	u64 *slots = (u64 *)table;

	for (u64 t = global_thread(); t < threads; t += global_threads()) {
		u64 first = t * per_thread, end = first + per_thread;
		u64 s = ((const u64 *)starts)[t];

		if (end > updates)
			end = updates;
		for (u64 i = first; i < end; i++) {
			s = xorshift64(s);
			atomicXor(&slots[s % words], s);
		}
	}
}

/* CHECKSUM's staging tile, in words (two are in shared memory), and the
 * words the folding thread loads into registers at a time. */
#define CHECKSUM_TILE 2048
#define CHECKSUM_BATCH 16

/* Fold n words of a staged tile into checksum. */
static __device__ __forceinline__ u64 checksum_tile(u64 checksum, const u64 *words, u32 n)
{
	u32 i = 0;

	for (; i + CHECKSUM_BATCH <= n; i += CHECKSUM_BATCH) {
		u64 w[CHECKSUM_BATCH];

#pragma unroll
		for (u32 j = 0; j < CHECKSUM_BATCH; j++)
			w[j] = words[i + j];
#pragma unroll
		for (u32 j = 0; j < CHECKSUM_BATCH; j++)
			checksum = checksum_step(checksum, w[j]);
	}
	for (; i < n; i++)
		checksum = checksum_step(checksum, words[i]);
	return checksum;
}

/*
 * CHECKSUM: the FNV-1a chain over words 64-bit words at src, written to
 * result. The chain is sequential, so one block does it all (other blocks
 * return): thread 0 folds one tile from shared memory while the block's
 * other warps stage the next one with coalesced loads. With a block of one
 * warp, the warp stages each tile before thread 0 folds it. The block is
 * one-dimensional.
 */
extern "C" __global__ void vgpu_checksum(u64 src, u64 words, u64 result)
{
	__shared__ __align__(16) u64 tile[2][CHECKSUM_TILE];
	const u64 *__restrict__ in = (const u64 *)src;
	const u32 loader0 = blockDim.x > 32 ? 32 : 0, loaders = blockDim.x - loader0;
	const u64 tiles = (words + CHECKSUM_TILE - 1) / CHECKSUM_TILE;
	u64 checksum = VGPU_CHECKSUM_INITIAL;

	if (blockIdx.x || blockIdx.y || blockIdx.z)
		return;
	for (u64 i = threadIdx.x; i < CHECKSUM_TILE && i < words; i += blockDim.x)
		tile[0][i] = in[i];
	__syncthreads();
	for (u64 t = 0; t < tiles; t++) {
		if (threadIdx.x >= loader0 && t + 1 < tiles) {
			const u64 base = (t + 1) * CHECKSUM_TILE;
			u64 *next = tile[(t + 1) & 1];

			for (u64 i = threadIdx.x - loader0; i < CHECKSUM_TILE && base + i < words;
			     i += loaders)
				next[i] = in[base + i];
		}
		if (threadIdx.x == 0)
			checksum = checksum_tile(checksum, tile[t & 1],
			                         (u32)min((u64)CHECKSUM_TILE, words - t * CHECKSUM_TILE));
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*(u64 *)result = checksum;
}

/* The 32-bit word at byte offset i of a MEMSET_PATTERN range (i % 4 and
 * phase together select the rotation). */
static __device__ __forceinline__ u32 pattern_at(u32 pattern, u32 phase, u64 i)
{
	u32 r = 8 * (((u32)i + phase) & 3);

	return r ? (pattern >> r) | (pattern << (32 - r)) : pattern;
}

/* MEMSET_PATTERN: byte i of [dst, dst + bytes) becomes byte (i + phase) % 4
 * of the little-endian pattern; any alignment. The bytes before dst's first
 * 16-byte boundary and after its last one go singly, the middle as 16-byte
 * stores of the rotated pattern. */
extern "C" __global__ void vgpu_memset_pattern(u64 dst, u64 bytes, u32 pattern, u32 phase)
{
	unsigned char *d = (unsigned char *)dst;
	u64 head = (16 - (dst & 15)) & 15, units, tail, i;
	u32 w;

	if (head > bytes)
		head = bytes;
	units = (bytes - head) / 16;
	tail = head + units * 16;
	w = pattern_at(pattern, phase, head);
	for (i = global_thread(); i < units; i += global_threads())
		((uint4 *)(d + head))[i] = make_uint4(w, w, w, w);
	for (i = global_thread(); i < head; i += global_threads())
		d[i] = (unsigned char)(pattern_at(pattern, phase, i) & 0xff);
	for (i = tail + global_thread(); i < bytes; i += global_threads())
		d[i] = (unsigned char)(pattern_at(pattern, phase, i) & 0xff);
}

/*
 * SEMAPHORE_RELEASE with VGPU_SEMAPHORE_TIMESTAMP (command format revision
 * 3): the GPU's nanosecond clock (%globaltimer) at dst + 8, then value at dst
 * (16-byte aligned), so a reader that sees the value sees the timestamp. The
 * stream runs it after every earlier command of the channel. One thread.
 */
extern "C" __global__ void vgpu_semaphore_timestamp(u64 dst, u64 value)
{
	u64 now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	((volatile u64 *)dst)[1] = now;
	__threadfence_system();
	((volatile u64 *)dst)[0] = value;
}
