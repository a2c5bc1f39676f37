// SPDX-License-Identifier: MIT
/*
 * cuda-bench - GPUswap on a real NVIDIA GPU: the core driving cudagpu,
 * measured side by side with what the CUDA driver does without it, in one
 * run (issue 13, "What to build" item 4):
 *
 *  1. relocation bandwidth: a VM's chunks evicted to host memory (another
 *     VM's allocation forces it) and brought back by the return pass, against
 *     cuMemcpy device <-> pinned host of the same size (goal: >= 80 %);
 *  2. the STREAM kernel through a channel on resident chunks and on evicted
 *     ones (remote access over the bus);
 *  3. eviction latency per chunk size (2 ... 128 MiB), split into the
 *     driver's mapping calls (cuMemUnmap / cuMemMap / cuMemSetAccess) and
 *     the copy;
 *  5. submission overhead: small FILL kernels through a guest-visible GPFIFO
 *     ring (one entry each) against the same launches made directly;
 *  4. (--um, last) the peer a user would pick instead: CUDA Unified Memory
 *     oversubscription (cuMemAllocManaged, the GPU ballooned down to the
 *     same budget) against GPUswap with the random and priority policies,
 *     the same kernel sequence, at 1.25x, 1.5x and 2x the budget.
 *
 * Each phase runs its rounds with the compared figures interleaved (their
 * order alternates); a figure is reported as median, min and max over the
 * rounds, and a ratio is computed per round and then summarised.
 *
 * The phases run in the order listed (1, 2, 3, 5, then 4).
 *
 * Every byte the kernels and the relocations touch is checked against the
 * CPU references of vgpu/abi/kernels.h (read back through the HAL's
 * aperture, or by the CHECKSUM kernel): a single wrong word fails the run
 * (exit 1), since figures from wrong results are worthless. Every driver
 * and core call is checked, every wait has a deadline, every phase a time
 * limit (--phase-limit: no new round starts after it), and the whole run a
 * watchdog (--timeout).
 *
 * Output: a report on stdout, --json FILE (bench-cuda.json) and --markdown
 * FILE (RESULTS.md), the latter rendered from the JSON; both are written
 * only when the whole run succeeded. Meanwhile FILE.partial holds the
 * phases finished so far (and, after a failure, why it failed). --render
 * FILE re-renders the Markdown from a JSON file without a GPU.
 *
 * Exit status: 0 done, 1 failed (a check, a driver or core error, a time
 * limit), 2 usage, 77 no usable GPU here (the reason is printed).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench-common.h"
#include "builtin_kernels.h"
#include "cuda_api.h"
#include "sim_guest_window.h"
#include "vgpu/core.h"
#include "vgpu/cudagpu.h"
#include "vgpu/hal_open.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"
#include "vgpu/util.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define NS_PER_S 1000000000ull

#define MAX_ROUNDS 50u
#define GOAL_OVER_PEAK 0.80
#define BUFFER_BYTES (64 * MiB)      /* how VMs allocate their data */
#define FENCE_TIMEOUT_S 60u          /* any single wait for the GPU */
#define STREAM_RESIDENT_PASSES 64u   /* phase 2: enough to dwarf the ring */
#define STREAM_EVICTED_PASSES 2u     /*          remote access is ~50x slower */
#define SUBMIT_FILL_BYTES (64 * KiB) /* phase 5: a small kernel */
#define MAX_LAUNCHES 30000u          /* phase 5: pushbuffer space */
#define UM_SWEEPS 3u                 /* phase 4: STREAM sweeps over the set */
#define UM_HOT_PASSES 4u             /*          passes per sweep, hot buffers */
#define UM_MARGIN (64 * MiB)         /*          free VRAM beside the budget */
#define UM_BALLOON_PIECE GiB
#define UM_BALLOON_MAX 512u
#define HOST_LIMIT_DEFAULT (3 * GiB) /* the GPU's host NUMA node is small */

static const double um_factors[] = { 1.25, 1.5, 2.0 };
#define UM_FACTORS (sizeof(um_factors) / sizeof(um_factors[0]))
static const unsigned latency_chunk_mib[] = { 2, 4, 8, 16, 32, 64, 128 };
#define LATENCY_SIZES (sizeof(latency_chunk_mib) / sizeof(latency_chunk_mib[0]))

enum phase {
	PHASE_RELOCATION = 1u << 0,
	PHASE_STREAM = 1u << 1,
	PHASE_LATENCY = 1u << 2,
	PHASE_UM = 1u << 3,
	PHASE_SUBMIT = 1u << 4,
};

struct options {
	struct vgpu_hal_spec spec;
	char gpu[32];
	uint64_t vram, chunk, evict, stream, um_vram, host_limit;
	unsigned rounds, um_rounds, launches, latency_evictions;
	unsigned phase_limit_s, timeout_s;
	unsigned phases;
	bool quick;
	const char *json_path, *markdown_path, *render_path;
	char command[1024];
};

static struct options opt;

/* ------------------------------------------------------------------ basics */

static double seconds_since(uint64_t start)
{
	return (double)(vgpu_monotonic_ns() - start) / 1e9;
}

/* The driver, opened beside cudagpu in the same (primary) context, for the
 * baselines: cuMemcpy, plain launches, managed memory, the balloon. */
static struct cuda_api api;
static bool api_loaded, context_retained;
static cg_device cu_device;
static cg_context cu_context;
static struct cudagpu_kernels kernels;
static cg_stream cu_stream;
static int sm_count;

/* Phase 4's balloon: GPU memory taken so that managed memory gets only the
 * budget. Released before anything else happens, failures included. */
static cg_deviceptr balloon[UM_BALLOON_MAX];
static unsigned balloon_count;

static void balloon_release(void)
{
	cg_result first = CG_SUCCESS;

	while (balloon_count) {
		cg_result r = api.cuMemFree(balloon[--balloon_count]);

		if (first == CG_SUCCESS)
			first = r;
	}
	if (first != CG_SUCCESS)
		fprintf(stderr, "cuda-bench: freeing the balloon failed (CUDA error %d)\n", first);
}

/* While measuring, the figures so far also go to JSON_PATH.partial after
 * each phase (and the reason when the run fails), so that a late failure
 * keeps what was measured and checked; JSON_PATH itself and the Markdown are
 * only written when the whole run succeeded. */
static struct json_object *report;
static char partial_path[4096];

static bool write_json_file(struct json_object *root, const char *path)
{
	char tmp[4200];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	return !json_object_to_file_ext(tmp, root, JSON_C_TO_STRING_PRETTY |
	                                           JSON_C_TO_STRING_NOSLASHESCAPE) &&
	       !rename(tmp, path);
}

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cuda-bench: FAILED: %s\n", message);
	if (api_loaded)
		balloon_release();
	if (report && partial_path[0]) {
		struct json_object *root = report;

		report = NULL; /* once */
		json_object_object_add(root, "complete", json_object_new_boolean(false));
		json_object_object_add(root, "failure", json_object_new_string(message));
		if (write_json_file(root, partial_path))
			fprintf(stderr, "cuda-bench: what finished before the failure is in %s "
			        "(\"complete\": false); nothing else was written\n", partial_path);
	}
	exit(1);
}

/* A driver call that must succeed. */
static void cu(cg_result r, const char *what)
{
	char text[200];

	if (r != CG_SUCCESS)
		fail("%s: %s", what, cuda_api_error(&api, r, text, sizeof(text)));
}

/* The last core call's failure (the core calls below pass it; one thread). */
static struct vgpu_error core_error;

/* A core or HAL call that must succeed. */
static void ok(int err, const char *what)
{
	if (err < 0)
		fail("%s: %s (%s)", what, strerror(-err), vgpu_error_msg(&core_error));
}

static void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);

	if (!p)
		fail("out of host memory (%zu x %zu bytes)", count, size);
	return p;
}

static void watchdog(int sig)
{
	static const char msg[] = "cuda-bench: FAILED: the run exceeded --timeout; a GPU "
	                          "operation may be stuck (nothing was written)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t next_seed = 0x5eedull;

static uint64_t new_seed(void)
{
	return mix64(next_seed++);
}

static const char *mib(uint64_t bytes, char *buf, size_t len)
{
	if (bytes % MiB)
		snprintf(buf, len, "%.1f MiB", (double)bytes / MiB);
	else
		snprintf(buf, len, "%" PRIu64 " MiB", bytes / MiB);
	return buf;
}

/* ------------------------------------------------------ parallel CPU work */

typedef void (*range_fn)(void *ctx, uint64_t begin, uint64_t end);

struct range_task {
	range_fn fn;
	void *ctx;
	uint64_t begin, end;
};

static void *range_thread(void *arg)
{
	struct range_task *task = arg;

	task->fn(task->ctx, task->begin, task->end);
	return NULL;
}

/* fn over [0, count) split among up to 16 threads (at least grain items
 * each). */
static void parallel_for(uint64_t count, uint64_t grain, range_fn fn, void *ctx)
{
	struct range_task tasks[16];
	pthread_t threads[16];
	bool started[16] = { false };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t n = cpus < 1 ? 1 : cpus > 16 ? 16 : (uint64_t)cpus;

	if (!count)
		return;
	if (grain && count / grain + 1 < n)
		n = count / grain + 1;
	for (uint64_t i = 0; i < n; i++)
		tasks[i] = (struct range_task){ fn, ctx, count * i / n, count * (i + 1) / n };
	for (uint64_t i = 1; i < n; i++)
		started[i] = !pthread_create(&threads[i], NULL, range_thread, &tasks[i]);
	range_thread(&tasks[0]);
	for (uint64_t i = 1; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			range_thread(&tasks[i]);
	}
}

/* ---------------------------------------------------------- CPU reference */

/* n STREAM passes as one affine map x -> mul * x + add (mod 2^64). */
struct affine {
	uint64_t mul, add;
};

static struct affine stream_affine(uint32_t passes)
{
	struct affine a = { 1, 0 };

	for (uint32_t i = 0; i < passes; i++) {
		a.mul *= VGPU_STREAM_MULTIPLIER;
		a.add = a.add * VGPU_STREAM_MULTIPLIER + VGPU_STREAM_INCREMENT;
	}
	return a;
}

/* Word k of a range FILLed with seed and then streamed (a). */
static inline uint64_t expected_word(uint64_t seed, uint64_t k, struct affine a)
{
	return a.mul * vgpu_fill_word(seed, k * 8) + a.add;
}

/* The shortcut above must agree with simgpu's own references. */
static void self_test_reference(void)
{
	enum { WORDS = 1024 };
	static uint64_t buf[WORDS];
	const uint64_t seed = 0x1234abcdull;
	const unsigned passes = 5;
	struct affine a = stream_affine(passes);
	uint64_t sum = VGPU_CHECKSUM_INITIAL;

	vgpu_kernel_reference_fill(buf, sizeof(buf), seed);
	vgpu_kernel_reference_stream(buf, sizeof(buf), passes);
	for (unsigned k = 0; k < WORDS; k++) {
		if (le64toh(buf[k]) != expected_word(seed, k, a))
			fail("internal: the benchmark's STREAM shortcut disagrees with "
			     "vgpu_kernel_reference_stream at word %u", k);
		sum = vgpu_checksum_step(sum, expected_word(seed, k, a));
	}
	if (sum != vgpu_kernel_reference_checksum(buf, sizeof(buf)) ||
	    sum != vgpu_kernel_reference_fill_stream_checksum(seed, sizeof(buf), passes))
		fail("internal: the benchmark's checksum disagrees with vgpu_kernel_reference_checksum");
}

/* A range of a VM's (or managed) memory the benchmark tracks word by word:
 * FILLed with seed, then streamed passes times. */
struct piece {
	uint64_t va; /* GPU VA in the VM's address space, or a device pointer */
	uint64_t bytes;
	uint64_t seed;
	uint32_t passes;
};

static uint64_t piece_checksum(const struct piece *p)
{
	struct affine a = stream_affine(p->passes);
	uint64_t sum = VGPU_CHECKSUM_INITIAL;

	for (uint64_t k = 0; k < p->bytes / 8; k++)
		sum = vgpu_checksum_step(sum, expected_word(p->seed, k, a));
	return sum;
}

struct checksum_job {
	const struct piece *pieces;
	uint64_t *out;
};

static void checksum_range(void *ctx, uint64_t begin, uint64_t end)
{
	struct checksum_job *job = ctx;

	for (uint64_t i = begin; i < end; i++)
		job->out[i] = piece_checksum(&job->pieces[i]);
}

/* ---------------------------------------------------- checking data read back */

#define STAGING_WORDS ((64 * MiB) / 8)
#define MAX_SEGMENTS 1024u

struct verify_segment {
	uint64_t staging_word, words, piece_word;
	uint64_t va, seed;
	uint32_t passes;
	struct affine a;
};

struct verify_job {
	const uint64_t *staging;
	const struct verify_segment *segs;
	size_t nsegs;
	pthread_mutex_t lock;
	bool bad;
	uint64_t bad_va, got, want, seed;
	uint32_t passes;
};

static void verify_range(void *ctx, uint64_t begin, uint64_t end)
{
	struct verify_job *job = ctx;
	size_t lo = 0, hi = job->nsegs;

	while (hi - lo > 1) { /* the segment holding word begin */
		size_t mid = (lo + hi) / 2;

		if (job->segs[mid].staging_word <= begin)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t s = lo; s < job->nsegs && begin < end; s++) {
		const struct verify_segment *seg = &job->segs[s];
		uint64_t stop = seg->staging_word + seg->words;

		if (stop > end)
			stop = end;
		for (uint64_t w = begin; w < stop; w++) {
			uint64_t k = seg->piece_word + (w - seg->staging_word);
			uint64_t want = expected_word(seg->seed, k, seg->a);
			uint64_t got = le64toh(job->staging[w]);

			if (got != want) {
				pthread_mutex_lock(&job->lock);
				if (!job->bad) {
					job->bad = true;
					job->bad_va = seg->va + k * 8;
					job->got = got;
					job->want = want;
					job->seed = seg->seed;
					job->passes = seg->passes;
				}
				pthread_mutex_unlock(&job->lock);
				return;
			}
		}
		begin = stop;
	}
}

static uint64_t *staging;
static struct verify_segment segments[MAX_SEGMENTS];

/* Read pieces back through the GPU's aperture (privileged CPU access,
 * whatever memory they are in) and check every word; fail on the first
 * wrong one. Returns the bytes checked. */
static uint64_t verify_pieces(struct vgpu_hal_as *as, const struct piece *pieces, size_t count,
                              const char *what)
{
	uint64_t in_piece = 0, checked = 0;
	size_t i = 0;

	if (!staging)
		staging = xcalloc(STAGING_WORDS, sizeof(*staging));
	while (i < count) {
		struct verify_job job = { .staging = staging, .segs = segments };
		uint64_t used = 0;
		size_t nsegs = 0;

		while (i < count && used < STAGING_WORDS && nsegs < MAX_SEGMENTS) {
			const struct piece *p = &pieces[i];
			uint64_t take = p->bytes / 8 - in_piece;
			int err;

			if (take > STAGING_WORDS - used)
				take = STAGING_WORDS - used;
			err = vgpu_hal_as_read(as, p->va + in_piece * 8, staging + used, take * 8);
			if (err)
				fail("%s: reading back GPU VA %#" PRIx64 " (%" PRIu64 " bytes): %s", what,
				     p->va + in_piece * 8, take * 8, strerror(-err));
			segments[nsegs++] = (struct verify_segment){
				.staging_word = used, .words = take, .piece_word = in_piece,
				.va = p->va, .seed = p->seed, .passes = p->passes,
				.a = stream_affine(p->passes),
			};
			used += take;
			in_piece += take;
			if (in_piece == p->bytes / 8) {
				i++;
				in_piece = 0;
			}
		}
		job.nsegs = nsegs;
		pthread_mutex_init(&job.lock, NULL);
		parallel_for(used, 1u << 16, verify_range, &job);
		pthread_mutex_destroy(&job.lock);
		if (job.bad)
			fail("%s: DATA CHECK FAILED at GPU VA %#" PRIx64 ": read %#" PRIx64
			     ", expected "
			     "%#" PRIx64 " (FILL seed %#" PRIx64 ", then %u STREAM passes)",
			     what, job.bad_va, job.got, job.want, job.seed, job.passes);
		checked += used * 8;
	}
	return checked;
}

/* --------------------------------------------------------------- figures */

struct series {
	double v[MAX_ROUNDS];
	unsigned n;
};

static void series_add(struct series *s, double x)
{
	if (s->n < MAX_ROUNDS)
		s->v[s->n++] = x;
}

/* median, min and max over the rounds; NaN (JSON null) for none. */
static void summarise(const struct series *s, double *median, double *min, double *max)
{
	struct spread spread;

	if (!s->n) {
		*median = *min = *max = NAN;
		return;
	}
	spread = spread_of(s->v, (int)s->n);
	*median = spread.median;
	*min = spread.min;
	*max = spread.max;
}

static double median_of(const struct series *s)
{
	double median, min, max;

	summarise(s, &median, &min, &max);
	return median;
}

static struct json_object *json_finite(double x)
{
	char text[40];

	if (!isfinite(x))
		return NULL; /* JSON null */
	snprintf(text, sizeof(text), "%.6g", x);
	return json_object_new_double_s(x, text);
}

static void put_number(struct json_object *o, const char *key, double x)
{
	json_object_object_add(o, key, json_finite(x));
}

static void put_int(struct json_object *o, const char *key, uint64_t x)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)x));
}

