// SPDX-License-Identifier: MIT
/*
 * test_ptx_corpus.c - runs the PTX corpus (tests/ptx/NAME.ptx, generated from
 * the .cu beside them) through the executor on a flat memory and compares
 * every result with a value computed here in C: bit for bit, except the
 * .approx instructions (within their documented error). Built with
 * -frounding-math so the references can switch rounding modes.
 */
#include <fenv.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptx_env.h"

#define D3(x, y, z) ((struct ptx_dim3){ (x), (y), (z) })

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static int setup(void **state)
{
	struct flat_env *env = malloc(sizeof(*env));
	flat_init(env, 64u << 20);
	*state = env;
	rng_state = 0x9e3779b97f4a7c15ull;
	return 0;
}

static int teardown(void **state)
{
	flat_fini(*state);
	free(*state);
	return 0;
}

static void load(struct flat_env *env, const char *name)
{
	struct ptx_error err;
	int rc = flat_load_file(env, name, &err);
	if (rc)
		fail_msg("load %s: %d %s", name, rc, err.message);
}

static void run(struct flat_env *env, const char *entry, struct ptx_dim3 g,
		struct ptx_dim3 b, uint32_t dyn, const void *const *args)
{
	int rc = flat_run(env, entry, g, b, dyn, args);
	if (rc)
		fail_msg("%s: %d %s", entry, rc, env->result.message);
}

static void check_bits(const char *what, size_t i, size_t k, uint64_t got,
		       uint64_t want)
{
	if (got != want)
		fail_msg("%s[%zu][%zu]: got 0x%llx, want 0x%llx", what, i, k,
			 (unsigned long long)got, (unsigned long long)want);
}

static uint32_t fbits(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	if (f != f)
		b = 0x7fffffffu;  /* NVIDIA's canonical NaN */
	return b;
}

static uint64_t dbits(double d)
{
	uint64_t b;
	memcpy(&b, &d, 8);
	if (d != d)
		b = 0x7fffffffffffffffull;
	return b;
}

static float bf(uint32_t b)
{
	float f;
	memcpy(&f, &b, 4);
	return f;
}

/* ---- integers ---- */

static int32_t sdiv32(int32_t x, int32_t y)
{
	if (y == 0)
		return x < 0 ? 1 : -1;
	if (x == INT32_MIN && y == -1)
		return INT32_MIN;
	return x / y;
}

static int32_t srem32(int32_t x, int32_t y)
{
	if (y == 0)
		return x;
	if (y == -1)
		return 0;
	return x % y;
}

static uint32_t brev32(uint32_t x)
{
	uint32_t r = 0;
	for (int i = 0; i < 32; i++)
		r |= ((x >> i) & 1u) << (31 - i);
	return r;
}

static uint64_t brev64(uint64_t x)
{
	return ((uint64_t)brev32((uint32_t)x) << 32) | brev32((uint32_t)(x >> 32));
}

static uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s)
{
	uint64_t v = ((uint64_t)y << 32) | x;
	uint32_t r = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t sel = (s >> (4 * i)) & 7;
		r |= (uint32_t)((v >> (8 * sel)) & 0xff) << (8 * i);
	}
	return r;
}

static const int32_t int_specials[] = {
	0, 1, -1, 2, -2, 7, -7, INT32_MAX, INT32_MIN, 0x12345678, -0x5555, 31, 32, 33,
};

static void test_int32(void **state)
{
	struct flat_env *env = *state;
	load(env, "int_arith");
	enum { N = 256, K = 24 };
	int32_t a[N], b[N];
	for (int i = 0; i < N; i++) {
		int ns = (int)(sizeof(int_specials) / sizeof(int_specials[0]));
		a[i] = i < ns * ns ? int_specials[i % ns] : (int32_t)rnd64();
		b[i] = i < ns * ns ? int_specials[i / ns] : (int32_t)(rnd64() >> (rnd64() & 31));
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), db = flat_copy_in(env, b, sizeof(b));
	uint64_t dout = flat_alloc(env, sizeof(int32_t) * N * K);
	int n = N;
	run(env, "int32_ops", D3(N / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &da, &db, &dout, &n });
	const int32_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		int32_t x = a[i], y = b[i];
		uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
		uint32_t w[K];
		w[0] = ux + uy;
		w[1] = ux - uy;
		w[2] = ux * uy;
		w[3] = (uint32_t)(((int64_t)x * y) >> 32);
		w[4] = (uint32_t)(((uint64_t)ux * uy) >> 32);
		w[5] = (uint32_t)sdiv32(x, y);
		w[6] = (uint32_t)srem32(x, y);
		w[7] = uy ? ux / uy : 0xffffffffu;
		w[8] = uy ? ux % uy : ux;
		w[9] = (uint32_t)(x < y ? x : y);
		w[10] = (uint32_t)(x > y ? x : y);
		w[11] = ux < uy ? ux : uy;
		w[12] = x < 0 ? 0u - ux : ux;
		w[13] = 0u - ux;
		w[14] = (ux & uy) ^ (~ux | uy);
		w[15] = ux << (uy & 31);
		w[16] = (uint32_t)(x >> (y & 31));
		w[17] = ux >> (uy & 31);
		w[18] = (uint32_t)__builtin_popcount(ux) + ((uy ? (uint32_t)__builtin_clz(uy) : 32u) << 8);
		w[19] = brev32(ux);
		w[20] = byte_perm(ux, uy, uy & 0x7777);
		uint64_t cat = ((uint64_t)uy << 32) | ux;
		w[21] = (uint32_t)((cat << (uy & 31)) >> 32) ^ (uint32_t)(cat >> (uy > 32 ? 32 : uy));
		uint64_t sad = (uint64_t)llabs((long long)x - (long long)y) + 3;
		w[22] = (uint32_t)(x ? __builtin_ctz(ux) + 1 : 0) | ((uint32_t)sad << 8);
		w[23] = (uint32_t)(x >> 3) & 0x3ff;
		for (int k = 0; k < K; k++)
			check_bits("int32_ops", (size_t)i, (size_t)k, (uint32_t)o[i * K + k], w[k]);
	}
}

