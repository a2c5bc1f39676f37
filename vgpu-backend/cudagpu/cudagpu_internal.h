/* SPDX-License-Identifier: MIT */
/*
 * cudagpu_internal.h - cudagpu's objects, shared by its files:
 *   cudagpu.c        the device: open, caps, events, the vtable
 *   memory.c         the VRAM pool, host buffers, the IOMMU (IOVA table)
 *   address_space.c  address spaces: page table, map/unmap, resolve, copies
 *   channel.c        channels: window, stream, state, privileged entries
 *   commands.c       one channel's turn: fetch, check and issue its commands
 *   pfifo.c          the submission thread, completions, event delivery
 *   quarantine.c     channels killed before their stream finished: the
 *                    memory they may still reach, kept until it does
 *   remote.c         process isolation, vgpud's side: the HAL's address
 *                    space and channel operations forwarded to workers
 *   worker_client.c  process isolation: starting, talking to and losing a
 *                    worker (worker_client.h)
 *   worker_wire.c    the messages (worker_protocol.h)
 *   worker/main.c    the worker program (a cudagpu in the worker role)
 *
 * Locks, in acquisition order:
 *   1. pfifo_lock: the channel table, each channel's scheduling state, the
 *      completion list, the event pool. The submission thread holds it while
 *      it issues one GPFIFO entry.
 *   2. memory_lock: the VRAM pool, host buffers, IOVA table, every address
 *      space's page table and counters. Held across the driver's mapping
 *      calls so a resolution never sees a half-made mapping.
 *   Leaf: handler_lock (the event handler; held while an event is delivered,
 *   never with 1 or 2 held).
 * Process isolation adds (worker_client.h): a worker's lock before
 * memory_lock, remote_lock (the proxy channels) after it.
 */
#ifndef VGPU_CUDAGPU_INTERNAL_H
#define VGPU_CUDAGPU_INTERNAL_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "builtin_kernels.h"
#include "cuda_api.h"
#include "vgpu/cudagpu.h"
#include "vgpu/hal.h"
#include "vgpu/abi/commands.h"

#define CG_PAGE VGPU_PAGE_2M
#define CG_SMALL_PAGE VGPU_PAGE_4K
#define CG_VA_BITS 37u                                   /* 128 GiB per AS */
#define CG_VA_BYTES (UINT64_C(1) << CG_VA_BITS)
#define CG_VA_RESERVED_BASE (CG_VA_BYTES - (UINT64_C(1) << 30))
#define CG_SLOTS (CG_VA_BYTES / CG_PAGE)                 /* 2 MiB slots per AS */
#define CG_SLOTS_PER_LEAF 512u                           /* a leaf covers 1 GiB */
#define CG_LEAVES (CG_SLOTS / CG_SLOTS_PER_LEAF)
#define CG_SMALL_PER_SLOT (CG_PAGE / CG_SMALL_PAGE)      /* 512 */
#define CG_IOVA_BASE (UINT64_C(1) << 32)

struct cudagpu;

/* ------------------------------------------------------------------ memory */

enum cg_host_kind {
	CG_HOST_NUMA,       /* cuMemCreate on a host NUMA node: cuMemMap-able */
	CG_HOST_REGISTERED, /* memfd pages, cuMemHostRegister: CPU + guest share */
};

struct cg_host_buf {
	struct vgpu_hal_host_buf base;
	enum cg_host_kind kind;
	uint64_t alloc_bytes;  /* bytes rounded to the kind's granularity */
	cg_mem_handle *handles; /* NUMA: one per 2 MiB page (cuMemMap maps whole
	                          allocations only: its offset must be 0) */
	cg_deviceptr device;   /* NUMA: host aperture mapping; REGISTERED: dptr */
	void *cpu;             /* CPU address, NULL if the CPU cannot map it */
	int memfd;             /* REGISTERED, else -1 */
	uint32_t iommu_maps;   /* live IOMMU mappings */
	/* quarantine.c (memory_lock): 1 + the id of the address space whose
	 * killed work may still reach it, 0 when none; freed by its owner
	 * meanwhile (quarantined): released when that work ends. */
	uint32_t taint;
	bool quarantined;
	struct cg_host_buf *next;
};

