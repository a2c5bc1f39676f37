// SPDX-License-Identifier: MIT
/*
 * control_commands.c - the control API's commands (CONTROL_API.md): one
 * JSON request object in, one JSON response object out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "vgpu/core.h"

#include "config_json.h"
#include "control_server.h"
#include "daemon.h"
#include "device.h"
#include "local_server.h"
#include "log.h"

static struct json_object *error_response(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static struct json_object *error_response(const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(text));
	return o;
}

static struct json_object *ok_response(void)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

/* A request field as a string, or NULL. */
static const char *get_string(struct json_object *req, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* A request field as a non-negative integer (a number, or for sizes a
 * string such as "2G"). 1 found, 0 absent, -EINVAL malformed. */
static int get_u64(struct json_object *req, const char *key, bool size, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i < 0)
			return -EINVAL;
		*out = json_object_get_uint64(v);
		return 1;
	}
	if (size && json_object_is_type(v, json_type_string))
		return vgpud_parse_size(json_object_get_string(v), out) ? -EINVAL : 1;
	return -EINVAL;
}

/* ------------------------------------------------------------ per VM */

struct vm_sample {
	struct vgpu_vm_stats stats;
	struct vgpu_hal_as_counters counters;
};

static void sample_vm(struct vgpu_device *dev, struct vm_sample *s)
{
	vgpu_core_vm_stats(dev->vm, &s->stats);
	vgpu_hal_as_counters(vgpu_core_vm_address_space(dev->vm), &s->counters);
}

/* The fields of vgpu-sim --json's per-VM objects, plus profile and id, plus
 * what vgpud knows beyond them. */
static struct json_object *vm_json(struct vgpud *d, struct vgpu_device *dev,
                                   const struct vm_sample *s, uint64_t total_compute_ns,
                                   bool detail)
{
	struct json_object *o = json_object_new_object();
	uint64_t compute_ns = s->counters.busy_ns[VGPU_ENGINE_COMPUTE];

	add_u64(o, "id", dev->vm_id);
	/* the libvirt domain (or QEMU -name) of an mdev VM once known */
	add_str(o, "name", vgpud_registry_report_name_locked(dev));
	if (!strcmp(dev->transport->kind, "mdev"))
		add_str(o, "uuid", dev->name); /* mdev VMs are attached by mdev UUID */
	add_str(o, "name_source", dev->name_source ? dev->name_source
	                          : !strcmp(dev->transport->kind, "mdev") ? "uuid" : "tenant");
	add_str(o, "profile", dev->profile);
	add_u64(o, "weight", s->stats.weight);
	add_u64(o, "cap", s->stats.cap_bytes);
	add_u64(o, "allocated", s->stats.allocated_bytes);
	add_u64(o, "resident", s->stats.resident_bytes);
	add_u64(o, "evicted", s->stats.evicted_bytes);
	add_u64(o, "fair_share", s->stats.fair_share_bytes);
	json_object_object_add(o, "vram_share",
	                       json_object_new_double(d->caps.vram_bytes
	                                              ? (double)s->stats.resident_bytes /
	                                                        (double)d->caps.vram_bytes
	                                              : 0.0));
	add_u64(o, "evictions", s->stats.evictions);
	add_u64(o, "returns", s->stats.returns);
	add_u64(o, "modeled_runtime_ns", compute_ns + s->counters.busy_ns[VGPU_ENGINE_COPY]);
	if (total_compute_ns)
		json_object_object_add(o, "gpu_time_share",
		                       json_object_new_double((double)compute_ns /
		                                              (double)total_compute_ns));
	else
		json_object_object_add(o, "gpu_time_share", NULL); /* not measured yet */
	add_str(o, "verify", "not-run");
	add_u64(o, "buffers", s->stats.buffers);
	add_u64(o, "channels", atomic_load(&dev->channels));
	add_str(o, "transport", dev->transport->kind);
	if (!detail)
		return o;

	add_u64(o, "chunk", s->stats.chunk_bytes);
	add_u64(o, "resident_chunks", s->stats.resident_chunks);
	add_u64(o, "evicted_chunks", s->stats.evicted_chunks);
	add_u64(o, "evicted_bytes_total", s->stats.evicted_bytes_total);
	add_u64(o, "returned_bytes_total", s->stats.returned_bytes_total);
	add_u64(o, "suspensions", s->stats.suspensions);
	add_u64(o, "suspended_ns", s->stats.suspended_ns);
	add_u64(o, "guest_blocked_ns", s->stats.guest_blocked_ns);
	add_u64(o, "drain_ns", s->stats.drain_ns);
	add_u64(o, "allocs", s->stats.allocs);
	add_u64(o, "alloc_failures", s->stats.alloc_failures);
	add_u64(o, "channel_errors", s->stats.channel_errors);
	add_u64(o, "requests", atomic_load(&dev->requests));
	add_u64(o, "requests_failed", atomic_load(&dev->requests_failed));
	add_u64(o, "mailbox_ring_errors", atomic_load(&dev->ring_errors));
	add_u64(o, "doorbells", atomic_load(&dev->doorbells));
	add_u64(o, "fence_interrupts", atomic_load(&dev->fences));
	add_u64(o, "attached_at", (uint64_t)dev->attached_at.tv_sec);
	{
		struct json_object *bytes = json_object_new_object();

		add_u64(bytes, "vram_read", s->counters.bytes_read[VGPU_TARGET_VRAM]);
		add_u64(bytes, "vram_written", s->counters.bytes_written[VGPU_TARGET_VRAM]);
		add_u64(bytes, "sysmem_read",
		        s->counters.bytes_read[VGPU_TARGET_SYSMEM_COHERENT] +
		                s->counters.bytes_read[VGPU_TARGET_SYSMEM_NONCOHERENT]);
		add_u64(bytes, "sysmem_written",
		        s->counters.bytes_written[VGPU_TARGET_SYSMEM_COHERENT] +
		                s->counters.bytes_written[VGPU_TARGET_SYSMEM_NONCOHERENT]);
		json_object_object_add(o, "gpu_bytes", bytes);
	}
	return o;
}

