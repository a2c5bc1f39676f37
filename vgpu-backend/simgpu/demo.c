// SPDX-License-Identifier: MIT
/*
 * simgpu-demo - a short multi-tenant run on simgpu.
 *
 * Three address spaces ("tenants"), one channel each, run at once:
 *   tenant-a  STREAM over 32 MiB of VRAM
 *   tenant-b  a 5-point STENCIL, 1024 x 1024 cells, in VRAM (10 iterations)
 *   tenant-c  GUPS (RANDOM_ACCESS) on 16 MiB of system RAM behind the IOMMU
 * and print what the GPU saw: the compute engine's current-channel register
 * sampled while they run, per-tenant counters (bytes per target, modeled busy
 * time) and checksums computed on the GPU, verified against the CPU
 * reference. Exit status 1 if any checksum differs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/hal.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define MIB (UINT64_C(1) << 20)
#define PUSHBUFFER_VA UINT64_C(0x10000000)
#define RESULT_VA UINT64_C(0x20000000)
#define DATA_VA UINT64_C(0x40000000)
#define TENANTS 3
#define STENCIL_SIDE 1024u
#define STENCIL_ITERATIONS 10u

struct demo_tenant {
	const char *name;
	const char *work;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	struct vgpu_hal_host_buf *host;
	uint64_t iova;
	uint64_t data_bytes;
	uint64_t expected;
	bool done;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct demo_tenant tenants[TENANTS];
static unsigned errors;

static void on_event(void *ctx, const struct vgpu_hal_event *event)
{
	unsigned i;

	(void)ctx;
	pthread_mutex_lock(&lock);
	for (i = 0; i < TENANTS; i++) {
		if (tenants[i].info.id != event->channel_id)
			continue;
		if (event->type == VGPU_EVENT_FENCE)
			tenants[i].done = true;
		if (event->type == VGPU_EVENT_CHANNEL_ERROR) {
			fprintf(stderr, "%s: channel error, cause %d at 0x%llx\n", tenants[i].name,
			        event->cause, (unsigned long long)event->address);
			tenants[i].done = true;
			errors++;
		}
	}
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static void check(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "simgpu-demo: %s failed: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static void map_vram(struct vgpu_hal *hal, struct vgpu_hal_as *as, uint64_t va, uint64_t bytes)
{
	uint64_t count = bytes / 65536, *pages = calloc(count, sizeof(uint64_t));

	check(pages ? 0 : -ENOMEM, "calloc");
	check(vgpu_hal_vram_alloc(hal, VGPU_PAGE_64K, count, pages), "vram_alloc");
	check(vgpu_hal_as_map(as, va, VGPU_PAGE_64K, count, VGPU_TARGET_VRAM, pages, 0), "as_map");
	free(pages);
}

static void map_sysmem(struct vgpu_hal *hal, struct demo_tenant *t, uint64_t va, uint64_t bytes)
{
	uint64_t count = bytes / 4096, *pages = calloc(count, sizeof(uint64_t)), i;

	check(pages ? 0 : -ENOMEM, "calloc");
	check(vgpu_hal_host_alloc(hal, bytes, &t->host), "host_alloc");
	check(vgpu_hal_iommu_map(hal, t->host, 0, bytes, &t->iova), "iommu_map");
	for (i = 0; i < count; i++)
		pages[i] = t->iova + i * 4096;
	check(vgpu_hal_as_map(t->as, va, VGPU_PAGE_4K, count, VGPU_TARGET_SYSMEM_NONCOHERENT, pages,
	                      0),
	      "as_map");
	free(pages);
}

/* Write the tenant's commands as one pushbuffer and give each command its
 * own GPFIFO entry, so PFIFO interleaves the tenants command by command. */
static void submit(struct demo_tenant *t, const uint32_t *words, uint32_t count)
{
	uint32_t position = 0, entry = 0;

	check(vgpu_hal_as_write(t->as, PUSHBUFFER_VA, words, (uint64_t)count * 4), "as_write");
	while (position < count) {
		uint32_t length = 1 + VGPU_COMMAND_ARG_WORDS(words[position]);

		vgpu_gpfifo_write(t->info.gpfifo, t->info.layout.gpfifo_entries, entry++,
		                  PUSHBUFFER_VA + (uint64_t)position * 4, length * 4);
		position += length;
	}
	vgpu_control_write_gp_put(t->info.control, entry);
}

static const char *target_names[VGPU_TARGET_COUNT] = { "VRAM", "SYSMEM-coh", "SYSMEM-noncoh" };

