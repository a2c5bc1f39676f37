// SPDX-License-Identifier: MIT
/* bare_gpu.c - a workload on simgpu without the backend, see bare_gpu.h. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bare_gpu.h"
#include "report.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/util.h"

#define PAGE 65536u
#define RAM_BYTES (256 * KiB)
#define RAM_VA (1ull << 32)
#define BUFFERS_VA (2ull << 32)
#define SLOT 1024u
#define SEMAPHORE_OFFSET (RAM_BYTES - 4096)
#define SCRATCH_OFFSET (RAM_BYTES - 2048)
#define RING 256u
#define TIMEOUT_NS (300ull * 1000000000ull)

struct bare {
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	struct vgpu_hal_host_buf *ram;
	uint8_t *ram_cpu;
	uint64_t iova, sequence;
	uint32_t put;
};

static uint64_t read_u64(const struct bare *bare, uint32_t offset)
{
	return le64toh(__atomic_load_n((uint64_t *)(bare->ram_cpu + offset), __ATOMIC_ACQUIRE));
}

/* Submit words plus a semaphore release and wait for it. */
static int run(struct bare *bare, const uint32_t *words, uint32_t count)
{
	uint32_t buffer[SLOT / 4], slot = bare->put % (RAM_BYTES / SLOT - 4);
	uint64_t deadline = vgpu_monotonic_ns() + TIMEOUT_NS;
	uint32_t n = count;

	memcpy(buffer, words, count * 4);
	bare->sequence++;
	n += vgpu_push_semaphore_release(buffer + n, RAM_VA + SEMAPHORE_OFFSET, bare->sequence,
	                                 false);
	memcpy(bare->ram_cpu + (uint64_t)slot * SLOT, buffer, n * 4);
	vgpu_gpfifo_write(bare->info.gpfifo, RING, bare->put % RING,
	                  RAM_VA + (uint64_t)slot * SLOT, n * 4);
	bare->put++;
	vgpu_control_write_gp_put(bare->info.control, bare->put % RING);
	vgpu_control_ring_doorbell(bare->info.control);
	vgpu_hal_channel_kick(bare->channel);
	while (read_u64(bare, SEMAPHORE_OFFSET) < bare->sequence) {
		struct vgpu_hal_event error;

		if (vgpu_hal_channel_state(bare->channel, &error) == VGPU_CHANNEL_ERROR)
			return -EIO;
		if (vgpu_monotonic_ns() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static uint64_t busy(struct bare *bare)
{
	struct vgpu_hal_as_counters counters;

	vgpu_hal_as_counters(bare->as, &counters);
	return counters.busy_ns[VGPU_ENGINE_COMPUTE] + counters.busy_ns[VGPU_ENGINE_COPY];
}

static int setup(struct bare *bare, const struct workload *workload,
                 enum simgpu_sharing sharing)
{
	struct simgpu_config config;
	uint64_t pages[RAM_BYTES / 4096];
	int err;

	simgpu_config_defaults(&config);
	config.vram_bytes = workload_bytes(workload) + 8 * MiB;
	config.reserved_vram_bytes = 8 * MiB;
	config.pfifo_idle_sleep_max_us = 200;
	config.sharing = sharing;
	config.spatial_max_cycles = BARE_SPATIAL_MAX_CYCLES;
	err = simgpu_create(&config, &bare->hal);
	if (!err)
		err = vgpu_hal_as_create(bare->hal, &bare->as);
	if (!err)
		err = vgpu_hal_channel_create(bare->as, RING, &bare->channel, &bare->info);
	if (!err)
		err = vgpu_hal_host_alloc(bare->hal, RAM_BYTES, &bare->ram);
	if (err)
		return err;
	bare->ram_cpu = vgpu_hal_host_cpu_pointer(bare->hal, bare->ram);
	err = vgpu_hal_iommu_map(bare->hal, bare->ram, 0, RAM_BYTES, &bare->iova);
	if (err)
		return err;
	for (unsigned i = 0; i < RAM_BYTES / 4096; i++)
		pages[i] = bare->iova + i * 4096ull;
	return vgpu_hal_as_map(bare->as, RAM_VA, 4096, RAM_BYTES / 4096,
	                       VGPU_TARGET_SYSMEM_COHERENT, pages, 0);
}

int bare_gpu_run(const struct workload *workload, uint64_t *runtime_ns, uint64_t *checksum)
{
	return bare_gpu_run_sharing(workload, SIMGPU_SHARING_TIME_SLICED, runtime_ns, checksum);
}

int bare_gpu_run_sharing(const struct workload *workload, enum simgpu_sharing sharing,
                         uint64_t *runtime_ns, uint64_t *checksum)
{
	struct bare bare = { 0 };
	uint64_t va[WORKLOAD_BUFFERS_MAX], next = BUFFERS_VA, start, hash = 0xcbf29ce484222325ull;
	uint64_t *vram[WORKLOAD_BUFFERS_MAX] = { 0 };
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err = setup(&bare, workload, sharing);

	for (unsigned i = 0; !err && i < workload->buffer_count; i++) {
		uint64_t bytes = workload->buffers[i].bytes, count = bytes / PAGE;

		va[i] = next;
		next += bytes + 4 * MiB; /* a gap, as the core leaves between buffers */
		vram[i] = malloc(count * sizeof(uint64_t));
		err = vram[i] ? vgpu_hal_vram_alloc(bare.hal, PAGE, count, vram[i]) : -ENOMEM;
		if (!err)
			err = vgpu_hal_as_map(bare.as, va[i], PAGE, count, VGPU_TARGET_VRAM, vram[i], 0);
		if (!err)
			err = run(&bare, words, vgpu_push_launch_fill(words, va[i], bytes,
			                                               0x5eed0000u + i));
	}
	start = busy(&bare);
	for (unsigned it = 0; !err && it < workload->iterations; it++)
		for (unsigned k = 0; !err && k < workload->kernel_count; k++)
			err = run(&bare, words,
			          workload_kernel_words(workload, &workload->kernels[k], va, it, words));
	*runtime_ns = busy(&bare) - start;
	for (unsigned i = 0; !err && i < workload->buffer_count; i++) {
		err = run(&bare, words,
		          vgpu_push_launch_checksum(words, va[i], workload->buffers[i].bytes,
		                                    RAM_VA + SCRATCH_OFFSET));
		hash = (hash ^ read_u64(&bare, SCRATCH_OFFSET)) * 0x100000001b3ull;
	}
	*checksum = hash;

	for (unsigned i = 0; i < workload->buffer_count; i++) {
		if (vram[i]) {
			vgpu_hal_as_unmap(bare.as, va[i], workload->buffers[i].bytes);
			vgpu_hal_vram_free(bare.hal, PAGE, workload->buffers[i].bytes / PAGE, vram[i]);
		}
		free(vram[i]);
	}
	if (bare.channel)
		vgpu_hal_channel_destroy(bare.channel);
	if (bare.ram_cpu) {
		vgpu_hal_as_unmap(bare.as, RAM_VA, RAM_BYTES);
		vgpu_hal_iommu_unmap(bare.hal, bare.iova, RAM_BYTES);
	}
	if (bare.ram)
		vgpu_hal_host_free(bare.hal, bare.ram);
	if (bare.as)
		vgpu_hal_as_destroy(bare.as);
	if (bare.hal)
		vgpu_hal_destroy(bare.hal);
	return err;
}
