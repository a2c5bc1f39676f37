// SPDX-License-Identifier: MIT
/*
 * return_pass.c - bringing evicted chunks back to VRAM (thesis §3.2.3,
 * paper §4.5, §5.5).
 *
 * A pass: while some evicted chunk fits into free VRAM, the winner is the
 * VM with the least resident bytes ÷ weight (counting chunks already chosen
 * for it in this pass; ties to the lower VM id) that owns a chunk that fits;
 * the policy picks which of its chunks; VRAM is taken for it at once. The
 * chosen chunks then move one VM at a time, like an eviction (dropping the
 * allocation lock while the VM's channels drain and resume, pass.c).
 *
 * Frees only mark work as pending; the background thread wakes every
 * return_interval_ms and runs a pass if anything is pending, so a burst of
 * frees within one interval costs one pass (and one suspension per VM).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "return_pass.h"

#include "chunk.h"
#include "clock.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"
#include "pass.h"
#include "relocation.h"
#include "stats.h"
#include "vm.h"

void vgpu_return_init(struct vgpu_return *ret)
{
	pthread_condattr_t attr;

	vgpu_victim_heap_init(&ret->winners, false);
	atomic_init(&ret->pending, false);
	ret->thread_started = false;
	ret->stop = false;
	pthread_mutex_init(&ret->mutex, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ret->cond, &attr);
	pthread_condattr_destroy(&attr);
}

void vgpu_return_fini(struct vgpu_return *ret)
{
	pthread_cond_destroy(&ret->cond);
	pthread_mutex_destroy(&ret->mutex);
	vgpu_victim_heap_fini(&ret->winners);
}

static bool is_candidate(const struct vgpu_vm *winner, const struct vgpu_chunk *chunk,
                         uint64_t max_bytes)
{
	return chunk && chunk->buffer->vm == winner && chunk->location == LOC_EVICTED &&
	       vgpu_chunk_set_contains(&winner->sets[LOC_EVICTED], chunk) &&
	       !vgpu_chunk_is_selected(chunk) && chunk->bytes <= max_bytes;
}

static struct vgpu_chunk *pick_chunk(struct vgpu_core *core, struct vgpu_vm *winner,
                                     uint64_t max_bytes)
{
	struct vgpu_chunk *chunk;

	chunk = core->policy->pick_return(&core->policy_context, winner, max_bytes);
	if (!chunk || is_candidate(winner, chunk, max_bytes))
		return chunk;
	return vgpu_policy_return_first_fit(winner, 0, max_bytes);
}

/* Choose chunks and stage their VRAM. */
static void select_chunks_locked(struct vgpu_core *core, uint64_t free_bytes)
{
	struct vgpu_victim_heap *winners = &core->ret.winners;
	struct list_head *pos;

	vgpu_core_assert_locked(core);
	vgpu_victim_heap_clear(winners);
	list_for_each(pos, &core->vms) {
		struct vgpu_vm *vm = list_entry(pos, struct vgpu_vm, link);

		if (!vgpu_policy_return_count(vm))
			continue;
		vm->winner.bytes = vm->resident_bytes;
		vm->winner.weight = vm->weight;
		vgpu_victim_heap_push(winners, &vm->winner); /* reserved: cannot fail */
	}

	while (free_bytes >= core->min_page) {
		struct vgpu_victim_node *node = vgpu_victim_heap_top(winners);
		struct vgpu_vm *winner;
		struct vgpu_chunk *chunk;

		if (!node)
			break;
		winner = container_of(node, struct vgpu_vm, winner);
		chunk = vgpu_policy_return_count(winner) ? pick_chunk(core, winner, free_bytes)
		                                         : NULL;
		if (!chunk || vgpu_chunk_vram_alloc(core, chunk, &chunk->new_vram,
		                                    &chunk->new_vram_page_size)) {
			/* Nothing of this VM fits (or VRAM is too fragmented). */
			vgpu_victim_heap_remove(winners, node);
			continue;
		}
		vgpu_chunk_select(chunk);
		vgpu_pass_touch_locked(core, winner);
		free_bytes -= chunk->bytes;
		node->bytes += chunk->bytes;
		vgpu_victim_heap_update(winners, node);
	}
	vgpu_victim_heap_clear(winners);
}

