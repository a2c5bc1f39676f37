/* SPDX-License-Identifier: MIT */
/*
 * vgpu_proto.h - the guest side of the vGPU mailbox protocol
 * (vgpu/abi/device_abi.h), shared by vgpu.ko and userspace (vgpu-tenant,
 * libvgpu-guest, tests). Kernel and userspace compile the same files; see
 * vgpu_compat.h for what each provides.
 *
 * What it promises
 *  - One call per request of the ABI: it builds the request slot, posts it to
 *    the request ring in BAR2 (slot, then req_head with release order, then a
 *    write to VGPU_REG_MAILBOX_DOORBELL), waits for the response with the
 *    request's seq, and decodes its payload into the ABI's response struct
 *    with every field converted to CPU byte order.
 *  - Nothing the device returns is trusted: ring indices that overrun the
 *    ring, responses with an unexpected seq or opcode, an oversized payload,
 *    an unknown status, or payload fields that break the ABI (a GPU VA range
 *    that wraps, channel areas outside the window, a feature that was not
 *    asked for, ...) are rejected with -EPROTO. The device's memory is read
 *    once per slot (a snapshot), so it cannot change a value after it was
 *    checked.
 *  - Errors are negative errno values: a response status maps through
 *    vgpu_status_to_errno(); transport failures are
 *      -ETIMEDOUT  no response within the timeout
 *      -EBUSY      the request ring stayed full for the whole timeout
 *      -ENODEV     the device or its backend is gone (registers read
 *                  0xffffffff, VGPU_STATUS_BACKEND_GONE, wait_irq said so)
 *      -EPROTO     the device broke the protocol (above)
 *      -ENOTCONN   a request other than HELLO before a successful HELLO
 *      -EINVAL     a bad argument, caught before anything is sent
 *  - A request that timed out may still be answered later; that late
 *    response is recognised by its seq and dropped (counted in
 *    counters.stale_responses). Its effect on the device (e.g. an ALLOC) may
 *    have happened; the backend releases it with the VM.
 *
 * Cost: a request is one trapped BAR0 write (the doorbell), plus interrupt
 * waits only when the response is not there yet. vgpu_proto_init reads three
 * registers. Rare extras: the doorbell is rung again when the request ring
 * is found full or after late answers were drained (the backend may have
 * paused for want of response slots), and VGPU_REG_STATUS is read once when
 * a request times out (to tell -ENODEV from -ETIMEDOUT).
 *
 * Concurrency: calls on one struct vgpu_proto must not overlap. Either the
 * caller guarantees one caller at a time (vgpu-tenant, libvgpu-guest), or it
 * passes a lock hook in the config (vgpu.ko: a mutex; requests may sleep in
 * wait_irq, so not a spinlock) and the calls take it for the whole request.
 * vgpu_proto_counters may be read at any time (values may be torn).
 *
 * Memory: struct vgpu_proto is embedded by the caller; nothing is allocated.
 */
#ifndef VGPU_PROTO_H
#define VGPU_PROTO_H

#include "vgpu_compat.h"
#include "vgpu/abi/device_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the protocol reaches the device. */
struct vgpu_proto_device_ops {
	/*
	 * A 32-bit BAR0 register (VGPU_REG_*); trapped, so each call is a
	 * round trip to the host.
	 */
	u32 (*reg_read)(void *ctx, u32 offset);
	void (*reg_write)(void *ctx, u32 offset, u32 value);
	/*
	 * Sleep until an interrupt may have arrived or timeout_ms passed.
	 * Returns a mask of VGPU_IRQ_* seen (0 on timeout or when unknown),
	 * or a negative errno (-ENODEV: the device is gone; -EINTR: give up,
	 * a signal is pending). Acknowledging the interrupt is the hook's
	 * business. The protocol always re-reads the rings after it returns,
	 * so a spurious or lost wake-up only costs time.
	 */
	int (*wait_irq)(void *ctx, int timeout_ms);
};

/* Optional serialisation of concurrent callers. */
struct vgpu_proto_lock_ops {
	void (*lock)(void *ctx);
	void (*unlock)(void *ctx);
	/*
	 * Optional: complain (the kernel: lockdep) unless the caller holds the
	 * lock; called by the helpers that need it held.
	 */
	void (*assert_held)(void *ctx);
};

