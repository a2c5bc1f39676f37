/* SPDX-License-Identifier: MIT */
/*
 * channel.h - a VM's shadowed channels. Allocation lock or channels_lock as said.
 * Implemented in channel.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_CHANNEL_H
#define VGPU_CORE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_vm;
struct vgpu_core_channel;
struct vgpu_shadow_stats;

void vgpu_channel_destroy_locked(struct vgpu_core_channel *channel);
/* Σ of the shadow statistics of the VM's live and destroyed channels. */
void vgpu_vm_shadow_stats(struct vgpu_vm *vm, struct vgpu_shadow_stats *out);

#endif /* VGPU_CORE_CHANNEL_H */
