/* SPDX-License-Identifier: MIT */
/*
 * simgpu.h - the software GPU behind the HAL (vgpu/hal.h).
 *
 * simgpu is the GPU this project drives by default. It implements every
 * operation of struct vgpu_hal_ops and is faithful to the constraints that
 * make GPUswap hard:
 *
 *  - VRAM of a configured size, backed sparsely by one anonymous
 *    MAP_NORESERVE mapping: VRAM never touched costs no host memory. The top
 *    of VRAM is reserved for page tables and instance memory (privileged
 *    pushbuffers) and excluded from caps.vram_bytes.
 *  - vgpu_hal_vram_scrub zeroes in place the VRAM pages that have host
 *    memory (mincore) and drops the rest (MADV_DONTNEED), so the next writer
 *    of scrubbed VRAM (a return copy, a kernel) does not fault on every
 *    4 KiB page. The trade-off is memory: a VRAM page once written keeps its
 *    host page after it is scrubbed and freed, so simgpu's host RAM for VRAM
 *    covers every VRAM page ever written (at most vram_bytes), not only the
 *    VRAM in use. config.vram_scrub_release trades the other way.
 *  - Host system RAM reachable only through an IOMMU (IOVA -> host page, with
 *    an IOTLB per engine that is flushed on unmap). An unmapped IOVA faults.
 *    Host buffers are memfd-backed, so vgpu_hal_host_share works; IOVAs are
 *    allocated first-fit from 4 GiB up (never 0). Buffers still alive at
 *    vgpu_hal_destroy are released rather than leaked.
 *  - Per-address-space multi-level page tables stored IN the reserved VRAM and
 *    walked from memory, with 4 KiB and 64 KiB pages (each page directory
 *    entry points to a small and a large page table, as on Fermi; the large
 *    page wins when both are valid). PTE fields: valid, target (VRAM,
 *    SYSMEM coherent, SYSMEM non-coherent), read-only, privileged, address,
 *    and a referenced bit that only exists when config.reference_bits is set.
 *  - A per-address-space TLB that keeps serving stale translations until
 *    vgpu_hal_as_tlb_invalidate; as_map and as_unmap never invalidate it.
 *  - No recoverable faults: an unmapped VA, a write to a read-only page, a
 *    user access to a privileged page or an unmapped IOVA kills the faulting
 *    channel (state VGPU_CHANNEL_ERROR, one VGPU_EVENT_CHANNEL_ERROR event);
 *    other channels keep running. A malformed pushbuffer or GPFIFO entry does
 *    the same with VGPU_FAULT_BAD_COMMAND. Nothing a pushbuffer contains can
 *    crash simgpu.
 *  - Channels in the format of vgpu/abi/commands.h: control page and GPFIFO
 *    ring in memfd-backed shared memory (vgpu_hal_channel_info.memfd), GP_GET
 *    written only by simgpu, a PFIFO that round-robins runnable channels at
 *    most one GPFIFO entry per turn, each turn bounded by a time slice
 *    (config.timeslice_ns of modeled time, config.timeslice_commands
 *    commands): long COPY, MEMSET and kernels are split at page spans and
 *    resumed, an unsatisfied SEMAPHORE_ACQUIRE yields, and a watchdog kills
 *    a channel whose one command runs too long (config.watchdog_ns) or whose
 *    acquire waits too long (config.acquire_timeout_ms), so no channel can
 *    starve the others. Each channel owns one privileged page at
 *    caps.va_reserved_base + id * 4 KiB of its address space holding the
 *    pushbuffers of privileged entries; which ring slots are privileged is
 *    recorded inside simgpu, so a guest can neither forge nor replay one.
 *  - Address space: 40-bit VA; [2^40 - 1 GiB, 2^40) is reserved.
 *  - Built-in kernels (vgpu/abi/kernels.h) whose every access goes through
 *    the GMMU page by page.
 *  - A modeled clock independent of wall time: every memory transaction costs
 *    latency + bytes / bandwidth of its target. Per-address-space counters of
 *    bytes read and written per target and busy time per engine, and a
 *    "current channel" register per engine, and per channel the channel
 *    table's pending bit (vgpu_hal_channel_pending, from PFIFO's own state).
 *    The same work gives the same modeled times and counters on every run
 *    and every host.
 *  - Paced mode (config.paced, off by default): the modeled clock is tied to
 *    wall time, so polling the registers sees context switches at the
 *    modeled rate (LoGA's accounting); THROTTLE kernels give loads of a
 *    chosen kernel length.
 *  - Optionally (config.sharing = SIMGPU_SHARING_SPATIAL) the address
 *    spaces run side by side on their own SMs: kernels take their modeled
 *    durations from the contention model of the shared TLB, page-table
 *    walkers and DRAM (walker policy and memory scheduler per GPU), and
 *    vgpu_hal_as_contention reports each one's figures. Execution, and so
 *    every byte written, is that of the time-sliced mode.
 *
 * Threading model
 *  - Threads: simgpu starts two threads per GPU.
 *    * PFIFO/compute ("simgpu-pfifo"): polls control pages, fetches GPFIFO
 *      entries round-robin and executes their pushbuffers on the compute
 *      engine (kernels, COPY, MEMSET and semaphores of channel pushbuffers).
 *      It polls adaptively: without pause while channels make progress, then
 *      backing off to sleeps of up to config.pfifo_idle_sleep_max_us, and
 *      with no timeout at all while no channel exists, so an idle GPU costs
 *      next to no CPU. vgpu_hal_channel_kick, priv submissions, fetch enable
 *      and as_write wake it at once.
 *    * copy engine ("simgpu-copy"): runs vgpu_hal_copy requests in order.
 *    Both run concurrently; vgpu_hal_destroy joins them.
 *  - Locks (in acquisition order):
 *    1. PFIFO lock: the channel table and each channel's scheduling state
 *       (GP_GET, fetch enable, error state, privileged entries). Never held
 *       while an entry executes or an event is delivered.
 *    2. Address-space lock, one per address space: page tables, TLB, counters,
 *       referenced bits. Engines hold it for one page-sized access at a time,
 *       so vgpu_hal_as_tlb_invalidate returns only once no engine is still
 *       using a translation it dropped.
 *    3. IOMMU lock (a reader/writer lock, writers preferred): engines read it
 *       for one page-sized access, iommu_map/unmap write it, so a host page
 *       is never touched after vgpu_hal_iommu_unmap returns.
 *    Leaf locks: each VRAM allocator, the copy queue, the event handler.
 *  - Events are delivered on the PFIFO thread (FENCE, PRIV_FENCE,
 *    CHANNEL_ERROR) and on the copy thread (COPY_DONE), with no simgpu lock
 *    held. The handler must not block; it may call every operation not
 *    documented as "may wait" in hal.h (channel_state, channel_priv_submit,
 *    channel_set_fetch, as_map, copy, ...) and vgpu_hal_set_event_handler.
 *    vgpu_hal_set_event_handler called from another thread waits until no
 *    delivery of the old handler is in progress, so after it returns the old
 *    handler is never called again.
 *  - Memory the GPU and the CPU share (control pages, host buffers) follows
 *    the GPU's rules: software publishes GPFIFO entries before GP_PUT with a
 *    release store (vgpu_control_write_gp_put) and reads GP_GET with an
 *    acquire load (vgpu_control_read_gp_get).
 */
