/* SPDX-License-Identifier: MIT */
/*
 * hal.h - the GPU hardware abstraction layer.
 *
 * Everything the vGPU core (accounting, policy, relocation, shadow channels,
 * return pass) needs from a GPU, and nothing more. The core includes only this
 * header; it never sees an implementation's internals. simgpu
 * (vgpu/simgpu.h) is the default implementation; a hardware back end
 * implements the same vtable.
 *
 * Conventions for every operation
 *  - Return 0 (or a non-negative value where stated) on success and a
 *    negative errno on failure. On failure nothing has changed ("all or
 *    nothing") unless the contract says otherwise.
 *  - -EINVAL: malformed argument (misaligned, zero size, unknown flag).
 *  - -ENOMEM: the GPU or host resource is exhausted.
 *  - -ENOSPC: a fixed-size table (channels, address spaces) is full.
 *  - -EFAULT: an address is not mapped (GPU VA or IOVA).
 *  - -ENOTSUP: the capability is absent (see struct vgpu_hal_caps).
 *  - -EIO: the GPU reported an error for the object (e.g. channel killed).
 *
 * Threading
 *  - Every operation is thread-safe: backend threads may call any of them
 *    concurrently with each other and while engines run. Operations on one
 *    object (an address space, a channel) are serialised by the
 *    implementation; callers serialise create/destroy against other uses of
 *    the same object.
 *  - The event handler (vgpu_hal_set_event_handler) runs on an
 *    implementation thread. It must not block and must not call operations
 *    documented as "may wait". It may call non-waiting operations and signal
 *    the caller's own condition variables.
 *
 * Address model
 *  - VRAM addresses are GPU physical byte addresses in
 *    [0, caps.vram_bytes). The implementation may reserve VRAM for its own
 *    structures (page tables, instance memory); that memory is excluded from
 *    caps.vram_bytes and never handed out.
 *  - System RAM is reached only through the IOMMU: a PTE whose target is
 *    SYSMEM holds an IOVA, which the IOMMU translates to a host page. An
 *    unmapped IOVA is a fault.
 *  - GPU virtual addresses are per address space, caps.va_bits wide. The
 *    range [caps.va_reserved_base, 2^va_bits) of every address space belongs
 *    to the implementation (privileged pushbuffers for fences); callers never
 *    map there.
 */
#ifndef VGPU_HAL_H
#define VGPU_HAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vgpu/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Capabilities                                                             */

enum vgpu_hal_page_size {
	VGPU_PAGE_4K = 4096,
	VGPU_PAGE_64K = 65536,
	VGPU_PAGE_2M = 2097152,
};

/* Bits of vgpu_hal_caps.page_size_mask and .sysmem_page_size_mask. */
#define VGPU_HAL_PAGE_MASK_4K (1u << 0)
#define VGPU_HAL_PAGE_MASK_64K (1u << 1)
#define VGPU_HAL_PAGE_MASK_2M (1u << 2)

enum vgpu_hal_engine {
	VGPU_ENGINE_COMPUTE = 0, /* runs pushbuffers fetched by PFIFO */
	VGPU_ENGINE_COPY = 1,    /* asynchronous copy engine (vgpu_hal_copy) */
	VGPU_ENGINE_COUNT
};

struct vgpu_hal_caps {
	const char *name;          /* e.g. "simgpu" */
	uint64_t vram_bytes;       /* allocatable VRAM */
	/* Page sizes (VGPU_HAL_PAGE_MASK_*) usable for every target, VRAM
	 * included: vram_alloc, and as_map with target VRAM. */
	uint32_t page_size_mask;
	/* Page sizes usable for SYSMEM targets (as_map of IOVAs): a superset
	 * of page_size_mask. A GPU whose VRAM comes only in large pages may
	 * still map host memory with small ones. */
	uint32_t sysmem_page_size_mask;
	bool has_reference_bits;   /* vgpu_hal_as_test_and_clear_referenced works */
	bool runs_modules;         /* vgpu_hal_module_parse takes programs (PTX) */
	uint32_t max_channels;     /* channels the GPU can hold at once */
	uint32_t max_address_spaces;
	uint32_t gpfifo_entries_max; /* per channel ring, power of two */
	uint32_t va_bits;          /* width of a GPU virtual address */
	uint64_t va_reserved_base; /* first VA owned by the implementation */
	/* vgpu_hal_as_dirty_tracking / vgpu_hal_as_test_and_clear_dirty work
	 * (engine writes are recorded per page, opt-in per address space). */
	bool has_dirty_bits;
};

/* ------------------------------------------------------------------------ */
/* Objects                                                                  */
/*
 * Each object is a base struct that an implementation embeds as its first
 * member (and reaches its own with container_of). Callers treat them as
 * opaque and only pass pointers around.
 */

struct vgpu_hal;          /* one GPU (defined below, with the vtable) */

struct vgpu_hal_as {      /* one GPU virtual address space */
	struct vgpu_hal *hal;
};

struct vgpu_hal_channel { /* one command channel */
	struct vgpu_hal *hal;
};

struct vgpu_hal_host_buf { /* pinned host memory the GPU may reach via IOMMU */
	struct vgpu_hal *hal;
	uint64_t bytes;
};

/* ------------------------------------------------------------------------ */
/* Memory targets and mapping flags                                         */

