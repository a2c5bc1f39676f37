/* SPDX-License-Identifier: MIT */
/*
 * core.h - GPUswap: per-VM GPU memory accounting, eviction to host memory
 * and return, on top of the HAL (vgpu/hal.h).
 *
 * What the core promises
 *
 *  - Every VM has its own GPU address space. A buffer is a range of that
 *    address space, split into chunks of the VM's chunk size with a smaller
 *    remainder chunk at the tail (thesis §3.2.2). The GPU's smallest VRAM
 *    page (min_page, from caps.page_size_mask: 4 KiB on simgpu, 2 MiB on
 *    cudagpu) is the unit of everything: buffer sizes are rounded up to it,
 *    chunk sizes must be multiples of it, and buffers start at addresses
 *    aligned to max(64 KiB, min_page). A chunk is mapped with the largest
 *    GPU page size that divides its address and its size (on simgpu 64 KiB
 *    pages where both allow it, 4 KiB pages otherwise).
 *  - Every chunk is either resident (in VRAM) or evicted (in pinned host
 *    memory mapped through the IOMMU, PTE target SYSMEM non-coherent), at the
 *    same GPU virtual address and with the same contents either way.
 *  - No pressure, no work: an allocation that fits takes VRAM, writes PTEs
 *    and returns; no channel is touched. Guest submissions never enter the
 *    core.
 *  - An allocation that does not fit runs the eviction policy (thesis
 *    §5.3.4): counting the request as already belonging to the requester,
 *    repeat { victim = the VM with the largest resident bytes ÷ weight;
 *    the policy picks one of the victim's unselected resident chunks (or of
 *    the new buffer's chunks when the requester is the victim) } until
 *    free VRAM + selected ≥ request. Equal ratios: the VM with the lower id
 *    (the one created first) is the victim. Selected chunks of the new
 *    buffer go to host memory directly, without a copy. With
 *    config.whole_buffers every chunk picked brings the other resident
 *    chunks of its buffer along (a whole buffer is evicted at once; the
 *    return pass still returns chunk by chunk). The selected
 *    chunks are then moved one VM at a time: suspend all its channels
 *    (shadow channels), drain them, copy on the copy engine through the
 *    core's private DMA address space with several copies in flight,
 *    rewrite the PTEs, invalidate the TLB, free the VRAM, resume.
 *  - Host memory for evicted chunks is limited by a budget. When a request
 *    would exceed it the allocation fails with -ENOMEM before anything moves:
 *    nothing is half done.
 *  - Freed memory is returned by a return pass (paper §5.5): winner = the VM
 *    with the least resident bytes ÷ weight owning an evicted chunk that fits
 *    into free VRAM (ties: lower id), repeated while chunks fit; moved one VM
 *    at a time like an eviction. A background thread runs it every
 *    return_interval_ms when a free (or a VM destroy) happened since the last
 *    pass, so a burst of frees costs one pass.
 *
 * GPU time (LoGA, config.gpu_accounting): one accounting thread per core
 * polls, through the HAL only, the compute engine's current channel and
 * that channel's pending bit during short polling phases (1 ms per channel
 * by default) between longer non-polling phases (5 ms per channel), and
 * extrapolates each VM's GPU time (vgpu_vm_stats.gpu_time_ns,
 * gpu_share_ppm). Per VM mode (vgpu_vm_config.scheduler,
 * vgpu_core_vm_set_scheduler): best-effort is never throttled; equal-share
 * and weighted VMs share by disengaged fair queuing; a fixed-share VM never
 * gets more than weight ÷ Σ weights of the non-best-effort VMs. An
 * over-user's channels are suspended for the next non-polling phase with the
 * same shadow-window suspend relocation uses (the guest keeps submitting
 * into its shadow and never blocks) and resumed when the next polling phase
 * starts. While at most one VM has work there is no GPU time to split and
 * nobody to throttle (unless a fixed-share VM is capped below the whole
 * GPU): the thread then stops busy-polling and reads the same two registers
 * about once a millisecond instead, which gives that VM its GPU time at
 * almost no CPU cost, and it polls again from the first sample that finds
 * a second VM with work (unless config.accounting_always_poll). See
 * core/gpu_accounting.h, gpu_time.h and gpu_sched.h.
 * config.accounting_mode = VGPU_ACCOUNTING_NEON replaces the polling with
 * NEON's sampling accounting (LoGA §2.3: every VM suspended, then each run
 * alone while its command lengths are measured; gpu_neon.h), the baseline
 * whose overhead LoGA removes; same scheduler, same reports.
 *
 * Fair share (vgpu_vm_stats.fair_share_bytes): VRAM is divided among VMs in
 * proportion to their weights, but no VM's share exceeds what it allocated;
 * what such a VM leaves unused is redistributed among the others, again by
 * weight (water filling). So Σ shares = min(VRAM, Σ allocated).
 *
 * Locking
 *
 *  - One allocation lock, FIFO-fair (a ticket lock), serialises everything
 *    that changes memory state: alloc, free, set_priority, VM and channel
 *    create/destroy, the return pass and the invariant check (set_weight
 *    only records the weight; the next of these applies it). An eviction
 *    (policy pass and relocation) or a return pass holds it, but drops it
 *    while it waits on a tenant (a victim's channels draining and resuming,
 *    its window swaps): meanwhile operations on VMs the pass does not
 *    involve go on (frees, channels, statistics, allocations that fit in
 *    VRAM the pass has not promised to its requester), while operations on
 *    its VMs, allocations that need a pass of their own, VM creation and
 *    the invariant check wait for its end; allocations otherwise are served
 *    in arrival order (thesis §5.3.6). Every wait on a tenant is bounded: a
 *    victim's channels get the drain timeout to drain (and as long to
 *    resume); a channel that does not make it is killed (its context, as a
 *    fatal fault would; the guest sees a channel error, cause
 *    VGPU_FAULT_TIMEOUT) and the relocation goes on. After vgpu_core_stop
 *    such waits end at once.
 *  - Drain offenders: a VM one of whose channels had to be killed because
 *    it did not drain (or resume) within the drain timeout is a drain
 *    offender until it is destroyed. Later relocations of it give its
 *    channels VGPU_OFFENDER_DRAIN_MS (one wait slice) instead of the drain
 *    timeout, then kill those that have not drained: a tenant that parks a
 *    fresh channel on a semaphore nothing releases before every eviction
 *    round (or keeps one busy with queued work) charges the VMs waiting for
 *    the room the drain timeout once, not once per round. An honest VM
 *    whose channel is merely slow loses that channel's work once too; its
 *    idle channels still drain. vgpu_vm_stats.drain_kills and
 *    drain_offender show it.
 *  - Statistics (vgpu_core_stats, vgpu_core_vm_stats) never take the
 *    allocation lock: each operation publishes the figures it changed when
 *    it ends (an eviction also after each VM it moved) under a short leaf
 *    lock, and readers copy them, so they answer while an eviction runs.
 *  - A short mutex guards the channel-id table; the HAL event handler takes
 *    only that (and the copy-completion lock), never the allocation lock, so
 *    events are dispatched while a relocation waits for them.
 *  - Every function is thread-safe. The event callbacks of the config run on
 *    the HAL's event thread: they must not block and must not call into the
 *    core.
 *  - Suspending a channel waits for guest accesses to its window that are in
 *    progress (vgpu_guest_window_ops.block): a transport must not call into
 *    the core while it holds such an access open, and must bound how long
 *    block and map take (a frontend that does not answer is cut off).
 *
 * Errors are negative errno values. A function that can say more takes a
 * struct vgpu_error *error last (vgpu/error.h; NULL: errno only) and fills
 * it when it fails: what was wrong and what to do (a caller passes it on,
 * e.g. into a daemon's reply).
 */
