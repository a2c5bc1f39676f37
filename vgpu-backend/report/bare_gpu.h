/* SPDX-License-Identifier: MIT */
/*
 * bare_gpu.h - a workload on simgpu alone, without the backend: one address
 * space, one channel and the buffers mapped with 64 KiB VRAM pages straight
 * through the HAL, pushbuffers in host memory, completion by polling a
 * semaphore. The reference the no-pressure overhead is measured against.
 */
#ifndef VGPU_REPORT_BARE_GPU_H
#define VGPU_REPORT_BARE_GPU_H

#include "vgpu/simgpu.h"
#include "workload.h"

/* Run workload (fills, then the iterations); *runtime_ns = the modeled
 * busy time of the iterations, *checksum as workload_run's. 0 or a
 * negative errno. */
int bare_gpu_run(const struct workload *workload, uint64_t *runtime_ns, uint64_t *checksum);

/* The same on simgpu with the given sharing mode (vgpu/simgpu.h); spatial
 * kernels are simulated for at most BARE_SPATIAL_MAX_CYCLES, then
 * extrapolated. */
#define BARE_SPATIAL_MAX_CYCLES 200000u
int bare_gpu_run_sharing(const struct workload *workload, enum simgpu_sharing sharing,
                         uint64_t *runtime_ns, uint64_t *checksum);

#endif /* VGPU_REPORT_BARE_GPU_H */
