/* SPDX-License-Identifier: MIT */
/*
 * fake_device.h - a test double for a vGPU as the guest-side protocol code
 * sees it: BAR0 registers and a mailbox in memory, answered in-process.
 *
 * It behaves like a well-formed backend (HELLO, QUERY, ALLOC, FREE,
 * CHANNEL_CREATE/DESTROY, SET_PRIORITY, STATS, MODULE_LOAD/UNLOAD with
 * plausible state: a module's table needs 1024 bytes, less room is LIMIT
 * saying so) unless a test tells it otherwise:
 *  - mutate: a callback that may rewrite each response before it is posted
 *    (wrong seq, opcode, status, sizes, payload fields), drop it, or post it
 *    twice;
 *  - stalled: requests are not consumed at all;
 *  - defer_answers: requests are consumed only when the test calls
 *    fake_device_process (or at a later doorbell/irq wait once cleared);
 *  - answer_in_wait: answers appear only during wait_irq (the response is
 *    late), not during the doorbell write;
 *  - regs: magic/version/status values to return.
 *
 * Synchronous mode (default): answers while the guest writes the doorbell
 * (or in wait_irq). Threaded mode (fake_device_start_thread): a device
 * thread answers, and wait_irq sleeps on a condition variable, for tests
 * with concurrent callers.
 *
 * Ring indices are read and written with acquire/release atomics, slots with
 * plain copies, exactly as the protocol requires of a real backend.
 */
#ifndef VGPU_TESTS_FAKE_DEVICE_H
#define VGPU_TESTS_FAKE_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu_proto.h"

struct fake_device;

/* What mutate may ask for. */
enum fake_action {
	FAKE_POST,   /* post the (possibly rewritten) response */
	FAKE_DROP,   /* answer nothing */
	FAKE_TWICE,  /* post it twice */
};

/* Called for each request with the response the fake backend would give
 * (both in CPU byte order; payloads as raw little-endian bytes). */
typedef enum fake_action (*fake_mutate_fn)(void *arg, const struct vgpu_request *request,
                                           struct vgpu_response *response);

struct fake_device {
	/* The mailbox (BAR2 at VGPU_MAILBOX_OFFSET). */
	uint8_t *mailbox;

	/* Registers. */
	uint32_t magic;
	uint32_t abi_version;
	uint32_t features;
	uint32_t status;
	uint32_t error_channels;

	/* Behaviour. */
	bool stalled;
	bool defer_answers;
	bool answer_in_wait;
	fake_mutate_fn mutate;
	void *mutate_arg;
	int wait_irq_error;        /* returned by wait_irq when nonzero */
	uint32_t max_channels;     /* HELLO answer, default 4 */
	uint32_t offered_features; /* default: PRIORITY_HINTS | STATS */

	/* Device-side ring state (its own copies). */
	uint32_t req_tail;
	uint32_t resp_head;

	/* Fake backend state. */
	bool hello_done;
	uint32_t next_handle;
	uint64_t next_va;
	uint64_t allocated;
	uint32_t live_handles[256];
	uint32_t live_count;
	uint32_t channels_live; /* bit mask */
	uint64_t modules_live;  /* bit mask of module handles */

	/* What happened. */
	uint64_t reg_reads;
	uint64_t doorbells;
	uint64_t irq_waits;
	uint64_t requests_seen;
	struct vgpu_request last_request; /* raw slot as the guest wrote it */
	uint32_t pending_irqs;

	/* Threaded mode. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool threaded;
	bool thread_stop;
	uint64_t doorbell_count_seen;
};

/* A fresh device: READY, ABI 1.0, empty rings. */
struct fake_device *fake_device_create(void);
void fake_device_destroy(struct fake_device *fake);

/* Ring indices as they are in the mailbox header (what both sides see). */
void fake_device_set_indices(struct fake_device *fake, uint32_t req_head, uint32_t req_tail,
                             uint32_t resp_head, uint32_t resp_tail);

/* The ops and ctx for struct vgpu_proto_config. */
const struct vgpu_proto_device_ops *fake_device_ops(void);

/* A proto config for this device with the given per-request timeout. */
struct vgpu_proto_config fake_device_proto_config(struct fake_device *fake, int timeout_ms);

/* Answer every queued request now (respecting stalled and ring space).
 * Returns the number answered. */
unsigned fake_device_process(struct fake_device *fake);

/* Post an arbitrary response slot (CPU byte order) as if the backend did. */
void fake_device_post(struct fake_device *fake, const struct vgpu_response *response);

/* Threaded mode: a device thread answers each doorbell. */
void fake_device_start_thread(struct fake_device *fake);
void fake_device_stop_thread(struct fake_device *fake);

#endif /* VGPU_TESTS_FAKE_DEVICE_H */
