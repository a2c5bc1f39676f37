// SPDX-License-Identifier: MIT
/* mdev_host.c - vgpud's decisions for its mdev VMs, see mdev_host.h. */
#include "mdev_host.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/error.h"

#include "daemon.h"
#include "device.h"
#include "domain_names.h"
#include "log.h"
#include "profiles.h"
#include "registry.h"
#include "stats_snapshot.h"
#include "transport_mdev.h"
#include "work_pool.h"

#define MDEV_UNLIMITED_INSTANCES 256u
#define MDEV_STATS_INTERVAL_MS 1000

struct mdev_host {
	struct vgpud *d;
	struct mdev_server *server;
	struct domain_names *names; /* libvirt domain / QEMU -name of each VM */
	sd_event_source *stats_timer; /* every MDEV_STATS_INTERVAL_MS */
	struct work_job stats_job;    /* on the pool meanwhile */
	bool stats_busy;              /* the loop's */
	struct vgpud_ratelimit stats_log_limit;
};

/* ------------------------------------------------------------ types */

static void describe(const struct vgpud_profile *p, struct vgpu_mdev_type_info *t)
{
	const struct vgpud_profile_spec *spec = &p->spec;
	const char *name = strncmp(spec->name, "vgpu-", 5) ? spec->name : spec->name + 5;

	memset(t, 0, sizeof(*t));
	snprintf(t->sysfs_name, sizeof(t->sysfs_name), "%.31s", name[0] ? name : spec->name);
	for (size_t i = 0; t->sysfs_name[i]; i++) {
		char c = t->sysfs_name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			t->sysfs_name[i] = '_';
	}
	snprintf(t->name, sizeof(t->name), "%s", spec->name);
	if (spec->cap_bytes)
		snprintf(t->description, sizeof(t->description),
		         "vGPU profile %s: weight %u, GPU memory cap %llu MiB, oversubscribed by "
		         "vgpud (GPUswap)", spec->name, spec->weight,
		         (unsigned long long)(spec->cap_bytes >> 20));
	else
		snprintf(t->description, sizeof(t->description),
		         "vGPU profile %s: weight %u, no GPU memory cap, oversubscribed by vgpud "
		         "(GPUswap)", spec->name, spec->weight);
	if (!spec->max_instances)
		t->available = MDEV_UNLIMITED_INSTANCES;
	else if (p->instances < spec->max_instances)
		t->available = spec->max_instances - p->instances;
}

static int hook_describe_type(void *ctx, const char *profile, struct vgpu_mdev_type_info *out)
{
	struct mdev_host *h = ctx;
	struct vgpud_profile p;
	int err = vgpud_profiles_find(&h->d->profiles, profile, &p);

	if (!err)
		describe(&p, out);
	return err;
}

/* ------------------------------------------------------------ instances */

static int hook_create(void *ctx, const char *profile, const char *uuid, bool existing,
                       struct vgpu_error *error)
{
	struct mdev_host *h = ctx;
	struct vgpud_profile_spec spec;
	int err;

	(void)uuid;
	if (existing)
		err = vgpud_profiles_adopt(&h->d->profiles, profile);
	else
		err = vgpud_profiles_acquire(&h->d->profiles, profile, &spec);
	if (err == -EUSERS && !vgpud_profiles_get(&h->d->profiles, profile, &spec))
		vgpu_error_set(error, err,
		               "profile %.40s has all %u instances in use; remove one or raise "
		               "max_instances", profile, spec.max_instances);
	else if (err == -EUSERS)
		vgpu_error_set(error, err, "profile %.40s has all its instances in use", profile);
	else if (err)
		vgpu_error_set(error, err, "there is no vGPU profile %.40s any more", profile);
	return err;
}

static void hook_remove(void *ctx, const char *profile, const char *uuid)
{
	struct mdev_host *h = ctx;

	vgpud_profiles_release(&h->d->profiles, profile);
	domain_names_forget(h->names, uuid);
}

/* ------------------------------------------------------------ names */

