/* SPDX-License-Identifier: MIT */
/*
 * nvrtc_common.h - what the NVRTC programs of tests/nvrtc share: compile
 * CUDA C++ source to PTX at run time with NVRTC (for compute_75, the
 * oldest architecture CUDA 13 compiles for; the vGPU runs its PTX), and
 * check CUDA calls. The programs include NVIDIA's own cuda.h and nvrtc.h
 * (the toolkit's) and link the project's libcuda.so.1: an unmodified
 * JIT-style client.
 *
 * Exit status of the programs: 0 every result matched the CPU reference,
 * 1 a result or a call failed (said on stderr), 2 no vGPU (cuInit
 * failed).
 */
#ifndef VGPU_NVRTC_COMMON_H
#define VGPU_NVRTC_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <nvrtc.h>

static inline void nv_check(CUresult r, const char *call, const char *file, int line)
{
	const char *name = NULL, *text = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	cuGetErrorString(r, &text);
	fprintf(stderr, "%s:%d: %s: %s (%s)\n", file, line, call, name ? name : "?",
	        text ? text : "?");
	exit(1);
}
#define CU(call) nv_check((call), #call, __FILE__, __LINE__)

static inline void nvrtc_check(nvrtcResult r, const char *call, const char *file, int line)
{
	if (r == NVRTC_SUCCESS)
		return;
	fprintf(stderr, "%s:%d: %s: %s\n", file, line, call, nvrtcGetErrorString(r));
	exit(1);
}
#define NVRTC(call) nvrtc_check((call), #call, __FILE__, __LINE__)

/* cuInit and a context on device 0; exit 2 without a vGPU. */
static inline CUcontext nv_start(const char *program)
{
	CUcontext ctx;
	CUdevice dev;
	char name[128];
	CUresult r = cuInit(0);

	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "%s: cuInit failed (%d): no vGPU (set VGPUD_SOCKET)\n", program,
		        (int)r);
		exit(2);
	}
	CU(cuDeviceGet(&dev, 0));
	CU(cuDeviceGetName(name, sizeof(name), dev));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	printf("%s: device \"%s\"\n", program, name);
	return ctx;
}

/* Compile src (named file_name) with NVRTC. headers: n_headers sources
 * the program #includes by include_names; name expressions (C++ names of
 * template instances) are registered, and their lowered (mangled) names
 * come back in lowered[] (copies, to free). Returns the PTX (malloc'ed,
 * NUL-terminated); exits 1 with the compile log on a failure. */
static inline char *nv_compile(const char *src, const char *file_name, int n_headers,
                               const char *const *headers, const char *const *include_names,
                               int n_exprs, const char *const *exprs, char **lowered)
{
	const char *opts[] = { "--gpu-architecture=compute_75", "--fmad=false",
	                       "-default-device", "--std=c++17" };
	nvrtcProgram prog;
	nvrtcResult cr;
	size_t log_bytes, ptx_bytes;
	char *ptx;

	NVRTC(nvrtcCreateProgram(&prog, src, file_name, n_headers, headers, include_names));
	for (int i = 0; i < n_exprs; i++)
		NVRTC(nvrtcAddNameExpression(prog, exprs[i]));
	cr = nvrtcCompileProgram(prog, (int)(sizeof(opts) / sizeof(opts[0])), opts);
	NVRTC(nvrtcGetProgramLogSize(prog, &log_bytes));
	if (cr != NVRTC_SUCCESS || log_bytes > 1) {
		char *log = malloc(log_bytes + 1);

		if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
			fprintf(stderr, "%s: NVRTC log:\n%s\n", file_name, log);
		free(log);
	}
	NVRTC(cr);
	for (int i = 0; i < n_exprs; i++) {
		const char *name;
		size_t len;

		NVRTC(nvrtcGetLoweredName(prog, exprs[i], &name));
		len = __builtin_strlen(name) + 1;
		lowered[i] = malloc(len);
		if (!lowered[i])
			exit(1);
		__builtin_memcpy(lowered[i], name, len);
	}
	NVRTC(nvrtcGetPTXSize(prog, &ptx_bytes));
	ptx = malloc(ptx_bytes);
	if (!ptx)
		exit(1);
	NVRTC(nvrtcGetPTX(prog, ptx));
	NVRTC(nvrtcDestroyProgram(&prog));
	return ptx;
}

/* A deterministic generator for inputs (xorshift64). */
static inline uint64_t nv_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif /* VGPU_NVRTC_COMMON_H */
