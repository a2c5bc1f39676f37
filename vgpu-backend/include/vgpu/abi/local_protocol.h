/* SPDX-License-Identifier: MIT */
/*
 * local_protocol.h - the socket protocol between vgpud and a local vGPU
 * "frontend": a process that plays the part of a VM's PCI device: QEMU's
 * vgpu-pci device (qemu-patches/), the way vhost-user backends work, and
 * the client library of vgpu/local_device.h (vgpu-tenant and tests).
 *
 * Sockets
 *
 *   main socket     AF_UNIX SOCK_SEQPACKET, the frontend connects to vgpud's
 *                   listening socket. Frontend requests, vgpud replies
 *                   (ATTACH, REG_READ, REG_WRITE, DETACH).
 *   backend channel a second SOCK_SEQPACKET socket the frontend creates
 *                   (socketpair) and hands over with ATTACH, like
 *                   vhost-user's backend request channel. vgpud requests,
 *                   the frontend acknowledges (MAP_REGION, UNMAP_REGION,
 *                   WINDOW_BLOCK, WINDOW_MAP). Keeping vgpud's requests off
 *                   the main socket means a frontend thread waiting for a
 *                   register read never has to service a swap, and vgpud
 *                   can swap a window while that tenant's own request is
 *                   in progress.
 *
 * Every message is one datagram: a struct vgpu_local_header followed by
 * header.size bytes of payload (the fixed-width struct for its type).
 * Descriptors travel as SCM_RIGHTS ancillary data of the same datagram.
 * Fields are little-endian; this implementation runs on little-endian hosts
 * only (both ends always share the host, so that is checked at build time).
 * A receiver rejects a message whose size differs from its type's payload,
 * whose flags or reserved fields are not zero, or that carries a
 * different number of descriptors than its type says; for vgpud such a
 * message is a protocol error that ends the connection (DETACH semantics).
 *
 * Descriptors the frontend passes with ATTACH (in this order):
 *   0 backend channel socket
 *   1 kick eventfd: any write means "VGPU_REG_MAILBOX_DOORBELL was
 *     written" (an ioeventfd); the frontend may also send REG_WRITE
 *   2..4 interrupt eventfds, one per vector (VGPU_MSIX_VECTOR_MAILBOX,
 *     _FENCE, _ERROR): vgpud writes 1 to raise it (an irqfd)
 * ATTACH_REPLY passes the mailbox memory: BAR2
 * [VGPU_MAILBOX_OFFSET, +VGPU_MAILBOX_SIZE) is the memfd at mailbox_fd_offset.
 *
 * BAR2 backing. At attach only the mailbox is backed; every other part of
 * BAR2 reads as zero and ignores writes until vgpud sends MAP_REGION for it
 * (when a channel window becomes live, before the CHANNEL_CREATE response
 * is written) and after UNMAP_REGION (channel destroyed). Both are acked
 * once the frontend's mapping is in place, so the guest never sees a
 * response referring to memory that is not mapped yet.
 *
 * The shadow swap (vgpu/guest_window.h):
 *   WINDOW_BLOCK   make guest accesses to [bar2_offset, +bytes) of the window
 *                  (control page + GPFIFO) wait; ack only when no access to
 *                  the current pages is in progress any more.
 *   WINDOW_MAP     back those pages with the given descriptors (shadow or
 *                  real pages), let waiting accesses continue (they retry
 *                  against the new pages), then ack.
 * vgpud waits for each ack at most the configured swap timeout; a frontend
 * that does not answer in time is treated as dead and detached.
 *
 * Interrupts. vgpud writes the vector's eventfd every time a source of
 * that vector is raised and enabled in VGPU_REG_IRQ_MASK (MSI semantics: no
 * acknowledge is needed to get the next one); VGPU_REG_IRQ_STATUS records
 * pending sources for drivers that want level semantics.
 *
 * Lifetime. DETACH (or closing the main socket) releases everything the
 * instance owns in vgpud: buffers, chunks in VRAM and host memory,
 * channels, mappings. DETACH_REPLY is sent when that is done. When vgpud
 * goes away, the frontend sees end-of-file on both sockets.
 */
