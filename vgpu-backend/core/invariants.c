// SPDX-License-Identifier: MIT
/*
 * invariants.c - vgpu_core_check_invariants: the core's bookkeeping agrees
 * with itself and with the GPU. Tests call it after every step.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buffer.h"
#include "chunk.h"
#include "core_internal.h"
#include "lock.h"

struct check {
	struct vgpu_error *error;
	int err;
};

static bool fail(struct check *check, const char *format, ...) __attribute__((format(printf, 2, 3)));

static bool fail(struct check *check, const char *format, ...)
{
	va_list args;

	if (check->err)
		return false;
	check->err = -EINVAL;
	va_start(args, format);
	vgpu_error_vset(check->error, -EINVAL, format, args);
	va_end(args);
	return false;
}

/* The chunk's first and last bytes are reachable through its VM's page
 * tables and, when evicted, come from its own host buffer. */
static bool check_mapping(struct check *check, struct vgpu_core *core, struct vgpu_chunk *chunk)
{
	struct vgpu_vm *vm = chunk->buffer->vm;
	uint64_t va = vgpu_chunk_va(chunk), offsets[2] = { 0, chunk->bytes - 8 };
	const uint8_t *host = NULL;

	if (chunk->location == LOC_EVICTED)
		host = vgpu_hal_host_cpu_pointer(core->hal, chunk->host);
	for (int i = 0; i < 2; i++) {
		uint8_t through_gpu[8];
		int err = vgpu_hal_as_read(vm->as, va + offsets[i], through_gpu, sizeof(through_gpu));

		if (err)
			return fail(check, "VM '%s': chunk at %#" PRIx64 " (+%#" PRIx64 ") is not mapped "
			            "(%s)", vm->name, va, offsets[i], strerror(-err));
		if (host && memcmp(through_gpu, host + offsets[i], sizeof(through_gpu)))
			return fail(check, "VM '%s': evicted chunk at %#" PRIx64 " does not map its "
			            "host buffer: its PTEs point elsewhere", vm->name, va);
	}
	return true;
}

static bool has_page_size(uint32_t mask, uint32_t page_size)
{
	return page_size && vgpu_page_size_largest_dividing(mask, page_size) == page_size;
}

static bool check_chunk(struct check *check, struct vgpu_core *core, struct vgpu_chunk *chunk,
                        uint64_t sums[LOC_COUNT], uint64_t counts[LOC_COUNT])
{
	struct vgpu_core_buffer *buffer = chunk->buffer;
	struct vgpu_vm *vm = buffer->vm;
	int location = chunk->location;
	int other = location == LOC_RESIDENT ? LOC_EVICTED : LOC_RESIDENT;
	uint64_t va = vgpu_chunk_va(chunk);

	if (location != LOC_RESIDENT && location != LOC_EVICTED)
		return fail(check, "VM '%s': chunk at %#" PRIx64 " has location %d", vm->name, va,
		            location);
	if (chunk->pending || chunk->new_host || chunk->new_vram)
		return fail(check, "VM '%s': chunk at %#" PRIx64 " is still pending or staged after "
		            "a pass", vm->name, va);
	if (!vgpu_chunk_set_contains(&vm->sets[location], chunk) ||
	    !vgpu_chunk_set_contains(&buffer->sets[location], chunk))
		return fail(check, "VM '%s': %s chunk at %#" PRIx64 " is missing from its set",
		            vm->name, location == LOC_RESIDENT ? "resident" : "evicted", va);
	if (vgpu_chunk_set_contains(&vm->sets[other], chunk) ||
	    vgpu_chunk_set_contains(&buffer->sets[other], chunk))
		return fail(check, "VM '%s': chunk at %#" PRIx64 " is in both sets", vm->name, va);
	if (vgpu_chunk_is_selected(chunk))
		return fail(check, "VM '%s': chunk at %#" PRIx64 " is still selected", vm->name, va);
	if (location == LOC_RESIDENT && (!chunk->vram || chunk->host))
		return fail(check, "VM '%s': resident chunk at %#" PRIx64 " has no VRAM or has host "
		            "memory", vm->name, va);
	if (location == LOC_EVICTED && (chunk->vram || !chunk->host))
		return fail(check, "VM '%s': evicted chunk at %#" PRIx64 " has VRAM or no host "
		            "memory", vm->name, va);
	if (location == LOC_RESIDENT && (chunk->bytes % chunk->vram_page_size ||
	                                 !has_page_size(core->caps.page_size_mask,
	                                                chunk->vram_page_size)))
		return fail(check, "VM '%s': chunk at %#" PRIx64 " is not a multiple of its pages "
		            "of %" PRIu32 " bytes, or the GPU has no such pages", vm->name, va,
		            chunk->vram_page_size);
	if (!chunk->bytes || chunk->bytes > vm->chunk_bytes || chunk->bytes % core->min_page)
		return fail(check, "VM '%s': chunk at %#" PRIx64 " has size %" PRIu64, vm->name, va,
		            chunk->bytes);
	if (chunk->page_size != vgpu_page_size_largest_dividing(core->caps.page_size_mask,
	                                                        va | chunk->bytes))
		return fail(check, "VM '%s': chunk at %#" PRIx64 " has page size %" PRIu32 ", not "
		            "the largest its address and size "
		            "allow", vm->name, va, chunk->page_size);
	sums[location] += chunk->bytes;
	counts[location]++;
	return check_mapping(check, core, chunk);
}

