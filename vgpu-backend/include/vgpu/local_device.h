/* SPDX-License-Identifier: MIT */
/*
 * local_device.h - the guest side of vgpud's local transport: a vGPU device
 * for a process that is not a VM (vgpu-tenant, tests).
 *
 * It gives a process exactly what a VM's guest driver gets from a PCI vGPU:
 * BAR0 register accesses (each one a round trip to vgpud, like a trapped
 * MMIO access), BAR2 mapped into the process (mailbox and channel windows,
 * shared memory: accesses never involve vgpud), and interrupts (an eventfd).
 * While vgpud suspends a channel, the process's mapping of that channel's
 * control page and GPFIFO is swapped for shadow pages at "fault time", as
 * the host module does for a VM: an access made during the swap waits until
 * the swap is done; it never fails.
 *
 * The socket protocol behind it is in vgpu/abi/local_protocol.h; a QEMU device
 * model could speak the same protocol.
 */
#ifndef VGPU_LOCAL_DEVICE_H
#define VGPU_LOCAL_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_local_device;

#define VGPU_LOCAL_DEFAULT_SOCKET "/run/vgpud/vgpud.sock"

struct vgpu_local_device_config {
	const char *socket_path; /* NULL: $VGPUD_SOCKET or VGPU_LOCAL_DEFAULT_SOCKET */
	const char *vm_name;     /* how vgpud and vgpuctl name this tenant */
	const char *profile;     /* vGPU profile, e.g. "vgpu-1G"; NULL: vgpud's default */
	/* Hostile-tenant tests only: never answer vgpud's window swaps
	 * (WINDOW_BLOCK, WINDOW_MAP), as a frontend that hangs would; vgpud
	 * must cut the tenant off after its swap timeout. */
	bool never_ack_window_swaps;
};

/* Connect and attach one vGPU instance. Negative errno on failure, with
 * error (vgpu/error.h; may be NULL) saying why. */
int vgpu_local_device_open(const struct vgpu_local_device_config *config,
                           struct vgpu_local_device **out, struct vgpu_error *error);

/* Detach: vgpud releases everything the instance owns. */
void vgpu_local_device_close(struct vgpu_local_device *dev);

/* BAR0: trapped register accesses (device_abi.h VGPU_REG_*). A read of a
 * device that vgpud dropped returns 0xffffffff, as a surprise-removed PCI
 * device does. */
uint32_t vgpu_local_device_reg_read(struct vgpu_local_device *dev, uint32_t offset);
void vgpu_local_device_reg_write(struct vgpu_local_device *dev, uint32_t offset, uint32_t value);

/* BAR2 as mapped in this process (VGPU_BAR2_SIZE bytes): the mailbox at
 * VGPU_MAILBOX_OFFSET and channel windows. */
void *vgpu_local_device_bar2(struct vgpu_local_device *dev);

/* Wait for an interrupt (any vector) for up to timeout_ms (-1: forever).
 * Returns a mask of VGPU_IRQ_* vectors raised since the last call, 0 on
 * timeout, negative errno on error (-ENODEV: vgpud went away). */
int vgpu_local_device_wait_irq(struct vgpu_local_device *dev, int timeout_ms);

/* A file descriptor that becomes readable on interrupts (and when vgpud
 * goes away), for poll()-based callers; then call
 * vgpu_local_device_wait_irq(dev, 0). (An epoll descriptor over one eventfd
 * per vector.) */
int vgpu_local_device_irq_fd(struct vgpu_local_device *dev);

/*
 * Live migration and restore: move this device to the vgpud listening at
 * socket_path (NULL: as in the config), which holds this VM imported
 * (local_protocol.h IMPORT, `vgpuctl migrate`/`restore`). The connection
 * to the current vgpud is closed (its copy of the VM, frozen by the
 * export, is released there), then the device attaches with
 * VGPU_LOCAL_ATTACH_RESUME under the same VM name. BAR2 stays at the same
 * address with the same contents (the new vgpud maps its mailbox and
 * channel windows there), the interrupt descriptor stays the same: the
 * caller's guest code goes on as it was. The caller must not touch the
 * device (registers, BAR2) from the export's stop until this returns, as a
 * VM's vCPUs are stopped for the switch-over. 0, or a negative errno with
 * error set; on failure the device is gone
 * (reads return 0xffffffff) and may only be closed.
 */
int vgpu_local_device_move(struct vgpu_local_device *dev, const char *socket_path,
                           struct vgpu_error *error);

/* vgpud's id of this VM (the "id" column of `vgpuctl status --json`). */
uint32_t vgpu_local_device_vm_id(struct vgpu_local_device *dev);

/* Accesses to a channel window, by any thread of this process, that found
 * the window blocked for a swap and waited (a statistic for tests and
 * benchmarks; process-wide). */
uint64_t vgpu_local_device_swap_waits(void);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_LOCAL_DEVICE_H */
