/* SPDX-License-Identifier: MIT */
/*
 * cudagpu.h - the HAL (vgpu/hal.h) on a real NVIDIA GPU, through the CUDA
 * driver API.
 *
 * cudagpu is always compiled: it opens libcuda.so.1 with dlopen at run time
 * and resolves the driver API functions it uses itself, so no build of the
 * project needs CUDA. On a machine without the driver or a GPU,
 * cudagpu_create fails with a clear reason and nothing else changes.
 *
 * How the GPUswap concepts map onto the driver API
 *  - A GPU address space is one cuMemAddressReserve range (2^va_bits bytes)
 *    inside the one CUDA context cudagpu owns; address-space VA v is the
 *    CUDA virtual address base + v.
 *  - VRAM is a pool of physical allocations (cuMemCreate, device location)
 *    of the allocation granularity, 2 MiB (VGPU_PAGE_2M). A "VRAM address"
 *    is index * 2 MiB in that pool. Every VRAM page is also mapped once in a
 *    private aperture (for scrubbing).
 *  - Host buffers whose size is a multiple of 2 MiB are host-NUMA physical
 *    allocations (cuMemCreate, CU_MEM_LOCATION_TYPE_HOST_NUMA), which
 *    cuMemMap places at any GPU virtual address: an evicted chunk stays at
 *    its VA and kernels keep running on it over the bus. Smaller host buffers
 *    (channel windows) are memfd pages pinned with cuMemHostRegister: the CPU
 *    and a guest share them (vgpu_hal_host_share), the GPU reaches them at
 *    their registered device address, and they can be mapped with 4 KiB
 *    pages for SYSMEM targets only (caps.sysmem_page_size_mask).
 *  - as_map/as_unmap of 2 MiB pages are cuMemUnmap + cuMemMap +
 *    cuMemSetAccess (the PTE rewrite; the driver invalidates the TLB).
 *    4 KiB SYSMEM mappings are kept in cudagpu's own page table and
 *    resolved by the submission thread.
 *  - The copy engine is cuMemcpyAsync on a dedicated stream.
 *  - Channels: control page and GPFIFO ring in memfd-backed memory exactly
 *    as on simgpu (vgpu/abi/commands.h). A submission thread ("PFIFO")
 *    round-robins runnable channels one GPFIFO entry at a time, checks every
 *    command's addresses against the address space's mappings (refusing a
 *    command that leaves them, which kills the channel with the same error
 *    as simgpu) and issues it on the channel's CUDA stream: copies, memsets,
 *    semaphores, launches of the built-in kernels (PTX loaded with
 *    cuModuleLoadData).
 *  - Counters: busy time per address space measured with CUDA events
 *    around each command; bytes per target counted from the commands'
 *    resolved ranges; the compute engine's current channel is the channel
 *    whose work was issued last and has not completed.
 *
 * Isolation (cudagpu_config.isolation)
 *  - CUDAGPU_ISOLATION_NONE: everything above runs in the caller's process,
 *    in one CUDA context. Contexts of one process are not isolated from each
 *    other on NVIDIA GPUs, so the VMs are kept apart only by cudagpu's
 *    checks of the built-in kernels' arguments, and a fault in the context
 *    (an illegal address) ends every VM's work.
 *  - CUDAGPU_ISOLATION_PROCESS: processes are isolated, so each address
 *    space that gets a channel is run by a GPU worker process of its own
 *    (the program vgpu-gpu-worker, exec'ed by cudagpu; CUDA state does not
 *    survive fork). The caller's process keeps the VRAM pool and host
 *    buffers, made exportable (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
 *    the IOVA table, every address space's page table (a shadow: no
 *    mapping of it in the caller's context), CPU access (as_read/as_write
 *    through its apertures) and the copy engine, whose ranges it resolves
 *    through its apertures too: only trusted work runs in its context. The
 *    worker has its own context, the address space's VA reservation, the
 *    physical allocations it was sent (imported once each, then named by
 *    page index or buffer key) mapped where the page table says, the
 *    channels' streams and the submission thread for them; their windows
 *    are the same memfds. as_map/as_unmap and channel operations are
 *    forwarded (one as_map of N pages is one request), and the worker
 *    sends the events back.
 *    A worker whose context faults, that dies or that does not answer
 *    within worker_timeout_ms is killed and reaped; its channels go to
 *    VGPU_CHANNEL_ERROR (cause VGPU_FAULT_UNMAPPED for a context fault,
 *    VGPU_FAULT_TIMEOUT for a death or a hang) with one
 *    VGPU_EVENT_CHANNEL_ERROR each. Memory is untouched: the next
 *    channel_create on the address space starts a fresh worker that maps
 *    the same physical pages again, so the VM's data survives, and no
 *    other address space notices.
 *    channel_create fails with -EIO when no worker can be started (the
 *    binary is missing, or the worker cannot open the GPU or import the
 *    memory), with -ENOSPC/-ENOMEM/-EINVAL as the HAL says otherwise.
 *    The worker binary is, in this order: $VGPU_GPU_WORKER, config
 *    worker_path, "vgpu-gpu-worker" in the directory of the running
 *    executable, then the installed one (VGPU_GPU_WORKER_INSTALLED).
 *  The default is NONE: the process mode has run only on the CPU stand-in
 *  for the driver so far (tests/cudagpu/fake_libcuda.c), not on a GPU.
 *
 * Kill (channel_kill, channel_destroy). A kernel already issued to a
 * stream cannot be stopped short of resetting the whole context, so a
 * channel that must die is ended without waiting for it:
 *  - at once, nothing more of the channel is issued (it gets no turn);
 *    the work already issued is bounded (max_entries_in_flight,
 *    max_ops_in_flight);
 *  - the call then waits for that work at most kill_wait_ms, polling
 *    the stream. It never waits longer, however long the kernels run;
 *  - work still running then makes the channel a zombie and its address
 *    space's memory quarantined: every VRAM page and host buffer mapped
 *    in it then or later, until the work ends, is neither scrubbed nor
 *    handed out again when its owner frees it (vram_free_bytes does not
 *    count it); a destroyed channel's stream and a destroyed address
 *    space's VA range are kept too. The submission thread polls the
 *    zombies' streams every round; when one is done, what it held is
 *    released (quarantined pages scrubbed, then free). Another VM never
 *    gets memory the killed work can still write, and the caller may
 *    move the VM's memory as after any kill; the killed VM's own data
 *    may still change under the late work (it is its own doing).
 *  Under CUDAGPU_ISOLATION_NONE the late work runs in the shared context:
 *  if it touches memory its VM no longer maps (moved meanwhile), the
 *  context faults as for any bad access and every VM's work ends (see
 *  "Isolation"). Under CUDAGPU_ISOLATION_PROCESS the worker does the
 *  bounded wait, and a channel whose work does not end in time has its
 *  worker killed (a context reset for that VM alone), so nothing is left
 *  running.
 *
 * Threading: every operation is thread-safe (hal.h). Threads: the
 * submission thread, which also polls completions and delivers events
 * (VGPU_EVENT_FENCE, PRIV_FENCE, CHANNEL_ERROR, COPY_DONE) with no cudagpu
 * lock held. In the process mode, one more thread per live worker reads
 * its socket and delivers its channels' events (one at a time with the
 * submission thread's: the handler is never called concurrently).
 */
