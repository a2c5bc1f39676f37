// SPDX-License-Identifier: MIT
/*
 * vgpu-fence-gaps - how long this VM's GPU stops, as the guest sees it: a
 * write-heavy workload at a chosen rate whose fence completions are
 * timestamped (tests/vgpu-pci/migrate-bench.sh: the longest gap across a
 * live migration is the migration's guest-visible downtime).
 *
 * It holds --size of GPU memory: --write of it is rewritten, slice by
 * slice (FILL of SLICE bytes with a new seed, one fence each, waited for),
 * at --rate bytes per second; the rest is filled once and only held. Each
 * fence's wait (the guest's CLOCK_MONOTONIC from its submission to its
 * completion: how long the GPU kept this guest waiting, whatever the
 * pacing) and the gap between two completions are measured; waits of
 * --report-ms or more are printed as they happen:
 *   VGPU-FENCE-GAP ns=W at=T          (T: the completion ending the wait)
 * and with --timeline every fence's submission and completion (the guest's
 * clock), as soon as it completed, for a host that knows which fences
 * completed before a switch-over (migrate-bench.sh: the lines that reached
 * the source QEMU's console):
 *   VGPU-FENCE-T n=N s=SUBMITTED c=COMPLETED
 * and at the end, after the whole memory is checked by checksum (the GPU's
 * CHECKSUM against the CPU's reference of each slice's last FILL):
 *   VGPU-FENCE-GAPS fences=N max_wait_ns=W max_wait_at=T max_gap_ns=G
 *       written=B ns=D checked=S changed=C
 * (max_gap_ns includes the pacing: about SLICE / rate between fences.)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu/abi/commands.h"
#include "vgpu_compat.h"
#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"

#define TOOL "vgpu-fence-gaps"
#define SLICE (1ull << 20)
#define BUFFER_MAX (32ull << 20)
#define MAX_BUFFERS 256
#define GPFIFO_ENTRIES 256u
#define WAIT_MS 120000
#define EXIT_USAGE 2

struct gaps {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *channel;
	struct vgpu_guest_buffer buf[MAX_BUFFERS];
	unsigned count;
	uint64_t slices;     /* of SLICE bytes over all buffers */
	uint64_t *seed;      /* each slice's last FILL */
	uint64_t write_slices;
};

static void fail(struct gaps *g, const char *what)
{
	fprintf(stderr, TOOL ": %s: %s\n", what, g->dev ? vgpu_device_last_error(g->dev) : "");
	exit(1);
}

static void slice_at(const struct gaps *g, uint64_t i, uint64_t *va)
{
	uint64_t per = BUFFER_MAX / SLICE;

	*va = g->buf[i / per].gpu_va + (i % per) * SLICE;
}

/* Room for one command in the pushbuffer. */
static uint32_t *begin(struct gaps *g)
{
	uint32_t *words;

	if (vgpu_channel_begin(g->channel, VGPU_COMMAND_MAX_WORDS, &words))
		fail(g, "waiting for pushbuffer space");
	return words;
}

static void submit_wait(struct gaps *g, uint32_t n, const char *what)
{
	uint64_t fence;

	if (vgpu_channel_submit(g->channel, n, VGPU_SUBMIT_INTERRUPT, &fence) ||
	    vgpu_channel_wait(g->channel, fence, WAIT_MS))
		fail(g, what);
}

static void fill_slice(struct gaps *g, uint64_t i, uint64_t seed)
{
	uint64_t va;

	slice_at(g, i, &va);
	submit_wait(g, vgpu_push_launch_fill(begin(g), va, SLICE, seed), "filling");
	g->seed[i] = seed;
}

