// SPDX-License-Identifier: MIT
/*
 * memory.c - cudagpu's VRAM pool, host buffers and IOMMU (see
 * cudagpu_internal.h and vgpu/cudagpu.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudagpu_internal.h"
#include "vgpu/memfd.h"

#define SMALL_PAGE_MASK ((uint64_t)CG_SMALL_PAGE - 1)

static struct cg_mem_allocation_prop device_prop(struct cudagpu *gpu)
{
	struct cg_mem_allocation_prop prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CG_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CG_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = gpu->device;
	if (gpu->config.isolation == CUDAGPU_ISOLATION_PROCESS)
		prop.requested_handle_types = CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return prop;
}

static struct cg_mem_allocation_prop host_prop(struct cudagpu *gpu)
{
	struct cg_mem_allocation_prop prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CG_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CG_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = gpu->numa_id;
	if (gpu->config.isolation == CUDAGPU_ISOLATION_PROCESS)
		prop.requested_handle_types = CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return prop;
}

/* Device read/write access for [ptr, ptr+bytes), and host access when
 * host is set. Timed for the map breakdown. */
static cg_result set_access(struct cudagpu *gpu, cg_deviceptr ptr, uint64_t bytes, int flags,
                            bool host)
{
	struct cg_mem_access_desc desc[2];
	uint64_t t0 = cg_now_ns();
	cg_result r;

	memset(desc, 0, sizeof(desc));
	desc[0].location.type = CG_MEM_LOCATION_TYPE_DEVICE;
	desc[0].location.id = gpu->device;
	desc[0].flags = flags;
	desc[1].location.type = CG_MEM_LOCATION_TYPE_HOST_NUMA;
	desc[1].location.id = gpu->numa_id;
	desc[1].flags = flags;
	r = gpu->api.cuMemSetAccess(ptr, bytes, desc, host ? 2 : 1);
	cg_time_call(&gpu->map_timing.set_access_ns, &gpu->map_timing.set_access_calls, t0);
	return r;
}

/* ---------------------------------------------------------------- VRAM */

int cg_memory_init(struct cudagpu *gpu, struct vgpu_error *error)
{
	struct cg_mem_allocation_prop prop = device_prop(gpu);
	const struct cuda_api *api = &gpu->api;
	char text[160];
	uint64_t i;
	cg_result r;

	gpu->vram_pages = gpu->config.vram_bytes / CG_PAGE;
	gpu->vram_handles = calloc(gpu->vram_pages, sizeof(*gpu->vram_handles));
	gpu->vram_free_stack = calloc(gpu->vram_pages, sizeof(*gpu->vram_free_stack));
	gpu->vram_taint = calloc(gpu->vram_pages ? gpu->vram_pages : 1, sizeof(*gpu->vram_taint));
	gpu->spaces = calloc(gpu->config.max_address_spaces, sizeof(*gpu->spaces));
	if (!gpu->vram_handles || !gpu->vram_free_stack || !gpu->vram_taint || !gpu->spaces)
		return vgpu_error_set(error, -ENOMEM, "cudagpu: out of memory for the VRAM "
		                      "tables");
	gpu->next_iova = CG_IOVA_BASE;
	r = api->cuStreamCreate(&gpu->util_stream, CG_STREAM_NON_BLOCKING);
	if (r == CG_SUCCESS)
		r = api->cuMemAddressReserve(&gpu->vram_aperture, gpu->config.vram_bytes, CG_PAGE, 0,
		                             0);
	if (r != CG_SUCCESS)
		return vgpu_error_set(error, cg_errno(r), "cudagpu: cannot set up the VRAM "
		                      "aperture: %s", cuda_api_error(api, r, text, sizeof(text)));
	for (i = 0; i < gpu->vram_pages; i++) {
		r = api->cuMemCreate(&gpu->vram_handles[i], CG_PAGE, &prop, 0);
		if (r == CG_SUCCESS) {
			r = api->cuMemMap(gpu->vram_aperture + i * CG_PAGE, CG_PAGE, 0,
			                  gpu->vram_handles[i], 0);
			if (r != CG_SUCCESS)
				api->cuMemRelease(gpu->vram_handles[i]);
		}
		if (r != CG_SUCCESS) {
			gpu->vram_pages = i;
			return vgpu_error_set(error, r == CG_ERROR_OUT_OF_MEMORY ? -ENOMEM :
			                                                             cg_errno(r),
			                      "cudagpu: cannot take %llu MiB of VRAM (got %llu MiB): %s",
			                      (unsigned long long)(gpu->config.vram_bytes >> 20),
			                      (unsigned long long)(i * CG_PAGE >> 20),
			                      cuda_api_error(api, r, text, sizeof(text)));
		}
		gpu->vram_free_stack[gpu->vram_free_count++] = gpu->vram_pages - 1 - i;
	}
	r = set_access(gpu, gpu->vram_aperture, gpu->config.vram_bytes,
	               CG_MEM_ACCESS_FLAGS_PROT_READWRITE, false);
	if (r != CG_SUCCESS)
		return vgpu_error_set(error, cg_errno(r), "cudagpu: cannot map the VRAM aperture: %s",
		                      cuda_api_error(api, r, text, sizeof(text)));
	return 0;
}

