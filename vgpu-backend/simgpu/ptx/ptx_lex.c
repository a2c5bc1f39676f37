// SPDX-License-Identifier: MIT
/* ptx_lex.c - PTX tokens (ptx_lex.h). */
#include "ptx_lex.h"

#include <string.h>

void ptx_lex_init(struct ptx_lexer *lx, const char *text, size_t len)
{
	lx->p = text;
	lx->end = text + len;
	lx->line = 1;
	lx->have_peek = false;
}

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%' ||
	       c == '.';
}

/* Skips blanks and comments; false at an unterminated block comment. */
static bool skip_space(struct ptx_lexer *lx)
{
	while (lx->p < lx->end) {
		char c = *lx->p;
		if (c == '\n') {
			lx->line++;
			lx->p++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
			   c == '\v') {
			lx->p++;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '/') {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '*') {
			lx->p += 2;
			for (;;) {
				if (lx->p + 1 >= lx->end) {
					lx->p = lx->end;
					return false;
				}
				if (lx->p[0] == '*' && lx->p[1] == '/') {
					lx->p += 2;
					break;
				}
				if (*lx->p == '\n')
					lx->line++;
				lx->p++;
			}
		} else {
			break;
		}
	}
	return true;
}

static struct ptx_tok lex(struct ptx_lexer *lx)
{
	struct ptx_tok t = { TOK_EOF, lx->p, 0, lx->line };

	if (!skip_space(lx)) {
		t.kind = TOK_BAD;
		return t;
	}
	t.s = lx->p;
	t.line = lx->line;
	if (lx->p >= lx->end)
		return t;
	char c = *lx->p;
	if (c == '\0') {
		t.kind = TOK_BAD;
		return t;
	}
	if (is_word_char(c)) {
		while (lx->p < lx->end && is_word_char(*lx->p))
			lx->p++;
		t.kind = TOK_WORD;
		t.len = (size_t)(lx->p - t.s);
		return t;
	}
	if (c == '"') {
		lx->p++;
		t.s = lx->p;
		while (lx->p < lx->end && *lx->p != '"' && *lx->p != '\n')
			lx->p++;
		if (lx->p >= lx->end || *lx->p != '"') {
			t.kind = TOK_BAD;
			return t;
		}
		t.kind = TOK_STRING;
		t.len = (size_t)(lx->p - t.s);
		lx->p++;
		return t;
	}
	if (strchr(",;:{}[]()+-!|=<>@", c)) {
		t.kind = TOK_PUNCT;
		t.len = 1;
		lx->p++;
		return t;
	}
	t.kind = TOK_BAD;
	t.len = 1;
	return t;
}

struct ptx_tok ptx_lex_next(struct ptx_lexer *lx)
{
	if (lx->have_peek) {
		lx->have_peek = false;
		return lx->peeked;
	}
	return lex(lx);
}

struct ptx_tok ptx_lex_peek(struct ptx_lexer *lx)
{
	if (!lx->have_peek) {
		lx->peeked = lex(lx);
		lx->have_peek = true;
	}
	return lx->peeked;
}

bool ptx_tok_is(const struct ptx_tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->kind == TOK_WORD && t->len == n && memcmp(t->s, s, n) == 0;
}

bool ptx_tok_punct(const struct ptx_tok *t, char c)
{
	return t->kind == TOK_PUNCT && t->s[0] == c;
}