struct cg_iommu_mapping {
	uint64_t iova, bytes;
	struct cg_host_buf *buf;
	uint64_t offset; /* into buf */
};

/* ------------------------------------------------------- address spaces */

enum cg_slot_kind {
	CG_SLOT_NONE = 0,
	CG_SLOT_VRAM,   /* 2 MiB VRAM page, cuMemMap-ed at base + va */
	CG_SLOT_SYSMEM, /* 2 MiB of a NUMA host buffer, cuMemMap-ed at base + va */
	CG_SLOT_SMALL,  /* 4 KiB SYSMEM pages, resolved by cudagpu (small[]) */
	CG_SLOT_PRIVILEGED, /* a 2 MiB VGPU_MAP_PRIVILEGED page: only the copy
	                       engine and the aperture reach it, and cudagpu
	                       resolves both itself, so the driver's page
	                       tables are not touched (no cuMemMap) */
};

struct cg_small_pte {
	bool valid;
	uint8_t flags;   /* VGPU_MAP_* */
	uint8_t target;  /* enum vgpu_hal_target */
	uint64_t iova;
};

struct cg_slot {
	uint8_t kind;    /* enum cg_slot_kind */
	uint8_t flags;   /* VGPU_MAP_*, 2 MiB kinds */
	uint8_t target;  /* enum vgpu_hal_target, 2 MiB kinds */
	uint64_t address; /* VRAM address or IOVA, 2 MiB kinds */
	struct cg_small_pte *small; /* CG_SLOT_SMALL: CG_SMALL_PER_SLOT entries */
};

struct cg_worker;

/* Programs a VM brings (module.c): at most this many per address space. */
#define CG_MAX_MODULES 64u
#define CG_MAX_BLOCK_THREADS 1024u

/* A module loaded in a worker's context (pfifo_lock guards the table). */
struct cg_user_module {
	cg_module cu;
	struct ptx_module *ptx;   /* entries' parameter sizes, variables' */
	uint32_t function_count, variable_count;
	cg_function *functions;   /* by entry index */
	cg_deviceptr *globals;    /* the driver's storage of each variable */
	uint64_t *variable_va;    /* where the VM keeps each variable */
};

struct cg_as {
	struct vgpu_hal_as base;
	uint32_t id;
	/* Process isolation, in vgpud: the page table only, no VA range of
	 * its own (va_base 0); its worker maps it (worker_client.h). */
	bool shadow;
	struct cg_worker *worker;
	cg_deviceptr va_base;             /* the cuMemAddressReserve range */
	/* The worker's identity range: the driver placed the address space
	 * at the VM's own addresses (va_base 0, [CG_PAGE, CG_VA_BYTES)
	 * reserved), so a user kernel's pointers are the VM's; the first
	 * 2 MiB, which no reservation can hold, live at slot0 (reachable by
	 * commands, not by user kernels). */
	bool identity;
	cg_deviceptr slot0;
	/* quarantine.c (memory_lock): channels of the address space killed
	 * with work still running on their streams; destroyed meanwhile
	 * (destroy_pending): its teardown waits for them. */
	uint32_t zombies;
	bool destroy_pending;
	struct cg_user_module *modules[CG_MAX_MODULES]; /* the worker's */
	struct cg_slot *leaves[CG_LEAVES];
	struct vgpu_hal_as_counters counters;
};

/* One piece of a resolved GPU VA range. */
struct cg_segment {
	cg_deviceptr device; /* where the GPU reaches it */
	void *cpu;           /* where the CPU reaches it, or NULL */
	uint64_t bytes;
	enum vgpu_hal_target target;
};

enum cg_access {
	CG_READ = 0,
	CG_WRITE = 1,
};

