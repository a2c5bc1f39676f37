// SPDX-License-Identifier: MIT
/*
 * relocation.c - moving one VM's selected chunks between VRAM and host
 * memory (thesis §3.2.2, §3.3.2; paper §4.4, §5.4).
 *
 * For one VM at a time:
 *   1. suspend every channel of the VM (shadow channels: the guest keeps
 *      submitting into shadow pages), then drain them (a privileged fence
 *      behind everything the guest had queued); a channel that has not
 *      drained within the drain timeout is killed (its context, as a fatal
 *      fault would: the guest sees a channel error) and counts as drained;
 *   2. map each chunk's source and destination into the core's private DMA
 *      address space (a group of chunks at a time, before the group's first
 *      copy) and queue the copies on the copy engine, several in flight;
 *   3. while the copies run, rewrite the VM's PTEs over each run of
 *      adjacent chunks whose copies are queued to the new memory (VRAM, or
 *      the IOMMU-mapped host buffer with target SYSMEM non-coherent) in one
 *      HAL call (remap.c); nothing reaches the VM's PTEs meanwhile (its
 *      channels are drained, the engine copies through the DMA windows), and
 *      a failed copy points them back; when all copies are done, invalidate
 *      the VM's TLB;
 *   4. move the chunks to the other set;
 *   5. resume the channels (bounded the same way: one that cannot be
 *      resumed within the drain timeout is killed, then resumed);
 *   6. free the old memory (scrub and free the VRAM pages, or give back the
 *      host buffer and its IOMMU mapping): nothing maps it any more.
 * Only this VM stops; the others keep running (the copy engine runs next to
 * compute). Steps 1 and 5 wait on the tenant: the caller's pass drops the
 * allocation lock for them (pass.c), so other VMs' requests go on.
 */
#include "relocation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "clock.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"
#include "pass.h"
#include "remap.h"
#include "stats.h"
#include "vm.h"

#define COPY_WAIT_MS 60000 /* copies do not depend on guest work */

/*
 * Waits on a tenant (drain, resume) are bounded by the drain timeout and
 * taken in slices of this length, so that a core shutting down
 * (vgpu_core_stop) need not wait a whole timeout.
 */
#define WAIT_SLICE_MS 50

static bool core_stopping(const struct vgpu_core *core)
{
	return atomic_load_explicit(&core->stopping, memory_order_acquire);
}

/* Milliseconds from now to deadline_ns, at most WAIT_SLICE_MS. */
static unsigned slice_ms(uint64_t deadline_ns)
{
	uint64_t now = vgpu_core_now_ns();
	uint64_t left_ms = deadline_ns > now ? (deadline_ns - now + 999999) / 1000000 : 0;

	return left_ms < WAIT_SLICE_MS ? (unsigned)left_ms : WAIT_SLICE_MS;
}

/*
 * A channel that does not drain or resume in time is killed, as a fatal
 * fault would kill it (the guest sees a channel error, cause
 * VGPU_FAULT_TIMEOUT): a context that makes no progress must not hold up
 * the relocation, and with it every allocation (issue 12). A killed channel
 * counts as drained, and resumes at once. The VM becomes a drain offender
 * (vgpu/core.h): later relocations of it wait VGPU_OFFENDER_DRAIN_MS only.
 */
static void kill_channel(struct vgpu_shadow_channel *shadow, unsigned *kills)
{
	vgpu_hal_channel_kill(vgpu_shadow_hal_channel(shadow), VGPU_FAULT_TIMEOUT);
	(*kills)++;
}

/* How long vm's channels may take to drain or resume, in ns. */
static uint64_t drain_budget_ns(const struct vgpu_core *core, const struct vgpu_vm *vm)
{
	uint32_t ms = core->config.drain_timeout_ms;

	if (vm->drain_kills && ms > VGPU_OFFENDER_DRAIN_MS)
		ms = VGPU_OFFENDER_DRAIN_MS;
	return (uint64_t)ms * 1000000ull;
}

/*
 * Resume count channels of one VM together: work one channel queued before
 * the suspension may wait (SEMAPHORE_ACQUIRE) for a release the guest put
 * into another channel's shadow, so resuming them one after the other could
 * wait forever; vgpu_shadow_resume_all takes turns. Those not resumed by
 * deadline_ns (or once the core stops) are killed and then resumed.
 */
