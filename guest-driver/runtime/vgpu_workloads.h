/* SPDX-License-Identifier: MIT */
/*
 * vgpu_workloads.h - the GPU workloads vgpu-tenant (and later the in-guest
 * vgpu-run) runs on a vGPU, each verified byte for byte by checksum.
 *
 * Every workload allocates its data as buffers of at most buffer_bytes,
 * initialises them on the GPU (FILL kernel with a per-buffer seed derived
 * from seed), runs iterations until the duration has passed or the
 * iteration count is reached, then has the GPU checksum every buffer
 * (CHECKSUM kernel, result in the channel's notifier page) and compares with
 * the checksum the CPU references of vgpu/abi/kernels.h give for what the
 * buffer must hold. Finally it frees everything.
 *
 *   stream      size bytes of 64-bit words; an iteration is one STREAM pass
 *               over every buffer (x := a x + c). Verification needs no copy
 *               of the data on the CPU.
 *   stencil     size bytes as pairs of grids (in, out) of 1024-cell rows of
 *               uint32; an iteration is one 5-point STENCIL of every grid,
 *               ping-ponging. The CPU replays each grid (2 x buffer_bytes of
 *               host memory at a time).
 *   gups        size bytes of tables; an iteration is RANDOM_ACCESS with
 *               updates = table words / 4 per table (GUPS). The CPU replays
 *               each table (buffer_bytes of host memory at a time).
 *   alloc-leak  the GPUswap paper's `alloc`: allocate buffers of
 *               buffer_bytes (default 32 MiB) one by one, filling each, until
 *               size is allocated (or the VM's cap/host budget refuses: then
 *               target_reached is false and it carries on with what it has),
 *               hold them for the duration, verify, free.
 *   escape      hostile: allocates and fills size bytes like the others,
 *               then tries to reach GPU memory that is not its own, each
 *               attempt on a fresh channel of its own:
 *                 (a) a STREAM kernel over its last buffer extended past the
 *                     buffer's end by buffer_bytes;
 *                 (b) a FILL kernel of buffer_bytes far from anything it
 *                     allocated (see VGPU_ESCAPE_FAR_BYTES);
 *                 (c) a COPY command (the copy path, not a kernel) of its
 *                     first buffer to the unallocated addresses right after
 *                     everything it holds.
 *               The GPU must refuse each one by killing that channel (the
 *               runtime says -EIO), and the buffers must verify afterwards:
 *               as filled, except that (a)'s buffer may hold one STREAM
 *               pass if the GPU ran the kernel up to the fault at the
 *               buffer's end (simgpu runs kernels page by page; cudagpu
 *               refuses the launch before it runs) - anything else is a
 *               mismatch. An attempt that completes, or ends any other way,
 *               fails the run (error -EACCES when one completed; the
 *               message names it). No iterations: duration and iterations
 *               are ignored.
 *   soak        a VM's life in random steps (./vgpu-dev soak), each
 *               iteration one step drawn from a PRNG seeded with seed:
 *                 allocate  a buffer of 1 .. buffer_bytes (a whole number
 *                           of the vGPU's chunks, one in four shortened by
 *                           a random number of pages: a remainder chunk),
 *                           FILLed with a seed of its own;
 *                 free      checksum a random buffer, then free it;
 *                 submit    a STREAM pass over a random buffer;
 *                 verify    checksum a random buffer;
 *                 detach    checksum every buffer, destroy the channel and
 *                           detach holding the buffers (the backend frees
 *                           them), attach again, new channel; only with a
 *                           reattach hook (vgpu-tenant gives one), else
 *                           skipped.
 *               It holds at most size bytes (allocate turns into free when
 *               a buffer would not fit) and allocates whenever it holds less
 *               than a quarter of size. Every checksum is compared with
 *               the CPU's reference for the buffer's seed and STREAM passes;
 *               at the end every buffer is checked. Runs for the duration
 *               or the iterations (steps); neither: 1000 steps. An ALLOC
 *               refused (-ENOMEM, -ENOSPC, or BUSY once its retries are
 *               spent) is counted and the step skipped.
 *   copy-flood  hostile to the GPU's scheduler: allocates and fills size
 *               bytes (at least two buffers), copies buffer 0 over buffer
 *               1, then queues VGPU_FLOOD_BYTES of pushbuffer at once
 *               holding nothing but maximal COPY commands (all of buffer 1
 *               back and forth between buffers 0 and 1). A channel's
 *               pushbuffer ring holds two of its largest submissions (about
 *               120 KiB each), so the flood uses as many extra channels as
 *               it needs (five). Each copy is as long as the VM's memory
 *               allows, so the flood keeps a GPU busy far longer than a
 *               test runs; it ends when stop is set (the usual way) or when
 *               the GPU completed all of it. Then it destroys the flood
 *               channels without waiting for them and verifies its buffers
 *               (copies of identical data change nothing) on its first
 *               channel. iterations counts the flood's submissions;
 *               duration and iterations are ignored.
 *   never-release
 *               hostile: allocates and fills size bytes like the others,
 *               then submits a SEMAPHORE_ACQUIRE on a word of its notifier
 *               page that nothing ever releases, and holds everything for
 *               the duration (until stopped when there is none). Meanwhile
 *               it asks the backend for its STATS every 20 ms and records
 *               the slowest answer (stats_probes, stats_ms_max): a backend
 *               that waits for the stuck channel while relocating this VM
 *               must still answer. Afterwards it verifies its data on a
 *               fresh channel (as filled) and reports whether the backend
 *               killed the stuck channel (acquire_killed; -EIO from the
 *               runtime). Passes when the data verifies.
 *   staller     hostile: never-release that re-arms: whenever the backend
 *               kills its parked channel it parks a fresh one the same way
 *               at once, so every eviction round finds a channel that
 *               never drains (hog_rearms counts them).
 *   stall       hostile: the never-released acquire. One channel waits on a
 *               semaphore nobody releases (SEMAPHORE_ACQUIRE of a notifier
 *               scratch word for a value it never reaches), followed by a
 *               fence with the interrupt flag; the workload waits for that
 *               fence for the duration (default VGPU_STALL_DEFAULT_NS) and
 *               ends with how the wait ended, in error and message: -ENODEV
 *               the device was lost (its backend went away), -EIO the GPU
 *               killed the channel (a watchdog), -ETIMEDOUT nothing happened,
 *               -EPROTO the fence passed. stall_wait_ns says how long it
 *               waited. It allocates and verifies nothing; size, buffer size
 *               and iterations are ignored.
 *
 *   hog         hostile: allocates and fills size bytes, then keeps its
 *               channel's ring full of long but watchdog-legal STREAM
 *               kernels over its first buffer (thousands queued, each far
 *               below the watchdog) until stopped (or the duration ends);
 *               a channel the backend kills is replaced by a fresh one at
 *               once (it re-arms). hog_kernels counts the kernels queued,
 *               hog_rearms the channels killed. Its first buffer is not
 *               verified (STREAM rewrites it); the others are, on a fresh
 *               channel. Passes when they verify.
 *   throttle    LoGA §5.2's load generator: allocates and fills size bytes
 *               like the others, then each iteration launches one THROTTLE
 *               kernel of kernel_ns (simgpu: that much engine time, no
 *               memory; in paced mode that much wall time), waits for it
 *               and sleeps gap_ns, so the GPU load is kernel ÷ (kernel +
 *               gap). Verifies its data (as filled) at the end. simgpu
 *               only: cudagpu has no THROTTLE kernel.
 * An ALLOC answered BUSY (-EAGAIN: the backend could not make room right
 * now and changed nothing) is retried with backoff for a few seconds.
 *
 * The workload stops early (and still verifies and frees) when *stop
 * becomes nonzero (e.g. from a signal handler).
 */
