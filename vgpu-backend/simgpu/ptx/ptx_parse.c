// SPDX-License-Identifier: MIT
/*
 * ptx_parse.c - PTX directives, declarations and function bodies
 * (ptx_parse.h). Instruction statements go to ptx_decode.
 */
#include "ptx_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

int ptx_fail(struct ptx_parser *p, unsigned line, int rc, const char *fmt, ...)
{
	if (p->rc)
		return p->rc;
	p->rc = rc;
	if (p->err) {
		char what[200];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		p->err->line = line;
		if (line)
			snprintf(p->err->message, sizeof(p->err->message),
				 "%s:%u: %s", p->name, line, what);
		else
			snprintf(p->err->message, sizeof(p->err->message),
				 "%s: %s", p->name, what);
	}
	return rc;
}

int ptx_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem,
	     uint32_t limit)
{
	if (need <= *cap)
		return 0;
	if (need > limit)
		return -E2BIG;
	uint64_t n = *cap ? (uint64_t)*cap * 2 : 16;
	while (n < need)
		n *= 2;
	if (n > limit)
		n = limit;
	void *q = realloc(*arr, (size_t)n * elem);
	if (!q)
		return -ENOMEM;
	memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
	*arr = q;
	*cap = (uint32_t)n;
	return 0;
}

static char *dup_tok(const char *s, size_t len)
{
	char *d = malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

static bool name_eq(const char *name, const char *s, size_t len)
{
	return strncmp(name, s, len) == 0 && name[len] == '\0';
}

int ptx_find_reg(const struct ptx_parser *p, const char *s, size_t len,
		 uint32_t *reg)
{
	/* the innermost declaration wins (inline asm blocks redeclare %p1) */
	for (uint32_t i = p->nregs; i-- > 0;) {
		const struct ptx_reg_decl *d = &p->regs[i];
		if (d->count == 0) {
			if (d->prefix_len == len && !memcmp(d->prefix, s, len)) {
				*reg = d->base;
				return 0;
			}
			continue;
		}
		if (len <= d->prefix_len || memcmp(d->prefix, s, d->prefix_len))
			continue;
		uint64_t v = 0;
		size_t k = d->prefix_len;
		if (len - k > 10 || (s[k] == '0' && len - k > 1))
			continue;
		for (; k < len; k++) {
			if (s[k] < '0' || s[k] > '9')
				break;
			v = v * 10 + (uint64_t)(s[k] - '0');
		}
		if (k == len && v < d->count) {
			*reg = d->base + (uint32_t)v;
			return 0;
		}
	}
	return -ENOENT;
}

const struct ptx_local_sym *ptx_find_local(const struct ptx_parser *p,
					   const char *s, size_t len)
{
	for (uint32_t i = p->nlocals; i-- > 0;)
		if (name_eq(p->locals[i].name, s, len))
			return &p->locals[i];
	return NULL;
}

const struct ptx_local_sym *ptx_find_shared(const struct ptx_parser *p,
					    const char *s, size_t len)
{
	for (uint32_t i = 0; i < p->nshared; i++)
		if (name_eq(p->shared[i].name, s, len))
			return &p->shared[i];
	return NULL;
}

int ptx_find_var(const struct ptx_parser *p, const char *s, size_t len)
{
	for (uint32_t i = 0; i < p->m->nvars; i++)
		if (name_eq(p->m->vars[i].info.name, s, len))
			return (int)i;
	return -ENOENT;
}

int ptx_find_func(const struct ptx_parser *p, const char *s, size_t len)
{
	for (uint32_t i = 0; i < p->m->nfuncs; i++)
		if (name_eq(p->m->funcs[i].name, s, len))
			return (int)i;
	return -ENOENT;
}

int ptx_add_label_ref(struct ptx_parser *p, uint32_t insn, const char *s,
		      size_t len, unsigned line)
{
	int rc = ptx_grow((void **)&p->refs, &p->cap_refs, p->nrefs + 1,
			  sizeof(*p->refs), PTX_MAX_INSTRUCTIONS);
	if (rc)
		return ptx_fail(p, line, rc, "too many branches");
	char *n = dup_tok(s, len);
	if (!n)
		return ptx_fail(p, line, -ENOMEM, "out of memory");
	p->refs[p->nrefs++] = (struct ptx_label_ref){ insn, n, line };
	return 0;
}

/* ---- small token helpers ---- */

static struct ptx_tok next(struct ptx_parser *p)
{
	return ptx_lex_next(&p->lx);
}

static struct ptx_tok peek(struct ptx_parser *p)
{
	return ptx_lex_peek(&p->lx);
}

static int expect_punct(struct ptx_parser *p, char c)
{
	struct ptx_tok t = next(p);
	if (!ptx_tok_punct(&t, c))
		return ptx_fail(p, t.line, -EINVAL, "expected '%c' but found '%.*s'",
				c, (int)(t.len > 40 ? 40 : t.len), t.s);
	return 0;
}

static int parse_uint(const struct ptx_tok *t, uint64_t *v)
{
	if (t->kind != TOK_WORD || t->len == 0 || t->len > 20)
		return -EINVAL;
	uint64_t x = 0;
	size_t i = 0, n = t->len;
	if (t->s[n - 1] == 'U')
		n--;
	if (n > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X')) {
		for (i = 2; i < n; i++) {
			char c = t->s[i];
			unsigned d;
			if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
			else return -EINVAL;
			if (x >> 60)
				return -EINVAL;
			x = x * 16 + d;
		}
	} else {
		if (n == 0)
			return -EINVAL;
		for (i = 0; i < n; i++) {
			char c = t->s[i];
			if (c < '0' || c > '9')
				return -EINVAL;
			if (x > (UINT64_MAX - 9) / 10)
				return -EINVAL;
			x = x * 10 + (uint64_t)(c - '0');
		}
	}
	*v = x;
	return 0;
}

static int expect_uint(struct ptx_parser *p, uint64_t *v, uint64_t max)
{
	struct ptx_tok t = next(p);
	if (parse_uint(&t, v) || *v > max)
		return ptx_fail(p, t.line, -EINVAL, "expected a number up to %" PRIu64
				" but found '%.*s'", max,
				(int)(t.len > 40 ? 40 : t.len), t.s);
	return 0;
}

/* Skips the rest of the current source line (for .file, .loc). */
static void skip_line(struct ptx_parser *p, unsigned line)
{
	for (;;) {
		struct ptx_tok t = peek(p);
		if (t.kind == TOK_EOF || t.kind == TOK_BAD || t.line != line)
			return;
		next(p);
	}
}

static int skip_to_semicolon(struct ptx_parser *p)
{
	for (unsigned n = 0; n < 4096; n++) {
		struct ptx_tok t = next(p);
		if (t.kind == TOK_EOF || t.kind == TOK_BAD)
			return ptx_fail(p, t.line, -EINVAL, "missing ';'");
		if (ptx_tok_punct(&t, ';'))
			return 0;
	}
	return ptx_fail(p, p->lx.line, -EINVAL, "statement too long");
}

/* ---- types ---- */

static const struct {
	const char *name;
	uint8_t type;
} type_names[] = {
	{ ".b8", PT_B8 }, { ".b16", PT_B16 }, { ".b32", PT_B32 },
	{ ".b64", PT_B64 }, { ".u8", PT_U8 }, { ".u16", PT_U16 },
	{ ".u32", PT_U32 }, { ".u64", PT_U64 }, { ".s8", PT_S8 },
	{ ".s16", PT_S16 }, { ".s32", PT_S32 }, { ".s64", PT_S64 },
	{ ".f32", PT_F32 }, { ".f64", PT_F64 }, { ".pred", PT_PRED },
};

static int type_of(const struct ptx_tok *t)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (ptx_tok_is(t, type_names[i].name))
			return type_names[i].type;
	return -1;
}