static void resume_or_kill(struct vgpu_core *core, struct vgpu_shadow_channel **shadows,
                           size_t count, uint64_t deadline_ns, unsigned *kills)
{
	int err;

	do {
		/* -EIO: a channel was killed; it is resumed all the same. */
		err = vgpu_shadow_resume_all(shadows, count, slice_ms(deadline_ns));
	} while (err == -ETIMEDOUT && vgpu_core_now_ns() < deadline_ns && !core_stopping(core));
	if (err != -ETIMEDOUT && err != 0 && err != -EIO) {
		/* A HAL failure: nothing better than to kill and restore. */
		err = -ETIMEDOUT;
	}
	if (err != -ETIMEDOUT)
		return;
	for (size_t i = 0; i < count; i++)
		if (vgpu_shadow_is_suspended(shadows[i]))
			kill_channel(shadows[i], kills);
	vgpu_shadow_resume_all(shadows, count, 0); /* killed: restored at once */
}

/* Resume the first `suspended` channels of vm, within the drain timeout
 * (an offender's: VGPU_OFFENDER_DRAIN_MS); *kills counts those killed. */
static void resume_channels(struct vgpu_core *core, struct vgpu_vm *vm, size_t suspended,
                            unsigned *kills)
{
	uint64_t deadline_ns = vgpu_core_now_ns() + drain_budget_ns(core, vm);
	struct vgpu_shadow_channel **shadows;
	struct list_head *pos;
	size_t i = 0;

	if (suspended == 0)
		return;
	shadows = calloc(suspended, sizeof(*shadows));
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		if (i >= suspended)
			break;
		if (shadows)
			shadows[i] = channel->shadow;
		else /* out of memory: one by one */
			resume_or_kill(core, &channel->shadow, 1, deadline_ns, kills);
		i++;
	}
	if (shadows) {
		resume_or_kill(core, shadows, i, deadline_ns, kills);
		free(shadows);
	}
}

/*
 * Drain one suspended channel by deadline_ns; one that has not drained by
 * then (or when the core stops) is killed.
 */
static void drain_or_kill(struct vgpu_core *core, struct vgpu_shadow_channel *shadow,
                          uint64_t deadline_ns, unsigned *kills)
{
	int err;

	do {
		err = vgpu_shadow_drain(shadow, slice_ms(deadline_ns));
	} while (err == -ETIMEDOUT && vgpu_core_now_ns() < deadline_ns && !core_stopping(core));
	if (!err)
		return;
	kill_channel(shadow, kills);
	vgpu_shadow_drain(shadow, 0); /* a killed channel counts as drained */
}

static int suspend_and_drain(struct vgpu_core *core, struct vgpu_vm *vm, size_t *suspended,
                             struct vgpu_core_time *time, unsigned *kills, struct vgpu_error *error)
{
	struct list_head *pos;
	uint64_t start, deadline_ns;
	int err;

	*suspended = 0;
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		err = vgpu_shadow_suspend(channel->shadow);
		/* -EALREADY: throttled, or suspended for NEON's sampling
		 * (gpu_accounting*.c); the relocation takes it over and
		 * resumes it with the others */
		if (err && !(err == -EALREADY && (vm->gpu.throttled || vm->gpu.neon_suspended))) {
			return vgpu_error_set(error, err, "VM '%s': cannot suspend channel %u: %s",
			                      vm->name,
			                      channel->id, strerror(-err));
		}
		(*suspended)++;
	}
	/* One deadline for all of the VM's channels; an offender's is short. */
	start = vgpu_core_now_ns();
	deadline_ns = start + drain_budget_ns(core, vm);
	list_for_each(pos, &vm->channels) {
		struct vgpu_core_channel *channel = list_entry(pos, struct vgpu_core_channel, link);

		drain_or_kill(core, channel->shadow, deadline_ns, kills);
	}
	time->drain_ns += vgpu_core_now_ns() - start;
	return 0;
}

struct window {
	uint64_t src, dst;
	bool mapped;
};

static int map_windows(struct vgpu_core *core, struct vgpu_chunk *chunk, struct window *window)
{
	struct vgpu_dma *dma = &core->dma;
	int err;

	if (chunk->location == LOC_RESIDENT) {
		err = vgpu_dma_map_vram(dma, chunk->vram, chunk->vram_page_size, chunk->bytes,
		                        &window->src);
		if (err)
			return err;
		err = vgpu_dma_map_iova(dma, chunk->new_iova, chunk->bytes, &window->dst);
	} else {
		err = vgpu_dma_map_iova(dma, chunk->iova, chunk->bytes, &window->src);
		if (err)
			return err;
		err = vgpu_dma_map_vram(dma, chunk->new_vram, chunk->new_vram_page_size,
		                        chunk->bytes, &window->dst);
	}
	if (err) {
		vgpu_dma_unmap(dma, window->src, chunk->bytes);
		return err;
	}
	window->mapped = true;
	return 0;
}

