// SPDX-License-Identifier: MIT
/*
 * device.c - the vGPU device model's life cycle, registers and interrupts,
 * and its mailbox worker (see device.h; the requests are in requests.c).
 */
#include "device.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgpu/error.h"
#include "vgpu/util.h"
#include "daemon.h"
#include "log.h"
#include "profiles.h"
#include "registry.h"
#include "requests.h"
#include "share_limits.h"

#define YIELD_NS 100000 /* between budget-sized batches of one busy guest */

/* -------------------------------------------------------------- interrupts */

static unsigned vector_of(uint32_t irq)
{
	switch (irq) {
	case VGPU_IRQ_FENCE: return VGPU_MSIX_VECTOR_FENCE;
	case VGPU_IRQ_CHANNEL_ERROR: return VGPU_MSIX_VECTOR_ERROR;
	default: return VGPU_MSIX_VECTOR_MAILBOX;
	}
}

struct vgpu_transport *vgpu_device_transport(struct vgpud_device *dev)
{
	return __atomic_load_n(&dev->transport, __ATOMIC_ACQUIRE);
}

static void signal_sources(struct vgpud_device *dev, uint32_t irqs)
{
	struct vgpu_transport *t = vgpu_device_transport(dev);
	uint32_t bit;

	if (atomic_load(&dev->migrated))
		return;
	for (bit = 1; bit & VGPU_IRQ_ALL; bit <<= 1)
		if (irqs & bit)
			t->ops->raise_irq(t, vector_of(bit));
}

void vgpu_device_raise(struct vgpud_device *dev, uint32_t irq)
{
	atomic_fetch_or(&dev->irq_status, irq);
	signal_sources(dev, irq & atomic_load(&dev->irq_mask));
}

void vgpu_device_channel_fence(struct vgpud_device *dev, uint32_t index)
{
	atomic_fetch_add_explicit(&dev->fences, 1, memory_order_relaxed);
	atomic_fetch_or(&dev->fence_channels, 1u << index);
	vgpu_device_raise(dev, VGPU_IRQ_FENCE);
}

void vgpu_device_channel_error(struct vgpud_device *dev, uint32_t index, uint32_t cause,
                               uint64_t address)
{
	atomic_fetch_add_explicit(&dev->channel_errors, 1, memory_order_relaxed);
	atomic_store_explicit(&dev->fault_address[index], address, memory_order_relaxed);
	atomic_store_explicit(&dev->fault_cause[index], cause, memory_order_release);
	atomic_fetch_or(&dev->error_channels, 1u << index);
	vgpu_device_raise(dev, VGPU_IRQ_CHANNEL_ERROR);
}

/* ---------------------------------------------------------------- BAR0 */

uint32_t vgpu_device_reg_read(struct vgpud_device *dev, uint32_t offset)
{
	switch (offset) {
	case VGPU_REG_MAGIC: return VGPU_MAGIC;
	case VGPU_REG_ABI_VERSION: return VGPU_ABI_VERSION;
	case VGPU_REG_FEATURES: return dev->features_offered;
	case VGPU_REG_STATUS: return atomic_load(&dev->status);
	case VGPU_REG_IRQ_STATUS: return atomic_load(&dev->irq_status);
	case VGPU_REG_IRQ_MASK: return atomic_load(&dev->irq_mask);
	case VGPU_REG_BAR2_SIZE_LO: return (uint32_t)VGPU_BAR2_SIZE;
	case VGPU_REG_BAR2_SIZE_HI: return (uint32_t)((uint64_t)VGPU_BAR2_SIZE >> 32);
	case VGPU_REG_MAX_CHANNELS: return VGPU_MAX_CHANNELS;
	case VGPU_REG_CHANNEL_STRIDE: return VGPU_CHANNEL_WINDOW_STRIDE;
	case VGPU_REG_FENCE_CHANNELS: return atomic_exchange(&dev->fence_channels, 0);
	case VGPU_REG_ERROR_CHANNELS: return atomic_exchange(&dev->error_channels, 0);
	default: return 0; /* write-only, unaligned or unknown */
	}
}

