// SPDX-License-Identifier: MIT
/* hal_open.c - pick and open a HAL backend by name, see vgpu/hal_open.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/cudagpu.h"
#include "vgpu/hal_open.h"

int vgpu_hal_spec_parse(const char *text, struct vgpu_hal_spec *spec, struct vgpu_error *error)
{
	char *end;
	long ordinal;

	memset(spec, 0, sizeof(*spec));
	if (!text || !strcmp(text, "simgpu")) {
		spec->backend = VGPU_HAL_BACKEND_SIMGPU;
		return 0;
	}
	if (!strcmp(text, "cuda")) {
		spec->backend = VGPU_HAL_BACKEND_CUDA;
		return 0;
	}
	if (!strncmp(text, "cuda:", 5) && text[5]) {
		errno = 0;
		ordinal = strtol(text + 5, &end, 10);
		if (!errno && !*end && ordinal >= 0 && ordinal < 1024) {
			spec->backend = VGPU_HAL_BACKEND_CUDA;
			spec->cuda_device = (int)ordinal;
			return 0;
		}
	}
	return vgpu_error_set(error, -EINVAL, "unknown GPU '%s': expected simgpu, cuda or cuda:N "
	                      "(a CUDA device ordinal)", text);
}

const char *vgpu_hal_spec_format(const struct vgpu_hal_spec *spec, char *buf, size_t len)
{
	if (spec->backend == VGPU_HAL_BACKEND_CUDA)
		snprintf(buf, len, "cuda:%d", spec->cuda_device);
	else
		snprintf(buf, len, "simgpu");
	return buf;
}

/* A setting in milliseconds from the environment, when set. */
static int env_ms(const char *name, uint32_t *ms, struct vgpu_error *error)
{
	const char *text = getenv(name);
	unsigned long value;
	char *end;

	if (!text || !*text)
		return 0;
	value = strtoul(text, &end, 10);
	if (*end || !value || value > UINT32_MAX)
		return vgpu_error_set(error, -EINVAL, "%s=%s: expected a number of milliseconds",
		                      name, text);
	*ms = (uint32_t)value;
	return 0;
}

int vgpu_hal_open(const struct vgpu_hal_spec *spec, const struct simgpu_config *sim,
                  uint64_t vram_bytes, struct vgpu_hal **out, struct vgpu_error *error)
{
	int err;

	if (spec->backend == VGPU_HAL_BACKEND_CUDA) {
		struct cudagpu_config config;
		const char *isolation;

		cudagpu_config_defaults(&config);
		config.device = spec->cuda_device;
		config.vram_bytes = vram_bytes;
		if (sim) {
			config.timeslice_commands = sim->timeslice_commands;
			config.acquire_timeout_ms = sim->acquire_timeout_ms;
		}
		if (spec->cuda_isolation)
			config.isolation = spec->cuda_isolation == VGPU_HAL_CUDA_ISOLATION_PROCESS
			                           ? CUDAGPU_ISOLATION_PROCESS
			                           : CUDAGPU_ISOLATION_NONE;
		isolation = getenv("VGPU_CUDA_ISOLATION");
		if (isolation && *isolation &&
		    cudagpu_isolation_parse(isolation, &config.isolation))
			return vgpu_error_set(error, -EINVAL,
			                      "VGPU_CUDA_ISOLATION=%s: expected none or process",
			                      isolation);
		err = env_ms("VGPU_CUDA_WORKER_TIMEOUT_MS", &config.worker_timeout_ms, error);
		if (!err)
			err = env_ms("VGPU_CUDA_KILL_WAIT_MS", &config.kill_wait_ms, error);
		if (err)
			return err;
		return cudagpu_create(&config, out, error);
	}

	struct simgpu_config config;

	if (sim)
		config = *sim;
	else
		simgpu_config_defaults(&config);
	if (vram_bytes)
		config.vram_bytes = vram_bytes;
	err = simgpu_create(&config, out);
	if (err)
		return vgpu_error_set(error, err, "simgpu: %s", strerror(-err));
	return 0;
}

int vgpu_hal_open_from_env(const struct simgpu_config *sim, uint64_t vram_bytes,
                           struct vgpu_hal **out, struct vgpu_error *error)
{
	struct vgpu_hal_spec spec;
	int err = vgpu_hal_spec_parse(getenv("VGPU_HAL"), &spec, error);

	if (err)
		return err;
	return vgpu_hal_open(&spec, sim, vram_bytes, out, error);
}
