// SPDX-License-Identifier: MIT
/* migrate.c - the core's side of live migration, see vgpu/core_migrate.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/core_migrate.h"

#include "buffer.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"

int vgpu_core_vm_buffers(struct vgpu_vm *vm, struct vgpu_core_buffer_desc **out, size_t *count,
                         struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_core_buffer_desc *descs = NULL;
	struct list_head *pos;
	size_t n = 0;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	if (vm->buffer_count) {
		descs = calloc(vm->buffer_count, sizeof(*descs));
		if (!descs) {
			vgpu_core_unlock(core);
			return vgpu_error_set(error, -ENOMEM,
			                      "VM '%s': out of memory listing buffers",
			                      vm->name);
		}
	}
	list_for_each(pos, &vm->buffers) {
		struct vgpu_core_buffer *b = list_entry(pos, struct vgpu_core_buffer, link);

		descs[n++] = (struct vgpu_core_buffer_desc){
			.handle = b->handle,
			.gpu_va = b->gpu_va,
			.bytes = b->bytes,
			.priority = b->priority,
		};
	}
	vgpu_core_unlock(core);
	*out = descs;
	*count = n;
	return 0;
}

/* Copy between the caller's memory and [offset, +bytes) of a buffer, chunk
 * by chunk, wherever each chunk is. */
static int transfer(struct vgpu_vm *vm, uint64_t handle, uint64_t offset, void *mem,
                    uint64_t bytes, bool write, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_core_buffer *buffer;
	uint8_t *p = mem;
	int err = 0;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	buffer = vgpu_core_buffer_lookup(vm, handle);
	if (!buffer) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -ENOENT, "VM '%s': no buffer %#" PRIx64, vm->name,
		                      handle);
	}
	if (!bytes || offset > buffer->bytes || bytes > buffer->bytes - offset) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': range %" PRIu64 "+%" PRIu64 " is outside "
		                      "its buffer of %" PRIu64 " bytes", vm->name, offset, bytes,
		                      buffer->bytes);
	}
	for (uint32_t i = 0; i < buffer->chunk_count && bytes && !err; i++) {
		struct vgpu_chunk *chunk = &buffer->chunks[i];
		uint64_t in, n;

		if (offset >= chunk->offset + chunk->bytes)
			continue;
		in = offset - chunk->offset;
		n = chunk->bytes - in < bytes ? chunk->bytes - in : bytes;
		if (chunk->location == LOC_EVICTED && chunk->host) {
			uint8_t *host = vgpu_hal_host_cpu_pointer(core->hal, chunk->host);

			if (!host)
				err = -EFAULT;
			else if (write)
				memcpy(host + in, p, n);
			else
				memcpy(p, host + in, n);
		} else if (write) {
			err = vgpu_hal_as_write(vm->as, buffer->gpu_va + offset, p, n);
		} else {
			err = vgpu_hal_as_read(vm->as, buffer->gpu_va + offset, p, n);
		}
		p += n;
		offset += n;
		bytes -= n;
	}
	vgpu_core_unlock(core);
	if (err)
		return vgpu_error_set(error, err, "VM '%s': cannot %s buffer memory: %s", vm->name,
		                      write ? "write" : "read", strerror(-err));
	return 0;
}

int vgpu_core_buffer_read(struct vgpu_vm *vm, uint64_t handle, uint64_t offset, void *dst,
                      uint64_t bytes, struct vgpu_error *error)
{
	return transfer(vm, handle, offset, dst, bytes, false, error);
}

int vgpu_core_buffer_write(struct vgpu_vm *vm, uint64_t handle, uint64_t offset, const void *src,
                       uint64_t bytes, struct vgpu_error *error)
{
	return transfer(vm, handle, offset, (void *)src, bytes, true, error);
}

int vgpu_core_vm_dirty_tracking(struct vgpu_vm *vm, bool enable, struct vgpu_error *error)
{
	int err;

	vgpu_error_clear(error);
	if (!vm->core->caps.has_dirty_bits)
		return vgpu_error_set(error, -ENOTSUP, "GPU '%s' cannot track dirty pages",
		                      vm->core->caps.name ? vm->core->caps.name : "?");
	err = vgpu_hal_as_dirty_tracking(vm->as, enable);
	if (err)
		return vgpu_error_set(error, err, "VM '%s': cannot %s dirty tracking: %s", vm->name,
		                      enable ? "start" : "stop", strerror(-err));
	return 0;
}