#ifndef VGPU_CORE_H
#define VGPU_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/core_stats.h"
#include "vgpu/error.h"
#include "vgpu/guest_window.h"
#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_core;
struct vgpu_vm;
struct vgpu_core_channel;
struct vgpu_policy_ops;

#define VGPU_PRIORITY_MIN 0
#define VGPU_PRIORITY_MAX 15
#define VGPU_PRIORITY_DEFAULT 7 /* "medium", thesis §5.3.2 */

#define VGPU_CORE_DEFAULT_CHUNK_BYTES (4ull << 20)   /* thesis §6.4 */
#define VGPU_CORE_DEFAULT_RETURN_INTERVAL_MS 50      /* paper §5.5 */
#define VGPU_CORE_DEFAULT_DRAIN_TIMEOUT_MS 10000
#define VGPU_CORE_DEFAULT_COPIES_IN_FLIGHT 16
#define VGPU_CORE_DEFAULT_HOST_CACHE_BYTES (256ull << 20)
#define VGPU_CORE_WEIGHT_MAX 1000000u
#define VGPU_VM_NAME_MAX 64 /* including the terminating NUL */

/* No allocation flag is defined yet; any bit set is -EINVAL. */
#define VGPU_ALLOC_FLAGS_ALL 0u

/*
 * Event forwarding from the HAL event thread. vm is the VM owning the
 * channel the event is about. Must not block and must not call the core.
 */
