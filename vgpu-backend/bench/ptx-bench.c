// SPDX-License-Identifier: MIT
/*
 * ptx-bench - the PTX executor's speed (issue 22): thread instructions per
 * second on one host core for a compute-bound kernel (straight-line float
 * and integer arithmetic) and a memory-bound one (a triad over a flat
 * memory behind the executor's callbacks), and the same with every host
 * core. The kernels are tests/ptx/bench_kernels.cu, run from their
 * committed PTX. Every figure is measured over --rounds rounds (default 3)
 * and printed as median (min..max); --json FILE writes them as
 * ptx_thread_instructions_per_s_{compute,memory}[_all_cores] (with _min,
 * _max) for bench.json.
 *
 * Usage: ptx-bench [--rounds N] [--json FILE]
 */
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "ptx_exec.h"
#include "ptx_module.h"

#define MAX_ROUNDS 20
#define BASE 0x100000000ull

struct flat {
	uint8_t *bytes;
	uint64_t size;
	pthread_mutex_t lock;
};

static int flat_read(void *ctx, uint64_t va, void *dst, size_t n)
{
	struct flat *f = ctx;
	if (va < BASE || va - BASE + n > f->size)
		return -1;
	memcpy(dst, f->bytes + (va - BASE), n);
	return 0;
}

static int flat_write(void *ctx, uint64_t va, const void *src, size_t n)
{
	struct flat *f = ctx;
	if (va < BASE || va - BASE + n > f->size)
		return -1;
	memcpy(f->bytes + (va - BASE), src, n);
	return 0;
}

static int flat_atomic(void *ctx, uint64_t va, const struct ptx_atomic *op, uint64_t *old)
{
	struct flat *f = ctx;
	if (va < BASE || va - BASE + op->size > f->size)
		return -1;
	pthread_mutex_lock(&f->lock);
	uint64_t o = 0;
	memcpy(&o, f->bytes + (va - BASE), op->size);
	uint64_t v = ptx_atomic_apply(op, o);
	memcpy(f->bytes + (va - BASE), &v, op->size);
	pthread_mutex_unlock(&f->lock);
	*old = o;
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *t = malloc((size_t)n + 1);
	if (!t || fread(t, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(t);
		return NULL;
	}
	fclose(f);
	t[n] = '\0';
	*len = (size_t)n;
	return t;
}

/* Thread instructions per second of one launch, or -1. */
static double measure(const struct ptx_launch *base, unsigned threads)
{
	struct ptx_launch L = *base;
	struct ptx_launch_result r;
	L.host_threads = threads;
	double t0 = now();
	int rc = ptx_launch(&L, &r);
	double t = now() - t0;
	if (rc) {
		fprintf(stderr, "ptx-bench: launch failed: %s\n", r.message);
		return -1;
	}
	return (double)r.stats.thread_instructions / t;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *json_path = NULL;
	int rounds = 3, opt;
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (opt == 'r') {
			rounds = atoi(optarg);
			if (rounds < 1 || rounds > MAX_ROUNDS) {
				fprintf(stderr, "ptx-bench: --rounds 1..%d\n", MAX_ROUNDS);
				return 2;
			}
		} else if (opt == 'j') {
			json_path = optarg;
		} else {
			fprintf(stderr, "usage: ptx-bench [--rounds N] [--json FILE]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	size_t len;
	char *text = read_file(PTX_CORPUS_DIR "/bench_kernels.ptx", &len);
	if (!text) {
		fprintf(stderr, "ptx-bench: cannot read %s/bench_kernels.ptx\n", PTX_CORPUS_DIR);
		return 1;
	}
	struct ptx_module *m;
	struct ptx_error err;
	if (ptx_module_load(text, len, "bench_kernels.ptx", &m, &err)) {
		fprintf(stderr, "ptx-bench: %s\n", err.message);
		return 1;
	}
	free(text);

	enum { N = 1 << 22 };
	struct flat mem = { calloc(1, 16ull * N), 16ull * N, PTHREAD_MUTEX_INITIALIZER };
	if (!mem.bytes)
		return 1;
	struct ptx_memory_ops ops = { flat_read, flat_write, flat_atomic };
	uint64_t a = BASE, b = BASE + 4ull * N, c = BASE + 8ull * N, out = BASE + 12ull * N;
	int iters = 256, n = N;
	float s = 1.5f;
	uint8_t pc[16], pm[32];
	memcpy(pc, &out, 8);
	memcpy(pc + 8, &iters, 4);
	memcpy(pm, &a, 8);
	memcpy(pm + 8, &b, 8);
	memcpy(pm + 16, &c, 8);
	memcpy(pm + 24, &s, 4);
	memcpy(pm + 28, &n, 4);
	struct ptx_launch compute = {
		.module = m, .entry = (uint32_t)ptx_module_find_entry(m, "compute_bound"),
		.grid = { 64, 1, 1 }, .block = { 256, 1, 1 }, .params = pc,
		.param_size = ptx_module_entry(m, (size_t)ptx_module_find_entry(m, "compute_bound"))->param_bytes,
		.mem = &ops, .mem_ctx = &mem,
	};
	struct ptx_launch memory = compute;
	memory.entry = (uint32_t)ptx_module_find_entry(m, "memory_bound");
	memory.grid.x = 256;
	memory.params = pm;
	memory.param_size = ptx_module_entry(m, memory.entry)->param_bytes;

	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 1)
		cores = 1;
	struct {
		const char *key;
		const struct ptx_launch *launch;
		unsigned threads;
		double v[MAX_ROUNDS];
	} figs[4] = {
		{ "ptx_thread_instructions_per_s_compute", &compute, 1, { 0 } },
		{ "ptx_thread_instructions_per_s_memory", &memory, 1, { 0 } },
		{ "ptx_thread_instructions_per_s_compute_all_cores", &compute, (unsigned)cores, { 0 } },
		{ "ptx_thread_instructions_per_s_memory_all_cores", &memory, (unsigned)cores, { 0 } },
	};
	printf("ptx-bench: %d rounds, median (min..max); %ld host cores, load %.2f\n",
	       rounds, cores, load_average_1m());
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 4; i++)
			if ((figs[i].v[r] = measure(figs[i].launch, figs[i].threads)) < 0)
				return 1;
	struct json_object *json = json_path ? json_object_new_object() : NULL;
	for (int i = 0; i < 4; i++) {
		struct spread sp = spread_of(figs[i].v, rounds);
		printf("  %-50s %s\n", figs[i].key, SPREAD("%.3g", sp));
		json_spread(json, figs[i].key, sp);
	}
	json_number(json, "ptx_bench_host_cores", (double)cores);
	int rc = json_write(json, json_path, "ptx-bench") ? 1 : 0;
	if (json)
		json_object_put(json);
	ptx_module_free(m);
	free(mem.bytes);
	return rc;
}