#ifndef VGPU_CUDAGPU_H
#define VGPU_CUDAGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cudagpu_isolation {
	CUDAGPU_ISOLATION_NONE = 0,    /* one context in the caller's process */
	CUDAGPU_ISOLATION_PROCESS = 1, /* a worker process per address space */
};

struct cudagpu_config {
	int device;                  /* CUDA device ordinal, default 0 */
	/* VRAM budget in bytes (a multiple of 2 MiB): the pool cudagpu takes
	 * from the GPU at start. 0 (default) = 90% of the GPU's free memory,
	 * less what cudagpu needs for itself. A budget below the GPU's size
	 * lets tests oversubscribe a large GPU quickly. */
	uint64_t vram_bytes;
	uint32_t max_channels;       /* default 64 */
	uint32_t max_address_spaces; /* default 64 */
	uint32_t default_gpfifo_entries; /* default 512 */
	uint32_t max_gpfifo_entries;     /* default 65536 */
	uint32_t max_stream_passes;      /* as simgpu, default 4096 */
	uint64_t max_random_updates;     /* as simgpu, default 2^32 */
	/* The submission thread's turns, as simgpu's PFIFO (vgpu/simgpu.h):
	 * a channel's turn issues at most timeslice_commands units (a command,
	 * or 4 MiB of a COPY/MEMSET, which resumes next turn; default 256, at
	 * least 1), so one channel's huge pushbuffer cannot hold the thread
	 * while others wait. The GPU itself time-slices the streams. */
	uint32_t timeslice_commands;
	/* A channel has at most this many GPFIFO entries issued to its stream
	 * and not yet finished (default 32, at least 1): its fetch waits for
	 * the GPU beyond that, so a tenant cannot queue unbounded work on the
	 * GPU, and a kill or a drain waits for at most this much of it. */
	uint32_t max_entries_in_flight;
	/* And at most this many GPU operations (launches, copies, memsets,
	 * semaphore writes) issued to its stream and not finished (default
	 * 256, at least 1): one entry can hold thousands of commands. The
	 * driver's queue of a stream holds about a thousand operations and
	 * a launch into a full one blocks its caller; with this bound the
	 * submission thread never meets a full queue (one command's
	 * operations may go past the bound: at most one 4 MiB window's
	 * pieces), so one channel's backlog cannot stall the others. */
	uint32_t max_ops_in_flight;
	/* A kill or destroy waits at most this long (wall time) for the
	 * work the channel already issued (see "Kill" above; default 1000,
	 * at least 1). */
	uint32_t kill_wait_ms;
	/* A SEMAPHORE_ACQUIRE that waits longer (wall time) kills its channel
	 * with VGPU_FAULT_TIMEOUT; 0 = never; default 10000. A kernel already
	 * issued cannot be stopped short of resetting the whole context, so
	 * cudagpu has no watchdog on a command's running time. */
	uint32_t acquire_timeout_ms;
	/* Process isolation: a VM's own kernel (LAUNCH_FUNCTION) still
	 * running after this long (wall time, from its launch or the end of
	 * the one before it in its channel) is the watchdog's: the worker's
	 * context cannot stop one kernel, so the worker goes and its channels
	 * end with VGPU_FAULT_TIMEOUT (a new worker takes the VM's next
	 * channel). 0 = never; default 10000. */
	uint32_t function_watchdog_ms;
	/* See "Isolation" above; default CUDAGPU_ISOLATION_NONE. */
	enum cudagpu_isolation isolation;
	/* The worker program (NULL: the search order above). */
	const char *worker_path;
	/* A worker that does not answer a request, or whose heartbeat stops,
	 * for this long is taken as hung and killed (default 10000). */
	uint32_t worker_timeout_ms;
};

