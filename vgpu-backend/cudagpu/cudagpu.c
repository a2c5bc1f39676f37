// SPDX-License-Identifier: MIT
/*
 * cudagpu.c - the cudagpu device: opening the GPU, capabilities, the event
 * handler and the HAL vtable (see vgpu/cudagpu.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudagpu_internal.h"
#include "module.h"
#include "vgpu/util.h"
#include "worker_client.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
/* GPU memory cudagpu leaves to the driver, its own streams and kernels. */
#define DRIVER_HEADROOM (UINT64_C(512) << 20)

static const struct vgpu_hal_ops cudagpu_ops;
static const struct vgpu_hal_ops cudagpu_process_ops;

void cudagpu_config_defaults(struct cudagpu_config *config)
{
	memset(config, 0, sizeof(*config));
	config->device = 0;
	config->vram_bytes = 0;
	config->max_channels = 64;
	config->max_address_spaces = 64;
	config->default_gpfifo_entries = 512;
	config->max_gpfifo_entries = 65536;
	config->max_stream_passes = 4096;
	config->max_random_updates = UINT64_C(1) << 32;
	config->timeslice_commands = 256;
	config->max_entries_in_flight = 32;
	config->max_ops_in_flight = 256;
	config->kill_wait_ms = 1000;
	config->acquire_timeout_ms = 10000;
	config->function_watchdog_ms = 10000;
	config->isolation = CUDAGPU_ISOLATION_NONE;
	config->worker_path = NULL;
	config->worker_timeout_ms = 10000;
}

int cudagpu_isolation_parse(const char *text, enum cudagpu_isolation *out)
{
	if (!strcmp(text, "none"))
		*out = CUDAGPU_ISOLATION_NONE;
	else if (!strcmp(text, "process"))
		*out = CUDAGPU_ISOLATION_PROCESS;
	else
		return -EINVAL;
	return 0;
}

const char *cudagpu_isolation_name(enum cudagpu_isolation isolation)
{
	return isolation == CUDAGPU_ISOLATION_PROCESS ? "process" : "none";
}

uint64_t cg_now_ns(void)
{
	return vgpu_monotonic_ns();
}

int cg_errno(cg_result result)
{
	switch (result) {
	case CG_SUCCESS:
		return 0;
	case CG_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CG_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CG_ERROR_NOT_SUPPORTED:
		return -ENOTSUP;
	case CG_ERROR_NO_DEVICE:
	case CG_ERROR_INVALID_DEVICE:
		return -ENODEV;
	default:
		return -EIO;
	}
}

void cg_enter(struct cudagpu *gpu)
{
	static __thread cg_context current;

	if (current != gpu->context) {
		gpu->api.cuCtxSetCurrent(gpu->context);
		current = gpu->context;
	}
}

static bool power_of_two(uint64_t value)
{
	return value && !(value & (value - 1));
}

/* Find the device, check it can do what GPUswap needs, take its context. */
static int open_device(struct cudagpu *gpu, struct vgpu_error *error)
{
	const struct cuda_api *api = &gpu->api;
	int count = 0, vmm = 0, host_numa_vmm = 0;
	char text[160];
	cg_result r;

	r = api->cuInit(0);
	if (r == CG_ERROR_NO_DEVICE || (r == CG_SUCCESS && api->cuDeviceGetCount(&count) == 0 &&
	                                !count))
		return vgpu_error_set(error, -ENODEV, "no CUDA device");
	if (r != CG_SUCCESS)
		return vgpu_error_set(error, -ENODEV, "no CUDA device: cuInit failed: %s",
		                      cuda_api_error(api, r, text, sizeof(text)));
	api->cuDriverGetVersion(&gpu->api.driver_version);
	if (gpu->config.device >= count ||
	    api->cuDeviceGet(&gpu->device, gpu->config.device) != CG_SUCCESS)
		return vgpu_error_set(error, -ENODEV, "no CUDA device %d (this machine has %d)",
		                      gpu->config.device, count);
	api->cuDeviceGetName(gpu->name, sizeof(gpu->name), gpu->device);
	api->cuDeviceGetAttribute(&gpu->sm_count, CG_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                          gpu->device);
	api->cuDeviceGetAttribute(&vmm, CG_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
	                          gpu->device);
	if (gpu->api.driver_version < CG_API_VERSION ||
	    api->cuDeviceGetAttribute(&host_numa_vmm,
	                              CG_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
	                              gpu->device) != CG_SUCCESS)
		host_numa_vmm = 0;
	if (!vmm || !host_numa_vmm)
		return vgpu_error_set(error, -ENOTSUP,
		                      "this GPU or driver cannot map host memory into a virtual "
		                      "address range (CUDA >= 12.2 and a host NUMA node needed; "
		                      "%s, driver API %d.%d)",
		                      gpu->name, gpu->api.driver_version / 1000,
		                      gpu->api.driver_version % 1000 / 10);
	if (api->cuDeviceGetAttribute(&gpu->numa_id, CG_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
	                              gpu->device) != CG_SUCCESS || gpu->numa_id < 0)
		gpu->numa_id = 0;
	r = api->cuDevicePrimaryCtxRetain(&gpu->context, gpu->device);
	if (r != CG_SUCCESS)
		return vgpu_error_set(error, cg_errno(r), "cannot open CUDA device %d: %s",
		                      gpu->config.device,
		                      cuda_api_error(api, r, text, sizeof(text)));
	cg_enter(gpu);
	return 0;
}

