/* SPDX-License-Identifier: MIT */
/*
 * local_device_internal.h - the client library's device object, shared by
 * local_device.c (attach, registers, interrupts) and local_agent.c (the
 * thread that services vgpud's BAR2 and window-swap requests).
 */
#ifndef VGPU_LOCAL_DEVICE_INTERNAL_H
#define VGPU_LOCAL_DEVICE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/local_protocol.h"
#include "vgpu/local_device.h"

struct vgpu_local_device {
	int sock;         /* main socket: our requests, vgpud's replies */
	int backend_sock; /* backend channel: vgpud's requests, our acks */
	int kick_fd;      /* doorbell eventfd (ioeventfd) */
	int irq_fds[VGPU_MSIX_VECTORS];
	int irq_epoll;    /* irq eventfds + main socket hang-up */
	int agent_stop_fd;

	uint8_t *bar2;    /* VGPU_BAR2_SIZE bytes, one reservation */
	int trap_slot;
	uint32_t vm_id;
	char vm_name[VGPU_LOCAL_NAME_MAX];

	pthread_mutex_t request_lock; /* one main-socket request at a time */
	uint32_t next_seq;
	atomic_bool gone;             /* vgpud dropped us or went away */

	pthread_t agent;
	bool agent_started;
	uint64_t swaps; /* WINDOW_MAP requests serviced (agent only) */
	bool never_ack_window_swaps; /* config: hostile tests */
};

/* Start/stop the agent thread of dev. */
int vgpu_local_agent_start(struct vgpu_local_device *dev);
void vgpu_local_agent_stop(struct vgpu_local_device *dev);

#endif /* VGPU_LOCAL_DEVICE_INTERNAL_H */
