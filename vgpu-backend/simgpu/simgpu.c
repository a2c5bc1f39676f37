// SPDX-License-Identifier: MIT
/* simgpu.c - the simgpu device: configuration, creation, the HAL vtable. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "address_space.h"
#include "module.h"
#include "channel.h"
#include "engine_copy.h"
#include "host_memory.h"
#include "simgpu_device.h"
#include "spatial.h"
#include "vgpu/simgpu.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/*
 * The "h100" timing model (simgpu_config_model), from cudagpu's benchmark
 * on an H100 80GB HBM3 (driver 580, PCIe Gen5 host link), 2026-11-25; the
 * run and every figure are in vgpu-backend/cudagpu/RESULTS.md
 * (bench-cuda.json beside it).
 *  - VRAM bandwidth: the STREAM kernel on resident chunks, bytes read +
 *    written per second (stream_resident_gbps: 2794 GB/s). simgpu charges
 *    reads and writes to the same bandwidth, as that figure counts them.
 *  - System RAM bandwidth: cuMemcpy between VRAM and pinned host memory,
 *    one direction of the link (memcpy_dtoh_gbps, memcpy_htod_gbps:
 *    55 GB/s), which is what an eviction or return copy gets. Kernels on
 *    evicted chunks use both directions at once and measured 83 GB/s read +
 *    written (stream_evicted_gbps); simgpu's single sysmem budget makes them
 *    about a third slower than that, on the conservative side.
 *  - Latencies: the part a GPU cannot hide was not measured apart; simgpu's
 *    defaults are kept (VRAM 1 ns, PCIe 20 ns per transaction).
 */
#define H100_VRAM_BANDWIDTH UINT64_C(2794000000000)
#define H100_VRAM_LATENCY_NS 1
#define H100_SYSMEM_BANDWIDTH UINT64_C(55000000000)
#define H100_SYSMEM_LATENCY_NS 20

void simgpu_config_defaults(struct simgpu_config *config)
{
	memset(config, 0, sizeof(*config));
	config->vram_bytes = GIB;
	config->reserved_vram_bytes = 0;
	config->vram_bandwidth = UINT64_C(900000000000);
	config->vram_latency_ns = 1;
	config->sysmem_coherent_bandwidth = UINT64_C(24000000000);
	config->sysmem_coherent_latency_ns = 22;
	config->sysmem_noncoherent_bandwidth = UINT64_C(25000000000);
	config->sysmem_noncoherent_latency_ns = 20;
	config->max_channels = 64;
	config->max_address_spaces = 64;
	config->default_gpfifo_entries = 512;
	config->max_gpfifo_entries = 65536;
	config->reference_bits = false;
	config->vram_scrub_release = false;
	config->tlb_entries = 512;
	config->iotlb_entries = 256;
	config->pfifo_idle_sleep_max_us = 1000;
	config->timeslice_ns = 100000;
	config->timeslice_commands = 256;
	config->watchdog_ns = UINT64_C(5000000000);
	config->acquire_timeout_ms = 10000;
	config->thread_instructions_per_second = UINT64_C(20000000000000);
	config->max_stream_passes = 4096;
	config->max_random_updates = UINT64_C(1) << 32;
	config->sharing = SIMGPU_SHARING_TIME_SLICED;
	config->spatial_walkers = SIMGPU_WALKERS_SHARED;
	config->spatial_memsched = SIMGPU_MEMSCHED_FRFCFS;
	config->spatial_core_mhz = 1400;
	config->spatial_max_cycles = 2000000;
}

static const char *const sharing_names[] = {
	[SIMGPU_SHARING_TIME_SLICED] = "time-sliced",
	[SIMGPU_SHARING_SPATIAL] = "spatial",
};
static const char *const walkers_names[] = {
	[SIMGPU_WALKERS_SHARED] = "shared",
	[SIMGPU_WALKERS_STATIC] = "static",
	[SIMGPU_WALKERS_DWS] = "dws",
	[SIMGPU_WALKERS_DWSPP] = "dws++",
};
static const char *const memsched_names[] = {
	[SIMGPU_MEMSCHED_FRFCFS] = "frfcfs",
	[SIMGPU_MEMSCHED_RR] = "rr",
	[SIMGPU_MEMSCHED_PRIORITY] = "prio",
	[SIMGPU_MEMSCHED_ITS] = "its",
	[SIMGPU_MEMSCHED_WEIS] = "weis",
};

#define NAMES(array) (sizeof(array) / sizeof(*(array)))

