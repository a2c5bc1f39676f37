// SPDX-License-Identifier: MIT
/*
 * policy_random.c - random chunk selection (thesis §5.2.2, paper §4.3):
 * a uniformly random candidate of the victim, in O(1). Returns: a random
 * evicted chunk of the winner that fits (the paper's §4.5 return choice).
 */
#include "vgpu/policy.h"

static struct vgpu_chunk *random_pick_evict(struct vgpu_policy_context *ctx,
                                            struct vgpu_vm *victim)
{
	size_t count = vgpu_policy_evict_count(victim);

	return vgpu_policy_evict_at(victim, vgpu_policy_random_below(ctx, count));
}

static struct vgpu_chunk *random_pick_return(struct vgpu_policy_context *ctx,
                                             struct vgpu_vm *winner, uint64_t max_bytes)
{
	size_t count = vgpu_policy_return_count(winner);
	size_t start;

	if (!count)
		return NULL;
	start = vgpu_policy_random_below(ctx, count);
	return vgpu_policy_return_first_fit(winner, start, max_bytes);
}

const struct vgpu_policy_ops vgpu_policy_random = {
	.name = "random",
	.check = NULL,
	.pick_evict = random_pick_evict,
	.pick_return = random_pick_return,
};
