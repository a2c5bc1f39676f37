/* SPDX-License-Identifier: MIT */
/*
 * vm.h - a VM's accounting and its place among the victims. Allocation lock.
 * Implemented in vm.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_VM_H
#define VGPU_CORE_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_core;
struct vgpu_vm;

void vgpu_vm_rekey(struct vgpu_vm *vm); /* victim key := resident bytes */
void vgpu_vm_account(struct vgpu_vm *vm, int location, int64_t delta);
/* Apply the weights vgpu_core_set_weight requested (vgpu_core_lock does). */
void vgpu_vm_apply_requested_weights_locked(struct vgpu_core *core);

#endif /* VGPU_CORE_VM_H */
