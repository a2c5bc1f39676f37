// SPDX-License-Identifier: MIT
/* module.c - programs bound into address spaces (see module.h). */
#include "module.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address_space.h"
#include "ptx/ptx_exec.h"
#include "ptx/ptx_hal_info.h"
#include "ptx/ptx_module.h"
#include "simgpu_device.h"

static struct simgpu_module *to_module(struct vgpu_hal_module *module)
{
	return (struct simgpu_module *)module;
}

static void module_destroy(struct simgpu_module *module)
{
	ptx_module_free(module->ptx);
	free(module->functions);
	free(module->params);
	free(module->variables);
	free(module->variable_va);
	free(module);
}

void module_put(struct simgpu_module *module)
{
	if (module && __atomic_sub_fetch(&module->refs, 1, __ATOMIC_ACQ_REL) == 0)
		module_destroy(module);
}

/* The HAL's view of the PTX module's entries and variables. */
static int describe(struct simgpu_module *module)
{
	return ptx_hal_describe(module->ptx, PTX_MAX_BLOCK_THREADS, &module->functions, &module->params,
	                        &module->variables, &module->info);
}

int simgpu_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                        struct vgpu_hal_module **out, struct vgpu_error *error)
{
	struct simgpu_module *module = calloc(1, sizeof(*module));
	struct ptx_error ptx_error = { 0 };
	int err;

	if (!module)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the module");
	module->base.hal = hal;
	module->refs = 1;
	err = ptx_module_load(image, bytes, name ? name : "module", &module->ptx, &ptx_error);
	if (err) {
		free(module);
		return vgpu_error_set(error, err, "%s",
		                      ptx_error.message[0] ? ptx_error.message : strerror(-err));
	}
	err = describe(module);
	if (err) {
		module_destroy(module);
		return vgpu_error_set(error, err, "out of memory describing the module");
	}
	*out = &module->base;
	return 0;
}

void simgpu_module_info(struct vgpu_hal_module *module, struct vgpu_hal_module_info *out)
{
	*out = to_module(module)->info;
}

void simgpu_module_free(struct vgpu_hal_module *module)
{
	if (module)
		module_put(to_module(module));
}

void module_table_init(struct module_table *table)
{
	memset(table, 0, sizeof(*table));
	pthread_mutex_init(&table->lock, NULL);
}

void module_table_destroy(struct module_table *table)
{
	for (uint32_t i = 0; i < table->capacity; i++)
		module_put(table->slots[i]);
	free(table->slots);
	pthread_mutex_destroy(&table->lock);
}

struct simgpu_module *module_get(struct module_table *table, uint32_t id)
{
	struct simgpu_module *module = NULL;

	pthread_mutex_lock(&table->lock);
	if (id < table->capacity && table->slots[id]) {
		module = table->slots[id];
		__atomic_add_fetch(&module->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&table->lock);
	return module;
}

/* Bind under slot want (UINT32_MAX: the lowest free one) into *id. */
static int bind(struct vgpu_hal_as *hal_as, struct vgpu_hal_module *hal_module,
                const uint64_t *variable_va, uint32_t want, uint32_t *id)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	struct simgpu_module *module = to_module(hal_module);
	struct module_table *table = &as->modules;
	uint32_t count = module->info.variable_count, slot;
	uint64_t *addresses = NULL;

	if (module->variable_va)
		return -EINVAL; /* bound already */
	if (count) {
		if (!variable_va)
			return -EINVAL;
		for (uint32_t i = 0; i < count; i++) {
			uint32_t align = module->variables[i].align ? module->variables[i].align : 1;

			if (variable_va[i] % align ||
			    variable_va[i] >= as->gpu->caps.va_reserved_base ||
			    module->variables[i].bytes > as->gpu->caps.va_reserved_base - variable_va[i])
				return -EINVAL;
		}
		addresses = malloc(count * sizeof(*addresses));
		if (!addresses)
			return -ENOMEM;
		memcpy(addresses, variable_va, count * sizeof(*addresses));
	}
	if (want != UINT32_MAX && want >= SIMGPU_MAX_MODULES) {
		free(addresses);
		return -ENOSPC;
	}
	pthread_mutex_lock(&table->lock);
	if (want != UINT32_MAX) {
		slot = want;
		if (slot < table->capacity && table->slots[slot]) {
			pthread_mutex_unlock(&table->lock);
			free(addresses);
			return -EEXIST;
		}
	} else {
		for (slot = 0; slot < table->capacity && table->slots[slot]; slot++)
			;
	}
	if (slot >= table->capacity) {
		uint32_t capacity = table->capacity ? 2 * table->capacity : 8;
		struct simgpu_module **grown;

		while (capacity <= slot && capacity < SIMGPU_MAX_MODULES)
			capacity *= 2;
		if (capacity > SIMGPU_MAX_MODULES)
			capacity = SIMGPU_MAX_MODULES;
		grown = slot < capacity ? realloc(table->slots, capacity * sizeof(*grown)) : NULL;
		if (!grown) {
			pthread_mutex_unlock(&table->lock);
			free(addresses);
			return slot < capacity ? -ENOMEM : -ENOSPC;
		}
		memset(grown + table->capacity, 0,
		       (capacity - table->capacity) * sizeof(*grown));
		table->slots = grown;
		table->capacity = capacity;
	}
	module->variable_va = addresses;
	table->slots[slot] = module;
	pthread_mutex_unlock(&table->lock);
	*id = slot;
	return 0;
}

int simgpu_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                       const uint64_t *variable_va, uint32_t *id)
{
	return bind(as, module, variable_va, UINT32_MAX, id);
}

int simgpu_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                          const uint64_t *variable_va, uint32_t id)
{
	uint32_t got;

	return bind(as, module, variable_va, id, &got);
}

int simgpu_module_unbind(struct vgpu_hal_as *hal_as, uint32_t id)
{
	struct module_table *table = &to_simgpu_as(hal_as)->modules;
	struct simgpu_module *module = NULL;

	pthread_mutex_lock(&table->lock);
	if (id < table->capacity) {
		module = table->slots[id];
		table->slots[id] = NULL;
	}
	pthread_mutex_unlock(&table->lock);
	if (!module)
		return -ENOENT;
	module_put(module);
	return 0;
}
