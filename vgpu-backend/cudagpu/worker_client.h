/* SPDX-License-Identifier: MIT */
/*
 * worker_client.h - process isolation, vgpud's side (vgpu/cudagpu.h,
 * "Isolation"): the worker of an address space, its processes, and the
 * proxies of its channels.
 *
 * An address space (struct cg_as, shadow) has one struct cg_worker for its
 * whole life; each worker process it runs in turn is a struct cg_life.
 * A life has a reader thread that reads everything the process sends:
 * replies (handed to the one request waiting), events (translated to
 * vgpud's channel ids and queued) and, at the end of file, the loss: it
 * kills and reaps the process, turns the life's channels to errors and
 * queues their CHANNEL_ERROR events. One delivery thread per GPU hands the
 * queued events to the handler (under handler_lock), so a handler that
 * waits for a lock held by a caller waiting for a worker's reply never
 * stops the reply from being read.
 *
 * Locks, in order: cg_worker.lock (one request at a time, starting and
 * reaping lives), then memory_lock, then remote_lock (proxy channel states,
 * lives' channel tables, retired counters), then a life's reply_lock.
 * handler_lock is taken with none of them held.
 */
#ifndef VGPU_CUDAGPU_WORKER_CLIENT_H
#define VGPU_CUDAGPU_WORKER_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cudagpu_internal.h"
#include "worker_protocol.h"

struct cg_life { /* one worker process */
	struct cg_worker *worker;
	pid_t pid;
	int sock;
	pthread_t reader;
	bool reader_started;
	pthread_mutex_t reply_lock;
	pthread_cond_t reply_cond;
	bool reply_ready;
	struct cg_wire_reply reply;
	bool gone;                       /* end of file: no reply will come */
	bool ending;                     /* killed, or said it is lost: takes
	                                    no new request (cg_worker_alive) */
	enum vgpu_hal_error_cause cause; /* what its channels report when lost */
	struct cg_remote_channel **by_local; /* by the worker's channel id */
};

struct cg_worker {
	struct cudagpu *gpu;
	struct cg_as *as;
	pthread_mutex_t lock;
	struct cg_life *life; /* NULL until a channel needs one */
	int status_fd;
	struct cg_worker_status *status;
	size_t status_bytes;
	/* What the current life was sent: imported once, named afterwards. */
	uint8_t *vram_sent;  /* by VRAM page */
	uint64_t *iovas;     /* IOMMU mappings (their first IOVA), sorted */
	size_t iova_count, iova_capacity;
	struct cg_host_buf **bufs;
	size_t buf_count, buf_capacity;
	/* Bound modules by id (module.c), sent to every life. */
	struct cg_module *modules[CG_MAX_MODULES];
	/* Counters of lives gone (remote_lock). */
	struct vgpu_hal_as_counters retired;
};

struct cg_remote_channel {
	struct vgpu_hal_channel base;
	uint32_t id;
	struct cg_as *as;
	struct cg_life *life; /* the process running it; NULL once lost */
	uint32_t local_id;
	uint32_t entries;
	int memfd;
	void *window;
	bool error, error_reported; /* state; the event delivered */
	struct vgpu_hal_event last_error;
	uint32_t last_gp_get; /* GP_GET when its worker was lost */
};

/* worker_client.c */
/* The delivery thread and its queue (process isolation's start and end). */
int cg_events_start(struct cudagpu *gpu);
void cg_events_stop(struct cudagpu *gpu);
int cg_worker_new(struct cudagpu *gpu, struct cg_as *as, struct cg_worker **out);
/* Stop the life (if any) and free the worker. No channel may be left. */
void cg_worker_free(struct cg_worker *w);
/* w->lock held: make sure a live process runs the address space: reap a
 * lost one, start a new one and map the page table into it. */
int cg_worker_ensure(struct cg_worker *w);
/* w->lock held: end the current life as lost (its channels error out;
 * the next channel_create starts another). */
void cg_worker_kill(struct cg_worker *w);
/* w->lock held: is the current life running: not gone, not killed, and it
 * has not said it is lost (such a life ends soon; cg_worker_ensure waits
 * for that end and starts the next). */
bool cg_worker_alive(struct cg_worker *w);
/* w->lock held, alive: one request; with reply set, wait for it (at most
 * worker_timeout_ms: then the process is killed as hung). -EPIPE when the
 * process is gone, -ETIMEDOUT when it hung. */
int cg_worker_call(struct cg_worker *w, const struct cg_wire_msg *msg, const uint64_t *words,
                   const int *fds, unsigned nfds, struct cg_wire_reply *reply);
/* w->lock held, alive: send what the mapping of addresses needs that the
 * life lacks (allocations, buffers, IOMMU mappings), then the mapping,
 * in requests of at most CG_WIRE_MAX_WORDS pages. */
int cg_worker_map(struct cg_worker *w, uint64_t va, uint32_t page_size, uint64_t count,
                  enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags);
/* w->lock held: forget (and tell the life) an IOMMU mapping or a buffer. */
void cg_worker_forget_iova(struct cg_worker *w, uint64_t iova, uint64_t bytes);
void cg_worker_forget_buf(struct cg_worker *w, struct cg_host_buf *buf);
/* remote_lock held: a live channel's pending bit and GP_GET, from the
 * status page (the worker's, not the guest-writable control page's). */
bool cg_worker_channel_pending(struct cg_worker *w, const struct cg_remote_channel *ch);
uint32_t cg_worker_channel_gp_get(struct cg_worker *w, const struct cg_remote_channel *ch);
/* Where the worker binary is (see vgpu/cudagpu.h), into buf. */
int cg_worker_path(const struct cudagpu_config *config, char *buf, size_t len);

/* remote.c: the HAL operations of process isolation (vgpu/cudagpu.h). */
void cg_remote_fini(struct cudagpu *gpu);
void cg_remote_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf);
int cg_remote_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes);
int cg_remote_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out);
void cg_remote_as_destroy(struct vgpu_hal_as *as);
int cg_remote_as_map(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size, uint64_t count,
                     enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags);
int cg_remote_as_unmap(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes);
void cg_remote_as_counters(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out);
int cg_remote_channel_create(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
                             struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info);
void cg_remote_channel_destroy(struct vgpu_hal_channel *ch);
void cg_remote_channel_set_fetch(struct vgpu_hal_channel *ch, bool enabled);
uint32_t cg_remote_channel_gp_get(struct vgpu_hal_channel *ch);
enum vgpu_hal_channel_state cg_remote_channel_state(struct vgpu_hal_channel *ch,
                                                    struct vgpu_hal_event *last_error);
int cg_remote_channel_priv_submit(struct vgpu_hal_channel *ch, enum vgpu_hal_priv_cmd cmd,
                                  uint64_t *ticket);
int cg_remote_channel_priv_nops(struct vgpu_hal_channel *ch, uint32_t count);
void cg_remote_channel_kick(struct vgpu_hal_channel *ch);
void cg_remote_channel_kill(struct vgpu_hal_channel *ch, enum vgpu_hal_error_cause cause);
int32_t cg_remote_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine);
bool cg_remote_channel_pending(struct vgpu_hal *hal, uint32_t channel_id);
uint64_t cg_remote_engine_busy_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine);

#endif /* VGPU_CUDAGPU_WORKER_CLIENT_H */
