// SPDX-License-Identifier: MIT
/* kernels_reference.c - CPU references of the built-in kernels
 * (see vgpu/abi/kernels.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/kernels.h"

void vgpu_kernel_reference_fill(void *buffer, size_t bytes, uint64_t seed)
{
	uint64_t *words = buffer;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		words[i] = vgpu_fill_word(seed, (uint64_t)i * 8);
}

void vgpu_kernel_reference_copy(void *dst, const void *src, size_t bytes)
{
	memmove(dst, src, bytes);
}

void vgpu_kernel_reference_stream(void *buffer, size_t bytes, unsigned passes)
{
	uint64_t *words = buffer;
	unsigned pass;
	size_t i;

	for (pass = 0; pass < passes; pass++)
		for (i = 0; i < bytes / 8; i++)
			words[i] = vgpu_stream_word(words[i]);
}

void vgpu_kernel_reference_stencil(const void *in, void *out, uint32_t width, uint32_t height)
{
	const uint32_t *cells = in;
	uint32_t *result = out;
	uint32_t x, y;

	for (y = 0; y < height; y++) {
		const uint32_t *centre = cells + (size_t)y * width;
		const uint32_t *north = cells + (size_t)(y > 0 ? y - 1 : y) * width;
		const uint32_t *south = cells + (size_t)(y + 1 < height ? y + 1 : y) * width;

		for (x = 0; x < width; x++) {
			uint64_t west = centre[x > 0 ? x - 1 : x];
			uint64_t east = centre[x + 1 < width ? x + 1 : x];
			uint64_t sum = 4 * (uint64_t)centre[x] + north[x] + south[x] + west + east;

			result[(size_t)y * width + x] = (uint32_t)(sum / 8);
		}
	}
}

void vgpu_kernel_reference_random_access(void *table, size_t bytes, uint64_t updates, uint64_t seed)
{
	uint64_t *words = table, state = seed ? seed : VGPU_RANDOM_DEFAULT_SEED, i;
	size_t count = bytes / 8;

	if (count == 0)
		return;
	for (i = 0; i < updates; i++) {
		uint64_t key = vgpu_xorshift64(&state);

		words[key % count] ^= key;
	}
}

uint64_t vgpu_kernel_reference_checksum(const void *buffer, size_t bytes)
{
	const uint64_t *words = buffer;
	uint64_t checksum = VGPU_CHECKSUM_INITIAL;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		checksum = vgpu_checksum_step(checksum, words[i]);
	return checksum;
}

uint64_t vgpu_kernel_reference_fill_stream_checksum(uint64_t seed, size_t bytes, unsigned passes)
{
	uint64_t checksum = VGPU_CHECKSUM_INITIAL;
	size_t i;

	for (i = 0; i < bytes / 8; i++) {
		uint64_t word = vgpu_fill_word(seed, (uint64_t)i * 8);
		unsigned pass;

		for (pass = 0; pass < passes; pass++)
			word = vgpu_stream_word(word);
		checksum = vgpu_checksum_step(checksum, word);
	}
	return checksum;
}
