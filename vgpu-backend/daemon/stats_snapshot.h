/* SPDX-License-Identifier: MIT */
/*
 * stats_snapshot.h - what vgpud reports about the GPU and its VMs, gathered
 * once: the one place the control API's list/status/stats (CONTROL_API.md)
 * and the metrics endpoint (metrics.h) read statistics from.
 *
 * vgpud_stats_snapshot_take copies the daemon's figures of each attached
 * VM with the registry lock held, then, without it, takes one consistent
 * snapshot of the core's statistics (vgpu_core_stats_snapshot) and joins
 * the two by the core's VM id; a VM that detached in between is left out.
 * Neither step waits for an eviction in progress: the core publishes its
 * statistics outside its allocation lock. Any thread may call it. The
 * snapshot it fills is plain data owned by the caller: formatting it takes
 * no lock, and a VM that detaches afterwards does not invalidate it.
 */
#ifndef VGPUD_STATS_SNAPSHOT_H
#define VGPUD_STATS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/core.h"
#include "vgpu/hal.h"

#include "config.h"

struct vgpud;

/* One attached VM, as the control API's per-VM objects describe it. */
struct vgpud_vm_snapshot {
	uint32_t id;                        /* vgpud's id (attach order) */
	char attach_name[VGPU_VM_NAME_MAX]; /* the name it attached under */
	char name[VGPU_VM_NAME_MAX];        /* what reports call it (display name) */
	char uuid[VGPU_VM_NAME_MAX];        /* mdev VMs: the mdev UUID; else "" */
	const char *name_source;            /* "libvirt", "qemu", "uuid", "tenant" */
	char profile[VGPUD_PROFILE_NAME_MAX];
	const char *transport;              /* the transport's kind ("local socket", "mdev") */
	uint32_t owner_uid;                 /* the user it belongs to (device.h) */
	struct vgpu_vm_stats stats;         /* the core's */
	struct vgpu_hal_as_counters counters; /* the GPU's, for its address space */
	bool has_contention;                /* the GPU runs VMs side by side */
	struct vgpu_hal_as_contention contention; /* then: its shared-path figures */
	uint64_t channels;                  /* live channel windows */
	uint64_t requests, requests_failed, ring_errors, doorbells, fence_interrupts;
	int64_t attached_at;                /* Unix time */
};

struct vgpud_stats_snapshot {
	/* the GPU */
	const char *hal;                    /* the HAL's name ("simgpu") */
	const char *policy;                 /* the eviction policy's name */
	uint64_t chunk_bytes;
	struct vgpu_core_stats core;
	/* the attached VMs, in registry order */
	struct vgpud_vm_snapshot *vms;
	size_t vm_count;
};

/*
 * Fill out with the GPU's statistics and every attached VM's. 0, or
 * -ENOMEM (out is then empty). Release with vgpud_stats_snapshot_free.
 */
int vgpud_stats_snapshot_take(struct vgpud *d, struct vgpud_stats_snapshot *out);
void vgpud_stats_snapshot_free(struct vgpud_stats_snapshot *snapshot);

/* Does vm answer to name (its attach name or its display name)? */
bool vgpud_vm_snapshot_matches(const struct vgpud_vm_snapshot *vm, const char *name);

/* simgpu's ground truth (debug only): modeled GPU time of the VM, compute
 * plus copy engine, nanoseconds. Reports of GPU time use the accounting's
 * vgpu_vm_stats.gpu_time_ns. */
uint64_t vgpud_vm_snapshot_runtime_ns(const struct vgpud_vm_snapshot *vm);

/* The VM's share of the GPU in the accounting thread's last period, in
 * [0, 1]; false (share untouched) while the accounting has decided nothing
 * (no channel yet, or [core] gpu_accounting = no). */
bool vgpud_vm_snapshot_gpu_time_share(const struct vgpud_stats_snapshot *snapshot,
                                      const struct vgpud_vm_snapshot *vm, double *share);

/* Resident bytes ÷ the GPU's VRAM (0 without VRAM). */
double vgpud_vm_snapshot_vram_share(const struct vgpud_stats_snapshot *snapshot,
                                    const struct vgpud_vm_snapshot *vm);

#endif /* VGPUD_STATS_SNAPSHOT_H */
