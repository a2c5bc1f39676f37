// SPDX-License-Identifier: MIT
/* workload.c - the runtime experiments' applications, see workload.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"
#include "report.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "whole_buffer_swap.h"
#include "workload.h"

#define KERNEL_TIMEOUT_MS 300000
#define STENCIL_WIDTH 1024u /* 4-byte cells: one 4 KiB row */
#define GPU_RESERVED (8 * MiB)

/*
 * Working sets of 32 to 56 MiB: every run from the full working set down
 * to 20 MiB of VRAM takes well under a second of this host's time. Each
 * has a "stack" buffer of 8 MiB that its kernels never touch, as the
 * thesis found for every Rodinia program (§6.2: the priority policy
 * evicted it first, without slowdown).
 */
static const struct workload workloads[] = {
	{
		.name = "stream",
		.models = "STREAM over three arrays: every byte read and written each iteration",
		.buffers = { { "a", 16 * MiB, 12 }, { "b", 16 * MiB, 12 }, { "c", 16 * MiB, 12 },
		             { "stack", 8 * MiB, 0 } },
		.buffer_count = 4,
		.kernels = { { KERNEL_STREAM, 0, 0, 1 }, { KERNEL_STREAM, 1, 0, 1 },
		             { KERNEL_STREAM, 2, 0, 1 } },
		.kernel_count = 3,
		.iterations = 4,
	},
	{
		.name = "stencil",
		.models = "hotspot / srad: a 5-point stencil ping-ponging between two grids",
		.buffers = { { "grid", 16 * MiB, 12 }, { "next", 16 * MiB, 12 },
		             { "stack", 8 * MiB, 0 } },
		.buffer_count = 3,
		.kernels = { { KERNEL_STENCIL, 0, 1, 1 }, { KERNEL_STENCIL, 1, 0, 1 } },
		.kernel_count = 2,
		.iterations = 4,
	},
	{
		.name = "gups",
		.models = "bfs-like random access: one update per 8-byte word per iteration",
		.buffers = { { "table", 24 * MiB, 12 }, { "stack", 8 * MiB, 0 } },
		.buffer_count = 2,
		.kernels = { { KERNEL_GUPS, 0, 0, 4 } },
		.kernel_count = 1,
		.iterations = 4,
	},
	{
		.name = "backprop",
		.models = "backprop: weights swept every layer, inputs once, deltas scattered",
		.buffers = { { "input", 16 * MiB, 4 }, { "weights", 8 * MiB, 14 },
		             { "deltas", 8 * MiB, 10 }, { "stack", 8 * MiB, 0 } },
		.buffer_count = 4,
		.kernels = { { KERNEL_STREAM, 0, 0, 1 }, { KERNEL_STREAM, 1, 0, 4 },
		             { KERNEL_GUPS, 2, 0, 2 } },
		.kernel_count = 3,
		.iterations = 4,
	},
};

#define WORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

unsigned workload_count(void)
{
	return WORKLOADS;
}

const struct workload *workload_get(unsigned index, bool quick)
{
	static struct workload quick_workloads[WORKLOADS];

	if (index >= WORKLOADS)
		return NULL;
	if (!quick)
		return &workloads[index];
	/* The same buffers (so 20 MiB still squeezes every one), one iteration. */
	quick_workloads[index] = workloads[index];
	quick_workloads[index].iterations = 1;
	return &quick_workloads[index];
}

uint64_t workload_bytes(const struct workload *workload)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < workload->buffer_count; i++)
		sum += workload->buffers[i].bytes;
	return sum;
}

/* ---- one run ----------------------------------------------------------------- */

struct run {
	const struct workload *workload;
	const struct run_config *config;
	struct run_result *result;
	struct vgpu_hal *hal;
	struct vgpu_core *core;
	struct vgpu_vm *vm, *other;
	struct sim_guest *guest;
	struct whole_buffer_swap *swap;
	struct vgpu_buffer_info core_buffers[WORKLOAD_BUFFERS_MAX];
	unsigned swap_index[WORKLOAD_BUFFERS_MAX];
	uint64_t va[WORKLOAD_BUFFERS_MAX];
};

