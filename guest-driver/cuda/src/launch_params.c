// SPDX-License-Identifier: MIT
/* launch_params.c - the parameter block of a launch (launch_params.h). */
#include "launch_params.h"

#include <string.h>

/* An extra array longer than this is refused (it must end). */
#define EXTRA_MAX_ENTRIES 64

static CUresult from_extra(const struct vgpu_guest_function *f, void **extra, uint8_t *out,
                           const char **why)
{
	const void *buffer = NULL;
	const size_t *size = NULL;
	int i;

	for (i = 0; i < EXTRA_MAX_ENTRIES && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			buffer = extra[i + 1];
		} else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
			size = extra[i + 1];
		} else {
			*why = "extra: unknown key";
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	if (i >= EXTRA_MAX_ENTRIES) {
		*why = "extra: no CU_LAUNCH_PARAM_END";
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!size || !buffer) {
		if (f->param_bytes == 0 && !size && !buffer)
			return CUDA_SUCCESS;
		*why = "extra: needs CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE";
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (*size != f->param_bytes) {
		*why = "extra: the buffer's size is not the function's parameter size";
		return CUDA_ERROR_INVALID_VALUE;
	}
	memcpy(out, buffer, f->param_bytes);
	return CUDA_SUCCESS;
}

CUresult cu_pack_params(const struct vgpu_guest_function *f, void **kernelParams, void **extra,
                        void *out, uint32_t out_capacity, const char **why)
{
	uint8_t *block = out;

	*why = "";
	if (f->param_bytes > out_capacity) {
		*why = "parameter block too large";
		return CUDA_ERROR_INVALID_VALUE;
	}
	memset(block, 0, f->param_bytes);
	if (kernelParams && extra) {
		*why = "both kernelParams and extra given";
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (extra)
		return from_extra(f, extra, block, why);
	if (f->param_count == 0)
		return CUDA_SUCCESS;
	if (!kernelParams) {
		*why = "the function takes parameters; neither kernelParams nor extra given";
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (uint32_t i = 0; i < f->param_count; i++) {
		const struct vgpu_module_param *p = &f->params[i];

		if (!kernelParams[i]) {
			*why = "a kernelParams entry is NULL";
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (p->offset > f->param_bytes || p->size > f->param_bytes - p->offset) {
			*why = "the module's parameter table is inconsistent";
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(block + p->offset, kernelParams[i], p->size);
	}
	return CUDA_SUCCESS;
}
