// SPDX-License-Identifier: MIT
/*
 * ptx_decode.c - lower one PTX instruction statement into a struct
 * ptx_insn (ptx_parse.h): opcode, type and modifiers checked against what
 * the executor implements, operands resolved to register indices,
 * immediates, symbols and frame offsets. An opcode or modifier it does not
 * know fails the load as "unsupported instruction MNEMONIC".
 */
#include "ptx_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARTS 16

struct mods {
	const char *mnem;
	size_t mlen;
	char base[32];
	const char *part[MAX_PARTS];
	size_t len[MAX_PARTS];
	bool used[MAX_PARTS];
	unsigned n;
};

static bool split(struct mods *m, const char *s, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->mnem = s;
	m->mlen = len;
	size_t i = 0;
	while (i < len && s[i] != '.')
		i++;
	if (i == 0 || i >= sizeof(m->base))
		return false;
	memcpy(m->base, s, i);
	m->base[i] = '\0';
	while (i < len) {
		size_t j = ++i;  /* past '.' */
		while (i < len && s[i] != '.')
			i++;
		if (m->n >= MAX_PARTS || i == j)
			return false;
		/* "L1::no_allocate" style parts keep their colons */
		m->part[m->n] = s + j;
		m->len[m->n++] = i - j;
	}
	return true;
}

static bool part_is(const struct mods *m, unsigned i, const char *s)
{
	size_t n = strlen(s);
	return m->len[i] == n && !memcmp(m->part[i], s, n);
}

static bool take(struct mods *m, const char *s)
{
	for (unsigned i = 0; i < m->n; i++)
		if (!m->used[i] && part_is(m, i, s)) {
			m->used[i] = true;
			return true;
		}
	return false;
}

/* Index in names of the first unused part that is one of them, or -1. */
static int take_one(struct mods *m, const char *const *names, unsigned count)
{
	for (unsigned i = 0; i < m->n; i++) {
		if (m->used[i])
			continue;
		for (unsigned k = 0; k < count; k++)
			if (part_is(m, i, names[k])) {
				m->used[i] = true;
				return (int)k;
			}
	}
	return -1;
}

static const char *const type_names[PT_COUNT] = {
	"", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64",
	"s8", "s16", "s32", "s64", "f32", "f64", "pred", "f16",
};

static int take_type(struct mods *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		if (m->used[i])
			continue;
		for (unsigned t = 1; t < PT_COUNT; t++)
			if (part_is(m, i, type_names[t])) {
				m->used[i] = true;
				return (int)t;
			}
	}
	return PT_NONE;
}

static void take_hints(struct mods *m)
{
	static const char *const hints[] = {
		"ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile",
		"relaxed", "acquire", "release", "acq_rel", "sc", "weak", "sys",
		"gpu", "cta", "aligned",
	};
	for (unsigned i = 0; i < m->n; i++) {
		if (m->used[i])
			continue;
		for (unsigned k = 0; k < sizeof(hints) / sizeof(hints[0]); k++)
			if (part_is(m, i, hints[k]))
				m->used[i] = true;
		if (m->len[i] > 4 && memchr(m->part[i], ':', m->len[i]) &&
		    (!memcmp(m->part[i], "L1::", 4) || !memcmp(m->part[i], "L2::", 4)) &&
		    !memmem(m->part[i], m->len[i], "cache_hint", 10))
			m->used[i] = true;
	}
}

static int unsupported(struct ptx_parser *p, unsigned line, const struct mods *m)
{
	return ptx_fail(p, line, -ENOTSUP, "unsupported instruction %.*s",
			(int)(m->mlen > 80 ? 80 : m->mlen), m->mnem);
}

static bool all_used(const struct mods *m)
{
	for (unsigned i = 0; i < m->n; i++)
		if (!m->used[i])
			return false;
	return true;
}

static const char *const rnd_names[] = { "rn", "rz", "rm", "rp",
					 "rni", "rzi", "rmi", "rpi" };

static int take_rnd(struct mods *m)
{
	int r = take_one(m, rnd_names, 8);
	return r < 0 ? RND_NONE : RND_RN + r;
}

static const char *const space_names[] = { "global", "shared", "local",
					   "param", "const" };

static int take_space(struct mods *m)
{
	int r = take_one(m, space_names, 5);
	if (r < 0)
		return SP_GENERIC;
	/* shared::cta is plain shared; shared::cluster is not supported */
	return SP_GLOBAL + r;
}

/* ---- operands ---- */

struct dctx {
	struct ptx_parser *p;
	unsigned line;
	const struct mods *m;
};

static int bad_operand(struct dctx *c, const char *what)
{
	return ptx_fail(c->p, c->line, -EINVAL, "%.*s: %s",
			(int)(c->m->mlen > 60 ? 60 : c->m->mlen), c->m->mnem, what);
}

static const struct {
	const char *name;
	uint8_t id;
} sregs[] = {
	{ "%tid.x", SR_TID_X }, { "%tid.y", SR_TID_Y }, { "%tid.z", SR_TID_Z },
	{ "%ntid.x", SR_NTID_X }, { "%ntid.y", SR_NTID_Y }, { "%ntid.z", SR_NTID_Z },
	{ "%ctaid.x", SR_CTAID_X }, { "%ctaid.y", SR_CTAID_Y },
	{ "%ctaid.z", SR_CTAID_Z }, { "%nctaid.x", SR_NCTAID_X },
	{ "%nctaid.y", SR_NCTAID_Y }, { "%nctaid.z", SR_NCTAID_Z },
	{ "%laneid", SR_LANEID }, { "%warpid", SR_WARPID },
	{ "%nwarpid", SR_NWARPID }, { "%smid", SR_SMID }, { "%nsmid", SR_NSMID },
	{ "%gridid", SR_GRIDID }, { "%clock", SR_CLOCK }, { "%clock64", SR_CLOCK64 },
	{ "%lanemask_eq", SR_LANEMASK_EQ }, { "%lanemask_le", SR_LANEMASK_LE },
	{ "%lanemask_lt", SR_LANEMASK_LT }, { "%lanemask_ge", SR_LANEMASK_GE },
	{ "%lanemask_gt", SR_LANEMASK_GT }, { "%globaltimer", SR_GLOBALTIMER },
	{ "%dynamic_smem_size", SR_DYNAMIC_SMEM_SIZE },
	{ "%total_smem_size", SR_TOTAL_SMEM_SIZE },
};

static int find_sreg(const struct ptx_atom *a)
{
	if (a->kind != A_WORD || a->offset)
		return -1;
	for (size_t i = 0; i < sizeof(sregs) / sizeof(sregs[0]); i++)
		if (strlen(sregs[i].name) == a->len && !memcmp(sregs[i].name, a->s, a->len))
			return sregs[i].id;
	return -1;
}