/* How a VA range is resolved. */
enum cg_resolve_mode {
	CG_RESOLVE_USER,     /* a channel's access: flags enforced, AS addresses */
	CG_RESOLVE_ENGINE,   /* the copy engine: privileged ok, AS addresses */
	CG_RESOLVE_APERTURE, /* CPU access: flags ignored, aperture addresses */
};

/* ------------------------------------------------------------ channels */

struct cg_completion;

struct cg_channel {
	struct vgpu_hal_channel base;
	uint32_t id;
	struct cg_as *as;
	cg_stream stream;
	int memfd;
	void *window; /* control page + ring */
	uint32_t entries;
	uint32_t gp_get;
	bool fetch;
	bool error;
	struct vgpu_hal_event last_error;
	uint64_t *priv_ticket; /* per ring slot: 0 = user, else ticket (NOP: ~0) */
	/* The entry in progress (a SEMAPHORE_ACQUIRE not yet satisfied, or a
	 * turn that ended inside it). */
	bool running;
	uint32_t *words;
	uint32_t word_count, position;
	uint64_t pushbuffer_va;
	uint64_t command_done;     /* bytes of the COPY/MEMSET at position issued */
	uint64_t acquire_since_ns; /* the ACQUIRE at position first waited; 0 = not */
	cg_event acquire_event; /* earlier work of the channel, done? */
	cg_event entry_start;   /* recorded before the entry's first command */
	/* RANDOM_ACCESS start states (pinned host memory, grown on demand). */
	uint64_t *starts;
	uint32_t starts_capacity;
	cg_event starts_event; /* the last launch that read starts */
	uint32_t inflight; /* completions not yet seen */
	/* User entries issued and not finished (config.max_entries_in_flight
	 * bounds it), and those of the open timing span (entry_start). */
	uint32_t entries_in_flight, span_entries;
	/* Process isolation's watchdog on user kernels: recorded after the
	 * channel's last LAUNCH_FUNCTION; since when one has been running. */
	cg_event function_event;
	uint64_t function_since_ns;
	/* GPU operations (launches, copies, memsets, semaphore writes) issued
	 * to the stream and not finished (config.max_ops_in_flight bounds
	 * it), and those of the open timing span. */
	uint32_t ops_in_flight, span_ops;
	/* quarantine.c (pfifo_lock): killed or destroyed while its stream
	 * still ran (a zombie: the reaper ends it); destroyed: no longer in
	 * the channel table but on gpu->zombie_list, freed by the reaper. */
	bool zombie, destroyed;
	struct cg_channel *zombie_next;
};

enum cg_completion_type {
	CG_DONE_TIMING,     /* the end of a channel's entry: time it */
	CG_DONE_FENCE,      /* SEMAPHORE_RELEASE with interrupt */
	CG_DONE_PRIV_FENCE, /* a privileged fence */
	CG_DONE_COPY,       /* vgpu_hal_copy */
	CG_DONE_ERROR,      /* a channel was killed: delivered at once */
};

struct cg_completion {
	enum cg_completion_type type;
	cg_stream stream;       /* the order it completes in */
	cg_event start, end;    /* start may be NULL */
	struct cg_channel *channel; /* NULL for copies */
	struct cg_as *as;       /* whose busy time it is */
	uint64_t value, address, cookie;
	uint32_t entries;       /* TIMING: user entries of the span */
	uint32_t ops;           /* TIMING: GPU operations of the span */
	int status;             /* COPY: already failed (no event) */
	struct cg_completion *next;
};

/* ------------------------------------------------------------- device */

struct cudagpu {
	struct vgpu_hal base;
	struct cuda_api api;
	struct cudagpu_config config;
	cg_device device;
	cg_context context;
	char name[128];
	int sm_count;
	int numa_id;
	bool host_cpu_access; /* NUMA host buffers can be mapped for the CPU */
	struct vgpu_hal_caps caps;
	struct cudagpu_kernels kernels;