enum vgpu_hal_target {
	VGPU_TARGET_VRAM = 0,
	VGPU_TARGET_SYSMEM_COHERENT = 1,
	VGPU_TARGET_SYSMEM_NONCOHERENT = 2,
	VGPU_TARGET_COUNT
};

#define VGPU_MAP_READ_ONLY (1u << 0)  /* writes fault */
#define VGPU_MAP_PRIVILEGED (1u << 1) /* only privileged submissions/copies */

/* ------------------------------------------------------------------------ */
/* Channels                                                                 */

/*
 * Layout of a channel's directly mapped window, as the guest sees it. The
 * core copies these pages to shadow pages and back without interpreting the
 * ring entries; it only needs the offsets of GP_PUT and GP_GET.
 */
struct vgpu_hal_channel_layout {
	uint32_t control_bytes;    /* size of the control page (page multiple) */
	uint32_t gp_put_offset;    /* uint32_t, written by software */
	uint32_t gp_get_offset;    /* uint32_t, written only by the GPU */
	uint32_t doorbell_offset;  /* uint32_t, any write is a hint to fetch */
	uint32_t gpfifo_entries;   /* ring entries, power of two */
	uint32_t gpfifo_entry_bytes;
	uint32_t gpfifo_bytes;     /* entries * entry_bytes, page multiple */
};

/*
 * Where a channel's window lives. control and gpfifo are the real pages the
 * GPU reads (CPU pointers in this process). memfd is a file descriptor
 * backing both (at control_offset and gpfifo_offset) so a transport can map
 * the same pages into a guest; -1 when the implementation cannot share them.
 * The descriptor belongs to the HAL and is valid until the channel is
 * destroyed; dup() it to keep it longer.
 */
struct vgpu_hal_channel_info {
	uint32_t id; /* unique among live channels, < caps.max_channels */
	struct vgpu_hal_channel_layout layout;
	void *control;
	void *gpfifo;
	int memfd;
	uint64_t control_offset;
	uint64_t gpfifo_offset;
};

enum vgpu_hal_channel_state {
	VGPU_CHANNEL_OK = 0,
	VGPU_CHANNEL_ERROR = 1, /* killed by a fault or malformed command */
};

/* Privileged entries the core may append to a channel's real ring. */
enum vgpu_hal_priv_cmd {
	VGPU_PRIV_NOP = 0,   /* consumes one ring slot, does nothing */
	VGPU_PRIV_FENCE = 1, /* completes when all earlier entries finished;
	                        raises VGPU_EVENT_PRIV_FENCE */
};

/* ------------------------------------------------------------------------ */
/* Events                                                                   */

enum vgpu_hal_event_type {
	VGPU_EVENT_FENCE = 1,         /* a channel's SEMAPHORE_RELEASE with interrupt */
	VGPU_EVENT_PRIV_FENCE = 2,    /* a VGPU_PRIV_FENCE completed */
	VGPU_EVENT_CHANNEL_ERROR = 3, /* a channel was killed */
	VGPU_EVENT_COPY_DONE = 4,     /* a vgpu_hal_copy finished (or failed) */
};

enum vgpu_hal_error_cause {
	VGPU_FAULT_NONE = 0,
	VGPU_FAULT_UNMAPPED = 1,       /* no valid PTE for the VA */
	VGPU_FAULT_READ_ONLY = 2,      /* write to a read-only page */
	VGPU_FAULT_PRIVILEGED = 3,     /* user access to a privileged page */
	VGPU_FAULT_IOMMU = 4,          /* PTE pointed at an unmapped IOVA */
	VGPU_FAULT_BAD_COMMAND = 5,    /* malformed pushbuffer or GPFIFO entry */
	VGPU_FAULT_BAD_KERNEL_ARGS = 6, /* LAUNCH with invalid arguments */
	VGPU_FAULT_TIMEOUT = 7,         /* no progress within a time limit: the
	                                   GPU's watchdog (one command ran, or a
	                                   semaphore acquire waited, past its
	                                   limit) or the host (vgpu_hal_channel_kill:
	                                   the channel did not drain for a
	                                   relocation) */
	VGPU_FAULT_KERNEL_ERROR = 8,    /* a user function failed by itself: a
	                                   trap, a misaligned access, a barrier
	                                   no thread can pass, its stack */
};

struct vgpu_hal_event {
	enum vgpu_hal_event_type type;
	uint32_t channel_id; /* FENCE, PRIV_FENCE, CHANNEL_ERROR */
	uint64_t value;      /* FENCE: released value; PRIV_FENCE: ticket;
	                        COPY_DONE: cookie */
	uint64_t address;    /* FENCE: semaphore VA; CHANNEL_ERROR: faulting VA */
	enum vgpu_hal_error_cause cause; /* CHANNEL_ERROR, COPY_DONE on failure */
	int status;          /* COPY_DONE: 0 or negative errno */
};

typedef void (*vgpu_hal_event_fn)(void *ctx, const struct vgpu_hal_event *event);

/* ------------------------------------------------------------------------ */
/* Counters                                                                 */