static int parse_name(const char *const *names, unsigned count, const char *name, unsigned *out)
{
	unsigned i;

	for (i = 0; name && i < count; i++) {
		if (!strcmp(names[i], name)) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int simgpu_sharing_parse(const char *name, enum simgpu_sharing *out)
{
	unsigned v;
	int ret = parse_name(sharing_names, NAMES(sharing_names), name, &v);

	if (ret == 0)
		*out = (enum simgpu_sharing)v;
	return ret;
}

int simgpu_walkers_parse(const char *name, enum simgpu_walkers *out)
{
	unsigned v;
	int ret = parse_name(walkers_names, NAMES(walkers_names), name, &v);

	if (ret == 0)
		*out = (enum simgpu_walkers)v;
	return ret;
}

int simgpu_memsched_parse(const char *name, enum simgpu_memsched *out)
{
	unsigned v;
	int ret = parse_name(memsched_names, NAMES(memsched_names), name, &v);

	if (ret == 0)
		*out = (enum simgpu_memsched)v;
	return ret;
}

const char *simgpu_sharing_name(enum simgpu_sharing sharing)
{
	return (unsigned)sharing < NAMES(sharing_names) ? sharing_names[sharing] : "?";
}

const char *simgpu_walkers_name(enum simgpu_walkers walkers)
{
	return (unsigned)walkers < NAMES(walkers_names) ? walkers_names[walkers] : "?";
}

const char *simgpu_memsched_name(enum simgpu_memsched memsched)
{
	return (unsigned)memsched < NAMES(memsched_names) ? memsched_names[memsched] : "?";
}

int simgpu_config_model(struct simgpu_config *config, const char *model)
{
	struct simgpu_config defaults;

	if (!strcmp(model, "default")) {
		simgpu_config_defaults(&defaults);
		config->vram_bandwidth = defaults.vram_bandwidth;
		config->vram_latency_ns = defaults.vram_latency_ns;
		config->sysmem_coherent_bandwidth = defaults.sysmem_coherent_bandwidth;
		config->sysmem_coherent_latency_ns = defaults.sysmem_coherent_latency_ns;
		config->sysmem_noncoherent_bandwidth = defaults.sysmem_noncoherent_bandwidth;
		config->sysmem_noncoherent_latency_ns = defaults.sysmem_noncoherent_latency_ns;
		return 0;
	}
	if (!strcmp(model, "h100")) {
		config->vram_bandwidth = H100_VRAM_BANDWIDTH;
		config->vram_latency_ns = H100_VRAM_LATENCY_NS;
		config->sysmem_coherent_bandwidth = H100_SYSMEM_BANDWIDTH;
		config->sysmem_coherent_latency_ns = H100_SYSMEM_LATENCY_NS;
		config->sysmem_noncoherent_bandwidth = H100_SYSMEM_BANDWIDTH;
		config->sysmem_noncoherent_latency_ns = H100_SYSMEM_LATENCY_NS;
		return 0;
	}
	return -EINVAL;
}

static bool power_of_two(uint64_t value)
{
	return value && !(value & (value - 1));
}

/* Resolve automatic values and check the rest. */
static int check_config(struct simgpu_config *config)
{
	if (config->vram_bytes < 16 * MIB || config->vram_bytes % VRAM_BLOCK_BYTES ||
	    config->vram_bytes > (UINT64_C(1) << 40))
		return -EINVAL;
	if (config->reserved_vram_bytes == 0) {
		uint64_t reserved = config->vram_bytes / 64;

		if (reserved < 4 * MIB)
			reserved = 4 * MIB;
		if (reserved > 256 * MIB)
			reserved = 256 * MIB;
		config->reserved_vram_bytes = reserved & ~(uint64_t)(VRAM_BLOCK_BYTES - 1);
	}
	if (config->reserved_vram_bytes % VRAM_BLOCK_BYTES ||
	    config->reserved_vram_bytes >= config->vram_bytes / 2)
		return -EINVAL;
	if (!config->vram_bandwidth || !config->sysmem_coherent_bandwidth ||
	    !config->sysmem_noncoherent_bandwidth)
		return -EINVAL;
	if (config->max_channels == 0 || config->max_channels > 65536 ||
	    config->max_address_spaces == 0)
		return -EINVAL;
	if (!power_of_two(config->max_gpfifo_entries) || config->max_gpfifo_entries < 2 ||
	    config->max_gpfifo_entries > (1u << 24) ||
	    !power_of_two(config->default_gpfifo_entries) || config->default_gpfifo_entries < 2 ||
	    config->default_gpfifo_entries > config->max_gpfifo_entries)
		return -EINVAL;
	if (!power_of_two(config->tlb_entries) || !power_of_two(config->iotlb_entries))
		return -EINVAL;
	if (config->pfifo_idle_sleep_max_us == 0 || config->pfifo_idle_sleep_max_us > 1000000)
		return -EINVAL;
	if (config->max_stream_passes == 0)
		return -EINVAL;
	if (config->timeslice_ns == 0 || config->timeslice_commands == 0 ||
	    config->watchdog_ns > UINT64_C(3600) * 1000000000u)
		return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Device-level HAL operations                                              */

static void simgpu_get_caps(struct vgpu_hal *hal, struct vgpu_hal_caps *caps)
{
	*caps = to_simgpu(hal)->caps;
}

static void simgpu_set_event_handler(struct vgpu_hal *hal, vgpu_hal_event_fn fn, void *ctx)
{
	event_sink_set_handler(&to_simgpu(hal)->events, fn, ctx);
}

static int simgpu_vram_alloc(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                             uint64_t *addresses)
{
	if (!addresses)
		return -EINVAL;
	return vram_allocator_alloc(&to_simgpu(hal)->vram_allocator, page_size, count, addresses);
}

static void simgpu_vram_free(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                             const uint64_t *addresses)
{
	if (addresses)
		vram_allocator_free(&to_simgpu(hal)->vram_allocator, page_size, count, addresses);
}

/*
 * Scrubbing. The pages must read as zero on return, and VRAM is one private
 * anonymous mapping whose 4 KiB host pages are either backed (resident,
 * possibly holding data) or not (they read as zero when next touched; a
 * swapped-out page counts as not backed). mincore() tells which:
 *  - backed pages are zeroed in place with memset, so the next writer (a
 *    return copy, a kernel on a fresh allocation) finds them mapped instead
 *    of faulting on every page; they keep their host RAM. A page that
 *    already reads as zero (scrubbed before and not written since, or the
 *    shared zero page of a page only ever read) is only read, not written.
 *  - pages without backing are dropped with MADV_DONTNEED, which costs next
 *    to nothing for pages never touched and discards a swapped-out copy.
 * Every page is therefore either zeroed or dropped. VRAM never touched costs
 * a mincore() and a madvise() per 4 MiB (a few microseconds). With
 * config.vram_scrub_release every scrubbed page is dropped instead (host RAM
 * follows the VRAM in use; the next writer faults). Runs of physically
 * contiguous pages are handled together, mincore() 4 MiB at a time.
 */
#define SCRUB_WINDOW_PAGES 1024u

static bool page_is_zero(const uint8_t *page)
{
	const uint64_t *word = (const uint64_t *)page;
	size_t i;

	/* one cache line per step: a page with data stops at its first */
	for (i = 0; i < VRAM_FRAME_BYTES / 8; i += 8) {
		if (word[i] | word[i + 1] | word[i + 2] | word[i + 3] | word[i + 4] | word[i + 5] |
		    word[i + 6] | word[i + 7])
			return false;
	}
	return true;
}

static int scrub_drop(uint8_t *start, uint64_t pages)
{
	if (pages && madvise(start, pages * VRAM_FRAME_BYTES, MADV_DONTNEED))
		return -errno;
	return 0;
}

static void scrub_zero(uint8_t *start, uint64_t pages)
{
	if (pages)
		memset(start, 0, pages * VRAM_FRAME_BYTES);
}

/* Scrub the pages of [start, start + bytes) of the VRAM mapping. */
static int scrub_run(struct simgpu *gpu, uint8_t *start, uint64_t bytes)
{
	unsigned char resident[SCRUB_WINDOW_PAGES];
	uint64_t left = bytes / VRAM_FRAME_BYTES;

	if (gpu->config.vram_scrub_release)
		return scrub_drop(start, left);
	if (!gpu->host_pages_4k) {
		/* host pages larger than a VRAM page: no per-page residency */
		scrub_zero(start, left);
		return 0;
	}
	while (left) {
		uint64_t pages = left < SCRUB_WINDOW_PAGES ? left : SCRUB_WINDOW_PAGES;
		/* pending runs: [first, first + count) to zero, to drop */
		uint64_t zero_first = 0, zero_count = 0, drop_first = 0, drop_count = 0, i;
		int ret;

		if (mincore(start, pages * VRAM_FRAME_BYTES, resident)) {
			/* cannot tell: zero it all (correct, costs host RAM) */
			scrub_zero(start, pages);
			start += pages * VRAM_FRAME_BYTES;
			left -= pages;
			continue;
		}
		for (i = 0; i < pages; i++) {
			uint8_t *page = start + i * VRAM_FRAME_BYTES;

			if (!(resident[i] & 1)) {
				if (drop_first + drop_count != i) {
					if ((ret = scrub_drop(start + drop_first * VRAM_FRAME_BYTES,
					                      drop_count)))
						return ret;
					drop_first = i;
					drop_count = 0;
				}
				drop_count++;
			} else if (!page_is_zero(page)) {
				if (zero_first + zero_count != i) {
					scrub_zero(start + zero_first * VRAM_FRAME_BYTES, zero_count);
					zero_first = i;
					zero_count = 0;
				}
				zero_count++;
			}
		}
		scrub_zero(start + zero_first * VRAM_FRAME_BYTES, zero_count);
		if ((ret = scrub_drop(start + drop_first * VRAM_FRAME_BYTES, drop_count)))
			return ret;
		start += pages * VRAM_FRAME_BYTES;
		left -= pages;
	}
	return 0;
}

static int simgpu_vram_scrub(struct vgpu_hal *hal, uint32_t page_size, uint64_t count,
                             const uint64_t *addresses)
{
	struct simgpu *gpu = to_simgpu(hal);
	uint64_t run_start = 0, run_bytes = 0;
	uint64_t i;
	int ret;

	if (!addresses || (page_size != VGPU_PAGE_4K && page_size != VGPU_PAGE_64K))
		return -EINVAL;
	for (i = 0; i < count; i++) {
		if (addresses[i] % page_size || addresses[i] + page_size > gpu->caps.vram_bytes)
			return -EINVAL;
	}
	for (i = 0; i < count; i++) {
		if (run_bytes && addresses[i] == run_start + run_bytes) {
			run_bytes += page_size;
			continue;
		}
		if (run_bytes && (ret = scrub_run(gpu, gpu->vram + run_start, run_bytes)))
			return ret;
		run_start = addresses[i];
		run_bytes = page_size;
	}
	if (run_bytes && (ret = scrub_run(gpu, gpu->vram + run_start, run_bytes)))
		return ret;
	return 0;
}

static uint64_t simgpu_vram_free_bytes(struct vgpu_hal *hal)
{
	return vram_allocator_free_bytes(&to_simgpu(hal)->vram_allocator);
}

static int simgpu_host_alloc(struct vgpu_hal *hal, uint64_t bytes, struct vgpu_hal_host_buf **out)
{
	struct simgpu_host_buf *buf;
	struct simgpu *gpu = to_simgpu(hal);
	int ret;

	if (!out)
		return -EINVAL;
	ret = host_buf_create(hal, &gpu->host_arenas, bytes, &buf);
	if (ret)
		return ret;
	pthread_mutex_lock(&gpu->objects_lock);
	buf->next = gpu->host_buffers;
	if (buf->next)
		buf->next->previous = buf;
	gpu->host_buffers = buf;
	pthread_mutex_unlock(&gpu->objects_lock);
	*out = &buf->base;
	return 0;
}

static void simgpu_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *hal_buf)
{
	struct simgpu_host_buf *buf = to_simgpu_host_buf(hal_buf);

	struct simgpu *gpu = to_simgpu(hal);

	if (!buf)
		return;
	/* the contract says it is unmapped; never leave the IOMMU dangling */
	iommu_unmap_buffer(&gpu->iommu, buf);
	pthread_mutex_lock(&gpu->objects_lock);
	if (buf->previous)
		buf->previous->next = buf->next;
	else
		gpu->host_buffers = buf->next;
	if (buf->next)
		buf->next->previous = buf->previous;
	pthread_mutex_unlock(&gpu->objects_lock);
	host_buf_destroy(&gpu->host_arenas, buf);
}

static void *simgpu_host_cpu_pointer(struct vgpu_hal_host_buf *buf)
{
	return to_simgpu_host_buf(buf)->memory;
}

static int simgpu_host_share(struct vgpu_hal_host_buf *hal_buf, int *fd, uint64_t *offset)
{
	struct simgpu_host_buf *buf = to_simgpu_host_buf(hal_buf);

	if (!buf || !fd || !offset)
		return -EINVAL;
	*fd = buf->extent.fd;
	*offset = buf->extent.offset;
	return 0;
}

static int simgpu_iommu_map(struct vgpu_hal *hal, struct vgpu_hal_host_buf *buf, uint64_t offset,
                            uint64_t bytes, uint64_t *iova)
{
	if (!buf || !iova)
		return -EINVAL;
	return iommu_map(&to_simgpu(hal)->iommu, to_simgpu_host_buf(buf), offset, bytes, iova);
}

static int simgpu_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes)
{
	return iommu_unmap(&to_simgpu(hal)->iommu, iova, bytes);
}

static int32_t simgpu_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	if ((unsigned)engine >= VGPU_ENGINE_COUNT)
		return -1;
	return gpu_clock_current_channel(&to_simgpu(hal)->clock, engine);
}

