/* SPDX-License-Identifier: MIT */
/*
 * ptx_parse.h - the loader's shared state: the parser (ptx_parse.c) reads
 * directives and declarations and hands each instruction statement, in
 * syntactic form, to the decoder (ptx_decode.c), which lowers it into a
 * struct ptx_insn. Internal to the library; single-threaded, one per load.
 */
#ifndef SIMGPU_PTX_PARSE_H
#define SIMGPU_PTX_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptx_ir.h"
#include "ptx_lex.h"

#define PTX_MAX_LIST 64

enum ptx_atom_kind { A_NONE, A_WORD, A_INT, A_F32, A_F64, A_DEC, A_SINK };

struct ptx_atom {
	enum ptx_atom_kind kind;
	const char *s;       /* A_WORD */
	size_t len;
	uint64_t bits;       /* A_INT value, A_F32/A_F64 bits */
	double dval;         /* A_DEC */
	int64_t offset;      /* A_WORD "sym+4" */
};

enum ptx_sop_kind { SO_ATOM, SO_NOT, SO_PAIR, SO_ADDR, SO_VEC, SO_LIST };

/* One syntactic operand. */
struct ptx_sop {
	enum ptx_sop_kind kind;
	unsigned n;          /* atoms used */
	int64_t off;         /* SO_ADDR offset */
	struct ptx_atom a[PTX_MAX_LIST];
};

struct ptx_reg_decl {
	char *prefix;
	size_t prefix_len;
	uint32_t count;      /* 0: a single register named prefix */
	uint32_t base;
	uint8_t type;
	unsigned depth;      /* block nesting where declared */
};

enum ptx_local_kind { LS_FRAME, LS_KPARAM };

struct ptx_local_sym {
	char *name;
	enum ptx_local_kind kind;
	uint32_t offset, size;
	unsigned depth;      /* block nesting where declared */
};

struct ptx_label_ref {
	uint32_t insn;
	char *name;
	unsigned line;
};

struct ptx_label {
	char *name;
	uint32_t insn;
};

struct ptx_parser {
	struct ptx_lexer lx;
	const char *name;
	struct ptx_error *err;
	int rc;                      /* first error */
	struct ptx_module *m;
	/* the function being parsed */
	struct ptx_func *f;
	uint32_t fidx;
	struct ptx_reg_decl *regs;
	uint32_t nregs, cap_regs;
	struct ptx_local_sym *locals;
	uint32_t nlocals, cap_locals;
	struct ptx_label *labels;
	uint32_t nlabels, cap_labels;
	struct ptx_label_ref *refs;
	uint32_t nrefs, cap_refs;
	unsigned depth;
	uint32_t cap_insns, cap_calls;
	uint32_t cap_funcs, cap_vars;
	/* module shared variables: names and offsets */
	struct ptx_local_sym *shared;
	uint32_t nshared, cap_shared;
	bool dynamic_shared_declared;
	char *dynamic_shared_name;
};

/* Records the first error ("NAME:LINE: ..."); returns rc. */
int ptx_fail(struct ptx_parser *p, unsigned line, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Grows *arr (elem bytes each) to hold at least need; -ENOMEM/-E2BIG. */
int ptx_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem,
	     uint32_t limit);

/* Symbol lookups for the decoder; names are not NUL terminated. */
int ptx_find_reg(const struct ptx_parser *p, const char *s, size_t len,
		 uint32_t *reg);
const struct ptx_local_sym *ptx_find_local(const struct ptx_parser *p,
					   const char *s, size_t len);
const struct ptx_local_sym *ptx_find_shared(const struct ptx_parser *p,
					    const char *s, size_t len);
int ptx_find_var(const struct ptx_parser *p, const char *s, size_t len);
int ptx_find_func(const struct ptx_parser *p, const char *s, size_t len);
int ptx_add_label_ref(struct ptx_parser *p, uint32_t insn, const char *s,
		      size_t len, unsigned line);

/* Appends a blank instruction (op, no guard) to p->f. */
int ptx_append_insn(struct ptx_parser *p, uint8_t op, unsigned line);

/* Parses the whole text into p->m; frees the parser's own state. */
int ptx_parse_module(struct ptx_parser *p);
void ptx_parser_release(struct ptx_parser *p);

/* Whether the decoder knows the mnemonic's base opcode at all. */
bool ptx_decode_known(const char *mnem, size_t mlen);

/* Lowers one instruction statement into p->f's next instruction. */
int ptx_decode(struct ptx_parser *p, unsigned line, const char *mnem,
	       size_t mlen, const struct ptx_atom *guard, bool guard_neg,
	       struct ptx_sop *ops, unsigned nops);

#endif
