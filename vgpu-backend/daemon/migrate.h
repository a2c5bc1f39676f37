/* SPDX-License-Identifier: MIT */
/*
 * migrate.h - live migration and save/restore of one VM's vGPU
 * (migrate_stream.h is the stream between the two vgpuds).
 *
 * Export (source), in phases:
 *   start   a thread sends the VM's buffers and their contents while the
 *           VM runs (pre-copy); with dirty tracking (a HAL capability,
 *           simgpu) it then keeps sending what the GPU wrote since it was
 *           sent, round after round (each round harvests the dirty bits,
 *           then sends what they name), and throttles the VM's GPU time
 *           when the GPU dirties faster than the stream takes it. Without (cudagpu) it sends nothing
 *           before the stop and says so (result.dirty_tracking false).
 *   finish  stop-and-copy: the frontend has stopped its guest (as QEMU
 *           stops the vCPUs); the mailbox worker is paused between
 *           requests, every channel suspended through its shadow and
 *           drained; what is dirty (or, without tracking, everything),
 *           the channels (shadow control page and GPFIFO, guest GP_PUT and
 *           GP_GET, notifier and pushbuffer), the device (registers,
 *           mailbox memory) and the guest's handles follow, then END.
 *           When a destination answers (live migration) its verdict is
 *           awaited. Success: the VM is frozen on the source (its channels
 *           killed, interrupts off) until its frontend detaches. Failure:
 *           the VM runs on as before.
 *   cancel  stop the pre-copy; the VM never stopped running.
 * The time from the stop to the end of finish is the downtime.
 *
 * Import (destination): read a stream, create the VM "parked" (attached
 * to no frontend, registered under its name, channels running from where
 * the source stopped them, every chunk in host memory for the return pass
 * to bring back), and leave it for its frontend to adopt (ATTACH with
 * VGPU_LOCAL_ATTACH_RESUME, local_protocol.h). A failed import leaves
 * nothing behind.
 *
 * Threads: export start/finish/cancel from one caller thread per export
 * (the control server's or a test's); the pre-copy thread; import on the
 * caller's thread. None holds the registry lock while it waits.
 */
#ifndef VGPUD_MIGRATE_H
#define VGPUD_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

struct vgpud;
struct vgpud_device;
struct vgpu_transport;
struct migrate_export;

struct migrate_result {
	bool dirty_tracking;    /* pre-copy with dirty pages (else stop-and-copy) */
	uint32_t rounds;        /* pre-copy rounds */
	uint64_t vm_bytes;      /* the VM's buffers */
	uint64_t bytes_sent;    /* the whole stream */
	uint64_t precopy_bytes; /* of it, before the stop */
	uint64_t downtime_ns;   /* from the stop to the end of the stream (and the
	                           destination's verdict) */
	uint64_t total_ns;      /* from start */
};

/*
 * Start exporting VM vm_name into fd (a stream socket or a file; the
 * export writes, the caller keeps it). reply_fd: -1, or the local socket
 * of a destination that answers IMPORT when it has read the stream (live
 * migration). precopy: run the pre-copy thread. 0, or a negative errno +
 * error (-ENOENT: no such VM, -EBUSY: already migrating).
 */
int migrate_export_start(struct vgpud *d, const char *vm_name, int fd, int reply_fd,
                         bool precopy, struct migrate_export **out, struct vgpu_error *error);
/* Stop-and-copy, as above; frees e. 0 (VM frozen here) or a negative
 * errno + error (VM running here). */
int migrate_export_finish(struct migrate_export *e, struct migrate_result *result,
                          struct vgpu_error *error);
/* As migrate_export_finish, but a success leaves the VM held: stopped here
 * (channels suspended, mailbox worker paused, no interrupts) instead of
 * killed, for a frontend whose migration can still fail after the stream
 * went (QEMU resumes its guest then): migrate_export_thaw runs it again;
 * detaching it releases it. Frees e. */
int migrate_export_finish_held(struct migrate_export *e, struct migrate_result *result,
                               struct vgpu_error *error);
/* A VM migrate_export_finish_held held runs here again (from the thread
 * that served the finish, or one after it). No-op for any other VM. */
void migrate_export_thaw(struct vgpud_device *dev);
/* Abandon; frees e. The VM runs on. */
void migrate_export_cancel(struct migrate_export *e);
/* The VM being exported (for listings). */
const char *migrate_export_vm(const struct migrate_export *e);
/* Does the export pre-copy with dirty tracking (else it is a stop-and-copy)? */
bool migrate_export_tracking(const struct migrate_export *e);
/* Pre-copy progress: rounds done, bytes sent so far, bytes still to send
 * (new buffers and dirty pieces found by the last harvest of the GPU's
 * dirty bits, not yet sent; the pre-copy harvests at least every 50 ms,
 * what the GPU wrote since is not in it) and the GPU throttle in % of its
 * time (0: none, see docs/migration.md). Never waits: no core call. */
void migrate_export_progress(struct migrate_export *e, uint32_t *rounds, uint64_t *bytes,
                             uint64_t *pending, unsigned *throttle_pct);

/* Live migration's link: connect to the destination vgpud's local socket
 * and send IMPORT for vm_name with one end of a new stream socket pair.
 * *stream_fd: the end to export into; *reply_fd: the connection, which
 * answers when the destination has read the stream (both the caller's to
 * close). 0, or a negative errno + error. */
int migrate_connect(const char *socket_path, const char *vm_name, int *stream_fd,
                    int *reply_fd, struct vgpu_error *error);

/* Import a stream from fd as a parked VM. peer_uid: who asks (the owner in
 * the stream must be this user unless it is root or vgpud's own user). 0,
 * or a negative errno + error (nothing left behind). */
int migrate_import(struct vgpud *d, int fd, uint32_t peer_uid, struct vgpu_error *error);

/* A frontend adopts parked VM vm_name: from now on it is attached over t.
 * owner_uid: the frontend's user (must own it unless root). Maps every
 * live channel window into the frontend, then returns the device (the
 * caller maps the mailbox). -ENOENT (no parked VM of that name),
 * -EPERM, or the transport's error. */
int migrate_adopt(struct vgpud *d, struct vgpu_transport *t, const char *vm_name,
                  uint32_t owner_uid, struct vgpud_device **out, struct vgpu_error *error);

/* Is dev a parked (imported, not yet adopted) VM? */
bool migrate_is_parked(const struct vgpud_device *dev);

#endif /* VGPUD_MIGRATE_H */