static void put_string(struct json_object *o, const char *key, const char *text)
{
	json_object_object_add(o, key, json_object_new_string(text));
}

/* key = median, key_min, key_max. */
static void put_series(struct json_object *o, const char *key, const struct series *s)
{
	double median, min, max;
	char name[96];

	summarise(s, &median, &min, &max);
	put_number(o, key, median);
	snprintf(name, sizeof(name), "%s_min", key);
	put_number(o, name, min);
	snprintf(name, sizeof(name), "%s_max", key);
	put_number(o, name, max);
}

static void print_series(const char *label, const struct series *s, const char *unit,
                         const char *note)
{
	double median, min, max;

	summarise(s, &median, &min, &max);
	printf("   %-38s %10.3f %-5s [%.3f .. %.3f]%s%s\n", label, median, unit, min, max,
	       note ? "  " : "", note ? note : "");
}

/* Per-phase bookkeeping: rounds done, and whether the time limit cut it. */
struct phase_clock {
	const char *name;
	uint64_t start;
	unsigned rounds;
	bool truncated;
};

static bool phase_continue(struct phase_clock *clock, unsigned planned)
{
	if (clock->rounds >= planned)
		return false;
	if (clock->rounds && seconds_since(clock->start) > opt.phase_limit_s) {
		clock->truncated = true;
		printf("   (phase time limit of %u s reached after %u of %u rounds)\n",
		       opt.phase_limit_s, clock->rounds, planned);
		return false;
	}
	return true;
}

static void phase_done(struct json_object *root, const struct phase_clock *clock)
{
	struct json_object *phases, *p = json_object_new_object();

	if (!json_object_object_get_ex(root, "phases", &phases)) {
		phases = json_object_new_object();
		json_object_object_add(root, "phases", phases);
	}
	put_int(p, "rounds", clock->rounds);
	json_object_object_add(p, "truncated_by_time_limit", json_object_new_boolean(clock->truncated));
	put_number(p, "seconds", seconds_since(clock->start));
	json_object_object_add(phases, clock->name, p);
	printf("   (%s: %u rounds in %.1f s)\n\n", clock->name, clock->rounds,
	       seconds_since(clock->start));
	if (partial_path[0]) {
		json_object_object_add(root, "complete", json_object_new_boolean(false));
		if (!write_json_file(root, partial_path))
			fail("cannot write %s: %s", partial_path, strerror(errno));
	}
}

/* -------------------------------------------------------- a guest's channel */

/*
 * A VM's command channel driven the way a guest drives it: the core's
 * shadowed channel, whose window (control page + GPFIFO ring) this process
 * maps as the guest would, and "guest RAM" (pushbuffers, a semaphore,
 * kernel results) in host memory mapped into the VM's address space with
 * 4 KiB pages at a range reserved from the core. Submitting writes a
 * pushbuffer, a GPFIFO entry and GP_PUT; nothing enters the core.
 */
#define GUEST_ENTRIES 8192u
#define GUEST_PUSH_BYTES (1u << 20)
#define GUEST_SEMAPHORE_OFFSET GUEST_PUSH_BYTES
#define GUEST_RESULTS_OFFSET (GUEST_PUSH_BYTES + 4096u)
#define GUEST_RESULT_SLOTS 8192u
#define GUEST_RAM_BYTES (GUEST_RESULTS_OFFSET + GUEST_RESULT_SLOTS * 8u)
#define MAX_CHANNEL_IDS 256u

struct guest {
	struct vgpu_hal *hal;
	struct vgpu_vm *vm;
	struct vgpu_core_channel *channel;
	struct vgpu_hal_channel_info info;
	struct sim_guest_window window; /* which pages the guest sees, the trap */
	/* Guest RAM. */
	struct vgpu_hal_host_buf *ram;
	uint8_t *ram_cpu;
	uint64_t ram_va, ram_iova;
	uint32_t put, push_used, entry_start;
	uint64_t sequence;
};

/* VGPU_EVENT_FENCE per channel id since its guest was created: the
 * interrupt of fence n (they arrive in order) makes it >= n. */
static _Atomic uint64_t fence_events[MAX_CHANNEL_IDS];

static void on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	if (event->channel_id < MAX_CHANNEL_IDS)
		atomic_fetch_add(&fence_events[event->channel_id], 1);
}

static struct guest *guest_create(struct vgpu_hal *hal, struct vgpu_vm *vm)
{
	struct guest *g = xcalloc(1, sizeof(*g));
	uint64_t *pages = xcalloc(GUEST_RAM_BYTES / 4096, sizeof(*pages));
	int err;

	g->hal = hal;
	g->vm = vm;
	sim_guest_window_init(&g->window, &g->info, GUEST_ENTRIES);
	ok(vgpu_core_channel_create(vm, GUEST_ENTRIES, &sim_guest_window_ops, &g->window,
	                            &g->channel, &g->info, &core_error),
	   "creating a VM's channel");
	if (g->info.layout.gpfifo_entries != GUEST_ENTRIES || g->info.id >= MAX_CHANNEL_IDS)
		fail("the GPU gave a channel with %u ring entries (asked %u) and id %u",
		     g->info.layout.gpfifo_entries, GUEST_ENTRIES, g->info.id);
	atomic_store(&fence_events[g->info.id], 0);
	ok(vgpu_core_reserve_va(vm, GUEST_RAM_BYTES, &g->ram_va, &core_error),
	   "reserving guest RAM's VA");
	ok(vgpu_hal_host_alloc(hal, GUEST_RAM_BYTES, &g->ram), "allocating guest RAM");
	g->ram_cpu = vgpu_hal_host_cpu_pointer(hal, g->ram);
	if (!g->ram_cpu)
		fail("guest RAM (registered host memory) has no CPU mapping");
	err = vgpu_hal_iommu_map(hal, g->ram, 0, GUEST_RAM_BYTES, &g->ram_iova);
	ok(err, "IOMMU-mapping guest RAM");
	for (uint64_t i = 0; i < GUEST_RAM_BYTES / 4096; i++)
		pages[i] = g->ram_iova + i * 4096;
	ok(vgpu_hal_as_map(vgpu_core_vm_address_space(vm), g->ram_va, VGPU_PAGE_4K,
	                   GUEST_RAM_BYTES / 4096, VGPU_TARGET_SYSMEM_COHERENT, pages, 0),
	   "mapping guest RAM with 4 KiB pages");
	memset(g->ram_cpu, 0, GUEST_RAM_BYTES);
	free(pages);
	return g;
}

static void guest_destroy(struct guest *g)
{
	if (!g)
		return;
	vgpu_core_channel_destroy(g->channel);
	ok(vgpu_core_release_va(g->vm, g->ram_va, &core_error), "releasing guest RAM's VA");
	ok(vgpu_hal_iommu_unmap(g->hal, g->ram_iova, GUEST_RAM_BYTES), "unmapping guest RAM");
	vgpu_hal_host_free(g->hal, g->ram);
	sim_guest_window_fini(&g->window);
	free(g);
}

static uint64_t guest_semaphore(const struct guest *g)
{
	return le64toh(__atomic_load_n((uint64_t *)(g->ram_cpu + GUEST_SEMAPHORE_OFFSET),
	                               __ATOMIC_ACQUIRE));
}

static uint64_t guest_result(const struct guest *g, uint32_t slot)
{
	return le64toh(__atomic_load_n((uint64_t *)(g->ram_cpu + GUEST_RESULTS_OFFSET +
	                                            (uint64_t)slot * 8),
	                               __ATOMIC_ACQUIRE));
}

static uint64_t guest_result_va(const struct guest *g, uint32_t slot)
{
	return g->ram_va + GUEST_RESULTS_OFFSET + (uint64_t)slot * 8;
}

static const char *fault_name(enum vgpu_hal_error_cause cause)
{
	static const char *const names[] = {
		[VGPU_FAULT_NONE] = "none", [VGPU_FAULT_UNMAPPED] = "unmapped",
		[VGPU_FAULT_READ_ONLY] = "read-only", [VGPU_FAULT_PRIVILEGED] = "privileged",
		[VGPU_FAULT_IOMMU] = "IOMMU", [VGPU_FAULT_BAD_COMMAND] = "bad command",
		[VGPU_FAULT_BAD_KERNEL_ARGS] = "bad kernel arguments",
		[VGPU_FAULT_TIMEOUT] = "watchdog timeout",
	};

	return (unsigned)cause < sizeof(names) / sizeof(names[0]) && names[cause] ? names[cause]
	                                                                          : "?";
}

static void guest_check_alive(struct guest *g, const char *what)
{
	struct vgpu_hal_event error;

	if (vgpu_hal_channel_state(vgpu_core_channel_hal(g->channel), &error) ==
	    VGPU_CHANNEL_ERROR)
		fail("%s: the GPU killed the VM's channel: %s fault at GPU VA %#" PRIx64
		     " (a kernel over chunks in different memories, or outside the VM's "
		     "mappings, is refused)",
		     what, fault_name(error.cause), error.address);
}

/* Append a command to the pushbuffer being built. */
static void guest_push(struct guest *g, const uint32_t *words, uint32_t count)
{
	if (g->push_used + count * 4 > GUEST_PUSH_BYTES)
		fail("internal: %u bytes of pushbuffer are not enough for one batch",
		     GUEST_PUSH_BYTES);
	memcpy(g->ram_cpu + g->push_used, words, count * 4);
	g->push_used += count * 4;
}

/* Publish what was pushed since the last entry as one GPFIFO entry. */
static void guest_entry(struct guest *g, const char *what)
{
	uint32_t bytes = g->push_used - g->entry_start;
	uint64_t start = vgpu_monotonic_ns();

	if (!bytes)
		return;
	for (unsigned spins = 0;; spins++) {
		void *control, *gpfifo;
		bool room;

		sim_guest_window_enter(&g->window, &control, &gpfifo);
		room = ((g->put + 1) & (GUEST_ENTRIES - 1)) != vgpu_control_read_gp_get(control);
		if (room) {
			vgpu_gpfifo_write(gpfifo, GUEST_ENTRIES, g->put, g->ram_va + g->entry_start,
			                  bytes);
			g->put = (g->put + 1) & (GUEST_ENTRIES - 1);
			vgpu_control_write_gp_put(control, g->put);
			vgpu_control_ring_doorbell(control);
		}
		sim_guest_window_leave(&g->window);
		if (room)
			break;
		if (spins % 1024 == 1023)
			guest_check_alive(g, what);
		if (vgpu_monotonic_ns() - start > FENCE_TIMEOUT_S * NS_PER_S)
			fail("%s: the GPU fetched no ring entry for %u s (the ring is full)", what,
			     FENCE_TIMEOUT_S);
		sched_yield();
	}
	vgpu_hal_channel_kick(vgpu_core_channel_hal(g->channel));
	g->entry_start = g->push_used;
}

/* Release a fence behind everything submitted and wait for it. */
static void guest_fence(struct guest *g, const char *what)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t start, seq, interrupt_seen = 0;
	unsigned spins = 0;

	seq = ++g->sequence;
	guest_push(g, words,
	           vgpu_push_semaphore_release(words, g->ram_va + GUEST_SEMAPHORE_OFFSET, seq,
	                                       true));
	guest_entry(g, what);
	start = vgpu_monotonic_ns();
	while (guest_semaphore(g) < seq) {
		uint64_t waited = vgpu_monotonic_ns() - start;

		if (++spins % 1024 == 0) {
			guest_check_alive(g, what);
			/* The interrupt comes after the semaphore write: give the
			 * write a second to show, then say which one is missing. */
			if (!interrupt_seen && atomic_load(&fence_events[g->info.id]) >= seq)
				interrupt_seen = vgpu_monotonic_ns();
			if (interrupt_seen && vgpu_monotonic_ns() - interrupt_seen > NS_PER_S &&
			    guest_semaphore(g) < seq)
				fail("%s: the fence's interrupt arrived but its semaphore in guest "
				     "RAM still reads %" PRIu64 " (expected %" PRIu64 ")",
				     what, guest_semaphore(g), seq);
		}
		if (waited > FENCE_TIMEOUT_S * NS_PER_S)
			fail("%s: no fence after %u s (semaphore %" PRIu64 ", expected %" PRIu64 ")",
			     what, FENCE_TIMEOUT_S, guest_semaphore(g), seq);
		if (waited < 20 * 1000000ull) {
			sched_yield();
		} else {
			struct timespec pause = { 0, 100000 };

			nanosleep(&pause, NULL);
		}
	}
	guest_check_alive(g, what);
	/* Everything before the fence has run: the pushbuffers are free. */
	g->push_used = g->entry_start = 0;
}

/* ------------------------------------------------------------------ tenants */

/* A VM of the core with its buffers, its tracked pieces (one per chunk) and,
 * when it runs kernels, a guest channel. */
struct cuda_bench_tenant {
	struct vgpu_hal *hal;
	struct vgpu_vm *vm;
	struct guest *guest;
	uint64_t chunk;
	struct vgpu_buffer_info *buffers;
	size_t *first_piece; /* per buffer */
	size_t buffer_count, buffer_capacity;
	struct piece *pieces;
	size_t piece_count, piece_capacity;
};

static struct vgpu_core *core_new(struct vgpu_hal *hal, uint64_t chunk, const char *policy,
                                  uint64_t host_cache)
{
	struct vgpu_core_config config;
	struct vgpu_core *core;

	vgpu_core_config_defaults(&config);
	config.chunk_bytes = chunk;
	config.policy = policy;
	config.seed = 42;
	config.host_budget_bytes = opt.host_limit;
	config.host_cache_bytes = host_cache < opt.host_limit ? host_cache : opt.host_limit;
	config.return_interval_ms = 0; /* return passes run when the benchmark says */
	config.on_fence = on_fence;
	ok(vgpu_core_create(hal, &config, &core, &core_error),
	   "creating the GPUswap core on cudagpu");
	return core;
}

static void tenant_init(struct cuda_bench_tenant *t, struct vgpu_core *core, struct vgpu_hal *hal,
			const char *name, uint32_t weight, uint64_t chunk, bool with_guest)
{
	struct vgpu_vm_config config;

	memset(t, 0, sizeof(*t));
	t->hal = hal;
	t->chunk = chunk;
	vgpu_vm_config_defaults(&config);
	config.name = name;
	config.weight = weight;
	config.chunk_bytes = chunk;
	ok(vgpu_core_vm_create(core, &config, &t->vm, &core_error), "creating a VM");
	if (with_guest)
		t->guest = guest_create(hal, t->vm);
}

static struct vgpu_hal_as *tenant_as(struct cuda_bench_tenant *t)
{
	return vgpu_core_vm_address_space(t->vm);
}

/* Allocate a buffer (evicting if VRAM is short); track its chunks as pieces
 * when pieces is set. Returns the buffer's index. */
static size_t tenant_alloc(struct cuda_bench_tenant *t, uint64_t bytes, unsigned priority,
			   bool pieces, const char *what)
{
	struct vgpu_buffer_info info;

	ok(vgpu_core_alloc(t->vm, bytes, priority, 0, &info, &core_error), what);
	if (t->buffer_count == t->buffer_capacity) {
		t->buffer_capacity = t->buffer_capacity ? 2 * t->buffer_capacity : 64;
		t->buffers = realloc(t->buffers, t->buffer_capacity * sizeof(*t->buffers));
		t->first_piece = realloc(t->first_piece, t->buffer_capacity * sizeof(size_t));
		if (!t->buffers || !t->first_piece)
			fail("out of host memory");
	}
	t->buffers[t->buffer_count] = info;
	t->first_piece[t->buffer_count] = t->piece_count;
	for (uint64_t off = 0; pieces && off < info.bytes; off += t->chunk) {
		if (t->piece_count == t->piece_capacity) {
			t->piece_capacity = t->piece_capacity ? 2 * t->piece_capacity : 256;
			t->pieces = realloc(t->pieces, t->piece_capacity * sizeof(*t->pieces));
			if (!t->pieces)
				fail("out of host memory");
		}
		t->pieces[t->piece_count++] = (struct piece){
			.va = info.gpu_va + off,
			.bytes = info.bytes - off < t->chunk ? info.bytes - off : t->chunk,
			.seed = new_seed(),
		};
	}
	return t->buffer_count++;
}

static void tenant_free_all(struct cuda_bench_tenant *t)
{
	for (size_t i = 0; i < t->buffer_count; i++)
		ok(vgpu_core_free(t->vm, t->buffers[i].handle, &core_error), "freeing a buffer");
	t->buffer_count = 0;
	t->piece_count = 0;
}

static void tenant_destroy(struct cuda_bench_tenant *t)
{
	guest_destroy(t->guest);
	vgpu_core_vm_destroy(t->vm);
	free(t->buffers);
	free(t->first_piece);
	free(t->pieces);
	memset(t, 0, sizeof(*t));
}