static bool simgpu_channel_pending(struct vgpu_hal *hal, uint32_t channel_id)
{
	return pfifo_channel_pending(&to_simgpu(hal)->pfifo, channel_id);
}

static uint64_t simgpu_engine_modeled_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	if ((unsigned)engine >= VGPU_ENGINE_COUNT)
		return 0;
	return gpu_clock_busy_ns(&to_simgpu(hal)->clock, engine);
}

static void simgpu_destroy(struct vgpu_hal *hal);

static const struct vgpu_hal_ops simgpu_ops = {
	.destroy = simgpu_destroy,
	.get_caps = simgpu_get_caps,
	.set_event_handler = simgpu_set_event_handler,
	.vram_alloc = simgpu_vram_alloc,
	.vram_free = simgpu_vram_free,
	.vram_scrub = simgpu_vram_scrub,
	.vram_free_bytes = simgpu_vram_free_bytes,
	.host_alloc = simgpu_host_alloc,
	.host_free = simgpu_host_free,
	.host_cpu_pointer = simgpu_host_cpu_pointer,
	.iommu_map = simgpu_iommu_map,
	.iommu_unmap = simgpu_iommu_unmap,
	.host_share = simgpu_host_share,
	.as_create = simgpu_as_create,
	.as_destroy = simgpu_as_destroy,
	.as_map = simgpu_as_map,
	.as_unmap = simgpu_as_unmap,
	.as_tlb_invalidate = simgpu_as_tlb_invalidate,
	.as_read = simgpu_as_read,
	.as_write = simgpu_as_write,
	.as_test_and_clear_referenced = simgpu_as_test_and_clear_referenced,
	.as_dirty_tracking = simgpu_as_dirty_tracking,
	.as_test_and_clear_dirty = simgpu_as_test_and_clear_dirty,
	.as_counters = simgpu_as_counters,
	.as_contention = simgpu_as_contention,
	.channel_create = simgpu_channel_create,
	.channel_destroy = simgpu_channel_destroy,
	.channel_set_fetch = simgpu_channel_set_fetch,
	.channel_gp_get = simgpu_channel_gp_get,
	.channel_state = simgpu_channel_state,
	.channel_priv_submit = simgpu_channel_priv_submit,
	.channel_kick = simgpu_channel_kick,
	.channel_kill = simgpu_channel_kill,
	.copy = simgpu_copy,
	.engine_current_channel = simgpu_engine_current_channel,
	.channel_pending = simgpu_channel_pending,
	.engine_modeled_ns = simgpu_engine_modeled_ns,
	.module_parse = simgpu_module_parse,
	.module_info = simgpu_module_info,
	.module_free = simgpu_module_free,
	.module_bind = simgpu_module_bind,
	.module_unbind = simgpu_module_unbind,
	.module_bind_at = simgpu_module_bind_at,
};

