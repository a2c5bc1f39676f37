// SPDX-License-Identifier: MIT
/*
 * policy_refbits.c - CLOCK (second chance) over the GPU's reference bits,
 * the policy the thesis's hardware wishlist asks for (§5.4). Only on GPUs
 * with caps.has_reference_bits; the core refuses to configure it otherwise.
 *
 * The hand sweeps the victim's eviction candidates: a chunk whose pages were
 * referenced since the last sweep gets its bits cleared and a second chance;
 * the first unreferenced chunk is evicted. Chunks of the buffer being
 * allocated count as referenced once (new pages enter CLOCK referenced).
 * The sweep is bounded to two rounds (the GPU may reference chunks again
 * while we look); then the chunk under the hand is taken. Returns prefer
 * evicted chunks that were referenced (they are hot over PCIe).
 */
#include <errno.h>
#include <stdio.h>

#include "vgpu/policy.h"

static int refbits_check(const struct vgpu_hal_caps *caps, struct vgpu_error *error)
{
	if (caps->has_reference_bits)
		return 0;
	return vgpu_error_set(
	        error, -ENOTSUP,
	        "policy 'refbits' needs reference bits in the GPU's page tables, and GPU '%s' has "
	        "none; use policy 'random' or 'priority', or enable reference bits in the GPU",
	        caps->name ? caps->name : "?");
}

static struct vgpu_chunk *refbits_pick_evict(struct vgpu_policy_context *ctx,
                                             struct vgpu_vm *victim)
{
	size_t count = vgpu_policy_evict_count(victim);
	size_t *hand = vgpu_policy_vm_cursor(victim);

	for (size_t step = 0; step < 2 * count; step++) {
		struct vgpu_chunk *chunk;
		bool referenced = false;

		*hand %= count;
		chunk = vgpu_policy_evict_at(victim, *hand);
		if (vgpu_policy_test_and_clear_referenced(ctx, chunk, &referenced) || !referenced)
			return chunk; /* selecting it moves another candidate under the hand */
		(*hand)++;
	}
	*hand %= count;
	return vgpu_policy_evict_at(victim, *hand);
}

static struct vgpu_chunk *refbits_pick_return(struct vgpu_policy_context *ctx,
                                              struct vgpu_vm *winner, uint64_t max_bytes)
{
	size_t count = vgpu_policy_return_count(winner);

	for (size_t i = 0; i < count; i++) {
		struct vgpu_chunk *chunk = vgpu_policy_return_at(winner, i);
		bool referenced = false;

		if (vgpu_policy_chunk_bytes(chunk) > max_bytes)
			continue;
		if (!vgpu_policy_test_and_clear_referenced(ctx, chunk, &referenced) && referenced)
			return chunk;
	}
	if (!count)
		return NULL;
	return vgpu_policy_return_first_fit(winner, vgpu_policy_random_below(ctx, count), max_bytes);
}

const struct vgpu_policy_ops vgpu_policy_refbits = {
	.name = "refbits",
	.check = refbits_check,
	.pick_evict = refbits_pick_evict,
	.pick_return = refbits_pick_return,
};
