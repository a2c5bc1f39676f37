/* SPDX-License-Identifier: MIT */
/*
 * runner.h - executing a scenario: simgpu and the core in this process, one
 * channel per VM, contents written and checked through the GPU.
 *
 * Every step is followed by vgpu_core_check_invariants. An allocation the
 * core refuses (cap, host budget) is reported and the scenario goes on. A
 * failed verify or expect, a broken invariant, a GPU fault or a kernel whose
 * checksum differs makes the run fail (exit status 1).
 */
#ifndef VGPU_SIM_RUNNER_H
#define VGPU_SIM_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "contents.h"
#include "guest.h"
#include "scenario.h"
#include "vgpu/core.h"

enum sim_verify_state { VERIFY_NOT_RUN, VERIFY_OK, VERIFY_FAIL };

struct sim_buffer {
	char name[SIM_NAME_MAX];
	bool live;
	struct vgpu_buffer_info info;
	struct sim_contents contents;
};

struct sim_vm {
	char name[SIM_NAME_MAX];
	struct vgpu_vm *vm; /* NULL once destroyed */
	struct sim_guest *guest;
	struct vgpu_vm_stats final; /* stats when destroyed */
	uint64_t modeled_ns;        /* compute time of its address space */
	bool has_contention;        /* sharing=spatial: ... */
	struct vgpu_hal_as_contention contention; /* its shared-path figures */
	uint64_t chunk;
	enum sim_verify_state verify;
	uint64_t allocs_failed;
	uint64_t gpu_errors;
	struct sim_buffer *buffers;
	size_t buffer_count, buffer_capacity;
};

struct sim_run {
	const struct sim_scenario *scenario;
	FILE *log; /* step messages */
	bool verbose;
	struct vgpu_hal *hal;
	struct vgpu_core *core;
	struct sim_vm *vms;
	size_t vm_count;
	uint64_t time_ms, next_pass_ms;
	unsigned expects_passed, expects_failed;
	unsigned verifies_failed, kernels_failed;
	unsigned steps;
	char invariants[512]; /* empty: ok */
	uint64_t wall_ns;
};

/* 0 when the run completed (whatever its verdict), or a negative errno when
 * the GPU or core could not be set up (message printed). */
int sim_run(struct sim_run *run, const struct sim_scenario *scenario, FILE *log, bool verbose);
void sim_run_free(struct sim_run *run);
/* Whether every verify, expect, kernel and invariant check passed. */
bool sim_run_passed(const struct sim_run *run);

#endif /* VGPU_SIM_RUNNER_H */
