// SPDX-License-Identifier: MIT
/*
 * library.c - CUDA 12's library API over modules.
 *
 * A library is one module (module.c) loaded into the context current at
 * cuLibraryLoadData (there must be one: CUDA_ERROR_INVALID_CONTEXT
 * otherwise; NVIDIA's driver would load it into every context lazily).
 * A CUkernel is the CUfunction of that module, so cuKernelGetFunction
 * returns the handle itself and either handle launches the kernel with
 * cuLaunchKernel / cuLaunchKernelEx, as NVIDIA's driver allows.
 * cuLibraryGetModule returns the module. The library goes with
 * cuLibraryUnload, or becomes stale (CUDA_ERROR_INVALID_HANDLE) when its
 * module is unloaded or its context destroyed.
 *
 * JIT options are accepted and ignored (as cuModuleLoadDataEx's);
 * CU_LIBRARY_BINARY_IS_PRESERVED is a hint and accepted;
 * CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE (NVIDIA's runtime's
 * own tables) is CUDA_ERROR_NOT_SUPPORTED.
 */
#include <stdlib.h>

#include "internal.h"

#define CU_LIBRARY_MAGIC 0x4252494cu /* "LIBR" */

struct CUlib_st {
	uint32_t magic;
	struct CUlib_st *next;
	CUmodule mod;
};

/* Locked: the library h names, or NULL. */
static struct CUlib_st *find_library(CUlibrary h)
{
	for (struct CUlib_st *l = cu_g.libraries; l; l = l->next)
		if (l == h && l->magic == CU_LIBRARY_MAGIC)
			return l;
	return NULL;
}

/* The module of library h, checked to be alive, or NULL. */
static CUmodule library_module(CUlibrary h)
{
	struct CUlib_st *l;
	CUmodule mod = NULL;

	cu_lock();
	l = find_library(h);
	if (l && cu_module_find(l->mod))
		mod = l->mod;
	cu_unlock();
	return mod;
}

static CUresult check_options(unsigned int numJitOptions, CUjit_option *jitOptions,
                              void **jitOptionsValues, unsigned int numLibraryOptions,
                              CUlibraryOption *libraryOptions)
{
	if (numJitOptions && (!jitOptions || !jitOptionsValues))
		return CUDA_ERROR_INVALID_VALUE;
	if (numLibraryOptions && !libraryOptions)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < numJitOptions; i++)
		if ((jitOptions[i] == CU_JIT_INFO_LOG_BUFFER ||
		     jitOptions[i] == CU_JIT_ERROR_LOG_BUFFER) && jitOptionsValues[i])
			((char *)jitOptionsValues[i])[0] = 0; /* the logs come back empty */
	for (unsigned int i = 0; i < numLibraryOptions; i++) {
		if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED)
			continue;
		if (libraryOptions[i] == CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE)
			return cu_fail(CUDA_ERROR_NOT_SUPPORTED,
			               "cuLibraryLoadData: CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_"
			               "DATA_TABLE is not supported");
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult wrap(CUlibrary *library, CUmodule mod)
{
	struct CUlib_st *l = calloc(1, sizeof(*l));

	if (!l) {
		(void)cuModuleUnload(mod);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->magic = CU_LIBRARY_MAGIC;
	l->mod = mod;
	cu_lock();
	l->next = cu_g.libraries;
	cu_g.libraries = l;
	cu_unlock();
	*library = l;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues, unsigned int numLibraryOptions)
{
	CUmodule mod;
	CUresult res;

	(void)libraryOptionValues;
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!library || !code)
		return CUDA_ERROR_INVALID_VALUE;
	res = check_options(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
	                    libraryOptions);
	if (res == CUDA_SUCCESS)
		res = cu_module_load(&mod, code);
	if (res == CUDA_SUCCESS)
		res = wrap(library, mod);
	return res;
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
	CUmodule mod;
	CUresult res;

	(void)libraryOptionValues;
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!library || !fileName)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; libraryOptions && i < numLibraryOptions; i++)
		if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED)
			return CUDA_ERROR_INVALID_VALUE; /* meaningless for a file */
	res = check_options(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
	                    libraryOptions);
	if (res == CUDA_SUCCESS)
		res = cuModuleLoad(&mod, fileName);
	if (res == CUDA_SUCCESS)
		res = wrap(library, mod);
	return res;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	struct CUlib_st *l = NULL;
	CUmodule mod = NULL;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	for (struct CUlib_st **q = &cu_g.libraries; *q; q = &(*q)->next) {
		if (*q == library && (*q)->magic == CU_LIBRARY_MAGIC) {
			l = *q;
			*q = l->next;
			break;
		}
	}
	if (l && cu_module_find(l->mod))
		mod = l->mod;
	cu_unlock();
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	l->magic = 0;
	free(l);
	return mod ? cuModuleUnload(mod) : CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	CUmodule mod;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pMod)
		return CUDA_ERROR_INVALID_VALUE;
	mod = library_module(library);
	if (!mod)
		return CUDA_ERROR_INVALID_HANDLE;
	*pMod = mod;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	CUfunction f;
	CUmodule mod;
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pKernel || !name)
		return CUDA_ERROR_INVALID_VALUE;
	mod = library_module(library);
	if (!mod)
		return CUDA_ERROR_INVALID_HANDLE;
	res = cuModuleGetFunction(&f, mod, name);
	if (res == CUDA_SUCCESS)
		*pKernel = (CUkernel)f;
	return res;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	CUmodule mod;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	mod = library_module(lib);
	if (!mod)
		return CUDA_ERROR_INVALID_HANDLE;
	return cuModuleGetFunctionCount(count, mod);
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                           CUlibrary lib)
{
	struct CUmod_st *mod;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!kernels && numKernels)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	mod = find_library(lib) ? cu_module_find(find_library(lib)->mod) : NULL;
	if (!mod)
		res = CUDA_ERROR_INVALID_HANDLE;
	else
		for (unsigned int i = 0; i < numKernels && i < mod->m->function_count; i++)
			kernels[i] = (CUkernel)&mod->funcs[i];
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                    const char *name)
{
	CUmodule mod;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	mod = library_module(library);
	if (!mod)
		return CUDA_ERROR_INVALID_HANDLE;
	return cuModuleGetGlobal_v2(dptr, bytes, mod, name);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	if (!cu_function_get((CUfunction)kernel))
		res = CUDA_ERROR_INVALID_HANDLE;
	else
		*pFunc = (CUfunction)kernel;
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct CUfunc_st *fn;
	CUresult res = CUDA_ERROR_INVALID_HANDLE;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pLib)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	fn = cu_function_get((CUfunction)kernel);
	for (struct CUlib_st *l = cu_g.libraries; fn && l; l = l->next) {
		if (l->mod == fn->mod) {
			*pLib = l;
			res = CUDA_SUCCESS;
			break;
		}
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}
