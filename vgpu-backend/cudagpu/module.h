/* SPDX-License-Identifier: MIT */
/*
 * module.h - programs a VM brings, on cudagpu (module.c): the HAL's module
 * operations in vgpud (process isolation only) and their worker side.
 *
 * Errors are negative errnos; a reason goes to error (vgpu/error.h) where
 * a function takes one.
 * Threads: the HAL operations take the worker's lock themselves; the
 * worker's functions run on its main thread and take pfifo_lock to change
 * the table the submission thread reads.
 */
#ifndef VGPU_CUDAGPU_MODULE_H
#define VGPU_CUDAGPU_MODULE_H

#include "cudagpu_internal.h"

struct cg_module;
struct cg_worker;

/* The HAL's module operations (vgpu/hal.h), process isolation. */
int cg_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                    struct vgpu_hal_module **out, struct vgpu_error *error);
void cg_module_info(struct vgpu_hal_module *module, struct vgpu_hal_module_info *out);
void cg_module_free(struct vgpu_hal_module *module);
int cg_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                   const uint64_t *variable_va, uint32_t *id);
int cg_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                      const uint64_t *variable_va, uint32_t id);
int cg_module_unbind(struct vgpu_hal_as *as, uint32_t id);

/* vgpud, w->lock held, alive: send one bound module / all of them (a new
 * life). 0, the worker's -errno, or -EPIPE / -ETIMEDOUT (lost). */
int cg_worker_send_module(struct cg_worker *w, uint32_t id, struct cg_module *m);
int cg_worker_send_modules(struct cg_worker *w);
/* vgpud: forget every bound module of w (the address space goes). */
void cg_worker_free_modules(struct cg_worker *w);

/* The worker: load image (NUL-terminated PTX, checked by vgpud) into its
 * context as module id of as, its variables at variable_va. -ENOTSUP when
 * the address space is not at the VM's own addresses (as->identity). */
int cg_worker_module_load(struct cudagpu *gpu, struct cg_as *as, uint32_t id, const char *image,
                          size_t bytes, const uint64_t *variable_va, uint32_t variable_count,
                          struct vgpu_error *error);
/* The worker: unload module id once the context's work is done. */
int cg_worker_module_unload(struct cudagpu *gpu, struct cg_as *as, uint32_t id);
void cg_worker_modules_fini(struct cudagpu *gpu, struct cg_as *as);

#endif /* VGPU_CUDAGPU_MODULE_H */