/*
 * The name domain_names.h found for the VM attached as uuid (its libvirt
 * domain or QEMU -name), given to the registry: vgpuctl, the control API
 * and sysfs vendor/vm use it from then on. given: what the VM is reported
 * as (unchanged when no name is known).
 */
static void apply_name(struct mdev_host *h, const char *uuid, char *given, size_t given_len)
{
	enum domain_name_source source;
	char found[DOMAIN_NAME_MAX];
	bool changed;

	source = domain_names_get(h->names, uuid, found, sizeof(found));
	if (source == DOMAIN_NAME_NONE)
		return;
	if (vgpud_registry_name_vm(&h->d->registry, uuid, found, domain_name_source_string(source),
	                           given, given_len, &changed) || !changed)
		return;
	log_info("mdev %s: the VM is %s '%s'%s%s%s", uuid,
	         source == DOMAIN_NAME_LIBVIRT ? "libvirt domain" : "QEMU -name", found,
	         strcmp(found, given) ? " (another VM has that name: reported as '" : "",
	         strcmp(found, given) ? given : "", strcmp(found, given) ? "')" : "");
}

static void push_stats(struct mdev_host *h, const char *uuid, struct vgpu_mdev_stats *st)
{
	int err = mdev_server_set_stats(h->server, uuid, st);

	if (err && err != -ENOENT && err != -ENODEV)
		vgpud_log_ratelimited(&h->stats_log_limit, VGPUD_LOG_WARN,
		                      "mdev %s: cannot update its sysfs statistics: %s", uuid,
		                      strerror(-err));
}

static int hook_attach(void *ctx, struct vgpu_transport *t, const char *profile,
                       const char *uuid, bool reset, struct vgpud_device **out,
                       struct vgpu_error *error)
{
	struct mdev_host *h = ctx;
	struct vgpu_attach_params params = { .vm_name = uuid, .profile = profile };
	struct vgpu_mdev_stats st = { 0 };
	int err;

	err = vgpud_device_attach(h->d, t, &params, true, out, error);
	if (err)
		return err;
	if (!reset) /* who opened it: the statistics round applies the name once known */
		domain_names_watch(h->names, uuid);
	snprintf(st.vm_name, sizeof(st.vm_name), "%s", uuid);
	apply_name(h, uuid, st.vm_name, sizeof(st.vm_name)); /* a reset keeps the name */
	push_stats(h, uuid, &st);
	return 0;
}

/* ------------------------------------------------------------ statistics */

static void push_all_stats(struct mdev_host *h)
{
	struct vgpud_stats_snapshot snap;

	/* local tenants take instances of the profiles too */
	mdev_server_refresh_available(h->server);
	if (vgpud_stats_snapshot_take(h->d, &snap))
		return;
	for (size_t i = 0; i < snap.vm_count; i++) {
		const struct vgpud_vm_snapshot *vm = &snap.vms[i];
		struct vgpu_mdev_stats st = {
			.allocated_bytes = vm->stats.allocated_bytes,
			.resident_bytes = vm->stats.resident_bytes,
			.evicted_bytes = vm->stats.evicted_bytes,
			.fair_share_bytes = vm->stats.fair_share_bytes,
			.evictions = (uint32_t)vm->stats.evictions,
			.returns = (uint32_t)vm->stats.returns,
		};

		if (!vm->uuid[0])
			continue; /* not an mdev VM */
		snprintf(st.vm_name, sizeof(st.vm_name), "%s", vm->name);
		apply_name(h, vm->uuid, st.vm_name, sizeof(st.vm_name));
		push_stats(h, vm->uuid, &st);
	}
	vgpud_stats_snapshot_free(&snap);
}

/*
 * A timer on the loop, the work on the pool: the snapshot takes the
 * registry lock, which attach and detach may hold while they wait; on the
 * loop that would hold up every mdev doorbell
 * (test_slow_reset_does_not_delay_other_vms). One round at a time.
 */
static void stats_run(struct work_job *job)
{
	push_all_stats((struct mdev_host *)((char *)job - offsetof(struct mdev_host, stats_job)));
}

