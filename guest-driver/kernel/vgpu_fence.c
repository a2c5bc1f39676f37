// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_fence.c - waiting for a fence: a 64-bit little-endian word in a
 * channel's notifier area that the GPU advances (SEMAPHORE_RELEASE).
 *
 * A waiter sleeps on vgpu_drm_device.fence_wq, which the fence interrupt, the
 * error interrupt and unbind wake. It re-checks the word at least every
 * FENCE_RECHECK_MS (every jiffy without interrupts), so a fence submitted
 * without the interrupt flag, or a lost interrupt, costs latency, never a
 * hang. A lost device (VGPU_IRQ_DEVICE_LOST) wakes the waiters, which end
 * with -ENODEV at once; without that interrupt a slice without progress
 * reads VGPU_REG_STATUS, so a wait on a backend that went away still ends
 * with -ENODEV within FENCE_RECHECK_MS. Signals interrupt the wait;
 * the deadline is absolute, so a restarted call waits no longer than the
 * first would have.
 */
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>

#include <drm/drm_drv.h>

#include "vgpu_drv.h"

#define FENCE_RECHECK_MS 100

/* 1: passed, 0: not yet, -EIO: channel killed, -ENODEV: device gone. */
static int vgpu_fence_check(struct vgpu_drm_device *vdev, struct vgpu_channel *ch, u32 offset,
			    u64 value)
{
	const __le64 *word;
	int idx, ret;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	if (atomic_read(&ch->killed)) {
		ret = -EIO;
	} else if (ch->host_released) {
		ret = -ENODEV;
	} else {
		word = (const __le64 *)((const u8 *)ch->window + ch->info.notifier_offset + offset);
		ret = le64_to_cpu(READ_ONCE(*word)) >= value;
		/* What the GPU wrote before the fence is visible after it. */
		virt_rmb();
		/* A lost device never passes the fence (vgpu_device_lost woke us). */
		if (!ret && atomic_read(&vdev->device_lost))
			ret = -ENODEV;
	}
	drm_dev_exit(idx);
	return ret;
}

/* -ENODEV once the backend is gone: the fence would never pass. */
static int vgpu_fence_backend_check(struct vgpu_drm_device *vdev)
{
	int idx, ret = 0;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	if (vgpu_backend_gone(vdev))
		ret = -ENODEV;
	drm_dev_exit(idx);
	return ret;
}

int vgpu_fence_wait(struct vgpu_drm_device *vdev, struct vgpu_channel *ch, u32 offset,
		    u64 value, s64 deadline_ns)
{
	unsigned long slice_max = vdev->irq_mode == DRM_VGPU_IRQ_MODE_POLL ?
				  1 : msecs_to_jiffies(FENCE_RECHECK_MS);
	unsigned long slice;
	u64 now, left_ns;
	long left;
	int ret;

	if ((offset & 7) || ch->info.notifier_bytes < 8 || offset > ch->info.notifier_bytes - 8)
		return -EINVAL;

	ret = vgpu_fence_check(vdev, ch, offset, value);
	if (ret)
		return ret < 0 ? ret : 0;
	atomic64_inc(&vdev->counters.fence_waits);

	for (;;) {
		now = ktime_get_ns();
		if (deadline_ns <= 0 || now >= (u64)deadline_ns)
			return -ETIMEDOUT;
		left_ns = (u64)deadline_ns - now;
		slice = min(nsecs_to_jiffies(left_ns) + 1, slice_max);
		left = wait_event_interruptible_timeout(vdev->fence_wq,
							(ret = vgpu_fence_check(vdev, ch, offset,
										value)) != 0,
							slice);
		if (left < 0)
			return -ERESTARTSYS;
		if (ret)
			return ret < 0 ? ret : 0;
		/* A slice without progress: is anyone still running the GPU? */
		ret = vgpu_fence_backend_check(vdev);
		if (ret)
			return ret;
	}
}
