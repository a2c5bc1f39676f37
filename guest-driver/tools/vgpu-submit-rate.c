// SPDX-License-Identifier: MIT
/*
 * vgpu-submit-rate - submission throughput of this VM's vGPU, measured in
 * segments that someone outside the VM starts (tests/vgpu-pci/bench.sh: two
 * VMs, one per device path, whose segments alternate A B B A ... so that
 * both see the same load on the host).
 *
 * It opens vgpu.ko's render node, creates one channel and then reads
 * commands, one a line, from --control (a guest's second serial port, or
 * stdin):
 *   run ID MS   submit for MS milliseconds, wait for the last fence, print
 *               "VGPU-SUBMIT-RATE id=ID submissions=N ns=T rate=R
 *               space_waits=W" (one write)
 *   hold SIZE   allocate SIZE more of GPU memory (buffers of up to 32 MiB,
 *               filled by the GPU) and keep it, so that the VM holds memory
 *               vgpud may relocate while it submits; prints
 *               "VGPU-SUBMIT-HELD bytes=N buffers=N"
 *   quit        check every held buffer (CHECKSUM against what FILL wrote;
 *               a mismatch is an error), free everything, exit
 * Each submission is what guest-submit-bench's "nop" is (a GPFIFO entry, the
 * fence the runtime appends, GP_PUT and the doorbell word, all stores into
 * the mapped channel window: no system call, no trap) or, with --work
 * stream, STREAM over a 64 KiB buffer. Before a segment's clock starts, 16
 * submissions wake the GPU up and are waited for.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/commands.h"
#include "vgpu_compat.h"
#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"

#define TOOL "vgpu-submit-rate"
#define STREAM_BYTES (64u << 10)
#define HOLD_BUFFER_MAX (32ull << 20)
#define MAX_HELD 256
#define GPFIFO_ENTRIES 512u
#define WAIT_MS 60000
#define EXIT_USAGE 2

enum work { WORK_NOP, WORK_STREAM };

struct rate {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *channel;
	struct vgpu_guest_buffer stream;
	struct vgpu_guest_buffer held[MAX_HELD];
	unsigned held_count;
	enum work work;
};

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-submit-rate [-D NODE] [--work nop|stream] [--control FILE]\n"
	        "\n"
	        "Measures submission throughput on this VM's vGPU in segments started by\n"
	        "commands read one a line from --control (default: stdin):\n"
	        "  run ID MS   submit for MS milliseconds, wait for the last fence, print\n"
	        "              'VGPU-SUBMIT-RATE id=ID submissions=N ns=T rate=R space_waits=W'\n"
	        "  hold SIZE   allocate SIZE more of GPU memory, filled, and keep it (vgpud\n"
	        "              may relocate it while this VM submits); prints\n"
	        "              'VGPU-SUBMIT-HELD bytes=N buffers=N'\n"
	        "  quit        check the held memory by checksum, free everything, exit\n"
	        "Prints 'VGPU-SUBMIT-READY ...' once its channel is set up.\n"
	        "\n"
	        "  -D, --device NODE  render node (default: the first of driver 'vgpu')\n"
	        "  -w, --work W       nop: empty submissions (default); stream: STREAM over\n"
	        "                     64 KiB per submission\n"
	        "  -c, --control FILE read the commands from FILE (e.g. /dev/ttyS1)\n"
	        "  -h, --help         this text\n"
	        "Exit status: 0, 1 on a device error or a held buffer that changed, 2 for\n"
	        "bad usage.\n");
}

static void fail(struct rate *r, const char *what)
{
	fprintf(stderr, TOOL ": %s: %s\n", what, r->dev ? vgpu_device_last_error(r->dev) : "");
	exit(1);
}

/* The FILL seed of held buffer i. */
static uint64_t hold_seed(unsigned i)
{
	return 0x5eed0000u + i;
}

static void submit_wait(struct rate *r, uint32_t words, const char *what)
{
	uint64_t fence;

	if (vgpu_channel_submit(r->channel, words, VGPU_SUBMIT_INTERRUPT, &fence) ||
	    vgpu_channel_wait(r->channel, fence, WAIT_MS))
		fail(r, what);
}

static void hold_memory(struct rate *r, uint64_t bytes)
{
	uint32_t *words;

	while (bytes) {
		struct vgpu_guest_buffer *b = &r->held[r->held_count];
		uint64_t size = bytes < HOLD_BUFFER_MAX ? bytes : HOLD_BUFFER_MAX;

		if (r->held_count == MAX_HELD)
			fail(r, "hold: too many buffers");
		if (vgpu_buffer_alloc(r->dev, size, VGPU_PRIORITY_DEFAULT, b))
			fail(r, "allocating the held memory");
		if (vgpu_channel_begin(r->channel, VGPU_COMMAND_MAX_WORDS, &words))
			fail(r, "waiting for pushbuffer space");
		submit_wait(r,
		            vgpu_push_launch_fill(words, b->gpu_va, size,
		                                  hold_seed(r->held_count)),
		            "filling the held memory");
		r->held_count++;
		bytes -= size;
	}
}

static uint64_t held_bytes(const struct rate *r)
{
	uint64_t bytes = 0;
	unsigned i;

	for (i = 0; i < r->held_count; i++)
		bytes += r->held[i].bytes;
	return bytes;
}

/* Every held buffer still holds what FILL wrote: the GPU's checksum of it
 * against the CPU's reference. */
