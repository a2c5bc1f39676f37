// SPDX-License-Identifier: MIT
/*
 * buffer.c - allocating and freeing buffers: per-VM handles, and
 * vgpu_core_alloc as the steps of docs/DESIGN.md §3.2 (check the cap, reserve the
 * address range and bookkeeping, make room by eviction when VRAM is short,
 * place the chunks, commit the accounting).
 */
#include "buffer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "clock.h"
#include "core_internal.h"
#include "error.h"
#include "eviction.h"
#include "lock.h"
#include "pass.h"
#include "return_pass.h"
#include "stats.h"
#include "vm.h"

#define HANDLE_SLOT_BITS 32

/* ---- handles ------------------------------------------------------------ */

/* Make sure a slot is available, so publishing a buffer cannot fail. */
static int slot_reserve(struct vgpu_vm *vm)
{
	struct vgpu_core_buffer_slot *slots;
	uint32_t capacity;

	if (vm->free_slot != UINT32_MAX || vm->slot_count < vm->slot_capacity)
		return 0;
	if (vm->slot_capacity >= UINT32_MAX / 2)
		return -ENOSPC;
	capacity = vm->slot_capacity ? 2 * vm->slot_capacity : 16;
	slots = realloc(vm->slots, capacity * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	vm->slots = slots;
	vm->slot_capacity = capacity;
	return 0;
}

static void slot_publish(struct vgpu_vm *vm, struct vgpu_core_buffer *buffer)
{
	struct vgpu_core_buffer_slot *slot;
	uint32_t index;

	if (vm->free_slot != UINT32_MAX) {
		index = vm->free_slot;
		vm->free_slot = vm->slots[index].next_free;
	} else {
		index = vm->slot_count++;
		vm->slots[index].generation = 1;
	}
	slot = &vm->slots[index];
	slot->buffer = buffer;
	buffer->handle = ((uint64_t)slot->generation << HANDLE_SLOT_BITS) | (index + 1u);
}

static void slot_release(struct vgpu_vm *vm, struct vgpu_core_buffer *buffer)
{
	uint32_t index = (uint32_t)(buffer->handle & 0xffffffffu) - 1;
	struct vgpu_core_buffer_slot *slot = &vm->slots[index];

	slot->buffer = NULL;
	slot->generation++;
	if (!slot->generation)
		slot->generation = 1;
	slot->next_free = vm->free_slot;
	vm->free_slot = index;
}

struct vgpu_core_buffer *vgpu_core_buffer_lookup(struct vgpu_vm *vm, uint64_t handle)
{
	uint64_t index = (handle & 0xffffffffu) - 1;
	struct vgpu_core_buffer_slot *slot;

	if (index >= vm->slot_count)
		return NULL;
	slot = &vm->slots[index];
	if (!slot->buffer || slot->generation != (uint32_t)(handle >> HANDLE_SLOT_BITS))
		return NULL;
	return slot->buffer;
}

/* ---- buffer objects ----------------------------------------------------- */

static void buffer_free_struct(struct vgpu_core_buffer *buffer)
{
	for (int location = 0; location < LOC_COUNT; location++)
		vgpu_chunk_set_fini(&buffer->sets[location]);
	free(buffer->chunks);
	free(buffer);
}

static struct vgpu_core_buffer *buffer_new(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                                           unsigned priority)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_core_buffer *buffer = calloc(1, sizeof(*buffer));
	uint32_t count = vgpu_chunk_count(bytes, vm->chunk_bytes);

	if (!buffer)
		return NULL;
	buffer->vm = vm;
	buffer->gpu_va = gpu_va;
	buffer->bytes = bytes;
	buffer->priority = priority;
	buffer->chunk_count = count;
	list_init(&buffer->link);
	for (int location = 0; location < LOC_COUNT; location++) {
		vgpu_chunk_set_init(&buffer->sets[location], 1);
		list_init(&buffer->level_link[location]);
	}
	buffer->chunks = calloc(count, sizeof(*buffer->chunks));
	if (!buffer->chunks)
		goto fail;
	for (int location = 0; location < LOC_COUNT; location++)
		if (vgpu_chunk_set_reserve(&buffer->sets[location], count))
			goto fail;
	vgpu_chunk_layout(buffer->chunks, count, gpu_va, bytes, vm->chunk_bytes,
	                  core->caps.page_size_mask);
	for (uint32_t i = 0; i < count; i++) {
		buffer->chunks[i].buffer = buffer;
		buffer->chunks[i].location = LOC_RESIDENT;
		buffer->chunks[i].set_index[0] = SIZE_MAX;
		buffer->chunks[i].set_index[1] = SIZE_MAX;
	}
	return buffer;
fail:
	buffer_free_struct(buffer);
	return NULL;
}