/* FILL pieces [first, first + count) through the channel, wait. */
static void tenant_fill(struct cuda_bench_tenant *t, size_t first, size_t count)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	for (size_t i = first; i < first + count; i++) {
		const struct piece *p = &t->pieces[i];

		guest_push(t->guest, words, vgpu_push_launch_fill(words, p->va, p->bytes, p->seed));
		if ((i - first) % 4096 == 4095)
			guest_entry(t->guest, "filling buffers");
		t->pieces[i].passes = 0;
	}
	guest_entry(t->guest, "filling buffers");
	guest_fence(t->guest, "filling buffers");
}

/* Allocate (in BUFFER_BYTES buffers, each a multiple of the chunk) and fill
 * all of the free VRAM but less than one chunk. */
static void tenant_fill_vram(struct cuda_bench_tenant *t)
{
	uint64_t buffer = BUFFER_BYTES > t->chunk ? BUFFER_BYTES / t->chunk * t->chunk : t->chunk;
	uint64_t free_bytes = vgpu_hal_vram_free_bytes(t->hal), tail;
	size_t before = t->piece_count;

	for (unsigned i = 0; free_bytes >= buffer && i < 100000; i++) {
		tenant_alloc(t, buffer, VGPU_PRIORITY_DEFAULT, true, "filling VRAM");
		free_bytes -= buffer;
	}
	tail = free_bytes / t->chunk * t->chunk;
	if (tail)
		tenant_alloc(t, tail, VGPU_PRIORITY_DEFAULT, true, "filling VRAM");
	if (vgpu_hal_vram_free_bytes(t->hal) >= t->chunk)
		fail("internal: %" PRIu64 " bytes of VRAM still free after filling it",
		     vgpu_hal_vram_free_bytes(t->hal));
	tenant_fill(t, before, t->piece_count - before);
}

/* Which pieces (each exactly one chunk) have their chunk at location: into
 * out (the pieces) and/or flags (per piece); returns how many. */
static size_t tenant_locate(struct cuda_bench_tenant *t, enum vgpu_chunk_location location,
			    struct piece *out, bool *flags)
{
	size_t n = 0, max = 0;
	struct vgpu_chunk_info *chunks;

	for (size_t b = 0; b < t->buffer_count; b++) {
		size_t count = (t->buffers[b].bytes + t->chunk - 1) / t->chunk;

		if (count > max)
			max = count;
	}
	chunks = xcalloc(max, sizeof(*chunks));
	for (size_t b = 0; b < t->buffer_count; b++) {
		int count = vgpu_core_buffer_chunks(t->vm, t->buffers[b].handle, chunks, max,
		                                    &core_error);

		ok(count, "listing a buffer's chunks");
		for (int c = 0; c < count; c++) {
			size_t index = t->first_piece[b] + (size_t)c;
			const struct piece *p = index < t->piece_count ? &t->pieces[index] : NULL;

			if (!p || p->va != chunks[c].gpu_va || p->bytes != chunks[c].bytes)
				fail("internal: chunk %d of a buffer is %" PRIu64 " bytes at %#" PRIx64
				     ", the benchmark tracks it differently",
				     c, chunks[c].bytes, chunks[c].gpu_va);
			if (flags)
				flags[index] = chunks[c].location == location;
			if (chunks[c].location == location) {
				if (out)
					out[n] = *p;
				n++;
			}
		}
	}
	free(chunks);
	return n;
}

static size_t tenant_pieces_at(struct cuda_bench_tenant *t, enum vgpu_chunk_location location,
			       struct piece *out)
{
	return tenant_locate(t, location, out, NULL);
}

static void tenant_piece_flags(struct cuda_bench_tenant *t, enum vgpu_chunk_location location,
			       bool *flags)
{
	tenant_locate(t, location, NULL, flags);
}

static void tenant_verify(struct cuda_bench_tenant *t, bool only_evicted, const char *what)
{
	struct piece *sel;
	size_t n;

	if (!only_evicted) {
		verify_pieces(tenant_as(t), t->pieces, t->piece_count, what);
		return;
	}
	sel = xcalloc(t->piece_count, sizeof(*sel));
	n = tenant_pieces_at(t, VGPU_CHUNK_EVICTED, sel);
	verify_pieces(tenant_as(t), sel, n, what);
	free(sel);
}

static uint64_t vm_evicted_bytes(struct vgpu_vm *vm)
{
	struct vgpu_vm_stats stats;

	vgpu_core_vm_stats(vm, &stats);
	return stats.evicted_bytes;
}

static void return_all(struct vgpu_core *core, struct cuda_bench_tenant *t,
		       struct vgpu_core_time *d)
{
	struct vgpu_core_stats a, b;
	int moved;

	vgpu_core_stats(core, &a);
	moved = vgpu_core_return_pass(core, &core_error);
	ok(moved, "the return pass");
	vgpu_core_stats(core, &b);
	if (d)
		vgpu_core_time_delta(d, &a.return_pass, &b.return_pass);
	if (vm_evicted_bytes(t->vm))
		fail("the return pass left %" PRIu64 " bytes of the VM evicted with VRAM free",
		     vm_evicted_bytes(t->vm));
}

/* ------------------------------------------------------- driver, baselines */

static void driver_open(void)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	int err = cuda_api_load(&api, NULL, &error);

	if (err)
		fail("opening the CUDA driver for the baselines: %s", vgpu_error_msg(&error));
	api_loaded = true;
	cu(api.cuInit(0), "cuInit");
	cu(api.cuDriverGetVersion(&api.driver_version), "cuDriverGetVersion");
	cu(api.cuDeviceGet(&cu_device, opt.spec.cuda_device), "cuDeviceGet");
	cu(api.cuDevicePrimaryCtxRetain(&cu_context, cu_device), "cuDevicePrimaryCtxRetain");
	context_retained = true;
	cu(api.cuCtxSetCurrent(cu_context), "cuCtxSetCurrent");
	cu(api.cuDeviceGetAttribute(&sm_count, CG_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                            cu_device),
	   "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
	if (cudagpu_kernels_load(&api, &kernels, sm_count, &error))
		fail("loading the built-in kernels for the direct launches: %s",
		     vgpu_error_msg(&error));
	cu(api.cuStreamCreate(&cu_stream, CG_STREAM_NON_BLOCKING), "cuStreamCreate");
}

static void driver_close(void)
{
	if (!api_loaded)
		return;
	balloon_release();
	cu(api.cuCtxSetCurrent(cu_context), "cuCtxSetCurrent");
	if (cu_stream)
		cu(api.cuStreamDestroy(cu_stream), "cuStreamDestroy");
	cu_stream = NULL;
	cudagpu_kernels_unload(&api, &kernels);
	if (context_retained)
		cu(api.cuDevicePrimaryCtxRelease(cu_device), "cuDevicePrimaryCtxRelease");
	context_retained = false;
	cuda_api_unload(&api);
	api_loaded = false;
}

/* cudagpu sets its context current on each thread it is called from; the
 * baselines run on the same thread, in the same (primary) context. */
static void driver_enter(void)
{
	cu(api.cuCtxSetCurrent(cu_context), "cuCtxSetCurrent");
}

struct pattern_job {
	uint64_t *words;
	uint64_t seed;
	_Atomic uint64_t bad_word; /* UINT64_MAX: none */
};

static void pattern_write(void *ctx, uint64_t begin, uint64_t end)
{
	struct pattern_job *job = ctx;

	for (uint64_t k = begin; k < end; k++)
		job->words[k] = vgpu_fill_word(job->seed, k * 8);
}

static void pattern_check(void *ctx, uint64_t begin, uint64_t end)
{
	struct pattern_job *job = ctx;

	for (uint64_t k = begin; k < end; k++)
		if (job->words[k] != vgpu_fill_word(job->seed, k * 8)) {
			atomic_store(&job->bad_word, k); /* any thread's word will do */
			return;
		}
}

