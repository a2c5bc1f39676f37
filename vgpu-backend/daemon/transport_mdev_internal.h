/* SPDX-License-Identifier: MIT */
/*
 * transport_mdev_internal.h - what the mdev transport's files share.
 * Nothing else includes it.
 *
 *	transport_mdev.c  the transport ops and the event handler: bytes in
 *	                  (the module's events), bytes out (ioctls)
 *	mdev_registers.c  the device's BAR0 register file kept by the module:
 *	                  what the device model changes is pushed there, the
 *	                  guest's writes come back to the device model
 *	mdev_types.c      the mdev types registered with the module, as the
 *	                  hooks describe them
 *	mdev_server.c     the server's life: the control device, the version
 *	                  handshake, the events watched on the loop and not
 *	mdev_worker.c     an mdev: its record and its worker thread
 */
#ifndef VGPUD_TRANSPORT_MDEV_INTERNAL_H
#define VGPUD_TRANSPORT_MDEV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "vgpu/abi/mdev_control.h"
#include "vgpu/error.h"
#include "transport.h"

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
	/* device: set and cleared by the worker; the event handler (on the
	 * loop) uses it (non-blocking calls only) with lock held, so detach
	 * never frees it under a doorbell. jobs: queued by the event handler. */
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
	sd_event_source *events; /* fd readable: mdev_on_events, on the loop */
	struct mdev_server_hooks hooks;
	int (*control_ioctl)(void *ctx, int fd, unsigned long request, void *arg);
	void *control_ctx;
	/* types[].name and sysfs_name are fixed; descriptions under lock */
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	unsigned type_count;
	/* vgpus (known mdevs) and retired (removed, worker not yet joined):
	 * changed by the event handler, read by any thread under lock */
	pthread_mutex_t lock;
	struct mdev_vgpu *vgpus;
	struct mdev_vgpu *retired;
};

/* transport_mdev.c: an ioctl on the control device (0 or a negative
 * errno); the answer to the module's request (id, seq); the event
 * handler, an sd-event io callback (userdata: the server) on the loop. */
int mdev_control(struct mdev_server *s, unsigned long request, void *arg);
void mdev_reply(struct mdev_server *s, uint32_t id, uint32_t seq, int status, const char *why);
int mdev_on_events(sd_event_source *source, int fd, uint32_t revents, void *userdata);
extern const struct vgpu_transport_ops mdev_transport_ops;

/* mdev_registers.c: raise vector (IRQ_STATUS, the pending channel bits,
 * the vector: one REG_UPDATE; never blocks); the device model's FEATURES,
 * IRQ_MASK and STATUS at attach (0 or a negative errno); STATUS =
 * BACKEND_GONE at detach; the guest's register writes, which the module
 * has applied, to the device model (never waits for the core). */
void mdev_registers_raise_irq(struct mdev_vgpu *v, unsigned vector);
int mdev_push_registers(struct mdev_vgpu *v, struct vgpud_device *dev);
void mdev_push_gone(struct mdev_vgpu *v);
void mdev_registers_written(struct mdev_vgpu *v, const struct vgpu_mdev_event_regs *regs);

/* mdev_types.c: register the first VGPU_MDEV_MAX_TYPES of profiles as the
 * server's types (0 or a negative errno + error); give the module every
 * type's description and available_instances as the hooks say them now
 * (0 or a negative errno + error); one type's available_instances (logged
 * when the module refuses). */
int mdev_types_register(struct mdev_server *s, const char *const *profiles, size_t count,
                        struct vgpu_error *error);
int mdev_types_push(struct mdev_server *s, struct vgpu_error *error);
void mdev_push_available(struct mdev_server *s, unsigned type);

/* mdev_worker.c: a new mdev (the event handler's CREATE or EXISTS) with its
 * worker thread started (0 or a negative errno + error); hand its worker
 * OPEN, CLOSE, RESET (0 or -ENOMEM), or REMOVE / JOB_STOP, its last (never
 * fails); join and free the retired mdevs whose worker has ended (all:
 * wait for each); free v once its worker is joined. */
int mdev_vgpu_create(struct mdev_server *s, uint32_t id, uint32_t type_index,
                     const char *uuid, struct mdev_vgpu **out, struct vgpu_error *error);
int mdev_queue_job(struct mdev_vgpu *v, uint32_t type, uint32_t seq);
void mdev_reap_retired(struct mdev_server *s, bool all);
void mdev_vgpu_free(struct mdev_vgpu *v);

#endif /* VGPUD_TRANSPORT_MDEV_INTERNAL_H */
