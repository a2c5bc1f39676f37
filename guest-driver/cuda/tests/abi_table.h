/* SPDX-License-Identifier: MIT */
/*
 * abi_table.h - what each side of the cuda-abi checker computes from its
 * cuda.h (abi_ours.c: the project's, abi_theirs.c: NVIDIA's), from the
 * same generated lists (cuda_abi_lists.h), for abi_main.c to compare.
 */
#ifndef VGPU_CUDA_ABI_TABLE_H
#define VGPU_CUDA_ABI_TABLE_H

struct abi_side {
	const long long *constants;
	const unsigned long *type_sizes;
	const unsigned long *field_offsets, *field_sizes;
	const char *const *symbols; /* what each API name expands to */
};

extern const struct abi_side abi_ours, abi_theirs;

#endif /* VGPU_CUDA_ABI_TABLE_H */