/* One timed cuMemcpyAsync on the benchmark's stream; GB/s. */
static double timed_copy(cg_deviceptr dst, cg_deviceptr src, uint64_t bytes, cg_event start,
                         cg_event end, const char *what)
{
	float ms = 0;

	cu(api.cuEventRecord(start, cu_stream), "cuEventRecord");
	cu(api.cuMemcpyAsync(dst, src, bytes, cu_stream), what);
	cu(api.cuEventRecord(end, cu_stream), "cuEventRecord");
	cu(api.cuEventSynchronize(end), what);
	cu(api.cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
	if (ms <= 0)
		fail("%s: the copy took %f ms", what, (double)ms);
	return (double)bytes / ((double)ms * 1e6);
}

/* ------------------------------------------------ 1. relocation bandwidth */

struct peak_buffers {
	cg_deviceptr device;
	void *host;
	uint64_t bytes;
	cg_event start, end;
	struct pattern_job pattern;
};

/* The best of two copies each way; the host buffer's pattern survives the
 * round trip (part of it is wiped before copying back). */
static void memcpy_peaks(struct peak_buffers *pb, double *dtoh, double *htod)
{
	cg_deviceptr host = (cg_deviceptr)(uintptr_t)pb->host;
	uint64_t wipe = pb->bytes < 2 * MiB ? pb->bytes : 2 * MiB;

	driver_enter();
	*htod = *dtoh = 0;
	for (int i = 0; i < 2; i++) {
		double x = timed_copy(pb->device, host, pb->bytes, pb->start, pb->end,
		                      "cuMemcpy pinned host -> device");

		*htod = x > *htod ? x : *htod;
	}
	memset(pb->host, 0, wipe);
	memset((char *)pb->host + pb->bytes - wipe, 0, wipe);
	for (int i = 0; i < 2; i++) {
		double x = timed_copy(host, pb->device, pb->bytes, pb->start, pb->end,
		                      "cuMemcpy device -> pinned host");

		*dtoh = x > *dtoh ? x : *dtoh;
	}
	atomic_store(&pb->pattern.bad_word, UINT64_MAX);
	parallel_for(pb->bytes / 8, 1u << 20, pattern_check, &pb->pattern);
	if (atomic_load(&pb->pattern.bad_word) != UINT64_MAX)
		fail("cuMemcpy baseline: DATA CHECK FAILED at byte %" PRIu64
		     " after the host -> device -> host round trip",
		     atomic_load(&pb->pattern.bad_word) * 8);
}

struct relocation_figures {
	double evict, evict_pass, evict_copy, ret, ret_pass, ret_copy; /* GB/s */
	struct vgpu_core_time evict_time, return_time; /* where the pauses went */
};

/* The parts of a relocation's pause, in microseconds (the PTE rewrite
 * overlaps the copies: the parts add up to more than the pause). */
enum pause_part { PART_PAUSE, PART_DRAIN, PART_SETUP, PART_COPY, PART_PTE, PART_RESUME, PARTS };
static const char *const pause_part_names[PARTS] = {
	"pause_us", "drain_us", "setup_us", "copy_wait_us", "page_table_us", "resume_us",
};

static void pause_parts(const struct vgpu_core_time *t, double *us)
{
	us[PART_PAUSE] = (double)t->pause_ns / 1e3;
	us[PART_DRAIN] = (double)t->drain_ns / 1e3;
	us[PART_SETUP] = (double)t->setup_ns / 1e3;
	us[PART_COPY] = (double)t->copy_ns / 1e3;
	us[PART_PTE] = (double)t->page_table_ns / 1e3;
	us[PART_RESUME] = (double)t->resume_ns / 1e3;
}

/*
 * The driver's floor for the PTE rewrite of a relocation: what cuMemUnmap,
 * cuMemMap and cuMemSetAccess cost to point a range from 2 MiB device
 * allocations at 2 MiB host-NUMA allocations (an eviction's rewrite) and
 * back (a return's), in the 64 MiB runs cudagpu uses, with no copy and no
 * core around them. Measured on FLOOR_BYTES (the costs grow with the size)
 * and given as GB/s, so that it compares with the relocation's figures.
 */
#define FLOOR_BYTES (256 * MiB)
#define FLOOR_RUN (64 * MiB)

struct remap_floor {
	cg_mem_handle device[FLOOR_BYTES / (2 * MiB)], host[FLOOR_BYTES / (2 * MiB)];
	cg_deviceptr va;
	int numa_id;
};

static void floor_set_access(cg_deviceptr va, uint64_t bytes)
{
	struct cg_mem_access_desc desc;

	memset(&desc, 0, sizeof(desc));
	desc.location.type = CG_MEM_LOCATION_TYPE_DEVICE;
	desc.location.id = cu_device;
	desc.flags = CG_MEM_ACCESS_FLAGS_PROT_READWRITE;
	cu(api.cuMemSetAccess(va, bytes, &desc, 1), "cuMemSetAccess (driver floor)");
}

static void floor_open(struct remap_floor *fl)
{
	struct cg_mem_allocation_prop prop;
	size_t i, n = FLOOR_BYTES / (2 * MiB);

	driver_enter();
	if (api.cuDeviceGetAttribute(&fl->numa_id, CG_DEVICE_ATTRIBUTE_HOST_NUMA_ID, cu_device) !=
	            CG_SUCCESS || fl->numa_id < 0)
		fl->numa_id = 0;
	memset(&prop, 0, sizeof(prop));
	prop.type = CG_MEM_ALLOCATION_TYPE_PINNED;
	for (i = 0; i < n; i++) {
		prop.location.type = CG_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = cu_device;
		cu(api.cuMemCreate(&fl->device[i], 2 * MiB, &prop, 0), "cuMemCreate (driver floor)");
		prop.location.type = CG_MEM_LOCATION_TYPE_HOST_NUMA;
		prop.location.id = fl->numa_id;
		cu(api.cuMemCreate(&fl->host[i], 2 * MiB, &prop, 0),
		   "cuMemCreate host NUMA (driver floor)");
	}
	cu(api.cuMemAddressReserve(&fl->va, FLOOR_BYTES, 2 * MiB, 0, 0),
	   "cuMemAddressReserve (driver floor)");
	for (i = 0; i < n; i++)
		cu(api.cuMemMap(fl->va + i * 2 * MiB, 2 * MiB, 0, fl->device[i], 0),
		   "cuMemMap (driver floor)");
	floor_set_access(fl->va, FLOOR_BYTES);
}

/* Point the range at `to`, run by run; seconds. */
static double floor_remap(struct remap_floor *fl, const cg_mem_handle *to)
{
	uint64_t start = vgpu_monotonic_ns(), run, i;

	for (run = 0; run < FLOOR_BYTES; run += FLOOR_RUN) {
		cu(api.cuMemUnmap(fl->va + run, FLOOR_RUN), "cuMemUnmap (driver floor)");
		for (i = 0; i < FLOOR_RUN / (2 * MiB); i++)
			cu(api.cuMemMap(fl->va + run + i * 2 * MiB, 2 * MiB, 0,
			                to[run / (2 * MiB) + i], 0),
			   "cuMemMap (driver floor)");
		floor_set_access(fl->va + run, FLOOR_RUN);
	}
	return seconds_since(start);
}

/* GB/s of the eviction's and the return's rewrite. */
static void floor_measure(struct remap_floor *fl, double *evict, double *ret)
{
	driver_enter();
	*evict = (double)FLOOR_BYTES / floor_remap(fl, fl->host) / 1e9;
	*ret = (double)FLOOR_BYTES / floor_remap(fl, fl->device) / 1e9;
}

static void floor_close(struct remap_floor *fl)
{
	size_t i, n = FLOOR_BYTES / (2 * MiB);

	driver_enter();
	cu(api.cuMemUnmap(fl->va, FLOOR_BYTES), "cuMemUnmap (driver floor)");
	cu(api.cuMemAddressFree(fl->va, FLOOR_BYTES), "cuMemAddressFree (driver floor)");
	for (i = 0; i < n; i++) {
		api.cuMemRelease(fl->device[i]);
		api.cuMemRelease(fl->host[i]);
	}
}

/* What the driver allows a relocation at most, as a share of the peak: the
 * copy at the peak plus the floor's rewrite one after the other, or
 * overlapped perfectly (the slower of the two). */
static double floor_serial(double peak, double rewrite)
{
	return 1.0 / (1.0 / peak + 1.0 / rewrite) / peak;
}

static double floor_overlapped(double peak, double rewrite)
{
	return (rewrite < peak ? rewrite : peak) / peak;
}

/* GB/s of one relocation: the victim's pause (suspended to resumed: drain,
 * copies, PTE rewrite, VRAM scrub and free, resume), the whole pass (also
 * policy, host buffers and, for an eviction, mapping the new buffer) and the
 * copy engine alone (queuing + waiting). */
static void relocation_rates(const struct vgpu_core_time *d, double *relocation, double *pass,
                             double *copy)
{
	double bytes = (double)d->bytes_copied;

	*relocation = bytes / (double)d->pause_ns;
	*pass = bytes / (double)d->total_ns;
	*copy = bytes / (double)(d->setup_ns + d->copy_ns);
}

static void evict_and_return(struct vgpu_core *core, struct cuda_bench_tenant *victim,
			     struct cuda_bench_tenant *allocator, uint64_t bytes,
			     struct relocation_figures *f)
{
	struct vgpu_core_stats a, b;
	struct vgpu_core_time d, r;
	struct vgpu_buffer_info info;
	uint64_t free_before = vgpu_hal_vram_free_bytes(victim->hal), evicted;

	vgpu_core_stats(core, &a);
	ok(vgpu_core_alloc(allocator->vm, bytes, VGPU_PRIORITY_DEFAULT, 0, &info, &core_error),
	   "allocating in a second VM to force an eviction");
	vgpu_core_stats(core, &b);
	vgpu_core_time_delta(&d, &a.eviction, &b.eviction);
	evicted = vm_evicted_bytes(victim->vm);
	if (d.passes != 1 || d.vm_suspensions != 1 || d.bytes_copied + free_before < bytes ||
	    d.bytes_copied != evicted || !d.pause_ns || !d.total_ns)
		fail("the eviction moved %" PRIu64 " bytes in %" PRIu64 " passes suspending %" PRIu64
		     " VMs; expected one pass suspending the victim only and evicting at least %"
		     PRIu64 " bytes of it (it has %" PRIu64 " evicted)",
		     d.bytes_copied, d.passes, d.vm_suspensions, bytes - free_before, evicted);
	tenant_verify(victim, true, "relocation: evicted chunks");
	ok(vgpu_core_free(allocator->vm, info.handle, &core_error),
	   "freeing the second VM's buffer");
	return_all(core, victim, &r);
	if (r.bytes_copied != evicted || r.vm_suspensions != 1 || !r.pause_ns || !r.total_ns)
		fail("the return pass moved %" PRIu64 " bytes back suspending %" PRIu64 " VMs; %"
		     PRIu64 " were evicted from one VM", r.bytes_copied, r.vm_suspensions, evicted);
	tenant_verify(victim, false, "relocation: all chunks after the return pass");
	relocation_rates(&d, &f->evict, &f->evict_pass, &f->evict_copy);
	relocation_rates(&r, &f->ret, &f->ret_pass, &f->ret_copy);
	f->evict_time = d;
	f->return_time = r;
}

static void phase_relocation(struct vgpu_hal *hal, struct json_object *root)
{
	struct phase_clock clock = { .name = "relocation", .start = vgpu_monotonic_ns() };
	struct series evict = { 0 }, evict_pass = { 0 }, evict_copy = { 0 };
	struct series ret = { 0 }, ret_pass = { 0 }, ret_copy = { 0 };
	struct series dtoh = { 0 }, htod = { 0 }, evict_ratio = { 0 }, ret_ratio = { 0 };
	struct series floor_evict = { 0 }, floor_ret = { 0 };
	struct series floor_evict_serial = { 0 }, floor_ret_serial = { 0 };
	struct series floor_evict_overlap = { 0 }, floor_ret_overlap = { 0 };
	struct series evict_parts[PARTS] = { 0 }, ret_parts[PARTS] = { 0 };
	struct json_object *parts;
	static struct remap_floor fl;
	double fe, fr, us[PARTS];
	struct peak_buffers pb = { .bytes = opt.evict };
	struct relocation_figures f;
	struct cuda_bench_tenant victim, allocator;
	struct vgpu_core *core;
	double x, y;
	char size[32], note[64];

	printf("1. Relocation bandwidth: evict %s of a VM (%s chunks, another VM's allocation "
	       "forces it), return it (return pass); cuMemcpy of the same size as the peak\n",
	       mib(opt.evict, size, sizeof(size)), mib(opt.chunk, note, sizeof(note)));
	core = core_new(hal, opt.chunk, "random", opt.evict + 4 * opt.chunk);
	tenant_init(&victim, core, hal, "victim", 1, opt.chunk, true);
	tenant_init(&allocator, core, hal, "allocator", VGPU_CORE_WEIGHT_MAX, opt.chunk, false);
	tenant_fill_vram(&victim);

	driver_enter();
	cu(api.cuMemAlloc(&pb.device, pb.bytes), "cuMemAlloc (baseline)");
	cu(api.cuMemHostAlloc(&pb.host, pb.bytes, CG_MEMHOSTALLOC_PORTABLE),
	   "cuMemHostAlloc (baseline)");
	cu(api.cuEventCreate(&pb.start, CG_EVENT_DEFAULT), "cuEventCreate");
	cu(api.cuEventCreate(&pb.end, CG_EVENT_DEFAULT), "cuEventCreate");
	pb.pattern.words = pb.host;
	pb.pattern.seed = 0xba5e;
	parallel_for(pb.bytes / 8, 1u << 20, pattern_write, &pb.pattern);

	/* Warm-up, not counted: host buffers for evicted chunks come fresh from
	 * the driver the first time (the core caches them afterwards). */
	evict_and_return(core, &victim, &allocator, opt.evict, &f);
	memcpy_peaks(&pb, &x, &y);
	floor_open(&fl);
	floor_measure(&fl, &fe, &fr);
	while (phase_continue(&clock, opt.rounds)) {
		if (clock.rounds % 2 == 0) {
			memcpy_peaks(&pb, &x, &y);
			floor_measure(&fl, &fe, &fr);
			evict_and_return(core, &victim, &allocator, opt.evict, &f);
		} else {
			evict_and_return(core, &victim, &allocator, opt.evict, &f);
			floor_measure(&fl, &fe, &fr);
			memcpy_peaks(&pb, &x, &y);
		}
		series_add(&floor_evict, fe);
		series_add(&floor_ret, fr);
		series_add(&floor_evict_serial, floor_serial(x, fe));
		series_add(&floor_ret_serial, floor_serial(y, fr));
		series_add(&floor_evict_overlap, floor_overlapped(x, fe));
		series_add(&floor_ret_overlap, floor_overlapped(y, fr));
		pause_parts(&f.evict_time, us);
		for (int p = 0; p < PARTS; p++)
			series_add(&evict_parts[p], us[p]);
		pause_parts(&f.return_time, us);
		for (int p = 0; p < PARTS; p++)
			series_add(&ret_parts[p], us[p]);
		series_add(&evict, f.evict);
		series_add(&evict_pass, f.evict_pass);
		series_add(&evict_copy, f.evict_copy);
		series_add(&ret, f.ret);
		series_add(&ret_pass, f.ret_pass);
		series_add(&ret_copy, f.ret_copy);
		series_add(&dtoh, x);
		series_add(&htod, y);
		series_add(&evict_ratio, f.evict / x);
		series_add(&ret_ratio, f.ret / y);
		printf("   round %u: evict %.2f GB/s, return %.2f GB/s, cuMemcpy DtoH %.2f, "
		       "HtoD %.2f GB/s\n",
		       clock.rounds + 1, f.evict, f.ret, x, y);
		clock.rounds++;
	}
	print_series("eviction (victim suspended to resumed)", &evict, "GB/s", NULL);
	print_series("  whole allocation with its eviction", &evict_pass, "GB/s", NULL);
	print_series("  copy engine only (queue + wait)", &evict_copy, "GB/s", NULL);
	print_series("return (victim suspended to resumed)", &ret, "GB/s", NULL);
	print_series("  whole return pass", &ret_pass, "GB/s", NULL);
	print_series("  copy engine only (queue + wait)", &ret_copy, "GB/s", NULL);
	print_series("cuMemcpy device -> pinned host", &dtoh, "GB/s", NULL);
	print_series("cuMemcpy pinned host -> device", &htod, "GB/s", NULL);
	snprintf(note, sizeof(note), "goal >= %.2f: %s", GOAL_OVER_PEAK,
	         median_of(&evict_ratio) >= GOAL_OVER_PEAK ? "met" : "NOT met");
	print_series("eviction / DtoH peak", &evict_ratio, "", note);
	snprintf(note, sizeof(note), "goal >= %.2f: %s", GOAL_OVER_PEAK,
	         median_of(&ret_ratio) >= GOAL_OVER_PEAK ? "met" : "NOT met");
	print_series("return / HtoD peak", &ret_ratio, "", note);

	put_int(root, "relocation_bytes", opt.evict);
	put_series(root, "evict_gbps", &evict);
	put_series(root, "evict_pass_gbps", &evict_pass);
	put_series(root, "evict_copy_gbps", &evict_copy);
	put_series(root, "return_gbps", &ret);
	put_series(root, "return_pass_gbps", &ret_pass);
	put_series(root, "return_copy_gbps", &ret_copy);
	put_series(root, "memcpy_dtoh_gbps", &dtoh);
	put_series(root, "memcpy_htod_gbps", &htod);
	put_series(root, "evict_over_peak", &evict_ratio);
	put_series(root, "return_over_peak", &ret_ratio);
	put_number(root, "relocation_goal_over_peak", GOAL_OVER_PEAK);
	print_series("driver floor: eviction's PTE rewrite alone", &floor_evict, "GB/s", NULL);
	print_series("driver floor: return's PTE rewrite alone", &floor_ret, "GB/s", NULL);
	print_series("  eviction at most, copy then rewrite", &floor_evict_serial, "of peak", NULL);
	print_series("  eviction at most, overlapped", &floor_evict_overlap, "of peak", NULL);
	print_series("  return at most, copy then rewrite", &floor_ret_serial, "of peak", NULL);
	print_series("  return at most, overlapped", &floor_ret_overlap, "of peak", NULL);
	put_int(root, "floor_bytes", FLOOR_BYTES);
	put_series(root, "floor_evict_rewrite_gbps", &floor_evict);
	put_series(root, "floor_return_rewrite_gbps", &floor_ret);
	put_series(root, "floor_evict_serial_over_peak", &floor_evict_serial);
	put_series(root, "floor_evict_overlapped_over_peak", &floor_evict_overlap);
	put_series(root, "floor_return_serial_over_peak", &floor_ret_serial);
	put_series(root, "floor_return_overlapped_over_peak", &floor_ret_overlap);
	parts = json_object_new_object();
	for (int p = 0; p < PARTS; p++)
		put_series(parts, pause_part_names[p], &evict_parts[p]);
	json_object_object_add(root, "evict_pause_parts", parts);
	parts = json_object_new_object();
	for (int p = 0; p < PARTS; p++)
		put_series(parts, pause_part_names[p], &ret_parts[p]);
	json_object_object_add(root, "return_pause_parts", parts);
	for (int p = 0; p < PARTS; p++) {
		char label[64];

		snprintf(label, sizeof(label), "eviction pause part %s", pause_part_names[p]);
		print_series(label, &evict_parts[p], "us", NULL);
		snprintf(label, sizeof(label), "return pause part %s", pause_part_names[p]);
		print_series(label, &ret_parts[p], "us", NULL);
	}
	floor_close(&fl);

	driver_enter();
	cu(api.cuEventDestroy(pb.start), "cuEventDestroy");
	cu(api.cuEventDestroy(pb.end), "cuEventDestroy");
	cu(api.cuMemFree(pb.device), "cuMemFree (baseline)");
	cu(api.cuMemFreeHost(pb.host), "cuMemFreeHost (baseline)");
	tenant_destroy(&allocator);
	tenant_destroy(&victim);
	vgpu_core_destroy(core);
	phase_done(root, &clock);
}

/* ------------------------------------- 2. STREAM, resident against evicted */

static void require_location(struct cuda_bench_tenant *t, enum vgpu_chunk_location location,
			     const char *what)
{
	size_t n = tenant_pieces_at(t, location, NULL);

	if (n != t->piece_count)
		fail("%s: %zu of the VM's %zu chunks are %s, expected all", what, n, t->piece_count,
		     location == VGPU_CHUNK_RESIDENT ? "resident" : "evicted");
}

/* STREAM over the whole buffer through the channel; seconds. */
static double run_stream(struct cuda_bench_tenant *t, uint32_t passes, const char *what)
{
	const struct vgpu_buffer_info *buf = &t->buffers[0];
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t t0;

	t0 = vgpu_monotonic_ns();
	guest_push(t->guest, words, vgpu_push_launch_stream(words, buf->gpu_va, buf->bytes, passes));
	guest_entry(t->guest, what);
	guest_fence(t->guest, what);
	for (size_t i = 0; i < t->piece_count; i++)
		t->pieces[i].passes += passes;
	return seconds_since(t0);
}

static void phase_stream(struct vgpu_hal *hal, struct json_object *root)
{
	struct phase_clock clock = { .name = "stream", .start = vgpu_monotonic_ns() };
	struct series resident = { 0 }, evicted = { 0 }, ratio = { 0 };
	struct vgpu_buffer_info pressure_buf;
	struct cuda_bench_tenant app, pressure;
	struct vgpu_core *core;
	uint64_t s = opt.stream, pressure_bytes;
	char size[32];

	printf("2. STREAM through a VM's channel on %s: resident chunks against evicted ones "
	       "(kernels reach host memory over the bus); %u and %u passes\n",
	       mib(s, size, sizeof(size)), STREAM_RESIDENT_PASSES, STREAM_EVICTED_PASSES);
	core = core_new(hal, opt.chunk, "random", s + 4 * opt.chunk);
	tenant_init(&app, core, hal, "stream", 1, opt.chunk, true);
	tenant_init(&pressure, core, hal, "pressure", VGPU_CORE_WEIGHT_MAX, opt.chunk, false);
	tenant_alloc(&app, s, VGPU_PRIORITY_DEFAULT, true, "allocating the STREAM buffer");
	tenant_fill(&app, 0, app.piece_count);
	/* Exactly the STREAM buffer must go to make room for this. */
	pressure_bytes = vgpu_hal_vram_free_bytes(hal) + s;
	run_stream(&app, 1, "STREAM warm-up");

	while (phase_continue(&clock, opt.rounds)) {
		double tr = 0, te = 0;

		for (int step = 0; step < 2; step++) {
			bool evicted_step = (step == 0) == (clock.rounds % 2 == 1);

			if (!evicted_step) {
				require_location(&app, VGPU_CHUNK_RESIDENT, "STREAM on resident chunks");
				tr = run_stream(&app, STREAM_RESIDENT_PASSES, "STREAM on resident chunks");
				continue;
			}
			ok(vgpu_core_alloc(pressure.vm, pressure_bytes, VGPU_PRIORITY_DEFAULT, 0,
			                   &pressure_buf, &core_error),
			   "allocating in a second VM to evict the STREAM buffer");
			require_location(&app, VGPU_CHUNK_EVICTED, "STREAM on evicted chunks");
			te = run_stream(&app, STREAM_EVICTED_PASSES, "STREAM on evicted chunks");
			tenant_verify(&app, true, "STREAM on evicted chunks");
			ok(vgpu_core_free(pressure.vm, pressure_buf.handle, &core_error),
			   "freeing the second VM's buffer");
			return_all(core, &app, NULL);
		}
		tenant_verify(&app, false, "STREAM after the return pass");
		{
			double gr = 2.0 * (double)s * STREAM_RESIDENT_PASSES / tr / 1e9;
			double ge = 2.0 * (double)s * STREAM_EVICTED_PASSES / te / 1e9;

			series_add(&resident, gr);
			series_add(&evicted, ge);
			series_add(&ratio, ge / gr);
			printf("   round %u: resident %.1f GB/s, evicted %.2f GB/s\n", clock.rounds + 1,
			       gr, ge);
		}
		clock.rounds++;
	}
	print_series("STREAM on resident chunks", &resident, "GB/s", "(bytes read + written)");
	print_series("STREAM on evicted chunks", &evicted, "GB/s", NULL);
	print_series("evicted / resident", &ratio, "", NULL);
	put_int(root, "stream_bytes", s);
	put_int(root, "stream_resident_passes", STREAM_RESIDENT_PASSES);
	put_int(root, "stream_evicted_passes", STREAM_EVICTED_PASSES);
	put_series(root, "stream_resident_gbps", &resident);
	put_series(root, "stream_evicted_gbps", &evicted);
	put_series(root, "stream_evicted_over_resident", &ratio);
	tenant_destroy(&pressure);
	tenant_destroy(&app);
	vgpu_core_destroy(core);
	phase_done(root, &clock);
}

/* ------------------------------------ 3. eviction latency per chunk size */

struct latency_sample {
	double total, copy, unmap, map, set_access, rest; /* microseconds */
	uint64_t unmap_calls, map_calls, set_access_calls;
};

static void measure_one_eviction(struct vgpu_core *core, struct cuda_bench_tenant *allocator,
				 uint64_t chunk, struct latency_sample *s)
{
	struct cudagpu_map_timing m0, m1;
	struct vgpu_core_stats a, b;
	struct vgpu_core_time d;
	uint64_t t0, t1;

	cudagpu_map_timing(allocator->hal, &m0);
	vgpu_core_stats(core, &a);
	t0 = vgpu_monotonic_ns();
	tenant_alloc(allocator, chunk, VGPU_PRIORITY_DEFAULT, false,
	             "allocating one chunk in a second VM to force an eviction");
	t1 = vgpu_monotonic_ns();
	vgpu_core_stats(core, &b);
	cudagpu_map_timing(allocator->hal, &m1);
	vgpu_core_time_delta(&d, &a.eviction, &b.eviction);
	if (d.passes != 1 || d.bytes_copied != chunk)
		fail("eviction latency: an allocation of one chunk (%" PRIu64 " bytes) moved %" PRIu64
		     " bytes in %" PRIu64 " passes; expected exactly one chunk",
		     chunk, d.bytes_copied, d.passes);
	s->total = (double)(t1 - t0) / 1e3;
	s->copy = (double)d.copy_ns / 1e3;
	s->unmap = (double)(m1.unmap_ns - m0.unmap_ns) / 1e3;
	s->map = (double)(m1.map_ns - m0.map_ns) / 1e3;
	s->set_access = (double)(m1.set_access_ns - m0.set_access_ns) / 1e3;
	s->rest = s->total - s->copy - s->unmap - s->map - s->set_access;
	if (s->rest < 0)
		s->rest = 0;
	s->unmap_calls = m1.unmap_calls - m0.unmap_calls;
	s->map_calls = m1.map_calls - m0.map_calls;
	s->set_access_calls = m1.set_access_calls - m0.set_access_calls;
}

static void phase_latency(struct vgpu_hal *hal, struct json_object *root)
{
	struct phase_clock clock = { .name = "latency", .start = vgpu_monotonic_ns() };
	struct json_object *array = json_object_new_array();
	const unsigned k = opt.latency_evictions;

	printf("3. Eviction latency per chunk size: one chunk evicted by a second VM's "
	       "allocation, %u per round; the driver's mapping calls against the copy\n", k);
	printf("   %6s %10s %10s %10s %10s %12s %10s   %s\n", "chunk", "total us", "copy us",
	       "unmap us", "map us", "set-acc. us", "rest us", "calls per eviction");
	for (size_t z = 0; z < LATENCY_SIZES; z++) {
		uint64_t chunk = (uint64_t)latency_chunk_mib[z] * MiB;
		struct series total = { 0 }, copy = { 0 }, unmap = { 0 }, map = { 0 };
		struct series set_access = { 0 }, rest = { 0 };
		struct latency_sample sample = { 0 };
		struct cuda_bench_tenant victim, allocator;
		struct vgpu_core *core;
		struct json_object *o;
		unsigned rounds = 0;

		if (opt.vram < (uint64_t)(k + 2) * chunk * 2) {
			printf("   %4u MiB: skipped (the VRAM budget holds too few such chunks)\n",
			       latency_chunk_mib[z]);
			continue;
		}
		core = core_new(hal, chunk, "random", (uint64_t)(k + 1) * chunk);
		tenant_init(&victim, core, hal, "victim", 1, chunk, true);
		tenant_init(&allocator, core, hal, "allocator", VGPU_CORE_WEIGHT_MAX, chunk, false);
		tenant_fill_vram(&victim);
		/* Warm-up: fresh host buffers the first time, cached after. */
		for (unsigned i = 0; i < k; i++)
			measure_one_eviction(core, &allocator, chunk, &sample);
		tenant_free_all(&allocator);
		return_all(core, &victim, NULL);

		for (rounds = 0; rounds < opt.rounds; rounds++) {
			struct latency_sample sum = { 0 };

			if (rounds && seconds_since(clock.start) > opt.phase_limit_s) {
				clock.truncated = true;
				break;
			}
			for (unsigned i = 0; i < k; i++) {
				measure_one_eviction(core, &allocator, chunk, &sample);
				sum.total += sample.total / k;
				sum.copy += sample.copy / k;
				sum.unmap += sample.unmap / k;
				sum.map += sample.map / k;
				sum.set_access += sample.set_access / k;
				sum.rest += sample.rest / k;
			}
			tenant_verify(&victim, true, "eviction latency: evicted chunks");
			tenant_free_all(&allocator);
			return_all(core, &victim, NULL);
			series_add(&total, sum.total);
			series_add(&copy, sum.copy);
			series_add(&unmap, sum.unmap);
			series_add(&map, sum.map);
			series_add(&set_access, sum.set_access);
			series_add(&rest, sum.rest);
		}
		tenant_verify(&victim, false, "eviction latency: all chunks after the return pass");
		printf("   %3u MiB %10.1f %10.1f %10.1f %10.1f %12.1f %10.1f   unmap %" PRIu64
		       ", map %" PRIu64 ", set-access %" PRIu64 "\n",
		       latency_chunk_mib[z], median_of(&total), median_of(&copy), median_of(&unmap),
		       median_of(&map), median_of(&set_access), median_of(&rest), sample.unmap_calls,
		       sample.map_calls, sample.set_access_calls);
		o = json_object_new_object();
		put_int(o, "chunk_mib", latency_chunk_mib[z]);
		put_series(o, "total_us", &total);
		put_series(o, "copy_us", &copy);
		put_series(o, "unmap_us", &unmap);
		put_series(o, "map_us", &map);
		put_series(o, "set_access_us", &set_access);
		put_series(o, "rest_us", &rest);
		put_int(o, "unmap_calls", sample.unmap_calls);
		put_int(o, "map_calls", sample.map_calls);
		put_int(o, "set_access_calls", sample.set_access_calls);
		put_int(o, "rounds", rounds);
		json_object_array_add(array, o);
		if (rounds > clock.rounds)
			clock.rounds = rounds;
		tenant_destroy(&allocator);
		tenant_destroy(&victim);
		vgpu_core_destroy(core);
	}
	if (clock.truncated)
		printf("   (phase time limit of %u s reached: later chunk sizes ran fewer rounds)\n",
		       opt.phase_limit_s);
	put_int(root, "eviction_latency_per_round", k);
	json_object_object_add(root, "eviction_latency", array);
	phase_done(root, &clock);
}

/* ----------------------------------------------- 5. submission overhead */

static void check_fill(const uint64_t *words, uint64_t bytes, uint64_t seed, const char *what)
{
	for (uint64_t k = 0; k < bytes / 8; k++)
		if (le64toh(words[k]) != vgpu_fill_word(seed, k * 8))
			fail("%s: DATA CHECK FAILED at byte %" PRIu64 ": read %#" PRIx64
			     ", expected %#" PRIx64, what, k * 8, le64toh(words[k]),
			     vgpu_fill_word(seed, k * 8));
}

static double submit_ring(struct cuda_bench_tenant *t, uint64_t va, unsigned n, uint64_t seed_base,
			  uint64_t *check)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t t0 = vgpu_monotonic_ns();
	double seconds;

	for (unsigned i = 0; i < n; i++) {
		guest_push(t->guest, words,
		           vgpu_push_launch_fill(words, va, SUBMIT_FILL_BYTES, seed_base + i));
		guest_entry(t->guest, "FILL launches through the ring");
	}
	guest_fence(t->guest, "FILL launches through the ring");
	seconds = seconds_since(t0);
	ok(vgpu_hal_as_read(tenant_as(t), va, check, SUBMIT_FILL_BYTES), "reading back the FILL");
	check_fill(check, SUBMIT_FILL_BYTES, seed_base + n - 1, "FILL launches through the ring");
	return seconds;
}

