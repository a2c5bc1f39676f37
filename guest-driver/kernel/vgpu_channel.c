// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vgpu_channel.c - command channels: a GEM object per channel whose mmap
 * is the channel's window in BAR2 (control page, GPFIFO ring, notifier,
 * pushbuffer), so userspace submits with plain stores and no system call.
 *
 * Mapping. The object's size is the whole window stride; userspace maps it
 * at the object's fake offset (MAP_SHARED). Pages are inserted at fault
 * time (the whole window at the first touch), write-back like the
 * kernel's own BAR2 mapping: BAR2 is host RAM shared with vgpud, not a
 * register file. The host may swap what backs the window (shadow pages
 * while it relocates memory); that happens in the host's mapping of the
 * guest, invisible here.
 *
 * Lifetime. A mapping holds a reference, so the host channel lives until
 * the handle is dropped and the window unmapped. At unbind the user
 * mappings are zapped and later faults get a per-channel dummy page
 * (accesses go nowhere, no SIGBUS, as DRM's hot-unplug rules ask); the
 * host channels are destroyed by vgpu_channels_release_all().
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/drm_vma_manager.h>

#include "vgpu_drv.h"

static_assert(PAGE_SIZE == VGPU_PAGE_SIZE, "channel windows are mapped in 4 KiB pages");

static inline struct vgpu_channel *to_vgpu_channel(struct drm_gem_object *obj)
{
	return container_of(obj, struct vgpu_channel, base);
}

u32 vgpu_channel_window_bytes(const struct vgpu_channel *ch)
{
	return VGPU_CHANNEL_WINDOW_STRIDE;
}

static void vgpu_channel_free(struct drm_gem_object *obj)
{
	struct vgpu_channel *ch = to_vgpu_channel(obj);
	struct vgpu_drm_device *vdev = to_vgpu(obj->dev);
	unsigned long flags;
	bool release;
	int idx, ret;
	bool entered = drm_dev_enter(obj->dev, &idx);

	mutex_lock(&vdev->objects_lock);
	list_del(&ch->node);
	vdev->live_channels--;
	release = entered && !ch->host_released;
	ch->host_released = true;
	mutex_unlock(&vdev->objects_lock);

	spin_lock_irqsave(&vdev->channel_table_lock, flags);
	if (vdev->channel_table[ch->info.index] == ch)
		vdev->channel_table[ch->info.index] = NULL;
	spin_unlock_irqrestore(&vdev->channel_table_lock, flags);

	if (release) {
		ret = vgpu_proto_channel_destroy(&vdev->proto, ch->info.index);
		if (ret)
			vgpu_host_report(vdev, ret, "CHANNEL_DESTROY of channel %u failed",
					 ch->info.index);
	}
	if (entered)
		drm_dev_exit(idx);

	__free_page(ch->dummy_page);
	drm_gem_object_release(obj);
	kfree(ch);
}

static vm_fault_t vgpu_channel_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct vgpu_channel *ch = to_vgpu_channel(obj);
	unsigned long first = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	unsigned long pages = obj->size >> PAGE_SHIFT;
	unsigned long page = first + ((vmf->address - vma->vm_start) >> PAGE_SHIFT);
	unsigned long base_pfn = PHYS_PFN(ch->window_phys);
	unsigned long addr;
	vm_fault_t ret;
	int idx;

	if (page >= pages)
		return VM_FAULT_SIGBUS;
	if (!drm_dev_enter(obj->dev, &idx))
		return vmf_insert_pfn(vma, vmf->address, page_to_pfn(ch->dummy_page));

	ret = vmf_insert_pfn(vma, vmf->address, base_pfn + page);
	if (ret == VM_FAULT_NOPAGE) {
		/* The rest of the window: every page of it is in use. */
		for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
			page = first + ((addr - vma->vm_start) >> PAGE_SHIFT);
			if (addr == vmf->address || page >= pages)
				continue;
			if (vmf_insert_pfn(vma, addr, base_pfn + page) != VM_FAULT_NOPAGE)
				break;
		}
	}
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct vgpu_channel_vm_ops = {
	.fault = vgpu_channel_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int vgpu_channel_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	/*
	 * Shared only: a private (copy-on-write) view of device memory
	 * makes no sense, and PFN mappings cannot be COW.
	 */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	return 0;
}

