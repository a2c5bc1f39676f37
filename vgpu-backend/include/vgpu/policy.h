/* SPDX-License-Identifier: MIT */
/*
 * policy.h - eviction policies: which chunk of a victim VM to evict, and
 * which evicted chunk of a winner VM to bring back (thesis §5.2.2, §5.3).
 *
 * The core chooses the VM (victim or winner, by resident bytes ÷ weight);
 * the policy only chooses a chunk within that VM. Policies see the VM
 * through the accessors below, which the core keeps up to date in O(1) per
 * change:
 *
 *   eviction candidates  the VM's resident chunks not yet selected in this
 *                        pass, plus, when the VM is the requester, the
 *                        chunks of the buffer being allocated ("pending",
 *                        not in VRAM yet);
 *   return candidates    the VM's evicted chunks not yet selected.
 *
 * Candidates are also grouped by buffer, and buffers by priority hint
 * (0..15), so "lowest-priority buffer, random chunk within" is O(1).
 *
 * Callbacks run with the core's allocation lock held. They must return a
 * candidate of the given VM (or NULL from pick_return when nothing fits);
 * the core validates the answer and falls back to a random candidate if a
 * policy misbehaves.
 */
#ifndef VGPU_POLICY_H
#define VGPU_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_vm;
struct vgpu_core_buffer;
struct vgpu_chunk;
struct vgpu_policy_context; /* the core's state a policy may use in a pass */

struct vgpu_policy_ops {
	const char *name;
	/* May the policy run on a GPU with these capabilities? 0, or -ENOTSUP
	 * with the reason and what to do in error (vgpu/error.h). NULL =
	 * always. */
	int (*check)(const struct vgpu_hal_caps *caps, struct vgpu_error *error);
	/* One of victim's eviction candidates (there is at least one). */
	struct vgpu_chunk *(*pick_evict)(struct vgpu_policy_context *ctx, struct vgpu_vm *victim);
	/* One of winner's return candidates of at most max_bytes, or NULL. */
	struct vgpu_chunk *(*pick_return)(struct vgpu_policy_context *ctx, struct vgpu_vm *winner,
	                                  uint64_t max_bytes);
};

extern const struct vgpu_policy_ops vgpu_policy_random;   /* thesis §5.2.2 "random" */
extern const struct vgpu_policy_ops vgpu_policy_priority; /* §5.3 priority-based buffer selection */
extern const struct vgpu_policy_ops vgpu_policy_refbits;  /* CLOCK over reference bits (§5.4) */

/* The built-in policy called name, or NULL. */
const struct vgpu_policy_ops *vgpu_policy_find(const char *name);

/* ---- what a policy may look at ---------------------------------------- */

/* A uniformly distributed number in [0, bound) (bound > 0) from the core's
 * seeded generator. */
uint64_t vgpu_policy_random_below(struct vgpu_policy_context *ctx, uint64_t bound);

size_t vgpu_policy_evict_count(const struct vgpu_vm *vm);
struct vgpu_chunk *vgpu_policy_evict_at(const struct vgpu_vm *vm, size_t index);
size_t vgpu_policy_return_count(const struct vgpu_vm *vm);
struct vgpu_chunk *vgpu_policy_return_at(const struct vgpu_vm *vm, size_t index);

/* The lowest-priority buffer holding eviction candidates (ties: the one that
 * got its candidates first), and the highest-priority buffer holding return
 * candidates (ties: likewise). NULL when there is none. */
struct vgpu_core_buffer *vgpu_policy_lowest_priority_buffer(const struct vgpu_vm *vm);
struct vgpu_core_buffer *vgpu_policy_highest_priority_buffer(const struct vgpu_vm *vm);

size_t vgpu_policy_buffer_evict_count(const struct vgpu_core_buffer *buffer);
struct vgpu_chunk *vgpu_policy_buffer_evict_at(const struct vgpu_core_buffer *buffer, size_t index);
size_t vgpu_policy_buffer_return_count(const struct vgpu_core_buffer *buffer);
struct vgpu_chunk *vgpu_policy_buffer_return_at(const struct vgpu_core_buffer *buffer,
                                                size_t index);
unsigned vgpu_policy_buffer_priority(const struct vgpu_core_buffer *buffer);

uint64_t vgpu_policy_chunk_va(const struct vgpu_chunk *chunk);
uint64_t vgpu_policy_chunk_bytes(const struct vgpu_chunk *chunk);
bool vgpu_policy_chunk_is_pending(const struct vgpu_chunk *chunk);

/*
 * Reference bits (only when the GPU has them): *referenced = whether the
 * chunk was accessed since the last test, then clear. A pending chunk counts
 * as referenced on its first test (CLOCK gives new pages a second chance).
 * -ENOTSUP without reference bits.
 */
int vgpu_policy_test_and_clear_referenced(struct vgpu_policy_context *ctx,
                                          struct vgpu_chunk *chunk, bool *referenced);

/* A per-VM cursor a policy may keep between calls (the CLOCK hand). */
size_t *vgpu_policy_vm_cursor(struct vgpu_vm *vm);

/* Any return candidate of at most max_bytes, scanning from index start
 * (wrapping); NULL if none fits. For policies whose first choice does not
 * fit into free VRAM. */
struct vgpu_chunk *vgpu_policy_return_first_fit(const struct vgpu_vm *vm, size_t start,
                                                uint64_t max_bytes);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_POLICY_H */
