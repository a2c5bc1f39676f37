// SPDX-License-Identifier: MIT
/* registry.c - attached devices by VM name, see registry.h. */
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

void vgpud_registry_init(struct vgpud_registry *r)
{
	memset(r, 0, sizeof(*r));
	vgpu_mutex_init(&r->lock);
}

void vgpud_registry_fini(struct vgpud_registry *r)
{
	vgpu_mutex_destroy(&r->lock);
}

bool vgpud_registry_matches_locked(struct vgpud_registry *r, const struct vgpud_device *dev,
                                   const char *name)
{
	vgpu_mutex_assert_held(&r->lock);
	return !strcmp(dev->name, name) || (dev->display_name[0] && !strcmp(dev->display_name, name));
}

const char *vgpud_registry_report_name_locked(struct vgpud_registry *r,
                                              const struct vgpud_device *dev)
{
	vgpu_mutex_assert_held(&r->lock);
	return dev->display_name[0] ? dev->display_name : dev->name;
}

struct vgpud_device *vgpud_registry_find_locked(struct vgpud_registry *r, const char *name)
{
	struct vgpud_device *dev;

	vgpu_mutex_assert_held(&r->lock);
	vgpud_registry_for_each_locked(r, dev)
		if (vgpud_registry_matches_locked(r, dev, name))
			return dev;
	return NULL;
}

/* Is name free for dev (no other registered device answers to it)? */
static bool name_free_locked(struct vgpud_registry *r, const struct vgpud_device *dev,
                             const char *name)
{
	struct vgpud_device *other;

	vgpu_mutex_assert_held(&r->lock);
	vgpud_registry_for_each_locked(r, other)
		if (other != dev && vgpud_registry_matches_locked(r, other, name))
			return false;
	return true;
}

/* Give dev the display name name (or name#N); true when that changed it. */
static bool set_display_name_locked(struct vgpud_registry *r, struct vgpud_device *dev,
                                    const char *name, const char *source, char *given,
                                    size_t given_len)
{
	char candidate[sizeof(dev->display_name)];
	bool changed;
	unsigned n;

	vgpu_mutex_assert_held(&r->lock);
	snprintf(candidate, sizeof(candidate), "%s", name);
	for (n = 2; !name_free_locked(r, dev, candidate) && n < 1000; n++) {
		char suffix[8];
		int keep;

		snprintf(suffix, sizeof(suffix), "#%u", n);
		keep = (int)(sizeof(candidate) - 1 - strlen(suffix));
		snprintf(candidate, sizeof(candidate), "%.*s%s", keep, name, suffix);
	}
	/* the attach name itself needs no display name */
	if (!strcmp(candidate, dev->name))
		candidate[0] = 0;
	changed = strcmp(dev->display_name, candidate) || dev->name_source != source;
	memcpy(dev->display_name, candidate, sizeof(dev->display_name));
	dev->name_source = source;
	if (given_len)
		snprintf(given, given_len, "%s", candidate[0] ? candidate : dev->name);
	return changed;
}

void vgpud_registry_set_display_name(struct vgpud_registry *r, struct vgpud_device *dev,
                                     const char *name, const char *source, char *given,
                                     size_t given_len)
{
	vgpu_mutex_lock(&r->lock);
	set_display_name_locked(r, dev, name, source, given, given_len);
	vgpu_mutex_unlock(&r->lock);
}

int vgpud_registry_name_vm(struct vgpud_registry *r, const char *vm_name, const char *name,
                           const char *source, char *given, size_t given_len, bool *changed)
{
	struct vgpud_device *dev;

	vgpu_mutex_lock(&r->lock);
	vgpud_registry_for_each_locked(r, dev)
		if (!strcmp(dev->name, vm_name))
			break;
	if (dev)
		*changed = set_display_name_locked(r, dev, name, source, given, given_len);
	vgpu_mutex_unlock(&r->lock);
	return dev ? 0 : -ENOENT;
}

int vgpud_registry_add(struct vgpud_registry *r, struct vgpud_device *dev)
{
	struct vgpud_device **link;

	vgpu_mutex_lock(&r->lock);
	if (vgpud_registry_find_locked(r, dev->name)) {
		vgpu_mutex_unlock(&r->lock);
		return -EEXIST;
	}
	/* Keep attach order (ids ascending): append. */
	for (link = &r->first; *link; link = &(*link)->registry_next)
		;
	dev->registry_next = NULL;
	*link = dev;
	r->count++;
	r->attached_total++;
	vgpu_mutex_unlock(&r->lock);
	return 0;
}

void vgpud_registry_remove(struct vgpud_registry *r, struct vgpud_device *dev)
{
	struct vgpud_device **link;

	vgpu_mutex_lock(&r->lock);
	for (link = &r->first; *link; link = &(*link)->registry_next) {
		if (*link == dev) {
			*link = dev->registry_next;
			r->count--;
			r->detached_total++;
			break;
		}
	}
	vgpu_mutex_unlock(&r->lock);
}