/* Undo a partial placement: nothing of the buffer stays mapped or held. */
static void unplace_chunks(struct vgpu_core *core, struct vgpu_core_buffer *buffer, bool staging)
{
	struct vgpu_vm *vm = buffer->vm;

	vgpu_hal_as_unmap(vm->as, buffer->gpu_va, buffer->bytes);
	vgpu_hal_as_tlb_invalidate(vm->as);
	for (uint32_t i = 0; i < buffer->chunk_count; i++) {
		vgpu_chunk_release_memory(core, &buffer->chunks[i]);
		if (staging)
			vgpu_chunk_release_staging(core, &buffer->chunks[i]);
		buffer->chunks[i].location = LOC_RESIDENT;
	}
}

/*
 * No pressure (nothing staged on the host): chunks with the same page size
 * are consecutive in the buffer's address range, so each such run takes its
 * VRAM in one HAL call and is mapped in one as_map call, instead of two
 * calls (and their locks and checks) per chunk. -ENOMEM from the HAL: VRAM
 * too fragmented for the run's page size; the caller places chunk by chunk,
 * with smaller pages where needed.
 */
static int place_runs_in_vram(struct vgpu_core *core, struct vgpu_core_buffer *buffer)
{
	struct vgpu_vm *vm = buffer->vm;
	uint64_t *pages = NULL;
	uint64_t capacity = 0;
	uint32_t first, end;
	int err = 0;

	for (first = 0; first < buffer->chunk_count && !err; first = end) {
		uint32_t page_size = buffer->chunks[first].page_size;
		uint64_t count = 0, done = 0;

		for (end = first; end < buffer->chunk_count &&
		                  buffer->chunks[end].page_size == page_size;
		     end++)
			count += buffer->chunks[end].bytes / page_size;
		if (count > capacity) {
			uint64_t *grown = realloc(pages, count * sizeof(*pages));

			if (!grown) {
				err = -ENOMEM;
				break;
			}
			pages = grown;
			capacity = count;
		}
		err = vgpu_hal_vram_alloc(core->hal, page_size, count, pages);
		if (err)
			break;
		for (uint32_t i = first; i < end; i++) {
			struct vgpu_chunk *chunk = &buffer->chunks[i];
			uint64_t chunk_pages = chunk->bytes / page_size;

			chunk->vram = malloc(chunk_pages * sizeof(*chunk->vram));
			if (!chunk->vram) {
				/* The pages no chunk holds yet go back now. */
				vgpu_hal_vram_free(core->hal, page_size, count - done,
				                   pages + done);
				err = -ENOMEM;
				break;
			}
			memcpy(chunk->vram, pages + done, chunk_pages * sizeof(*pages));
			chunk->vram_page_size = page_size;
			chunk->location = LOC_RESIDENT;
			done += chunk_pages;
		}
		if (!err)
			err = vgpu_hal_as_map(vm->as, vgpu_chunk_va(&buffer->chunks[first]), page_size,
			                      count, VGPU_TARGET_VRAM, pages, 0);
	}
	free(pages);
	if (err)
		unplace_chunks(core, buffer, false);
	return err;
}

