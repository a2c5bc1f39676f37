// SPDX-License-Identifier: MIT
/* share_limits.c - per-user shares of channels and instances, see
 * share_limits.h. */
#include "share_limits.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vgpu/error.h"

#include "daemon.h"
#include "device.h"
#include "registry.h"

/* Channel admissions, one at a time (count, then create). */
static pthread_mutex_t channel_admission = PTHREAD_MUTEX_INITIALIZER;

int vgpud_share_channel(struct vgpud *d, struct vgpud_device *dev, int (*create)(void *arg),
                        void *arg, struct vgpu_error *error)
{
	uint32_t total = 0, mine = 0, max = d->caps.max_channels;
	uint32_t per_uid = d->config.max_channels_per_uid, reserved = d->config.channels_reserved;
	int err = 0;

	pthread_mutex_lock(&channel_admission);
	if (dev->owner_uid != 0) {
		vgpu_mutex_lock(&d->registry.lock);
		for (struct vgpud_device *o = d->registry.first; o; o = o->registry_next) {
			uint32_t n = atomic_load(&o->channels);

			total += n;
			if (o->owner_uid == dev->owner_uid)
				mine += n;
		}
		vgpu_mutex_unlock(&d->registry.lock);
		if (per_uid && mine >= per_uid) {
			err = vgpu_error_set(error, -ENOSPC,
			                     "user %u holds %u channels (max_channels_per_uid)",
			                     dev->owner_uid, mine);
		} else if (mine && total + 1 + reserved > max) {
			err = vgpu_error_set(error, -ENOSPC,
			                     "%u of the GPU's %u channels are in use; the last %u "
			                     "are for users without a channel (channels_reserved)",
			                     total, max,
			                     reserved);
		}
	}
	if (!err)
		err = create(arg);
	pthread_mutex_unlock(&channel_admission);
	return err;
}

uint32_t vgpud_share_instances_held(struct vgpud *d, uint32_t uid, const char *profile)
{
	uint32_t held = 0;

	vgpu_mutex_lock(&d->registry.lock);
	for (struct vgpud_device *o = d->registry.first; o; o = o->registry_next)
		held += o->owner_uid == uid && o->holds_instance && !strcmp(o->profile, profile);
	vgpu_mutex_unlock(&d->registry.lock);
	return held;
}