static bool failed(struct run *run, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

static bool failed(struct run *run, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(run->result->why, sizeof(run->result->why), format, args);
	va_end(args);
	run->result->completed = false;
	return false;
}

static bool gpu(struct run *run, const uint32_t *words, uint32_t count)
{
	int err = sim_guest_run(run->guest, words, count, KERNEL_TIMEOUT_MS);

	if (err)
		return failed(run, "GPU work failed: %s",
		              err == -EIO ? sim_guest_error(run->guest) : strerror(-err));
	return true;
}

static uint64_t busy_ns(struct run *run)
{
	struct vgpu_hal_as_counters counters;

	vgpu_hal_as_counters(vgpu_core_vm_address_space(run->vm), &counters);
	return counters.busy_ns[VGPU_ENGINE_COMPUTE] + counters.busy_ns[VGPU_ENGINE_COPY];
}

/* Whole-buffer swapping: the kernel's buffers in VRAM first. */
static bool prepare(struct run *run, const unsigned *buffers, unsigned count)
{
	unsigned indexes[2];
	int err;

	if (run->config->manager != MANAGER_WHOLE_BUFFER)
		return true;
	for (unsigned i = 0; i < count; i++)
		indexes[i] = run->swap_index[buffers[i]];
	err = whole_buffer_swap_prepare(run->swap, indexes, count);
	if (err)
		return failed(run, "%s", whole_buffer_swap_error(run->swap));
	return true;
}

static bool allocate(struct run *run, unsigned index)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const struct workload_buffer *buffer = &run->workload->buffers[index];
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err;

	if (run->config->manager == MANAGER_GPUSWAP) {
		err = vgpu_core_alloc(run->vm, buffer->bytes, buffer->priority, 0,
		                      &run->core_buffers[index], &error);
		if (err)
			return failed(run, "allocating '%s': %s", buffer->name,
			              vgpu_error_msg(&error));
		run->va[index] = run->core_buffers[index].gpu_va;
	} else {
		err = whole_buffer_swap_alloc(run->swap, buffer->bytes, &run->swap_index[index],
		                              &run->va[index]);
		if (err)
			return failed(run, "allocating '%s': %s", buffer->name,
			              whole_buffer_swap_error(run->swap));
	}
	/* The program's input upload. */
	return prepare(run, &index, 1) &&
	       gpu(run, words, vgpu_push_launch_fill(words, run->va[index], buffer->bytes,
	                                             0x5eed0000u + index));
}

uint32_t workload_kernel_words(const struct workload *workload, const struct workload_kernel *k,
                               const uint64_t *va, unsigned iteration, uint32_t *words)
{
	uint64_t bytes = workload->buffers[k->buffer].bytes;

	switch (k->kind) {
	case KERNEL_STREAM:
		return vgpu_push_launch_stream(words, va[k->buffer], bytes, k->passes);
	case KERNEL_COPY:
		return vgpu_push_launch_copy(words, va[k->out], va[k->buffer], bytes);
	case KERNEL_STENCIL:
		return vgpu_push_launch_stencil(words, va[k->buffer], va[k->out], STENCIL_WIDTH,
		                                (uint32_t)(bytes / (4 * STENCIL_WIDTH)));
	default:
		return vgpu_push_launch_random_access(words, va[k->buffer], bytes,
		                                      bytes / 8 * k->passes / 4,
		                                      0x9005u + iteration);
	}
}

static bool kernel(struct run *run, const struct workload_kernel *k, unsigned iteration)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	unsigned used[2] = { k->buffer, k->out };

	if (!prepare(run, used, k->kind == KERNEL_STENCIL || k->kind == KERNEL_COPY ? 2 : 1))
		return false;
	return gpu(run, words, workload_kernel_words(run->workload, k, run->va, iteration, words));
}

static bool checksums(struct run *run)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t hash = 0xcbf29ce484222325ull;

	for (unsigned i = 0; i < run->workload->buffer_count; i++) {
		if (!prepare(run, &i, 1) ||
		    !gpu(run, words,
		         vgpu_push_launch_checksum(words, run->va[i], run->workload->buffers[i].bytes,
		                                   sim_guest_scratch_va(run->guest))))
			return false;
		hash = (hash ^ sim_guest_read_scratch(run->guest)) * 0x100000001b3ull;
	}
	run->result->checksum = hash;
	return true;
}

