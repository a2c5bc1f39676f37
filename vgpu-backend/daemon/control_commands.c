// SPDX-License-Identifier: MIT
/*
 * control_commands.c - the control API's commands (CONTROL_API.md): one
 * JSON request object in, one JSON response object out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "vgpu/core.h"
#include "vgpu/error.h"
#include "vgpu/util.h"

#include "config_json.h"
#include "control_commands.h"
#include "daemon.h"
#include "device.h"
#include "local_server.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "migrate.h"
#include "stats_snapshot.h"
#include "mdev_host.h"

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
		return vgpu_parse_bytes(json_object_get_string(v), out) ? -EINVAL : 1;
	return -EINVAL;
}

/* ------------------------------------------------------------ per VM */

/* The fields of vgpu-sim --json's per-VM objects, plus profile and id, plus
 * what vgpud knows beyond them. */
static void add_double(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(v));
}

/* Spatial sharing: the VM's shared-path figures (vgpu_hal_as_contention). */
static struct json_object *contention_json(const struct vgpu_hal_as_contention *c)
{
	struct json_object *o = json_object_new_object();
	struct vgpu_hal_contention_figures f;

	vgpu_hal_contention_derive(c, &f);
	add_u64(o, "kernels", c->kernels);
	add_u64(o, "corunner_kernels", c->corunner_kernels);
	add_u64(o, "walks", c->walks);
	add_double(o, "avg_walk_latency_cycles", f.avg_walk_latency_cycles);
	add_u64(o, "foreign_walks_waited", c->foreign_walks_waited);
	add_double(o, "foreign_walks_waited_per_walk", f.walks_waited_per_walk);
	add_u64(o, "foreign_walks_waited_max", c->foreign_walks_waited_max);
	add_double(o, "l2_tlb_hit_rate", f.l2_tlb_hit_rate);
	add_double(o, "mpki", f.mpki);
	add_double(o, "bandwidth_bytes_per_s", f.bandwidth_bytes_per_s);
	add_u64(o, "instructions", c->instructions);
	add_u64(o, "cycles", c->cycles);
	add_u64(o, "alone_cycles", c->alone_cycles);
	add_double(o, "ipc", f.ipc);
	add_double(o, "slowdown", f.slowdown);
	return o;
}