int main(void)
{
	struct simgpu_config config;
	struct vgpu_hal *hal;
	uint32_t words[64 * VGPU_COMMAND_MAX_WORDS], n;
	uint64_t stream_bytes = 32 * MIB, gups_bytes = 16 * MIB, gups_updates = 2000000;
	uint64_t stencil_bytes = (uint64_t)STENCIL_SIDE * STENCIL_SIDE * 4;
	unsigned samples[TENANTS + 1] = { 0 }, total_samples = 0, i, mismatches = 0;
	char timeline[73] = { 0 };
	bool all_done = false;

	simgpu_config_defaults(&config);
	config.vram_bytes = 512 * MIB;
	check(simgpu_create(&config, &hal), "simgpu_create");
	vgpu_hal_set_event_handler(hal, on_event, NULL);
	tenants[0] = (struct demo_tenant){ .name = "tenant-a", .work = "STREAM 32 MiB x 16, VRAM" };
	tenants[1] =
		(struct demo_tenant){ .name = "tenant-b", .work = "STENCIL 1024^2 x 10, VRAM" };
	tenants[2] = (struct demo_tenant){ .name = "tenant-c", .work = "GUPS 2M updates, SYSMEM" };
	for (i = 0; i < TENANTS; i++) {
		struct demo_tenant *t = &tenants[i];

		check(vgpu_hal_as_create(hal, &t->as), "as_create");
		map_vram(hal, t->as, PUSHBUFFER_VA, 65536);
		map_vram(hal, t->as, RESULT_VA, 65536);
		check(vgpu_hal_channel_create(t->as, 0, &t->channel, &t->info), "channel_create");
		vgpu_hal_channel_set_fetch(t->channel, false);
	}

	/* tenant-a: FILL, STREAM, CHECKSUM */
	map_vram(hal, tenants[0].as, DATA_VA, stream_bytes);
	n = vgpu_push_launch_fill(words, DATA_VA, stream_bytes, 0xa);
	n += vgpu_push_launch_stream(words + n, DATA_VA, stream_bytes, 16);
	n += vgpu_push_launch_checksum(words + n, DATA_VA, stream_bytes, RESULT_VA);
	n += vgpu_push_semaphore_release(words + n, RESULT_VA + 8, 1, true);
	submit(&tenants[0], words, n);
	tenants[0].expected = vgpu_kernel_reference_fill_stream_checksum(0xa, stream_bytes, 16);

	/* tenant-b: FILL the grid, ping-pong STENCIL, CHECKSUM */
	map_vram(hal, tenants[1].as, DATA_VA, 2 * stencil_bytes);
	n = vgpu_push_launch_fill(words, DATA_VA, stencil_bytes, 0xb);
	for (i = 0; i < STENCIL_ITERATIONS; i++) {
		uint64_t in = DATA_VA + (i % 2) * stencil_bytes;
		uint64_t out = DATA_VA + ((i + 1) % 2) * stencil_bytes;

		n += vgpu_push_launch_stencil(words + n, in, out, STENCIL_SIDE, STENCIL_SIDE);
	}
	n += vgpu_push_launch_checksum(words + n, DATA_VA + (STENCIL_ITERATIONS % 2) * stencil_bytes,
	                               stencil_bytes, RESULT_VA);
	n += vgpu_push_semaphore_release(words + n, RESULT_VA + 8, 1, true);
	submit(&tenants[1], words, n);
	{
		uint32_t *grid = malloc(2 * stencil_bytes);

		check(grid ? 0 : -ENOMEM, "malloc");
		vgpu_kernel_reference_fill(grid, stencil_bytes, 0xb);
		for (i = 0; i < STENCIL_ITERATIONS; i++)
			vgpu_kernel_reference_stencil(
				grid + (i % 2) * STENCIL_SIDE * STENCIL_SIDE,
				grid + ((i + 1) % 2) * STENCIL_SIDE * STENCIL_SIDE, STENCIL_SIDE,
				STENCIL_SIDE);
		tenants[1].expected = vgpu_kernel_reference_checksum(
			grid + (STENCIL_ITERATIONS % 2) * STENCIL_SIDE * STENCIL_SIDE, stencil_bytes);
		free(grid);
	}

	/* tenant-c: GUPS on system RAM through the IOMMU */
	map_sysmem(hal, &tenants[2], DATA_VA, gups_bytes);
	n = vgpu_push_launch_fill(words, DATA_VA, gups_bytes, 0xc);
	n += vgpu_push_launch_random_access(words + n, DATA_VA, gups_bytes, gups_updates, 0xc);
	n += vgpu_push_launch_checksum(words + n, DATA_VA, gups_bytes, RESULT_VA);
	n += vgpu_push_semaphore_release(words + n, RESULT_VA + 8, 1, true);
	submit(&tenants[2], words, n);
	{
		uint64_t *table = malloc(gups_bytes);

		check(table ? 0 : -ENOMEM, "malloc");
		vgpu_kernel_reference_fill(table, gups_bytes, 0xc);
		vgpu_kernel_reference_random_access(table, gups_bytes, gups_updates, 0xc);
		tenants[2].expected = vgpu_kernel_reference_checksum(table, gups_bytes);
		free(table);
	}

	printf("simgpu-demo: %llu MiB VRAM (%llu allocatable), three tenants, one channel each\n",
	       (unsigned long long)(config.vram_bytes / MIB),
	       (unsigned long long)(vgpu_hal_vram_free_bytes(hal) / MIB));
	for (i = 0; i < TENANTS; i++)
		printf("  %s  channel %u  %s\n", tenants[i].name, tenants[i].info.id, tenants[i].work);
	/* start all at once, then sample the compute engine's register */
	for (i = 0; i < TENANTS; i++) {
		vgpu_hal_channel_set_fetch(tenants[i].channel, true);
		vgpu_hal_channel_kick(tenants[i].channel);
	}
	while (!all_done) {
		int32_t current = vgpu_hal_engine_current_channel(hal, VGPU_ENGINE_COMPUTE);
		unsigned who = TENANTS;

		for (i = 0; i < TENANTS; i++)
			if (current >= 0 && tenants[i].info.id == (uint32_t)current)
				who = i;
		samples[who]++;
		if (total_samples % 4 == 0 && total_samples / 4 < sizeof(timeline) - 1)
			timeline[total_samples / 4] = who < TENANTS ? (char)('a' + who) : '.';
		total_samples++;
		usleep(1000);
		pthread_mutex_lock(&lock);
		all_done = tenants[0].done && tenants[1].done && tenants[2].done;
		pthread_mutex_unlock(&lock);
	}

	printf("\ncompute engine current-channel register, sampled every ~1 ms (%u samples):\n",
	       total_samples);
	printf("  timeline (every 4th sample, a/b/c = tenant, . = idle): %s\n", timeline);
	for (i = 0; i < TENANTS; i++)
		printf("  %s %5.1f%%", tenants[i].name, 100.0 * samples[i] / total_samples);
	printf("  idle %5.1f%%\n", 100.0 * samples[TENANTS] / total_samples);
	printf("  copy engine register now: %d, compute now: %d\n",
	       vgpu_hal_engine_current_channel(hal, VGPU_ENGINE_COPY),
	       vgpu_hal_engine_current_channel(hal, VGPU_ENGINE_COMPUTE));

	printf("\nper-tenant counters (PCOUNTER-like):\n");
	printf("  %-9s %-14s %14s %14s %16s\n", "tenant", "target", "bytes read", "bytes written",
	       "modeled busy");
	for (i = 0; i < TENANTS; i++) {
		struct vgpu_hal_as_counters counters;
		unsigned target;
		bool first = true;

		vgpu_hal_as_counters(tenants[i].as, &counters);
		for (target = 0; target < VGPU_TARGET_COUNT; target++) {
			if (!counters.bytes_read[target] && !counters.bytes_written[target])
				continue;
			printf("  %-9s %-14s %14llu %14llu", first ? tenants[i].name : "",
			       target_names[target], (unsigned long long)counters.bytes_read[target],
			       (unsigned long long)counters.bytes_written[target]);
			if (first)
				printf(" %13.3f ms", counters.busy_ns[VGPU_ENGINE_COMPUTE] / 1e6);
			printf("\n");
			first = false;
		}
	}
	printf("  compute engine total modeled busy time: %.3f ms\n",
	       vgpu_hal_engine_modeled_ns(hal, VGPU_ENGINE_COMPUTE) / 1e6);

	printf("\nchecksums (GPU vs CPU reference):\n");
	for (i = 0; i < TENANTS; i++) {
		uint64_t gpu_checksum = 0;

		check(vgpu_hal_as_read(tenants[i].as, RESULT_VA, &gpu_checksum, 8), "as_read");
		printf("  %s  gpu %016llx  cpu %016llx  %s\n", tenants[i].name,
		       (unsigned long long)gpu_checksum, (unsigned long long)tenants[i].expected,
		       gpu_checksum == tenants[i].expected ? "OK" : "MISMATCH");
		mismatches += gpu_checksum != tenants[i].expected;
	}

	for (i = 0; i < TENANTS; i++) {
		vgpu_hal_channel_destroy(tenants[i].channel);
		vgpu_hal_as_destroy(tenants[i].as);
		if (tenants[i].host) {
			check(vgpu_hal_iommu_unmap(hal, tenants[i].iova, gups_bytes), "iommu_unmap");
			vgpu_hal_host_free(hal, tenants[i].host);
		}
	}
	vgpu_hal_destroy(hal);
	if (mismatches || errors) {
		printf("\nsimgpu-demo: FAILED (%u mismatches, %u channel errors)\n", mismatches, errors);
		return 1;
	}
	printf("\nsimgpu-demo: all results verified\n");
	return 0;
}