int cg_memory_init_imported(struct cudagpu *gpu, uint64_t vram_pages)
{
	gpu->vram_pages = vram_pages;
	gpu->vram_handles = calloc(vram_pages ? vram_pages : 1, sizeof(*gpu->vram_handles));
	gpu->vram_free_stack = calloc(1, sizeof(*gpu->vram_free_stack));
	gpu->vram_taint = calloc(vram_pages ? vram_pages : 1, sizeof(*gpu->vram_taint));
	gpu->spaces = calloc(gpu->config.max_address_spaces, sizeof(*gpu->spaces));
	if (!gpu->vram_handles || !gpu->vram_free_stack || !gpu->vram_taint || !gpu->spaces)
		return -ENOMEM;
	if (gpu->api.cuStreamCreate(&gpu->util_stream, CG_STREAM_NON_BLOCKING) != CG_SUCCESS)
		return -EIO;
	return 0;
}

int cg_export(struct cudagpu *gpu, cg_mem_handle handle)
{
	int fd = -1;
	cg_result r;

	cg_enter(gpu);
	r = gpu->api.cuMemExportToShareableHandle(&fd, handle,
	                                          CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	return r == CG_SUCCESS ? fd : cg_errno(r) ? cg_errno(r) : -EIO;
}

static cg_result import_handle(struct cudagpu *gpu, int fd, cg_mem_handle *handle)
{
	return gpu->api.cuMemImportFromShareableHandle(handle, (void *)(uintptr_t)fd,
	                                               CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

int cg_vram_import(struct cudagpu *gpu, uint64_t index, int fd)
{
	cg_mem_handle handle;
	cg_result r;

	if (index >= gpu->vram_pages)
		return -EINVAL;
	cg_enter(gpu);
	r = import_handle(gpu, fd, &handle);
	if (r != CG_SUCCESS)
		return cg_errno(r);
	pthread_mutex_lock(&gpu->memory_lock);
	if (gpu->vram_handles[index])
		gpu->api.cuMemRelease(gpu->vram_handles[index]);
	gpu->vram_handles[index] = handle;
	pthread_mutex_unlock(&gpu->memory_lock);
	return 0;
}


void cg_memory_fini(struct cudagpu *gpu)
{
	const struct cuda_api *api = &gpu->api;
	uint64_t i;

	while (gpu->host_bufs) {
		struct cg_host_buf *buf = gpu->host_bufs;

		gpu->host_bufs = buf->next;
		cg_host_release(gpu, buf);
	}
	for (i = 0; i < gpu->vram_pages; i++) {
		if (gpu->vram_aperture)
			api->cuMemUnmap(gpu->vram_aperture + i * CG_PAGE, CG_PAGE);
		if (gpu->vram_handles[i])
			api->cuMemRelease(gpu->vram_handles[i]);
	}
	if (gpu->vram_aperture)
		api->cuMemAddressFree(gpu->vram_aperture, gpu->config.vram_bytes);
	if (gpu->util_stream)
		api->cuStreamDestroy(gpu->util_stream);
	free(gpu->vram_handles);
	free(gpu->vram_free_stack);
	free(gpu->vram_taint);
	free(gpu->iommu);
	free(gpu->spaces);
}

static bool vram_page_ok(struct cudagpu *gpu, uint64_t address)
{
	return address % CG_PAGE == 0 && address / CG_PAGE < gpu->vram_pages;
}

int cg_vram_alloc(struct vgpu_hal *hal, uint32_t page_size, uint64_t count, uint64_t *addresses)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t i;
	int err = 0;

	if (page_size != CG_PAGE || !count)
		return -EINVAL;
	pthread_mutex_lock(&gpu->memory_lock);
	if (count > gpu->vram_free_count) {
		err = -ENOMEM;
	} else {
		for (i = 0; i < count; i++)
			addresses[i] = gpu->vram_free_stack[--gpu->vram_free_count] * CG_PAGE;
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}

void cg_vram_free(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                  const uint64_t *addresses)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t i;

	if (page_size != CG_PAGE)
		return;
	pthread_mutex_lock(&gpu->memory_lock);
	for (i = 0; i < count; i++)
		if (vram_page_ok(gpu, addresses[i]) && gpu->vram_free_count < gpu->vram_pages &&
		    !cg_quarantine_vram_free(gpu, addresses[i] / CG_PAGE))
			gpu->vram_free_stack[gpu->vram_free_count++] = addresses[i] / CG_PAGE;
	pthread_mutex_unlock(&gpu->memory_lock);
}

uint64_t cg_vram_free_bytes(struct vgpu_hal *hal)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t bytes;

	pthread_mutex_lock(&gpu->memory_lock);
	bytes = gpu->vram_free_count * CG_PAGE;
	pthread_mutex_unlock(&gpu->memory_lock);
	return bytes;
}

uint64_t cg_vram_held_bytes(struct vgpu_hal *hal)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t bytes;

	pthread_mutex_lock(&gpu->memory_lock);
	bytes = gpu->quarantined_pages * CG_PAGE;
	pthread_mutex_unlock(&gpu->memory_lock);
	return bytes;
}