int vgpu_return_pass_locked(struct vgpu_core *core, struct vgpu_error *error)
{
	struct vgpu_core_time pass = { 0 };
	uint64_t start = vgpu_core_now_ns(), mark, free_bytes;
	int moved = 0, err = 0;

	vgpu_core_assert_locked(core);
	free_bytes = vgpu_hal_vram_free_bytes(core->hal);
	if (!core->evicted_bytes || free_bytes < core->min_page)
		return 0;
	vgpu_pass_begin_locked(core);
	select_chunks_locked(core, free_bytes);
	mark = vgpu_core_now_ns();
	pass.policy_ns = mark - start;

	for (size_t v = 0; v < core->pass.touched_count; v++) {
		struct vgpu_vm *vm = core->pass.touched[v];
		struct vgpu_chunk_set *set = &vm->sets[LOC_EVICTED];
		size_t count = vgpu_chunk_set_selected(set);
		struct vgpu_chunk **chunks = malloc(count * sizeof(*chunks));
		int vm_err;

		if (!chunks) {
			err = vgpu_error_set(error, -ENOMEM,
			                     "VM '%s': out of memory for the list of %zu chunks to "
			                     "return",
			                     vm->name, count);
			break;
		}
		for (size_t i = 0; i < count; i++)
			chunks[i] = set->items[set->candidates + i];
		vm_err = vgpu_relocate_vm(core, vm, chunks, count, &pass, error);
		for (size_t i = 0; i < count; i++)
			moved += chunks[i]->moved;
		free(chunks);
		if (vm_err && !err)
			err = vm_err;
	}
	/* Whatever did not move keeps its host memory; drop its staged VRAM. */
	for (size_t v = 0; v < core->pass.touched_count; v++) {
		struct vgpu_chunk_set *set = &core->pass.touched[v]->sets[LOC_EVICTED];

		while (set->candidates < set->count) {
			struct vgpu_chunk *chunk = set->items[set->candidates];

			vgpu_chunk_release_staging(core, chunk);
			vgpu_chunk_unselect(chunk);
		}
		vgpu_vm_rekey(core->pass.touched[v]);
	}
	vgpu_pass_untouch_all_locked(core);
	vgpu_pass_end_locked(core);
	if (err)
		vgpu_return_mark_pending(core); /* try again next interval */

	if (moved) {
		uint64_t total = vgpu_core_now_ns() - start;
		uint64_t known = pass.policy_ns + pass.setup_ns + pass.copy_ns;

		pass.passes = 1;
		pass.total_ns = total;
		pass.other_ns = total > known ? total - known : 0;
		vgpu_core_time_add(&core->stats.live.return_pass, &pass);
	}
	return err ? err : moved;
}

int vgpu_core_return_pass(struct vgpu_core *core, struct vgpu_error *error)
{
	int result;

	vgpu_stats_count_entry(core);
	vgpu_error_clear(error);
	vgpu_core_lock(core);
	result = vgpu_return_pass_locked(core, error);
	vgpu_core_unlock(core);
	return result;
}

void vgpu_return_mark_pending(struct vgpu_core *core)
{
	atomic_store_explicit(&core->ret.pending, true, memory_order_release);
}

static void *return_thread(void *arg)
{
	struct vgpu_core *core = arg;
	uint32_t interval = core->config.return_interval_ms;
	struct timespec deadline;

	pthread_mutex_lock(&core->ret.mutex);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	while (!core->ret.stop) {
		deadline.tv_sec += interval / 1000;
		deadline.tv_nsec += (long)(interval % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		while (!core->ret.stop &&
		       pthread_cond_timedwait(&core->ret.cond, &core->ret.mutex, &deadline) !=
		               ETIMEDOUT)
			;
		if (core->ret.stop)
			break;
		if (!atomic_exchange_explicit(&core->ret.pending, false, memory_order_acq_rel))
			continue;
		pthread_mutex_unlock(&core->ret.mutex);
		vgpu_core_lock(core);
		vgpu_return_pass_locked(core, NULL); /* tried again at the next free */
		vgpu_core_unlock(core);
		pthread_mutex_lock(&core->ret.mutex);
		clock_gettime(CLOCK_MONOTONIC, &deadline); /* the next interval starts now */
	}
	pthread_mutex_unlock(&core->ret.mutex);
	return NULL;
}

int vgpu_return_thread_start(struct vgpu_core *core)
{
	int err;

	core->ret.stop = false;
	err = pthread_create(&core->ret.thread, NULL, return_thread, core);
	if (err)
		return -err;
	core->ret.thread_started = true;
	return 0;
}

void vgpu_return_thread_stop(struct vgpu_core *core)
{
	if (!core->ret.thread_started)
		return;
	pthread_mutex_lock(&core->ret.mutex);
	core->ret.stop = true;
	pthread_cond_broadcast(&core->ret.cond);
	pthread_mutex_unlock(&core->ret.mutex);
	pthread_join(core->ret.thread, NULL);
	core->ret.thread_started = false;
}
