// SPDX-License-Identifier: MIT
/* cuda_api.c - load the CUDA driver API at run time, see cuda_api.h. */
#include "cuda_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/error.h"

/* cuGetProcAddress (the _v2 ABI of CUDA 12.0 and later). */
typedef cg_result (*cg_get_proc_address_fn)(const char *symbol, void **pfn, int cuda_version,
                                            uint64_t flags, int *symbol_status);

int cuda_api_load(struct cuda_api *api, const char *library, struct vgpu_error *error)
{
	cg_get_proc_address_fn get_proc;
	void *fn;

	memset(api, 0, sizeof(*api));
	if (!library)
		library = getenv("VGPU_CUDA_LIBRARY");
	if (!library || !*library)
		library = "libcuda.so.1";
	api->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!api->library)
		return vgpu_error_set(error, -ENOENT, "no CUDA driver: %s not found", library);
	get_proc = (cg_get_proc_address_fn)dlsym(api->library, "cuGetProcAddress_v2");

#define CG_RESOLVE(name, symbol, params)                                                   \
	fn = NULL;                                                                         \
	if (get_proc) {                                                                    \
		int status = 0;                                                            \
		if (get_proc(#name, &fn, CG_API_VERSION, CG_GET_PROC_ADDRESS_DEFAULT,      \
		             &status) != CG_SUCCESS)                                       \
			fn = NULL;                                                         \
	}                                                                                  \
	if (!fn)                                                                           \
		fn = dlsym(api->library, symbol);                                          \
	if (!fn) {                                                                         \
		cuda_api_unload(api);                                                      \
		return vgpu_error_set(error, -ENOSYS, "the CUDA driver is too old: it "    \
		                      "has no %s (CUDA >= 12.2 needed)", symbol);          \
	}                                                                                  \
	*(void **)&api->name = fn;
	CG_API_FUNCTIONS(CG_RESOLVE)
#undef CG_RESOLVE
	return 0;
}

void cuda_api_unload(struct cuda_api *api)
{
	if (api->library)
		dlclose(api->library);
	memset(api, 0, sizeof(*api));
}

const char *cuda_api_error(const struct cuda_api *api, cg_result err, char *buf, size_t len)
{
	const char *name = NULL, *text = NULL;

	if (api->cuGetErrorName)
		api->cuGetErrorName(err, &name);
	if (api->cuGetErrorString)
		api->cuGetErrorString(err, &text);
	snprintf(buf, len, "%s (%s)", name ? name : "CUDA error", text ? text : "unknown");
	if (!name)
		snprintf(buf, len, "CUDA error %d", err);
	return buf;
}