int cg_vram_scrub(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                  const uint64_t *addresses)
{
	struct cudagpu *gpu = cg_of(hal);
	const struct cuda_api *api = &gpu->api;
	cg_result r = CG_SUCCESS;
	uint64_t i;

	if (page_size != CG_PAGE)
		return -EINVAL;
	for (i = 0; i < count; i++)
		if (!vram_page_ok(gpu, addresses[i]))
			return -EINVAL;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	for (i = 0; i < count && r == CG_SUCCESS; i++)
		if (!cg_quarantine_vram_scrub(gpu, addresses[i] / CG_PAGE)) /* or later */
			r = api->cuMemsetD32Async(gpu->vram_aperture + addresses[i], 0,
			                          CG_PAGE / 4, gpu->util_stream);
	if (r == CG_SUCCESS)
		r = api->cuStreamSynchronize(gpu->util_stream);
	pthread_mutex_unlock(&gpu->memory_lock);
	return r == CG_SUCCESS ? 0 : cg_errno(r);
}

int cg_vram_scrub_locked(struct cudagpu *gpu, uint64_t index)
{
	const struct cuda_api *api = &gpu->api;
	cg_result r;

	cg_enter(gpu);
	r = api->cuMemsetD32Async(gpu->vram_aperture + index * CG_PAGE, 0, CG_PAGE / 4,
	                          gpu->util_stream);
	if (r == CG_SUCCESS)
		r = api->cuStreamSynchronize(gpu->util_stream);
	return r == CG_SUCCESS ? 0 : cg_errno(r);
}

/* -------------------------------------------------------- host buffers */

void cg_host_release(struct cudagpu *gpu, struct cg_host_buf *buf)
{
	const struct cuda_api *api = &gpu->api;

	if (buf->kind == CG_HOST_NUMA) {
		uint64_t i;

		for (i = 0; buf->handles && i < buf->alloc_bytes / CG_PAGE; i++) {
			if (!buf->handles[i])
				break;
			if (buf->device)
				api->cuMemUnmap(buf->device + i * CG_PAGE, CG_PAGE);
			api->cuMemRelease(buf->handles[i]);
		}
		if (buf->device)
			api->cuMemAddressFree(buf->device, buf->alloc_bytes);
		free(buf->handles);
	} else {
		if (buf->device)
			api->cuMemHostUnregister(buf->cpu);
		if (buf->cpu)
			munmap(buf->cpu, buf->alloc_bytes);
		if (buf->memfd >= 0)
			close(buf->memfd);
	}
	free(buf);
}

/*
 * Reserve buf's host aperture and back it page by page (2 MiB, each its own
 * allocation so it can be mapped anywhere): new host-NUMA pages (fds NULL)
 * or the handles vgpud exported (fds[i], the worker role). Then the device
 * may access it, and the CPU too (buf->cpu) when the driver allows it.
 * 0 or -errno; what was made stays in buf for the caller to free.
 */