static struct json_object *vm_json(const struct vgpud_stats_snapshot *snapshot,
                                   const struct vgpud_vm_snapshot *vm, bool detail)
{
	struct json_object *o = json_object_new_object();
	const struct vgpu_vm_stats *s = &vm->stats;
	double share;

	add_u64(o, "id", vm->id);
	add_str(o, "name", vm->name);
	if (vm->uuid[0])
		add_str(o, "uuid", vm->uuid);
	add_str(o, "name_source", vm->name_source);
	add_str(o, "profile", vm->profile);
	add_u64(o, "weight", s->weight);
	add_u64(o, "cap", s->cap_bytes);
	add_u64(o, "allocated", s->allocated_bytes);
	add_u64(o, "resident", s->resident_bytes);
	add_u64(o, "evicted", s->evicted_bytes);
	add_u64(o, "fair_share", s->fair_share_bytes);
	json_object_object_add(o, "vram_share",
	                       json_object_new_double(vgpud_vm_snapshot_vram_share(snapshot, vm)));
	add_u64(o, "evictions", s->evictions);
	add_u64(o, "returns", s->returns);
	/* GPU time as the accounting thread measured it */
	add_u64(o, "gpu_time_ns", s->gpu_time_ns);
	if (vgpud_vm_snapshot_gpu_time_share(snapshot, vm, &share))
		json_object_object_add(o, "gpu_time_share", json_object_new_double(share));
	else
		json_object_object_add(o, "gpu_time_share", NULL); /* not measured yet */
	add_str(o, "scheduler", s->scheduler);
	add_str(o, "scheduling", s->throttled ? "throttled" : "running");
	add_u64(o, "throttled_ns", s->throttled_ns);
	add_u64(o, "throttles", s->throttles);
	/* simgpu's ground truth, for tests and debugging only */
	add_u64(o, "debug_modeled_runtime_ns", vgpud_vm_snapshot_runtime_ns(vm));
	add_str(o, "verify", "not-run");
	add_u64(o, "buffers", s->buffers);
	add_u64(o, "channels", vm->channels);
	add_str(o, "transport", vm->transport);
	/* a VM once killed for not draining: later evictions wait 50 ms for
	 * it, not the drain timeout (vgpu/core.h, "Drain offenders") */
	json_object_object_add(o, "drain_offender", json_object_new_boolean(s->drain_offender));
	add_u64(o, "drain_kills", s->drain_kills);
	if (vm->has_contention) /* simgpu's spatial sharing */
		json_object_object_add(o, "contention", contention_json(&vm->contention));
	if (!detail)
		return o;

	add_u64(o, "chunk", s->chunk_bytes);
	add_u64(o, "resident_chunks", s->resident_chunks);
	add_u64(o, "evicted_chunks", s->evicted_chunks);
	add_u64(o, "evicted_bytes_total", s->evicted_bytes_total);
	add_u64(o, "returned_bytes_total", s->returned_bytes_total);
	add_u64(o, "suspensions", s->suspensions);
	add_u64(o, "suspended_ns", s->suspended_ns);
	add_u64(o, "guest_blocked_ns", s->guest_blocked_ns);
	add_u64(o, "drain_ns", s->drain_ns);
	add_u64(o, "allocs", s->allocs);
	add_u64(o, "alloc_failures", s->alloc_failures);
	add_u64(o, "channel_errors", s->channel_errors);
	add_u64(o, "requests", vm->requests);
	add_u64(o, "requests_failed", vm->requests_failed);
	add_u64(o, "mailbox_ring_errors", vm->ring_errors);
	add_u64(o, "doorbells", vm->doorbells);
	add_u64(o, "fence_interrupts", vm->fence_interrupts);
	add_u64(o, "attached_at", (uint64_t)vm->attached_at);
	{
		const struct vgpu_hal_as_counters *c = &vm->counters;
		struct json_object *bytes = json_object_new_object();

		add_u64(bytes, "vram_read", c->bytes_read[VGPU_TARGET_VRAM]);
		add_u64(bytes, "vram_written", c->bytes_written[VGPU_TARGET_VRAM]);
		add_u64(bytes, "sysmem_read",
		        c->bytes_read[VGPU_TARGET_SYSMEM_COHERENT] +
		                c->bytes_read[VGPU_TARGET_SYSMEM_NONCOHERENT]);
		add_u64(bytes, "sysmem_written",
		        c->bytes_written[VGPU_TARGET_SYSMEM_COHERENT] +
		                c->bytes_written[VGPU_TARGET_SYSMEM_NONCOHERENT]);
		json_object_object_add(o, "gpu_bytes", bytes);
	}
	return o;
}

/* Where the evictions' time went, summed over every pass since vgpud
 * started (vgpu/core_stats.h): the thesis's latency breakdown. */
static struct json_object *eviction_json(const struct vgpu_core_time *t)
{
	struct json_object *o = json_object_new_object();

	add_u64(o, "passes", t->passes);
	add_u64(o, "policy_ns", t->policy_ns);
	add_u64(o, "setup_ns", t->setup_ns);
	add_u64(o, "copy_ns", t->copy_ns);
	add_u64(o, "copy_modeled_ns", t->copy_modeled_ns);
	add_u64(o, "other_ns", t->other_ns);
	add_u64(o, "total_ns", t->total_ns);
	add_u64(o, "victim_drain_ns", t->drain_ns);
	add_u64(o, "victim_pause_ns", t->pause_ns);
	add_u64(o, "vm_suspensions", t->vm_suspensions);
	add_u64(o, "bytes_copied", t->bytes_copied);
	return o;
}

static struct json_object *gpu_json(const struct vgpud_stats_snapshot *snapshot)
{
	struct json_object *o = json_object_new_object();
	const struct vgpu_core_stats *stats = &snapshot->core;

