/* SPDX-License-Identifier: MIT */
/*
 * workload_reference.h - CPU references of the workloads' final data
 * (internal; vgpu_workloads.h exposes the ones tools and tests use).
 */
#ifndef VGPU_GUEST_WORKLOAD_REFERENCE_H
#define VGPU_GUEST_WORKLOAD_REFERENCE_H

#include <stdint.h>

#include "vgpu_workloads.h"

/* A width x height stencil grid FILLed with seed after iterations STENCIL
 * steps (ping-pong): checksum of the last output. -ENOMEM. */
int workload_reference_stencil(uint64_t seed, uint32_t width, uint32_t height,
                               uint64_t iterations, uint64_t *checksum);

/* Table index of a gups run with run_seed after iterations RANDOM_ACCESS
 * rounds of updates each. -ENOMEM. */
int workload_reference_gups(uint64_t run_seed, uint64_t index, uint64_t bytes,
                            uint64_t updates, uint64_t iterations, uint64_t *checksum);

#endif /* VGPU_GUEST_WORKLOAD_REFERENCE_H */
