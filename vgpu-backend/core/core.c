// SPDX-License-Identifier: MIT
/*
 * core.c - the core's lifecycle: its configuration, creating it (with the
 * threads of return_pass.c and gpu_accounting.c) and destroying it. The top
 * of the core's layers (core_internal.h): nothing in the core calls up
 * into it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chunk.h"
#include "core_internal.h"
#include "error.h"
#include "events.h"
#include "lock.h"
#include "pass.h"
#include "relocation.h"
#include "return_pass.h"
#include "stats.h"
#include "vgpu/util.h"

void vgpu_core_stop(struct vgpu_core *core)
{
	if (core)
		atomic_store_explicit(&core->stopping, true, memory_order_release);
}

void vgpu_core_config_defaults(struct vgpu_core_config *config)
{
	memset(config, 0, sizeof(*config));
	config->chunk_bytes = VGPU_CORE_DEFAULT_CHUNK_BYTES;
	config->policy = "random";
	config->seed = 1;
	config->return_interval_ms = VGPU_CORE_DEFAULT_RETURN_INTERVAL_MS;
	config->drain_timeout_ms = VGPU_CORE_DEFAULT_DRAIN_TIMEOUT_MS;
	config->copies_in_flight = VGPU_CORE_DEFAULT_COPIES_IN_FLIGHT;
	config->host_cache_bytes = VGPU_CORE_DEFAULT_HOST_CACHE_BYTES;
}

const char *vgpu_core_policy_name(const struct vgpu_core *core)
{
	return core->policy->name;
}

/* The core's chunk size when the config leaves it 0: the thesis's 4 MiB,
 * rounded up to a multiple of the GPU's smallest page. */
static uint64_t default_chunk_bytes(uint32_t min_page)
{
	return (VGPU_CORE_DEFAULT_CHUNK_BYTES + min_page - 1) / min_page * min_page;
}

/* The GPU's page sizes: known ones, and every VRAM size usable for SYSMEM. */
static int check_page_sizes(const struct vgpu_hal_caps *caps, struct vgpu_error *error)
{
	const char *name = caps->name ? caps->name : "?";

	if (!vgpu_page_mask_valid(caps->page_size_mask) ||
	    !vgpu_page_mask_valid(caps->sysmem_page_size_mask)) {
		return vgpu_error_set(error, -ENOTSUP,
		                      "GPU '%s' reports page sizes %#x (VRAM) and %#x (system "
		                      "memory); each must be a non-empty set of "
		                      "VGPU_HAL_PAGE_MASK_* bits",
		                      name, caps->page_size_mask, caps->sysmem_page_size_mask);
	}
	if ((caps->page_size_mask & caps->sysmem_page_size_mask) != caps->page_size_mask) {
		return vgpu_error_set(error, -ENOTSUP,
		                      "GPU '%s' cannot map system memory with every page size it "
		                      "uses for VRAM (masks %#x and %#x); sysmem_page_size_mask "
		                      "must include page_size_mask",
		                      name, caps->page_size_mask, caps->sysmem_page_size_mask);
	}
	return 0;
}

/* chunk_bytes is the resolved chunk size (the default filled in). */
static int check_config(const struct vgpu_core_config *config, uint64_t chunk_bytes,
                        const struct vgpu_hal_caps *caps, const struct vgpu_policy_ops **policy,
                        struct vgpu_error *error)
{
	uint32_t min_page = vgpu_page_size_smallest(caps->page_size_mask);
	char size[32], page[32], fallback[32];
	int err;

	if (chunk_bytes % min_page) {
		return vgpu_error_set(error, -EINVAL,
		                      "chunk size %s is not a multiple of the GPU's %s page; use "
		                      "e.g. %s (the default)",
		                      vgpu_core_format_size(chunk_bytes, size, sizeof(size)),
		                      vgpu_core_format_size(min_page, page, sizeof(page)),
		                      vgpu_core_format_size(default_chunk_bytes(min_page), fallback,
		                                            sizeof(fallback)));
	}
	*policy = config->policy_ops;
	if (!*policy) {
		*policy = vgpu_policy_find(config->policy ? config->policy : "random");
		if (!*policy) {
			return vgpu_error_set(error, -EINVAL,
			                      "unknown eviction policy '%s'; use random, priority "
			                      "or refbits",
			                      config->policy);
		}
	}
	if (!(*policy)->name || !(*policy)->pick_evict || !(*policy)->pick_return) {
		return vgpu_error_set(error, -EINVAL,
		                      "the custom policy lacks a name, pick_evict or pick_return; "
		                      "fill in struct vgpu_policy_ops");
	}
	if ((*policy)->check) {
		struct vgpu_error why = VGPU_ERROR_INIT;

		err = (*policy)->check(caps, &why);
		if (err && vgpu_error_is_set(&why))
			return vgpu_error_propagate(error, &why);
		if (err)
			return vgpu_error_set(error, err, "the policy cannot run on this GPU");
	}
	if (config->accounting_jitter_percent > VGPU_GPU_TIME_MAX_JITTER) {
		return vgpu_error_set(error, -EINVAL,
		                      "accounting jitter %u%% is too large; use 0..%u",
		                      config->accounting_jitter_percent, VGPU_GPU_TIME_MAX_JITTER);
	}
	return 0;
}