#ifndef VGPU_WORKLOADS_H
#define VGPU_WORKLOADS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vgpu_workload_kind {
	VGPU_WORKLOAD_STREAM,
	VGPU_WORKLOAD_STENCIL,
	VGPU_WORKLOAD_GUPS,
	VGPU_WORKLOAD_ALLOC_LEAK,
	VGPU_WORKLOAD_ESCAPE,
	VGPU_WORKLOAD_SOAK,
	VGPU_WORKLOAD_COPY_FLOOD,
	VGPU_WORKLOAD_NEVER_RELEASE,
	VGPU_WORKLOAD_STALL,
	VGPU_WORKLOAD_THROTTLE,
	VGPU_WORKLOAD_HOG,
	VGPU_WORKLOAD_STALLER,
};

/* throttle's defaults: kernels of 1000 us, no gap. */
#define VGPU_THROTTLE_DEFAULT_KERNEL_NS 1000000ull

/* soak without duration or iterations: this many steps. */
#define VGPU_SOAK_DEFAULT_STEPS 1000

/* copy-flood: pushbuffer bytes it submits in all (simgpu's largest entry). */
#define VGPU_FLOOD_BYTES (1u << 20)

#define VGPU_WORKLOAD_DEFAULT_SIZE (256ull << 20)
#define VGPU_WORKLOAD_DEFAULT_BUFFER (32ull << 20)

