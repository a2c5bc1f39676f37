// SPDX-License-Identifier: MIT
/* guest.c - vgpu-sim's guest side of a channel, see guest.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest.h"
#include "sim_guest_window.h"
#include "vgpu/abi/commands.h"

#define GUEST_GPFIFO_ENTRIES 256u
#define PUSHBUFFER_SLOT 1024u
#define PUSHBUFFER_SLOTS 64u
#define RAM_BYTES (PUSHBUFFER_SLOT * PUSHBUFFER_SLOTS + 65536u)
#define SEMAPHORE_OFFSET (PUSHBUFFER_SLOT * PUSHBUFFER_SLOTS)
#define SCRATCH_OFFSET (SEMAPHORE_OFFSET + 64u)

/* Woken by fence and error events of any channel. */
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t events_cond = PTHREAD_COND_INITIALIZER;
static uint64_t events_seen;

struct sim_guest {
	struct vgpu_hal *hal;
	struct vgpu_vm *vm;
	struct vgpu_core_channel *channel;
	struct vgpu_hal_channel_info info;

	struct sim_guest_window window; /* which pages the guest sees, the trap */

	struct vgpu_hal_host_buf *ram;
	uint8_t *ram_cpu;
	uint64_t ram_va, ram_iova;
	uint32_t put, slot;
	uint64_t sequence;
	bool no_interrupts;
	char error[160];
};

void sim_guest_on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	pthread_mutex_lock(&events_lock);
	events_seen++;
	pthread_cond_broadcast(&events_cond);
	pthread_mutex_unlock(&events_lock);
}

void sim_guest_on_channel_error(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	sim_guest_on_fence(ctx, vm, event);
}

/* ---- lifetime ------------------------------------------------------------- */

int sim_guest_create(struct vgpu_hal *hal, struct vgpu_vm *vm, struct sim_guest **out)
{
	struct sim_guest *guest = calloc(1, sizeof(*guest));
	uint64_t pages[RAM_BYTES / 4096];
	int err;

	if (!guest)
		return -ENOMEM;
	guest->hal = hal;
	guest->vm = vm;
	sim_guest_window_init(&guest->window, &guest->info, GUEST_GPFIFO_ENTRIES);
	err = vgpu_core_channel_create(vm, GUEST_GPFIFO_ENTRIES, &sim_guest_window_ops,
	                               &guest->window, &guest->channel, &guest->info, NULL);
	if (err)
		goto fail;
	err = vgpu_core_reserve_va(vm, RAM_BYTES, &guest->ram_va, NULL);
	if (err)
		goto fail_channel;
	err = vgpu_hal_host_alloc(hal, RAM_BYTES, &guest->ram);
	if (err)
		goto fail_reserve;
	guest->ram_cpu = vgpu_hal_host_cpu_pointer(hal, guest->ram);
	err = guest->ram_cpu ? vgpu_hal_iommu_map(hal, guest->ram, 0, RAM_BYTES, &guest->ram_iova)
	                     : -ENOTSUP;
	if (err)
		goto fail_ram;
	for (uint64_t i = 0; i < RAM_BYTES / 4096; i++)
		pages[i] = guest->ram_iova + i * 4096;
	err = vgpu_hal_as_map(vgpu_core_vm_address_space(vm), guest->ram_va, 4096, RAM_BYTES / 4096,
	                      VGPU_TARGET_SYSMEM_COHERENT, pages, 0);
	if (err)
		goto fail_iommu;
	*out = guest;
	return 0;

fail_iommu:
	vgpu_hal_iommu_unmap(hal, guest->ram_iova, RAM_BYTES);
fail_ram:
	vgpu_hal_host_free(hal, guest->ram);
fail_reserve:
	vgpu_core_release_va(vm, guest->ram_va, NULL);
fail_channel:
	vgpu_core_channel_destroy(guest->channel);
fail:
	sim_guest_window_fini(&guest->window);
	free(guest);
	return err;
}

void sim_guest_destroy(struct sim_guest *guest, bool vm_gone)
{
	if (!guest)
		return;
	if (!vm_gone) {
		vgpu_core_channel_destroy(guest->channel);
		vgpu_core_release_va(guest->vm, guest->ram_va, NULL);
	}
	vgpu_hal_iommu_unmap(guest->hal, guest->ram_iova, RAM_BYTES);
	vgpu_hal_host_free(guest->hal, guest->ram);
	sim_guest_window_fini(&guest->window);
	free(guest);
}

uint64_t sim_guest_scratch_va(const struct sim_guest *guest)
{
	return guest->ram_va + SCRATCH_OFFSET;
}

