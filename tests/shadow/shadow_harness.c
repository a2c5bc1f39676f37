// SPDX-License-Identifier: MIT
/*
 * shadow_harness.c - the shadow tests' fixture (see shadow_harness.h).
 */
#include "shadow_harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"

static void forward_event(void *ctx, const struct vgpu_hal_event *event)
{
	struct shadow_harness *harness = ctx;
	struct vgpu_shadow_channel *shadow;

	if (event->channel_id != harness->info.id) {
		if (event->channel_id >= HARNESS_MAX_FORWARD)
			return;
		shadow = __atomic_load_n(&harness->forward[event->channel_id], __ATOMIC_ACQUIRE);
		if (shadow && event->type == VGPU_EVENT_PRIV_FENCE)
			vgpu_shadow_on_priv_fence(shadow, event->value);
		else if (shadow && event->type == VGPU_EVENT_CHANNEL_ERROR)
			vgpu_shadow_on_channel_error(shadow);
		return;
	}
	shadow = __atomic_load_n(&harness->shadow, __ATOMIC_ACQUIRE);
	if (event->type == VGPU_EVENT_PRIV_FENCE) {
		__atomic_add_fetch(&harness->priv_fence_events, 1, __ATOMIC_RELAXED);
		if (shadow)
			vgpu_shadow_on_priv_fence(shadow, event->value);
	} else if (event->type == VGPU_EVENT_CHANNEL_ERROR) {
		__atomic_add_fetch(&harness->error_events, 1, __ATOMIC_RELAXED);
		if (shadow && harness->forward_errors)
			vgpu_shadow_on_channel_error(shadow);
	}
}

int shadow_harness_setup(struct shadow_harness *harness, const struct shadow_harness_config *config)
{
	struct guest_submitter_config guest_config;
	struct vgpu_shadow_channel *shadow;
	int ret;

	memset(harness, 0, sizeof(*harness));
	harness->forward_errors = config->forward_errors;
	ret = simgpu_create(NULL, &harness->hal);
	if (ret)
		return ret;
	vgpu_hal_get_caps(harness->hal, &harness->caps);
	vgpu_hal_set_event_handler(harness->hal, forward_event, harness);
	ret = vgpu_hal_as_create(harness->hal, &harness->as);
	if (ret)
		goto fail_hal;
	ret = vgpu_hal_channel_create(harness->as, config->gpfifo_entries, &harness->channel,
	                              &harness->info);
	if (ret)
		goto fail_as;
	harness->entries = harness->info.layout.gpfifo_entries;

	harness->window = guest_window_double_create(harness->caps.max_channels,
	                                             harness->info.layout.control_bytes,
	                                             harness->info.layout.gpfifo_bytes);
	if (!harness->window) {
		ret = -ENOMEM;
		goto fail_channel;
	}
	ret = guest_window_double_attach(harness->window, &harness->info);
	if (ret)
		goto fail_window;
	ret = vgpu_shadow_channel_create(harness->channel, &harness->info, guest_window_double_ops(),
	                                 harness->window, &shadow);
	if (ret)
		goto fail_window;
	__atomic_store_n(&harness->shadow, shadow, __ATOMIC_RELEASE);

	guest_config = (struct guest_submitter_config){
		.hal = harness->hal,
		.as = harness->as,
		.window = harness->window,
		.info = &harness->info,
		.max_submissions = config->max_submissions ? config->max_submissions : 4096,
		.alloc_memory = true,
		.data_va = HARNESS_DATA_VA,
		.pushbuffer_va = HARNESS_PUSHBUFFER_VA,
		.max_pause_us = config->max_pause_us,
		.seed = config->seed,
	};
	ret = guest_submitter_create(&guest_config, &harness->guest);
	if (ret)
		goto fail_shadow;
	return 0;

fail_shadow:
	vgpu_hal_set_event_handler(harness->hal, NULL, NULL);
	vgpu_shadow_channel_destroy(shadow);
fail_window:
	guest_window_double_destroy(harness->window);
fail_channel:
	vgpu_hal_channel_destroy(harness->channel);
fail_as:
	vgpu_hal_as_destroy(harness->as);
fail_hal:
	vgpu_hal_set_event_handler(harness->hal, NULL, NULL);
	vgpu_hal_destroy(harness->hal);
	return ret;
}

void shadow_harness_teardown(struct shadow_harness *harness)
{
	guest_submitter_stop(harness->guest);
	/* A failed test may have left fetching off: destroy would wait forever
	 * for the NOP fill of a suspended channel. */
	vgpu_hal_channel_set_fetch(harness->channel, true);
	/* After a failed test a broken module may never resume: give up on
	 * cleaning up rather than hang in destroy. */
	if (harness->shadow && vgpu_shadow_is_suspended(harness->shadow) &&
	    vgpu_shadow_resume_timeout(harness->shadow, 5000) == -ETIMEDOUT) {
		fprintf(stderr, "shadow harness: channel does not resume, leaking the fixture\n");
		memset(harness, 0, sizeof(*harness));
		return;
	}
	/* No delivery in progress or to come once this returns. */
	vgpu_hal_set_event_handler(harness->hal, NULL, NULL);
	vgpu_shadow_channel_destroy(harness->shadow);
	harness->shadow = NULL;
	vgpu_hal_channel_destroy(harness->channel);
	guest_submitter_destroy(harness->guest);
	guest_window_double_detach(harness->window, harness->info.id);
	guest_window_double_destroy(harness->window);
	vgpu_hal_as_destroy(harness->as);
	vgpu_hal_destroy(harness->hal);
	memset(harness, 0, sizeof(*harness));
}

void shadow_harness_forward(struct shadow_harness *harness, uint32_t channel_id,
                            struct vgpu_shadow_channel *shadow)
{
	if (channel_id < HARNESS_MAX_FORWARD)
		__atomic_store_n(&harness->forward[channel_id], shadow, __ATOMIC_RELEASE);
}

void shadow_harness_activity(struct shadow_harness *harness, struct harness_gpu_activity *out)
{
	memset(out, 0, sizeof(*out));
	vgpu_hal_as_counters(harness->as, &out->counters);
	out->compute_ns = vgpu_hal_engine_modeled_ns(harness->hal, VGPU_ENGINE_COMPUTE);
	out->executed = guest_submitter_executed(harness->guest);
}

bool harness_activity_equal(const struct harness_gpu_activity *a,
                            const struct harness_gpu_activity *b)
{
	return !memcmp(&a->counters, &b->counters, sizeof(a->counters)) &&
	       a->compute_ns == b->compute_ns && a->executed == b->executed;
}

uint32_t shadow_harness_real_gp_get(struct shadow_harness *harness)
{
	return vgpu_hal_channel_gp_get(harness->channel);
}

int shadow_harness_submit(struct shadow_harness *harness, uint32_t n)
{
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = guest_submitter_submit(harness->guest);
		if (ret)
			return ret;
	}
	return 0;
}

int shadow_harness_submit_fault(struct shadow_harness *harness)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint32_t n = vgpu_push_memset(words, HARNESS_UNMAPPED_VA, 0xdeadbeef, 4096);

	return guest_submitter_submit_raw(harness->guest, words, n);
}

void harness_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

uint64_t harness_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
