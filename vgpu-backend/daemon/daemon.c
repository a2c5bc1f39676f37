// SPDX-License-Identifier: MIT
/* daemon.c - one vgpud: GPU, core, profiles, sockets, see daemon.h. */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/cudagpu.h"
#include "vgpu/error.h"
#include "vgpu/hal_open.h"
#include "vgpu/simgpu.h"
#include "vgpu/util.h"

#include "control_commands.h"
#include "control_server.h"
#include "device.h"
#include "listen_address.h"
#include "local_server.h"
#include "log.h"
#include "metrics_http.h"
#include "mdev_host.h"
#include "work_pool.h"

static int create_gpu(struct vgpud *d, struct vgpu_error *error)
{
	struct vgpu_hal_spec spec;
	char what[384], name[32];
	int err;

	err = vgpu_hal_spec_parse(d->config.gpu_name, &spec, error);
	if (err)
		return err; /* the HAL's sentence */
	if (vgpud_config_cuda_isolation(&d->config, &spec))
		return vgpu_error_set(error, -EINVAL,
		                      "[cuda] isolation = '%s': expected none or process",
		                      d->config.cuda_isolation);
	if (spec.backend == VGPU_HAL_BACKEND_SIMGPU && !d->config.gpu.vram_bytes) {
		struct simgpu_config defaults;

		simgpu_config_defaults(&defaults);
		d->config.gpu.vram_bytes = defaults.vram_bytes;
	}
	err = vgpu_hal_open(&spec, &d->config.gpu, d->config.gpu.vram_bytes, &d->hal, error);
	if (err && spec.backend == VGPU_HAL_BACKEND_SIMGPU)
		vgpu_error_set(error, err, "cannot create the software GPU (vram %llu bytes): %s; "
		               "check the [simgpu] settings (vram: a multiple of 64K, at least "
		               "16M)",
		               (unsigned long long)d->config.gpu.vram_bytes, strerror(-err));
	else if (err)
		vgpu_error_prefix(error, "cannot open GPU %s: ",
		                  vgpu_hal_spec_format(&spec, name, sizeof(name)));
	if (err)
		return err;
	vgpu_hal_get_caps(d->hal, &d->caps);
	if (spec.backend == VGPU_HAL_BACKEND_CUDA) {
		d->config.gpu.vram_bytes = d->caps.vram_bytes;
		log_info("GPU %s: %s", vgpu_hal_spec_format(&spec, name, sizeof(name)),
		         cudagpu_describe(d->hal, what, sizeof(what)));
	}
	return 0;
}

static int create_core(struct vgpud *d, struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct vgpu_core_config config;
	int err;

	vgpu_core_config_defaults(&config);
	config.chunk_bytes = d->config.chunk_bytes;
	config.policy = d->config.policy;
	config.seed = d->config.seed;
	config.whole_buffers = d->config.whole_buffer_eviction;
	config.host_budget_bytes = d->config.host_budget_bytes; /* auto resolved */
	config.host_cache_bytes = d->config.host_cache_bytes;
	config.return_interval_ms = d->config.return_interval_ms;
	config.drain_timeout_ms = d->config.drain_timeout_ms;
	config.gpu_accounting = d->config.gpu_accounting;
	config.accounting_mode = d->config.accounting_mode;
	config.accounting_poll_us = d->config.accounting_poll_us;
	config.accounting_nonpoll_us = d->config.accounting_nonpoll_us;
	config.accounting_always_poll = d->config.accounting_always_poll;
	config.accounting_pin = d->config.accounting_cpu >= 0;
	config.accounting_cpu = config.accounting_pin ? (uint32_t)d->config.accounting_cpu : 0;
	config.on_fence = vgpud_event_on_fence;
	config.on_channel_error = vgpud_event_on_channel_error;
	config.event_ctx = &d->routes;
	err = vgpu_core_create(d->hal, &config, &d->core, &core_error);
	if (err)
		vgpu_error_set(error, err, "cannot start the GPUswap core: %s",
		               vgpu_error_msg(&core_error));
	return err;
}