typedef void (*vgpu_core_event_fn)(void *ctx, struct vgpu_vm *vm,
                                   const struct vgpu_hal_event *event);

/* How the accounting thread measures GPU time (config.accounting_mode). */
enum vgpu_accounting_mode {
	VGPU_ACCOUNTING_LOGA = 0, /* polling context switches, all VMs running */
	VGPU_ACCOUNTING_NEON,     /* NEON's sampling: each VM alone in turn,
	                             estimated from average command lengths
	                             (the baseline of LoGA §5.3) */
};

/* "loga", "neon" (NULL for another value); parse: 0 or -EINVAL. */
const char *vgpu_accounting_mode_name(uint32_t mode);
int vgpu_accounting_mode_parse(const char *name, uint32_t *mode);

struct vgpu_core_config {
	uint64_t chunk_bytes;          /* default chunk size; a multiple of the GPU's
	                                  smallest page; 0 = 4 MiB rounded up to
	                                  that page */
	const char *policy;            /* "random", "priority" or "refbits" */
	const struct vgpu_policy_ops *policy_ops; /* a custom policy; overrides policy */
	uint64_t seed;                 /* seeds the policy's random choices */
	bool whole_buffers;            /* eviction granularity: false = the chunk
	                                  the policy picks (GPUswap); true = every
	                                  resident chunk of that chunk's buffer
	                                  at once (the whole-buffer-swap baseline
	                                  of thesis §6.2, for comparison) */
	uint64_t host_budget_bytes;    /* pinned host memory for evicted chunks;
	                                  0 = no limit but the host's */
	uint64_t host_cache_bytes;     /* freed pinned host buffers kept for reuse
	                                  as eviction destinations (first-touch
	                                  page faults are slow); within the
	                                  budget; 0 = none */
	uint32_t return_interval_ms;   /* background return pass period; 0 = no
	                                  thread (call vgpu_core_return_pass) */
	uint32_t drain_timeout_ms;     /* how long a victim's channels may take to
	                                  drain (and then to resume) before the
	                                  channels that did not are killed */
	uint32_t copies_in_flight;     /* copy-engine operations queued at once */
	bool gpu_accounting;           /* run the GPU-time accounting thread
	                                  (LoGA; see "GPU time" above) */
	uint32_t accounting_mode;      /* enum vgpu_accounting_mode */
	uint32_t accounting_poll_us;   /* polling phase per channel; 0 = 1000 */
	uint32_t accounting_nonpoll_us; /* non-polling phase per channel; 0 = 5000 */
	uint32_t accounting_jitter_percent; /* phase lengths uniform in mean ±
	                                  this; 0 = 50, at most 90 */
	bool accounting_always_poll;   /* LoGA polls even while at most one VM
	                                  has work (LoGA's own behaviour; the
	                                  accuracy runs of loga-bench); false:
	                                  it samples instead (see "GPU time") */
	bool accounting_pin;           /* run the accounting thread on CPU
	                                  accounting_cpu only (LoGA polls on a
	                                  core of its own); false: anywhere */
	uint32_t accounting_cpu;
	vgpu_core_event_fn on_fence;         /* VGPU_EVENT_FENCE, optional */
	vgpu_core_event_fn on_channel_error; /* VGPU_EVENT_CHANNEL_ERROR, optional */
	void *event_ctx;
};