struct vgpu_hal_as_counters {
	uint64_t bytes_read[VGPU_TARGET_COUNT];
	uint64_t bytes_written[VGPU_TARGET_COUNT];
	uint64_t busy_ns[VGPU_ENGINE_COUNT]; /* modeled time spent for this AS */
	/*
	 * Wall time the engine's current-channel register named a channel of
	 * this AS: the most that polling the register (GPU-time accounting)
	 * can observe. simgpu in paced mode only (0 otherwise), where it
	 * exceeds busy_ns when the host delays the simulated GPU's thread.
	 */
	uint64_t resident_wall_ns[VGPU_ENGINE_COUNT];
};

/*
 * Optional: an address space's figures in the GPU's shared virtual-memory
 * and memory path while tenants run side by side (simgpu's spatial sharing,
 * seeds 003/004), summed over its kernels. Derived figures: average walk
 * latency = walk_latency_cycles / walks; L2 TLB hit rate = l2_tlb_hits /
 * l2_tlb_lookups; MPKI = 1000 * l2_misses / instructions; bandwidth =
 * dram_bytes / cycles bytes per cycle (x core_mhz * 1e6 per second);
 * progress (IPC-equivalent) = instructions / cycles; slowdown against
 * running alone = alone_cycles / cycles (1 = no loss, seed 004's SD).
 */
struct vgpu_hal_as_contention {
	uint64_t kernels;              /* kernels modeled */
	uint64_t corunner_kernels;     /* other tenants' kernels they overlapped */
	uint64_t walks;                /* page-table walks */
	uint64_t walk_latency_cycles;  /* sum, L2 TLB miss to translation */
	uint64_t foreign_walks_waited; /* sum: other tenants' walks its walks waited for */
	uint32_t foreign_walks_waited_max;
	uint32_t dram_peak_bytes_per_cycle;
	uint64_t l2_tlb_lookups, l2_tlb_hits;
	uint64_t instructions;         /* instruction-equivalents committed */
	uint64_t l2_misses;
	uint64_t dram_bytes;
	uint64_t cycles;               /* modeled core cycles its kernels took */
	uint64_t alone_cycles;         /* the same kernels alone on the same SMs */
	uint64_t core_mhz;
};

/* The derived figures of a struct vgpu_hal_as_contention (0 where the
 * denominator is 0). */
struct vgpu_hal_contention_figures {
	double avg_walk_latency_cycles;
	double walks_waited_per_walk; /* seed 003's interleaving, mean */
	double l2_tlb_hit_rate;
	double mpki;
	double bandwidth_bytes_per_s;
	double ipc;                   /* instruction-equivalents per cycle: progress */
	double slowdown;              /* IPC / IPC alone: 1 = no loss */
};

static inline double vgpu_hal_ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static inline void vgpu_hal_contention_derive(const struct vgpu_hal_as_contention *c,
                                              struct vgpu_hal_contention_figures *out)
{
	out->avg_walk_latency_cycles = vgpu_hal_ratio((double)c->walk_latency_cycles, (double)c->walks);
	out->walks_waited_per_walk = vgpu_hal_ratio((double)c->foreign_walks_waited, (double)c->walks);
	out->l2_tlb_hit_rate = vgpu_hal_ratio((double)c->l2_tlb_hits, (double)c->l2_tlb_lookups);
	out->mpki = vgpu_hal_ratio(1000.0 * (double)c->l2_misses, (double)c->instructions);
	out->bandwidth_bytes_per_s =
		vgpu_hal_ratio((double)c->dram_bytes, (double)c->cycles) * (double)c->core_mhz * 1e6;
	out->ipc = vgpu_hal_ratio((double)c->instructions, (double)c->cycles);
	out->slowdown = vgpu_hal_ratio((double)c->alone_cycles, (double)c->cycles);
}

/* ------------------------------------------------------------------------ */
/* Modules: programs a VM brings (PTX)                                      */
/*
 * A module is loaded in two steps, because its variables (.global, .const)
 * live in the VM's own memory, which the caller allocates and accounts:
 *   1. vgpu_hal_module_parse checks an image and says what it holds
 *      (functions with their parameter layout, variables with their sizes
 *      and initializers);
 *   2. the caller places the variables (writing their initializers) and
 *      vgpu_hal_module_bind makes the module usable in one address space
 *      under a small id, which the LAUNCH_FUNCTION command names
 *      (vgpu/abi/commands.h).
 * A LAUNCH_FUNCTION runs in channel order like every other command. Its
 * every global access goes through the address space's mappings, so a
 * function that leaves them kills its channel as any command would.
 */
struct vgpu_hal_module { /* a checked image; the implementation embeds it */
	struct vgpu_hal *hal;
};

struct vgpu_hal_module_param {
	uint32_t offset, size, align; /* in the parameter block */
};

struct vgpu_hal_module_function {
	const char *name;
	uint32_t param_count;
	const struct vgpu_hal_module_param *params;
	uint32_t param_bytes;         /* the parameter block's size */
	uint32_t static_shared_bytes; /* per block */
	uint32_t local_bytes;         /* per thread */
	uint32_t max_threads_per_block;
};

enum vgpu_hal_variable_space {
	VGPU_HAL_VARIABLE_GLOBAL = 1,
	VGPU_HAL_VARIABLE_CONST = 2,
};

struct vgpu_hal_module_variable {
	const char *name;
	enum vgpu_hal_variable_space space;
	uint64_t bytes;
	uint32_t align;
	const uint8_t *init; /* bytes bytes: the initial contents */
};

