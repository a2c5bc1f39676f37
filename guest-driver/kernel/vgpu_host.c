// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_host.c - the mailbox to the host backend: the device hooks of the
 * shared protocol code (guest-driver/common/vgpu_proto.h), attaching to
 * the backend, and reporting what a failed request means.
 *
 * The protocol code posts a request into BAR2, rings the trapped doorbell
 * in BAR0 and waits for the response in BAR2, sleeping in our wait_irq
 * hook between looks. Requests are serialised by proto_lock (a mutex:
 * wait_irq sleeps). Mailbox waits are not interruptible by signals: an
 * abandoned ALLOC would leave memory on the host that the guest does not
 * know about; the wait is bounded by the protocol timeout instead.
 */
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/ratelimit.h>

#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "vgpu_drv.h"

static int mailbox_timeout_ms;
module_param(mailbox_timeout_ms, int, 0444);
MODULE_PARM_DESC(mailbox_timeout_ms,
		 "How long one mailbox request may take before it fails with ETIMEDOUT (0 = 30000)");

static int attach_timeout_ms = 10000;
module_param(attach_timeout_ms, int, 0444);
MODULE_PARM_DESC(attach_timeout_ms,
		 "How long probe waits for the host backend to become ready (default 10000)");

u32 vgpu_reg_read(struct vgpu_drm_device *vdev, u32 offset)
{
	return ioread32(vdev->regs + offset);
}

void vgpu_reg_write(struct vgpu_drm_device *vdev, u32 offset, u32 value)
{
	iowrite32(value, vdev->regs + offset);
}

static uint32_t hook_reg_read(void *ctx, uint32_t offset)
{
	return vgpu_reg_read(ctx, offset);
}

static void hook_reg_write(void *ctx, uint32_t offset, uint32_t value)
{
	vgpu_reg_write(ctx, offset, value);
}

/*
 * The device is lost (its backend went away): say so once, and wake every
 * mailbox and fence waiter, which then fail with -ENODEV.
 */
void vgpu_device_lost(struct vgpu_drm_device *vdev)
{
	if (atomic_xchg(&vdev->device_lost, 1))
		return;
	drm_err(&vdev->drm, "device lost: the host backend (vgpud) went away; pending requests and fence waits fail with ENODEV\n");
	atomic_set(&vdev->mailbox_irq_pending, 1);
	wake_up_all(&vdev->mailbox_wq);
	wake_up_all(&vdev->fence_wq);
}

/*
 * True once the device is lost: the host said so by interrupt before, or
 * says so now in VGPU_REG_STATUS (or the device vanished).
 */
bool vgpu_backend_gone(struct vgpu_drm_device *vdev)
{
	u32 status;

	if (atomic_read(&vdev->device_lost))
		return true;
	if (pci_dev_is_disconnected(vdev->pdev))
		return true;
	status = vgpu_reg_read(vdev, VGPU_REG_STATUS);
	if (status == U32_MAX || (status & VGPU_STATUS_BACKEND_GONE)) {
		vgpu_device_lost(vdev);
		return true;
	}
	return false;
}

/*
 * Sleep until the mailbox interrupt fired (it sets mailbox_irq_pending) or
 * timeout_ms passed. Without interrupts, just sleep: the protocol polls the
 * rings after every return. A wait that saw no interrupt looks at
 * VGPU_REG_STATUS (one trapped read per slice, only while the backend is
 * slow), so a request to a backend that went away fails with -ENODEV at
 * once instead of at the protocol timeout; a device already lost (or lost
 * during the wait: vgpu_device_lost wakes us) fails it without sleeping.
 */
static int hook_wait_irq(void *ctx, int timeout_ms)
{
	struct vgpu_drm_device *vdev = ctx;
	unsigned long timeout = msecs_to_jiffies(max(timeout_ms, 1));

	if (atomic_read(&vdev->device_lost))
		return -ENODEV;
	if (vdev->irq_mode == DRM_VGPU_IRQ_MODE_POLL)
		schedule_timeout_uninterruptible(min_t(unsigned long, timeout, 1));
	else if (wait_event_timeout(vdev->mailbox_wq,
				    atomic_xchg(&vdev->mailbox_irq_pending, 0) ||
				    atomic_read(&vdev->device_lost), timeout) &&
		 !atomic_read(&vdev->device_lost))
		return VGPU_IRQ_MAILBOX;
	return vgpu_backend_gone(vdev) ? -ENODEV : 0;
}

static const struct vgpu_proto_device_ops vgpu_proto_device_ops = {
	.reg_read = hook_reg_read,
	.reg_write = hook_reg_write,
	.wait_irq = hook_wait_irq,
};

static void hook_lock(void *ctx)
{
	struct vgpu_drm_device *vdev = ctx;

	mutex_lock(&vdev->proto_lock);
}

static void hook_unlock(void *ctx)
{
	struct vgpu_drm_device *vdev = ctx;

	mutex_unlock(&vdev->proto_lock);
}

static void hook_assert_held(void *ctx)
{
	struct vgpu_drm_device *vdev = ctx;

	lockdep_assert_held(&vdev->proto_lock);
}

static const struct vgpu_proto_lock_ops vgpu_proto_lock_ops = {
	.lock = hook_lock,
	.unlock = hook_unlock,
	.assert_held = hook_assert_held,
};

