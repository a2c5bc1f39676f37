// SPDX-License-Identifier: MIT
/*
 * mdev_server.c - the mdev transport's server, from start to end: open
 * vgpu_mdev.ko's control device, agree on the versions (control protocol,
 * event size, device ABI), register the types (mdev_types.c), watch its
 * events on vgpud's loop (transport_mdev.c); at the end detach every VM
 * and close the device. Also the per-mdev look-ups of transport_mdev.h. See
 * transport_mdev_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/mdev_control.h"
#include "vgpu/error.h"

#include "log.h"
#include "transport_mdev.h"
#include "transport_mdev_internal.h"

static int open_control(const char *path, int *fd, struct vgpu_error *error)
{
	int err;

	*fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (*fd >= 0)
		return 0;
	err = -errno;
	return vgpu_error_set(error, err, "cannot open %s: %s%s", path, strerror(-err),
	                      err == -ENOENT ? " (load vgpu_mdev.ko)" :
	                      err == -EBUSY ? " (another vgpud is connected)" : "");
}

/* The module's versions against ours. */
static int check_version(struct mdev_server *s, const char *path, struct vgpu_error *error)
{
	struct vgpu_mdev_version version = { 0 };

	if (!mdev_control(s, VGPU_MDEV_GET_VERSION, &version) &&
	    version.version == VGPU_MDEV_CONTROL_VERSION &&
	    version.event_size == sizeof(struct vgpu_mdev_event) &&
	    version.abi_version >> 16 == VGPU_ABI_VERSION_MAJOR)
		return 0;
	return vgpu_error_set(error, -EPROTO,
	                      "%s speaks control version %u / device ABI %#x, vgpud %u / %#x: "
	                      "install matching vgpu_mdev.ko and vgpud", path, version.version,
	                      version.abi_version, VGPU_MDEV_CONTROL_VERSION, VGPU_ABI_VERSION);
}

static int watch_events(struct mdev_server *s, sd_event *loop, struct vgpu_error *error)
{
	int err = sd_event_add_io(loop, &s->events, s->fd, EPOLLIN, mdev_on_events, s);

	if (err < 0)
		vgpu_error_set(error, err, "cannot watch the control device's events: %s",
		               strerror(-err));
	return err < 0 ? err : 0;
}

int mdev_server_create(sd_event *loop, const struct mdev_server_config *config,
                       struct mdev_server **out, struct vgpu_error *error)
{
	const char *path = config->path ? config->path : VGPU_MDEV_CONTROL_PATH;
	struct mdev_server *s;
	int err;

	if (!config->profile_count)
		return vgpu_error_set(error, -EINVAL, "no profile to register as an mdev type");
	s = calloc(1, sizeof(*s));
	if (!s)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	s->hooks = config->hooks;
	s->control_ioctl = config->control_ioctl;
	s->control_ctx = config->control_ctx;
	pthread_mutex_init(&s->lock, NULL);
	err = open_control(path, &s->fd, error);
	if (err)
		goto fail;
	err = check_version(s, path, error);
	if (!err)
		err = mdev_types_register(s, config->profiles, config->profile_count, error);
	if (!err)
		err = watch_events(s, loop, error);
	if (err)
		goto fail_fd;
	log_info("mdev: %u profile(s) registered as mdev types of /sys/class/mdev_bus/%s",
	         s->type_count, VGPU_MDEV_PARENT_NAME);
	*out = s;
	return 0;

fail_fd:
	close(s->fd);
fail:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}

int mdev_server_set_stats(struct mdev_server *s, const char *uuid, struct vgpu_mdev_stats *st)
{
	struct mdev_vgpu *v;
	int err = -ENOENT;

	pthread_mutex_lock(&s->lock);
	for (v = s->vgpus; v; v = v->next)
		if (!strcmp(v->uuid, uuid))
			break;
	if (v) {
		st->device_id = v->id;
		err = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return err ? err : mdev_control(s, VGPU_MDEV_SET_STATS, st);
}

unsigned mdev_server_devices(struct mdev_server *server)
{
	struct mdev_vgpu *v;
	unsigned n = 0;

	pthread_mutex_lock(&server->lock);
	for (v = server->vgpus; v; v = v->next)
		n++;
	pthread_mutex_unlock(&server->lock);
	return n;
}

/* Detach every attached VM (their devices report BACKEND_GONE until QEMU
 * closes them), then close the control device: the module unregisters the
 * parent if no mdev exists. */
void mdev_server_destroy(struct mdev_server *s)
{
	if (!s)
		return;
	sd_event_source_disable_unref(s->events); /* the loop has stopped */
	for (struct mdev_vgpu *v = s->vgpus; v; v = v->next)
		mdev_queue_job(v, JOB_STOP, 0);
	while (s->vgpus) {
		struct mdev_vgpu *v = s->vgpus;

		pthread_join(v->worker, NULL);
		s->vgpus = v->next;
		mdev_vgpu_free(v);
	}
	mdev_reap_retired(s, true);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