bool simgpu_is_simgpu(const struct vgpu_hal *hal)
{
	return hal && hal->ops == &simgpu_ops;
}

/* ------------------------------------------------------------------------ */
/* Creation and destruction                                                 */

enum init_stage {
	STAGE_NONE,
	STAGE_VRAM,
	STAGE_ALLOCATORS,
	STAGE_IOMMU,
	STAGE_PFIFO,
	STAGE_COPY,
	STAGE_RUNNING,
};

static void teardown(struct simgpu *gpu, enum init_stage stage)
{
	if (stage >= STAGE_RUNNING) {
		pfifo_stop(&gpu->pfifo);
		copy_engine_stop(&gpu->copy_engine);
	}
	if (stage >= STAGE_COPY)
		copy_engine_destroy(&gpu->copy_engine);
	if (stage >= STAGE_PFIFO)
		pfifo_destroy(&gpu->pfifo);
	if (stage >= STAGE_IOMMU) {
		/* host buffers the owner forgot (the contract wants them freed
		 * first; we release them rather than leak) */
		while (gpu->host_buffers) {
			struct simgpu_host_buf *buf = gpu->host_buffers;

			gpu->host_buffers = buf->next;
			host_buf_destroy(&gpu->host_arenas, buf);
		}
		host_arena_set_destroy(&gpu->host_arenas);
		iommu_destroy(&gpu->iommu);
		event_sink_destroy(&gpu->events);
		pthread_mutex_destroy(&gpu->objects_lock);
	}
	if (stage >= STAGE_ALLOCATORS) {
		vram_allocator_destroy(&gpu->reserved_allocator);
		vram_allocator_destroy(&gpu->vram_allocator);
	}
	if (stage >= STAGE_VRAM)
		munmap(gpu->vram, gpu->vram_total_bytes);
	spatial_destroy(gpu->spatial);
	free(gpu);
}

