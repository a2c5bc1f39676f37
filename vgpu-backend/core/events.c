// SPDX-License-Identifier: MIT
/*
 * events.c - the core's single HAL event handler. It runs on the HAL's event
 * thread, never blocks and never takes the allocation lock: a relocation
 * holding that lock waits for exactly these events (copy completions,
 * drain fences).
 *
 *   COPY_DONE      -> the DMA queue (relocation waits for it)
 *   PRIV_FENCE     -> the channel's shadow (drain waits for it)
 *   CHANNEL_ERROR  -> the VM's statistics, the shadow, config->on_channel_error
 *   FENCE          -> config->on_fence (the daemon raises a guest interrupt)
 */
#include "events.h"

#include "core_internal.h"
#include "stats.h"

static struct vgpu_core_channel *channel_lookup(struct vgpu_core *core, uint32_t id)
{
	return id < core->channel_table_size ? core->channel_table[id] : NULL;
}

void vgpu_core_handle_event(void *ctx, const struct vgpu_hal_event *event)
{
	struct vgpu_core *core = ctx;
	struct vgpu_core_channel *channel;

	vgpu_stats_count_event(core);
	vgpu_stats_count_entry(core);

	if (event->type == VGPU_EVENT_COPY_DONE) {
		vgpu_dma_on_copy_done(&core->dma, event->value, event->status);
		return;
	}

	/* The table lock keeps the channel alive while we use it: destroy
	 * unpublishes it under the same lock before freeing anything. */
	vgpu_mutex_lock(&core->channels_lock);
	channel = channel_lookup(core, event->channel_id);
	if (channel) {
		switch (event->type) {
		case VGPU_EVENT_PRIV_FENCE:
			vgpu_shadow_on_priv_fence(channel->shadow, event->value);
			break;
		case VGPU_EVENT_CHANNEL_ERROR:
			atomic_fetch_add_explicit(&channel->vm->channel_errors, 1,
			                          memory_order_relaxed);
			vgpu_shadow_on_channel_error(channel->shadow);
			if (core->config.on_channel_error)
				core->config.on_channel_error(core->config.event_ctx, channel->vm,
				                              event);
			break;
		case VGPU_EVENT_FENCE:
			if (core->config.on_fence)
				core->config.on_fence(core->config.event_ctx, channel->vm, event);
			break;
		default:
			break;
		}
	}
	vgpu_mutex_unlock(&core->channels_lock);
}
