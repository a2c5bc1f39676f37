// SPDX-License-Identifier: MIT
/*
 * simgpu-bench - how fast simgpu moves simulated bytes, to size scenarios.
 *
 * Runs the STREAM kernel over a buffer in VRAM and in system RAM (through the
 * IOMMU), RANDOM_ACCESS and the copy engine, and prints for each the
 * simulated memory traffic per second of wall clock on one host core (simgpu
 * runs each engine on one thread) next to the modeled GPU time of the same
 * work, and a user's kernel (PTX, LAUNCH_FUNCTION) doing one STREAM pass's
 * traffic against the built-in STREAM pass on the same buffer: modeled time
 * and host speed. Takes a few seconds. Every figure is measured in --rounds
 * rounds
 * (default 3) and printed as median (min..max); --json FILE writes them
 * (bench-common.h).
 *
 * Usage: simgpu-bench [--rounds N] [--json FILE] [buffer-MiB (default 64)]
 *                     [stream-passes (default 8)]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-common.h"
#include "vgpu/hal.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define DATA_VA UINT64_C(0x40000000)
#define PUSHBUFFER_VA UINT64_C(0x10000000)
#define SEMAPHORE_VA UINT64_C(0x20000000)
#define VARIABLES_VA UINT64_C(0x30000000)

struct bench {
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	uint32_t put;
	uint64_t fence;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	uint64_t last_fence;
	uint64_t last_copy;
	bool failed;
};

static void on_event(void *ctx, const struct vgpu_hal_event *event)
{
	struct bench *b = ctx;

	pthread_mutex_lock(&b->lock);
	if (event->type == VGPU_EVENT_FENCE)
		b->last_fence = event->value;
	else if (event->type == VGPU_EVENT_COPY_DONE)
		b->last_copy = event->value;
	else if (event->type == VGPU_EVENT_CHANNEL_ERROR)
		b->failed = true;
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
}

static void check(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "simgpu-bench: %s failed: %s\n", what, strerror(-ret));
		exit(1);
	}
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run words on the channel and wait for completion. */
static void run(struct bench *b, const uint32_t *words, uint32_t count)
{
	uint32_t fence[VGPU_COMMAND_MAX_WORDS], n;
	uint64_t offset = (b->put % 64) * 256;

	check(vgpu_hal_as_write(b->as, PUSHBUFFER_VA + offset, words, (uint64_t)count * 4),
	      "as_write");
	n = vgpu_push_semaphore_release(fence, SEMAPHORE_VA, ++b->fence, true);
	check(vgpu_hal_as_write(b->as, PUSHBUFFER_VA + offset + 192, fence, n * 4), "as_write");
	vgpu_gpfifo_write(b->info.gpfifo, b->info.layout.gpfifo_entries, b->put,
	                  PUSHBUFFER_VA + offset, count * 4);
	vgpu_gpfifo_write(b->info.gpfifo, b->info.layout.gpfifo_entries, b->put + 1,
	                  PUSHBUFFER_VA + offset + 192, n * 4);
	b->put = (b->put + 2) & (b->info.layout.gpfifo_entries - 1);
	vgpu_control_write_gp_put(b->info.control, b->put);
	vgpu_hal_channel_kick(b->channel);
	pthread_mutex_lock(&b->lock);
	while (b->last_fence != b->fence && !b->failed)
		pthread_cond_wait(&b->changed, &b->lock);
	pthread_mutex_unlock(&b->lock);
	if (b->failed) {
		fprintf(stderr, "simgpu-bench: the channel faulted\n");
		exit(1);
	}
}

static uint64_t compute_busy_ns(struct bench *b)
{
	struct vgpu_hal_as_counters counters;

	vgpu_hal_as_counters(b->as, &counters);
	return counters.busy_ns[VGPU_ENGINE_COMPUTE];
}

#define MAX_ROUNDS 32

/* A figure over rounds: host GiB/s per core and modeled ms, per round. */
struct figure {
	const char *label, *key;
	double host[MAX_ROUNDS], modeled_ms[MAX_ROUNDS], gpu_gbps;
	const char *unit;
};

static void record(struct figure *f, int round, double traffic_bytes, double wall,
                   uint64_t modeled_ns)
{
	f->host[round] = traffic_bytes / GIB / wall;
	f->modeled_ms[round] = modeled_ns / 1e6;
	f->gpu_gbps = modeled_ns ? traffic_bytes / (double)modeled_ns : 0.0;
}