static void stats_done(struct work_job *job)
{
	((struct mdev_host *)((char *)job - offsetof(struct mdev_host, stats_job)))->stats_busy =
		false;
}

static int on_stats_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
	struct mdev_host *h = userdata;
	int err;

	(void)usec;
	if (!h->stats_busy) {
		h->stats_job.run = stats_run;
		h->stats_job.done = stats_done;
		err = work_pool_submit(h->d->pool, &h->stats_job);
		h->stats_busy = !err;
		if (err)
			vgpud_log_ratelimited(&h->stats_log_limit, VGPUD_LOG_WARN,
			                      "mdev: no worker for the statistics (%s); skipping "
			                      "a round", strerror(-err));
	}
	sd_event_source_set_time_relative(source, MDEV_STATS_INTERVAL_MS * 1000ull);
	sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
	return 0;
}

/* ------------------------------------------------------------ life cycle */

static int start_names(struct mdev_host *h, const struct mdev_host_config *config,
                       struct vgpu_error *error)
{
	struct domain_names_config nc = {
		.libvirt_uri = config->libvirt_uri && config->libvirt_uri[0] ? config->libvirt_uri
		                                                             : NULL,
	};
	int err = domain_names_create(&nc, &h->names);

	if (err)
		vgpu_error_set(error, err, "cannot start looking up VM names: %s", strerror(-err));
	return err;
}

static int start_server(struct mdev_host *h, sd_event *loop,
                        const struct mdev_host_config *config, struct vgpu_error *error)
{
	struct vgpud_profile profiles[VGPUD_MAX_PROFILES];
	const char *names[VGPUD_MAX_PROFILES];
	size_t count = vgpud_profiles_snapshot(&h->d->profiles, profiles, VGPUD_MAX_PROFILES);
	struct mdev_server_config sc = {
		.path = config->path,
		.profiles = names,
		.profile_count = count,
		.hooks = {
			.ctx = h,
			.describe_type = hook_describe_type,
			.create = hook_create,
			.remove = hook_remove,
			.attach = hook_attach,
		},
		.control_ioctl = config->control_ioctl,
		.control_ctx = config->control_ctx,
	};

	for (size_t i = 0; i < count; i++)
		names[i] = profiles[i].spec.name;
	return mdev_server_create(loop, &sc, &h->server, error);
}

static int start_stats(struct mdev_host *h, sd_event *loop, struct vgpu_error *error)
{
	int err = sd_event_add_time_relative(loop, &h->stats_timer, CLOCK_MONOTONIC,
	                                     MDEV_STATS_INTERVAL_MS * 1000ull, 10000,
	                                     on_stats_timer, h);

	if (err < 0)
		return vgpu_error_set(error, err, "cannot time the statistics: %s", strerror(-err));
	return 0;
}

int mdev_host_create(struct vgpud *d, sd_event *loop, const struct mdev_host_config *config,
                     struct mdev_host **out, struct vgpu_error *error)
{
	struct mdev_host *h = calloc(1, sizeof(*h));
	int err;

	if (!h)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	h->d = d;
	err = start_names(h, config, error);
	if (!err)
		err = start_server(h, loop, config, error);
	if (!err)
		err = start_stats(h, loop, error);
	if (err) {
		mdev_host_destroy(h);
		return err;
	}
	*out = h;
	return 0;
}

bool mdev_host_profile_changed(struct mdev_host *h, const char *profile)
{
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (!mdev_server_has_type(h->server, profile))
		return false;
	if (mdev_server_refresh_types(h->server, &why))
		log_error("mdev: %s", vgpu_error_msg(&why));
	return true;
}

unsigned mdev_host_devices(struct mdev_host *h)
{
	return mdev_server_devices(h->server);
}

void mdev_host_destroy(struct mdev_host *h)
{
	if (!h)
		return;
	sd_event_source_disable_unref(h->stats_timer);
	if (h->stats_busy)
		work_pool_flush(h->d->pool); /* the round in progress */
	mdev_server_destroy(h->server);
	domain_names_destroy(h->names);
	free(h);
}