/* An error after which unbind stops asking the host: it is not answering. */
bool vgpu_host_gone(int err)
{
	return err == -ETIMEDOUT || err == -ENODEV || err == -EBUSY;
}

/* What an errno from vgpu_proto_* means, in words. */
static const char *vgpu_host_error_text(int err)
{
	switch (err) {
	case -EINVAL:
		return "the backend rejected the request as invalid (status INVALID)";
	case -EOPNOTSUPP:
		return "the backend does not support it (status UNSUPPORTED)";
	case -ENOMEM:
		return "out of GPU memory: VM cap or host budget exhausted (status NO_MEMORY)";
	case -ENOENT:
		return "the backend has no such buffer or channel for this VM (status NOT_FOUND)";
	case -ENOSPC:
		return "too many buffers or channels for this VM (status LIMIT)";
	case -EPROTONOSUPPORT:
		return "the backend does not speak this ABI version (status VERSION)";
	case -ENOTCONN:
		return "the device was not initialised with HELLO (status NOT_READY)";
	case -EIO:
		return "the backend failed; the VM's state is unchanged (status INTERNAL)";
	case -EPROTO:
		return "the device broke the mailbox protocol (malformed or unexpected response)";
	case -ETIMEDOUT:
		return "no response from the backend in time (is vgpud running?)";
	case -EBUSY:
		return "the request ring stayed full (the backend is not consuming requests)";
	case -ENODEV:
		return "the device or its backend is gone";
	case -EAGAIN:
		return "the backend is busy, nothing changed; retry later (status BUSY)";
	default:
		return "unexpected error";
	}
}

/*
 * Log a failed request: "<what>: <meaning> (errno)". Expected outcomes of
 * normal use (out of memory, limits) are info, the rest warnings; both are
 * rate-limited, since userspace can trigger them at will.
 */
void vgpu_host_report(struct vgpu_drm_device *vdev, int err, const char *fmt, ...)
{
	static DEFINE_RATELIMIT_STATE(rs, 5 * HZ, 10);
	struct va_format vaf;
	va_list args;
	bool expected = err == -ENOMEM || err == -ENOSPC || err == -ENOENT || err == -EAGAIN;

	if (!__ratelimit(&rs))
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	if (expected)
		drm_info(&vdev->drm, "%pV: %s (%d)\n", &vaf, vgpu_host_error_text(err), err);
	else
		drm_warn(&vdev->drm, "%pV: %s (%d)\n", &vaf, vgpu_host_error_text(err), err);
	va_end(args);
}

/*
 * Wait (up to attach_timeout_ms) until the backend has attached to the
 * device (VGPU_STATUS_READY): only then are the feature bits valid and the
 * mailbox usable. -ENODEV if the backend is gone, -ETIMEDOUT if it never
 * came.
 */
int vgpu_host_wait_ready(struct vgpu_drm_device *vdev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(max(attach_timeout_ms, 0));
	bool waited = false;
	u32 status;

	for (;;) {
		status = vgpu_reg_read(vdev, VGPU_REG_STATUS);
		if (status == U32_MAX || (status & VGPU_STATUS_BACKEND_GONE)) {
			drm_err(&vdev->drm, "the host backend is gone (status 0x%08x): start vgpud and rebind\n",
				status);
			return -ENODEV;
		}
		if (status & VGPU_STATUS_READY)
			break;
		if (time_after(jiffies, deadline)) {
			drm_err(&vdev->drm, "the host backend did not attach within %d ms (status 0x%08x); is vgpud running? (module parameter attach_timeout_ms)\n",
				attach_timeout_ms, status);
			return -ETIMEDOUT;
		}
		if (!waited)
			drm_info(&vdev->drm, "waiting up to %d ms for the host backend to attach\n",
				 attach_timeout_ms);
		waited = true;
		msleep(50);
	}
	if (waited)
		drm_info(&vdev->drm, "host backend attached\n");
	return 0;
}

/*
 * Attach to the backend's mailbox and negotiate with HELLO. Called from
 * probe after vgpu_host_wait_ready() and after the interrupts are set up.
 */
int vgpu_host_attach(struct vgpu_drm_device *vdev)
{
	struct vgpu_proto_config config = {
		.ops = &vgpu_proto_device_ops,
		.ctx = vdev,
		.mailbox = (u8 *)vdev->bar2 + VGPU_MAILBOX_OFFSET,
		.timeout_ms = mailbox_timeout_ms,
		.lock = &vgpu_proto_lock_ops,
		.lock_ctx = vdev,
	};
	struct vgpu_hello_response hello;
	u32 wanted = VGPU_DRIVER_FEATURES;
	int ret;

	ret = vgpu_proto_init(&vdev->proto, &config);
	if (ret) {
		vgpu_host_report(vdev, ret, "attaching to the backend's mailbox failed");
		return ret;
	}

	if (vdev->irq_mode == DRM_VGPU_IRQ_MODE_MSIX)
		wanted |= VGPU_FEATURE_MSIX;
	ret = vgpu_proto_hello(&vdev->proto, wanted, &hello);
	if (ret) {
		vgpu_host_report(vdev, ret, "HELLO (ABI %u.%u, features 0x%x) failed",
				 VGPU_ABI_VERSION_MAJOR, VGPU_ABI_VERSION_MINOR, wanted);
		return ret;
	}
	if (hello.max_channels < vdev->max_channels)
		vdev->max_channels = hello.max_channels;
	return 0;
}
