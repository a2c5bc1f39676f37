// SPDX-License-Identifier: MIT
/* core_harness.c - fixtures for the core's tests, see core_harness.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core_harness.h"
#include "hal_2m_shim.h"
#include "vgpu/hal_open.h"
#include "vgpu/simgpu.h"

static void on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	struct core_harness *harness = ctx;

	__atomic_fetch_add(&harness->fence_events, 1, __ATOMIC_RELAXED);
}

static void on_error(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	struct core_harness *harness = ctx;

	__atomic_fetch_add(&harness->error_events, 1, __ATOMIC_RELAXED);
}

void core_harness_setup(struct core_harness *harness, const struct core_harness_config *config)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct simgpu_config gpu;
	struct vgpu_core_config core;
	int err;

	memset(harness, 0, sizeof(*harness));
	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = config->vram_bytes ? config->vram_bytes : 64 * MiB;
	gpu.reserved_vram_bytes = 4 * MiB;
	gpu.reference_bits = config->reference_bits;
	gpu.copy_wall_bandwidth = config->copy_wall_bandwidth;
	gpu.pfifo_idle_sleep_max_us = 200;
	gpu.paced = config->paced;
	if (config->timeslice_ns)
		gpu.timeslice_ns = config->timeslice_ns;
	if (config->gpu && strcmp(config->gpu, "simgpu")) {
		struct vgpu_hal_spec spec;

		err = vgpu_hal_spec_parse(config->gpu, &spec, &error);
		if (!err)
			err = vgpu_hal_open(&spec, NULL, gpu.vram_bytes, &harness->hal, &error);
		if (err == -ENOENT || err == -ENODEV || err == -ENOTSUP) {
			printf("skipped: no usable GPU for '%s': %s\n", config->gpu,
			       vgpu_error_msg(&error));
			exit(77);
		}
		if (err)
			fail_msg("cannot open GPU %s: %s", config->gpu, vgpu_error_msg(&error));
	} else {
		err = simgpu_create(&gpu, &harness->hal);
		assert_int_equal(err, 0);
	}
	if (config->hal_2m) {
		struct hal_2m_shim_config shim = { .misaligned_iovas = config->misaligned_iovas };

		err = hal_2m_shim_create(harness->hal, &shim, &harness->hal);
		assert_int_equal(err, 0);
	}
	vgpu_hal_get_caps(harness->hal, &harness->caps);
	/* The smallest page size the GPU offers for every target. */
	harness->min_page = VGPU_PAGE_2M;
	if (harness->caps.page_size_mask & VGPU_HAL_PAGE_MASK_64K)
		harness->min_page = VGPU_PAGE_64K;
	if (harness->caps.page_size_mask & VGPU_HAL_PAGE_MASK_4K)
		harness->min_page = VGPU_PAGE_4K;

	vgpu_core_config_defaults(&core);
	if (config->chunk_bytes)
		core.chunk_bytes = config->chunk_bytes;
	if (config->policy)
		core.policy = config->policy;
	core.seed = config->seed ? config->seed : 1;
	core.whole_buffers = config->whole_buffers;
	core.host_budget_bytes = config->host_budget_bytes;
	core.return_interval_ms = config->return_interval_ms;
	if (config->drain_timeout_ms)
		core.drain_timeout_ms = config->drain_timeout_ms;
	core.gpu_accounting = config->gpu_accounting;
	core.accounting_mode = config->accounting_mode;
	core.accounting_always_poll = config->accounting_always_poll;
	core.on_fence = on_fence;
	core.on_channel_error = on_error;
	core.event_ctx = harness;
	err = vgpu_core_create(harness->hal, &core, &harness->core, &error);
	if (err)
		fail_msg("vgpu_core_create: %s", vgpu_error_msg(&error));
}

void core_harness_teardown(struct core_harness *harness)
{
	vgpu_core_destroy(harness->core);
	vgpu_hal_destroy(harness->hal);
}

struct vgpu_vm *harness_vm(struct core_harness *harness, const char *name, uint32_t weight,
                           uint64_t cap, uint64_t chunk)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_vm_config config;
	struct vgpu_vm *vm = NULL;

	vgpu_vm_config_defaults(&config);
	config.name = name;
	config.weight = weight;
	config.cap_bytes = cap;
	config.chunk_bytes = chunk;
	if (vgpu_core_vm_create(harness->core, &config, &vm, &error))
		fail_msg("vm %s: %s", name, vgpu_error_msg(&error));
	return vm;
}

void harness_pattern(uint8_t *out, uint64_t offset, uint64_t bytes, uint64_t seed)
{
	for (uint64_t i = 0; i < bytes; i++) {
		uint64_t x = (offset + i) * 0x9e3779b97f4a7c15ull + seed;

		out[i] = (uint8_t)((x >> 29) ^ (x >> 43));
	}
}

#define CHECK_STEP (256 * 1024)

