// SPDX-License-Identifier: MIT
/*
 * eviction.c - the policy pass that makes room for an allocation (thesis
 * §5.3.4, paper §4.3) and the moves it decides.
 *
 * The new buffer's chunks join the requester's eviction candidates, so the
 * request counts as already belonging to it. Then, until free VRAM plus the
 * selected chunks cover what is left of the request: the victim is the top
 * of the core's heap (largest candidate bytes ÷ weight, ties to the lower
 * VM id), the policy picks one of its candidates, the chunk is marked
 * selected (one swap in its sets) and the victim's key drops by the chunk's
 * size (one O(log n) heap update). k chunks over n VMs cost O(k log n).
 * A selected chunk of the new buffer reduces the request instead: it will be
 * placed in host memory directly, with no copy. With config.whole_buffers
 * the rest of the picked chunk's buffer is selected with it (whole-buffer
 * eviction, the baseline of thesis §6.2).
 *
 * Before anything moves, the host budget must hold every selected chunk and
 * each gets its host memory (pinned, IOMMU-mapped); if either fails the
 * allocation fails with -ENOMEM and nothing has changed. Then the victims'
 * chunks move one VM at a time (relocation.c), dropping the allocation lock
 * while a victim's channels drain and resume (pass.c).
 */
#include "eviction.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "clock.h"
#include "core_internal.h"
#include "error.h"
#include "pass.h"
#include "relocation.h"
#include "vm.h"

static bool is_candidate(const struct vgpu_vm *victim, const struct vgpu_chunk *chunk)
{
	return chunk && chunk->buffer->vm == victim && chunk->location == LOC_RESIDENT &&
	       vgpu_chunk_set_contains(&victim->sets[LOC_RESIDENT], chunk) &&
	       !vgpu_chunk_is_selected(chunk);
}

static struct vgpu_chunk *pick_chunk(struct vgpu_core *core, struct vgpu_vm *victim)
{
	struct vgpu_chunk *chunk = core->policy->pick_evict(&core->policy_context, victim);
	size_t count;

	if (is_candidate(victim, chunk))
		return chunk;
	/* A custom policy answered nonsense: fall back to random. */
	count = vgpu_policy_evict_count(victim);
	return vgpu_policy_evict_at(victim, vgpu_rng_below(&core->policy_context.rng, count));
}

/* Select chunk for the host; its VM's key drops by its size (the caller
 * updates the heap). */
static void select_chunk(struct vgpu_chunk *chunk, uint64_t *need, uint64_t *available,
                         uint64_t *host_bytes)
{
	vgpu_chunk_select(chunk);
	chunk->buffer->vm->victim.bytes -= chunk->bytes;
	if (chunk->pending)
		*need -= chunk->bytes;
	else
		*available += chunk->bytes;
	*host_bytes += chunk->bytes;
}

/* Whole-buffer granularity: the buffer's other resident chunks go too.
 * Selecting one swaps it out of the buffer's candidates, so the first
 * candidate is taken until none is left. */
static void select_rest_of_buffer(struct vgpu_core_buffer *buffer, uint64_t *need,
                                  uint64_t *available, uint64_t *host_bytes)
{
	while (vgpu_policy_buffer_evict_count(buffer)) {
		select_chunk(vgpu_policy_buffer_evict_at(buffer, 0), need, available,
		             host_bytes);
	}
}

static struct vgpu_chunk *first_selected(struct vgpu_vm *vm, int location)
{
	struct vgpu_chunk_set *set = &vm->sets[location];

	return set->candidates < set->count ? set->items[set->candidates] : NULL;
}

static int stage_host_memory(struct vgpu_core *core, struct vgpu_vm *requester,
                             struct vgpu_error *error)
{
	for (size_t v = 0; v < core->pass.touched_count; v++) {
		struct vgpu_chunk_set *set = &core->pass.touched[v]->sets[LOC_RESIDENT];

		for (size_t i = set->candidates; i < set->count; i++) {
			struct vgpu_chunk *chunk = set->items[i];
			int err;

			vgpu_chunk_host_reserve(core, chunk->bytes); /* checked */
			/* Chunks of the new buffer get zeroed memory: nothing is
			 * copied over it. */
			err = vgpu_chunk_host_alloc(core, chunk->bytes, !chunk->pending,
			                            &chunk->new_host, &chunk->new_iova);
			if (err) {
				char size[32];

				vgpu_host_budget_release(&core->host, chunk->bytes);
				chunk->new_host = NULL;
				return vgpu_error_set(
				        error, err,
				        "VM '%s': the host cannot provide %s of pinned, "
				        "IOMMU-mapped memory for an evicted chunk (%s); free host "
				        "memory or lower the host budget",
				        requester->name,
				        vgpu_core_format_size(chunk->bytes, size, sizeof(size)),
				        strerror(-err));
			}
		}
	}
	return 0;
}

