// SPDX-License-Identifier: MIT
/*
 * vm.c - VM contexts: name, weight, cap, chunk size, an address space with
 * its VA allocator, and the per-VM chunk sets and counters.
 */
#include "vm.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "channel.h"
#include "chunk.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"
#include "module.h"
#include "pass.h"
#include "return_pass.h"
#include "stats.h"

#define VM_VA_BASE VGPU_PAGE_64K /* keep address 0 unmapped */
#define VM_CHUNK_MAX (1ull << 32)

void vgpu_vm_config_defaults(struct vgpu_vm_config *config)
{
	memset(config, 0, sizeof(*config));
	config->weight = 1;
}

void vgpu_vm_rekey(struct vgpu_vm *vm)
{
	vm->stats_dirty = true;
	vm->victim.bytes = vm->resident_bytes;
	vm->victim.weight = vm->weight;
	vgpu_victim_heap_update(&vm->core->victims, &vm->victim);
}

void vgpu_vm_account(struct vgpu_vm *vm, int location, int64_t delta)
{
	struct vgpu_core *core = vm->core;

	vm->stats_dirty = true;
	if (location == LOC_RESIDENT) {
		vm->resident_bytes += (uint64_t)delta;
		core->resident_bytes += (uint64_t)delta;
	} else {
		vm->evicted_bytes += (uint64_t)delta;
		core->evicted_bytes += (uint64_t)delta;
	}
}

static int check_vm_config(struct vgpu_core *core, const struct vgpu_vm_config *config,
                           struct vgpu_error *error)
{
	char size[32], page[32], fallback[32];
	size_t length;

	if (!config->name || !(length = strlen(config->name)) || length >= VGPU_VM_NAME_MAX) {
		return vgpu_error_set(error, -EINVAL, "a VM needs a name of 1 to %d characters",
		                      VGPU_VM_NAME_MAX - 1);
	}
	for (size_t i = 0; i < length; i++) {
		if (!isgraph((unsigned char)config->name[i])) {
			return vgpu_error_set(error, -EINVAL,
			                      "VM name '%s' contains a blank or control character; "
			                      "use letters, digits and punctuation",
			                      config->name);
		}
	}
	if (config->weight < 1 || config->weight > VGPU_CORE_WEIGHT_MAX) {
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': weight %u is out of range; use 1 to %u",
		                      config->name,
		                      config->weight, VGPU_CORE_WEIGHT_MAX);
	}
	if (config->scheduler) {
		enum vgpu_sched_mode mode;

		if (vgpu_sched_mode_parse(config->scheduler, &mode)) {
			return vgpu_error_set(error, -EINVAL,
			                      "VM '%s': unknown scheduler '%s'; use best-effort, "
			                      "equal-share, weighted or fixed-share",
			                      config->name, config->scheduler);
		}
	}
	if (config->chunk_bytes % core->min_page) {
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': chunk size %s is not a multiple of the GPU's %s "
		                      "page; use e.g. %s, or 0 for the core's default",
		                      config->name,
		                      vgpu_core_format_size(config->chunk_bytes, size, sizeof(size)),
		                      vgpu_core_format_size(core->min_page, page, sizeof(page)),
		                      vgpu_core_format_size(core->config.chunk_bytes, fallback,
		                                            sizeof(fallback)));
	}
	if (config->chunk_bytes > VM_CHUNK_MAX) {
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': chunk size %s is above 4 GiB; use e.g. %s, or 0 "
		                      "for the core's default",
		                      config->name,
		                      vgpu_core_format_size(config->chunk_bytes, size, sizeof(size)),
		                      vgpu_core_format_size(core->config.chunk_bytes, fallback,
		                                            sizeof(fallback)));
	}
	return 0;
}

static struct vgpu_vm *find_vm(struct vgpu_core *core, const char *name)
{
	struct list_head *pos;

	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

		if (!strcmp(vm->name, name))
			return vm;
	}
	return NULL;
}

int vgpu_core_vm_create(struct vgpu_core *core, const struct vgpu_vm_config *config,
                        struct vgpu_vm **out, struct vgpu_error *error)
{
	struct vgpu_vm *vm;
	int err;

	if (!core || !config || !out) {
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_vm_create needs a core, a config and an output");
	}
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	err = check_vm_config(core, config, error);
	if (err)
		return err;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return vgpu_error_set(error, -ENOMEM, "out of memory for VM '%s'", config->name);
	vm->core = core;
	snprintf(vm->name, sizeof(vm->name), "%s", config->name);
	vm->weight = config->weight;
	vm->cap_bytes = config->cap_bytes;
	vm->chunk_bytes = config->chunk_bytes ? config->chunk_bytes : core->config.chunk_bytes;
	list_init(&vm->buffers);
	list_init(&vm->channels);
	list_init(&vm->reservations);
	list_init(&vm->modules);
	vm->free_slot = UINT32_MAX;
	for (int location = 0; location < LOC_COUNT; location++) {
		vgpu_chunk_set_init(&vm->sets[location], 0);
		vgpu_levels_init(&vm->levels[location]);
	}
	vm->victim.index = VGPU_VICTIM_NOT_QUEUED;
	vm->winner.index = VGPU_VICTIM_NOT_QUEUED;
	atomic_init(&vm->channel_errors, 0);
	atomic_init(&vm->weight_requested, 0);

