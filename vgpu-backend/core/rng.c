// SPDX-License-Identifier: MIT
/* rng.c - xoshiro256** seeded through splitmix64, see rng.h. */
#include "rng.h"

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void vgpu_rng_seed(struct vgpu_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&seed);
}

uint64_t vgpu_rng_next(struct vgpu_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t vgpu_rng_below(struct vgpu_rng *rng, uint64_t bound)
{
	uint64_t threshold, value;

	if (bound <= 1)
		return 0;
	/* Reject the low values that would make the modulo biased. */
	threshold = -bound % bound;
	do {
		value = vgpu_rng_next(rng);
	} while (value < threshold);
	return value % bound;
}
