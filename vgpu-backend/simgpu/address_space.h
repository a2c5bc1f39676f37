/* SPDX-License-Identifier: MIT */
/*
 * address_space.h - GPU virtual address spaces.
 *
 * An address space owns its page tables (in reserved VRAM), its TLB and its
 * PCOUNTER-like counters, all under its lock. It implements the HAL's as_*
 * operations; the CPU aperture (as_read/as_write) walks the page tables
 * directly, bypassing the TLB, flags and counters.
 */
#ifndef SIMGPU_ADDRESS_SPACE_H
#define SIMGPU_ADDRESS_SPACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "module.h"
#include "access_profile.h"
#include "dirty_pages.h"
#include "page_table.h"
#include "tlb.h"
#include "vgpu/hal.h"

struct simgpu;

struct simgpu_address_space {
	struct vgpu_hal_as base;
	struct simgpu *gpu;
	pthread_mutex_t lock;
	struct page_table page_table;
	struct tlb tlb;
	uint64_t bytes_read[VGPU_TARGET_COUNT];
	uint64_t bytes_written[VGPU_TARGET_COUNT];
	uint64_t busy_ps[VGPU_ENGINE_COUNT];
	uint64_t resident_wall_ns[VGPU_ENGINE_COUNT]; /* paced mode */
	uint32_t copies_pending; /* under the copy engine lock */
	struct module_table modules; /* its own lock */
	struct dirty_pages dirty; /* under lock */
	struct access_profile profile; /* under lock; $SIMGPU_ACCESS_PROFILE */
};

static inline struct simgpu_address_space *to_simgpu_as(struct vgpu_hal_as *as)
{
	return (struct simgpu_address_space *)as;
}

/* Map without the caller checks (the implementation's own reserved range). */
int address_space_map_internal(struct simgpu_address_space *as, uint64_t va, unsigned page_shift,
                               uint64_t count, uint64_t pte_flags, const uint64_t *addresses);
int address_space_unmap_internal(struct simgpu_address_space *as, uint64_t va, uint64_t bytes);

/* HAL operations. */
int simgpu_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out);
void simgpu_as_destroy(struct vgpu_hal_as *as);
int simgpu_as_map(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size, uint64_t count,
                  enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags);
int simgpu_as_unmap(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes);
void simgpu_as_tlb_invalidate(struct vgpu_hal_as *as);
int simgpu_as_read(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes);
int simgpu_as_write(struct vgpu_hal_as *as, uint64_t va, const void *src, uint64_t bytes);
int simgpu_as_test_and_clear_referenced(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                                        bool *referenced);
int simgpu_as_dirty_tracking(struct vgpu_hal_as *as, bool enable);
int simgpu_as_test_and_clear_dirty(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes,
                                   bool *dirty);
void simgpu_as_counters(struct vgpu_hal_as *as, struct vgpu_hal_as_counters *out);
int simgpu_as_contention(struct vgpu_hal_as *as, struct vgpu_hal_as_contention *out);

#endif /* SIMGPU_ADDRESS_SPACE_H */