void vgpu_device_kick(struct vgpud_device *dev)
{
	atomic_fetch_add_explicit(&dev->doorbells, 1, memory_order_relaxed);
	pthread_mutex_lock(&dev->lock);
	dev->kicked = true;
	pthread_cond_broadcast(&dev->wake);
	pthread_mutex_unlock(&dev->lock);
}

void vgpu_device_reg_write(struct vgpud_device *dev, uint32_t offset, uint32_t value)
{
	uint32_t old;

	switch (offset) {
	case VGPU_REG_MAILBOX_DOORBELL:
		vgpu_device_kick(dev);
		break;
	case VGPU_REG_IRQ_ACK:
		atomic_fetch_and(&dev->irq_status, ~value);
		break;
	case VGPU_REG_IRQ_MASK:
		value &= VGPU_IRQ_ALL;
		old = atomic_exchange(&dev->irq_mask, value);
		/* A pending source that becomes enabled is delivered now. */
		signal_sources(dev, value & ~old & atomic_load(&dev->irq_status));
		break;
	default:
		break; /* read-only or unknown: ignored, as hardware would */
	}
}

void vgpu_device_mailbox_segment(struct vgpud_device *dev, struct vgpu_bar2_segment *out)
{
	out->bar2_offset = VGPU_MAILBOX_OFFSET;
	out->bytes = VGPU_MAILBOX_SIZE;
	out->fd = dev->mailbox_fd;
	out->fd_offset = 0;
}

bool vgpu_device_holds_resources(struct vgpud_device *dev)
{
	struct vgpu_vm_stats stats;

	if (atomic_load(&dev->channels))
		return true;
	vgpu_core_vm_stats(dev->vm, &stats);
	return stats.allocated_bytes || stats.buffers;
}

uint32_t vgpu_device_vm_id(const struct vgpud_device *dev)
{
	return dev->vm_id;
}

/* ------------------------------------------------------- mailbox worker */

static void *worker_main(void *arg)
{
	struct vgpud_device *dev = arg;
	const unsigned budget = dev->daemon->config.mailbox_budget;

	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct vgpu_mailbox_run run;

		while ((!dev->kicked || dev->paused) && !dev->stopping)
			pthread_cond_wait(&dev->wake, &dev->lock);
		if (dev->stopping)
			break;
		dev->kicked = false;
		dev->worker_busy = true;
		pthread_mutex_unlock(&dev->lock);

		vgpu_mailbox_server_run(&dev->server, budget, vgpu_device_handle_request, dev, &run);
		if (run.answered)
			vgpu_device_raise(dev, VGPU_IRQ_MAILBOX);
		if (run.ring_error) {
			atomic_fetch_add_explicit(&dev->ring_errors, 1, memory_order_relaxed);
			vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO,
			                      "VM '%s': mailbox indices are inconsistent "
			                      "(req_head or resp_tail out of range); ignoring the "
			                      "ring until they are sane", dev->name);
		}
		if (run.more) {
			/* Let other VMs' workers at the core before the next batch. */
			struct timespec pause = { 0, YIELD_NS };

			nanosleep(&pause, NULL);
		}

		pthread_mutex_lock(&dev->lock);
		dev->worker_busy = false;
		pthread_cond_broadcast(&dev->wake);
		if (run.more)
			dev->kicked = true;
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

void vgpu_device_pause_worker(struct vgpud_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	dev->paused = true;
	while (dev->worker_busy)
		pthread_cond_wait(&dev->wake, &dev->lock);
	pthread_mutex_unlock(&dev->lock);
}

void vgpu_device_resume_worker(struct vgpud_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	dev->paused = false;
	dev->kicked = true; /* requests that came meanwhile */
	pthread_cond_broadcast(&dev->wake);
	pthread_mutex_unlock(&dev->lock);
}

/* -------------------------------------------------------------- lifetime */