/* Defaults: 4 MiB chunks, "random", seed 1, no host budget, a 256 MiB host
 * buffer cache, 50 ms return interval, 10 s drain timeout, 16 copies in
 * flight, no GPU-time accounting, no callbacks. */
void vgpu_core_config_defaults(struct vgpu_core_config *config);

struct vgpu_vm_config {
	const char *name;     /* 1..63 printable characters, unique per core */
	uint32_t weight;      /* share of VRAM, 1..VGPU_CORE_WEIGHT_MAX */
	uint64_t cap_bytes;   /* most bytes it may hold, resident + evicted; 0 = no cap */
	uint64_t chunk_bytes; /* a multiple of the GPU's smallest page, at most
	                         4 GiB; 0 = the core's chunk size */
	const char *scheduler; /* GPU-time mode: "best-effort" (NULL), "equal-share",
	                          "weighted" (by weight) or "fixed-share" */
};

/* Defaults: no name (must be set), weight 1, no cap, the core's chunk size. */
void vgpu_vm_config_defaults(struct vgpu_vm_config *config);

struct vgpu_buffer_info {
	uint64_t handle; /* per VM; never reused while the VM lives */
	uint64_t gpu_va; /* in the VM's address space */
	uint64_t bytes;  /* the size rounded up to the GPU's smallest page */
};

enum vgpu_chunk_location {
	VGPU_CHUNK_RESIDENT = 0, /* VRAM */
	VGPU_CHUNK_EVICTED = 1,  /* pinned host memory through the IOMMU */
};

struct vgpu_chunk_info {
	uint64_t gpu_va;
	uint64_t bytes;
	uint32_t page_size; /* GPU page size of the chunk's mapping */
	enum vgpu_chunk_location location;
};

#define VGPU_LATENCY_BUCKETS 40 /* bucket b: [2^b, 2^(b+1)) ns; b = 0 also holds 0 */

/* How long a relocation waits for a drain offender's channels to drain
 * (and to resume) before it kills them; see "Drain offenders" above. */
#define VGPU_OFFENDER_DRAIN_MS 50