/* The mdev transport (config mdev = auto|on|off): VMs of stock QEMU with
 * -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/<uuid>. */
static int start_mdev(struct vgpud *d, struct vgpu_error *error)
{
	struct mdev_host_config config = {
		.path = d->config.mdev_device,
		.libvirt_uri = d->config.libvirt_uri,
	};
	struct vgpu_error mdev_error = VGPU_ERROR_INIT;
	int err;

	if (d->config.mdev_mode == VGPUD_MDEV_OFF)
		return 0;
	if (d->config.mdev_mode == VGPUD_MDEV_AUTO && access(d->config.mdev_device, F_OK)) {
		log_info("mdev transport not started: %s does not exist (load vgpu_mdev.ko to "
		         "serve VFIO mdev VMs; mdev = off silences this)", d->config.mdev_device);
		return 0;
	}
	err = mdev_host_create(d, d->loop, &config, &d->mdev, &mdev_error);
	if (err)
		vgpu_error_set(error, err,
		               "the mdev transport on %s did not start: %s; fix that, or run "
		               "without it: --mdev off", d->config.mdev_device,
		               vgpu_error_msg(&mdev_error));
	return err;
}

/* The local socket's attach: the profiles its tenants may ask for
 * ([socket] allowed_profiles), then the device model's attach. */
static int attach_local_tenant(void *ctx, struct vgpu_transport *t,
                               const struct vgpu_attach_params *params,
                               struct vgpud_device **out, struct vgpu_error *error)
{
	struct vgpud *d = ctx;

	if (!vgpud_config_profile_allowed(&d->config, params->profile))
		return vgpu_error_set(error, -EPERM,
		                      "profile '%s' is not allowed on this socket; ask for one of "
		                      "allowed_profiles ([socket], now '%s')",
		                      params->profile && params->profile[0] ? params->profile
		                      : d->config.default_profile,
		                      d->config.allowed_profiles[0] ? d->config.allowed_profiles
		                      : d->config.default_profile);
	return vgpu_device_attach_host(d, t, params, out, error);
}

/* The Prometheus endpoint (config metrics = ADDRESS:PORT | off). */
static int start_metrics(struct vgpud *d, struct vgpu_error *error)
{
	struct vgpud_listen_address address;

	if (vgpud_listen_address_parse(d->config.metrics, &address, error))
		return vgpu_error_prefix(error, "metrics = '%s': ", d->config.metrics) ?: -EINVAL;
	if (!address.enabled)
		return 0;
	return metrics_http_create(d, d->loop, &address, &d->metrics, error);
}

/* The tenant socket (local transport) and the control socket. */
static int start_sockets(struct vgpud *d, struct vgpu_error *error)
{
	struct local_server_config local_config = {
		.path = d->config.socket_path,
		.group = d->config.socket_group,
		.attach_timeout_ms = d->config.attach_timeout_ms,
		.swap_timeout_ms = d->config.swap_timeout_ms,
		.idle_timeout_ms = d->config.idle_timeout_ms,
		.max_connections_per_uid = d->config.max_connections_per_uid,
		.host = { .attach = attach_local_tenant, .ctx = d },
		.pool = d->pool,
	};
	struct control_server_config control_config = {
		.path = d->config.control_path,
		.group = d->config.socket_group,
		.operator_group = d->config.operator_group,
		.idle_timeout_ms = d->config.control_idle_timeout_ms,
		.max_connections_per_uid = d->config.control_max_connections_per_uid,
		.handler = vgpud_control_handler,
		.handler_ctx = d,
	};
	int err = local_server_create(d->loop, &local_config, &d->local, error);

	if (!err)
		err = control_server_create(d->loop, &control_config, &d->control, error);
	return err;
}