/*
 * Give every chunk its memory and mapping: staged host memory for chunks the
 * eviction pass sent to the host, fresh VRAM for the others. All or nothing.
 */
static int place_chunks(struct vgpu_core *core, struct vgpu_core_buffer *buffer)
{
	uint32_t placed;
	bool staged = false;
	int err = 0;

	for (uint32_t i = 0; i < buffer->chunk_count; i++)
		staged |= buffer->chunks[i].new_host != NULL;
	if (!staged) {
		err = place_runs_in_vram(core, buffer);
		if (err != -ENOMEM)
			return err;
		err = 0;
	}
	for (placed = 0; placed < buffer->chunk_count; placed++) {
		struct vgpu_chunk *chunk = &buffer->chunks[placed];

		if (chunk->new_host) {
			err = vgpu_chunk_map_host(chunk, chunk->new_iova);
			if (err)
				break;
			chunk->host = chunk->new_host;
			chunk->iova = chunk->new_iova;
			chunk->new_host = NULL;
			chunk->location = LOC_EVICTED;
		} else {
			err = vgpu_chunk_vram_alloc(core, chunk, &chunk->vram, &chunk->vram_page_size);
			if (err)
				break;
			err = vgpu_chunk_map_vram(chunk, chunk->vram, chunk->vram_page_size);
			if (err) {
				vgpu_chunk_vram_free(core, chunk->bytes, chunk->vram,
				                     chunk->vram_page_size);
				chunk->vram = NULL;
				break;
			}
			chunk->location = LOC_RESIDENT;
		}
	}
	if (err)
		unplace_chunks(core, buffer, true);
	return err;
}

static void alloc_error(struct vgpu_vm *vm, uint64_t bytes, int err, struct vgpu_error *error)
{
	char size[32], held[32], cap[32];

	switch (err) {
	case -EDQUOT:
		vgpu_error_set(error, err,
		               "VM '%s': allocating %s would exceed its cap of %s (it holds %s); "
		               "free buffers of this VM or raise its cap",
		               vm->name, vgpu_core_format_size(bytes, size, sizeof(size)),
		               vgpu_core_format_size(vm->cap_bytes, cap, sizeof(cap)),
		               vgpu_core_format_size(vm->allocated_bytes, held, sizeof(held)));
		break;
	case -ENOSPC:
		vgpu_error_set(error, err,
		               "VM '%s': no GPU virtual address range of %s is left; free buffers "
		               "of this VM",
		               vm->name, vgpu_core_format_size(bytes, size, sizeof(size)));
		break;
	case -ENOMEM:
		if (!vgpu_error_is_set(error))
			vgpu_error_set(error, err, "VM '%s': out of memory allocating %s", vm->name,
			               vgpu_core_format_size(bytes, size, sizeof(size)));
		break;
	default:
		if (!vgpu_error_is_set(error))
			vgpu_error_set(error, err, "VM '%s': allocating %s failed: %s", vm->name,
			               vgpu_core_format_size(bytes, size, sizeof(size)),
			               strerror(-err));
		break;
	}
}

static void record_latency(struct vgpu_vm *vm, uint64_t ns)
{
	vm->alloc_latency[vgpu_latency_bucket(ns)]++;
}

/*
 * vgpu_core_alloc in the steps of docs/DESIGN.md §3.2: check, reserve, make room,
 * place, commit. Each step that fails leaves the thread's last error set
 * (alloc_error fills in a generic sentence where a step did not).
 */

