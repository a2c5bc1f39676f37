// SPDX-License-Identifier: MIT
/*
 * core-bench - the GPUswap core's costs on simgpu (figures, not pass/fail):
 *
 *  1. allocation and free latency without eviction, per size from 4 KiB to
 *     256 MiB (thesis §6.3.1): rounds of alloc/free cycles, every size in
 *     every round; the median and 99th percentile of each round, summarised
 *     over rounds (median, min..max);
 *  2. eviction latency and where it goes (thesis §6.3.2): policy, copy
 *     set-up, copy, other; for the victim: drain and pause;
 *  3. relocation throughput against plain host memcpy, interleaved: every
 *     round measures memcpy right before and right after its evictions and
 *     its return pass, and the round's ratios use that round's memcpy
 *     (their mean); the figure is the median of the per-round ratios;
 *  4. the same into fresh host memory (a core without its host buffer
 *     cache) against memcpy into a fresh, untouched shared mapping: both
 *     sides pay their first-touch page faults;
 *  5. the submission path: core entry points invoked while a guest submits
 *     with no memory pressure (expected: 0).
 *
 * --json FILE writes the figures as one JSON object (KEY = median over
 * rounds, KEY_min, KEY_max; `./vgpu-dev bench` merges it into
 * build/bench/bench.json). Wall-clock figures depend on the host (2 shared
 * cores here); simgpu's copy engine is a CPU thread, so "copy" is host
 * memory bandwidth through the GMMU and IOMMU, page by page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "guest.h"
#include "vgpu/core.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/util.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

#define MAX_ROUNDS 64
#define RELOCATION_BYTES (256 * MiB) /* per round: 4 allocations of 64 MiB */

static struct json_object *json; /* NULL without --json */

/* The last core call's failure (the core calls below pass it; one thread). */
static struct vgpu_error core_error;

static void die(const char *what, int err)
{
	fprintf(stderr, "core-bench: %s: %s (%s)\n", what, strerror(-err),
	        vgpu_error_msg(&core_error));
	exit(1);
}