/*
 * Windows are mapped a group at a time, all of a group before its first copy
 * is queued, never while the copy engine works in the DMA address space:
 * mapping then has to wait for the engine's translations (on simgpu the
 * engine holds the address space's lock for each page it copies, and a
 * mapping that waited on it took up to the whole queue's copy time, about
 * 1.6 ms per 4 MiB chunk of a return pass). A group's windows cover at most
 * this many bytes of chunks (twice as much DMA address space), at least one
 * chunk; a group also ends where the DMA address space or its page tables
 * run out.
 */
#define WINDOW_GROUP_BYTES (512ull << 20)

/* Map windows for chunks from `first` on; the number mapped, or an error
 * when not even the first chunk's windows could be mapped. */
static int map_group(struct vgpu_core *core, struct vgpu_chunk **chunks, size_t first,
                     size_t count, struct window *windows, size_t *mapped)
{
	uint64_t bytes = 0;
	size_t i;
	int err = 0;

	for (i = first; i < count; i++) {
		if (i > first && bytes + chunks[i]->bytes > WINDOW_GROUP_BYTES)
			break;
		err = map_windows(core, chunks[i], &windows[i]);
		if (err)
			break;
		bytes += chunks[i]->bytes;
	}
	*mapped = i - first;
	if (*mapped && (err == -ENOSPC || err == -ENOMEM))
		err = 0; /* out of windows: this group ends here */
	return err;
}

static void unmap_group(struct vgpu_dma *dma, struct vgpu_chunk **chunks, size_t first,
                        size_t end, struct window *windows)
{
	for (size_t i = first; i < end; i++)
		if (windows[i].mapped) {
			vgpu_dma_unmap(dma, windows[i].src, chunks[i]->bytes);
			vgpu_dma_unmap(dma, windows[i].dst, chunks[i]->bytes);
			windows[i].mapped = false;
		}
	vgpu_dma_flush(dma);
}

/* A chunk's staged memory and copy windows, kept after its copy timed out:
 * the engine may still write there. */
struct vgpu_abandoned_copy {
	uint64_t bytes;
	uint64_t *new_vram;
	uint32_t new_vram_page_size;
	struct vgpu_hal_host_buf *new_host;
	uint64_t new_iova;
	struct window window;
	struct vgpu_abandoned_copy *next;
};

/* Keep chunks[0..count)'s staging and windows until the engine is idle
 * (its host budget reservation stays with it). */
static void abandon_copies(struct vgpu_core *core, struct vgpu_chunk **chunks, size_t count,
                           const struct window *windows)
{
	for (size_t i = 0; i < count; i++) {
		struct vgpu_abandoned_copy *a = calloc(1, sizeof(*a));

		if (a) { /* else leaked: the memory may still be written */
			a->bytes = chunks[i]->bytes;
			a->new_vram = chunks[i]->new_vram;
			a->new_vram_page_size = chunks[i]->new_vram_page_size;
			a->new_host = chunks[i]->new_host;
			a->new_iova = chunks[i]->new_iova;
			a->window = windows[i];
			a->next = core->abandoned_copies;
			core->abandoned_copies = a;
		}
		chunks[i]->new_host = NULL;
		chunks[i]->new_vram = NULL;
	}
}

void vgpu_release_abandoned_copies(struct vgpu_core *core)
{
	struct vgpu_abandoned_copy *a;

	if (!core->abandoned_copies || !vgpu_dma_idle(&core->dma))
		return;
	while ((a = core->abandoned_copies)) {
		core->abandoned_copies = a->next;
		if (a->window.mapped) {
			vgpu_dma_unmap(&core->dma, a->window.src, a->bytes);
			vgpu_dma_unmap(&core->dma, a->window.dst, a->bytes);
		}
		vgpu_chunk_vram_free(core, a->bytes, a->new_vram, a->new_vram_page_size);
		if (a->new_host) {
			vgpu_host_budget_release(&core->host, a->bytes);
			vgpu_chunk_host_free(core, a->bytes, a->new_host, a->new_iova);
		}
		free(a);
	}
	vgpu_dma_flush(&core->dma);
}