/* Check the arguments (no lock needed). */
static int alloc_check_args(struct vgpu_vm *vm, uint64_t bytes, unsigned priority,
                            uint32_t flags, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;

	if (!bytes || bytes > UINT64_MAX - core->min_page)
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': cannot allocate %" PRIu64 " bytes; ask for 1 byte "
		                      "or more",
		                      vm->name, bytes);
	if (priority > VGPU_PRIORITY_MAX)
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': priority %u is out of range; use %d (evicted "
		                      "first) to %d, default %d",
		                      vm->name, priority, VGPU_PRIORITY_MIN, VGPU_PRIORITY_MAX,
		                      VGPU_PRIORITY_DEFAULT);
	if (flags & ~VGPU_ALLOC_FLAGS_ALL)
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': unknown allocation flags %#x; pass 0",
		                      vm->name, flags);
	return 0;
}

/* Check the VM's cap and the buffer's chunk count. */
static int alloc_check_cap_locked(struct vgpu_vm *vm, uint64_t rounded)
{
	vgpu_core_assert_locked(vm->core);
	if (vm->cap_bytes && (vm->allocated_bytes > vm->cap_bytes ||
	                      rounded > vm->cap_bytes - vm->allocated_bytes)) {
		vm->core->stats.live.allocs_failed_cap++;
		return -EDQUOT;
	}
	if (rounded / vm->chunk_bytes >= UINT32_MAX)
		return -ENOSPC; /* more chunks than a buffer can have */
	return 0;
}

/* Reserve the address range, the buffer and room in the VM's sets and
 * handle table, so that nothing after the eviction can fail on memory for
 * bookkeeping. */
static int alloc_reserve(struct vgpu_vm *vm, uint64_t rounded, unsigned priority,
                         struct vgpu_core_buffer **out)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_core_buffer *buffer;
	uint64_t gpu_va;
	int err;

	err = vgpu_va_alloc(&vm->va, rounded, core->buffer_align, &gpu_va);
	if (err)
		return err;
	buffer = buffer_new(vm, gpu_va, rounded, priority);
	if (!buffer) {
		err = -ENOMEM;
		goto fail_va;
	}
	for (int location = 0; location < LOC_COUNT; location++) {
		err = vgpu_chunk_set_reserve(&vm->sets[location],
		                             vm->sets[location].count + buffer->chunk_count);
		if (err)
			goto fail_buffer;
	}
	err = slot_reserve(vm);
	if (err)
		goto fail_buffer;
	*out = buffer;
	return 0;

fail_buffer:
	buffer_free_struct(buffer);
fail_va:
	vgpu_va_free(&vm->va, gpu_va, rounded);
	return err;
}

/* Give back what alloc_reserve took. */
static void alloc_unreserve(struct vgpu_core_buffer *buffer)
{
	struct vgpu_vm *vm = buffer->vm;
	uint64_t gpu_va = buffer->gpu_va, bytes = buffer->bytes;

	buffer_free_struct(buffer);
	vgpu_va_free(&vm->va, gpu_va, bytes);
}

/* Make room: evict (GPUswap) when free VRAM is short of the buffer. No
 * other pass runs (see vgpu_core_alloc). */
static int alloc_make_room(struct vgpu_vm *vm, struct vgpu_core_buffer *buffer,
                           struct vgpu_core_time *pass, bool *evicted, struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	uint64_t free_bytes = vgpu_hal_vram_free_bytes(core->hal);

	if (free_bytes >= buffer->bytes)
		return 0;
	*evicted = true;
	return vgpu_evict_for(core, vm, buffer, free_bytes, pass, error);
}

/* Another pass dropped the lock while it waits on a tenant, and this
 * allocation needs VRAM that pass has not left free: it must wait. */
static bool alloc_must_wait_for_pass(struct vgpu_core *core, const struct vgpu_core_buffer *buffer)
{
	return core->pass.running && vgpu_pass_vram_available_locked(core) < buffer->bytes;
}

/* Place: every chunk gets its memory and mapping. */
static int alloc_place(struct vgpu_vm *vm, struct vgpu_core_buffer *buffer,
                       struct vgpu_error *error)
{
	int err = place_chunks(vm->core, buffer);

