/* SPDX-License-Identifier: MIT */
/*
 * migrate_local.h - EXPORT on the local socket (local_protocol.h, minor 2):
 * an attached frontend (QEMU's vgpu-pci) drives the export of its own VM
 * (migrate.h) and carries the stream to the destination itself.
 *
 * One struct migrate_local per connection, used only by that connection's
 * jobs (one at a time, on the worker pool). Errors go back to the frontend in the reply (status and why);
 * nothing here ends the connection except a malformed request (-EPROTO).
 */
#ifndef VGPUD_MIGRATE_LOCAL_H
#define VGPUD_MIGRATE_LOCAL_H

#include <stdbool.h>

struct vgpud;
struct vgpud_device;
struct vgpu_local_msg;
struct migrate_export;

struct migrate_local {
	struct migrate_export *export; /* between START and FINISH / CANCEL */
	int stream_fd;                 /* the stream's write end meanwhile, else -1 */
	bool held;                     /* a FINISH succeeded: the VM is held */
};

void migrate_local_init(struct migrate_local *m);

/* Serve one EXPORT request msg (its descriptors are consumed) for dev,
 * the connection's VM, replying on sock. 0, or a negative errno when the
 * request was malformed or the reply could not be sent. */
int migrate_local_serve(struct migrate_local *m, struct vgpud *d, struct vgpud_device *dev,
                        int sock, struct vgpu_local_msg *msg, int timeout_ms);

/* The connection ends: an export in progress is cancelled (the VM is then
 * released with the connection, as is a held one). */
void migrate_local_release(struct migrate_local *m);

#endif /* VGPUD_MIGRATE_LOCAL_H */