struct vgpu_vm_stats {
	char name[VGPU_VM_NAME_MAX];
	uint32_t id;
	uint32_t weight;
	uint64_t cap_bytes;
	uint64_t chunk_bytes;
	uint64_t allocated_bytes;   /* resident + evicted */
	uint64_t resident_bytes;
	uint64_t evicted_bytes;
	uint64_t fair_share_bytes;  /* see "Fair share" above */
	uint64_t buffers;
	uint64_t resident_chunks;
	uint64_t evicted_chunks;
	uint64_t evictions;         /* chunks of this VM moved (or placed) to host memory */
	uint64_t evicted_bytes_total;
	uint64_t returns;           /* chunks of this VM moved back to VRAM */
	uint64_t returned_bytes_total;
	uint64_t suspensions;       /* channel suspensions (shadow stats) */
	uint64_t suspended_ns;      /* Σ over its channels of time suspended */
	uint64_t guest_blocked_ns;  /* Σ time a guest access could wait (trap windows) */
	uint64_t drain_ns;          /* time relocations waited for its channels */
	uint64_t drain_kills;       /* its channels killed for not draining or
	                               resuming within the drain timeout */
	bool drain_offender;        /* drain_kills > 0: later relocations wait
	                               VGPU_OFFENDER_DRAIN_MS for it, not the
	                               drain timeout (see "Drain offenders") */
	uint64_t allocs;            /* successful allocations */
	uint64_t alloc_failures;
	uint64_t alloc_latency[VGPU_LATENCY_BUCKETS]; /* successful allocations */
	uint64_t channels;
	uint64_t channel_errors;
	/* GPU time, from the accounting thread (0 while it is off) */
	char scheduler[16];         /* "best-effort", "equal-share", ... */
	uint64_t gpu_time_ns;       /* accounted compute time (extrapolated) */
	uint32_t gpu_share_ppm;     /* share of the last accounting period, ppm */
	bool throttled;             /* its channels are suspended for its share */
	uint64_t throttles;         /* times it was throttled */
	uint64_t throttled_ns;      /* wall time spent throttled */
};

/*
 * Create a core driving hal. Installs the core's HAL event handler (the
 * core owns it; do not replace it), creates the private DMA address space
 * and, if return_interval_ms > 0, the return thread. -EINVAL for a bad
 * config, -ENOTSUP when the policy needs a capability the GPU lacks
 * ("refbits" without reference bits), -ENOMEM.
 */
int vgpu_core_create(struct vgpu_hal *hal, const struct vgpu_core_config *config,
                     struct vgpu_core **out, struct vgpu_error *error);

/* Stop the return thread, destroy every VM (as vgpu_core_vm_destroy) and the
 * core. The HAL stays; its event handler is removed. NULL is ignored. */
void vgpu_core_destroy(struct vgpu_core *core);

/*
 * The process is stopping (e.g. SIGTERM): from now on no wait on a tenant
 * lasts: a relocation in progress or to come kills the channels that have
 * not drained (or resumed) instead of waiting out the drain timeout, so
 * that the VMs can be detached and the core destroyed promptly. Any
 * thread; the core keeps working otherwise. NULL is ignored.
 */
void vgpu_core_stop(struct vgpu_core *core);

/* Name of the policy in use. */
const char *vgpu_core_policy_name(const struct vgpu_core *core);

/* -EINVAL (bad name, weight, chunk size), -EEXIST (name taken), -ENOSPC (no
 * address space left), -ENOMEM. */
int vgpu_core_vm_create(struct vgpu_core *core, const struct vgpu_vm_config *config,
                        struct vgpu_vm **out, struct vgpu_error *error);

/* Destroy channels, free buffers (VRAM, host memory, IOMMU mappings), the
 * address space, the VM. NULL is ignored. */
void vgpu_core_vm_destroy(struct vgpu_vm *vm);

struct vgpu_hal_as *vgpu_core_vm_address_space(struct vgpu_vm *vm);
uint32_t vgpu_core_vm_id(const struct vgpu_vm *vm);
const char *vgpu_core_vm_name(const struct vgpu_vm *vm);

/*
 * Reserve a range of vm's GPU address space for mappings the caller manages
 * itself through the HAL, e.g. guest system memory (pushbuffers, semaphores)
 * that a transport maps through the IOMMU. The core never maps, moves or
 * accounts anything there; memory the CPU writes while the GPU may use it
 * belongs there rather than in a buffer, because relocation suspends the
 * VM's channels, not CPU writes through the aperture (thesis §3.3.5).
 * bytes is rounded up to 64 KiB; *va is 64 KiB aligned. -EINVAL, -ENOSPC.
 */
int vgpu_core_reserve_va(struct vgpu_vm *vm, uint64_t bytes, uint64_t *va,
                         struct vgpu_error *error);