	add_str(o, "hal", snapshot->hal);
	add_u64(o, "vram", stats->vram_bytes);
	add_u64(o, "free", stats->vram_free_bytes);
	add_u64(o, "chunk", snapshot->chunk_bytes);
	add_str(o, "policy", snapshot->policy);
	add_u64(o, "allocated", stats->allocated_bytes);
	add_u64(o, "resident", stats->resident_bytes);
	add_u64(o, "evicted", stats->evicted_bytes);
	add_u64(o, "host_budget", stats->host_budget_bytes);
	add_u64(o, "host_used", stats->host_used_bytes);
	add_u64(o, "chunks_evicted", stats->chunks_evicted);
	add_u64(o, "chunks_placed_on_host", stats->chunks_placed_on_host);
	add_u64(o, "chunks_returned", stats->chunks_returned);
	add_u64(o, "vms", stats->vms);
	json_object_object_add(o, "eviction", eviction_json(&stats->eviction));
	return o;
}

/* list/status (only == NULL): the GPU and every VM; stats: the VM only.
 * A tenant (peer not an operator) sees its own VMs only, and not the GPU. */
static struct json_object *cmd_list(struct vgpud *d, bool detail, const char *only,
                                    const struct vgpud_control_peer *peer)
{
	struct vgpud_stats_snapshot snapshot;
	struct json_object *response, *vms;
	size_t i;

	if (vgpud_stats_snapshot_take(d, &snapshot))
		return error_response("vgpud is out of memory");
	response = ok_response();
	if (only) {
		for (i = 0; i < snapshot.vm_count; i++)
			if (vgpud_vm_snapshot_matches(&snapshot.vms[i], only) &&
			    (!peer || peer->operator || snapshot.vms[i].owner_uid == peer->uid))
				break;
		if (i < snapshot.vm_count) {
			json_object_object_add(response, "vm",
			                       vm_json(&snapshot, &snapshot.vms[i], detail));
		} else {
			json_object_put(response);
			response = error_response("no VM named '%s' is attached; `vgpuctl status` "
			                          "lists them", only);
		}
		vgpud_stats_snapshot_free(&snapshot);
		return response;
	}
	vms = json_object_new_array();
	for (i = 0; i < snapshot.vm_count; i++)
		if (!peer || peer->operator || snapshot.vms[i].owner_uid == peer->uid)
			json_object_array_add(vms, vm_json(&snapshot, &snapshot.vms[i], detail));
	if (!peer || peer->operator)
		json_object_object_add(response, "gpu", gpu_json(&snapshot));
	json_object_object_add(response, "vms", vms);
	vgpud_stats_snapshot_free(&snapshot);
	return response;
}

static struct json_object *cmd_set_weight(struct vgpud *d, struct json_object *req)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const char *name = get_string(req, "vm");
	struct vgpud_device *dev;
	struct json_object *response;
	uint64_t weight;
	int err;

	if (!name || get_u64(req, "weight", false, &weight) != 1)
		return error_response("set-weight needs \"vm\" (a name) and \"weight\" (1..%u)",
		                      VGPU_CORE_WEIGHT_MAX);
	if (!weight || weight > VGPU_CORE_WEIGHT_MAX)
		return error_response("weight %llu is out of range: use 1..%u",
		                      (unsigned long long)weight, VGPU_CORE_WEIGHT_MAX);
	vgpu_mutex_lock(&d->registry.lock);
	dev = vgpud_registry_find_locked(&d->registry, name);
	if (!dev) {
		vgpu_mutex_unlock(&d->registry.lock);
		return error_response("no VM named '%s' is attached; `vgpuctl status` lists them",
		                      name);
	}
	err = vgpu_core_set_weight(dev->vm, (uint32_t)weight, &error);
	if (!err)
		atomic_store(&dev->weight_overridden, true);
	vgpu_mutex_unlock(&d->registry.lock);
	if (err)
		return error_response("cannot set the weight of '%s': %s", name,
		                      vgpu_error_msg(&error));
	log_info("VM '%s': weight set to %llu", name, (unsigned long long)weight);
	response = ok_response();
	add_str(response, "vm", name);
	add_u64(response, "weight", weight);
	return response;
}

