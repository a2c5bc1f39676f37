// SPDX-License-Identifier: MIT
/*
 * mdev_types.c - the mdev types the mdev transport registers with
 * vgpu_mdev.ko: one per profile it is given (the first
 * VGPU_MDEV_MAX_TYPES), their names fixed from then on, their
 * descriptions and available_instances whatever hooks.describe_type says
 * when asked (a profile that is gone offers no instance). The transport
 * asks and carries the answer; it decides nothing. See
 * transport_mdev_internal.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vgpu/abi/mdev_control.h"
#include "vgpu/error.h"

#include "log.h"
#include "transport_mdev.h"
#include "transport_mdev_internal.h"

int mdev_types_push(struct mdev_server *s, struct vgpu_error *error)
{
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	struct vgpu_mdev_set_types st = { .count = s->type_count, .types = (uintptr_t)types };
	bool described[VGPU_MDEV_MAX_TYPES];
	int err;

	for (unsigned i = 0; i < s->type_count; i++) /* hooks: no lock held */
		described[i] = !s->hooks.describe_type(s->hooks.ctx, s->types[i].name, &types[i]);
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->type_count; i++) {
		if (described[i]) {
			memcpy(s->types[i].description, types[i].description,
			       sizeof(types[i].description));
			s->types[i].available = types[i].available;
		} else { /* the profile is gone (reload): no new mdev of it */
			s->types[i].available = 0;
		}
		types[i] = s->types[i]; /* names as registered */
	}
	err = mdev_control(s, VGPU_MDEV_SET_TYPES, &st);
	pthread_mutex_unlock(&s->lock);
	if (err)
		vgpu_error_set(error, err, "registering %u mdev types failed: %s%s", s->type_count,
		               strerror(-err),
		               err == -EBUSY ? " (mdevs of other profiles still exist: remove them)"
		                             : "");
	return err;
}

int mdev_types_register(struct mdev_server *s, const char *const *profiles, size_t count,
                        struct vgpu_error *error)
{
	unsigned n = 0;

	for (size_t i = 0; i < count && n < VGPU_MDEV_MAX_TYPES; i++) {
		if (s->hooks.describe_type(s->hooks.ctx, profiles[i], &s->types[n])) {
			log_warn("mdev: profile '%s' has no mdev type", profiles[i]);
			continue;
		}
		n++;
	}
	if (count > VGPU_MDEV_MAX_TYPES)
		log_warn("mdev: only the first %u profiles become mdev types", VGPU_MDEV_MAX_TYPES);
	if (!n)
		return vgpu_error_set(error, -EINVAL, "no profile can be an mdev type");
	s->type_count = n;
	return mdev_types_push(s, error);
}

void mdev_push_available(struct mdev_server *s, unsigned type)
{
	struct vgpu_mdev_type_info info;
	struct vgpu_mdev_set_available a = { .type_index = type };
	int err;

	if (!s->hooks.describe_type(s->hooks.ctx, s->types[type].name, &info))
		a.available = info.available;
	err = mdev_control(s, VGPU_MDEV_SET_AVAILABLE, &a);
	if (err)
		log_warn("mdev: cannot update available_instances of %s: %s", s->types[type].name,
		         strerror(-err));
}

int mdev_server_refresh_types(struct mdev_server *s, struct vgpu_error *error)
{
	return mdev_types_push(s, error);
}

void mdev_server_refresh_available(struct mdev_server *s)
{
	for (unsigned type = 0; type < s->type_count; type++)
		mdev_push_available(s, type);
}

bool mdev_server_has_type(struct mdev_server *s, const char *profile)
{
	for (unsigned i = 0; i < s->type_count; i++)
		if (!strcmp(s->types[i].name, profile))
			return true;
	return false;
}
