/* SPDX-License-Identifier: MIT */
/*
 * worker_protocol.h - what vgpud's cudagpu and a GPU worker process
 * (vgpu-gpu-worker, cudagpu's process isolation: vgpu/cudagpu.h) say to
 * each other over their one AF_UNIX SOCK_SEQPACKET socket.
 *
 * vgpud sends requests (struct cg_wire_msg, then count 64-bit payload
 * words, with up to CG_WIRE_MAX_FDS descriptors as SCM_RIGHTS). Requests
 * marked "reply" are answered in order with one struct cg_wire_reply;
 * the others are not answered (their failures show in the next reply, or
 * as a lost worker). vgpud sends one request at a time per worker.
 *
 * The worker sends replies and, at any time, events (struct cg_wire_event):
 * the HAL's events of its channels, by the worker's own channel ids, and
 * CG_WIRE_LOST when its CUDA context faulted (it exits right after).
 *
 * Both sides of one build: there is no versioning, vgpud execs the worker
 * binary built with it.
 */
#ifndef VGPU_CUDAGPU_WORKER_PROTOCOL_H
#define VGPU_CUDAGPU_WORKER_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "vgpu/hal.h"

#define CG_WIRE_MAX_FDS 240u    /* below the kernel's SCM_MAX_FD (253) */
#define CG_WIRE_MAX_WORDS 4096u /* payload words in one message */

/* The worker's descriptor number for its socket (set up by vgpud). */
#define CG_WORKER_SOCKET_FD 3

enum cg_wire_op {
	/* a[0] = VRAM pages; payload: struct cudagpu_config; fd: the status
	 * page (struct cg_worker_status). Reply. */
	CG_OP_HELLO = 1,
	/* payload: VRAM page indices; fds: one exported allocation each. */
	CG_OP_IMPORT_VRAM,
	/* a[0] = buffer key, a[1] = enum cg_host_kind, a[2] = alloc_bytes,
	 * a[3] = index of the first handle in this message; fds: NUMA: the
	 * next handles' exports (a buffer's handles may take several
	 * messages), REGISTERED: its memfd. */
	CG_OP_IMPORT_HOST,
	/* a[0] = IOVA, a[1] = bytes, a[2] = buffer key, a[3] = offset. */
	CG_OP_IOMMU_ADD,
	/* a[0] = IOVA, a[1] = bytes. Reply (once channels fault on it). */
	CG_OP_IOMMU_REMOVE,
	/* a[0] = buffer key. */
	CG_OP_HOST_RELEASE,
	/* a[0] = va, a[1] = page size, a[2] = target, a[3] = flags; payload:
	 * the pages' addresses (VRAM addresses or IOVAs). Reply. */
	CG_OP_AS_MAP,
	/* a[0] = va, a[1] = bytes. Reply. */
	CG_OP_AS_UNMAP,
	/* a[0] = GPFIFO entries; fd: the channel's window memfd. Reply:
	 * value = the worker's channel id. */
	CG_OP_CHANNEL_CREATE,
	/* a[0] = channel id. Reply. */
	CG_OP_CHANNEL_DESTROY,
	/* a[0] = channel id, a[1] = enabled. Reply. */
	CG_OP_CHANNEL_FETCH,
	/* a[0] = channel id, a[1] = cause. Reply (after the channel's stream
	 * drained). */
	CG_OP_CHANNEL_KILL,
	/* a[0] = channel id, a[1] = enum vgpu_hal_priv_cmd, a[2] = count.
	 * Reply: status = entries appended or -errno, value = ticket. */
	CG_OP_CHANNEL_PRIV,
	/* a[0] = channel id. */
	CG_OP_CHANNEL_KICK,
	/* a[0] = module id, a[1] = image bytes; payload: the variables' VAs;
	 * fd: a memfd holding the PTX image. Reply. */
	CG_OP_MODULE_BIND,
	/* a[0] = module id. Reply (after the context's work finished). */
	CG_OP_MODULE_UNBIND,
};

struct cg_wire_msg {
	uint32_t op;    /* enum cg_wire_op */
	uint32_t count; /* payload words that follow */
	uint64_t a[4];
};

struct cg_wire_reply {
	uint32_t kind; /* CG_WIRE_REPLY */
	int32_t status;
	uint64_t value;
};

enum cg_wire_kind {
	CG_WIRE_REPLY = 1,
	CG_WIRE_EVENT = 2, /* a HAL event, channel_id the worker's */
	CG_WIRE_LOST = 3,  /* the context faulted: event.cause says how */
};

struct cg_wire_event {
	uint32_t kind; /* CG_WIRE_EVENT or CG_WIRE_LOST */
	uint32_t reserved;
	struct vgpu_hal_event event;
};

/*
 * The status page: a memfd vgpud creates and the worker maps, written only
 * by the worker (64-bit fields with atomic stores) and read by vgpud at
 * any time without asking (vgpu_hal_channel_pending, channel_gp_get,
 * vgpu_hal_engine_current_channel, counters), and after the worker is
 * gone. After the header: one uint32_t GP_GET per worker channel id (the
 * worker's own, not the control page's, which a guest can write), then
 * one pending byte per channel id (cg_worker_status_gp_get/_pending).
 */
struct cg_worker_status {
	uint64_t heartbeat;  /* advanced by the worker at least every 10 ms */
	uint64_t busy_ns[VGPU_ENGINE_COUNT];
	struct vgpu_hal_as_counters counters;
	int64_t current_channel; /* the worker's channel id, or -1 */
};

static inline uint32_t *cg_worker_status_gp_get(struct cg_worker_status *s)
{
	return (uint32_t *)(void *)(s + 1);
}

static inline uint8_t *cg_worker_status_pending(struct cg_worker_status *s,
                                                uint32_t max_channels)
{
	return (uint8_t *)(cg_worker_status_gp_get(s) + max_channels);
}

static inline size_t cg_worker_status_bytes(uint32_t max_channels)
{
	size_t bytes = sizeof(struct cg_worker_status) + (size_t)max_channels * 5;

	return (bytes + 4095) & ~(size_t)4095;
}

/*
 * Send one message: header, payload words and descriptors, in one
 * datagram. Returns 0 or -errno (-EPIPE: the peer is gone). Waits at most
 * timeout_ms for room (-ETIMEDOUT), < 0 = forever.
 */
int cg_wire_send(int sock, const void *header, size_t header_bytes, const uint64_t *words,
                 uint32_t count, const int *fds, unsigned nfds, int timeout_ms);

/*
 * Receive one datagram of at most bytes into buf, its descriptors into
 * fds (at most max_fds; *nfds set; extra ones closed). Returns its length,
 * 0 at end of file, or -errno (-ETIMEDOUT after timeout_ms; < 0 = wait
 * forever).
 */
long cg_wire_recv(int sock, void *buf, size_t bytes, int *fds, unsigned max_fds, unsigned *nfds,
                  int timeout_ms);

#endif /* VGPU_CUDAGPU_WORKER_PROTOCOL_H */
