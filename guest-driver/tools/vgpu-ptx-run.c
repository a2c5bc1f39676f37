// SPDX-License-Identifier: MIT
/*
 * vgpu-ptx-run - a GPU program of the guest's own on this VM's vGPU: loads
 * tests/ptx/modules.ptx through the runtime, launches its kernels in a
 * channel and checks every result against the CPU (ptx_check.h). On
 * vgpu.ko's render node, or (where built with vgpud's local transport) as a
 * tenant of vgpud.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptx_check.h"
#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"
#ifdef VGPU_PTX_RUN_LOCAL
#include "vgpu_guest_local.h"
#endif

#define TOOL "vgpu-ptx-run"
#define EXIT_FAILED 1
#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: " TOOL " [options] --ptx FILE\n"
	        "\n"
	        "Runs a GPU program of the guest's own: loads FILE, the module of\n"
	        "tests/ptx/modules.ptx (kernels vadd_u32, scale_bias, sum_u32), into the\n"
	        "vGPU (MODULE_LOAD), launches its kernels with LAUNCH_FUNCTION commands in\n"
	        "a channel over --size of GPU memory, and checks every word, every sum and\n"
	        "the module's variables against the CPU; a malformed module must be\n"
	        "refused. Prints one line: '" TOOL ": PASS ...' or '" TOOL ": FAIL ...'.\n"
	        "\n"
	        "Device:\n"
	        "  -D, --device PATH        render node (default: $%s, else the first\n"
	        "                           render node of driver 'vgpu')\n"
#ifdef VGPU_PTX_RUN_LOCAL
	        "      --socket PATH        be a tenant of vgpud on this local socket\n"
	        "                           instead (default $VGPUD_SOCKET with --name)\n"
	        "      --name NAME          the tenant's VM name (default ptx-PID)\n"
#endif
	        "\n"
	        "Program:\n"
	        "      --ptx FILE           the PTX text of tests/ptx/modules.ptx\n"
	        "  -S, --size SIZE          GPU memory of the data (default 24M), in groups\n"
	        "                           of three buffers; bytes or with K, M, G\n"
	        "  -b, --buffer-size SIZE   each buffer (default 4M)\n"
	        "  -i, --iterations N       scale_bias passes over each result (default 2)\n"
	        "      --seed N             seed of the data (default 1)\n"
	        "      --priority N         ALLOC priority 0..15 (default %d)\n"
	        "  -h, --help               this text\n"
	        "\n"
	        "Exit status: 0 every value matched; 1 a step failed or a value differed;\n"
	        "2 bad usage, no device or no such file.\n",
	        VGPU_GUEST_DRM_DEVICE_ENV, VGPU_PRIORITY_DEFAULT);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, TOOL ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '" TOOL " --help'.\n");
	return EXIT_USAGE;
}

static int parse_u64(const char *text, uint64_t *out)
{
	char *end;

	if (!*text || *text == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(text, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

/* The whole file, NUL-terminated; NULL with errno. */
static char *read_text(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		text = malloc((size_t)size + 1);
		if (text && fread(text, 1, (size_t)size, f) == (size_t)size) {
			text[size] = '\0';
			*bytes = (size_t)size;
		} else {
			free(text);
			text = NULL;
			errno = EIO;
		}
	} else {
		errno = EINVAL;
	}
	fclose(f);
	return text;
}

struct args {
	const char *device;
	const char *ptx;
#ifdef VGPU_PTX_RUN_LOCAL
	bool local;
	struct vgpu_local_device_config config;
	char default_name[32];
#endif
	struct ptx_check_options options;
};

