/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the state of the guest libcuda.so.1 shared by its files.
 *
 * One process has one vGPU (struct cu_global, cu_g): the runtime's device
 * (libvgpu-guest), opened by cuInit, and everything made from it. The
 * runtime's device is used by one thread at a time, so every entry point
 * that touches it holds cu_g.lock (cu_lock/cu_unlock); waits for the GPU
 * drop the lock between polls (cu_wait_fence), so one thread's
 * synchronization does not stall another's submissions.
 *
 * Handles (contexts, streams, events, modules, functions) are checked
 * against the lists they live in before use: a stale or foreign handle is
 * CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT, never a crash.
 */
#ifndef VGPU_CUDA_INTERNAL_H
#define VGPU_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cuda.h"
#include "vgpu_cuda_ext.h"
#include "vgpu_guest.h"

#include "device_limits.h"
#include "ptrtable.h"

#define CU_CTX_MAGIC 0x43545843u    /* "CXTC" */
#define CU_STREAM_MAGIC 0x4d525453u /* "STRM" */
#define CU_EVENT_MAGIC 0x544e5645u  /* "EVNT" */
#define CU_MODULE_MAGIC 0x4c444f4du /* "MODL" */

#define CU_ERROR_MESSAGE_BYTES 512

struct CUstream_st {
	uint32_t magic;
	struct CUctx_st *ctx;
	struct CUstream_st *next;
	unsigned int flags;
	int priority;
	bool is_null;              /* the context's legacy default stream */
	struct vgpu_channel *ch;   /* created on first use */
	uint64_t last_fence;       /* last fence submitted (0: none) */
	uint64_t fence_va;         /* GPU VA of the channel's fence word */
};

struct CUevent_st {
	uint32_t magic;
	struct CUctx_st *ctx;
	struct CUevent_st *next;
	unsigned int flags;
	bool recorded;
	struct CUstream_st *stream;
	uint64_t fence;
	bool time_known;
	struct timespec time; /* host time of the event's point (fallback) */
	int slot;             /* GPU timestamp slot in the context's pool, -1 none */
	bool stamped;         /* the last record wrote the slot */
};

/* GPU timestamps of events: 16-byte slots (value, GPU clock) that
 * SEMAPHORE_RELEASE with VGPU_SEMAPHORE_TIMESTAMP writes. */
#define CU_TIMESTAMP_SLOTS 256

struct CUfunc_st {
	struct CUmod_st *mod;
	const struct vgpu_guest_function *f;
	int max_dynamic_shared;
};

struct CUmod_st {
	uint32_t magic;
	struct CUctx_st *ctx;
	struct CUmod_st *next;
	struct vgpu_guest_module *m;
	struct CUfunc_st *funcs; /* one per m->functions */
};

struct CUctx_st {
	uint32_t magic;
	struct CUctx_st *next;
	bool primary;
	int retained;         /* primary context: retain count */
	unsigned int flags;
	CUresult sticky;      /* set when a channel of the context died */
	struct CUstream_st null_stream;
	struct CUstream_st *streams;
	struct CUmod_st *modules;
	size_t limits[8];
	struct vgpu_guest_buffer ts_pool; /* CU_TIMESTAMP_SLOTS * 16 bytes */
	bool ts_used[CU_TIMESTAMP_SLOTS];
	char last_error[CU_ERROR_MESSAGE_BYTES];
};

/* Host memory the library knows: cuMemHostAlloc's (freed by
 * cuMemFreeHost) and cuMemHostRegister's (the program's own). */
struct cu_host_alloc {
	void *p;
	size_t bytes;
	bool registered;
	struct CUctx_st *ctx;
	struct cu_host_alloc *next;
};

struct cu_global {
	pthread_mutex_t lock;
	int init_state;       /* 0 never, 1 ready, -1 failed */
	CUresult init_error;
	struct vgpu_guest_device *dev;
	struct vgpu_device_info info;
	char backend[32];
	char name[96];
	uint32_t default_priority;
	struct cu_limits limits;
	struct cu_ptr_table ptrs;
	struct CUctx_st *contexts;     /* every live context */
	struct CUctx_st primary;       /* the device's primary context */
	bool primary_listed;
	struct CUevent_st *events;
	struct cu_host_alloc *host_allocs;
	uint64_t next_buffer_id;       /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
	struct CUlib_st *libraries;
	struct CUlinkState_st *links;
};