#ifndef VGPU_LOCAL_PROTOCOL_H
#define VGPU_LOCAL_PROTOCOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the local vGPU protocol is implemented for little-endian hosts only"
#endif

#define VGPU_LOCAL_PROTOCOL_VERSION 1u
/* Minor version: additions a peer of the same VERSION may not know.
 * 1: IMPORT and ATTACH's VGPU_LOCAL_ATTACH_RESUME (live migration).
 * 2: EXPORT (an attached frontend migrates its VM: QEMU's vgpu-pci). */
#define VGPU_LOCAL_PROTOCOL_MINOR 2u

/* Longest datagram of the protocol (header + largest payload). */
#define VGPU_LOCAL_MSG_MAX 512u
/* Most descriptors one message carries. */
#define VGPU_LOCAL_MAX_FDS 5u

#define VGPU_LOCAL_NAME_MAX 64u    /* VM and profile names, NUL-padded */
#define VGPU_LOCAL_MESSAGE_MAX 256u /* error text in replies */

enum vgpu_local_msg_type {
	/* main socket: frontend -> vgpud (replies carry VGPU_LOCAL_FLAG_REPLY) */
	VGPU_LOCAL_ATTACH = 1,    /* vgpu_local_attach + 5 fds -> vgpu_local_attach_reply + 1 fd */
	VGPU_LOCAL_REG_READ = 2,  /* vgpu_local_reg -> vgpu_local_reg (value filled) */
	VGPU_LOCAL_REG_WRITE = 3, /* vgpu_local_reg, posted: no reply */
	VGPU_LOCAL_DETACH = 4,    /* no payload -> vgpu_local_status */
	/* minor 1: the first message of a connection instead of ATTACH */
	VGPU_LOCAL_IMPORT = 5,    /* vgpu_local_import + 1 fd -> vgpu_local_import_reply */
	/* minor 2: an attached frontend's VM leaves (vgpu_local_export + 1 fd
	 * for START, none otherwise) -> vgpu_local_export_reply */
	VGPU_LOCAL_EXPORT = 6,

	/* backend channel: vgpud -> frontend (acks carry VGPU_LOCAL_FLAG_REPLY) */
	VGPU_LOCAL_MAP_REGION = 16,   /* vgpu_local_region + 1 fd -> vgpu_local_status */
	VGPU_LOCAL_UNMAP_REGION = 17, /* vgpu_local_region, no fd -> vgpu_local_status */
	VGPU_LOCAL_WINDOW_BLOCK = 18, /* vgpu_local_window_block -> vgpu_local_status */
	VGPU_LOCAL_WINDOW_MAP = 19,   /* vgpu_local_window_map + segments fds -> vgpu_local_status */
};

#define VGPU_LOCAL_FLAG_REPLY (1u << 0)

struct vgpu_local_header {
	uint32_t type;  /* enum vgpu_local_msg_type */
	uint32_t size;  /* payload bytes after the header */
	uint32_t seq;   /* chosen by the requester, echoed in the reply */
	uint32_t flags; /* VGPU_LOCAL_FLAG_REPLY on replies, else 0 */
};

/* ATTACH: attach one vGPU instance for a VM. */
struct vgpu_local_attach {
	uint32_t protocol_version; /* VGPU_LOCAL_PROTOCOL_VERSION */
	uint32_t flags;            /* VGPU_LOCAL_ATTACH_*; 0 before minor 1 */
	char vm_name[VGPU_LOCAL_NAME_MAX]; /* NUL-terminated, 1..63 printable chars */
	char profile[VGPU_LOCAL_NAME_MAX]; /* NUL-terminated; "" = vgpud's default */
};

struct vgpu_local_attach_reply {
	int32_t status;            /* 0 or a negative errno */
	uint32_t protocol_version; /* vgpud's */
	uint64_t bar2_size;        /* VGPU_BAR2_SIZE */
	uint64_t mailbox_offset;   /* BAR2 offset of the mailbox (VGPU_MAILBOX_OFFSET) */
	uint64_t mailbox_size;     /* VGPU_MAILBOX_SIZE */
	uint64_t mailbox_fd_offset; /* offset of the mailbox in the passed memfd */
	uint32_t vm_id;            /* vgpud's id of the VM (vgpuctl "id") */
	uint32_t reserved;
	char message[VGPU_LOCAL_MESSAGE_MAX]; /* status != 0: what was wrong and what to do */
};