static unsigned check_held(struct rate *r)
{
	unsigned i, bad = 0;

	for (i = 0; i < r->held_count; i++) {
		const struct vgpu_guest_buffer *b = &r->held[i];
		uint64_t want = vgpu_reference_fill_stream_checksum(hold_seed(i), b->bytes, 0), got;
		uint32_t *cmd;

		if (vgpu_channel_begin(r->channel, VGPU_COMMAND_MAX_WORDS, &cmd))
			fail(r, "waiting for pushbuffer space");
		submit_wait(r,
		            vgpu_push_launch_checksum(cmd, b->gpu_va, b->bytes,
		                                      vgpu_channel_scratch_va(r->channel, 0)),
		            "checking the held memory");
		got = vgpu_channel_read_scratch(r->channel, 0);
		if (got != want) {
			fprintf(stderr, TOOL ": held buffer %u (%" PRIu64 " bytes) changed: checksum %#" PRIx64
			        ", want %#" PRIx64 "\n", i, b->bytes, got, want);
			bad++;
		}
	}
	return bad;
}

/* count submissions; the last one's fence */
static uint64_t submit_batch(struct rate *r, unsigned count)
{
	uint64_t fence = 0;
	uint32_t *words, n;
	unsigned i;

	for (i = 0; i < count; i++) {
		if (vgpu_channel_begin(r->channel, VGPU_COMMAND_MAX_WORDS, &words))
			fail(r, "waiting for pushbuffer space");
		n = r->work == WORK_STREAM ?
		            vgpu_push_launch_stream(words, r->stream.gpu_va, STREAM_BYTES, 1) :
		            0;
		if (vgpu_channel_submit(r->channel, n, 0, &fence))
			fail(r, "submitting");
	}
	return fence;
}

static void run_segment(struct rate *r, const char *id, uint64_t ms)
{
	struct vgpu_channel_stats before, after;
	uint64_t start, end, count = 0, fence = 0, ns;
	char line[256];

	if (vgpu_channel_wait(r->channel, submit_batch(r, 16), WAIT_MS))
		fail(r, "waiting for the warm-up fence");
	vgpu_channel_stats(r->channel, &before);
	start = vgpu_now_ns();
	end = start + ms * 1000000ull;
	/* the clock every 64 submissions only */
	while (vgpu_now_ns() < end) {
		fence = submit_batch(r, 64);
		count += 64;
	}
	if (vgpu_channel_wait(r->channel, fence, WAIT_MS))
		fail(r, "waiting for the last fence");
	ns = vgpu_now_ns() - start;
	vgpu_channel_stats(r->channel, &after);
	/* one write: the reader never sees half a line */
	snprintf(line, sizeof(line),
	         "VGPU-SUBMIT-RATE id=%s submissions=%" PRIu64 " ns=%" PRIu64 " rate=%.1f"
	         " space_waits=%" PRIu64 "\n",
	         id, count, ns, (double)count / ((double)ns / 1e9),
	         after.waits_for_space - before.waits_for_space);
	fputs(line, stdout);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "work", required_argument, NULL, 'w' },
		{ "control", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rate r = { .work = WORK_NOP };
	const char *path = NULL, *control = NULL;
	char why[512], line[256];
	unsigned bad;
	FILE *in = stdin;
	int opt, i;

	while ((opt = getopt_long(argc, argv, "D:w:c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			path = optarg;
			break;
		case 'w':
			if (!strcmp(optarg, "nop")) {
				r.work = WORK_NOP;
			} else if (!strcmp(optarg, "stream")) {
				r.work = WORK_STREAM;
			} else {
				fprintf(stderr, TOOL ": --work wants nop or stream, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'c':
			control = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (control && !(in = fopen(control, "r"))) {
		fprintf(stderr, TOOL ": %s: %s\n", control, strerror(errno));
		return EXIT_USAGE;
	}
	if (vgpu_device_open_drm(path, &r.dev, why, sizeof(why))) {
		fprintf(stderr, TOOL ": %s\n", why);
		return 1;
	}
	if (vgpu_channel_create(r.dev, GPFIFO_ENTRIES, &r.channel))
		fail(&r, "creating a channel");
	if (vgpu_buffer_alloc(r.dev, STREAM_BYTES, VGPU_PRIORITY_DEFAULT, &r.stream))
		fail(&r, "allocating the stream buffer");
	printf("VGPU-SUBMIT-READY node=%s work=%s\n", vgpu_guest_drm_path(r.dev),
	       r.work == WORK_STREAM ? "stream-64K" : "nop");
	fflush(stdout);

	while (fgets(line, sizeof(line), in)) {
		char id[64], size[32];
		uint64_t ms, bytes;

		if (sscanf(line, "run %63s %" SCNu64, id, &ms) == 2 && ms > 0) {
			run_segment(&r, id, ms);
		} else if (sscanf(line, "hold %31s", size) == 1 && !vgpu_parse_size(size, &bytes)) {
			hold_memory(&r, bytes);
			printf("VGPU-SUBMIT-HELD bytes=%" PRIu64 " buffers=%u\n", held_bytes(&r),
			       r.held_count);
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else if (line[strspn(line, " \t\r\n")]) {
			fprintf(stderr, TOOL ": unknown command: %s", line);
		}
	}
	bad = check_held(&r);
	printf("VGPU-SUBMIT-DONE held_checked=%u changed=%u\n", r.held_count, bad);
	fflush(stdout);
	for (i = 0; i < (int)r.held_count; i++)
		vgpu_buffer_free(r.dev, &r.held[i]);
	vgpu_buffer_free(r.dev, &r.stream);
	vgpu_channel_destroy(r.channel);
	vgpu_device_close(r.dev);
	if (in != stdin)
		fclose(in);
	return bad ? 1 : 0;
}
