/* SPDX-License-Identifier: MIT */
/*
 * ptx_float.h - IEEE details of PTX floating point, as inline helpers for
 * the interpreter: bit casts, flush-to-zero, the canonical NaN NVIDIA GPUs
 * produce (0x7fffffff, and 0x7fffffffffffffff for f64), .sat clamping, and
 * the host rounding mode for .rz/.rm/.rp (the library is built with
 * -frounding-math so the compiler keeps float operations inside the mode
 * switches). Pure; the rounding mode is per host thread.
 */
#ifndef SIMGPU_PTX_FLOAT_H
#define SIMGPU_PTX_FLOAT_H

#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ptx_ir.h"

static inline float ptx_f32(uint64_t v)
{
	uint32_t b = (uint32_t)v;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

static inline double ptx_f64(uint64_t v)
{
	double d;
	memcpy(&d, &v, 8);
	return d;
}

static inline uint64_t ptx_bits32(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu))
		b = 0x7fffffffu;
	return b;
}

static inline uint64_t ptx_bits64(double d)
{
	uint64_t b;
	memcpy(&b, &d, 8);
	if ((b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
	    (b & 0x000fffffffffffffull))
		b = 0x7fffffffffffffffull;
	return b;
}

/* Subnormal to sign-preserving zero. */
static inline float ptx_ftz(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7f800000u) == 0 && (b & 0x007fffffu)) {
		b &= 0x80000000u;
		memcpy(&f, &b, 4);
	}
	return f;
}

static inline float ptx_sat32(float f)
{
	if (f != f)
		return 0.0f;
	return f < 0.0f ? 0.0f : f > 1.0f ? 1.0f : f;
}

static inline double ptx_sat64(double f)
{
	if (f != f)
		return 0.0;
	return f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
}

/* The host mode for a PTX rounding modifier (RND_NONE and .rn: nearest). */
static inline int ptx_host_rounding(unsigned rnd)
{
	switch (rnd) {
	case RND_RZ: case RND_RZI: return FE_TOWARDZERO;
	case RND_RM: case RND_RMI: return FE_DOWNWARD;
	case RND_RP: case RND_RPI: return FE_UPWARD;
	default: return FE_TONEAREST;
	}
}

/* Round to an integral value per .rni/.rzi/.rmi/.rpi. */
static inline double ptx_round_integral(double x, unsigned rnd)
{
	switch (rnd) {
	case RND_RZI: return trunc(x);
	case RND_RMI: return floor(x);
	case RND_RPI: return ceil(x);
	default: return nearbyint(x);  /* the mode is round-to-nearest here */
	}
}

#endif