static int reg_of(struct dctx *c, const struct ptx_atom *a, struct ptx_operand *o)
{
	uint32_t r;
	if (a->kind != A_WORD || a->offset || ptx_find_reg(c->p, a->s, a->len, &r)) {
		if (a->kind == A_WORD && a->s[0] == '%' && find_sreg(a) < 0)
			return ptx_fail(c->p, c->line, a->len > 2 && !memcmp(a->s, "%envreg", 7) ?
					-ENOTSUP : -EINVAL, "unknown register %.*s",
					(int)(a->len > 40 ? 40 : a->len), a->s);
		return bad_operand(c, "expected a register");
	}
	memset(o, 0, sizeof(*o));
	o->kind = OPK_REG;
	o->reg = r;
	return 0;
}

static int dst(struct dctx *c, const struct ptx_sop *s, struct ptx_operand *o,
	       bool sink_ok)
{
	if (s->kind != SO_ATOM)
		return bad_operand(c, "bad destination");
	if (s->a[0].kind == A_SINK) {
		if (!sink_ok)
			return bad_operand(c, "'_' not allowed here");
		memset(o, 0, sizeof(*o));
		o->kind = OPK_SINK;
		return 0;
	}
	return reg_of(c, &s->a[0], o);
}

static uint64_t f32_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, 4);
	return b;
}

static uint64_t f64_bits(double d)
{
	uint64_t b;
	memcpy(&b, &d, 8);
	return b;
}

/* An atom as a source of type t: register or immediate. */
static int src_atom(struct dctx *c, const struct ptx_atom *a, unsigned t,
		    struct ptx_operand *o)
{
	memset(o, 0, sizeof(*o));
	unsigned size = ptx_type_size(t);
	uint64_t mask = size >= 8 ? ~0ull : ((1ull << (size * 8)) - 1);
	switch (a->kind) {
	case A_WORD:
		if (find_sreg(a) >= 0)
			return ptx_fail(c->p, c->line, -ENOTSUP,
					"unsupported special register operand in %.*s",
					(int)(c->m->mlen > 60 ? 60 : c->m->mlen), c->m->mnem);
		return reg_of(c, a, o);
	case A_INT:
		o->kind = OPK_IMM;
		if (t == PT_F32)
			o->imm = f32_bits((float)(int64_t)a->bits);
		else if (t == PT_F64)
			o->imm = f64_bits((double)(int64_t)a->bits);
		else if (t == PT_PRED)
			o->imm = a->bits != 0;
		else if (ptx_type_signed(t) && size < 8)
			o->imm = (uint64_t)(((int64_t)(a->bits << (64 - size * 8))) >> (64 - size * 8));
		else
			o->imm = a->bits & mask;
		return 0;
	case A_F32:
	case A_F64:
	case A_DEC: {
		double v;
		if (a->kind == A_F32) {
			float f;
			uint32_t b = (uint32_t)a->bits;
			memcpy(&f, &b, 4);
			v = f;
		} else if (a->kind == A_F64) {
			memcpy(&v, &a->bits, 8);
		} else {
			v = a->dval;
		}
		o->kind = OPK_IMM;
		if (t == PT_F32)
			o->imm = a->kind == A_F32 ? a->bits : f32_bits((float)v);
		else if (t == PT_F64)
			o->imm = a->kind == A_F64 ? a->bits : f64_bits(v);
		else if (a->kind != A_DEC && (size == 4 || size == 8) &&
			 (t == PT_B32 || t == PT_B64))
			o->imm = a->bits & mask;  /* bit pattern into a .b type */
		else
			return bad_operand(c, "float literal for an integer operand");
		return 0;
	}
	default:
		return bad_operand(c, "bad source operand");
	}
}

static int src(struct dctx *c, const struct ptx_sop *s, unsigned t,
	       struct ptx_operand *o)
{
	if (s->kind == SO_NOT && t == PT_PRED) {
		int rc = src_atom(c, &s->a[0], t, o);
		o->neg = 1;
		return rc;
	}
	if (s->kind != SO_ATOM)
		return bad_operand(c, "bad source operand");
	return src_atom(c, &s->a[0], t, o);
}

/* A symbol's address (mov d, sym; cvta d, sym). */
static int sym_of(struct dctx *c, const struct ptx_atom *a, struct ptx_operand *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = OPK_SYM;
	const struct ptx_local_sym *l = ptx_find_local(c->p, a->s, a->len);
	if (l) {
		if (l->kind == LS_KPARAM)
			return ptx_fail(c->p, c->line, -ENOTSUP,
					"unsupported: address of kernel parameter %.*s",
					(int)a->len, a->s);
		o->base = AB_FRAME;
		o->imm = l->offset + (uint64_t)a->offset;
		return 0;
	}
	const struct ptx_local_sym *sh = ptx_find_shared(c->p, a->s, a->len);
	if (sh) {
		o->base = AB_SHARED;
		if (sh->offset == UINT32_MAX) {
			o->reg = 1;
			o->imm = (uint64_t)a->offset;
		} else {
			o->imm = sh->offset + (uint64_t)a->offset;
		}
		return 0;
	}
	int v = ptx_find_var(c->p, a->s, a->len);
	if (v >= 0) {
		o->base = AB_VAR;
		o->reg = (uint32_t)v;
		o->imm = (uint64_t)a->offset;
		return 0;
	}
	if (ptx_find_func(c->p, a->s, a->len) >= 0)
		return ptx_fail(c->p, c->line, -ENOTSUP,
				"unsupported: address of function %.*s", (int)a->len, a->s);
	return ptx_fail(c->p, c->line, -EINVAL, "unknown symbol %.*s",
			(int)(a->len > 40 ? 40 : a->len), a->s);
}

static bool is_symbol_atom(struct dctx *c, const struct ptx_atom *a)
{
	uint32_t r;
	return a->kind == A_WORD && a->s[0] != '%' &&
	       ptx_find_reg(c->p, a->s, a->len, &r) != 0;
}

static int addr(struct dctx *c, const struct ptx_sop *s, struct ptx_operand *o)
{
	if (s->kind != SO_ADDR)
		return bad_operand(c, "expected an address");
	memset(o, 0, sizeof(*o));
	o->kind = OPK_ADDR;
	const struct ptx_atom *a = &s->a[0];
	if (a->kind == A_NONE) {
		o->base = AB_ABS;
		o->imm = (uint64_t)s->off;
		return 0;
	}
	uint32_t r;
	if (!ptx_find_reg(c->p, a->s, a->len, &r)) {
		o->base = AB_REG;
		o->reg = r;
		o->imm = (uint64_t)s->off;
		return 0;
	}
	const struct ptx_local_sym *l = ptx_find_local(c->p, a->s, a->len);
	if (l && l->kind == LS_KPARAM) {
		o->base = AB_KPARAM;
		o->imm = l->offset + (uint64_t)s->off;
		return 0;
	}
	struct ptx_atom w = *a;
	w.offset = s->off;
	if (sym_of(c, &w, o))
		return c->p->rc;
	o->kind = OPK_ADDR;
	return 0;
}