/* What a module holds; its pointers live as long as the module. */
struct vgpu_hal_module_info {
	uint32_t function_count;
	const struct vgpu_hal_module_function *functions;
	uint32_t variable_count;
	const struct vgpu_hal_module_variable *variables;
};

/* ------------------------------------------------------------------------ */
/* The vtable an implementation fills in                                    */

struct vgpu_hal_ops {
	void (*destroy)(struct vgpu_hal *hal);
	void (*get_caps)(struct vgpu_hal *hal, struct vgpu_hal_caps *caps);
	void (*set_event_handler)(struct vgpu_hal *hal, vgpu_hal_event_fn fn, void *ctx);

	/* VRAM */
	int (*vram_alloc)(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
	                  uint64_t *addresses);
	void (*vram_free)(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
	                  const uint64_t *addresses);
	uint64_t (*vram_free_bytes)(struct vgpu_hal *hal);
	int (*vram_scrub)(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
	                  const uint64_t *addresses);

	/* Host memory and IOMMU */
	int (*host_alloc)(struct vgpu_hal *hal, uint64_t bytes, struct vgpu_hal_host_buf **out);
	void (*host_free)(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf);
	void *(*host_cpu_pointer)(struct vgpu_hal_host_buf *buf);
	int (*iommu_map)(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf, uint64_t offset,
	                 uint64_t bytes, uint64_t *iova);
	int (*iommu_unmap)(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes);
	int (*host_share)(struct vgpu_hal_host_buf *buf, int *fd, uint64_t *offset); /* optional */

	/* Address spaces */
	int (*as_create)(struct vgpu_hal *hal, struct vgpu_hal_as **out);
	void (*as_destroy)(struct vgpu_hal_as *as);
	int (*as_map)(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size, uint64_t count,
	              enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags);
	int (*as_unmap)(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes);
	void (*as_tlb_invalidate)(struct vgpu_hal_as *as);
	int (*as_read)(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes);
	int (*as_write)(struct vgpu_hal_as *as, uint64_t va, const void *src, uint64_t bytes);
	int (*as_test_and_clear_referenced)(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
	                                    bool *referenced);
	void (*as_counters)(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out);
	int (*as_contention)(struct vgpu_hal_as *as,
	                     struct vgpu_hal_as_contention *out); /* optional */

	/* Channels */
	int (*channel_create)(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
	                      struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info);
	void (*channel_destroy)(struct vgpu_hal_channel *ch);
	void (*channel_set_fetch)(struct vgpu_hal_channel *ch, bool enabled);
	uint32_t (*channel_gp_get)(struct vgpu_hal_channel *ch);
	enum vgpu_hal_channel_state (*channel_state)(struct vgpu_hal_channel *ch,
	                                             struct vgpu_hal_event *last_error);
	int (*channel_priv_submit)(struct vgpu_hal_channel *ch, enum vgpu_hal_priv_cmd cmd,
	                           uint64_t *ticket);
	void (*channel_kick)(struct vgpu_hal_channel *ch);
	void (*channel_kill)(struct vgpu_hal_channel *ch, enum vgpu_hal_error_cause cause);
	int (*channel_priv_nops)(struct vgpu_hal_channel *ch, uint32_t count); /* optional */

	/* Copy engine */
	int (*copy)(struct vgpu_hal_as *as, uint64_t dst_va, uint64_t src_va, uint64_t bytes,
	            uint64_t cookie);

	/* Engine status and modeled time */
	int32_t (*engine_current_channel)(struct vgpu_hal *hal, enum vgpu_hal_engine engine);
	bool (*channel_pending)(struct vgpu_hal *hal, uint32_t channel_id);
	uint64_t (*engine_modeled_ns)(struct vgpu_hal *hal, enum vgpu_hal_engine engine);

	/* Modules (optional: NULL module_parse = the GPU runs no user programs) */
	int (*module_parse)(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
	                    struct vgpu_hal_module **out, struct vgpu_error *error);
	void (*module_info)(struct vgpu_hal_module *module, struct vgpu_hal_module_info *out);
	void (*module_free)(struct vgpu_hal_module *module);
	int (*module_bind)(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
	                   const uint64_t *variable_va, uint32_t *id);
	int (*module_unbind)(struct vgpu_hal_as *as, uint32_t id);
	/* Optional (NULL: -ENOTSUP): bind under a given id (migration) */
	int (*module_bind_at)(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
	                      const uint64_t *variable_va, uint32_t id);
	/* Dirty pages (caps.has_dirty_bits); optional: NULL = -ENOTSUP */
	int (*as_dirty_tracking)(struct vgpu_hal_as *as, bool enable);
	int (*as_test_and_clear_dirty)(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
	                               bool *dirty);
	/* VRAM freed but held back; optional: NULL = 0 */
	uint64_t (*vram_held_bytes)(struct vgpu_hal *hal);
};

struct vgpu_hal {
	const struct vgpu_hal_ops *ops;
};

/* ------------------------------------------------------------------------ */
/* The contract, one wrapper per operation                                  */

/* Destroy the GPU. Every address space, channel and host buffer must have
 * been destroyed first; engines are stopped and no event is delivered after
 * return. */
