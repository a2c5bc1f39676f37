/* SPDX-License-Identifier: MIT */
/*
 * iommu.h - the IOMMU between the GPU and host memory.
 *
 * Translates IOVAs to host pages. Mappings are IOVA-contiguous ranges of one
 * host buffer, kept sorted by IOVA (binary search on a miss); IOVAs are
 * allocated first-fit above IOMMU_IOVA_BASE, so IOVA 0 is never valid. Each
 * engine has its own IOTLB, a direct-mapped cache of page translations that
 * unmap flushes for the unmapped range.
 *
 * Locking: a reader/writer lock that prefers writers. Engines hold it for
 * reading around every access to a host page (iommu_read_lock), so
 * iommu_unmap (a writer) returns only once no engine still touches the
 * range. iommu_translate requires the read lock.
 */
#ifndef SIMGPU_IOMMU_H
#define SIMGPU_IOMMU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host_memory.h"

#define IOMMU_PAGE_BYTES 4096u
#define IOMMU_IOVA_BASE (UINT64_C(1) << 32)
#define IOMMU_IOVA_LIMIT (UINT64_C(1) << 48)
#define IOMMU_MAX_IOTLBS 4

struct iommu_mapping {
	uint64_t iova;
	uint64_t bytes;
	uint8_t *host;
	struct simgpu_host_buf *buf;
};

struct iotlb_entry {
	uint64_t iova_page;  /* iova >> 12, valid when host != NULL */
	uint8_t *host;       /* host address of the page */
	uint64_t contiguous; /* bytes from the page start to the mapping end */
};

struct iotlb {
	struct iotlb_entry *entries;
	uint32_t size; /* power of two */
	uint64_t hits;
	uint64_t misses;
};

struct iommu {
	pthread_rwlock_t lock;
	struct iommu_mapping *mappings;
	size_t count;
	size_t capacity;
	struct iotlb *iotlbs[IOMMU_MAX_IOTLBS]; /* flushed on unmap */
	unsigned iotlb_count;
};

int iommu_init(struct iommu *iommu);
void iommu_destroy(struct iommu *iommu);

int iotlb_init(struct iotlb *iotlb, uint32_t entries);
void iotlb_destroy(struct iotlb *iotlb);
/* Register an engine's IOTLB to be flushed by unmap (before engines run). */
void iommu_register_iotlb(struct iommu *iommu, struct iotlb *iotlb);

/* Map [offset, offset + bytes) of buf; -EINVAL for misaligned or out of
 * range, -ENOMEM when the IOVA space or memory is exhausted. */
int iommu_map(struct iommu *iommu, struct simgpu_host_buf *buf, uint64_t offset, uint64_t bytes,
              uint64_t *iova);
/* Remove exactly one live mapping; -EFAULT otherwise. */
int iommu_unmap(struct iommu *iommu, uint64_t iova, uint64_t bytes);
/* Remove every mapping of buf (host_free of a buffer still mapped). */
void iommu_unmap_buffer(struct iommu *iommu, struct simgpu_host_buf *buf);

static inline void iommu_read_lock(struct iommu *iommu)
{
	pthread_rwlock_rdlock(&iommu->lock);
}

static inline void iommu_read_unlock(struct iommu *iommu)
{
	pthread_rwlock_unlock(&iommu->lock);
}

/* Host address of the byte at iova, or NULL when it is not mapped; the
 * mapping continues for *contiguous bytes from there. The memory stays valid
 * while the caller holds the read lock. iotlb may be NULL. */
uint8_t *iommu_translate(struct iommu *iommu, struct iotlb *iotlb, uint64_t iova,
                         uint64_t *contiguous);

#endif /* SIMGPU_IOMMU_H */
