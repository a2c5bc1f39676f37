// SPDX-License-Identifier: MIT
/* memory_access.c - engine accesses through the GMMU (see memory_access.h). */
#include "memory_access.h"

#include <errno.h>
#include <string.h>

#include "simgpu_device.h"

int engine_context_init(struct engine_context *ctx, struct simgpu *gpu,
                        enum vgpu_hal_engine engine)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->gpu = gpu;
	ctx->engine = engine;
	ctx->yield_at_ps = UINT64_MAX;
	return iotlb_init(&ctx->iotlb, gpu->config.iotlb_entries);
}

void engine_context_destroy(struct engine_context *ctx)
{
	iotlb_destroy(&ctx->iotlb);
}

void access_begin(struct engine_context *ctx, struct simgpu_address_space *as)
{
	pthread_mutex_lock(&as->lock);
	iommu_read_lock(&ctx->gpu->iommu);
}

void access_end(struct engine_context *ctx, struct simgpu_address_space *as)
{
	iommu_read_unlock(&ctx->gpu->iommu);
	pthread_mutex_unlock(&as->lock);
}

static int fault(struct engine_context *ctx, uint64_t va, enum vgpu_hal_error_cause cause)
{
	ctx->fault.address = va;
	ctx->fault.cause = cause;
	return -EFAULT;
}

void access_charge(struct engine_context *ctx, struct simgpu_address_space *as, unsigned target,
                   enum access_kind kind, uint64_t bytes)
{
	const struct clock_model *model = &ctx->gpu->clock.model;
	uint64_t picoseconds = 0;

	if (kind & ACCESS_READ) {
		as->bytes_read[target] += bytes;
		picoseconds += clock_transaction_ps(model, target, bytes);
	}
	if (kind & ACCESS_WRITE) {
		as->bytes_written[target] += bytes;
		picoseconds += clock_transaction_ps(model, target, bytes);
	}
	as->busy_ps[ctx->engine] += picoseconds;
	ctx->charged_ps += picoseconds;
	gpu_clock_add(&ctx->gpu->clock, ctx->engine, picoseconds);
}

int access_translate(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va,
                     uint64_t bytes, enum access_kind kind, bool charge,
                     struct access_span *span)
{
	struct simgpu *gpu = ctx->gpu;
	struct tlb_entry *entry = tlb_lookup(&as->tlb, va);
	uint64_t pte, page_bytes, offset, address, span_bytes;
	unsigned target;

	if (!entry) {
		struct gmmu_translation translation;

		if (!page_table_walk(&as->page_table, va, &translation))
			return fault(ctx, va, VGPU_FAULT_UNMAPPED);
		entry = tlb_insert(&as->tlb, va, &translation);
	}
	pte = entry->translation.pte;
	if ((pte & PTE_PRIVILEGED) && !ctx->privileged)
		return fault(ctx, va, VGPU_FAULT_PRIVILEGED);
	if ((kind & ACCESS_WRITE) && (pte & PTE_READ_ONLY))
		return fault(ctx, va, VGPU_FAULT_READ_ONLY);
	page_bytes = UINT64_C(1) << entry->translation.page_shift;
	offset = va & (page_bytes - 1);
	address = (pte & PTE_ADDRESS_MASK) + offset;
	span_bytes = page_bytes - offset;
	if (span_bytes > bytes)
		span_bytes = bytes;
	target = pte_target(pte);
	if (target == VGPU_TARGET_VRAM) {
		if (address >= gpu->vram_total_bytes ||
		    span_bytes > gpu->vram_total_bytes - address)
			return fault(ctx, va, VGPU_FAULT_UNMAPPED);
		span->host = gpu->vram + address;
	} else if (target < VGPU_TARGET_COUNT) {
		uint64_t contiguous;

		span->host = iommu_translate(&gpu->iommu, &ctx->iotlb, address, &contiguous);
		if (!span->host)
			return fault(ctx, va, VGPU_FAULT_IOMMU);
		if (span_bytes > contiguous)
			span_bytes = contiguous;
	} else {
		return fault(ctx, va, VGPU_FAULT_UNMAPPED);
	}
	if (gpu->config.reference_bits && !entry->referenced) {
		*page_table_pte(&as->page_table, entry->translation.pte_address) |= PTE_REFERENCED;
		entry->referenced = true;
	}
	if ((kind & ACCESS_WRITE) && as->dirty.enabled)
		dirty_pages_mark(&as->dirty, va, span_bytes);
	span->bytes = span_bytes;
	span->target = target;
	if (charge && as->profile.enabled && ctx->engine == VGPU_ENGINE_COMPUTE)
		access_profile_count(&as->profile, va, kind & ACCESS_READ, kind & ACCESS_WRITE);
	if (charge)
		access_charge(ctx, as, target, kind, span_bytes);
	return 0;
}

int gpu_read(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va, void *dst,
             uint64_t bytes)
{
	uint8_t *out = dst;

	while (bytes) {
		struct access_span span;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, va, bytes, ACCESS_READ, true, &span);
		if (ret == 0)
			memcpy(out, span.host, span.bytes);
		access_end(ctx, as);
		if (ret)
			return ret;
		out += span.bytes;
		va += span.bytes;
		bytes -= span.bytes;
	}
	return 0;
}

int gpu_write(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t va,
              const void *src, uint64_t bytes)
{
	const uint8_t *in = src;

	while (bytes) {
		struct access_span span;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, va, bytes, ACCESS_WRITE, true, &span);
		if (ret == 0)
			memcpy(span.host, in, span.bytes);
		access_end(ctx, as);
		if (ret)
			return ret;
		in += span.bytes;
		va += span.bytes;
		bytes -= span.bytes;
	}
	return 0;
}
