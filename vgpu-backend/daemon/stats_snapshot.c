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

/* With the registry lock held: what the daemon knows of the device, and
 * the GPU's counters for its address space (a HAL call that never waits).
 * The core's figures are added later, without the registry lock. */
static void take_vm_locked(struct vgpud_device *dev, struct vgpud_vm_snapshot *vm,
                           uint32_t *core_id)
{
	vgpu_mutex_assert_held(&dev->daemon->registry.lock);
	memset(vm, 0, sizeof(*vm));
	vm->id = dev->vm_id;
	snprintf(vm->attach_name, sizeof(vm->attach_name), "%s", dev->name);
	/* the libvirt domain (or QEMU -name) of an mdev VM once known */
	snprintf(vm->name, sizeof(vm->name), "%s", vgpud_registry_report_name_locked(&dev->daemon->registry, dev));
	if (dev->transport->named_by_uuid) /* mdev VMs are attached by mdev UUID */
		snprintf(vm->uuid, sizeof(vm->uuid), "%s", dev->name);
	vm->name_source = dev->name_source ? dev->name_source
	                  : dev->transport->named_by_uuid ? "uuid" : "tenant";
	snprintf(vm->profile, sizeof(vm->profile), "%s", dev->profile);
	vm->transport = dev->transport->kind;
	*core_id = vgpu_core_vm_id(dev->vm); /* an accessor: takes no lock */
	vgpu_hal_as_counters(vgpu_core_vm_address_space(dev->vm), &vm->counters);
	vm->has_contention = vgpu_hal_as_contention(vgpu_core_vm_address_space(dev->vm),
	                                            &vm->contention) == 0;
	vm->channels = atomic_load(&dev->channels);
	vm->requests = atomic_load(&dev->requests);
	vm->requests_failed = atomic_load(&dev->requests_failed);
	vm->ring_errors = atomic_load(&dev->ring_errors);
	vm->doorbells = atomic_load(&dev->doorbells);
	vm->fence_interrupts = atomic_load(&dev->fences);
	vm->attached_at = (int64_t)dev->attached_at.tv_sec;
	vm->owner_uid = dev->owner_uid;
}

/* The core's figures of the VM with core id core_id, if it still exists. */
static bool find_core_stats(const struct vgpu_vm_stats *stats, size_t count, uint32_t core_id,
                            struct vgpu_vm_stats *out)
{
	for (size_t i = 0; i < count; i++) {
		if (stats[i].id == core_id) {
			*out = stats[i];
			return true;
		}
	}
	return false;
}

int vgpud_stats_snapshot_take(struct vgpud *d, struct vgpud_stats_snapshot *out)
{
	struct vgpu_vm_stats *core_vms = NULL;
	struct vgpud_device *dev;
	uint32_t *core_ids;
	size_t n = 0, kept = 0, core_count = 0;
	int err;

	memset(out, 0, sizeof(*out));
	out->hal = d->caps.name ? d->caps.name : "?";
	out->policy = vgpu_core_policy_name(d->core);
	out->chunk_bytes = d->config.chunk_bytes;

	/* The registry lock only for the daemon's own figures: a device
	 * found under it stays valid only while it is held. */
	vgpu_mutex_lock(&d->registry.lock);
	out->vms = calloc(d->registry.count ? d->registry.count : 1, sizeof(*out->vms));
	core_ids = calloc(d->registry.count ? d->registry.count : 1, sizeof(*core_ids));
	if (!out->vms || !core_ids) {
		vgpu_mutex_unlock(&d->registry.lock);
		free(core_ids);
		vgpud_stats_snapshot_free(out);
		return -ENOMEM;
	}
	vgpud_registry_for_each_locked(&d->registry, dev) {
		take_vm_locked(dev, &out->vms[n], &core_ids[n]);
		n++;
	}
	vgpu_mutex_unlock(&d->registry.lock);

	/* The core's figures: one consistent snapshot that never waits for
	 * an eviction. A VM that detached meanwhile is left out. */
	err = vgpu_core_stats_snapshot(d->core, &out->core, &core_vms, &core_count, NULL);
	if (err) {
		free(core_ids);
		vgpud_stats_snapshot_free(out);
		return err;
	}
	for (size_t i = 0; i < n; i++) {
		if (!find_core_stats(core_vms, core_count, core_ids[i], &out->vms[i].stats))
			continue;
		if (kept != i)
			out->vms[kept] = out->vms[i];
		kept++;
	}
	out->vm_count = kept;
	free(core_vms);
	free(core_ids);
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
	if (!snapshot->core.accounting_periods)
		return false;
	*share = vm->stats.gpu_share_ppm / 1e6;
	return true;
}

double vgpud_vm_snapshot_vram_share(const struct vgpud_stats_snapshot *snapshot,
                                    const struct vgpud_vm_snapshot *vm)
{
	if (!snapshot->core.vram_bytes)
		return 0.0;
	return (double)vm->stats.resident_bytes / (double)snapshot->core.vram_bytes;
}
