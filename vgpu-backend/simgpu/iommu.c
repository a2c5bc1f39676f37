// SPDX-License-Identifier: MIT
/* iommu.c - IOVA mappings, IOVA allocation and IOTLBs (see iommu.h). */
#include "iommu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int iommu_init(struct iommu *iommu)
{
	pthread_rwlockattr_t attr;

	memset(iommu, 0, sizeof(*iommu));
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&iommu->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	return 0;
}

void iommu_destroy(struct iommu *iommu)
{
	pthread_rwlock_destroy(&iommu->lock);
	free(iommu->mappings);
	iommu->mappings = NULL;
}

int iotlb_init(struct iotlb *iotlb, uint32_t entries)
{
	iotlb->entries = calloc(entries, sizeof(*iotlb->entries));
	if (!iotlb->entries)
		return -ENOMEM;
	iotlb->size = entries;
	iotlb->hits = 0;
	iotlb->misses = 0;
	return 0;
}

void iotlb_destroy(struct iotlb *iotlb)
{
	free(iotlb->entries);
	iotlb->entries = NULL;
}

void iommu_register_iotlb(struct iommu *iommu, struct iotlb *iotlb)
{
	pthread_rwlock_wrlock(&iommu->lock);
	if (iommu->iotlb_count < IOMMU_MAX_IOTLBS)
		iommu->iotlbs[iommu->iotlb_count++] = iotlb;
	pthread_rwlock_unlock(&iommu->lock);
}

/* Index of the first mapping whose end is above iova. */
static size_t find_mapping(const struct iommu *iommu, uint64_t iova)
{
	size_t low = 0, high = iommu->count;

	while (low < high) {
		size_t middle = low + (high - low) / 2;
		const struct iommu_mapping *m = &iommu->mappings[middle];

		if (m->iova + m->bytes <= iova)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

int iommu_map(struct iommu *iommu, struct simgpu_host_buf *buf, uint64_t offset, uint64_t bytes,
              uint64_t *iova)
{
	uint64_t candidate = IOMMU_IOVA_BASE;
	size_t index;
	int ret = 0;

	if (bytes == 0 || offset % IOMMU_PAGE_BYTES || bytes % IOMMU_PAGE_BYTES ||
	    offset > buf->base.bytes || bytes > buf->base.bytes - offset)
		return -EINVAL;
	pthread_rwlock_wrlock(&iommu->lock);
	/* first fit: the gap before mapping index */
	for (index = 0; index < iommu->count; index++) {
		if (iommu->mappings[index].iova - candidate >= bytes)
			break;
		candidate = iommu->mappings[index].iova + iommu->mappings[index].bytes;
	}
	if (candidate > IOMMU_IOVA_LIMIT || IOMMU_IOVA_LIMIT - candidate < bytes) {
		ret = -ENOMEM;
		goto out;
	}
	if (iommu->count == iommu->capacity) {
		size_t capacity = iommu->capacity ? iommu->capacity * 2 : 16;
		struct iommu_mapping *grown =
			realloc(iommu->mappings, capacity * sizeof(*grown));

		if (!grown) {
			ret = -ENOMEM;
			goto out;
		}
		iommu->mappings = grown;
		iommu->capacity = capacity;
	}
	memmove(&iommu->mappings[index + 1], &iommu->mappings[index],
	        (iommu->count - index) * sizeof(*iommu->mappings));
	iommu->mappings[index] = (struct iommu_mapping){
		.iova = candidate, .bytes = bytes, .host = buf->memory + offset, .buf = buf,
	};
	iommu->count++;
	buf->mappings++;
	*iova = candidate;
out:
	pthread_rwlock_unlock(&iommu->lock);
	return ret;
}

static void iotlb_flush_range(struct iotlb *iotlb, uint64_t iova, uint64_t bytes)
{
	uint64_t first = iova / IOMMU_PAGE_BYTES, last = (iova + bytes - 1) / IOMMU_PAGE_BYTES;
	uint32_t i;

	for (i = 0; i < iotlb->size; i++) {
		struct iotlb_entry *entry = &iotlb->entries[i];

		if (entry->host && entry->iova_page >= first && entry->iova_page <= last)
			entry->host = NULL;
	}
}

static void remove_mapping(struct iommu *iommu, size_t index)
{
	struct iommu_mapping *m = &iommu->mappings[index];
	unsigned i;

	for (i = 0; i < iommu->iotlb_count; i++)
		iotlb_flush_range(iommu->iotlbs[i], m->iova, m->bytes);
	m->buf->mappings--;
	memmove(m, m + 1, (iommu->count - index - 1) * sizeof(*m));
	iommu->count--;
}

int iommu_unmap(struct iommu *iommu, uint64_t iova, uint64_t bytes)
{
	size_t index;
	int ret = -EFAULT;

	pthread_rwlock_wrlock(&iommu->lock);
	index = find_mapping(iommu, iova);
	if (index < iommu->count && iommu->mappings[index].iova == iova &&
	    iommu->mappings[index].bytes == bytes) {
		remove_mapping(iommu, index);
		ret = 0;
	}
	pthread_rwlock_unlock(&iommu->lock);
	return ret;
}

void iommu_unmap_buffer(struct iommu *iommu, struct simgpu_host_buf *buf)
{
	size_t index = 0;

	pthread_rwlock_wrlock(&iommu->lock);
	while (index < iommu->count) {
		if (iommu->mappings[index].buf == buf)
			remove_mapping(iommu, index);
		else
			index++;
	}
	pthread_rwlock_unlock(&iommu->lock);
}

uint8_t *iommu_translate(struct iommu *iommu, struct iotlb *iotlb, uint64_t iova,
                         uint64_t *contiguous)
{
	uint64_t page = iova / IOMMU_PAGE_BYTES, in_page = iova % IOMMU_PAGE_BYTES;
	struct iotlb_entry *entry = NULL;
	const struct iommu_mapping *m;
	size_t index;
	uint64_t page_iova;

	if (iotlb) {
		entry = &iotlb->entries[(page ^ (page >> 11)) & (iotlb->size - 1)];
		if (entry->host && entry->iova_page == page) {
			iotlb->hits++;
			*contiguous = entry->contiguous - in_page;
			return entry->host + in_page;
		}
		iotlb->misses++;
	}
	index = find_mapping(iommu, iova);
	if (index == iommu->count)
		return NULL;
	m = &iommu->mappings[index];
	if (iova < m->iova)
		return NULL;
	page_iova = iova - in_page;
	if (entry) {
		entry->iova_page = page;
		entry->host = m->host + (page_iova - m->iova);
		entry->contiguous = m->iova + m->bytes - page_iova;
	}
	*contiguous = m->iova + m->bytes - iova;
	return m->host + (iova - m->iova);
}