/* ---- per-instruction decoding ---- */

static uint8_t class_of_type(unsigned t)
{
	return t == PT_F32 ? PTX_CLASS_FP32 : t == PT_F64 ? PTX_CLASS_FP64 : PTX_CLASS_INT;
}

static bool type_in(unsigned t, const uint8_t *list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i] == t)
			return true;
	return false;
}

static const uint8_t int_types[] = { PT_U16, PT_U32, PT_U64, PT_S16, PT_S32, PT_S64 };
static const uint8_t bit_types[] = { PT_B16, PT_B32, PT_B64, PT_PRED };

static bool is_int(unsigned t)
{
	return type_in(t, int_types, sizeof(int_types));
}

static int need_ops(struct dctx *c, unsigned nops, unsigned want)
{
	if (nops != want)
		return ptx_fail(c->p, c->line, -EINVAL, "%.*s: expected %u operands, got %u",
				(int)(c->m->mlen > 60 ? 60 : c->m->mlen), c->m->mnem,
				want, nops);
	return 0;
}

static int wide_type(unsigned t)
{
	switch (t) {
	case PT_U16: return PT_U32;
	case PT_S16: return PT_S32;
	case PT_U32: return PT_U64;
	case PT_S32: return PT_S64;
	default: return PT_NONE;
	}
}

static int decode_call(struct dctx *c, struct ptx_insn *in, struct ptx_sop *ops,
		       unsigned nops)
{
	struct ptx_parser *p = c->p;
	unsigned i = 0;
	const struct ptx_sop *rets = NULL, *args = NULL;
	if (i < nops && ops[i].kind == SO_LIST)
		rets = &ops[i++];
	if (i >= nops || ops[i].kind != SO_ATOM || ops[i].a[0].kind != A_WORD)
		return bad_operand(c, "expected a function name");
	const struct ptx_atom *fn = &ops[i++].a[0];
	if (i < nops && ops[i].kind == SO_LIST)
		args = &ops[i++];
	if (i != nops)
		return ptx_fail(p, c->line, -ENOTSUP,
				"unsupported call form (indirect call or prototype)");
	uint32_t r;
	if (!ptx_find_reg(p, fn->s, fn->len, &r))
		return ptx_fail(p, c->line, -ENOTSUP, "unsupported indirect call");
	int callee = ptx_find_func(p, fn->s, fn->len);
	if (callee < 0)
		return ptx_fail(p, c->line, -EINVAL, "call to undeclared function %.*s",
				(int)(fn->len > 60 ? 60 : fn->len), fn->s);
	struct ptx_func *g = &p->m->funcs[callee];
	if (g->is_entry)
		return ptx_fail(p, c->line, -EINVAL, "call to an entry");
	unsigned nargs = args ? args->n : 0, nrets = rets ? rets->n : 0;
	if (nargs != g->nparams || nrets != g->nrets)
		return ptx_fail(p, c->line, -EINVAL, "call to %s: wrong argument count",
				g->name);
	struct ptx_func *f = p->f;
	int rc = ptx_grow((void **)&f->calls, &p->cap_calls, f->ncalls + 1,
			  sizeof(*f->calls), PTX_MAX_INSTRUCTIONS);
	if (rc)
		return ptx_fail(p, c->line, rc, "too many calls");
	struct ptx_call *call = &f->calls[f->ncalls];
	memset(call, 0, sizeof(*call));
	call->callee = (uint32_t)callee;
	call->nargs = nargs;
	call->nrets = nrets;
	call->arg_offset = calloc(nargs + 1, sizeof(uint32_t));
	call->arg_size = calloc(nargs + 1, sizeof(uint32_t));
	call->ret_offset = calloc(nrets + 1, sizeof(uint32_t));
	call->ret_size = calloc(nrets + 1, sizeof(uint32_t));
	f->ncalls++;
	if (!call->arg_offset || !call->arg_size || !call->ret_offset || !call->ret_size)
		return ptx_fail(p, c->line, -ENOMEM, "out of memory");
	for (unsigned k = 0; k < nargs + nrets; k++) {
		const struct ptx_atom *a = k < nargs ? &args->a[k] : &rets->a[k - nargs];
		const struct ptx_local_sym *l = a->kind == A_WORD ?
			ptx_find_local(p, a->s, a->len) : NULL;
		if (!l || l->kind != LS_FRAME || a->offset)
			return ptx_fail(p, c->line, a->kind == A_WORD ? -ENOTSUP : -EINVAL,
					"unsupported call argument (not a .param variable)");
		uint32_t want = k < nargs ? g->params[k].size : g->rets[k - nargs].size;
		if (l->size != want)
			return ptx_fail(p, c->line, -EINVAL,
					"call to %s: argument %u has %u bytes, expected %u",
					g->name, k, l->size, want);
		if (k < nargs) {
			call->arg_offset[k] = l->offset;
			call->arg_size[k] = l->size;
		} else {
			call->ret_offset[k - nargs] = l->offset;
			call->ret_size[k - nargs] = l->size;
		}
	}
	in->target = f->ncalls - 1;
	in->cls = PTX_CLASS_CONTROL;
	f->may_call = true;
	return 0;
}

static int decode_ldst(struct dctx *c, struct mods *m, struct ptx_insn *in,
		       struct ptx_sop *ops, unsigned nops, bool load)
{
	in->space = (uint8_t)take_space(m);
	take_hints(m);
	if (take(m, "v2"))
		in->vec = 2;
	else if (take(m, "v4"))
		in->vec = 4;
	else if (take(m, "v8"))
		return ptx_fail(c->p, c->line, -ENOTSUP, "unsupported instruction %.*s",
				(int)m->mlen, m->mnem);
	in->type = (uint8_t)take_type(m);
	if (in->type == PT_NONE || in->type == PT_PRED || !all_used(m) ||
	    ptx_type_size(in->type) * in->vec > 16)
		return ptx_fail(c->p, c->line, -ENOTSUP, "unsupported instruction %.*s",
				(int)(m->mlen > 80 ? 80 : m->mlen), m->mnem);
	in->cls = PTX_CLASS_MEMORY;
	if (need_ops(c, nops, 2))
		return c->p->rc;
	const struct ptx_sop *a = load ? &ops[1] : &ops[0];
	const struct ptx_sop *v = load ? &ops[0] : &ops[1];
	if (addr(c, a, &in->o[0]))
		return c->p->rc;
	in->nops = (uint8_t)(1 + in->vec);
	if (in->vec == 1) {
		return load ? dst(c, v, &in->o[1], false) : src(c, v, in->type, &in->o[1]);
	}
	if (v->kind != SO_VEC || v->n != in->vec)
		return bad_operand(c, "expected a vector operand");
	for (unsigned i = 0; i < in->vec; i++) {
		if (load && v->a[i].kind == A_SINK) {
			memset(&in->o[1 + i], 0, sizeof(in->o[0]));
			in->o[1 + i].kind = OPK_SINK;
		} else if (load) {
			if (reg_of(c, &v->a[i], &in->o[1 + i]))
				return c->p->rc;
		} else if (src_atom(c, &v->a[i], in->type, &in->o[1 + i])) {
			return c->p->rc;
		}
	}
	return 0;
}