static uint64_t check(struct gaps *g)
{
	uint64_t changed = 0;

	for (uint64_t i = 0; i < g->slices; i++) {
		uint64_t va, got, want = vgpu_reference_fill_stream_checksum(g->seed[i], SLICE, 0);

		slice_at(g, i, &va);
		submit_wait(g,
		            vgpu_push_launch_checksum(begin(g), va, SLICE,
		                                      vgpu_channel_scratch_va(g->channel, 0)),
		            "checking");
		got = vgpu_channel_read_scratch(g->channel, 0);
		if (got != want) {
			fprintf(stderr, TOOL ": slice %" PRIu64 " changed: checksum %#" PRIx64
			        ", want %#" PRIx64 "\n", i, got, want);
			changed++;
		}
	}
	return changed;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-fence-gaps [-D NODE] [--size SIZE] [--write SIZE] [--rate SIZE]\n"
	        "                       [--duration SECONDS] [--report-ms MS] [--timeline]\n"
	        "\n"
	        "Holds --size of GPU memory (default 64M, a multiple of 1M), rewrites\n"
	        "--write of it (default 8M) in 1 MiB slices at --rate bytes per second\n"
	        "(default 16M) for --duration seconds (default 30), times every fence\n"
	        "from its submission to its completion and prints the waits of\n"
	        "--report-ms (default 20) or more (with --timeline every fence as\n"
	        "'VGPU-FENCE-T n=N s=SUBMITTED c=COMPLETED'), then checks the whole memory by\n"
	        "checksum and prints 'VGPU-FENCE-GAPS fences=N max_wait_ns=W\n"
	        "max_wait_at=T max_gap_ns=G written=B ns=D checked=S changed=C'.\n"
	        "Exit status 0, 1 (device error or changed data), 2 (usage).\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "size", required_argument, NULL, 'S' },
		{ "write", required_argument, NULL, 'w' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "report-ms", required_argument, NULL, 'R' },
		{ "timeline", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gaps g;
	const char *path = NULL;
	uint64_t size = 64ull << 20, write = 8ull << 20, rate = 16ull << 20, duration_s = 30;
	uint64_t report_ms = 20, start, end, prev, max_gap = 0, max_wait = 0, max_at = 0;
	uint64_t fences = 0;
	uint64_t written = 0, step = 0, changed;
	bool timeline = false;
	char why[512];
	int opt;

	memset(&g, 0, sizeof(g));
	while ((opt = getopt_long(argc, argv, "D:S:w:r:d:R:Th", options, NULL)) != -1) {
		switch (opt) {
		case 'T':
			timeline = true;
			break;
		case 'D':
			path = optarg;
			break;
		case 'S':
		case 'w':
		case 'r': {
			uint64_t v;

			if (vgpu_parse_size(optarg, &v) || !v) {
				fprintf(stderr, TOOL ": a size such as 8M, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			*(opt == 'S' ? &size : opt == 'w' ? &write : &rate) = v;
			break;
		}
		case 'd':
		case 'R': {
			char *endp;
			unsigned long long v = strtoull(optarg, &endp, 10);

			if (*endp || !v) {
				fprintf(stderr, TOOL ": a positive number, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			*(opt == 'd' ? &duration_s : &report_ms) = v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc || size % SLICE || write % SLICE || write > size ||
	    size > MAX_BUFFERS * BUFFER_MAX) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (vgpu_device_open_drm(path, &g.dev, why, sizeof(why))) {
		fprintf(stderr, TOOL ": %s\n", why);
		return 1;
	}
	if (vgpu_channel_create(g.dev, GPFIFO_ENTRIES, &g.channel))
		fail(&g, "creating a channel");
	/* buffers of BUFFER_MAX (slice_at's arithmetic), the last one smaller */
	for (uint64_t left = size, n; left; left -= n) {
		n = left < BUFFER_MAX ? left : BUFFER_MAX;
		if (vgpu_buffer_alloc(g.dev, n, VGPU_PRIORITY_DEFAULT, &g.buf[g.count]))
			fail(&g, "allocating");
		g.count++;
	}
	g.slices = size / SLICE;
	g.write_slices = write / SLICE;
	g.seed = calloc(g.slices, sizeof(*g.seed));
	if (!g.seed)
		fail(&g, "out of memory");
	for (uint64_t i = 0; i < g.slices; i++)
		fill_slice(&g, i, 0xfe4ce000u + i);
	printf("VGPU-FENCE-GAPS-READY size=%" PRIu64 " write=%" PRIu64 " rate=%" PRIu64 "\n", size,
	       write, rate);
	fflush(stdout);

	start = prev = vgpu_now_ns();
	end = start + duration_s * 1000000000ull;
	while (prev < end) {
		uint64_t t, wait, due, submitted = vgpu_now_ns();

		fill_slice(&g, step % g.write_slices, 0xfe4d0000u + step);
		step++;
		written += SLICE;
		t = vgpu_now_ns();
		wait = t - submitted;
		fences++;
		if (t - prev > max_gap)
			max_gap = t - prev;
		if (wait > max_wait) {
			max_wait = wait;
			max_at = t;
		}
		if (timeline) {
			printf("VGPU-FENCE-T n=%" PRIu64 " s=%" PRIu64 " c=%" PRIu64 "\n", fences,
			       submitted, t);
			fflush(stdout);
		}
		if (wait >= report_ms * 1000000ull) {
			printf("VGPU-FENCE-GAP ns=%" PRIu64 " at=%" PRIu64 "\n", wait, t);
			fflush(stdout);
		}
		prev = t;
		/* the rate: slice n is due at start + n * SLICE / rate */
		due = start + (uint64_t)((double)written * 1e9 / (double)rate);
		if (due > t) {
			struct timespec ts = { (time_t)((due - t) / 1000000000ull),
				               (long)((due - t) % 1000000000ull) };

			nanosleep(&ts, NULL);
		}
	}
	changed = check(&g);
	printf("VGPU-FENCE-GAPS fences=%" PRIu64 " max_wait_ns=%" PRIu64 " max_wait_at=%" PRIu64
	       " max_gap_ns=%" PRIu64 " written=%" PRIu64 " ns=%" PRIu64 " checked=%" PRIu64
	       " changed=%" PRIu64 "\n",
	       fences, max_wait, max_at, max_gap, written, prev - start, g.slices, changed);
	fflush(stdout);
	for (unsigned i = 0; i < g.count; i++)
		vgpu_buffer_free(g.dev, &g.buf[i]);
	free(g.seed);
	vgpu_channel_destroy(g.channel);
	vgpu_device_close(g.dev);
	return changed ? 1 : 0;
}