static void test_int64(void **state)
{
	struct flat_env *env = *state;
	load(env, "int_arith");
	enum { N = 128, K = 12 };
	int64_t a[N], b[N];
	const int64_t sp[] = { 0, 1, -1, INT64_MAX, INT64_MIN, 3, -3, 1ll << 40, 63, 64 };
	for (int i = 0; i < N; i++) {
		a[i] = i < 100 ? sp[i % 10] : (int64_t)rnd64();
		b[i] = i < 100 ? sp[i / 10] : (int64_t)(rnd64() >> (rnd64() & 63));
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), db = flat_copy_in(env, b, sizeof(b));
	uint64_t dout = flat_alloc(env, 8 * N * K);
	int n = N;
	run(env, "int64_ops", D3(N / 32, 1, 1), D3(32, 1, 1), 0,
	    (const void *[]){ &da, &db, &dout, &n });
	const uint64_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		int64_t x = a[i], y = b[i];
		uint64_t ux = (uint64_t)x, uy = (uint64_t)y, w[K];
		w[0] = ux + uy;
		w[1] = ux - uy;
		w[2] = ux * uy;
		w[3] = (uint64_t)(((__int128)x * y) >> 64);
		w[4] = (uint64_t)(((unsigned __int128)ux * uy) >> 64);
		if (((ux | uy) >> 32) == 0) {
			/* nvcc divides operands that fit in 32 bits with div.u32 */
			uint32_t q = (uint32_t)uy ? (uint32_t)ux / (uint32_t)uy : 0xffffffffu;
			w[5] = w[7] = q;
			w[6] = w[8] = (uint32_t)ux - q * (uint32_t)uy;
		} else {
			w[5] = y == 0 ? (x < 0 ? 1 : ~0ull) :
			       (x == INT64_MIN && y == -1) ? ux : (uint64_t)(x / y);
			w[6] = y == 0 ? ux : y == -1 ? 0 : (uint64_t)(x % y);
			w[7] = uy ? ux / uy : ~0ull;
			w[8] = uy ? ux % uy : ux;
		}
		w[9] = (uint64_t)((int64_t)(int32_t)x * (int64_t)(int32_t)y);
		w[10] = (uint64_t)__builtin_popcountll(ux) + ((uy ? (uint64_t)__builtin_clzll(uy) : 64) << 8) +
			(brev64(ux) << 16);
		w[11] = (uint64_t)(x >> (y & 63)) ^ (ux >> (uy & 63)) ^ (ux << (y & 63));
		for (int k = 0; k < K; k++)
			check_bits("int64_ops", (size_t)i, (size_t)k, o[i * K + k], w[k]);
	}
	/* sub-word integers */
	int32_t c[64];
	for (int i = 0; i < 64; i++)
		c[i] = (int32_t)rnd64();
	uint64_t dc = flat_copy_in(env, c, sizeof(c));
	uint64_t ds = flat_alloc(env, 2 * 64), du = flat_alloc(env, 64);
	int n64 = 64;
	run(env, "small_ints", D3(2, 1, 1), D3(32, 1, 1), 0,
	    (const void *[]){ &dc, &ds, &du, &n64 });
	const int16_t *s = flat_ptr(env, ds);
	const uint8_t *u = flat_ptr(env, du);
	for (int i = 0; i < 64; i++) {
		int16_t v = (int16_t)c[i];
		check_bits("small_ints.s", (size_t)i, 0, (uint16_t)s[i],
			   (uint16_t)(int16_t)(v * 3 + (v >> 2)));
		check_bits("small_ints.c", (size_t)i, 0, u[i], (uint8_t)(c[i] + 7));
	}
}

static void test_int128(void **state)
{
	struct flat_env *env = *state;
	load(env, "int128");
	enum { N = 128 };
	unsigned __int128 a[N], b[N];
	for (int i = 0; i < N; i++) {
		a[i] = ((unsigned __int128)rnd64() << 64) | rnd64();
		b[i] = ((unsigned __int128)rnd64() << 64) | rnd64();
		if (i % 4 == 0)
			b[i] = ~(unsigned __int128)0 - (unsigned __int128)i;  /* carries */
		if (i % 4 == 1)
			a[i] = (unsigned __int128)i;                          /* borrows */
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), db = flat_copy_in(env, b, sizeof(b));
	uint64_t dout = flat_alloc(env, 16 * 4 * N);
	int n = N;
	run(env, "int128_ops", D3(N / 32, 1, 1), D3(32, 1, 1), 0,
	    (const void *[]){ &da, &db, &dout, &n });
	const unsigned __int128 *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		unsigned __int128 w[4] = { a[i] + b[i], a[i] - b[i], a[i] * b[i],
					   (a[i] >> 7) ^ (b[i] << 9) };
		for (int k = 0; k < 4; k++) {
			check_bits("int128.lo", (size_t)i, (size_t)k, (uint64_t)o[i * 4 + k], (uint64_t)w[k]);
			check_bits("int128.hi", (size_t)i, (size_t)k, (uint64_t)(o[i * 4 + k] >> 64),
				   (uint64_t)(w[k] >> 64));
		}
	}
}

