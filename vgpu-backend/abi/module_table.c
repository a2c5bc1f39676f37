// SPDX-License-Identifier: MIT
/* module_table.c - MODULE_LOAD's table, see vgpu/abi/module_table.h. */
#include "vgpu/abi/module_table.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vgpu_module_table_failure(struct vgpu_module_table *header, const char *message)
{
	memset(header, 0, sizeof(*header));
	header->magic = htole32(VGPU_MODULE_TABLE_MAGIC);
	header->bytes = htole32(sizeof(*header));
	snprintf(header->message, sizeof(header->message), "%s", message ? message : "");
}

struct layout {
	uint64_t functions, params, variables, strings, strings_bytes, total;
	uint32_t param_count;
};

static void measure(const struct vgpu_hal_module_info *info, struct layout *l)
{
	memset(l, 0, sizeof(*l));
	for (uint32_t i = 0; i < info->function_count; i++) {
		l->param_count += info->functions[i].param_count;
		l->strings_bytes += strlen(info->functions[i].name) + 1;
	}
	for (uint32_t i = 0; i < info->variable_count; i++)
		l->strings_bytes += strlen(info->variables[i].name) + 1;
	l->functions = sizeof(struct vgpu_module_table);
	l->params = l->functions + (uint64_t)info->function_count *
	                                   sizeof(struct vgpu_module_function);
	l->variables = l->params + (uint64_t)l->param_count * sizeof(struct vgpu_module_param);
	l->strings = l->variables + (uint64_t)info->variable_count *
	                                    sizeof(struct vgpu_module_variable);
	l->total = (l->strings + l->strings_bytes + 7) & ~UINT64_C(7);
}

/* Append name to the strings; its offset. */
static uint32_t put_string(char *strings, uint64_t *used, const char *name)
{
	uint64_t at = *used, n = strlen(name) + 1;

	memcpy(strings + at, name, n);
	*used += n;
	return (uint32_t)at;
}

int vgpu_module_table_build(const struct vgpu_hal_module_info *info, const uint64_t *variable_va,
                            void **table, uint32_t *bytes)
{
	struct vgpu_module_table *header;
	struct vgpu_module_function *functions;
	struct vgpu_module_param *params;
	struct vgpu_module_variable *variables;
	uint64_t used = 0;
	uint32_t first = 0;
	struct layout l;
	char *base;

	measure(info, &l);
	if (l.total > VGPU_MODULE_TABLE_MAX_BYTES)
		return -E2BIG;
	base = calloc(1, l.total);
	if (!base)
		return -ENOMEM;
	header = (struct vgpu_module_table *)base;
	functions = (struct vgpu_module_function *)(base + l.functions);
	params = (struct vgpu_module_param *)(base + l.params);
	variables = (struct vgpu_module_variable *)(base + l.variables);
	for (uint32_t i = 0; i < info->function_count; i++) {
		const struct vgpu_hal_module_function *f = &info->functions[i];

		functions[i] = (struct vgpu_module_function){
			.name_offset = htole32(put_string(base + l.strings, &used, f->name)),
			.param_count = htole32(f->param_count),
			.first_param = htole32(first),
			.param_bytes = htole32(f->param_bytes),
			.static_shared_bytes = htole32(f->static_shared_bytes),
			.local_bytes = htole32(f->local_bytes),
			.max_threads_per_block = htole32(f->max_threads_per_block),
		};
		for (uint32_t k = 0; k < f->param_count; k++, first++)
			params[first] = (struct vgpu_module_param){
				.offset = htole32(f->params[k].offset),
				.size = htole32(f->params[k].size),
				.align = htole32(f->params[k].align),
			};
	}
	for (uint32_t i = 0; i < info->variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &info->variables[i];

		variables[i] = (struct vgpu_module_variable){
			.name_offset = htole32(put_string(base + l.strings, &used, v->name)),
			.space = htole32(v->space == VGPU_HAL_VARIABLE_CONST ? VGPU_MODULE_VARIABLE_CONST
			                                                     : VGPU_MODULE_VARIABLE_GLOBAL),
			.gpu_va = htole64(variable_va[i]),
			.bytes = htole64(v->bytes),
		};
	}
	*header = (struct vgpu_module_table){
		.magic = htole32(VGPU_MODULE_TABLE_MAGIC),
		.bytes = htole32((uint32_t)l.total),
		.function_count = htole32(info->function_count),
		.param_count = htole32(l.param_count),
		.variable_count = htole32(info->variable_count),
		.functions_offset = htole32((uint32_t)l.functions),
		.params_offset = htole32((uint32_t)l.params),
		.variables_offset = htole32((uint32_t)l.variables),
		.strings_offset = htole32((uint32_t)l.strings),
		.strings_bytes = htole32((uint32_t)l.strings_bytes),
	};
	*table = base;
	*bytes = (uint32_t)l.total;
	return 0;
}
