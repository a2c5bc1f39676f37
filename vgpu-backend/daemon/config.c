// SPDX-License-Identifier: MIT
/* config.c - defaults, configuration file and flags, see config.h. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/core.h"
#include "vgpu/error.h"
#include "vgpu/hal_open.h"
#include "vgpu/abi/mdev_control.h"
#include "vgpu/util.h"
#include "listen_address.h"
#include "log.h"

enum key_type {
	T_SIZE, T_RATE, T_U32, T_U64, T_BOOL, T_STRING, T_LOG_LEVEL, T_MDEV_MODE, T_LISTEN,
	T_MODEL, T_BUDGET, T_SHARING, T_WALKERS, T_MEMSCHED, T_ACCOUNTING, T_CPU
};

struct key {
	const char *section;
	const char *name;   /* file key; the flag is --name with '-' for '_' */
	enum key_type type;
	size_t offset;      /* in struct vgpud_config */
	size_t size;        /* T_STRING: buffer size */
	const char *arg;    /* metavariable for --help */
	const char *help;
};

#define OFF(field) offsetof(struct vgpud_config, field)
#define STR(field) OFF(field), sizeof(((struct vgpud_config *)0)->field)

static const struct key keys[] = {
	{ "simgpu", "vram", T_SIZE, OFF(gpu.vram_bytes), 0, "SIZE",
	  "VRAM of the software GPU (multiple of 64K, >= 16M; default 1G); with gpu = cuda, "
	  "the VRAM budget taken from the GPU (multiple of 2M; default 90% of its free memory)" },
	{ "simgpu", "model", T_MODEL, OFF(gpu), 0, "NAME",
	  "timing model: " SIMGPU_MODELS " (h100: bandwidths measured on an H100 by "
	  "cudagpu's benchmark); sets the bandwidths and latencies, keys after it override" },
	{ "simgpu", "reserved_vram", T_SIZE, OFF(gpu.reserved_vram_bytes), 0, "SIZE",
	  "VRAM kept for page tables, not handed to VMs (0 = vram/64 in [4M, 256M])" },
	{ "simgpu", "vram_bandwidth", T_RATE, OFF(gpu.vram_bandwidth), 0, "BYTES/S",
	  "modeled VRAM bandwidth (default 900G)" },
	{ "simgpu", "vram_latency_ns", T_U32, OFF(gpu.vram_latency_ns), 0, "NS",
	  "modeled VRAM latency per transaction (default 1)" },
	{ "simgpu", "sysmem_coherent_bandwidth", T_RATE, OFF(gpu.sysmem_coherent_bandwidth), 0,
	  "BYTES/S", "modeled snooped system-RAM bandwidth over PCIe (default 24G)" },
	{ "simgpu", "sysmem_coherent_latency_ns", T_U32, OFF(gpu.sysmem_coherent_latency_ns), 0,
	  "NS", "its latency (default 22)" },
	{ "simgpu", "sysmem_noncoherent_bandwidth", T_RATE,
	  OFF(gpu.sysmem_noncoherent_bandwidth), 0, "BYTES/S",
	  "modeled system-RAM bandwidth for evicted chunks (default 25G)" },
	{ "simgpu", "sysmem_noncoherent_latency_ns", T_U32,
	  OFF(gpu.sysmem_noncoherent_latency_ns), 0, "NS", "its latency (default 20)" },
	{ "simgpu", "max_channels", T_U32, OFF(gpu.max_channels), 0, "N",
	  "command channels the GPU holds, all VMs together (default 64)" },
	{ "simgpu", "max_address_spaces", T_U32, OFF(gpu.max_address_spaces), 0, "N",
	  "GPU address spaces: one per VM plus one (default 64)" },
	{ "simgpu", "reference_bits", T_BOOL, OFF(gpu.reference_bits), 0, "BOOL",
	  "give PTEs referenced bits (needed by policy refbits; default no)" },
	{ "simgpu", "paced", T_BOOL, OFF(gpu.paced), 0, "BOOL",
	  "tie the modeled clock to wall time: each PFIFO turn lasts its modeled time, so the "
	  "GPU-time accounting sees context switches at their modeled rate (default no)" },
	{ "simgpu", "pfifo_idle_sleep_max_us", T_U32, OFF(gpu.pfifo_idle_sleep_max_us), 0, "US",
	  "longest PFIFO sleep while idle: bounds doorbell-less latency (default 1000)" },
	{ "simgpu", "timeslice_ns", T_U32, OFF(gpu.timeslice_ns), 0, "NS",
	  "modeled engine time one channel may run per PFIFO turn (default 100000)" },
	{ "simgpu", "timeslice_commands", T_U32, OFF(gpu.timeslice_commands), 0, "N",
	  "commands one channel may complete per PFIFO turn, also with gpu = cuda (default 256)" },
	{ "simgpu", "watchdog_ns", T_U64, OFF(gpu.watchdog_ns), 0, "NS",
	  "kill a channel whose one command runs longer, in modeled time (0 = never; "
	  "default 5000000000)" },
	{ "simgpu", "sharing", T_SHARING, OFF(gpu.sharing), 0, "MODE",
	  "how VMs share the GPU: time-sliced (default, one command at a time) or spatial "
	  "(each VM on its own SMs at the same time, kernels timed by the contention model)" },
	{ "simgpu", "walkers", T_WALKERS, OFF(gpu.spatial_walkers), 0, "POLICY",
	  "spatial sharing: page-table walker policy shared (default), static, dws or dws++" },
	{ "simgpu", "memsched", T_MEMSCHED, OFF(gpu.spatial_memsched), 0, "POLICY",
	  "spatial sharing: DRAM scheduler frfcfs (default), rr, prio, its or weis" },
	{ "simgpu", "function_launch_wall_ms", T_U32, OFF(gpu.function_launch_wall_ms), 0, "MS",
	  "kill a channel whose users' function (PTX) has run longer than this in host time, "
	  "all of its grid's pieces together (0 = the default, 120000)" },
	{ "simgpu", "acquire_timeout_ms", T_U32, OFF(gpu.acquire_timeout_ms), 0, "MS",
	  "kill a channel whose semaphore acquire waits longer, also with gpu = cuda (0 = never; "
	  "default 10000)" },

	{ "cuda", "isolation", T_STRING, STR(cuda_isolation), "MODE",
	  "with gpu = cuda: process (each VM's GPU work in a vgpu-gpu-worker process of its "
	  "own, with its own CUDA context: a VM's fault ends only its own work) or none (every "
	  "VM in vgpud's one context; the default: the process mode has not yet run on a GPU)" },

	{ "core", "chunk_size", T_SIZE, OFF(chunk_bytes), 0, "SIZE",
	  "accounting and eviction granularity, a multiple of the GPU's page (4K on simgpu, "
	  "2M on cuda; default 4M)" },
	{ "core", "policy", T_STRING, STR(policy), "NAME",
	  "eviction policy: random, priority or refbits (default random)" },
	{ "core", "seed", T_U64, OFF(seed), 0, "N", "seed of the policy's random choices" },
	{ "core", "whole_buffer_eviction", T_BOOL, OFF(whole_buffer_eviction), 0, "BOOL",
	  "evict every resident chunk of the buffer whose chunk the policy picks, at once: "
	  "the whole-buffer-swap baseline of the thesis, for comparison (default no: chunks)" },
	{ "core", "host_budget", T_BUDGET, OFF(host_budget_bytes), 0, "SIZE",
	  "host memory for evicted chunks, all VMs together (auto = half of the RAM at "
	  "start, 0 = no limit; default auto)" },
	{ "core", "host_cache", T_SIZE, OFF(host_cache_bytes), 0, "SIZE",
	  "freed host buffers kept for reuse by evictions, within the budget (default 256M)" },
	{ "core", "return_interval_ms", T_U32, OFF(return_interval_ms), 0, "MS",
	  "period of the background return pass (default 50)" },
	{ "core", "drain_timeout_ms", T_U32, OFF(drain_timeout_ms), 0, "MS",
	  "how long a victim's channels may take to drain (default 10000)" },

	{ "core", "gpu_accounting", T_BOOL, OFF(gpu_accounting), 0, "BOOL",
	  "run the GPU-time accounting thread (LoGA): per-VM GPU time, shares and the "
	  "schedulers of the profiles (default yes)" },
	{ "core", "accounting_mode", T_ACCOUNTING, OFF(accounting_mode), 0, "MODE",
	  "how the accounting thread measures GPU time: loga (default: polling context "
	  "switches while every VM runs) or neon (NEON's sampling, each VM alone in turn: "
	  "the baseline of LoGA §5.3, with its overhead)" },
	{ "core", "accounting_poll_us", T_U32, OFF(accounting_poll_us), 0, "US",
	  "polling phase per channel (default 1000)" },
	{ "core", "accounting_nonpoll_us", T_U32, OFF(accounting_nonpoll_us), 0, "US",
	  "non-polling phase per channel (default 5000)" },
	{ "core", "accounting_always_poll", T_BOOL, OFF(accounting_always_poll), 0, "BOOL",
	  "poll even while at most one VM has work, as LoGA itself does (default no: the "
	  "thread then reads the GPU's status about once a millisecond instead of "
	  "busy-polling, and polls again as soon as a second VM has work)" },
	{ "core", "accounting_cpu", T_CPU, OFF(accounting_cpu), 0, "CPU",
	  "run the accounting thread on this CPU only, as LoGA polls on a core of its own "
	  "(a CPU number, or any: wherever the scheduler puts it; default any)" },

	{ "daemon", "gpu", T_STRING, STR(gpu_name), "NAME",
	  "the GPU to share: simgpu (the built-in software GPU, default), cuda or cuda:N "
	  "(an NVIDIA GPU through the CUDA driver; N = CUDA device ordinal)" },
	{ "daemon", "socket", T_STRING, STR(socket_path), "PATH",
	  "tenant (local transport) socket (default " VGPUD_DEFAULT_SOCKET ")" },
	{ "daemon", "control_socket", T_STRING, STR(control_path), "PATH",
	  "control socket for vgpuctl (default " VGPUD_DEFAULT_CONTROL_SOCKET ")" },
	{ "daemon", "socket_group", T_STRING, STR(socket_group), "GROUP",
	  "group owning both sockets (mode 0660; default: vgpud's group)" },
	{ "daemon", "operator_group", T_STRING, STR(operator_group), "GROUP",
	  "members of this group (besides root and vgpud's own user) are operators: they may "
	  "use the control socket's mutating commands (default: none)" },
	{ "daemon", "log_level", T_LOG_LEVEL, OFF(log_level), 0, "LEVEL",
	  "error, warn, info or debug (default info)" },
	{ "daemon", "default_profile", T_STRING, STR(default_profile), "NAME",
	  "profile of a VM that asks for none (default vgpu-1G)" },
	{ "daemon", "attach_timeout_ms", T_U32, OFF(attach_timeout_ms), 0, "MS",
	  "a new connection must attach within this (default 5000)" },
	{ "daemon", "swap_timeout_ms", T_U32, OFF(swap_timeout_ms), 0, "MS",
	  "a tenant must confirm a window swap within this or is detached (default 2000)" },
	{ "daemon", "max_buffers_per_vm", T_U32, OFF(max_buffers_per_vm), 0, "N",
	  "buffers one VM may hold at once (default 65536)" },
	{ "daemon", "max_modules_per_vm", T_U32, OFF(max_modules_per_vm), 0, "N",
	  "GPU programs (MODULE_LOAD) one VM may hold at once (default 64)" },
	{ "daemon", "mailbox_budget", T_U32, OFF(mailbox_budget), 0, "N",
	  "mailbox requests served per doorbell before yielding (default 32)" },
	{ "daemon", "mdev", T_MDEV_MODE, OFF(mdev_mode), 0, "MODE",
	  "VFIO mdev VMs via vgpu_mdev.ko: auto (if mdev_device exists), on (required) "
	  "or off (default auto)" },
	{ "daemon", "mdev_device", T_STRING, STR(mdev_device), "PATH",
	  "vgpu_mdev.ko's control device (default " VGPU_MDEV_CONTROL_PATH ")" },
	{ "daemon", "libvirt_uri", T_STRING, STR(libvirt_uri), "URI",
	  "libvirt that names mdev VMs by domain (default $LIBVIRT_DEFAULT_URI or "
	  "qemu:///system; none = never ask libvirt)" },
	{ "daemon", "metrics", T_LISTEN, STR(metrics), "ADDRESS:PORT",
	  "Prometheus metrics over HTTP (GET /metrics) on this address, e.g. "
	  "127.0.0.1:9464 or [::1]:9464, or off (default off)" },

	{ "socket", "allowed_profiles", T_STRING, STR(allowed_profiles), "LIST",
	  "profiles a tenant of the socket may ATTACH with, comma-separated, or * for any "
	  "(default: the default profile only)" },
	{ "socket", "idle_timeout_ms", T_U32, OFF(idle_timeout_ms), 0, "MS",
	  "a tenant that holds no GPU memory or channel and sends nothing for this long is "
	  "detached (0 = never; default 60000)" },
	{ "socket", "max_connections_per_uid", T_U32, OFF(max_connections_per_uid), 0, "N",
	  "tenant connections one user may have open at once (default 128)" },
	{ "socket", "control_idle_timeout_ms", T_U32, OFF(control_idle_timeout_ms), 0, "MS",
	  "a control connection that sends nothing for this long is closed (default 30000)" },
	{ "socket", "control_max_connections_per_uid", T_U32,
	  OFF(control_max_connections_per_uid), 0, "N",
	  "control connections one user may have open at once (default 16)" },
	{ "socket", "max_channels_per_uid", T_U32, OFF(max_channels_per_uid), 0, "N",
	  "GPU channels the VMs of one user (not root) may hold together (0 = no limit; "
	  "default 16)" },
	{ "socket", "channels_reserved", T_U32, OFF(channels_reserved), 0, "N",
	  "the last N free GPU channels go only to a user (not root) holding none "
	  "(default 8)" },
	{ "socket", "max_instances_per_uid", T_U32, OFF(max_instances_per_uid), 0, "N",
	  "instances of one profile the VMs of one user (not root) may hold (0 = no limit; "
	  "default 0); the last free instance of a profile goes to a user holding none of it "
	  "anyway" },
};