static void log_ready(struct vgpud *d)
{
	char budget[32];

	if (d->config.host_budget_bytes)
		snprintf(budget, sizeof(budget), "%llu MiB",
		         (unsigned long long)(d->config.host_budget_bytes >> 20));
	else
		snprintf(budget, sizeof(budget), "unlimited");
	log_info("vgpud %s ready: %s with %llu MiB VRAM, %llu KiB chunks, policy %s, host "
	         "budget %s; tenants on %s%s%s, control on %s", VGPUD_VERSION, d->caps.name,
	         (unsigned long long)(d->caps.vram_bytes >> 20),
	         (unsigned long long)(d->config.chunk_bytes >> 10),
	         vgpu_core_policy_name(d->core),
	         budget, d->config.socket_path,
	         d->mdev ? " and mdevs through " : "", d->mdev ? d->config.mdev_device : "",
	         d->config.control_path);
}

static int on_stop(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	(void)fd, (void)revents, (void)userdata;
	return sd_event_exit(sd_event_source_get_event(source), 0);
}

static int on_signal(sd_event_source *source, const struct signalfd_siginfo *info,
                     void *userdata)
{
	struct vgpud *d = userdata;

	if (info->ssi_signo == SIGHUP) {
		struct vgpu_error why = VGPU_ERROR_INIT;

		log_info("SIGHUP: reloading profiles");
		if (vgpud_reload_profiles(d, &why))
			log_error("reload failed, profiles unchanged: %s", vgpu_error_msg(&why));
		return 0;
	}
	log_info("%s: shutting down", strsignal((int)info->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(source), 0);
}

/* The event loop: vgpud_stop's eventfd, the signals (signals: they are
 * blocked in every thread), the unit's watchdog when systemd asks for it. */
static int create_loop(struct vgpud *d, bool signals, struct vgpu_error *error)
{
	static const int numbers[] = { SIGTERM, SIGINT, SIGHUP };
	int err;

	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0) {
		err = -errno;
		return vgpu_error_set(error, err, "eventfd: %s", strerror(-err));
	}
	err = sd_event_new(&d->loop);
	if (err >= 0)
		err = sd_event_add_io(d->loop, NULL, d->stop_fd, EPOLLIN, on_stop, d);
	for (size_t i = 0; signals && err >= 0 && i < sizeof(numbers) / sizeof(numbers[0]); i++)
		err = sd_event_add_signal(d->loop, NULL, numbers[i], on_signal, d);
	if (err >= 0)
		err = sd_event_set_watchdog(d->loop, true);
	if (err >= 0)
		err = work_pool_create(d->loop, &d->pool);
	if (err < 0)
		vgpu_error_set(error, err, "cannot create the event loop: %s", strerror(-err));
	return err < 0 ? err : 0;
}

int vgpud_create(const struct vgpud_config *config, bool signals, struct vgpud **out,
                 struct vgpu_error *error)
{
	struct vgpud *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	d->config = *config;
	d->config.host_budget_bytes = vgpud_config_host_budget(config); /* auto: half the RAM */
	pthread_mutex_init(&d->config_lock, NULL);
	vgpud_log_set_level((enum vgpud_log_level)config->log_level);
	vgpud_profiles_init(&d->profiles, config->profiles, config->profile_count,
	                    config->default_profile);
	vgpud_registry_init(&d->registry);
	clock_gettime(CLOCK_MONOTONIC, &d->started);
	d->stop_fd = -1;
	err = create_loop(d, signals, error);
	if (err)
		goto fail;

	err = create_gpu(d, error);
	if (err)
		goto fail;
	err = vgpud_event_routes_init(&d->routes, d->caps.max_channels);
	if (err) {
		vgpu_error_set(error, err, "cannot route the GPU's events: %s", strerror(-err));
		goto fail;
	}
	err = create_core(d, error);
	if (err)
		goto fail;

	err = start_sockets(d, error);
	if (err)
		goto fail;
	err = start_metrics(d, error);
	if (err)
		goto fail;
	err = start_mdev(d, error);
	if (err)
		goto fail;
	log_ready(d);
	*out = d;
	return 0;
fail:
	vgpud_destroy(d);
	return err;
}

int vgpud_run(struct vgpud *d)
{
	int err = sd_event_loop(d->loop);

	if (err < 0)
		log_error("the event loop failed: %s", strerror(-err));
	return 0;
}

static void *run_thread(void *arg)
{
	vgpud_run(arg);
	return NULL;
}