	vgpu_core_lock(core);
	if (find_vm(core, config->name)) {
		err = vgpu_error_set(error, -EEXIST,
		                     "a VM called '%s' exists already; choose another name",
		                     config->name);
		goto fail;
	}
	err = vgpu_hal_as_create(core->hal, &vm->as);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': cannot create a GPU address space: %s%s",
		               config->name,
		               strerror(-err),
		               err == -ENOSPC ? " (the GPU has none left; destroy a VM)" : "");
		goto fail;
	}
	vm->id = core->next_vm_id;
	vm->victim.id = vm->winner.id = vm->id;
	vm->victim.weight = vm->winner.weight = vm->weight;
	err = vgpu_victim_heap_push(&core->victims, &vm->victim);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': out of memory for the victim order",
		               config->name);
		goto fail_as;
	}
	/* The return pass can then always queue every VM without failing. */
	err = vgpu_victim_heap_reserve(&core->ret.winners, core->vm_count + 1);
	if (!err)
		err = vgpu_pass_reserve_touched_locked(core, core->vm_count + 1);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': out of memory for the return order",
		               config->name);
		goto fail_heap;
	}
	vgpu_va_init(&vm->va, VM_VA_BASE, core->caps.va_reserved_base);
	core->next_vm_id++;
	vgpu_mutex_lock(&core->stats.lock);
	{
		enum vgpu_sched_mode mode = VGPU_SCHED_BEST_EFFORT;

		if (config->scheduler)
			vgpu_sched_mode_parse(config->scheduler, &mode);
		vgpu_sched_vm_init(&core->accounting.sched, &vm->gpu.sched, mode, vm->weight);
	}
	list_add_tail(&vm->link, &core->vms);
	vgpu_mutex_unlock(&core->stats.lock);
	core->vm_count++;
	vm->stats_dirty = true;
	vgpu_core_unlock(core);
	*out = vm;
	return 0;

fail_heap:
	vgpu_victim_heap_remove(&core->victims, &vm->victim);
fail_as:
	vgpu_hal_as_destroy(vm->as);
fail:
	vgpu_core_unlock(core);
	free(vm);
	return err;
}

void vgpu_core_vm_destroy(struct vgpu_vm *vm)
{
	struct vgpu_core *core;

	if (!vm)
		return;
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_core_lock_vm(core, vm);
	while (!list_empty(&vm->channels))
		vgpu_channel_destroy_locked(
		        list_entry(vm->channels.next, struct vgpu_core_channel, link));
	vgpu_core_modules_forget_locked(vm);
	while (!list_empty(&vm->buffers))
		vgpu_core_buffer_destroy(list_entry(vm->buffers.next, struct vgpu_core_buffer, link));
	while (!list_empty(&vm->reservations)) {
		struct vgpu_va_reservation *reservation =
		        list_entry(vm->reservations.next, struct vgpu_va_reservation, link);

		list_del(&reservation->link);
		free(reservation);
	}
	vgpu_hal_as_destroy(vm->as);
	vgpu_victim_heap_remove(&core->victims, &vm->victim);
	vgpu_victim_heap_remove(&core->ret.winners, &vm->winner);
	vgpu_mutex_lock(&core->stats.lock);
	list_del(&vm->link);
	vgpu_mutex_unlock(&core->stats.lock);
	core->vm_count--;
	vgpu_core_unlock(core);

	vgpu_return_mark_pending(core);
	for (int location = 0; location < LOC_COUNT; location++)
		vgpu_chunk_set_fini(&vm->sets[location]);
	vgpu_va_fini(&vm->va);
	free(vm->slots);
	free(vm);
}

bool vgpu_core_scheduler_known(const char *mode_name)
{
	enum vgpu_sched_mode mode;

	return mode_name && vgpu_sched_mode_parse(mode_name, &mode) == 0;
}