static void device_free(struct vgpud_device *dev)
{
	if (dev->mailbox)
		munmap(dev->mailbox, VGPU_MAILBOX_SIZE);
	if (dev->mailbox_fd >= 0)
		close(dev->mailbox_fd);
	handle_table_fini(&dev->handles);
	pthread_cond_destroy(&dev->wake);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static int create_mailbox(struct vgpud_device *dev)
{
	void *map;

	dev->mailbox_fd = memfd_create("vgpud-mailbox", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (dev->mailbox_fd < 0)
		return -errno;
	if (ftruncate(dev->mailbox_fd, VGPU_MAILBOX_SIZE) < 0)
		return -errno;
	/* The guest maps it: it must never shrink under vgpud's mapping. */
	if (fcntl(dev->mailbox_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	map = mmap(NULL, VGPU_MAILBOX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, dev->mailbox_fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	dev->mailbox = map;
	vgpu_mailbox_server_init(&dev->server, dev->mailbox);
	return 0;
}

int vgpu_device_attach_host(void *ctx, struct vgpu_transport *t,
                            const struct vgpu_attach_params *params, struct vgpud_device **out,
                            struct vgpu_error *error)
{
	return vgpud_device_attach(ctx, t, params, false, out, error);
}

/* The profile's settings for the VM, and (unless held) an instance of it. */
static int take_profile(struct vgpud *d, struct vgpud_device *dev, bool instance_held,
                        struct vgpu_error *error)
{
	int err;

	if (instance_held)
		err = vgpud_profiles_get(&d->profiles, dev->profile, &dev->profile_spec);
	else if (dev->owner_uid == 0)
		err = vgpud_profiles_acquire(&d->profiles, dev->profile, &dev->profile_spec);
	else /* a user's share (share_limits.h) */
		err = vgpud_profiles_acquire_share(
		        &d->profiles, dev->profile,
		        vgpud_share_instances_held(d, dev->owner_uid, dev->profile),
		        d->config.max_instances_per_uid, &dev->profile_spec);
	dev->holds_instance = !err && !instance_held;
	if (err == -ENOENT)
		vgpu_error_set(error, err,
		               "there is no vGPU profile '%s'; `vgpuctl types` lists the profiles",
		               dev->profile);
	else if (err == -EDQUOT)
		vgpu_error_set(error, err,
		               "user %u holds max_instances_per_uid instances of profile '%s'; "
		               "detach one of them", dev->owner_uid, dev->profile);
	else if (err)
		vgpu_error_set(error, err, "profile '%s' has no instance left for this user "
		               "(max_instances reached, or its last instance is kept for a user "
		               "holding none); detach a VM of it or raise max_instances",
		               dev->profile);
	return err;
}

static void put_profile(struct vgpud *d, struct vgpud_device *dev)
{
	if (dev->holds_instance)
		vgpud_profiles_release(&d->profiles, dev->profile);
}

/* A device for params on t, holding nothing yet (NULL: out of memory). */
static struct vgpud_device *device_new(struct vgpud *d, struct vgpu_transport *t,
                                       const struct vgpu_attach_params *params)
{
	struct vgpud_device *dev = calloc(1, sizeof(*dev));
	const char *profile = params->profile && params->profile[0] ? params->profile
	                                                             : d->profiles.default_name;

	if (!dev)
		return NULL;
	dev->daemon = d;
	dev->transport = t;
	dev->mailbox_fd = -1;
	handle_table_init(&dev->handles);
	pthread_mutex_init(&dev->lock, NULL);
	pthread_cond_init(&dev->wake, NULL);
	snprintf(dev->name, sizeof(dev->name), "%s", params->vm_name);
	snprintf(dev->profile, sizeof(dev->profile), "%s", profile);
	dev->owner_uid = params->owner_uid;
	/* every backend's channels take VGPU_SEMAPHORE_TIMESTAMP */
	dev->features_offered = VGPU_FEATURE_MSIX | VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS |
	                        VGPU_FEATURE_SEMAPHORE_TIMESTAMP | VGPU_FEATURE_CHANNEL_FAULT;
	if (d->caps.runs_modules)
		dev->features_offered |= VGPU_FEATURE_MODULES;
	atomic_store(&dev->irq_mask, VGPU_IRQ_ALL);
	clock_gettime(CLOCK_REALTIME, &dev->attached_at);
	return dev;
}

int vgpud_device_attach(struct vgpud *d, struct vgpu_transport *t,
                        const struct vgpu_attach_params *params, bool instance_held,
                        struct vgpud_device **out, struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	struct vgpu_vm_config vm_config;
	struct vgpud_device *dev = device_new(d, t, params);
	int err;

	if (!dev)
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	err = take_profile(d, dev, instance_held, error);
	if (err) {
		device_free(dev);
		return err;
	}
	err = create_mailbox(dev);
	if (err) {
		vgpu_error_set(error, err, "cannot create the mailbox memory: %s", strerror(-err));
		goto fail_profile;
	}
	vgpu_vm_config_defaults(&vm_config);
	vm_config.name = dev->name;
	vm_config.weight = dev->profile_spec.weight;
	vm_config.cap_bytes = dev->profile_spec.cap_bytes;
	if (dev->profile_spec.scheduler[0])
		vm_config.scheduler = dev->profile_spec.scheduler;
	err = vgpu_core_vm_create(d->core, &vm_config, &dev->vm, &core_error);
	if (err) {
		if (err == -EEXIST)
			vgpu_error_set(error, err,
			               "a VM named '%s' is already attached; pick another name",
			               dev->name);
		else if (err == -ENOSPC)
			vgpu_error_set(error, err,
			               "the GPU has no address space left for another VM; detach "
			               "one first");
		else
			vgpu_error_propagate(error, &core_error);
		goto fail_profile;
	}
	dev->vm_id = vgpu_core_vm_id(dev->vm);
	err = vgpu_core_reserve_va(dev->vm, (uint64_t)VGPU_MAX_CHANNELS * VGPU_CHANNEL_WINDOW_STRIDE,
	                           &dev->va_window_base, &core_error);
	if (err) {
		vgpu_error_set(error, err, "cannot reserve GPU addresses for channel windows: %s",
		               vgpu_error_msg(&core_error));
		goto fail_vm;
	}
	err = vgpud_registry_add(&d->registry, dev);
	if (err) {
		vgpu_error_set(error, err, "a VM named '%s' is already attached; pick another name",
		               dev->name);
		goto fail_vm;
	}
	err = -pthread_create(&dev->worker, NULL, worker_main, dev);
	if (err) {
		vgpu_error_set(error, err, "cannot start the mailbox worker: %s", strerror(-err));
		vgpud_registry_remove(&d->registry, dev);
		goto fail_vm;
	}
	dev->worker_started = true;
	atomic_store(&dev->status, VGPU_STATUS_READY);
	log_info("VM '%s' (id %u) attached as %s over %s: weight %u, cap %llu bytes", dev->name,
	         dev->vm_id, dev->profile, t->kind, dev->profile_spec.weight,
	         (unsigned long long)dev->profile_spec.cap_bytes);
	*out = dev;
	return 0;

fail_vm:
	vgpu_core_vm_destroy(dev->vm);
fail_profile:
	put_profile(d, dev);
	device_free(dev);
	return err;
}

void vgpu_device_detach(struct vgpud_device *dev)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpud *d = dev->daemon;

	atomic_store(&dev->status, VGPU_STATUS_BACKEND_GONE);
	pthread_mutex_lock(&dev->lock);
	dev->stopping = true;
	pthread_cond_broadcast(&dev->wake);
	pthread_mutex_unlock(&dev->lock);
	if (dev->worker_started)
		pthread_join(dev->worker, NULL);
	/* An export reads the device: it ends (finish or cancel) first. */
	while (atomic_load(&dev->exporting)) {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
	}

	vgpud_registry_remove(&d->registry, dev);
	vgpu_device_destroy_windows(dev);
	if (vgpu_core_release_va(dev->vm, dev->va_window_base,
	                         &error)) /* destroying the VM frees it */
		log_warn("VM '%s': %s", dev->name, vgpu_error_msg(&error));
	vgpu_core_vm_destroy(dev->vm);
	put_profile(d, dev);
	log_info("VM '%s' (id %u) detached; its GPU memory, channels and mappings are released",
	         dev->name, dev->vm_id);
	device_free(dev);
}
