/* SPDX-License-Identifier: MIT */
/*
 * core_internal.h - the core's objects and how its files share them.
 *
 * Ownership: a core owns its VMs; a VM owns its buffers, channels and
 * address space; a buffer owns its chunks (one array). Everything below is
 * protected by the core's allocation lock (core->lock) unless a field says
 * otherwise.
 *
 * Lock order: core->lock, then core->channels_lock, then core->stats_lock,
 * then a shadow's short lock (each may be skipped). Only core->lock is ever
 * held while waiting (for a drain, a window swap or a copy); statistics
 * readers take only the short locks, so they never wait for an eviction.
 */
#ifndef VGPU_CORE_INTERNAL_H
#define VGPU_CORE_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/channel_shadow.h"
#include "vgpu/core.h"
#include "vgpu/hal.h"
#include "vgpu/policy.h"

#include "chunk_set.h"
#include "dma.h"
#include "fifo_lock.h"
#include "gpu_accounting.h"
#include "host_budget.h"
#include "host_cache.h"
#include "list.h"
#include "page_size.h"
#include "rng.h"
#include "va_allocator.h"
#include "victim.h"

#define VGPU_PRIORITY_LEVELS (VGPU_PRIORITY_MAX + 1)
/* Buffers start at least this aligned (more when the GPU's pages are
 * larger: struct vgpu_core.buffer_align). */
#define VGPU_BUFFER_MIN_ALIGN VGPU_PAGE_64K

/* Index of a chunk location in the per-location arrays below. */
#define LOC_RESIDENT VGPU_CHUNK_RESIDENT
#define LOC_EVICTED VGPU_CHUNK_EVICTED
#define LOC_COUNT 2

struct vgpu_chunk {
	struct vgpu_core_buffer *buffer;
	uint64_t offset;           /* within the buffer */
	uint64_t bytes;
	uint32_t page_size;        /* GPU page size of its mapping when resident */
	uint8_t location;          /* LOC_RESIDENT or LOC_EVICTED */
	bool pending;              /* of a buffer being allocated: no memory yet */
	bool referenced;           /* software reference bit (pending chunks) */
	bool moved;                /* relocation: this chunk was moved */
	size_t set_index[2];       /* in its VM's set, in its buffer's set */

	/* Resident: VRAM pages. */
	uint64_t *vram;
	uint32_t vram_page_size;
	/* Evicted: its own pinned host buffer, IOMMU-mapped at iova. */
	struct vgpu_hal_host_buf *host;
	uint64_t iova;

	/* Staging while the chunk is selected (the memory it moves to). */
	uint64_t *new_vram;
	uint32_t new_vram_page_size;
	struct vgpu_hal_host_buf *new_host;
	uint64_t new_iova;
};

/* Priority levels of buffers that hold candidates of one location. */
struct vgpu_levels {
	struct list_head level[VGPU_PRIORITY_LEVELS];
	uint32_t mask; /* bit p: level[p] not empty */
};

struct vgpu_core_buffer {
	struct vgpu_vm *vm;
	uint64_t handle;
	uint64_t gpu_va;
	uint64_t bytes;
	unsigned priority;
	uint32_t chunk_count;
	struct vgpu_chunk *chunks;
	struct vgpu_chunk_set sets[LOC_COUNT];
	struct list_head level_link[LOC_COUNT];
	bool in_level[LOC_COUNT];
	struct list_head link; /* vm->buffers */
};

struct vgpu_core_buffer_slot {
	struct vgpu_core_buffer *buffer;
	uint32_t generation;
	uint32_t next_free;
};

/* A VA range reserved for the caller's own mappings (vgpu_core_reserve_va). */
struct vgpu_va_reservation {
	uint64_t va, bytes;
	struct list_head link;
};

struct vgpu_vm {
	struct vgpu_core *core;
	uint32_t id;
	char name[VGPU_VM_NAME_MAX];
	uint32_t weight;
	uint64_t cap_bytes;
	uint64_t chunk_bytes;
	struct vgpu_hal_as *as;
	struct vgpu_va_allocator va;
	struct list_head link; /* core->vms, in creation order */

	struct list_head buffers;
	uint64_t buffer_count;
	struct vgpu_core_buffer_slot *slots;
	uint32_t slot_count, slot_capacity, free_slot; /* free_slot: UINT32_MAX = none */

