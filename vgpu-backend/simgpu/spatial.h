/* SPDX-License-Identifier: MIT */
/*
 * spatial.h - spatial sharing (config.sharing = SIMGPU_SHARING_SPATIAL):
 * every address space (tenant) runs on its own partition of the GPU's SMs
 * at the same time, as with MPS, and its kernels' modeled durations come
 * from the contention model (contention/cs_model.h): the kernel's request
 * stream through the shared L2 TLB, page-table walkers, L2 and DRAM, with
 * the GPU's walker policy and memory scheduler, side by side with the
 * kernels of the other tenants that overlap it in modeled time.
 *
 * Promise:
 *  - Only modeled time and the per-tenant figures change. PFIFO executes the
 *    commands exactly as in the time-sliced mode (same turns, same order,
 *    same bytes written, same fences); spatial_kernel_done only replaces
 *    the fixed per-byte cost a completed LAUNCH charged with its modeled
 *    duration. PFIFO's time slices and the watchdog still count the fixed
 *    costs (they bound how long a command holds the engine thread, which
 *    runs the commands one at a time in both modes).
 *  - A tenant's modeled clock is its compute busy time (the address space's
 *    busy_ps[COMPUTE]: its commands one after another, never idle between
 *    them). A kernel starting at t on it runs side by side with each other
 *    tenant's latest kernel whose interval [start, end) on that tenant's
 *    clock overlaps [t, t + its duration alone): at most CS_MAX_TENANTS - 1
 *    of them, the latest-ending first. Those co-runners run closed-loop
 *    (relaunched, seed 003/004 methodology) until the kernel has committed
 *    all its instructions; the cycles that takes, at config.spatial_core_mhz,
 *    are its duration. A kernel longer than config.spatial_max_cycles is
 *    simulated that far and extrapolated at the instruction rate reached.
 *  - Memory scheduler prio ranks the tenants in the order they first
 *    launched a kernel (of those alive).
 *  - SMs: the model's SMs are split equally among the tenants that have
 *    launched a kernel and still exist (at least 1 each).
 *  - The compute engine's modeled time grows, for a kernel, by how much it
 *    moves the latest end of all tenants' kernels (overlapping kernels count
 *    once); other commands charge their fixed costs as in the time-sliced
 *    mode.
 *  - Everything is deterministic given the order in which PFIFO completes
 *    the kernels. All functions are thread-safe; spatial_as_figures never
 *    waits for a kernel's simulation.
 */
#ifndef SIMGPU_SPATIAL_H
#define SIMGPU_SPATIAL_H

#include <stdint.h>

#include "vgpu/hal.h"

struct simgpu;
struct simgpu_address_space;
struct spatial;

/* NULL when config.sharing is not spatial (nothing to do) or on ENOMEM:
 * *err tells which (0 or -ENOMEM / -EINVAL). */
struct spatial *spatial_create(struct simgpu *gpu, int *err);
void spatial_destroy(struct spatial *sp);

/* The LAUNCH of kernel/args by as completed after charging fixed_ps (its
 * fixed-cost modeled time, already in as->busy_ps[COMPUTE] and the engine's
 * clock); replace that with the contention model's duration. Called by the
 * compute engine without locks held. */
void spatial_kernel_done(struct spatial *sp, struct simgpu_address_space *as, uint32_t kernel,
                         const uint64_t *args, uint32_t nargs, uint64_t fixed_ps);

/* The address space is going away: forget it. */
void spatial_forget(struct spatial *sp, struct simgpu_address_space *as);

/* vgpu_hal_as_contention: -ENOTSUP when sp is NULL. */
int spatial_as_figures(struct spatial *sp, struct simgpu_address_space *as,
                       struct vgpu_hal_as_contention *out);

#endif /* SIMGPU_SPATIAL_H */