static inline void vgpu_hal_destroy(struct vgpu_hal *hal)
{
	hal->ops->destroy(hal);
}

/* Fill *caps. Constant for the lifetime of hal. */
static inline void vgpu_hal_get_caps(struct vgpu_hal *hal, struct vgpu_hal_caps *caps)
{
	hal->ops->get_caps(hal, caps);
}

/* Install the single event handler (NULL to remove). Events raised while no
 * handler is installed are dropped; state they report stays queryable
 * (vgpu_hal_channel_state). Call before creating channels. */
static inline void vgpu_hal_set_event_handler(struct vgpu_hal *hal, vgpu_hal_event_fn fn,
                                              void *ctx)
{
	hal->ops->set_event_handler(hal, fn, ctx);
}

/*
 * Allocate count VRAM pages of page_size bytes (a size in caps.page_size_mask;
 * -EINVAL otherwise), each aligned to page_size, not necessarily contiguous. Writes their
 * addresses to addresses[0..count). All or nothing: -ENOMEM leaves VRAM
 * untouched. The contents of fresh pages are unspecified.
 */
static inline int vgpu_hal_vram_alloc(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                                      uint64_t *addresses)
{
	return hal->ops->vram_alloc(hal, page_size, count, addresses);
}

/* Return pages obtained from vgpu_hal_vram_alloc with the same page_size.
 * The caller guarantees no PTE that the GPU may still use points at them
 * (unmap and invalidate the TLB first). VRAM is reusable on return. */
static inline void vgpu_hal_vram_free(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                                      const uint64_t *addresses)
{
	hal->ops->vram_free(hal, page_size, count, addresses);
}

/*
 * Zero count VRAM pages of page_size (allocated, not mapped anywhere the GPU
 * may still use). Synchronous: the pages read as zero on return. The backend
 * scrubs VRAM before it is freed so no VM ever sees another VM's data in
 * fresh memory (vgpu_hal_vram_alloc makes no promise about contents). A
 * hardware implementation uses the copy engine's memset (cudagpu: a
 * cuMemsetD32Async per page); simgpu zeroes pages that have host memory and
 * drops the others (vgpu/simgpu.h).
 */
static inline int vgpu_hal_vram_scrub(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                                      const uint64_t *addresses)
{
	return hal->ops->vram_scrub(hal, page_size, count, addresses);
}

/* Bytes of allocatable VRAM not currently allocated. */
static inline uint64_t vgpu_hal_vram_free_bytes(struct vgpu_hal *hal)
{
	return hal->ops->vram_free_bytes(hal);
}

/* Bytes of VRAM its owner freed that the implementation holds back for now
 * (neither free nor allocated): work of a killed channel may still reach
 * them (cudagpu's quarantine, vgpu/cudagpu.h "Kill"). They become free
 * later by themselves. 0 where the backend has no such thing. */
static inline uint64_t vgpu_hal_vram_held_bytes(struct vgpu_hal *hal)
{
	return hal->ops->vram_held_bytes ? hal->ops->vram_held_bytes(hal) : 0;
}

/* Allocate bytes (a multiple of 4 KiB) of pinned, zeroed host memory the GPU
 * may reach once mapped through the IOMMU. -ENOMEM when the host cannot. */
static inline int vgpu_hal_host_alloc(struct vgpu_hal *hal, uint64_t bytes,
                                      struct vgpu_hal_host_buf **out)
{
	return hal->ops->host_alloc(hal, bytes, out);
}

/* Free a host buffer. All its IOMMU mappings must have been removed. */
static inline void vgpu_hal_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf)
{
	hal->ops->host_free(hal, buf);
}

/* CPU address of a host buffer, for the owner's own use (tests, shadow
 * pages). NULL if the implementation gives no CPU mapping. */
static inline void *vgpu_hal_host_cpu_pointer(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf)
{
	return hal->ops->host_cpu_pointer(buf);
}

/* A file descriptor backing buf (at *offset, buf->bytes long) so a transport
 * can map the same pages into a guest (notifier and pushbuffer areas of a
 * channel window). The descriptor belongs to the buffer: dup() it to keep it
 * past vgpu_hal_host_free. -ENOTSUP when the implementation cannot share. */
static inline int vgpu_hal_host_share(struct vgpu_hal_host_buf *buf, int *fd, uint64_t *offset)
{
	if (!buf->hal->ops->host_share)
		return -ENOTSUP;
	return buf->hal->ops->host_share(buf, fd, offset);
}

/* Map [offset, offset+bytes) of buf (4 KiB aligned) through the IOMMU and
 * return the IOVA of its first byte; the range is IOVA-contiguous. The IOVA
 * is aligned to at least the smallest size in caps.sysmem_page_size_mask;
 * the core maps an evicted chunk with its large pages only where the IOVA
 * is aligned to them, so a backend should align the IOVAs of large
 * mappings to its largest SYSMEM page size. */
static inline int vgpu_hal_iommu_map(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf,
                                     uint64_t offset, uint64_t bytes, uint64_t *iova)
{
	return hal->ops->iommu_map(hal, buf, offset, bytes, iova);
}

/* Remove an IOMMU mapping made by vgpu_hal_iommu_map (the whole range) and
 * flush the IOTLB for it. A later GPU access to the IOVA faults. -EFAULT if
 * the range is not exactly one live mapping. */
