// SPDX-License-Identifier: MIT
/*
 * test_core_property.c - random sequences of operations against a model.
 *
 * 2-8 VMs with random weights, caps and chunk sizes (not all multiples of
 * 64 KiB), a random policy and sometimes a host budget; operations: alloc
 * (sizes that are not multiples of the chunk size, random priority), free,
 * run (a STREAM kernel on the VM's channel), fill (the FILL kernel), tick
 * (a return pass), verify (byte-exact, through the aperture), set_priority,
 * set_weight, and VM destroy/re-create. Buffer contents are a function of a
 * fill seed and the number of STREAM passes run since, so the expected bytes
 * are computed, not stored. After every operation the core's invariants are
 * checked and its counters compared with the model; failures and -EDQUOT
 * must match the model's cap arithmetic exactly.
 *
 * With --hal-2m the GPU is the test double of a GPU with 2 MiB VRAM pages
 * only (hal_2m_shim.h): chunk sizes are then multiples of 2 MiB, sizes
 * round to 2 MiB, and the double must never have refused a page size.
 *
 * VGPU_SEED selects the seed (printed at the start and on failure);
 * VGPU_PROPERTY_OPS the number of operations (default 10000, 3000 with
 * --hal-2m).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_harness.h"
#include "guest_double.h"
#include "hal_2m_shim.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define MAX_VMS 8
#define MAX_BUFFERS 48

/* What depends on the GPU's page sizes. */
struct variant {
	const char *name;
	bool hal_2m;
	uint64_t core_chunks[3];   /* the core's chunk size: one of these */
	size_t core_chunk_count;
	uint64_t vm_chunks[6];     /* a VM's: one of these (0 = the core's) */
	size_t vm_chunk_count;
	uint64_t alloc_unit;       /* sizes are drawn around this for core-sized VMs */
	uint64_t default_ops;
	const char *gpu;           /* a real GPU (--gpu), NULL = simgpu */
};

static const struct variant simgpu_variant = {
	.name = "core-property",
	.core_chunks = { 64 * KiB, 256 * KiB, 1 * MiB },
	.core_chunk_count = 3,
	.vm_chunks = { 0, 64 * KiB, 68 * KiB, 128 * KiB, 256 * KiB, 1 * MiB },
	.vm_chunk_count = 6,
	.alloc_unit = MiB,
	.default_ops = 10000,
};

static const struct variant hal_2m_variant = {
	.name = "core-property-2m",
	.hal_2m = true,
	.core_chunks = { 2 * MiB, 4 * MiB },
	.core_chunk_count = 2,
	.vm_chunks = { 0, 2 * MiB, 4 * MiB, 6 * MiB },
	.vm_chunk_count = 4,
	.alloc_unit = 4 * MiB,
	.default_ops = 3000,
};

/* On a real GPU (--gpu cuda[:N]): its 2 MiB pages, a 64 MiB VRAM budget. */
static struct variant gpu_variant = {
	.name = "core-property-gpu",
	.core_chunks = { 2 * MiB, 4 * MiB },
	.core_chunk_count = 2,
	.vm_chunks = { 0, 2 * MiB, 4 * MiB, 6 * MiB },
	.vm_chunk_count = 4,
	.alloc_unit = 4 * MiB,
	.default_ops = 3000,
};

static const struct variant *variant = &simgpu_variant;

struct model_buffer {
	bool live;
	struct vgpu_buffer_info info;
	uint64_t seed;
	unsigned passes;
};

struct model_vm {
	bool live;
	struct vgpu_vm *vm;
	char name[16];
	uint32_t weight;
	uint64_t cap, chunk;
	struct harness_guest guest;
	uint64_t allocated; /* what the model says it holds */
	struct model_buffer buffers[MAX_BUFFERS];
};

static struct core_harness h;
static struct model_vm vms[MAX_VMS];
static int vm_count;
static uint64_t rng_state, seed, step, ops;
static uint64_t host_budget;
static unsigned vm_generation;
static uint64_t counts[16];

static uint64_t next_random(void)
{
	return vgpu_xorshift64(&rng_state);
}

static uint64_t below(uint64_t bound)
{
	return bound ? next_random() % bound : 0;
}

#define check(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			char msg_[1024];                                                            \
			snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                 \
			fail_msg("property test failed at step %" PRIu64 " (VGPU_SEED=%" PRIu64 \
			         "): %s",                                                         \
			         step, seed, msg_);                                                \
		}                                                                                  \
	} while (0)