/* Give a reservation back: the core unmaps the range and invalidates the
 * TLB, so the caller's memory is no longer reachable. -ENOENT if va is not
 * the start of a reservation of vm. */
int vgpu_core_release_va(struct vgpu_vm *vm, uint64_t va, struct vgpu_error *error);

/* Change a VM's weight (1..VGPU_CORE_WEIGHT_MAX). Takes effect at the next
 * eviction or return pass; nothing moves now. Never waits for the
 * allocation lock (statistics show the new weight at once). */
int vgpu_core_set_weight(struct vgpu_vm *vm, uint32_t weight, struct vgpu_error *error);

/*
 * Allocate bytes (> 0, rounded up to the GPU's smallest page) with priority
 * hint priority (VGPU_PRIORITY_MIN..MAX; lower is evicted first by
 * "priority") and flags (none defined: 0). Evicts as described above when VRAM is short. On
 * success fills *out. The contents of a new buffer are unspecified.
 * -EINVAL bad argument; -EDQUOT the VM's cap would be exceeded; -ENOMEM the
 * host budget (or host memory) cannot hold what must be evicted; -ENOSPC no
 * GPU virtual address range left. A victim's channel that does not drain
 * within the drain timeout is killed; the allocation goes on.
 */
int vgpu_core_alloc(struct vgpu_vm *vm, uint64_t bytes, unsigned priority, uint32_t flags,
                    struct vgpu_buffer_info *out, struct vgpu_error *error);

/* Free a buffer: accounting at once, VRAM (or host memory) reusable when it
 * returns, GPU mapping removed. -ENOENT for an unknown handle. */
int vgpu_core_free(struct vgpu_vm *vm, uint64_t handle, struct vgpu_error *error);

/*
 * Read or write bytes of vm's GPU memory at va through the GPU's aperture,
 * under the allocation lock: no relocation copies the VM's chunks while it
 * runs, so the CPU sees (and leaves) what the VM's kernels see. For
 * contents a backend reads or provides on the VM's behalf (a module image,
 * a module's variable initializers). -EFAULT for a range not mapped in vm,
 * -EINVAL. A plain vgpu_hal_as_read of a VM's buffer, without the lock, may
 * meet a relocation in flight: the PTEs of a run of chunks point at its new
 * memory while the copy engine still fills it (relocation.c).
 */
int vgpu_core_vm_read(struct vgpu_vm *vm, uint64_t va, void *dst, uint64_t bytes,
                      struct vgpu_error *error);
int vgpu_core_vm_write(struct vgpu_vm *vm, uint64_t va, const void *src, uint64_t bytes,
                       struct vgpu_error *error);

/*
 * Modules: programs the VM brings (PTX text; vgpu/hal.h's modules). Load
 * checks the image (the HAL), places the module's variables in a buffer of
 * the VM's own (accounted against its cap and evictable like any other,
 * allocated at priority), writes their initializers and binds the module
 * into the VM's address space. *out's pointers live until the module is
 * unloaded (or the VM destroyed, which unloads its modules). -EINVAL,
 * -ENOTSUP (the image, or a GPU without user programs), -E2BIG with
 * error saying why (with the line of the image); -EDQUOT,
 * -ENOMEM for the variables; -ENOSPC too many modules.
 */
struct vgpu_module_loaded {
	uint32_t id;                      /* LAUNCH_FUNCTION's module */
	struct vgpu_hal_module_info info; /* functions and variables */
	const uint64_t *variable_va;      /* info.variable_count of them */
	uint64_t variables_va, variables_bytes; /* the buffer; 0 bytes: none */
};
int vgpu_core_module_load(struct vgpu_vm *vm, const void *image, size_t bytes, const char *name,
                          unsigned priority, struct vgpu_module_loaded *out,
                          struct vgpu_error *error);
/* Unbind module id and free its variables. -ENOENT. */
int vgpu_core_module_unload(struct vgpu_vm *vm, uint32_t id, struct vgpu_error *error);