	struct vgpu_chunk_set sets[LOC_COUNT];
	struct vgpu_levels levels[LOC_COUNT];
	uint64_t allocated_bytes;
	uint64_t resident_bytes;
	uint64_t evicted_bytes;

	struct vgpu_victim_node victim; /* core->victims: key = eviction candidate bytes */
	struct vgpu_victim_node winner; /* return pass: key = resident + selected */
	bool touched;                   /* in the current pass's list of VMs */
	size_t cursor;                  /* policy cursor (CLOCK hand) */

	struct list_head channels;      /* also under core->channels_lock */
	/* Live migration stopped its channels (core_migrate.h): they stay
	 * suspended and drained; relocations leave them as they are, channels
	 * created meanwhile start suspended. Allocation lock. */
	bool migration_stopped;
	uint32_t channel_count;
	struct list_head reservations;
	uint64_t reserved_va_bytes;
	struct list_head modules;       /* struct vgpu_core_module, module.c */

	/* statistics */
	uint64_t evictions, evicted_bytes_total;
	uint64_t returns, returned_bytes_total;
	uint64_t drain_ns;
	/* channels killed for not draining or resuming in time; once
	 * nonzero the VM is a drain offender (relocation.c) */
	uint64_t drain_kills;
	uint64_t allocs, alloc_failures;
	uint64_t alloc_latency[VGPU_LATENCY_BUCKETS];
	struct vgpu_shadow_stats retired_shadow; /* of destroyed channels;
	                                            also under channels_lock */
	_Atomic uint64_t channel_errors;         /* event thread */
	/* vgpu_core_set_weight's weight until the next locked operation
	 * applies it (0: none); see vgpu_vm_apply_requested_weights_locked. */
	_Atomic uint32_t weight_requested;

	/* GPU time and scheduling (gpu_accounting.c; locks per field). */
	struct vgpu_vm_gpu_time gpu;

	/* The statistics above changed since they were last published. */
	bool stats_dirty;
	/* As published at the end of the last operation that changed them
	 * (vgpu_stats_publish_locked); core->stats_lock. Fair share, shadow
	 * and channel-error figures are added when read. */
	struct vgpu_vm_stats published;
};

struct vgpu_core_channel {
	struct vgpu_vm *vm;
	struct vgpu_hal_channel *hal;
	struct vgpu_shadow_channel *shadow;
	uint32_t id;
	struct list_head link; /* vm->channels */
};

struct vgpu_policy_context {
	struct vgpu_core *core;
	struct vgpu_rng rng;
};

struct vgpu_core {
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	/* The GPU's smallest VRAM page (caps.page_size_mask): buffer sizes and
	 * chunk sizes are multiples of it. */
	uint32_t min_page;
	/* Alignment of a buffer's GPU VA: max(VGPU_BUFFER_MIN_ALIGN, min_page),
	 * so every chunk can use the GPU's pages. */
	uint64_t buffer_align;
	struct vgpu_core_config config; /* chunk_bytes resolved (never 0) */
	const struct vgpu_policy_ops *policy;
	struct vgpu_policy_context policy_context;

	struct vgpu_fifo_lock lock; /* the allocation lock, see core.h */
	/* vgpu_core_stop was called: waits on tenants end at once. */
	atomic_bool stopping;
	/* Some VM has a weight_requested. */
	atomic_bool weights_requested;

	/* A pass is running and may have dropped the lock (pass.c); VRAM it
	 * promised to the allocation it makes room for. Under core->lock. */
	bool pass_running;
	uint64_t vram_promised;
	/* pass_running as waiters without the lock see it (pass_mutex). */
	pthread_mutex_t pass_mutex;
	pthread_cond_t pass_done;
	bool pass_active;

	/*
	 * Statistics as of the end of the last operation under core->lock
	 * (published by vgpu_core_unlock, and between the VMs of a long
	 * pass). stats_lock guards them, every VM's published figures and the
	 * links of core->vms (readers compute fair shares over the list); it
	 * is never held while waiting.
	 */
	pthread_mutex_t stats_lock;
	struct vgpu_core_stats published;

	struct list_head vms; /* links also under stats_lock */
	uint32_t vm_count;
	uint32_t next_vm_id;
	struct vgpu_victim_heap victims; /* every VM, largest ratio first */
	struct vgpu_victim_heap winners; /* return pass: smallest ratio first */
	struct vgpu_vm **touched;        /* VMs with selections in this pass */
	size_t touched_count, touched_capacity;