/* ---- single precision ---- */

static float f32_in(int i, int which)
{
	static const uint32_t sp[] = {
		0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
		0x7fc00000, 0x00000001, 0x80400000, 0x7f7fffff, 0x3eaaaaab, 0x40490fdb,
		0x4b800001, 0xcb000003, 0x3f7fffff, 0x33800000,
	};
	if (i < 256)
		return bf(sp[which ? (i / 16 + which) % 16 : i % 16]);
	uint32_t r = (uint32_t)rnd64();
	if ((r & 0x7f800000u) == 0x7f800000u)
		r ^= 0x10000000u;
	return bf(r);
}

/*
 * The operands go through volatile memory: GCC may move register-only
 * arithmetic across fesetround even with -frounding-math.
 */
static float f32_mode(int mode, char op, float xv, float yv, float zv)
{
	volatile float vx = xv, vy = yv, vz = zv;
	float r;
	fesetround(mode);
	float x = vx, y = vy, z = vz;
	switch (op) {
	case '+': r = x + y; break;
	case '-': r = x - y; break;
	case '*': r = x * y; break;
	case '/': r = x / y; break;
	case 'f': r = fmaf(x, y, z); break;
	case 's': r = sqrtf(x); break;
	default: r = 1.0f / x; break;
	}
	volatile float vr = r;
	fesetround(FE_TONEAREST);
	r = vr;
	return r;
}