static bool is_unsupported_type(const struct ptx_tok *t)
{
	static const char *const names[] = {
		".f16", ".f16x2", ".bf16", ".bf16x2", ".b128", ".e4m3",
		".e5m2", ".tf32", ".texref", ".samplerref", ".surfref",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (ptx_tok_is(t, names[i]))
			return true;
	return false;
}

/* ---- declarations ---- */

struct decl {
	int type;
	uint32_t align;
	uint32_t vec;
	char *name;
	uint64_t count;      /* array elements; 1 for scalars */
	bool unsized;        /* name[] */
	unsigned line;
	bool has_init;
};

/*
 * Parses "[.ptr .space] [.align N] [.vN] .type name[dims]" after the state
 * space keyword; stops before '=', ',', ';' or ')'.
 */
static int parse_decl(struct ptx_parser *p, struct decl *d)
{
	memset(d, 0, sizeof(*d));
	d->type = -1;
	d->vec = 1;
	d->count = 1;
	for (;;) {
		struct ptx_tok t = next(p);
		d->line = t.line;
		if (t.kind != TOK_WORD)
			return ptx_fail(p, t.line, -EINVAL, "malformed declaration");
		if (ptx_tok_is(&t, ".align")) {
			uint64_t a;
			if (expect_uint(p, &a, 1u << 20))
				return p->rc;
			if (a == 0 || (a & (a - 1)))
				return ptx_fail(p, t.line, -EINVAL,
						"alignment %" PRIu64 " is not a power of two", a);
			d->align = (uint32_t)a;
		} else if (ptx_tok_is(&t, ".v2") || ptx_tok_is(&t, ".v4")) {
			d->vec = t.s[2] - '0';
		} else if (ptx_tok_is(&t, ".ptr") || ptx_tok_is(&t, ".global") ||
			   ptx_tok_is(&t, ".shared") || ptx_tok_is(&t, ".const") ||
			   ptx_tok_is(&t, ".local")) {
			/* .ptr attributes of kernel parameters: hints only */
		} else if (ptx_tok_is(&t, ".attribute")) {
			return ptx_fail(p, t.line, -ENOTSUP,
					"unsupported variable attribute");
		} else if (t.s[0] == '.') {
			int ty = type_of(&t);
			if (ty < 0) {
				if (is_unsupported_type(&t))
					return ptx_fail(p, t.line, -ENOTSUP,
							"unsupported type %.*s",
							(int)t.len, t.s);
				return ptx_fail(p, t.line, -EINVAL,
						"unknown declaration attribute %.*s",
						(int)(t.len > 40 ? 40 : t.len), t.s);
			}
			d->type = ty;
		} else {
			if (d->type < 0)
				return ptx_fail(p, t.line, -EINVAL,
						"declaration without a type");
			if (t.len > 1024)
				return ptx_fail(p, t.line, -E2BIG, "name too long");
			d->name = dup_tok(t.s, t.len);
			if (!d->name)
				return ptx_fail(p, t.line, -ENOMEM, "out of memory");
			break;
		}
	}
	/* array dimensions */
	for (unsigned dims = 0;; dims++) {
		struct ptx_tok t = peek(p);
		if (!ptx_tok_punct(&t, '['))
			break;
		next(p);
		if (dims >= 8)
			return ptx_fail(p, t.line, -E2BIG, "too many dimensions");
		t = peek(p);
		if (ptx_tok_punct(&t, ']')) {
			if (dims)
				return ptx_fail(p, t.line, -EINVAL, "malformed array");
			next(p);
			d->unsized = true;
			d->count = 0;
			continue;
		}
		uint64_t n;
		if (expect_uint(p, &n, PTX_MAX_VARIABLE_BYTES))
			return p->rc;
		if (d->unsized || d->count * n > PTX_MAX_VARIABLE_BYTES)
			return ptx_fail(p, t.line, -E2BIG, "array too large");
		d->count *= n;
		if (expect_punct(p, ']'))
			return p->rc;
	}
	unsigned es = ptx_type_size((unsigned)d->type) * d->vec;
	if (!d->align)
		d->align = es ? es : 1;
	if ((uint64_t)es * d->count > PTX_MAX_VARIABLE_BYTES)
		return ptx_fail(p, d->line, -E2BIG, "variable %s too large", d->name);
	return 0;
}

static uint64_t decl_bytes(const struct decl *d)
{
	return (uint64_t)ptx_type_size((unsigned)d->type) * d->vec * d->count;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Parses "= { v, ... }" or "= v" into init (bytes elements of type). */
static int parse_init(struct ptx_parser *p, const struct decl *d, uint8_t *init,
		      uint64_t bytes)
{
	unsigned es = ptx_type_size((unsigned)d->type);
	uint64_t pos = 0;
	unsigned depth = 0;
	for (;;) {
		struct ptx_tok t = next(p);
		if (ptx_tok_punct(&t, '{')) {
			if (++depth > 8)
				return ptx_fail(p, t.line, -EINVAL, "initializer nesting");
			continue;
		}
		if (ptx_tok_punct(&t, '}')) {
			if (depth == 0)
				return ptx_fail(p, t.line, -EINVAL, "malformed initializer");
			depth--;
			t = peek(p);
			if (depth == 0)
				return 0;
			if (ptx_tok_punct(&t, ','))
				next(p);
			continue;
		}
		bool neg = false;
		if (ptx_tok_punct(&t, '-')) {
			neg = true;
			t = next(p);
		}
		if (t.kind != TOK_WORD)
			return ptx_fail(p, t.line, -EINVAL, "malformed initializer");
		uint64_t v = 0;
		if (t.len == 10 && t.s[0] == '0' && (t.s[1] == 'f' || t.s[1] == 'F')) {
			struct ptx_tok h = t;
			char buf[16] = "0x";
			memcpy(buf + 2, t.s + 2, 8);
			h.s = buf;
			if (parse_uint(&h, &v))
				return ptx_fail(p, t.line, -EINVAL, "bad float literal");
			if (d->type == PT_F64) {
				float f;
				uint32_t b = (uint32_t)v;
				memcpy(&f, &b, 4);
				double x = f;
				memcpy(&v, &x, 8);
			}
		} else if (t.len == 18 && t.s[0] == '0' &&
			   (t.s[1] == 'd' || t.s[1] == 'D')) {
			struct ptx_tok h = t;
			char buf[20] = "0x";
			memcpy(buf + 2, t.s + 2, 16);
			h.s = buf;
			if (parse_uint(&h, &v))
				return ptx_fail(p, t.line, -EINVAL, "bad float literal");
			if (d->type == PT_F32) {
				double x;
				memcpy(&x, &v, 8);
				float f = (float)x;
				uint32_t b;
				memcpy(&b, &f, 4);
				v = b;
			}
		} else if (parse_uint(&t, &v)) {
			if (t.s[0] >= '0' && t.s[0] <= '9')
				return ptx_fail(p, t.line, -EINVAL,
						"bad initializer '%.*s'",
						(int)(t.len > 40 ? 40 : t.len), t.s);
			return ptx_fail(p, t.line, -ENOTSUP,
					"unsupported address initializer '%.*s'",
					(int)(t.len > 40 ? 40 : t.len), t.s);
		}
		if (neg)
			v = (uint64_t)0 - v;
		if (pos + es > bytes)
			return ptx_fail(p, t.line, -EINVAL, "too many initializers");
		memcpy(init + pos, &v, es);  /* little endian host */
		pos += es;
		if (depth == 0)
			return 0;
		t = peek(p);
		if (ptx_tok_punct(&t, ','))
			next(p);
	}
}

/* A module-scope or function-scope .global/.const/.shared variable. */
static int parse_var(struct ptx_parser *p, enum ptx_space space, bool external)
{
	struct decl d;
	if (parse_decl(p, &d)) {
		free(d.name);
		return p->rc;
	}
	struct ptx_tok t = peek(p);
	if (ptx_tok_punct(&t, ',')) {
		free(d.name);
		return ptx_fail(p, t.line, -ENOTSUP,
				"unsupported: several variables in one declaration");
	}
	uint64_t bytes = decl_bytes(&d);
	if (space == SP_SHARED) {
		if (ptx_tok_punct(&t, '=')) {
			free(d.name);
			return ptx_fail(p, t.line, -EINVAL, "initialized .shared variable");
		}
		if (d.unsized) {
			if (!external) {
				free(d.name);
				return ptx_fail(p, d.line, -EINVAL,
						"unsized .shared variable not .extern");
			}
			/* Dynamic shared memory: after the static variables. */
			int rc = ptx_grow((void **)&p->shared, &p->cap_shared,
					  p->nshared + 1, sizeof(*p->shared), 1u << 16);
			if (rc) {
				free(d.name);
				return ptx_fail(p, d.line, rc, "too many .shared variables");
			}
			if (d.align > p->m->shared_align)
				p->m->shared_align = d.align;
			p->shared[p->nshared++] = (struct ptx_local_sym){
				d.name, LS_FRAME, UINT32_MAX, 0, 0 };
			return expect_punct(p, ';');
		}
		uint64_t off = align_up(p->m->shared_bytes, d.align);
		if (off + bytes > PTX_MAX_SHARED_BYTES) {
			free(d.name);
			return ptx_fail(p, d.line, -E2BIG,
					".shared variables exceed %u bytes",
					PTX_MAX_SHARED_BYTES);
		}
		int rc = ptx_grow((void **)&p->shared, &p->cap_shared,
				  p->nshared + 1, sizeof(*p->shared), 1u << 16);
		if (rc) {
			free(d.name);
			return ptx_fail(p, d.line, rc, "too many .shared variables");
		}
		p->shared[p->nshared++] = (struct ptx_local_sym){
			d.name, LS_FRAME, (uint32_t)off, (uint32_t)bytes, 0 };
		p->m->shared_bytes = (uint32_t)(off + bytes);
		if (d.align > p->m->shared_align)
			p->m->shared_align = d.align;
		return expect_punct(p, ';');
	}

	/* .global / .const */
	if (d.unsized && !ptx_tok_punct(&t, '=')) {
		free(d.name);
		return ptx_fail(p, d.line, -ENOTSUP, "unsupported unsized variable");
	}
	struct ptx_module *m = p->m;
	int rc = ptx_grow((void **)&m->vars, &p->cap_vars, m->nvars + 1,
			  sizeof(*m->vars), 1u << 16);
	if (rc) {
		free(d.name);
		return ptx_fail(p, d.line, rc, "too many variables");
	}
	struct ptx_var *v = &m->vars[m->nvars++];
	v->info.name = d.name;
	v->info.space = space == SP_CONST ? PTX_VAR_CONST : PTX_VAR_GLOBAL;
	v->info.align = d.align;
	if (external)
		return ptx_fail(p, d.line, -ENOTSUP,
				"unsupported .extern variable %s (no linker)", d.name);
	if (ptx_tok_punct(&t, '=')) {
		next(p);
		if (d.unsized) {
			return ptx_fail(p, d.line, -ENOTSUP,
					"unsupported unsized initialized variable");
		}
		v->init = calloc(1, bytes ? bytes : 1);
		if (!v->init)
			return ptx_fail(p, d.line, -ENOMEM, "out of memory");
		v->info.size = bytes;
		if (parse_init(p, &d, v->init, bytes))
			return p->rc;
	} else {
		v->init = calloc(1, bytes ? bytes : 1);
		if (!v->init)
			return ptx_fail(p, d.line, -ENOMEM, "out of memory");
		v->info.size = bytes;
	}
	v->info.init = v->init;
	return expect_punct(p, ';');
}

/* ---- functions ---- */

static int add_local(struct ptx_parser *p, const struct decl *d,
		     enum ptx_local_kind kind, uint32_t offset)
{
	int rc = ptx_grow((void **)&p->locals, &p->cap_locals, p->nlocals + 1,
			  sizeof(*p->locals), 1u << 20);
	if (rc)
		return ptx_fail(p, d->line, rc, "too many local symbols");
	char *n = dup_tok(d->name, strlen(d->name));
	if (!n)
		return ptx_fail(p, d->line, -ENOMEM, "out of memory");
	p->locals[p->nlocals++] = (struct ptx_local_sym){
		n, kind, offset, (uint32_t)decl_bytes(d), p->depth };
	return 0;
}

/* Allocates a per-thread frame slot for d; *off gets its offset. */
static int frame_alloc(struct ptx_parser *p, const struct decl *d, uint32_t *off)
{
	struct ptx_func *f = p->f;
	uint64_t o = align_up(f->frame_bytes, d->align);
	uint64_t end = o + decl_bytes(d);
	if (end > PTX_MAX_STACK_BYTES)
		return ptx_fail(p, d->line, -E2BIG, "local frame too large");
	f->frame_bytes = (uint32_t)end;
	if (d->align > f->frame_align)
		f->frame_align = d->align;
	*off = (uint32_t)o;
	return 0;
}

/* "(.param ... name, ...)": entry params go to the kernel parameter
 * block, .func params and return values to the frame. */
static int parse_params(struct ptx_parser *p, bool entry, bool rets,
			struct ptx_param_info **out, uint32_t *count,
			bool define)
{
	struct ptx_func *f = p->f;
	uint32_t cap = 0;
	struct ptx_tok t = peek(p);
	if (ptx_tok_punct(&t, ')')) {
		next(p);
		return 0;
	}
	for (;;) {
		t = next(p);
		if (!ptx_tok_is(&t, ".param")) {
			if (ptx_tok_is(&t, ".reg"))
				return ptx_fail(p, t.line, -ENOTSUP,
						"unsupported .reg parameter");
			return ptx_fail(p, t.line, -EINVAL, "expected .param");
		}
		struct decl d;
		if (parse_decl(p, &d)) {
			free(d.name);
			return p->rc;
		}
		if (d.unsized || decl_bytes(&d) == 0) {
			free(d.name);
			return ptx_fail(p, d.line, -EINVAL, "bad parameter size");
		}
		int rc = ptx_grow((void **)out, &cap, *count + 1, sizeof(**out), 4096);
		if (rc) {
			free(d.name);
			return ptx_fail(p, d.line, rc, "too many parameters");
		}
		struct ptx_param_info *pi = &(*out)[(*count)++];
		pi->name = d.name;
		pi->size = (uint32_t)decl_bytes(&d);
		pi->align = d.align;
		if (!define) {
			/* a redeclaration: layout was set by the first one */
		} else if (entry) {
			uint64_t o = align_up(f->param_bytes, d.align);
			if (o + pi->size > PTX_MAX_PARAM_BYTES)
				return ptx_fail(p, d.line, -E2BIG,
						"parameters exceed %u bytes",
						PTX_MAX_PARAM_BYTES);
			pi->offset = (uint32_t)o;
			f->param_bytes = (uint32_t)(o + pi->size);
		} else {
			if (frame_alloc(p, &d, &pi->offset))
				return p->rc;
			if (!rets)
				f->param_bytes = f->frame_bytes;
		}
		t = next(p);
		if (ptx_tok_punct(&t, ')'))
			return 0;
		if (!ptx_tok_punct(&t, ','))
			return ptx_fail(p, t.line, -EINVAL, "expected ',' or ')'");
	}
}

static void free_params(struct ptx_param_info *ps, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free((char *)ps[i].name);
	free(ps);
}

static int parse_reg_decl(struct ptx_parser *p)
{
	struct ptx_tok t = next(p);
	int ty = type_of(&t);
	uint32_t vec = 1;
	if (ptx_tok_is(&t, ".v2") || ptx_tok_is(&t, ".v4"))
		return ptx_fail(p, t.line, -ENOTSUP, "unsupported vector register");
	if (ty < 0) {
		if (is_unsupported_type(&t))
			return ptx_fail(p, t.line, -ENOTSUP, "unsupported type %.*s",
					(int)t.len, t.s);
		return ptx_fail(p, t.line, -EINVAL, "bad register type");
	}
	(void)vec;
	for (;;) {
		t = next(p);
		if (t.kind != TOK_WORD || t.len > 256)
			return ptx_fail(p, t.line, -EINVAL, "bad register name");
		uint64_t count = 0;
		struct ptx_tok q = peek(p);
		if (ptx_tok_punct(&q, '<')) {
			next(p);
			if (expect_uint(p, &count, PTX_MAX_REGISTERS_PER_FUNCTION))
				return p->rc;
			if (expect_punct(p, '>'))
				return p->rc;
			if (count == 0)
				continue;
		}
		uint64_t n = count ? count : 1;
		if (p->f->nregs + n > PTX_MAX_REGISTERS_PER_FUNCTION)
			return ptx_fail(p, t.line, -E2BIG, "too many registers");
		int rc = ptx_grow((void **)&p->regs, &p->cap_regs, p->nregs + 1,
				  sizeof(*p->regs), 1u << 16);
		if (rc)
			return ptx_fail(p, t.line, rc, "too many register declarations");
		char *name = dup_tok(t.s, t.len);
		if (!name)
			return ptx_fail(p, t.line, -ENOMEM, "out of memory");
		p->regs[p->nregs++] = (struct ptx_reg_decl){
			name, t.len, (uint32_t)count, p->f->nregs, (uint8_t)ty, p->depth };
		p->f->nregs += (uint32_t)n;
		q = next(p);
		if (ptx_tok_punct(&q, ';'))
			return 0;
		if (!ptx_tok_punct(&q, ','))
			return ptx_fail(p, q.line, -EINVAL, "expected ';'");
	}
}

/* Parses a numeric literal word (after an optional '-') into an atom. */
static int parse_number(struct ptx_parser *p, const struct ptx_tok *t, bool neg,
			struct ptx_atom *a)
{
	if (t->len >= 2 && t->s[0] == '0' && (t->s[1] == 'f' || t->s[1] == 'F' ||
					      t->s[1] == 'd' || t->s[1] == 'D')) {
		bool f32 = t->s[1] == 'f' || t->s[1] == 'F';
		size_t digits = f32 ? 8 : 16;
		if (t->len != 2 + digits)
			return ptx_fail(p, t->line, -EINVAL, "bad float literal");
		char buf[24] = "0x";
		memcpy(buf + 2, t->s + 2, digits);
		struct ptx_tok h = *t;
		h.s = buf;
		if (parse_uint(&h, &a->bits))
			return ptx_fail(p, t->line, -EINVAL, "bad float literal");
		if (neg)
			a->bits ^= f32 ? 0x80000000ull : 0x8000000000000000ull;
		a->kind = f32 ? A_F32 : A_F64;
		return 0;
	}
	if (memchr(t->s, '.', t->len) || memchr(t->s, 'e', t->len)) {
		if (t->len >= 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X'))
			return ptx_fail(p, t->line, -EINVAL, "bad literal");
		char buf[64];
		if (t->len >= sizeof(buf))
			return ptx_fail(p, t->line, -EINVAL, "bad literal");
		memcpy(buf, t->s, t->len);
		buf[t->len] = '\0';
		char *end;
		double v = strtod(buf, &end);
		if (*end)
			return ptx_fail(p, t->line, -EINVAL, "bad literal '%s'", buf);
		a->kind = A_DEC;
		a->dval = neg ? -v : v;
		return 0;
	}
	uint64_t v;
	if (t->len > 1 && t->s[0] == '0' && t->s[1] >= '0' && t->s[1] <= '7')
		return ptx_fail(p, t->line, -ENOTSUP, "unsupported octal literal");
	if (parse_uint(t, &v))
		return ptx_fail(p, t->line, -EINVAL, "bad literal '%.*s'",
				(int)(t->len > 40 ? 40 : t->len), t->s);
	a->kind = A_INT;
	a->bits = neg ? (uint64_t)0 - v : v;
	return 0;
}

static bool starts_number(const struct ptx_tok *t)
{
	return t->kind == TOK_WORD && t->s[0] >= '0' && t->s[0] <= '9';
}

/* word ['+' int] | number | '-' number | '_' */
static int parse_atom(struct ptx_parser *p, struct ptx_atom *a)
{
	memset(a, 0, sizeof(*a));
	struct ptx_tok t = next(p);
	if (ptx_tok_punct(&t, '-')) {
		t = next(p);
		if (!starts_number(&t))
			return ptx_fail(p, t.line, -EINVAL, "bad operand");
		return parse_number(p, &t, true, a);
	}
	if (t.kind != TOK_WORD)
		return ptx_fail(p, t.line, -EINVAL, "bad operand '%.*s'",
				(int)(t.len > 40 ? 40 : t.len), t.s);
	if (starts_number(&t))
		return parse_number(p, &t, false, a);
	if (t.len == 1 && t.s[0] == '_') {
		a->kind = A_SINK;
		return 0;
	}
	a->kind = A_WORD;
	a->s = t.s;
	a->len = t.len;
	struct ptx_tok q = peek(p);
	if (ptx_tok_punct(&q, '+')) {
		next(p);
		struct ptx_atom n;
		if (parse_atom(p, &n))
			return p->rc;
		if (n.kind != A_INT)
			return ptx_fail(p, q.line, -EINVAL, "bad offset");
		a->offset = (int64_t)n.bits;
	}
	return 0;
}

static int parse_operand(struct ptx_parser *p, struct ptx_sop *o)
{
	struct ptx_tok t = peek(p);
	o->n = 0;
	o->off = 0;
	if (ptx_tok_punct(&t, '[')) {
		next(p);
		o->kind = SO_ADDR;
		o->n = 1;
		memset(&o->a[0], 0, sizeof(o->a[0]));
		t = peek(p);
		if (t.kind == TOK_WORD && !starts_number(&t)) {
			next(p);
			o->a[0].kind = A_WORD;
			o->a[0].s = t.s;
			o->a[0].len = t.len;
			t = peek(p);
			if (ptx_tok_punct(&t, '+') || ptx_tok_punct(&t, '-')) {
				bool neg = ptx_tok_punct(&t, '-');
				next(p);
				struct ptx_tok v = next(p);
				struct ptx_atom n;
				memset(&n, 0, sizeof(n));
				if (ptx_tok_punct(&v, '-')) {
					neg = !neg;
					v = next(p);
				}
				if (!starts_number(&v) || parse_number(p, &v, neg, &n) ||
				    n.kind != A_INT)
					return ptx_fail(p, v.line, -EINVAL, "bad address offset");
				o->off = (int64_t)n.bits;
			}
		} else {
			struct ptx_atom n;
			if (parse_atom(p, &n))
				return p->rc;
			if (n.kind != A_INT)
				return ptx_fail(p, t.line, -EINVAL, "bad address");
			o->off = (int64_t)n.bits;
		}
		return expect_punct(p, ']');
	}
	if (ptx_tok_punct(&t, '{') || ptx_tok_punct(&t, '(')) {
		char close = t.s[0] == '{' ? '}' : ')';
		next(p);
		o->kind = t.s[0] == '{' ? SO_VEC : SO_LIST;
		t = peek(p);
		if (ptx_tok_punct(&t, close)) {
			next(p);
			return 0;
		}
		for (;;) {
			if (o->n >= PTX_MAX_LIST)
				return ptx_fail(p, t.line, -E2BIG, "operand list too long");
			if (parse_atom(p, &o->a[o->n++]))
				return p->rc;
			t = next(p);
			if (ptx_tok_punct(&t, close))
				return 0;
			if (!ptx_tok_punct(&t, ','))
				return ptx_fail(p, t.line, -EINVAL, "expected ','");
		}
	}
	if (ptx_tok_punct(&t, '!')) {
		next(p);
		o->kind = SO_NOT;
		o->n = 1;
		return parse_atom(p, &o->a[0]);
	}
	o->kind = SO_ATOM;
	o->n = 1;
	if (parse_atom(p, &o->a[0]))
		return p->rc;
	t = peek(p);
	if (ptx_tok_punct(&t, '|')) {
		next(p);
		o->kind = SO_PAIR;
		o->n = 2;
		return parse_atom(p, &o->a[1]);
	}
	return 0;
}

#define MAX_STMT_OPERANDS 8

static int parse_statement(struct ptx_parser *p, struct ptx_sop *ops)
{
	struct ptx_tok t = next(p);
	struct ptx_atom guard;
	bool guard_neg = false;
	bool has_guard = false;
	unsigned line = t.line;
	if (ptx_tok_punct(&t, '@')) {
		struct ptx_tok g = peek(p);
		if (ptx_tok_punct(&g, '!')) {
			next(p);
			guard_neg = true;
		}
		if (parse_atom(p, &guard) || guard.kind != A_WORD)
			return ptx_fail(p, t.line, -EINVAL, "bad guard predicate");
		has_guard = true;
		t = next(p);
	}
	if (t.kind != TOK_WORD || t.s[0] == '.' || t.s[0] == '%')
		return ptx_fail(p, t.line, -EINVAL, "expected an instruction, found '%.*s'",
				(int)(t.len > 40 ? 40 : t.len), t.s);
	if (!ptx_decode_known(t.s, t.len))
		return ptx_fail(p, line, -ENOTSUP, "unsupported instruction %.*s",
				(int)(t.len > 80 ? 80 : t.len), t.s);
	unsigned nops = 0;
	struct ptx_tok q = peek(p);
	if (!ptx_tok_punct(&q, ';')) {
		for (;;) {
			if (nops >= MAX_STMT_OPERANDS)
				return ptx_fail(p, line, -EINVAL, "too many operands");
			if (parse_operand(p, &ops[nops++]))
				return p->rc;
			q = next(p);
			if (ptx_tok_punct(&q, ';'))
				break;
			if (!ptx_tok_punct(&q, ','))
				return ptx_fail(p, q.line, -EINVAL,
						"expected ',' or ';' but found '%.*s'",
						(int)(q.len > 40 ? 40 : q.len), q.s);
		}
	} else {
		next(p);
	}
	return ptx_decode(p, line, t.s, t.len, has_guard ? &guard : NULL,
			  guard_neg, ops, nops);
}

static int add_label(struct ptx_parser *p, const struct ptx_tok *t)
{
	for (uint32_t i = 0; i < p->nlabels; i++)
		if (name_eq(p->labels[i].name, t->s, t->len))
			return ptx_fail(p, t->line, -EINVAL, "duplicate label %.*s",
					(int)t->len, t->s);
	int rc = ptx_grow((void **)&p->labels, &p->cap_labels, p->nlabels + 1,
			  sizeof(*p->labels), PTX_MAX_INSTRUCTIONS);
	if (rc)
		return ptx_fail(p, t->line, rc, "too many labels");
	char *n = dup_tok(t->s, t->len);
	if (!n)
		return ptx_fail(p, t->line, -ENOMEM, "out of memory");
	p->labels[p->nlabels++] = (struct ptx_label){ n, p->f->ninsns };
	return 0;
}

static void pop_scope(struct ptx_parser *p)
{
	while (p->nregs && p->regs[p->nregs - 1].depth >= p->depth && p->depth > 1) {
		p->nregs--;
		free(p->regs[p->nregs].prefix);
	}
	while (p->nlocals && p->locals[p->nlocals - 1].depth >= p->depth) {
		p->nlocals--;
		free(p->locals[p->nlocals].name);
	}
}

static void reset_function_state(struct ptx_parser *p)
{
	for (uint32_t i = 0; i < p->nregs; i++)
		free(p->regs[i].prefix);
	p->nregs = 0;
	for (uint32_t i = 0; i < p->nlocals; i++)
		free(p->locals[i].name);
	p->nlocals = 0;
	for (uint32_t i = 0; i < p->nlabels; i++)
		free(p->labels[i].name);
	p->nlabels = 0;
	for (uint32_t i = 0; i < p->nrefs; i++)
		free(p->refs[i].name);
	p->nrefs = 0;
	p->depth = 0;
	p->cap_insns = 0;
	p->cap_calls = 0;
}

static int append_insn(struct ptx_parser *p, uint8_t op, unsigned line)
{
	struct ptx_func *f = p->f;
	if (p->m->ninsns >= PTX_MAX_INSTRUCTIONS)
		return ptx_fail(p, line, -E2BIG, "more than %u instructions",
				PTX_MAX_INSTRUCTIONS);
	int rc = ptx_grow((void **)&f->insns, &p->cap_insns, f->ninsns + 1,
			  sizeof(*f->insns), PTX_MAX_INSTRUCTIONS);
	if (rc)
		return ptx_fail(p, line, rc, "out of memory");
	struct ptx_insn *in = &f->insns[f->ninsns++];
	memset(in, 0, sizeof(*in));
	in->op = op;
	in->guard = PTX_NO_GUARD;
	in->line = line;
	in->vec = 1;
	in->cls = PTX_CLASS_CONTROL;
	p->m->ninsns++;
	return 0;
}

static int parse_body(struct ptx_parser *p)
{
	struct ptx_sop *ops = calloc(MAX_STMT_OPERANDS, sizeof(*ops));
	if (!ops)
		return ptx_fail(p, p->lx.line, -ENOMEM, "out of memory");
	p->depth = 1;
	int rc = 0;
	while (!rc) {
		struct ptx_tok t = peek(p);
		if (t.kind == TOK_EOF || t.kind == TOK_BAD) {
			rc = ptx_fail(p, t.line, -EINVAL, "unterminated function body");
			break;
		}
		if (ptx_tok_punct(&t, '{')) {
			next(p);
			if (++p->depth > MAX_DEPTH)
				rc = ptx_fail(p, t.line, -E2BIG, "blocks nested too deeply");
			continue;
		}
		if (ptx_tok_punct(&t, '}')) {
			next(p);
			pop_scope(p);
			if (--p->depth == 0)
				break;
			continue;
		}
		if (t.kind == TOK_WORD && t.s[0] == '.') {
			next(p);
			if (ptx_tok_is(&t, ".reg")) {
				rc = parse_reg_decl(p);
			} else if (ptx_tok_is(&t, ".local") || ptx_tok_is(&t, ".param")) {
				struct decl d;
				bool param = ptx_tok_is(&t, ".param");
				rc = parse_decl(p, &d);
				if (!rc && d.unsized)
					rc = ptx_fail(p, d.line, -EINVAL, "unsized local");
				uint32_t off = 0;
				if (!rc)
					rc = frame_alloc(p, &d, &off);
				if (!rc)
					rc = add_local(p, &d, LS_FRAME, off);
				free(d.name);
				if (!rc) {
					struct ptx_tok q = peek(p);
					if (ptx_tok_punct(&q, '='))
						rc = ptx_fail(p, q.line, -ENOTSUP,
							      "unsupported initialized %s",
							      param ? ".param" : ".local");
				}
				if (!rc)
					rc = expect_punct(p, ';');
			} else if (ptx_tok_is(&t, ".shared")) {
				rc = parse_var(p, SP_SHARED, false);
			} else if (ptx_tok_is(&t, ".global") || ptx_tok_is(&t, ".const")) {
				rc = parse_var(p, ptx_tok_is(&t, ".const") ? SP_CONST : SP_GLOBAL,
					       false);
			} else if (ptx_tok_is(&t, ".pragma")) {
				rc = skip_to_semicolon(p);
			} else if (ptx_tok_is(&t, ".loc") || ptx_tok_is(&t, ".file")) {
				skip_line(p, t.line);
			} else {
				rc = ptx_fail(p, t.line, -ENOTSUP, "unsupported directive %.*s",
					      (int)(t.len > 40 ? 40 : t.len), t.s);
			}
			continue;
		}
		if (t.kind == TOK_WORD && t.s[0] != '%') {
			/* a label? */
			struct ptx_lexer save = p->lx;
			next(p);
			struct ptx_tok c = peek(p);
			if (ptx_tok_punct(&c, ':')) {
				next(p);
				rc = add_label(p, &t);
				continue;
			}
			p->lx = save;
		}
		rc = parse_statement(p, ops);
	}
	free(ops);
	if (rc)
		return rc;
	/* falling off the end returns */
	struct ptx_func *f = p->f;
	if (append_insn(p, f->is_entry ? OP_EXIT : OP_RET, p->lx.line))
		return p->rc;
	/* resolve branch targets */
	for (uint32_t i = 0; i < p->nrefs; i++) {
		const struct ptx_label_ref *r = &p->refs[i];
		uint32_t k;
		for (k = 0; k < p->nlabels; k++)
			if (!strcmp(p->labels[k].name, r->name))
				break;
		if (k == p->nlabels)
			return ptx_fail(p, r->line, -EINVAL, "undefined label %s", r->name);
		f->insns[r->insn].target = p->labels[k].insn;
	}
	return 0;
}

int ptx_append_insn(struct ptx_parser *p, uint8_t op, unsigned line)
{
	return append_insn(p, op, line);
}

static bool same_params(const struct ptx_param_info *a, uint32_t na,
			const struct ptx_param_info *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].size != b[i].size)
			return false;
	return true;
}

static int parse_function(struct ptx_parser *p, bool entry, unsigned line)
{
	struct ptx_module *m = p->m;
	reset_function_state(p);
	struct ptx_func tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.is_entry = entry;
	tmp.line = line;
	tmp.frame_align = 1;
	p->f = &tmp;
	int rc = 0;
	struct ptx_tok t = next(p);
	if (!entry && ptx_tok_punct(&t, '(')) {
		rc = parse_params(p, false, true, &tmp.rets, &tmp.nrets, true);
		t = next(p);
	}
	if (!rc && (t.kind != TOK_WORD || t.s[0] == '.' || t.len > 1024))
		rc = ptx_fail(p, t.line, -EINVAL, "expected a function name");
	if (!rc) {
		tmp.name = dup_tok(t.s, t.len);
		if (!tmp.name)
			rc = ptx_fail(p, t.line, -ENOMEM, "out of memory");
	}
	struct ptx_tok q = peek(p);
	if (!rc && ptx_tok_punct(&q, '(')) {
		next(p);
		rc = parse_params(p, entry, false, &tmp.params, &tmp.nparams, true);
	}
	/* performance directives and attributes up to the body or ';' */
	for (unsigned guard = 0; !rc; guard++) {
		q = peek(p);
		if (guard > 256) {
			rc = ptx_fail(p, q.line, -EINVAL, "malformed function header");
		} else if (ptx_tok_punct(&q, '{') || ptx_tok_punct(&q, ';')) {
			break;
		} else if (ptx_tok_is(&q, ".maxntid") || ptx_tok_is(&q, ".reqntid") ||
			   ptx_tok_is(&q, ".minnctapersm") || ptx_tok_is(&q, ".maxnctapersm") ||
			   ptx_tok_is(&q, ".maxnreg") || ptx_tok_is(&q, ".noreturn") ||
			   ptx_tok_is(&q, ".explicitcluster") || ptx_tok_is(&q, ".reqnctapercluster") ||
			   ptx_tok_is(&q, ".maxclusterrank") || starts_number(&q) ||
			   ptx_tok_punct(&q, ',')) {
			if (ptx_tok_is(&q, ".explicitcluster") || ptx_tok_is(&q, ".reqnctapercluster") ||
			    ptx_tok_is(&q, ".maxclusterrank"))
				rc = ptx_fail(p, q.line, -ENOTSUP, "unsupported clusters (%.*s)",
					      (int)q.len, q.s);
			next(p);
		} else if (ptx_tok_is(&q, ".pragma")) {
			next(p);
			rc = skip_to_semicolon(p);
			/* a pragma's ';' does not end the header */
		} else {
			rc = ptx_fail(p, q.line, -EINVAL, "unexpected '%.*s' in function header",
				      (int)(q.len > 40 ? 40 : q.len), q.s);
		}
	}
	if (rc)
		goto fail;

	/* find or add the function */
	int idx = ptx_find_func(p, tmp.name, strlen(tmp.name));
	struct ptx_func *f;
	if (idx >= 0) {
		f = &m->funcs[idx];
		if (f->is_entry != entry || !same_params(f->params, f->nparams,
							  tmp.params, tmp.nparams) ||
		    !same_params(f->rets, f->nrets, tmp.rets, tmp.nrets)) {
			rc = ptx_fail(p, line, -EINVAL, "%s redeclared differently", tmp.name);
			goto fail;
		}
		free(tmp.name);
		free_params(tmp.params, tmp.nparams);
		free_params(tmp.rets, tmp.nrets);
	} else {
		rc = ptx_grow((void **)&m->funcs, &p->cap_funcs, m->nfuncs + 1,
			      sizeof(*m->funcs), PTX_MAX_FUNCTIONS);
		if (rc) {
			rc = ptx_fail(p, line, rc, "too many functions");
			goto fail;
		}
		idx = (int)m->nfuncs++;
		m->funcs[idx] = tmp;
		f = &m->funcs[idx];
	}
	memset(&tmp, 0, sizeof(tmp));
	p->f = f;
	p->fidx = (uint32_t)idx;

	t = next(p);
	if (ptx_tok_punct(&t, ';'))
		return 0;  /* a prototype */
	if (f->defined)
		return ptx_fail(p, t.line, -EINVAL, "%s defined twice", f->name);
	f->defined = true;
	/* the frame restarts after the formal parameters */
	f->frame_bytes = 0;
	f->frame_align = 1;
	for (uint32_t i = 0; i < f->nrets; i++) {
		struct decl d = { .type = PT_B8, .align = f->rets[i].align, .vec = 1,
				  .name = (char *)f->rets[i].name,
				  .count = f->rets[i].size, .line = line };
		if (frame_alloc(p, &d, &f->rets[i].offset) ||
		    add_local(p, &d, LS_FRAME, f->rets[i].offset))
			return p->rc;
	}
	for (uint32_t i = 0; i < f->nparams; i++) {
		struct decl d = { .type = PT_B8, .align = f->params[i].align, .vec = 1,
				  .name = (char *)f->params[i].name,
				  .count = f->params[i].size, .line = line };
		if (entry) {
			if (add_local(p, &d, LS_KPARAM, f->params[i].offset))
				return p->rc;
		} else if (frame_alloc(p, &d, &f->params[i].offset) ||
			   add_local(p, &d, LS_FRAME, f->params[i].offset)) {
			return p->rc;
		}
	}
	if (!entry)
		f->param_bytes = f->frame_bytes;
	/* locals of the body are declared at depth 1; formals stay */
	for (uint32_t i = 0; i < p->nlocals; i++)
		p->locals[i].depth = 0;
	return parse_body(p);
fail:
	free(tmp.name);
	free_params(tmp.params, tmp.nparams);
	free_params(tmp.rets, tmp.nrets);
	p->f = NULL;
	return rc ? rc : p->rc;
}

static int parse_version(struct ptx_parser *p)
{
	struct ptx_tok t = next(p);
	unsigned major = 0, minor = 0;
	if (t.kind != TOK_WORD || t.len < 3 || t.len > 8 ||
	    sscanf(t.s, "%u.%u", &major, &minor) != 2)
		return ptx_fail(p, t.line, -EINVAL, "bad .version");
	if (major < 7 || major > 9)
		return ptx_fail(p, t.line, -ENOTSUP, "unsupported PTX ISA version %u.%u",
				major, minor);
	return 0;
}

static int parse_target(struct ptx_parser *p)
{
	for (;;) {
		struct ptx_tok t = next(p);
		if (t.kind != TOK_WORD)
			return ptx_fail(p, t.line, -EINVAL, "bad .target");
		if (t.len > 3 && !memcmp(t.s, "sm_", 3)) {
			unsigned sm = 0;
			for (size_t i = 3; i < t.len && t.s[i] >= '0' && t.s[i] <= '9'; i++)
				sm = sm * 10 + (unsigned)(t.s[i] - '0');
			if (sm < 70 || sm > 1000)
				return ptx_fail(p, t.line, -ENOTSUP,
						"unsupported target %.*s (sm_70 and up)",
						(int)t.len, t.s);
		} else if (ptx_tok_is(&t, "texmode_independent") ||
			   ptx_tok_is(&t, "texmode_unified") || ptx_tok_is(&t, "debug")) {
			/* no textures; debug information is skipped */
		} else {
			return ptx_fail(p, t.line, -ENOTSUP, "unsupported target %.*s",
					(int)(t.len > 40 ? 40 : t.len), t.s);
		}
		struct ptx_tok q = peek(p);
		if (!ptx_tok_punct(&q, ','))
			return 0;
		next(p);
	}
}

int ptx_parse_module(struct ptx_parser *p)
{
	bool have_version = false, have_target = false;
	while (!p->rc) {
		struct ptx_tok t = next(p);
		if (t.kind == TOK_EOF)
			break;
		if (t.kind == TOK_BAD)
			return ptx_fail(p, t.line, -EINVAL, "bad character or comment");
		if (t.kind != TOK_WORD || t.s[0] != '.')
			return ptx_fail(p, t.line, -EINVAL, "unexpected '%.*s'",
					(int)(t.len > 40 ? 40 : t.len), t.s);
		if (ptx_tok_is(&t, ".version")) {
			if (parse_version(p))
				break;
			have_version = true;
		} else if (ptx_tok_is(&t, ".target")) {
			if (parse_target(p))
				break;
			have_target = true;
		} else if (ptx_tok_is(&t, ".address_size")) {
			uint64_t n;
			if (expect_uint(p, &n, 64))
				break;
			if (n != 64)
				return ptx_fail(p, t.line, -ENOTSUP,
						"unsupported .address_size %u", (unsigned)n);
		} else if (!have_version || !have_target) {
			return ptx_fail(p, t.line, -EINVAL,
					".version and .target must come first");
		} else if (ptx_tok_is(&t, ".visible") || ptx_tok_is(&t, ".weak") ||
			   ptx_tok_is(&t, ".common")) {
			continue;
		} else if (ptx_tok_is(&t, ".extern")) {
			struct ptx_tok q = next(p);
			if (ptx_tok_is(&q, ".shared"))
				parse_var(p, SP_SHARED, true);
			else if (ptx_tok_is(&q, ".global") || ptx_tok_is(&q, ".const"))
				parse_var(p, SP_GLOBAL, true);
			else if (ptx_tok_is(&q, ".func") || ptx_tok_is(&q, ".entry"))
				parse_function(p, ptx_tok_is(&q, ".entry"), q.line);
			else
				return ptx_fail(p, q.line, -ENOTSUP, "unsupported .extern");
		} else if (ptx_tok_is(&t, ".entry") || ptx_tok_is(&t, ".func")) {
			parse_function(p, ptx_tok_is(&t, ".entry"), t.line);
		} else if (ptx_tok_is(&t, ".global")) {
			parse_var(p, SP_GLOBAL, false);
		} else if (ptx_tok_is(&t, ".const")) {
			parse_var(p, SP_CONST, false);
		} else if (ptx_tok_is(&t, ".shared")) {
			parse_var(p, SP_SHARED, false);
		} else if (ptx_tok_is(&t, ".file") || ptx_tok_is(&t, ".loc")) {
			skip_line(p, t.line);
		} else if (ptx_tok_is(&t, ".pragma")) {
			skip_to_semicolon(p);
		} else {
			return ptx_fail(p, t.line, -ENOTSUP, "unsupported directive %.*s",
					(int)(t.len > 40 ? 40 : t.len), t.s);
		}
	}
	if (p->rc)
		return p->rc;
	if (!have_version || !have_target)
		return ptx_fail(p, 0, -EINVAL, "missing .version or .target");
	return 0;
}

void ptx_parser_release(struct ptx_parser *p)
{
	reset_function_state(p);
	free(p->regs);
	free(p->locals);
	free(p->labels);
	free(p->refs);
	for (uint32_t i = 0; i < p->nshared; i++)
		free(p->shared[i].name);
	free(p->shared);
}
