// SPDX-License-Identifier: MIT
/*
 * workload_reference.c - what the workloads' buffers must hold, computed on
 * the CPU with the references of vgpu/abi/kernels.h (see
 * vgpu_workloads.h).
 */
#include "workload_reference.h"

#include <errno.h>
#include <stdlib.h>

#include "vgpu/abi/kernels.h"

uint64_t vgpu_workload_buffer_seed(uint64_t seed, uint64_t index, uint64_t iteration)
{
	return vgpu_fill_word(seed + iteration * 0xd1b54a32d192ed03ull, index * 8);
}

/*
 * STREAM's word transform is affine, x -> a x + c (mod 2^64), so n passes
 * are x -> A x + C with (A, C) = (a, c)^n under composition. Take a and c
 * from vgpu_stream_word itself so this cannot drift from the kernel.
 */
static void stream_power(uint64_t passes, uint64_t *a_out, uint64_t *c_out)
{
	uint64_t c = vgpu_stream_word(0);
	uint64_t a = vgpu_stream_word(1) - c;
	uint64_t result_a = 1, result_c = 0;

	while (passes) {
		if (passes & 1) {
			/* apply (a, c) after (result_a, result_c) */
			result_c = a * result_c + c;
			result_a = a * result_a;
		}
		/* (a, c) composed with itself */
		c = a * c + c;
		a = a * a;
		passes >>= 1;
	}
	*a_out = result_a;
	*c_out = result_c;
}

uint64_t vgpu_reference_fill_stream_checksum(uint64_t seed, uint64_t bytes, uint64_t passes)
{
	uint64_t checksum = VGPU_CHECKSUM_INITIAL, a, c, offset;

	stream_power(passes, &a, &c);
	for (offset = 0; offset + 8 <= bytes; offset += 8)
		checksum = vgpu_checksum_step(checksum, a * vgpu_fill_word(seed, offset) + c);
	return checksum;
}

int workload_reference_stencil(uint64_t seed, uint32_t width, uint32_t height,
                               uint64_t iterations, uint64_t *checksum)
{
	size_t bytes = (size_t)width * height * 4;
	uint8_t *grids[2];
	uint64_t i;

	grids[0] = malloc(bytes);
	grids[1] = malloc(bytes);
	if (!grids[0] || !grids[1]) {
		free(grids[0]);
		free(grids[1]);
		return -ENOMEM;
	}
	vgpu_kernel_reference_fill(grids[0], bytes, seed);
	for (i = 0; i < iterations; i++)
		vgpu_kernel_reference_stencil(grids[i & 1], grids[(i + 1) & 1], width, height);
	*checksum = vgpu_kernel_reference_checksum(grids[iterations & 1], bytes);
	free(grids[0]);
	free(grids[1]);
	return 0;
}

int workload_reference_gups(uint64_t run_seed, uint64_t index, uint64_t bytes,
                            uint64_t updates, uint64_t iterations, uint64_t *checksum)
{
	uint8_t *table = malloc(bytes);
	uint64_t i;

	if (!table)
		return -ENOMEM;
	vgpu_kernel_reference_fill(table, bytes, vgpu_workload_buffer_seed(run_seed, index, 0));
	for (i = 0; i < iterations; i++) {
		uint64_t seed = vgpu_workload_buffer_seed(run_seed, index, i + 1);

		vgpu_kernel_reference_random_access(table, bytes, updates, seed);
	}
	*checksum = vgpu_kernel_reference_checksum(table, bytes);
	free(table);
	return 0;
}