	pthread_mutex_t memory_lock;
	/* VRAM pool: handles[i] backs VRAM address i * 2 MiB. */
	uint64_t vram_pages;
	cg_mem_handle *vram_handles;
	uint64_t *vram_free_stack;
	uint64_t vram_free_count;
	/* quarantine.c: per VRAM page, 1 + the id of the address space whose
	 * killed work may still reach it (0: none), CG_TAINT_QUARANTINED when
	 * it was freed meanwhile, CG_TAINT_SCRUB when a scrub waits; and how
	 * many pages are quarantined. */
	uint32_t *vram_taint;
	uint64_t quarantined_pages;
	cg_deviceptr vram_aperture;
	cg_stream util_stream; /* scrubs, zeroing */
	struct cg_host_buf *host_bufs;
	struct cg_iommu_mapping *iommu;
	uint64_t iommu_count, iommu_capacity;
	uint64_t next_iova;
	struct cg_as **spaces; /* by id, max_address_spaces */
	struct cudagpu_map_timing map_timing;

	pthread_mutex_t pfifo_lock;
	uint32_t pfifo_lock_waiters; /* HAL callers waiting for pfifo_lock (atomic) */
	pthread_cond_t pfifo_wake;
	pthread_t pfifo_thread;
	bool pfifo_started, stopping;
	bool delivering; /* the submission thread is delivering events */
	struct cg_channel **channels; /* by id, max_channels */
	uint32_t next_channel; /* round robin */
	int32_t current_channel;
	struct cg_completion *done_head, **done_tail;
	cg_event *event_pool;
	uint32_t event_pool_count, event_pool_capacity;
	uint64_t next_ticket;
	cg_stream copy_stream;
	uint64_t busy_ns[VGPU_ENGINE_COUNT];
	/* quarantine.c: zombie channels, in the table or destroyed (then on
	 * zombie_list). */
	uint32_t zombie_count;
	struct cg_channel *zombie_list;

	pthread_mutex_t handler_lock;
	vgpu_hal_event_fn handler;
	void *handler_ctx;
	pthread_t delivery_thread;

	/* A worker process's cudagpu: its VRAM pool and host buffers are
	 * imported from vgpud (memory.c's cg_*_import), it makes none. */
	bool worker_role;
	/* Called by the submission thread after each round, pfifo_lock held
	 * (the worker publishes its status page there). */
	void (*round_hook)(struct cudagpu *gpu, void *ctx);
	void *round_hook_ctx;
	/* Process isolation, in vgpud (remote.c): the proxy channels by id. */
	pthread_mutex_t remote_lock;
	struct cg_remote_channel **remote_channels;
	uint64_t retired_busy_ns; /* compute time of workers gone */
	struct cg_event_queue *remote_events; /* worker_client.c */
};

static inline struct cudagpu *cg_of(struct vgpu_hal *hal)
{
	return (struct cudagpu *)hal;
}

/* Make the GPU's context current on the calling thread. */
void cg_enter(struct cudagpu *gpu);

/* Log-free error mapping: a driver result to a negative errno. */
int cg_errno(cg_result result);

uint64_t cg_now_ns(void);

/* Count one driver call that started at t0 in a cudagpu_map_timing pair
 * (atomically: mapping calls run with and without memory_lock). */
static inline void cg_time_call(uint64_t *ns, uint64_t *calls, uint64_t t0)
{
	__atomic_fetch_add(ns, cg_now_ns() - t0, __ATOMIC_RELAXED);
	__atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
}

/* memory.c */
int cg_memory_init(struct cudagpu *gpu, struct vgpu_error *error);
/* The worker role's: vram_pages empty slots for imported pages. */
int cg_memory_init_imported(struct cudagpu *gpu, uint64_t vram_pages);
/* Process isolation: a new fd for a physical allocation (the caller
 * closes it), or -errno. */
int cg_export(struct cudagpu *gpu, cg_mem_handle handle);
/* The worker role: VRAM page index backed by the allocation fd names
 * (fd stays the caller's). */
int cg_vram_import(struct cudagpu *gpu, uint64_t index, int fd);
/* The worker role: a host buffer of kind from fds (NUMA: one per 2 MiB
 * handle; REGISTERED: the memfd), mapped like vgpud's. fds stay the
 * caller's. */
