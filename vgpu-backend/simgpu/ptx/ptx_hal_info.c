// SPDX-License-Identifier: MIT
/* ptx_hal_info.c - a parsed PTX module in the HAL's terms, see ptx_hal_info.h. */
#include "ptx_hal_info.h"

#include <errno.h>
#include <stdlib.h>

int ptx_hal_describe(const struct ptx_module *ptx, uint32_t max_threads_per_block,
                     struct vgpu_hal_module_function **functions,
                     struct vgpu_hal_module_param **params,
                     struct vgpu_hal_module_variable **variables,
                     struct vgpu_hal_module_info *info)
{
	size_t function_count = ptx_module_entry_count(ptx);
	size_t variable_count = ptx_module_var_count(ptx), param_count = 0, p = 0;

	for (size_t i = 0; i < function_count; i++)
		param_count += ptx_module_entry(ptx, i)->param_count;
	*functions = calloc(function_count ? function_count : 1, sizeof(**functions));
	*params = calloc(param_count ? param_count : 1, sizeof(**params));
	*variables = calloc(variable_count ? variable_count : 1, sizeof(**variables));
	if (!*functions || !*params || !*variables)
		return -ENOMEM;
	for (size_t i = 0; i < function_count; i++) {
		const struct ptx_entry_info *entry = ptx_module_entry(ptx, i);

		(*functions)[i] = (struct vgpu_hal_module_function){
			.name = entry->name,
			.param_count = entry->param_count,
			.params = &(*params)[p],
			.param_bytes = entry->param_bytes,
			.static_shared_bytes = entry->static_shared_bytes,
			.local_bytes = entry->local_bytes,
			.max_threads_per_block = max_threads_per_block,
		};
		for (uint32_t k = 0; k < entry->param_count; k++, p++)
			(*params)[p] = (struct vgpu_hal_module_param){
				.offset = entry->params[k].offset,
				.size = entry->params[k].size,
				.align = entry->params[k].align,
			};
	}
	for (size_t i = 0; i < variable_count; i++) {
		const struct ptx_var_info *var = ptx_module_var(ptx, i);

		(*variables)[i] = (struct vgpu_hal_module_variable){
			.name = var->name,
			.space = var->space == PTX_VAR_CONST ? VGPU_HAL_VARIABLE_CONST
			                                     : VGPU_HAL_VARIABLE_GLOBAL,
			.bytes = var->size,
			.align = var->align,
			.init = var->init,
		};
	}
	*info = (struct vgpu_hal_module_info){
		.function_count = (uint32_t)function_count,
		.functions = *functions,
		.variable_count = (uint32_t)variable_count,
		.variables = *variables,
	};
	return 0;
}