/* The VRAM budget: as configured, or 90% of what is free less headroom. */
static int choose_vram(struct cudagpu *gpu, struct vgpu_error *error)
{
	size_t free_bytes = 0, total = 0, granularity = 0;
	struct cg_mem_allocation_prop prop;
	uint64_t usable;

	memset(&prop, 0, sizeof(prop));
	prop.type = CG_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CG_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = gpu->device;
	if (gpu->api.cuMemGetAllocationGranularity(&granularity, &prop,
	                                           CG_MEM_ALLOC_GRANULARITY_MINIMUM) != CG_SUCCESS ||
	    !granularity || CG_PAGE % granularity)
		return vgpu_error_set(error, -ENOTSUP, "cudagpu: the GPU's allocation granularity "
		                      "(%zu bytes) does not divide 2 MiB", granularity);
	prop.location.type = CG_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = gpu->numa_id;
	if (gpu->api.cuMemGetAllocationGranularity(&granularity, &prop,
	                                           CG_MEM_ALLOC_GRANULARITY_MINIMUM) != CG_SUCCESS ||
	    !granularity || CG_PAGE % granularity)
		return vgpu_error_set(error, -ENOTSUP, "this GPU or driver cannot map host memory "
		                      "into a virtual address range (CUDA >= 12.2 and a host NUMA "
		                      "node needed)");
	gpu->api.cuMemGetInfo(&free_bytes, &total);
	usable = free_bytes > DRIVER_HEADROOM ? (free_bytes - DRIVER_HEADROOM) : 0;
	if (!gpu->config.vram_bytes)
		gpu->config.vram_bytes = usable / 10 * 9 / CG_PAGE * CG_PAGE;
	if (gpu->config.vram_bytes % CG_PAGE || gpu->config.vram_bytes < 16 * MIB)
		return vgpu_error_set(error, -EINVAL, "cudagpu: VRAM budget %llu bytes: need a "
		                      "multiple of 2 MiB, at least 16 MiB",
		                      (unsigned long long)gpu->config.vram_bytes);
	if (gpu->config.vram_bytes > usable)
		return vgpu_error_set(error, -ENOMEM, "cudagpu: VRAM budget %llu MiB is more than "
		                      "the %llu MiB the GPU has free (%s)",
		                      (unsigned long long)(gpu->config.vram_bytes / MIB),
		                      (unsigned long long)(usable / MIB), gpu->name);
	return 0;
}

/* Can the CPU map host-NUMA physical memory? Tried once on a page. */
static void probe_host_access(struct cudagpu *gpu)
{
	struct vgpu_hal_host_buf *buf;

	gpu->host_cpu_access = true;
	if (cg_host_alloc(&gpu->base, CG_PAGE, &buf) == 0) {
		gpu->host_cpu_access = cg_host_cpu_pointer(buf) != NULL;
		cg_host_free(&gpu->base, buf);
	} else {
		gpu->host_cpu_access = false;
	}
}

