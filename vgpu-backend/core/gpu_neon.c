// SPDX-License-Identifier: MIT
/* gpu_neon.c - NEON's sampling accounting, pure parts; see gpu_neon.h. */
#include "gpu_neon.h"

static bool busy(const struct vgpu_gpu_time_sample *sample)
{
	return sample->channel >= 0 && sample->pending;
}

void vgpu_neon_profile_begin(struct vgpu_neon_profile *profile,
                             const struct vgpu_gpu_time_sample *first)
{
	profile->busy_ns = 0;
	profile->last_ns = first->t_ns;
	profile->last_channel = first->channel;
	profile->last_busy = busy(first);
	profile->commands = profile->last_busy ? 1 : 0;
}

void vgpu_neon_profile_observe(struct vgpu_neon_profile *profile,
                               const struct vgpu_gpu_time_sample *sample)
{
	uint64_t t = sample->t_ns > profile->last_ns ? sample->t_ns : profile->last_ns;
	bool now_busy = busy(sample);

	if (profile->last_busy)
		profile->busy_ns += t - profile->last_ns;
	if (now_busy && (!profile->last_busy || sample->channel != profile->last_channel))
		profile->commands++;
	profile->last_ns = t;
	profile->last_channel = sample->channel;
	profile->last_busy = now_busy;
}

void vgpu_neon_profile_fetched(struct vgpu_neon_profile *profile, uint64_t entries)
{
	if (entries > profile->commands)
		profile->commands = entries;
}

uint64_t vgpu_neon_profile_average(const struct vgpu_neon_profile *profile)
{
	return profile->commands ? profile->busy_ns / profile->commands : 0;
}

void vgpu_neon_estimate(const uint64_t *avg_ns, size_t count, uint64_t period_ns,
                        uint64_t *out_ns)
{
	unsigned __int128 total = 0;

	for (size_t i = 0; i < count; i++)
		total += avg_ns[i];
	for (size_t i = 0; i < count; i++)
		out_ns[i] = total ? (uint64_t)((unsigned __int128)period_ns * avg_ns[i] / total) : 0;
}
