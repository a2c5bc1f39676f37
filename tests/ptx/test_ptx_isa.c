// SPDX-License-Identifier: MIT
/*
 * test_ptx_isa.c - instructions nvcc rarely emits from plain CUDA C, in
 * hand-written PTX: saturating add/sub, signed and unsigned bfe, bfi,
 * funnel shifts, bfind, cnot, setp with a predicate pair and a boolean
 * operation, mad.hi, testp, saturating narrowing cvt, vote.uni, shfl with
 * its predicate output, lanes meeting at different bar.warp.sync
 * instructions, and red. Each result is checked against C.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptx_env.h"

static const char isa_ptx[] =
	".version 8.5\n.target sm_90\n.address_size 64\n"
	".visible .entry isa(.param .u64 out)\n{\n"
	".reg .b32 %r<40>;\n.reg .b64 %rd<8>;\n.reg .pred %p<8>;\n.reg .f32 %f<4>;\n"
	"mov.u32 %r1, %tid.x;\n"
	"ld.param.u64 %rd1, [out];\n"
	"mul.wide.u32 %rd2, %r1, 128;\n"
	"add.s64 %rd3, %rd1, %rd2;\n"
	"add.sat.s32 %r2, %r1, 2147483632;\n st.global.u32 [%rd3], %r2;\n"
	"sub.sat.s32 %r2, -2147483632, %r1;\n st.global.u32 [%rd3+4], %r2;\n"
	"mul.lo.u32 %r3, %r1, 16843009;\n xor.b32 %r3, %r3, -2139062144;\n"
	"and.b32 %r4, %r1, 31;\n"
	"bfe.s32 %r2, %r3, %r4, 5;\n st.global.u32 [%rd3+8], %r2;\n"
	"bfe.u32 %r2, %r3, %r4, 5;\n st.global.u32 [%rd3+12], %r2;\n"
	"bfi.b32 %r2, %r1, -1, %r4, 4;\n st.global.u32 [%rd3+16], %r2;\n"
	"shf.r.wrap.b32 %r2, 305419896, -1698898192, %r1;\n st.global.u32 [%rd3+20], %r2;\n"
	"sub.s32 %r5, %r1, 32;\n"
	"bfind.s32 %r2, %r5;\n st.global.u32 [%rd3+24], %r2;\n"
	"and.b32 %r6, %r1, 1;\n"
	"cnot.b32 %r2, %r6;\n st.global.u32 [%rd3+28], %r2;\n"
	"setp.eq.u32 %p3, %r6, 0;\n"
	"setp.lt.and.s32 %p1|%p2, %r1, 20, %p3;\n"
	"selp.u32 %r7, 1, 0, %p1;\n selp.u32 %r8, 2, 0, %p2;\n add.s32 %r2, %r7, %r8;\n"
	"st.global.u32 [%rd3+32], %r2;\n"
	"mul.lo.u32 %r9, %r1, 268435457;\n"
	"mad.hi.u32 %r2, %r9, -268435456, %r1;\n st.global.u32 [%rd3+36], %r2;\n"
	"cvt.rn.f32.u32 %f1, %r1;\n"
	"setp.eq.u32 %p4, %r1, 0;\n selp.f32 %f1, 0f7F800000, %f1, %p4;\n"
	"setp.eq.u32 %p4, %r1, 1;\n selp.f32 %f1, 0f7FFFFFFF, %f1, %p4;\n"
	"testp.finite.f32 %p5, %f1;\n testp.notanumber.f32 %p6, %f1;\n"
	"selp.u32 %r7, 1, 0, %p5;\n selp.u32 %r8, 2, 0, %p6;\n add.s32 %r2, %r7, %r8;\n"
	"st.global.u32 [%rd3+40], %r2;\n"
	"mul.lo.s32 %r10, %r1, 10;\n sub.s32 %r10, %r10, 300;\n"
	"cvt.sat.s8.s32 %r2, %r10;\n st.global.u32 [%rd3+44], %r2;\n"
	"setp.lt.u32 %p4, %r1, 40;\n"
	"vote.sync.uni.pred %p5, %p4, -1;\n selp.u32 %r2, 1, 0, %p5;\n st.global.u32 [%rd3+48], %r2;\n"
	"shfl.sync.up.b32 %r11|%p6, %r1, 5, 0, -1;\n"
	"selp.u32 %r12, 1000, 0, %p6;\n add.s32 %r2, %r11, %r12;\n st.global.u32 [%rd3+52], %r2;\n"
	"mov.u32 %r13, %laneid;\n setp.lt.u32 %p7, %r13, 16;\n"
	"@%p7 bra $L_low;\n"
	"bar.warp.sync -1;\n"
	"bra.uni $L_join;\n"
	"$L_low:\n"
	"bar.warp.sync -1;\n"
	"$L_join:\n"
	"activemask.b32 %r2;\n st.global.u32 [%rd3+56], %r2;\n"
	"red.global.add.u32 [%rd1+8192], %r1;\n"
	"ret;\n}\n";

static uint32_t bfe_ref(uint32_t a, unsigned pos, unsigned len, int sgn)
{
	unsigned top = pos + len - 1 > 31 ? 31 : pos + len - 1;
	uint32_t sbit = sgn && len ? (a >> top) & 1 : 0, d = 0;
	for (unsigned i = 0; i < 32; i++) {
		uint32_t bit = (i < len && pos + i <= 31) ? (a >> (pos + i)) & 1 : sbit;
		d |= bit << i;
	}
	return d;
}

static void test_isa(void **state)
{
	(void)state;
	struct flat_env env;
	flat_init(&env, 1u << 20);
	struct ptx_error err;
	if (flat_load_text(&env, isa_ptx, "isa.ptx", &err))
		fail_msg("%s", err.message);
	uint64_t out = flat_alloc(&env, 8192 + 4);
	if (flat_run(&env, "isa", (struct ptx_dim3){ 1, 1, 1 }, (struct ptx_dim3){ 64, 1, 1 }, 0,
		     (const void *[]){ &out }))
		fail_msg("%s", env.result.message);
	const uint32_t *o = flat_ptr(&env, out);
	for (uint32_t t = 0; t < 64; t++) {
		const uint32_t *p = o + t * 32;
		uint32_t a = (t * 16843009u) ^ 0x80808080u, pos = t & 31;
		int32_t x = (int32_t)t - 32;
		uint32_t v = x < 0 ? ~(uint32_t)x : (uint32_t)x;
		uint32_t bfi = 0xffffffffu;
		for (unsigned i = 0; i < 4 && pos + i <= 31; i++)
			bfi = (bfi & ~(1u << (pos + i))) | (((t >> i) & 1) << (pos + i));
		int p3 = (t & 1) == 0;
		int32_t c = (int32_t)t * 10 - 300;
		uint32_t lane = t & 31;
		uint32_t want[15] = {
			t < 16 ? 0x7ffffff0u + t : 0x7fffffffu,
			t <= 16 ? (uint32_t)(-2147483632 - (int32_t)t) : 0x80000000u,
			bfe_ref(a, pos, 5, 1),
			bfe_ref(a, pos, 5, 0),
			bfi,
			(uint32_t)(((0x9abcdef0ull << 32) | 0x12345678u) >> (t & 31)),
			v ? 31u - (uint32_t)__builtin_clz(v) : 0xffffffffu,
			(t & 1) == 0,
			(uint32_t)((t < 20 && p3) + 2 * (!(t < 20) && p3)),
			(uint32_t)(((uint64_t)(t * 268435457u) * 0xf0000000ull) >> 32) + t,
			t == 0 ? 0u : t == 1 ? 2u : 1u,
			(uint32_t)(c < -128 ? -128 : c > 127 ? 127 : c),
			t < 32,
			lane >= 5 ? 1000 + t - 5 : t,
			0xffffffffu,
		};
		for (int k = 0; k < 15; k++)
			if (p[k] != want[k])
				fail_msg("isa[%u][%d]: got 0x%x want 0x%x", t, k, p[k], want[k]);
	}
	assert_int_equal(o[8192 / 4], 63 * 64 / 2);
	flat_fini(&env);
}

/* Warp 0 spins until warp 1 of its block stores a flag to shared memory. */
static const char spin_ptx[] =
	".version 8.5\n.target sm_90\n.address_size 64\n"
	".visible .entry spin_flag(.param .u64 out)\n{\n"
	".reg .b32 %r<5>;\n.reg .pred %p<3>;\n.reg .b64 %rd<3>;\n"
	".shared .align 4 .b32 flag;\n"
	"mov.u32 %r1, %tid.x;\n"
	"setp.lt.u32 %p2, %r1, 32;\n"
	"@!%p2 bra $L_set;\n"
	"$L_wait:\n"
	"ld.volatile.shared.u32 %r2, [flag];\n"
	"setp.eq.u32 %p1, %r2, 0;\n"
	"@%p1 bra $L_wait;\n"
	"ld.param.u64 %rd1, [out];\n"
	"mul.wide.u32 %rd2, %r1, 4;\n"
	"add.s64 %rd1, %rd1, %rd2;\n"
	"st.global.u32 [%rd1], %r2;\n"
	"ret;\n"
	"$L_set:\n"
	"st.volatile.shared.u32 [flag], 7;\n"
	"ret;\n}\n";

static void test_spin_on_other_warp(void **state)
{
	(void)state;
	struct flat_env env;
	flat_init(&env, 1u << 20);
	struct ptx_error err;
	if (flat_load_text(&env, spin_ptx, "spin.ptx", &err))
		fail_msg("%s", err.message);
	uint64_t out = flat_alloc(&env, 4 * 32);
	env.budget = 1u << 20;
	if (flat_run(&env, "spin_flag", (struct ptx_dim3){ 1, 1, 1 }, (struct ptx_dim3){ 64, 1, 1 },
		     0, (const void *[]){ &out }))
		fail_msg("%s", env.result.message);
	for (int i = 0; i < 32; i++)
		assert_int_equal(((uint32_t *)flat_ptr(&env, out))[i], 7);
	flat_fini(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isa),
		cmocka_unit_test(test_spin_on_other_warp),
	};
	return cmocka_run_group_tests_name("ptx-isa", tests, NULL, NULL);
}