#ifndef VGPU_SIMGPU_H
#define VGPU_SIMGPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum simgpu_sharing {
	SIMGPU_SHARING_TIME_SLICED, /* default: one channel's turn at a time */
	SIMGPU_SHARING_SPATIAL,     /* tenants side by side on their own SMs */
};

/* Page-table walker policies (seed 003) and DRAM schedulers (seed 004) of
 * the spatial mode; vgpu-backend/simgpu/contention/README.md. */
enum simgpu_walkers {
	SIMGPU_WALKERS_SHARED,
	SIMGPU_WALKERS_STATIC,
	SIMGPU_WALKERS_DWS,
	SIMGPU_WALKERS_DWSPP,
};

enum simgpu_memsched {
	SIMGPU_MEMSCHED_FRFCFS,
	SIMGPU_MEMSCHED_RR,
	SIMGPU_MEMSCHED_PRIORITY,
	SIMGPU_MEMSCHED_ITS,
	SIMGPU_MEMSCHED_WEIS,
};

struct simgpu_config {
	/* Total VRAM in bytes, a multiple of 64 KiB, at least 16 MiB.
	 * Default 1 GiB. Backed sparsely: only pages written at some point
	 * cost host RAM, and they keep it when scrubbed unless
	 * vram_scrub_release is set. */
	uint64_t vram_bytes;
	/* VRAM kept for page tables and privileged pushbuffers, a multiple of
	 * 64 KiB and less than half of vram_bytes; not part of caps.vram_bytes.
	 * 0 (default) = vram_bytes / 64 clamped to [4 MiB, 256 MiB]. One 4 KiB
	 * page table maps 2 MiB of VA, so 4 MiB covers about 2 GiB of mappings. */
	uint64_t reserved_vram_bytes;

