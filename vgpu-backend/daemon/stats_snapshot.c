// SPDX-License-Identifier: MIT
/* stats_snapshot.c - the GPU's and the VMs' statistics, gathered once; see
 * stats_snapshot.h. */
#include "stats_snapshot.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "device.h"
#include "registry.h"

/* With the registry lock held. */
static void take_vm_locked(struct vgpud_device *dev, struct vgpud_vm_snapshot *vm)
{
	memset(vm, 0, sizeof(*vm));
	vm->id = dev->vm_id;
	snprintf(vm->attach_name, sizeof(vm->attach_name), "%s", dev->name);
	/* the libvirt domain (or QEMU -name) of an mdev VM once known */
	snprintf(vm->name, sizeof(vm->name), "%s", vgpud_registry_report_name_locked(dev));
	if (dev->transport->named_by_uuid) /* mdev VMs are attached by mdev UUID */
		snprintf(vm->uuid, sizeof(vm->uuid), "%s", dev->name);
	vm->name_source = dev->name_source ? dev->name_source
	                  : dev->transport->named_by_uuid ? "uuid" : "tenant";
	snprintf(vm->profile, sizeof(vm->profile), "%s", dev->profile);
	vm->transport = dev->transport->kind;
	vgpu_core_vm_stats(dev->vm, &vm->stats);
	vgpu_hal_as_counters(vgpu_core_vm_address_space(dev->vm), &vm->counters);
	vm->channels = atomic_load(&dev->channels);
	vm->requests = atomic_load(&dev->requests);
	vm->requests_failed = atomic_load(&dev->requests_failed);
	vm->ring_errors = atomic_load(&dev->ring_errors);
	vm->doorbells = atomic_load(&dev->doorbells);
	vm->fence_interrupts = atomic_load(&dev->fences);
	vm->attached_at = (int64_t)dev->attached_at.tv_sec;
}

int vgpud_stats_snapshot_take(struct vgpud *d, struct vgpud_stats_snapshot *out)
{
	struct vgpud_device *dev;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	out->hal = d->caps.name ? d->caps.name : "?";
	out->policy = vgpu_core_policy_name(d->core);
	out->chunk_bytes = d->config.chunk_bytes;

	pthread_mutex_lock(&d->registry.lock);
	out->vms = calloc(d->registry.count ? d->registry.count : 1, sizeof(*out->vms));
	if (!out->vms) {
		pthread_mutex_unlock(&d->registry.lock);
		return -ENOMEM;
	}
	vgpud_registry_for_each_locked(&d->registry, dev) {
		take_vm_locked(dev, &out->vms[n]);
		out->total_compute_ns += out->vms[n].counters.busy_ns[VGPU_ENGINE_COMPUTE];
		n++;
	}
	out->vm_count = n;
	/* under the lock: no VM attaches or detaches between the per-VM
	 * figures and the totals */
	vgpu_core_stats(d->core, &out->core);
	pthread_mutex_unlock(&d->registry.lock);
	return 0;
}

void vgpud_stats_snapshot_free(struct vgpud_stats_snapshot *snapshot)
{
	free(snapshot->vms);
	snapshot->vms = NULL;
	snapshot->vm_count = 0;
}

bool vgpud_vm_snapshot_matches(const struct vgpud_vm_snapshot *vm, const char *name)
{
	return !strcmp(vm->attach_name, name) || !strcmp(vm->name, name);
}

uint64_t vgpud_vm_snapshot_runtime_ns(const struct vgpud_vm_snapshot *vm)
{
	return vm->counters.busy_ns[VGPU_ENGINE_COMPUTE] + vm->counters.busy_ns[VGPU_ENGINE_COPY];
}

bool vgpud_vm_snapshot_gpu_time_share(const struct vgpud_stats_snapshot *snapshot,
                                      const struct vgpud_vm_snapshot *vm, double *share)
{
	if (!snapshot->total_compute_ns)
		return false;
	*share = (double)vm->counters.busy_ns[VGPU_ENGINE_COMPUTE] /
	         (double)snapshot->total_compute_ns;
	return true;
}

double vgpud_vm_snapshot_vram_share(const struct vgpud_stats_snapshot *snapshot,
                                    const struct vgpud_vm_snapshot *vm)
{
	if (!snapshot->core.vram_bytes)
		return 0.0;
	return (double)vm->stats.resident_bytes / (double)snapshot->core.vram_bytes;
}