static double submit_direct(cg_deviceptr dst, unsigned n, uint64_t seed_base, uint64_t *check)
{
	uint64_t t0;
	double seconds;

	driver_enter();
	t0 = vgpu_monotonic_ns();
	for (unsigned i = 0; i < n; i++)
		cu(cudagpu_launch_fill(&api, &kernels, cu_stream, dst, SUBMIT_FILL_BYTES / 8,
		                       seed_base + i, 0),
		   "cuLaunchKernel(vgpu_fill)");
	cu(api.cuStreamSynchronize(cu_stream), "cuStreamSynchronize after the FILL launches");
	seconds = seconds_since(t0);
	cu(api.cuMemcpyDtoH(check, dst, SUBMIT_FILL_BYTES), "cuMemcpyDtoH");
	check_fill(check, SUBMIT_FILL_BYTES, seed_base + n - 1, "FILL launches made directly");
	return seconds;
}

static void phase_submit(struct vgpu_hal *hal, struct json_object *root)
{
	struct phase_clock clock = { .name = "submit", .start = vgpu_monotonic_ns() };
	struct series ring = { 0 }, direct = { 0 }, ratio = { 0 };
	uint64_t *check = xcalloc(SUBMIT_FILL_BYTES / 8, sizeof(uint64_t));
	const unsigned n = opt.launches;
	struct vgpu_core *core;
	struct cuda_bench_tenant app;
	cg_deviceptr dst;
	size_t b;

	printf("5. Submission overhead: %u FILL kernels of %" PRIu64 " KiB, one GPFIFO entry each "
	       "through the VM's guest-visible ring (fence at the end), against cuLaunchKernel "
	       "on a stream\n", n, SUBMIT_FILL_BYTES / KiB);
	core = core_new(hal, opt.chunk, "random", 0);
	tenant_init(&app, core, hal, "submit", 1, opt.chunk, true);
	b = tenant_alloc(&app, 2 * MiB, VGPU_PRIORITY_DEFAULT, false, "allocating the FILL target");
	driver_enter();
	cu(api.cuMemAlloc(&dst, SUBMIT_FILL_BYTES), "cuMemAlloc (direct launches)");
	submit_ring(&app, app.buffers[b].gpu_va, 32, 1, check); /* warm-up */
	submit_direct(dst, 32, 1, check);
	while (phase_continue(&clock, opt.rounds)) {
		uint64_t seed = 1000 + (uint64_t)clock.rounds * n;
		double r, d;

		if (clock.rounds % 2 == 0) {
			r = submit_ring(&app, app.buffers[b].gpu_va, n, seed, check);
			d = submit_direct(dst, n, seed, check);
		} else {
			d = submit_direct(dst, n, seed, check);
			r = submit_ring(&app, app.buffers[b].gpu_va, n, seed, check);
		}
		series_add(&ring, r * 1e6 / n);
		series_add(&direct, d * 1e6 / n);
		series_add(&ratio, r / d);
		printf("   round %u: ring %.2f us, direct %.2f us per launch\n", clock.rounds + 1,
		       r * 1e6 / n, d * 1e6 / n);
		clock.rounds++;
	}
	print_series("through the guest ring, per launch", &ring, "us", NULL);
	print_series("cuLaunchKernel directly, per launch", &direct, "us", NULL);
	print_series("ring / direct", &ratio, "", NULL);
	put_int(root, "submit_launches", n);
	put_int(root, "submit_fill_bytes", SUBMIT_FILL_BYTES);
	put_series(root, "submit_ring_us", &ring);
	put_series(root, "submit_direct_us", &direct);
	put_series(root, "submit_ring_over_direct", &ratio);
	driver_enter();
	cu(api.cuMemFree(dst), "cuMemFree (direct launches)");
	free(check);
	tenant_destroy(&app);
	vgpu_core_destroy(core);
	phase_done(root, &clock);
}

/* ------------------------------------------ 4. against Unified Memory */

/* The working set of one oversubscription factor, the same for GPUswap
 * and managed memory: buffers of BUFFER_BYTES, "hot" ones (half the budget,
 * spread evenly, priority 15) streamed UM_HOT_PASSES times per sweep, the
 * others (priority 0) once; pieces of one chunk each. */
struct um_buffer {
	uint64_t offset, bytes;
	bool hot;
	size_t first_piece, pieces;
};

struct um_layout {
	double factor;
	uint64_t bytes, hot_bytes;
	struct um_buffer *buffers;
	size_t buffer_count;
	struct piece *pieces; /* va = offset in the working set; passes = after the run */
	bool *hot;
	size_t piece_count;
	uint64_t *expected; /* CHECKSUM of each piece after the run */
};

static void um_layout_build(struct um_layout *l, double factor)
{
	uint64_t budget = opt.um_vram, hot_target = budget / 2, off = 0;
	size_t hot_buffers, b;

	memset(l, 0, sizeof(*l));
	l->factor = factor;
	l->bytes = (uint64_t)(factor * (double)budget) / opt.chunk * opt.chunk;
	l->buffer_count = (size_t)((l->bytes + BUFFER_BYTES - 1) / BUFFER_BYTES);
	l->buffers = xcalloc(l->buffer_count, sizeof(*l->buffers));
	hot_buffers = (size_t)(hot_target / BUFFER_BYTES);
	if (!hot_buffers)
		hot_buffers = 1;
	if (hot_buffers > l->buffer_count)
		hot_buffers = l->buffer_count;
	l->piece_count = (size_t)((l->bytes + opt.chunk - 1) / opt.chunk) + l->buffer_count;
	l->pieces = xcalloc(l->piece_count, sizeof(*l->pieces));
	l->hot = xcalloc(l->piece_count, sizeof(*l->hot));
	l->piece_count = 0;
	for (b = 0; b < l->buffer_count; b++) {
		struct um_buffer *ub = &l->buffers[b];

		ub->offset = off;
		ub->bytes = l->bytes - off < BUFFER_BYTES ? l->bytes - off : BUFFER_BYTES;
		/* Bresenham: hot_buffers of buffer_count, evenly spread. */
		ub->hot = (b + 1) * hot_buffers / l->buffer_count > b * hot_buffers / l->buffer_count;
		ub->first_piece = l->piece_count;
		for (uint64_t p = 0; p < ub->bytes; p += opt.chunk) {
			size_t i = l->piece_count++;

			l->pieces[i] = (struct piece){
				.va = off + p,
				.bytes = ub->bytes - p < opt.chunk ? ub->bytes - p : opt.chunk,
				.seed = mix64(0x0a11ull << 32 ^ (uint64_t)(factor * 100) << 20 ^ i),
				.passes = UM_SWEEPS * (ub->hot ? UM_HOT_PASSES : 1),
			};
			l->hot[i] = ub->hot;
			ub->pieces++;
		}
		if (ub->hot)
			l->hot_bytes += ub->bytes;
		off += ub->bytes;
	}
	if (l->piece_count > GUEST_RESULT_SLOTS)
		fail("the working set has %zu pieces, more than the %u result slots", l->piece_count,
		     GUEST_RESULT_SLOTS);
	l->expected = xcalloc(l->piece_count, sizeof(*l->expected));
	parallel_for(l->piece_count, 1, checksum_range,
	             &(struct checksum_job){ .pieces = l->pieces, .out = l->expected });
}

static void um_layout_free(struct um_layout *l)
{
	free(l->buffers);
	free(l->pieces);
	free(l->hot);
	free(l->expected);
}

struct um_run {
	double stream_s, checksum_s;
	double total_s; /* allocation, first touch (FILL), evictions, prefetches, sweeps */
	uint64_t evicted_bytes, hot_evicted_bytes;
};

static void um_check_results(const struct um_layout *l, const uint64_t *got, const char *what)
{
	for (size_t i = 0; i < l->piece_count; i++)
		if (got[i] != l->expected[i])
			fail("%s: CHECKSUM FAILED for piece %zu (offset %" PRIu64 " MiB of the working "
			     "set): GPU %#" PRIx64 ", CPU reference %#" PRIx64,
			     what, i, l->pieces[i].va / MiB, got[i], l->expected[i]);
}

static void um_gpuswap(struct vgpu_hal *hal, const struct um_layout *l, const char *policy,
                       struct um_run *run)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	struct cuda_bench_tenant app;
	struct vgpu_core *core;
	bool *evicted;
	uint64_t *got, start, t0, t1;
	char what[96];

	snprintf(what, sizeof(what), "GPUswap (%s) at %.2fx", policy, l->factor);
	core = core_new(hal, opt.chunk, policy, 0);
	tenant_init(&app, core, hal, "app", 1, opt.chunk, true);
	start = vgpu_monotonic_ns();
	for (size_t b = 0; b < l->buffer_count; b++) {
		size_t index = tenant_alloc(&app, l->buffers[b].bytes,
		                            l->buffers[b].hot ? VGPU_PRIORITY_MAX : VGPU_PRIORITY_MIN,
		                            true, "allocating the working set");

		if (app.first_piece[index] != l->buffers[b].first_piece ||
		    app.piece_count != l->buffers[b].first_piece + l->buffers[b].pieces)
			fail("internal: the VM's chunks do not line up with the working set's pieces");
	}
	for (size_t i = 0; i < l->piece_count; i++)
		app.pieces[i].seed = l->pieces[i].seed;
	tenant_fill(&app, 0, app.piece_count);
	guest_fence(app.guest, what); /* the first touch is done */
	t0 = vgpu_monotonic_ns();

	run->evicted_bytes = vm_evicted_bytes(app.vm);
	evicted = xcalloc(app.piece_count, sizeof(*evicted));
	tenant_piece_flags(&app, VGPU_CHUNK_EVICTED, evicted);
	run->hot_evicted_bytes = 0;
	for (size_t i = 0; i < app.piece_count; i++)
		if (evicted[i] && l->hot[i])
			run->hot_evicted_bytes += app.pieces[i].bytes;
	free(evicted);

	start += vgpu_monotonic_ns() - t0; /* the bookkeeping above is not the app's */
	t0 = vgpu_monotonic_ns();
	for (unsigned sweep = 0; sweep < UM_SWEEPS; sweep++) {
		for (size_t i = 0; i < app.piece_count; i++)
			guest_push(app.guest, words,
			           vgpu_push_launch_stream(words, app.pieces[i].va, app.pieces[i].bytes,
			                                   l->hot[i] ? UM_HOT_PASSES : 1));
		guest_entry(app.guest, what);
	}
	guest_fence(app.guest, what);
	t1 = vgpu_monotonic_ns();
	for (size_t i = 0; i < app.piece_count; i++)
		guest_push(app.guest, words,
		           vgpu_push_launch_checksum(words, app.pieces[i].va, app.pieces[i].bytes,
		                                     guest_result_va(app.guest, (uint32_t)i)));
	guest_entry(app.guest, what);
	guest_fence(app.guest, what);
	run->stream_s = (double)(t1 - t0) / 1e9;
	run->total_s = (double)(t1 - start) / 1e9;
	run->checksum_s = seconds_since(t1);
	got = xcalloc(l->piece_count, sizeof(*got));
	for (size_t i = 0; i < l->piece_count; i++)
		got[i] = guest_result(app.guest, (uint32_t)i);
	um_check_results(l, got, what);
	free(got);
	if (vm_evicted_bytes(app.vm) != run->evicted_bytes)
		fail("%s: chunks moved while the kernels ran", what);
	tenant_destroy(&app);
	vgpu_core_destroy(core);
}