static bool check_buffer(struct check *check, struct vgpu_core *core,
                         struct vgpu_core_buffer *buffer, uint64_t sums[LOC_COUNT],
                         uint64_t counts[LOC_COUNT])
{
	struct vgpu_vm *vm = buffer->vm;
	uint64_t offset = 0;

	if (vgpu_core_buffer_lookup(vm, buffer->handle) != buffer)
		return fail(check, "VM '%s': buffer at %#" PRIx64 " is not found by its handle",
		            vm->name, buffer->gpu_va);
	for (uint32_t i = 0; i < buffer->chunk_count; i++) {
		struct vgpu_chunk *chunk = &buffer->chunks[i];

		if (chunk->offset != offset || (i + 1 < buffer->chunk_count &&
		                                chunk->bytes != vm->chunk_bytes))
			return fail(check, "VM '%s': buffer at %#" PRIx64 " is not cut into chunks of "
			            "%" PRIu64 " bytes with the remainder at the tail", vm->name,
			            buffer->gpu_va, vm->chunk_bytes);
		offset += chunk->bytes;
		if (!check_chunk(check, core, chunk, sums, counts))
			return false;
	}
	if (offset != buffer->bytes)
		return fail(check, "VM '%s': buffer at %#" PRIx64 " chunks cover %" PRIu64 " of %"
		            PRIu64 " bytes", vm->name, buffer->gpu_va, offset, buffer->bytes);
	for (int location = 0; location < LOC_COUNT; location++) {
		bool listed = buffer->in_level[location];
		bool has = buffer->sets[location].candidates > 0;

		if (listed != has)
			return fail(check, "VM '%s': buffer at %#" PRIx64 " priority level listing is "
			            "stale", vm->name, buffer->gpu_va);
	}
	return true;
}

