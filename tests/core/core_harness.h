/* SPDX-License-Identifier: MIT */
/*
 * core_harness.h - fixtures for the core's tests: a simgpu (or the 2 MiB
 * page double around it, hal_2m_shim.h), a core on it, VMs, and helpers
 * that write and check buffer contents through the GPU's aperture (so a
 * test sees what a guest kernel would see at the buffer's address,
 * wherever the core has put the chunks).
 */
#ifndef VGPU_TESTS_CORE_HARNESS_H
#define VGPU_TESTS_CORE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/core.h"
#include "vgpu/hal.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

struct core_harness_config {
	uint64_t vram_bytes;        /* simgpu VRAM (before its reservation) */
	uint64_t chunk_bytes;       /* 0 = the core's default (4 MiB) */
	const char *policy;         /* NULL = random */
	bool whole_buffers;         /* evict whole buffers (the baseline) */
	uint64_t seed;
	uint64_t host_budget_bytes;
	uint32_t return_interval_ms; /* 0 = no thread */
	uint32_t drain_timeout_ms;   /* 0 = the core's default */
	bool reference_bits;
	uint64_t copy_wall_bandwidth; /* simgpu's copy engine pacing (0: none) */
	/* Wrap the simgpu in the test double of a GPU with 2 MiB VRAM pages
	 * only (hal_2m_shim.h); misaligned_iovas is its option. */
	bool hal_2m;
	/* A real GPU instead of simgpu: "cuda" or "cuda:N" (vgpu/hal_open.h),
	 * with vram_bytes as its VRAM budget. When the machine has no usable
	 * GPU the setup prints why and exits 77 (meson's "skipped"). */
	const char *gpu;
	bool misaligned_iovas;
	/* GPU time: simgpu's paced mode and timeslice (0: default), and the
	 * core's accounting thread. */
	bool paced;
	uint32_t timeslice_ns;
	bool gpu_accounting;
	uint32_t accounting_mode; /* enum vgpu_accounting_mode (0: LoGA) */
	bool accounting_always_poll;
};

struct core_harness {
	struct vgpu_hal *hal; /* the simgpu, or the 2 MiB shim around it */
	struct vgpu_hal_caps caps;
	uint64_t min_page;    /* the smallest VRAM page: 4 KiB, or 2 MiB */
	struct vgpu_core *core;
	uint64_t fence_events;  /* atomic */
	uint64_t error_events;  /* atomic */
};

/* Set up; fails the test (cmocka) on error. */
void core_harness_setup(struct core_harness *harness, const struct core_harness_config *config);
void core_harness_teardown(struct core_harness *harness);

struct vgpu_vm *harness_vm(struct core_harness *harness, const char *name, uint32_t weight,
                           uint64_t cap, uint64_t chunk);

/* Fill a buffer with a pattern derived from seed / check it. */
void harness_fill(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer, uint64_t seed);
bool harness_check(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer, uint64_t seed);
/* count buffers of bytes at priority, buffer i filled with seed + i, the
 * invariants checked after each; asserts each allocation succeeds. */
void harness_alloc_filled(struct core_harness *harness, struct vgpu_vm *vm,
                          struct vgpu_buffer_info *buffers, int count, uint64_t bytes,
                          unsigned priority, uint64_t seed);
/* Fails the test unless buffer i still holds the pattern of seed + i. */
void harness_check_all(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffers, int count,
                       uint64_t seed);
void harness_pattern(uint8_t *out, uint64_t offset, uint64_t bytes, uint64_t seed);

/* vgpu_core_check_invariants, failing the test with the reason. */
void harness_assert_invariants(struct core_harness *harness);

/* Count a buffer's chunks by location. */
void harness_chunk_counts(struct vgpu_vm *vm, uint64_t handle, int *resident, int *evicted);

struct vgpu_vm_stats harness_stats(struct vgpu_vm *vm);

uint64_t harness_now_ns(void);
void harness_sleep_ms(unsigned ms);
/* VGPU_SEED from the environment, or a random seed; printed. */
uint64_t harness_seed(const char *test);
/* A whole file (a module image) in a malloc'ed buffer; fails the test if it
 * cannot be read. */
char *harness_read_file(const char *path, size_t *bytes);

#endif /* VGPU_TESTS_CORE_HARNESS_H */

/* ---- a guest on a channel of a VM (tests/shadow guest double) ---------- */

struct guest_window_double;
struct guest_submitter;

struct harness_guest {
	struct core_harness *harness;
	struct vgpu_vm *vm;
	struct guest_window_double *window;
	struct vgpu_core_channel *channel;
	struct vgpu_hal_channel_info info;
	struct guest_submitter *submitter;
	struct vgpu_buffer_info data; /* the submitter's log: a core buffer */
	/* "Guest RAM": host memory mapped at a reserved VA (vgpu_core_reserve_va),
	 * holding the pushbuffers and a semaphore page. */
	struct vgpu_hal_host_buf *ram;
	uint64_t ram_va, ram_bytes, ram_iova;
	uint64_t semaphore_va;
	uint64_t sequence;
};

/* A channel of vm with a guest submitter. Its log is a core buffer of vm
 * (written only by the GPU, so it is evicted and returned like any other);
 * its pushbuffers live in guest RAM, which the CPU writes (as a real
 * guest's pushbuffers are in guest system memory). */
void harness_guest_setup(struct core_harness *harness, struct vgpu_vm *vm,
                         struct harness_guest *guest, uint32_t max_submissions,
                         uint32_t max_pause_us, uint64_t seed);
void harness_guest_teardown(struct harness_guest *guest);
/* The rest of the teardown after vgpu_core_vm_destroy took the channel. */
void harness_guest_after_vm_destroy(struct harness_guest *guest);
/* Submit raw words and wait (polling the aperture) until they ran: a
 * semaphore release to guest RAM is appended. */
void harness_guest_run(struct core_harness *harness, struct harness_guest *guest,
                       const uint32_t *words, uint32_t count);
