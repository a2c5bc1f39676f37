/* SPDX-License-Identifier: MIT */
/*
 * launch_attrs.h - cuLaunchKernelEx's launch attributes, checked before
 * the launch. Pure: no device, no lock.
 *
 * Accepted (the launch means the same on the vGPU): IGNORE, the hints
 * ACCESS_POLICY_WINDOW, SYNCHRONIZATION_POLICY, CLUSTER_SCHEDULING_POLICY_
 * PREFERENCE, PRIORITY, MEM_SYNC_DOMAIN(_MAP), PREFERRED_SHARED_MEMORY_
 * CARVEOUT, NVLINK_UTIL_CENTRIC_SCHEDULING; PROGRAMMATIC_STREAM_
 * SERIALIZATION (kernels of a stream run one after the other, which that
 * attribute allows); COOPERATIVE with value 0 and CLUSTER_DIMENSION
 * 1x1x1 (an ordinary launch).
 * Refused with CUDA_ERROR_NOT_SUPPORTED and the attribute's name:
 * cooperative launches, thread block clusters (CLUSTER_DIMENSION other
 * than 1x1x1, PREFERRED_CLUSTER_DIMENSION), PROGRAMMATIC_EVENT,
 * LAUNCH_COMPLETION_EVENT, DEVICE_UPDATABLE_KERNEL_NODE (graphs), and any
 * attribute this library does not know.
 */
#ifndef VGPU_CUDA_LAUNCH_ATTRS_H
#define VGPU_CUDA_LAUNCH_ATTRS_H

#include "cuda.h"

/* CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE (attrs NULL with n > 0) or
 * CUDA_ERROR_NOT_SUPPORTED; *why names the refused attribute. */
CUresult cu_launch_attrs_check(const CUlaunchAttribute *attrs, unsigned int n, const char **why);

#endif /* VGPU_CUDA_LAUNCH_ATTRS_H */
