// SPDX-License-Identifier: MIT
/* gpu_time.c - GPU time per channel from context switches, see gpu_time.h. */
#include <errno.h>
#include <string.h>

#include "gpu_time.h"

static bool sample_busy(const struct vgpu_gpu_time_sample *sample)
{
	return sample->channel >= 0 && sample->pending;
}

static void open_segment(struct vgpu_gpu_time_phase *phase, uint64_t t_ns,
                         const struct vgpu_gpu_time_sample *sample)
{
	phase->seg_start_ns = t_ns;
	phase->seg_channel = sample->channel;
	phase->seg_busy = sample_busy(sample);
}

/* Give the open segment's time up to t_ns to whoever ran it. */
static void close_segment(struct vgpu_gpu_time_phase *phase, uint64_t t_ns)
{
	uint64_t ns = t_ns > phase->seg_start_ns ? t_ns - phase->seg_start_ns : 0;

	if (!phase->seg_busy)
		phase->idle_ns += ns;
	else if ((uint32_t)phase->seg_channel < phase->channel_count)
		phase->channel_ns[phase->seg_channel] += ns;
	else
		phase->other_ns += ns;
	phase->seg_start_ns += ns;
}

void vgpu_gpu_time_phase_begin(struct vgpu_gpu_time_phase *phase, uint64_t *channel_ns,
                               uint32_t channel_count, const struct vgpu_gpu_time_sample *first)
{
	memset(phase, 0, sizeof(*phase));
	phase->channel_ns = channel_ns;
	phase->channel_count = channel_count;
	if (channel_count)
		memset(channel_ns, 0, channel_count * sizeof(*channel_ns));
	phase->start_ns = first->t_ns;
	phase->last_t_ns = first->t_ns;
	phase->samples = 1;
	open_segment(phase, first->t_ns, first);
}

void vgpu_gpu_time_phase_observe(struct vgpu_gpu_time_phase *phase,
                                 const struct vgpu_gpu_time_sample *sample)
{
	uint64_t t_ns = sample->t_ns > phase->seg_start_ns ? sample->t_ns : phase->seg_start_ns;
	bool busy = sample_busy(sample);

	phase->samples++;
	if (phase->max_gap_ns && t_ns > phase->last_t_ns &&
	    t_ns - phase->last_t_ns > phase->max_gap_ns && phase->last_t_ns >= phase->seg_start_ns) {
		/* the poller did not run: nobody saw the gap */
		close_segment(phase, phase->last_t_ns);
		phase->blind_ns += t_ns - phase->last_t_ns;
		phase->blind_gaps++;
		if (sample->channel != phase->seg_channel)
			phase->switches++;
		phase->last_t_ns = t_ns;
		open_segment(phase, t_ns, sample);
		return;
	}
	if (t_ns > phase->last_t_ns)
		phase->last_t_ns = t_ns;
	if (sample->channel == phase->seg_channel && busy == phase->seg_busy)
		return;
	if (sample->channel != phase->seg_channel)
		phase->switches++;
	close_segment(phase, t_ns);
	open_segment(phase, t_ns, sample);
}

void vgpu_gpu_time_phase_end(struct vgpu_gpu_time_phase *phase, uint64_t t_ns)
{
	if (t_ns < phase->seg_start_ns)
		t_ns = phase->seg_start_ns;
	close_segment(phase, t_ns);
	phase->end_ns = t_ns;
}

uint64_t vgpu_gpu_time_phase_length(const struct vgpu_gpu_time_phase *phase)
{
	return phase->end_ns > phase->start_ns ? phase->end_ns - phase->start_ns : 0;
}

uint64_t vgpu_gpu_time_phase_observed(const struct vgpu_gpu_time_phase *phase)
{
	uint64_t length = vgpu_gpu_time_phase_length(phase);

	return length > phase->blind_ns ? length - phase->blind_ns : 0;
}

uint64_t vgpu_gpu_time_extrapolate(uint64_t polled_ns, uint64_t poll_ns, uint64_t period_ns)
{
	unsigned __int128 product;

	if (!poll_ns)
		return 0;
	product = (unsigned __int128)polled_ns * period_ns + poll_ns / 2;
	product /= poll_ns;
	return product > UINT64_MAX ? UINT64_MAX : (uint64_t)product;
}

void vgpu_gpu_time_config_default(struct vgpu_gpu_time_config *config)
{
	config->poll_ns_per_channel = VGPU_GPU_TIME_DEFAULT_POLL_NS;
	config->nonpoll_ns_per_channel = VGPU_GPU_TIME_DEFAULT_NONPOLL_NS;
	config->jitter_percent = VGPU_GPU_TIME_DEFAULT_JITTER;
}

int vgpu_gpu_time_config_check(const struct vgpu_gpu_time_config *config)
{
	if (!config->poll_ns_per_channel || !config->nonpoll_ns_per_channel)
		return -EINVAL;
	if (config->jitter_percent > VGPU_GPU_TIME_MAX_JITTER)
		return -EINVAL;
	return 0;
}

/* mean ± jitter %, uniform, never 0. */
static uint64_t jittered(uint64_t mean, uint32_t jitter_percent, struct vgpu_rng *rng)
{
	uint64_t spread = (uint64_t)((unsigned __int128)mean * jitter_percent / 100);
	uint64_t value;

	if (!rng || !spread)
		return mean;
	value = mean - spread + vgpu_rng_below(rng, 2 * spread + 1);
	return value ? value : 1;
}

void vgpu_gpu_time_phase_lengths(const struct vgpu_gpu_time_config *config, uint32_t channels,
                                 struct vgpu_rng *rng, uint64_t *poll_ns, uint64_t *nonpoll_ns)
{
	uint64_t n = channels ? channels : 1;

	*poll_ns = jittered(config->poll_ns_per_channel * n, config->jitter_percent, rng);
	*nonpoll_ns = jittered(config->nonpoll_ns_per_channel * n, config->jitter_percent, rng);
}
