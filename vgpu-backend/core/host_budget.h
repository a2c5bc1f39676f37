/* SPDX-License-Identifier: MIT */
/*
 * host_budget.h - how much pinned host memory evicted chunks may use.
 *
 * Bytes are reserved before anything moves, so an eviction that would
 * overrun the budget fails up front with nothing half done, and released
 * when a chunk's host memory is freed (return, free) or a move fails.
 */
#ifndef VGPU_CORE_HOST_BUDGET_H
#define VGPU_CORE_HOST_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct vgpu_host_budget {
	uint64_t limit; /* 0 = no limit */
	uint64_t used;
};

void vgpu_host_budget_init(struct vgpu_host_budget *budget, uint64_t limit);
/* Whether bytes more fit. */
bool vgpu_host_budget_fits(const struct vgpu_host_budget *budget, uint64_t bytes);
/* Reserve bytes: 0, or -ENOMEM (nothing reserved) when they do not fit. */
int vgpu_host_budget_reserve(struct vgpu_host_budget *budget, uint64_t bytes);
void vgpu_host_budget_release(struct vgpu_host_budget *budget, uint64_t bytes);
/* Bytes still available (UINT64_MAX without a limit). */
uint64_t vgpu_host_budget_available(const struct vgpu_host_budget *budget);

#endif /* VGPU_CORE_HOST_BUDGET_H */