static inline int vgpu_hal_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes)
{
	return hal->ops->iommu_unmap(hal, iova, bytes);
}

/* Create an empty GPU virtual address space. -ENOSPC when
 * caps.max_address_spaces exist. */
static inline int vgpu_hal_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out)
{
	return hal->ops->as_create(hal, out);
}

/* Destroy an address space; its channels must have been destroyed first.
 * Page tables are released; the VRAM and host memory it mapped are not
 * (they belong to the caller). */
static inline void vgpu_hal_as_destroy(struct vgpu_hal_as *as)
{
	as->hal->ops->as_destroy(as);
}

/*
 * Map count pages of page_size at va (aligned to page_size, below
 * caps.va_reserved_base). page_size must be in caps.page_size_mask for
 * target VRAM and in caps.sysmem_page_size_mask for SYSMEM targets
 * (-EINVAL otherwise). addresses[i] is the VRAM address (target VRAM) or
 * the IOVA (SYSMEM targets) of page i, aligned to page_size; a SYSMEM page
 * may be any page_size-aligned part of an IOMMU mapping (the core maps an
 * evicted chunk's host buffer as consecutive pages of its IOVA range). flags:
 * VGPU_MAP_*. Existing mappings in the range are replaced (this is how a
 * chunk moves between VRAM and system RAM). Translations the TLB already
 * cached stay in use until vgpu_hal_as_tlb_invalidate. Mapping a large page
 * over small pages (or the reverse) is allowed; the new size wins for the
 * covered range. -ENOMEM if page tables cannot be allocated (nothing mapped).
 */
static inline int vgpu_hal_as_map(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size,
                                  uint64_t count, enum vgpu_hal_target target,
                                  const uint64_t *addresses, uint32_t flags)
{
	return as->hal->ops->as_map(as, va, page_size, count, target, addresses, flags);
}

/* Invalidate [va, va+bytes) (4 KiB aligned) whatever the page size. Same TLB
 * rule as vgpu_hal_as_map. Unmapping an unmapped range is not an error. */
static inline int vgpu_hal_as_unmap(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes)
{
	return as->hal->ops->as_unmap(as, va, bytes);
}

/* Drop every cached translation of the address space. On return the engines
 * use the page tables as they are now. */
static inline void vgpu_hal_as_tlb_invalidate(struct vgpu_hal_as *as)
{
	as->hal->ops->as_tlb_invalidate(as);
}

/* Privileged CPU access through the GPU's aperture (like BAR1): translated
 * by the page tables (bypassing the TLB), not counted in the AS's counters,
 * ignoring read-only/privileged flags. -EFAULT (nothing copied) if any page
 * is unmapped or its IOVA is not mapped. For initialisation, verification
 * and tests, not for bulk data movement. */
static inline int vgpu_hal_as_read(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes)
{
	return as->hal->ops->as_read(as, va, dst, bytes);
}

static inline int vgpu_hal_as_write(struct vgpu_hal_as *as, uint64_t va, const void *src,
                                    uint64_t bytes)
{
	return as->hal->ops->as_write(as, va, src, bytes);
}

/* Only when caps.has_reference_bits (else -ENOTSUP): set *referenced if any
 * page in [va, va+bytes) was accessed by an engine since the last call
 * covering it, and clear those bits. */
static inline int vgpu_hal_as_test_and_clear_referenced(struct vgpu_hal_as *as, uint64_t va,
                                                        uint64_t bytes, bool *referenced)
{
	return as->hal->ops->as_test_and_clear_referenced(as, va, bytes, referenced);
}

/*
 * Only when caps.has_dirty_bits (else -ENOTSUP). Start (enable) or stop
 * recording which pages of as an engine writes. Recording is per GPU
 * virtual address and survives remapping: a page written and then moved
 * to other memory is still dirty. CPU aperture writes (as_write) and the
 * copy engine's writes through another address space are not recorded.
 * Enabling forgets what was recorded before. Costs a little on every
 * engine write while on (live migration turns it on for its pre-copy).
 */
static inline int vgpu_hal_as_dirty_tracking(struct vgpu_hal_as *as, bool enable)
{
	if (!as->hal->ops->as_dirty_tracking)
		return -ENOTSUP;
	return as->hal->ops->as_dirty_tracking(as, enable);
}

/* Only when caps.has_dirty_bits and tracking is on (else -ENOTSUP, or
 * -EINVAL when off): set *dirty if an engine wrote any page of
 * [va, va+bytes) since tracking started or the last call covering that
 * page, and clear those pages. */
static inline int vgpu_hal_as_test_and_clear_dirty(struct vgpu_hal_as *as, uint64_t va,
                                                   uint64_t bytes, bool *dirty)
{
	if (!as->hal->ops->as_test_and_clear_dirty)
		return -ENOTSUP;
	return as->hal->ops->as_test_and_clear_dirty(as, va, bytes, dirty);
}

/* Snapshot of the AS's PCOUNTER-like counters (monotonic). */
static inline void vgpu_hal_as_counters(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out)
{
	as->hal->ops->as_counters(as, out);
}

/* The AS's figures under spatial sharing (struct vgpu_hal_as_contention):
 * 0, or -ENOTSUP when the GPU does not run tenants side by side. */
