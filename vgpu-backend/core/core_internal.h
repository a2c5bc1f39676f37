/* SPDX-License-Identifier: MIT */
/*
 * core_internal.h - the core's objects and how its files share them.
 *
 * Ownership: a core owns its VMs; a VM owns its buffers, channels and
 * address space; a buffer owns its chunks (one array). Everything below is
 * protected by the core's allocation lock (core->lock) unless a field says
 * otherwise.
 *
 * Lock order: core->lock, then core->channels_lock, then core->stats.lock,
 * then a shadow's short lock (each may be skipped). Only core->lock is ever
 * held while waiting (for a drain, a window swap or a copy); statistics
 * readers take only the short locks, so they never wait for an eviction.
 * A function that needs a lock held asserts it (vgpu_core_assert_locked,
 * vgpu_mutex_assert_held): debug builds check, release builds do not.
 *
 * Layers, each including only those below it: the helpers (error.h,
 * clock.h, fifo_lock.h, vgpu/mutex.h, and the data structures chunk_set.h,
 * victim.h, ...); the objects (this file), with the state that pass.c,
 * return_pass.c, stats.c and gpu_accounting.c own embedded as their own
 * structs (pass.h, return_pass.h, stats.h, gpu_accounting.h); the modules
 * that work on them, each declared in its own header (chunk.h, buffer.h,
 * vm.h, eviction.h, relocation.h, remap.h, channel.h, module.h, events.h,
 * lock.h); and on top the lifecycle (core.c: create, configure, destroy).
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
#include "vgpu/mutex.h"
#include "gpu_accounting.h"
#include "host_budget.h"
#include "host_cache.h"
#include "list.h"
#include "page_size.h"
#include "pass.h"
#include "return_pass.h"
#include "rng.h"
#include "stats.h"
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
	 * (vgpu_stats_publish_locked); core->stats.lock. Fair share, shadow
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

	/* The pass that may have dropped the lock (pass.h). */
	struct vgpu_pass pass;

	/*
	 * Statistics (stats.h): published as of the end of the last operation
	 * under core->lock (by vgpu_core_unlock, and between the VMs of a long
	 * pass). stats.lock guards them, every VM's published figures and the
	 * links of core->vms (readers compute fair shares over the list); it
	 * is never held while waiting.
	 */
	struct vgpu_stats stats;

	struct list_head vms; /* links also under stats.lock */
	uint32_t vm_count;
	uint32_t next_vm_id;
	struct vgpu_victim_heap victims; /* every VM, largest ratio first */

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
	struct vgpu_mutex channels_lock;
	struct vgpu_core_channel **channel_table;
	uint32_t channel_table_size;

	/* The return pass and its thread (return_pass.h). */
	struct vgpu_return ret;

	/* The accounting thread (config.gpu_accounting). */
	struct vgpu_gpu_accounting accounting;
};

#endif /* VGPU_CORE_INTERNAL_H */
