// SPDX-License-Identifier: MIT
/*
 * ptx_module.c - ptx_module_load and the module accessors (ptx_module.h):
 * runs the parser, then finishes the module (dynamic shared offsets, entry
 * table, cross-function checks).
 */
#include "ptx_module.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_ir.h"
#include "ptx_parse.h"

static void free_func(struct ptx_func *f)
{
	free(f->name);
	for (uint32_t i = 0; i < f->nparams; i++)
		free((char *)f->params[i].name);
	free(f->params);
	for (uint32_t i = 0; i < f->nrets; i++)
		free((char *)f->rets[i].name);
	free(f->rets);
	free(f->insns);
	for (uint32_t i = 0; i < f->ncalls; i++) {
		free(f->calls[i].arg_offset);
		free(f->calls[i].arg_size);
		free(f->calls[i].ret_offset);
		free(f->calls[i].ret_size);
	}
	free(f->calls);
}

void ptx_module_free(struct ptx_module *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nfuncs; i++)
		free_func(&m->funcs[i]);
	free(m->funcs);
	for (uint32_t i = 0; i < m->nvars; i++) {
		free((char *)m->vars[i].info.name);
		free(m->vars[i].init);
	}
	free(m->vars);
	free(m->var_infos);
	free(m->entry_func);
	free(m->entries);
	free(m->name);
	free(m);
}

static uint32_t align_up32(uint32_t x, uint32_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static int finish(struct ptx_parser *p)
{
	struct ptx_module *m = p->m;
	uint32_t align = m->shared_align > 16 ? m->shared_align : 16;
	uint32_t dyn_base = align_up32(m->shared_bytes, align);
	m->shared_bytes = dyn_base;
	for (uint32_t fi = 0; fi < m->nfuncs; fi++) {
		struct ptx_func *f = &m->funcs[fi];
		if (!f->defined && !f->is_entry) {
			/* printf and assert: provided by the executor */
			static const struct {
				const char *name;
				uint8_t id;
				uint32_t nparams, nrets;
			} builtins[] = {
				{ "vprintf", BUILTIN_VPRINTF, 2, 1 },
				{ "__assertfail", BUILTIN_ASSERTFAIL, 5, 0 },
			};
			for (size_t k = 0; k < sizeof(builtins) / sizeof(builtins[0]); k++)
				if (!strcmp(f->name, builtins[k].name) &&
				    f->nparams == builtins[k].nparams && f->nrets == builtins[k].nrets)
					f->builtin = builtins[k].id;
			if (f->builtin)
				continue;
		}
		if (!f->defined) {
			bool called = false;
			for (uint32_t gi = 0; gi < m->nfuncs; gi++)
				for (uint32_t k = 0; k < m->funcs[gi].ncalls; k++)
					called |= m->funcs[gi].calls[k].callee == fi;
			if (called || f->is_entry)
				return ptx_fail(p, f->line, -ENOTSUP,
						"unsupported: %s is declared but not defined "
						"(no linker)", f->name);
			continue;
		}
		f->frame_bytes = align_up32(f->frame_bytes, 16);
		for (uint32_t i = 0; i < f->ninsns; i++) {
			struct ptx_insn *in = &f->insns[i];
			for (unsigned k = 0; k < PTX_MAX_OPERANDS; k++) {
				struct ptx_operand *o = &in->o[k];
				if ((o->kind == OPK_ADDR || o->kind == OPK_SYM) &&
				    o->base == AB_SHARED && o->reg == 1) {
					o->imm += dyn_base;
					o->reg = 0;
				}
			}
			if (in->op == OP_BRA && in->target >= f->ninsns)
				return ptx_fail(p, in->line, -EINVAL, "bad branch target");
		}
	}
	for (uint32_t fi = 0; fi < m->nfuncs; fi++)
		if (m->funcs[fi].is_entry && m->funcs[fi].defined)
			m->nentries++;
	m->entry_func = calloc(m->nentries + 1, sizeof(*m->entry_func));
	m->entries = calloc(m->nentries + 1, sizeof(*m->entries));
	m->var_infos = calloc(m->nvars + 1, sizeof(*m->var_infos));
	if (!m->entry_func || !m->entries || !m->var_infos)
		return ptx_fail(p, 0, -ENOMEM, "out of memory");
	uint32_t e = 0;
	for (uint32_t fi = 0; fi < m->nfuncs; fi++) {
		struct ptx_func *f = &m->funcs[fi];
		if (!f->is_entry || !f->defined)
			continue;
		m->entry_func[e] = fi;
		m->entries[e] = (struct ptx_entry_info){
			.name = f->name,
			.param_count = f->nparams,
			.params = f->params,
			.param_bytes = f->param_bytes,
			.static_shared_bytes = m->shared_bytes,
			.local_bytes = f->frame_bytes,
			.may_call = f->may_call,
		};
		e++;
	}
	for (uint32_t i = 0; i < m->nvars; i++)
		m->var_infos[i] = m->vars[i].info;
	return 0;
}

int ptx_module_load(const char *text, size_t len, const char *name,
		    struct ptx_module **out, struct ptx_error *err)
{
	struct ptx_parser p;
	memset(&p, 0, sizeof(p));
	p.name = name ? name : "module.ptx";
	p.err = err;
	if (err) {
		err->line = 0;
		err->message[0] = '\0';
	}
	*out = NULL;
	if (!text)
		return ptx_fail(&p, 0, -EINVAL, "no text");
	if (len > PTX_MAX_TEXT_BYTES)
		return ptx_fail(&p, 0, -E2BIG, "module larger than %u bytes",
				PTX_MAX_TEXT_BYTES);
	p.m = calloc(1, sizeof(*p.m));
	if (!p.m)
		return ptx_fail(&p, 0, -ENOMEM, "out of memory");
	p.m->shared_align = 1;
	p.m->name = strdup(p.name);
	if (!p.m->name) {
		ptx_module_free(p.m);
		return ptx_fail(&p, 0, -ENOMEM, "out of memory");
	}
	ptx_lex_init(&p.lx, text, len);
	int rc = ptx_parse_module(&p);
	if (!rc)
		rc = finish(&p);
	ptx_parser_release(&p);
	if (rc) {
		ptx_module_free(p.m);
		return rc;
	}
	*out = p.m;
	return 0;
}

size_t ptx_module_entry_count(const struct ptx_module *m)
{
	return m->nentries;
}

const struct ptx_entry_info *ptx_module_entry(const struct ptx_module *m,
					      size_t index)
{
	return index < m->nentries ? &m->entries[index] : NULL;
}

int ptx_module_find_entry(const struct ptx_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->nentries; i++)
		if (!strcmp(m->entries[i].name, name))
			return (int)i;
	return -ENOENT;
}

size_t ptx_module_var_count(const struct ptx_module *m)
{
	return m->nvars;
}

const struct ptx_var_info *ptx_module_var(const struct ptx_module *m,
					  size_t index)
{
	return index < m->nvars ? &m->var_infos[index] : NULL;
}

size_t ptx_module_instruction_count(const struct ptx_module *m)
{
	return m->ninsns;
}
