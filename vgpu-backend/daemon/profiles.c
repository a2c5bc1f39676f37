// SPDX-License-Identifier: MIT
/* profiles.c - vGPU profiles and their instance counts, see profiles.h. */
#include "profiles.h"

#include <errno.h>
#include <string.h>

#include "vgpu/core.h"

static struct vgpud_profile *find(struct vgpud_profiles *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->count; i++)
		if (!strcmp(p->items[i].spec.name, name))
			return &p->items[i];
	return NULL;
}

void vgpud_profiles_init(struct vgpud_profiles *p, const struct vgpud_profile_spec *specs,
                         size_t count, const char *default_name)
{
	size_t i;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	for (i = 0; i < count && i < VGPUD_MAX_PROFILES; i++)
		p->items[i].spec = specs[i];
	p->count = i;
	strncpy(p->default_name, default_name, sizeof(p->default_name) - 1);
}

void vgpud_profiles_fini(struct vgpud_profiles *p)
{
	pthread_mutex_destroy(&p->lock);
}

int vgpud_profiles_acquire(struct vgpud_profiles *p, const char *name,
                           struct vgpud_profile_spec *spec)
{
	struct vgpud_profile *profile;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	profile = find(p, name && name[0] ? name : p->default_name);
	if (!profile || profile->removed)
		err = -ENOENT;
	else if (profile->spec.max_instances && profile->instances >= profile->spec.max_instances)
		err = -EUSERS;
	else {
		profile->instances++;
		*spec = profile->spec;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

int vgpud_profiles_acquire_share(struct vgpud_profiles *p, const char *name, uint32_t held,
                                 uint32_t per_user, struct vgpud_profile_spec *spec)
{
	struct vgpud_profile *profile;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	profile = find(p, name && name[0] ? name : p->default_name);
	if (!profile || profile->removed)
		err = -ENOENT;
	else if (per_user && held >= per_user)
		err = -EDQUOT;
	else if (profile->spec.max_instances &&
	         (profile->instances >= profile->spec.max_instances ||
	          (held && profile->spec.max_instances >= 2 &&
	           profile->instances + 1 >= profile->spec.max_instances)))
		err = -EUSERS;
	else {
		profile->instances++;
		*spec = profile->spec;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

int vgpud_profiles_adopt(struct vgpud_profiles *p, const char *name)
{
	struct vgpud_profile *profile;
	int err = -ENOENT;

	pthread_mutex_lock(&p->lock);
	profile = find(p, name);
	if (profile && !profile->removed) {
		profile->instances++;
		err = 0;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* Drop removed profiles nobody uses any more. Called with the lock held. */
static void compact(struct vgpud_profiles *p)
{
	size_t i = 0;

	while (i < p->count) {
		if (p->items[i].removed && !p->items[i].instances) {
			p->items[i] = p->items[p->count - 1];
			p->count--;
		} else {
			i++;
		}
	}
}

void vgpud_profiles_release(struct vgpud_profiles *p, const char *name)
{
	struct vgpud_profile *profile;

	pthread_mutex_lock(&p->lock);
	profile = find(p, name);
	if (profile && profile->instances)
		profile->instances--;
	compact(p);
	pthread_mutex_unlock(&p->lock);
}

int vgpud_profiles_update(struct vgpud_profiles *p, const char *name, const uint32_t *weight,
                          const uint64_t *cap_bytes, const uint32_t *max_instances)
{
	struct vgpud_profile *profile;
	int err = 0;

	if ((weight && (!*weight || *weight > VGPU_CORE_WEIGHT_MAX)) ||
	    (cap_bytes && *cap_bytes % 4096))
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	profile = find(p, name);
	if (!profile || profile->removed) {
		err = -ENOENT;
	} else {
		if (weight)
			profile->spec.weight = *weight;
		if (cap_bytes)
			profile->spec.cap_bytes = *cap_bytes;
		if (max_instances)
			profile->spec.max_instances = *max_instances;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

int vgpud_profiles_replace(struct vgpud_profiles *p, const struct vgpud_profile_spec *specs,
                           size_t count)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->count; i++)
		p->items[i].removed = true;
	for (i = 0; i < count; i++) {
		struct vgpud_profile *profile = find(p, specs[i].name);

		if (!profile) {
			if (p->count >= VGPUD_MAX_PROFILES)
				continue;
			profile = &p->items[p->count++];
			profile->instances = 0;
		}
		profile->spec = specs[i];
		profile->removed = false;
	}
	compact(p);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

size_t vgpud_profiles_snapshot(struct vgpud_profiles *p, struct vgpud_profile *out, size_t max)
{
	size_t i, n = 0;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->count && n < max; i++)
		if (!p->items[i].removed)
			out[n++] = p->items[i];
	pthread_mutex_unlock(&p->lock);
	return n;
}

int vgpud_profiles_get(struct vgpud_profiles *p, const char *name,
                       struct vgpud_profile_spec *spec)
{
	struct vgpud_profile profile;
	int err = vgpud_profiles_find(p, name, &profile);

	if (!err)
		*spec = profile.spec;
	return err;
}

int vgpud_profiles_find(struct vgpud_profiles *p, const char *name, struct vgpud_profile *out)
{
	struct vgpud_profile *profile;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	profile = find(p, name);
	if (!profile || profile->removed)
		err = -ENOENT;
	else
		*out = *profile;
	pthread_mutex_unlock(&p->lock);
	return err;
}