static struct json_object *cmd_set_scheduler(struct vgpud *d, struct json_object *req)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const char *name = get_string(req, "vm"), *mode = get_string(req, "mode");
	struct vgpud_device *dev;
	struct json_object *response;
	int err;

	if (!name || !mode)
		return error_response("set-scheduler needs \"vm\" (a name) and \"mode\" "
		                      "(best-effort, equal-share, weighted or fixed-share)");
	if (!vgpu_core_scheduler_known(mode))
		return error_response("unknown scheduler '%s': use best-effort, equal-share, "
		                      "weighted or fixed-share", mode);
	vgpu_mutex_lock(&d->registry.lock);
	dev = vgpud_registry_find_locked(&d->registry, name);
	if (!dev) {
		vgpu_mutex_unlock(&d->registry.lock);
		return error_response("no VM named '%s' is attached; `vgpuctl status` lists them",
		                      name);
	}
	err = vgpu_core_vm_set_scheduler(dev->vm, mode, &error);
	vgpu_mutex_unlock(&d->registry.lock);
	if (err)
		return error_response("cannot set the scheduler of '%s': %s", name,
		                      vgpu_error_msg(&error));
	log_info("VM '%s': scheduler set to %s", name, mode);
	response = ok_response();
	add_str(response, "vm", name);
	add_str(response, "mode", mode);
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
	if (d->mdev) /* the mdev type's description and available_instances */
		mdev_host_profile_changed(d->mdev, name);
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
	vgpu_mutex_lock(&d->registry.lock);
	add_u64(response, "vms", d->registry.count);
	add_u64(response, "attached_total", d->registry.attached_total);
	add_u64(response, "detached_total", d->registry.detached_total);
	vgpu_mutex_unlock(&d->registry.lock);
	add_u64(response, "connections", d->local ? local_server_connections(d->local) : 0);
	add_u64(response, "reloads", d->reloads);
	if (d->metrics)
		add_str(response, "metrics_url", metrics_http_url(d->metrics));
	else
		json_object_object_add(response, "metrics_url", NULL); /* metrics = off */
	pthread_mutex_lock(&d->routes.lock);
	add_u64(response, "fence_events", d->routes.fences);
	add_u64(response, "channel_error_events", d->routes.errors);
	pthread_mutex_unlock(&d->routes.lock);
	if (json_object_object_get_ex(req, "invariants", &check) && json_object_get_boolean(check)) {
		struct vgpu_error why = VGPU_ERROR_INIT;

		if (vgpu_core_check_invariants(d->core, &why)) {
			add_str(response, "invariants", vgpu_error_msg(&why));
			add_str(response, "status", "invariants violated");
		} else {
			add_str(response, "invariants", "ok");
		}
	}
	return response;
}

/* The Prometheus text of the metrics endpoint, for those who read it
 * without HTTP (vgpuctl metrics; node_exporter's textfile collector). */
static struct json_object *cmd_metrics(struct vgpud *d)
{
	struct json_object *response;
	size_t len = 0;
	char *text = vgpud_metrics_text(d, &len);

	if (!text)
		return error_response("vgpud is out of memory");
	response = ok_response();
	add_str(response, "content_type", VGPUD_METRICS_CONTENT_TYPE);
	json_object_object_add(response, "text", json_object_new_string_len(text, (int)len));
	free(text);
	return response;
}

static struct json_object *cmd_reload(struct vgpud *d)
{
	struct vgpu_error why = VGPU_ERROR_INIT;

	if (vgpud_reload_profiles(d, &why)) {
		log_error("reload failed, profiles unchanged: %s", vgpu_error_msg(&why));
		return error_response("reload failed, the profiles are unchanged: %s",
		                      vgpu_error_msg(&why));
	}
	return cmd_types(d);
}

/* save: a stop-and-copy of the VM into a new file (its guest must be
 * stopped); the VM stays frozen here until its frontend detaches. */
static struct json_object *cmd_save(struct vgpud *d, struct json_object *req)
{
	const char *vm = get_string(req, "vm"), *file = get_string(req, "file");
	struct migrate_export *e;
	struct migrate_result r;
	struct json_object *response;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int fd, err;

