/* SPDX-License-Identifier: MIT */
/*
 * module.h - the GPU programs (modules) a VM loaded. Allocation lock.
 * Implemented in module.c; the objects are core_internal.h's.
 */
#ifndef VGPU_CORE_MODULE_H
#define VGPU_CORE_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_vm;

/* Forget vm's modules (lock held; the address space unbinds them when it is
 * destroyed, the buffers go with the VM's). */
void vgpu_core_modules_forget_locked(struct vgpu_vm *vm);

#endif /* VGPU_CORE_MODULE_H */