uint64_t sim_guest_read_scratch(const struct sim_guest *guest)
{
	return le64toh(__atomic_load_n((uint64_t *)(guest->ram_cpu + SCRATCH_OFFSET),
	                               __ATOMIC_ACQUIRE));
}

const char *sim_guest_error(const struct sim_guest *guest)
{
	return guest->error;
}

/* ---- submission ----------------------------------------------------------- */

static uint64_t semaphore(const struct sim_guest *guest)
{
	return le64toh(__atomic_load_n((uint64_t *)(guest->ram_cpu + SEMAPHORE_OFFSET),
	                               __ATOMIC_ACQUIRE));
}

void sim_guest_set_interrupts(struct sim_guest *guest, bool interrupts)
{
	guest->no_interrupts = !interrupts;
}

bool sim_guest_done(const struct sim_guest *guest, uint64_t sequence)
{
	return semaphore(guest) >= sequence;
}

int64_t sim_guest_submit(struct sim_guest *guest, const uint32_t *words, uint32_t count)
{
	uint32_t pushbuffer[PUSHBUFFER_SLOT / 4];
	uint64_t pushbuffer_va;
	void *control, *gpfifo;
	uint32_t n = count;

	if (guest->error[0])
		return -EIO;
	if (count > PUSHBUFFER_SLOT / 4 - VGPU_SEMAPHORE_ARG_WORDS - 1)
		return -EINVAL;
	/* Pushbuffer slots are reused round robin: at most that many queued. */
	if (guest->sequence >= PUSHBUFFER_SLOTS &&
	    semaphore(guest) < guest->sequence - PUSHBUFFER_SLOTS + 1)
		return -EAGAIN;
	memcpy(pushbuffer, words, count * sizeof(*words));
	guest->sequence++;
	n += vgpu_push_semaphore_release(pushbuffer + n, guest->ram_va + SEMAPHORE_OFFSET,
	                                 guest->sequence, !guest->no_interrupts);
	/* The pushbuffer goes to guest RAM, like a guest's. */
	pushbuffer_va = guest->ram_va + (uint64_t)guest->slot * PUSHBUFFER_SLOT;
	memcpy(guest->ram_cpu + (uint64_t)guest->slot * PUSHBUFFER_SLOT, pushbuffer, n * 4);
	guest->slot = (guest->slot + 1) % PUSHBUFFER_SLOTS;

	/* GPFIFO entry and GP_PUT through whatever the window maps. */
	sim_guest_window_enter(&guest->window, &control, &gpfifo);
	vgpu_gpfifo_write(gpfifo, GUEST_GPFIFO_ENTRIES, guest->put, pushbuffer_va, n * 4);
	guest->put = (guest->put + 1) % GUEST_GPFIFO_ENTRIES;
	vgpu_control_write_gp_put(control, guest->put);
	vgpu_control_ring_doorbell(control);
	sim_guest_window_leave(&guest->window);
	return (int64_t)guest->sequence;
}

int sim_guest_wait(struct sim_guest *guest, uint64_t sequence, unsigned timeout_ms)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&events_lock);
	while (semaphore(guest) < sequence) {
		struct vgpu_hal_event error;
		struct timespec step;

		if (vgpu_hal_channel_state(vgpu_core_channel_hal(guest->channel), &error) ==
		    VGPU_CHANNEL_ERROR) {
			snprintf(guest->error, sizeof(guest->error),
			         "the GPU killed the VM's channel (fault cause %d at GPU address "
			         "%#llx)",
			         (int)error.cause, (unsigned long long)error.address);
			pthread_mutex_unlock(&events_lock);
			return -EIO;
		}
		/* Events wake us; a short timeout covers a lost race. */
		clock_gettime(CLOCK_REALTIME, &step);
		step.tv_nsec += 2000000L;
		if (step.tv_nsec >= 1000000000L) {
			step.tv_sec++;
			step.tv_nsec -= 1000000000L;
		}
		if (step.tv_sec > deadline.tv_sec ||
		    (step.tv_sec == deadline.tv_sec && step.tv_nsec > deadline.tv_nsec)) {
			if (semaphore(guest) >= sequence)
				break;
			pthread_mutex_unlock(&events_lock);
			return -ETIMEDOUT;
		}
		pthread_cond_timedwait(&events_cond, &events_lock, &step);
	}
	pthread_mutex_unlock(&events_lock);
	return 0;
}

int sim_guest_run(struct sim_guest *guest, const uint32_t *words, uint32_t count,
                  unsigned timeout_ms)
{
	int64_t sequence = sim_guest_submit(guest, words, count);

	if (sequence < 0)
		return (int)sequence;
	return sim_guest_wait(guest, (uint64_t)sequence, timeout_ms);
}