static struct json_object *gpu_json(struct vgpud *d)
{
	struct json_object *o = json_object_new_object();
	struct vgpu_core_stats stats;

	vgpu_core_stats(d->core, &stats);
	add_str(o, "hal", d->caps.name ? d->caps.name : "?");
	add_u64(o, "vram", stats.vram_bytes);
	add_u64(o, "free", stats.vram_free_bytes);
	add_u64(o, "chunk", d->config.chunk_bytes);
	add_str(o, "policy", vgpu_core_policy_name(d->core));
	add_u64(o, "allocated", stats.allocated_bytes);
	add_u64(o, "resident", stats.resident_bytes);
	add_u64(o, "evicted", stats.evicted_bytes);
	add_u64(o, "host_budget", stats.host_budget_bytes);
	add_u64(o, "host_used", stats.host_used_bytes);
	add_u64(o, "chunks_evicted", stats.chunks_evicted);
	add_u64(o, "chunks_placed_on_host", stats.chunks_placed_on_host);
	add_u64(o, "chunks_returned", stats.chunks_returned);
	add_u64(o, "vms", stats.vms);
	return o;
}

static struct json_object *cmd_list(struct vgpud *d, bool detail, const char *only)
{
	struct vm_sample *samples;
	struct json_object *response, *vms;
	struct vgpu_device *dev;
	uint64_t total_compute = 0;
	size_t n = 0, i;
	bool found = false;

	pthread_mutex_lock(&d->registry.lock);
	samples = calloc(d->registry.count ? d->registry.count : 1, sizeof(*samples));
	if (!samples) {
		pthread_mutex_unlock(&d->registry.lock);
		return error_response("vgpud is out of memory");
	}
	vgpud_registry_for_each_locked(&d->registry, dev) {
		sample_vm(dev, &samples[n]);
		total_compute += samples[n].counters.busy_ns[VGPU_ENGINE_COMPUTE];
		n++;
	}
	response = ok_response();
	vms = json_object_new_array();
	i = 0;
	vgpud_registry_for_each_locked(&d->registry, dev) {
		if (!only || vgpud_registry_matches_locked(dev, only)) {
			struct json_object *vm = vm_json(d, dev, &samples[i], total_compute, detail);

			if (only) {
				json_object_object_add(response, "vm", vm);
				found = true;
			} else {
				json_object_array_add(vms, vm);
			}
		}
		i++;
	}
	pthread_mutex_unlock(&d->registry.lock);
	free(samples);
	if (only) {
		json_object_put(vms);
		if (!found) {
			json_object_put(response);
			return error_response("no VM named '%s' is attached; `vgpuctl status` lists "
			                      "them", only);
		}
		return response;
	}
	json_object_object_add(response, "gpu", gpu_json(d));
	json_object_object_add(response, "vms", vms);
	return response;
}

