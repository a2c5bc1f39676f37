// SPDX-License-Identifier: MIT
/* config_json.c - the configuration as JSON, see config_json.h. */
#include "config_json.h"

#include "log.h"
#include "vgpu/core.h"

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

struct json_object *vgpud_profile_to_json(const struct vgpud_profile_spec *spec,
                                          const struct vgpud_profile *live)
{
	struct json_object *o = json_object_new_object();

	add_str(o, "name", spec->name);
	add_u64(o, "weight", spec->weight);
	add_u64(o, "cap", spec->cap_bytes);
	add_u64(o, "max_instances", spec->max_instances);
	add_str(o, "scheduler", spec->scheduler[0] ? spec->scheduler : "best-effort");
	if (live) {
		add_u64(o, "instances", live->instances);
		if (spec->max_instances)
			add_u64(o, "available", spec->max_instances > live->instances
			                                ? spec->max_instances - live->instances
			                                : 0);
		else
			json_object_object_add(o, "available", NULL); /* unlimited */
	}
	return o;
}

struct json_object *vgpud_config_to_json(const struct vgpud_config *c,
                                         struct vgpud_profiles *profiles)
{
	struct json_object *root = json_object_new_object();
	struct json_object *gpu = json_object_new_object();
	struct json_object *core = json_object_new_object();
	struct json_object *daemon = json_object_new_object();
	struct json_object *sock = json_object_new_object();
	struct json_object *list = json_object_new_array();
	size_t i;

	add_str(gpu, "hal", c->gpu_name);
	add_u64(gpu, "vram", c->gpu.vram_bytes);
	add_u64(gpu, "reserved_vram", c->gpu.reserved_vram_bytes);
	add_u64(gpu, "vram_bandwidth", c->gpu.vram_bandwidth);
	add_u64(gpu, "vram_latency_ns", c->gpu.vram_latency_ns);
	add_u64(gpu, "sysmem_coherent_bandwidth", c->gpu.sysmem_coherent_bandwidth);
	add_u64(gpu, "sysmem_coherent_latency_ns", c->gpu.sysmem_coherent_latency_ns);
	add_u64(gpu, "sysmem_noncoherent_bandwidth", c->gpu.sysmem_noncoherent_bandwidth);
	add_u64(gpu, "sysmem_noncoherent_latency_ns", c->gpu.sysmem_noncoherent_latency_ns);
	add_u64(gpu, "max_channels", c->gpu.max_channels);
	add_u64(gpu, "max_address_spaces", c->gpu.max_address_spaces);
	json_object_object_add(gpu, "reference_bits", json_object_new_boolean(c->gpu.reference_bits));
	add_u64(gpu, "pfifo_idle_sleep_max_us", c->gpu.pfifo_idle_sleep_max_us);
	add_u64(gpu, "timeslice_ns", c->gpu.timeslice_ns);
	add_u64(gpu, "timeslice_commands", c->gpu.timeslice_commands);
	add_u64(gpu, "watchdog_ns", c->gpu.watchdog_ns);
	add_u64(gpu, "function_launch_wall_ms", c->gpu.function_launch_wall_ms);
	add_u64(gpu, "acquire_timeout_ms", c->gpu.acquire_timeout_ms);
	add_str(gpu, "sharing", simgpu_sharing_name(c->gpu.sharing));
	add_str(gpu, "walkers", simgpu_walkers_name(c->gpu.spatial_walkers));
	add_str(gpu, "memsched", simgpu_memsched_name(c->gpu.spatial_memsched));
	json_object_object_add(gpu, "paced", json_object_new_boolean(c->gpu.paced));
	json_object_object_add(root, "simgpu", gpu);

	add_u64(core, "chunk_size", c->chunk_bytes);
	add_str(core, "policy", c->policy);
	add_u64(core, "seed", c->seed);
	json_object_object_add(core, "whole_buffer_eviction",
	                       json_object_new_boolean(c->whole_buffer_eviction));
	if (c->host_budget_bytes == VGPUD_HOST_BUDGET_AUTO) /* --check-config: not resolved */
		add_str(core, "host_budget", "auto");
	else
		add_u64(core, "host_budget", c->host_budget_bytes);
	add_u64(core, "host_cache", c->host_cache_bytes);
	add_u64(core, "return_interval_ms", c->return_interval_ms);
	add_u64(core, "drain_timeout_ms", c->drain_timeout_ms);
	json_object_object_add(core, "gpu_accounting", json_object_new_boolean(c->gpu_accounting));
	add_str(core, "accounting_mode", vgpu_accounting_mode_name(c->accounting_mode));
	add_u64(core, "accounting_poll_us", c->accounting_poll_us);
	add_u64(core, "accounting_nonpoll_us", c->accounting_nonpoll_us);
	json_object_object_add(core, "accounting_always_poll",
	                       json_object_new_boolean(c->accounting_always_poll));
	if (c->accounting_cpu >= 0)
		add_u64(core, "accounting_cpu", (uint64_t)c->accounting_cpu);
	else
		add_str(core, "accounting_cpu", "any");
	json_object_object_add(root, "core", core);

	add_str(daemon, "socket", c->socket_path);
	add_str(daemon, "control_socket", c->control_path);
	add_str(daemon, "socket_group", c->socket_group);
	add_str(daemon, "operator_group", c->operator_group);
	add_str(daemon, "log_level", vgpud_log_level_name((enum vgpud_log_level)c->log_level));
	add_str(daemon, "default_profile",
	        profiles ? profiles->default_name : c->default_profile);
	add_u64(daemon, "attach_timeout_ms", c->attach_timeout_ms);
	add_u64(daemon, "swap_timeout_ms", c->swap_timeout_ms);
	add_u64(daemon, "max_buffers_per_vm", c->max_buffers_per_vm);
	add_u64(daemon, "max_modules_per_vm", c->max_modules_per_vm);
	add_u64(daemon, "mailbox_budget", c->mailbox_budget);
	add_str(daemon, "mdev", vgpud_mdev_mode_name(c->mdev_mode));
	add_str(daemon, "mdev_device", c->mdev_device);
	add_str(daemon, "libvirt_uri", c->libvirt_uri);
	add_str(daemon, "metrics", c->metrics);
	add_str(daemon, "config_file", c->config_file);
	json_object_object_add(root, "daemon", daemon);

	add_str(sock, "allowed_profiles", c->allowed_profiles);
	add_u64(sock, "idle_timeout_ms", c->idle_timeout_ms);
	add_u64(sock, "max_connections_per_uid", c->max_connections_per_uid);
	add_u64(sock, "control_idle_timeout_ms", c->control_idle_timeout_ms);
	add_u64(sock, "control_max_connections_per_uid", c->control_max_connections_per_uid);
	add_u64(sock, "max_channels_per_uid", c->max_channels_per_uid);
	add_u64(sock, "channels_reserved", c->channels_reserved);
	add_u64(sock, "max_instances_per_uid", c->max_instances_per_uid);
	json_object_object_add(root, "socket", sock);

	if (profiles) {
		struct vgpud_profile snapshot[VGPUD_MAX_PROFILES];
		size_t n = vgpud_profiles_snapshot(profiles, snapshot, VGPUD_MAX_PROFILES);

		for (i = 0; i < n; i++)
			json_object_array_add(list, vgpud_profile_to_json(&snapshot[i].spec,
			                                                  &snapshot[i]));
	} else {
		for (i = 0; i < c->profile_count; i++)
			json_object_array_add(list, vgpud_profile_to_json(&c->profiles[i], NULL));
	}
	json_object_object_add(root, "profiles", list);
	return root;
}