int cg_host_import(struct cudagpu *gpu, enum cg_host_kind kind, uint64_t alloc_bytes,
                   const int *fds, unsigned nfds, struct cg_host_buf **out);
/* The worker role: vgpud's IOMMU mapping [iova, iova+bytes) -> buf at
 * offset, kept sorted; and its removal (-EFAULT if absent). */
int cg_iommu_insert(struct cudagpu *gpu, uint64_t iova, uint64_t bytes, struct cg_host_buf *buf,
                    uint64_t offset);
void cg_memory_fini(struct cudagpu *gpu);
int cg_vram_alloc(struct vgpu_hal *hal, uint32_t page_size, uint64_t count, uint64_t *addresses);
void cg_vram_free(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                  const uint64_t *addresses);
uint64_t cg_vram_free_bytes(struct vgpu_hal *hal);
uint64_t cg_vram_held_bytes(struct vgpu_hal *hal); /* quarantined */
int cg_vram_scrub(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                  const uint64_t *addresses);
int cg_host_alloc(struct vgpu_hal *hal, uint64_t bytes, struct vgpu_hal_host_buf **out);
void cg_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf);
void *cg_host_cpu_pointer(struct vgpu_hal_host_buf *buf);
int cg_host_share(struct vgpu_hal_host_buf *buf, int *fd, uint64_t *offset);
int cg_iommu_map(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf, uint64_t offset,
                 uint64_t bytes, uint64_t *iova);
int cg_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes);
/* memory_lock held: the mapping holding iova (and its byte offset in it). */
const struct cg_iommu_mapping *cg_iommu_find(struct cudagpu *gpu, uint64_t iova);

/* address_space.c */
int cg_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out);
void cg_as_destroy(struct vgpu_hal_as *as);
int cg_as_map(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size, uint64_t count,
              enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags);
int cg_as_unmap(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes);
void cg_as_tlb_invalidate(struct vgpu_hal_as *as);
int cg_as_read(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes);
int cg_as_write(struct vgpu_hal_as *as, uint64_t va, const void *src, uint64_t bytes);
int cg_as_test_and_clear_referenced(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                                    bool *referenced);
void cg_as_counters(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out);
int cg_copy(struct vgpu_hal_as *as, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
            uint64_t cookie);
/*
 * memory_lock held. Resolve [va, va+bytes) into at most max segments
 * (adjacent pieces merged). 0 on success; on a fault, -EFAULT with
 * *fault_va and *cause set; -E2BIG when more than max segments are needed.
 */
int cg_resolve(struct cudagpu *gpu, struct cg_as *as, uint64_t va, uint64_t bytes,
               enum cg_access access, enum cg_resolve_mode mode, struct cg_segment *segs,
               unsigned max, unsigned *count, uint64_t *fault_va,
               enum vgpu_hal_error_cause *cause);
/* memory_lock held: count bytes moved through segs in as's counters. */
void cg_count_bytes(struct cg_as *as, const struct cg_segment *segs, unsigned count,
                    enum cg_access access);

/* channel.c (cg_pfifo_* are pfifo.c's) */
#define CG_PRIV_NOP_TICKET UINT64_MAX /* cg_channel.priv_ticket of a privileged NOP */

static inline struct cg_channel *cg_channel_of(struct vgpu_hal_channel *ch)
{
	return (struct cg_channel *)ch;
}

static inline struct cudagpu *cg_gpu_of_channel(struct cg_channel *ch)
{
	return cg_of(ch->base.hal);
}

/* A word of the channel's control page (vgpu/abi/commands.h offsets). */
static inline uint32_t *cg_control_word(struct cg_channel *ch, uint32_t offset)
{
	return (uint32_t *)((char *)ch->window + offset);
}

static inline void *cg_gpfifo_of(struct cg_channel *ch)
{
	return (char *)ch->window + VGPU_CONTROL_BYTES;
}