int vgpu_core_vm_set_scheduler(struct vgpu_vm *vm, const char *mode_name, struct vgpu_error *error)
{
	struct vgpu_core *core;
	enum vgpu_sched_mode mode;

	if (!vm || !mode_name)
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_vm_set_scheduler needs a VM and a mode");
	core = vm->core;
	vgpu_stats_count_entry(core);
	if (vgpu_sched_mode_parse(mode_name, &mode))
		return vgpu_error_set(error, -EINVAL, "unknown scheduler '%s'; use best-effort, "
		                      "equal-share, weighted or fixed-share",
		                      mode_name);
	vgpu_mutex_lock(&core->stats.lock);
	if (vm->gpu.sched.mode != mode) {
		struct vgpu_sched_vm *sched = &vm->gpu.sched;
		uint64_t throttled_ns = sched->throttled_ns;

		vgpu_sched_vm_init(&core->accounting.sched, sched, mode, sched->weight);
		sched->throttled_ns = throttled_ns;
	}
	vgpu_mutex_unlock(&core->stats.lock);
	return 0;
}

struct vgpu_hal_as *vgpu_core_vm_address_space(struct vgpu_vm *vm)
{
	return vm->as;
}

uint32_t vgpu_core_vm_id(const struct vgpu_vm *vm)
{
	return vm->id;
}

const char *vgpu_core_vm_name(const struct vgpu_vm *vm)
{
	return vm->name;
}

/*
 * A new weight never waits for the allocation lock (vgpuctl set-weight must
 * answer during an eviction): it is stored in vm->weight_requested and
 * applied by the next operation that takes the lock (vgpu_core_lock), before
 * any eviction or return pass could use it; readers see it at once.
 */
int vgpu_core_set_weight(struct vgpu_vm *vm, uint32_t weight, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;

	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	if (weight < 1 || weight > VGPU_CORE_WEIGHT_MAX)
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': weight %u is out of range; use 1 to %u",
		                      vm->name, weight, VGPU_CORE_WEIGHT_MAX);
	vgpu_mutex_lock(&core->stats.lock);
	atomic_store_explicit(&vm->weight_requested, weight, memory_order_relaxed);
	vm->published.weight = weight;
	atomic_store_explicit(&core->weights_requested, true, memory_order_release);
	vgpu_mutex_unlock(&core->stats.lock);
	return 0;
}

void vgpu_vm_apply_requested_weights_locked(struct vgpu_core *core)
{
	struct list_head *pos;

	vgpu_core_assert_locked(core);
	if (!atomic_exchange_explicit(&core->weights_requested, false, memory_order_acquire))
		return;
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);
		uint32_t weight = atomic_exchange_explicit(&vm->weight_requested, 0,
		                                           memory_order_relaxed);

		if (!weight)
			continue;
		vm->weight = weight;
		vm->winner.weight = weight;
		vgpu_vm_rekey(vm);
	}
}

int vgpu_core_reserve_va(struct vgpu_vm *vm, uint64_t bytes, uint64_t *va, struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_va_reservation *reservation;
	int err;

	if (!vm || !va || !bytes || bytes > UINT64_MAX - VGPU_PAGE_64K) {
		return vgpu_error_set(error, -EINVAL,
		                      "reserving address space needs a VM, a size above 0 and a "
		                      "place for the address");
	}
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	bytes = (bytes + VGPU_PAGE_64K - 1) & ~(uint64_t)(VGPU_PAGE_64K - 1);
	reservation = calloc(1, sizeof(*reservation));
	if (!reservation)
		return vgpu_error_set(error, -ENOMEM, "VM '%s': out of memory for a reservation",
		                      vm->name);
	vgpu_core_lock_vm(core, vm);
	err = vgpu_va_alloc(&vm->va, bytes, VGPU_PAGE_64K, &reservation->va);
	if (err) {
		vgpu_core_unlock(core);
		free(reservation);
		return vgpu_error_set(error, err,
		                      "VM '%s': no free GPU address range of %" PRIu64 " bytes; free "
		                      "buffers or release reservations",
		                      vm->name, bytes);
	}
	reservation->bytes = bytes;
	list_add_tail(&reservation->link, &vm->reservations);
	vm->reserved_va_bytes += bytes;
	*va = reservation->va;
	vgpu_core_unlock(core);
	return 0;
}

int vgpu_core_release_va(struct vgpu_vm *vm, uint64_t va, struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct list_head *pos;

	if (!vm)
		return vgpu_error_set(error, -EINVAL, "vgpu_core_release_va needs a VM");
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	list_for_each(pos, &vm->reservations) {
		struct vgpu_va_reservation *reservation =
		        list_entry(pos, struct vgpu_va_reservation, link);

		if (reservation->va != va)
			continue;
		vgpu_hal_as_unmap(vm->as, va, reservation->bytes);
		vgpu_hal_as_tlb_invalidate(vm->as);
		vgpu_va_free(&vm->va, va, reservation->bytes);
		vm->reserved_va_bytes -= reservation->bytes;
		list_del(&reservation->link);
		vgpu_core_unlock(core);
		free(reservation);
		return 0;
	}
	vgpu_core_unlock(core);
	return vgpu_error_set(error, -ENOENT, "VM '%s' has no address range reserved at %#" PRIx64,
	                      vm->name, va);
}
