// SPDX-License-Identifier: MIT
/*
 * quarantine.c - channels that had to die before their stream finished
 * (vgpu/cudagpu.h, "Kill"). A kill or destroy waits for the channel's
 * issued work at most config.kill_wait_ms (cg_stream_settles); work still
 * running then makes the channel a zombie, and its address space's memory
 * is quarantined: every VRAM page and host buffer the address space maps
 * (from the first zombie on, and whatever it maps while one lives) is
 * tainted with its id, and a tainted page or buffer its owner frees is
 * kept (neither scrubbed nor handed out) instead. The submission thread
 * reaps the zombies whose streams are done each round; with an address
 * space's last zombie gone, its taints go, its quarantined pages are
 * scrubbed and freed, its quarantined host buffers released, and, if it
 * was destroyed meanwhile, its teardown (unmapping, the VA range) done.
 *
 * Locks: pfifo_lock for the zombie flags and list, memory_lock for the
 * taints and counts (vgpu/cudagpu_internal.h's order).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "cudagpu_internal.h"

#define TAINT_ID_MASK (~(CG_TAINT_QUARANTINED | CG_TAINT_SCRUB))

static uint32_t taint_of(const struct cg_as *as)
{
	return as->id + 1;
}

bool cg_stream_settles(struct cudagpu *gpu, cg_stream stream)
{
	uint64_t deadline = cg_now_ns() + (uint64_t)gpu->config.kill_wait_ms * 1000000u;
	long sleep_ns = 20000;

	cg_enter(gpu);
	for (;;) {
		struct timespec ts;

		if (gpu->api.cuStreamQuery(stream) != CG_ERROR_NOT_READY)
			return true; /* done, or the context failed: nothing runs */
		if (cg_now_ns() >= deadline)
			return false;
		ts.tv_sec = 0;
		ts.tv_nsec = sleep_ns;
		nanosleep(&ts, NULL);
		if (sleep_ns < 2000000)
			sleep_ns *= 2;
	}
}

/* ------------------------------------------------------------- taints */

static void taint_vram(struct cudagpu *gpu, struct cg_as *as, uint64_t address)
{
	uint64_t index = address / CG_PAGE;

	if (address % CG_PAGE || index >= gpu->vram_pages)
		return;
	/* A page keeps its quarantine bit: it is not allocated, so mapped by
	 * nobody; anything else is now this address space's. */
	if (!(gpu->vram_taint[index] & CG_TAINT_QUARANTINED))
		gpu->vram_taint[index] = taint_of(as) | (gpu->vram_taint[index] & CG_TAINT_SCRUB);
}

static void taint_iova(struct cudagpu *gpu, struct cg_as *as, uint64_t iova)
{
	const struct cg_iommu_mapping *m = cg_iommu_find(gpu, iova);

	if (m && !m->buf->quarantined)
		m->buf->taint = taint_of(as);
}

void cg_quarantine_mapped_vram(struct cudagpu *gpu, struct cg_as *as, uint64_t address)
{
	if (as->zombies)
		taint_vram(gpu, as, address);
}

void cg_quarantine_mapped_iova(struct cudagpu *gpu, struct cg_as *as, uint64_t iova)
{
	if (as->zombies)
		taint_iova(gpu, as, iova);
}

/* Taint everything as maps now (memory_lock held). */
static void taint_all(struct cudagpu *gpu, struct cg_as *as)
{
	for (uint64_t leaf = 0; leaf < CG_LEAVES; leaf++) {
		struct cg_slot *slots = as->leaves[leaf];

		if (!slots)
			continue;
		for (uint32_t i = 0; i < CG_SLOTS_PER_LEAF; i++) {
			struct cg_slot *slot = &slots[i];

			switch (slot->kind) {
			case CG_SLOT_VRAM:
			case CG_SLOT_PRIVILEGED:
				if (slot->target == VGPU_TARGET_VRAM)
					taint_vram(gpu, as, slot->address);
				else
					taint_iova(gpu, as, slot->address);
				break;
			case CG_SLOT_SYSMEM:
				taint_iova(gpu, as, slot->address);
				break;
			case CG_SLOT_SMALL:
				for (uint32_t p = 0; p < CG_SMALL_PER_SLOT; p++)
					if (slot->small[p].valid)
						taint_iova(gpu, as, slot->small[p].iova);
				break;
			default:
				break;
			}
		}
	}
}

void cg_quarantine_begin(struct cudagpu *gpu, struct cg_as *as)
{
	pthread_mutex_lock(&gpu->memory_lock);
	if (!as->zombies++)
		taint_all(gpu, as);
	pthread_mutex_unlock(&gpu->memory_lock);
}

struct cg_as *cg_quarantine_end_locked(struct cudagpu *gpu, struct cg_as *as,
                                       struct cg_host_buf **release)
{
	uint32_t taint = taint_of(as);
	struct cg_host_buf **link;