static int setup(struct run *run)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const struct run_config *config = run->config;
	struct simgpu_config gpu_config;
	struct vgpu_core_config core_config;
	struct vgpu_vm_config vm_config;
	int err;

	simgpu_config_defaults(&gpu_config);
	gpu_config.vram_bytes = config->vram + GPU_RESERVED;
	gpu_config.reserved_vram_bytes = GPU_RESERVED;
	gpu_config.reference_bits = config->policy && !strcmp(config->policy, "refbits");
	gpu_config.pfifo_idle_sleep_max_us = 200;
	err = simgpu_create(&gpu_config, &run->hal);
	if (err) {
		fprintf(stderr, "vgpu-report: simgpu with %llu MiB: %s\n",
		        (unsigned long long)(config->vram >> 20), strerror(-err));
		return err;
	}
	vgpu_core_config_defaults(&core_config);
	if (config->manager == MANAGER_GPUSWAP) {
		core_config.policy = config->policy;
		core_config.seed = config->seed;
		core_config.chunk_bytes = config->chunk;
	}
	core_config.return_interval_ms = 0;
	core_config.on_fence = sim_guest_on_fence;
	core_config.on_channel_error = sim_guest_on_channel_error;
	err = vgpu_core_create(run->hal, &core_config, &run->core, &error);
	if (err) {
		fprintf(stderr, "vgpu-report: core: %s\n", vgpu_error_msg(&error));
		return err;
	}
	vgpu_vm_config_defaults(&vm_config);
	vm_config.name = "dummy";
	if (config->other_bytes && !vgpu_core_vm_create(run->core, &vm_config, &run->other,
	                                                &error)) {
		for (uint64_t done = 0; done < config->other_bytes; done += 4 * MiB) {
			struct vgpu_buffer_info buffer;

			err = vgpu_core_alloc(run->other, 4 * MiB, VGPU_PRIORITY_DEFAULT, 0,
			                      &buffer, &error);
			if (err) {
				fprintf(stderr, "vgpu-report: dummy VM: %s\n",
				        vgpu_error_msg(&error));
				return err;
			}
		}
	}
	vm_config.name = run->workload->name;
	err = vgpu_core_vm_create(run->core, &vm_config, &run->vm, &error);
	if (!err)
		err = sim_guest_create(run->hal, run->vm, &run->guest);
	if (!err && config->manager == MANAGER_WHOLE_BUFFER)
		err = whole_buffer_swap_create(run->hal, run->vm, run->guest, &run->swap);
	if (err)
		fprintf(stderr, "vgpu-report: VM: %s\n", vgpu_error_msg(&error));
	return err;
}

static void teardown(struct run *run)
{
	whole_buffer_swap_destroy(run->swap);
	if (run->guest)
		sim_guest_destroy(run->guest, false);
	vgpu_core_destroy(run->core); /* destroys the VM */
	if (run->hal)
		vgpu_hal_destroy(run->hal);
}

int workload_run(const struct workload *workload, const struct run_config *config,
                 struct run_result *result)
{
	struct run run = { .workload = workload, .config = config, .result = result };
	struct vgpu_core_stats stats;
	struct vgpu_vm_stats vm_stats;
	uint64_t start;
	bool ok = true;
	int err;

	memset(result, 0, sizeof(*result));
	result->completed = true;
	err = setup(&run);
	if (err) {
		teardown(&run);
		return err;
	}
	for (unsigned i = 0; ok && i < workload->buffer_count; i++)
		ok = allocate(&run, i);
	if (ok && config->manager == MANAGER_GPUSWAP) {
		vgpu_core_stats(run.core, &stats);
		result->evicted_bytes = stats.bytes_evicted + stats.bytes_placed_on_host;
		result->eviction = stats.eviction;
		result->eviction_copy_modeled_ns = vgpu_hal_engine_modeled_ns(run.hal,
		                                                              VGPU_ENGINE_COPY);
	}
	start = busy_ns(&run);
	if (ok && run.swap)
		result->swapped_bytes = whole_buffer_swap_copied(run.swap);
	for (unsigned it = 0; ok && it < workload->iterations; it++)
		for (unsigned k = 0; ok && k < workload->kernel_count; k++)
			ok = kernel(&run, &workload->kernels[k], it);
	if (ok) {
		result->runtime_ns = busy_ns(&run) - start;
		if (run.swap)
			result->swapped_bytes = whole_buffer_swap_copied(run.swap) - result->swapped_bytes;
		ok = checksums(&run);
	}
	if (ok && config->manager == MANAGER_GPUSWAP) {
		vgpu_core_vm_stats(run.vm, &vm_stats);
		result->host_resident = vm_stats.evicted_bytes;
	}
	teardown(&run);
	return 0;
}