static void report(struct figure *f, int rounds, struct json_object *json)
{
	struct spread host = spread_of(f->host, rounds), modeled = spread_of(f->modeled_ms, rounds);
	char key[96];

	if (f->gpu_gbps)
		printf("  %-34s %s %s   modeled %.3f ms (%.1f GB/s on the GPU)\n", f->label,
		       SPREAD("%.2f", host), f->unit, modeled.median, f->gpu_gbps);
	else
		printf("  %-34s %s %s   modeled %.3f ms\n", f->label, SPREAD("%.2f", host), f->unit,
		       modeled.median);
	snprintf(key, sizeof(key), "simgpu_%s", f->key);
	json_spread(json, key, host);
	snprintf(key, sizeof(key), "simgpu_%s_modeled_ms", f->key);
	json_number(json, key, modeled.median);
}

static void bench_stream(struct bench *b, struct figure *f, int round, uint64_t va,
                         uint64_t bytes, unsigned passes)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t busy_before, checksum = 0;
	double start, wall;

	run(b, words, vgpu_push_launch_fill(words, va, bytes, 42));
	busy_before = compute_busy_ns(b);
	start = now_seconds();
	run(b, words, vgpu_push_launch_stream(words, va, bytes, passes));
	wall = now_seconds() - start;
	record(f, round, 2.0 * (double)bytes * passes, wall, compute_busy_ns(b) - busy_before);
	/* and the result is right */
	run(b, words, vgpu_push_launch_checksum(words, va, bytes, SEMAPHORE_VA + 64));
	check(vgpu_hal_as_read(b->as, SEMAPHORE_VA + 64, &checksum, 8), "as_read");
	if (checksum != vgpu_kernel_reference_fill_stream_checksum(42, bytes, passes)) {
		fprintf(stderr, "simgpu-bench: STREAM checksum mismatch\n");
		exit(1);
	}
}

/*
 * A user's module on the bench GPU: tests/ptx/modules.ptx, its variables
 * placed in a VRAM page; the index of scale_bias (p[i] = p[i] * scale +
 * bias: one read and one write of every word, a STREAM pass's traffic).
 */
static uint32_t load_module(struct bench *b, uint32_t *module_id)
{
	struct vgpu_hal_module *module;
	struct vgpu_hal_module_info info;
	uint64_t page, variable_va[8], offset = 0;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char *text;
	uint32_t function = UINT32_MAX;
	FILE *f = fopen(PTX_CORPUS_DIR "/modules.ptx", "rb");
	long size;

	check(f ? 0 : -ENOENT, "opening tests/ptx/modules.ptx");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	text = malloc((size_t)size);
	check(text && fread(text, 1, (size_t)size, f) == (size_t)size ? 0 : -EIO,
	      "reading modules.ptx");
	fclose(f);
	if (vgpu_hal_module_parse(b->hal, text, (size_t)size, "modules.ptx", &module, &error)) {
		fprintf(stderr, "simgpu-bench: %s\n", vgpu_error_msg(&error));
		exit(1);
	}
	free(text);
	vgpu_hal_module_info(module, &info);
	check(info.variable_count <= 8 ? 0 : -E2BIG, "module variables");
	check(vgpu_hal_vram_alloc(b->hal, VGPU_PAGE_64K, 1, &page), "vram_alloc");
	check(vgpu_hal_as_map(b->as, VARIABLES_VA, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &page, 0),
	      "as_map");
	for (uint32_t i = 0; i < info.variable_count; i++) {
		uint64_t align = info.variables[i].align ? info.variables[i].align : 1;

		offset = (offset + align - 1) / align * align;
		variable_va[i] = VARIABLES_VA + offset;
		check(vgpu_hal_as_write(b->as, variable_va[i], info.variables[i].init,
		                        info.variables[i].bytes),
		      "as_write");
		offset += info.variables[i].bytes;
	}
	for (uint32_t i = 0; i < info.function_count; i++)
		if (!strcmp(info.functions[i].name, "scale_bias"))
			function = i;
	check(function != UINT32_MAX ? 0 : -ENOENT, "scale_bias in modules.ptx");
	check(vgpu_hal_module_bind(b->as, module, variable_va, module_id), "module_bind");
	return function;
}

/* One pass of the user's kernel against one built-in STREAM pass, on the
 * same VRAM buffer: modeled times, and the user's kernel's host speed. */
