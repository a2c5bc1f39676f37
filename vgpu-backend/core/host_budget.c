// SPDX-License-Identifier: MIT
/* host_budget.c - pinned host memory budget, see host_budget.h. */
#include <errno.h>

#include "host_budget.h"

void vgpu_host_budget_init(struct vgpu_host_budget *budget, uint64_t limit)
{
	budget->limit = limit;
	budget->used = 0;
}

uint64_t vgpu_host_budget_available(const struct vgpu_host_budget *budget)
{
	if (!budget->limit)
		return UINT64_MAX - budget->used;
	return budget->used >= budget->limit ? 0 : budget->limit - budget->used;
}

bool vgpu_host_budget_fits(const struct vgpu_host_budget *budget, uint64_t bytes)
{
	return bytes <= vgpu_host_budget_available(budget);
}

int vgpu_host_budget_reserve(struct vgpu_host_budget *budget, uint64_t bytes)
{
	if (!vgpu_host_budget_fits(budget, bytes))
		return -ENOMEM;
	budget->used += bytes;
	return 0;
}

void vgpu_host_budget_release(struct vgpu_host_budget *budget, uint64_t bytes)
{
	budget->used = bytes > budget->used ? 0 : budget->used - bytes;
}