static inline int vgpu_hal_as_contention(struct vgpu_hal_as *as,
                                         struct vgpu_hal_as_contention *out)
{
	if (!as->hal->ops->as_contention)
		return -ENOTSUP;
	return as->hal->ops->as_contention(as, out);
}

/*
 * Check a program image (PTX text) and return it parsed in *out, owned by
 * the caller until it is bound or freed. name labels error messages
 * ("NAME:LINE: unsupported instruction tex.2d"). -EINVAL malformed image,
 * -ENOTSUP well formed but beyond what the GPU runs, -E2BIG over a limit
 * (error, vgpu/error.h, says which and where); -ENOTSUP with error set when
 * the GPU runs no user programs at all. Every failure sets error. Never
 * blocks on GPU work.
 */
static inline int vgpu_hal_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes,
                                        const char *name, struct vgpu_hal_module **out,
                                        struct vgpu_error *error)
{
	struct vgpu_error own = VGPU_ERROR_INIT;
	int err;

	if (!hal->ops->module_parse)
		return vgpu_error_set(error, -ENOTSUP, "this GPU runs no user programs");
	err = hal->ops->module_parse(hal, image, bytes, name, out, &own);
	if (err && !vgpu_error_is_set(&own)) /* a backend that said nothing */
		vgpu_error_set(&own, err, "%s", strerror(-err));
	vgpu_error_propagate(error, &own);
	return err;
}

/* What a parsed (or bound) module holds. */
static inline void vgpu_hal_module_info(struct vgpu_hal_module *module,
                                        struct vgpu_hal_module_info *out)
{
	module->hal->ops->module_info(module, out);
}

/* Free a parsed module that was not bound. */
static inline void vgpu_hal_module_free(struct vgpu_hal_module *module)
{
	module->hal->ops->module_free(module);
}

/*
 * Make module usable in as: variable_va[i] is where the caller placed
 * variable i (info.variables[i], already holding its initializer; may be
 * NULL without variables). On success the address space owns the module
 * and *id names it for LAUNCH_FUNCTION in as's channels (ids are small and
 * reused after unbind). -ENOSPC too many modules in as; -EINVAL a
 * variable address that is misaligned or not below caps.va_reserved_base.
 * On failure the caller still owns module.
 */
static inline int vgpu_hal_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                                       const uint64_t *variable_va, uint32_t *id)
{
	return as->hal->ops->module_bind(as, module, variable_va, id);
}

/*
 * As vgpu_hal_module_bind, under the id the caller names (a migrated VM's
 * modules keep the ids its guest knows). -EEXIST when id is taken in as,
 * -ENOSPC when it is beyond what as can hold, -ENOTSUP when the HAL cannot
 * choose ids; otherwise as vgpu_hal_module_bind.
 */
static inline int vgpu_hal_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                                          const uint64_t *variable_va, uint32_t id)
{
	if (!as->hal->ops->module_bind_at)
		return -ENOTSUP;
	return as->hal->ops->module_bind_at(as, module, variable_va, id);
}

/*
 * Forget module id of as and free it once no launch of it runs any more:
 * the piece of a launch running now finishes, and what is left of that
 * launch or queued after it faults with VGPU_FAULT_BAD_KERNEL_ARGS (unload
 * a module only once its launches are done). -ENOENT for an id as does not
 * have. Destroying as unbinds every module.
 */
static inline int vgpu_hal_module_unbind(struct vgpu_hal_as *as, uint32_t id)
{
	return as->hal->ops->module_unbind(as, id);
}

/*
 * Create a channel bound to as with a GPFIFO ring of gpfifo_entries (power
 * of two, 0 = implementation default, at most caps.gpfifo_entries_max).
 * The channel starts with GP_PUT = GP_GET = 0 and fetching enabled.
 * -ENOSPC when caps.max_channels exist.
 */
static inline int vgpu_hal_channel_create(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
                                          struct vgpu_hal_channel **out,
                                          struct vgpu_hal_channel_info *info)
{
	return as->hal->ops->channel_create(as, gpfifo_entries, out, info);
}

/* Stop the channel (the entry being executed completes first) and free it.
 * Pending privileged fences never complete. May wait. */
static inline void vgpu_hal_channel_destroy(struct vgpu_hal_channel *ch)
{
	ch->hal->ops->channel_destroy(ch);
}

/* PFIFO-level fetch enable. While disabled PFIFO fetches no new entry from
 * the channel (the one in flight completes); GP_PUT writes are still
 * recorded and fetched once enabled. */
static inline void vgpu_hal_channel_set_fetch(struct vgpu_hal_channel *ch, bool enabled)
{
	ch->hal->ops->channel_set_fetch(ch, enabled);
}

/* Current GP_GET (index of the next entry PFIFO fetches). */
static inline uint32_t vgpu_hal_channel_gp_get(struct vgpu_hal_channel *ch)
{
	return ch->hal->ops->channel_gp_get(ch);
}

/* VGPU_CHANNEL_OK, or VGPU_CHANNEL_ERROR with the error (if last_error). */
static inline enum vgpu_hal_channel_state
vgpu_hal_channel_state(struct vgpu_hal_channel *ch, struct vgpu_hal_event *last_error)
{
	return ch->hal->ops->channel_state(ch, last_error);
}