static void cudagpu_destroy(struct vgpu_hal *hal)
{
	struct cudagpu *gpu = cg_of(hal);

	if (gpu->remote_channels)
		cg_remote_fini(gpu);
	if (gpu->context) {
		cg_enter(gpu);
		cg_pfifo_stop(gpu);
		gpu->api.cuCtxSynchronize();
		cudagpu_kernels_unload(&gpu->api, &gpu->kernels);
		cg_memory_fini(gpu);
		gpu->api.cuDevicePrimaryCtxRelease(gpu->device);
	}
	cuda_api_unload(&gpu->api);
	pthread_mutex_destroy(&gpu->memory_lock);
	pthread_mutex_destroy(&gpu->pfifo_lock);
	pthread_mutex_destroy(&gpu->handler_lock);
	pthread_mutex_destroy(&gpu->remote_lock);
	free(gpu->remote_channels);
	free(gpu);
}

/* cudagpu_create, or the worker role's device (vram_pages imported). */
static int create(const struct cudagpu_config *config, bool worker_role, uint64_t vram_pages,
                  struct cudagpu **out, struct vgpu_error *error)
{
	struct cudagpu *gpu;
	int err;

	gpu = calloc(1, sizeof(*gpu));
	if (!gpu)
		return vgpu_error_set(error, -ENOMEM, "cudagpu: out of memory");
	gpu->base.ops = &cudagpu_ops;
	if (config)
		gpu->config = *config;
	else
		cudagpu_config_defaults(&gpu->config);
	gpu->worker_role = worker_role;
	pthread_mutex_init(&gpu->memory_lock, NULL);
	pthread_mutex_init(&gpu->pfifo_lock, NULL);
	pthread_mutex_init(&gpu->handler_lock, NULL);
	pthread_mutex_init(&gpu->remote_lock, NULL);
	gpu->done_tail = &gpu->done_head;
	if (gpu->config.isolation == CUDAGPU_ISOLATION_PROCESS && !worker_role) {
		gpu->base.ops = &cudagpu_process_ops;
		gpu->remote_channels = calloc(gpu->config.max_channels ? gpu->config.max_channels : 1,
		                              sizeof(*gpu->remote_channels));
		if (!gpu->remote_channels) {
			err = vgpu_error_set(error, -ENOMEM, "cudagpu: out of memory");
			goto fail;
		}
	}
	if ((gpu->config.isolation != CUDAGPU_ISOLATION_NONE &&
	     gpu->config.isolation != CUDAGPU_ISOLATION_PROCESS) ||
	    !gpu->config.worker_timeout_ms ||
	    !gpu->config.max_channels || !gpu->config.max_address_spaces ||
	    !gpu->config.timeslice_commands || !gpu->config.max_entries_in_flight ||
	    !gpu->config.max_ops_in_flight || !gpu->config.kill_wait_ms ||
	    !power_of_two(gpu->config.default_gpfifo_entries) ||
	    !power_of_two(gpu->config.max_gpfifo_entries) ||
	    gpu->config.default_gpfifo_entries > gpu->config.max_gpfifo_entries ||
	    gpu->config.max_gpfifo_entries > 65536) {
		err = vgpu_error_set(error, -EINVAL, "cudagpu: inconsistent configuration");
		goto fail;
	}
	err = cuda_api_load(&gpu->api, NULL, error);
	if (err)
		goto fail;
	err = open_device(gpu, error);
	if (!err && worker_role) {
		err = cg_memory_init_imported(gpu, vram_pages);
		if (err)
			vgpu_error_set(error, err, "cudagpu: cannot set up %llu imported VRAM "
			               "pages: %s", (unsigned long long)vram_pages, strerror(-err));
	}
	if (!err && !worker_role)
		err = choose_vram(gpu, error);
	if (!err && !worker_role)
		err = cg_memory_init(gpu, error);
	if (!err)
		err = cudagpu_kernels_load(&gpu->api, &gpu->kernels, gpu->sm_count, error);
	if (err)
		goto fail;
	probe_host_access(gpu);
	err = cg_pfifo_start(gpu);
	if (err) {
		vgpu_error_set(error, err, "cudagpu: cannot start the submission thread: %s",
		               strerror(-err));
		goto fail;
	}
	gpu->caps = (struct vgpu_hal_caps){
		.name = "cudagpu",
		.vram_bytes = gpu->config.vram_bytes,
		.page_size_mask = VGPU_HAL_PAGE_MASK_2M,
		.sysmem_page_size_mask = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_2M,
		.has_reference_bits = false,
		.max_channels = gpu->config.max_channels,
		.max_address_spaces = gpu->config.max_address_spaces,
		.gpfifo_entries_max = gpu->config.max_gpfifo_entries,
		.va_bits = CG_VA_BITS,
		.va_reserved_base = CG_VA_RESERVED_BASE,
		/* a VM's own kernels run in its worker (module.c) */
		.runs_modules = gpu->config.isolation == CUDAGPU_ISOLATION_PROCESS,
	};
	*out = gpu;
	return 0;
fail:
	cudagpu_destroy(&gpu->base);
	return err;
}