static int move_victims(struct vgpu_core *core, struct vgpu_core_time *time,
                        struct vgpu_error *error)
{
	for (size_t v = 0; v < core->pass.touched_count; v++) {
		struct vgpu_vm *vm = core->pass.touched[v];
		struct vgpu_chunk_set *set = &vm->sets[LOC_RESIDENT];
		size_t selected = vgpu_chunk_set_selected(set), count = 0;
		struct vgpu_chunk **chunks;
		int err;

		if (!selected)
			continue;
		chunks = malloc(selected * sizeof(*chunks));
		if (!chunks)
			return vgpu_error_set(error, -ENOMEM,
			                      "VM '%s': out of memory for the list of %zu chunks "
			                      "to evict",
			                      vm->name, selected);
		for (size_t i = set->candidates; i < set->count; i++)
			if (!set->items[i]->pending)
				chunks[count++] = set->items[i];
		err = count ? vgpu_relocate_vm(core, vm, chunks, count, time, error) : 0;
		free(chunks);
		if (err)
			return err;
	}
	return 0;
}

/* Unselect what did not move, drop the pending chunks from the sets (the
 * caller places them), restore the victims' keys. */
static void finish_pass(struct vgpu_core *core, struct vgpu_core_buffer *pending, bool keep_staging)
{
	for (size_t v = 0; v < core->pass.touched_count; v++) {
		struct vgpu_vm *vm = core->pass.touched[v];
		struct vgpu_chunk *chunk;

		while ((chunk = first_selected(vm, LOC_RESIDENT))) {
			if (!chunk->pending || !keep_staging)
				vgpu_chunk_release_staging(core, chunk);
			vgpu_chunk_unselect(chunk);
		}
	}
	for (uint32_t i = 0; i < pending->chunk_count; i++) {
		vgpu_chunk_remove(&pending->chunks[i]);
		pending->chunks[i].pending = false;
	}
	for (size_t v = 0; v < core->pass.touched_count; v++)
		vgpu_vm_rekey(core->pass.touched[v]);
	vgpu_pass_untouch_all_locked(core);
	vgpu_pass_end_locked(core);
}

int vgpu_evict_for(struct vgpu_core *core, struct vgpu_vm *requester,
                   struct vgpu_core_buffer *pending, uint64_t free_bytes,
                   struct vgpu_core_time *time, struct vgpu_error *error)
{
	uint64_t start = vgpu_core_now_ns(), mark;
	uint64_t need = pending->bytes, available = free_bytes, host_bytes = 0;
	int err = 0;

	vgpu_pass_begin_locked(core);
	for (uint32_t i = 0; i < pending->chunk_count; i++) {
		struct vgpu_chunk *chunk = &pending->chunks[i];

		chunk->pending = true;
		chunk->referenced = true;
		chunk->location = LOC_RESIDENT;
		vgpu_chunk_insert(chunk); /* capacity reserved by the caller */
	}
	requester->victim.bytes += pending->bytes;
	vgpu_victim_heap_update(&core->victims, &requester->victim);
	vgpu_pass_touch_locked(core, requester);

	while (available < need) {
		struct vgpu_victim_node *node = vgpu_victim_heap_top(&core->victims);
		struct vgpu_vm *victim;
		struct vgpu_chunk *chunk;

		if (!node || !node->bytes || !node->weight) {
			err = -ENOMEM; /* cannot happen: the pending chunks are candidates */
			vgpu_error_set(error, err, "VM '%s': no chunk left to evict",
			               requester->name);
			break;
		}
		victim = container_of(node, struct vgpu_vm, victim);
		chunk = pick_chunk(core, victim);
		vgpu_pass_touch_locked(core, victim);
		select_chunk(chunk, &need, &available, &host_bytes);
		if (core->config.whole_buffers)
			select_rest_of_buffer(chunk->buffer, &need, &available, &host_bytes);
		vgpu_victim_heap_update(&core->victims, node);
	}
	mark = vgpu_core_now_ns();
	time->policy_ns += mark - start;
	/* What the new buffer will take of VRAM is not free for others
	 * while the victims move (pass.c). */
	core->pass.vram_promised = need;

	if (!err && !vgpu_host_budget_fits(&core->host, host_bytes)) {
		char size[32], wanted[32], left[32], limit[32];

		core->stats.live.allocs_failed_budget++;
		err = vgpu_error_set(
		        error, -ENOMEM,
		        "VM '%s': allocating %s needs %s of host memory for evicted chunks, but "
		        "only %s of the host budget (%s) is left; raise the host budget, lower the "
		        "VMs' caps or free buffers",
		        requester->name, vgpu_core_format_size(pending->bytes, size, sizeof(size)),
		        vgpu_core_format_size(host_bytes, wanted, sizeof(wanted)),
		        vgpu_core_format_size(vgpu_host_budget_available(&core->host), left,
		                              sizeof(left)),
		        vgpu_core_format_size(core->host.limit, limit, sizeof(limit)));
	}
	if (!err) {
		err = stage_host_memory(core, requester, error);
		time->setup_ns += vgpu_core_now_ns() - mark;
	}
	if (!err)
		err = move_victims(core, time, error);
	finish_pass(core, pending, !err);
	return err;
}