	/* Timing model. A memory transaction (one page span of a streaming
	 * access, or one word of a random access) costs
	 *     latency_ns + bytes / bandwidth
	 * of its target, charged to the engine's modeled clock and the address
	 * space's busy time. The latency is the part of a transaction's latency a
	 * GPU cannot hide behind parallelism. Bandwidth in bytes per second. */
	uint64_t vram_bandwidth;               /* default 900e9 (900 GB/s) */
	uint32_t vram_latency_ns;              /* default 1 */
	uint64_t sysmem_coherent_bandwidth;    /* default 24e9 (snooped PCIe) */
	uint32_t sysmem_coherent_latency_ns;   /* default 22 */
	uint64_t sysmem_noncoherent_bandwidth; /* default 25e9 (PCIe) */
	uint32_t sysmem_noncoherent_latency_ns; /* default 20 */

	uint32_t max_channels;           /* default 64 */
	uint32_t max_address_spaces;     /* default 64 */
	uint32_t default_gpfifo_entries; /* power of two, default 512 */
	uint32_t max_gpfifo_entries;     /* power of two, default 65536 */

	/* vgpu_hal_vram_scrub gives every scrubbed page's host memory back
	 * (MADV_DONTNEED) instead of zeroing pages that have some in place:
	 * host RAM then follows the VRAM in use, and the next write to each
	 * scrubbed 4 KiB page faults (core-bench: a return pass into such
	 * VRAM ran at 0.13 of host memcpy, against about 1.0). Default false. */
	bool vram_scrub_release;

	/* Referenced bits in PTEs (the thesis's hardware wish list). Default
	 * false: vgpu_hal_as_test_and_clear_referenced returns -ENOTSUP. */
	bool reference_bits;

	uint32_t tlb_entries;   /* per address space, power of two, default 512 */
	uint32_t iotlb_entries; /* per engine, power of two, default 256 */

	/* Longest PFIFO sleep while idle, in microseconds (default 1000). It
	 * bounds how late a GP_PUT written without a kick is noticed. */
	uint32_t pfifo_idle_sleep_max_us;

	/*
	 * PFIFO time slicing: a channel's turn on the compute engine ends once
	 * it has completed timeslice_commands commands (default 256) or used
	 * timeslice_ns of modeled engine time (default 100000: 100 us, about
	 * 45 MB of VRAM-to-VRAM COPY or 1.2 MB to or from system RAM at the
	 * default bandwidths). A longer COPY, MEMSET or kernel stops at a page
	 * span (STENCIL: a row; RANDOM_ACCESS: an update) and resumes on the
	 * channel's next turn; results and modeled times are those of an
	 * unsplit run. Both at least 1.
	 */
	uint32_t timeslice_ns;
	uint32_t timeslice_commands;

	/*
	 * Watchdog: a channel whose single command has used more than
	 * watchdog_ns of modeled engine time (summed over its turns; default
	 * 5e9, 5 s; at most 3600 s) is killed like a fatal fault: state
	 * VGPU_CHANNEL_ERROR, one VGPU_EVENT_CHANNEL_ERROR with cause
	 * VGPU_FAULT_TIMEOUT and the command's VA. A SEMAPHORE_ACQUIRE that is
	 * not satisfied yields the engine each turn (no busy wait, no other
	 * channel waits for it) and is killed the same way once it has waited
	 * acquire_timeout_ms of wall time (default 10000: the GPU idles while
	 * an acquire waits, so modeled time does not pass; real GPUs time out
	 * acquires too). 0 switches either check off.
	 */
	uint64_t watchdog_ns;
	uint32_t acquire_timeout_ms;

	/* Users' functions (LAUNCH_FUNCTION, PTX): every global access is a
	 * transaction on the modeled clock like a built-in kernel's, and each
	 * executed thread instruction costs 1 / thread_instructions_per_second
	 * of it (default 2e13: 132 SMs of 128 lanes at 1.2 GHz) for an integer
	 * or single-precision operation, twice that for double precision and
	 * atomics, four times for the special function unit. A grid's blocks
	 * run on function_host_threads host threads (0, the default: one per
	 * online CPU); modeled time does not depend on it. */
	uint64_t thread_instructions_per_second;
	uint32_t function_host_threads;
	/* A piece of a function's grid (a few blocks per host thread) that runs
	 * longer than this in host time is stopped like the watchdog would
	 * (0: the default, 5000 ms): a block cannot pause mid-way. */
	uint32_t function_wall_watchdog_ms;
	/* A launch whose pieces together took longer than this in host time is
	 * stopped like the watchdog would (0: the default, 120000 ms): a grid
	 * of billions of blocks that each cost next to nothing on the modeled
	 * clock would otherwise keep its channel busy for hours. */
	uint32_t function_launch_wall_ms;
	/* Copy engine pacing, for tests that need a relocation to last: each
	 * vgpu_hal_copy takes at least bytes / copy_wall_bandwidth seconds of
	 * wall time (bytes per second; 0, the default: as fast as the host
	 * copies). The modeled clock is not affected. */
	uint64_t copy_wall_bandwidth;