static bool check_vm(struct check *check, struct vgpu_core *core, struct vgpu_vm *vm,
                     uint64_t totals[LOC_COUNT])
{
	uint64_t sums[LOC_COUNT] = { 0 }, counts[LOC_COUNT] = { 0 }, allocated = 0, buffers = 0;
	struct list_head *pos;

	list_for_each(pos, &vm->buffers) {
		struct vgpu_core_buffer *buffer = list_entry(pos, struct vgpu_core_buffer, link);

		if (buffer->vm != vm)
			return fail(check, "VM '%s' lists a buffer of another VM", vm->name);
		if (!check_buffer(check, core, buffer, sums, counts))
			return false;
		allocated += buffer->bytes;
		buffers++;
	}
	for (int location = 0; location < LOC_COUNT; location++) {
		if (vm->sets[location].count != counts[location] ||
		    vm->sets[location].candidates != vm->sets[location].count)
			return fail(check, "VM '%s': its %s set holds %zu chunks (%zu unselected), its "
			            "buffers %" PRIu64, vm->name,
			            location == LOC_RESIDENT ? "resident" : "evicted",
			            vm->sets[location].count, vm->sets[location].candidates,
			            counts[location]);
	}
	if (vm->resident_bytes != sums[LOC_RESIDENT] || vm->evicted_bytes != sums[LOC_EVICTED])
		return fail(check, "VM '%s': counters say %" PRIu64 " resident + %" PRIu64 " evicted, "
		            "its chunks %" PRIu64 " + %" PRIu64, vm->name, vm->resident_bytes,
		            vm->evicted_bytes, sums[LOC_RESIDENT], sums[LOC_EVICTED]);
	if (vm->allocated_bytes != allocated || allocated != sums[0] + sums[1] ||
	    vm->buffer_count != buffers)
		return fail(check, "VM '%s': allocated %" PRIu64 " but its buffers hold %" PRIu64,
		            vm->name, vm->allocated_bytes, allocated);
	if (vm->cap_bytes && vm->allocated_bytes > vm->cap_bytes)
		return fail(check, "VM '%s' holds %" PRIu64 " bytes, above its cap %" PRIu64, vm->name,
		            vm->allocated_bytes, vm->cap_bytes);
	if (vm->victim.bytes != vm->resident_bytes || vm->victim.weight != vm->weight ||
	    vm->victim.index == VGPU_VICTIM_NOT_QUEUED)
		return fail(check, "VM '%s': its victim key is stale (%" PRIu64 "/%u, resident %"
		            PRIu64 "/%u)", vm->name, vm->victim.bytes, vm->victim.weight,
		            vm->resident_bytes, vm->weight);
	if (vm->va.allocated_bytes != allocated + vm->reserved_va_bytes)
		return fail(check, "VM '%s': %" PRIu64 " bytes of address space in use for %" PRIu64
		            " allocated and %" PRIu64 " reserved", vm->name, vm->va.allocated_bytes,
		            allocated, vm->reserved_va_bytes);
	for (int location = 0; location < LOC_COUNT; location++)
		for (int p = 0; p < VGPU_PRIORITY_LEVELS; p++)
			if (!list_empty(&vm->levels[location].level[p]) !=
			    !!(vm->levels[location].mask & (1u << p)))
				return fail(check, "VM '%s': priority level mask is stale", vm->name);
	totals[LOC_RESIDENT] += sums[LOC_RESIDENT];
	totals[LOC_EVICTED] += sums[LOC_EVICTED];
	return true;
}

int vgpu_core_check_invariants(struct vgpu_core *core, struct vgpu_error *error)
{
	struct check check = { .error = error, .err = 0 };
	uint64_t totals[LOC_COUNT] = { 0 }, allocated = 0, free_bytes;
	struct list_head *pos;
	uint32_t vms = 0;

	vgpu_core_lock(core);
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

		if (!check_vm(&check, core, vm, totals))
			goto out;
		allocated += vm->allocated_bytes;
		vms++;
	}
	if (vms != core->vm_count || core->victims.count != vms)
		fail(&check, "%u VMs listed, %u counted, %zu in the victim heap", vms,
		     core->vm_count, core->victims.count);
	else if (!vgpu_victim_heap_valid(&core->victims))
		fail(&check, "the victim heap is out of order");
	else if (core->resident_bytes != totals[LOC_RESIDENT] ||
	         core->evicted_bytes != totals[LOC_EVICTED] || core->allocated_bytes != allocated)
		fail(&check, "core counters (%" PRIu64 " resident, %" PRIu64 " evicted, %" PRIu64
		     " allocated) differ from the VMs' sums "
		     "(%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")",
		     core->resident_bytes, core->evicted_bytes, core->allocated_bytes,
		     totals[LOC_RESIDENT], totals[LOC_EVICTED], allocated);
	else if ((free_bytes = vgpu_hal_vram_free_bytes(core->hal) +
	                       vgpu_hal_vram_held_bytes(core->hal)) + core->resident_bytes !=
	         core->caps.vram_bytes)
		fail(&check, "free VRAM %" PRIu64 " (held back included) + resident %" PRIu64
		     " != VRAM %" PRIu64, free_bytes, core->resident_bytes, core->caps.vram_bytes);
	else if (core->host.used != core->evicted_bytes)
		fail(&check, "host memory in use %" PRIu64 " != evicted bytes %" PRIu64,
		     core->host.used, core->evicted_bytes);
	else if (core->host.limit && core->host.used + core->host_cache.bytes > core->host.limit)
		fail(&check, "host memory in use %" PRIu64 " + cached %" PRIu64 " exceeds the "
		     "budget %" PRIu64, core->host.used, core->host_cache.bytes, core->host.limit);
	else if (core->host_cache.bytes > core->host_cache.limit)
		fail(&check, "the host cache holds %" PRIu64 " bytes, above its limit %" PRIu64,
		     core->host_cache.bytes, core->host_cache.limit);
	else if (core->pass.touched_count)
		fail(&check, "a pass left %zu VMs marked", core->pass.touched_count);
out:
	vgpu_core_unlock(core);
	return check.err;
}