static struct json_object *cmd_set_weight(struct vgpud *d, struct json_object *req)
{
	const char *name = get_string(req, "vm");
	struct vgpu_device *dev;
	struct json_object *response;
	uint64_t weight;
	int err;

	if (!name || get_u64(req, "weight", false, &weight) != 1)
		return error_response("set-weight needs \"vm\" (a name) and \"weight\" (1..%u)",
		                      VGPU_CORE_WEIGHT_MAX);
	if (!weight || weight > VGPU_CORE_WEIGHT_MAX)
		return error_response("weight %llu is out of range: use 1..%u",
		                      (unsigned long long)weight, VGPU_CORE_WEIGHT_MAX);
	pthread_mutex_lock(&d->registry.lock);
	dev = vgpud_registry_find_locked(&d->registry, name);
	if (!dev) {
		pthread_mutex_unlock(&d->registry.lock);
		return error_response("no VM named '%s' is attached; `vgpuctl status` lists them",
		                      name);
	}
	err = vgpu_core_set_weight(dev->vm, (uint32_t)weight);
	if (!err)
		atomic_store(&dev->weight_overridden, true);
	pthread_mutex_unlock(&d->registry.lock);
	if (err)
		return error_response("cannot set the weight of '%s': %s", name,
		                      vgpu_core_last_error());
	log_info("VM '%s': weight set to %llu", name, (unsigned long long)weight);
	response = ok_response();
	add_str(response, "vm", name);
	add_u64(response, "weight", weight);
	return response;
}

static struct json_object *cmd_types(struct vgpud *d)
{
	struct vgpud_profile snapshot[VGPUD_MAX_PROFILES];
	struct json_object *response = ok_response(), *list = json_object_new_array();
	size_t n = vgpud_profiles_snapshot(&d->profiles, snapshot, VGPUD_MAX_PROFILES), i;

	for (i = 0; i < n; i++)
		json_object_array_add(list, vgpud_profile_to_json(&snapshot[i].spec, &snapshot[i]));
	json_object_object_add(response, "profiles", list);
	add_str(response, "default", d->profiles.default_name);
	return response;
}

static struct json_object *cmd_set_profile(struct vgpud *d, struct json_object *req)
{
	const char *name = get_string(req, "profile");
	uint64_t weight = 0, cap = 0, max = 0;
	int has_weight, has_cap, has_max, err;
	uint32_t weight32, max32;
	struct vgpud_profile_spec spec;
	struct json_object *response;

	has_weight = get_u64(req, "weight", false, &weight);
	has_cap = get_u64(req, "cap", true, &cap);
	has_max = get_u64(req, "max_instances", false, &max);
	if (!name || has_weight < 0 || has_cap < 0 || has_max < 0 ||
	    (!has_weight && !has_cap && !has_max))
		return error_response("set-profile needs \"profile\" and at least one of "
		                      "\"weight\" (1..%u), \"cap\" (bytes or a size such as "
		                      "\"2G\") and \"max_instances\"", VGPU_CORE_WEIGHT_MAX);
	if (has_weight && (!weight || weight > VGPU_CORE_WEIGHT_MAX))
		return error_response("weight %llu is out of range: use 1..%u",
		                      (unsigned long long)weight, VGPU_CORE_WEIGHT_MAX);
	if (has_cap && cap % 4096)
		return error_response("cap must be a multiple of 4096 bytes");
	if (has_max && max > UINT32_MAX)
		return error_response("max_instances is too large");
	weight32 = (uint32_t)weight;
	max32 = (uint32_t)max;
	err = vgpud_profiles_update(&d->profiles, name, has_weight ? &weight32 : NULL,
	                            has_cap ? &cap : NULL, has_max ? &max32 : NULL);
	if (err)
		return error_response("there is no profile '%s'; `vgpuctl types` lists them", name);
	if (has_weight)
		vgpud_apply_profile_weight(d, name, weight32);
	vgpud_profiles_get(&d->profiles, name, &spec);
	log_info("profile '%s' changed: weight %u, cap %llu, max_instances %u", name, spec.weight,
	         (unsigned long long)spec.cap_bytes, spec.max_instances);
	response = ok_response();
	json_object_object_add(response, "profile", vgpud_profile_to_json(&spec, NULL));
	return response;
}

