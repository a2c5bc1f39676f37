// SPDX-License-Identifier: MIT
/*
 * mdev_worker.c - an mdev: its record (made at CREATE or EXISTS, retired
 * at REMOVE, freed once its worker has ended) and its worker thread, which
 * runs the module's OPEN, CLOSE, RESET and REMOVE for that mdev in the
 * order they came (the module sends one request per mdev at a time and
 * waits for the answer), attaching and detaching its device through the
 * owner's hooks. These wait for the core; the event thread
 * (transport_mdev.c) never does, so one VM's slow reset delays no other
 * VM. See transport_mdev_internal.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/error.h"

#include "transport.h"

#include "log.h"
#include "transport_mdev_internal.h"


/* Attach the VM and make the device usable. 0 or a negative errno + why.
 * reset: the same VM again (VFIO_DEVICE_RESET). */
static int attach(struct mdev_vgpu *v, bool reset, struct vgpu_error *error)
{
	struct mdev_server *s = v->server;
	struct vgpu_bar2_segment seg;
	struct vgpud_device *dev;
	int err;

	err = s->hooks.attach(s->hooks.ctx, &v->base, s->types[v->type_index].name, v->uuid, reset,
	                      &dev, error);
	if (err)
		return err;
	atomic_store(&v->irq_device, dev);
	vgpu_device_mailbox_segment(dev, &seg);
	err = v->base.ops->map_region(&v->base, &seg);
	if (err)
		vgpu_error_set(error, err, "cannot map the mailbox into the VM: %s",
		               strerror(-err));
	else if ((err = mdev_push_registers(v, dev)))
		vgpu_error_set(error, err, "cannot set the device's registers: %s", strerror(-err));
	if (err) {
		atomic_store(&v->irq_device, NULL);
		vgpu_device_detach(dev);
		return err;
	}
	pthread_mutex_lock(&v->lock);
	v->device = dev;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static void detach(struct mdev_vgpu *v)
{
	struct vgpud_device *dev;

	pthread_mutex_lock(&v->lock);
	dev = v->device;
	v->device = NULL; /* doorbells find no device from now on */
	pthread_mutex_unlock(&v->lock);
	if (!dev)
		return;
	vgpu_device_detach(dev);
	atomic_store(&v->irq_device, NULL);
	mdev_push_gone(v);
}

/* Run one job; true when it was the worker's last. */
static bool run_job(struct mdev_vgpu *v, const struct mdev_job *job)
{
	struct mdev_server *s = v->server;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int err = 0;

	switch (job->type) {
	case VGPU_MDEV_EVENT_OPEN:
		detach(v); /* an OPEN without CLOSE: the module says it cannot happen */
		err = attach(v, false, &why);
		mdev_reply(s, v->id, job->seq, err, vgpu_error_is_set(&why) ? why.msg : NULL);
		return false;
	case VGPU_MDEV_EVENT_CLOSE:
		detach(v);
		mdev_reply(s, v->id, job->seq, 0, NULL);
		return false;
	case VGPU_MDEV_EVENT_RESET:
		detach(v);
		err = attach(v, true, &why);
		if (err)
			log_warn("mdev %s: reset: %s", v->uuid, vgpu_error_msg(&why));
		mdev_reply(s, v->id, job->seq, err, vgpu_error_is_set(&why) ? why.msg : NULL);
		return false;
	case VGPU_MDEV_EVENT_REMOVE:
		detach(v); /* REMOVE without CLOSE: the module says it cannot happen */
		s->hooks.remove(s->hooks.ctx, s->types[v->type_index].name, v->uuid);
		mdev_push_available(s, v->type_index);
		return true;
	default: /* JOB_STOP */
		detach(v);
		s->hooks.remove(s->hooks.ctx, s->types[v->type_index].name, v->uuid);
		return true;
	}
}

static void *mdev_worker_main(void *arg)
{
	struct mdev_vgpu *v = arg;
	bool last = false;

	while (!last) {
		struct mdev_job *job;

		pthread_mutex_lock(&v->lock);
		while (!v->jobs)
			pthread_cond_wait(&v->wake, &v->lock);
		job = v->jobs;
		v->jobs = job->next;
		if (!v->jobs)
			v->jobs_tail = &v->jobs;
		pthread_mutex_unlock(&v->lock);
		last = run_job(v, job);
		if (job != &v->last_job)
			free(job);
	}
	atomic_store(&v->finished, true);
	return NULL;
}

/* Hand a request to the mdev's worker: OPEN, CLOSE, RESET; REMOVE and
 * JOB_STOP (the last, which cannot fail). 0 or -ENOMEM. */
int mdev_queue_job(struct mdev_vgpu *v, uint32_t type, uint32_t seq)
{
	bool last = type == VGPU_MDEV_EVENT_REMOVE || type == JOB_STOP;
	struct mdev_job *job = last ? &v->last_job : calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	job->type = type;
	job->seq = seq;
	job->next = NULL;
	pthread_mutex_lock(&v->lock);
	*v->jobs_tail = job;
	v->jobs_tail = &job->next;
	pthread_cond_signal(&v->wake);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

void mdev_vgpu_free(struct mdev_vgpu *v)
{
	while (v->jobs) {
		struct mdev_job *job = v->jobs;

		v->jobs = job->next;
		if (job != &v->last_job)
			free(job);
	}
	pthread_cond_destroy(&v->wake);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

int mdev_vgpu_create(struct mdev_server *s, uint32_t id, uint32_t type_index,
                     const char *uuid, struct mdev_vgpu **out, struct vgpu_error *error)
{
	struct mdev_vgpu *v = calloc(1, sizeof(*v));
	int err;

	if (!v)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	v->base.ops = &mdev_transport_ops;
	v->base.kind = "mdev";
	v->base.named_by_uuid = true;
	v->server = s;
	v->id = id;
	v->type_index = type_index;
	v->jobs_tail = &v->jobs;
	snprintf(v->uuid, sizeof(v->uuid), "%s", uuid);
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->wake, NULL);
	err = -pthread_create(&v->worker, NULL, mdev_worker_main, v);
	if (err) {
		vgpu_error_set(error, err, "vgpud cannot start a thread: %s", strerror(-err));
		mdev_vgpu_free(v);
		return err;
	}
	*out = v;
	return 0;
}

void mdev_reap_retired(struct mdev_server *s, bool all)
{
	struct mdev_vgpu **p = &s->retired;

	while (*p) {
		struct mdev_vgpu *v = *p;

		if (!all && !atomic_load(&v->finished)) {
			p = &v->next;
			continue;
		}
		pthread_mutex_lock(&s->lock);
		*p = v->next;
		pthread_mutex_unlock(&s->lock);
		pthread_join(v->worker, NULL);
		mdev_vgpu_free(v);
	}
}
