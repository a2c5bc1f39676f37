/* SPDX-License-Identifier: MIT */
/*
 * transport_mdev_internal.h - what the mdev transport's two files share:
 * transport_mdev.c (the ops, the event thread, the server) and
 * mdev_worker.c (an mdev's worker thread). Nothing else includes it.
 */
#ifndef VGPUD_TRANSPORT_MDEV_INTERNAL_H
#define VGPUD_TRANSPORT_MDEV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/mdev_control.h"
#include "vgpu/transport.h"

#include "transport_mdev.h"

/* One OPEN, CLOSE, RESET or REMOVE for an mdev's worker. */
struct mdev_job {
	uint32_t type; /* VGPU_MDEV_EVENT_*, or JOB_STOP */
	uint32_t seq;
	struct mdev_job *next;
};

#define JOB_STOP 0xffffffffu /* vgpud stops: detach, end the worker */

struct mdev_vgpu {
	struct vgpu_transport base; /* first: the transport ops get this */
	struct mdev_server *server;
	uint32_t id;          /* the module's device_id */
	uint32_t type_index;
	char uuid[37];
	/* device: set and cleared by the worker; the event thread uses it
	 * (non-blocking calls only) with lock held, so detach never frees it
	 * under a doorbell. jobs: queued by the event thread. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct vgpud_device *device;
	struct mdev_job *jobs, **jobs_tail;
	_Atomic(struct vgpud_device *) irq_device; /* for raise_irq, no lock */
	struct mdev_job last_job; /* REMOVE or JOB_STOP: needs no allocation */
	pthread_t worker;
	atomic_bool finished; /* the worker ran its last job */
	struct mdev_vgpu *next;
};

struct mdev_server {
	int fd;
	int stop_fd; /* eventfd: the event thread exits */
	struct mdev_server_hooks hooks;
	int (*control_ioctl)(void *ctx, int fd, unsigned long request, void *arg);
	void *control_ctx;
	/* types[].name and sysfs_name are fixed; descriptions under lock */
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	unsigned type_count;
	pthread_t thread;
	/* vgpus (known mdevs) and retired (removed, worker not yet joined):
	 * changed by the event thread, read by any thread under lock */
	pthread_mutex_t lock;
	struct mdev_vgpu *vgpus;
	struct mdev_vgpu *retired;
};

/* An ioctl on the control device: 0 or a negative errno. */
int mdev_control(struct mdev_server *s, unsigned long request, void *arg);

/* To the module: the answer to request (id, seq); a type's
 * available_instances as the hooks say; the device model's FEATURES,
 * IRQ_MASK and STATUS (0 or a negative errno); STATUS = BACKEND_GONE. */
void mdev_reply(struct mdev_server *s, uint32_t id, uint32_t seq, int status, const char *why);
void mdev_push_available(struct mdev_server *s, unsigned type);
int mdev_push_registers(struct mdev_vgpu *v, struct vgpud_device *dev);
void mdev_push_gone(struct mdev_vgpu *v);

/* mdev_worker.c: the worker thread of v (started by the event thread);
 * hand it OPEN, CLOSE, RESET (0 or -ENOMEM), or REMOVE / JOB_STOP, its last
 * (never fails); free v once its worker is joined. */
void *mdev_worker_main(void *arg);
int mdev_queue_job(struct mdev_vgpu *v, uint32_t type, uint32_t seq);
void mdev_vgpu_free(struct mdev_vgpu *v);

#endif /* VGPUD_TRANSPORT_MDEV_INTERNAL_H */