static int host_map_numa(struct cudagpu *gpu, struct cg_host_buf *buf, const int *fds)
{
	struct cg_mem_allocation_prop prop = host_prop(gpu);
	const struct cuda_api *api = &gpu->api;
	uint64_t pages = buf->alloc_bytes / CG_PAGE, i;
	cg_result r;

	buf->handles = calloc(pages, sizeof(*buf->handles));
	if (!buf->handles)
		return -ENOMEM;
	r = api->cuMemAddressReserve(&buf->device, buf->alloc_bytes, CG_PAGE, 0, 0);
	if (r != CG_SUCCESS) {
		buf->device = 0;
		return cg_errno(r);
	}
	for (i = 0; i < pages; i++) {
		if (fds)
			r = import_handle(gpu, fds[i], &buf->handles[i]);
		else
			r = api->cuMemCreate(&buf->handles[i], CG_PAGE, &prop, 0);
		if (r != CG_SUCCESS) {
			buf->handles[i] = 0;
			return cg_errno(r);
		}
		r = api->cuMemMap(buf->device + i * CG_PAGE, CG_PAGE, 0, buf->handles[i], 0);
		if (r != CG_SUCCESS) {
			api->cuMemRelease(buf->handles[i]);
			buf->handles[i] = 0;
			return cg_errno(r);
		}
	}
	if (gpu->host_cpu_access &&
	    set_access(gpu, buf->device, buf->alloc_bytes, CG_MEM_ACCESS_FLAGS_PROT_READWRITE,
	               true) == CG_SUCCESS) {
		buf->cpu = (void *)(uintptr_t)buf->device;
		return 0;
	}
	r = set_access(gpu, buf->device, buf->alloc_bytes, CG_MEM_ACCESS_FLAGS_PROT_READWRITE,
	               false);
	return r == CG_SUCCESS ? 0 : cg_errno(r);
}

/* Host-NUMA physical memory, one allocation per 2 MiB page so each page can
 * be mapped anywhere on its own, mapped once in a row (the host aperture)
 * for the device and, when the driver allows it, the CPU; zeroed. */
static int host_alloc_numa(struct cudagpu *gpu, struct cg_host_buf *buf)
{
	const struct cuda_api *api = &gpu->api;
	uint64_t pages = buf->alloc_bytes / CG_PAGE, i;
	cg_result r = CG_SUCCESS;
	int err = host_map_numa(gpu, buf, NULL);

	if (err)
		return err;
	/* A memset may not span two allocations: one per page. */
	for (i = 0; i < pages && r == CG_SUCCESS; i++)
		r = api->cuMemsetD32Async(buf->device + i * CG_PAGE, 0, CG_PAGE / 4,
		                          gpu->util_stream);
	if (r == CG_SUCCESS)
		r = api->cuStreamSynchronize(gpu->util_stream);
	return r == CG_SUCCESS ? 0 : cg_errno(r);
}

/* memfd pages pinned for the GPU: shareable with a guest. */
static int host_alloc_registered(struct cudagpu *gpu, struct cg_host_buf *buf)
{
	const struct cuda_api *api = &gpu->api;
	cg_deviceptr device;
	cg_result r;

	buf->memfd = vgpu_memfd_create("cudagpu-host", buf->alloc_bytes);
	if (buf->memfd < 0)
		return buf->memfd;
	buf->cpu = mmap(NULL, buf->alloc_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
	                buf->memfd, 0);
	if (buf->cpu == MAP_FAILED) {
		buf->cpu = NULL;
		return -ENOMEM;
	}
	r = api->cuMemHostRegister(buf->cpu, buf->alloc_bytes,
	                           CG_MEMHOSTREGISTER_PORTABLE | CG_MEMHOSTREGISTER_DEVICEMAP);
	if (r != CG_SUCCESS)
		return r == CG_ERROR_OUT_OF_MEMORY ? -ENOMEM : cg_errno(r);
	r = api->cuMemHostGetDevicePointer(&device, buf->cpu, 0);
	if (r != CG_SUCCESS) {
		api->cuMemHostUnregister(buf->cpu);
		return cg_errno(r);
	}
	buf->device = device;
	return 0;
}

