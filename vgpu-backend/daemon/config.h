/* SPDX-License-Identifier: MIT */
/*
 * config.h - vgpud's configuration: defaults, the configuration file and
 * command-line flags (flags win over the file, the file over defaults).
 *
 * The file format (documented with every key in vgpud.conf.example):
 *
 *   # comment                      ; comment
 *   [simgpu]                       the software GPU
 *   vram = 512M
 *   [core]                         GPUswap: chunks, policy, return pass
 *   chunk_size = 4M
 *   [daemon]                       sockets, timeouts, logging
 *   socket = /run/vgpud/vgpud.sock
 *   metrics = 127.0.0.1:9464       Prometheus endpoint (default off)
 *   [socket]                       what one user of the sockets may hold
 *   allowed_profiles = vgpu-1G     profiles a local tenant may ATTACH with
 *   [profile vgpu-2G]              one vGPU type
 *   weight = 2
 *   cap = 2G
 *   max_instances = 4
 *
 * Sizes take an optional binary suffix K, M, G, T (also KiB, MiB, ...);
 * bandwidths are bytes per second with decimal suffixes (900G = 900e9).
 * Every error names the file, the line and what is expected there.
 */
#ifndef VGPUD_CONFIG_H
#define VGPUD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "vgpu/error.h"
#include "vgpu/simgpu.h"

#define VGPUD_DEFAULT_SOCKET "/run/vgpud/vgpud.sock"
#define VGPUD_DEFAULT_CONTROL_SOCKET "/run/vgpud/control.sock"
#define VGPUD_DEFAULT_CONFIG_FILE "/etc/vgpud/vgpud.conf"
#define VGPUD_PROFILE_NAME_MAX 64
#define VGPUD_MAX_PROFILES 64
#define VGPUD_PATH_MAX 108 /* sun_path */
#define VGPUD_DEFAULT_METRICS "off"
/* host_budget = auto: half of the machine's RAM when vgpud starts */
#define VGPUD_HOST_BUDGET_AUTO UINT64_MAX

/* [daemon] mdev: serve VFIO mdev VMs through vgpu_mdev.ko's control device. */
enum vgpud_mdev_mode {
	VGPUD_MDEV_AUTO, /* when the control device exists (default) */
	VGPUD_MDEV_ON,   /* always; vgpud does not start without it */
	VGPUD_MDEV_OFF,  /* never */
};

struct vgpud_profile_spec {
	char name[VGPUD_PROFILE_NAME_MAX];
	uint32_t weight;
	uint64_t cap_bytes;     /* 0 = no cap */
	uint32_t max_instances; /* 0 = no limit */
	char scheduler[16];     /* GPU-time mode of its VMs; "" = best-effort */
};

struct vgpud_config {
	/* [simgpu]; gpu.vram_bytes 0 = the backend's default (simgpu 1 GiB,
	 * cuda 90% of the GPU's free memory), the effective value once vgpud
	 * runs. */
	struct simgpu_config gpu;
	char gpu_name[32]; /* [daemon] gpu: simgpu, cuda or cuda:N */
	/* [cuda] isolation: "" (cudagpu's default), none or process
	 * (vgpu/cudagpu.h) */
	char cuda_isolation[16];

	/* [core] */
	uint64_t chunk_bytes;
	char policy[32];
	uint64_t seed;
	bool whole_buffer_eviction;     /* evict whole buffers (the baseline; default no) */
	uint64_t host_budget_bytes; /* 0 = no limit; VGPUD_HOST_BUDGET_AUTO until vgpud runs */
	uint64_t host_cache_bytes;  /* freed host buffers kept for reuse */
	uint32_t return_interval_ms;
	uint32_t drain_timeout_ms;
	bool gpu_accounting;            /* the LoGA accounting thread (default yes) */
	uint32_t accounting_mode;       /* enum vgpu_accounting_mode (default loga) */
	uint32_t accounting_poll_us;    /* per channel; 0 = the core's 1000 */
	uint32_t accounting_nonpoll_us; /* per channel; 0 = the core's 5000 */
	bool accounting_always_poll;    /* poll with one VM at work too (default no) */
	int32_t accounting_cpu;         /* pin the accounting thread; -1 = any */