static void bench_function(struct bench *b, struct figure *user, struct figure *builtin,
                           int round, uint64_t va, uint64_t bytes, uint32_t module_id,
                           uint32_t function)
{
	struct vgpu_launch_dims dims = { { (uint32_t)(bytes / 4 / 256), 1, 1 }, { 256, 1, 1 }, 0 };
	struct {
		uint64_t p;
		int32_t n;
		uint32_t pad;
	} params = { va, (int32_t)(bytes / 4), 0 };
	uint32_t words[32];
	uint64_t busy_before;
	double start, wall;

	busy_before = compute_busy_ns(b);
	start = now_seconds();
	run(b, words, vgpu_push_launch_function(words, module_id, function, &dims, &params, 12));
	wall = now_seconds() - start;
	record(user, round, 2.0 * (double)bytes, wall, compute_busy_ns(b) - busy_before);
	busy_before = compute_busy_ns(b);
	start = now_seconds();
	run(b, words, vgpu_push_launch_stream(words, va, bytes, 1));
	wall = now_seconds() - start;
	record(builtin, round, 2.0 * (double)bytes, wall, compute_busy_ns(b) - busy_before);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct figure figures[6] = {
		{ .label = "STREAM, VRAM (64 KiB pages)", .key = "stream_vram_gib_per_s",
		  .unit = "GiB/s per host core" },
		{ .label = "STREAM, system RAM (4 KiB, IOMMU)", .key = "stream_sysmem_gib_per_s",
		  .unit = "GiB/s per host core" },
		{ .label = "RANDOM_ACCESS, VRAM", .key = "random_access_mupdates_per_s",
		  .unit = "M updates/s per core" },
		{ .label = "copy engine, VRAM<-VRAM/system RAM", .key = "copy_engine_gib_per_s",
		  .unit = "GiB/s per host core" },
		{ .label = "user's kernel (PTX), one pass, VRAM", .key = "ptx_pass_vram_gib_per_s",
		  .unit = "GiB/s, all host cores" },
		{ .label = "built-in STREAM, one pass, VRAM", .key = "stream_pass_vram_gib_per_s",
		  .unit = "GiB/s per host core" },
	};
	double user_over_builtin[MAX_ROUNDS];
	uint32_t module_id, function;
	const char *json_path = NULL;
	struct json_object *json = NULL;
	int rounds = 3, opt, round;
	uint64_t buffer_mib, bytes, count, i, iova, busy_before, copy_before;
	unsigned passes;
	struct simgpu_config config;
	struct vgpu_hal_host_buf *host;
	struct bench b = { 0 };
	uint64_t *pages, page;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	double start, wall;
	const uint64_t updates = 4000000;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			if (rounds < 1 || rounds > MAX_ROUNDS) {
				fprintf(stderr, "simgpu-bench: --rounds 1..%d\n", MAX_ROUNDS);
				return 2;
			}
			break;
		case 'j':
			json_path = optarg;
			break;
		default:
			fprintf(stderr, "usage: simgpu-bench [--rounds N] [--json FILE] [buffer-MiB] "
			                "[stream-passes]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	buffer_mib = optind < argc ? strtoull(argv[optind], NULL, 0) : 64;
	passes = optind + 1 < argc ? (unsigned)strtoul(argv[optind + 1], NULL, 0) : 8;
	bytes = buffer_mib * MIB;
	if (bytes == 0 || bytes % (64 * 1024) || passes == 0) {
		fprintf(stderr, "usage: simgpu-bench [--rounds N] [--json FILE] [buffer-MiB] "
		                "[stream-passes]\n");
		return 2;
	}
	if (json_path)
		json = json_object_new_object();
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.changed, NULL);
	simgpu_config_defaults(&config);
	config.vram_bytes = 2 * bytes + 256 * MIB;
	check(simgpu_create(&config, &b.hal), "simgpu_create");
	vgpu_hal_set_event_handler(b.hal, on_event, &b);
	check(vgpu_hal_as_create(b.hal, &b.as), "as_create");
	check(vgpu_hal_channel_create(b.as, 0, &b.channel, &b.info), "channel_create");

	check(vgpu_hal_vram_alloc(b.hal, VGPU_PAGE_64K, 1, &page), "vram_alloc");
	check(vgpu_hal_as_map(b.as, PUSHBUFFER_VA, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &page, 0),
	      "as_map");
	check(vgpu_hal_vram_alloc(b.hal, VGPU_PAGE_4K, 1, &page), "vram_alloc");
	check(vgpu_hal_as_map(b.as, SEMAPHORE_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, &page, 0),
	      "as_map");
	count = bytes / (64 * 1024);
	pages = calloc(count, sizeof(*pages));
	check(pages ? 0 : -ENOMEM, "calloc");
	/* VRAM buffer at DATA_VA, a copy target at DATA_VA + 2 * bytes */
	check(vgpu_hal_vram_alloc(b.hal, VGPU_PAGE_64K, count, pages), "vram_alloc");
	check(vgpu_hal_as_map(b.as, DATA_VA, VGPU_PAGE_64K, count, VGPU_TARGET_VRAM, pages, 0),
	      "as_map");
	check(vgpu_hal_vram_alloc(b.hal, VGPU_PAGE_64K, count, pages), "vram_alloc");
	check(vgpu_hal_as_map(b.as, DATA_VA + 2 * bytes, VGPU_PAGE_64K, count, VGPU_TARGET_VRAM,
	                      pages, 0),
	      "as_map");
	/* system RAM buffer at DATA_VA + bytes, 4 KiB pages as GPUswap maps it */
	check(vgpu_hal_host_alloc(b.hal, bytes, &host), "host_alloc");
	check(vgpu_hal_iommu_map(b.hal, host, 0, bytes, &iova), "iommu_map");
	free(pages);
	pages = calloc(bytes / 4096, sizeof(*pages));
	check(pages ? 0 : -ENOMEM, "calloc");
	for (i = 0; i < bytes / 4096; i++)
		pages[i] = iova + i * 4096;
	check(vgpu_hal_as_map(b.as, DATA_VA + bytes, VGPU_PAGE_4K, bytes / 4096,
	                      VGPU_TARGET_SYSMEM_NONCOHERENT, pages, 0),
	      "as_map");
	free(pages);

	printf("simgpu-bench: %llu MiB buffers, STREAM %u passes (read+write every pass); %d "
	       "rounds, median (min..max)\n",
	       (unsigned long long)buffer_mib, passes, rounds);
	printf("  model: VRAM %.0f GB/s, system RAM %.0f GB/s (non-coherent), per-transaction "
	       "latency %u / %u ns\n",
	       config.vram_bandwidth / 1e9, config.sysmem_noncoherent_bandwidth / 1e9,
	       config.vram_latency_ns, config.sysmem_noncoherent_latency_ns);
	/* touch the copy destination once so the copy figure is steady state */
	run(&b, words, vgpu_push_launch_fill(words, DATA_VA + 2 * bytes, bytes, 1));
	function = load_module(&b, &module_id);
	for (round = 0; round < rounds; round++) {
		uint64_t copies = (uint64_t)round * 4;

		bench_stream(&b, &figures[0], round, DATA_VA, bytes, passes);
		bench_stream(&b, &figures[1], round, DATA_VA + bytes, bytes, passes);

		busy_before = compute_busy_ns(&b);
		start = now_seconds();
		run(&b, words, vgpu_push_launch_random_access(words, DATA_VA, bytes, updates, 7));
		wall = now_seconds() - start;
		figures[2].host[round] = updates / wall / 1e6;
		figures[2].modeled_ms[round] = (compute_busy_ns(&b) - busy_before) / 1e6;

		copy_before = vgpu_hal_engine_modeled_ns(b.hal, VGPU_ENGINE_COPY);
		start = now_seconds();
		for (i = 0; i < 4; i++)
			check(vgpu_hal_copy(b.as, DATA_VA + 2 * bytes, i % 2 ? DATA_VA + bytes : DATA_VA,
			                    bytes, copies + i + 1),
			      "copy");
		pthread_mutex_lock(&b.lock);
		while (b.last_copy != copies + 4)
			pthread_cond_wait(&b.changed, &b.lock);
		pthread_mutex_unlock(&b.lock);
		wall = now_seconds() - start;
		record(&figures[3], round, 2.0 * 4 * (double)bytes, wall,
		       vgpu_hal_engine_modeled_ns(b.hal, VGPU_ENGINE_COPY) - copy_before);

		bench_function(&b, &figures[4], &figures[5], round, DATA_VA, bytes, module_id,
		               function);
		user_over_builtin[round] = figures[4].modeled_ms[round] / figures[5].modeled_ms[round];
	}
	for (i = 0; i < 6; i++)
		report(&figures[i], rounds, json);
	{
		struct spread ratio = spread_of(user_over_builtin, rounds);

		printf("  %-34s %s   (modeled time; the user's kernel also pays its "
		       "instructions)\n",
		       "user's kernel / built-in STREAM", SPREAD("%.3f", ratio));
		json_spread(json, "simgpu_ptx_over_builtin_modeled", ratio);
	}
	printf("  (traffic counts bytes read plus bytes written)\n");

	check(vgpu_hal_module_unbind(b.as, module_id), "module_unbind");
	vgpu_hal_channel_destroy(b.channel);
	vgpu_hal_as_destroy(b.as);
	check(vgpu_hal_iommu_unmap(b.hal, iova, bytes), "iommu_unmap");
	vgpu_hal_host_free(b.hal, host);
	vgpu_hal_destroy(b.hal);
	pthread_cond_destroy(&b.changed);
	pthread_mutex_destroy(&b.lock);
	if (json_write(json, json_path, "simgpu-bench"))
		return 1;
	json_object_put(json);
	return 0;
}
