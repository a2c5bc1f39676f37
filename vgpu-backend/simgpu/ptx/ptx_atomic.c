// SPDX-License-Identifier: MIT
/*
 * ptx_atomic.c - the value an atomic leaves in memory (ptx_exec.h):
 * atom/red semantics per PTX, pure. atom.add.f32 rounds to nearest even
 * and flushes subnormal inputs and results to sign-preserving zero, as the
 * PTX ISA specifies for it; atom.add.f64 does not flush.
 */
#include "ptx_exec.h"

#include <stdbool.h>
#include <string.h>

static float as_f32(uint64_t v)
{
	uint32_t b = (uint32_t)v;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

static uint64_t f32_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	return b;
}

static float flush32(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7f800000u) == 0)
		b &= 0x80000000u;
	memcpy(&f, &b, 4);
	return f;
}

uint64_t ptx_atomic_apply(const struct ptx_atomic *a, uint64_t old)
{
	bool wide = a->size == 8;
	uint64_t mask = wide ? ~0ull : 0xffffffffull;
	uint64_t o = old & mask, b = a->operand & mask;
	bool sgn = a->type == PTX_ATYPE_S32 || a->type == PTX_ATYPE_S64;
	int64_t so = wide ? (int64_t)o : (int64_t)(int32_t)o;
	int64_t sb = wide ? (int64_t)b : (int64_t)(int32_t)b;
	switch (a->op) {
	case PTX_ATOM_ADD:
		if (a->type == PTX_ATYPE_F32) {
			float r = flush32(flush32(as_f32(o)) + flush32(as_f32(b)));
			uint64_t bits = f32_bits(r);
			if (r != r)
				bits = 0x7fffffffu;
			return bits;
		}
		if (a->type == PTX_ATYPE_F64) {
			double x, y, r;
			memcpy(&x, &o, 8);
			memcpy(&y, &b, 8);
			r = x + y;
			uint64_t bits;
			memcpy(&bits, &r, 8);
			if (r != r)
				bits = 0x7fffffffffffffffull;
			return bits;
		}
		return (o + b) & mask;
	case PTX_ATOM_MIN:
		if (sgn)
			return (uint64_t)(so < sb ? so : sb) & mask;
		return o < b ? o : b;
	case PTX_ATOM_MAX:
		if (sgn)
			return (uint64_t)(so > sb ? so : sb) & mask;
		return o > b ? o : b;
	case PTX_ATOM_EXCH:
		return b;
	case PTX_ATOM_CAS:
		return o == b ? (a->swap & mask) : o;
	case PTX_ATOM_AND:
		return o & b;
	case PTX_ATOM_OR:
		return o | b;
	case PTX_ATOM_XOR:
		return o ^ b;
	case PTX_ATOM_INC:
		return o >= b ? 0 : (o + 1) & mask;
	case PTX_ATOM_DEC:
		return (o == 0 || o > b) ? b : o - 1;
	}
	return o;
}
