// SPDX-License-Identifier: MIT
/* cudagpu.c - placeholder while the backend is written. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"
#include "vgpu/cudagpu.h"

void cudagpu_config_defaults(struct cudagpu_config *config)
{
	memset(config, 0, sizeof(*config));
}

int cudagpu_create(const struct cudagpu_config *config, struct vgpu_hal **out, char *why,
                   size_t why_len)
{
	struct cuda_api api;
	int err = cuda_api_load(&api, NULL, why, why_len);

	if (err)
		return err;
	cuda_api_unload(&api);
	snprintf(why, why_len, "cudagpu: not yet");
	return -ENODEV;
}

bool cudagpu_is_cudagpu(const struct vgpu_hal *hal)
{
	return false;
}
