// SPDX-License-Identifier: MIT
/*
 * link.c - the JIT linker (cuLinkCreate ... cuLinkComplete) for PTX.
 *
 * The vGPU runs PTX, and the module loader takes one PTX text per module:
 * there is no linker that resolves extern symbols between PTX inputs, and
 * concatenating two PTX texts is not PTX (each carries its own .version,
 * .target and .address_size, and their declarations may collide). So a
 * link state takes exactly one PTX input (CU_JIT_INPUT_PTX, or a fatbin
 * carrying PTX is left to cuModuleLoadData); a second input is refused
 * with CUDA_ERROR_NOT_SUPPORTED and a message saying so, and cubin,
 * object and library inputs with CUDA_ERROR_NO_BINARY_FOR_GPU /
 * NOT_SUPPORTED. cuLinkComplete hands back that PTX, NUL-terminated (the
 * "cubin" programs pass to cuModuleLoadData, which loads PTX), owned by
 * the state until cuLinkDestroy.
 *
 * Options: the log buffers (CU_JIT_INFO/ERROR_LOG_BUFFER with their
 * sizes) get a line saying what happened; other options are JIT hints and
 * are accepted and ignored. Handles are checked against the list of live
 * states (cu_g.links).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CU_LINK_MAGIC 0x4b4e494cu /* "LINK" */

struct CUlinkState_st {
	uint32_t magic;
	struct CUlinkState_st *next;
	char *ptx;        /* the one PTX input, NUL-terminated */
	size_t ptx_bytes; /* with the NUL */
	char *info_log, *error_log;
	size_t info_bytes, error_bytes;
};

static void say(char *buf, size_t bytes, const char *msg)
{
	if (buf && bytes)
		snprintf(buf, bytes, "%s", msg);
}

/* The log buffers among options (create time or per input). */
static CUresult take_logs(struct CUlinkState_st *st, unsigned int n, const CUjit_option *options,
                          void **values)
{
	if (n && (!options || !values))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < n; i++) {
		switch (options[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
			st->info_log = values[i];
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			st->info_bytes = (size_t)(uintptr_t)values[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER:
			st->error_log = values[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			st->error_bytes = (size_t)(uintptr_t)values[i];
			break;
		default:
			break; /* hints to a JIT compiler */
		}
	}
	say(st->info_log, st->info_bytes, "");
	say(st->error_log, st->error_bytes, "");
	return CUDA_SUCCESS;
}

/* Locked: the live state h names, or NULL. */
static struct CUlinkState_st *find_link(CUlinkState h)
{
	for (struct CUlinkState_st *l = cu_g.links; l; l = l->next)
		if (l == h && l->magic == CU_LINK_MAGIC)
			return l;
	return NULL;
}

CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                                 void **optionValues, CUlinkState *stateOut)
{
	struct CUlinkState_st *st;
	struct CUctx_st *ctx;
	CUresult res;

	if (!stateOut)
		return CUDA_ERROR_INVALID_VALUE;
	st = calloc(1, sizeof(*st));
	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	res = take_logs(st, numOptions, options, optionValues);
	cu_lock();
	if (res == CUDA_SUCCESS)
		res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS) {
		st->magic = CU_LINK_MAGIC;
		st->next = cu_g.links;
		cu_g.links = st;
		*stateOut = st;
		st = NULL;
	}
	cu_unlock();
	free(st);
	return res;
}

CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
                                  size_t size, const char *name, unsigned int numOptions,
                                  CUjit_option *options, void **optionValues)
{
	struct CUlinkState_st *st;
	const char *why = NULL;
	CUresult res = CUDA_SUCCESS;
	size_t len;
	char *copy;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!data || !size)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	st = find_link(state);
	if (!st) {
		cu_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	res = take_logs(st, numOptions, options, optionValues);
	if (res)
		goto out;
	if (type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_OBJECT) {
		res = CUDA_ERROR_NO_BINARY_FOR_GPU;
		why = "machine code inputs (cubin, object) cannot run: the vGPU runs PTX only";
	} else if (type != CU_JIT_INPUT_PTX) {
		res = CUDA_ERROR_NOT_SUPPORTED;
		why = "only PTX inputs can be linked on the vGPU (load a fatbin with "
		      "cuModuleLoadData)";
	} else if (st->ptx) {
		res = CUDA_ERROR_NOT_SUPPORTED;
		why = "a second PTX input: the vGPU has no PTX linker, so a link takes one PTX "
		      "input (compile the sources as one program)";
	}
	if (res)
		goto out;
	len = strnlen(data, size);
	if (len > VGPU_MODULE_IMAGE_MAX_BYTES || len == 0 || !strstr(data, ".version")) {
		res = CUDA_ERROR_INVALID_PTX;
		why = "the input is no PTX text (no .version directive, or too large)";
		goto out;
	}
	copy = malloc(len + 1);
	if (!copy) {
		res = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	memcpy(copy, data, len);
	copy[len] = 0;
	st->ptx = copy;
	st->ptx_bytes = len + 1;
	say(st->info_log, st->info_bytes, "vGPU: PTX input taken as is");
out:
	if (res && why) {
		char msg[CU_ERROR_MESSAGE_BYTES];

		snprintf(msg, sizeof(msg), "cuLinkAddData %s: %s", name ? name : "(unnamed)", why);
		say(st->error_log, st->error_bytes, msg);
		cu_fail(res, "%s", msg);
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                                  unsigned int numOptions, CUjit_option *options,
                                  void **optionValues)
{
	char *buf;
	size_t n;
	CUresult res;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	res = cu_read_image("cuLinkAddFile", path, 1, &buf, &n);
	if (res != CUDA_SUCCESS)
		return res;
	res = cuLinkAddData_v2(state, type, buf, n + 1, path, numOptions, options, optionValues);
	free(buf);
	return res;
}

CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	struct CUlinkState_st *st;
	CUresult res = CUDA_SUCCESS;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!cubinOut)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	st = find_link(state);
	if (!st) {
		res = CUDA_ERROR_INVALID_HANDLE;
	} else if (!st->ptx) {
		res = cu_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkComplete: no input was added");
		say(st->error_log, st->error_bytes, "cuLinkComplete: no input was added");
	} else {
		*cubinOut = st->ptx;
		if (sizeOut)
			*sizeOut = st->ptx_bytes;
	}
	cu_unlock();
	return res;
}

CUresult CUDAAPI cuLinkDestroy(CUlinkState state)
{
	struct CUlinkState_st *st = NULL;

	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	cu_lock();
	for (struct CUlinkState_st **q = &cu_g.links; *q; q = &(*q)->next) {
		if (*q == state && (*q)->magic == CU_LINK_MAGIC) {
			st = *q;
			*q = st->next;
			break;
		}
	}
	cu_unlock();
	if (!st)
		return CUDA_ERROR_INVALID_HANDLE;
	st->magic = 0;
	free(st->ptx);
	free(st);
	return CUDA_SUCCESS;
}