/*
 * escape's far target (b): its first buffer's GPU VA + VGPU_ESCAPE_FAR_BYTES,
 * brought down below VGPU_ESCAPE_VA_LIMIT, 2 MiB aligned (and past
 * everything the VM holds). A guest learns neither the width of its GPU
 * address space nor where the HAL's reserved range begins (QUERY has
 * neither; hal.h keeps [caps.va_reserved_base, 2^va_bits) for the
 * implementation): the narrowest space a HAL of this project gives a VM is
 * cudagpu's 2^37 bytes, its top 1 GiB reserved (simgpu: 2^40), so 2^36 is
 * inside every one and below every reserved base. The attempt then meets
 * unmapped addresses of the VM's own address space, not the HAL's.
 */
#define VGPU_ESCAPE_FAR_BYTES (1ull << 40)
#define VGPU_ESCAPE_VA_LIMIT (1ull << 36)
#define VGPU_ESCAPE_ATTEMPTS 3
/* How long an escape attempt may take to be refused (ms). */
#define VGPU_ESCAPE_TIMEOUT_MS 30000
/* How long stall waits without a duration. */
#define VGPU_STALL_DEFAULT_NS (60ull * 1000000000ull)

/* One escape attempt: what it aimed at and how it ended. */
struct vgpu_escape_attempt {
	const char *name;     /* "stream-past-end", "fill-far", "copy-out" */
	const char *what;     /* in words */
	uint64_t gpu_va;      /* first address it reaches that the VM does not own */
	uint64_t bytes;       /* of the command's range outside the VM's memory */
	int error;            /* what the runtime said: -EIO = the GPU killed the
	                         channel; 0 = it completed */
	bool tried;
	bool refused;         /* error == -EIO */
};

struct vgpu_workload_options {
	enum vgpu_workload_kind kind;
	uint64_t size_bytes;   /* data to allocate; 0 = VGPU_WORKLOAD_DEFAULT_SIZE */
	uint64_t buffer_bytes; /* largest buffer; 0 = VGPU_WORKLOAD_DEFAULT_BUFFER */
	/* Iterate until duration_ns passed or iterations are done, whichever
	 * comes first, but at least once; both 0: one iteration. The duration
	 * counts from the first iteration, once the data is allocated and
	 * filled (alloc-leak: it is how long the memory is held). */
	uint64_t duration_ns;
	uint64_t iterations;
	uint64_t seed;
	uint32_t priority;     /* ALLOC priority hint, 0..15 */
	uint32_t gpfifo_entries; /* 0 = the backend's default */
	uint64_t kernel_ns;    /* throttle: kernel length; 0 = the default */
	uint64_t gap_ns;       /* throttle: idle time after each kernel */
	volatile sig_atomic_t *stop; /* optional */
	/* Optional, for tests: called once the iterations are done, right
	 * before verification, with the buffers the workload holds (soak:
	 * before each of its checksum steps, once the GPU is idle). */
	void (*before_verify)(void *arg, struct vgpu_guest_device *dev,
	                      const struct vgpu_guest_buffer *buffers, uint64_t count);
	/* Optional, for tests (escape): called before each attempt is
	 * submitted, with its target filled in. */
	void (*before_escape)(void *arg, struct vgpu_guest_device *dev,
	                      const struct vgpu_escape_attempt *attempt);
	/* Optional (never-release): called once its memory is filled and the
	 * acquire submitted, when the hold begins. */
	void (*on_hold)(void *arg);
	/* Optional (stall): called once its fence is submitted, right before
	 * the wait, with how long it will wait at most. */
	void (*stalled)(void *arg, struct vgpu_guest_device *dev, uint64_t wait_ns);
	void *hook_arg;
	/* soak's detach step: close *dev (the VM detaches holding its
	 * buffers) and attach again into *dev; 0, or a negative errno with
	 * why filled in. NULL: soak never detaches. */
	int (*reattach)(void *arg, struct vgpu_guest_device **dev, char *why, size_t why_len);
	void *reattach_arg;
};

