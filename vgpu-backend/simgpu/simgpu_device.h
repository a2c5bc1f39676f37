/* SPDX-License-Identifier: MIT */
/*
 * simgpu_device.h - the simgpu device: the parts every module reaches.
 */
#ifndef SIMGPU_DEVICE_H
#define SIMGPU_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "engine_copy.h"
#include "events.h"
#include "host_memory.h"
#include "iommu.h"
#include "pfifo.h"
#include "vgpu/hal.h"
#include "vgpu/simgpu.h"
#include "vram.h"

#define SIMGPU_VA_RESERVED_BYTES (UINT64_C(1) << 30)

struct simgpu {
	struct vgpu_hal hal;
	struct simgpu_config config;
	struct vgpu_hal_caps caps;
	uint8_t *vram;              /* host view of all VRAM (GPU address 0) */
	uint64_t vram_total_bytes;  /* including the reserved top */
	bool host_pages_4k;         /* host page = VRAM frame: scrub by residency */
	struct vram_allocator vram_allocator;     /* [0, caps.vram_bytes) */
	struct vram_allocator reserved_allocator; /* [caps.vram_bytes, total) */
	struct iommu iommu;
	struct gpu_clock clock;
	struct event_sink events;
	struct pfifo pfifo;
	struct copy_engine copy_engine;
	pthread_mutex_t objects_lock;
	uint32_t address_space_count; /* under objects_lock */
	struct simgpu_host_buf *host_buffers; /* live, under objects_lock */
	struct host_arena_set host_arenas;    /* where host buffers live */
	struct spatial *spatial;              /* NULL unless config.sharing is spatial */
};

static inline struct simgpu *to_simgpu(struct vgpu_hal *hal)
{
	return (struct simgpu *)hal;
}

#endif /* SIMGPU_DEVICE_H */