/* Publish the GPU's GP_GET to the control page. */
static inline void cg_publish_gp_get(struct cg_channel *ch)
{
	__atomic_store_n(cg_control_word(ch, VGPU_CONTROL_GP_GET), htole32(ch->gp_get),
	                 __ATOMIC_RELEASE);
}

/* pfifo_lock held: kill the channel with an error; the event follows. */
void cg_channel_kill(struct cudagpu *gpu, struct cg_channel *ch, uint64_t address,
                     enum vgpu_hal_error_cause cause);

/* pfifo_lock for a HAL caller (anyone but the submission thread): counted,
 * so that the submission thread, which takes the lock again right after
 * each round, hands it over instead of winning it back every time. */
static inline void cg_pfifo_lock(struct cudagpu *gpu)
{
	__atomic_add_fetch(&gpu->pfifo_lock_waiters, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&gpu->pfifo_lock);
	__atomic_sub_fetch(&gpu->pfifo_lock_waiters, 1, __ATOMIC_RELAXED);
}

int cg_pfifo_start(struct cudagpu *gpu);
void cg_pfifo_stop(struct cudagpu *gpu);
int cg_channel_create(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
                      struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info);
/* A requested ring size made real: 0 becomes the configured default; 0,
 * or -EINVAL unless a power of two from 2 to config.max_gpfifo_entries. */
int cg_channel_entries(const struct cudagpu *gpu, uint32_t *entries);
/* The window layout of a channel of entries (same in-process and remote). */
struct vgpu_hal_channel_layout cg_channel_layout(uint32_t entries);
/* The channel window's size for entries (a page multiple), and a new
 * zeroed memfd-backed window with its version word written. */
uint64_t cg_channel_window_bytes(uint32_t entries);
int cg_channel_window_create(uint32_t entries, int *memfd, void **window);
/* cg_channel_create on an existing window memfd (the channel owns it
 * from then on, failure included); memfd < 0 makes one. */
int cg_channel_create_on(struct vgpu_hal_as *as, uint32_t gpfifo_entries, int memfd,
                         struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info);
void cg_channel_destroy(struct vgpu_hal_channel *ch);
void cg_channel_set_fetch(struct vgpu_hal_channel *ch, bool enabled);
uint32_t cg_channel_gp_get(struct vgpu_hal_channel *ch);
enum vgpu_hal_channel_state cg_channel_state(struct vgpu_hal_channel *ch,
                                             struct vgpu_hal_event *last_error);
int cg_channel_priv_submit(struct vgpu_hal_channel *ch, enum vgpu_hal_priv_cmd cmd,
                           uint64_t *ticket);
int cg_channel_priv_nops(struct vgpu_hal_channel *ch, uint32_t count);
void cg_channel_kick(struct vgpu_hal_channel *ch);
/* The HAL's channel_kill: cg_channel_kill under pfifo_lock, once; then
 * waits for the work the channel already issued to its stream. */
void cg_channel_kill_op(struct vgpu_hal_channel *ch, enum vgpu_hal_error_cause cause);
int32_t cg_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine);
bool cg_channel_pending(struct vgpu_hal *hal, uint32_t channel_id);
uint64_t cg_engine_busy_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine);
/* commands.c: the submission thread's scratch (only it uses it). */
#define CG_WINDOW_SEGMENTS 1040u
struct cg_issue_scratch {
	struct cg_segment a[CG_WINDOW_SEGMENTS], b[CG_WINDOW_SEGMENTS];
};
/* pfifo_lock held: one turn of a channel, continuing its blocked entry or
 * fetching the next one. True if it made progress. */
bool cg_channel_turn(struct cudagpu *gpu, struct cg_channel *ch,
                     struct cg_issue_scratch *scratch);
/* The worker (pfifo_lock taken here): has a channel's user kernel run
 * past config.function_watchdog_ms? */
bool cg_function_watchdog_expired(struct cudagpu *gpu);
/* The HAL's cause for a failed user kernel's driver error. */
enum vgpu_hal_error_cause cg_function_fault_cause(cg_result r);