static int decode_atom(struct dctx *c, struct mods *m, struct ptx_insn *in,
		       struct ptx_sop *ops, unsigned nops, bool red)
{
	static const char *const aops[] = { "add", "min", "max", "exch", "cas",
					    "and", "or", "xor", "inc", "dec" };
	in->space = (uint8_t)take_space(m);
	take_hints(m);
	int op = take_one(m, aops, 10);
	in->type = (uint8_t)take_type(m);
	if (op < 0 || !all_used(m) || (in->space != SP_GENERIC && in->space != SP_GLOBAL &&
					in->space != SP_SHARED))
		return unsupported(c->p, c->line, m);
	unsigned t = in->type;
	bool ok;
	switch (op) {
	case PTX_ATOM_ADD:
		ok = t == PT_U32 || t == PT_S32 || t == PT_U64 || t == PT_F32 ||
		     t == PT_F64 || t == PT_S64;
		break;
	case PTX_ATOM_MIN: case PTX_ATOM_MAX:
		ok = t == PT_U32 || t == PT_S32 || t == PT_U64 || t == PT_S64;
		break;
	case PTX_ATOM_EXCH: case PTX_ATOM_CAS:
	case PTX_ATOM_AND: case PTX_ATOM_OR: case PTX_ATOM_XOR:
		ok = t == PT_B32 || t == PT_B64 || t == PT_U32 || t == PT_U64 ||
		     t == PT_S32 || t == PT_S64;
		break;
	default:
		ok = t == PT_U32;
		break;
	}
	if (!ok)
		return unsupported(c->p, c->line, m);
	in->uni = (uint8_t)op;
	in->cls = PTX_CLASS_ATOMIC;
	unsigned want = (red ? 2 : 3) + (op == PTX_ATOM_CAS);
	if (need_ops(c, nops, want))
		return c->p->rc;
	unsigned k = 0;
	if (!red) {
		if (dst(c, &ops[k++], &in->o[1], true))
			return c->p->rc;
	} else {
		in->o[1].kind = OPK_NONE;
	}
	if (addr(c, &ops[k++], &in->o[0]) || src(c, &ops[k++], t, &in->o[2]))
		return c->p->rc;
	if (op == PTX_ATOM_CAS && src(c, &ops[k++], t, &in->o[3]))
		return c->p->rc;
	return 0;
}

bool ptx_decode_known(const char *mnem, size_t mlen)
{
	static const char *const bases[] = {
		"add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor",
		"shl", "shr", "copysign", "sad", "mad", "fma", "addc", "subc", "madc", "abs", "neg", "not",
		"cnot", "popc", "clz", "brev", "bfind", "rcp", "sqrt", "rsqrt", "sin",
		"cos", "lg2", "ex2", "tanh", "setp", "selp", "mov", "cvt", "cvta",
		"isspacep", "ld", "ldu", "st", "atom", "red", "bar", "barrier",
		"membar", "fence", "shfl", "vote", "activemask", "redux", "bra", "call", "ret",
		"exit", "trap", "brkpt", "nanosleep", "prefetch", "prefetchu",
		"pmevent", "bfe", "bfi", "prmt", "shf", "testp",
	};
	size_t n = 0;
	while (n < mlen && mnem[n] != '.')
		n++;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (strlen(bases[i]) == n && !memcmp(bases[i], mnem, n))
			return true;
	return false;
}

int ptx_decode(struct ptx_parser *p, unsigned line, const char *mnem,
	       size_t mlen, const struct ptx_atom *guard, bool guard_neg,
	       struct ptx_sop *ops, unsigned nops)
{
	struct mods mm, *m = &mm;
	struct dctx cx = { p, line, m }, *c = &cx;
	if (!split(m, mnem, mlen)) {
		memset(m, 0, sizeof(*m));
		m->mnem = mnem;
		m->mlen = mlen;
		return unsupported(p, line, m);
	}
	if (ptx_append_insn(p, OP_NOP, line))
		return p->rc;
	struct ptx_insn *in = &p->f->insns[p->f->ninsns - 1];
	if (guard) {
		struct ptx_operand g;
		if (reg_of(c, guard, &g))
			return p->rc;
		in->guard = g.reg;
		in->guard_neg = guard_neg;
	}
	const char *b = m->base;
	unsigned t;