	if (err)
		return vgpu_error_set(error, err, "VM '%s': cannot map the new buffer: %s",
		                      vm->name, strerror(-err));
	return 0;
}

/* Commit: account the chunks, publish the handle. Cannot fail. */
static void alloc_commit(struct vgpu_vm *vm, struct vgpu_core_buffer *buffer,
                         struct vgpu_buffer_info *out)
{
	struct vgpu_core *core = vm->core;

	for (uint32_t i = 0; i < buffer->chunk_count; i++) {
		struct vgpu_chunk *chunk = &buffer->chunks[i];

		vgpu_chunk_insert(chunk); /* reserved: cannot fail */
		vgpu_vm_account(vm, chunk->location, (int64_t)chunk->bytes);
		if (chunk->location == LOC_EVICTED) {
			vm->evictions++;
			vm->evicted_bytes_total += chunk->bytes;
			core->stats.live.chunks_placed_on_host++;
			core->stats.live.bytes_placed_on_host += chunk->bytes;
		}
	}
	slot_publish(vm, buffer);
	list_add_tail(&buffer->link, &vm->buffers);
	vm->buffer_count++;
	vm->allocated_bytes += buffer->bytes;
	core->allocated_bytes += buffer->bytes;
	vgpu_vm_rekey(vm);
	vm->allocs++;

	out->handle = buffer->handle;
	out->gpu_va = buffer->gpu_va;
	out->bytes = buffer->bytes;
}

/* The eviction pass's time, into the core's statistics. */
static void alloc_account_pass(struct vgpu_core *core, struct vgpu_core_time *pass,
                               uint64_t start, bool succeeded)
{
	uint64_t total = vgpu_core_now_ns() - start;

	pass->total_ns = total;
	if (succeeded) {
		uint64_t known = pass->policy_ns + pass->setup_ns + pass->copy_ns;

		pass->other_ns = total > known ? total - known : 0;
		pass->passes = 1;
	}
	vgpu_core_time_add(&core->stats.live.eviction, pass);
}

/* Host memory for every chunk of a new buffer (staged, with the budget
 * reserved), as an eviction pass gives the chunks it sends to the host. */
static int stage_all_on_host(struct vgpu_core *core, struct vgpu_core_buffer *buffer)
{
	for (uint32_t i = 0; i < buffer->chunk_count; i++) {
		struct vgpu_chunk *chunk = &buffer->chunks[i];
		int err = vgpu_chunk_host_reserve(core, chunk->bytes);

		if (!err) {
			err = vgpu_chunk_host_alloc(core, chunk->bytes, false, &chunk->new_host,
			                            &chunk->new_iova);
			if (err)
				vgpu_host_budget_release(&core->host, chunk->bytes);
		}
		if (err) {
			for (uint32_t j = 0; j < i; j++)
				vgpu_chunk_release_staging(core, &buffer->chunks[j]);
			return err;
		}
	}
	return 0;
}

int vgpu_buffer_import_locked(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                              unsigned priority, struct vgpu_buffer_info *out,
                              struct vgpu_error *error)
{
	struct vgpu_core *core = vm->core;
	struct vgpu_core_buffer *buffer;
	int err;

