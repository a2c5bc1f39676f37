// SPDX-License-Identifier: MIT
/*
 * ptx_warp.c - the interpreter: runs one warp's lanes over lowered
 * instructions (ptx_run.h). Each instruction executes once for the warp,
 * looping over the lanes of its active mask; lanes diverge by PC and the
 * lowest PC runs first (ptx_exec.h describes the model).
 */
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_float.h"
#include "ptx_run.h"

#define FOR_LANES(mask)                                                  \
	for (uint32_t m__ = (mask); m__; m__ &= m__ - 1) {                  \
		const unsigned l = (unsigned)__builtin_ctz(m__);
#define END_LANES }

static inline uint64_t rd(const uint64_t *R, const struct ptx_operand *o,
			  unsigned l)
{
	return o->kind == OPK_REG ? R[(size_t)o->reg * PTX_WARP_SIZE + l] : o->imm;
}

static inline uint64_t rdp(const uint64_t *R, const struct ptx_operand *o,
			   unsigned l)
{
	return (rd(R, o, l) & 1) ^ o->neg;
}

static inline void wr(uint64_t *R, const struct ptx_operand *o, unsigned l,
		      uint64_t v)
{
	if (o->kind == OPK_REG)
		R[(size_t)o->reg * PTX_WARP_SIZE + l] = v;
}

/* v zero or sign extended from type t's width. */
static inline uint64_t ext(uint64_t v, unsigned t)
{
	if (t == PT_PRED)
		return v & 1;
	unsigned sh = 64 - 8 * ptx_type_size(t);
	return ptx_type_signed(t) ? (uint64_t)((int64_t)(v << sh) >> sh)
				  : (v << sh) >> sh;
}

static inline unsigned bits_of(unsigned t)
{
	return 8 * ptx_type_size(t);
}

static inline uint64_t ones(unsigned bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

/* ---- scheduling ---- */

void ptx_warp_schedule(struct ptx_warp *w)
{
	uint32_t run = w->live & ~w->blocked;
	uint32_t cand = run & ~w->parked;
	if (!cand)
		cand = run;
	if (!cand) {
		w->active = 0;
		w->merge_pc = UINT32_MAX;
		return;
	}
	uint32_t min = UINT32_MAX;
	FOR_LANES(cand)
		if (w->pc[l] < min)
			min = w->pc[l];
	END_LANES
	uint32_t act = 0, merge = UINT32_MAX;
	FOR_LANES(run)
		if (w->pc[l] == min)
			act |= 1u << l;
		else if (w->pc[l] > min && w->pc[l] < merge)
			merge = w->pc[l];
	END_LANES
	w->active = act;
	w->parked &= ~act;
	w->wsync_parked &= ~act;
	w->cur_pc = min;
	w->merge_pc = merge;
}

static void set_active_pcs(struct ptx_warp *w, uint32_t pc)
{
	FOR_LANES(w->active)
		w->pc[l] = pc;
	END_LANES
}

/* The active lanes move to next; taken lanes to target. */
static void branch(struct ptx_warp *w, uint32_t taken, uint32_t target)
{
	uint32_t next = w->cur_pc + 1;
	if ((taken == w->active || taken == 0) && w->merge_pc == UINT32_MAX &&
	    !(w->live & ~w->blocked & ~w->active)) {
		w->cur_pc = taken ? target : next;
		return;
	}
	FOR_LANES(w->active)
		w->pc[l] = (taken >> l) & 1 ? target : next;
	END_LANES
	ptx_warp_schedule(w);
}

static inline void advance(struct ptx_warp *w)
{
	w->cur_pc++;
	if (w->cur_pc >= w->merge_pc) {
		set_active_pcs(w, w->cur_pc);
		ptx_warp_schedule(w);
	}
}

/* ---- integer arithmetic ---- */

static inline uint64_t int_bin(uint8_t op, uint8_t mode, unsigned t, bool sat,
			       uint64_t a, uint64_t b)
{
	unsigned n = bits_of(t);
	bool s = ptx_type_signed(t);
	uint64_t ua = ext(a, t), ub = ext(b, t);
	int64_t sa = (int64_t)ua, sb = (int64_t)ub;
	if (!s) {
		ua &= ones(n);
		ub &= ones(n);
	}
	switch (op) {
	case OP_ADD:
		if (sat) {
			int64_t r = sa + sb;  /* s32 only */
			return (uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
		}
		return a + b;
	case OP_SUB:
		if (sat) {
			int64_t r = sa - sb;
			return (uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
		}
		return a - b;
	case OP_MUL:
		if (mode == MODE_LO)
			return a * b;
		if (mode == MODE_WIDE)
			return s ? (uint64_t)(sa * sb) : ua * ub;
		/* hi */
		if (n == 64) {
			if (s)
				return (uint64_t)(((__int128)sa * sb) >> 64);
			return (uint64_t)(((unsigned __int128)ua * ub) >> 64);
		}
		if (s)
			return (uint64_t)((sa * sb) >> n);
		return (ua * ub) >> n;
	case OP_DIV:
		if (ub == 0 || (!s && (ub & ones(n)) == 0))
			return s ? (sa < 0 ? 1 : ~0ull) : ones(n);
		if (s) {
			if (n == 64 && sa == INT64_MIN && sb == -1)
				return (uint64_t)INT64_MIN;
			return (uint64_t)(sa / sb);
		}
		return ua / ub;
	case OP_REM:
		if (ub == 0)
			return a;
		if (s) {
			if (sb == -1)
				return 0;
			return (uint64_t)(sa % sb);
		}
		return ua % ub;
	case OP_MIN:
		return s ? (uint64_t)(sa < sb ? sa : sb) : (ua < ub ? ua : ub);
	case OP_MAX:
		return s ? (uint64_t)(sa > sb ? sa : sb) : (ua > ub ? ua : ub);
	case OP_AND:
		return a & b;
	case OP_OR:
		return a | b;
	case OP_XOR:
		return a ^ b;
	case OP_SHL:
		b &= 0xffffffffu;
		return b >= n ? 0 : a << b;
	case OP_SHR:
		b &= 0xffffffffu;
		if (s)
			return b >= n ? (uint64_t)(sa < 0 ? -1 : 0) : (uint64_t)(sa >> b);
		ua = a & ones(n);
		return b >= n ? 0 : ua >> b;
	}
	return 0;
}

/*
 * The common cases of the binary arithmetic group, each in a loop of its
 * own: 32-bit integer add/sub/mul.lo/and/or/xor/shl/shr and f32
 * add/sub/mul rounded to nearest without .ftz/.sat. Returns false for
 * anything else.
 */
#define BIN_LOOP(type, expr)                                              \
	FOR_LANES(act)                                                    \
		uint64_t a = rd(R, &o[1], l), b = rd(R, &o[2], l);          \
		wr(R, &o[0], l, ext((expr), (type)));                       \
	END_LANES
#define F32_LOOP(op)                                                      \
	FOR_LANES(act)                                                    \
		float r = ptx_f32(rd(R, &o[1], l)) op ptx_f32(rd(R, &o[2], l)); \
		wr(R, &o[0], l, ptx_bits32(r));                              \
	END_LANES

static inline bool fast_binop(const struct ptx_insn *in, uint64_t *R, uint32_t act)
{
	const struct ptx_operand *o = in->o;
	unsigned t = in->type;
	if (t == PT_F32) {
		if (in->rnd != RND_RN || in->ftz || in->sat)
			return false;
		switch (in->op) {
		case OP_ADD: F32_LOOP(+) return true;
		case OP_SUB: F32_LOOP(-) return true;
		case OP_MUL: F32_LOOP(*) return true;
		default: return false;
		}
	}
	if ((t != PT_S32 && t != PT_U32 && t != PT_B32) || in->sat)
		return false;
	switch (in->op) {
	case OP_ADD: BIN_LOOP(t, a + b) return true;
	case OP_SUB: BIN_LOOP(t, a - b) return true;
	case OP_MUL:
		if (in->mode != MODE_LO)
			return false;
		BIN_LOOP(t, a * b) return true;
	case OP_AND: BIN_LOOP(t, a & b) return true;
	case OP_OR: BIN_LOOP(t, a | b) return true;
	case OP_XOR: BIN_LOOP(t, a ^ b) return true;
	case OP_SHL: BIN_LOOP(t, (uint32_t)b >= 32 ? 0 : a << (uint32_t)b) return true;
	case OP_SHR:
		if (t == PT_S32) {
			BIN_LOOP(t, (uint64_t)((int64_t)(int32_t)a >> ((uint32_t)b >= 32 ? 31 : (uint32_t)b)))
			return true;
		}
		BIN_LOOP(t, (uint32_t)b >= 32 ? 0 : (uint32_t)a >> (uint32_t)b) return true;
	default:
		return false;
	}
}

/*
 * Extended-precision arithmetic through the carry flag CC.CF: add.cc,
 * addc{.cc} (d = a + b + CF, CF = carry out), sub.cc, subc{.cc}
 * (d = a - (b + CF), CF = borrow out), mad{c}.lo/.hi{.cc} (d = the product's
 * low or high half + c + CF).
 */
static void carry_arith(struct ptx_warp *w, const struct ptx_insn *in, uint64_t *R,
			uint32_t act)
{
	const struct ptx_operand *o = in->o;
	unsigned t = in->type, n = bits_of(t);
	uint64_t mask = ones(n);
	uint32_t cf = w->carry;
	FOR_LANES(act)
		uint64_t a = rd(R, &o[1], l) & mask, b = rd(R, &o[2], l) & mask;
		unsigned cin = (in->cc & 2) ? (cf >> l) & 1 : 0, cout;
		uint64_t d;
		if (in->op == OP_SUB) {
			unsigned __int128 sub = (unsigned __int128)b + cin;
			d = (a - (uint64_t)sub) & mask;
			cout = (unsigned __int128)a < sub;
		} else {
			uint64_t x = b;
			if (in->op == OP_MAD) {
				x = int_bin(OP_MUL, in->mode, t, false, a, b) & mask;
				b = rd(R, &o[3], l) & mask;
				a = x;
			}
			unsigned __int128 sum = (unsigned __int128)a + b + cin;
			d = (uint64_t)sum & mask;
			cout = (unsigned)((sum >> n) & 1);
		}
		wr(R, &o[0], l, ext(d, t));
		if (in->cc & 1)
			w->carry = (w->carry & ~(1u << l)) | (cout << l);
	END_LANES
}

/* The result type of mul.wide/mad.wide. */
static inline unsigned wide_of(unsigned t)
{
	switch (t) {
	case PT_U16: return PT_U32;
	case PT_S16: return PT_S32;
	case PT_U32: return PT_U64;
	default: return PT_S64;
	}
}

static inline uint64_t bfe(unsigned t, uint64_t a, uint64_t b, uint64_t c)
{
	unsigned n = bits_of(t), msb = n - 1;
	unsigned pos = (unsigned)(b & 0xff), len = (unsigned)(c & 0xff);
	bool s = ptx_type_signed(t);
	a &= ones(n);
	unsigned sbit = 0;
	if (s && len)
		sbit = (unsigned)((a >> (pos + len - 1 >= msb ? msb : pos + len - 1)) & 1);
	uint64_t d = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned bit;
		if (i < len && pos + i <= msb)
			bit = (unsigned)((a >> (pos + i)) & 1);
		else
			bit = s ? sbit : 0;
		d |= (uint64_t)bit << i;
	}
	return ext(d, t);
}

static inline uint64_t bfi(unsigned t, uint64_t a, uint64_t b, uint64_t c,
			   uint64_t d)
{
	unsigned n = bits_of(t), msb = n - 1;
	unsigned pos = (unsigned)(c & 0xff), len = (unsigned)(d & 0xff);
	uint64_t f = b & ones(n);
	for (unsigned i = 0; i < len && pos + i <= msb; i++) {
		f &= ~(1ull << (pos + i));
		f |= ((a >> i) & 1) << (pos + i);
	}
	return f;
}

static inline uint64_t prmt(uint8_t mode, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t x = (a & 0xffffffffu) | ((b & 0xffffffffu) << 32);
	unsigned sel[4];
	bool sign[4] = { false, false, false, false };
	unsigned cs = (unsigned)(c & 3);
	static const unsigned tab[6][4][4] = {
		/* f4e */ { { 0, 1, 2, 3 }, { 1, 2, 3, 4 }, { 2, 3, 4, 5 }, { 3, 4, 5, 6 } },
		/* b4e */ { { 0, 7, 6, 5 }, { 1, 0, 7, 6 }, { 2, 1, 0, 7 }, { 3, 2, 1, 0 } },
		/* rc8 */ { { 0, 0, 0, 0 }, { 1, 1, 1, 1 }, { 2, 2, 2, 2 }, { 3, 3, 3, 3 } },
		/* ecl */ { { 0, 1, 2, 3 }, { 1, 1, 2, 3 }, { 2, 2, 2, 3 }, { 3, 3, 3, 3 } },
		/* ecr */ { { 0, 0, 0, 0 }, { 0, 1, 1, 1 }, { 0, 1, 2, 2 }, { 0, 1, 2, 3 } },
		/* rc16 */ { { 0, 1, 0, 1 }, { 2, 3, 2, 3 }, { 0, 1, 0, 1 }, { 2, 3, 2, 3 } },
	};
	if (mode == MODE_NONE) {
		for (unsigned i = 0; i < 4; i++) {
			unsigned nib = (unsigned)((c >> (4 * i)) & 0xf);
			sel[i] = nib & 7;
			sign[i] = nib & 8;
		}
	} else {
		for (unsigned i = 0; i < 4; i++)
			sel[i] = tab[mode - MODE_PRMT_F4E][cs][i];
	}
	uint64_t d = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t byte = (x >> (8 * sel[i])) & 0xff;
		if (sign[i])
			byte = (byte & 0x80) ? 0xff : 0;
		d |= byte << (8 * i);
	}
	return d;
}

static inline uint64_t bfind(unsigned t, bool shiftamt, uint64_t a)
{
	unsigned n = bits_of(t);
	a &= ones(n);
	if (ptx_type_signed(t) && ((a >> (n - 1)) & 1))
		a = ~a & ones(n);
	if (!a)
		return 0xffffffffu;
	unsigned pos = 63 - (unsigned)__builtin_clzll(a);
	return shiftamt ? n - 1 - pos : pos;
}

/* ---- floating point ---- */

static inline float fmin32(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

static inline float fmax32(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static inline double fmin64(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

static inline double fmax64(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static inline uint64_t f32_op(const struct ptx_insn *in, uint64_t av,
			      uint64_t bv, uint64_t cv)
{
	float a = ptx_f32(av), b = ptx_f32(bv), c = ptx_f32(cv), r;
	if (in->ftz) {
		a = ptx_ftz(a);
		b = ptx_ftz(b);
		c = ptx_ftz(c);
	}
	switch (in->op) {
	case OP_ADD: r = a + b; break;
	case OP_SUB: r = a - b; break;
	case OP_MUL: r = a * b; break;
	case OP_DIV: r = a / b; break;
	case OP_FMA: r = fmaf(a, b, c); break;
	case OP_MIN: r = fmin32(a, b); break;
	case OP_MAX: r = fmax32(a, b); break;
	case OP_RCP: r = 1.0f / a; break;
	case OP_SQRT: r = sqrtf(a); break;
	case OP_RSQRT: r = (float)(1.0 / sqrt((double)a)); break;
	case OP_SIN: r = (float)sin((double)a); break;
	case OP_COS: r = (float)cos((double)a); break;
	case OP_LG2: r = (float)log2((double)a); break;
	case OP_EX2: r = (float)exp2((double)a); break;
	case OP_TANH: r = (float)tanh((double)a); break;
	case OP_ABS: {
		uint32_t x = (uint32_t)ptx_bits32(a);
		if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
			return (uint32_t)av & 0x7fffffffu;
		return x & 0x7fffffffu;
	}
	case OP_NEG: {
		uint32_t x = (uint32_t)av;
		if (in->ftz)
			x = (uint32_t)ptx_bits32(a);
		return (x ^ 0x80000000u);
	}
	case OP_COPYSIGN: {
		uint32_t x = (uint32_t)av, y = (uint32_t)bv;
		return (y & 0x7fffffffu) | (x & 0x80000000u);
	}
	default: r = 0; break;
	}
	if (in->ftz)
		r = ptx_ftz(r);
	if (in->sat)
		r = ptx_sat32(r);
	return ptx_bits32(r);
}

static inline uint64_t f64_op(const struct ptx_insn *in, uint64_t av,
			      uint64_t bv, uint64_t cv)
{
	double a = ptx_f64(av), b = ptx_f64(bv), c = ptx_f64(cv), r;
	switch (in->op) {
	case OP_ADD: r = a + b; break;
	case OP_SUB: r = a - b; break;
	case OP_MUL: r = a * b; break;
	case OP_DIV: r = a / b; break;
	case OP_FMA: r = fma(a, b, c); break;
	case OP_MIN: r = fmin64(a, b); break;
	case OP_MAX: r = fmax64(a, b); break;
	case OP_RCP: r = 1.0 / a; break;
	case OP_SQRT: r = sqrt(a); break;
	case OP_RSQRT: r = 1.0 / sqrt(a); break;
	case OP_ABS: return av & 0x7fffffffffffffffull;
	case OP_NEG: return av ^ 0x8000000000000000ull;
	case OP_COPYSIGN:
		return (bv & 0x7fffffffffffffffull) | (av & 0x8000000000000000ull);
	default: r = 0; break;
	}
	if (in->sat)
		r = ptx_sat64(r);
	return ptx_bits64(r);
}

static inline bool fcmp(unsigned cmp, double x, double y)
{
	bool u = x != x || y != y;
	switch (cmp) {
	case CMP_EQ: return !u && x == y;
	case CMP_NE: return !u && x != y;
	case CMP_LT: return !u && x < y;
	case CMP_LE: return !u && x <= y;
	case CMP_GT: return !u && x > y;
	case CMP_GE: return !u && x >= y;
	case CMP_EQU: return u || x == y;
	case CMP_NEU: return u || x != y;
	case CMP_LTU: return u || x < y;
	case CMP_LEU: return u || x <= y;
	case CMP_GTU: return u || x > y;
	case CMP_GEU: return u || x >= y;
	case CMP_NUM: return !u;
	case CMP_NAN: return u;
	}
	return false;
}

static inline bool icmp(unsigned cmp, unsigned t, uint64_t a, uint64_t b)
{
	int64_t sa = (int64_t)ext(a, t), sb = (int64_t)ext(b, t);
	uint64_t ua = a & ones(bits_of(t)), ub = b & ones(bits_of(t));
	switch (cmp) {
	case CMP_EQ: return ua == ub;
	case CMP_NE: return ua != ub;
	case CMP_LT: return sa < sb;
	case CMP_LE: return sa <= sb;
	case CMP_GT: return sa > sb;
	case CMP_GE: return sa >= sb;
	case CMP_LO: return ua < ub;
	case CMP_LS: return ua <= ub;
	case CMP_HI: return ua > ub;
	case CMP_HS: return ua >= ub;
	}
	return false;
}

static inline double src_float(unsigned t, uint64_t v, bool ftz)
{
	if (t == PT_F32) {
		float f = ptx_f32(v);
		return ftz ? ptx_ftz(f) : f;
	}
	return ptx_f64(v);
}

/* Half precision bits to double (exact). */
static double half_to_double(uint16_t h)
{
	unsigned e = (h >> 10) & 31, f = h & 1023;
	double v;
	if (e == 31)
		v = f ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)f, -24);
	else
		v = ldexp((double)(1024 + f), (int)e - 25);
	return (h & 0x8000) ? -v : v;
}

/*
 * x rounded to half precision per rnd. Half encodings are continuous: for
 * an exponent e (clamped to -14 for subnormals) the bits are
 * (e + 14) * 1024 + round(|x| * 2^(10 - e)), carries included.
 */
static uint16_t double_to_half(double x, unsigned rnd)
{
	if (x != x)
		return 0x7fff;
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x);
	if (isinf(a))
		return sign | 0x7c00;
	if (a == 0)
		return sign;
	bool up;  /* magnitude rounds away from zero on a tie-free remainder */
	int e;
	frexp(a, &e);
	e -= 1;  /* a = m * 2^e, m in [1, 2) */
	if (e < -14)
		e = -14;
	double q = ldexp(a, 10 - e), r = floor(q), frac = q - r;
	switch (rnd) {
	case RND_RZ: up = false; break;
	case RND_RM: up = sign && frac > 0; break;
	case RND_RP: up = !sign && frac > 0; break;
	default: up = frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0); break;
	}
	if (up)
		r += 1;
	double bits = (double)(e + 14) * 1024 + r;
	if (bits >= 0x7c00) {
		bool inf = rnd == RND_RN || rnd == RND_NONE || (rnd == RND_RM && sign) ||
			   (rnd == RND_RP && !sign);
		return sign | (inf ? 0x7c00 : 0x7bff);
	}
	return sign | (uint16_t)bits;
}

/* One cvt, in the rounding mode already set for it. */
static uint64_t cvt(const struct ptx_insn *in, uint64_t v)
{
	unsigned dt = in->type, st = in->type2;
	bool df = ptx_type_float(dt), sf = ptx_type_float(st);
	if (st == PT_F16) {
		double x = half_to_double((uint16_t)v);
		return dt == PT_F32 ? ptx_bits32((float)x) : ptx_bits64(x);
	}
	if (dt == PT_F16) {
		double x = src_float(st, v, false);
		if (in->sat)
			x = ptx_sat64(x);
		return double_to_half(x, in->rnd);
	}
	if (sf) {
		double x = src_float(st, v, in->ftz);
		if (df) {
			if (dt == PT_F32) {
				float r;
				if (st == PT_F32 && in->rnd >= RND_RNI)
					r = (float)ptx_round_integral(x, in->rnd);
				else
					r = (float)x;  /* f64->f32 in the current mode */
				if (in->ftz)
					r = ptx_ftz(r);
				if (in->sat)
					r = ptx_sat32(r);
				return ptx_bits32(r);
			}
			double r = x;
			if (st == PT_F64 && in->rnd >= RND_RNI)
				r = ptx_round_integral(x, in->rnd);
			if (in->sat)
				r = ptx_sat64(r);
			return ptx_bits64(r);
		}
		/* float -> integer: round, NaN to 0, saturate */
		if (x != x)
			return 0;
		double r = ptx_round_integral(x, in->rnd);
		unsigned n = bits_of(dt);
		if (ptx_type_signed(dt)) {
			double lo = -ldexp(1.0, (int)n - 1), hi = ldexp(1.0, (int)n - 1);
			int64_t iv;
			if (r <= lo)
				iv = n == 64 ? INT64_MIN : -(int64_t)(1ull << (n - 1));
			else if (r >= hi)
				iv = n == 64 ? INT64_MAX : (int64_t)((1ull << (n - 1)) - 1);
			else
				iv = (int64_t)r;
			return ext((uint64_t)iv, dt);
		}
		double hi = ldexp(1.0, (int)n);
		if (r <= 0)
			return 0;
		if (r >= hi)
			return ones(n);
		return (uint64_t)r;
	}
	/* integer source */
	uint64_t u = ext(v, st);
	if (df) {
		if (dt == PT_F32) {
			float r = ptx_type_signed(st) ? (float)(int64_t)u : (float)u;
			return ptx_bits32(r);
		}
		double r = ptx_type_signed(st) ? (double)(int64_t)u : (double)u;
		return ptx_bits64(r);
	}
	if (in->sat) {
		unsigned n = bits_of(dt);
		if (ptx_type_signed(dt)) {
			int64_t hi = n == 64 ? INT64_MAX : (int64_t)((1ull << (n - 1)) - 1);
			int64_t lo = -hi - 1;
			if (ptx_type_signed(st)) {
				int64_t s = (int64_t)u;
				u = (uint64_t)(s > hi ? hi : s < lo ? lo : s);
			} else if (u > (uint64_t)hi) {
				u = (uint64_t)hi;
			}
		} else {
			uint64_t hi = ones(n);
			if (ptx_type_signed(st) && (int64_t)u < 0)
				u = 0;
			else if (u > hi)
				u = hi;
		}
	}
	return ext(u, dt);
}

/* ---- memory ---- */

enum mspace { MS_GLOBAL, MS_SHARED, MS_LOCAL, MS_KPARAM };

struct access {
	uint64_t addr[PTX_WARP_SIZE];
	uint8_t space[PTX_WARP_SIZE];
};

static inline void resolve(const struct ptx_block *b, const struct ptx_warp *w,
			   const struct ptx_insn *in, const struct ptx_operand *a,
			   unsigned l, uint64_t *addr, uint8_t *space)
{
	uint64_t v;
	unsigned sp = in->space;
	switch (a->base) {
	case AB_REG:
		v = w->regs[(size_t)a->reg * PTX_WARP_SIZE + l] + a->imm;
		break;
	case AB_VAR:
		v = b->run->launch->var_addresses[a->reg] + a->imm;
		sp = SP_GLOBAL;
		break;
	case AB_SHARED:
		v = a->imm;
		sp = SP_SHARED;
		break;
	case AB_KPARAM:
		*addr = a->imm;
		*space = MS_KPARAM;
		return;
	case AB_FRAME:
		v = w->local_base + a->imm;
		sp = SP_LOCAL;
		break;
	default:
		v = a->imm;
		break;
	}
	switch (sp) {
	case SP_GENERIC:
		if (v - PTX_SHARED_WINDOW < (1ull << 32)) {
			*addr = v - PTX_SHARED_WINDOW;
			*space = MS_SHARED;
		} else if (v - PTX_LOCAL_WINDOW < (1ull << 32)) {
			*addr = v - PTX_LOCAL_WINDOW;
			*space = MS_LOCAL;
		} else {
			*addr = v;
			*space = MS_GLOBAL;
		}
		return;
	case SP_SHARED:
		*addr = v;
		*space = MS_SHARED;
		return;
	case SP_LOCAL:
	case SP_PARAM:
		*addr = v;
		*space = MS_LOCAL;
		return;
	default:
		*addr = v;
		*space = MS_GLOBAL;
		return;
	}
}

static const char *const space_name[] = { "global", "shared", "local", "param" };

/* Host pointer for a non-global access, or NULL (fault recorded). */
static uint8_t *near_ptr(struct ptx_block *b, struct ptx_warp *w,
			 const struct ptx_insn *in, unsigned l, uint64_t addr,
			 unsigned space, unsigned size, int *rc)
{
	struct ptx_run *run = b->run;
	uint64_t limit;
	uint8_t *base;
	switch (space) {
	case MS_SHARED:
		limit = run->shared_bytes;
		base = b->shared;
		break;
	case MS_LOCAL:
		limit = run->stack_bytes;
		base = w->local + (size_t)l * run->stack_bytes;
		break;
	default:
		limit = run->launch->param_size;
		base = (uint8_t *)run->launch->params;
		break;
	}
	if (addr > limit || limit - addr < size) {
		*rc = ptx_fault(b, in, -EFAULT, PTX_FAULT_MEMORY, addr,
				"%s access of %u bytes at 0x%llx out of bounds (%llu bytes)",
				space_name[space], size, (unsigned long long)addr,
				(unsigned long long)limit);
		return NULL;
	}
	if (addr % size) {
		*rc = ptx_fault(b, in, -EFAULT, PTX_FAULT_MISALIGNED, addr,
				"misaligned %s access of %u bytes at 0x%llx",
				space_name[space], size, (unsigned long long)addr);
		return NULL;
	}
	return base + addr;
}

static unsigned count_sectors(const uint64_t *addr, uint32_t mask, unsigned size)
{
	uint64_t seen[2 * PTX_WARP_SIZE];
	unsigned n = 0;
	FOR_LANES(mask)
		for (uint64_t s = addr[l] / 32; s <= (addr[l] + size - 1) / 32; s++) {
			unsigned k;
			for (k = 0; k < n; k++)
				if (seen[k] == s)
					break;
			if (k == n && n < 2 * PTX_WARP_SIZE)
				seen[n++] = s;
		}
	END_LANES
	return n;
}

/* True when the lanes of mask access one run of bytes in lane order. */
static bool contiguous(const uint64_t *addr, uint32_t mask, unsigned size)
{
	uint32_t span = mask >> __builtin_ctz(mask);
	if (span & (span + 1))
		return false;  /* holes in the mask */
	unsigned first = (unsigned)__builtin_ctz(mask);
	FOR_LANES(mask & (mask - 1))
		if (addr[l] != addr[first] + (uint64_t)(l - first) * size)
			return false;
	END_LANES
	return true;
}

/* Every lane of mask at one address (a broadcast: one transaction). */
static bool uniform(const uint64_t *addr, uint32_t mask)
{
	unsigned first = (unsigned)__builtin_ctz(mask);
	FOR_LANES(mask & (mask - 1))
		if (addr[l] != addr[first])
			return false;
	END_LANES
	return true;
}

static int global_fault(struct ptx_block *b, const struct ptx_insn *in,
			const char *what, uint64_t addr, unsigned size)
{
	return ptx_fault(b, in, -EFAULT, PTX_FAULT_MEMORY, addr,
			 "global %s of %u bytes at 0x%llx failed", what, size,
			 (unsigned long long)addr);
}

static int global_check_align(struct ptx_block *b, const struct ptx_insn *in,
			      const uint64_t *addr, uint32_t mask, unsigned size)
{
	FOR_LANES(mask)
		if (addr[l] % size)
			return ptx_fault(b, in, -EFAULT, PTX_FAULT_MISALIGNED, addr[l],
					 "misaligned global access of %u bytes at 0x%llx",
					 size, (unsigned long long)addr[l]);
	END_LANES
	return 0;
}

static int do_load(struct ptx_block *b, struct ptx_warp *w,
		   const struct ptx_insn *in, uint32_t act)
{
	struct ptx_worker *wk = b->worker;
	const struct ptx_launch *L = b->run->launch;
	unsigned esize = ptx_type_size(in->type), size = esize * in->vec;
	struct access ac;
	uint32_t gmask = 0;
	uint8_t buf[PTX_WARP_SIZE][16];
	int rc = 0;
	FOR_LANES(act)
		resolve(b, w, in, &in->o[0], l, &ac.addr[l], &ac.space[l]);
		if (ac.space[l] == MS_GLOBAL) {
			gmask |= 1u << l;
			continue;
		}
		uint8_t *p = near_ptr(b, w, in, l, ac.addr[l], ac.space[l], size, &rc);
		if (!p)
			return rc;
		memcpy(buf[l], p, size);
		if (ac.space[l] == MS_SHARED)
			wk->stats.shared_load_bytes += size;
		else if (ac.space[l] == MS_LOCAL)
			wk->stats.local_load_bytes += size;
	END_LANES
	if (gmask) {
		if ((rc = global_check_align(b, in, ac.addr, gmask, size)))
			return rc;
		unsigned first = (unsigned)__builtin_ctz(gmask);
		bool done = false;
		if (contiguous(ac.addr, gmask, size) && gmask != (1u << first)) {
			uint8_t tmp[PTX_WARP_SIZE * 16];
			unsigned n = ptx_popcount32(gmask) * size;
			if (!L->mem->read(L->mem_ctx, ac.addr[first], tmp, n)) {
				FOR_LANES(gmask)
					memcpy(buf[l], tmp + (l - first) * size, size);
				END_LANES
				done = true;
			}
		} else if (gmask != (1u << first) && uniform(ac.addr, gmask)) {
			/* a broadcast (a constant, a flag): one read for the warp */
			if (!L->mem->read(L->mem_ctx, ac.addr[first], buf[first], size)) {
				FOR_LANES(gmask)
					memcpy(buf[l], buf[first], size);
				END_LANES
				done = true;
			}
		}
		if (!done) {
			FOR_LANES(gmask)
				if (L->mem->read(L->mem_ctx, ac.addr[l], buf[l], size))
					return global_fault(b, in, "load", ac.addr[l], size);
			END_LANES
		}
		wk->stats.global_load_bytes += (uint64_t)ptx_popcount32(gmask) * size;
		wk->stats.global_load_transactions += count_sectors(ac.addr, gmask, size);
	}
	uint64_t *R = w->regs;
	FOR_LANES(act)
		for (unsigned k = 0; k < in->vec; k++) {
			uint64_t v = 0;
			memcpy(&v, buf[l] + k * esize, esize);
			wr(R, &in->o[1 + k], l, ext(v, in->type));
		}
	END_LANES
	return 0;
}

static int do_store(struct ptx_block *b, struct ptx_warp *w,
		    const struct ptx_insn *in, uint32_t act)
{
	struct ptx_worker *wk = b->worker;
	const struct ptx_launch *L = b->run->launch;
	unsigned esize = ptx_type_size(in->type), size = esize * in->vec;
	struct access ac;
	uint32_t gmask = 0;
	uint8_t buf[PTX_WARP_SIZE][16];
	int rc = 0;
	const uint64_t *R = w->regs;
	FOR_LANES(act)
		for (unsigned k = 0; k < in->vec; k++) {
			uint64_t v = rd(R, &in->o[1 + k], l);
			memcpy(buf[l] + k * esize, &v, esize);
		}
		resolve(b, w, in, &in->o[0], l, &ac.addr[l], &ac.space[l]);
		if (ac.space[l] == MS_GLOBAL) {
			gmask |= 1u << l;
			continue;
		}
		if (ac.space[l] == MS_KPARAM)
			return ptx_fault(b, in, -EFAULT, PTX_FAULT_MEMORY, ac.addr[l],
					 "store to the kernel parameter block");
		uint8_t *p = near_ptr(b, w, in, l, ac.addr[l], ac.space[l], size, &rc);
		if (!p)
			return rc;
		memcpy(p, buf[l], size);
		if (ac.space[l] == MS_SHARED)
			wk->stats.shared_store_bytes += size;
		else
			wk->stats.local_store_bytes += size;
	END_LANES
	if (gmask) {
		if ((rc = global_check_align(b, in, ac.addr, gmask, size)))
			return rc;
		unsigned first = (unsigned)__builtin_ctz(gmask);
		bool done = false;
		if (contiguous(ac.addr, gmask, size) && gmask != (1u << first)) {
			uint8_t tmp[PTX_WARP_SIZE * 16];
			unsigned n = ptx_popcount32(gmask) * size;
			FOR_LANES(gmask)
				memcpy(tmp + (l - first) * size, buf[l], size);
			END_LANES
			done = !L->mem->write(L->mem_ctx, ac.addr[first], tmp, n);
		}
		if (!done) {
			/* lane order: the highest lane's value wins, as on the GPU */
			FOR_LANES(gmask)
				if (L->mem->write(L->mem_ctx, ac.addr[l], buf[l], size))
					return global_fault(b, in, "store", ac.addr[l], size);
			END_LANES
		}
		wk->stats.global_store_bytes += (uint64_t)ptx_popcount32(gmask) * size;
		wk->stats.global_store_transactions += count_sectors(ac.addr, gmask, size);
	}
	return 0;
}

static enum ptx_atomic_type atype(unsigned t)
{
	switch (t) {
	case PT_S32: return PTX_ATYPE_S32;
	case PT_U64: case PT_B64: return PTX_ATYPE_U64;
	case PT_S64: return PTX_ATYPE_S64;
	case PT_F32: return PTX_ATYPE_F32;
	case PT_F64: return PTX_ATYPE_F64;
	default: return PTX_ATYPE_U32;
	}
}

static int do_atomic(struct ptx_block *b, struct ptx_warp *w,
		     const struct ptx_insn *in, uint32_t act)
{
	struct ptx_worker *wk = b->worker;
	const struct ptx_launch *L = b->run->launch;
	unsigned size = ptx_type_size(in->type);
	uint64_t *R = w->regs;
	int rc = 0;
	struct ptx_atomic op = { .op = (enum ptx_atomic_op)in->uni,
				 .type = atype(in->type), .size = size };
	FOR_LANES(act)
		uint64_t addr, old = 0;
		uint8_t space;
		resolve(b, w, in, &in->o[0], l, &addr, &space);
		op.operand = rd(R, &in->o[2], l);
		op.swap = in->uni == PTX_ATOM_CAS ? rd(R, &in->o[3], l) : 0;
		if (space == MS_GLOBAL) {
			if (addr % size)
				return ptx_fault(b, in, -EFAULT, PTX_FAULT_MISALIGNED, addr,
						 "misaligned atomic at 0x%llx",
						 (unsigned long long)addr);
			if (L->mem->atomic(L->mem_ctx, addr, &op, &old))
				return global_fault(b, in, "atomic", addr, size);
			wk->stats.global_atomics++;
		} else {
			if (space == MS_KPARAM)
				return ptx_fault(b, in, -EFAULT, PTX_FAULT_MEMORY, addr,
						 "atomic on the parameter block");
			uint8_t *p = near_ptr(b, w, in, l, addr, space, size, &rc);
			if (!p)
				return rc;
			memcpy(&old, p, size);
			uint64_t nv = ptx_atomic_apply(&op, old);
			memcpy(p, &nv, size);
			wk->stats.shared_atomics++;
		}
		if (in->o[1].kind == OPK_REG)
			wr(R, &in->o[1], l, ext(old, in->type));
	END_LANES
	return 0;
}

/* ---- special registers ---- */

static uint64_t sreg(const struct ptx_block *b, const struct ptx_warp *w,
		     unsigned id, unsigned l)
{
	const struct ptx_launch *L = b->run->launch;
	uint32_t t = w->index * PTX_WARP_SIZE + l;
	switch (id) {
	case SR_TID_X: return t % L->block.x;
	case SR_TID_Y: return (t / L->block.x) % L->block.y;
	case SR_TID_Z: return t / (L->block.x * L->block.y);
	case SR_NTID_X: return L->block.x;
	case SR_NTID_Y: return L->block.y;
	case SR_NTID_Z: return L->block.z;
	case SR_CTAID_X: return b->ctaid.x;
	case SR_CTAID_Y: return b->ctaid.y;
	case SR_CTAID_Z: return b->ctaid.z;
	case SR_NCTAID_X: return L->grid.x;
	case SR_NCTAID_Y: return L->grid.y;
	case SR_NCTAID_Z: return L->grid.z;
	case SR_LANEID: return l;
	case SR_WARPID: return w->index;
	case SR_NWARPID: return b->nwarps;
	case SR_SMID: return b->worker->index;
	case SR_NSMID: return L->host_threads ? L->host_threads : 1;
	case SR_GRIDID: return 1;
	case SR_CLOCK: return (uint32_t)b->worker->stats.warp_instructions;
	case SR_CLOCK64: return b->worker->stats.warp_instructions;
	case SR_LANEMASK_EQ: return 1u << l;
	case SR_LANEMASK_LE: return (uint32_t)ones(l + 1);
	case SR_LANEMASK_LT: return (uint32_t)ones(l);
	case SR_LANEMASK_GE: return (uint32_t)~ones(l);
	case SR_LANEMASK_GT: return (uint32_t)~ones(l + 1);
	case SR_GLOBALTIMER: return b->worker->stats.warp_instructions;
	case SR_DYNAMIC_SMEM_SIZE: return L->dynamic_shared_bytes;
	case SR_TOTAL_SMEM_SIZE: return b->run->shared_bytes;
	}
	return 0;
}

/* ---- warp synchronization ---- */

/*
 * A .sync instruction with member mask: 1 when the active lanes may go on,
 * 0 when they were parked to wait for the others, or a fault's rc.
 */
static int warp_sync(struct ptx_block *b, struct ptx_warp *w,
		     const struct ptx_insn *in, uint32_t members)
{
	uint32_t need = members & w->initial & ~w->exited;
	if (!(need & ~w->active))
		return 1;
	uint32_t others = w->live & ~w->blocked & ~w->parked & ~w->active;
	if (others) {
		w->parked |= w->active;
		set_active_pcs(w, w->cur_pc);
		ptx_warp_schedule(w);
		return 0;
	}
	return ptx_fault(b, in, -EDEADLK, PTX_FAULT_DEADLOCK, 0,
			 "warp-synchronous instruction waits for lanes 0x%08x "
			 "that never arrive (warp %u)", need & ~w->active, w->index);
}

/* ---- calls ---- */

static int grow_regstack(struct ptx_warp *w, uint32_t need)
{
	if (need <= w->regstack_cap)
		return 0;
	uint32_t cap = w->regstack_cap ? w->regstack_cap : 64;
	while (cap < need)
		cap *= 2;
	uint64_t *r = realloc(w->regstack, (size_t)cap * PTX_WARP_SIZE * 8);
	if (!r)
		return -ENOMEM;
	w->regstack = r;
	w->regstack_cap = cap;
	w->regs = w->regstack + (size_t)w->reg_base * PTX_WARP_SIZE;
	return 0;
}

static int do_call(struct ptx_block *b, struct ptx_warp *w,
		   const struct ptx_insn *in, uint32_t act)
{
	struct ptx_run *run = b->run;
	const struct ptx_call *call = &w->func->calls[in->target];
	const struct ptx_func *g = &run->module->funcs[call->callee];
	if (w->depth + 1 > run->max_depth)
		return ptx_fault(b, in, -ELOOP, PTX_FAULT_STACK, 0,
				 "call depth exceeds %u", run->max_depth);
	uint32_t local_base = w->local_base + w->func->frame_bytes;
	if ((uint64_t)local_base + g->frame_bytes > run->stack_bytes)
		return ptx_fault(b, in, -ELOOP, PTX_FAULT_STACK, 0,
				 "local stack of %u bytes per thread exhausted at call "
				 "depth %u", run->stack_bytes, w->depth + 1);
	uint32_t reg_base = w->reg_base + w->func->nregs;
	if (grow_regstack(w, reg_base + g->nregs))
		return ptx_fault(b, in, -ENOMEM, PTX_FAULT_STACK, 0, "out of memory");
	if (w->depth >= w->frames_cap) {
		uint32_t cap = w->frames_cap ? w->frames_cap * 2 : 8;
		struct ptx_frame *f = realloc(w->frames, cap * sizeof(*f));
		if (!f)
			return ptx_fault(b, in, -ENOMEM, PTX_FAULT_STACK, 0, "out of memory");
		w->frames = f;
		w->frames_cap = cap;
	}
	/* caller lanes resume after the call */
	set_active_pcs(w, w->cur_pc + 1);
	struct ptx_frame *fr = &w->frames[w->depth++];
	fr->func = w->func_index;
	fr->reg_base = w->reg_base;
	fr->local_base = w->local_base;
	fr->call = in->target;
	fr->caller_live = w->live;
	memcpy(fr->saved_pc, w->pc, sizeof(w->pc));
	/* arguments into the callee's formal parameters */
	FOR_LANES(act)
		uint8_t *lm = w->local + (size_t)l * run->stack_bytes;
		for (uint32_t k = 0; k < call->nargs; k++)
			memcpy(lm + local_base + g->params[k].offset,
			       lm + w->local_base + call->arg_offset[k], call->arg_size[k]);
	END_LANES
	w->func_index = call->callee;
	w->func = g;
	w->reg_base = reg_base;
	w->regs = w->regstack + (size_t)reg_base * PTX_WARP_SIZE;
	memset(w->regs, 0, (size_t)g->nregs * PTX_WARP_SIZE * 8);
	w->local_base = local_base;
	w->live = act;
	w->returned = 0;
	FOR_LANES(act)
		w->pc[l] = 0;
	END_LANES
	ptx_warp_schedule(w);
	return 0;
}

static void do_return(struct ptx_block *b, struct ptx_warp *w)
{
	struct ptx_run *run = b->run;
	struct ptx_frame *fr = &w->frames[--w->depth];
	const struct ptx_func *caller = &run->module->funcs[fr->func];
	const struct ptx_call *call = &caller->calls[fr->call];
	const struct ptx_func *g = w->func;
	FOR_LANES(w->returned & ~w->exited)
		uint8_t *lm = w->local + (size_t)l * run->stack_bytes;
		for (uint32_t k = 0; k < call->nrets; k++)
			memcpy(lm + fr->local_base + call->ret_offset[k],
			       lm + w->local_base + g->rets[k].offset, call->ret_size[k]);
	END_LANES
	w->func_index = fr->func;
	w->func = caller;
	w->reg_base = fr->reg_base;
	w->regs = w->regstack + (size_t)fr->reg_base * PTX_WARP_SIZE;
	w->local_base = fr->local_base;
	w->live = fr->caller_live & ~w->exited;
	memcpy(w->pc, fr->saved_pc, sizeof(w->pc));
	w->returned = 0;
	ptx_warp_schedule(w);
}

/* A NUL-terminated string of at most max - 1 bytes at generic va. */
static void read_string(struct ptx_block *b, uint64_t va, char *out, size_t max)
{
	const struct ptx_launch *L = b->run->launch;
	size_t n = 0;
	for (; n + 1 < max; n++) {
		char c;
		if (L->mem->read(L->mem_ctx, va + n, &c, 1) || !c)
			break;
		out[n] = c;
	}
	out[n] = '\0';
}

/*
 * vprintf: counted, output dropped, returns 0. __assertfail: the launch
 * fails as a trap naming the assertion, file and line.
 */
static int do_builtin(struct ptx_block *b, struct ptx_warp *w,
		      const struct ptx_insn *in, uint32_t act)
{
	struct ptx_run *run = b->run;
	const struct ptx_call *call = &w->func->calls[in->target];
	const struct ptx_func *g = &run->module->funcs[call->callee];
	if (g->builtin == BUILTIN_VPRINTF) {
		FOR_LANES(act)
			uint8_t *lm = w->local + (size_t)l * run->stack_bytes + w->local_base;
			memset(lm + call->ret_offset[0], 0, call->ret_size[0]);
		END_LANES
		b->worker->stats.printf_calls += ptx_popcount32(act);
		return 0;
	}
	unsigned l = (unsigned)__builtin_ctz(act);
	uint8_t *lm = w->local + (size_t)l * run->stack_bytes + w->local_base;
	uint64_t msg, file;
	uint32_t line;
	memcpy(&msg, lm + call->arg_offset[0], 8);
	memcpy(&file, lm + call->arg_offset[1], 8);
	memcpy(&line, lm + call->arg_offset[2], 4);
	char m[64], f[48];
	read_string(b, msg, m, sizeof(m));
	read_string(b, file, f, sizeof(f));
	return ptx_fault(b, in, -ECANCELED, PTX_FAULT_TRAP, 0,
			 "assertion '%s' failed at %s:%u (thread %u of warp %u)", m, f, line,
			 l, w->index);
}

/* ---- the interpreter loop ---- */

static int poll(struct ptx_block *b, const struct ptx_insn *in)
{
	struct ptx_worker *wk = b->worker;
	struct ptx_run *run = b->run;
	uint64_t total = atomic_fetch_add(&run->instructions, wk->unpolled) + wk->unpolled;
	wk->unpolled = 0;
	if (atomic_load(&run->abort))
		return -ECANCELED;
	if (total > run->budget)
		return ptx_fault(b, in, -ETIMEDOUT, PTX_FAULT_WATCHDOG, 0,
				 "watchdog: instruction budget of %llu warp instructions "
				 "exhausted", (unsigned long long)run->budget);
	const struct ptx_launch *L = run->launch;
	if (L->poll && L->poll(L->poll_ctx))
		return ptx_fault(b, in, -ETIMEDOUT, PTX_FAULT_WATCHDOG, 0,
				 "watchdog: launch stopped by its poll callback");
	return 0;
}

int ptx_warp_run(struct ptx_block *b, struct ptx_warp *w, uint32_t slice)
{
	struct ptx_worker *wk = b->worker;
	struct ptx_stats *st = &wk->stats;
	int rc;
	for (uint32_t executed = 0;; executed++) {
		if (!w->active) {
			ptx_warp_schedule(w);
			if (!w->active) {
				if (w->live & ~w->blocked)
					return 0;  /* parked lanes cannot happen here */
				if (!w->live && w->depth) {
					do_return(b, w);
					continue;
				}
				return 0;
			}
		}
		if (executed >= slice)
			return 0;  /* runnable: active lanes wait at cur_pc */
		const struct ptx_insn *in = &w->func->insns[w->cur_pc];
		uint64_t *R = w->regs;
		uint32_t act = w->active;
		if (in->guard != PTX_NO_GUARD) {
			uint32_t g = 0;
			const uint64_t *p = R + (size_t)in->guard * PTX_WARP_SIZE;
			FOR_LANES(act)
				g |= (uint32_t)((p[l] & 1) ^ in->guard_neg) << l;
			END_LANES
			act = g;
		}
		st->warp_instructions++;
		unsigned nact = ptx_popcount32(act);
		st->thread_instructions += nact;
		st->thread_instructions_by_class[in->cls] += nact;
		if (++wk->unpolled >= PTX_POLL_INTERVAL && (rc = poll(b, in)))
			return rc;

		const struct ptx_operand *o = in->o;
		unsigned t = in->type;
		switch (in->op) {
		case OP_NOP:
			break;
		case OP_MOV:
			if (in->mode == 1) {  /* pack */
				unsigned es = bits_of(t) / in->vec;
				FOR_LANES(act)
					uint64_t v = 0;
					for (unsigned k = 0; k < in->vec; k++)
						v |= (rd(R, &o[1 + k], l) & ones(es)) << (k * es);
					wr(R, &o[0], l, v);
				END_LANES
			} else if (in->mode == 2) {  /* unpack */
				unsigned es = bits_of(t) / in->vec;
				FOR_LANES(act)
					uint64_t v = rd(R, &o[in->vec], l);
					for (unsigned k = 0; k < in->vec; k++)
						wr(R, &o[k], l, (v >> (k * es)) & ones(es));
				END_LANES
			} else if (o[1].kind == OPK_SYM) {
				uint64_t base;
				switch (o[1].base) {
				case AB_VAR:
					base = b->run->launch->var_addresses[o[1].reg];
					break;
				case AB_FRAME:
					base = w->local_base;
					break;
				default:
					base = 0;
					break;
				}
				FOR_LANES(act)
					wr(R, &o[0], l, ext(base + o[1].imm, t));
				END_LANES
			} else {
				FOR_LANES(act)
					wr(R, &o[0], l, ext(rd(R, &o[1], l), t));
				END_LANES
			}
			break;
		case OP_SREG:
			FOR_LANES(act)
				wr(R, &o[0], l, ext(sreg(b, w, o[1].reg, l), t));
			END_LANES
			break;
		case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM:
		case OP_MIN: case OP_MAX: case OP_AND: case OP_OR: case OP_XOR:
		case OP_SHL: case OP_SHR: case OP_COPYSIGN:
			if (in->cc) {
				carry_arith(w, in, R, act);
				break;
			}
			if (fast_binop(in, R, act))
				break;
			if (t == PT_F32 || t == PT_F64) {
				int mode = ptx_host_rounding(in->rnd);
				if (mode != FE_TONEAREST)
					fesetround(mode);
				if (t == PT_F32) {
					FOR_LANES(act)
						wr(R, &o[0], l, f32_op(in, rd(R, &o[1], l), rd(R, &o[2], l), 0));
					END_LANES
				} else {
					FOR_LANES(act)
						wr(R, &o[0], l, f64_op(in, rd(R, &o[1], l), rd(R, &o[2], l), 0));
					END_LANES
				}
				if (mode != FE_TONEAREST)
					fesetround(FE_TONEAREST);
			} else if (t == PT_PRED) {
				FOR_LANES(act)
					wr(R, &o[0], l, int_bin(in->op, 0, PT_B64, false, rd(R, &o[1], l),
							       rd(R, &o[2], l)) & 1);
				END_LANES
			} else {
				unsigned rt = in->mode == MODE_WIDE ? wide_of(t) : t;
				FOR_LANES(act)
					wr(R, &o[0], l, ext(int_bin(in->op, in->mode, t, in->sat,
								    rd(R, &o[1], l), rd(R, &o[2], l)), rt));
				END_LANES
			}
			break;
		case OP_FMA:
			if (t == PT_F32 && in->rnd == RND_RN && !in->ftz && !in->sat) {
				FOR_LANES(act)
					float r = fmaf(ptx_f32(rd(R, &o[1], l)), ptx_f32(rd(R, &o[2], l)),
						       ptx_f32(rd(R, &o[3], l)));
					wr(R, &o[0], l, ptx_bits32(r));
				END_LANES
				break;
			}
			if (t == PT_F32 || t == PT_F64) {
				int mode = ptx_host_rounding(in->rnd);
				if (mode != FE_TONEAREST)
					fesetround(mode);
				FOR_LANES(act)
					uint64_t a = rd(R, &o[1], l), bb = rd(R, &o[2], l), c = rd(R, &o[3], l);
					wr(R, &o[0], l, t == PT_F32 ? f32_op(in, a, bb, c) : f64_op(in, a, bb, c));
				END_LANES
				if (mode != FE_TONEAREST)
					fesetround(FE_TONEAREST);
			}
			break;
		case OP_MAD: {
			if (in->cc) {
				carry_arith(w, in, R, act);
				break;
			}
			unsigned rt = in->mode == MODE_WIDE ? wide_of(t) : t;
			FOR_LANES(act)
				uint64_t p = int_bin(OP_MUL, in->mode, t, false, rd(R, &o[1], l),
						     rd(R, &o[2], l));
				uint64_t c = rd(R, &o[3], l);
				uint64_t r;
				if (in->sat) {  /* mad.hi.sat.s32 */
					int64_t s = (int64_t)(int32_t)p + (int64_t)(int32_t)c;
					r = (uint64_t)(s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s);
				} else {
					r = p + c;
				}
				wr(R, &o[0], l, ext(r, rt));
			END_LANES
			break;
		}
		case OP_SAD:
			FOR_LANES(act)
				int64_t a = (int64_t)ext(rd(R, &o[1], l), t);
				int64_t bb = (int64_t)ext(rd(R, &o[2], l), t);
				uint64_t d;
				if (ptx_type_signed(t))
					d = a > bb ? (uint64_t)a - (uint64_t)bb : (uint64_t)bb - (uint64_t)a;
				else {
					uint64_t ua = (uint64_t)a & ones(bits_of(t));
					uint64_t ub = (uint64_t)bb & ones(bits_of(t));
					d = ua > ub ? ua - ub : ub - ua;
				}
				wr(R, &o[0], l, ext(rd(R, &o[3], l) + d, t));
			END_LANES
			break;
		case OP_ABS: case OP_NEG: case OP_RCP: case OP_SQRT: case OP_RSQRT:
		case OP_SIN: case OP_COS: case OP_LG2: case OP_EX2: case OP_TANH:
			if (t == PT_F32 || t == PT_F64) {
				int mode = ptx_host_rounding(in->rnd);
				if (mode != FE_TONEAREST)
					fesetround(mode);
				FOR_LANES(act)
					uint64_t a = rd(R, &o[1], l);
					wr(R, &o[0], l, t == PT_F32 ? f32_op(in, a, 0, 0) : f64_op(in, a, 0, 0));
				END_LANES
				if (mode != FE_TONEAREST)
					fesetround(FE_TONEAREST);
			} else {
				FOR_LANES(act)
					int64_t a = (int64_t)ext(rd(R, &o[1], l), t);
					uint64_t r = in->op == OP_NEG ? (uint64_t)0 - (uint64_t)a
						     : (uint64_t)(a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a);
					wr(R, &o[0], l, ext(r, t));
				END_LANES
			}
			break;
		case OP_NOT:
			FOR_LANES(act)
				wr(R, &o[0], l, t == PT_PRED ? (rd(R, &o[1], l) & 1) ^ 1
							  : ext(~rd(R, &o[1], l), t));
			END_LANES
			break;
		case OP_CNOT:
			FOR_LANES(act)
				wr(R, &o[0], l, (rd(R, &o[1], l) & ones(bits_of(t))) == 0);
			END_LANES
			break;
		case OP_POPC: case OP_CLZ: case OP_BREV: case OP_BFIND:
			FOR_LANES(act)
				uint64_t a = rd(R, &o[1], l) & ones(bits_of(t)), r;
				unsigned n = bits_of(t);
				if (in->op == OP_POPC) {
					r = (uint64_t)__builtin_popcountll(a);
				} else if (in->op == OP_CLZ) {
					r = a ? (uint64_t)__builtin_clzll(a) - (64 - n) : n;
				} else if (in->op == OP_BFIND) {
					r = bfind(t, in->mode == MODE_BFIND_SHIFTAMT, a);
				} else {
					r = 0;
					for (unsigned i = 0; i < n; i++)
						r |= ((a >> i) & 1) << (n - 1 - i);
				}
				wr(R, &o[0], l, in->op == OP_BREV ? r : (r & 0xffffffffu));
			END_LANES
			break;
		case OP_BFE:
			FOR_LANES(act)
				wr(R, &o[0], l, bfe(t, rd(R, &o[1], l), rd(R, &o[2], l), rd(R, &o[3], l)));
			END_LANES
			break;
		case OP_BFI:
			FOR_LANES(act)
				wr(R, &o[0], l, bfi(t, rd(R, &o[1], l), rd(R, &o[2], l), rd(R, &o[3], l),
						    rd(R, &o[4], l)));
			END_LANES
			break;
		case OP_PRMT:
			FOR_LANES(act)
				wr(R, &o[0], l, prmt(in->mode, rd(R, &o[1], l), rd(R, &o[2], l),
						     rd(R, &o[3], l)));
			END_LANES
			break;
		case OP_SHF:
			FOR_LANES(act)
				uint64_t a = rd(R, &o[1], l) & 0xffffffffu, bb = rd(R, &o[2], l) & 0xffffffffu;
				uint32_t c = (uint32_t)rd(R, &o[3], l);
				uint32_t n = (in->mode == MODE_SHF_L_WRAP || in->mode == MODE_SHF_R_WRAP)
					     ? (c & 31) : (c > 32 ? 32 : c);
				uint64_t x = (bb << 32) | a, r;
				if (in->mode <= MODE_SHF_L_CLAMP)
					r = n == 0 ? bb : (x << n) >> 32;
				else
					r = x >> n;
				wr(R, &o[0], l, r & 0xffffffffu);
			END_LANES
			break;
		case OP_TESTP:
			FOR_LANES(act)
				double x = src_float(t, rd(R, &o[1], l), false);
				bool r;
				switch (in->mode) {
				case MODE_FINITE: r = isfinite(x); break;
				case MODE_INFINITE: r = isinf(x); break;
				case MODE_NUMBER: r = !isnan(x); break;
				case MODE_NOTANUMBER: r = isnan(x); break;
				case MODE_NORMAL:
					r = t == PT_F32 ? isnormal(ptx_f32(rd(R, &o[1], l))) : isnormal(x);
					break;
				default:
					r = t == PT_F32 ? fpclassify(ptx_f32(rd(R, &o[1], l))) == FP_SUBNORMAL
							: fpclassify(x) == FP_SUBNORMAL;
					break;
				}
				wr(R, &o[0], l, r);
			END_LANES
			break;
		case OP_SETP:
			FOR_LANES(act)
				uint64_t a = rd(R, &o[2], l), bb = rd(R, &o[3], l);
				bool r;
				if (t == PT_F32 || t == PT_F64)
					r = fcmp(in->cmp, src_float(t, a, in->ftz), src_float(t, bb, in->ftz));
				else
					r = icmp(in->cmp, t, a, bb);
				bool q = !r;
				if (in->boolop) {
					bool c = rdp(R, &o[4], l);
					switch (in->boolop) {
					case BOOL_AND: r = r && c; q = q && c; break;
					case BOOL_OR: r = r || c; q = q || c; break;
					default: r = r != c; q = q != c; break;
					}
				}
				wr(R, &o[0], l, r);
				wr(R, &o[1], l, q);
			END_LANES
			break;
		case OP_SELP:
			FOR_LANES(act)
				wr(R, &o[0], l, rdp(R, &o[3], l) ? ext(rd(R, &o[1], l), t)
								 : ext(rd(R, &o[2], l), t));
			END_LANES
			break;
		case OP_CVT: {
			int mode = ptx_host_rounding(in->rnd);
			bool set = mode != FE_TONEAREST && in->rnd <= RND_RP;
			if (set)
				fesetround(mode);
			FOR_LANES(act)
				wr(R, &o[0], l, cvt(in, rd(R, &o[1], l)));
			END_LANES
			if (set)
				fesetround(FE_TONEAREST);
			break;
		}
		case OP_CVTA: {
			uint64_t win = in->space == SP_SHARED ? PTX_SHARED_WINDOW :
				       in->space == SP_LOCAL ? PTX_LOCAL_WINDOW : 0;
			uint64_t base = 0;
			if (o[1].kind == OPK_SYM)
				base = o[1].base == AB_VAR ? b->run->launch->var_addresses[o[1].reg] :
				       o[1].base == AB_FRAME ? w->local_base : 0;
			FOR_LANES(act)
				uint64_t v = o[1].kind == OPK_SYM ? base + o[1].imm : rd(R, &o[1], l);
				v = in->to ? v - win : v + win;
				wr(R, &o[0], l, ext(v, t));
			END_LANES
			break;
		}
		case OP_ISSPACEP:
			FOR_LANES(act)
				uint64_t v = rd(R, &o[1], l);
				bool sh = v - PTX_SHARED_WINDOW < (1ull << 32);
				bool lo = v - PTX_LOCAL_WINDOW < (1ull << 32);
				bool r = in->space == SP_SHARED ? sh : in->space == SP_LOCAL ? lo :
					 (in->space == SP_GLOBAL || in->space == SP_CONST) ? !sh && !lo : false;
				wr(R, &o[0], l, r);
			END_LANES
			break;
		case OP_LD:
			if (act && (rc = do_load(b, w, in, act)))
				return rc;
			break;
		case OP_ST:
			if (act && (rc = do_store(b, w, in, act)))
				return rc;
			break;
		case OP_ATOM:
		case OP_RED:
			if (act && (rc = do_atomic(b, w, in, act)))
				return rc;
			break;
		case OP_BAR: {
			if (!act)
				break;
			if (act != w->active)
				return ptx_fault(b, in, -EDEADLK, PTX_FAULT_DEADLOCK, 0,
						 "bar.sync under a divergent predicate");
			uint32_t id = (uint32_t)rd(R, &o[0], (unsigned)__builtin_ctz(act));
			uint32_t count = o[1].kind != OPK_NONE ?
				(uint32_t)rd(R, &o[1], (unsigned)__builtin_ctz(act)) : 0;
			if (id >= PTX_BARRIERS || (count % PTX_WARP_SIZE))
				return ptx_fault(b, in, -EINVAL, PTX_FAULT_TRAP, 0,
						 "bar.sync: bad barrier %u or count %u", id, count);
			if (b->bar_arrived[id] && b->bar_count[id] != count)
				return ptx_fault(b, in, -EINVAL, PTX_FAULT_TRAP, 0,
						 "bar.sync %u: thread counts differ", id);
			b->bar_count[id] = count;
			b->bar_arrived[id] += nact;
			w->blocked |= act;
			FOR_LANES(act)
				w->bar_id[l] = (uint8_t)id;
			END_LANES
			set_active_pcs(w, w->cur_pc + 1);
			ptx_warp_schedule(w);
			continue;
		}
		case OP_BAR_RED: {
			if (!act)
				break;
			if (act != w->active)
				return ptx_fault(b, in, -EDEADLK, PTX_FAULT_DEADLOCK, 0,
						 "bar.red under a divergent predicate");
			unsigned first = (unsigned)__builtin_ctz(act);
			uint32_t id = (uint32_t)rd(R, &o[1], first);
			uint32_t count = o[2].kind != OPK_NONE ? (uint32_t)rd(R, &o[2], first) : 0;
			if (id >= PTX_BARRIERS || (count % PTX_WARP_SIZE))
				return ptx_fault(b, in, -EINVAL, PTX_FAULT_TRAP, 0,
						 "bar.red: bad barrier %u or count %u", id, count);
			if (b->bar_arrived[id] && b->bar_count[id] != count)
				return ptx_fault(b, in, -EINVAL, PTX_FAULT_TRAP, 0,
						 "bar.red %u: thread counts differ", id);
			b->bar_count[id] = count;
			b->bar_arrived[id] += nact;
			FOR_LANES(act)
				bool pv = rdp(R, &o[3], l);
				b->bar_popc[id] += pv;
				b->bar_and[id] &= pv;
				b->bar_or[id] |= pv;
				w->bar_id[l] = (uint8_t)id;
				w->red_mode[l] = in->mode;
				w->red_reg[l] = w->reg_base + o[0].reg;
			END_LANES
			w->red_pending |= act;
			w->blocked |= act;
			set_active_pcs(w, w->cur_pc + 1);
			ptx_warp_schedule(w);
			continue;
		}
		case OP_REDUX: {
			uint32_t mask = (uint32_t)rd(R, &o[2], (unsigned)__builtin_ctz(w->active));
			rc = warp_sync(b, w, in, mask);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
			uint32_t part = act & mask, r = 0;
			bool first = true;
			FOR_LANES(part)
				uint32_t v = (uint32_t)rd(R, &o[1], l);
				if (first) {
					r = v;
					first = false;
					continue;
				}
				switch (in->uni) {
				case 0: r += v; break;
				case 1: r = t == PT_S32 ? ((int32_t)v < (int32_t)r ? v : r) : (v < r ? v : r); break;
				case 2: r = t == PT_S32 ? ((int32_t)v > (int32_t)r ? v : r) : (v > r ? v : r); break;
				case 3: r &= v; break;
				case 4: r |= v; break;
				default: r ^= v; break;
				}
			END_LANES
			FOR_LANES(act)
				wr(R, &o[0], l, ext(r, t));
			END_LANES
			break;
		}
		case OP_BAR_WARP: {
			/* lanes may meet at different bar.warp.sync instructions */
			uint32_t mask = (uint32_t)rd(R, &o[0], (unsigned)__builtin_ctz(w->active));
			uint32_t need = mask & w->initial & ~w->exited;
			if (need & ~w->active & w->wsync_parked & w->live) {
				if (!(need & ~(w->active | w->wsync_parked))) {
					uint32_t go = need & w->wsync_parked;
					FOR_LANES(go)
						w->pc[l]++;
					END_LANES
					w->wsync_parked &= ~go;
					w->parked &= ~go;
					set_active_pcs(w, w->cur_pc + 1);
					ptx_warp_schedule(w);
					continue;
				}
			}
			uint32_t here = w->active;
			rc = warp_sync(b, w, in, mask);
			if (rc < 0)
				return rc;
			if (rc == 0) {
				w->wsync_parked |= here;
				continue;
			}
			break;
		}
		case OP_SHFL: {
			uint32_t mask = (uint32_t)rd(R, &o[5], (unsigned)__builtin_ctz(w->active));
			rc = warp_sync(b, w, in, mask);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
			uint32_t val[PTX_WARP_SIZE];
			for (unsigned l = 0; l < PTX_WARP_SIZE; l++)
				val[l] = (uint32_t)rd(R, &o[2], l);
			FOR_LANES(act)
				uint32_t bv = (uint32_t)rd(R, &o[3], l) & 31;
				uint32_t c = (uint32_t)rd(R, &o[4], l);
				uint32_t cval = c & 31, segmask = (c >> 8) & 31;
				uint32_t maxlane = (l & segmask) | (cval & ~segmask);
				uint32_t minlane = l & segmask;
				int32_t j;
				bool pv;
				switch (in->mode) {
				case MODE_UP:
					j = (int32_t)l - (int32_t)bv;
					pv = j >= (int32_t)maxlane;
					break;
				case MODE_DOWN:
					j = (int32_t)(l + bv);
					pv = j <= (int32_t)maxlane;
					break;
				case MODE_BFLY:
					j = (int32_t)(l ^ bv);
					pv = j <= (int32_t)maxlane;
					break;
				default:
					j = (int32_t)(minlane | (bv & ~segmask));
					pv = j <= (int32_t)maxlane;
					break;
				}
				if (!pv)
					j = (int32_t)l;
				wr(R, &o[0], l, val[j]);
				wr(R, &o[1], l, pv);
			END_LANES
			break;
		}
		case OP_VOTE: {
			uint32_t mask = (uint32_t)rd(R, &o[2], (unsigned)__builtin_ctz(w->active));
			rc = warp_sync(b, w, in, mask);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
			uint32_t part = act & mask, ballot = 0;
			FOR_LANES(part)
				ballot |= (uint32_t)rdp(R, &o[1], l) << l;
			END_LANES
			uint64_t r;
			switch (in->mode) {
			case MODE_ALL: r = ballot == part; break;
			case MODE_ANY: r = ballot != 0; break;
			case MODE_UNI: r = ballot == 0 || ballot == part; break;
			default: r = ballot; break;
			}
			FOR_LANES(act)
				wr(R, &o[0], l, r);
			END_LANES
			break;
		}
		case OP_ACTIVEMASK:
			FOR_LANES(act)
				wr(R, &o[0], l, w->active);
			END_LANES
			break;
		case OP_BRA:
			branch(w, act, in->target);
			continue;
		case OP_CALL:
			if (!act)
				break;
			if (w->func->calls[in->target].callee < b->run->module->nfuncs &&
			    b->run->module->funcs[w->func->calls[in->target].callee].builtin) {
				if ((rc = do_builtin(b, w, in, act)))
					return rc;
				break;
			}
			if (act != w->active) {
				/* lanes whose guard is false skip the call */
				FOR_LANES(w->active & ~act)
					w->pc[l] = w->cur_pc + 1;
				END_LANES
				w->active = act;
			}
			if ((rc = do_call(b, w, in, act)))
				return rc;
			continue;
		case OP_RET:
		case OP_EXIT:
			if (!act)
				break;
			FOR_LANES(w->active & ~act)
				w->pc[l] = w->cur_pc + 1;
			END_LANES
			if (in->op == OP_EXIT)
				w->exited |= act;
			else
				w->returned |= act;
			w->live &= ~act;
			w->active = 0;
			w->merge_pc = UINT32_MAX;
			continue;
		case OP_TRAP:
			if (act)
				return ptx_fault(b, in, -ECANCELED, PTX_FAULT_TRAP, 0, "trap");
			break;
		default:
			return ptx_fault(b, in, -EINVAL, PTX_FAULT_TRAP, 0, "bad opcode");
		}
		advance(w);
	}
}