/* 0, an exit status, or -1 for --help. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option long_options[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "socket", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'n' },
		{ "ptx", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 'S' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 'e' },
		{ "priority", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t value;
	int opt;

	a->options.size_bytes = 24ull << 20;
	a->options.buffer_bytes = 4ull << 20;
	a->options.iterations = 2;
	a->options.seed = 1;
	a->options.priority = VGPU_PRIORITY_DEFAULT;
	while ((opt = getopt_long(argc, argv, "D:S:b:i:h", long_options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			a->device = optarg;
			break;
#ifdef VGPU_PTX_RUN_LOCAL
		case 's':
			a->local = true;
			a->config.socket_path = optarg;
			break;
		case 'n':
			a->local = true;
			a->config.vm_name = optarg;
			break;
#else
		case 's':
		case 'n':
			return usage_error("this build has no local transport (%s)", "--socket, --name");
#endif
		case 'p':
			a->ptx = optarg;
			break;
		case 'S':
			if (vgpu_parse_size(optarg, &a->options.size_bytes) || !a->options.size_bytes)
				return usage_error("--size wants a size such as 24M, not '%s'", optarg);
			break;
		case 'b':
			if (vgpu_parse_size(optarg, &a->options.buffer_bytes) ||
			    a->options.buffer_bytes < VGPU_PAGE_SIZE || a->options.buffer_bytes % 4 ||
			    a->options.buffer_bytes / 4 > INT32_MAX)
				return usage_error("--buffer-size wants 4K..8G in whole words, not '%s'",
				                   optarg);
			break;
		case 'i':
			if (parse_u64(optarg, &value) || !value || value > 1000000)
				return usage_error("--iterations wants 1..1000000, not '%s'", optarg);
			a->options.iterations = (uint32_t)value;
			break;
		case 'e':
			if (parse_u64(optarg, &a->options.seed))
				return usage_error("--seed wants a number, not '%s'", optarg);
			break;
		case 'P':
			if (parse_u64(optarg, &value) || value > VGPU_PRIORITY_MAX)
				return usage_error("--priority wants 0..15, not '%s'", optarg);
			a->options.priority = (uint32_t)value;
			break;
		case 'h':
			return -1;
		default:
			fprintf(stderr, "Try '" TOOL " --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!a->ptx)
		return usage_error("%s: which module? (tests/ptx/modules.ptx)", "--ptx FILE is missing");
#ifdef VGPU_PTX_RUN_LOCAL
	if (a->local && a->device)
		return usage_error("%s", "--device and --socket exclude each other");
	if (a->local && !a->config.vm_name) {
		snprintf(a->default_name, sizeof(a->default_name), "ptx-%ld", (long)getpid());
		a->config.vm_name = a->default_name;
	}
#endif
	return 0;
}

static int open_device(struct args *a, struct vgpu_guest_device **dev, char *why, size_t len)
{
#ifdef VGPU_PTX_RUN_LOCAL
	if (a->local)
		return vgpu_device_open_local(&a->config, 0, dev, why, len);
#endif
	return vgpu_device_open_drm(a->device, dev, why, len);
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct ptx_check_result r;
	struct vgpu_guest_device *dev;
	const struct vgpu_device_info *info;
	char why[512] = "";
	char *image;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret) {
		if (ret < 0)
			usage(stdout);
		return ret < 0 ? 0 : ret;
	}
	image = read_text(a.ptx, &a.options.image_bytes);
	if (!image) {
		fprintf(stderr, TOOL ": cannot read %s: %s\n", a.ptx, strerror(errno));
		return EXIT_USAGE;
	}
	a.options.image = image;
	if (open_device(&a, &dev, why, sizeof(why))) {
		fprintf(stderr, TOOL ": %s\n", why);
		free(image);
		return EXIT_USAGE;
	}
	info = vgpu_device_info(dev);
	ret = ptx_check_run(dev, &a.options, &r);
	printf(TOOL ": %s backend=%s abi=%u.%u module=%u functions=%u variables=%u groups=%" PRIu64
	       " words=%" PRIu64 " launches=%" PRIu64 " allocated=%" PRIu64 " uploaded=%" PRIu64
	       " downloaded=%" PRIu64 " vm_allocated=%" PRIu64 " vm_evicted=%" PRIu64
	       " vm_evictions=%u mismatches=%" PRIu64 " sum_mismatches=%" PRIu64
	       " variables=%s bad_image=%s seconds=%.2f: %s\n",
	       ret ? "FAIL" : "PASS", info->backend, info->abi_version >> 16,
	       info->abi_version & 0xffff, r.module, r.function_count, r.variable_count, r.groups,
	       r.elements, r.launches, r.allocated_bytes, r.uploaded_bytes, r.downloaded_bytes,
	       r.vm_allocated_bytes, r.vm_evicted_bytes, r.vm_evictions,
	       r.mismatches, r.sum_mismatches, r.variables_ok ? "ok" : "wrong",
	       r.bad_image_refused ? "refused" : "not-refused", r.seconds, r.message);
	fflush(stdout);
	vgpu_device_close(dev);
	free(image);
	return ret ? EXIT_FAILED : 0;
}
