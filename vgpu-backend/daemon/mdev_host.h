/* SPDX-License-Identifier: MIT */
/*
 * mdev_host.h - what vgpud decides for its mdev VMs; the transport
 * (transport_mdev.h) only carries the bytes.
 *
 *  - types: every profile is an mdev type "vgpu-<name without vgpu->"
 *    whose description and available_instances follow the profile as it is
 *    now (set-profile, reload): max_instances minus the instances in use
 *    (mdevs and local tenants of it; 256 for "no limit");
 *  - instances: an mdev holds an instance of its profile (profiles.h) from
 *    CREATE to REMOVE, so creating one beyond max_instances is refused and
 *    its VM attaches without taking another; an mdev that existed before
 *    vgpud started is counted whatever the limit;
 *  - names: a VM is attached under its mdev UUID; domain_names.h looks for
 *    its libvirt domain or QEMU -name, which becomes its display name in
 *    the registry (a reset keeps it);
 *  - sysfs statistics: once a second, each mdev VM's figures and name go to
 *    the mdev's vendor/ group, and every type's available_instances is
 *    refreshed (local tenants take instances too) (a timer on the loop,
 *    each round a job on the daemon's worker pool: it takes the registry
 *    lock, which must not hold up the loop; statistics never wait for an
 *    eviction).
 */
#ifndef VGPUD_MDEV_HOST_H
#define VGPUD_MDEV_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "vgpu/error.h"

struct vgpud;
struct mdev_host;

struct mdev_host_config {
	const char *path;        /* the control device; NULL: /dev/vgpu_mdev */
	const char *libvirt_uri; /* domain_names.h; NULL or "": its default */
	/* tests: a fake vgpu_mdev.ko (transport_mdev.h); NULL: ioctl(2) */
	int (*control_ioctl)(void *ctx, int fd, unsigned long request, void *arg);
	void *control_ctx;
};

/* Register d's profiles as mdev types and serve mdev VMs, the module's
 * events on loop, which must not be running on another thread now (create
 * the host before the loop runs, or on it) nor when mdev_host_destroy
 * runs. 0, or a negative errno after writing what was wrong and what to do
 * into error. */
int mdev_host_create(struct vgpud *d, sd_event *loop, const struct mdev_host_config *config,
                     struct mdev_host **out, struct vgpu_error *error);

/* A profile changed: its type's description and available_instances follow.
 * false when no mdev type has that name (types are fixed at start: a new
 * profile becomes a type when vgpud restarts). */
bool mdev_host_profile_changed(struct mdev_host *host, const char *profile);

/* The mdevs known (created, whether open or not). */
unsigned mdev_host_devices(struct mdev_host *host);

/* Detach every mdev VM and close the control device. NULL is a no-op. */
void mdev_host_destroy(struct mdev_host *host);

#endif /* VGPUD_MDEV_HOST_H */