int cudagpu_create(const struct cudagpu_config *config, struct vgpu_hal **out,
                   struct vgpu_error *error)
{
	struct cudagpu *gpu;
	int err = create(config, false, 0, &gpu, error);

	if (!err)
		*out = &gpu->base;
	return err;
}

int cg_worker_gpu_create(const struct cudagpu_config *config, uint64_t vram_pages,
                         struct cudagpu **out, struct vgpu_error *error)
{
	return create(config, true, vram_pages, out, error);
}

bool cudagpu_is_cudagpu(const struct vgpu_hal *hal)
{
	return hal && (hal->ops == &cudagpu_ops || hal->ops == &cudagpu_process_ops);
}

void cudagpu_map_timing(struct vgpu_hal *hal, struct cudagpu_map_timing *out)
{
	struct cudagpu *gpu = cg_of(hal);

	const struct cudagpu_map_timing *t = &gpu->map_timing;

	out->unmap_ns = __atomic_load_n(&t->unmap_ns, __ATOMIC_RELAXED);
	out->unmap_calls = __atomic_load_n(&t->unmap_calls, __ATOMIC_RELAXED);
	out->map_ns = __atomic_load_n(&t->map_ns, __ATOMIC_RELAXED);
	out->map_calls = __atomic_load_n(&t->map_calls, __ATOMIC_RELAXED);
	out->set_access_ns = __atomic_load_n(&t->set_access_ns, __ATOMIC_RELAXED);
	out->set_access_calls = __atomic_load_n(&t->set_access_calls, __ATOMIC_RELAXED);
}

const char *cudagpu_describe(struct vgpu_hal *hal, char *buf, size_t len)
{
	struct cudagpu *gpu = cg_of(hal);

	snprintf(buf, len, "%s, CUDA driver API %d.%d, %d SMs, VRAM budget %llu MiB", gpu->name,
	         gpu->api.driver_version / 1000, gpu->api.driver_version % 1000 / 10,
	         gpu->sm_count, (unsigned long long)(gpu->config.vram_bytes / MIB));
	return buf;
}

static void cudagpu_get_caps(struct vgpu_hal *hal, struct vgpu_hal_caps *caps)
{
	*caps = cg_of(hal)->caps;
}

static void cudagpu_set_event_handler(struct vgpu_hal *hal, vgpu_hal_event_fn fn, void *ctx)
{
	struct cudagpu *gpu = cg_of(hal);
	bool on_delivery_thread = gpu->pfifo_started &&
	                          pthread_equal(pthread_self(), gpu->pfifo_thread);

	/* From another thread: wait until no delivery of the old handler is in
	 * progress. From the handler itself: the lock is already held. */
	if (!on_delivery_thread)
		pthread_mutex_lock(&gpu->handler_lock);
	gpu->handler = fn;
	gpu->handler_ctx = ctx;
	if (!on_delivery_thread)
		pthread_mutex_unlock(&gpu->handler_lock);
}

/*
 * User programs without process isolation: refused. In one process the
 * contexts of several VMs are not isolated from each other (a kernel of
 * one reads another's memory), so a VM's own kernels only run in its GPU
 * worker (isolation = process: module.c).
 */
static int cudagpu_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes,
                                const char *name, struct vgpu_hal_module **out,
                                struct vgpu_error *error)
{
	(void)hal, (void)image, (void)bytes, (void)name, (void)out;
	return vgpu_error_set(error, -ENOTSUP,
	                      "cudagpu runs a VM's own kernels only in that VM's GPU process: "
	                      "start vgpud with --isolation process (CUDA_ERROR_NOT_SUPPORTED)");
}