static void run_on_gpu(struct model_vm *m, const uint32_t *words, uint32_t count)
{
	harness_guest_run(&h, &m->guest, words, count);
}

static void verify_buffer(struct model_vm *m, struct model_buffer *b)
{
	enum { STEP = 128 * 1024 };
	static uint64_t words[STEP / 8];

	for (uint64_t offset = 0; offset < b->info.bytes; offset += STEP) {
		uint64_t n = b->info.bytes - offset < STEP ? b->info.bytes - offset : STEP;

		check(vgpu_core_vm_read(m->vm, b->info.gpu_va + offset, words, n, NULL) == 0,
		      "VM %s: buffer unreadable", m->name);
		for (uint64_t i = 0; i < n / 8; i++) {
			uint64_t expected = vgpu_fill_word(b->seed, offset + 8 * i);

			for (unsigned p = 0; p < b->passes; p++)
				expected = vgpu_stream_word(expected);
			check(le64toh(words[i]) == expected,
			      "VM %s: buffer at %#" PRIx64 " differs at offset %#" PRIx64
			      " (got %#" PRIx64 ", want %#" PRIx64 ")",
			      m->name, b->info.gpu_va, offset + 8 * i, le64toh(words[i]), expected);
		}
	}
}

static void fill_buffer(struct model_vm *m, struct model_buffer *b)
{
	uint32_t words[16];

	b->seed = next_random();
	b->passes = 0;
	run_on_gpu(m, words, vgpu_push_launch_fill(words, b->info.gpu_va, b->info.bytes, b->seed));
}

static void vm_create(int index)
{
	struct model_vm *m = &vms[index];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "vm%u", vm_generation++);
	m->weight = 1 + (uint32_t)below(4);
	m->cap = below(3) == 0 ? (8 + below(40)) * MiB : 0;
	m->chunk = variant->vm_chunks[below(variant->vm_chunk_count)];
	m->vm = harness_vm(&h, m->name, m->weight, m->cap, m->chunk);
	harness_guest_setup(&h, m->vm, &m->guest, 8, 0, seed);
	m->allocated = harness_stats(m->vm).allocated_bytes; /* the guest's log */
	m->live = true;
}

static void vm_destroy(int index)
{
	struct model_vm *m = &vms[index];
	char why[256];

	check(guest_submitter_view_errors(m->guest.submitter, why, sizeof(why)) == 0,
	      "VM %s: the guest saw: %s", m->name, why);
	guest_submitter_destroy(m->guest.submitter);
	m->guest.submitter = NULL;
	vgpu_core_vm_destroy(m->vm);
	harness_guest_after_vm_destroy(&m->guest);
	m->live = false;
}

static struct model_buffer *random_buffer(struct model_vm *m)
{
	int start = (int)below(MAX_BUFFERS);

	for (int i = 0; i < MAX_BUFFERS; i++) {
		struct model_buffer *b = &m->buffers[(start + i) % MAX_BUFFERS];

		if (b->live)
			return b;
	}
	return NULL;
}

static void op_alloc(struct model_vm *m)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	uint64_t chunk = m->chunk ? m->chunk : variant->alloc_unit;
	uint64_t bytes = 1 + below(3 * chunk + chunk / 2), rounded;
	unsigned priority = (unsigned)below(16);
	struct model_buffer *b = NULL;
	int err;

	if (below(8) == 0)
		bytes = 1 + below(6 * MiB); /* now and then a big one */
	rounded = (bytes + h.min_page - 1) / h.min_page * h.min_page;
	for (int i = 0; i < MAX_BUFFERS && !b; i++)
		if (!m->buffers[i].live)
			b = &m->buffers[i];
	if (!b)
		return;
	err = vgpu_core_alloc(m->vm, bytes, priority, 0, &b->info, &error);
	if (m->cap && m->allocated + rounded > m->cap) {
		check(err == -EDQUOT, "VM %s: alloc over the cap returned %d", m->name, err);
		counts[1]++;
		return;
	}
	if (err == -ENOMEM && host_budget) {
		counts[2]++;
		return; /* the host budget; the invariants show nothing changed */
	}
	check(err == 0, "VM %s: alloc of %" PRIu64 " failed: %d (%s)", m->name, bytes, err,
	      vgpu_error_msg(&error));
	check(b->info.bytes == rounded, "VM %s: buffer of %" PRIu64 " bytes is %" PRIu64, m->name,
	      bytes, b->info.bytes);
	b->live = true;
	m->allocated += rounded;
	fill_buffer(m, b);
	counts[0]++;
}