	uint64_t allocated_bytes;
	uint64_t resident_bytes;
	uint64_t evicted_bytes;
	struct vgpu_host_budget host;
	struct vgpu_host_cache host_cache;
	struct vgpu_dma dma;
	/* Staged memory and windows of copies that timed out, freed once the
	 * copy engine is idle (relocation.c). Allocation lock. */
	struct vgpu_abandoned_copy *abandoned_copies;

	/* Channel id -> channel, for event dispatch. channels_lock. */
	pthread_mutex_t channels_lock;
	struct vgpu_core_channel **channel_table;
	uint32_t channel_table_size;

	/* Return thread. return_mutex guards return_stop. */
	pthread_t return_thread;
	bool return_thread_started;
	pthread_mutex_t return_mutex;
	pthread_cond_t return_cond;
	bool return_stop;
	atomic_bool return_pending;

	/* The accounting thread (config.gpu_accounting). */
	struct vgpu_gpu_accounting accounting;

	struct vgpu_core_stats stats; /* the parts under core->lock */
	_Atomic uint64_t entries;
	_Atomic uint64_t events;
};

/* ---- core.c ------------------------------------------------------------- */
/*
 * Errors: every public function that fails returns a negative errno and
 * has set the calling thread's last error (vgpu_core_last_error) to a
 * sentence saying what was wrong and what to do; vgpu_core_fail does both
 * in one step: return vgpu_core_fail(-ENOMEM, "...").
 */
void vgpu_core_set_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
int vgpu_core_fail(int err, const char *format, ...) __attribute__((format(printf, 2, 3)));
void vgpu_core_clear_error(void);
/*
 * The allocation lock. vgpu_core_lock is for operations on the whole core
 * (VM creation, the return pass, the invariant check): it also waits while
 * a pass has dropped the lock (pass.c). vgpu_core_lock_vm is for an
 * operation on one VM: it waits only while a pass that involves that VM
 * has dropped the lock. vgpu_core_unlock first publishes the statistics
 * the operation changed (vgpu_stats_publish_locked).
 */
void vgpu_core_lock(struct vgpu_core *core);
void vgpu_core_lock_vm(struct vgpu_core *core, struct vgpu_vm *vm);
void vgpu_core_unlock(struct vgpu_core *core);
/* In every function that must be called with the allocation lock held. */
#define vgpu_core_assert_locked(core) assert(vgpu_fifo_lock_held(&(core)->lock))
uint64_t vgpu_core_now_ns(void);
void vgpu_core_count_entry(struct vgpu_core *core);
/* The VMs a pass selected chunks of (core->touched); room for one entry
 * per VM is reserved when the VM is created, so touching cannot fail. */
int vgpu_core_reserve_touched(struct vgpu_core *core, size_t count);
void vgpu_core_touch(struct vgpu_core *core, struct vgpu_vm *vm);
void vgpu_core_untouch_all(struct vgpu_core *core);
/* Human-readable size ("64 MiB") into buf. */
const char *vgpu_core_format_size(uint64_t bytes, char *buf, size_t len);

/* ---- pass.c ------------------------------------------------------------- */
/*
 * An eviction or return pass runs under the allocation lock but drops it
 * while it waits on a tenant (its victims' channels draining and resuming,
 * their window swaps), so that other VMs' requests go on meanwhile. While a
 * pass runs (core->pass_running), operations that could disturb it wait
 * for its end without the lock: any operation on a VM it involves
 * (vm->touched), another pass, and core-wide operations. VRAM the pass
 * promised to the allocation it makes room for (core->vram_promised) is
 * not free for others.
 */
void vgpu_pass_begin_locked(struct vgpu_core *core);
void vgpu_pass_end_locked(struct vgpu_core *core);
/* Around a wait on a tenant inside a pass: publish, drop the lock; take it
 * back (behind the operations that queued meanwhile). */
void vgpu_pass_unlock(struct vgpu_core *core);
void vgpu_pass_relock(struct vgpu_core *core);
/* Without the lock: wait until no pass runs. */
void vgpu_pass_wait(struct vgpu_core *core);
/* Free VRAM minus what a running pass promised (lock held). */
uint64_t vgpu_pass_vram_available_locked(struct vgpu_core *core);

/* ---- events.c ----------------------------------------------------------- */
void vgpu_core_handle_event(void *ctx, const struct vgpu_hal_event *event);