static const struct drm_gem_object_funcs vgpu_channel_funcs = {
	.free = vgpu_channel_free,
	.mmap = vgpu_channel_mmap,
	.vm_ops = &vgpu_channel_vm_ops,
};

/* What userspace learns about a new channel. */
static void vgpu_channel_describe(struct vgpu_channel *ch, u32 handle,
				  struct drm_vgpu_channel_create *args)
{
	args->handle = handle;
	args->index = ch->info.index;
	args->gpfifo_entries = ch->info.gpfifo_entries;
	args->mmap_offset = drm_vma_node_offset_addr(&ch->base.vma_node);
	args->window_bytes = vgpu_channel_window_bytes(ch);
	args->control_offset = ch->info.control_offset;
	args->gpfifo_offset = ch->info.gpfifo_offset;
	args->notifier_offset = ch->info.notifier_offset;
	args->notifier_bytes = ch->info.notifier_bytes;
	args->pushbuf_offset = ch->info.pushbuf_offset;
	args->pushbuf_bytes = ch->info.pushbuf_bytes;
	args->notifier_gpu_va = ch->info.notifier_gpu_va;
	args->pushbuf_gpu_va = ch->info.pushbuf_gpu_va;
}

/*
 * CHANNEL_CREATE (args->gpfifo_entries) on the host and wrap the window in
 * a GEM object with a handle in file and an mmap offset; fill in args.
 */
int vgpu_channel_create(struct vgpu_drm_device *vdev, struct drm_file *file,
			struct drm_vgpu_channel_create *args)
{
	u32 gpfifo_entries = args->gpfifo_entries;
	struct vgpu_channel_create_response info;
	resource_size_t window_offset;
	struct vgpu_channel *ch;
	unsigned long flags;
	u32 handle;
	bool taken;
	int ret;

	ret = vgpu_proto_channel_create(&vdev->proto, gpfifo_entries, &info);
	if (ret) {
		vgpu_host_report(vdev, ret, "CHANNEL_CREATE (%u GPFIFO entries) failed",
				 gpfifo_entries);
		return ret;
	}
	if (info.index >= vdev->max_channels) {
		drm_warn(&vdev->drm, "CHANNEL_CREATE returned window %u of %u\n",
			 info.index, vdev->max_channels);
		ret = -EPROTO;
		goto err_destroy_host;
	}

	ch = kzalloc(sizeof(*ch), GFP_KERNEL);
	if (!ch) {
		ret = -ENOMEM;
		goto err_destroy_host;
	}
	ch->dummy_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!ch->dummy_page) {
		kfree(ch);
		ret = -ENOMEM;
		goto err_destroy_host;
	}
	window_offset = VGPU_CHANNEL_WINDOW_BASE +
			(resource_size_t)info.index * VGPU_CHANNEL_WINDOW_STRIDE;
	ch->info = info;
	ch->window_phys = vdev->bar2_phys + window_offset;
	ch->window = (u8 *)vdev->bar2 + window_offset;
	drm_gem_private_object_init(&vdev->drm, &ch->base, vgpu_channel_window_bytes(ch));
	ch->base.funcs = &vgpu_channel_funcs;

	spin_lock_irqsave(&vdev->channel_table_lock, flags);
	taken = vdev->channel_table[info.index];
	if (!taken)
		vdev->channel_table[info.index] = ch;
	spin_unlock_irqrestore(&vdev->channel_table_lock, flags);

	mutex_lock(&vdev->objects_lock);
	list_add_tail(&ch->node, &vdev->channels);
	vdev->live_channels++;
	if (taken)
		ch->host_released = true; /* the index belongs to another channel */
	mutex_unlock(&vdev->objects_lock);

	/* From here on the object's free destroys the host channel. */
	if (taken) {
		drm_warn(&vdev->drm, "CHANNEL_CREATE returned window %u, which is in use\n",
			 info.index);
		ret = -EPROTO;
		goto out_put;
	}
	ret = drm_gem_create_mmap_offset(&ch->base);
	if (ret)
		goto out_put;
	ret = drm_gem_handle_create(file, &ch->base, &handle);
	if (!ret)
		vgpu_channel_describe(ch, handle, args);
	/* Another thread may close the new handle at any time now. */
