// SPDX-License-Identifier: MIT
/*
 * device.c - the one virtual device (ordinal 0) of a process: its name
 * "vGPU (<backend>)", its memory (the VM's cap, else its fair share of
 * VRAM) and the limits of device_limits.c.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static CUresult check_dev(CUdevice dev)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	if (cu_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult res = check_dev(dev);

	if (res)
		return res;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", cu_g.name);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult res = check_dev(dev);
	static const char tag[] = "vgpu-guest-cuda";

	if (res)
		return res;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	memset(uuid->bytes, 0, sizeof(uuid->bytes));
	memcpy(uuid->bytes, tag, sizeof(tag) - 1);
	return CUDA_SUCCESS;
}

/* The memory the VM may count on: its cap, else its fair share now. */
static uint64_t device_bytes(void)
{
	uint64_t bytes = cu_g.info.cap_bytes;

	if (!bytes) {
		struct vgpu_stats_response st;

		bytes = cu_g.info.vram_share_bytes;
		cu_lock();
		if (vgpu_device_stats(cu_g.dev, &st) == 0 && st.fair_share_bytes)
			bytes = st.fair_share_bytes;
		cu_unlock();
	}
	if (!bytes)
		bytes = cu_g.info.vram_total_bytes;
	return bytes;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult res = check_dev(dev);

	if (res)
		return res;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = (size_t)device_bytes();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	struct vgpu_stats_response st = { 0 };
	struct CUctx_st *ctx;
	uint64_t all;
	CUresult res;

	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	all = cu_check_init() == CUDA_SUCCESS ? device_bytes() : 0;
	cu_lock();
	res = cu_enter(&ctx);
	if (res == CUDA_SUCCESS && vgpu_device_stats(cu_g.dev, &st) < 0)
		res = cu_fail(CUDA_ERROR_UNKNOWN, "stats: %s", vgpu_device_last_error(cu_g.dev));
	cu_unlock();
	if (res)
		return res;
	*total = (size_t)all;
	*free_bytes = (size_t)(st.allocated_bytes < all ? all - st.allocated_bytes : 0);
	return CUDA_SUCCESS;
}

static int attribute(CUdevice_attribute a, int *out)
{
	const struct cu_limits *l = &cu_g.limits;

	switch ((int)a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *out = l->max_threads_per_block; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *out = l->max_block[0]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *out = l->max_block[1]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *out = l->max_block[2]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *out = l->max_grid[0]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *out = l->max_grid[1]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *out = l->max_grid[2]; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *out = l->shared_per_block; break;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *out = l->constant_bytes; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *out = l->warp_size; break;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *out = 0x7fffffff; break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *out = l->registers_per_block; break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *out = l->clock_khz; break;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *out = 512; break;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *out = l->multiprocessors; break;
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *out = 1; break; /* the watchdog */
	case CU_DEVICE_ATTRIBUTE_INTEGRATED: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *out = 0; break; /* default */
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *out = l->memory_clock_khz; break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *out = l->memory_bus_width; break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *out = l->l2_bytes; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		*out = l->max_threads_per_multiprocessor;
		break;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *out = l->cc_major; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *out = l->cc_minor; break;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *out = 0; break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *out = 1; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		*out = l->shared_per_multiprocessor;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		*out = l->registers_per_multiprocessor;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*out = l->shared_per_block_optin;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		*out = l->max_blocks_per_multiprocessor;
		break;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *out = 0; break;
	default:
		/* Features this device does not have (managed memory, host
		 * registration, cooperative and cluster launches, memory
		 * pools, VMM, ...) and every attribute of a newer CUDA: 0. */
		if (a <= 0 || a > 256)
			return -1;
		*out = 0;
		break;
	}
	return 0;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult res = check_dev(dev);

	if (res)
		return res;
	if (!pi || attribute(attrib, pi) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult res = check_dev(dev);

	if (res)
		return res;
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = cu_g.limits.cc_major;
	*minor = cu_g.limits.cc_minor;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult res = check_dev(dev);

	if (res)
		return res;
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "0000:00:00.0");
	return CUDA_SUCCESS;
}