/*
 * Remaps are done in runs of adjacent chunks (remap.c) of at most this many
 * bytes, each as soon as the copies of its chunks are queued: the VM's
 * channels are drained and the copy engine reaches the old and the new
 * memory through the DMA windows, not through the VM's PTEs, so the PTE
 * rewrite of one run overlaps the copies of the next ones instead of
 * following all of them (on a real GPU the driver's mapping calls cost as
 * much as the copies). A copy that fails undoes the remaps (undo_remaps).
 */
#define REMAP_RUN_BYTES (64ull << 20)

struct remap_progress {
	size_t done;   /* chunks[0..done) were remapped, chunk->moved says how */
	int first_err; /* the first remap that failed */
};

/* Remap chunks[first..end) (one run) to their new memory; a run that cannot
 * be remapped whole is retried chunk by chunk. */
static void remap_run_or_each(struct vgpu_chunk **chunks, size_t first, size_t end,
                              struct remap_progress *progress)
{
	int err = vgpu_remap_run(chunks + first, end - first, VGPU_REMAP_NEW);

	for (size_t i = first; i < end; i++) {
		if (err && end - first > 1) {
			int one = vgpu_remap_run(chunks + i, 1, VGPU_REMAP_NEW);

			chunks[i]->moved = !one;
			if (one && !progress->first_err)
				progress->first_err = one; /* that chunk keeps its old memory */
		} else {
			chunks[i]->moved = !err;
			if (err && !progress->first_err)
				progress->first_err = err;
		}
	}
}

/* Remap the runs whose copies are all queued (chunks[0..queued)). */
static void remap_queued(struct vgpu_chunk **chunks, size_t count, size_t queued,
                         struct remap_progress *progress, struct vgpu_core_time *time)
{
	uint64_t mark = vgpu_core_now_ns();

	while (progress->done < queued) {
		size_t end = vgpu_remap_run_end(chunks, progress->done, count, VGPU_REMAP_NEW,
		                                REMAP_RUN_BYTES);

		if (end > queued)
			break; /* the rest of the run is not queued yet */
		remap_run_or_each(chunks, progress->done, end, progress);
		progress->done = end;
	}
	time->page_table_ns += vgpu_core_now_ns() - mark;
}

/*
 * Copies failed: point the chunks remapped so far back at their old memory.
 * A chunk that cannot be pointed back is unmapped, so that the VM faults on
 * it rather than reach memory that is about to be freed.
 */
static void undo_remaps(struct vgpu_vm *vm, struct vgpu_chunk **chunks, size_t count)
{
	for (size_t first = 0; first < count;) {
		size_t end;

		if (!chunks[first]->moved) {
			first++;
			continue;
		}
		for (end = first + 1; end < count && chunks[end]->moved; end++)
			;
		end = vgpu_remap_run_end(chunks, first, end, VGPU_REMAP_OLD, REMAP_RUN_BYTES);
		if (vgpu_remap_run(chunks + first, end - first, VGPU_REMAP_OLD)) {
			for (size_t i = first; i < end; i++)
				if (vgpu_remap_run(chunks + i, 1, VGPU_REMAP_OLD))
					vgpu_hal_as_unmap(vm->as, vgpu_chunk_va(chunks[i]),
					                  chunks[i]->bytes);
		}
		for (size_t i = first; i < end; i++)
			chunks[i]->moved = false;
		first = end;
	}
}

/*
 * Copy every chunk to its staged memory and remap it there (chunk->moved
 * tells which were remapped). 0 only if all copies succeeded; then
 * *remap_err is the first remap that failed. On a copy's failure no chunk
 * is left remapped.
 */
static int copy_and_remap(struct vgpu_core *core, struct vgpu_vm *vm,
                          struct vgpu_chunk **chunks, size_t count,
                          struct vgpu_core_time *time, int *remap_err, struct vgpu_error *error)
{
	struct vgpu_dma *dma = &core->dma;
	uint64_t in_flight = core->config.copies_in_flight;
	struct window *windows = calloc(count, sizeof(*windows));
	struct remap_progress progress = { 0 };
	struct vgpu_hal_as_counters engine;
	uint64_t mark, modeled;
	size_t first = 0, mapped = 0;
	int err = 0, wait_err = 0;