	/* [daemon] */
	char socket_path[VGPUD_PATH_MAX];
	char control_path[VGPUD_PATH_MAX];
	char socket_group[64];      /* group owning both sockets, "" = vgpud's */
	char operator_group[64];    /* control socket operators besides root, "" = none */
	int log_level;              /* enum vgpud_log_level */
	char default_profile[VGPUD_PROFILE_NAME_MAX];
	uint32_t attach_timeout_ms; /* a new connection must ATTACH within this */
	uint32_t swap_timeout_ms;   /* a frontend must ack a window swap within this */
	uint32_t max_buffers_per_vm;
	uint32_t max_modules_per_vm;
	uint32_t mailbox_budget;    /* requests served per doorbell before yielding */
	int mdev_mode;              /* enum vgpud_mdev_mode */
	char mdev_device[VGPUD_PATH_MAX]; /* vgpu_mdev.ko's control device */
	char libvirt_uri[256];      /* names of mdev VMs; "" = default, "none" = off */
	char metrics[80];           /* HTTP /metrics: listen_address.h; default "off" */

	/* [socket]: what the tenant and control sockets allow */
	char allowed_profiles[512];  /* tenants may ATTACH with these: "a,b"; "*" = any;
	                                "" = the default profile only */
	uint32_t idle_timeout_ms;    /* a tenant holding nothing, silent this long: detached */
	uint32_t max_connections_per_uid; /* tenant connections of one user at once */
	uint32_t control_idle_timeout_ms; /* a silent control connection: closed */
	uint32_t control_max_connections_per_uid;
	/* share_limits.h: per-user shares of channels and instances */
	uint32_t max_channels_per_uid;  /* 0 = no limit */
	uint32_t channels_reserved;     /* for users holding no channel */
	uint32_t max_instances_per_uid; /* of one profile; 0 = no limit */

	/* [profile NAME] sections */
	struct vgpud_profile_spec profiles[VGPUD_MAX_PROFILES];
	size_t profile_count;
	bool profiles_from_file; /* false: the built-in profiles */

	char config_file[4096];  /* "" = none */

	/* --profile flags as given, re-applied over the file on reload */
	char profile_flags[VGPUD_MAX_PROFILES][256];
	size_t profile_flag_count;
};

/* Defaults, including the built-in profiles vgpu-1G, vgpu-2G, vgpu-4G. */
void vgpud_config_defaults(struct vgpud_config *config);

/* What the command line asks for. */
enum vgpud_config_action {
	VGPUD_CONFIG_RUN,     /* start vgpud */
	VGPUD_CONFIG_PRINTED, /* --help or --version was printed: exit 0 */
	VGPUD_CONFIG_CHECK,   /* --check-config: print the configuration, exit 0 */
};

/*
 * Parse argv into config (which holds defaults). Reads the configuration
 * file named by --config (or VGPUD_DEFAULT_CONFIG_FILE if it exists and no
 * --config is given) first, then applies the other flags. 0 and *action,
 * or a negative errno after printing what was wrong to stderr (exit 2).
 */
int vgpud_config_from_args(struct vgpud_config *config, int argc, char **argv,
                           enum vgpud_config_action *action);

/* host_budget as it applies: auto resolved to half of the RAM now. */
uint64_t vgpud_config_host_budget(const struct vgpud_config *config);

/* May a tenant of the local socket ATTACH with profile (NULL or "": the
 * default profile)? allowed_profiles decides. */
bool vgpud_config_profile_allowed(const struct vgpud_config *config, const char *profile);

/* Parse a configuration file into config. Errors: -errno after writing
 * "FILE:LINE: what" into error. */
int vgpud_config_load_file(struct vgpud_config *config, const char *path, struct vgpu_error *error);

/* Only the [profile] sections of path (SIGHUP). Fills specs/count. */
int vgpud_config_load_profiles(const char *path, struct vgpud_profile_spec *specs,
                               size_t *count, struct vgpu_error *error);

/* Apply the --profile flags recorded in config to specs/count (reload). */
int vgpud_config_apply_profile_flags(const struct vgpud_config *config,
                                     struct vgpud_profile_spec *specs, size_t *count,
                                     struct vgpu_error *error);

/* Check cross-field consistency (default profile exists, ...). */
int vgpud_config_validate(const struct vgpud_config *config, struct vgpu_error *error);

/* [cuda] isolation into spec->cuda_isolation; -EINVAL when unknown. */
struct vgpu_hal_spec;
int vgpud_config_cuda_isolation(const struct vgpud_config *config, struct vgpu_hal_spec *spec);

/* "auto", "on" or "off". */
const char *vgpud_mdev_mode_name(int mode);

/* Parsers shared with the control API: 0 or -EINVAL (sizes: vgpu/util.h's
 * vgpu_parse_bytes). */
int vgpud_parse_u64(const char *text, uint64_t *out);
int vgpud_parse_u32(const char *text, uint32_t *out);
bool vgpud_profile_name_ok(const char *name);

/* The --help text. */
void vgpud_config_usage(FILE *out);

#endif /* VGPUD_CONFIG_H */
