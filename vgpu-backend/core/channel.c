// SPDX-License-Identifier: MIT
/*
 * channel.c - a VM's command channels: a HAL channel in the VM's address
 * space, shadowed (vgpu/channel_shadow.h) so relocation can suspend it, and
 * published in the core's channel-id table for event dispatch.
 */
#include "channel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "error.h"
#include "lock.h"
#include "stats.h"

static void shadow_stats_add(struct vgpu_shadow_stats *sum, const struct vgpu_shadow_stats *add)
{
	sum->suspensions += add->suspensions;
	sum->resumes += add->resumes;
	sum->suspended_ns += add->suspended_ns;
	sum->guest_blocked_ns += add->guest_blocked_ns;
	if (add->guest_blocked_max_ns > sum->guest_blocked_max_ns)
		sum->guest_blocked_max_ns = add->guest_blocked_max_ns;
	sum->nop_entries += add->nop_entries;
	sum->fill_ns += add->fill_ns;
	sum->channel_errors += add->channel_errors;
}

/* core->channels_lock or the allocation lock held. */
void vgpu_vm_shadow_stats(struct vgpu_vm *vm, struct vgpu_shadow_stats *out)
{
	struct list_head *pos;

	assert(vgpu_mutex_held(&vm->core->channels_lock) ||
	       vgpu_fifo_lock_held(&vm->core->lock));
	*out = vm->retired_shadow;
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);
		struct vgpu_shadow_stats stats;

		vgpu_shadow_stats(channel->shadow, &stats);
		shadow_stats_add(out, &stats);
	}
}

int vgpu_core_channel_create(struct vgpu_vm *vm, uint32_t gpfifo_entries,
                             const struct vgpu_guest_window_ops *ops, void *ops_ctx,
                             struct vgpu_core_channel **out, struct vgpu_hal_channel_info *info,
                             struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_core_channel *channel;
	int err;

	if (!vm || !out || !info || !ops || !ops->get_shadow || !ops->release_shadow ||
	    !ops->block || !ops->map) {
		return vgpu_error_set(error, -EINVAL,
		                      "channel create needs a VM, a complete set of guest window "
		                      "ops (get_shadow, release_shadow, block, map) and places for "
		                      "the channel and its window");
	}
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	channel = calloc(1, sizeof(*channel));
	if (!channel)
		return vgpu_error_set(error, -ENOMEM, "VM '%s': out of memory for a channel",
		                      vm->name);
	channel->vm = vm;

	vgpu_core_lock_vm(core, vm);
	err = vgpu_hal_channel_create(vm->as, gpfifo_entries, &channel->hal, info);
	if (err) {
		vgpu_error_set(error, err,
		               "VM '%s': cannot create a channel with %u GPFIFO entries: %s%s",
		               vm->name, gpfifo_entries, strerror(-err),
		               err == -ENOSPC ? " (the GPU has no channel left; destroy one)"
		               : err == -EINVAL ? " (entries must be 0 or a power of two up "
		               "to the GPU's maximum)"
		               : "");
		goto fail;
	}
	channel->id = info->id;
	if (channel->id >= core->channel_table_size) {
		err = vgpu_error_set(error, -EIO,
		                     "the GPU returned channel id %u beyond its %u channels",
		                     channel->id, core->channel_table_size);
		goto fail_hal;
	}
	err = vgpu_shadow_channel_create(channel->hal, info, ops, ops_ctx, &channel->shadow);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': cannot shadow channel %u: %s", vm->name,
		               channel->id,
		               strerror(-err));
		goto fail_hal;
	}
	vgpu_mutex_lock(&core->channels_lock);
	core->channel_table[channel->id] = channel;
	list_add_tail(&channel->link, &vm->channels);
	vgpu_mutex_unlock(&core->channels_lock);
	vm->channel_count++;
	vm->stats_dirty = true;
	if (vm->migration_stopped) {
		/* A fresh channel has nothing queued: its drain is the fence
		 * alone (dispatched now that the channel is in the table). */
		err = vgpu_shadow_suspend(channel->shadow);
		if (!err)
			err = vgpu_shadow_drain(channel->shadow, core->config.drain_timeout_ms);
		if (err) {
			vgpu_error_set(error, err,
			               "VM '%s': cannot stop new channel %u for migration: %s",
			               vm->name, channel->id, strerror(-err));
			vgpu_channel_destroy_locked(channel);
			vgpu_core_unlock(core);
			return err;
		}
	}
	vgpu_core_unlock(core);
	*out = channel;
	return 0;

fail_hal:
	vgpu_hal_channel_destroy(channel->hal);
fail:
	vgpu_core_unlock(core);
	free(channel);
	return err;
}

void vgpu_channel_destroy_locked(struct vgpu_core_channel *channel)
{
	struct vgpu_vm *vm = channel->vm;
	struct vgpu_core *core = vm->core;
	struct vgpu_shadow_stats stats;

	vgpu_core_assert_locked(core);
	/* Unpublish first: from now on no event reaches the shadow and no
	 * statistics reader sees the channel (its figures move to the VM's
	 * retired ones). No relocation has it suspended (relocations finish
	 * under the allocation lock, which we hold); the accounting thread may
	 * (throttled): the shadow's destroy resumes it, which needs no fence. */
	vgpu_mutex_lock(&core->channels_lock);
	if (core->channel_table[channel->id] == channel)
		core->channel_table[channel->id] = NULL;
	vgpu_shadow_stats(channel->shadow, &stats);
	shadow_stats_add(&vm->retired_shadow, &stats);
	list_del(&channel->link);
	vgpu_mutex_unlock(&core->channels_lock);

	vgpu_shadow_channel_destroy(channel->shadow);
	vgpu_hal_channel_destroy(channel->hal);
	vm->channel_count--;
	vm->stats_dirty = true;
	free(channel);
}

void vgpu_core_channel_destroy(struct vgpu_core_channel *channel)
{
	struct vgpu_core *core;

	if (!channel)
		return;
	core = channel->vm->core;
	vgpu_stats_count_entry(core);
	vgpu_core_lock_vm(core, channel->vm);
	vgpu_channel_destroy_locked(channel);
	vgpu_core_unlock(core);
}

struct vgpu_hal_channel *vgpu_core_channel_hal(struct vgpu_core_channel *channel)
{
	return channel->hal;
}

uint32_t vgpu_core_channel_id(const struct vgpu_core_channel *channel)
{
	return channel->id;
}