int vgpud_start(struct vgpud *d)
{
	int err = pthread_create(&d->thread, NULL, run_thread, d);

	if (err)
		return -err;
	d->thread_started = true;
	return 0;
}

void vgpud_stop(struct vgpud *d)
{
	uint64_t one = 1;

	/* Async-signal-safe, so nothing is logged: the eventfd is non-blocking
	 * and a write fails only when its counter is full (EAGAIN), which
	 * wakes vgpud_run all the same. */
	(void)!write(d->stop_fd, &one, sizeof(one));
	if (d->thread_started) {
		pthread_join(d->thread, NULL);
		d->thread_started = false;
	}
}

void vgpud_destroy(struct vgpud *d)
{
	if (!d)
		return;
	if (d->thread_started)
		vgpud_stop(d);
	/* No wait on a tenant may hold up the shutdown: a relocation in
	 * progress kills what has not drained instead of waiting for it. */
	vgpu_core_stop(d->core);
	metrics_http_destroy(d->metrics);
	d->metrics = NULL;
	control_server_destroy(d->control);
	d->control = NULL;
	/* Both detach every VM of theirs: memory, channels and mappings go back. */
	mdev_host_destroy(d->mdev);
	d->mdev = NULL;
	local_server_destroy(d->local);
	d->local = NULL;
	work_pool_destroy(d->pool);
	d->pool = NULL;
	if (d->core)
		vgpu_core_destroy(d->core);
	if (d->routes.routes)
		vgpud_event_routes_fini(&d->routes);
	if (d->hal)
		vgpu_hal_destroy(d->hal);
	sd_event_unref(d->loop);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	vgpud_registry_fini(&d->registry);
	vgpud_profiles_fini(&d->profiles);
	pthread_mutex_destroy(&d->config_lock);
	free(d);
}

void vgpud_apply_profile_weight(struct vgpud *d, const char *profile, uint32_t weight)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpud_device *dev;

	vgpu_mutex_lock(&d->registry.lock);
	vgpud_registry_for_each_locked(&d->registry, dev)
		if (!strcmp(dev->profile, profile) && !atomic_load(&dev->weight_overridden) &&
		    vgpu_core_set_weight(dev->vm, weight, &error))
			log_warn("VM '%s' keeps its weight: %s", dev->name, vgpu_error_msg(&error));
	vgpu_mutex_unlock(&d->registry.lock);
}

int vgpud_reload_profiles(struct vgpud *d, struct vgpu_error *error)
{
	struct vgpud_profile_spec specs[VGPUD_MAX_PROFILES];
	size_t count = 0, i;
	int err;

	pthread_mutex_lock(&d->config_lock);
	if (!d->config.config_file[0]) {
		pthread_mutex_unlock(&d->config_lock);
		return vgpu_error_set(error, -ENOENT,
		                      "vgpud was started without a configuration file; nothing to "
		                      "reload (start it with --config FILE)");
	}
	err = vgpud_config_load_profiles(d->config.config_file, specs, &count, error);
	if (!err && !count) {
		/* as at startup: without [profile] sections, the built-in ones */
		struct vgpud_config defaults;

		vgpud_config_defaults(&defaults);
		memcpy(specs, defaults.profiles, defaults.profile_count * sizeof(specs[0]));
		count = defaults.profile_count;
	}
	if (!err)
		err = vgpud_config_apply_profile_flags(&d->config, specs, &count, error);
	if (err) {
		pthread_mutex_unlock(&d->config_lock);
		return err;
	}
	vgpud_profiles_replace(&d->profiles, specs, count);
	d->reloads++;
	pthread_mutex_unlock(&d->config_lock);
	for (i = 0; i < count; i++) {
		vgpud_apply_profile_weight(d, specs[i].name, specs[i].weight);
		if (d->mdev && !mdev_host_profile_changed(d->mdev, specs[i].name))
			log_warn("reload: profile '%s' is not an mdev type yet; restart vgpud to "
			         "offer it to VFIO VMs", specs[i].name);
	}
	log_info("reloaded %zu profiles from %s", count, d->config.config_file);
	return 0;
}