static const struct vgpu_hal_ops cudagpu_ops = {
	.destroy = cudagpu_destroy,
	.get_caps = cudagpu_get_caps,
	.set_event_handler = cudagpu_set_event_handler,
	.vram_alloc = cg_vram_alloc,
	.vram_free = cg_vram_free,
	.vram_free_bytes = cg_vram_free_bytes,
	.vram_held_bytes = cg_vram_held_bytes,
	.vram_scrub = cg_vram_scrub,
	.host_alloc = cg_host_alloc,
	.host_free = cg_host_free,
	.host_cpu_pointer = cg_host_cpu_pointer,
	.iommu_map = cg_iommu_map,
	.iommu_unmap = cg_iommu_unmap,
	.host_share = cg_host_share,
	.as_create = cg_as_create,
	.as_destroy = cg_as_destroy,
	.as_map = cg_as_map,
	.as_unmap = cg_as_unmap,
	.as_tlb_invalidate = cg_as_tlb_invalidate,
	.as_read = cg_as_read,
	.as_write = cg_as_write,
	.as_test_and_clear_referenced = cg_as_test_and_clear_referenced,
	.as_counters = cg_as_counters,
	.channel_create = cg_channel_create,
	.channel_destroy = cg_channel_destroy,
	.channel_set_fetch = cg_channel_set_fetch,
	.channel_gp_get = cg_channel_gp_get,
	.channel_state = cg_channel_state,
	.channel_priv_submit = cg_channel_priv_submit,
	.channel_kick = cg_channel_kick,
	.channel_kill = cg_channel_kill_op,
	.channel_priv_nops = cg_channel_priv_nops,
	.copy = cg_copy,
	.engine_current_channel = cg_engine_current_channel,
	.channel_pending = cg_channel_pending,
	.engine_modeled_ns = cg_engine_busy_ns,
	.module_parse = cudagpu_module_parse,
};

/* Process isolation (vgpu/cudagpu.h): memory and the copy engine as above,
 * address spaces and channels through the workers (remote.c). */
static const struct vgpu_hal_ops cudagpu_process_ops = {
	.destroy = cudagpu_destroy,
	.get_caps = cudagpu_get_caps,
	.set_event_handler = cudagpu_set_event_handler,
	.vram_alloc = cg_vram_alloc,
	.vram_free = cg_vram_free,
	.vram_free_bytes = cg_vram_free_bytes,
	.vram_held_bytes = cg_vram_held_bytes,
	.vram_scrub = cg_vram_scrub,
	.host_alloc = cg_host_alloc,
	.host_free = cg_remote_host_free,
	.host_cpu_pointer = cg_host_cpu_pointer,
	.iommu_map = cg_iommu_map,
	.iommu_unmap = cg_remote_iommu_unmap,
	.host_share = cg_host_share,
	.as_create = cg_remote_as_create,
	.as_destroy = cg_remote_as_destroy,
	.as_map = cg_remote_as_map,
	.as_unmap = cg_remote_as_unmap,
	.as_tlb_invalidate = cg_as_tlb_invalidate,
	.as_read = cg_as_read,
	.as_write = cg_as_write,
	.as_test_and_clear_referenced = cg_as_test_and_clear_referenced,
	.as_counters = cg_remote_as_counters,
	.channel_create = cg_remote_channel_create,
	.channel_destroy = cg_remote_channel_destroy,
	.channel_set_fetch = cg_remote_channel_set_fetch,
	.channel_gp_get = cg_remote_channel_gp_get,
	.channel_state = cg_remote_channel_state,
	.channel_priv_submit = cg_remote_channel_priv_submit,
	.channel_kick = cg_remote_channel_kick,
	.channel_kill = cg_remote_channel_kill,
	.channel_priv_nops = cg_remote_channel_priv_nops,
	.copy = cg_copy,
	.engine_current_channel = cg_remote_engine_current_channel,
	.channel_pending = cg_remote_channel_pending,
	.engine_modeled_ns = cg_remote_engine_busy_ns,
	.module_parse = cg_module_parse,
	.module_info = cg_module_info,
	.module_free = cg_module_free,
	.module_bind = cg_module_bind,
	.module_unbind = cg_module_unbind,
	.module_bind_at = cg_module_bind_at,
};
