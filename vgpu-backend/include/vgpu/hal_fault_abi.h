/* SPDX-License-Identifier: MIT */
/*
 * hal_fault_abi.h - a HAL channel error's cause (enum vgpu_hal_error_cause,
 * vgpu/hal.h) as the device ABI reports it to the guest (CHANNEL_FAULT,
 * enum in vgpu/abi/device_abi.h). For whatever stands between a HAL and a
 * guest: vgpud's event routing and the guest runtime's in-process simgpu
 * backend. Pure function, any thread.
 */
#ifndef VGPU_HAL_FAULT_ABI_H
#define VGPU_HAL_FAULT_ABI_H

#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/hal.h"

/* The CHANNEL_FAULT code of cause; VGPU_CHANNEL_FAULT_NONE for none or
 * one the ABI does not know. */
static inline uint32_t vgpu_hal_fault_abi_cause(enum vgpu_hal_error_cause cause)
{
	switch (cause) {
	case VGPU_FAULT_NONE: return VGPU_CHANNEL_FAULT_NONE;
	case VGPU_FAULT_UNMAPPED: return VGPU_CHANNEL_FAULT_UNMAPPED;
	case VGPU_FAULT_READ_ONLY: return VGPU_CHANNEL_FAULT_READ_ONLY;
	case VGPU_FAULT_PRIVILEGED: return VGPU_CHANNEL_FAULT_PRIVILEGED;
	case VGPU_FAULT_IOMMU: return VGPU_CHANNEL_FAULT_IOMMU;
	case VGPU_FAULT_BAD_COMMAND: return VGPU_CHANNEL_FAULT_BAD_COMMAND;
	case VGPU_FAULT_BAD_KERNEL_ARGS: return VGPU_CHANNEL_FAULT_BAD_KERNEL_ARGS;
	case VGPU_FAULT_TIMEOUT: return VGPU_CHANNEL_FAULT_TIMEOUT;
	case VGPU_FAULT_KERNEL_ERROR: return VGPU_CHANNEL_FAULT_KERNEL_ERROR;
	}
	return VGPU_CHANNEL_FAULT_NONE;
}

#endif /* VGPU_HAL_FAULT_ABI_H */