	if (!windows)
		return -ENOMEM;
	vgpu_release_abandoned_copies(core);
	/* The DMA address space is the core's: its copy-engine time is
	 * these copies' (and the passes' before, under the same lock). */
	vgpu_hal_as_counters(dma->as, &engine);
	modeled = engine.busy_ns[VGPU_ENGINE_COPY];
	vgpu_dma_begin(dma);
	while (first < count && !err) {
		mark = vgpu_core_now_ns();
		err = map_group(core, chunks, first, count, windows, &mapped);
		time->setup_ns += vgpu_core_now_ns() - mark;
		for (size_t i = first; i < first + mapped && !err; i++) {
			mark = vgpu_core_now_ns();
			err = vgpu_dma_copy(dma, windows[i].dst, windows[i].src, chunks[i]->bytes);
			time->setup_ns += vgpu_core_now_ns() - mark;
			if (err)
				break;
			/* While the engine copies: the PTEs of what is queued. */
			remap_queued(chunks, count, i + 1, &progress, time);
			if (i + 1 < first + mapped) {
				/* Keep at most in_flight copies queued. */
				mark = vgpu_core_now_ns();
				err = vgpu_dma_wait(dma, in_flight - 1, COPY_WAIT_MS);
				time->copy_ns += vgpu_core_now_ns() - mark;
			}
		}
		mark = vgpu_core_now_ns();
		wait_err = vgpu_dma_wait(dma, 0, COPY_WAIT_MS);
		time->copy_ns += vgpu_core_now_ns() - mark;
		if (!err)
			err = wait_err;
		if (wait_err == -ETIMEDOUT)
			break;
		mark = vgpu_core_now_ns();
		unmap_group(dma, chunks, first, first + mapped, windows);
		time->setup_ns += vgpu_core_now_ns() - mark;
		first += mapped;
	}
	if (err) {
		mark = vgpu_core_now_ns();
		undo_remaps(vm, chunks, progress.done);
		time->page_table_ns += vgpu_core_now_ns() - mark;
	}
	vgpu_hal_as_counters(dma->as, &engine);
	time->copy_modeled_ns += engine.busy_ns[VGPU_ENGINE_COPY] - modeled;
	if (wait_err == -ETIMEDOUT) {
		/* A copy may still write its destination: keep the windows and
		 * the staged memory until the engine is idle, then free them. */
		abandon_copies(core, chunks, count, windows);
		free(windows);
		return vgpu_error_set(error, -ETIMEDOUT,
		                      "VM '%s': the copy engine did not finish within %u ms",
		                      vm->name,
		                      COPY_WAIT_MS);
	}
	free(windows);
	if (err) {
		return vgpu_error_set(error, err, "VM '%s': copying chunks failed: %s", vm->name,
		                      strerror(-err));
	}
	*remap_err = progress.first_err;
	return 0;
}

/*
 * The memory a moved chunk left. Nothing reaches it any more once the PTEs
 * point elsewhere and the TLB was invalidated, so it is scrubbed and freed
 * after the VM's channels resumed: scrubbing VRAM (a memset on a real GPU,
 * zeroing or dropping host pages on simgpu) is no part of the victim's pause.
 */
struct old_memory {
	uint64_t bytes;
	uint64_t *vram;
	uint32_t vram_page_size;
	struct vgpu_hal_host_buf *host;
	uint64_t iova;
};

static void release_old(struct vgpu_core *core, struct old_memory *old)
{
	vgpu_chunk_vram_free(core, old->bytes, old->vram, old->vram_page_size);
	if (old->host) {
		vgpu_host_budget_release(&core->host, old->bytes);
		vgpu_chunk_host_free(core, old->bytes, old->host, old->iova);
	}
	*old = (struct old_memory){ 0 };
}