static float ref_fmin(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

static float ref_fmax(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static void test_f32(void **state)
{
	struct flat_env *env = *state;
	load(env, "f32_arith");
	enum { N = 512, K = 28 };
	float *a = malloc(4 * N), *b = malloc(4 * N), *c = malloc(4 * N);
	for (int i = 0; i < N; i++) {
		a[i] = f32_in(i, 0);
		b[i] = f32_in(i, 1);
		c[i] = f32_in(i, 5);
	}
	uint64_t da = flat_copy_in(env, a, 4 * N), db = flat_copy_in(env, b, 4 * N);
	uint64_t dc = flat_copy_in(env, c, 4 * N), dout = flat_alloc(env, 4 * N * K);
	int n = N;
	run(env, "f32_ops", D3(N / 128, 1, 1), D3(128, 1, 1), 0,
	    (const void *[]){ &da, &db, &dc, &dout, &n });
	const uint32_t *o = flat_ptr(env, dout);
	const int modes[4] = { FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD };
	for (int i = 0; i < N; i++) {
		float x = a[i], y = b[i], z = c[i];
		uint32_t w[K];
		for (int m = 0; m < 4; m++) {
			w[0 + m] = fbits(f32_mode(modes[m], '+', x, y, 0));
			w[4 + m] = fbits(f32_mode(modes[m], '*', x, y, 0));
			w[8 + m] = fbits(f32_mode(modes[m], '/', x, y, 0));
			w[12 + m] = fbits(f32_mode(modes[m], 'f', x, y, z));
		}
		w[16] = fbits(f32_mode(FE_TONEAREST, 's', fabsf(x), 0, 0));
		w[17] = fbits(f32_mode(FE_TOWARDZERO, 's', fabsf(x), 0, 0));
		w[18] = fbits(f32_mode(FE_TONEAREST, 'r', y, 0, 0));
		w[19] = fbits(f32_mode(FE_UPWARD, 'r', y, 0, 0));
		w[20] = fbits(ref_fmin(x, y));
		w[21] = fbits(ref_fmax(x, z));
		uint32_t zb, yb, xb;
		memcpy(&zb, &z, 4);
		memcpy(&yb, &y, 4);
		memcpy(&xb, &x, 4);
		w[22] = zb & 0x7fffffffu;
		w[23] = yb ^ 0x80000000u;
		w[24] = (xb & 0x7fffffffu) | (yb & 0x80000000u);
		w[25] = fbits(f32_mode(FE_TONEAREST, '-', x, z, 0));
		w[26] = fbits(f32_mode(FE_UPWARD, '-', x, z, 0));
		float cmp = (float)((x < y) + 2 * (x != y) + 4 * (x >= z) + 8 * !(x <= y) +
				    16 * (isnan(x) != 0) + 32 * (isinf(y) != 0));
		w[27] = fbits(cmp);
		for (int k = 0; k < K; k++)
			check_bits("f32_ops", (size_t)i, (size_t)k, o[i * K + k], w[k]);
	}
	run(env, "f32_default", D3(N / 128, 1, 1), D3(128, 1, 1), 0,
	    (const void *[]){ &da, &db, &dout, &n });
	for (int i = 0; i < N; i++)
		check_bits("f32_default", (size_t)i, 0, o[i],
			   fbits(a[i] / b[i] + sqrtf(fabsf(a[i]))));
	free(a);
	free(b);
	free(c);
}

static float ftz(float f)
{
	if (fpclassify(f) == FP_SUBNORMAL)
		return copysignf(0.0f, f);
	return f;
}

static void test_f32_ftz(void **state)
{
	struct flat_env *env = *state;
	load(env, "f32_ftz");
	enum { N = 256, K = 6 };
	float a[N], b[N];
	for (int i = 0; i < N; i++) {
		a[i] = f32_in(i, 0);
		b[i] = f32_in(i, 3);
		if (i % 5 == 0)
			a[i] = bf(0x00000100u + (uint32_t)i);   /* subnormal */
		if (i % 7 == 0)
			b[i] = bf(0x80001000u + (uint32_t)i);
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), db = flat_copy_in(env, b, sizeof(b));
	uint64_t dout = flat_alloc(env, 4 * N * K);
	int n = N;
	run(env, "f32_ftz", D3(N / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &da, &db, &dout, &n });
	const uint32_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		float x = ftz(a[i]), y = ftz(b[i]);
		float s = ftz(x + y);
		uint32_t w[K] = {
			fbits(s), fbits(ftz(x * y)), fbits(ftz(fmaf(x, y, x))),
			fbits(s != s ? 0.0f : s < 0 ? 0.0f : s > 1 ? 1.0f : s),
			fbits(ftz(ref_fmin(x, y))), fbits(ftz(x / y)),
		};
		for (int k = 0; k < K; k++)
			check_bits("f32_ftz", (size_t)i, (size_t)k, o[i * K + k], w[k]);
	}
}

/* ---- double precision ---- */

static double f64_mode(int mode, char op, double xv, double yv, double zv)
{
	volatile double vx = xv, vy = yv, vz = zv;
	double r;
	fesetround(mode);
	double x = vx, y = vy, z = vz;
	switch (op) {
	case '+': r = x + y; break;
	case '*': r = x * y; break;
	case '/': r = x / y; break;
	case 'f': r = fma(x, y, z); break;
	case 's': r = sqrt(x); break;
	default: r = 1.0 / x; break;
	}
	volatile double vr = r;
	fesetround(FE_TONEAREST);
	r = vr;
	return r;
}

static double ref_dmin(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

static double ref_dmax(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static void test_f64(void **state)
{
	struct flat_env *env = *state;
	load(env, "f64_arith");
	enum { N = 256, K = 20 };
	double a[N], b[N], c[N];
	const double sp[] = { 0.0, -0.0, 1.0, -1.0, 1.0 / 3, INFINITY, -INFINITY, NAN,
			      4.9e-324, 1.7976931348623157e308, 3.141592653589793, 1e-300 };
	for (int i = 0; i < N; i++) {
		uint64_t r1 = rnd64(), r2 = rnd64(), r3 = rnd64();
		memcpy(&a[i], &r1, 8);
		memcpy(&b[i], &r2, 8);
		memcpy(&c[i], &r3, 8);
		if (i < 144) {
			a[i] = sp[i % 12];
			b[i] = sp[i / 12];
		}
		if (a[i] != a[i] && i >= 144)
			a[i] = 2.0;
		if (b[i] != b[i] && i >= 144)
			b[i] = 0.5;
		if (c[i] != c[i])
			c[i] = -7.25;
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), db = flat_copy_in(env, b, sizeof(b));
	uint64_t dc = flat_copy_in(env, c, sizeof(c)), dout = flat_alloc(env, 8 * N * K);
	int n = N;
	run(env, "f64_ops", D3(N / 32, 1, 1), D3(32, 1, 1), 0,
	    (const void *[]){ &da, &db, &dc, &dout, &n });
	const uint64_t *o = flat_ptr(env, dout);
	const int modes[4] = { FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD };
	for (int i = 0; i < N; i++) {
		double x = a[i], y = b[i], z = c[i];
		uint64_t w[K];
		for (int m = 0; m < 4; m++) {
			w[0 + m] = dbits(f64_mode(modes[m], '+', x, y, 0));
			w[4 + m] = dbits(f64_mode(modes[m], '*', x, y, 0));
			w[8 + m] = dbits(f64_mode(modes[m], '/', x, y, 0));
			w[12 + m] = dbits(f64_mode(modes[m], 'f', x, y, z));
		}
		w[16] = dbits(sqrt(fabs(x)));
		w[17] = dbits(1.0 / y);
		w[18] = dbits(ref_dmin(x, y) + ref_dmax(y, z));
		uint64_t zb;
		memcpy(&zb, &z, 8);
		w[19] = zb | 0x8000000000000000ull;
		for (int k = 0; k < K; k++)
			check_bits("f64_ops", (size_t)i, (size_t)k, o[i * K + k], w[k]);
	}
}

/* ---- conversions ---- */

static int64_t f2i(double x, int mode, int bits, int sgn)
{
	if (x != x)
		return 0;
	double r = mode == 0 ? nearbyint(x) : mode == 1 ? trunc(x) : mode == 2 ? floor(x) : ceil(x);
	if (sgn) {
		long double hi = ldexpl(1.0L, bits - 1) - 1, lo = -ldexpl(1.0L, bits - 1);
		if ((long double)r >= hi)
			return (int64_t)hi;
		if ((long double)r <= lo)
			return (int64_t)lo;
		return (int64_t)r;
	}
	long double hi = ldexpl(1.0L, bits) - 1;
	if (r <= 0)
		return 0;
	if ((long double)r >= hi)
		return (int64_t)(uint64_t)hi;
	return (int64_t)(uint64_t)r;
}

static float i2f(int mode, int64_t v, int is_unsigned)
{
	volatile int64_t vv = v;
	fesetround(mode);
	volatile float r = is_unsigned ? (float)(uint64_t)vv : (float)vv;
	fesetround(FE_TONEAREST);
	return r;
}

static double i2d(int mode, int64_t v, int is_unsigned)
{
	volatile int64_t vv = v;
	fesetround(mode);
	volatile double r = is_unsigned ? (double)(uint64_t)vv : (double)vv;
	fesetround(FE_TONEAREST);
	return r;
}

static float d2f(int mode, double v)
{
	volatile double vv = v;
	fesetround(mode);
	volatile float r = (float)vv;
	fesetround(FE_TONEAREST);
	return r;
}

static void test_convert(void **state)
{
	struct flat_env *env = *state;
	load(env, "convert");
	enum { N = 256 };
	float a[N];
	double d[N];
	const float fs[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3e9f, -3e9f, NAN, INFINITY,
			     -INFINITY, 1e20f, -1e20f, 65535.7f, 127.6f, -128.9f, 0.0f, -0.0f };
	for (int i = 0; i < N; i++) {
		a[i] = i < 18 ? fs[i] : (float)((int64_t)rnd64() >> (rnd64() & 63)) / 7.0f;
		d[i] = i < 18 ? (double)fs[(i + 3) % 18] : (double)((int64_t)rnd64() >> (rnd64() & 63)) / 3.0;
	}
	uint64_t da = flat_copy_in(env, a, sizeof(a)), dd = flat_copy_in(env, d, sizeof(d));
	uint64_t doi = flat_alloc(env, 4 * N * 12), dol = flat_alloc(env, 8 * N * 4);
	int n = N;
	run(env, "cvt_f2i", D3(N / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &da, &dd, &doi, &dol, &n });
	const int32_t *oi = flat_ptr(env, doi);
	const int64_t *ol = flat_ptr(env, dol);
	for (int i = 0; i < N; i++) {
		double x = a[i], y = d[i];
		int32_t w[12] = {
			(int32_t)f2i(x, 0, 32, 1), (int32_t)f2i(x, 1, 32, 1), (int32_t)f2i(x, 2, 32, 1),
			(int32_t)f2i(x, 3, 32, 1), (int32_t)f2i(x, 0, 32, 0), (int32_t)f2i(x, 1, 32, 0),
			(int32_t)f2i(y, 0, 32, 1), (int32_t)f2i(y, 1, 32, 1), (int32_t)f2i(y, 2, 32, 0),
			(int8_t)f2i(x, 1, 32, 1), (uint16_t)f2i(x, 1, 32, 0), (int16_t)f2i(y, 1, 32, 1),
		};
		for (int k = 0; k < 12; k++)
			check_bits("cvt_f2i", (size_t)i, (size_t)k, (uint32_t)oi[i * 12 + k], (uint32_t)w[k]);
		int64_t v[4] = { f2i(x, 0, 64, 1), f2i(x, 1, 64, 0), f2i(y, 2, 64, 1), f2i(y, 3, 64, 0) };
		for (int k = 0; k < 4; k++)
			check_bits("cvt_f2i.64", (size_t)i, (size_t)k, (uint64_t)ol[i * 4 + k], (uint64_t)v[k]);
	}

	int32_t ia[N];
	int64_t la[N];
	for (int i = 0; i < N; i++) {
		ia[i] = i < 14 ? int_specials[i] : (int32_t)rnd64();
		la[i] = i < 14 ? (int64_t)((uint64_t)(int64_t)int_specials[i] * 0x100000001ull) : (int64_t)rnd64() >> (rnd64() & 31);
	}
	uint64_t dia = flat_copy_in(env, ia, sizeof(ia)), dla = flat_copy_in(env, la, sizeof(la));
	uint64_t dof = flat_alloc(env, 4 * N * 12), dod = flat_alloc(env, 8 * N * 4);
	run(env, "cvt_i2f", D3(N / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &dia, &dla, &dof, &dod, &n });
	const uint32_t *of = flat_ptr(env, dof);
	const uint64_t *od = flat_ptr(env, dod);
	for (int i = 0; i < N; i++) {
		int32_t x = ia[i];
		int64_t y = la[i];
		double yy = (double)y * 1.000001;
		uint32_t w[12];
		const int modes[4] = { FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD };
		for (int m = 0; m < 4; m++) {
			w[m] = fbits(i2f(modes[m], x, 0));
			w[8 + m] = fbits(d2f(modes[m], yy));
		}
		w[4] = fbits(i2f(FE_TONEAREST, (uint32_t)x, 0));
		w[5] = fbits(i2f(FE_TONEAREST, y, 0));
		w[6] = fbits(i2f(FE_TOWARDZERO, y, 0));
		w[7] = fbits(i2f(FE_UPWARD, y, 1));
		for (int k = 0; k < 12; k++)
			check_bits("cvt_i2f", (size_t)i, (size_t)k, of[i * 12 + k], w[k]);
		uint64_t v[4];
		v[0] = dbits(i2d(FE_TONEAREST, y, 0));
		v[1] = dbits(i2d(FE_TOWARDZERO, y, 0));
		v[2] = dbits(i2d(FE_DOWNWARD, y, 1));
		v[3] = dbits((double)x + (double)(float)x);
		for (int k = 0; k < 4; k++)
			check_bits("cvt_i2f.64", (size_t)i, (size_t)k, od[i * 4 + k], v[k]);
	}
}

/* ---- control flow ---- */

static void test_control(void **state)
{
	struct flat_env *env = *state;
	load(env, "control");
	enum { N = 300 };
	int32_t a[N];
	for (int i = 0; i < N; i++)
		a[i] = (int32_t)(rnd64() % 1000);
	uint64_t da = flat_copy_in(env, a, sizeof(a)), dout = flat_alloc(env, 4 * N);
	int n = N;
	run(env, "diverge", D3(5, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &da, &dout, &n });
	const int32_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		int x = a[i], r = 0;
		if (x & 1) {
			r = x * 3;
			r += (x & 2) ? 5 : -7;
		} else {
			for (int k = 0; k < (x & 15); k++)
				r += k * x;
		}
		int s = 0;
		while (x > 1 && s < 200) {
			x = (x & 1) ? 3 * x + 1 : x / 2;
			s++;
		}
		check_bits("diverge", (size_t)i, 0, (uint32_t)o[i],
			   (uint32_t)(r + (s << 16) + ((r > 100) ? 1 : 2)));
	}
	memset(flat_ptr(env, dout), 0xff, 4 * N);
	run(env, "early_exit", D3(5, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &dout, &n });
	for (int i = 0; i < N; i++)
		check_bits("early_exit", (size_t)i, 0, (uint32_t)o[i],
			   i % 3 == 0 ? 0xffffffffu : (uint32_t)(i * 2));
}

/* ---- state spaces ---- */

static void test_spaces(void **state)
{
	struct flat_env *env = *state;
	load(env, "spaces");
	enum { N = 100, B = 64 };
	float in[4 * 128];
	for (int i = 0; i < 4 * 128; i++)
		in[i] = (float)(i % 97) * 0.25f;
	uint64_t din = flat_copy_in(env, in, sizeof(in));
	uint64_t dout = flat_alloc(env, 16 * 128), diout = flat_alloc(env, 8 * 128);
	struct {
		int32_t scale;
		float bias;
		double d;
	} pr = { 3, 0.5f, 2.75 };
	int n = N;
	run(env, "spaces", D3(2, 1, 1), D3(B, 1, 1), B * 4,
	    (const void *[]){ &din, &dout, &diout, &pr, &n });
	const float *o = flat_ptr(env, dout);
	const int32_t *io = flat_ptr(env, diout);
	static const int table[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	for (int i = 0; i < N; i++) {
		int t = i % B, base = i - t;
		float w[4] = {
			in[4 * i] + (float)((t + 1) % B) + 0.5f,
			in[4 * i + 1] * 2.0f,
			2.75f,
			(float)((base + (t + 3) % B) * 3),
		};
		for (int k = 0; k < 4; k++)
			check_bits("spaces.out", (size_t)i, (size_t)k, fbits(o[4 * i + k]), fbits(w[k]));
		int lsum = 0;
		for (int k = (i & 3); k < (i & 3) + 8; k++)
			lsum += (i + k) * table[k & 7];
		int ssum = 0;
		for (int k = 0; k < 4; k++)
			ssum += (base + k) * 3;
		check_bits("spaces.iout", (size_t)i, 0, (uint32_t)io[2 * i], (uint32_t)(lsum + 100));
		check_bits("spaces.iout", (size_t)i, 1, (uint32_t)io[2 * i + 1], (uint32_t)ssum);
	}
}

/* ---- atomics ---- */

static void test_atomics(void **state)
{
	struct flat_env *env = *state;
	load(env, "atomics");
	for (unsigned threads = 1; threads <= 4; threads += 3) {
		enum { N = 1000, B = 128 };
		env->host_threads = threads;
		uint64_t gi = flat_alloc(env, 4 * 16), gu = flat_alloc(env, 12);
		uint64_t gl = flat_alloc(env, 8), gf = flat_alloc(env, 8), gd = flat_alloc(env, 8);
		uint64_t old = flat_alloc(env, 4 * N);
		int32_t *pi = flat_ptr(env, gi);
		uint32_t *pu = flat_ptr(env, gu);
		pi[1] = 5000;
		pi[3] = -1;
		pu[1] = 5;
		int n = N;
		run(env, "atomics", D3((N + B - 1) / B, 1, 1), D3(B, 1, 1), 0,
		    (const void *[]){ &gi, &gu, &gl, &gf, &gd, &old, &n });
		int64_t sum = 0;
		int32_t mx = 0, xr = 0, orv = 0, andv = -1;
		uint32_t umax = 0, inc = 0, dec = 5;
		int32_t sh[4] = { 0, 0, 0, 0 };
		for (int i = 0; i < N; i++) {
			sum += i;
			if (i * 7 % 101 > mx)
				mx = i * 7 % 101;
			andv &= (int32_t)~(1u << (i & 31));
			orv |= (int32_t)(1u << (i & 31));
			xr ^= (int32_t)(i * 2654435761u);
			inc = inc >= 17 ? 0 : inc + 1;
			dec = (dec == 0 || dec > 13) ? 13 : dec - 1;
			if ((uint32_t)i * 40503u > umax)
				umax = (uint32_t)i * 40503u;
			sh[i & 3] += i;
		}
		assert_int_equal(pi[0], (int32_t)sum);
		assert_int_equal(pi[1], 1000 - (N - 1));
		assert_int_equal(pi[2], mx);
		assert_int_equal(pi[3], andv);
		assert_int_equal(pi[4], orv);
		assert_int_equal(pi[5], xr);
		assert_int_equal(pu[0], inc);
		assert_int_equal(pu[1], dec);
		assert_int_equal(pu[2], umax);
		assert_true(*(uint64_t *)flat_ptr(env, gl) == ((uint64_t)sum << 33));
		float *pf = flat_ptr(env, gf);
		assert_true(pf[0] == 0.5f * N);
		assert_true(pf[1] == (float)N);
		assert_true(*(double *)flat_ptr(env, gd) == 0.25 * N);
		const int32_t *po = flat_ptr(env, old);
		int succ = 0;
		for (int i = 0; i < N; i++)
			succ += po[i];
		assert_int_equal(pi[6], succ);
		assert_true(succ >= 1);
		assert_int_equal(pi[7], 42);
		for (int k = 0; k < 4; k++)
			assert_int_equal(pi[8 + k], sh[k]);
		assert_int_equal(pi[12], N - 1);
	}
	env->host_threads = 1;
}

/* ---- warp primitives ---- */

static void test_warp(void **state)
{
	struct flat_env *env = *state;
	load(env, "warp");
	enum { N = 128, K = 10 };
	int32_t a[N];
	for (int i = 0; i < N; i++)
		a[i] = (int32_t)(rnd64() % 2000) - (i % 17 == 0 ? 3000 : 0);
	uint64_t da = flat_copy_in(env, a, sizeof(a)), dout = flat_alloc(env, 4 * N * K);
	int n = N;
	run(env, "warp_ops", D3(2, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &da, &dout, &n });
	const int32_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		int lane = i & 31, w0 = i - lane;
		uint32_t ballot = 0, am = 0;
		int all = 1, any = 0;
		for (int l = 0; l < 32; l++) {
			ballot |= (uint32_t)(a[w0 + l] & 1) << l;
			all &= a[w0 + l] >= 0;
			any |= a[w0 + l] > 1000;
			am |= (uint32_t)((a[w0 + l] & 2) != 0) << l;
		}
		int32_t w[K] = {
			a[w0 + ((lane * 7) & 31)],
			lane >= 3 ? a[i - 3] : a[i],
			lane + 5 <= 31 ? a[i + 5] : a[i],
			a[w0 + (lane ^ 9)],
			a[w0 + (lane & ~7) + 2],
			(lane & 15) + 1 < 16 ? a[i + 1] : a[i],
			(int32_t)ballot, all, any, (a[i] & 2) ? (int32_t)am : 0,
		};
		for (int k = 0; k < K; k++)
			check_bits("warp_ops", (size_t)i, (size_t)k, (uint32_t)o[i * K + k], (uint32_t)w[k]);
	}
}

/* ---- special registers ---- */

static void test_sregs(void **state)
{
	struct flat_env *env = *state;
	load(env, "sregs");
	struct ptx_dim3 g = D3(3, 2, 2), b = D3(8, 4, 2);
	unsigned nt = 64, nb = 12;
	uint64_t dout = flat_alloc(env, 4 * 8 * nt * nb);
	run(env, "sregs", g, b, 0, (const void *[]){ &dout });
	const uint32_t *o = flat_ptr(env, dout);
	for (unsigned bz = 0; bz < 2; bz++)
		for (unsigned by = 0; by < 2; by++)
			for (unsigned bx = 0; bx < 3; bx++)
				for (unsigned t = 0; t < nt; t++) {
					unsigned bid = bx + 3 * (by + 2 * bz);
					const uint32_t *p = o + (bid * nt + t) * 8;
					uint32_t w[8] = {
						(t % 8) | ((t / 8) % 4) << 8 | (t / 32) << 16,
						8 | 4 << 8 | 2 << 16,
						bx | by << 8 | bz << 16,
						3 | 2 << 8 | 2 << 16,
						t % 32, t / 32, 1, t,
					};
					for (int k = 0; k < 8; k++)
						check_bits("sregs", bid * nt + t, (size_t)k, p[k], w[k]);
				}
}

/* ---- calls ---- */

static int fib(int k)
{
	return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

static void test_calls(void **state)
{
	struct flat_env *env = *state;
	load(env, "calls");
	enum { N = 96 };
	int32_t in[N];
	for (int i = 0; i < N; i++)
		in[i] = (int32_t)(rnd64() % 40);
	uint64_t din = flat_copy_in(env, in, sizeof(in)), dout = flat_alloc(env, 12 * N);
	int n = N;
	run(env, "calls", D3(3, 1, 1), D3(32, 1, 1), 0, (const void *[]){ &din, &dout, &n });
	const int32_t *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		int k = in[i];
		check_bits("calls.fib", (size_t)i, 0, (uint32_t)o[3 * i], (uint32_t)fib(k & 15));
		check_bits("calls.pair", (size_t)i, 1, (uint32_t)o[3 * i + 1],
			   (uint32_t)(2 * k + (int)((float)k + 0.5f)));
		check_bits("calls.mix", (size_t)i, 2, (uint32_t)o[3 * i + 2], (uint32_t)(k * 3 + 2));
	}
	uint64_t dr = flat_alloc(env, 4 * 32);
	int depth = 20;
	run(env, "recurse", D3(1, 1, 1), D3(32, 1, 1), 0, (const void *[]){ &dr, &depth });
	for (int i = 0; i < 32; i++)
		assert_int_equal(((int32_t *)flat_ptr(env, dr))[i], 20);
}

/* ---- approximate math ---- */

static void test_approx(void **state)
{
	struct flat_env *env = *state;
	load(env, "approx");
	enum { N = 256 };
	float a[N];
	for (int i = 0; i < N; i++)
		a[i] = -3.14159f + 6.28318f * (float)i / N;
	uint64_t da = flat_copy_in(env, a, sizeof(a)), dout = flat_alloc(env, 4 * 7 * N);
	int n = N;
	run(env, "approx", D3(4, 1, 1), D3(64, 1, 1), 0, (const void *[]){ &da, &dout, &n });
	const float *o = flat_ptr(env, dout);
	for (int i = 0; i < N; i++) {
		double x = a[i];
		double w[7] = { sin(x), cos(x), log2(fabs(x) + 1.0), exp2((double)(float)(a[i] * 0.1f)),
				1.0 / sqrt(fabs(x) + 1.0), x / 3.0, sqrt(fabs(x)) };
		/* sin/cos: 2^-21.41 absolute on [-pi, pi]; the rest: a few ulp */
		for (int k = 0; k < 7; k++) {
			double err = fabs(o[7 * i + k] - w[k]);
			double tol = k < 2 ? ldexp(1.0, -21) : 4 * ldexp(fabs(w[k]), -23) + 1e-30;
			if (err > tol)
				fail_msg("approx[%d][%d]: got %.9g want %.9g", i, k, o[7 * i + k], w[k]);
		}
	}
}

/* ---- block votes, warp reductions, halves ---- */

/* The value of a half's bits. */
static double ref_half_value(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
	return (h & 0x8000) ? -v : v;
}

/*
 * x to half by mode (0 nearest-even, 1 toward zero, 2 down, 3 up): the two
 * neighbouring halves by binary search over all positive ones (0x7c00,
 * infinity, standing in as 65536 for rounding), then the mode's choice.
 */
static uint16_t ref_half(double x, int mode)
{
	if (x != x)
		return 0x7fff;
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x);
	if (isinf(a))
		return sign | 0x7c00;
	unsigned lo = 0, hi = 0x7c00;
	while (hi - lo > 1) {  /* value(lo) <= a < value(hi) */
		unsigned mid = (lo + hi) / 2;
		if (ref_half_value((uint16_t)mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	double vlo = ref_half_value((uint16_t)lo), vhi = hi == 0x7c00 ? 65536.0 :
			ref_half_value((uint16_t)hi);
	bool exact = vlo == a, away;
	switch (mode) {
	case 0: away = a - vlo > vhi - a || (a - vlo == vhi - a && (lo & 1)); break;
	case 1: away = false; break;
	case 2: away = sign && !exact; break;
	default: away = !sign && !exact; break;
	}
	return sign | (uint16_t)(away ? hi : lo);
}

static void test_sync_misc(void **state)
{
	struct flat_env *env = *state;
	load(env, "sync_misc");
	enum { N = 256, B = 128 };
	int32_t a[N];
	for (int i = 0; i < N; i++)
		a[i] = (int32_t)(rnd64() % 1000) - (i == 77 ? 5000 : 0);
	uint64_t da = flat_copy_in(env, a, sizeof(a)), dout = flat_alloc(env, 4 * N * 6);
	run(env, "block_votes", D3(N / B, 1, 1), D3(B, 1, 1), 0, (const void *[]){ &da, &dout });
	const int32_t *o = flat_ptr(env, dout);
	for (int blk = 0; blk < N / B; blk++) {
		int c = 0, all = 1, any = 0;
		for (int t = 0; t < B; t++) {
			int x = a[blk * B + t];
			c += x & 1;
			all &= x >= 0;
			any |= x > 900;
		}
		for (int t = 0; t < B; t++) {
			const int32_t *p = o + (blk * B + t) * 3;
			check_bits("block_votes", (size_t)(blk * B + t), 0, (uint32_t)p[0], (uint32_t)c);
			check_bits("block_votes", (size_t)(blk * B + t), 1, (uint32_t)p[1], (uint32_t)all);
			check_bits("block_votes", (size_t)(blk * B + t), 2, (uint32_t)p[2], (uint32_t)any);
		}
	}
	run(env, "warp_reduce", D3(N / B, 1, 1), D3(B, 1, 1), 0, (const void *[]){ &da, &dout });
	for (int w = 0; w < N / 32; w++) {
		uint32_t add = 0, umax = 0, andv = ~0u, orv = 0, xorv = 0;
		int32_t mn = INT32_MAX;
		for (int l = 0; l < 32; l++) {
			uint32_t u = (uint32_t)a[w * 32 + l];
			add += u;
			mn = a[w * 32 + l] < mn ? a[w * 32 + l] : mn;
			umax = u > umax ? u : umax;
			andv &= u | 0x100;
			orv |= u & 0xf0f;
			xorv ^= u;
		}
		uint32_t want[6] = { add, (uint32_t)mn, umax, andv, orv, xorv };
		for (int l = 0; l < 32; l++)
			for (int k = 0; k < 6; k++)
				check_bits("warp_reduce", (size_t)(w * 32 + l), (size_t)k,
					   (uint32_t)o[(w * 32 + l) * 6 + k], want[k]);
	}
	/* halves: nearest representable values from a table of every half */
	float f[N];
	double d[N];
	const float fs[] = { 0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 70000.0f, -70000.0f,
			     5.96e-8f, 2.98e-8f, 1e-9f, NAN, INFINITY, 1.00048828125f, 0.333333f };
	for (int i = 0; i < N; i++) {
		f[i] = i < 14 ? fs[i] : (float)((int32_t)rnd64() >> (rnd64() & 31)) / 65536.0f;
		d[i] = i < 14 ? (double)fs[13 - i] : (double)(int32_t)rnd64() / 1e5;
	}
	uint64_t df = flat_copy_in(env, f, sizeof(f)), dd = flat_copy_in(env, d, sizeof(d));
	uint64_t dh = flat_alloc(env, 2 * 5 * N), db = flat_alloc(env, 4 * N);
	int n = N;
	run(env, "halves", D3(N / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &df, &dd, &dh, &db, &n });
	const uint16_t *h = flat_ptr(env, dh);
	const uint32_t *back = flat_ptr(env, db);
	for (int i = 0; i < N; i++) {
		uint16_t w[5];
		for (int m = 0; m < 5; m++)
			w[m] = ref_half(m < 4 ? (double)f[i] : d[i], m < 4 ? m : 0);
		for (int k = 0; k < 5; k++)
			check_bits("halves", (size_t)i, (size_t)k, h[i * 5 + k], w[k]);
		check_bits("halves.back", (size_t)i, 0, back[i],
			   fbits((float)ref_half_value(w[0]) + (float)ref_half_value(w[4])));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_int32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_int64, setup, teardown),
		cmocka_unit_test_setup_teardown(test_int128, setup, teardown),
		cmocka_unit_test_setup_teardown(test_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_f32_ftz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_f64, setup, teardown),
		cmocka_unit_test_setup_teardown(test_convert, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sregs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_approx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_misc, setup, teardown),
	};
	return cmocka_run_group_tests_name("ptx-corpus", tests, NULL, NULL);
}