static void simgpu_destroy(struct vgpu_hal *hal)
{
	if (hal)
		teardown(to_simgpu(hal), STAGE_RUNNING);
}

int simgpu_create(const struct simgpu_config *config, struct vgpu_hal **out)
{
	enum init_stage stage = STAGE_NONE;
	struct simgpu *gpu;
	uint64_t usable;
	int ret;

	if (!out)
		return -EINVAL;
	gpu = calloc(1, sizeof(*gpu));
	if (!gpu)
		return -ENOMEM;
	if (config)
		gpu->config = *config;
	else
		simgpu_config_defaults(&gpu->config);
	ret = check_config(&gpu->config);
	if (ret)
		goto fail;
	gpu->spatial = spatial_create(gpu, &ret);
	if (ret)
		goto fail;
	gpu->hal.ops = &simgpu_ops;
	gpu->vram_total_bytes = gpu->config.vram_bytes;
	usable = gpu->config.vram_bytes - gpu->config.reserved_vram_bytes;

	gpu->host_pages_4k = sysconf(_SC_PAGESIZE) == VRAM_FRAME_BYTES;
	gpu->vram = mmap(NULL, gpu->vram_total_bytes, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (gpu->vram == MAP_FAILED) {
		ret = -ENOMEM;
		goto fail;
	}
	stage = STAGE_VRAM;
	ret = vram_allocator_init(&gpu->vram_allocator, 0, usable);
	if (ret)
		goto fail;
	ret = vram_allocator_init(&gpu->reserved_allocator, usable,
	                          gpu->config.reserved_vram_bytes);
	if (ret) {
		vram_allocator_destroy(&gpu->vram_allocator);
		goto fail;
	}
	stage = STAGE_ALLOCATORS;
	iommu_init(&gpu->iommu);
	event_sink_init(&gpu->events);
	pthread_mutex_init(&gpu->objects_lock, NULL);
	host_arena_set_init(&gpu->host_arenas);
	gpu_clock_init(&gpu->clock, &gpu->config);
	stage = STAGE_IOMMU;

	gpu->caps = (struct vgpu_hal_caps){
		.name = "simgpu",
		.vram_bytes = usable,
		.page_size_mask = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_64K,
		.sysmem_page_size_mask = VGPU_HAL_PAGE_MASK_4K | VGPU_HAL_PAGE_MASK_64K,
		.has_reference_bits = gpu->config.reference_bits,
		.runs_modules = true,
		.max_channels = gpu->config.max_channels,
		.max_address_spaces = gpu->config.max_address_spaces,
		.gpfifo_entries_max = gpu->config.max_gpfifo_entries,
		.va_bits = GMMU_VA_BITS,
		.va_reserved_base = (UINT64_C(1) << GMMU_VA_BITS) - SIMGPU_VA_RESERVED_BYTES,
		.has_dirty_bits = true,
	};

	ret = pfifo_init(&gpu->pfifo, gpu);
	if (ret)
		goto fail;
	stage = STAGE_PFIFO;
	ret = copy_engine_init(&gpu->copy_engine, gpu);
	if (ret)
		goto fail;
	stage = STAGE_COPY;
	ret = pfifo_start(&gpu->pfifo);
	if (ret)
		goto fail;
	ret = copy_engine_start(&gpu->copy_engine);
	if (ret) {
		pfifo_stop(&gpu->pfifo);
		goto fail;
	}
	*out = &gpu->hal;
	return 0;
fail:
	teardown(gpu, stage);
	return ret;
}
