// SPDX-License-Identifier: MIT
/*
 * module.c - modules and their functions and globals.
 *
 * An image is PTX text (NUL-terminated, as cuModuleLoadData requires) or
 * a fatbin carrying PTX (magic 0xba55ed50, or the 0x466243b1 wrapper
 * nvcc puts around it), whose PTX is extracted (fatbin/, when built).
 * cubin (ELF) images cannot run: the GPU executes PTX only. The PTX goes
 * to the vGPU with vgpu_module_load through the context's legacy stream's
 * channel; the table it returns names the functions (parameter layout,
 * static shared memory, local memory) and the variables, which live in
 * the VM's own GPU memory (in the pointer table, so copies to them are
 * checked like any).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#ifdef VGPU_CUDA_HAVE_FATBIN
#include "fatbin.h"
#endif

#define FATBIN_MAGIC 0xba55ed50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u

struct CUfunc_st *cu_function_get(CUfunction h)
{
	for (struct CUctx_st *c = cu_g.contexts; c; c = c->next)
		for (struct CUmod_st *m = c->modules; m; m = m->next)
			if (h >= m->funcs && h < m->funcs + m->m->function_count)
				return h;
	return NULL;
}

struct CUmod_st *cu_module_find(CUmodule h)
{
	for (struct CUctx_st *c = cu_g.contexts; c; c = c->next)
		for (struct CUmod_st *m = c->modules; m; m = m->next)
			if (m == h)
				return m;
	return NULL;
}

static void unload(struct CUmod_st *mod)
{
	if (mod->m && mod->m->variables_va)
		(void)cu_ptr_remove(&cu_g.ptrs, mod->m->variables_va, NULL);
	vgpu_module_unload(cu_g.dev, mod->m);
	free(mod->funcs);
	mod->magic = 0;
	free(mod);
}

void cu_ctx_unload_modules(struct CUctx_st *ctx)
{
	struct CUmod_st *m, *next;

	for (m = ctx->modules; m; m = next) {
		next = m->next;
		unload(m);
	}
	ctx->modules = NULL;
}

/* The PTX of image: *ptx points into the image, or at *owned (malloc'ed,
 * the caller frees it). */
static CUresult image_ptx(const void *image, const char **ptx, size_t *len, char **owned)
{
	uint32_t magic;

	*owned = NULL;
	if (strnlen(image, 4) < 4)
		return cu_fail(CUDA_ERROR_INVALID_IMAGE, "an empty or truncated image");
	/* four non-NUL bytes: safe to read */
	memcpy(&magic, image, sizeof(magic));
	if (magic == FATBIN_MAGIC || magic == FATBIN_WRAPPER_MAGIC) {
#ifdef VGPU_CUDA_HAVE_FATBIN
		char why[256] = "";

		if (vgpu_fatbin_ptx(image, VGPU_MODULE_IMAGE_MAX_BYTES, owned, len, why,
		                    sizeof(why)) < 0)
			return cu_fail(CUDA_ERROR_INVALID_IMAGE, "fatbin: %s", why);
		*ptx = *owned;
		return CUDA_SUCCESS;
#else
		return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
		               "fatbin images are not supported by this build: load PTX");
#endif
	}
	if (!memcmp(image, "\177ELF", 4))
		return cu_fail(CUDA_ERROR_NO_BINARY_FOR_GPU,
		               "a cubin (machine code) image: the vGPU runs PTX only");
	*ptx = image;
	*len = strnlen(image, (size_t)VGPU_MODULE_IMAGE_MAX_BYTES + 1);
	if (*len > VGPU_MODULE_IMAGE_MAX_BYTES)
		return cu_fail(CUDA_ERROR_INVALID_IMAGE, "image larger than %u bytes",
		               VGPU_MODULE_IMAGE_MAX_BYTES);
	return CUDA_SUCCESS;
}

