/* SPDX-License-Identifier: MIT */
/*
 * daemon.h - one vgpud: the GPU (simgpu behind the HAL), the GPUswap core,
 * the vGPU profiles, the attached VMs' devices, and the sockets (local
 * transport for tenants, control socket for vgpuctl).
 *
 * Threads: the thread calling vgpud_run runs the event loop (sd-event):
 * signals, vgpud_stop's eventfd, the tenant socket and its connections
 * (state machines), the control socket and its connections, the metrics
 * endpoint (libmicrohttpd in external epoll mode), with mdev the module's
 * events and the statistics timer. Worker threads exist only where
 * something waits for the core or a tenant: the daemon's worker pool
 * (work_pool.h: a tenant's attach, export, idle check and detach; mdev
 * statistics, which take the registry lock), the control socket's worker
 * (its requests), per attached VM the device's mailbox worker and (mdev)
 * the transport's worker; plus the core's return thread and the HAL's
 * threads.
 *
 * Lock order (outer first): registry -> the core's allocation lock ->
 * event routes. Profiles and per-device locks are leaves taken alone.
 * Nothing that waits for a guest (window swaps) holds the registry lock.
 *
 * Tests run a vgpud in-process: vgpud_create, vgpud_start (a thread running
 * vgpud_run), talk to its sockets, vgpud_stop, vgpud_destroy.
 */
#ifndef VGPUD_DAEMON_H
#define VGPUD_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <systemd/sd-event.h>

#include "vgpu/core.h"
#include "vgpu/error.h"
#include "vgpu/hal.h"

#include "config.h"
#include "event_routes.h"
#include "profiles.h"
#include "registry.h"

struct local_server;
struct control_server;
struct mdev_host;
struct metrics_http;
struct work_pool;

struct vgpud {
	struct vgpud_config config;  /* as started (profiles: see profiles) */
	pthread_mutex_t config_lock; /* config_file / reload */
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	struct vgpu_core *core;
	struct vgpud_profiles profiles;
	struct vgpud_registry registry;
	struct vgpud_event_routes routes;
	struct local_server *local;
	struct control_server *control;
	struct mdev_host *mdev; /* NULL: mdev transport off or absent */
	struct metrics_http *metrics; /* NULL: [daemon] metrics = off */

	sd_event *loop; /* the sockets, signals, timers: vgpud_run's thread */
	struct work_pool *pool; /* what waits off the loop; completes on it */
	int stop_fd;    /* eventfd: vgpud_stop */
	pthread_t thread;
	bool thread_started;
	struct timespec started;
	_Atomic uint64_t reloads;
};

/*
 * Create the GPU, the core, both listening sockets, (config metrics) the
 * metrics endpoint and (config mdev, see config.h) the mdev transport on
 * vgpu_mdev.ko's control device. On failure returns a negative errno after
 * writing what was wrong and what to do into error. signals: vgpud_run also
 * handles SIGTERM/SIGINT (stop) and SIGHUP (reload), which the caller has
 * blocked in every thread (so create before starting any).
 */
int vgpud_create(const struct vgpud_config *config, bool signals, struct vgpud **out,
                 struct vgpu_error *error);

/* Serve until vgpud_stop or a stop signal. Returns 0. */
int vgpud_run(struct vgpud *d);

/* vgpud_run on a new thread (tests). */
int vgpud_start(struct vgpud *d);

/* Ask vgpud_run to return (thread-safe, async-signal-safe); joins the
 * thread of vgpud_start if there is one. */
void vgpud_stop(struct vgpud *d);

/* Detach every VM, close the sockets (removing their files) and the mdev
 * control device, destroy the core and the GPU. */
void vgpud_destroy(struct vgpud *d);

/* SIGHUP: reload the [profile] sections of the configuration file and apply
 * new weights to running VMs that have no weight of their own. 0, or a
 * negative errno after writing what was wrong into error (nothing changed
 * then). */
int vgpud_reload_profiles(struct vgpud *d, struct vgpu_error *error);

/* Apply a profile's weight to its running VMs (except set-weight ones). */
void vgpud_apply_profile_weight(struct vgpud *d, const char *profile, uint32_t weight);

#endif /* VGPUD_DAEMON_H */