/* "none" / "process" <-> enum cudagpu_isolation; -EINVAL for others. */
int cudagpu_isolation_parse(const char *text, enum cudagpu_isolation *out);
const char *cudagpu_isolation_name(enum cudagpu_isolation isolation);

/* Process isolation only: the process id of the worker running as, or -1
 * when none runs (no channel yet, or it was lost). For tests. */
int cudagpu_worker_pid(struct vgpu_hal_as *as);

void cudagpu_config_defaults(struct cudagpu_config *config);

/*
 * Open the GPU. On failure, error (vgpu/error.h; may be NULL) says what is
 * missing:
 *  -ENOENT   no CUDA driver ("libcuda.so.1 not found")
 *  -ENODEV   no CUDA device (or the ordinal does not exist)
 *  -ENOTSUP  the GPU or driver cannot map host memory into a virtual
 *            address range (CUDA >= 12.2 and a host NUMA node needed)
 *  -ENOMEM   the VRAM budget cannot be allocated
 *  -EINVAL   an inconsistent config
 *  -EIO      another driver error (named in error)
 */
int cudagpu_create(const struct cudagpu_config *config, struct vgpu_hal **out,
                   struct vgpu_error *error);

/* True when hal was made by cudagpu_create. */
bool cudagpu_is_cudagpu(const struct vgpu_hal *hal);

/* Where the PTE rewrite's time goes: wall time spent in the driver's
 * mapping calls since the GPU was opened (monotonic), for the benchmark's
 * eviction breakdown. */
struct cudagpu_map_timing {
	uint64_t unmap_ns, unmap_calls;      /* cuMemUnmap */
	uint64_t map_ns, map_calls;          /* cuMemMap */
	uint64_t set_access_ns, set_access_calls; /* cuMemSetAccess */
};
void cudagpu_map_timing(struct vgpu_hal *hal, struct cudagpu_map_timing *out);

/* Device name, driver version ("NVIDIA H100 80GB HBM3, driver 13.0") into
 * buf, for reports. */
const char *cudagpu_describe(struct vgpu_hal *hal, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CUDAGPU_H */