static void op_free(struct model_vm *m)
{
	struct model_buffer *b = random_buffer(m);

	if (!b)
		return;
	if (below(4) == 0)
		verify_buffer(m, b);
	check(vgpu_core_free(m->vm, b->info.handle, NULL) == 0, "VM %s: free failed", m->name);
	check(vgpu_core_free(m->vm, b->info.handle, NULL) == -ENOENT, "VM %s: double free accepted",
	      m->name);
	b->live = false;
	m->allocated -= b->info.bytes;
	counts[3]++;
}

static void op_run(struct model_vm *m)
{
	struct model_buffer *b = random_buffer(m);
	uint32_t words[16];
	unsigned passes = 1 + (unsigned)below(2);

	if (!b)
		return;
	run_on_gpu(m, words, vgpu_push_launch_stream(words, b->info.gpu_va, b->info.bytes, passes));
	b->passes += passes;
	counts[4]++;
}

static void op_checksum(struct model_vm *m)
{
	struct model_buffer *b = random_buffer(m);
	uint32_t words[16];
	uint64_t result = 0, expected;

	if (!b)
		return;
	run_on_gpu(m, words, vgpu_push_launch_checksum(words, b->info.gpu_va, b->info.bytes,
	                                               m->guest.semaphore_va + 64));
	check(vgpu_hal_as_read(vgpu_core_vm_address_space(m->vm), m->guest.semaphore_va + 64,
	                       &result, 8) == 0,
	      "checksum unreadable");
	expected = vgpu_kernel_reference_fill_stream_checksum(b->seed, b->info.bytes, b->passes);
	check(le64toh(result) == expected, "VM %s: GPU checksum of buffer %#" PRIx64 " differs",
	      m->name, b->info.gpu_va);
	counts[5]++;
}

static void check_model(void)
{
	struct vgpu_error why = VGPU_ERROR_INIT;
	uint64_t total = 0;

	if (vgpu_core_check_invariants(h.core, &why))
		check(false, "invariant broken: %s", vgpu_error_msg(&why));
	for (int i = 0; i < vm_count; i++) {
		struct vgpu_vm_stats stats;

		if (!vms[i].live)
			continue;
		vgpu_core_vm_stats(vms[i].vm, &stats);
		check(stats.allocated_bytes == vms[i].allocated,
		      "VM %s: core says %" PRIu64 " allocated, model %" PRIu64, vms[i].name,
		      stats.allocated_bytes, vms[i].allocated);
		check(stats.fair_share_bytes <= stats.allocated_bytes, "fair share above allocation");
		total += stats.allocated_bytes;
	}
	{
		struct vgpu_core_stats stats;

		vgpu_core_stats(h.core, &stats);
		check(stats.allocated_bytes == total, "core total differs from the VMs'");
		check(!host_budget || stats.host_used_bytes <= host_budget, "host budget exceeded");
	}
}

