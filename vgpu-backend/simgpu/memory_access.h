/* SPDX-License-Identifier: MIT */
/*
 * memory_access.h - how an engine touches memory: through the GMMU, page by
 * page.
 *
 * An engine opens an access section on an address space (address-space lock,
 * then IOMMU read lock), translates VAs into host spans - TLB, walk on a
 * miss, permission checks, IOMMU for SYSMEM targets - operates on the spans
 * and closes the section. A span never crosses a GPU page, so engines hold
 * the locks for one page of work at a time; tlb_invalidate and iommu_unmap
 * therefore wait at most for one page. Every translated span is one
 * transaction charged to the modeled clock and the address space's counters
 * (with the referenced bit set when the capability is on).
 *
 * Every charge also advances the engine context's own modeled clock
 * (charged_ps). Resumable work (the compute engine's commands and kernels,
 * gpu_kernels.h) checks engine_should_yield after each span: once charged_ps
 * reaches yield_at_ps the work stops at that span boundary, keeps its place,
 * and PFIFO gives the engine to the next channel. The copy engine never sets
 * yield_at_ps, so its copies run to their end.
 *
 * A failed translation records the fault (VA and cause) in the engine
 * context and returns -EFAULT; the caller ends the section and kills the
 * channel (or fails the copy).
 */
#ifndef SIMGPU_MEMORY_ACCESS_H
#define SIMGPU_MEMORY_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "address_space.h"
#include "iommu.h"
#include "vgpu/hal.h"

struct simgpu;

enum access_kind {
	ACCESS_READ = 1,
	ACCESS_WRITE = 2,
	ACCESS_READ_WRITE = 3, /* read-modify-write: two transactions */
};

struct gpu_fault {
	uint64_t address;
	enum vgpu_hal_error_cause cause;
};

/* One engine's view of memory. Used by one thread at a time. */
struct engine_context {
	struct simgpu *gpu;
	enum vgpu_hal_engine engine;
	struct iotlb iotlb;
	bool privileged; /* may access privileged pages */
	struct gpu_fault fault;
	uint64_t charged_ps;  /* modeled time this engine has charged, ever */
	uint64_t yield_at_ps; /* stop resumable work here; UINT64_MAX = never */
};

/* Resumable work must stop at its next span boundary. */
static inline bool engine_should_yield(const struct engine_context *ctx)
{
	return ctx->charged_ps >= ctx->yield_at_ps;
}

struct access_span {
	uint8_t *host;
	uint64_t bytes;
	unsigned target;
};

int engine_context_init(struct engine_context *ctx, struct simgpu *gpu,
                        enum vgpu_hal_engine engine);
void engine_context_destroy(struct engine_context *ctx);

void access_begin(struct engine_context *ctx, struct simgpu_address_space *as);
void access_end(struct engine_context *ctx, struct simgpu_address_space *as);

/* Inside a section: translate va for up to bytes (> 0) of the given kind. On
 * success span->bytes is in (0, bytes]. charge = false translates without
 * charging (for polls), access_charge charges later. */
int access_translate(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va,
                     uint64_t bytes, enum access_kind kind, bool charge,
                     struct access_span *span);
void access_charge(struct engine_context *ctx, struct simgpu_address_space *as, unsigned target,
                   enum access_kind kind, uint64_t bytes);

/* Whole transfers between GPU memory and engine-local memory, page by page
 * (each page its own section). 0 or -EFAULT (ctx->fault). */
int gpu_read(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va, void *dst,
             uint64_t bytes);
int gpu_write(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va,
              const void *src, uint64_t bytes);

#endif /* SIMGPU_MEMORY_ACCESS_H */