/* ---- chunk.c ------------------------------------------------------------ */
/* Lay out a buffer's chunks (offset, bytes, page_size) into chunks[]. */
void vgpu_chunk_layout(struct vgpu_chunk *chunks, uint32_t count, uint64_t buffer_va,
                       uint64_t buffer_bytes, uint64_t chunk_bytes, uint32_t page_size_mask);
uint32_t vgpu_chunk_count(uint64_t buffer_bytes, uint64_t chunk_bytes);
uint64_t vgpu_chunk_va(const struct vgpu_chunk *chunk);
/* Add/remove a chunk to/from the sets (VM's and buffer's) of its location,
 * keeping the priority levels current. */
int vgpu_chunk_insert(struct vgpu_chunk *chunk);
void vgpu_chunk_remove(struct vgpu_chunk *chunk);
void vgpu_chunk_select(struct vgpu_chunk *chunk);
void vgpu_chunk_unselect(struct vgpu_chunk *chunk);
bool vgpu_chunk_is_selected(const struct vgpu_chunk *chunk);
/* VRAM for a chunk: pages of its page_size when possible, otherwise of the
 * next smaller sizes of the GPU's page_size_mask (VRAM may be too
 * fragmented for large pages). *page_size receives the size used. */
int vgpu_chunk_vram_alloc(struct vgpu_core *core, const struct vgpu_chunk *chunk,
                          uint64_t **pages, uint32_t *page_size);
/* Free the staged memory and windows of timed-out copies once the copy
 * engine is done with them (relocation.c). Allocation lock. */
void vgpu_release_abandoned_copies(struct vgpu_core *core);

void vgpu_chunk_vram_free(struct vgpu_core *core, uint64_t bytes, uint64_t *pages,
                          uint32_t page_size);
/* Reserve budget for bytes of host memory (trimming the host cache so that
 * used + cached stays within the budget). -ENOMEM when it does not fit. */
int vgpu_chunk_host_reserve(struct vgpu_core *core, uint64_t bytes);
/* Pinned host memory + IOMMU mapping for a chunk. With overwritten (the
 * chunk's data will be copied over all of it) a cached buffer may be
 * reused; otherwise the memory is fresh and zeroed. */
int vgpu_chunk_host_alloc(struct vgpu_core *core, uint64_t bytes, bool overwritten,
                          struct vgpu_hal_host_buf **host, uint64_t *iova);
/* Give host memory back (to the cache, or to the HAL). Release its budget
 * reservation first. */
void vgpu_chunk_host_free(struct vgpu_core *core, uint64_t bytes, struct vgpu_hal_host_buf *host,
                          uint64_t iova);
/* Map the chunk in its VM's address space: to VRAM pages or to an IOVA
 * (with the largest SYSMEM page size that the chunk's VA, size and the IOVA
 * allow). */
int vgpu_chunk_map_vram(struct vgpu_chunk *chunk, const uint64_t *pages, uint32_t page_size);
int vgpu_chunk_map_host(struct vgpu_chunk *chunk, uint64_t iova);
/* Free a chunk's memory (VRAM or host), whatever its location. Its mapping
 * must be gone and the TLB invalidated. */
void vgpu_chunk_release_memory(struct vgpu_core *core, struct vgpu_chunk *chunk);
void vgpu_chunk_release_staging(struct vgpu_core *core, struct vgpu_chunk *chunk);

/* ---- levels (chunk.c) --------------------------------------------------- */
void vgpu_levels_init(struct vgpu_levels *levels);
void vgpu_levels_update(struct vgpu_core_buffer *buffer, int location);
void vgpu_levels_remove(struct vgpu_core_buffer *buffer, int location);

/* ---- buffer.c ----------------------------------------------------------- */
/* Create a buffer of vm at exactly gpu_va with every chunk in fresh host
 * memory (migration import: the return pass brings them to VRAM). The
 * allocation lock is held. 0, -EINVAL, -EEXIST (range taken), -EDQUOT,
 * -ENOMEM (host budget or memory), -ENOSPC. */
int vgpu_buffer_import_locked(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                              unsigned priority, struct vgpu_buffer_info *out);
struct vgpu_core_buffer *vgpu_core_buffer_lookup(struct vgpu_vm *vm, uint64_t handle);
/* Free a buffer completely (mapping, memory, accounting). */
void vgpu_core_buffer_destroy(struct vgpu_core_buffer *buffer);