/* cudagpu.c: the worker role's device (config as vgpud's; memory
 * imported later; the submission thread running). */
int cg_worker_gpu_create(const struct cudagpu_config *config, uint64_t vram_pages,
                         struct cudagpu **out, struct vgpu_error *error);

/* channel.c: free a channel the table no longer holds, whose stream is
 * done or whose work no longer matters (pfifo_lock taken here). */
void cg_channel_free(struct cudagpu *gpu, struct cg_channel *ch);
/* The worker's kill: as the HAL's, and whether the channel's stream
 * finished within config.kill_wait_ms. */
bool cg_channel_kill_settle(struct vgpu_hal_channel *ch, enum vgpu_hal_error_cause cause);
/* The worker's destroy: the same, false when its stream still runs. */
bool cg_channel_destroy_settle(struct vgpu_hal_channel *ch);

/* quarantine.c */
#define CG_TAINT_QUARANTINED (UINT32_C(1) << 31)
#define CG_TAINT_SCRUB (UINT32_C(1) << 30) /* a scrub waits for the end */
/* Wait for what the channel issued, at most config.kill_wait_ms: true
 * when its stream finished (or the context failed, which ends it). */
bool cg_stream_settles(struct cudagpu *gpu, cg_stream stream);
/* memory_lock taken here: the address space gets one more zombie; with
 * the first, every page it maps now is tainted (and so is what it maps
 * later, cg_quarantine_mapped). */
void cg_quarantine_begin(struct cudagpu *gpu, struct cg_as *as);
/* memory_lock held: one zombie of as fewer; with the last, its pages are
 * untainted, the quarantined ones scrubbed and freed, and a destroyed
 * address space torn down. Host buffers to release after the unlock are
 * linked on *release. Returns as when it must be freed (after unlock). */
struct cg_as *cg_quarantine_end_locked(struct cudagpu *gpu, struct cg_as *as,
                                       struct cg_host_buf **release);
/* memory_lock held: a VRAM page / host buffer mapped into as. */
void cg_quarantine_mapped_vram(struct cudagpu *gpu, struct cg_as *as, uint64_t address);
void cg_quarantine_mapped_iova(struct cudagpu *gpu, struct cg_as *as, uint64_t iova);
/* memory_lock held: the owner frees VRAM page index / buf. True when
 * killed work may still reach it: it is quarantined (not freed, not
 * scrubbed) until that work ends. */
bool cg_quarantine_vram_free(struct cudagpu *gpu, uint64_t index);
/* memory_lock held: the owner scrubs VRAM page index. True when killed
 * work may still reach it: scrubbed when that work ends instead. */
bool cg_quarantine_vram_scrub(struct cudagpu *gpu, uint64_t index);
bool cg_quarantine_host_free(struct cudagpu *gpu, struct cg_host_buf *buf);
/* pfifo_lock held (the submission thread, each round): end the zombies
 * whose streams are done. */
void cg_zombies_reap(struct cudagpu *gpu);
/* At the end (submission thread stopped): free what is left. */
void cg_zombies_fini(struct cudagpu *gpu);

/* address_space.c: memory_lock held: unmap everything, free the VA
 * reservation, free the id (the caller frees as). */
void cg_as_teardown_locked(struct cudagpu *gpu, struct cg_as *as);
/* memory.c: release a host buffer (no lock held). */
void cg_host_release(struct cudagpu *gpu, struct cg_host_buf *buf);
/* memory.c: memory_lock held: zero VRAM page index through the aperture. */
int cg_vram_scrub_locked(struct cudagpu *gpu, uint64_t index);

/* pfifo.c */
/* pfifo_lock held: queue a completion (takes ownership). */
void cg_completion_queue(struct cudagpu *gpu, struct cg_completion *done);
/* pfifo_lock held: an event from the pool (NULL on failure). */
cg_event cg_event_get(struct cudagpu *gpu);
void cg_event_put(struct cudagpu *gpu, cg_event event);

#endif /* VGPU_CUDAGPU_INTERNAL_H */