CUresult cu_module_load(CUmodule *module, const void *image)
{
	struct CUmod_st *mod = NULL;
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	const char *ptx = NULL;
	char *owned = NULL;
	size_t len = 0;
	CUresult res;
	int rc;

	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS)
		res = image_ptx(image, &ptx, &len, &owned);
	if (res == CUDA_SUCCESS)
		res = cu_stream_get(ctx, NULL, &s);
	if (res == CUDA_SUCCESS && !(mod = calloc(1, sizeof(*mod))))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		rc = vgpu_module_load(cu_g.dev, s->ch, ptx, len, &mod->m);
		if (rc == -EINVAL)
			res = cu_fail(CUDA_ERROR_INVALID_PTX, "module: %s",
			              vgpu_device_last_error(cu_g.dev));
		else if (rc == -ENOTSUP)
			res = cu_fail(CUDA_ERROR_NOT_SUPPORTED, "module: the vGPU runs no programs (%s)",
			              vgpu_device_last_error(cu_g.dev));
		else if (rc < 0)
			res = cu_channel_error(ctx, s->ch, rc, "module");
	}
	if (res == CUDA_SUCCESS) {
		mod->funcs = calloc(mod->m->function_count ? mod->m->function_count : 1,
		                    sizeof(*mod->funcs));
		if (!mod->funcs)
			res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (res == CUDA_SUCCESS && mod->m->variables_va && mod->m->variables_bytes) {
		struct cu_range r = {
			.va = mod->m->variables_va,
			.bytes = mod->m->variables_bytes,
			.kind = CU_RANGE_MODULE,
			.owner = ctx,
			.id = ++cu_g.next_buffer_id,
		};

		if (cu_ptr_insert(&cu_g.ptrs, &r) < 0)
			res = cu_fail(CUDA_ERROR_INVALID_IMAGE, "module variables overlap memory");
	}
	if (res == CUDA_SUCCESS) {
		for (uint32_t i = 0; i < mod->m->function_count; i++) {
			mod->funcs[i].mod = mod;
			mod->funcs[i].f = &mod->m->functions[i];
			mod->funcs[i].max_dynamic_shared =
				cu_g.limits.shared_per_block -
				(int)mod->m->functions[i].static_shared_bytes;
		}
		mod->magic = CU_MODULE_MAGIC;
		mod->ctx = ctx;
		mod->next = ctx->modules;
		ctx->modules = mod;
		*module = mod;
	} else if (mod) {
		if (mod->m)
			vgpu_module_unload(cu_g.dev, mod->m);
		free(mod->funcs);
		free(mod);
	}
	cu_unlock();
	free(owned);
	return res;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	return cu_module_load(module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return cu_module_load(module, fatCubin);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
	if (numOptions && (!options || !optionValues))
		return CUDA_ERROR_INVALID_VALUE;
	/* The options are hints to a JIT compiler; the logs come back empty. */
	for (unsigned int i = 0; i < numOptions && i < 64; i++) {
		if ((options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
		     options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES))
			continue;
		if ((options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) &&
		    optionValues[i]) {
			for (unsigned int j = 0; j < numOptions && j < 64; j++)
				if (options[j] == options[i] + 1 && (uintptr_t)optionValues[j] > 0)
					((char *)optionValues[i])[0] = 0;
		}
	}
	return cu_module_load(module, image);
}

CUresult cu_read_image(const char *what, const char *path, size_t min_bytes, char **image,
                       size_t *bytes)
{
	FILE *f;
	char *buf;
	size_t n;

	f = fopen(path, "rb");
	if (!f)
		return cu_fail(CUDA_ERROR_FILE_NOT_FOUND, "%s: cannot open %s", what, path);
	buf = malloc((size_t)VGPU_MODULE_IMAGE_MAX_BYTES + 2);
	if (!buf) {
		fclose(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	n = fread(buf, 1, (size_t)VGPU_MODULE_IMAGE_MAX_BYTES + 1, f);
	fclose(f);
	if (n > VGPU_MODULE_IMAGE_MAX_BYTES || n < min_bytes) {
		free(buf);
		return cu_fail(CUDA_ERROR_INVALID_IMAGE, "%s: %s: %zu bytes", what, path, n);
	}
	buf[n] = 0;
	*image = buf;
	*bytes = n;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	char *buf;
	size_t n;
	CUresult res;

	if (!module || !fname)
		return CUDA_ERROR_INVALID_VALUE;
	res = cu_read_image("cuModuleLoad", fname, 4, &buf, &n);
	if (res != CUDA_SUCCESS)
		return res;
	res = cu_module_load(module, buf);
	free(buf);
	return res;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	struct CUmod_st *mod;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	mod = cu_module_find(hmod);
	if (!mod) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else {
		/* Launches of it still queued would fault: let them finish. */
		if (!mod->ctx->sticky)
			(void)cu_ctx_sync(mod->ctx);
		mod = cu_module_find(hmod);
	}
	if (mod) {
		for (struct CUmod_st **p = &mod->ctx->modules; *p; p = &(*p)->next) {
			if (*p == mod) {
				*p = mod->next;
				break;
			}
		}
		unload(mod);
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	const struct vgpu_guest_function *f;
	struct CUmod_st *mod;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	mod = cu_module_find(hmod);
	if (!mod) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else {
		f = vgpu_module_function(mod->m, name);
		if (!f)
			res = cu_fail(CUDA_ERROR_NOT_FOUND, "no function %s in the module", name);
		else
			*hfunc = &mod->funcs[f - mod->m->functions];
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                      const char *name)
{
	const struct vgpu_guest_variable *v;
	struct CUmod_st *mod;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	mod = cu_module_find(hmod);
	if (!mod) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else {
		v = vgpu_module_variable(mod->m, name);
		if (!v) {
			res = cu_fail(CUDA_ERROR_NOT_FOUND, "no variable %s in the module", name);
		} else {
			if (dptr)
				*dptr = v->gpu_va;
			if (bytes)
				*bytes = (size_t)v->bytes;
		}
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	const struct cu_limits *l = &cu_g.limits;
	struct CUfunc_st *fn;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	fn = cu_function_get(hfunc);
	if (!fn) {
		res = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*pi = fn->f->max_threads_per_block &&
		              fn->f->max_threads_per_block < (uint32_t)l->max_threads_per_block ?
		              (int)fn->f->max_threads_per_block :
		              l->max_threads_per_block;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		*pi = (int)fn->f->static_shared_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
		*pi = 0;
		break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		*pi = (int)fn->f->local_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*pi = l->registers_per_thread;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*pi = l->cc_major * 10 + l->cc_minor;
		break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
		*pi = 0;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*pi = fn->max_dynamic_shared;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*pi = -1;
		break;
	default:
		if ((int)attrib < 0 || (int)attrib > 32)
			res = CUDA_ERROR_INVALID_VALUE;
		else
			*pi = 0;
		break;
	}
out:
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct CUfunc_st *fn;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	fn = cu_function_get(hfunc);
	if (!fn) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
		if (value < 0 || (size_t)value + fn->f->static_shared_bytes >
		                         (size_t)cu_g.limits.shared_per_block_optin)
			res = CUDA_ERROR_INVALID_VALUE;
		else
			fn->max_dynamic_shared = value;
	} else if (attrib != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
		res = CUDA_ERROR_INVALID_VALUE; /* the others are read-only */
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if ((unsigned int)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	if (!cu_function_get(hfunc))
		res = CUDA_ERROR_INVALID_HANDLE;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct CUfunc_st *fn;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	fn = cu_function_get(hfunc);
	if (!fn)
		res = CUDA_ERROR_INVALID_HANDLE;
	else
		*name = fn->f->name; /* valid until the module is unloaded */
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct CUfunc_st *fn;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!hmod)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	fn = cu_function_get(hfunc);
	if (!fn)
		res = CUDA_ERROR_INVALID_HANDLE;
	else
		*hmod = fn->mod;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	struct CUmod_st *m;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	m = cu_module_find(mod);
	if (!m)
		res = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = m->m->function_count;
	cu_unlock();
	return res;
}
