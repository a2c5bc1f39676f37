/* SPDX-License-Identifier: MIT */
/*
 * registry.h - the attached VMs' devices, by name, for the control API.
 *
 * A device is in the registry from the end of its attach until the start of
 * its detach; a VM name is unique among registered devices, and so is a
 * display name (what reports call an mdev VM once its libvirt domain or
 * QEMU -name is known, domain_names.h): a device answers to both. The control
 * API walks the registry with the lock held and may call the core for
 * statistics meanwhile (lock order: registry, then the core); a device
 * leaving the registry waits for such a walk to finish, so a device found
 * under the lock stays valid until it is released.
 */
#ifndef VGPUD_REGISTRY_H
#define VGPUD_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/mutex.h"

struct vgpud_device;

struct vgpud_registry {
	struct vgpu_mutex lock;
	struct vgpud_device *first;
	size_t count;
	uint64_t attached_total;
	uint64_t detached_total;
};

void vgpud_registry_init(struct vgpud_registry *r);
void vgpud_registry_fini(struct vgpud_registry *r);

/* -EEXIST when a device of that VM name is registered. */
int vgpud_registry_add(struct vgpud_registry *r, struct vgpud_device *dev);
void vgpud_registry_remove(struct vgpud_registry *r, struct vgpud_device *dev);

/*
 * Give dev the display name name (source: "libvirt", "qemu"; for the
 * control API). If another registered VM answers to name (a domain with two
 * vGPUs), dev gets "name#2", "name#3", ... The name given is copied into
 * given. Any thread; dev must stay attached meanwhile.
 */
void vgpud_registry_set_display_name(struct vgpud_registry *r, struct vgpud_device *dev,
                                     const char *name, const char *source, char *given,
                                     size_t given_len);

/* The same for the VM attached as vm_name, which may detach meanwhile:
 * -ENOENT when it is not attached. *changed: the display name or its
 * source changed (source is compared as a pointer: pass the constant
 * strings of domain_name_source_string). */
int vgpud_registry_name_vm(struct vgpud_registry *r, const char *vm_name, const char *name,
                           const char *source, char *given, size_t given_len, bool *changed);

/* With r->lock held (asserted in debug builds, vgpu/mutex.h): */
struct vgpud_device *vgpud_registry_find_locked(struct vgpud_registry *r, const char *name);
/* The name reports use: the display name if there is one, else the name. */
const char *vgpud_registry_report_name_locked(struct vgpud_registry *r,
                                              const struct vgpud_device *dev);
/* Does dev answer to name (its name or its display name)? */
bool vgpud_registry_matches_locked(struct vgpud_registry *r, const struct vgpud_device *dev,
                                   const char *name);
#define vgpud_registry_for_each_locked(r, dev) \
	for ((dev) = (r)->first; (dev); (dev) = (dev)->registry_next)

#endif /* VGPUD_REGISTRY_H */