/* Take the GPU's free memory but target bytes. Returns what is left free. */
static uint64_t balloon_take(uint64_t target)
{
	size_t free_bytes = 0, total = 0;

	cu(api.cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
	if (free_bytes < target)
		fail("the GPU has %zu MiB free, less than the %" PRIu64 " MiB managed memory "
		     "should get", free_bytes / MiB, target / MiB);
	while (free_bytes > target + 2 * MiB) {
		uint64_t take = free_bytes - target;
		cg_result r;

		if (take > UM_BALLOON_PIECE)
			take = UM_BALLOON_PIECE;
		take = take / (2 * MiB) * (2 * MiB);
		if (!take)
			break;
		if (balloon_count == UM_BALLOON_MAX)
			fail("the balloon needs more than %u pieces", UM_BALLOON_MAX);
		r = api.cuMemAlloc(&balloon[balloon_count], take);
		if (r == CG_ERROR_OUT_OF_MEMORY)
			break; /* the driver's own reserve: what is left is checked below */
		cu(r, "cuMemAlloc (balloon)");
		balloon_count++;
		cu(api.cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
	}
	if (free_bytes > target + 256 * MiB)
		fail("could not balloon the GPU down to %" PRIu64 " MiB free (%zu MiB still free)",
		     target / MiB, free_bytes / MiB);
	return free_bytes;
}

/*
 * The hints a careful user gives managed memory, knowing what GPUswap's
 * priority policy knows: hot buffers live on the GPU, cold ones in host
 * memory where the GPU reads them in place rather than migrating them
 * (GPUswap's evicted chunks, reached over the bus).
 */
static void um_advise(const struct um_layout *l, cg_deviceptr m)
{
	struct cg_mem_location gpu = { .type = CG_MEM_LOCATION_TYPE_DEVICE, .id = cu_device };
	struct cg_mem_location host = { .type = CG_MEM_LOCATION_TYPE_HOST, .id = 0 };

	for (size_t b = 0; b < l->buffer_count; b++) {
		const struct um_buffer *buffer = &l->buffers[b];

		cu(api.cuMemAdvise_v2(m + buffer->offset, buffer->bytes,
		                      CG_MEM_ADVISE_SET_PREFERRED_LOCATION, buffer->hot ? gpu : host),
		   "cuMemAdvise(SET_PREFERRED_LOCATION)");
		cu(api.cuMemAdvise_v2(m + buffer->offset, buffer->bytes, CG_MEM_ADVISE_SET_ACCESSED_BY,
		                      gpu),
		   "cuMemAdvise(SET_ACCESSED_BY)");
	}
}

/* Bring the hot buffers to the GPU ahead of the sweeps. */
static void um_prefetch_hot(const struct um_layout *l, cg_deviceptr m)
{
	struct cg_mem_location gpu = { .type = CG_MEM_LOCATION_TYPE_DEVICE, .id = cu_device };

	for (size_t b = 0; b < l->buffer_count; b++)
		if (l->buffers[b].hot)
			cu(api.cuMemPrefetchAsync_v2(m + l->buffers[b].offset, l->buffers[b].bytes, gpu, 0,
			                             cu_stream),
			   "cuMemPrefetchAsync(device)");
}

static void um_managed(const struct um_layout *l, bool hints, uint64_t *results_host,
                       cg_deviceptr results_device, struct um_run *run, uint64_t *free_seen)
{
	cg_deviceptr m;
	uint64_t start, t0, t1;
	char what[96];

	snprintf(what, sizeof(what), "managed memory%s at %.2fx", hints ? " with hints" : "",
	         l->factor);
	driver_enter();
	/* The balloon first: it is the test rig, not the app. */
	*free_seen = balloon_take(opt.um_vram + UM_MARGIN);
	start = vgpu_monotonic_ns();
	cu(api.cuMemAllocManaged(&m, l->bytes, CG_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
	if (hints)
		um_advise(l, m);
	for (size_t i = 0; i < l->piece_count; i++)
		cu(cudagpu_launch_fill(&api, &kernels, cu_stream, m + l->pieces[i].va,
		                       l->pieces[i].bytes / 8, l->pieces[i].seed, 0),
		   "cuLaunchKernel(vgpu_fill) on managed memory");
	cu(api.cuStreamSynchronize(cu_stream), what);
	t0 = vgpu_monotonic_ns();
	memset(results_host, 0, l->piece_count * sizeof(uint64_t));
	start += vgpu_monotonic_ns() - t0;
	t0 = vgpu_monotonic_ns();
	if (hints)
		um_prefetch_hot(l, m);
	for (unsigned sweep = 0; sweep < UM_SWEEPS; sweep++)
		for (size_t i = 0; i < l->piece_count; i++)
			cu(cudagpu_launch_stream(&api, &kernels, cu_stream, m + l->pieces[i].va,
			                         l->pieces[i].bytes / 8, l->hot[i] ? UM_HOT_PASSES : 1),
			   "cuLaunchKernel(vgpu_stream) on managed memory");
	cu(api.cuStreamSynchronize(cu_stream), what);
	t1 = vgpu_monotonic_ns();
	for (size_t i = 0; i < l->piece_count; i++)
		cu(cudagpu_launch_checksum(&api, &kernels, cu_stream, m + l->pieces[i].va,
		                           l->pieces[i].bytes / 8, results_device + i * 8),
		   "cuLaunchKernel(vgpu_checksum) on managed memory");
	cu(api.cuStreamSynchronize(cu_stream), what);
	run->stream_s = (double)(t1 - t0) / 1e9;
	run->total_s = (double)(t1 - start) / 1e9;
	run->checksum_s = seconds_since(t1);
	balloon_release(); /* first of all */
	cu(api.cuMemFree(m), "cuMemFree (managed)");
	if (balloon_count)
		fail("the balloon could not be freed");
	run->evicted_bytes = run->hot_evicted_bytes = 0;
	um_check_results(l, results_host, what);
}

/* GPUswap random, GPUswap priority, managed memory, managed with hints. */
#define UM_CONTENDERS 4u
static const char *const um_total_keys[UM_CONTENDERS] = {
	"total_gpuswap_random_s", "total_gpuswap_priority_s", "total_managed_s",
	"total_managed_hints_s",
};

static void phase_um(struct json_object *root)
{
	struct phase_clock clock = { .name = "um", .start = vgpu_monotonic_ns() };
	struct json_object *array = json_object_new_array();
	struct series s_random[UM_FACTORS] = { 0 }, s_priority[UM_FACTORS] = { 0 };
	struct series s_managed[UM_FACTORS] = { 0 }, r_random[UM_FACTORS] = { 0 };
	struct series r_priority[UM_FACTORS] = { 0 }, c_random[UM_FACTORS] = { 0 };
	struct series c_priority[UM_FACTORS] = { 0 }, c_managed[UM_FACTORS] = { 0 };
	struct series e_random[UM_FACTORS] = { 0 }, e_priority[UM_FACTORS] = { 0 };
	struct series he_random[UM_FACTORS] = { 0 }, he_priority[UM_FACTORS] = { 0 };
	/* With hints; and end to end (allocation to the last sweep), each of
	 * the four, and GPUswap's over managed memory with hints. */
	struct series s_hinted[UM_FACTORS] = { 0 }, c_hinted[UM_FACTORS] = { 0 };
	struct series t_run[UM_CONTENDERS][UM_FACTORS] = { 0 };
	struct series t_random_over_hinted[UM_FACTORS] = { 0 };
	struct series t_priority_over_hinted[UM_FACTORS] = { 0 };
	struct um_layout layouts[UM_FACTORS];
	uint64_t *results_host = NULL, free_seen = 0;
	cg_deviceptr results_device;
	struct vgpu_hal *hal;
	int attribute = 0, err;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char chunk[32], size[32];

	printf("4. Against CUDA Unified Memory: a working set of 1.25x, 1.5x and 2x a %s "
	       "budget; %u STREAM sweeps (hot half of the budget %ux per sweep) then CHECKSUM "
	       "of every %s piece\n",
	       mib(opt.um_vram, size, sizeof(size)), UM_SWEEPS, UM_HOT_PASSES,
	       mib(opt.chunk, chunk, sizeof(chunk)));
	driver_enter();
	cu(api.cuDeviceGetAttribute(&attribute, CG_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
	                            cu_device),
	   "cuDeviceGetAttribute(CONCURRENT_MANAGED_ACCESS)");
	if (!attribute) {
		printf("   skipped: this GPU/driver cannot oversubscribe managed memory "
		       "(no concurrent managed access)\n\n");
		put_string(root, "um_skipped", "no concurrent managed access on this GPU/driver");
		json_object_put(array);
		return;
	}
	err = vgpu_hal_open(&opt.spec, NULL, opt.um_vram, &hal, &error);
	if (err)
		fail("opening cudagpu with a %s VRAM budget: %s", mib(opt.um_vram, size, sizeof(size)),
		     vgpu_error_msg(&error));
	for (size_t f = 0; f < UM_FACTORS; f++)
		um_layout_build(&layouts[f], um_factors[f]);
	driver_enter();
	cu(api.cuMemHostAlloc((void **)&results_host, GUEST_RESULT_SLOTS * 8,
	                      CG_MEMHOSTALLOC_PORTABLE),
	   "cuMemHostAlloc (checksum results)");
	cu(api.cuMemHostGetDevicePointer(&results_device, results_host, 0),
	   "cuMemHostGetDevicePointer");

	while (phase_continue(&clock, opt.um_rounds)) {
		for (size_t f = 0; f < UM_FACTORS; f++) {
			const struct um_layout *l = &layouts[f];
			struct um_run runs[UM_CONTENDERS];

			/* The four contenders in rotating order. */
			for (unsigned step = 0; step < UM_CONTENDERS; step++) {
				unsigned which = (step + clock.rounds + (unsigned)f) % UM_CONTENDERS;

				if (which == 0)
					um_gpuswap(hal, l, "random", &runs[0]);
				else if (which == 1)
					um_gpuswap(hal, l, "priority", &runs[1]);
				else
					um_managed(l, which == 3, results_host, results_device,
					           &runs[which], &free_seen);
			}
			series_add(&s_hinted[f], runs[3].stream_s);
			series_add(&c_hinted[f], runs[3].checksum_s);
			for (unsigned c = 0; c < UM_CONTENDERS; c++)
				series_add(&t_run[c][f], runs[c].total_s);
			series_add(&t_random_over_hinted[f], runs[0].total_s / runs[3].total_s);
			series_add(&t_priority_over_hinted[f], runs[1].total_s / runs[3].total_s);
			series_add(&s_random[f], runs[0].stream_s);
			series_add(&s_priority[f], runs[1].stream_s);
			series_add(&s_managed[f], runs[2].stream_s);
			series_add(&r_random[f], runs[0].stream_s / runs[2].stream_s);
			series_add(&r_priority[f], runs[1].stream_s / runs[2].stream_s);
			series_add(&c_random[f], runs[0].checksum_s);
			series_add(&c_priority[f], runs[1].checksum_s);
			series_add(&c_managed[f], runs[2].checksum_s);
			series_add(&e_random[f], (double)runs[0].evicted_bytes / MiB);
			series_add(&e_priority[f], (double)runs[1].evicted_bytes / MiB);
			series_add(&he_random[f], (double)runs[0].hot_evicted_bytes / MiB);
			series_add(&he_priority[f], (double)runs[1].hot_evicted_bytes / MiB);
			printf("   round %u, %.2fx: sweeps: GPUswap random %.3f s, priority %.3f s, "
			       "managed %.3f s, with hints %.3f s; end to end %.3f / %.3f / %.3f / "
			       "%.3f s\n",
			       clock.rounds + 1, l->factor, runs[0].stream_s, runs[1].stream_s,
			       runs[2].stream_s, runs[3].stream_s, runs[0].total_s, runs[1].total_s,
			       runs[2].total_s, runs[3].total_s);
		}
		clock.rounds++;
	}
	printf("   %6s %10s %12s %12s %12s %14s %14s\n", "factor", "set MiB", "random s",
	       "priority s", "managed s", "random/UM", "priority/UM");
	for (size_t f = 0; f < UM_FACTORS; f++) {
		struct json_object *o = json_object_new_object();
		const struct um_layout *l = &layouts[f];

		printf("   %5.2fx %10" PRIu64 " %12.3f %12.3f %12.3f %14.2f %14.2f\n", l->factor,
		       l->bytes / MiB, median_of(&s_random[f]), median_of(&s_priority[f]),
		       median_of(&s_managed[f]), median_of(&r_random[f]), median_of(&r_priority[f]));
		put_number(o, "factor", l->factor);
		put_int(o, "working_set_mib", l->bytes / MiB);
		put_int(o, "hot_mib", l->hot_bytes / MiB);
		put_series(o, "gpuswap_random_s", &s_random[f]);
		put_series(o, "gpuswap_priority_s", &s_priority[f]);
		put_series(o, "managed_s", &s_managed[f]);
		put_series(o, "gpuswap_random_over_managed", &r_random[f]);
		put_series(o, "gpuswap_priority_over_managed", &r_priority[f]);
		put_series(o, "gpuswap_random_checksum_s", &c_random[f]);
		put_series(o, "gpuswap_priority_checksum_s", &c_priority[f]);
		put_series(o, "managed_checksum_s", &c_managed[f]);
		put_series(o, "gpuswap_random_evicted_mib", &e_random[f]);
		put_series(o, "gpuswap_priority_evicted_mib", &e_priority[f]);
		put_series(o, "gpuswap_random_hot_evicted_mib", &he_random[f]);
		put_series(o, "gpuswap_priority_hot_evicted_mib", &he_priority[f]);
		put_series(o, "managed_hints_s", &s_hinted[f]);
		put_series(o, "managed_hints_checksum_s", &c_hinted[f]);
		for (unsigned c = 0; c < UM_CONTENDERS; c++)
			put_series(o, um_total_keys[c], &t_run[c][f]);
		put_series(o, "total_gpuswap_random_over_managed_hints", &t_random_over_hinted[f]);
		put_series(o, "total_gpuswap_priority_over_managed_hints",
		           &t_priority_over_hinted[f]);
		json_object_array_add(array, o);
	}
	printf("   end to end (allocation, first touch, evictions, prefetches, sweeps):\n");
	printf("   %6s %12s %12s %12s %12s %16s %16s\n", "factor", "random s", "priority s",
	       "managed s", "hints s", "random/hints", "priority/hints");
	for (size_t f = 0; f < UM_FACTORS; f++)
		printf("   %5.2fx %12.3f %12.3f %12.3f %12.3f %16.2f %16.2f\n", layouts[f].factor,
		       median_of(&t_run[0][f]), median_of(&t_run[1][f]), median_of(&t_run[2][f]),
		       median_of(&t_run[3][f]), median_of(&t_random_over_hinted[f]),
		       median_of(&t_priority_over_hinted[f]));
	printf("   (seconds: the STREAM sweeps; the CHECKSUM that follows verifies them and is "
	       "timed apart: a one-thread FNV chain, compute-bound)\n");
	put_int(root, "um_budget_bytes", opt.um_vram);
	put_int(root, "um_margin_bytes", UM_MARGIN);
	put_int(root, "um_gpu_free_bytes_with_balloon", free_seen);
	put_int(root, "um_sweeps", UM_SWEEPS);
	put_int(root, "um_hot_passes", UM_HOT_PASSES);
	json_object_object_add(root, "um", array);
	driver_enter();
	cu(api.cuMemFreeHost(results_host), "cuMemFreeHost (checksum results)");
	for (size_t f = 0; f < UM_FACTORS; f++)
		um_layout_free(&layouts[f]);
	vgpu_hal_destroy(hal);
	phase_done(root, &clock);
}

/* --------------------------------------------------------------- Markdown */

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static double jnum(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v ? json_object_get_double(v) : NAN;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v ? json_object_get_string(v) : "?";
}

/* "median (min–max)" of key, or "–". */
static const char *md_cell(struct json_object *o, const char *key, int decimals, char *buf,
                           size_t len)
{
	char name[96];
	double median = jnum(o, key), min, max;

	snprintf(name, sizeof(name), "%s_min", key);
	min = jnum(o, name);
	snprintf(name, sizeof(name), "%s_max", key);
	max = jnum(o, name);
	if (!isfinite(median))
		snprintf(buf, len, "–");
	else
		snprintf(buf, len, "%.*f (%.*f–%.*f)", decimals, median, decimals, min, decimals,
		         max);
	return buf;
}

static void md_row(FILE *f, struct json_object *o, const char *label, const char *key,
                   const char *unit, int decimals)
{
	char cell[96];

	fprintf(f, "| %s | %s | %s |\n", label, md_cell(o, key, decimals, cell, sizeof(cell)), unit);
}

static bool md_phase_ran(FILE *f, struct json_object *root, const char *name)
{
	struct json_object *p = jget(jget(root, "phases"), name);

	if (!p) {
		fprintf(f, "Not run in this measurement.\n\n");
		return false;
	}
	return true;
}

static void md_phase_note(FILE *f, struct json_object *root, const char *name)
{
	struct json_object *p = jget(jget(root, "phases"), name);
	struct json_object *cut = jget(p, "truncated_by_time_limit");

	fprintf(f, "\nRounds: %.0f, %.1f s%s.\n\n", jnum(p, "rounds"), jnum(p, "seconds"),
	        cut && json_object_get_boolean(cut) ? "; cut short by the phase time limit" : "");
}

/* Section 1's second part: the driver's floor and where the pauses went. */
static void render_floor(FILE *f, struct json_object *root)
{
	struct json_object *evict = jget(root, "evict_pause_parts");
	struct json_object *ret = jget(root, "return_pause_parts");
	static const char *const labels[PARTS] = {
		"**pause** (suspended → "
		"resumed)", "suspend and drain", "DMA windows, queuing copies",
		"waiting for copies", "PTE rewrite (overlaps the copies)", "resume",
	};
	char a[96], b[96];

	fprintf(f, "\nWhat the driver allows: the PTE rewrite of a relocation alone, "
	           "`cuMemUnmap` + `cuMemMap` + `cuMemSetAccess` over %.0f MiB of 2 MiB "
	           "allocations in 64 MiB runs as cudagpu makes them (device → host-NUMA for an "
	           "eviction, back for a return), with no copy and no core; and what a relocation "
	           "could reach at most with it, the copy at the `cuMemcpy` peak and the rewrite "
	           "one after the other, or perfectly overlapped.\n\n",
	        jnum(root, "floor_bytes") / MiB);
	fprintf(f, "| figure | median (min–max) | unit |\n|---|---|---|\n");
	md_row(f, root, "eviction's PTE rewrite alone", "floor_evict_rewrite_gbps", "GB/s", 2);
	md_row(f, root, "return's PTE rewrite alone", "floor_return_rewrite_gbps", "GB/s", 2);
	md_row(f, root, "eviction at most: copy, then rewrite", "floor_evict_serial_over_peak",
	       "of peak", 3);
	md_row(f, root, "eviction at most: overlapped", "floor_evict_overlapped_over_peak",
	       "of peak", 3);
	md_row(f, root, "return at most: copy, then rewrite", "floor_return_serial_over_peak",
	       "of peak", 3);
	md_row(f, root, "return at most: overlapped", "floor_return_overlapped_over_peak",
	       "of peak", 3);
	if (!evict || !ret)
		return;
	fprintf(f, "\nWhere one relocation's pause goes (µs, as the core times it; the PTE "
	           "rewrite runs while the copies do, so the parts add up to more than the "
	           "pause):\n\n| part | eviction | return |\n|---|---|---|\n");
	for (int p = 0; p < PARTS; p++)
		fprintf(f, "| %s | %s | %s |\n", labels[p],
		        md_cell(evict, pause_part_names[p], 0, a, sizeof(a)),
		        md_cell(ret, pause_part_names[p], 0, b, sizeof(b)));
}

static void render_markdown(struct json_object *root, FILE *f, const char *json_name)
{
	struct json_object *latency = jget(root, "eviction_latency"), *um = jget(root, "um");
	double goal = jnum(root, "relocation_goal_over_peak");
	char cell[96];

	fprintf(f, "# cudagpu on a real GPU: measured results\n\n");
	fprintf(f, "<!-- Generated by cuda-bench (vgpu-backend/bench/cuda-bench.c) from %s. Do "
	           "not edit: rerun `./vgpu-dev bench --gpu cuda`, or re-render with "
	           "`cuda-bench --render FILE.json --markdown RESULTS.md`. -->\n\n", json_name);
	fprintf(f, "GPUswap's core on the `cudagpu` HAL, measured side by side with the CUDA "
	           "driver on its own, in one run. Each figure is the median over interleaved "
	           "rounds with (min–max) beside it; each ratio is computed per round and then "
	           "summarised the same way. Every relocated byte and every kernel result was "
	           "checked against the CPU references (`vgpu/abi/kernels.h`).\n\n");
	fprintf(f, "| | |\n|---|---|\n");
	fprintf(f, "| date | %s |\n", jstr(root, "date"));
	fprintf(f, "| device | %s |\n", jstr(root, "device"));
	fprintf(f, "| driver | CUDA driver API %s; kernel module %s |\n", jstr(root, "driver_api"),
	        jstr(root, "kernel_module"));
	fprintf(f, "| host | %s |\n", jstr(root, "host"));
	fprintf(f, "| command | `%s` |\n\n", jstr(root, "command"));

	fprintf(f, "## 1. Relocation bandwidth\n\n");
	if (md_phase_ran(f, root, "relocation")) {
		fprintf(f, "A VM's %.0f MiB in %.0f MiB chunks evicted to host memory by a second "
		           "VM's allocation, then brought back by the return pass. The relocation "
		           "is timed from suspending the VM to resuming it (drain, copies on the "
		           "copy engine, PTE rewrite, VRAM scrub and free); \"whole\" adds the "
		           "policy, host buffers and, for the eviction, mapping the new buffer; "
		           "\"copy engine\" is queuing and waiting for the copies alone. The peak "
		           "is `cuMemcpy` between `cuMemAlloc` and `cuMemHostAlloc` memory of the "
		           "same size (best of two per round).\n\n",
		        jnum(root, "relocation_bytes") / MiB, jnum(jget(root, "config"), "chunk_bytes") / MiB);
		fprintf(f, "| figure | median (min–max) | unit |\n|---|---|---|\n");
		md_row(f, root, "**eviction** (VM suspended → resumed)", "evict_gbps", "GB/s", 2);
		md_row(f, root, "eviction, whole allocation", "evict_pass_gbps", "GB/s", 2);
		md_row(f, root, "eviction, copy engine", "evict_copy_gbps", "GB/s", 2);
		md_row(f, root, "**return** (VM suspended → resumed)", "return_gbps", "GB/s", 2);
		md_row(f, root, "return, whole return pass", "return_pass_gbps", "GB/s", 2);
		md_row(f, root, "return, copy engine", "return_copy_gbps", "GB/s", 2);
		md_row(f, root, "`cuMemcpy` device → pinned host", "memcpy_dtoh_gbps", "GB/s", 2);
		md_row(f, root, "`cuMemcpy` pinned host → device", "memcpy_htod_gbps", "GB/s", 2);
		fprintf(f, "| **eviction / DtoH peak** (goal ≥ %.2f: %s) | %s | |\n", goal,
		        jnum(root, "evict_over_peak") >= goal ? "met" : "**not met**",
		        md_cell(root, "evict_over_peak", 3, cell, sizeof(cell)));
		fprintf(f, "| **return / HtoD peak** (goal ≥ %.2f: %s) | %s | |\n", goal,
		        jnum(root, "return_over_peak") >= goal ? "met" : "**not met**",
		        md_cell(root, "return_over_peak", 3, cell, sizeof(cell)));
		if (jget(root, "floor_evict_rewrite_gbps"))
			render_floor(f, root);
		md_phase_note(f, root, "relocation");
	}

	fprintf(f, "## 2. STREAM on resident and on evicted chunks\n\n");
	if (md_phase_ran(f, root, "stream")) {
		fprintf(f, "The STREAM built-in kernel through a VM's channel over a %.0f MiB buffer, "
		           "all of it in VRAM (%.0f passes) or all of it evicted to host memory "
		           "and "
		           "reached over the bus at the same GPU virtual addresses (%.0f passes); "
		           "GB/s counts the bytes read plus the bytes written.\n\n",
		        jnum(root, "stream_bytes") / MiB, jnum(root, "stream_resident_passes"),
		        jnum(root, "stream_evicted_passes"));
		fprintf(f, "| figure | median (min–max) | unit |\n|---|---|---|\n");
		md_row(f, root, "resident chunks", "stream_resident_gbps", "GB/s", 1);
		md_row(f, root, "evicted chunks", "stream_evicted_gbps", "GB/s", 2);
		md_row(f, root, "evicted / resident", "stream_evicted_over_resident", "", 4);
		md_phase_note(f, root, "stream");
	}

	fprintf(f, "## 3. Eviction latency per chunk size\n\n");
	if (md_phase_ran(f, root, "latency")) {
		fprintf(f, "Wall time of an allocation that evicts exactly one chunk of another VM "
		           "(mean of %.0f per round), and where it goes: waiting for the copy "
		           "engine, "
		           "and the driver's mapping calls (`cuMemUnmap`, `cuMemMap`, "
		           "`cuMemSetAccess`: the PTE rewrite, the core's DMA windows and the new "
		           "buffer's mapping) as `cudagpu_map_timing()` counts them; \"rest\" is "
		           "everything else (policy, host buffer, suspend/drain/resume, VRAM "
		           "scrub). "
		           "Each chunk size runs in its own core, its rounds back to back, after "
		           "one "
		           "unmeasured round that takes fresh host buffers. Microseconds.\n\n",
		        jnum(root, "eviction_latency_per_round"));
		fprintf(f, "| chunk | total | copy | unmap | map | set-access | rest |\n");
		fprintf(f, "|---|---|---|---|---|---|---|\n");
		for (size_t i = 0; latency && i < json_object_array_length(latency); i++) {
			struct json_object *o = json_object_array_get_idx(latency, i);
			static const char *const keys[] = { "total_us", "copy_us", "unmap_us", "map_us",
				                            "set_access_us", "rest_us" };

			fprintf(f, "| %.0f MiB", jnum(o, "chunk_mib"));
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
				fprintf(f, " | %s", md_cell(o, keys[k], 1, cell, sizeof(cell)));
			fprintf(f, " |\n");
		}
		md_phase_note(f, root, "latency");
	}

	fprintf(f, "## 4. Against CUDA Unified Memory oversubscription\n\n");
	if (jget(root, "um_skipped")) {
		fprintf(f, "Skipped: %s.\n\n", jstr(root, "um_skipped"));
	} else if (!um) {
		fprintf(f, "Not run in this measurement (`--um` runs it).\n\n");
	} else {
		fprintf(f, "The same working set and kernel sequence four ways: GPUswap (one VM, the "
		           "core on cudagpu with a %.0f MiB VRAM budget, chunks the policy picks "
		           "evicted) with the random and the priority policy, and "
		           "`cuMemAllocManaged` "
		           "memory on a GPU ballooned (`cuMemAlloc`) down to the budget + %.0f MiB "
		           "free, without and with the hints a careful user gives (hot buffers: "
		           "`cuMemAdvise` preferred location the GPU and `cuMemPrefetchAsync` to "
		           "it "
		           "before the sweeps; cold ones: preferred location the host, accessed by "
		           "the GPU, so it reads them in place). The set is made of 64 MiB "
		           "buffers; "
		           "the hot ones (half the budget, "
		           "priority 15) get %.0f STREAM passes per sweep, the others (priority 0) "
		           "one; %.0f sweeps, launched per chunk-sized piece, through the VM's "
		           "channel for GPUswap and on a stream for managed memory. Seconds of the "
		           "sweeps; the CHECKSUM of every piece that follows verifies the results "
		           "and "
		           "is listed apart (a one-thread FNV chain, compute-bound).\n\n",
		        jnum(root, "um_budget_bytes") / MiB, jnum(root, "um_margin_bytes") / MiB,
		        jnum(root, "um_hot_passes"), jnum(root, "um_sweeps"));
		fprintf(f, "**End to end**, from the allocation to the last sweep (allocation and "
		           "the evictions it causes, the first touch by FILL kernels, advice and "
		           "prefetches, the sweeps; no chunk returns meanwhile: nothing is freed), "
		           "seconds:\n\n");
		fprintf(f, "| factor | set | GPUswap random | GPUswap priority | managed | managed + "
		           "hints | random / hints | priority / hints |\n");
		fprintf(f, "|---|---|---|---|---|---|---|---|\n");
		for (size_t i = 0; i < json_object_array_length(um); i++) {
			struct json_object *o = json_object_array_get_idx(um, i);
			char cells[6][96];

			if (!jget(o, "total_managed_hints_s"))
				continue; /* an older run */
			fprintf(f, "| %.2f× | %.0f MiB | %s | %s | %s | %s | %s | %s |\n",
			        jnum(o, "factor"), jnum(o, "working_set_mib"),
			        md_cell(o, "total_gpuswap_random_s", 3, cells[0], 96),
			        md_cell(o, "total_gpuswap_priority_s", 3, cells[1], 96),
			        md_cell(o, "total_managed_s", 3, cells[2], 96),
			        md_cell(o, "total_managed_hints_s", 3, cells[3], 96),
			        md_cell(o, "total_gpuswap_random_over_managed_hints", 2, cells[4], 96),
			        md_cell(o, "total_gpuswap_priority_over_managed_hints", 2, cells[5], 96));
		}
		fprintf(f, "\nThe sweeps alone, seconds:\n\n");
		fprintf(f, "| factor | set | GPUswap random s | GPUswap priority s | managed s | "
		           "managed + hints s | random / managed | priority / managed |\n");
		fprintf(f, "|---|---|---|---|---|---|---|---|\n");
		for (size_t i = 0; i < json_object_array_length(um); i++) {
			struct json_object *o = json_object_array_get_idx(um, i);
			char a[96], b[96], c[96], d[96], e[96];

			fprintf(f, "| %.2f× | %.0f MiB | %s | %s | %s | %s | %s | %s |\n",
			        jnum(o, "factor"), jnum(o, "working_set_mib"),
			        md_cell(o, "gpuswap_random_s", 3, a, sizeof(a)),
			        md_cell(o, "gpuswap_priority_s", 3, b, sizeof(b)),
			        md_cell(o, "managed_s", 3, c, sizeof(c)),
			        md_cell(o, "managed_hints_s", 3, e, sizeof(e)),
			        md_cell(o, "gpuswap_random_over_managed", 2, d, sizeof(d)),
			        md_cell(o, "gpuswap_priority_over_managed", 2, cell, sizeof(cell)));
		}
		fprintf(f, "\n| factor | evicted MiB (random / priority) | hot evicted MiB (random / "
		           "priority) | CHECKSUM s (random / priority / managed / hints) |\n");
		fprintf(f, "|---|---|---|---|\n");
		for (size_t i = 0; i < json_object_array_length(um); i++) {
			struct json_object *o = json_object_array_get_idx(um, i);

			fprintf(f, "| %.2f× | %.0f / %.0f | %.0f / %.0f | %.2f / %.2f / %.2f / %.2f |\n",
			        jnum(o, "factor"), jnum(o, "gpuswap_random_evicted_mib"),
			        jnum(o, "gpuswap_priority_evicted_mib"),
			        jnum(o, "gpuswap_random_hot_evicted_mib"),
			        jnum(o, "gpuswap_priority_hot_evicted_mib"),
			        jnum(o, "gpuswap_random_checksum_s"), jnum(o, "gpuswap_priority_checksum_s"),
			        jnum(o, "managed_checksum_s"), jnum(o, "managed_hints_checksum_s"));
		}
		md_phase_note(f, root, "um");
	}

	fprintf(f, "## 5. Submission overhead\n\n");
	if (md_phase_ran(f, root, "submit")) {
		fprintf(f, "%.0f FILL kernels of %.0f KiB each, one GPFIFO entry per launch through the "
		           "VM's guest-visible ring (pushbuffers in 4 KiB-mapped guest RAM, a "
		           "fence at "
		           "the end; cudagpu's submission thread checks and issues each), against "
		           "the same launches made with `cuLaunchKernel` on a stream.\n\n",
		        jnum(root, "submit_launches"), jnum(root, "submit_fill_bytes") / KiB);
		fprintf(f, "| figure | median (min–max) | unit |\n|---|---|---|\n");
		md_row(f, root, "through the guest ring, per launch", "submit_ring_us", "µs", 2);
		md_row(f, root, "`cuLaunchKernel` directly, per launch", "submit_direct_us", "µs", 2);
		md_row(f, root, "ring / direct", "submit_ring_over_direct", "", 2);
		md_phase_note(f, root, "submit");
	}
}

static void write_markdown(struct json_object *root, const char *path, const char *json_name)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		fail("cannot write %s: %s", tmp, strerror(errno));
	render_markdown(root, f, json_name);
	if (fclose(f) || rename(tmp, path))
		fail("cannot write %s: %s", path, strerror(errno));
	printf("cuda-bench: wrote %s\n", path);
}

static void write_json(struct json_object *root, const char *path)
{
	if (!write_json_file(root, path))
		fail("cannot write %s: %s", path, strerror(errno));
	printf("cuda-bench: wrote %s\n", path);
}

/* ------------------------------------------------------------------ options */

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cuda-bench [options]\n"
	        "Measures GPUswap on an NVIDIA GPU (the core on cudagpu) against the CUDA driver\n"
	        "alone: relocation bandwidth, STREAM on resident/evicted chunks, eviction latency\n"
	        "per chunk size, submission overhead and (--um) Unified Memory oversubscription.\n"
	        "\n"
	        "  --gpu cuda[:N]       the GPU (default cuda, i.e. cuda:0)\n"
	        "  --vram SIZE          cudagpu's VRAM budget (default 2G; --quick 1G)\n"
	        "  --chunk SIZE         chunk size of phases 1, 2, 4, 5 (default 4M)\n"
	        "  --evict SIZE         bytes evicted and returned per round in phase 1\n"
	        "                       (default half the budget)\n"
	        "  --stream-size SIZE   the STREAM buffer of phase 2 (default a quarter of it)\n"
	        "  --rounds N           rounds per phase (default 5; --quick 3)\n"
	        "  --evictions N        evictions per round and chunk size in phase 3\n"
	        "                       (default 4; --quick 2)\n"
	        "  --launches N         kernel launches per round in phase 5 (default 2000;\n"
	        "                       --quick 1000)\n"
	        "  --um                 also run phase 4, last: CUDA Unified Memory\n"
	        "  --um-vram SIZE       the budget B of phase 4 (default 1G; --quick 512M)\n"
	        "  --um-rounds N        rounds of phase 4 (default 3; --quick 1)\n"
	        "  --only LIST          only these phases: relocation,stream,latency,submit,um\n"
	        "  --host-limit SIZE    most host memory for evicted chunks (default 3G: the\n"
	        "                       GPU's host NUMA node may be small)\n"
	        "  --phase-limit SECS   no new round of a phase starts after SECS (default 60;\n"
	        "                       --quick 15; phase 4: 4x)\n"
	        "  --timeout SECS       watchdog for the whole run (default 900, with --um 1800;\n"
	        "                       --quick 300)\n"
	        "  --quick              small sizes, fewer rounds: about a minute\n"
	        "  --json FILE          write the figures (bench-cuda.json)\n"
	        "  --markdown FILE      write RESULTS.md, rendered from the JSON\n"
	        "  --render FILE        only render FILE (a bench-cuda.json) to --markdown\n"
	        "\n"
	        "SIZE: bytes, or with K, M, G (KiB, MiB, GiB). Exit status: 0 done, 1 failed,\n"
	        "2 usage, 77 no usable GPU here.\n");
}

static void usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cuda-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see cuda-bench --help)\n");
	exit(2);
}

