// SPDX-License-Identifier: MIT
/* registry.c - attached devices by VM name, see registry.h. */
#include "registry.h"

#include <errno.h>
#include <string.h>

#include "device.h"

void vgpud_registry_init(struct vgpud_registry *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

void vgpud_registry_fini(struct vgpud_registry *r)
{
	pthread_mutex_destroy(&r->lock);
}

struct vgpu_device *vgpud_registry_find_locked(struct vgpud_registry *r, const char *name)
{
	struct vgpu_device *dev;

	vgpud_registry_for_each_locked(r, dev)
		if (!strcmp(dev->name, name))
			return dev;
	return NULL;
}

int vgpud_registry_add(struct vgpud_registry *r, struct vgpu_device *dev)
{
	struct vgpu_device **link;

	pthread_mutex_lock(&r->lock);
	if (vgpud_registry_find_locked(r, dev->name)) {
		pthread_mutex_unlock(&r->lock);
		return -EEXIST;
	}
	/* Keep attach order (ids ascending): append. */
	for (link = &r->first; *link; link = &(*link)->registry_next)
		;
	dev->registry_next = NULL;
	*link = dev;
	r->count++;
	r->attached_total++;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

void vgpud_registry_remove(struct vgpud_registry *r, struct vgpu_device *dev)
{
	struct vgpu_device **link;

	pthread_mutex_lock(&r->lock);
	for (link = &r->first; *link; link = &(*link)->registry_next) {
		if (*link == dev) {
			*link = dev->registry_next;
			r->count--;
			r->detached_total++;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
}