#define VGPU_PROTO_DEFAULT_TIMEOUT_MS 30000

struct vgpu_proto_config {
	const struct vgpu_proto_device_ops *ops; /* required */
	void *ctx;                               /* passed to ops */
	/*
	 * The mailbox as mapped: BAR2 + VGPU_MAILBOX_OFFSET, VGPU_MAILBOX_SIZE
	 * bytes, at least 8-byte aligned.
	 */
	void *mailbox;
	/* Per request (posting and waiting); 0 = VGPU_PROTO_DEFAULT_TIMEOUT_MS. */
	int timeout_ms;
	const struct vgpu_proto_lock_ops *lock; /* NULL: one caller at a time */
	void *lock_ctx;
	/* First seq to use (tests start near the 32-bit wrap); 0 = 1. */
	u32 first_seq;
};

struct vgpu_proto_counters {
	u64 requests;            /* posted */
	u64 responses;           /* matched and accepted */
	u64 error_statuses;      /* of those, status != OK */
	u64 stale_responses;     /* late answers to abandoned requests */
	u64 malformed_responses; /* rejected with -EPROTO */
	u64 timeouts;
	u64 ring_full_waits;     /* posts that found the request ring full */
	u64 doorbells;           /* BAR0 doorbell writes */
	u64 irq_waits;           /* wait_irq calls */
};

/* Caller-allocated; fields are private to the implementation. */
struct vgpu_proto {
	const struct vgpu_proto_device_ops *ops;
	void *ctx;
	u8 *mailbox;
	int timeout_ms;
	const struct vgpu_proto_lock_ops *lock;
	void *lock_ctx;

	/* Ring state (under the lock). */
	u32 req_head;        /* our copy of what we published */
	u32 resp_tail;       /* our copy of what we consumed */
	u32 next_seq;        /* seq of the next request */
	u32 oldest_seq;      /* oldest request not answered yet */

	/* After a successful HELLO. */
	bool ready;
	struct vgpu_hello_response hello;

	struct vgpu_proto_counters counters;
};

/*
 * Attach to a device: check VGPU_REG_MAGIC, the ABI major version and
 * VGPU_STATUS_READY, and the mailbox header; adopt the ring indices (a
 * reloaded driver continues where the last one stopped: it waits up to the
 * timeout for requests still queued by its predecessor to be answered, and
 * drops their responses). No request is sent.
 * -ENODEV (no vGPU, or backend gone), -EPROTONOSUPPORT (ABI major differs),
 * -EAGAIN (backend not ready yet), -EPROTO (mailbox header inconsistent),
 * -EBUSY (the predecessor's requests were not answered in time),
 * -EINVAL (bad config).
 */
int vgpu_proto_init(struct vgpu_proto *proto, const struct vgpu_proto_config *config);

/*
 * HELLO: negotiate. wanted_features: VGPU_FEATURE_* the guest can use.
 * On success *out (may be NULL) holds the backend's ABI version, the
 * negotiated features (a subset of wanted_features) and max_channels; the
 * same is kept in proto->hello. Other requests fail with -ENOTCONN until
 * HELLO succeeded. -EPROTONOSUPPORT when the backend rejects our version.
 */
int vgpu_proto_hello(struct vgpu_proto *proto, u32 wanted_features,
		     struct vgpu_hello_response *out);

/* QUERY: this VM's view of GPU memory. */
int vgpu_proto_query(struct vgpu_proto *proto, struct vgpu_query_response *out);

/*
 * ALLOC bytes (1..VGPU_ALLOC_MAX_BYTES) with priority 0..15 (VGPU_PRIORITY_*) and flags
 * (VGPU_ALLOC_FLAGS_ALL). *out: handle, gpu_va (4 KiB aligned) and bytes as
 * allocated (>= bytes rounded up to 4 KiB). -ENOMEM when the VM's cap or the
 * host budget is exhausted, -ENOSPC when it holds too many buffers, -EAGAIN
 * when the backend could not make room right now (BUSY: retry).
 */
int vgpu_proto_alloc(struct vgpu_proto *proto, u64 bytes, u32 priority,
		     u32 flags, struct vgpu_alloc_response *out);