int vgpu_core_vm_test_and_clear_dirty(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                                      bool *dirty, struct vgpu_error *error)
{
	int err = vgpu_hal_as_test_and_clear_dirty(vm->as, gpu_va, bytes, dirty);

	if (err)
		return vgpu_error_set(error, err, "VM '%s': cannot read dirty pages: %s", vm->name,
		                      strerror(-err));
	return 0;
}

int vgpu_core_vm_stop_channels(struct vgpu_vm *vm, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	struct list_head *pos;
	int err = 0;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	if (vm->migration_stopped) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -EALREADY, "VM '%s': its channels are stopped already",
		                      vm->name);
	}
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);
		int e = vgpu_shadow_suspend(channel->shadow);

		if (e && e != -EALREADY && !err)
			err = e;
	}
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		if (vgpu_shadow_drain(channel->shadow, core->config.drain_timeout_ms)) {
			vgpu_hal_channel_kill(channel->hal, VGPU_FAULT_TIMEOUT);
			vgpu_shadow_drain(channel->shadow, 0);
			vm->drain_kills++;
		}
	}
	vm->migration_stopped = true;
	vm->stats_dirty = true;
	vgpu_core_unlock(core);
	if (err) {
		vgpu_core_vm_start_channels(vm, NULL);
		return vgpu_error_set(error, err, "VM '%s': cannot suspend its channels: %s",
		                      vm->name,
		                      strerror(-err));
	}
	return 0;
}

int vgpu_core_vm_start_channels(struct vgpu_vm *vm, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_shadow_channel **all;
	struct list_head *pos;
	size_t count = 0, i = 0;
	int err;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	if (!vm->migration_stopped) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -EINVAL, "VM '%s': its channels are not stopped",
		                      vm->name);
	}
	list_for_each(pos, &vm->channels)
		count++;
	all = calloc(count ? count : 1, sizeof(*all));
	if (!all) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -ENOMEM, "VM '%s': out of memory resuming channels",
		                      vm->name);
	}
	list_for_each(pos, &vm->channels)
		all[i++] = list_entry(pos, struct vgpu_core_channel, link)->shadow;
	do {
		err = count ? vgpu_shadow_resume_all(all, count, core->config.drain_timeout_ms) : 0;
		if (err == -ETIMEDOUT) { /* as a relocation does: kill, then restore */
			for (i = 0; i < count; i++)
				if (vgpu_shadow_is_suspended(all[i]))
					vgpu_hal_channel_kill(vgpu_shadow_hal_channel(all[i]),
					                      VGPU_FAULT_TIMEOUT);
		}
	} while (err == -ETIMEDOUT);
	free(all);
	vm->migration_stopped = false;
	vm->stats_dirty = true;
	vgpu_core_unlock(core);
	return err == -EIO ? 0 : err;
}

bool vgpu_core_vm_channels_stopped(struct vgpu_vm *vm)
{
	bool stopped;

	vgpu_core_lock_vm(vm->core, vm);
	stopped = vm->migration_stopped;
	vgpu_core_unlock(vm->core);
	return stopped;
}

int vgpu_core_channel_guest_state(struct vgpu_core_channel *channel, uint32_t *guest_put,
                                  uint32_t *guest_get)
{
	return vgpu_shadow_get_guest_state(channel->shadow, guest_put, guest_get);
}

int vgpu_core_channel_set_guest_state(struct vgpu_core_channel *channel, uint32_t guest_put,
                                      uint32_t guest_get)
{
	return vgpu_shadow_set_guest_state(channel->shadow, guest_put, guest_get);
}

int vgpu_core_import_buffer(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                            unsigned priority, struct vgpu_buffer_info *out,
                            struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	int err;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	err = vgpu_buffer_import_locked(vm, gpu_va, bytes, priority, out, error);
	if (err)
		vm->stats_dirty = true;
	vgpu_core_unlock(core);
	return err;
}
