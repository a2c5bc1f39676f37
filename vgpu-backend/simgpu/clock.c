// SPDX-License-Identifier: MIT
/* clock.c - the modeled clock (see clock.h). */
#include "clock.h"

#include <string.h>

void gpu_clock_init(struct gpu_clock *clock, const struct simgpu_config *config)
{
	unsigned engine;

	memset(clock, 0, sizeof(*clock));
	clock->model.bandwidth[VGPU_TARGET_VRAM] = config->vram_bandwidth;
	clock->model.bandwidth[VGPU_TARGET_SYSMEM_COHERENT] = config->sysmem_coherent_bandwidth;
	clock->model.bandwidth[VGPU_TARGET_SYSMEM_NONCOHERENT] =
		config->sysmem_noncoherent_bandwidth;
	clock->model.latency_ps[VGPU_TARGET_VRAM] = (uint64_t)config->vram_latency_ns * 1000;
	clock->model.latency_ps[VGPU_TARGET_SYSMEM_COHERENT] =
		(uint64_t)config->sysmem_coherent_latency_ns * 1000;
	clock->model.latency_ps[VGPU_TARGET_SYSMEM_NONCOHERENT] =
		(uint64_t)config->sysmem_noncoherent_latency_ns * 1000;
	for (engine = 0; engine < VGPU_ENGINE_COUNT; engine++)
		clock->current_channel[engine] = -1;
}