	if (!as->zombies || --as->zombies)
		return NULL;
	/* Its own pages first: the teardown unmaps them. */
	if (as->destroy_pending)
		cg_as_teardown_locked(gpu, as);
	for (uint64_t i = 0; i < gpu->vram_pages; i++) {
		if ((gpu->vram_taint[i] & TAINT_ID_MASK) != taint)
			continue;
		if (gpu->vram_taint[i] & (CG_TAINT_QUARANTINED | CG_TAINT_SCRUB))
			cg_vram_scrub_locked(gpu, i);
		if (gpu->vram_taint[i] & CG_TAINT_QUARANTINED) {
			if (gpu->vram_free_count < gpu->vram_pages)
				gpu->vram_free_stack[gpu->vram_free_count++] = i;
			gpu->quarantined_pages--;
		}
		gpu->vram_taint[i] = 0;
	}
	for (link = &gpu->host_bufs; *link;) {
		struct cg_host_buf *buf = *link;

		if (buf->taint != taint) {
			link = &buf->next;
			continue;
		}
		buf->taint = 0;
		if (!buf->quarantined) {
			link = &buf->next;
			continue;
		}
		*link = buf->next;
		buf->next = *release;
		*release = buf;
	}
	return as->destroy_pending ? as : NULL;
}

static bool vram_busy(struct cudagpu *gpu, uint64_t index)
{
	uint32_t taint = gpu->vram_taint ? gpu->vram_taint[index] & TAINT_ID_MASK : 0;
	struct cg_as *as;

	if (!taint)
		return false;
	as = taint - 1 < gpu->config.max_address_spaces ? gpu->spaces[taint - 1] : NULL;
	if (as && as->zombies)
		return true;
	gpu->vram_taint[index] = 0; /* stale: its zombies are gone */
	return false;
}

bool cg_quarantine_vram_scrub(struct cudagpu *gpu, uint64_t index)
{
	if (!vram_busy(gpu, index))
		return false;
	gpu->vram_taint[index] |= CG_TAINT_SCRUB;
	return true;
}

bool cg_quarantine_vram_free(struct cudagpu *gpu, uint64_t index)
{
	if (!vram_busy(gpu, index))
		return false;
	if (!(gpu->vram_taint[index] & CG_TAINT_QUARANTINED)) {
		gpu->vram_taint[index] |= CG_TAINT_QUARANTINED;
		gpu->quarantined_pages++;
	}
	return true;
}

bool cg_quarantine_host_free(struct cudagpu *gpu, struct cg_host_buf *buf)
{
	struct cg_as *as;

	if (!buf->taint)
		return false;
	as = buf->taint - 1 < gpu->config.max_address_spaces ? gpu->spaces[buf->taint - 1]
	                                                      : NULL;
	if (!as || !as->zombies) {
		buf->taint = 0;
		return false;
	}
	buf->quarantined = true;
	return true;
}

/* -------------------------------------------------------------- reaper */

/* pfifo_lock held: the zombie's stream is done; end it. */
static void zombie_end(struct cudagpu *gpu, struct cg_channel *ch)
{
	struct cg_host_buf *release = NULL;
	struct cg_as *gone;

	ch->zombie = false;
	gpu->zombie_count--;
	pthread_mutex_lock(&gpu->memory_lock);
	gone = cg_quarantine_end_locked(gpu, ch->as, &release);
	pthread_mutex_unlock(&gpu->memory_lock);
	while (release) {
		struct cg_host_buf *buf = release;

		release = buf->next;
		cg_host_release(gpu, buf);
	}
	free(gone);
}

void cg_zombies_reap(struct cudagpu *gpu)
{
	struct cg_channel **link;

	if (!gpu->zombie_count)
		return;
	for (uint32_t id = 0; id < gpu->config.max_channels; id++) {
		struct cg_channel *ch = gpu->channels[id];

		if (ch && ch->zombie && gpu->api.cuStreamQuery(ch->stream) != CG_ERROR_NOT_READY)
			zombie_end(gpu, ch);
	}
	for (link = &gpu->zombie_list; *link;) {
		struct cg_channel *ch = *link;

		if (gpu->api.cuStreamQuery(ch->stream) == CG_ERROR_NOT_READY) {
			link = &ch->zombie_next;
			continue;
		}
		*link = ch->zombie_next;
		zombie_end(gpu, ch);
		pthread_mutex_unlock(&gpu->pfifo_lock);
		cg_channel_free(gpu, ch);
		pthread_mutex_lock(&gpu->pfifo_lock);
		link = &gpu->zombie_list; /* the list may have changed meanwhile */
	}
}

void cg_zombies_fini(struct cudagpu *gpu)
{
	/* The context goes with the device: its work ends there. */
	while (gpu->zombie_list) {
		struct cg_channel *ch = gpu->zombie_list;

		gpu->zombie_list = ch->zombie_next;
		if (ch->zombie)
			zombie_end(gpu, ch);
		cg_channel_free(gpu, ch);
	}
}
