/* SPDX-License-Identifier: MIT */
/*
 * rng.h - the core's seeded pseudo-random numbers (xoshiro256**): the same
 * seed gives the same policy choices, so scenarios and tests reproduce.
 */
#ifndef VGPU_CORE_RNG_H
#define VGPU_CORE_RNG_H

#include <stdint.h>

struct vgpu_rng {
	uint64_t s[4];
};

void vgpu_rng_seed(struct vgpu_rng *rng, uint64_t seed);
uint64_t vgpu_rng_next(struct vgpu_rng *rng);
/* Uniform in [0, bound), bound > 0 (unbiased). */
uint64_t vgpu_rng_below(struct vgpu_rng *rng, uint64_t bound);

#endif /* VGPU_CORE_RNG_H */
