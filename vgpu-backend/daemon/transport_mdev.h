/* SPDX-License-Identifier: MIT */
/*
 * transport_mdev.h - vgpud's mdev transport: vgpu/transport.h over the
 * control device of vgpu_mdev.ko (/dev/vgpu_mdev, vgpu/mdev_control.h).
 *
 * One server per vgpud (the module accepts one connection at a time). It
 * registers one mdev type per profile and attaches a VM (named by the mdev
 * UUID) through config->host when QEMU opens an mdev; see transport_mdev.c
 * for the events and host-kmod/README.md for the module's side. daemon.c
 * starts it next to the local server ([daemon] mdev = auto|on|off).
 */
#ifndef VGPUD_TRANSPORT_MDEV_H
#define VGPUD_TRANSPORT_MDEV_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "device.h"

struct mdev_server;

struct mdev_server_config {
	const char *path; /* NULL: VGPU_MDEV_CONTROL_PATH */
	const struct vgpud_profile_spec *profiles;
	size_t profile_count; /* 1..VGPU_MDEV_MAX_TYPES are registered */
	struct vgpu_device_host host;
	/* VMs are attached by mdev UUID, then named by their libvirt domain
	 * (asked at this URI; NULL or "": default, "none": never) or QEMU's
	 * -name (domain_names.h) */
	const char *libvirt_uri;
};

/*
 * Open the control device, register the profiles as mdev types and start
 * the event and statistics threads. 0, or a negative errno after logging
 * what was wrong (-ENOENT: no such device, the module is not loaded;
 * -EBUSY: another vgpud is connected; -EPROTO: version mismatch).
 */
int mdev_server_create(const struct mdev_server_config *config, struct mdev_server **out);

/*
 * A profile changed (set-profile, reload): its type's instance limit
 * becomes spec->max_instances and the module's available_instances follows
 * at once (existing mdevs stay even above a lowered limit). Weight and cap
 * need nothing here: a VM is attached with the profile's current values.
 * The type's description in sysfs keeps the values it was registered with.
 * false when no mdev type has that name (types are fixed at start: a new
 * profile becomes a type when vgpud restarts).
 */
bool mdev_server_update_profile(struct mdev_server *server, const struct vgpud_profile_spec *spec);

/* The mdevs the server knows (created, whether open or not). */
unsigned mdev_server_devices(struct mdev_server *server);

/* Detach every attached VM and close the control device. NULL is a no-op. */
void mdev_server_destroy(struct mdev_server *server);

#endif /* VGPUD_TRANSPORT_MDEV_H */
