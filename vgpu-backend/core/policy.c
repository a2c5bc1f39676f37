// SPDX-License-Identifier: MIT
/* policy.c - the built-in policies by name, and what policies may see. */
#include <errno.h>
#include <string.h>

#include "chunk.h"
#include "core_internal.h"

static const struct vgpu_policy_ops *const builtin_policies[] = {
	&vgpu_policy_random,
	&vgpu_policy_priority,
	&vgpu_policy_refbits,
};

const struct vgpu_policy_ops *vgpu_policy_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(builtin_policies) / sizeof(builtin_policies[0]); i++)
		if (!strcmp(builtin_policies[i]->name, name))
			return builtin_policies[i];
	return NULL;
}

uint64_t vgpu_policy_random_below(struct vgpu_policy_context *ctx, uint64_t bound)
{
	return vgpu_rng_below(&ctx->rng, bound);
}

static const struct vgpu_chunk_set *vm_set(const struct vgpu_vm *vm, int location)
{
	return &vm->sets[location];
}

size_t vgpu_policy_evict_count(const struct vgpu_vm *vm)
{
	return vm_set(vm, LOC_RESIDENT)->candidates;
}

struct vgpu_chunk *vgpu_policy_evict_at(const struct vgpu_vm *vm, size_t index)
{
	const struct vgpu_chunk_set *set = vm_set(vm, LOC_RESIDENT);

	return index < set->candidates ? set->items[index] : NULL;
}

size_t vgpu_policy_return_count(const struct vgpu_vm *vm)
{
	return vm_set(vm, LOC_EVICTED)->candidates;
}

struct vgpu_chunk *vgpu_policy_return_at(const struct vgpu_vm *vm, size_t index)
{
	const struct vgpu_chunk_set *set = vm_set(vm, LOC_EVICTED);

	return index < set->candidates ? set->items[index] : NULL;
}

static struct vgpu_core_buffer *level_head(const struct vgpu_vm *vm, int location, int priority)
{
	const struct list_head *level = &vm->levels[location].level[priority];

	return list_entry(level->next, struct vgpu_core_buffer, level_link[location]);
}

struct vgpu_core_buffer *vgpu_policy_lowest_priority_buffer(const struct vgpu_vm *vm)
{
	uint32_t mask = vm->levels[LOC_RESIDENT].mask;

	if (!mask)
		return NULL;
	return level_head(vm, LOC_RESIDENT, __builtin_ctz(mask));
}

struct vgpu_core_buffer *vgpu_policy_highest_priority_buffer(const struct vgpu_vm *vm)
{
	uint32_t mask = vm->levels[LOC_EVICTED].mask;

	if (!mask)
		return NULL;
	return level_head(vm, LOC_EVICTED, 31 - __builtin_clz(mask));
}

size_t vgpu_policy_buffer_evict_count(const struct vgpu_core_buffer *buffer)
{
	return buffer->sets[LOC_RESIDENT].candidates;
}

struct vgpu_chunk *vgpu_policy_buffer_evict_at(const struct vgpu_core_buffer *buffer, size_t index)
{
	const struct vgpu_chunk_set *set = &buffer->sets[LOC_RESIDENT];

	return index < set->candidates ? set->items[index] : NULL;
}

size_t vgpu_policy_buffer_return_count(const struct vgpu_core_buffer *buffer)
{
	return buffer->sets[LOC_EVICTED].candidates;
}

struct vgpu_chunk *vgpu_policy_buffer_return_at(const struct vgpu_core_buffer *buffer, size_t index)
{
	const struct vgpu_chunk_set *set = &buffer->sets[LOC_EVICTED];

	return index < set->candidates ? set->items[index] : NULL;
}

unsigned vgpu_policy_buffer_priority(const struct vgpu_core_buffer *buffer)
{
	return buffer->priority;
}

uint64_t vgpu_policy_chunk_va(const struct vgpu_chunk *chunk)
{
	return vgpu_chunk_va(chunk);
}

uint64_t vgpu_policy_chunk_bytes(const struct vgpu_chunk *chunk)
{
	return chunk->bytes;
}

bool vgpu_policy_chunk_is_pending(const struct vgpu_chunk *chunk)
{
	return chunk->pending;
}

int vgpu_policy_test_and_clear_referenced(struct vgpu_policy_context *ctx,
                                          struct vgpu_chunk *chunk, bool *referenced)
{
	struct vgpu_core *core = ctx->core;
	bool hardware = false;
	int err;

	if (!core->caps.has_reference_bits)
		return -ENOTSUP;
	*referenced = chunk->referenced;
	chunk->referenced = false;
	if (chunk->pending)
		return 0; /* not mapped yet */
	err = vgpu_hal_as_test_and_clear_referenced(chunk->buffer->vm->as, vgpu_chunk_va(chunk),
	                                            chunk->bytes, &hardware);
	if (err)
		return err;
	*referenced = *referenced || hardware;
	return 0;
}

size_t *vgpu_policy_vm_cursor(struct vgpu_vm *vm)
{
	return &vm->cursor;
}

struct vgpu_chunk *vgpu_policy_return_first_fit(const struct vgpu_vm *vm, size_t start,
                                                uint64_t max_bytes)
{
	size_t count = vgpu_policy_return_count(vm);

	for (size_t i = 0; i < count; i++) {
		struct vgpu_chunk *chunk = vgpu_policy_return_at(vm, (start + i) % count);

		if (chunk->bytes <= max_bytes)
			return chunk;
	}
	return NULL;
}
