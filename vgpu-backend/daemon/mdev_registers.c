// SPDX-License-Identifier: MIT
/*
 * mdev_registers.c - an mdev's BAR0 register file, which vgpu_mdev.ko
 * keeps: the module answers the guest's register reads from it, so
 * whatever the device model changes is pushed there, and the guest's
 * writes (which the module has applied) come back to the device model.
 *
 *  - raise_irq ORs the source's bit into IRQ_STATUS, moves the device
 *    model's pending FENCE_CHANNELS / ERROR_CHANNELS bits into the
 *    module's (read-to-clear there) and raises the vector, in one
 *    REG_UPDATE;
 *  - attach pushes FEATURES, IRQ_MASK and STATUS; detach's STATUS =
 *    BACKEND_GONE is pushed when detach returns;
 *  - a REG_WRITE event's IRQ_ACK and IRQ_MASK go to vgpu_device_reg_write,
 *    its doorbell to vgpu_device_kick (neither waits for the core).
 *
 * See transport_mdev_internal.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/mdev_control.h"
#include "transport.h"

#include "log.h"
#include "transport_mdev_internal.h"

/* The IRQ_STATUS bit of an MSI-X vector. */
static uint32_t source_of(unsigned vector)
{
	switch (vector) {
	case VGPU_MSIX_VECTOR_FENCE: return VGPU_IRQ_FENCE;
	case VGPU_MSIX_VECTOR_ERROR: return VGPU_IRQ_CHANNEL_ERROR;
	default: return VGPU_IRQ_MAILBOX;
	}
}

/* One more op of a REG_UPDATE: SET or OR value into the register at offset. */
static void add_op(struct vgpu_mdev_reg_update *u, uint32_t offset, uint32_t kind,
                   uint32_t value)
{
	u->ops[u->count++] = (struct vgpu_mdev_reg_op){
		.offset = offset, .op = kind, .value = value,
	};
}

void mdev_registers_raise_irq(struct mdev_vgpu *v, unsigned vector)
{
	struct vgpud_device *dev = atomic_load(&v->irq_device);
	struct vgpu_mdev_reg_update u = { .device_id = v->id, .irq_vectors = 1u << vector };
	int err;

	if (vector >= VGPU_MSIX_VECTORS)
		return;
	add_op(&u, VGPU_REG_IRQ_STATUS, VGPU_MDEV_REG_OR, source_of(vector));
	if (dev && vector == VGPU_MSIX_VECTOR_FENCE)
		add_op(&u, VGPU_REG_FENCE_CHANNELS, VGPU_MDEV_REG_OR,
		       vgpu_device_reg_read(dev, VGPU_REG_FENCE_CHANNELS));
	if (dev && vector == VGPU_MSIX_VECTOR_ERROR)
		add_op(&u, VGPU_REG_ERROR_CHANNELS, VGPU_MDEV_REG_OR,
		       vgpu_device_reg_read(dev, VGPU_REG_ERROR_CHANNELS));
	err = mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
	if (err && err != -ENOENT)
		log_debug("mdev %s: raising vector %u failed: %s", v->uuid, vector, strerror(-err));
}

int mdev_push_registers(struct mdev_vgpu *v, struct vgpud_device *dev)
{
	static const uint32_t pushed[] = { VGPU_REG_FEATURES, VGPU_REG_IRQ_MASK, VGPU_REG_STATUS };
	struct vgpu_mdev_reg_update u = { .device_id = v->id };

	for (size_t i = 0; i < sizeof(pushed) / sizeof(pushed[0]); i++)
		add_op(&u, pushed[i], VGPU_MDEV_REG_SET, vgpu_device_reg_read(dev, pushed[i]));
	return mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
}

/* The mdev may be closed or removed already (ENODEV/ENOENT): nobody is
 * left to tell. */
void mdev_push_gone(struct mdev_vgpu *v)
{
	struct vgpu_mdev_reg_update u = { .device_id = v->id };
	int err;

	add_op(&u, VGPU_REG_STATUS, VGPU_MDEV_REG_SET, VGPU_STATUS_BACKEND_GONE);
	err = mdev_control(v->server, VGPU_MDEV_REG_UPDATE, &u);
	if (err && err != -ENOENT && err != -ENODEV)
		log_warn("mdev %s: cannot mark the device gone: %s", v->uuid, strerror(-err));
}

/* Under v->lock, so detach never frees the device under a doorbell. */
void mdev_registers_written(struct mdev_vgpu *v, const struct vgpu_mdev_event_regs *regs)
{
	pthread_mutex_lock(&v->lock);
	if (v->device) {
		if (regs->changed & VGPU_MDEV_REG_IRQ_ACK)
			vgpu_device_reg_write(v->device, VGPU_REG_IRQ_ACK, regs->irq_ack);
		if (regs->changed & VGPU_MDEV_REG_IRQ_MASK)
			vgpu_device_reg_write(v->device, VGPU_REG_IRQ_MASK, regs->irq_mask);
		if (regs->changed & VGPU_MDEV_REG_DOORBELL)
			vgpu_device_kick(v->device);
	}
	pthread_mutex_unlock(&v->lock);
}
