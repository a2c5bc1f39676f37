/* SPDX-License-Identifier: MIT */
/*
 * guest.h - vgpu-sim's stand-in for a guest on one VM: a command channel
 * created through the core, a guest window implementation (the shadow pages
 * and the trap the core's shadow channels need), and "guest RAM": host
 * memory mapped into the VM's GPU address space at a range reserved with
 * vgpu_core_reserve_va, holding pushbuffers and semaphores, as a real
 * guest keeps them in its system memory.
 *
 * sim_guest_run writes a pushbuffer, a GPFIFO entry and GP_PUT exactly as a
 * guest does (no call into the core), appends a semaphore release with
 * interrupt, and waits for it.
 */
#ifndef VGPU_SIM_GUEST_H
#define VGPU_SIM_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/core.h"

struct sim_guest;

/* The core's event callbacks (config.on_fence / on_channel_error) with
 * ctx = NULL: they wake every waiting guest. */
void sim_guest_on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event);
void sim_guest_on_channel_error(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event);

int sim_guest_create(struct vgpu_hal *hal, struct vgpu_vm *vm, struct sim_guest **out);
/* vm_gone: vgpu_core_vm_destroy already took the channel and reservation. */
void sim_guest_destroy(struct sim_guest *guest, bool vm_gone);

/* GPU VA of 64 scratch bytes in guest RAM (kernel results). */
uint64_t sim_guest_scratch_va(const struct sim_guest *guest);
uint64_t sim_guest_read_scratch(const struct sim_guest *guest);

/* Run words (at most 240) on the channel and wait up to timeout_ms.
 * 0, -ETIMEDOUT, or -EIO when the channel was killed. */
int sim_guest_run(struct sim_guest *guest, const uint32_t *words, uint32_t count,
                  unsigned timeout_ms);

/* The two halves of sim_guest_run: queue words (returns the sequence number
 * the work completes with; -EAGAIN when the ring is full) and wait for a
 * sequence number. */
int64_t sim_guest_submit(struct sim_guest *guest, const uint32_t *words, uint32_t count);
int sim_guest_wait(struct sim_guest *guest, uint64_t sequence, unsigned timeout_ms);
/* Whether completions raise an interrupt (a VGPU_EVENT_FENCE the core
 * forwards); default true. Without, waiting polls guest RAM. */
void sim_guest_set_interrupts(struct sim_guest *guest, bool interrupts);
/* Whether the GPU has finished sequence. */
bool sim_guest_done(const struct sim_guest *guest, uint64_t sequence);

/* Why the channel died (valid after -EIO). */
const char *sim_guest_error(const struct sim_guest *guest);

#endif /* VGPU_SIM_GUEST_H */