	/* binary arithmetic and logic */
	static const struct {
		const char *name;
		uint8_t op;
	} binops[] = {
		{ "add", OP_ADD }, { "sub", OP_SUB }, { "mul", OP_MUL },
		{ "div", OP_DIV }, { "rem", OP_REM }, { "min", OP_MIN },
		{ "max", OP_MAX }, { "and", OP_AND }, { "or", OP_OR },
		{ "xor", OP_XOR }, { "shl", OP_SHL }, { "shr", OP_SHR },
		{ "copysign", OP_COPYSIGN },
	};
	bool carry_in = !strcmp(b, "addc") || !strcmp(b, "subc");
	for (size_t i = 0; i < sizeof(binops) / sizeof(binops[0]); i++) {
		if (strcmp(b, binops[i].name) && !(carry_in && !strncmp(b, binops[i].name, 3) &&
						   i < 2))
			continue;
		uint8_t op = binops[i].op;
		in->op = op;
		in->cc = (uint8_t)((carry_in ? 2 : 0) | ((op == OP_ADD || op == OP_SUB) &&
							 take(m, "cc")));
		if (op == OP_MUL) {
			static const char *const w[] = { "lo", "hi", "wide" };
			int k = take_one(m, w, 3);
			in->mode = k < 0 ? MODE_NONE : (uint8_t)(MODE_LO + k);
		}
		in->rnd = (uint8_t)take_rnd(m);
		in->ftz = take(m, "ftz");
		in->sat = take(m, "sat");
		if (op == OP_DIV) {
			in->approx = take(m, "approx") ? 1 : take(m, "full") ? 2 : 0;
		}
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || t == PT_NONE)
			return unsupported(p, line, m);
		bool fl = ptx_type_float(t);
		bool ok;
		if (in->cc && (fl || in->sat || (t != PT_U32 && t != PT_S32 && t != PT_U64 &&
						  t != PT_S64)))
			return unsupported(p, line, m);
		switch (op) {
		case OP_ADD: case OP_SUB:
			ok = fl ? in->rnd <= RND_RP && (!in->sat || t == PT_F32) &&
				  (!in->ftz || t == PT_F32)
				: is_int(t) && !in->rnd && !in->ftz && (!in->sat || t == PT_S32);
			break;
		case OP_MUL:
			ok = fl ? in->rnd <= RND_RP && !in->mode && (!in->ftz || t == PT_F32) &&
				  (!in->sat || t == PT_F32)
				: is_int(t) && in->mode && !in->rnd && !in->ftz && !in->sat &&
				  (in->mode != MODE_WIDE || wide_type(t));
			break;
		case OP_DIV:
			if (fl)
				ok = !in->sat && (t == PT_F32 ? (in->approx ? !in->rnd : in->rnd != RND_NONE) ||
						  (in->approx == 2 && !in->rnd)
						  : (!in->approx && in->rnd && in->rnd <= RND_RP && !in->ftz));
			else
				ok = is_int(t) && !in->rnd && !in->ftz && !in->sat && !in->approx;
			break;
		case OP_REM:
			ok = is_int(t) && !in->rnd && !in->ftz && !in->sat;
			break;
		case OP_MIN: case OP_MAX:
			ok = fl ? !in->rnd && !in->sat && (!in->ftz || t == PT_F32)
				: is_int(t) && !in->rnd && !in->ftz && !in->sat;
			break;
		case OP_AND: case OP_OR: case OP_XOR:
			ok = type_in(t, bit_types, sizeof(bit_types)) && !in->rnd &&
			     !in->ftz && !in->sat;
			break;
		case OP_SHL:
			ok = (t == PT_B16 || t == PT_B32 || t == PT_B64) && !in->rnd &&
			     !in->ftz && !in->sat;
			break;
		case OP_SHR:
			ok = (t == PT_B16 || t == PT_B32 || t == PT_B64 || is_int(t)) &&
			     !in->rnd && !in->ftz && !in->sat;
			break;
		default: /* copysign */
			ok = fl && !in->rnd && !in->ftz && !in->sat;
			break;
		}
		if (!ok)
			return unsupported(p, line, m);
		if (fl && in->rnd == RND_NONE && op != OP_DIV)
			in->rnd = RND_RN;
		in->cls = class_of_type(t);
		if (op == OP_DIV && fl && t == PT_F32 && in->approx)
			in->cls = PTX_CLASS_SFU;
		if (need_ops(c, nops, 3))
			return p->rc;
		unsigned bt = (op == OP_SHL || op == OP_SHR) ? PT_U32 : t;
		in->nops = 3;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]) ||
		    src(c, &ops[2], bt, &in->o[2]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "sad")) {
		in->op = OP_SAD;
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || !is_int(t))
			return unsupported(p, line, m);
		in->cls = PTX_CLASS_INT;
		if (need_ops(c, nops, 4))
			return p->rc;
		in->nops = 4;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]) ||
		    src(c, &ops[2], t, &in->o[2]) || src(c, &ops[3], t, &in->o[3]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "mad") || !strcmp(b, "fma") || !strcmp(b, "madc")) {
		in->op = b[0] == 'm' ? OP_MAD : OP_FMA;
		static const char *const w[] = { "lo", "hi", "wide" };
		int k = take_one(m, w, 3);
		in->mode = k < 0 ? MODE_NONE : (uint8_t)(MODE_LO + k);
		if (in->op == OP_MAD) {
			in->cc = (uint8_t)((!strcmp(b, "madc") ? 2 : 0) | take(m, "cc"));
			if (in->cc && in->mode != MODE_LO && in->mode != MODE_HI)
				return unsupported(p, line, m);
		}
		in->rnd = (uint8_t)take_rnd(m);
		in->ftz = take(m, "ftz");
		in->sat = take(m, "sat");
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || t == PT_NONE)
			return unsupported(p, line, m);
		bool ok;
		if (ptx_type_float(t)) {
			if (in->cc)
				return unsupported(p, line, m);
			ok = !in->mode && in->rnd <= RND_RP && (!in->ftz || t == PT_F32) &&
			     (!in->sat || t == PT_F32) &&
			     (in->op == OP_MAD || in->rnd != RND_NONE || t == PT_F32);
			if (!in->rnd)
				in->rnd = RND_RN;
			in->op = OP_FMA;
		} else {
			ok = in->op == OP_MAD && is_int(t) && in->mode && !in->rnd && !in->ftz &&
			     (!in->cc || t == PT_U32 || t == PT_S32 || t == PT_U64 || t == PT_S64) &&
			     (!in->sat || (t == PT_S32 && in->mode == MODE_HI)) &&
			     (in->mode != MODE_WIDE || wide_type(t));
		}
		if (!ok)
			return unsupported(p, line, m);
		in->cls = class_of_type(t);
		if (need_ops(c, nops, 4))
			return p->rc;
		unsigned ct = in->mode == MODE_WIDE ? (unsigned)wide_type(t) : t;
		in->nops = 4;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]) ||
		    src(c, &ops[2], t, &in->o[2]) || src(c, &ops[3], ct, &in->o[3]))
			return p->rc;
		return 0;
	}

	/* unary */
	static const struct {
		const char *name;
		uint8_t op;
	} unops[] = {
		{ "abs", OP_ABS }, { "neg", OP_NEG }, { "not", OP_NOT },
		{ "cnot", OP_CNOT }, { "popc", OP_POPC }, { "clz", OP_CLZ },
		{ "brev", OP_BREV }, { "bfind", OP_BFIND }, { "rcp", OP_RCP },
		{ "sqrt", OP_SQRT }, { "rsqrt", OP_RSQRT }, { "sin", OP_SIN },
		{ "cos", OP_COS }, { "lg2", OP_LG2 }, { "ex2", OP_EX2 },
		{ "tanh", OP_TANH },
	};
	for (size_t i = 0; i < sizeof(unops) / sizeof(unops[0]); i++) {
		if (strcmp(b, unops[i].name))
			continue;
		uint8_t op = unops[i].op;
		in->op = op;
		in->rnd = (uint8_t)take_rnd(m);
		in->approx = take(m, "approx");
		in->ftz = take(m, "ftz");
		if (op == OP_BFIND && take(m, "shiftamt"))
			in->mode = MODE_BFIND_SHIFTAMT;
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || t == PT_NONE)
			return unsupported(p, line, m);
		bool ok, fl = ptx_type_float(t);
		switch (op) {
		case OP_ABS: case OP_NEG:
			ok = fl ? !in->rnd && !in->approx && (!in->ftz || t == PT_F32)
				: is_int(t) && !in->rnd && !in->approx && !in->ftz;
			break;
		case OP_NOT: case OP_CNOT:
			ok = type_in(t, bit_types, sizeof(bit_types)) &&
			     (op == OP_NOT || t != PT_PRED) && !in->rnd && !in->approx && !in->ftz;
			break;
		case OP_POPC: case OP_CLZ: case OP_BREV:
			ok = (t == PT_B32 || t == PT_B64) && !in->rnd && !in->approx && !in->ftz;
			break;
		case OP_BFIND:
			ok = (t == PT_U32 || t == PT_U64 || t == PT_S32 || t == PT_S64) &&
			     !in->rnd && !in->approx && !in->ftz;
			break;
		case OP_RCP: case OP_SQRT:
			ok = fl && (in->approx ? !in->rnd && (t == PT_F32 || in->ftz)
				    : (in->rnd >= RND_RN && in->rnd <= RND_RP &&
				       (!in->ftz || t == PT_F32)));
			break;
		case OP_RSQRT:
			ok = fl && in->approx && !in->rnd && (t == PT_F32 || in->ftz || true);
			break;
		default: /* sin cos lg2 ex2 tanh */
			ok = t == PT_F32 && in->approx && !in->rnd;
			break;
		}
		if (!ok)
			return unsupported(p, line, m);
		if (op >= OP_RCP && op <= OP_TANH && (in->approx || op == OP_RSQRT))
			in->cls = PTX_CLASS_SFU;
		else
			in->cls = class_of_type(t);
		if (need_ops(c, nops, 2))
			return p->rc;
		unsigned at = t;
		in->nops = 2;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], at, &in->o[1]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "setp")) {
		static const char *const cmps[] = {
			"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
			"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan" };
		static const char *const bools[] = { "and", "or", "xor" };
		in->op = OP_SETP;
		int k = take_one(m, cmps, 18);
		int bo = take_one(m, bools, 3);
		in->ftz = take(m, "ftz");
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (k < 0 || !all_used(m) || t == PT_NONE || t == PT_PRED ||
		    t == PT_B8 || t == PT_U8 || t == PT_S8)
			return unsupported(p, line, m);
		bool fl = ptx_type_float(t);
		if ((!fl && k >= CMP_EQU) || (fl && k >= CMP_LO && k <= CMP_HS) ||
		    (in->ftz && t != PT_F32))
			return unsupported(p, line, m);
		if (!fl && !ptx_type_signed(t) && k >= CMP_LT && k <= CMP_GE)
			k += CMP_LO - CMP_LT;  /* unsigned lt..ge = lo..hs */
		in->cmp = (uint8_t)k;
		in->boolop = (uint8_t)(bo < 0 ? BOOL_NONE : BOOL_AND + bo);
		in->cls = class_of_type(t);
		if (need_ops(c, nops, bo < 0 ? 3 : 4))
			return p->rc;
		in->nops = 5;
		if (ops[0].kind == SO_PAIR) {
			if (reg_of(c, &ops[0].a[0], &in->o[0]) || reg_of(c, &ops[0].a[1], &in->o[1]))
				return p->rc;
		} else if (dst(c, &ops[0], &in->o[0], false)) {
			return p->rc;
		}
		if (src(c, &ops[1], t, &in->o[2]) || src(c, &ops[2], t, &in->o[3]))
			return p->rc;
		if (bo >= 0 && src(c, &ops[3], PT_PRED, &in->o[4]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "selp")) {
		in->op = OP_SELP;
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || t == PT_NONE || t == PT_PRED || ptx_type_size(t) < 2)
			return unsupported(p, line, m);
		in->cls = class_of_type(t) == PTX_CLASS_FP64 ? PTX_CLASS_FP64 : PTX_CLASS_INT;
		if (need_ops(c, nops, 4))
			return p->rc;
		in->nops = 4;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]) ||
		    src(c, &ops[2], t, &in->o[2]) || src(c, &ops[3], PT_PRED, &in->o[3]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "mov")) {
		in->op = OP_MOV;
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || t == PT_NONE)
			return unsupported(p, line, m);
		in->cls = PTX_CLASS_INT;
		if (need_ops(c, nops, 2))
			return p->rc;
		if (ops[0].kind == SO_VEC || ops[1].kind == SO_VEC) {
			bool pack = ops[1].kind == SO_VEC;
			const struct ptx_sop *v = pack ? &ops[1] : &ops[0];
			if (ops[0].kind == ops[1].kind || (v->n != 2 && v->n != 4) ||
			    ptx_type_size(t) < 2 * v->n / 2 || t == PT_PRED ||
			    ptx_type_size(t) % v->n)
				return bad_operand(c, "bad vector mov");
			in->mode = pack ? 1 : 2;
			in->vec = (uint8_t)v->n;
			in->nops = (uint8_t)(1 + v->n);
			unsigned et = ptx_type_size(t) / v->n == 4 ? PT_B32 :
				      ptx_type_size(t) / v->n == 2 ? PT_B16 : PT_B8;
			for (unsigned i = 0; i < v->n; i++) {
				int rc = pack ? src_atom(c, &v->a[i], et, &in->o[1 + i])
					      : (v->a[i].kind == A_SINK
						 ? (in->o[i].kind = OPK_SINK, 0)
						 : reg_of(c, &v->a[i], &in->o[i]));
				if (rc)
					return p->rc;
			}
			if (pack)
				return dst(c, &ops[0], &in->o[0], false);
			return src(c, &ops[1], t, &in->o[v->n]);
		}
		if (dst(c, &ops[0], &in->o[0], false))
			return p->rc;
		in->nops = 2;
		int sr = ops[1].kind == SO_ATOM ? find_sreg(&ops[1].a[0]) : -1;
		if (sr >= 0) {
			in->op = OP_SREG;
			in->o[1].reg = (uint32_t)sr;
			return 0;
		}
		if (ops[1].kind == SO_ATOM && is_symbol_atom(c, &ops[1].a[0]) &&
		    ops[1].a[0].s[0] != '%')
			return sym_of(c, &ops[1].a[0], &in->o[1]);
		return src(c, &ops[1], t, &in->o[1]);
	}

	if (!strcmp(b, "cvt")) {
		in->op = OP_CVT;
		in->rnd = (uint8_t)take_rnd(m);
		in->ftz = take(m, "ftz");
		in->sat = take(m, "sat");
		unsigned dt = (unsigned)take_type(m), st = (unsigned)take_type(m);
		if (!all_used(m) || dt == PT_NONE || st == PT_NONE || dt == PT_PRED ||
		    st == PT_PRED)
			return unsupported(p, line, m);
		bool df = ptx_type_float(dt), sf = ptx_type_float(st);
		bool ok;
		if (dt == PT_F16 || st == PT_F16) {
			/* half <-> f32/f64 only; narrowing needs a rounding mode */
			unsigned other = dt == PT_F16 ? st : dt;
			ok = ptx_type_float(other) && !in->ftz &&
			     (dt == PT_F16 ? in->rnd >= RND_RN && in->rnd <= RND_RP
					   : in->rnd == RND_NONE && !in->sat);
		} else if (df && sf) {
			if (dt == st)
				ok = in->rnd == RND_NONE || in->rnd >= RND_RNI;
			else if (dt == PT_F32)  /* f64 -> f32 */
				ok = in->rnd >= RND_RN && in->rnd <= RND_RP;
			else
				ok = in->rnd == RND_NONE;
		} else if (df) {
			ok = in->rnd >= RND_RN && in->rnd <= RND_RP && !in->sat;
		} else if (sf) {
			ok = in->rnd >= RND_RNI && !in->sat;
		} else {
			ok = !in->rnd && !in->ftz;
		}
		if (in->ftz && st != PT_F32 && dt != PT_F32)
			ok = false;
		if (in->sat && df && !sf)
			ok = false;
		if (!ok)
			return unsupported(p, line, m);
		in->type = (uint8_t)dt;
		in->type2 = (uint8_t)st;
		in->cls = PTX_CLASS_CONVERT;
		if (need_ops(c, nops, 2))
			return p->rc;
		in->nops = 2;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], st, &in->o[1]))
			return p->rc;
		return 0;
	}

	if (!strcmp(b, "cvta") || !strcmp(b, "isspacep")) {
		in->op = b[0] == 'c' ? OP_CVTA : OP_ISSPACEP;
		in->to = take(m, "to");
		in->space = (uint8_t)take_space(m);
		t = (unsigned)take_type(m);
		in->type = (uint8_t)t;
		if (!all_used(m) || in->space == SP_GENERIC ||
		    (in->op == OP_CVTA && t != PT_U64 && t != PT_U32) ||
		    (in->op == OP_ISSPACEP && (t != PT_NONE || in->to)))
			return unsupported(p, line, m);
		in->cls = PTX_CLASS_INT;
		if (need_ops(c, nops, 2))
			return p->rc;
		in->nops = 2;
		if (dst(c, &ops[0], &in->o[0], false))
			return p->rc;
		if (ops[1].kind == SO_ATOM && is_symbol_atom(c, &ops[1].a[0]))
			return sym_of(c, &ops[1].a[0], &in->o[1]);
		return src(c, &ops[1], PT_U64, &in->o[1]);
	}

	if (!strcmp(b, "ld") || !strcmp(b, "ldu")) {
		in->op = OP_LD;
		return decode_ldst(c, m, in, ops, nops, true);
	}
	if (!strcmp(b, "st")) {
		in->op = OP_ST;
		return decode_ldst(c, m, in, ops, nops, false);
	}
	if (!strcmp(b, "atom") || !strcmp(b, "red")) {
		in->op = b[0] == 'a' ? OP_ATOM : OP_RED;
		return decode_atom(c, m, in, ops, nops, in->op == OP_RED);
	}

	if (!strcmp(b, "bar") || !strcmp(b, "barrier")) {
		in->cls = PTX_CLASS_SYNC;
		if (!strcmp(b, "bar") && take(m, "warp")) {
			in->op = OP_BAR_WARP;
			if (!take(m, "sync") || !all_used(m))
				return unsupported(p, line, m);
			if (need_ops(c, nops, 1))
				return p->rc;
			in->nops = 1;
			return src(c, &ops[0], PT_B32, &in->o[0]);
		}
		in->op = OP_BAR;
		take(m, "cta");
		if (take(m, "red")) {
			static const char *const rops[] = { "popc", "and", "or" };
			in->op = OP_BAR_RED;
			int k = take_one(m, rops, 3);
			take(m, "aligned");
			t = (unsigned)take_type(m);
			if (k < 0 || !all_used(m) || (k == 0 ? t != PT_U32 : t != PT_PRED))
				return unsupported(p, line, m);
			in->mode = (uint8_t)(MODE_RED_POPC + k);
			in->type = (uint8_t)t;
			if (nops != 3 && nops != 4)
				return need_ops(c, nops, 3);
			in->nops = 4;
			if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], PT_U32, &in->o[1]))
				return p->rc;
			if (nops == 4 && src(c, &ops[2], PT_U32, &in->o[2]))
				return p->rc;
			if (src(c, &ops[nops - 1], PT_PRED, &in->o[3]))
				return p->rc;
			p->f->has_barrier = true;
			return 0;
		}
		bool sync = take(m, "sync");
		take(m, "aligned");
		if (!sync || !all_used(m))
			return unsupported(p, line, m);
		if (nops < 1 || nops > 2)
			return need_ops(c, nops, 1);
		in->nops = 2;
		if (src(c, &ops[0], PT_U32, &in->o[0]))
			return p->rc;
		if (nops == 2 && src(c, &ops[1], PT_U32, &in->o[1]))
			return p->rc;
		p->f->has_barrier = true;
		return 0;
	}
	if (!strcmp(b, "membar") || !strcmp(b, "fence")) {
		in->op = OP_NOP;
		in->cls = PTX_CLASS_SYNC;
		if (b[0] == 'm') {
			static const char *const lv[] = { "cta", "gl", "sys" };
			if (take_one(m, lv, 3) < 0 || !all_used(m))
				return unsupported(p, line, m);
		} else {
			take(m, "sc");
			take(m, "acq_rel");
			static const char *const lv[] = { "cta", "gpu", "sys" };
			if (take_one(m, lv, 3) < 0 || !all_used(m))
				return unsupported(p, line, m);
		}
		return need_ops(c, nops, 0);
	}

	if (!strcmp(b, "shfl")) {
		static const char *const modes[] = { "up", "down", "bfly", "idx" };
		in->op = OP_SHFL;
		in->cls = PTX_CLASS_WARP;
		bool sync = take(m, "sync");
		int k = take_one(m, modes, 4);
		t = (unsigned)take_type(m);
		if (!sync || k < 0 || t != PT_B32 || !all_used(m))
			return unsupported(p, line, m);
		in->mode = (uint8_t)(MODE_UP + k);
		in->type = PT_B32;
		if (need_ops(c, nops, 5))
			return p->rc;
		in->nops = 6;
		if (ops[0].kind == SO_PAIR) {
			if (reg_of(c, &ops[0].a[0], &in->o[0]) || reg_of(c, &ops[0].a[1], &in->o[1]))
				return p->rc;
		} else if (dst(c, &ops[0], &in->o[0], false)) {
			return p->rc;
		}
		if (src(c, &ops[1], PT_B32, &in->o[2]) || src(c, &ops[2], PT_B32, &in->o[3]) ||
		    src(c, &ops[3], PT_B32, &in->o[4]) || src(c, &ops[4], PT_B32, &in->o[5]))
			return p->rc;
		return 0;
	}
	if (!strcmp(b, "vote")) {
		static const char *const modes[] = { "all", "any", "uni", "ballot" };
		in->op = OP_VOTE;
		in->cls = PTX_CLASS_WARP;
		bool sync = take(m, "sync");
		int k = take_one(m, modes, 4);
		t = (unsigned)take_type(m);
		if (!sync || k < 0 || !all_used(m) ||
		    (k == 3 ? t != PT_B32 : t != PT_PRED))
			return unsupported(p, line, m);
		in->mode = (uint8_t)(MODE_ALL + k);
		in->type = (uint8_t)t;
		if (need_ops(c, nops, 3))
			return p->rc;
		in->nops = 3;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], PT_PRED, &in->o[1]) ||
		    src(c, &ops[2], PT_B32, &in->o[2]))
			return p->rc;
		return 0;
	}
	if (!strcmp(b, "redux")) {
		static const char *const rops[] = { "add", "min", "max", "and", "or", "xor" };
		in->op = OP_REDUX;
		in->cls = PTX_CLASS_WARP;
		bool sync = take(m, "sync");
		int k = take_one(m, rops, 6);
		t = (unsigned)take_type(m);
		if (!sync || k < 0 || !all_used(m) ||
		    (k < 3 ? (t != PT_U32 && t != PT_S32) : t != PT_B32))
			return unsupported(p, line, m);
		in->uni = (uint8_t)k;
		in->type = (uint8_t)t;
		if (need_ops(c, nops, 3))
			return p->rc;
		in->nops = 3;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]) ||
		    src(c, &ops[2], PT_B32, &in->o[2]))
			return p->rc;
		return 0;
	}
	if (!strcmp(b, "activemask")) {
		in->op = OP_ACTIVEMASK;
		in->cls = PTX_CLASS_WARP;
		if (take_type(m) != PT_B32 || !all_used(m))
			return unsupported(p, line, m);
		in->type = PT_B32;
		if (need_ops(c, nops, 1))
			return p->rc;
		in->nops = 1;
		return dst(c, &ops[0], &in->o[0], false);
	}

	if (!strcmp(b, "bra")) {
		in->op = OP_BRA;
		in->uni = take(m, "uni");
		if (!all_used(m))
			return unsupported(p, line, m);
		if (need_ops(c, nops, 1))
			return p->rc;
		if (ops[0].kind != SO_ATOM || ops[0].a[0].kind != A_WORD)
			return bad_operand(c, "expected a label");
		return ptx_add_label_ref(p, p->f->ninsns - 1, ops[0].a[0].s,
					 ops[0].a[0].len, line);
	}
	if (!strcmp(b, "call")) {
		in->op = OP_CALL;
		take(m, "uni");
		if (!all_used(m))
			return unsupported(p, line, m);
		return decode_call(c, in, ops, nops);
	}
	if (!strcmp(b, "ret") || !strcmp(b, "exit")) {
		in->op = b[0] == 'r' ? (p->f->is_entry ? OP_EXIT : OP_RET) : OP_EXIT;
		take(m, "uni");
		if (!all_used(m))
			return unsupported(p, line, m);
		return need_ops(c, nops, 0);
	}
	if (!strcmp(b, "trap") || !strcmp(b, "brkpt")) {
		in->op = OP_TRAP;
		if (!all_used(m))
			return unsupported(p, line, m);
		return need_ops(c, nops, 0);
	}
	if (!strcmp(b, "nanosleep") || !strcmp(b, "prefetch") || !strcmp(b, "prefetchu") ||
	    !strcmp(b, "pmevent")) {
		in->op = OP_NOP;
		in->cls = PTX_CLASS_SYNC;
		take_hints(m);
		take_space(m);
		take(m, "u32");
		take(m, "L1");
		take(m, "L2");
		if (!all_used(m))
			return unsupported(p, line, m);
		/* operands are evaluated by nothing; check their syntax only */
		return 0;
	}

	if (!strcmp(b, "bfe") || !strcmp(b, "bfi") || !strcmp(b, "prmt") ||
	    !strcmp(b, "shf")) {
		in->cls = PTX_CLASS_INT;
		unsigned want = 4;
		if (b[0] == 'b' && b[2] == 'e') {
			in->op = OP_BFE;
			t = (unsigned)take_type(m);
			if (t != PT_U32 && t != PT_U64 && t != PT_S32 && t != PT_S64)
				return unsupported(p, line, m);
		} else if (b[0] == 'b') {
			in->op = OP_BFI;
			t = (unsigned)take_type(m);
			if (t != PT_B32 && t != PT_B64)
				return unsupported(p, line, m);
			want = 5;
		} else if (b[0] == 'p') {
			static const char *const pm[] = { "f4e", "b4e", "rc8", "ecl", "ecr", "rc16" };
			in->op = OP_PRMT;
			int k = take_one(m, pm, 6);
			in->mode = k < 0 ? MODE_NONE : (uint8_t)(MODE_PRMT_F4E + k);
			t = (unsigned)take_type(m);
			if (t != PT_B32)
				return unsupported(p, line, m);
		} else {
			in->op = OP_SHF;
			bool l = take(m, "l"), r = take(m, "r");
			bool w = take(m, "wrap"), cl = take(m, "clamp");
			t = (unsigned)take_type(m);
			if (l == r || w == cl || t != PT_B32)
				return unsupported(p, line, m);
			in->mode = l ? (w ? MODE_SHF_L_WRAP : MODE_SHF_L_CLAMP)
				     : (w ? MODE_SHF_R_WRAP : MODE_SHF_R_CLAMP);
		}
		in->type = (uint8_t)t;
		if (!all_used(m))
			return unsupported(p, line, m);
		if (need_ops(c, nops, want))
			return p->rc;
		in->nops = (uint8_t)want;
		if (dst(c, &ops[0], &in->o[0], false))
			return p->rc;
		for (unsigned i = 1; i < want; i++) {
			unsigned ot = t;
			if ((in->op == OP_BFE && i >= 2) || (in->op == OP_BFI && i >= 3) ||
			    (in->op == OP_SHF && i == 3) || in->op == OP_PRMT)
				ot = PT_U32;
			if (src(c, &ops[i], ot, &in->o[i]))
				return p->rc;
		}
		return 0;
	}

	if (!strcmp(b, "testp")) {
		static const char *const tests[] = { "finite", "infinite", "number",
						     "notanumber", "normal", "subnormal" };
		in->op = OP_TESTP;
		int k = take_one(m, tests, 6);
		t = (unsigned)take_type(m);
		if (k < 0 || !ptx_type_float(t) || !all_used(m))
			return unsupported(p, line, m);
		in->mode = (uint8_t)(MODE_FINITE + k);
		in->type = (uint8_t)t;
		in->cls = class_of_type(t);
		if (need_ops(c, nops, 2))
			return p->rc;
		in->nops = 2;
		if (dst(c, &ops[0], &in->o[0], false) || src(c, &ops[1], t, &in->o[1]))
			return p->rc;
		return 0;
	}

	return unsupported(p, line, m);
}
