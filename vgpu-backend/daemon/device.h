/* SPDX-License-Identifier: MIT */
/*
 * device.h - the vGPU device model: one instance per attached VM,
 * independent of the transport that connects it (transport.h).
 *
 * It owns the VM in the core, the BAR0 register state, the mailbox (shared
 * memory, served by a worker thread per device), and the channel windows
 * (channel_window.h). What a guest writes reaches the core only through the
 * mailbox parser and the request handlers, which look up handles and
 * channel indices in this VM only: another VM's objects are unreachable.
 *
 * Threads
 *  - the transport's thread: vgpu_device_reg_read/reg_write/kick (atomics
 *    and the worker's condition variable only: never waits for the core),
 *    attach and detach;
 *  - the mailbox worker: runs the mailbox server and the request handlers
 *    (which call the core and may wait for it); the only thread that
 *    touches hello state, buffer counts and the window table until detach
 *    has stopped it;
 *  - the HAL event thread: vgpu_device_channel_fence/_error (atomics and
 *    the transport's raise_irq);
 *  - any thread running an eviction: the window ops of this VM's channels.
 */
#ifndef VGPUD_DEVICE_H
#define VGPUD_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "vgpu/core.h"
#include "vgpu/abi/device_abi.h"
#include "vgpu/error.h"
#include "transport.h"

#include "config.h"
#include "handle_table.h"
#include "log.h"
#include "mailbox.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vgpud's device model writes device ABI structures in host order: little-endian only"
#endif

struct vgpud;
struct channel_window;

struct vgpud_device {
	struct vgpud *daemon;
	struct vgpu_transport *transport;
	struct vgpu_vm *vm;
	uint32_t vm_id;
	char name[VGPU_VM_NAME_MAX];
	char profile[VGPUD_PROFILE_NAME_MAX];
	uint32_t owner_uid;                     /* vgpu_attach_params.owner_uid */
	struct vgpud_profile_spec profile_spec; /* as at attach */
	bool holds_instance; /* of the profile: detach gives it back */
	/* GPU VA range reserved in the core (vgpu_core_reserve_va) for the
	 * notifier and pushbuffer areas of the channel windows:
	 * VGPU_CHANNEL_WINDOW_STRIDE per window index, same offsets as in BAR2. */
	uint64_t va_window_base;
	atomic_bool weight_overridden;          /* set-weight: profile changes skip it */
	struct timespec attached_at;

	/* BAR0 */
	_Atomic uint32_t status;
	_Atomic uint32_t irq_status;
	_Atomic uint32_t irq_mask;
	_Atomic uint32_t fence_channels;
	_Atomic uint32_t error_channels;
	/* Why the GPU killed window n's channel (CHANNEL_FAULT): the
	 * address is stored before the cause, the cause with release. */
	_Atomic uint32_t fault_cause[VGPU_MAX_CHANNELS];
	_Atomic uint64_t fault_address[VGPU_MAX_CHANNELS];
	uint32_t features_offered;

	/* mailbox: the worker's (and detach's after the worker stopped) */
	int mailbox_fd;
	uint8_t *mailbox;
	struct vgpu_mailbox_server server;
	bool hello_done;
	uint32_t features;
	struct handle_table handles;
	uint32_t modules; /* loaded by MODULE_LOAD (the mailbox worker's) */
	struct channel_window *windows[VGPU_MAX_CHANNELS];
	struct vgpud_ratelimit log_limit;
	/* The channel error log line (event_routes.c, under the routes' lock):
	 * a guest can kill its own channels at will. */
	struct vgpud_ratelimit channel_error_log_limit;

	/* the mailbox worker */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t lock; /* kicked, stopping */
	pthread_cond_t wake;
	bool kicked;
	bool stopping;
	bool paused;      /* migration: the worker serves nothing (lock) */
	bool worker_busy; /* the worker is serving requests (lock) */

	/* Exported to another vgpud (or saved): frozen, its channels killed;
	 * interrupts go nowhere; only detach is left. */
	atomic_bool migrated;
	atomic_bool exporting; /* an export of it is in progress */
	bool parked; /* imported, waiting for its frontend (migrate.h) */

	/* statistics for the control API */
	_Atomic uint64_t requests;
	_Atomic uint64_t requests_failed;
	_Atomic uint64_t ring_errors;
	_Atomic uint64_t doorbells;
	_Atomic uint64_t fences;
	_Atomic uint64_t channel_errors;
	_Atomic uint32_t channels;

	/* What reports call the VM when it is not its attach name (registry
	 * lock): the libvirt domain or QEMU -name of an mdev VM, found after
	 * the attach (domain_names.h); "" = name. name_source: "libvirt",
	 * "qemu", or NULL = the transport's own ("uuid" for mdev, "tenant"). */
	char display_name[VGPU_VM_NAME_MAX];
	const char *name_source;

	struct vgpud_device *registry_next;
};

/* The vgpu_device_host attach of vgpud (ctx = struct vgpud): takes an
 * instance of the profile for the VM. */
int vgpu_device_attach_host(void *ctx, struct vgpu_transport *t,
                            const struct vgpu_attach_params *params, struct vgpud_device **out,
                            struct vgpu_error *error);

/* Attach; instance_held: the caller holds an instance of the profile for
 * this VM already (an mdev of it exists, mdev_host.h), so the device takes
 * and gives back none. 0, or a negative errno + error. */
int vgpud_device_attach(struct vgpud *d, struct vgpu_transport *t,
                        const struct vgpu_attach_params *params, bool instance_held,
                        struct vgpud_device **out, struct vgpu_error *error);

/* Set a pending interrupt source (VGPU_IRQ_*) and signal its vector if it is
 * enabled. Any thread; never blocks. */
void vgpu_device_raise(struct vgpud_device *dev, uint32_t irq);

/* From the event routes (HAL event thread). */
void vgpu_device_channel_fence(struct vgpud_device *dev, uint32_t index);
/* Window index's channel was killed: cause (enum vgpu_channel_fault_cause)
 * and the faulting address for CHANNEL_FAULT, the bit, the interrupt. */
void vgpu_device_channel_error(struct vgpud_device *dev, uint32_t index, uint32_t cause,
                               uint64_t address);

/* Migration: stop the mailbox worker between requests (a request in
 * progress finishes first; later ones wait in the ring) / let it go on. */
void vgpu_device_pause_worker(struct vgpud_device *dev);
void vgpu_device_resume_worker(struct vgpud_device *dev);

/* The device's transport (it changes once, when a migrated-in VM is
 * adopted by its frontend). */
struct vgpu_transport *vgpu_device_transport(struct vgpud_device *dev);

#endif /* VGPUD_DEVICE_H */