	vgpu_core_assert_locked(core);
	if (!bytes || bytes % core->min_page || gpu_va % core->buffer_align ||
	    priority > VGPU_PRIORITY_MAX)
		return vgpu_error_set(error, -EINVAL, "VM '%s': an imported buffer of %" PRIu64
		                      " bytes at %#" PRIx64 " is misaligned", vm->name, bytes, gpu_va);
	err = alloc_check_cap_locked(vm, bytes);
	if (err)
		return vgpu_error_set(error, err,
		                      "VM '%s': an imported buffer of %" PRIu64 " bytes "
		                      "exceeds the VM's cap here", vm->name, bytes);
	err = vgpu_va_alloc_at(&vm->va, gpu_va, bytes);
	if (err)
		return vgpu_error_set(error, err, "VM '%s': GPU addresses %#" PRIx64 "+%" PRIu64
		                      " are not free for an imported buffer", vm->name, gpu_va,
		                      bytes);
	buffer = buffer_new(vm, gpu_va, bytes, priority);
	err = buffer ? 0 : -ENOMEM;
	for (int location = 0; !err && location < LOC_COUNT; location++)
		err = vgpu_chunk_set_reserve(&vm->sets[location],
		                             vm->sets[location].count + buffer->chunk_count);
	if (!err)
		err = slot_reserve(vm);
	if (!err) {
		err = stage_all_on_host(core, buffer);
		if (err == -ENOMEM || err == -ENOSPC)
			vgpu_error_set(error, err,
			               "VM '%s': no host memory (host budget) for an imported "
			               "buffer of %" PRIu64 " bytes", vm->name, bytes);
	}
	if (!err) {
		err = place_chunks(core, buffer);
		if (err)
			vgpu_error_set(error, err, "VM '%s': cannot map an imported buffer: %s",
			               vm->name,
			               strerror(-err));
	}
	if (err) {
		if (buffer)
			buffer_free_struct(buffer);
		vgpu_va_free(&vm->va, gpu_va, bytes);
		return err;
	}
	alloc_commit(vm, buffer, out);
	vgpu_return_mark_pending(core);
	return 0;
}

int vgpu_core_alloc(struct vgpu_vm *vm, uint64_t bytes, unsigned priority, uint32_t flags,
                    struct vgpu_buffer_info *out, struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_core_buffer *buffer = NULL;
	struct vgpu_core_time pass = { 0 };
	uint64_t start, rounded;
	bool evicted = false;
	int err;

	if (!vm || !out)
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_alloc needs a VM and a place for the buffer info");
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	err = alloc_check_args(vm, bytes, priority, flags, error);
	if (err)
		return err;
	/* Whole GPU pages: a buffer never shares a page with another. */
	rounded = (bytes + core->min_page - 1) / core->min_page * core->min_page;

	start = vgpu_core_now_ns();
	for (;;) {
		vgpu_core_lock_vm(core, vm);
		err = alloc_check_cap_locked(vm, rounded);
		if (!err)
			err = alloc_reserve(vm, rounded, priority, &buffer);
		if (err || !alloc_must_wait_for_pass(core, buffer))
			break;
		alloc_unreserve(buffer);
		buffer = NULL;
		vgpu_core_unlock(core);
		vgpu_pass_wait(core);
	}
	if (!err)
		err = alloc_make_room(vm, buffer, &pass, &evicted, error);
	if (!err)
		err = alloc_place(vm, buffer, error);
	if (!err)
		alloc_commit(vm, buffer, out);
	else if (buffer)
		alloc_unreserve(buffer);

	if (err) {
		vm->alloc_failures++;
		vm->stats_dirty = true;
		if (evicted) /* VRAM may have been freed for nothing: return it */
			vgpu_return_mark_pending(core);
		alloc_error(vm, rounded, err, error);
	}
	if (evicted)
		alloc_account_pass(core, &pass, start, !err);
	if (!err)
		record_latency(vm, vgpu_core_now_ns() - start);
	vgpu_core_unlock(core);
	return err;
}