/* ---- vm.c --------------------------------------------------------------- */
void vgpu_vm_rekey(struct vgpu_vm *vm); /* victim key := resident bytes */
void vgpu_vm_account(struct vgpu_vm *vm, int location, int64_t delta);
/* Apply the weights vgpu_core_set_weight requested (vgpu_core_lock does). */
void vgpu_vm_apply_requested_weights_locked(struct vgpu_core *core);

/* ---- eviction.c --------------------------------------------------------- */
/*
 * Make room for pending (a buffer of requester whose chunks are not placed
 * yet) when free VRAM is short. On success every chunk of pending that must
 * go to host memory has staged host memory (chunk->new_host) and enough VRAM
 * is free for the others. On failure nothing of pending is staged.
 */
int vgpu_evict_for(struct vgpu_core *core, struct vgpu_vm *requester,
                   struct vgpu_core_buffer *pending, uint64_t free_bytes,
                   struct vgpu_core_time *time);

/* ---- module.c ----------------------------------------------------------- */
/* Forget vm's modules (lock held; the address space unbinds them when it is
 * destroyed, the buffers go with the VM's). */
void vgpu_core_modules_forget_locked(struct vgpu_vm *vm);

/* ---- remap.c ------------------------------------------------------------ */
/* Which memory of a chunk being relocated its PTEs should point at. */
enum vgpu_remap_which {
	VGPU_REMAP_NEW, /* the staged memory it moves to */
	VGPU_REMAP_OLD, /* the memory it is in now (undoing a remap) */
};
/* Sort chunks by GPU VA, so that runs of adjacent chunks follow each other. */
void vgpu_remap_sort(struct vgpu_chunk **chunks, size_t count);
/* The end of the run starting at chunks[first]: the chunks after it that
 * continue it in the VM's address space with the same target and page
 * size, up to max_bytes in all (at least one chunk). */
size_t vgpu_remap_run_end(struct vgpu_chunk *const *chunks, size_t first, size_t count,
                          enum vgpu_remap_which which, uint64_t max_bytes);
/* Point the PTEs over chunks[0..count) (one run) at `which` memory with one
 * vgpu_hal_as_map. All or nothing as the HAL's as_map is. */
int vgpu_remap_run(struct vgpu_chunk *const *chunks, size_t count, enum vgpu_remap_which which);

/* ---- relocation.c ------------------------------------------------------- */
/*
 * Move chunks[0..count) of vm to their staged memory (new_host when
 * resident, new_vram when evicted): suspend and drain vm's channels, copy
 * through the DMA address space, remap, invalidate, free the old memory,
 * resume. Moved chunks change location and set chunk->moved; the others
 * keep their mapping and their staging (the caller releases it). Returns 0
 * or the first error.
 */
int vgpu_relocate_vm(struct vgpu_core *core, struct vgpu_vm *vm, struct vgpu_chunk **chunks,
                     size_t count, struct vgpu_core_time *time);

/* ---- return_pass.c ------------------------------------------------------ */
int vgpu_return_thread_start(struct vgpu_core *core);
void vgpu_return_thread_stop(struct vgpu_core *core);
void vgpu_return_mark_pending(struct vgpu_core *core);
int vgpu_return_pass_locked(struct vgpu_core *core);

/* ---- channel.c ---------------------------------------------------------- */
void vgpu_channel_destroy_locked(struct vgpu_core_channel *channel);
/* Σ of the shadow statistics of the VM's live and destroyed channels. */
void vgpu_vm_shadow_stats(struct vgpu_vm *vm, struct vgpu_shadow_stats *out);

/* ---- stats.c ------------------------------------------------------------ */
/* Publish the statistics of the core and of every VM whose figures changed
 * (vm->stats_dirty) for the readers (vgpu_core_stats, vgpu_core_vm_stats). */
void vgpu_stats_publish_locked(struct vgpu_core *core);
unsigned vgpu_latency_bucket(uint64_t ns);
void vgpu_core_time_add(struct vgpu_core_time *sum, const struct vgpu_core_time *add);
/* Water-filling fair shares: see core.h. out[i] for VM i. */
void vgpu_fair_shares(uint64_t vram, size_t count, const uint32_t *weights,
                      const uint64_t *allocated, uint64_t *out);

#endif /* VGPU_CORE_INTERNAL_H */