/* ATTACH flags (minor 1). RESUME: attach the VM of this name that vgpud
 * imported (IMPORT, or `vgpuctl restore`) and holds parked: the same GPU
 * addresses, handles, channels and mailbox contents as where it came from.
 * vgpud maps the mailbox (ATTACH_REPLY) and every live channel window
 * (MAP_REGION, before the reply) at the same BAR2 offsets; the frontend
 * keeps its guest's view of BAR2 and goes on. profile is ignored. Fails
 * with -ENOENT when no such VM is parked, -EPERM when the frontend's user
 * does not own it. */
#define VGPU_LOCAL_ATTACH_RESUME (1u << 0)
#define VGPU_LOCAL_ATTACH_FLAGS_ALL VGPU_LOCAL_ATTACH_RESUME

/*
 * IMPORT (minor 1, live migration): the peer (the source vgpud, or a tool
 * acting for the operator: root or vgpud's own user only) passes the read
 * end of a migration stream (a stream socket or a file); vgpud reads it to
 * its end, creating the VM parked, and replies when done: status 0 (the VM
 * waits for its frontend's ATTACH with VGPU_LOCAL_ATTACH_RESUME), or a
 * negative errno and why (nothing is left behind). The stream format is
 * vgpud's (daemon/migrate_stream.h: versioned, checksummed records). The
 * connection ends after the reply.
 */
struct vgpu_local_import {
	uint32_t protocol_version; /* VGPU_LOCAL_PROTOCOL_VERSION */
	uint32_t protocol_minor;   /* >= 1 */
	char vm_name[VGPU_LOCAL_NAME_MAX]; /* the VM the stream carries (checked) */
};

struct vgpu_local_import_reply {
	int32_t status;
	uint32_t protocol_minor; /* vgpud's */
	char message[VGPU_LOCAL_MESSAGE_MAX];
};

/*
 * EXPORT (minor 2, live migration driven by the frontend, as QEMU's
 * migration drives a device's state): the attached VM of this connection
 * leaves, its stream (daemon/migrate_stream.h) going to the descriptor
 * START passes, which the frontend carries to the destination's IMPORT.
 *   START     the write end of a stream socket; flags PRECOPY: pre-copy
 *             while the VM runs (with dirty tracking, else nothing goes
 *             before FINISH). The stream's BEGIN record (VM, profile) is
 *             written before the reply. Fails with why when the VM
 *             cannot be exported (-ENOENT: not attached here), -EBUSY
 *             when an export is in progress. Loaded GPU programs go with
 *             the VM (MODULE records).
 *   PROGRESS  rounds and bytes so far, the VM's size, and what is left
 *             to send as far as vgpud knows (pending_kib: new buffers and
 *             pieces the GPU dirtied, not yet sent; vgpud's own figure,
 *             apart from what waits in the stream socket).
 *   FINISH    stop-and-copy (the frontend has stopped its guest): what is
 *             dirty, the channels and the device go; vgpud closes its end
 *             of the stream, then replies with the figures. The frontend
 *             must read the stream meanwhile. Success: the VM is held
 *             here, stopped, until the frontend detaches (the migration
 *             succeeded) or sends RESUME. Failure: the VM runs here.
 *   CANCEL    before FINISH: the export ends, the VM never stopped.
 *   RESUME    after a successful FINISH, when the migration failed later
 *             (the frontend's guest runs here again): the VM runs again.
 * Requests on the main socket while an EXPORT is served wait for it.
 */
enum vgpu_local_export_op {
	VGPU_LOCAL_EXPORT_START = 1,
	VGPU_LOCAL_EXPORT_PROGRESS = 2,
	VGPU_LOCAL_EXPORT_FINISH = 3,
	VGPU_LOCAL_EXPORT_CANCEL = 4,
	VGPU_LOCAL_EXPORT_RESUME = 5,
};