/* What soak's steps did. */
struct vgpu_soak_counts {
	uint64_t allocs;        /* buffers allocated */
	uint64_t alloc_refused; /* ALLOCs refused: -ENOMEM, -ENOSPC, or BUSY (-EAGAIN)
	                           after the retries */
	uint64_t frees;
	uint64_t streams;       /* STREAM passes submitted */
	uint64_t verifies;      /* verify steps (checksums of free and detach count apart) */
	uint64_t detaches;      /* detached holding buffers and attached again */
	uint64_t buffers_dropped; /* buffers held (verified) at a detach */
};

struct vgpu_workload_result {
	const char *workload;
	bool verified;             /* every checksum matched */
	bool target_reached;       /* all of size_bytes could be allocated */
	int error;                 /* 0, or the negative errno that ended the run */
	char message[320];         /* why it failed, in words ("" if it did not) */
	uint64_t bytes_allocated;  /* most held at once */
	uint64_t buffers;
	uint64_t iterations;
	uint64_t submissions;
	uint64_t checksums;        /* buffers verified */
	uint64_t mismatches;       /* of which wrong */
	uint64_t alloc_ns_max;     /* slowest ALLOC round trip */
	uint64_t alloc_ns_total;
	uint64_t alloc_retries;    /* ALLOCs answered BUSY and retried */
	double wall_seconds;       /* whole run, allocation to free */
	double verify_seconds;     /* of which verification (GPU + CPU) */
	/* escape: attempts made and refused by the GPU, in order (a), (b), (c). */
	uint32_t escapes_tried;
	uint32_t escapes_refused;
	struct vgpu_escape_attempt escapes[VGPU_ESCAPE_ATTEMPTS];
	/* soak: what its steps did. */
	struct vgpu_soak_counts soak;
	/* copy-flood: COPYs submitted, of which the GPU completed before the
	 * flood ended, each copy_bytes long, in pushbuffer_bytes. */
	uint64_t flood_copies;
	uint64_t flood_copies_done;
	uint64_t flood_copy_bytes;
	uint64_t flood_pushbuffer_bytes;
	/* never-release: whether the stuck channel was killed, and the STATS
	 * requests made while it held (count, slowest round trip). */
	bool acquire_submitted;
	bool acquire_killed;
	uint64_t stats_probes;
	uint64_t stats_ns_max;
	/* hog: STREAM kernels queued; hog and staller: channels killed under
	 * it (re-armed). */
	uint64_t hog_kernels;
	uint64_t hog_rearms;
	/* stall: how long its wait lasted, counted from before the stalled
	 * hook (so it covers anything the hook set off). */
	uint64_t stall_wait_ns;
	/* The VM's STATS just before the buffers were freed. */
	bool have_stats;
	struct vgpu_stats_response stats;
};

/* Fill in *out; the return value is out->error. A run whose data did not
 * verify returns 0 with out->verified false. */
int vgpu_workload_run(struct vgpu_guest_device *dev, const struct vgpu_workload_options *options,
                      struct vgpu_workload_result *out);

const char *vgpu_workload_name(enum vgpu_workload_kind kind);
/* "stream", "stencil", "gups", "alloc-leak" (also "alloc"), "escape",
 * "soak", "copy-flood", "never-release", "stall", "throttle", "hog", "staller". -EINVAL. */
int vgpu_workload_parse(const char *name, enum vgpu_workload_kind *out);

/* "256M", "1G", "1.5GiB", "4096", "64k": bytes. -EINVAL, -ERANGE. */
int vgpu_parse_size(const char *text, uint64_t *bytes);
/* bytes for people, to a tenth of the largest binary unit not above it:
 * "512 B", "1.5 KiB", "2.0 GiB". */
void vgpu_format_bytes(uint64_t bytes, char *buf, size_t len);
/* "10s", "500ms", "2m", "1h", "250us", "3" (seconds): nanoseconds. */
int vgpu_parse_duration(const char *text, uint64_t *ns);

/* The CPU side of verification, exposed for tests. */

/* Checksum of a FILL(seed) range after passes STREAM passes, in O(bytes)
 * whatever passes is. */
uint64_t vgpu_reference_fill_stream_checksum(uint64_t seed, uint64_t bytes, uint64_t passes);
/* Seed of buffer index of a run with seed (what FILL and RANDOM_ACCESS get). */
uint64_t vgpu_workload_buffer_seed(uint64_t seed, uint64_t index, uint64_t iteration);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_WORKLOADS_H */
