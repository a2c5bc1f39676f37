// SPDX-License-Identifier: MIT
/*
 * policy_priority.c - priority-based buffer selection (thesis §5.2.2, §5.3):
 * the victim's lowest-priority buffer that still has candidates, then a
 * random chunk within it. Hints are 0..15 (default 7). Between buffers of
 * equal priority, the one that got its candidates first. Returns the
 * reverse way: the winner's highest-priority buffer with evicted chunks, a
 * random chunk within it that fits (else any fitting chunk of the winner).
 */
#include "vgpu/policy.h"

static struct vgpu_chunk *priority_pick_evict(struct vgpu_policy_context *ctx,
                                              struct vgpu_vm *victim)
{
	struct vgpu_core_buffer *buffer = vgpu_policy_lowest_priority_buffer(victim);
	size_t count;

	if (!buffer)
		return NULL;
	count = vgpu_policy_buffer_evict_count(buffer);
	return vgpu_policy_buffer_evict_at(buffer, vgpu_policy_random_below(ctx, count));
}

static struct vgpu_chunk *priority_pick_return(struct vgpu_policy_context *ctx,
                                               struct vgpu_vm *winner, uint64_t max_bytes)
{
	struct vgpu_core_buffer *buffer = vgpu_policy_highest_priority_buffer(winner);
	struct vgpu_chunk *chunk;
	size_t count;

	if (!buffer)
		return NULL;
	count = vgpu_policy_buffer_return_count(buffer);
	chunk = vgpu_policy_buffer_return_at(buffer, vgpu_policy_random_below(ctx, count));
	if (chunk && vgpu_policy_chunk_bytes(chunk) <= max_bytes)
		return chunk;
	/* Free VRAM is smaller than a chunk: try the buffer's other chunks,
	 * then anything of the winner that fits. */
	for (size_t i = 0; i < count; i++) {
		chunk = vgpu_policy_buffer_return_at(buffer, i);
		if (vgpu_policy_chunk_bytes(chunk) <= max_bytes)
			return chunk;
	}
	return vgpu_policy_return_first_fit(winner, 0, max_bytes);
}

const struct vgpu_policy_ops vgpu_policy_priority = {
	.name = "priority",
	.check = NULL,
	.pick_evict = priority_pick_evict,
	.pick_return = priority_pick_return,
};
