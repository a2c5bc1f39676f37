/* SPDX-License-Identifier: MIT */
/*
 * hal_open.h - pick and open a HAL backend by name.
 *
 * A backend is named the way operators write it on vgpud's command line
 * (--gpu) and in its config file:
 *    simgpu        the software GPU (the default)
 *    cuda          the first NVIDIA GPU, through the CUDA driver API
 *    cuda:N        NVIDIA GPU with CUDA ordinal N
 */
#ifndef VGPU_HAL_OPEN_H
#define VGPU_HAL_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/hal.h"
#include "vgpu/simgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vgpu_hal_backend {
	VGPU_HAL_BACKEND_SIMGPU = 0,
	VGPU_HAL_BACKEND_CUDA = 1,
};

/* cudagpu's isolation (vgpu/cudagpu.h), as vgpud's config names it. */
enum vgpu_hal_cuda_isolation {
	VGPU_HAL_CUDA_ISOLATION_DEFAULT = 0, /* cudagpu's default */
	VGPU_HAL_CUDA_ISOLATION_NONE = 1,
	VGPU_HAL_CUDA_ISOLATION_PROCESS = 2,
};

struct vgpu_hal_spec {
	enum vgpu_hal_backend backend;
	int cuda_device;  /* cuda:N */
	enum vgpu_hal_cuda_isolation cuda_isolation;
};

/* Parse "simgpu", "cuda" or "cuda:N". -EINVAL (error says what is
 * expected) otherwise. */
int vgpu_hal_spec_parse(const char *text, struct vgpu_hal_spec *spec, struct vgpu_error *error);

/* The backend's name as written ("simgpu", "cuda:0") into buf. */
const char *vgpu_hal_spec_format(const struct vgpu_hal_spec *spec, char *buf, size_t len);

/*
 * Open the backend. simgpu uses *sim (NULL: defaults); cuda takes from it
 * the settings both share, timeslice_commands and acquire_timeout_ms (the
 * PFIFO's turns and the acquire watchdog). vram_bytes, when
 * nonzero, is the VRAM size (simgpu: overrides sim->vram_bytes) or the VRAM
 * budget (cuda). On failure returns the backend's negative errno and sets
 * error (vgpu/error.h) to what is wrong; for cuda -ENOENT (no driver), -ENODEV (no device) and -ENOTSUP (no
 * host-memory mapping) mean "this machine has no usable GPU". For cuda,
 * spec->cuda_isolation picks the isolation, and the environment variable
 * VGPU_CUDA_ISOLATION (none or process), when set, overrides it (tests run
 * the same programs in both modes that way), VGPU_CUDA_WORKER_TIMEOUT_MS
 * sets cudagpu_config.worker_timeout_ms (tests of a hung worker) and
 * VGPU_CUDA_KILL_WAIT_MS its kill_wait_ms (tests of a kill's bound).
 */
int vgpu_hal_open(const struct vgpu_hal_spec *spec, const struct simgpu_config *sim,
                  uint64_t vram_bytes, struct vgpu_hal **out, struct vgpu_error *error);

/* Open the backend named by the environment variable VGPU_HAL ("simgpu"
 * when unset), for tests that run against every backend. */
int vgpu_hal_open_from_env(const struct simgpu_config *sim, uint64_t vram_bytes,
                           struct vgpu_hal **out, struct vgpu_error *error);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_HAL_OPEN_H */
