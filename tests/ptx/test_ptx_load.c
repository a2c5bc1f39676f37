// SPDX-License-Identifier: MIT
/*
 * test_ptx_load.c - loading PTX: entry parameter layouts, module variables
 * and shared sizes; unsupported PTX refused with its line and instruction;
 * malformed, truncated, mutated and oversized modules refused without
 * crashing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptx_module.h"

static char *read_corpus(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.ptx", PTX_CORPUS_DIR, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *t = malloc((size_t)n + 1);
	assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
	t[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return t;
}

static void test_layout(void **state)
{
	size_t len;
	char *text = read_corpus("spaces", &len);
	struct ptx_module *m;
	struct ptx_error err;
	assert_int_equal(ptx_module_load(text, len, "spaces.ptx", &m, &err), 0);
	int e = ptx_module_find_entry(m, "spaces");
	assert_true(e >= 0);
	const struct ptx_entry_info *info = ptx_module_entry(m, (size_t)e);
	assert_int_equal(info->param_count, 5);
	const uint32_t off[5] = { 0, 8, 16, 24, 40 }, size[5] = { 8, 8, 8, 16, 4 };
	for (int i = 0; i < 5; i++) {
		assert_int_equal(info->params[i].offset, off[i]);
		assert_int_equal(info->params[i].size, size[i]);
	}
	assert_int_equal(info->params[3].align, 8);
	assert_string_equal(info->params[4].name, "spaces_param_4");
	assert_int_equal(info->param_bytes, 44);
	assert_true(info->static_shared_bytes >= 256);
	assert_true(info->local_bytes >= 64);
	assert_int_equal(ptx_module_find_entry(m, "nope"), -ENOENT);
	assert_int_equal(ptx_module_var_count(m), 2);
	int seen = 0;
	for (size_t i = 0; i < 2; i++) {
		const struct ptx_var_info *v = ptx_module_var(m, i);
		if (!strcmp(v->name, "table")) {
			assert_int_equal(v->space, PTX_VAR_CONST);
			assert_int_equal(v->size, 32);
			const int32_t want[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
			assert_memory_equal(v->init, want, 32);
			seen |= 1;
		} else if (!strcmp(v->name, "counter_base")) {
			assert_int_equal(v->space, PTX_VAR_GLOBAL);
			assert_int_equal(v->size, 4);
			assert_int_equal(*(const int32_t *)v->init, 100);
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	assert_true(ptx_module_instruction_count(m) > 50);
	ptx_module_free(m);
	free(text);
}

#define HEAD ".version 8.5\n.target sm_90\n.address_size 64\n"

struct bad {
	const char *text;
	int rc;
	const char *message;  /* a substring of the error */
};