#define VGPU_LOCAL_EXPORT_PRECOPY (1u << 0)

struct vgpu_local_export {
	uint32_t op;    /* enum vgpu_local_export_op */
	uint32_t flags; /* START: VGPU_LOCAL_EXPORT_PRECOPY; else 0 */
};

struct vgpu_local_export_reply {
	int32_t status;
	uint32_t rounds;         /* pre-copy rounds */
	uint64_t vm_bytes;       /* the VM's GPU memory */
	uint64_t bytes_sent;     /* the stream so far */
	uint64_t precopy_bytes;  /* FINISH: of it, before the stop */
	uint64_t downtime_ns;    /* FINISH: from the stop to the end */
	uint64_t total_ns;       /* FINISH: from START */
	uint32_t dirty_tracking; /* 1: pre-copy with dirty pages, 0: stop-and-copy */
	uint32_t pending_kib;    /* PROGRESS: still to send, KiB (a vgpud that
	                            predates the figure leaves it 0) */
	char message[VGPU_LOCAL_MESSAGE_MAX]; /* status != 0: why */
};

/* REG_READ / REG_WRITE: a trapped 32-bit BAR0 access. */
struct vgpu_local_reg {
	uint32_t offset; /* VGPU_REG_*, 4-byte aligned, < VGPU_BAR0_SIZE */
	uint32_t value;  /* REG_WRITE: written; REG_READ reply: read */
};

/* DETACH_REPLY and every backend-channel ack. */
struct vgpu_local_status {
	int32_t status; /* 0 or a negative errno */
	uint32_t reserved;
};

/* MAP_REGION / UNMAP_REGION: BAR2 [bar2_offset, +bytes) is now backed by the
 * passed descriptor at fd_offset (MAP) or by nothing (UNMAP). Page aligned. */
struct vgpu_local_region {
	uint64_t bar2_offset;
	uint64_t bytes;
	uint64_t fd_offset; /* UNMAP: 0 */
};

/* WINDOW_BLOCK: channel window index's swappable pages. */
struct vgpu_local_window_block {
	uint32_t index;    /* channel window, < VGPU_MAX_CHANNELS */
	uint32_t reserved;
	uint64_t bar2_offset; /* start of the control page in BAR2 */
	uint64_t bytes;       /* control page + GPFIFO */
};

#define VGPU_LOCAL_WINDOW_SEGMENTS_MAX 2u

enum vgpu_local_window_target {
	VGPU_LOCAL_WINDOW_REAL = 0,   /* the GPU's pages */
	VGPU_LOCAL_WINDOW_SHADOW = 1, /* vgpud's shadow copies */
};

/* WINDOW_MAP: segments[i] is backed by the i-th passed descriptor; together
 * they cover exactly what the preceding WINDOW_BLOCK blocked. */
struct vgpu_local_window_map {
	uint32_t index;
	uint32_t target;   /* enum vgpu_local_window_target (informational) */
	uint32_t segments; /* 1..VGPU_LOCAL_WINDOW_SEGMENTS_MAX */
	uint32_t reserved;
	struct vgpu_local_region segment[VGPU_LOCAL_WINDOW_SEGMENTS_MAX];
};

#ifndef __cplusplus
_Static_assert(sizeof(struct vgpu_local_header) == 16, "header");
_Static_assert(sizeof(struct vgpu_local_attach) == 136, "attach");
_Static_assert(sizeof(struct vgpu_local_attach_reply) == 304, "attach reply");
_Static_assert(sizeof(struct vgpu_local_window_map) == 64, "window map");
_Static_assert(sizeof(struct vgpu_local_export_reply) == 312, "export reply");
_Static_assert(sizeof(struct vgpu_local_header) + sizeof(struct vgpu_local_attach_reply) <=
		       VGPU_LOCAL_MSG_MAX,
	       "largest message fits");
#endif

#ifdef __cplusplus
}
#endif

#endif /* VGPU_LOCAL_PROTOCOL_H */
