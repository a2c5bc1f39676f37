/* SPDX-License-Identifier: MIT */
/*
 * workload.h - the applications of the runtime experiments (thesis §6.2),
 * and running one on a fresh simgpu under a memory manager.
 *
 * A workload is a set of buffers (with the priority hints the thesis's
 * profiling would give them: hot buffers high, the rarely touched "stack"
 * buffer every Rodinia program has lowest) and the kernels of one
 * iteration. A run:
 *
 *   1. creates a simgpu whose allocatable VRAM is exactly the available
 *      memory under test (the thesis's memory limit, §6.1) and a VM with
 *      one channel (vgpu-sim's guest, sim/guest.h);
 *   2. allocation phase: allocates the buffers in order and fills each
 *      with the GPU (the program's input upload);
 *   3. computation phase: runs the iterations, each kernel waited for;
 *   4. checksums every buffer on the GPU, so runs under different managers
 *      can be compared byte for byte.
 *
 * Its runtime is the modeled time the VM's address space kept the GPU's
 * engines busy during phase 3 (kernels, and for whole-buffer swapping the
 * copies it makes before kernels), excluding allocations as the thesis
 * does (§6.2).
 *
 * Memory managers: GPUswap (the core, vgpu/core.h, with a policy and chunk
 * size), or whole-buffer swapping (whole_buffer_swap.h), the Gdev-style
 * baseline.
 */
#ifndef VGPU_REPORT_WORKLOAD_H
#define VGPU_REPORT_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/core_stats.h"

#define WORKLOAD_BUFFERS_MAX 6
#define WORKLOAD_KERNELS_MAX 6

enum workload_kernel_kind { KERNEL_STREAM, KERNEL_STENCIL, KERNEL_GUPS, KERNEL_COPY };

struct workload_buffer {
	const char *name;
	uint64_t bytes;
	unsigned priority; /* hint, 0..15 */
};

struct workload_kernel {
	enum workload_kernel_kind kind;
	unsigned buffer, out; /* indexes into buffers; out: stencil and copy (its dst) */
	unsigned passes;      /* stream: passes; gups: updates per 8-byte word, in 1/4 */
};

struct workload {
	const char *name;
	const char *models; /* what it stands for */
	struct workload_buffer buffers[WORKLOAD_BUFFERS_MAX];
	unsigned buffer_count;
	struct workload_kernel kernels[WORKLOAD_KERNELS_MAX];
	unsigned kernel_count;
	unsigned iterations;
};

uint64_t workload_bytes(const struct workload *workload);

/* The workloads of the report; quick: smaller working sets, fewer iterations. */
unsigned workload_count(void);
const struct workload *workload_get(unsigned index, bool quick);

enum memory_manager {
	MANAGER_GPUSWAP,      /* the core, with policy and chunk */
	MANAGER_WHOLE_BUFFER, /* Gdev-style whole-buffer swapping */
};

struct run_config {
	enum memory_manager manager;
	uint64_t vram;        /* allocatable VRAM: the available memory */
	const char *policy;   /* GPUswap: "random", "priority", "refbits" */
	uint64_t seed;        /* GPUswap: the policy's random choices */
	uint64_t chunk;       /* GPUswap: chunk size */
	uint64_t other_bytes; /* GPUswap: a second VM ("dummy", thesis §6.3.2) that
	                         allocates this much in 4 MiB buffers first; 0 = none */
};

struct run_result {
	bool completed;
	char why[192];           /* why not */
	uint64_t runtime_ns;     /* modeled, computation phase */
	uint64_t checksum;       /* over every buffer's final contents */
	uint64_t evicted_bytes;  /* GPUswap: resident → host, allocation phase */
	uint64_t swapped_bytes;  /* whole buffer: copied in + out, computation phase */
	uint64_t host_resident;  /* GPUswap: bytes left in host memory */
	struct vgpu_core_time eviction;     /* GPUswap: allocation phase, wall-clock */
	uint64_t eviction_copy_modeled_ns;  /* GPUswap: copy engine, allocation phase */
};

/* The pushbuffer words of kernel k of an iteration, with the buffers at
 * va[]; returns the word count. */
uint32_t workload_kernel_words(const struct workload *workload, const struct workload_kernel *k,
                               const uint64_t *va, unsigned iteration, uint32_t *words);

/* Run a workload once (see above). 0, or a negative errno when the GPU
 * could not be set up at all (a run that fails is a result, not an error). */
int workload_run(const struct workload *workload, const struct run_config *config,
                 struct run_result *result);

#endif /* VGPU_REPORT_WORKLOAD_H */