static void test_refused(void **state)
{
	static const struct bad cases[] = {
		{ HEAD ".visible .entry k(.param .u64 p)\n{\n.reg .f32 %f<5>;\n"
		  ".reg .b64 %rd<3>;\n"
		  "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1, %f2}];\nret;\n}\n",
		  -ENOTSUP, "m.ptx:8: unsupported instruction tex.2d.v4.f32.f32" },
		{ HEAD ".visible .entry k()\n{\n.reg .b32 %r<3>;\n"
		  "cp.async.ca.shared.global [%r1], [%r2], 16;\nret;\n}\n",
		  -ENOTSUP, "m.ptx:7: unsupported instruction cp.async.ca.shared.global" },
		{ HEAD ".visible .entry k()\n{\n.reg .b16 %h<3>;\n"
		  "add.f16 %h1, %h1, %h2;\nret;\n}\n",
		  -ENOTSUP, "m.ptx:7: unsupported instruction add.f16" },
		{ HEAD ".visible .entry k()\n{\n.reg .f16 %h<3>;\nret;\n}\n",
		  -ENOTSUP, "m.ptx:6: unsupported type .f16" },
		{ HEAD ".visible .entry k()\n{\n.reg .f32 %f<3>;\n"
		  "add.cc.f32 %f1, %f1, %f2;\nret;\n}\n",
		  -ENOTSUP, "unsupported instruction add.cc.f32" },
		{ ".version 6.4\n.target sm_70\n.address_size 64\n", -ENOTSUP,
		  "unsupported PTX ISA version 6.4" },
		{ ".version 8.0\n.target sm_60\n.address_size 64\n", -ENOTSUP,
		  "unsupported target sm_60" },
		{ ".version 8.0\n.target sm_80\n.address_size 32\n", -ENOTSUP,
		  "unsupported .address_size 32" },
		{ HEAD ".visible .entry k()\n{\n.reg .b32 %r<3>;\n"
		  "add.s32 %r1, %r1, %r9;\nret;\n}\n", -EINVAL, "unknown register %r9" },
		{ HEAD ".visible .entry k()\n{\nbra $L__nowhere;\n}\n", -EINVAL,
		  "undefined label" },
		{ HEAD ".visible .entry k()\n{\n.reg .b32 %r<3>;\n"
		  "add.s32 %r1, %r1, %r2\nret;\n}\n", -EINVAL, "m.ptx:8" },
		{ HEAD ".visible .entry k()\n{\nret;\n", -EINVAL, "unterminated" },
		{ "garbage", -EINVAL, "m.ptx:1" },
		{ "", -EINVAL, "missing .version" },
		{ HEAD ".global .texref t;\n", -ENOTSUP, "unsupported" },
		{ HEAD ".visible .entry k()\n{\n.reg .b64 %rd<3>;\n"
		  "call.uni %rd1, (), proto;\nret;\n}\n", -ENOTSUP, "unsupported" },
		{ HEAD ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n"
		  "ld.param.v8.u32 {%r1,%r1,%r1,%r1,%r1,%r1,%r1,%r1}, [p];\nret;\n}\n",
		  -ENOTSUP, "unsupported" },
		{ HEAD ".shared .b8 big[300000];\n", -E2BIG, "exceed" },
		{ HEAD ".visible .entry k()\n{\n/* never closed\n", -EINVAL, "" },
		{ HEAD ".func f(.param .b32 a);\n.visible .entry k()\n{\n"
		  ".param .b32 x;\ncall.uni f, (x);\nret;\n}\n", -ENOTSUP,
		  "declared but not defined" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ptx_module *m = (struct ptx_module *)1;
		struct ptx_error err;
		int rc = ptx_module_load(cases[i].text, strlen(cases[i].text), "m.ptx", &m, &err);
		if (rc != cases[i].rc || !strstr(err.message, cases[i].message))
			fail_msg("case %zu: rc %d (want %d) message '%s' (want '%s')", i, rc,
				 cases[i].rc, err.message, cases[i].message);
		assert_null(m);
	}
}

static void test_nesting_and_size(void **state)
{
	/* blocks nested past the limit */
	size_t n = 200;
	char *t = malloc(strlen(HEAD) + 64 + 2 * n);
	strcpy(t, HEAD ".visible .entry k()\n{\n");
	for (size_t i = 0; i < n; i++)
		strcat(t, "{");
	struct ptx_module *m;
	struct ptx_error err;
	assert_int_equal(ptx_module_load(t, strlen(t), "m.ptx", &m, &err), -E2BIG);
	free(t);
	/* over the text limit: refused before parsing */
	char small[8] = "x";
	assert_int_equal(ptx_module_load(small, (size_t)PTX_MAX_TEXT_BYTES + 1, "m.ptx", &m, &err),
			 -E2BIG);
	/* an embedded NUL is malformed */
	const char nul[] = HEAD ".visible .entry k()\n{\0ret;\n}\n";
	assert_int_equal(ptx_module_load(nul, sizeof(nul) - 1, "m.ptx", &m, &err), -EINVAL);
	/* a huge register count is refused */
	const char regs[] = HEAD ".visible .entry k()\n{\n.reg .b32 %r<70000>;\nret;\n}\n";
	assert_int_equal(ptx_module_load(regs, strlen(regs), "m.ptx", &m, &err), -EINVAL);
}

static void test_truncated_and_mutated(void **state)
{
	size_t len;
	char *text = read_corpus("apps", &len);
	struct ptx_module *m;
	struct ptx_error err;
	unsigned ok = 0;
	for (size_t cut = 0; cut < len; cut += 61) {
		if (!ptx_module_load(text, cut, "cut.ptx", &m, &err)) {
			ok++;
			ptx_module_free(m);
		}
	}
	assert_int_equal(ptx_module_load(text, len, "apps.ptx", &m, &err), 0);
	ptx_module_free(m);
	uint64_t x = 12345;
	char *mut = malloc(len);
	for (int round = 0; round < 300; round++) {
		memcpy(mut, text, len);
		for (int k = 0; k < 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			mut[x % len] = "0123456789;,{}[]()%.@!-+abcXYZ \n\t"[(x >> 32) % 34];
		}
		if (!ptx_module_load(mut, len, "mut.ptx", &m, &err))
			ptx_module_free(m);
	}
	free(mut);
	free(text);
	(void)ok;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_nesting_and_size),
		cmocka_unit_test(test_truncated_and_mutated),
	};
	return cmocka_run_group_tests_name("ptx-load", tests, NULL, NULL);
}
