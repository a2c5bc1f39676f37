/* SPDX-License-Identifier: MIT */
/*
 * scenario.h - vgpu-sim's scenario language, parsed into steps.
 *
 *   # comment
 *   gpu vram=<size> chunk=<size> policy=random|priority|refbits seed=<n>
 *       [host_mem=<size>] [return_interval=<ms>]
 *       [sharing=time-sliced|spatial] [walkers=shared|static|dws|dws++]
 *       [memsched=frfcfs|rr|prio|its|weis]
 *       (sharing=spatial: the VMs run side by side on their own SMs, their
 *       kernels timed by simgpu's contention model, vgpu/simgpu.h)
 *   vm <name> [weight=<n>] [cap=<size>] [chunk=<size>]
 *   alloc <vm> <buffer> <size> [prio=<0..15>] [nofill]
 *   free <vm> <buffer>
 *   run <vm> <kernel> <buffer>[,<buffer>...] [passes=<n>]
 *       kernel: stream | stencil | gups | checksum
 *   tick <ms>
 *   verify <vm>|all
 *   expect <vm> resident|evicted|allocated|fair_share <op> <size>|<vm>
 *   expect <vm> kernels|walks|walks_waited_max <op> <n>|<vm>
 *       (sharing=spatial: kernels modeled, page walks, most walks of other
 *       VMs one walk waited for; vgpu_hal_as_contention)
 *       op: = <= >= ~   (~: within one chunk of the VM)
 *   expect <vm>:<buffer> resident|evicted|allocated <op> <size>
 *       (extension: one buffer's chunks)
 *   weight <vm> <n>            (extension: vgpu_core_set_weight)
 *   prio <vm> <buffer> <n>     (extension: vgpu_core_set_priority)
 *   destroy <vm>               (extension: vgpu_core_vm_destroy)
 *
 * Sizes are bytes with an optional binary suffix K, M, G (or KiB, MiB,
 * GiB). vram is what the GPU has for allocations (simgpu's own reservation
 * comes on top). The parser checks names (a VM must be declared before use,
 * a buffer allocated before it is freed or run) so a scenario fails with a
 * line number before anything runs.
 */
#ifndef VGPU_SIM_SCENARIO_H
#define VGPU_SIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vgpu/simgpu.h"
#include "vgpu/util.h" /* vgpu_format_size */

#define SIM_NAME_MAX 48
#define SIM_RUN_BUFFERS_MAX 8

enum sim_step_kind {
	STEP_VM,
	STEP_ALLOC,
	STEP_FREE,
	STEP_RUN,
	STEP_TICK,
	STEP_VERIFY,
	STEP_EXPECT,
	STEP_WEIGHT,
	STEP_PRIO,
	STEP_DESTROY,
};

enum sim_kernel { KERNEL_STREAM, KERNEL_STENCIL, KERNEL_GUPS, KERNEL_CHECKSUM };
enum sim_quantity {
	QUANTITY_RESIDENT, QUANTITY_EVICTED, QUANTITY_ALLOCATED, QUANTITY_FAIR_SHARE,
	QUANTITY_KERNELS, QUANTITY_WALKS, QUANTITY_WALKS_WAITED_MAX,
};
#define SIM_QUANTITIES 7
extern const char *const sim_quantity_names[SIM_QUANTITIES];
enum sim_compare { COMPARE_EQUAL, COMPARE_AT_MOST, COMPARE_AT_LEAST, COMPARE_WITHIN_CHUNK };

struct sim_step {
	enum sim_step_kind kind;
	unsigned line;
	char vm[SIM_NAME_MAX];
	char buffers[SIM_RUN_BUFFERS_MAX][SIM_NAME_MAX]; /* alloc/free/prio: [0] */
	unsigned buffer_count;
	uint64_t size;     /* alloc: bytes; expect: value; tick: ms; weight, prio: value */
	unsigned priority; /* alloc */
	bool fill;         /* alloc */
	unsigned passes;   /* run */
	uint32_t weight;   /* vm */
	uint64_t cap;      /* vm */
	uint64_t chunk;    /* vm */
	enum sim_kernel kernel;
	enum sim_quantity quantity;
	enum sim_compare compare;
	char other_vm[SIM_NAME_MAX]; /* expect against another VM's quantity */
	bool of_buffer;              /* expect about buffers[0] of vm */
	bool all;                    /* verify all */
};

struct sim_gpu_config {
	uint64_t vram;
	uint64_t chunk;
	char policy[16];
	uint64_t seed;
	uint64_t host_mem;          /* 0 = no limit */
	uint32_t return_interval_ms;
	enum simgpu_sharing sharing;
	enum simgpu_walkers walkers;
	enum simgpu_memsched memsched;
	unsigned line;
};

struct sim_scenario {
	char *path;
	struct sim_gpu_config gpu;
	struct sim_step *steps;
	size_t step_count, step_capacity;
};

/* Parse a file. On a syntax error returns -EINVAL and writes
 * "path:line: what is wrong" into error. */
int sim_scenario_load(const char *path, struct sim_scenario *out, char *error, size_t error_len);
void sim_scenario_free(struct sim_scenario *scenario);

#endif /* VGPU_SIM_SCENARIO_H */
