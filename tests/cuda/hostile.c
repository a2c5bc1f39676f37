// SPDX-License-Identifier: MIT
/*
 * hostile MODE - a CUDA program that misbehaves on purpose
 * (kernels/hostile.cu) and must get a CUDA error for it:
 *
 *   oob-store    a kernel stores far outside anything it allocated
 *   spin         a kernel waits forever (only the watchdog ends it)
 *   huge-grid    an empty kernel on 65536 x 32768 = 2^31 blocks
 *   bad-image    cuModuleLoadData of bytes that are neither PTX nor a fatbin
 *   huge-image   cuModuleLoadData of a PTX text of 64 MiB + 1 (more than a
 *                module image may be)
 *   param-size   cuLaunchKernel in the extra form with a parameter buffer
 *                of 8 bytes where the kernel takes 24
 *
 * It prints "hostile MODE: CUDA_ERROR_... from CALL" and exits 0 when a
 * call failed as it should; 1 when everything succeeded (nothing stopped
 * it) or when, after an error that must leave the context usable (a
 * refused module or launch), a correct launch then fails. Errors that end
 * the context (a fault, the watchdog) are sticky: later calls fail too;
 * that is reported, not checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_prog.h"

#define HUGE_IMAGE ((64u << 20) + 1)

static const char *mode;

/* A call that should fail: 1 (and the report) if it did. */
static int expect_error(CUresult r, const char *call)
{
	if (r == CUDA_SUCCESS)
		return 0;
	printf("hostile %s: %s from %s\n", mode, cuda_prog_error(r), call);
	return 1;
}
#define EXPECT(call) expect_error((call), #call)

/* After a launch: the error at the launch or at the wait. */
static int launched(CUresult launch, const char *call)
{
	if (expect_error(launch, call))
		return 1;
	return EXPECT(cuCtxSynchronize());
}

/* The context still runs a correct launch (three_params) after a refusal. */
static void still_usable(CUmodule mod)
{
	CUfunction fn;
	CUdeviceptr dout;
	int a = 40, got = 0;
	long long b = 2;

	CK(cuModuleGetFunction(&fn, mod, "three_params"));
	CK(cuMemAlloc(&dout, sizeof(int)));
	void *params[] = { &dout, &a, &b };
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	CK(cuMemcpyDtoH(&got, dout, sizeof(got)));
	if (got != 42)
		cuda_prog_fail("after the refusal a correct launch wrote %d, expected 42", got);
	CK(cuMemFree(dout));
	printf("hostile %s: the context still works (a correct launch after it is exact)\n", mode);
}

static void after_fault(void)
{
	CUresult r = cuCtxSynchronize();

	printf("hostile %s: afterwards cuCtxSynchronize says %s\n", mode,
	       r == CUDA_SUCCESS ? "CUDA_SUCCESS" : cuda_prog_error(r));
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod, bad;
	CUfunction fn;
	size_t bytes;
	int failed = 0;
	char *fake_argv[] = { argv[0], NULL };

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: hostile oob-store|spin|huge-grid|bad-image|huge-image|param-size\n");
		return CUDA_PROG_USAGE;
	}
	mode = argv[1];
	cuda_prog_start("hostile", 1, fake_argv, 1, &bytes, &dev);
	CK(cuModuleLoad(&mod, cuda_prog_kernel_path("hostile.ptx")));

	if (!strcmp(mode, "oob-store")) {
		CUdeviceptr mine;
		unsigned long long target;
		unsigned value = 0xdeadbeefu;

		CK(cuMemAlloc(&mine, 1u << 20));
		target = (unsigned long long)mine + (1ull << 40); /* 1 TiB past it */
		CK(cuModuleGetFunction(&fn, mod, "store_at"));
		void *params[] = { &target, &value };
		failed = launched(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
		                  "cuLaunchKernel(store_at, 1 TiB past its buffer)");
		if (failed)
			after_fault();
	} else if (!strcmp(mode, "spin")) {
		CUdeviceptr flag;

		CK(cuMemAlloc(&flag, sizeof(int)));
		CK(cuMemsetD32(flag, 0, 1));
		CK(cuModuleGetFunction(&fn, mod, "spin_forever"));
		void *params[] = { &flag };
		failed = launched(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
		                  "cuLaunchKernel(spin_forever)");
		if (failed)
			after_fault();
	} else if (!strcmp(mode, "huge-grid")) {
		CK(cuModuleGetFunction(&fn, mod, "nothing"));
		failed = launched(cuLaunchKernel(fn, 65536, 32768, 1, 1, 1, 1, 0, NULL, NULL, NULL),
		                  "cuLaunchKernel(nothing, 65536 x 32768 blocks)");
		if (failed)
			after_fault();
	} else if (!strcmp(mode, "bad-image")) {
		static const char garbage[] =
			"\x7f" "ELF this is not a module .version 99.9 .entry ((((( \x01\x02";

		failed = EXPECT(cuModuleLoadData(&bad, garbage));
		if (failed)
			still_usable(mod);
	} else if (!strcmp(mode, "huge-image")) {
		static const char head[] = ".version 8.0\n.target sm_75\n.address_size 64\n";
		char *image = cuda_prog_alloc(HUGE_IMAGE + 1);
		size_t at = sizeof(head) - 1;

		memcpy(image, head, at);
		/* then comment lines up to the size, and the NUL */
		while (at < HUGE_IMAGE) {
			size_t line = HUGE_IMAGE - at < 64 ? HUGE_IMAGE - at : 64;

			memset(image + at, ' ', line);
			memcpy(image + at, "//", line < 2 ? line : 2);
			image[at + line - 1] = '\n';
			at += line;
		}
		image[HUGE_IMAGE] = '\0';
		failed = EXPECT(cuModuleLoadData(&bad, image));
		free(image);
		if (failed)
			still_usable(mod);
	} else if (!strcmp(mode, "param-size")) {
		CUdeviceptr dout;
		size_t size = 8; /* the kernel takes 24 bytes */

		CK(cuMemAlloc(&dout, sizeof(int)));
		CK(cuModuleGetFunction(&fn, mod, "three_params"));
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &dout,
		                  CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
		failed = launched(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra),
		                  "cuLaunchKernel(three_params, extra with 8 of 24 bytes)");
		if (failed)
			still_usable(mod);
	} else {
		fprintf(stderr, "hostile: unknown mode '%s'\n", mode);
		return CUDA_PROG_USAGE;
	}
	if (!failed) {
		fprintf(stderr, "hostile %s: every call succeeded: nothing stopped it\n", mode);
		return CUDA_PROG_FAILED;
	}
	/* the primary context goes with the process; a dead one may refuse to
	 * release */
	return CUDA_PROG_OK;
}