/* A new core's fields from the checked configuration (nothing that can fail). */
static void init_state(struct vgpu_core *core, struct vgpu_hal *hal,
                       const struct vgpu_hal_caps *caps, const struct vgpu_core_config *config,
                       uint64_t chunk_bytes, const struct vgpu_policy_ops *policy)
{
	uint32_t min_page = vgpu_page_size_smallest(caps->page_size_mask);

	core->hal = hal;
	core->caps = *caps;
	core->min_page = min_page;
	core->buffer_align = min_page > VGPU_BUFFER_MIN_ALIGN ? min_page : VGPU_BUFFER_MIN_ALIGN;
	core->config = *config;
	core->config.chunk_bytes = chunk_bytes;
	core->config.policy = policy->name;
	core->config.policy_ops = policy;
	if (!core->config.drain_timeout_ms)
		core->config.drain_timeout_ms = VGPU_CORE_DEFAULT_DRAIN_TIMEOUT_MS;
	if (!core->config.copies_in_flight)
		core->config.copies_in_flight = VGPU_CORE_DEFAULT_COPIES_IN_FLIGHT;
	core->policy = policy;
	core->policy_context.core = core;
	vgpu_rng_seed(&core->policy_context.rng, config->seed);
	list_init(&core->vms);
	core->next_vm_id = 1;
	vgpu_victim_heap_init(&core->victims, true);
	vgpu_host_budget_init(&core->host, config->host_budget_bytes);
	vgpu_host_cache_init(&core->host_cache, hal, config->host_cache_bytes);
	atomic_init(&core->stopping, false);
	atomic_init(&core->weights_requested, false);
}

/* The core's locks and condition variables. 0 or a negative errno (the
 * core's error set). */
static int init_sync(struct vgpu_core *core, struct vgpu_error *error)
{
	int err = vgpu_fifo_lock_init(&core->lock);

	if (err)
		return vgpu_error_set(error, err, "cannot create the core's allocation lock: %s",
		                      strerror(-err));
	vgpu_mutex_init(&core->channels_lock);
	vgpu_stats_init(&core->stats);
	vgpu_pass_init(&core->pass);
	vgpu_return_init(&core->ret);
	return 0;
}

static void fini_sync(struct vgpu_core *core)
{
	vgpu_return_fini(&core->ret);
	vgpu_pass_fini(&core->pass);
	vgpu_stats_fini(&core->stats);
	vgpu_mutex_destroy(&core->channels_lock);
	vgpu_fifo_lock_fini(&core->lock);
}

int vgpu_core_create(struct vgpu_hal *hal, const struct vgpu_core_config *config,
                     struct vgpu_core **out, struct vgpu_error *error)
{
	struct vgpu_core_config defaults;
	const struct vgpu_policy_ops *policy = NULL;
	struct vgpu_hal_caps caps;
	struct vgpu_core *core;
	uint32_t min_page;
	uint64_t chunk_bytes;
	int err;

	vgpu_error_clear(error);
	if (!hal || !out) {
		return vgpu_error_set(error, -EINVAL,
		                      "vgpu_core_create needs a HAL and a place for the core");
	}
	if (!config) {
		vgpu_core_config_defaults(&defaults);
		config = &defaults;
	}
	vgpu_hal_get_caps(hal, &caps);
	err = check_page_sizes(&caps, error);
	if (err)
		return err;
	min_page = vgpu_page_size_smallest(caps.page_size_mask);
	chunk_bytes = config->chunk_bytes ? config->chunk_bytes : default_chunk_bytes(min_page);
	err = check_config(config, chunk_bytes, &caps, &policy, error);
	if (err)
		return err;

	core = calloc(1, sizeof(*core));
	if (!core)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the core");
	init_state(core, hal, &caps, config, chunk_bytes, policy);
	err = init_sync(core, error);
	if (err)
		goto fail_free;
	core->channel_table_size = caps.max_channels;
	core->channel_table = calloc(caps.max_channels ? caps.max_channels : 1,
	                             sizeof(*core->channel_table));
	if (!core->channel_table) {
		err = vgpu_error_set(error, -ENOMEM, "out of memory for the table of %u channels",
		                     caps.max_channels);
		goto fail_locks;
	}
	err = vgpu_dma_init(&core->dma, hal, &caps);
	if (err) {
		vgpu_error_set(error, err,
		               "cannot create the core's private DMA address space (%s); the GPU "
		               "has no address space left",
		               strerror(-err));
		goto fail_table;
	}
	vgpu_hal_set_event_handler(hal, vgpu_core_handle_event, core);
	if (config->return_interval_ms) {
		err = vgpu_return_thread_start(core);
		if (err) {
			vgpu_error_set(error, err, "cannot start the return thread: %s",
			               strerror(-err));
			goto fail_dma;
		}
	}
	if (config->gpu_accounting) {
		err = vgpu_accounting_start(core);
		if (err) {
			vgpu_error_set(error, err,
			               "cannot start the GPU-time accounting thread: %s",
			               strerror(-err));
			goto fail_return;
		}
	}
	vgpu_core_lock(core);
	vgpu_core_unlock(core); /* the first statistics */
	*out = core;
	return 0;

fail_return:
	vgpu_return_thread_stop(core);
fail_dma:
	vgpu_hal_set_event_handler(hal, NULL, NULL);
	vgpu_dma_fini(&core->dma);
fail_table:
	free(core->channel_table);
fail_locks:
	fini_sync(core);
fail_free:
	free(core);
	return err;
}

void vgpu_core_destroy(struct vgpu_core *core)
{
	if (!core)
		return;
	vgpu_accounting_stop(core);
	vgpu_return_thread_stop(core);
	while (!list_empty(&core->vms))
		vgpu_core_vm_destroy(list_entry(core->vms.next, struct vgpu_vm, link));
	vgpu_release_abandoned_copies(core); /* else the engine may still write them: kept */
	vgpu_host_cache_fini(&core->host_cache);
	vgpu_hal_set_event_handler(core->hal, NULL, NULL);
	vgpu_dma_fini(&core->dma);
	vgpu_victim_heap_fini(&core->victims);
	free(core->channel_table);
	fini_sync(core);
	free(core);
}