	/* Paced mode (LoGA's experiments): the compute engine's modeled clock
	 * is tied to wall time. Each PFIFO turn lasts at least the modeled
	 * time it charged: the engine sleeps out the rest with the channel's
	 * id in the current-channel register, so a host polling that register
	 * sees context switches at the modeled rate. Pacing is cumulative
	 * while the engine stays busy (a late turn is made up by the next
	 * ones) and starts afresh after the engine idled. Default false: as
	 * fast as the host computes. */
	bool paced;

	/* Bounds on kernel arguments (larger values are
	 * VGPU_FAULT_BAD_KERNEL_ARGS): STREAM passes (default 4096) and
	 * RANDOM_ACCESS updates (default 2^32). */
	uint32_t max_stream_passes;
	uint64_t max_random_updates;

	/*
	 * How tenants (address spaces) share the GPU. SIMGPU_SHARING_TIME_SLICED
	 * (default): the timing above, one command at a time. SPATIAL: every
	 * address space runs on its own equal share of the SMs at the same
	 * time (as with MPS); a kernel's modeled duration comes from the
	 * contention model (simgpu/spatial.h): its request stream through the
	 * shared L2 TLB, page-table walkers (spatial_walkers) and DRAM
	 * (spatial_memsched) beside the other tenants' overlapping kernels, at
	 * spatial_core_mhz (default 1400); a kernel is simulated for at most
	 * spatial_max_cycles (default 2000000) and extrapolated beyond. The
	 * functional results (bytes written, fences, order) are the same in
	 * both modes; vgpu_hal_as_contention reports the per-tenant figures.
	 */
	enum simgpu_sharing sharing;
	enum simgpu_walkers spatial_walkers;   /* default SHARED */
	enum simgpu_memsched spatial_memsched; /* default FRFCFS */
	uint32_t spatial_core_mhz;
	uint64_t spatial_max_cycles;
};

/* Names as in contention-sim: "time-sliced"/"spatial", "shared"/"static"/
 * "dws"/"dws++", "frfcfs"/"rr"/"prio"/"its"/"weis". 0 or -EINVAL. */
int simgpu_sharing_parse(const char *name, enum simgpu_sharing *out);
int simgpu_walkers_parse(const char *name, enum simgpu_walkers *out);
int simgpu_memsched_parse(const char *name, enum simgpu_memsched *out);
const char *simgpu_sharing_name(enum simgpu_sharing sharing);
const char *simgpu_walkers_name(enum simgpu_walkers walkers);
const char *simgpu_memsched_name(enum simgpu_memsched memsched);

/* Fill *config with the documented defaults. */
void simgpu_config_defaults(struct simgpu_config *config);

/*
 * Timing models of real GPUs: set the bandwidths and latencies of *config
 * (nothing else) to those of a named GPU, so modeled figures are comparable
 * with that hardware. "default" is simgpu's own (the defaults above);
 * "h100" an NVIDIA H100 80 GB SXM (HBM3, PCIe Gen5), from measurements by
 * cudagpu's benchmark (vgpu-backend/cudagpu/RESULTS.md says which figure
 * gave which number). -EINVAL for an unknown name.
 */
int simgpu_config_model(struct simgpu_config *config, const char *model);

/* The model names simgpu_config_model accepts, for help texts. */
#define SIMGPU_MODELS "default, h100"

/*
 * Create a software GPU. config may be NULL for the defaults. On success
 * *out is a HAL to drive with the vgpu_hal_* wrappers and to release with
 * vgpu_hal_destroy. -EINVAL for an inconsistent config, -ENOMEM when the
 * host cannot provide the VRAM mapping, or another negative errno when a
 * thread cannot be started.
 */
int simgpu_create(const struct simgpu_config *config, struct vgpu_hal **out);

/* True when hal was made by simgpu_create. */
bool simgpu_is_simgpu(const struct vgpu_hal *hal);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_SIMGPU_H */