#define KEY_COUNT (sizeof(keys) / sizeof(keys[0]))

static const struct vgpud_profile_spec builtin_profiles[] = {
	{ "vgpu-1G", 1, 1ull << 30, 16, "" },
	{ "vgpu-2G", 2, 2ull << 30, 8, "" },
	{ "vgpu-4G", 4, 4ull << 30, 4, "" },
};

void vgpud_config_defaults(struct vgpud_config *config)
{
	memset(config, 0, sizeof(*config));
	simgpu_config_defaults(&config->gpu);
	config->gpu.vram_bytes = 0; /* the backend's default, see create_gpu */
	strcpy(config->gpu_name, "simgpu");
	config->chunk_bytes = VGPU_CORE_DEFAULT_CHUNK_BYTES;
	strcpy(config->policy, "random");
	config->seed = 1;
	config->host_budget_bytes = VGPUD_HOST_BUDGET_AUTO;
	{
		struct vgpu_core_config core;

		vgpu_core_config_defaults(&core);
		config->host_cache_bytes = core.host_cache_bytes;
	}
	config->return_interval_ms = VGPU_CORE_DEFAULT_RETURN_INTERVAL_MS;
	config->drain_timeout_ms = VGPU_CORE_DEFAULT_DRAIN_TIMEOUT_MS;
	config->gpu_accounting = true;
	config->accounting_cpu = -1;
	strcpy(config->socket_path, VGPUD_DEFAULT_SOCKET);
	strcpy(config->control_path, VGPUD_DEFAULT_CONTROL_SOCKET);
	config->log_level = VGPUD_LOG_INFO;
	strcpy(config->default_profile, "vgpu-1G");
	config->attach_timeout_ms = 5000;
	config->swap_timeout_ms = 2000;
	config->max_buffers_per_vm = 65536;
	config->max_modules_per_vm = 64;
	config->mailbox_budget = 32;
	config->mdev_mode = VGPUD_MDEV_AUTO;
	strcpy(config->mdev_device, VGPU_MDEV_CONTROL_PATH);
	strcpy(config->metrics, VGPUD_DEFAULT_METRICS);
	config->idle_timeout_ms = 60000;
	config->max_connections_per_uid = 128;
	config->control_idle_timeout_ms = 30000;
	config->control_max_connections_per_uid = 16;
	config->max_channels_per_uid = 16;
	config->channels_reserved = 8;
	memcpy(config->profiles, builtin_profiles, sizeof(builtin_profiles));
	config->profile_count = sizeof(builtin_profiles) / sizeof(builtin_profiles[0]);
}

