// SPDX-License-Identifier: MIT
/*
 * init.c - cuInit and cuDriverGetVersion: opening the process's vGPU.
 *
 * The device is, in this order: the render node $VGPU_DRM_DEVICE names;
 * where $VGPUD_SOCKET is unset, the first vgpu render node (inside a VM,
 * where the library was built with libdrm); else vgpud's local socket
 * ($VGPUD_SOCKET or the default) as a tenant named $VGPU_VM_NAME
 * (default "cuda-<pid>") with profile $VGPU_PROFILE. A failure is said
 * once on stderr; cuInit then answers CUDA_ERROR_NO_DEVICE and every
 * other call CUDA_ERROR_NOT_INITIALIZED... with the same words in
 * vgpuGetLastErrorMessage.
 *
 * $VGPU_BACKEND=simgpu asks for an in-process simgpu instead: only the
 * variant of the library built for tests and benchmarks
 * (inproc/libcuda.so.1, VGPU_CUDA_HAVE_SIMGPU; inproc.h) has one; this
 * one says so and finds no device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "vgpu_guest_local.h"
#ifdef VGPU_CUDA_HAVE_DRM
#include "vgpu_guest_drm.h"
#endif
#ifdef VGPU_CUDA_HAVE_SIMGPU
#include "inproc.h"
#endif

struct cu_global cu_g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The driver version cuDriverGetVersion reports: the CUDA version of the
 * API this library implements (cuda.h's CUDA_VERSION). */
#define CU_DRIVER_VERSION CUDA_VERSION

void cu_lock(void)
{
	pthread_mutex_lock(&cu_g.lock);
}

void cu_unlock(void)
{
	pthread_mutex_unlock(&cu_g.lock);
}

static uint32_t env_priority(void)
{
	const char *s = getenv("VGPU_MEM_PRIORITY");
	static bool said;
	char *end;
	long v;

	if (!s || !*s)
		return VGPU_PRIORITY_DEFAULT;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < VGPU_PRIORITY_MIN || v > VGPU_PRIORITY_MAX) {
		cu_warn_once(&said, "VGPU_MEM_PRIORITY=%s is not 0..15; using %d", s,
		             VGPU_PRIORITY_DEFAULT);
		return VGPU_PRIORITY_DEFAULT;
	}
	return (uint32_t)v;
}

/* $VGPU_BACKEND: 1 unset (the vGPU), else cuInit's answer. */
static int open_named_backend(char *why, size_t why_len)
{
	const char *backend = getenv("VGPU_BACKEND");

	if (!backend || !*backend)
		return 1;
	if (strcmp(backend, "simgpu")) {
		snprintf(why, why_len, "VGPU_BACKEND=%s: the only backend to name is simgpu",
		         backend);
		return -EINVAL;
	}
#ifdef VGPU_CUDA_HAVE_SIMGPU
	return cu_open_inproc(&cu_g.dev, why, why_len);
#else
	snprintf(why, why_len,
	         "VGPU_BACKEND=simgpu: this libcuda reaches only a vGPU; the in-process simgpu "
	         "is in the test variant, guest-driver/cuda/inproc/libcuda.so.1");
	return -ENODEV;
#endif
}

static int open_device(char *why, size_t why_len)
{
	const char *drm = getenv("VGPU_DRM_DEVICE");
	struct vgpu_local_device_config config = { 0 };
	char name[64];
	int rc;

	rc = open_named_backend(why, why_len);
	if (rc <= 0)
		return rc;

#ifdef VGPU_CUDA_HAVE_DRM
	if ((drm && *drm) || !getenv("VGPUD_SOCKET")) {
		rc = vgpu_device_open_drm(drm && *drm ? drm : NULL, &cu_g.dev, why, why_len);
		if (rc == 0 || (drm && *drm))
			return rc;
	}
#else
	if (drm && *drm) {
		snprintf(why, why_len,
		         "VGPU_DRM_DEVICE=%s, but this libcuda was built without libdrm", drm);
		return -ENODEV;
	}
#endif
	snprintf(name, sizeof(name), "cuda-%ld", (long)getpid());
	config.vm_name = getenv("VGPU_VM_NAME");
	if (!config.vm_name || !*config.vm_name)
		config.vm_name = name;
	config.profile = getenv("VGPU_PROFILE");
	if (config.profile && !*config.profile)
		config.profile = NULL;
	rc = vgpu_device_open_local(&config, 0, &cu_g.dev, why, why_len);
	return rc;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
	char why[256] = "";
	CUresult res;
	int rc;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	cu_lock();
	if (cu_g.init_state != 0) {
		res = cu_g.init_state > 0 ? CUDA_SUCCESS : cu_g.init_error;
		cu_unlock();
		return res;
	}
	rc = open_device(why, sizeof(why));
	if (rc < 0) {
		static bool said;

		cu_g.init_state = -1;
		cu_g.init_error = CUDA_ERROR_NO_DEVICE;
		cu_warn_once(&said, "no vGPU: %s", why[0] ? why : strerror(-rc));
		cu_unlock();
		return cu_fail(CUDA_ERROR_NO_DEVICE, "no vGPU: %s", why[0] ? why : strerror(-rc));
	}
	cu_g.info = *vgpu_device_info(cu_g.dev);
	snprintf(cu_g.backend, sizeof(cu_g.backend), "%s",
	         cu_g.info.backend ? cu_g.info.backend : "unknown");
	cu_g.info.backend = cu_g.backend;
	snprintf(cu_g.name, sizeof(cu_g.name), "vGPU (%s)", cu_g.backend);
	cu_g.default_priority = env_priority();
	cu_limits_default(&cu_g.limits);
	cu_g.init_state = 1;
	cu_unlock();
	return CUDA_SUCCESS;
}

CUresult cu_check_init(void)
{
	int state = __atomic_load_n(&cu_g.init_state, __ATOMIC_ACQUIRE);

	if (state > 0)
		return CUDA_SUCCESS;
	return CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CU_DRIVER_VERSION;
	return CUDA_SUCCESS;
}