static uint64_t parse_size(const char *name, const char *text)
{
	uint64_t value;

	if (vgpu_parse_bytes(text, &value))
		usage_error("%s: '%s' is not a size (use e.g. 512M or 2G)", name, text);
	if (!value || value > UINT64_C(1) << 50)
		usage_error("%s: '%s' is out of range", name, text);
	return value;
}

static unsigned parse_count(const char *name, const char *text, unsigned min, unsigned max)
{
	unsigned long value;
	char *end;

	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno || *end || !isdigit((unsigned char)*text) || value < min || value > max)
		usage_error("%s: '%s' must be a number from %u to %u", name, text, min, max);
	return (unsigned)value;
}

static unsigned parse_phases(const char *text)
{
	unsigned phases = 0;
	char buf[256], *save = NULL, *word;

	snprintf(buf, sizeof(buf), "%s", text);
	for (word = strtok_r(buf, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
		if (!strcmp(word, "relocation"))
			phases |= PHASE_RELOCATION;
		else if (!strcmp(word, "stream"))
			phases |= PHASE_STREAM;
		else if (!strcmp(word, "latency"))
			phases |= PHASE_LATENCY;
		else if (!strcmp(word, "submit"))
			phases |= PHASE_SUBMIT;
		else if (!strcmp(word, "um"))
			phases |= PHASE_UM;
		else
			usage_error("--only: unknown phase '%s' (relocation, stream, latency, submit, "
			            "um)", word);
	}
	if (!phases)
		usage_error("--only: no phase named");
	return phases;
}

static void parse_options(int argc, char **argv)
{
	enum {
		O_GPU = 256, O_VRAM, O_CHUNK, O_EVICT, O_STREAM, O_ROUNDS, O_EVICTIONS, O_LAUNCHES,
		O_UM, O_UM_VRAM, O_UM_ROUNDS, O_ONLY, O_HOST_LIMIT, O_PHASE_LIMIT, O_TIMEOUT,
		O_QUICK, O_JSON, O_MARKDOWN, O_RENDER, O_HELP,
	};
	static const struct option longs[] = {
		{ "gpu", required_argument, NULL, O_GPU },
		{ "vram", required_argument, NULL, O_VRAM },
		{ "chunk", required_argument, NULL, O_CHUNK },
		{ "evict", required_argument, NULL, O_EVICT },
		{ "stream-size", required_argument, NULL, O_STREAM },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "evictions", required_argument, NULL, O_EVICTIONS },
		{ "launches", required_argument, NULL, O_LAUNCHES },
		{ "um", no_argument, NULL, O_UM },
		{ "um-vram", required_argument, NULL, O_UM_VRAM },
		{ "um-rounds", required_argument, NULL, O_UM_ROUNDS },
		{ "only", required_argument, NULL, O_ONLY },
		{ "host-limit", required_argument, NULL, O_HOST_LIMIT },
		{ "phase-limit", required_argument, NULL, O_PHASE_LIMIT },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "json", required_argument, NULL, O_JSON },
		{ "markdown", required_argument, NULL, O_MARKDOWN },
		{ "render", required_argument, NULL, O_RENDER },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t vram = 0, chunk = 0, evict = 0, stream = 0, um_vram = 0;
	unsigned rounds = 0, um_rounds = 0, evictions = 0, launches = 0, phase_limit = 0;
	unsigned timeout = 0, only = 0;
	bool um = false;
	struct vgpu_error error = VGPU_ERROR_INIT;
	int c;
	size_t used = 0;

	memset(&opt, 0, sizeof(opt));
	snprintf(opt.gpu, sizeof(opt.gpu), "cuda");
	opt.host_limit = HOST_LIMIT_DEFAULT;
	for (int i = 0; i < argc && used < sizeof(opt.command) - 1; i++) {
		int n = snprintf(opt.command + used, sizeof(opt.command) - used, "%s%s", i ? " " : "",
		                 i ? argv[i] : "cuda-bench");

		used += n > 0 ? (size_t)n : 0;
	}
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case O_GPU: snprintf(opt.gpu, sizeof(opt.gpu), "%s", optarg); break;
		case O_VRAM: vram = parse_size("--vram", optarg); break;
		case O_CHUNK: chunk = parse_size("--chunk", optarg); break;
		case O_EVICT: evict = parse_size("--evict", optarg); break;
		case O_STREAM: stream = parse_size("--stream-size", optarg); break;
		case O_ROUNDS: rounds = parse_count("--rounds", optarg, 1, MAX_ROUNDS); break;
		case O_EVICTIONS: evictions = parse_count("--evictions", optarg, 1, 16); break;
		case O_LAUNCHES:
			launches = parse_count("--launches", optarg, 1, MAX_LAUNCHES);
			break;
		case O_UM: um = true; break;
		case O_UM_VRAM: um_vram = parse_size("--um-vram", optarg); break;
		case O_UM_ROUNDS: um_rounds = parse_count("--um-rounds", optarg, 1, MAX_ROUNDS); break;
		case O_ONLY: only = parse_phases(optarg); break;
		case O_HOST_LIMIT: opt.host_limit = parse_size("--host-limit", optarg); break;
		case O_PHASE_LIMIT:
			phase_limit = parse_count("--phase-limit", optarg, 1, 36000);
			break;
		case O_TIMEOUT: timeout = parse_count("--timeout", optarg, 10, 86400); break;
		case O_QUICK: opt.quick = true; break;
		case O_JSON: opt.json_path = optarg; break;
		case O_MARKDOWN: opt.markdown_path = optarg; break;
		case O_RENDER: opt.render_path = optarg; break;
		case 'h':
		case O_HELP: usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (opt.render_path) {
		if (!opt.markdown_path)
			usage_error("--render needs --markdown FILE");
		return;
	}
	if (vgpu_hal_spec_parse(opt.gpu, &opt.spec, &error))
		usage_error("--gpu: %s", vgpu_error_msg(&error));
	if (opt.spec.backend != VGPU_HAL_BACKEND_CUDA)
		usage_error("--gpu %s: cuda-bench measures a real GPU (cuda or cuda:N); core-bench "
		            "measures simgpu", opt.gpu);

	opt.phases = only ? only : PHASE_RELOCATION | PHASE_STREAM | PHASE_LATENCY | PHASE_SUBMIT |
	                           (um ? PHASE_UM : 0);
	opt.vram = vram ? vram : opt.quick ? 1 * GiB : 2 * GiB;
	opt.chunk = chunk ? chunk : 4 * MiB;
	opt.rounds = rounds ? rounds : opt.quick ? 3 : 5;
	opt.latency_evictions = evictions ? evictions : opt.quick ? 2 : 4;
	opt.launches = launches ? launches : opt.quick ? 1000 : 2000;
	opt.um_vram = um_vram ? um_vram : opt.quick ? 512 * MiB : 1 * GiB;
	opt.um_rounds = um_rounds ? um_rounds : opt.quick ? 1 : 3;
	opt.phase_limit_s = phase_limit ? phase_limit : opt.quick ? 15 : 60;
	opt.timeout_s = timeout ? timeout
	                        : opt.quick ? 300 : (opt.phases & PHASE_UM) ? 1800 : 900;

	if (opt.vram % (2 * MiB) || opt.vram < 256 * MiB)
		usage_error("--vram: the budget must be a multiple of 2 MiB, at least 256 MiB");
	if (opt.chunk % (2 * MiB) || opt.chunk > 128 * MiB)
		usage_error("--chunk: a multiple of 2 MiB (the GPU's page), at most 128 MiB");
	if (opt.vram < 16 * opt.chunk)
		usage_error("--vram: the budget must hold at least 16 chunks");
	opt.evict = evict ? evict : opt.vram / 2;
	opt.evict = opt.evict / opt.chunk * opt.chunk;
	if (!opt.evict || opt.evict > opt.vram - 2 * opt.chunk)
		usage_error("--evict: between one chunk and the budget less two chunks");
	opt.stream = stream ? stream : opt.vram / 4;
	opt.stream = opt.stream / opt.chunk * opt.chunk;
	if (!opt.stream || opt.stream > opt.vram / 2)
		usage_error("--stream-size: between one chunk and half the budget");
	if (opt.um_vram % (64 * MiB) || opt.um_vram < 256 * MiB)
		usage_error("--um-vram: a multiple of 64 MiB, at least 256 MiB");
	/* Host memory: the GPU's host NUMA node may be small (4.5 GB here). */
	if ((opt.phases & PHASE_RELOCATION) && 2 * opt.evict > opt.host_limit)
		usage_error("--evict %" PRIu64 " MiB needs twice that in host memory (evicted + the "
		            "pinned baseline), more than --host-limit %" PRIu64 " MiB",
		            opt.evict / MiB, opt.host_limit / MiB);
	if ((opt.phases & PHASE_STREAM) && opt.stream > opt.host_limit)
		usage_error("--stream-size is more than --host-limit");
	if ((opt.phases & PHASE_LATENCY) &&
	    (uint64_t)(opt.latency_evictions + 1) * 128 * MiB > opt.host_limit)
		usage_error("--evictions x 128 MiB is more than --host-limit");
	if ((opt.phases & PHASE_UM) &&
	    (uint64_t)(um_factors[UM_FACTORS - 1] * (double)opt.um_vram) - opt.um_vram >
	            opt.host_limit)
		usage_error("--um-vram: the 2x working set would evict more than --host-limit");
	if ((opt.phases & PHASE_UM) &&
	    (uint64_t)(um_factors[UM_FACTORS - 1] * (double)opt.um_vram) / opt.chunk +
	                    UM_FACTORS * 64 > GUEST_RESULT_SLOTS)
		usage_error("--um-vram: the working set has too many chunks for the benchmark's "
		            "result slots; use a larger --chunk");
}