/* FREE a handle from ALLOC. -ENOENT if this VM has no such buffer. */
int vgpu_proto_free(struct vgpu_proto *proto, u32 handle);

/*
 * CHANNEL_CREATE with a GPFIFO ring of gpfifo_entries (0 = the backend's
 * default, else a power of two in [2, VGPU_CHANNEL_GPFIFO_ENTRIES_MAX]).
 * *out: the window index (< hello.max_channels) and the offsets, sizes and
 * GPU VAs of its areas, checked to be page-aligned (control, GPFIFO),
 * inside VGPU_CHANNEL_WINDOW_STRIDE and not overlapping.
 */
int vgpu_proto_channel_create(struct vgpu_proto *proto, u32 gpfifo_entries,
			      struct vgpu_channel_create_response *out);

/* CHANNEL_DESTROY a window index from CHANNEL_CREATE. */
int vgpu_proto_channel_destroy(struct vgpu_proto *proto, u32 index);

/*
 * SET_PRIORITY of a buffer (0..15). Needs VGPU_FEATURE_PRIORITY_HINTS to
 * have any effect; the backend accepts it either way.
 */
int vgpu_proto_set_priority(struct vgpu_proto *proto, u32 handle, u32 priority);

/* STATS: this VM's allocated/resident/evicted bytes and fair share. */
int vgpu_proto_stats(struct vgpu_proto *proto, struct vgpu_stats_response *out);

/*
 * MODULE_LOAD (1.3, VGPU_FEATURE_MODULES): the image and the table are GPU
 * VAs of this VM's buffers, passed through. On 0, *out holds the module's
 * handle and counts, its variables' range checked not to wrap and
 * table_bytes checked to fit the room given. On -ENOSPC (LIMIT) *out is
 * zeroed except table_bytes: the room the table needs, when the backend
 * said (0 when the limit was another, e.g. too many modules). Other
 * failures as the status says; the table's message tells why.
 */
int vgpu_proto_module_load(struct vgpu_proto *proto, const struct vgpu_module_load_request *req,
			   struct vgpu_module_load_response *out);

/* MODULE_UNLOAD a handle from MODULE_LOAD. -ENOENT if this VM has none. */
int vgpu_proto_module_unload(struct vgpu_proto *proto, u32 module);

/*
 * A request exactly as given, for tests of the backend (malformed traffic)
 * and fuzzing: opcode, payload_size and reserved are written as they are
 * (payload_size may lie), payload_len (<= VGPU_MAILBOX_PAYLOAD_SIZE) bytes of
 * payload are copied, the rest of the slot is zero. Works before HELLO.
 * On 0, *resp holds the matching response: header fields in CPU byte order,
 * payload as raw little-endian bytes, status NOT mapped to an errno. The
 * envelope is still checked (seq, opcode echoed, payload_size <= 48).
 */
struct vgpu_proto_raw_request {
	u16 opcode;
	u16 payload_size;
	u64 reserved;
	const void *payload;
	u32 payload_len;
};

int vgpu_proto_call_raw(struct vgpu_proto *proto, const struct vgpu_proto_raw_request *request,
			struct vgpu_response *resp);

/* ------------------------------------------------------------------------ */
/* Status codes (vgpu_status.c)                                            */

/*
 * enum vgpu_status -> negative errno:
 *   OK 0, INVALID -EINVAL, UNSUPPORTED -EOPNOTSUPP, NO_MEMORY -ENOMEM,
 *   NOT_FOUND -ENOENT, LIMIT -ENOSPC, VERSION -EPROTONOSUPPORT,
 *   NOT_READY -ENOTCONN, INTERNAL -EIO, BUSY -EAGAIN (transient: retry),
 *   anything else -EPROTO.
 */
int vgpu_status_to_errno(u32 status);
/* "OK", "INVALID", ...; "unknown" for values outside enum vgpu_status. */
const char *vgpu_status_name(u32 status);
/* True for values of enum vgpu_status. */
bool vgpu_status_is_known(u32 status);
/* "HELLO", "ALLOC", ...; "unknown" otherwise. */
const char *vgpu_opcode_name(u32 opcode);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_PROTO_H */