/* The compiler may not drop or move a copy across this. */
static inline void barrier_on(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

struct setup {
	struct vgpu_hal *hal;
	struct vgpu_core *core;
};

static void setup(struct setup *s, uint64_t vram, uint64_t chunk, bool host_cache)
{
	struct simgpu_config gpu;
	struct vgpu_core_config config;
	int err;

	simgpu_config_defaults(&gpu);
	gpu.vram_bytes = vram + 16 * MiB;
	gpu.reserved_vram_bytes = 16 * MiB;
	gpu.pfifo_idle_sleep_max_us = 200;
	err = simgpu_create(&gpu, &s->hal);
	if (err)
		die("simgpu_create", err);
	vgpu_core_config_defaults(&config);
	config.chunk_bytes = chunk;
	config.return_interval_ms = 0;
	if (!host_cache)
		config.host_cache_bytes = 0;
	config.on_fence = sim_guest_on_fence;
	config.on_channel_error = sim_guest_on_channel_error;
	err = vgpu_core_create(s->hal, &config, &s->core, &core_error);
	if (err)
		die("vgpu_core_create", err);
}

static void teardown(struct setup *s)
{
	vgpu_core_destroy(s->core);
	vgpu_hal_destroy(s->hal);
}

static struct vgpu_vm *make_vm(struct setup *s, const char *name, uint32_t weight)
{
	struct vgpu_vm_config config;
	struct vgpu_vm *vm;
	int err;

	vgpu_vm_config_defaults(&config);
	config.name = name;
	config.weight = weight;
	err = vgpu_core_vm_create(s->core, &config, &vm, &core_error);
	if (err)
		die("vm", err);
	return vm;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void percentiles(uint64_t *samples, size_t count, double *median_us, double *p99_us)
{
	qsort(samples, count, sizeof(*samples), compare_u64);
	*median_us = samples[count / 2] / 1e3;
	*p99_us = samples[(count * 99) / 100] / 1e3;
}

static void size_label(char *label, size_t size, uint64_t bytes, const char *space)
{
	if (bytes < MiB)
		snprintf(label, size, "%" PRIu64 "%sKiB", bytes / KiB, space);
	else
		snprintf(label, size, "%" PRIu64 "%sMiB", bytes / MiB, space);
}

/* ---- 1. allocation latency ------------------------------------------------ */

#define ALLOC_SIZES 17 /* 4 KiB ... 256 MiB */

static void bench_alloc_latency(int rounds, int cycles)
{
	uint64_t *alloc_ns = malloc((size_t)cycles * sizeof(*alloc_ns));
	uint64_t *free_ns = malloc((size_t)cycles * sizeof(*free_ns));
	/* [size][round] */
	static double a_med[ALLOC_SIZES][MAX_ROUNDS], a_p99[ALLOC_SIZES][MAX_ROUNDS];
	static double f_med[ALLOC_SIZES][MAX_ROUNDS], f_p99[ALLOC_SIZES][MAX_ROUNDS];
	struct vgpu_core_stats stats;
	struct setup s;
	struct vgpu_vm *vm;

	if (!alloc_ns || !free_ns)
		die("malloc", -ENOMEM);
	setup(&s, 1 * GiB, 4 * MiB, true);
	vm = make_vm(&s, "bench", 1);
	printf("1. Allocation latency without eviction (4 MiB chunks, 1 GiB VRAM; %d rounds of "
	       "%d alloc/free cycles per size, every size in every round;\n"
	       "   each round's median and p99, shown as the median over rounds (min..max))\n",
	       rounds, cycles);
	for (int round = 0; round < rounds; round++) {
		uint64_t size = 4 * KiB;

		for (int z = 0; z < ALLOC_SIZES; z++, size *= 2) {
			for (int i = 0; i < cycles; i++) {
				struct vgpu_buffer_info buffer;
				uint64_t t0 = vgpu_monotonic_ns(), t1;
				int err = vgpu_core_alloc(vm, size, VGPU_PRIORITY_DEFAULT, 0,
				                          &buffer, &core_error);

				t1 = vgpu_monotonic_ns();
				if (err)
					die("alloc", err);
				vgpu_core_free(vm, buffer.handle, &core_error);
				alloc_ns[i] = t1 - t0;
				free_ns[i] = vgpu_monotonic_ns() - t1;
			}
			percentiles(alloc_ns, (size_t)cycles, &a_med[z][round], &a_p99[z][round]);
			percentiles(free_ns, (size_t)cycles, &f_med[z][round], &f_p99[z][round]);
		}
	}
	printf("   %8s %6s %22s %22s %22s %22s\n", "size", "chunks", "alloc median, us",
	       "alloc p99, us", "free median, us", "free p99, us");
	{
		uint64_t size = 4 * KiB;

		for (int z = 0; z < ALLOC_SIZES; z++, size *= 2) {
			struct spread am = spread_of(a_med[z], rounds), ap = spread_of(a_p99[z], rounds);
			struct spread fm = spread_of(f_med[z], rounds), fp = spread_of(f_p99[z], rounds);
			char label[32], key[64];

			size_label(label, sizeof(label), size, " ");
			printf("   %8s %6" PRIu64 " %22s %22s %22s %22s\n", label,
			       (size + 4 * MiB - 1) / (4 * MiB), SPREAD("%.1f", am), SPREAD("%.1f", ap),
			       SPREAD("%.1f", fm), SPREAD("%.1f", fp));
			size_label(label, sizeof(label), size, "");
			snprintf(key, sizeof(key), "alloc_median_us_%s", label);
			json_spread(json, key, am);
			snprintf(key, sizeof(key), "alloc_p99_us_%s", label);
			json_spread(json, key, ap);
			snprintf(key, sizeof(key), "free_median_us_%s", label);
			json_spread(json, key, fm);
			snprintf(key, sizeof(key), "free_p99_us_%s", label);
			json_spread(json, key, fp);
		}
	}
	vgpu_core_stats(s.core, &stats);
	printf("   (eviction passes during this: %" PRIu64 "; goal: p99 <= 50 us up to 64 MiB)\n\n",
	       stats.eviction.passes);
	json_number(json, "alloc_eviction_passes", (double)stats.eviction.passes);
	free(alloc_ns);
	free(free_ns);
	teardown(&s);
}

/* ---- 2. eviction latency ------------------------------------------------- */

static double per(uint64_t ns, uint64_t count)
{
	return ns / (double)(count ? count : 1) / 1e6; /* ms */
}

static void print_breakdown(const char *what, const struct vgpu_core_time *d)
{
	double total = d->total_ns ? (double)d->total_ns : 1.0;

	printf("   %s: %" PRIu64 " passes, %.1f MiB copied, mean per pass:\n", what, d->passes,
	       d->bytes_copied / (double)MiB);
	printf("     %-12s %9.3f ms  %5.1f %%\n", "policy", per(d->policy_ns, d->passes),
	       100.0 * d->policy_ns / total);
	printf("     %-12s %9.3f ms  %5.1f %%\n", "copy set-up", per(d->setup_ns, d->passes),
	       100.0 * d->setup_ns / total);
	printf("     %-12s %9.3f ms  %5.1f %%\n", "copy", per(d->copy_ns, d->passes),
	       100.0 * d->copy_ns / total);
	printf("     %-12s %9.3f ms  %5.1f %%\n", "other", per(d->other_ns, d->passes),
	       100.0 * d->other_ns / total);
	printf("     %-12s %9.3f ms\n", "total", per(d->total_ns, d->passes));
	printf("     victim: drain %.3f ms, paused (suspend to resume) %.3f ms per suspension "
	       "(%" PRIu64 " suspensions)\n",
	       per(d->drain_ns, d->vm_suspensions), per(d->pause_ns, d->vm_suspensions),
	       d->vm_suspensions);
}

/* 256 MiB of VRAM full of a victim's data (written by the GPU, so copies
 * move real bytes) plus a hot buffer its kernels keep streaming; "allocator"
 * weighs 100 times more, so the victim is always a. */
struct eviction_setup {
	struct setup s;
	struct vgpu_vm *a, *b;
	struct sim_guest *guest;
	struct vgpu_buffer_info victim[60], hot;
};

static void eviction_setup(struct eviction_setup *e, bool host_cache)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err;

	setup(&e->s, 256 * MiB, 4 * MiB, host_cache);
	e->a = make_vm(&e->s, "victim", 1);
	e->b = make_vm(&e->s, "allocator", 100);
	if ((err = sim_guest_create(e->s.hal, e->a, &e->guest)))
		die("guest", err);
	if ((err = vgpu_core_alloc(e->a, 16 * MiB, 15, 0, &e->hot, &core_error)))
		die("alloc", err);
	for (int i = 0; i < 60; i++) {
		if ((err = vgpu_core_alloc(e->a, 4 * MiB, VGPU_PRIORITY_DEFAULT, 0, &e->victim[i],
		                           &core_error)))
			die("alloc", err);
		if ((err = sim_guest_run(e->guest, words,
		                         vgpu_push_launch_fill(words, e->victim[i].gpu_va,
		                                               e->victim[i].bytes, i + 1),
		                         60000)))
			die("fill", err);
	}
}

static void eviction_teardown(struct eviction_setup *e)
{
	sim_guest_destroy(e->guest, false);
	teardown(&e->s);
}

static void bench_eviction_small(struct eviction_setup *e)
{
	struct vgpu_core_stats before, after;
	struct vgpu_buffer_info small[24];
	struct vgpu_core_time d;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err;

	printf("2. Eviction latency (256 MiB VRAM full of the victim's data, 4 MiB chunks; the "
	       "victim keeps a STREAM kernel queued on its channel)\n");
	/* 8 MiB = 2 chunks each, with guest work queued. */
	vgpu_core_stats(e->s.core, &before);
	for (int i = 0; i < 24; i++) {
		int64_t sequence = sim_guest_submit(
		        e->guest, words, vgpu_push_launch_stream(words, e->hot.gpu_va, e->hot.bytes, 2));

		if (sequence < 0)
			die("submit", (int)sequence);
		if ((err = vgpu_core_alloc(e->b, 8 * MiB, VGPU_PRIORITY_DEFAULT, 0, &small[i],
		                           &core_error)))
			die("alloc", err);
		sim_guest_wait(e->guest, (uint64_t)sequence, 60000);
	}
	vgpu_core_stats(e->s.core, &after);
	vgpu_core_time_delta(&d, &before.eviction, &after.eviction);
	print_breakdown("8 MiB allocations (2 chunks evicted each)", &d);
	json_number(json, "eviction_8MiB_total_ms", per(d.total_ns, d.passes));
	json_number(json, "eviction_8MiB_victim_pause_ms", per(d.pause_ns, d.vm_suspensions));
	json_number(json, "eviction_8MiB_victim_drain_ms", per(d.drain_ns, d.vm_suspensions));
	for (int i = 0; i < 24; i++)
		vgpu_core_free(e->b, small[i].handle, &core_error);
	vgpu_core_return_pass(e->s.core, &core_error);
	printf("\n");
}

/* ---- 3 + 4. relocation throughput against memcpy --------------------------- */

struct memcpy_ref {
	uint8_t *src, *dst;
	uint64_t bytes;
};

static void memcpy_ref_init(struct memcpy_ref *m, uint64_t bytes)
{
	m->bytes = bytes;
	m->src = malloc(bytes);
	m->dst = malloc(bytes);
	if (!m->src || !m->dst)
		die("malloc", -ENOMEM);
	memset(m->src, 0x5a, bytes);
	memset(m->dst, 0, bytes);
}

static void memcpy_ref_fini(struct memcpy_ref *m)
{
	free(m->src);
	free(m->dst);
}

/* GB/s (bytes per ns) of one memcpy into a destination touched before. */
static double memcpy_warm_gbps(struct memcpy_ref *m)
{
	uint64_t t0, t;

	barrier_on(m->dst);
	t0 = vgpu_monotonic_ns();
	memcpy(m->dst, m->src, m->bytes);
	barrier_on(m->dst);
	t = vgpu_monotonic_ns() - t0;
	return m->bytes / (double)t;
}

/*
 * GB/s of one memcpy into a fresh, untouched shared mapping (a memfd, as
 * simgpu's host buffers and a VM's memory are): every page faults in on
 * first touch, inside the timed copy. The mapping is set up before the
 * clock starts and torn down after it stops.
 */
static double memcpy_fresh_gbps(struct memcpy_ref *m)
{
	int fd = memfd_create("core-bench-fresh", MFD_CLOEXEC);
	uint8_t *dst;
	uint64_t t0, t;

	if (fd < 0 || ftruncate(fd, (off_t)m->bytes) < 0)
		die("memfd", -errno);
	dst = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (dst == MAP_FAILED)
		die("mmap", -errno);
	barrier_on(dst);
	t0 = vgpu_monotonic_ns();
	memcpy(dst, m->src, m->bytes);
	barrier_on(dst);
	t = vgpu_monotonic_ns() - t0;
	if (dst[m->bytes - 1] != 0x5a || dst[0] != 0x5a)
		die("fresh memcpy: wrong bytes", -EIO);
	munmap(dst, m->bytes);
	close(fd);
	return m->bytes / (double)t;
}

enum { R_MEMCPY, R_EVICT, R_EVICT_COPY, R_EVICT_WHOLE, R_EVICT_RATIO, R_EVICT_COPY_RATIO,
       R_EVICT_WHOLE_RATIO, R_RETURN, R_RETURN_WHOLE, R_RETURN_RATIO, R_RETURN_WHOLE_RATIO,
       R_RETURN_SETUP_FRACTION, R_RETURN_SETUP_MS_PER_CHUNK, R_RETURN_MS, R_PAUSE, R_COPY,
       R_PAUSE_OVER_COPY, R_SETUP_MS, R_OTHER_MS, R_CACHE_HITS, R_FIGURES };

/*
 * One round: memcpy, 4 allocations of 64 MiB for b (16 chunks of a evicted
 * by each), memcpy, free them, return pass (a's 64 chunks back), memcpy.
 * The eviction's reference is the mean of the memcpys before and after it,
 * the return pass's the mean of those around it.
 */
static void relocation_round(struct eviction_setup *e, struct memcpy_ref *m, bool fresh,
                             double *figures)
{
	double (*reference)(struct memcpy_ref *) = fresh ? memcpy_fresh_gbps : memcpy_warm_gbps;
	struct vgpu_core_stats before, after;
	struct vgpu_core_time d, r;
	struct vgpu_buffer_info big[4];
	double m0, m1, m2, ev_ref, ret_ref;
	uint64_t chunks;
	int err;

	m0 = reference(m);
	vgpu_core_stats(e->s.core, &before);
	for (int i = 0; i < 4; i++)
		if ((err = vgpu_core_alloc(e->b, 64 * MiB, VGPU_PRIORITY_DEFAULT, 0, &big[i],
		                           &core_error)))
			die("alloc", err);
	vgpu_core_stats(e->s.core, &after);
	vgpu_core_time_delta(&d, &before.eviction, &after.eviction);
	figures[R_CACHE_HITS] = (double)(after.host_cache_hits - before.host_cache_hits);
	m1 = reference(m);
	for (int i = 0; i < 4; i++)
		vgpu_core_free(e->b, big[i].handle, &core_error);
	vgpu_core_stats(e->s.core, &before);
	vgpu_core_return_pass(e->s.core, &core_error);
	vgpu_core_stats(e->s.core, &after);
	vgpu_core_time_delta(&r, &before.return_pass, &after.return_pass);
	m2 = reference(m);

	ev_ref = (m0 + m1) / 2;
	ret_ref = (m1 + m2) / 2;
	figures[R_MEMCPY] = (m0 + m1 + m2) / 3;
	figures[R_EVICT] = d.bytes_copied / (double)(d.setup_ns + d.copy_ns + 1);
	figures[R_EVICT_COPY] = d.bytes_copied / (double)(d.copy_ns + 1);
	figures[R_EVICT_WHOLE] = d.bytes_copied / (double)(d.total_ns + 1);
	figures[R_EVICT_RATIO] = figures[R_EVICT] / ev_ref;
	figures[R_EVICT_COPY_RATIO] = figures[R_EVICT_COPY] / ev_ref;
	figures[R_EVICT_WHOLE_RATIO] = figures[R_EVICT_WHOLE] / ev_ref;
	figures[R_RETURN] = r.bytes_copied / (double)(r.setup_ns + r.copy_ns + 1);
	figures[R_RETURN_WHOLE] = r.bytes_copied / (double)(r.total_ns + 1);
	figures[R_RETURN_RATIO] = figures[R_RETURN] / ret_ref;
	figures[R_RETURN_WHOLE_RATIO] = figures[R_RETURN_WHOLE] / ret_ref;
	figures[R_RETURN_SETUP_FRACTION] = r.setup_ns / (double)(r.total_ns ? r.total_ns : 1);
	chunks = r.bytes_copied / (4 * MiB);
	figures[R_RETURN_SETUP_MS_PER_CHUNK] = per(r.setup_ns, chunks);
	figures[R_RETURN_MS] = r.total_ns / 1e6;
	figures[R_PAUSE] = per(d.pause_ns, d.vm_suspensions);
	figures[R_COPY] = per(d.copy_ns, d.passes);
	figures[R_PAUSE_OVER_COPY] = figures[R_PAUSE] - figures[R_COPY];
	figures[R_SETUP_MS] = per(d.setup_ns, d.passes);
	figures[R_OTHER_MS] = per(d.other_ns, d.passes);
	if (d.bytes_copied != RELOCATION_BYTES || r.bytes_copied != RELOCATION_BYTES)
		fprintf(stderr, "core-bench: a round moved %" PRIu64 " MiB out and %" PRIu64
		        " MiB back (expected 256 "
		        "each)\n", d.bytes_copied / MiB, r.bytes_copied / MiB);
}

/* rounds relocation rounds on e, then e torn down: each round's figures
 * into figures, each figure's spread over the rounds into f. */
static void relocation_rounds(struct eviction_setup *e, struct memcpy_ref *m, bool fresh,
                              int rounds, double figures[R_FIGURES][MAX_ROUNDS],
                              struct spread f[R_FIGURES])
{
	double round_figures[R_FIGURES];

	for (int round = 0; round < rounds; round++) {
		relocation_round(e, m, fresh, round_figures);
		for (int k = 0; k < R_FIGURES; k++)
			figures[k][round] = round_figures[k];
	}
	eviction_teardown(e);
	for (int k = 0; k < R_FIGURES; k++)
		f[k] = spread_of(figures[k], rounds);
}

static void bench_relocation(int rounds)
{
	static double figures[R_FIGURES][MAX_ROUNDS];
	double round_figures[R_FIGURES];
	struct spread f[R_FIGURES];
	struct eviction_setup e;
	struct memcpy_ref m;

	memcpy_ref_init(&m, RELOCATION_BYTES);
	eviction_setup(&e, true);
	bench_eviction_small(&e);

	/* A warm-up round fills the host buffer cache; then the rounds. */
	relocation_round(&e, &m, false, round_figures);
	relocation_rounds(&e, &m, false, rounds, figures, f);

	printf("3. Relocation throughput against host memcpy (GB/s = bytes per ns), steady state "
	       "(host buffers reused from the core's cache)\n"
	       "   %d rounds, each: memcpy, 4 x 64 MiB allocations evicting 256 MiB, memcpy, free, "
	       "return pass moving 256 MiB back, memcpy;\n"
	       "   each ratio is per round against that round's memcpy, median (min..max) over "
	       "rounds\n", rounds);
	printf("   host memcpy, 256 MiB, destination touched before: %s GB/s\n",
	       SPREAD("%.2f", f[R_MEMCPY]));
	printf("   eviction, set-up + copy:           %s GB/s = %s of memcpy  (goal >= 0.70)\n",
	       SPREAD("%.2f", f[R_EVICT]), SPREAD("%.2f", f[R_EVICT_RATIO]));
	printf("   eviction, copy engine only:        %s GB/s = %s of memcpy\n",
	       SPREAD("%.2f", f[R_EVICT_COPY]), SPREAD("%.2f", f[R_EVICT_COPY_RATIO]));
	printf("   eviction, whole allocation:        %s GB/s = %s of memcpy\n",
	       SPREAD("%.2f", f[R_EVICT_WHOLE]), SPREAD("%.2f", f[R_EVICT_WHOLE_RATIO]));
	printf("     per 64 MiB pass: set-up %s ms, copy %s ms, other %s ms\n",
	       SPREAD("%.3f", f[R_SETUP_MS]), SPREAD("%.3f", f[R_COPY]),
	       SPREAD("%.3f", f[R_OTHER_MS]));
	printf("     victim paused %s ms per suspension, minus its copy: %s ms\n",
	       SPREAD("%.3f", f[R_PAUSE]), SPREAD("%.3f", f[R_PAUSE_OVER_COPY]));
	printf("     host buffers reused per round: %s of 64\n", SPREAD("%.0f", f[R_CACHE_HITS]));
	printf("   return pass, set-up + copy:        %s GB/s = %s of memcpy  (goal >= 0.70)\n",
	       SPREAD("%.2f", f[R_RETURN]), SPREAD("%.2f", f[R_RETURN_RATIO]));
	printf("   return pass, whole pass:           %s GB/s = %s of memcpy\n",
	       SPREAD("%.2f", f[R_RETURN_WHOLE]), SPREAD("%.2f", f[R_RETURN_WHOLE_RATIO]));
	printf("     256 MiB back in %s ms; set-up %s of the pass (goal <= 0.10), %s ms per "
	       "chunk\n\n",
	       SPREAD("%.1f", f[R_RETURN_MS]), SPREAD("%.3f", f[R_RETURN_SETUP_FRACTION]),
	       SPREAD("%.3f", f[R_RETURN_SETUP_MS_PER_CHUNK]));

	json_spread(json, "memcpy_gbps", f[R_MEMCPY]);
	json_spread(json, "eviction_gbps", f[R_EVICT]);
	json_spread(json, "eviction_memcpy_ratio", f[R_EVICT_RATIO]);
	json_rounds(json, "eviction_memcpy_ratio", figures[R_EVICT_RATIO], rounds);
	json_spread(json, "eviction_copy_gbps", f[R_EVICT_COPY]);
	json_spread(json, "eviction_copy_memcpy_ratio", f[R_EVICT_COPY_RATIO]);
	json_spread(json, "eviction_whole_gbps", f[R_EVICT_WHOLE]);
	json_spread(json, "eviction_whole_memcpy_ratio", f[R_EVICT_WHOLE_RATIO]);
	json_spread(json, "eviction_64MiB_setup_ms", f[R_SETUP_MS]);
	json_spread(json, "eviction_64MiB_copy_ms", f[R_COPY]);
	json_spread(json, "eviction_64MiB_other_ms", f[R_OTHER_MS]);
	json_spread(json, "victim_pause_ms", f[R_PAUSE]);
	json_spread(json, "victim_pause_over_copy_ms", f[R_PAUSE_OVER_COPY]);
	json_spread(json, "return_pass_gbps", f[R_RETURN]);
	json_spread(json, "return_pass_memcpy_ratio", f[R_RETURN_RATIO]);
	json_rounds(json, "return_pass_memcpy_ratio", figures[R_RETURN_RATIO], rounds);
	json_spread(json, "return_pass_whole_gbps", f[R_RETURN_WHOLE]);
	json_spread(json, "return_pass_whole_memcpy_ratio", f[R_RETURN_WHOLE_RATIO]);
	json_spread(json, "return_pass_ms", f[R_RETURN_MS]);
	json_spread(json, "return_pass_setup_fraction", f[R_RETURN_SETUP_FRACTION]);
	json_spread(json, "return_pass_setup_ms_per_chunk", f[R_RETURN_SETUP_MS_PER_CHUNK]);
	json_number(json, "relocation_rounds", rounds);
	memcpy_ref_fini(&m);
}

/* Evictions into fresh host memory: a core without a host buffer cache
 * (every eviction takes new host buffers, whose pages fault in on the
 * copy engine's first write) against memcpy into a fresh mapping. */
static void bench_relocation_fresh(int rounds)
{
	static double figures[R_FIGURES][MAX_ROUNDS];
	struct spread f[R_FIGURES];
	struct eviction_setup e;
	struct memcpy_ref m;

	memcpy_ref_init(&m, RELOCATION_BYTES);
	eviction_setup(&e, false);
	relocation_rounds(&e, &m, true, rounds, figures, f);
	printf("4. Eviction into fresh host memory (no host buffer cache: first-touch page faults) "
	       "against memcpy into a fresh,\n"
	       "   untouched 256 MiB shared mapping (faults included); %d rounds as in "
	       "3\n", rounds);
	printf("   host memcpy, fresh destination:    %s GB/s\n", SPREAD("%.2f", f[R_MEMCPY]));
	printf("   eviction, set-up + copy:           %s GB/s = %s of fresh memcpy\n",
	       SPREAD("%.2f", f[R_EVICT]), SPREAD("%.2f", f[R_EVICT_RATIO]));
	printf("     host buffers reused per round: %s of 64 (expected 0)\n\n",
	       SPREAD("%.0f", f[R_CACHE_HITS]));
	json_spread(json, "memcpy_fresh_gbps", f[R_MEMCPY]);
	json_spread(json, "eviction_fresh_gbps", f[R_EVICT]);
	json_spread(json, "eviction_fresh_memcpy_ratio", f[R_EVICT_RATIO]);
	memcpy_ref_fini(&m);
}

/* ---- 5. submission path --------------------------------------------------- */

static void bench_submission(void)
{
	enum { SUBMISSIONS = 20000 };
	struct vgpu_core_stats before, after;
	struct vgpu_buffer_info buffer;
	struct sim_guest *guest;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int64_t last = 0;
	struct setup s;
	struct vgpu_vm *vm;
	uint64_t t0;
	int err;

	setup(&s, 64 * MiB, 4 * MiB, true);
	vm = make_vm(&s, "guest", 1);
	if ((err = sim_guest_create(s.hal, vm, &guest)))
		die("guest", err);
	if ((err = vgpu_core_alloc(vm, 64 * KiB, VGPU_PRIORITY_DEFAULT, 0, &buffer, &core_error)))
		die("alloc", err);
	sim_guest_set_interrupts(guest, false);
	vgpu_core_stats(s.core, &before);
	t0 = vgpu_monotonic_ns();
	for (int i = 0; i < SUBMISSIONS; i++) {
		uint32_t n = vgpu_push_memset(words, buffer.gpu_va, (uint32_t)i, 4096);

		while ((last = sim_guest_submit(guest, words, n)) == -EAGAIN)
			;
		if (last < 0)
			die("submit", (int)last);
	}
	sim_guest_wait(guest, (uint64_t)last, 60000);
	vgpu_core_stats(s.core, &after);
	printf("5. Submission path without memory pressure\n");
	printf("   %d guest submissions (MEMSET + semaphore, no interrupt) in %.1f ms\n",
	       SUBMISSIONS, (vgpu_monotonic_ns() - t0) / 1e6);
	printf("   core entry points invoked meanwhile: %" PRIu64 " (expected 0: %s), HAL events "
	       "handled: %" PRIu64 "\n",
	       after.entries - before.entries, after.entries == before.entries ? "ok" : "NOT OK",
	       after.events - before.events);
	json_number(json, "submission_core_entries", (double)(after.entries - before.entries));
	sim_guest_destroy(guest, false);
	teardown(&s);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: core-bench [--rounds N] [--alloc-rounds N] [--alloc-cycles N] [--json "
	        "FILE]\n"
	        "  --rounds N        relocation rounds (default 9; fresh-memory rounds: half)\n"
	        "  --alloc-rounds N  allocation latency rounds (default 5)\n"
	        "  --alloc-cycles N  alloc/free cycles per size and round (default 2000)\n"
	        "  --json FILE       also write the figures as one JSON object\n"
	        "Rounds are at most %d.\n",
	        MAX_ROUNDS);
}

static int rounds_arg(const char *text)
{
	int n = atoi(text);

	if (n < 1 || n > MAX_ROUNDS) {
		usage(stderr);
		exit(2);
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "alloc-rounds", required_argument, NULL, 'a' },
		{ "alloc-cycles", required_argument, NULL, 'c' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int rounds = 9, alloc_rounds = 5, alloc_cycles = 2000, opt, fresh_rounds;
	const char *json_path = NULL;
	double load_before;
	uint64_t t0 = vgpu_monotonic_ns();

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'r':
			rounds = rounds_arg(optarg);
			break;
		case 'a':
			alloc_rounds = rounds_arg(optarg);
			break;
		case 'c':
			alloc_cycles = atoi(optarg);
			if (alloc_cycles < 100) {
				usage(stderr);
				return 2;
			}
			break;
		case 'j':
			json_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (json_path)
		json = json_object_new_object();
	fresh_rounds = rounds / 2 > 3 ? rounds / 2 : 3;
	load_before = load_average_1m();
	printf("core-bench: GPUswap core on simgpu (wall-clock figures of this host; load average "
	       "%.2f)\n\n", load_before);
	bench_alloc_latency(alloc_rounds, alloc_cycles);
	bench_relocation(rounds);
	bench_relocation_fresh(fresh_rounds);
	bench_submission();
	printf("\ncore-bench: done in %.1f s (load average %.2f)\n", (vgpu_monotonic_ns() - t0) / 1e9,
	       load_average_1m());
	json_number(json, "core_bench_load_average_before", load_before);
	json_number(json, "core_bench_load_average_after", load_average_1m());
	json_number(json, "core_bench_seconds", (vgpu_monotonic_ns() - t0) / 1e9);
	if (json_write(json, json_path, "core-bench"))
		return 1;
	json_object_put(json);
	return 0;
}