/* ---------------------------------------------------------------- values */

int vgpud_parse_u64(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!text || !isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int vgpud_parse_u32(const char *text, uint32_t *out)
{
	uint64_t v;

	if (vgpud_parse_u64(text, &v) || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

const char *vgpud_mdev_mode_name(int mode)
{
	switch (mode) {
	case VGPUD_MDEV_ON: return "on";
	case VGPUD_MDEV_OFF: return "off";
	default: return "auto";
	}
}

static int parse_mdev_mode(const char *text, int *out)
{
	if (!strcmp(text, "auto"))
		*out = VGPUD_MDEV_AUTO;
	else if (!strcmp(text, "on") || !strcmp(text, "yes") || !strcmp(text, "true"))
		*out = VGPUD_MDEV_ON;
	else if (!strcmp(text, "off") || !strcmp(text, "no") || !strcmp(text, "false"))
		*out = VGPUD_MDEV_OFF;
	else
		return -EINVAL;
	return 0;
}

static int parse_bool(const char *text, bool *out)
{
	if (!strcmp(text, "yes") || !strcmp(text, "true") || !strcmp(text, "1") ||
	    !strcmp(text, "on")) {
		*out = true;
		return 0;
	}
	if (!strcmp(text, "no") || !strcmp(text, "false") || !strcmp(text, "0") ||
	    !strcmp(text, "off")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

bool vgpud_profile_name_ok(const char *name)
{
	size_t len = strlen(name), i;

	if (!len || len >= VGPUD_PROFILE_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
			return false;
	return true;
}

static const char *type_expectation(enum key_type type)
{
	switch (type) {
	case T_SIZE: return "a size such as 4096, 64K, 512M or 2G";
	case T_RATE: return "bytes per second such as 900G or 24000000000";
	case T_U32: return "a whole number below 2^32";
	case T_U64: return "a whole number";
	case T_BOOL: return "yes or no";
	case T_STRING: return "a string";
	case T_LOG_LEVEL: return "error, warn, info or debug";
	case T_MDEV_MODE: return "auto, on or off";
	case T_MODEL: return SIMGPU_MODELS;
	case T_LISTEN: return VGPUD_LISTEN_ADDRESS_FORMS;
	case T_BUDGET: return "auto, 0 (no limit) or a size such as 8G";
	case T_SHARING: return "time-sliced or spatial";
	case T_WALKERS: return "shared, static, dws or dws++";
	case T_MEMSCHED: return "frfcfs, rr, prio, its or weis";
	case T_ACCOUNTING: return "loga or neon";
	case T_CPU: return "any or a CPU number below 1024";
	}
	return "a value";
}

/* Why value is not good for k (code err): "expected ..." or the parser's
 * sentence, into error. Returns err. */
static int describe_error(const struct key *k, const char *value, int err,
                          struct vgpu_error *error)
{
	struct vgpud_listen_address address;

	if (k->type == T_LISTEN && strlen(value) < k->size &&
	    vgpud_listen_address_parse(value, &address, error))
		return err; /* the parser's sentence (-EINVAL, as set_key's) */
	return vgpu_error_set(error, err, "expected %s", type_expectation(k->type));
}

static int set_key(struct vgpud_config *config, const struct key *key, const char *value)
{
	void *field = (char *)config + key->offset;
	int level;

	switch (key->type) {
	case T_SIZE:
		return vgpu_parse_bytes(value, field);
	case T_BUDGET:
		if (!strcmp(value, "auto")) {
			*(uint64_t *)field = VGPUD_HOST_BUDGET_AUTO;
			return 0;
		}
		return vgpu_parse_bytes(value, field);
	case T_RATE:
		return vgpu_parse_scaled(value, 1000, field);
	case T_U32:
		return vgpud_parse_u32(value, field);
	case T_U64:
		return vgpud_parse_u64(value, field);
	case T_BOOL:
		return parse_bool(value, field);
	case T_STRING:
		if (strlen(value) >= key->size)
			return -ENAMETOOLONG;
		strcpy(field, value);
		return 0;
	case T_LOG_LEVEL:
		level = vgpud_log_parse_level(value);
		if (level < 0)
			return -EINVAL;
		*(int *)field = level;
		return 0;
	case T_MDEV_MODE:
		return parse_mdev_mode(value, field);
	case T_MODEL:
		return simgpu_config_model(field, value);
	case T_SHARING:
		return simgpu_sharing_parse(value, field);
	case T_WALKERS:
		return simgpu_walkers_parse(value, field);
	case T_MEMSCHED:
		return simgpu_memsched_parse(value, field);
	case T_ACCOUNTING:
		return vgpu_accounting_mode_parse(value, field);
	case T_CPU: {
		uint64_t cpu;

		if (!strcmp(value, "any")) {
			*(int32_t *)field = -1;
			return 0;
		}
		if (vgpud_parse_u64(value, &cpu) || cpu >= 1024)
			return -EINVAL;
		*(int32_t *)field = (int32_t)cpu;
		return 0;
	}
	case T_LISTEN: {
		struct vgpud_listen_address address;

		if (strlen(value) >= key->size ||
		    vgpud_listen_address_parse(value, &address, NULL))
			return -EINVAL;
		strcpy(field, value);
		return 0;
	}
	}
	return -EINVAL;
}

static const struct key *find_key(const char *section, const char *name)
{
	size_t i;

	for (i = 0; i < KEY_COUNT; i++)
		if ((!section || !strcmp(keys[i].section, section)) && !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* -------------------------------------------------------------- profiles */

static struct vgpud_profile_spec *profile_find(struct vgpud_profile_spec *specs, size_t count,
                                               const char *name)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (!strcmp(specs[i].name, name))
			return &specs[i];
	return NULL;
}

static int profile_set(struct vgpud_profile_spec *spec, const char *key, const char *value,
                       struct vgpu_error *error)
{
	if (!strcmp(key, "weight")) {
		if (vgpud_parse_u32(value, &spec->weight) || !spec->weight ||
		    spec->weight > VGPU_CORE_WEIGHT_MAX) {
			return vgpu_error_set(error, -EINVAL, "weight must be 1..%u, not '%s'",
			                      VGPU_CORE_WEIGHT_MAX, value);
		}
		return 0;
	}
	if (!strcmp(key, "cap")) {
		if (vgpu_parse_bytes(value, &spec->cap_bytes) || spec->cap_bytes % 4096)
			return vgpu_error_set(error, -EINVAL,
			                      "cap must be a size in whole 4K pages such as 2G (0 "
			                      "= no cap), not '%s'", value);
		return 0;
	}
	if (!strcmp(key, "max_instances") || !strcmp(key, "max")) {
		if (vgpud_parse_u32(value, &spec->max_instances))
			return vgpu_error_set(error, -EINVAL,
			                      "max_instances must be a whole number (0 = no "
			                      "limit), not '%s'", value);
		return 0;
	}
	if (!strcmp(key, "scheduler")) {
		if (!vgpu_core_scheduler_known(value))
			return vgpu_error_set(error, -EINVAL,
			                      "scheduler must be best-effort, equal-share, "
			                      "weighted or fixed-share, not '%s'", value);
		snprintf(spec->scheduler, sizeof(spec->scheduler), "%s", value);
		return 0;
	}
	return vgpu_error_set(error, -EINVAL,
	                      "unknown profile key '%s': use weight, cap, max_instances or "
	                      "scheduler", key);
}

static struct vgpud_profile_spec *profile_add(struct vgpud_profile_spec *specs, size_t *count,
                                              const char *name, struct vgpu_error *error)
{
	struct vgpud_profile_spec *spec = profile_find(specs, *count, name);

	if (spec)
		return spec;
	if (!vgpud_profile_name_ok(name)) {
		vgpu_error_set(error, -EINVAL, "profile name '%s' is invalid: use 1..%d letters, "
		               "digits, '-', '_' or '.'", name, VGPUD_PROFILE_NAME_MAX - 1);
		return NULL;
	}
	if (*count >= VGPUD_MAX_PROFILES) {
		vgpu_error_set(error, -EINVAL, "more than %d profiles; merge some",
		               VGPUD_MAX_PROFILES);
		return NULL;
	}
	spec = &specs[(*count)++];
	memset(spec, 0, sizeof(*spec));
	strcpy(spec->name, name);
	spec->weight = 1;
	return spec;
}

/* ------------------------------------------------------------------ file */

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Where parse_file is: the file, the line, the section it is in. */
struct parse_state {
	const char *path;
	unsigned lineno;
	char section[128];                        /* "" before the first header */
	char profile[VGPUD_PROFILE_NAME_MAX];     /* [profile NAME]: NAME */
	struct vgpud_config *config;              /* NULL: profiles only */
	struct vgpud_profile_spec *specs;
	size_t *count;
};

/* "[core]" or "[profile NAME]" (s without the trailing ']'). */
static int parse_section(struct parse_state *ps, char *s, struct vgpu_error *error)
{
	s = trim(s);
	ps->profile[0] = '\0';
	if (!strncmp(s, "profile", 7) && isspace((unsigned char)s[7])) {
		char *name = trim(s + 8);

		if (!profile_add(ps->specs, ps->count, name, error))
			return vgpu_error_prefix(error, "%s:%u: ", ps->path, ps->lineno) ?: -EINVAL;
		snprintf(ps->profile, sizeof(ps->profile), "%s", name);
		strcpy(ps->section, "profile");
		return 0;
	}
	if (!strcmp(s, "simgpu") || !strcmp(s, "cuda") || !strcmp(s, "core") ||
	    !strcmp(s, "daemon") || !strcmp(s, "socket")) {
		snprintf(ps->section, sizeof(ps->section), "%s", s);
		return 0;
	}
	return vgpu_error_set(error, -EINVAL,
	                      "%s:%u: unknown section [%s]: use [simgpu], [cuda], [core], "
	                      "[daemon], [socket] or [profile NAME]", ps->path, ps->lineno, s);
}

/* "key = value" in the current section. */
static int parse_assignment(struct parse_state *ps, char *key, char *value,
                            struct vgpu_error *error)
{
	const struct key *k;
	int err;

	if (!ps->section[0])
		return vgpu_error_set(error, -EINVAL,
		                      "%s:%u: '%s' outside a section: put it under [simgpu], "
		                      "[core], [daemon], [socket] or [profile NAME]", ps->path,
		                      ps->lineno, key);
	if (!strcmp(ps->section, "profile")) {
		struct vgpud_profile_spec *spec = profile_find(ps->specs, *ps->count, ps->profile);

		err = profile_set(spec, key, value, error);
		if (err)
			vgpu_error_prefix(error, "%s:%u: [profile %s]: ", ps->path, ps->lineno,
			                  ps->profile);
		return err;
	}
	if (!ps->config)
		return 0; /* profiles only */
	k = find_key(ps->section, key);
	if (!k)
		return vgpu_error_set(error, -EINVAL,
		                      "%s:%u: unknown key '%s' in [%s]; see vgpud --help for the "
		                      "keys", ps->path, ps->lineno, key, ps->section);
	err = set_key(ps->config, k, value);
	if (err) {
		describe_error(k, value, err, error);
		vgpu_error_prefix(error, "%s:%u: %s = '%s': ", ps->path, ps->lineno, key, value);
	}
	return err;
}

/* One line (without its newline): blank, comment, header or assignment. */
static int parse_line(struct parse_state *ps, char *line, struct vgpu_error *error)
{
	char *s = trim(line), *eq;

	if (!*s || *s == '#' || *s == ';')
		return 0;
	if (*s == '[') {
		char *close = strchr(s, ']');

		if (!close || close[1])
			return vgpu_error_set(error, -EINVAL,
			                      "%s:%u: a section header looks like [core] or "
			                      "[profile NAME]", ps->path, ps->lineno);
		*close = '\0';
		return parse_section(ps, s + 1, error);
	}
	eq = strchr(s, '=');
	if (!eq)
		return vgpu_error_set(error, -EINVAL, "%s:%u: expected 'key = value'", ps->path,
		                      ps->lineno);
	*eq = '\0';
	return parse_assignment(ps, trim(s), trim(eq + 1), error);
}

/* Parse path; keys go to config (unless NULL), profiles to specs/count. */
static int parse_file(const char *path, struct vgpud_config *config,
                      struct vgpud_profile_spec *specs, size_t *count, struct vgpu_error *error)
{
	struct parse_state ps = {
		.path = path, .config = config, .specs = specs, .count = count,
	};
	char line[1024];
	FILE *f = fopen(path, "re");
	int err = 0;

	if (!f) {
		err = -errno;
		return vgpu_error_set(error, err, "cannot open configuration file %s: %s", path,
		                      strerror(-err));
	}
	*count = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		ps.lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			err = vgpu_error_set(error, -EINVAL,
			                     "%s:%u: line longer than %zu characters", path,
			                     ps.lineno, sizeof(line) - 2);
			break;
		}
		err = parse_line(&ps, line, error);
	}
	fclose(f);
	return err;
}

int vgpud_config_load_file(struct vgpud_config *config, const char *path, struct vgpu_error *error)
{
	struct vgpud_profile_spec specs[VGPUD_MAX_PROFILES];
	size_t count = 0;
	int err = parse_file(path, config, specs, &count, error);

	if (err)
		return err;
	if (count) {
		memcpy(config->profiles, specs, count * sizeof(specs[0]));
		config->profile_count = count;
		config->profiles_from_file = true;
	}
	snprintf(config->config_file, sizeof(config->config_file), "%s", path);
	return 0;
}

int vgpud_config_load_profiles(const char *path, struct vgpud_profile_spec *specs,
                               size_t *count, struct vgpu_error *error)
{
	return parse_file(path, NULL, specs, count, error);
}

int vgpud_config_cuda_isolation(const struct vgpud_config *config, struct vgpu_hal_spec *spec)
{
	if (!config->cuda_isolation[0])
		spec->cuda_isolation = VGPU_HAL_CUDA_ISOLATION_DEFAULT;
	else if (!strcmp(config->cuda_isolation, "none"))
		spec->cuda_isolation = VGPU_HAL_CUDA_ISOLATION_NONE;
	else if (!strcmp(config->cuda_isolation, "process"))
		spec->cuda_isolation = VGPU_HAL_CUDA_ISOLATION_PROCESS;
	else
		return -EINVAL;
	return 0;
}

int vgpud_config_validate(const struct vgpud_config *config, struct vgpu_error *error)
{
	size_t i;

	{
		struct vgpu_hal_spec spec;
		int err = vgpu_hal_spec_parse(config->gpu_name, &spec, error);

		if (err) {
			vgpu_error_prefix(error, "gpu = '%s': ", config->gpu_name);
			return err;
		}
		if (vgpud_config_cuda_isolation(config, &spec))
			return vgpu_error_set(error, -EINVAL,
			                      "[cuda] isolation = '%s': expected none or process",
			                      config->cuda_isolation);
	}
	if (!config->profile_count)
		return vgpu_error_set(error, -EINVAL, "no vGPU profile is configured; add a "
		                      "[profile NAME] section");
	for (i = 0; i < config->profile_count; i++)
		if (!strcmp(config->profiles[i].name, config->default_profile))
			break;
	if (i == config->profile_count)
		return vgpu_error_set(error, -EINVAL,
		                      "default_profile '%s' is not a configured profile; set "
		                      "default_profile to one of the [profile NAME] sections",
		                      config->default_profile);
	if (config->mdev_mode != VGPUD_MDEV_OFF && !config->mdev_device[0])
		return vgpu_error_set(error, -EINVAL,
		                      "mdev_device must not be empty (or set mdev = off)");
	if (!config->socket_path[0] || !config->control_path[0])
		return vgpu_error_set(error, -EINVAL,
		                      "socket and control_socket must not be empty");
	if (!strcmp(config->socket_path, config->control_path))
		return vgpu_error_set(error, -EINVAL,
		                      "socket and control_socket are both %s; give them different "
		                      "paths", config->socket_path);
	{
		struct vgpud_listen_address address;

		if (vgpud_listen_address_parse(config->metrics, &address, error))
			return vgpu_error_prefix(error, "metrics = '%s': ",
			                         config->metrics) ?: -EINVAL;
	}
	if (!config->swap_timeout_ms || !config->attach_timeout_ms || !config->mailbox_budget ||
	    !config->max_buffers_per_vm || !config->max_modules_per_vm ||
	    !config->max_connections_per_uid ||
	    !config->control_max_connections_per_uid) {
		return vgpu_error_set(error, -EINVAL,
		                      "swap_timeout_ms, attach_timeout_ms, mailbox_budget, "
		                      "max_buffers_per_vm, max_connections_per_uid and "
		                      "control_max_connections_per_uid must be at least 1");
	}
	return 0;
}

/* ----------------------------------------------------------------- flags */

/* --profile NAME:weight=W,cap=SIZE,max_instances=N */
static int parse_profile_flag(struct vgpud_profile_spec *specs, size_t *count, const char *text,
                              struct vgpu_error *error)
{
	char buf[512], *name, *rest, *item, *save = NULL;
	struct vgpud_profile_spec *spec;

	if (strlen(text) >= sizeof(buf))
		return vgpu_error_set(error, -EINVAL, "--profile '%s' is too long", text);
	strcpy(buf, text);
	name = buf;
	rest = strchr(buf, ':');
	if (rest)
		*rest++ = '\0';
	spec = profile_add(specs, count, name, error);
	if (!spec)
		return vgpu_error_prefix(error, "--profile: ") ?: -EINVAL;
	for (item = rest ? strtok_r(rest, ",", &save) : NULL; item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq)
			return vgpu_error_set(error, -EINVAL,
			                      "--profile %s: expected key=value, not '%s' (e.g. "
			                      "--profile vgpu-2G:weight=2,cap=2G,max_instances=4)",
			                      name,
			                      item);
		*eq = '\0';
		if (profile_set(spec, item, eq + 1, error)) {
			vgpu_error_prefix(error, "--profile %s: ", name);
			return -EINVAL;
		}
	}
	return 0;
}

int vgpud_config_apply_profile_flags(const struct vgpud_config *config,
                                     struct vgpud_profile_spec *specs, size_t *count,
                                     struct vgpu_error *error)
{
	size_t i;

	for (i = 0; i < config->profile_flag_count; i++)
		if (parse_profile_flag(specs, count, config->profile_flags[i], error))
			return -EINVAL;
	return 0;
}

void vgpud_config_usage(FILE *out)
{
	size_t i;
	const char *section = "";

	fprintf(out,
	        "Usage: vgpud [OPTION]...\n"
	        "The vGPU backend daemon: shares one GPU (the built-in software GPU, simgpu)\n"
	        "among VMs with more GPU memory promised than exists (GPUswap). Runs in the\n"
	        "foreground and logs to stderr. SIGTERM/SIGINT stop it cleanly (every VM is\n"
	        "detached and its memory released); SIGHUP reloads the [profile] sections of\n"
	        "the configuration file (and applies the --profile flags over them again).\n"
	        "\n"
	        "  -c, --config FILE       configuration file (default %s\n"
	        "                          if it exists); the flags below override it.\n"
	        "                          Format: see vgpud.conf.example\n"
	        "      --profile NAME:weight=W,cap=SIZE,max_instances=N\n"
	        "                          add or change a vGPU profile (repeatable): VMs of\n"
	        "                          it get VRAM in proportion to W, may hold at most\n"
	        "                          SIZE (0 = no cap), at most N at once (0 = any)\n"
	        "  -v, --verbose           log_level debug\n"
	        "      --check-config      print the effective configuration and exit\n"
	        "  -h, --help              this text\n"
	        "      --version           print the version\n",
	        VGPUD_DEFAULT_CONFIG_FILE);
	for (i = 0; i < KEY_COUNT; i++) {
		char flag[64];
		size_t j;

		if (strcmp(section, keys[i].section)) {
			section = keys[i].section;
			fprintf(out, "\n[%s] keys, also flags:\n", section);
		}
		snprintf(flag, sizeof(flag), "--%s %s", keys[i].name, keys[i].arg);
		for (j = 2; flag[j] && flag[j] != ' '; j++)
			if (flag[j] == '_')
				flag[j] = '-';
		if (strlen(flag) > 32)
			fprintf(out, "      %s\n      %-32s %s\n", flag, "", keys[i].help);
		else
			fprintf(out, "      %-32s %s\n", flag, keys[i].help);
	}
	fprintf(out,
	        "\nSizes take binary suffixes K, M, G, T; bandwidths decimal ones (900G).\n"
	        "Without [profile] sections the built-in profiles are vgpu-1G (weight 1,\n"
	        "cap 1G, 16 instances), vgpu-2G (2, 2G, 8) and vgpu-4G (4, 4G, 4).\n");
}

enum { OPT_PROFILE = 1000, OPT_CHECK, OPT_VERSION, OPT_KEY_BASE = 2000 };

/* The long options: every key as --key-name, then the others. */
struct flag_table {
	struct option options[KEY_COUNT + 8];
	char names[KEY_COUNT][48];
};

static void flag_table_init(struct flag_table *t)
{
	size_t i, n = 0;

	for (i = 0; i < KEY_COUNT; i++) {
		size_t j;

		snprintf(t->names[i], sizeof(t->names[i]), "%s", keys[i].name);
		for (j = 0; t->names[i][j]; j++)
			if (t->names[i][j] == '_')
				t->names[i][j] = '-';
		t->options[n++] = (struct option){ t->names[i], required_argument, NULL,
			                           OPT_KEY_BASE + (int)i };
	}
	t->options[n++] = (struct option){ "config", required_argument, NULL, 'c' };
	t->options[n++] = (struct option){ "profile", required_argument, NULL, OPT_PROFILE };
	t->options[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	t->options[n++] = (struct option){ "check-config", no_argument, NULL, OPT_CHECK };
	t->options[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	t->options[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	t->options[n] = (struct option){ 0 };
}

/* Pass 1: --help, --version (printed: *printed), and the configuration file. */
static int load_config_file(struct vgpud_config *config, const struct flag_table *t, int argc,
                            char **argv, bool *printed)
{
	const char *config_path = NULL;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int opt, err;

	*printed = false;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "c:vh", t->options, NULL)) != -1) {
		if (opt == 'c') {
			config_path = optarg;
		} else if (opt == 'h') {
			vgpud_config_usage(stdout);
			*printed = true;
			return 0;
		} else if (opt == OPT_VERSION) {
			printf("vgpud %s (device ABI %u.%u)\n", VGPUD_VERSION, 1u, 0u);
			*printed = true;
			return 0;
		}
	}
	if (!config_path && access(VGPUD_DEFAULT_CONFIG_FILE, F_OK) == 0)
		config_path = VGPUD_DEFAULT_CONFIG_FILE;
	if (!config_path)
		return 0;
	err = vgpud_config_load_file(config, config_path, &why);
	if (err)
		fprintf(stderr, "vgpud: %s\n", vgpu_error_msg(&why));
	return err;
}

/* One flag of pass 2 (opt as getopt_long returned it). */
static int apply_flag(struct vgpud_config *config, const struct flag_table *t, int opt,
                      const char *arg, bool *check)
{
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (opt == 'c' || opt == 'h')
		return 0; /* pass 1's */
	if (opt == 'v') {
		config->log_level = VGPUD_LOG_DEBUG;
		return 0;
	}
	if (opt == OPT_CHECK) {
		*check = true;
		return 0;
	}
	if (opt == OPT_PROFILE) {
		if (parse_profile_flag(config->profiles, &config->profile_count, arg, &why)) {
			fprintf(stderr, "vgpud: %s\n", vgpu_error_msg(&why));
			return -EINVAL;
		}
		if (config->profile_flag_count < VGPUD_MAX_PROFILES &&
		    strlen(arg) < sizeof(config->profile_flags[0]))
			strcpy(config->profile_flags[config->profile_flag_count++], arg);
		return 0;
	}
	if (opt >= OPT_KEY_BASE && opt < OPT_KEY_BASE + (int)KEY_COUNT) {
		const struct key *k = &keys[opt - OPT_KEY_BASE];

		if (!set_key(config, k, arg))
			return 0;
		describe_error(k, arg, -EINVAL, &why);
		fprintf(stderr, "vgpud: --%s '%s': %s\n", t->names[opt - OPT_KEY_BASE], arg,
		        vgpu_error_msg(&why));
		return -EINVAL;
	}
	fprintf(stderr, "vgpud: see 'vgpud --help' for the options\n");
	return -EINVAL;
}

int vgpud_config_from_args(struct vgpud_config *config, int argc, char **argv,
                           enum vgpud_config_action *action)
{
	struct flag_table t;
	struct vgpu_error why = VGPU_ERROR_INIT;
	bool check = false, printed;
	int opt, err;

	flag_table_init(&t);
	err = load_config_file(config, &t, argc, argv, &printed);
	if (err)
		return err;
	if (printed) {
		*action = VGPUD_CONFIG_PRINTED;
		return 0;
	}
	/* Pass 2: every other flag, over the file. */
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "c:vh", t.options, NULL)) != -1) {
		err = apply_flag(config, &t, opt, optarg, &check);
		if (err)
			return err;
	}
	if (optind < argc) {
		fprintf(stderr, "vgpud: unexpected argument '%s'; see 'vgpud --help'\n",
		        argv[optind]);
		return -EINVAL;
	}
	if (vgpud_config_validate(config, &why)) {
		fprintf(stderr, "vgpud: %s\n", vgpu_error_msg(&why));
		return -EINVAL;
	}
	*action = check ? VGPUD_CONFIG_CHECK : VGPUD_CONFIG_RUN;
	return 0;
}

uint64_t vgpud_config_host_budget(const struct vgpud_config *config)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	if (config->host_budget_bytes != VGPUD_HOST_BUDGET_AUTO)
		return config->host_budget_bytes;
	if (pages <= 0 || page <= 0)
		return 0; /* unknown: no limit, as before there was a default */
	return (uint64_t)pages * (uint64_t)page / 2;
}

bool vgpud_config_profile_allowed(const struct vgpud_config *config, const char *profile)
{
	const char *list = config->allowed_profiles;
	size_t len;

	if (!profile || !profile[0])
		profile = config->default_profile;
	if (!list[0])
		return !strcmp(profile, config->default_profile);
	len = strlen(profile);
	while (*list) {
		size_t item;

		while (*list == ',' || isspace((unsigned char)*list))
			list++;
		item = strcspn(list, ", \t");
		if ((item == 1 && list[0] == '*') || (item == len && !strncmp(list, profile, len)))
			return true;
		list += item;
	}
	return false;
}