out_put:
	drm_gem_object_put(&ch->base);
	return ret;

err_destroy_host:
	if (vgpu_proto_channel_destroy(&vdev->proto, info.index))
		drm_warn(&vdev->drm, "could not undo CHANNEL_CREATE of window %u\n", info.index);
	return ret;
}

/*
 * The channel behind handle, with a reference (drm_gem_object_put), or
 * NULL if handle is not a channel of file.
 */
struct vgpu_channel *vgpu_channel_lookup(struct drm_file *file, u32 handle)
{
	struct drm_gem_object *obj = drm_gem_object_lookup(file, handle);

	if (!obj)
		return NULL;
	if (obj->funcs != &vgpu_channel_funcs) {
		drm_gem_object_put(obj);
		return NULL;
	}
	return to_vgpu_channel(obj);
}

/*
 * Error interrupt: the GPU killed the channels in index_mask (bit n =
 * window n). Their fence waits fail with EIO from now on.
 */
void vgpu_channels_mark_killed(struct vgpu_drm_device *vdev, u32 index_mask)
{
	unsigned long mask = index_mask, flags;
	unsigned long killed = 0;
	unsigned int i;

	spin_lock_irqsave(&vdev->channel_table_lock, flags);
	for_each_set_bit(i, &mask, VGPU_MAX_CHANNELS) {
		struct vgpu_channel *ch = vdev->channel_table[i];

		if (ch && !atomic_xchg(&ch->killed, 1)) {
			atomic_inc(&vdev->counters.killed_channels);
			killed |= BIT(i);
		}
	}
	spin_unlock_irqrestore(&vdev->channel_table_lock, flags);

	if (killed)
		dev_warn_ratelimited(vdev->drm.dev,
				     "the GPU killed channel(s) 0x%lx (invalid command or memory access); their fence waits fail with EIO, create new channels\n",
				     killed);
	mask &= ~killed;
	if (mask)
		dev_dbg(vdev->drm.dev, "error interrupt for channels 0x%lx (unknown or already dead)\n",
			mask);
}

/*
 * Unbind (after drm_dev_unplug and after the user mappings were zapped):
 * destroy on the host every channel userspace still holds.
 */
void vgpu_channels_release_all(struct vgpu_drm_device *vdev)
{
	struct vgpu_channel *ch;
	unsigned int destroyed = 0, left = 0;
	int ret;

	mutex_lock(&vdev->objects_lock);
	list_for_each_entry(ch, &vdev->channels, node) {
		if (ch->host_released)
			continue;
		ch->host_released = true;
		if (vdev->host_unreachable) {
			left++;
			continue;
		}
		ret = vgpu_proto_channel_destroy(&vdev->proto, ch->info.index);
		if (ret) {
			vgpu_host_report(vdev, ret, "unbind: CHANNEL_DESTROY of channel %u failed",
					 ch->info.index);
			vdev->host_unreachable = vgpu_host_gone(ret);
			left++;
			continue;
		}
		destroyed++;
	}
	mutex_unlock(&vdev->objects_lock);

	if (destroyed)
		drm_info(&vdev->drm, "unbind: destroyed %u channels still held by userspace\n",
			 destroyed);
	if (left)
		drm_warn(&vdev->drm, "unbind: %u channels left to the host\n", left);
}