void harness_fill(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer, uint64_t seed)
{
	uint8_t *data = malloc(CHECK_STEP);

	assert_non_null(data);
	for (uint64_t offset = 0; offset < buffer->bytes; offset += CHECK_STEP) {
		uint64_t n = buffer->bytes - offset < CHECK_STEP ? buffer->bytes - offset : CHECK_STEP;

		harness_pattern(data, offset, n, seed);
		assert_int_equal(vgpu_hal_as_write(vgpu_core_vm_address_space(vm),
		                                   buffer->gpu_va + offset, data, n),
		                 0);
	}
	free(data);
}

bool harness_check(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffer, uint64_t seed)
{
	uint8_t *expected = malloc(CHECK_STEP), *actual = malloc(CHECK_STEP);
	bool ok = true;

	assert_non_null(expected);
	assert_non_null(actual);
	for (uint64_t offset = 0; ok && offset < buffer->bytes; offset += CHECK_STEP) {
		uint64_t n = buffer->bytes - offset < CHECK_STEP ? buffer->bytes - offset : CHECK_STEP;

		harness_pattern(expected, offset, n, seed);
		/* under the allocation lock: a relocation may be in flight */
		if (vgpu_core_vm_read(vm, buffer->gpu_va + offset, actual, n, NULL) ||
		    memcmp(expected, actual, n))
			ok = false;
	}
	free(expected);
	free(actual);
	return ok;
}

void harness_alloc_filled(struct core_harness *harness, struct vgpu_vm *vm,
                          struct vgpu_buffer_info *buffers, int count, uint64_t bytes,
                          unsigned priority, uint64_t seed)
{
	for (int i = 0; i < count; i++) {
		assert_int_equal(vgpu_core_alloc(vm, bytes, priority, 0, &buffers[i], NULL), 0);
		harness_fill(vm, &buffers[i], seed + i);
		harness_assert_invariants(harness);
	}
}

void harness_check_all(struct vgpu_vm *vm, const struct vgpu_buffer_info *buffers, int count,
                       uint64_t seed)
{
	for (int i = 0; i < count; i++)
		if (!harness_check(vm, &buffers[i], seed + i))
			fail_msg("VM %s buffer %d: data differs after moves", vgpu_core_vm_name(vm), i);
}

void harness_assert_invariants(struct core_harness *harness)
{
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (vgpu_core_check_invariants(harness->core, &why))
		fail_msg("invariant broken: %s", vgpu_error_msg(&why));
}

void harness_chunk_counts(struct vgpu_vm *vm, uint64_t handle, int *resident, int *evicted)
{
	struct vgpu_chunk_info chunks[4096];
	int count = vgpu_core_buffer_chunks(vm, handle, chunks, 4096, NULL);

	assert_true(count >= 0 && count <= 4096);
	*resident = *evicted = 0;
	for (int i = 0; i < count; i++) {
		if (chunks[i].location == VGPU_CHUNK_RESIDENT)
			(*resident)++;
		else
			(*evicted)++;
	}
}

struct vgpu_vm_stats harness_stats(struct vgpu_vm *vm)
{
	struct vgpu_vm_stats stats;

	vgpu_core_vm_stats(vm, &stats);
	return stats;
}

uint64_t harness_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

void harness_sleep_ms(unsigned ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

uint64_t harness_seed(const char *test)
{
	const char *env = getenv("VGPU_SEED");
	uint64_t seed;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		seed = ((uint64_t)now.tv_sec * 1000000007ull) ^ (uint64_t)now.tv_nsec;
	}
	fprintf(stderr, "%s: VGPU_SEED=%llu\n", test, (unsigned long long)seed);
	return seed;
}

/* ---- guest ---------------------------------------------------------------- */

#include "guest_double.h"
#include "vgpu/abi/commands.h"

