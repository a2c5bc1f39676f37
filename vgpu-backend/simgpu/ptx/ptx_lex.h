/* SPDX-License-Identifier: MIT */
/*
 * ptx_lex.h - split PTX text into tokens. Internal to the library.
 *
 * A word is a run of [A-Za-z0-9_$%.] (so "ld.global.f32", "%tid.x",
 * "0f3F800000" and "1.5" are single words); punctuation is one character;
 * comments are skipped; a string is one token without its quotes. Tokens
 * point into the text (not NUL terminated). No allocation; pure.
 */
#ifndef SIMGPU_PTX_LEX_H
#define SIMGPU_PTX_LEX_H

#include <stdbool.h>
#include <stddef.h>

enum ptx_tok_kind { TOK_EOF, TOK_WORD, TOK_PUNCT, TOK_STRING, TOK_BAD };

struct ptx_tok {
	enum ptx_tok_kind kind;
	const char *s;
	size_t len;
	unsigned line;
};

struct ptx_lexer {
	const char *p, *end;
	unsigned line;
	struct ptx_tok peeked;
	bool have_peek;
};

void ptx_lex_init(struct ptx_lexer *lx, const char *text, size_t len);
struct ptx_tok ptx_lex_next(struct ptx_lexer *lx);
struct ptx_tok ptx_lex_peek(struct ptx_lexer *lx);
bool ptx_tok_is(const struct ptx_tok *t, const char *s);
bool ptx_tok_punct(const struct ptx_tok *t, char c);

#endif
