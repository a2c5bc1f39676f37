// SPDX-License-Identifier: MIT
/*
 * vgpu-info - what the vGPU of this VM is: render node, PCI device, driver,
 * device ABI, VRAM share, this VM's memory statistics and the guest
 * driver's counters (vgpu.ko's GET_INFO and STATS ioctls, through libdrm).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <xf86drm.h>

#include "vgpu_guest_drm.h"
#include "vgpu_workloads.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: vgpu-info [--device PATH] [--json]\n"
	        "\n"
	        "Shows this VM's vGPU as the guest driver vgpu.ko sees it: render node, PCI\n"
	        "device, driver and device ABI versions, negotiated features, interrupts,\n"
	        "the VM's VRAM share, cap and chunk size, its allocated/resident/evicted\n"
	        "memory, and the driver's mailbox and interrupt counters.\n"
	        "\n"
	        "  -d, --device PATH   render node (default: $%s, else the first\n"
	        "                      render node of driver 'vgpu')\n"
	        "  -j, --json          one JSON object\n"
	        "  -h, --help          this text\n"
	        "\n"
	        "Exit status: 0 ok; 1 the device did not answer; 2 bad usage or no vGPU.\n",
	        VGPU_GUEST_DRM_DEVICE_ENV);
}

static const char *irq_mode_name(uint32_t mode)
{
	switch (mode) {
	case DRM_VGPU_IRQ_MODE_MSIX:
		return "MSI-X";
	case DRM_VGPU_IRQ_MODE_MSI:
		return "MSI";
	case DRM_VGPU_IRQ_MODE_INTX:
		return "INTx";
	default:
		return "none (polling)";
	}
}

static void feature_names(uint32_t features, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ VGPU_FEATURE_MSIX, "msix" },
		{ VGPU_FEATURE_PRIORITY_HINTS, "priority-hints" },
		{ VGPU_FEATURE_STATS, "stats" },
		{ VGPU_FEATURE_DOORBELL_KICK, "doorbell-kick" },
	};
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && used < len; i++)
		if (features & names[i].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
			                         names[i].name);
	if (!buf[0])
		snprintf(buf, len, "none");
}

struct info {
	const char *path;
	char pci[32];
	char driver[64];
	struct drm_vgpu_get_info get;
	struct drm_vgpu_stats stats;
	int stats_error;
};

static void print_text(const struct info *in)
{
	const struct drm_vgpu_get_info *g = &in->get;
	const struct drm_vgpu_stats *s = &in->stats;
	char a[32], b[32], c[32], d[32], features[96];

	feature_names(g->features, features, sizeof(features));
	printf("vGPU %s (PCI %s, driver %s, uAPI %u)\n", in->path, in->pci, in->driver,
	       g->uapi_version);
	printf("  device      ABI %u.%u, features %s, %u channels, interrupts %s\n",
	       g->abi_version >> 16, g->abi_version & 0xffff, features, g->max_channels,
	       irq_mode_name(g->irq_mode));
	vgpu_format_bytes(g->vram_share_bytes, a, sizeof(a));
	vgpu_format_bytes(g->vram_total_bytes, b, sizeof(b));
	vgpu_format_bytes(g->chunk_bytes, c, sizeof(c));
	if (g->cap_bytes)
		vgpu_format_bytes(g->cap_bytes, d, sizeof(d));
	else
		snprintf(d, sizeof(d), "none");
	printf("  VRAM        fair share %s of %s, cap %s, chunk %s\n", a, b, d, c);
	if (in->stats_error) {
		printf("  this VM     statistics unavailable: %s\n", strerror(-in->stats_error));
		return;
	}
	vgpu_format_bytes(s->allocated_bytes, a, sizeof(a));
	vgpu_format_bytes(s->resident_bytes, b, sizeof(b));
	vgpu_format_bytes(s->evicted_bytes, c, sizeof(c));
	vgpu_format_bytes(s->fair_share_bytes, d, sizeof(d));
	printf("  this VM     allocated %s, resident %s, evicted %s, fair share %s, "
	       "%u evictions, %u returns\n",
	       a, b, c, d, s->evictions, s->returns);
	vgpu_format_bytes(s->live_buffer_bytes, a, sizeof(a));
	printf("  driver      %" PRIu64 " mailbox requests (%" PRIu64 " refused, %" PRIu64
	       " timed out, %" PRIu64 " doorbells); interrupts: %" PRIu64 " mailbox, %" PRIu64
	       " fence, %" PRIu64 " error; %" PRIu64 " fence waits slept\n",
	       (uint64_t)s->mailbox_requests, (uint64_t)s->mailbox_errors,
	       (uint64_t)s->mailbox_timeouts, (uint64_t)s->mailbox_doorbells,
	       (uint64_t)s->irq_mailbox, (uint64_t)s->irq_fence, (uint64_t)s->irq_error,
	       (uint64_t)s->fence_waits);
	printf("  live        %u buffers (%s), %u channels, %u channels killed\n", s->live_buffers,
	       a, s->live_channels, s->killed_channels);
}

static void add_u64(json_object *o, const char *key, uint64_t value)
{
	json_object_object_add(o, key, json_object_new_uint64(value));
}

static void print_json(const struct info *in)
{
	const struct drm_vgpu_get_info *g = &in->get;
	const struct drm_vgpu_stats *s = &in->stats;
	json_object *root = json_object_new_object();
	json_object *vm, *driver;

	json_object_object_add(root, "device", json_object_new_string(in->path));
	json_object_object_add(root, "pci", json_object_new_string(in->pci));
	json_object_object_add(root, "driver", json_object_new_string(in->driver));
	add_u64(root, "uapi_version", g->uapi_version);
	add_u64(root, "abi_version", g->abi_version);
	add_u64(root, "features", g->features);
	add_u64(root, "max_channels", g->max_channels);
	json_object_object_add(root, "interrupts", json_object_new_string(irq_mode_name(g->irq_mode)));
	add_u64(root, "vram_share_bytes", g->vram_share_bytes);
	add_u64(root, "vram_total_bytes", g->vram_total_bytes);
	add_u64(root, "cap_bytes", g->cap_bytes);
	add_u64(root, "chunk_bytes", g->chunk_bytes);
	add_u64(root, "page_size_mask", g->page_size_mask);
	if (!in->stats_error) {
		vm = json_object_new_object();
		add_u64(vm, "allocated_bytes", s->allocated_bytes);
		add_u64(vm, "resident_bytes", s->resident_bytes);
		add_u64(vm, "evicted_bytes", s->evicted_bytes);
		add_u64(vm, "fair_share_bytes", s->fair_share_bytes);
		add_u64(vm, "evictions", s->evictions);
		add_u64(vm, "returns", s->returns);
		json_object_object_add(root, "vm", vm);
		driver = json_object_new_object();
		add_u64(driver, "mailbox_requests", s->mailbox_requests);
		add_u64(driver, "mailbox_errors", s->mailbox_errors);
		add_u64(driver, "mailbox_timeouts", s->mailbox_timeouts);
		add_u64(driver, "mailbox_doorbells", s->mailbox_doorbells);
		add_u64(driver, "irq_mailbox", s->irq_mailbox);
		add_u64(driver, "irq_fence", s->irq_fence);
		add_u64(driver, "irq_error", s->irq_error);
		add_u64(driver, "fence_waits", s->fence_waits);
		add_u64(driver, "live_buffers", s->live_buffers);
		add_u64(driver, "live_buffer_bytes", s->live_buffer_bytes);
		add_u64(driver, "live_channels", s->live_channels);
		add_u64(driver, "killed_channels", s->killed_channels);
		json_object_object_add(root, "driver_counters", driver);
	} else {
		json_object_object_add(root, "stats_error",
		                       json_object_new_string(strerror(-in->stats_error)));
	}
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct info in = { 0 };
	struct vgpu_guest_device *dev = NULL;
	const char *path = NULL;
	drmVersionPtr version;
	drmDevicePtr pci;
	bool json = false;
	char why[512];
	int opt, fd, ret;

	while ((opt = getopt_long(argc, argv, "d:jh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'vgpu-info --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vgpu-info: unexpected argument '%s'\nTry 'vgpu-info --help'.\n",
		        argv[optind]);
		return EXIT_USAGE;
	}

	ret = vgpu_device_open_drm(path, &dev, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "vgpu-info: %s\n", why);
		return ret == -ENODEV || ret == -ENOENT ? EXIT_USAGE : EXIT_FAILED;
	}
	fd = vgpu_guest_drm_fd(dev);
	in.path = vgpu_guest_drm_path(dev);

	snprintf(in.pci, sizeof(in.pci), "unknown");
	if (drmGetDevice2(fd, 0, &pci) == 0) {
		if (pci->bustype == DRM_BUS_PCI)
			snprintf(in.pci, sizeof(in.pci), "%04x:%02x:%02x.%u", pci->businfo.pci->domain,
			         pci->businfo.pci->bus, pci->businfo.pci->dev,
			         pci->businfo.pci->func);
		drmFreeDevice(&pci);
	}
	version = drmGetVersion(fd);
	if (version) {
		snprintf(in.driver, sizeof(in.driver), "%s %d.%d.%d", version->name,
		         version->version_major, version->version_minor,
		         version->version_patchlevel);
		drmFreeVersion(version);
	}

	if (drmIoctl(fd, DRM_IOCTL_VGPU_GET_INFO, &in.get)) {
		fprintf(stderr, "vgpu-info: GET_INFO on %s: %s (see dmesg)\n", in.path,
		        strerror(errno));
		vgpu_device_close(dev);
		return EXIT_FAILED;
	}
	in.stats_error = vgpu_guest_drm_stats(dev, &in.stats);

	if (json)
		print_json(&in);
	else
		print_text(&in);
	vgpu_device_close(dev);
	return in.stats_error ? EXIT_FAILED : 0;
}