void vgpu_core_buffer_destroy(struct vgpu_core_buffer *buffer)
{
	struct vgpu_vm *vm = buffer->vm;
	struct vgpu_core *core = vm->core;

	vgpu_core_assert_locked(core);
	/* Unmap and invalidate before any page can be reused. */
	vgpu_hal_as_unmap(vm->as, buffer->gpu_va, buffer->bytes);
	vgpu_hal_as_tlb_invalidate(vm->as);
	for (uint32_t i = 0; i < buffer->chunk_count; i++) {
		struct vgpu_chunk *chunk = &buffer->chunks[i];

		vgpu_chunk_remove(chunk);
		vgpu_vm_account(vm, chunk->location, -(int64_t)chunk->bytes);
		vgpu_chunk_release_memory(core, chunk);
	}
	for (int location = 0; location < LOC_COUNT; location++)
		vgpu_levels_remove(buffer, location);
	vgpu_va_free(&vm->va, buffer->gpu_va, buffer->bytes);
	slot_release(vm, buffer);
	list_del(&buffer->link);
	vm->buffer_count--;
	vm->allocated_bytes -= buffer->bytes;
	core->allocated_bytes -= buffer->bytes;
	vgpu_vm_rekey(vm);
	buffer_free_struct(buffer);
}

int vgpu_core_free(struct vgpu_vm *vm, uint64_t handle, struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_core_buffer *buffer;

	if (!vm)
		return vgpu_error_set(error, -EINVAL, "vgpu_core_free needs a VM");
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	buffer = vgpu_core_buffer_lookup(vm, handle);
	if (!buffer) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -ENOENT,
		                      "VM '%s' has no buffer with handle %#" PRIx64 "; it was never "
		                      "allocated, already freed, or belongs to another VM",
		                      vm->name, handle);
	}
	vgpu_core_buffer_destroy(buffer);
	vgpu_core_unlock(core);
	vgpu_return_mark_pending(core);
	return 0;
}

int vgpu_core_set_priority(struct vgpu_vm *vm, uint64_t handle, unsigned priority,
                           struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_core_buffer *buffer;

	if (!vm)
		return vgpu_error_set(error, -EINVAL, "vgpu_core_set_priority needs a VM");
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	if (priority > VGPU_PRIORITY_MAX) {
		return vgpu_error_set(error, -EINVAL,
		                      "VM '%s': priority %u is out of range; use %d to %d",
		                      vm->name,
		                      priority, VGPU_PRIORITY_MIN, VGPU_PRIORITY_MAX);
	}
	vgpu_core_lock_vm(core, vm);
	buffer = vgpu_core_buffer_lookup(vm, handle);
	if (!buffer) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -ENOENT, "VM '%s' has no buffer with handle %#" PRIx64,
		                      vm->name, handle);
	}
	for (int location = 0; location < LOC_COUNT; location++)
		vgpu_levels_remove(buffer, location);
	buffer->priority = priority;
	for (int location = 0; location < LOC_COUNT; location++)
		vgpu_levels_update(buffer, location);
	vgpu_core_unlock(core);
	return 0;
}

int vgpu_core_buffer_chunks(struct vgpu_vm *vm, uint64_t handle, struct vgpu_chunk_info *out,
                            size_t max, struct vgpu_error *error)
{
	struct vgpu_core *core;
	struct vgpu_core_buffer *buffer;
	int count;

	if (!vm || (max && !out))
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_buffer_chunks needs a VM and, with max > 0, a "
		                      "place for the chunks");
	core = vm->core;
	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	vgpu_core_lock_vm(core, vm);
	buffer = vgpu_core_buffer_lookup(vm, handle);
	if (!buffer) {
		vgpu_core_unlock(core);
		return vgpu_error_set(error, -ENOENT, "VM '%s' has no buffer with handle %#" PRIx64,
		                      vm->name, handle);
	}
	for (uint32_t i = 0; i < buffer->chunk_count && i < max; i++) {
		const struct vgpu_chunk *chunk = &buffer->chunks[i];

		out[i].gpu_va = vgpu_chunk_va(chunk);
		out[i].bytes = chunk->bytes;
		out[i].page_size = chunk->page_size;
		out[i].location = (enum vgpu_chunk_location)chunk->location;
	}
	count = buffer->chunk_count > INT32_MAX ? INT32_MAX : (int)buffer->chunk_count;
	vgpu_core_unlock(core);
	return count;
}