extern struct cu_global cu_g;

void cu_lock(void);
void cu_unlock(void);

/* Record why a call failed (the current context's and this thread's last
 * error) and return err. */
CUresult cu_fail(CUresult err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Say msg once per process on stderr ("libcuda (vgpu): ..."). */
void cu_warn_once(bool *said, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* init.c: CUDA_SUCCESS once cuInit succeeded, else NOT_INITIALIZED or
 * what cuInit failed with. */
CUresult cu_check_init(void);

/* context.c: the calling thread's current context (NULL if none). */
struct CUctx_st *cu_current(void);
/* Locked: the current context, checked to be alive and not sticky-failed;
 * *out NULL with the error otherwise. */
CUresult cu_enter(struct CUctx_st **out);
bool cu_ctx_valid(const struct CUctx_st *ctx);
/* Wait until every stream of ctx has finished what was submitted. */
CUresult cu_ctx_sync(struct CUctx_st *ctx);
/* A channel call on ch (NULL: none yet) failed with -errno: the CUresult
 * (for a channel the GPU killed, from its cause: LAUNCH_TIMEOUT for the
 * watchdog, LAUNCH_FAILED for a kernel's own failure or a bad launch,
 * ILLEGAL_ADDRESS for a stray access), and the context's sticky error if
 * the channel died. */
CUresult cu_channel_error(struct CUctx_st *ctx, struct vgpu_channel *ch, int err,
                          const char *what);

/* module.c: read a module image file for what ("cuModuleLoad"): at least
 * min_bytes, at most VGPU_MODULE_IMAGE_MAX_BYTES, NUL-terminated in a
 * malloc'ed *image the caller frees; FILE_NOT_FOUND or INVALID_IMAGE (with
 * the message) otherwise. */
CUresult cu_read_image(const char *what, const char *path, size_t min_bytes, char **image,
                       size_t *bytes);

/* stream.c */
/* The stream a handle names in ctx (NULL, CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD: the legacy stream), with its channel made. */
CUresult cu_stream_get(struct CUctx_st *ctx, CUstream h, struct CUstream_st **out);
/* Before new work on s: wait (on the GPU) for what the legacy stream
 * semantics order it after. */
CUresult cu_stream_order(struct CUstream_st *s);
/* Reserve words for one submission of s / submit it. */
CUresult cu_stream_begin(struct CUstream_st *s, uint32_t words, uint32_t **buf);
CUresult cu_stream_submit(struct CUstream_st *s, uint32_t used);
/* Wait for fence on s's channel, the lock dropped between polls. */
CUresult cu_stream_wait(struct CUstream_st *s, uint64_t fence);
bool cu_stream_idle(struct CUstream_st *s);
void cu_stream_release(struct CUstream_st *s); /* destroy the channel */

/* module.c: free every module of ctx. */
void cu_ctx_unload_modules(struct CUctx_st *ctx);
/* cuModuleLoadData's work (image: PTX or a PTX-carrying fatbin). */
CUresult cu_module_load(CUmodule *module, const void *image);
/* Locked: the live module h names, or NULL. */
struct CUmod_st *cu_module_find(CUmodule h);
/* The function object h names, or NULL. */
struct CUfunc_st *cu_function_get(CUfunction h);

/* memory.c: free every allocation of ctx. */
void cu_ctx_free_memory(struct CUctx_st *ctx);
/* Unlocked: one checked copy or fill on stream h (sync: wait for it).
 * Device-to-host copies always complete before they return. */
CUresult cu_copy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream h, bool sync);
CUresult cu_copy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream h);
CUresult cu_copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h, bool sync);
CUresult cu_fill(CUdeviceptr dst, uint32_t pattern, size_t elem, size_t count, CUstream h,
                 bool sync);
/* Locked: the host memory (allocated or registered) holding p, or NULL. */
struct cu_host_alloc *cu_host_find(const void *p);

/* event.c: drop every event of ctx; forget a stream about to go (its
 * events count as complete). */
void cu_ctx_drop_events(struct CUctx_st *ctx);
void cu_events_forget_stream(const struct CUstream_st *s);

#endif /* VGPU_CUDA_INTERNAL_H */
