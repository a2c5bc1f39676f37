// SPDX-License-Identifier: GPL-2.0-only
/*
 * The BAR0 register file.
 *
 * Guest reads are answered here, from values vgpud pushed with
 * VGPU_MDEV_REG_UPDATE; the vCPU never waits for vgpud. Guest writes that
 * mean something (doorbell, IRQ_ACK, IRQ_MASK) take effect here at once
 * and are relayed to vgpud as coalesced pending state: one REG_WRITE event
 * per device carries everything written since the previous one, so a
 * guest that writes in a loop cannot grow a queue. A doorbell goes to
 * vgpud's kick eventfd instead when it set one (vgpu_mdev_eventfd_set).
 *
 * Only naturally aligned 32-bit accesses have side effects; smaller reads
 * return the bytes of the register, smaller writes are ignored.
 */
#include <linux/eventfd.h>
#include <linux/lockdep.h>

#include "vgpu_mdev.h"

#define REG(name) ((name) / 4)

void vgpu_mdev_regs_reset(struct vgpu_mdev_device *vgpu)
{
	unsigned long flags;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	memset(vgpu->regs, 0, sizeof(vgpu->regs));
	vgpu->regs[REG(VGPU_REG_MAGIC)] = VGPU_MAGIC;
	vgpu->regs[REG(VGPU_REG_ABI_VERSION)] = VGPU_ABI_VERSION;
	vgpu->regs[REG(VGPU_REG_BAR2_SIZE_LO)] = lower_32_bits((u64)VGPU_BAR2_SIZE);
	vgpu->regs[REG(VGPU_REG_BAR2_SIZE_HI)] = upper_32_bits((u64)VGPU_BAR2_SIZE);
	vgpu->regs[REG(VGPU_REG_MAX_CHANNELS)] = VGPU_MAX_CHANNELS;
	vgpu->regs[REG(VGPU_REG_CHANNEL_STRIDE)] = VGPU_CHANNEL_WINDOW_STRIDE;
	vgpu->pending_changed = 0;
	vgpu->pending_doorbells = 0;
	vgpu->pending_irq_ack = 0;
	vgpu_mdev_intx_reevaluate_locked(vgpu);
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
}

static u32 vgpu_mdev_reg_read_locked(struct vgpu_mdev_device *vgpu, unsigned int reg,
				     bool side_effects)
{
	u32 value;

	lockdep_assert_held(&vgpu->reg_lock);
	value = vgpu->regs[reg];
	if (side_effects &&
	    (reg == REG(VGPU_REG_FENCE_CHANNELS) || reg == REG(VGPU_REG_ERROR_CHANNELS)))
		vgpu->regs[reg] = 0; /* read-to-clear */
	return value;
}

/* Returns true if vgpud should hear about it. */
static bool vgpu_mdev_reg_write_locked(struct vgpu_mdev_device *vgpu, unsigned int reg, u32 value)
{
	lockdep_assert_held(&vgpu->reg_lock);
	switch (reg) {
	case REG(VGPU_REG_MAILBOX_DOORBELL):
		if (vgpu->kick) {
			eventfd_signal(vgpu->kick, 1);
			return false;
		}
		vgpu->pending_changed |= VGPU_MDEV_REG_DOORBELL;
		if (vgpu->pending_doorbells != U32_MAX)
			vgpu->pending_doorbells++;
		return true;
	case REG(VGPU_REG_IRQ_ACK):
		vgpu->regs[REG(VGPU_REG_IRQ_STATUS)] &= ~value;
		vgpu->pending_changed |= VGPU_MDEV_REG_IRQ_ACK;
		vgpu->pending_irq_ack |= value;
		vgpu_mdev_intx_reevaluate_locked(vgpu);
		return true;
	case REG(VGPU_REG_IRQ_MASK):
		vgpu->regs[reg] = value & VGPU_IRQ_ALL;
		vgpu->pending_changed |= VGPU_MDEV_REG_IRQ_MASK;
		vgpu_mdev_intx_reevaluate_locked(vgpu);
		return true;
	default:
		return false; /* read-only or unknown: ignored */
	}
}

