/* SPDX-License-Identifier: MIT */
/*
 * module.h - programs a VM loaded (PTX), as simgpu keeps them: parsed by
 * the PTX front end (ptx/ptx_module.h), then bound into one address space
 * under a small id that LAUNCH_FUNCTION names.
 *
 * A module is reference counted: the address space's table holds one
 * reference, and every launch slice that runs it holds one while it runs,
 * so an unbind while a launch runs frees the module when the slice ends.
 * The table of an address space has its own lock (modules_lock), never held
 * while a function runs.
 */
#ifndef SIMGPU_MODULE_H
#define SIMGPU_MODULE_H

#include <pthread.h>
#include <stdint.h>

#include "vgpu/hal.h"

#define SIMGPU_MAX_MODULES 1024u /* bound at once per address space */

struct ptx_module;

struct simgpu_module {
	struct vgpu_hal_module base;
	struct ptx_module *ptx;
	struct vgpu_hal_module_info info;
	struct vgpu_hal_module_function *functions;
	struct vgpu_hal_module_param *params;
	struct vgpu_hal_module_variable *variables;
	uint64_t *variable_va; /* once bound */
	uint32_t refs;         /* atomic */
};

/* An address space's modules, by id. */
struct module_table {
	pthread_mutex_t lock;
	struct simgpu_module **slots;
	uint32_t capacity;
};

void module_table_init(struct module_table *table);
/* Drop every module (the address space is going away). */
void module_table_destroy(struct module_table *table);

/* The module bound as id, with a reference the caller drops with
 * module_put; NULL if there is none. */
struct simgpu_module *module_get(struct module_table *table, uint32_t id);
void module_put(struct simgpu_module *module);

/* HAL operations (vgpu/hal.h). */
int simgpu_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                        struct vgpu_hal_module **out, struct vgpu_error *error);
void simgpu_module_info(struct vgpu_hal_module *module, struct vgpu_hal_module_info *out);
void simgpu_module_free(struct vgpu_hal_module *module);
int simgpu_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                       const uint64_t *variable_va, uint32_t *id);
int simgpu_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                          const uint64_t *variable_va, uint32_t id);
int simgpu_module_unbind(struct vgpu_hal_as *as, uint32_t id);

#endif /* SIMGPU_MODULE_H */