static struct json_object *cmd_health(struct vgpud *d, struct json_object *req)
{
	struct json_object *response = ok_response(), *check;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	add_str(response, "status", "ok");
	add_str(response, "version", VGPUD_VERSION);
	add_u64(response, "abi_version", VGPU_ABI_VERSION);
	add_u64(response, "uptime_s", (uint64_t)(now.tv_sec - d->started.tv_sec));
	pthread_mutex_lock(&d->registry.lock);
	add_u64(response, "vms", d->registry.count);
	add_u64(response, "attached_total", d->registry.attached_total);
	add_u64(response, "detached_total", d->registry.detached_total);
	pthread_mutex_unlock(&d->registry.lock);
	add_u64(response, "connections", d->local ? local_server_connections(d->local) : 0);
	add_u64(response, "reloads", d->reloads);
	pthread_mutex_lock(&d->routes.lock);
	add_u64(response, "fence_events", d->routes.fences);
	add_u64(response, "channel_error_events", d->routes.errors);
	pthread_mutex_unlock(&d->routes.lock);
	if (json_object_object_get_ex(req, "invariants", &check) && json_object_get_boolean(check)) {
		char why[512];

		if (vgpu_core_check_invariants(d->core, why, sizeof(why))) {
			add_str(response, "invariants", why);
			add_str(response, "status", "invariants violated");
		} else {
			add_str(response, "invariants", "ok");
		}
	}
	return response;
}

static struct json_object *cmd_reload(struct vgpud *d)
{
	if (vgpud_reload_profiles(d))
		return error_response("reload failed; vgpud's log says why; the profiles are "
		                      "unchanged");
	return cmd_types(d);
}

static struct json_object *dispatch(struct vgpud *d, struct json_object *req)
{
	const char *command = get_string(req, "command");

	if (!command)
		return error_response("a request is a JSON object with a \"command\": one of "
		                      "health, list, stats, set-weight, types, set-profile, "
		                      "config, reload");
	if (!strcmp(command, "health"))
		return cmd_health(d, req);
	if (!strcmp(command, "list") || !strcmp(command, "status"))
		return cmd_list(d, false, NULL);
	if (!strcmp(command, "stats")) {
		const char *name = get_string(req, "vm");

		return name ? cmd_list(d, true, name)
		            : error_response("stats needs \"vm\": the name of an attached VM");
	}
	if (!strcmp(command, "set-weight"))
		return cmd_set_weight(d, req);
	if (!strcmp(command, "types"))
		return cmd_types(d);
	if (!strcmp(command, "set-profile"))
		return cmd_set_profile(d, req);
	if (!strcmp(command, "config")) {
		struct json_object *response = ok_response();

		json_object_object_add(response, "config",
		                       vgpud_config_to_json(&d->config, &d->profiles));
		return response;
	}
	if (!strcmp(command, "reload"))
		return cmd_reload(d);
	return error_response("unknown command '%s': use health, list, stats, set-weight, "
	                      "types, set-profile, config or reload", command);
}

char *vgpud_control_handle(struct vgpud *d, const char *request)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req = NULL, *response;
	char *text;

	if (tok) {
		req = json_tokener_parse_ex(tok, request, (int)strlen(request));
		if (json_tokener_get_error(tok) != json_tokener_success ||
		    request[json_tokener_get_parse_end(tok) +
		            strspn(request + json_tokener_get_parse_end(tok), " \t\r")]) {
			json_object_put(req);
			req = NULL;
		}
		json_tokener_free(tok);
	}
	if (!req || !json_object_is_type(req, json_type_object))
		response = error_response("the request is not one JSON object; send e.g. "
		                          "{\"command\":\"list\"} followed by a newline");
	else
		response = dispatch(d, req);
	json_object_put(req);
	text = strdup(json_object_to_json_string_ext(response, JSON_C_TO_STRING_PLAIN));
	json_object_put(response);
	return text;
}