/*
 * Kill the channel's context as a fatal fault would: the channel goes to
 * VGPU_CHANNEL_ERROR with cause (and address 0), VGPU_EVENT_CHANNEL_ERROR is
 * raised once, and nothing of the channel runs any more. Work already done
 * stays done; a command step already on an engine finishes first (the call
 * waits for it: on return nothing of the channel touches memory, so the
 * caller may move the channel's memory). It never waits for the channel to
 * make progress (an acquire that cannot complete ends at once), nor for the
 * work it has queued: from the call on the channel gets no new turn, so the
 * wait is bounded by one turn (a time slice) however much is queued. Killing a
 * channel already in error does nothing. Safe from any thread but the event
 * thread. A backend that cannot stop work it already handed to the GPU
 * (cudagpu) waits for it a bounded time, then returns anyway and holds back
 * the memory that work can still reach from everyone else until it ends
 * (vgpu_hal_vram_held_bytes; vgpu/cudagpu.h "Kill").
 */
static inline void vgpu_hal_channel_kill(struct vgpu_hal_channel *ch,
                                         enum vgpu_hal_error_cause cause)
{
	ch->hal->ops->channel_kill(ch, cause);
}

/*
 * Append one privileged entry at the real ring's GP_PUT and advance GP_PUT.
 * The pushbuffer it references lives in the implementation's reserved VA
 * range and is privileged, so the channel's own work cannot alter it. The
 * caller must own the real ring (the guest writes a shadow while the channel
 * is suspended). For VGPU_PRIV_FENCE *ticket receives a value that the
 * matching VGPU_EVENT_PRIV_FENCE carries. -ENOSPC when the ring is full
 * (GP_PUT + 1 == GP_GET); -EIO when the channel is in error.
 */
static inline int vgpu_hal_channel_priv_submit(struct vgpu_hal_channel *ch,
                                               enum vgpu_hal_priv_cmd cmd, uint64_t *ticket)
{
	return ch->hal->ops->channel_priv_submit(ch, cmd, ticket);
}

/*
 * Append up to count VGPU_PRIV_NOP entries in one step (as many as the ring
 * has room for) and advance GP_PUT once: the NOP fill that resumes a
 * suspended channel (docs/DESIGN.md §3.4) appends up to a ring's worth. Returns how
 * many were appended (0 when the ring is full) or -EIO when the channel is
 * in error; otherwise the rules of vgpu_hal_channel_priv_submit. A backend
 * without the batch form gets them one vgpu_hal_channel_priv_submit at a
 * time.
 */
static inline int vgpu_hal_channel_priv_nops(struct vgpu_hal_channel *ch, uint32_t count)
{
	uint32_t appended = 0;

	if (ch->hal->ops->channel_priv_nops)
		return ch->hal->ops->channel_priv_nops(ch, count);
	while (appended < count) {
		uint64_t ticket;
		int ret = ch->hal->ops->channel_priv_submit(ch, VGPU_PRIV_NOP, &ticket);

		if (ret == -ENOSPC)
			break;
		if (ret)
			return appended ? (int)appended : ret;
		appended++;
	}
	return (int)appended;
}

/* Doorbell: hint that GP_PUT moved. Never required for correctness. */
static inline void vgpu_hal_channel_kick(struct vgpu_hal_channel *ch)
{
	ch->hal->ops->channel_kick(ch);
}

/*
 * Queue an asynchronous copy of bytes from src_va to dst_va, both in as
 * (the caller's private DMA address space; privileged mappings allowed), on
 * the copy engine. Copies queued on the GPU run in order, concurrently with
 * compute work; several may be queued at once. Completion raises
 * VGPU_EVENT_COPY_DONE with cookie and status (0, or -EFAULT if a page of
 * either range was not mapped: then the destination content is unspecified).
 * -EINVAL if bytes is 0.
 */
static inline int vgpu_hal_copy(struct vgpu_hal_as *as, uint64_t dst_va, uint64_t src_va,
                                uint64_t bytes, uint64_t cookie)
{
	return as->hal->ops->copy(as, dst_va, src_va, bytes, cookie);
}

/* "Current channel" status register of an engine: the id of the channel
 * whose work the engine is executing, or -1 when idle (the copy engine
 * reports -1 for the private DMA queue). */
static inline int32_t vgpu_hal_engine_current_channel(struct vgpu_hal *hal,
                                                      enum vgpu_hal_engine engine)
{
	return hal->ops->engine_current_channel(hal, engine);
}

/*
 * The channel table's status bit of channel channel_id (LoGA §4.1): true
 * while the channel has work executing or queued (an entry in progress,
 * or GP_PUT ahead of GP_GET in its real ring, fetching enabled or not);
 * false when it has none, when it was killed, or when no channel has that
 * id. Together with vgpu_hal_engine_current_channel it tells an accounting
 * thread whether the engine is busy with that channel or idle. Never
 * waits; callable from any thread at a high rate.
 */
static inline bool vgpu_hal_channel_pending(struct vgpu_hal *hal, uint32_t channel_id)
{
	return hal->ops->channel_pending(hal, channel_id);
}

/* Modeled time the engine has been busy since the GPU was created, in ns. */
static inline uint64_t vgpu_hal_engine_modeled_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	return hal->ops->engine_modeled_ns(hal, engine);
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_HAL_H */
