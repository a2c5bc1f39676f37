// SPDX-License-Identifier: MIT
/* ptx_env.c - flat memory and kernel runner for the PTX tests (ptx_env.h). */
#include "ptx_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int in_range(const struct flat_env *env, uint64_t va, size_t n)
{
	return va >= FLAT_BASE && va - FLAT_BASE <= env->size &&
	       env->size - (va - FLAT_BASE) >= n;
}

static int flat_read(void *ctx, uint64_t va, void *dst, size_t n)
{
	struct flat_env *env = ctx;
	if (!in_range(env, va, n))
		return -1;
	memcpy(dst, env->bytes + (va - FLAT_BASE), n);
	return 0;
}

static int flat_write(void *ctx, uint64_t va, const void *src, size_t n)
{
	struct flat_env *env = ctx;
	if (!in_range(env, va, n))
		return -1;
	memcpy(env->bytes + (va - FLAT_BASE), src, n);
	return 0;
}

static int flat_atomic(void *ctx, uint64_t va, const struct ptx_atomic *op,
		       uint64_t *old)
{
	struct flat_env *env = ctx;
	if (!in_range(env, va, op->size))
		return -1;
	uint8_t *p = env->bytes + (va - FLAT_BASE);
	pthread_mutex_lock(&env->lock);
	uint64_t o = 0;
	memcpy(&o, p, op->size);
	uint64_t v = ptx_atomic_apply(op, o);
	memcpy(p, &v, op->size);
	pthread_mutex_unlock(&env->lock);
	*old = o;
	return 0;
}

void flat_init(struct flat_env *env, uint64_t size)
{
	memset(env, 0, sizeof(*env));
	env->bytes = calloc(1, size);
	if (!env->bytes)
		abort();
	env->size = size;
	pthread_mutex_init(&env->lock, NULL);
	env->ops.read = flat_read;
	env->ops.write = flat_write;
	env->ops.atomic = flat_atomic;
	env->host_threads = 1;
}

void flat_fini(struct flat_env *env)
{
	ptx_module_free(env->module);
	free(env->vars);
	free(env->bytes);
	pthread_mutex_destroy(&env->lock);
}

uint64_t flat_alloc(struct flat_env *env, uint64_t bytes)
{
	uint64_t off = (env->top + 255) & ~255ull;
	if (off + bytes > env->size) {
		fprintf(stderr, "flat_alloc: out of memory\n");
		abort();
	}
	env->top = off + bytes;
	memset(env->bytes + off, 0, bytes);
	return FLAT_BASE + off;
}

void *flat_ptr(struct flat_env *env, uint64_t va)
{
	return env->bytes + (va - FLAT_BASE);
}

uint64_t flat_copy_in(struct flat_env *env, const void *src, uint64_t bytes)
{
	uint64_t va = flat_alloc(env, bytes);
	memcpy(flat_ptr(env, va), src, bytes);
	return va;
}

int flat_load_text(struct flat_env *env, const char *text, const char *name,
		   struct ptx_error *err)
{
	ptx_module_free(env->module);
	env->module = NULL;
	free(env->vars);
	env->vars = NULL;
	int rc = ptx_module_load(text, strlen(text), name, &env->module, err);
	if (rc)
		return rc;
	size_t n = ptx_module_var_count(env->module);
	env->vars = calloc(n + 1, sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) {
		const struct ptx_var_info *v = ptx_module_var(env->module, i);
		env->vars[i] = flat_copy_in(env, v->init, v->size ? v->size : 1);
	}
	return 0;
}

int flat_load_file(struct flat_env *env, const char *name, struct ptx_error *err)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.ptx", PTX_CORPUS_DIR, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = malloc((size_t)len + 1);
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len)
		abort();
	text[len] = '\0';
	fclose(f);
	char name_ptx[256];
	snprintf(name_ptx, sizeof(name_ptx), "%s.ptx", name);
	int rc = flat_load_text(env, text, name_ptx, err);
	free(text);
	return rc;
}

int flat_run(struct flat_env *env, const char *entry, struct ptx_dim3 grid,
	     struct ptx_dim3 block, uint32_t dynamic_shared,
	     const void *const *args)
{
	int idx = ptx_module_find_entry(env->module, entry);
	if (idx < 0) {
		snprintf(env->result.message, sizeof(env->result.message),
			 "no entry %s", entry);
		return idx;
	}
	const struct ptx_entry_info *e = ptx_module_entry(env->module, (size_t)idx);
	uint8_t params[PTX_MAX_PARAM_BYTES];
	memset(params, 0, sizeof(params));
	for (uint32_t k = 0; k < e->param_count; k++)
		memcpy(params + e->params[k].offset, args[k], e->params[k].size);
	struct ptx_launch L = {
		.module = env->module,
		.entry = (uint32_t)idx,
		.grid = grid,
		.block = block,
		.dynamic_shared_bytes = dynamic_shared,
		.params = params,
		.param_size = e->param_bytes,
		.var_addresses = env->vars,
		.var_count = ptx_module_var_count(env->module),
		.mem = &env->ops,
		.mem_ctx = env,
		.host_threads = env->host_threads,
		.instruction_budget = env->budget,
		.max_call_depth = env->max_depth,
	};
	return ptx_launch(&L, &env->result);
}
