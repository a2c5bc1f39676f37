/* SPDX-License-Identifier: MIT */
/*
 * profiles.h - the vGPU types a VM can be attached as, and how many
 * instances of each exist.
 *
 * A profile has a name (vgpu-2G), a weight (share of VRAM under pressure), a
 * cap (most bytes a VM of it may hold, resident + evicted; 0 = none) and a
 * maximum number of instances (0 = any). Attaching a VM takes an instance
 * of its profile (vgpud_profiles_acquire); detaching gives it back.
 *
 * Changes (control API, SIGHUP reload) apply to new instances; the caller
 * applies a new weight to running VMs itself. A profile removed by a reload
 * while instances exist stays until the last one detaches, but accepts no
 * new VM. All functions are thread-safe (one internal mutex, never held
 * while calling out).
 */
#ifndef VGPUD_PROFILES_H
#define VGPUD_PROFILES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct vgpud_profile {
	struct vgpud_profile_spec spec;
	uint32_t instances;
	bool removed; /* by a reload; kept while instances > 0 */
};

struct vgpud_profiles {
	pthread_mutex_t lock;
	struct vgpud_profile items[VGPUD_MAX_PROFILES];
	size_t count;
	char default_name[VGPUD_PROFILE_NAME_MAX];
};

void vgpud_profiles_init(struct vgpud_profiles *p, const struct vgpud_profile_spec *specs,
                         size_t count, const char *default_name);
void vgpud_profiles_fini(struct vgpud_profiles *p);

/* Take an instance of name (NULL or "": the default). Fills *spec with the
 * profile as it is now. -ENOENT unknown (or removed) profile, -EUSERS when
 * max_instances exist. */
int vgpud_profiles_acquire(struct vgpud_profiles *p, const char *name,
                           struct vgpud_profile_spec *spec);
/* The same for a user holding held instances of it already (share_limits.h):
 * -EDQUOT when held >= per_user (0: no limit), -EUSERS also when the
 * profile allows two or more and the one taken would be the last free one
 * while held > 0 (it is kept for a user holding none). */
int vgpud_profiles_acquire_share(struct vgpud_profiles *p, const char *name, uint32_t held,
                                 uint32_t per_user, struct vgpud_profile_spec *spec);
void vgpud_profiles_release(struct vgpud_profiles *p, const char *name);
/* Count an instance of name that exists already whatever the limit (an
 * mdev created before this vgpud started). -ENOENT. */
int vgpud_profiles_adopt(struct vgpud_profiles *p, const char *name);

/* Change one profile; a NULL field stays as it is. -ENOENT, -EINVAL. */
int vgpud_profiles_update(struct vgpud_profiles *p, const char *name, const uint32_t *weight,
                          const uint64_t *cap_bytes, const uint32_t *max_instances);

/* Replace the set (reload): existing names are updated, new ones added,
 * missing ones removed (or marked removed while in use). */
int vgpud_profiles_replace(struct vgpud_profiles *p, const struct vgpud_profile_spec *specs,
                           size_t count);

/* A consistent copy of every profile not removed; returns the count. */
size_t vgpud_profiles_snapshot(struct vgpud_profiles *p, struct vgpud_profile *out, size_t max);

/* The spec of name as it is now; -ENOENT. */
int vgpud_profiles_get(struct vgpud_profiles *p, const char *name,
                       struct vgpud_profile_spec *spec);
/* The spec and instance count of name as they are now; -ENOENT. */
int vgpud_profiles_find(struct vgpud_profiles *p, const char *name, struct vgpud_profile *out);

#endif /* VGPUD_PROFILES_H */