/* The worker role: vgpud's memfd pages, registered here too. */
static int host_import_registered(struct cudagpu *gpu, struct cg_host_buf *buf, int fd)
{
	cg_deviceptr device;
	cg_result r;

	buf->memfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (buf->memfd < 0)
		return -errno;
	buf->cpu = mmap(NULL, buf->alloc_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
	                buf->memfd, 0);
	if (buf->cpu == MAP_FAILED) {
		buf->cpu = NULL;
		return -ENOMEM;
	}
	r = gpu->api.cuMemHostRegister(buf->cpu, buf->alloc_bytes,
	                               CG_MEMHOSTREGISTER_PORTABLE | CG_MEMHOSTREGISTER_DEVICEMAP);
	if (r != CG_SUCCESS)
		return cg_errno(r);
	r = gpu->api.cuMemHostGetDevicePointer(&device, buf->cpu, 0);
	if (r != CG_SUCCESS) {
		gpu->api.cuMemHostUnregister(buf->cpu);
		return cg_errno(r);
	}
	buf->device = device;
	return 0;
}

int cg_host_import(struct cudagpu *gpu, enum cg_host_kind kind, uint64_t alloc_bytes,
                   const int *fds, unsigned nfds, struct cg_host_buf **out)
{
	struct cg_host_buf *buf;
	int err;

	if (!alloc_bytes || alloc_bytes % (kind == CG_HOST_NUMA ? CG_PAGE : CG_SMALL_PAGE) ||
	    nfds != (kind == CG_HOST_NUMA ? alloc_bytes / CG_PAGE : 1))
		return -EINVAL;
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->base.hal = &gpu->base;
	buf->base.bytes = alloc_bytes;
	buf->memfd = -1;
	buf->alloc_bytes = alloc_bytes;
	buf->kind = kind;
	cg_enter(gpu);
	err = kind == CG_HOST_NUMA ? host_map_numa(gpu, buf, fds)
	                           : host_import_registered(gpu, buf, fds[0]);
	if (err) {
		cg_host_release(gpu, buf);
		return err;
	}
	pthread_mutex_lock(&gpu->memory_lock);
	buf->next = gpu->host_bufs;
	gpu->host_bufs = buf;
	pthread_mutex_unlock(&gpu->memory_lock);
	*out = buf;
	return 0;
}

int cg_host_alloc(struct vgpu_hal *hal, uint64_t bytes, struct vgpu_hal_host_buf **out)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_host_buf *buf;
	int err;

	if (!bytes || bytes % CG_SMALL_PAGE)
		return -EINVAL;
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->base.hal = hal;
	buf->base.bytes = bytes;
	buf->memfd = -1;
	buf->alloc_bytes = bytes;
	buf->kind = bytes % CG_PAGE ? CG_HOST_REGISTERED : CG_HOST_NUMA;
	cg_enter(gpu);
	err = buf->kind == CG_HOST_NUMA ? host_alloc_numa(gpu, buf)
	                                : host_alloc_registered(gpu, buf);
	if (err) {
		cg_host_release(gpu, buf);
		return err;
	}
	pthread_mutex_lock(&gpu->memory_lock);
	buf->next = gpu->host_bufs;
	gpu->host_bufs = buf;
	pthread_mutex_unlock(&gpu->memory_lock);
	*out = &buf->base;
	return 0;
}

void cg_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *base)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_host_buf *buf = (struct cg_host_buf *)base, **link;

	if (!base)
		return;
	cg_enter(gpu);
	pthread_mutex_lock(&gpu->memory_lock);
	if (cg_quarantine_host_free(gpu, buf)) {
		/* killed work may still reach it: released when it ends */
		pthread_mutex_unlock(&gpu->memory_lock);
		return;
	}
	for (link = &gpu->host_bufs; *link && *link != buf; link = &(*link)->next)
		;
	if (*link)
		*link = buf->next;
	pthread_mutex_unlock(&gpu->memory_lock);
	cg_host_release(gpu, buf);
}

void *cg_host_cpu_pointer(struct vgpu_hal_host_buf *base)
{
	return ((struct cg_host_buf *)base)->cpu;
}

int cg_host_share(struct vgpu_hal_host_buf *base, int *fd, uint64_t *offset)
{
	struct cg_host_buf *buf = (struct cg_host_buf *)base;

	if (buf->kind != CG_HOST_REGISTERED)
		return -ENOTSUP;
	*fd = buf->memfd;
	*offset = 0;
	return 0;
}

/* --------------------------------------------------------------- IOMMU */

