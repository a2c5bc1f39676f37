/* SPDX-License-Identifier: MIT */
/*
 * transport_mdev.h - vgpud's mdev transport: daemon/transport.h over the
 * control device of vgpu_mdev.ko (/dev/vgpu_mdev, vgpu/abi/mdev_control.h).
 *
 * The transport carries bytes: it registers the mdev types it is given,
 * turns the module's events into calls of its hooks and of the device model
 * (daemon/transport.h), and the device model's ops into ioctls. Every decision
 * (which profiles are types and how they read, whether an mdev may be
 * created, what the VM is called) is made by whoever passes the hooks: in
 * vgpud that is mdev_host.h. See transport_mdev.c for the events,
 * transport_mdev_internal.h for the transport's files and
 * host-kmod/README.md for the module's side.
 *
 * Threads. The module's events are read on vgpud's event loop (sd-event,
 * the loop given to mdev_server_create); that handler never waits for the
 * core or a VM. Each mdev has a worker thread that runs its OPEN, CLOSE,
 * RESET and REMOVE (which wait for the core: attach, detach) in the order
 * the module sent them, so one VM's slow reset never delays another VM's
 * doorbell. Hooks are called on the loop (create) or on the mdev's worker
 * (attach, remove), never with a lock of the transport held.
 */
#ifndef VGPUD_TRANSPORT_MDEV_H
#define VGPUD_TRANSPORT_MDEV_H

#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-event.h>

#include "vgpu/abi/mdev_control.h"
#include "vgpu/error.h"
#include "transport.h"

struct mdev_server;

/* What the transport asks of its owner. Each returns 0 or a negative
 * errno after writing what was wrong (and what to do) into error. */
struct mdev_server_hooks {
	void *ctx;
	/* The mdev type of profile: sysfs name, name (= profile),
	 * description, available_instances. -ENOENT: no such profile (any
	 * more: the type keeps its description and offers no instance). */
	int (*describe_type)(void *ctx, const char *profile, struct vgpu_mdev_type_info *out);
	/* An mdev of profile was created (existing: it was created before
	 * this vgpud connected; the module asks nothing then). */
	int (*create)(void *ctx, const char *profile, const char *uuid, bool existing,
	              struct vgpu_error *error);
	/* The mdev is gone (no device attached any more). */
	void (*remove)(void *ctx, const char *profile, const char *uuid);
	/* QEMU opened the mdev (reset: VFIO_DEVICE_RESET of an open one, the
	 * same VM again): attach a device for it on t. */
	int (*attach)(void *ctx, struct vgpu_transport *t, const char *profile, const char *uuid,
	              bool reset, struct vgpud_device **out, struct vgpu_error *error);
};

struct mdev_server_config {
	const char *path; /* NULL: VGPU_MDEV_CONTROL_PATH */
	const char *const *profiles; /* names; the first VGPU_MDEV_MAX_TYPES become types */
	size_t profile_count;
	struct mdev_server_hooks hooks;
	/* The control device's ioctl(2) (NULL: the real one): the transport
	 * tests put a fake vgpu_mdev.ko here. Returns 0 or a negative errno. */
	int (*control_ioctl)(void *ctx, int fd, unsigned long request, void *arg);
	void *control_ctx;
};

/*
 * Open the control device, register the profiles as mdev types and watch
 * its events on loop (the loop must not be running on another thread: the
 * caller creates the server before the loop runs, or on it; destroy it
 * once the loop has stopped, or on it). 0, or a negative errno after writing what was wrong
 * and what to do into error (-ENOENT: no such device, the module is not
 * loaded; -EBUSY: another vgpud is connected; -EPROTO: version mismatch).
 */
int mdev_server_create(sd_event *loop, const struct mdev_server_config *config,
                       struct mdev_server **out, struct vgpu_error *error);

/*
 * Ask describe_type again for every registered type and give the module
 * the new descriptions and available_instances (a profile changed:
 * set-profile, reload). Type names never change while mdevs exist.
 * 0 or a negative errno + error.
 */
int mdev_server_refresh_types(struct mdev_server *server, struct vgpu_error *error);

/* Ask describe_type for every type's available_instances again and give
 * them to the module (instances taken outside the transport: local
 * tenants of the profile). */
void mdev_server_refresh_available(struct mdev_server *server);

/* Is profile one of the registered types? */
bool mdev_server_has_type(struct mdev_server *server, const char *profile);

/* The statistics of the mdev's sysfs vendor/ group (st->device_id is
 * filled in here). 0, -ENOENT (no such mdev), or the ioctl's error. */
int mdev_server_set_stats(struct mdev_server *server, const char *uuid,
                          struct vgpu_mdev_stats *st);

/* The mdevs the server knows (created, whether open or not). */
unsigned mdev_server_devices(struct mdev_server *server);

/* Is t one of this transport's VMs? */
bool mdev_transport_is(const struct vgpu_transport *t);

/* Detach every attached VM and close the control device. NULL is a no-op. */
void mdev_server_destroy(struct mdev_server *server);

#endif /* VGPUD_TRANSPORT_MDEV_H */