ssize_t vgpu_mdev_bar0_rw(struct vgpu_mdev_device *vgpu, char *buf, size_t count, loff_t pos,
			  bool write)
{
	unsigned long flags;
	bool notify = false;
	size_t done = 0;

	if (pos < 0 || pos >= VGPU_BAR0_SIZE)
		return -EINVAL;
	count = min_t(size_t, count, VGPU_BAR0_SIZE - pos);

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	while (done < count) {
		unsigned int off = pos + done;
		unsigned int in_reg = off & 3;
		size_t n = min_t(size_t, count - done, 4 - in_reg);
		bool whole = in_reg == 0 && n == 4;
		__le32 le;

		if (write) {
			if (whole && !vgpu->backend_gone)
				notify |= vgpu_mdev_reg_write_locked(vgpu, off / 4,
						le32_to_cpu(*(__le32 *)(buf + done)));
		} else {
			le = cpu_to_le32(vgpu_mdev_reg_read_locked(vgpu, off / 4, whole));
			memcpy(buf + done, (u8 *)&le + in_reg, n);
		}
		done += n;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	if (notify)
		vgpu_mdev_notify_regs(vgpu);
	return done;
}

int vgpu_mdev_regs_update(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_reg_op *ops,
			  unsigned int count)
{
	unsigned long flags;
	unsigned int i;

	if (count > VGPU_MDEV_REG_UPDATE_MAX)
		return -EINVAL;
	for (i = 0; i < count; i++)
		if ((ops[i].offset & 3) || ops[i].offset >= VGPU_BAR0_SIZE ||
		    ops[i].op > VGPU_MDEV_REG_CLEAR || ops[i].reserved)
			return -EINVAL;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	for (i = 0; i < count; i++) {
		u32 *reg = &vgpu->regs[ops[i].offset / 4];

		switch (ops[i].op) {
		case VGPU_MDEV_REG_SET:
			*reg = ops[i].value;
			break;
		case VGPU_MDEV_REG_OR:
			*reg |= ops[i].value;
			break;
		case VGPU_MDEV_REG_CLEAR:
			*reg &= ~ops[i].value;
			break;
		}
	}
	/* INTx is a level: it follows IRQ_STATUS & IRQ_MASK */
	vgpu_mdev_intx_reevaluate_locked(vgpu);
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return 0;
}

int vgpu_mdev_regs_read(struct vgpu_mdev_device *vgpu, u32 offset, u32 *value)
{
	unsigned long flags;

	if ((offset & 3) || offset >= VGPU_BAR0_SIZE)
		return -EINVAL;
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	*value = vgpu_mdev_reg_read_locked(vgpu, offset / 4, false);
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return 0;
}

/* Take the pending write state for a REG_WRITE event. */
bool vgpu_mdev_regs_fill_event(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_event *rec)
{
	unsigned long flags;
	bool any;

	spin_lock_irqsave(&vgpu->reg_lock, flags);
	any = vgpu->pending_changed != 0;
	if (any) {
		memset(rec, 0, sizeof(*rec));
		rec->type = VGPU_MDEV_EVENT_REG_WRITE;
		rec->device_id = vgpu->id;
		rec->payload.regs.changed = vgpu->pending_changed;
		rec->payload.regs.doorbells = vgpu->pending_doorbells;
		rec->payload.regs.irq_ack = vgpu->pending_irq_ack;
		rec->payload.regs.irq_mask = vgpu->regs[REG(VGPU_REG_IRQ_MASK)];
		vgpu->pending_changed = 0;
		vgpu->pending_doorbells = 0;
		vgpu->pending_irq_ack = 0;
	}
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return any;
}