void harness_guest_setup(struct core_harness *harness, struct vgpu_vm *vm,
                         struct harness_guest *guest, uint32_t max_submissions,
                         uint32_t max_pause_us, uint64_t seed)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_hal_as *as = vgpu_core_vm_address_space(vm);
	struct guest_submitter_config config;
	uint64_t count, *pages, zero = 0;
	int err;

	memset(guest, 0, sizeof(*guest));
	guest->harness = harness;
	guest->vm = vm;
	guest->window = guest_window_double_create(harness->caps.max_channels, VGPU_CONTROL_BYTES,
	                                           harness->caps.gpfifo_entries_max *
	                                                   VGPU_GPFIFO_ENTRY_BYTES);
	assert_non_null(guest->window);
	err = vgpu_core_channel_create(vm, 0, guest_window_double_ops(), guest->window,
	                               &guest->channel, &guest->info, &error);
	if (err)
		fail_msg("channel: %s", vgpu_error_msg(&error));
	assert_int_equal(guest_window_double_attach(guest->window, &guest->info), 0);
	err = vgpu_core_alloc(vm, guest_submitter_data_bytes(max_submissions),
	                      VGPU_PRIORITY_DEFAULT, 0, &guest->data, &error);
	if (err)
		fail_msg("guest log: %s", vgpu_error_msg(&error));

	/* Guest RAM: pushbuffers, then one page of semaphores. */
	guest->ram_bytes = (guest_submitter_pushbuffer_bytes(max_submissions) + 65535) & ~65535ull;
	guest->semaphore_va = guest->ram_bytes;
	guest->ram_bytes += 65536;
	assert_int_equal(vgpu_core_reserve_va(vm, guest->ram_bytes, &guest->ram_va, &error), 0);
	guest->semaphore_va += guest->ram_va;
	assert_int_equal(vgpu_hal_host_alloc(harness->hal, guest->ram_bytes, &guest->ram), 0);
	assert_int_equal(vgpu_hal_iommu_map(harness->hal, guest->ram, 0, guest->ram_bytes,
	                                    &guest->ram_iova),
	                 0);
	count = guest->ram_bytes / 4096;
	pages = malloc(count * sizeof(*pages));
	assert_non_null(pages);
	for (uint64_t i = 0; i < count; i++)
		pages[i] = guest->ram_iova + i * 4096;
	assert_int_equal(vgpu_hal_as_map(as, guest->ram_va, 4096, count,
	                                 VGPU_TARGET_SYSMEM_COHERENT, pages, 0),
	                 0);
	free(pages);
	assert_int_equal(vgpu_hal_as_write(as, guest->semaphore_va, &zero, sizeof(zero)), 0);

	memset(&config, 0, sizeof(config));
	config.hal = harness->hal;
	config.as = as;
	config.window = guest->window;
	config.info = &guest->info;
	config.max_submissions = max_submissions;
	config.alloc_memory = false;
	config.data_va = guest->data.gpu_va;
	config.pushbuffer_va = guest->ram_va;
	config.max_pause_us = max_pause_us;
	config.seed = seed;
	err = guest_submitter_create(&config, &guest->submitter);
	if (err)
		fail_msg("guest_submitter_create: %d", err);
}

/* Tear down the guest; with vm_gone, the VM (and so the channel, the log
 * and the reservation) was destroyed already. */
static void guest_teardown(struct harness_guest *guest, bool vm_gone)
{
	guest_submitter_destroy(guest->submitter);
	if (!vm_gone) {
		vgpu_core_channel_destroy(guest->channel);
		vgpu_core_free(guest->vm, guest->data.handle, NULL);
		assert_int_equal(vgpu_core_release_va(guest->vm, guest->ram_va, NULL), 0);
	}
	guest_window_double_detach(guest->window, guest->info.id);
	guest_window_double_destroy(guest->window);
	vgpu_hal_iommu_unmap(guest->harness->hal, guest->ram_iova, guest->ram_bytes);
	vgpu_hal_host_free(guest->harness->hal, guest->ram);
}

void harness_guest_teardown(struct harness_guest *guest)
{
	guest_teardown(guest, false);
}

void harness_guest_after_vm_destroy(struct harness_guest *guest)
{
	guest_teardown(guest, true);
}

void harness_guest_run(struct core_harness *harness, struct harness_guest *guest,
                       const uint32_t *words, uint32_t count)
{
	uint32_t all[64 + VGPU_SEMAPHORE_ARG_WORDS + 1];
	uint64_t value = 0, deadline;
	struct vgpu_hal_as *as = vgpu_core_vm_address_space(guest->vm);

	assert_true(count <= 64 - VGPU_SEMAPHORE_ARG_WORDS - 1);
	memcpy(all, words, count * sizeof(*words));
	guest->sequence++;
	count += vgpu_push_semaphore_release(all + count, guest->semaphore_va, guest->sequence,
	                                     false);
	while (guest_submitter_submit_raw(guest->submitter, all, count) == -EAGAIN)
		harness_sleep_ms(1);
	deadline = harness_now_ns() + 60ull * 1000000000ull;
	for (unsigned spin = 0; value != guest->sequence; spin++) {
		if (harness_now_ns() > deadline) {
			struct vgpu_hal_event error = { 0 };
			int state = vgpu_hal_channel_state(vgpu_core_channel_hal(guest->channel),
			                                   &error);

			fail_msg("guest work did not complete in 60 s (semaphore %llu of %llu, "
			         "channel %s, cause %d at %#llx)",
			         (unsigned long long)value, (unsigned long long)guest->sequence,
			         state ? "killed" : "ok", (int)error.cause,
			         (unsigned long long)error.address);
		}
		if (spin > 100)
			harness_sleep_ms(1);
		assert_int_equal(vgpu_hal_as_read(as, guest->semaphore_va, &value, sizeof(value)), 0);
	}
}

char *harness_read_file(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long size;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	text = malloc((size_t)size);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*bytes = (size_t)size;
	return text;
}