static void test_property(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const char *env = getenv("VGPU_PROPERTY_OPS");
	struct core_harness_config config = { 0 };
	static const char *const policies[] = { "random", "priority", "refbits" };
	uint64_t start = harness_now_ns();

	seed = harness_seed(variant->name);
	ops = env && *env ? strtoull(env, NULL, 0) : variant->default_ops;
	/* Scramble: xorshift's first outputs from small seeds are poorly mixed. */
	rng_state = vgpu_fill_word(seed, 0);
	if (!rng_state)
		rng_state = 1;
	config.vram_bytes = 64 * MiB;
	config.chunk_bytes = variant->core_chunks[below(variant->core_chunk_count)];
	config.hal_2m = variant->hal_2m;
	config.gpu = variant->gpu;
	/* refbits needs reference bits, which only simgpu can give. */
	config.policy = policies[below(variant->gpu ? 2 : 3)];
	config.reference_bits = !strcmp(config.policy, "refbits");
	config.seed = seed;
	host_budget = below(2) ? (24 + below(40)) * MiB : 0;
	config.host_budget_bytes = host_budget;
	core_harness_setup(&h, &config);
	vm_count = 2 + (int)below(MAX_VMS - 1);
	fprintf(stderr, "%s: %" PRIu64 " ops, %d VMs, policy %s, chunk %" PRIu64
	        " KiB, host budget %" PRIu64 " MiB\n",
	        variant->name, ops, vm_count, config.policy, config.chunk_bytes >> 10, host_budget >> 20);
	for (int i = 0; i < vm_count; i++)
		vm_create(i);
	check_model();

	for (step = 0; step < ops; step++) {
		struct model_vm *m = &vms[below(vm_count)];
		uint64_t op = below(100);

		if (op < 30) {
			op_alloc(m);
		} else if (op < 55) {
			op_free(m);
		} else if (op < 70) {
			op_run(m);
		} else if (op < 75) {
			op_checksum(m);
		} else if (op < 85) {
			check(vgpu_core_return_pass(h.core, &error) >= 0, "return pass failed: %s",
			      vgpu_error_msg(&error));
			counts[6]++;
		} else if (op < 93) {
			struct model_buffer *b = random_buffer(m);

			if (b)
				verify_buffer(m, b);
			counts[7]++;
		} else if (op < 96) {
			struct model_buffer *b = random_buffer(m);

			if (b)
				check(vgpu_core_set_priority(m->vm, b->info.handle,
				                             (unsigned)below(16), &error) == 0,
				      "set_priority failed");
		} else if (op < 99) {
			m->weight = 1 + (uint32_t)below(8);
			check(vgpu_core_set_weight(m->vm, m->weight, &error) == 0,
			      "set_weight failed");
		} else {
			int index = (int)(m - vms);

			for (int i = 0; i < MAX_BUFFERS; i++)
				if (m->buffers[i].live && below(2))
					verify_buffer(m, &m->buffers[i]);
			vm_destroy(index);
			check_model();
			vm_create(index);
			counts[8]++;
		}
		check_model();
		if (ops >= 100000 && step && step % (ops / 20) == 0)
			fprintf(stderr, "%s: %" PRIu64 " of %" PRIu64 " ops, %.0f s\n", variant->name,
			        step, ops, (harness_now_ns() - start) / 1e9);
	}
	for (int i = 0; i < vm_count; i++) {
		for (int j = 0; j < MAX_BUFFERS; j++)
			if (vms[i].buffers[j].live)
				verify_buffer(&vms[i], &vms[i].buffers[j]);
		vm_destroy(i);
	}
	check_model();
	{
		struct vgpu_core_stats stats;

		vgpu_core_stats(h.core, &stats);
		fprintf(stderr,
		        "%s: done in %.1f s: %" PRIu64 " allocs (%" PRIu64 " over cap, %"
		        PRIu64 " over host budget), %" PRIu64 " frees, %" PRIu64 " runs, %" PRIu64
		        " checksums, %" PRIu64 " return passes, %" PRIu64 " verifies, %" PRIu64
		        " VM re-creations; %" PRIu64 " chunks evicted, %" PRIu64
		        " placed on host, %" PRIu64 " returned\n",
		        variant->name, (harness_now_ns() - start) / 1e9, counts[0], counts[1], counts[2], counts[3],
		        counts[4], counts[5], counts[6], counts[7], counts[8], stats.chunks_evicted,
		        stats.chunks_placed_on_host, stats.chunks_returned);
		check(stats.vram_free_bytes == stats.vram_bytes, "VRAM leaked");
		check(stats.host_used_bytes == 0, "host memory leaked");
		if (variant->hal_2m) {
			struct hal_2m_shim_counters shim;

			hal_2m_shim_counters(h.hal, &shim);
			check(shim.refused == 0, "the core asked the 2 MiB GPU %" PRIu64 " times for "
			      "a page size or alignment it lacks", shim.refused);
			check(shim.vram_pages_mapped > 0, "no 2 MiB VRAM page was ever mapped");
			check(stats.chunks_evicted + stats.chunks_placed_on_host == 0 ||
			              shim.sysmem_2m_pages_mapped > 0,
			      "chunks went to the host without 2 MiB SYSMEM pages");
		}
	}
	core_harness_teardown(&h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_property) };

	if (argc == 2 && !strcmp(argv[1], "--hal-2m")) {
		variant = &hal_2m_variant;
	} else if (argc == 3 && !strcmp(argv[1], "--gpu")) {
		gpu_variant.gpu = argv[2];
		variant = &gpu_variant;
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--hal-2m | --gpu cuda[:N]]\n", argv[0]);
		return 2;
	}

	return cmocka_run_group_tests(tests, NULL, NULL);
}