/* Move the chunk to its new memory; its old memory goes to *old. */
static void commit(struct vgpu_chunk *chunk, struct old_memory *old)
{
	struct vgpu_vm *vm = chunk->buffer->vm;
	struct vgpu_core *core = vm->core;
	int from = chunk->location, to = from == LOC_RESIDENT ? LOC_EVICTED : LOC_RESIDENT;

	vgpu_chunk_remove(chunk);
	vgpu_vm_account(vm, from, -(int64_t)chunk->bytes);
	*old = (struct old_memory){ .bytes = chunk->bytes };
	if (from == LOC_RESIDENT) {
		old->vram = chunk->vram;
		old->vram_page_size = chunk->vram_page_size;
		chunk->vram = NULL;
		chunk->host = chunk->new_host;
		chunk->iova = chunk->new_iova;
		chunk->new_host = NULL;
		vm->evictions++;
		vm->evicted_bytes_total += chunk->bytes;
		core->stats.live.chunks_evicted++;
		core->stats.live.bytes_evicted += chunk->bytes;
	} else {
		old->host = chunk->host;
		old->iova = chunk->iova;
		chunk->host = NULL;
		chunk->vram = chunk->new_vram;
		chunk->vram_page_size = chunk->new_vram_page_size;
		chunk->new_vram = NULL;
		vm->returns++;
		vm->returned_bytes_total += chunk->bytes;
		core->stats.live.chunks_returned++;
		core->stats.live.bytes_returned += chunk->bytes;
	}
	chunk->location = (uint8_t)to;
	vgpu_chunk_insert(chunk); /* capacity reserved */
	vgpu_vm_account(vm, to, (int64_t)chunk->bytes);
	chunk->moved = true;
}

/* Kills of vm's channels in one wait: the first makes it a drain
 * offender. */
static void note_kills_locked(struct vgpu_vm *vm, unsigned kills)
{
	vgpu_core_assert_locked(vm->core);
	vm->drain_kills += kills;
}

int vgpu_relocate_vm(struct vgpu_core *core, struct vgpu_vm *vm, struct vgpu_chunk **chunks,
                     size_t count, struct vgpu_core_time *time, struct vgpu_error *error)
{
	struct old_memory *old, inline_old;
	uint64_t paused, mark, drained_before;
	size_t suspended = 0;
	unsigned kills = 0;
	int location = chunks[0]->location;
	int other = location == LOC_RESIDENT ? LOC_EVICTED : LOC_RESIDENT;
	int err, first_err = 0;

	vgpu_core_assert_locked(core);
	for (size_t i = 0; i < count; i++)
		chunks[i]->moved = false;
	/* In address order: adjacent chunks are remapped in one call. */
	vgpu_remap_sort(chunks, count);
	/* Inserting into the other set must not fail after the copy. */
	err = vgpu_chunk_set_reserve(&vm->sets[other], vm->sets[other].count + count);
	if (err)
		return err;
	/* Out of memory for the list: old memory is freed at once instead. */
	old = calloc(count, sizeof(*old));

	paused = vgpu_core_now_ns();
	/* Waiting for the VM's channels is waiting on a tenant: without the
	 * allocation lock (pass.c); nothing of this VM changes meanwhile. */
	drained_before = time->drain_ns;
	if (vm->migration_stopped) {
		/* already suspended and drained; they stay so */
		err = 0;
	} else {
		vgpu_pass_unlock(core);
		err = suspend_and_drain(core, vm, &suspended, time, &kills, error);
		vgpu_pass_relock(core);
	}
	vm->drain_ns += time->drain_ns - drained_before;
	note_kills_locked(vm, kills);
	kills = 0;
	if (err)
		goto resume;
	err = copy_and_remap(core, vm, chunks, count, time, &first_err, error);
	if (err)
		goto resume;

	mark = vgpu_core_now_ns();
	vgpu_hal_as_tlb_invalidate(vm->as);
	time->tlb_ns += vgpu_core_now_ns() - mark;
	for (size_t i = 0; i < count; i++) {
		if (chunks[i]->moved) {
			commit(chunks[i], old ? &old[i] : &inline_old);
			if (!old)
				release_old(core, &inline_old);
			time->bytes_copied += chunks[i]->bytes;
		}
	}
	err = first_err;
	if (err)
		vgpu_error_set(error, err,
		               "VM '%s': cannot rewrite page tables for a moved chunk: %s",
		               vm->name, strerror(-err));
resume:
	mark = vgpu_core_now_ns();
	if (suspended) {
		vgpu_pass_unlock(core);
		resume_channels(core, vm, suspended, &kills);
		vgpu_pass_relock(core);
		note_kills_locked(vm, kills);
		vgpu_accounting_vm_resumed_locked(vm); /* if it was throttled */
	}
	time->resume_ns += vgpu_core_now_ns() - mark;
	if (suspended) {
		time->pause_ns += vgpu_core_now_ns() - paused;
		time->vm_suspensions++;
	}
	if (old) {
		for (size_t i = 0; i < count; i++)
			release_old(core, &old[i]);
		free(old);
	}
	/* A pass may move several VMs: readers see each one done. */
	vm->stats_dirty = true;
	vgpu_stats_publish_locked(core);
	return err;
}