/* memory_lock held: index of the first mapping whose iova + bytes > iova. */
static uint64_t iommu_lower_bound(struct cudagpu *gpu, uint64_t iova)
{
	uint64_t lo = 0, hi = gpu->iommu_count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const struct cg_iommu_mapping *m = &gpu->iommu[mid];

		if (m->iova + m->bytes <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct cg_iommu_mapping *cg_iommu_find(struct cudagpu *gpu, uint64_t iova)
{
	uint64_t i = iommu_lower_bound(gpu, iova);

	if (i < gpu->iommu_count && gpu->iommu[i].iova <= iova)
		return &gpu->iommu[i];
	return NULL;
}

int cg_iommu_map(struct vgpu_hal *hal, struct vgpu_hal_host_buf *base, uint64_t offset,
                 uint64_t bytes, uint64_t *iova)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_host_buf *buf = (struct cg_host_buf *)base;
	uint64_t align = buf->kind == CG_HOST_NUMA ? CG_PAGE : CG_SMALL_PAGE;
	int err = 0;

	if (!bytes || (offset | bytes) & SMALL_PAGE_MASK || offset > base->bytes ||
	    bytes > base->bytes - offset)
		return -EINVAL;
	pthread_mutex_lock(&gpu->memory_lock);
	if (gpu->iommu_count == gpu->iommu_capacity) {
		uint64_t capacity = gpu->iommu_capacity ? 2 * gpu->iommu_capacity : 256;
		struct cg_iommu_mapping *grown = realloc(gpu->iommu, capacity * sizeof(*grown));

		if (!grown) {
			err = -ENOMEM;
			goto out;
		}
		gpu->iommu = grown;
		gpu->iommu_capacity = capacity;
	}
	/* IOVAs only grow (never reused), so the table stays sorted. A NUMA
	 * buffer's IOVA keeps its offset's alignment within 2 MiB so that 2 MiB
	 * mappings of it line up. */
	gpu->next_iova = (gpu->next_iova + align - 1) & ~(align - 1);
	*iova = gpu->next_iova + (offset & (align - 1));
	gpu->next_iova = *iova + bytes + CG_SMALL_PAGE; /* a guard page between mappings */
	gpu->iommu[gpu->iommu_count++] = (struct cg_iommu_mapping){
		.iova = *iova, .bytes = bytes, .buf = buf, .offset = offset,
	};
	buf->iommu_maps++;
out:
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}

/* memory_lock held: room for one more mapping. */
static int iommu_grow(struct cudagpu *gpu)
{
	uint64_t capacity;
	struct cg_iommu_mapping *grown;

	if (gpu->iommu_count < gpu->iommu_capacity)
		return 0;
	capacity = gpu->iommu_capacity ? 2 * gpu->iommu_capacity : 256;
	grown = realloc(gpu->iommu, capacity * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	gpu->iommu = grown;
	gpu->iommu_capacity = capacity;
	return 0;
}

int cg_iommu_insert(struct cudagpu *gpu, uint64_t iova, uint64_t bytes, struct cg_host_buf *buf,
                    uint64_t offset)
{
	uint64_t i;
	int err;

	if (!bytes || offset > buf->alloc_bytes || bytes > buf->alloc_bytes - offset)
		return -EINVAL;
	pthread_mutex_lock(&gpu->memory_lock);
	err = iommu_grow(gpu);
	i = iommu_lower_bound(gpu, iova);
	if (!err && i < gpu->iommu_count && gpu->iommu[i].iova < iova + bytes)
		err = -EEXIST;
	if (!err) {
		memmove(&gpu->iommu[i + 1], &gpu->iommu[i],
		        (gpu->iommu_count - i) * sizeof(gpu->iommu[0]));
		gpu->iommu[i] = (struct cg_iommu_mapping){
			.iova = iova, .bytes = bytes, .buf = buf, .offset = offset,
		};
		gpu->iommu_count++;
		buf->iommu_maps++;
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}

int cg_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t i;
	int err = -EFAULT;

	pthread_mutex_lock(&gpu->memory_lock);
	i = iommu_lower_bound(gpu, iova);
	if (i < gpu->iommu_count && gpu->iommu[i].iova == iova && gpu->iommu[i].bytes == bytes) {
		gpu->iommu[i].buf->iommu_maps--;
		memmove(&gpu->iommu[i], &gpu->iommu[i + 1],
		        (gpu->iommu_count - i - 1) * sizeof(gpu->iommu[0]));
		gpu->iommu_count--;
		err = 0;
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	return err;
}