/* Change a buffer's priority hint. -ENOENT, -EINVAL. */
int vgpu_core_set_priority(struct vgpu_vm *vm, uint64_t handle, unsigned priority,
                           struct vgpu_error *error);

/* Describe a buffer's chunks (up to max of them into out). Returns the
 * number of chunks, or -ENOENT. */
int vgpu_core_buffer_chunks(struct vgpu_vm *vm, uint64_t handle, struct vgpu_chunk_info *out,
                            size_t max, struct vgpu_error *error);

/*
 * Set vm's GPU-time scheduling mode ("best-effort", "equal-share",
 * "weighted", "fixed-share"); it takes effect at the accounting thread's
 * next decision. A VM entering a shared mode starts at the system's
 * virtual time with no fixed-share credit. -EINVAL for an unknown mode.
 * Never waits for the allocation lock.
 */
int vgpu_core_vm_set_scheduler(struct vgpu_vm *vm, const char *mode, struct vgpu_error *error);

/* Is mode one of the names above? */
bool vgpu_core_scheduler_known(const char *mode);

/* A snapshot of a VM's statistics. */
void vgpu_core_vm_stats(struct vgpu_vm *vm, struct vgpu_vm_stats *out);

/* A snapshot of the core's statistics (vgpu/core_stats.h). */
void vgpu_core_stats(struct vgpu_core *core, struct vgpu_core_stats *out);

/*
 * The core's statistics and every VM's (as vgpu_core_vm_stats), taken
 * together: one consistent snapshot, in VM creation order, matched to VMs
 * by vgpu_vm_stats.id (vgpu_core_vm_id). *vms_out is malloc'ed (free it);
 * safe while VMs are created and destroyed. 0, -EINVAL, -ENOMEM. Like
 * every statistics call it never waits for an eviction.
 */
int vgpu_core_stats_snapshot(struct vgpu_core *core, struct vgpu_core_stats *core_out,
                             struct vgpu_vm_stats **vms_out, size_t *count_out,
                             struct vgpu_error *error);

/*
 * Check the core's invariants: every chunk in exactly one set (resident or
 * evicted) of its VM and buffer; every chunk mapped at its address (read
 * through the GPU's aperture) and, when evicted, mapped to its own host
 * buffer; counters equal the sums over chunks; core resident bytes +
 * vgpu_hal_vram_free_bytes() = VRAM; host bytes = evicted bytes ≤ budget;
 * caps respected; the victim order consistent. 0, or -EINVAL with a
 * description of the first violation in error.
 */
int vgpu_core_check_invariants(struct vgpu_core *core, struct vgpu_error *error);

/* Run one return pass now (whether or not a free happened). Returns the
 * number of chunks moved back to VRAM, or a negative errno. */
int vgpu_core_return_pass(struct vgpu_core *core, struct vgpu_error *error);

/*
 * Create a command channel in vm's address space with a ring of
 * gpfifo_entries (0 = HAL default), shadowed through the transport's
 * window ops/ops_ctx so the core can suspend it. Fills *info (the window the
 * transport maps into the guest). -ENOSPC, -EINVAL, -ENOMEM, or the
 * shadow's error.
 */
int vgpu_core_channel_create(struct vgpu_vm *vm, uint32_t gpfifo_entries,
                             const struct vgpu_guest_window_ops *ops, void *ops_ctx,
                             struct vgpu_core_channel **out, struct vgpu_hal_channel_info *info,
                             struct vgpu_error *error);

/* Destroy a channel (resuming it first if it is suspended). NULL is ignored. */
void vgpu_core_channel_destroy(struct vgpu_core_channel *channel);

struct vgpu_hal_channel *vgpu_core_channel_hal(struct vgpu_core_channel *channel);
uint32_t vgpu_core_channel_id(const struct vgpu_core_channel *channel);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CORE_H */