/* ---------------------------------------------------------------------- main */

static void describe_host(struct json_object *root)
{
	struct utsname u;
	char text[512], module[128] = "unknown";
	FILE *f;
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
	put_string(root, "date", text);
	if (!uname(&u)) {
		snprintf(text, sizeof(text), "%s %s, %ld CPUs", u.sysname, u.release,
		         sysconf(_SC_NPROCESSORS_ONLN));
		put_string(root, "host", text);
	}
	/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  ..." or
	 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ...":
	 * the version is the first word after "Kernel Module" that starts with a
	 * digit. */
	f = fopen("/proc/driver/nvidia/version", "r");
	if (f) {
		if (fgets(text, sizeof(text), f)) {
			char *at = strstr(text, "Kernel Module"), *save = NULL, *word;

			for (word = at ? strtok_r(at + strlen("Kernel Module"), " \t\n", &save) : NULL;
			     word; word = strtok_r(NULL, " \t\n", &save)) {
				if (*word >= '0' && *word <= '9') {
					snprintf(module, sizeof(module), "%s", word);
					break;
				}
			}
		}
		fclose(f);
	}
	put_string(root, "kernel_module", module);
	snprintf(text, sizeof(text), "%d.%d", api.driver_version / 1000,
	         api.driver_version % 1000 / 10);
	put_string(root, "driver_api", text);
}

static int render_only(void)
{
	struct json_object *root = json_object_from_file(opt.render_path);
	const char *name = strrchr(opt.render_path, '/');

	if (!root) {
		fprintf(stderr, "cuda-bench: cannot read %s as JSON\n", opt.render_path);
		return 1;
	}
	write_markdown(root, opt.markdown_path, name ? name + 1 : opt.render_path);
	json_object_put(root);
	return 0;
}

int main(int argc, char **argv)
{
	struct json_object *root, *config;
	struct vgpu_hal *hal = NULL;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char device[256];
	uint64_t start = vgpu_monotonic_ns();
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv);
	if (opt.render_path)
		return render_only();
	self_test_reference();
	signal(SIGALRM, watchdog);
	alarm(opt.timeout_s);

	err = vgpu_hal_open(&opt.spec, NULL, opt.vram, &hal, &error);
	if (err) {
		bool no_gpu = err == -ENOENT || err == -ENODEV || err == -ENOTSUP;

		printf("cuda-bench: %s: %s\n", no_gpu ? "no usable GPU here, nothing measured"
		                                      : "cannot open the GPU",
		       vgpu_error_msg(&error));
		return no_gpu ? 77 : 1;
	}
	driver_open();
	cudagpu_describe(hal, device, sizeof(device));
	printf("cuda-bench: %s\n", device);
	printf("cuda-bench: %u rounds per phase, interleaved; figures are median [min .. max] "
	       "over rounds, ratios per round%s\n\n",
	       opt.rounds, opt.quick ? " (--quick)" : "");

	root = json_object_new_object();
	report = root;
	if (opt.json_path) {
		snprintf(partial_path, sizeof(partial_path), "%s.partial", opt.json_path);
		unlink(partial_path);
	}
	put_string(root, "benchmark", "cuda-bench");
	put_string(root, "device", device);
	describe_host(root);
	put_string(root, "command", opt.command);
	config = json_object_new_object();
	put_string(config, "gpu", opt.gpu);
	put_int(config, "vram_bytes", opt.vram);
	put_int(config, "chunk_bytes", opt.chunk);
	put_int(config, "rounds", opt.rounds);
	put_int(config, "um_rounds", opt.um_rounds);
	put_int(config, "host_limit_bytes", opt.host_limit);
	put_int(config, "phase_limit_s", opt.phase_limit_s);
	json_object_object_add(config, "quick", json_object_new_boolean(opt.quick));
	json_object_object_add(config, "um", json_object_new_boolean(opt.phases & PHASE_UM));
	json_object_object_add(root, "config", config);

	if (opt.phases & PHASE_RELOCATION)
		phase_relocation(hal, root);
	if (opt.phases & PHASE_STREAM)
		phase_stream(hal, root);
	if (opt.phases & PHASE_LATENCY)
		phase_latency(hal, root);
	if (opt.phases & PHASE_SUBMIT)
		phase_submit(hal, root);
	vgpu_hal_destroy(hal);
	if (opt.phases & PHASE_UM) {
		opt.phase_limit_s *= 4; /* 9 runs a round */
		put_int(root, "um_phase_limit_s", opt.phase_limit_s);
		phase_um(root);
	}
	driver_close();
	put_number(root, "seconds", seconds_since(start));
	json_object_object_add(root, "complete", json_object_new_boolean(true));
	alarm(0);

	if (opt.json_path) {
		write_json(root, opt.json_path);
		unlink(partial_path);
	}
	if (opt.markdown_path)
		write_markdown(root, opt.markdown_path,
		               opt.json_path ? (strrchr(opt.json_path, '/') ? strrchr(opt.json_path, '/') + 1
		                                                            : opt.json_path)
		                             : "its JSON");
	report = NULL;
	json_object_put(root);
	free(staging);
	printf("cuda-bench: all data checks passed; done in %.1f s\n", seconds_since(start));
	return 0;
}