	if (!vm || !file)
		return error_response("save needs \"vm\" and \"file\" (a new file)");
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_response("cannot create '%s': %s", file, strerror(errno));
	err = migrate_export_start(d, vm, fd, -1, false, &e, &why);
	if (!err)
		err = migrate_export_finish(e, &r, &why);
	if (!err && fsync(fd) < 0)
		err = vgpu_error_set(&why, -errno, "cannot write '%s': %s", file,
		                     strerror(errno));
	close(fd);
	if (err) {
		unlink(file);
		return error_response("%s", vgpu_error_msg(&why));
	}
	response = ok_response();
	add_u64(response, "bytes", r.bytes_sent);
	add_u64(response, "downtime_us", r.downtime_ns / 1000);
	return response;
}

/* restore: import a saved VM; it waits parked for its frontend. */
static struct json_object *cmd_restore(struct vgpud *d, struct json_object *req)
{
	const char *file = get_string(req, "file");
	struct vgpu_error why = VGPU_ERROR_INIT;
	int fd, err;

	if (!file)
		return error_response("restore needs \"file\" (written by save)");
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_response("cannot open '%s': %s", file, strerror(errno));
	err = migrate_import(d, fd, 0, &why);
	close(fd);
	if (err)
		return error_response("%s", vgpu_error_msg(&why));
	return ok_response();
}

/* What a tenant (a peer that is not an operator) may ask: health without
 * the invariant check, and list/status/stats of its own VMs. */
static struct json_object *tenant_refusal(const char *command, struct json_object *req)
{
	struct json_object *check;

	if (!strcmp(command, "list") || !strcmp(command, "status") || !strcmp(command, "stats"))
		return NULL;
	if (!strcmp(command, "health") &&
	    !(json_object_object_get_ex(req, "invariants", &check) &&
	      json_object_get_boolean(check)))
		return NULL;
	return error_response("'%s'%s is for operators only (root, vgpud's user or a member of "
	                      "operator_group); tenants may use health, list/status and stats "
	                      "of their own VMs", command,
	                      !strcmp(command, "health") ? " with the invariant check" : "");
}

static struct json_object *dispatch(struct vgpud *d, struct json_object *req,
                                    const struct vgpud_control_peer *peer)
{
	const char *command = get_string(req, "command");
	struct json_object *refusal;

	if (!command)
		return error_response("a request is a JSON object with a \"command\": one of "
		                      "health, list, stats, set-weight, set-scheduler, types, "
		                      "set-profile, config, metrics, reload");
	if (peer && !peer->operator && (refusal = tenant_refusal(command, req)))
		return refusal;
	if (!strcmp(command, "health"))
		return cmd_health(d, req);
	if (!strcmp(command, "list") || !strcmp(command, "status"))
		return cmd_list(d, false, NULL, peer);
	if (!strcmp(command, "stats")) {
		const char *name = get_string(req, "vm");

		return name ? cmd_list(d, true, name, peer)
		            : error_response("stats needs \"vm\": the name of an attached VM");
	}
	if (!strcmp(command, "set-weight"))
		return cmd_set_weight(d, req);
	if (!strcmp(command, "set-scheduler"))
		return cmd_set_scheduler(d, req);
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
	if (!strcmp(command, "metrics"))
		return cmd_metrics(d);
	if (!strcmp(command, "reload"))
		return cmd_reload(d);
	if (!strcmp(command, "save"))
		return cmd_save(d, req);
	if (!strcmp(command, "restore"))
		return cmd_restore(d, req);
	return error_response("unknown command '%s': use health, list, stats, set-weight, "
	                      "set-scheduler, types, set-profile, config, metrics or reload",
	                      command);
}

char *vgpud_control_handle(struct vgpud *d, const char *request,
                           const struct vgpud_control_peer *peer)
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
		response = dispatch(d, req, peer);
	json_object_put(req);
	text = strdup(json_object_to_json_string_ext(response, JSON_C_TO_STRING_PLAIN));
	json_object_put(response);
	return text;
}

char *vgpud_control_handler(void *ctx, const char *request,
                            const struct vgpud_control_peer *peer)
{
	return vgpud_control_handle(ctx, request, peer);
}
