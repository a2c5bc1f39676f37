// SPDX-License-Identifier: GPL-2.0-only
/*
 * BAR2: vgpud's shared memory mapped straight into the guest, and
 * the shadow swap at fault time.
 *
 * Backing. bar2_pages[] holds, per BAR2 page, a page of one of vgpud's
 * shmem files (memfd) with a reference of ours; NULL = unbacked (the
 * guest's mapping shows a per-device scratch page; read/write through the
 * device fd reads zero and drops writes). MAP_REGION and WINDOW_MAP
 * replace entries, UNMAP_REGION and close clear them. The guest's mapping
 * never holds page references (VM_PFNMAP), so an old page is released only
 * after every PTE pointing at it has been zapped.
 *
 * Mapping. QEMU mmaps the region; the vma is switched to a per-open file
 * of our pseudo file system (vma_set_file), whose address_space therefore
 * lists exactly the mappings of this device: unmap_mapping_range() on it
 * zaps them (and KVM drops its shadow entries through the mmu notifier).
 * vm_pgoff is rebased to BAR2 pages. Each vma keeps a reference on the
 * vfio device file in vm_private_data, so the device cannot be closed
 * while the guest's mapping exists. Faults insert one page (vmf_insert_pfn).
 *
 * Swap. bar2_lock orders everything: a fault checks "blocked" and inserts
 * its PTE under the lock held for reading; WINDOW_BLOCK sets "blocked"
 * under the lock held for writing (so it waits for faults that already
 * passed the check) and zaps the range before releasing it. Afterwards no
 * PTE to the old pages exists and every new access waits in the fault
 * handler - with mmap_lock dropped and VM_FAULT_RETRY where the caller
 * allows it - until WINDOW_MAP installs the new pages and wakes it. Waits
 * are killable; the guest never sees an error. A fault that inserted a
 * PTE also completes with mmap_lock dropped where it may (see the fault
 * handler): KVM must not trust a PTE a concurrent BLOCK may zap.
 */
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu_mdev.h"

#define WINDOW_BASE_PAGE (VGPU_CHANNEL_WINDOW_BASE >> PAGE_SHIFT)
#define WINDOW_STRIDE_PAGES (VGPU_CHANNEL_WINDOW_STRIDE >> PAGE_SHIFT)

int vgpu_mdev_bar2_init(struct vgpu_mdev_device *vgpu)
{
	init_rwsem(&vgpu->bar2_lock);
	init_waitqueue_head(&vgpu->bar2_wq);
	vgpu->bar2_pages = kvcalloc(VGPU_MDEV_BAR2_PAGES, sizeof(*vgpu->bar2_pages), GFP_KERNEL);
	if (!vgpu->bar2_pages)
		return -ENOMEM;
	vgpu->scratch = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!vgpu->scratch) {
		kvfree(vgpu->bar2_pages);
		vgpu->bar2_pages = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void vgpu_mdev_release_pages(struct page **pages, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!pages[i])
			continue;
		/* the guest may have written it through a PFN mapping */
		set_page_dirty_lock(pages[i]);
		put_page(pages[i]);
		pages[i] = NULL;
	}
}

void vgpu_mdev_bar2_free(struct vgpu_mdev_device *vgpu)
{
	if (vgpu->bar2_pages)
		vgpu_mdev_release_pages(vgpu->bar2_pages, VGPU_MDEV_BAR2_PAGES);
	kvfree(vgpu->bar2_pages);
	if (vgpu->scratch)
		__free_page(vgpu->scratch);
}

static void vgpu_mdev_zap_locked(struct vgpu_mdev_device *vgpu, u32 first, u32 npages)
{
	lockdep_assert_held_write(&vgpu->bar2_lock);
	if (vgpu->bar2_file)
		unmap_mapping_range(vgpu->bar2_file->f_mapping, (loff_t)first << PAGE_SHIFT,
				    (loff_t)npages << PAGE_SHIFT, 1);
}

int vgpu_mdev_bar2_open(struct vgpu_mdev_device *vgpu)
{
	struct file *file = vgpu_mdev_new_bar2_file(vgpu);
	unsigned int i;

	if (IS_ERR(file))
		return PTR_ERR(file);
	clear_highpage(vgpu->scratch);
	down_write(&vgpu->bar2_lock);
	vgpu->bar2_file = file;
	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		vgpu->windows[i].blocked = false;
	vgpu->bar2_active = true;
	up_write(&vgpu->bar2_lock);
	return 0;
}

/* Drop every backing page and unblock every window. */
void vgpu_mdev_bar2_reset(struct vgpu_mdev_device *vgpu)
{
	unsigned int i;

	down_write(&vgpu->bar2_lock);
	vgpu_mdev_zap_locked(vgpu, 0, VGPU_MDEV_BAR2_PAGES);
	vgpu_mdev_release_pages(vgpu->bar2_pages, VGPU_MDEV_BAR2_PAGES);
	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		WRITE_ONCE(vgpu->windows[i].blocked, false);
	up_write(&vgpu->bar2_lock);
	wake_up_all(&vgpu->bar2_wq);
}

/* Close: no guest mapping exists any more (each holds the device file). */
void vgpu_mdev_bar2_close(struct vgpu_mdev_device *vgpu)
{
	struct file *file;

	vgpu_mdev_bar2_reset(vgpu);
	down_write(&vgpu->bar2_lock);
	vgpu->bar2_active = false;
	file = vgpu->bar2_file;
	vgpu->bar2_file = NULL;
	up_write(&vgpu->bar2_lock);
	if (file)
		fput(file);
}

void vgpu_mdev_bar2_unblock_all(struct vgpu_mdev_device *vgpu)
{
	unsigned int i;

	down_write(&vgpu->bar2_lock);
	for (i = 0; i < VGPU_MAX_CHANNELS; i++)
		WRITE_ONCE(vgpu->windows[i].blocked, false);
	up_write(&vgpu->bar2_lock);
	wake_up_all(&vgpu->bar2_wq);
}

static bool vgpu_mdev_page_blocked(struct vgpu_mdev_device *vgpu, pgoff_t pgoff)
{
	struct vgpu_mdev_window *w;
	pgoff_t index;

	if (pgoff < WINDOW_BASE_PAGE)
		return false;
	index = (pgoff - WINDOW_BASE_PAGE) / WINDOW_STRIDE_PAGES;
	if (index >= VGPU_MAX_CHANNELS)
		return false;
	w = &vgpu->windows[index];
	return READ_ONCE(w->blocked) && pgoff >= w->first_page &&
	       pgoff < (pgoff_t)w->first_page + w->npages;
}

static vm_fault_t vgpu_mdev_bar2_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vgpu_mdev_device *vgpu = vma->vm_file->private_data;
	pgoff_t pgoff = vmf->pgoff;
	struct page *page;
	vm_fault_t ret;

	if (pgoff >= VGPU_MDEV_BAR2_PAGES)
		return VM_FAULT_SIGBUS;
	for (;;) {
		down_read(&vgpu->bar2_lock);
		if (!vgpu_mdev_page_blocked(vgpu, pgoff))
			break;
		up_read(&vgpu->bar2_lock);
		atomic_inc(&vgpu->fault_waits);
		if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
			return VM_FAULT_RETRY;
		if (vmf->flags & FAULT_FLAG_ALLOW_RETRY) {
			/* wait without mmap_lock; the vma may go away meanwhile */
			get_device(&vgpu->vdev.device);
			mmap_read_unlock(vma->vm_mm);
			wait_event_killable(vgpu->bar2_wq, !vgpu_mdev_page_blocked(vgpu, pgoff));
			put_device(&vgpu->vdev.device);
			return VM_FAULT_RETRY;
		}
		if (wait_event_killable(vgpu->bar2_wq, !vgpu_mdev_page_blocked(vgpu, pgoff)))
			return VM_FAULT_SIGBUS; /* fatal signal: the task is dying */
	}
	page = vgpu->bar2_pages[pgoff];
	if (!page)
		page = vgpu->scratch;
	ret = vmf_insert_pfn(vma, vmf->address, page_to_pfn(page));
	up_read(&vgpu->bar2_lock);
	/*
	 * KVM's hva_to_pfn_remapped() walks the page table again after
	 * fixup_user_fault() unless the fault dropped mmap_lock; a BLOCK
	 * zapping the new PTE in between (it does not take mmap_lock) would
	 * make KVM fail the guest's access with -EFAULT. Completing with the
	 * lock dropped makes every caller start over from its own page
	 * table walk instead (as fault_dirty_shared_page() does).
	 */
	if (ret == VM_FAULT_NOPAGE && (vmf->flags & FAULT_FLAG_ALLOW_RETRY) &&
	    !(vmf->flags & FAULT_FLAG_RETRY_NOWAIT)) {
		mmap_read_unlock(vma->vm_mm);
		ret |= VM_FAULT_COMPLETED;
	}
	return ret;
}

static void vgpu_mdev_bar2_vm_open(struct vm_area_struct *vma)
{
	get_file(vma->vm_private_data);
}

static void vgpu_mdev_bar2_vm_close(struct vm_area_struct *vma)
{
	fput(vma->vm_private_data);
}

static const struct vm_operations_struct vgpu_mdev_bar2_vm_ops = {
	.open = vgpu_mdev_bar2_vm_open,
	.close = vgpu_mdev_bar2_vm_close,
	.fault = vgpu_mdev_bar2_fault,
};

int vgpu_mdev_bar2_mmap(struct vgpu_mdev_device *vgpu, struct vm_area_struct *vma)
{
	u64 pos = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 off = pos & VGPU_MDEV_REGION_MASK;
	u64 len = vma->vm_end - vma->vm_start;
	int ret = 0;

	if (VGPU_MDEV_REGION_INDEX(pos) != VFIO_PCI_BAR2_REGION_INDEX)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (off >= VGPU_BAR2_SIZE || len > VGPU_BAR2_SIZE - off)
		return -EINVAL;

	down_read(&vgpu->bar2_lock);
	if (!vgpu->bar2_active) {
		ret = -ENODEV;
		goto out;
	}
	vma->vm_pgoff = off >> PAGE_SHIFT;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
	vma->vm_private_data = get_file(vma->vm_file);
	vma_set_file(vma, vgpu->bar2_file);
	vma->vm_ops = &vgpu_mdev_bar2_vm_ops;
out:
	up_read(&vgpu->bar2_lock);
	return ret;
}

/* read()/write() on the region: through a bounce page, honouring blocks. */
ssize_t vgpu_mdev_bar2_rw(struct vgpu_mdev_device *vgpu, char __user *buf, size_t count,
			  loff_t pos, bool write)
{
	void *bounce;
	size_t done = 0;
	ssize_t ret = 0;

	bounce = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	while (done < count) {
		u64 off = pos + done;
		pgoff_t pgoff = off >> PAGE_SHIFT;
		unsigned int in_page = offset_in_page(off);
		size_t n = min_t(size_t, count - done, PAGE_SIZE - in_page);
		struct page *page = NULL;

		if (write && copy_from_user(bounce, buf + done, n)) {
			ret = -EFAULT;
			break;
		}
		if (pgoff < VGPU_MDEV_BAR2_PAGES) {
			down_read(&vgpu->bar2_lock);
			while (vgpu_mdev_page_blocked(vgpu, pgoff)) {
				up_read(&vgpu->bar2_lock);
				if (wait_event_killable(vgpu->bar2_wq,
							!vgpu_mdev_page_blocked(vgpu, pgoff))) {
					ret = -EINTR;
					goto out;
				}
				down_read(&vgpu->bar2_lock);
			}
			page = vgpu->bar2_pages[pgoff];
			if (page && write)
				memcpy_to_page(page, in_page, bounce, n);
			else if (page)
				memcpy_from_page(bounce, page, in_page, n);
			up_read(&vgpu->bar2_lock);
		}
		if (!write) {
			if (!page)
				memset(bounce, 0, n);
			if (copy_to_user(buf + done, bounce, n)) {
				ret = -EFAULT;
				break;
			}
		}
		done += n;
	}
out:
	kfree(bounce);
	return done ? done : ret;
}

/* References to npages pages of a shmem file, from fd_offset. */
static int vgpu_mdev_file_pages(s32 fd, u64 fd_offset, u32 npages, struct page **pages)
{
	struct file *file;
	u32 i;
	int ret = 0;

	if (!PAGE_ALIGNED(fd_offset))
		return -EINVAL;
	file = fget(fd);
	if (!file)
		return -EBADF;
	if (!shmem_mapping(file->f_mapping) ||
	    (file->f_mode & (FMODE_READ | FMODE_WRITE)) != (FMODE_READ | FMODE_WRITE)) {
		ret = -EINVAL; /* memfd/shmem opened read-write only */
		goto out;
	}
	if (fd_offset > i_size_read(file_inode(file)) ||
	    (u64)npages << PAGE_SHIFT > i_size_read(file_inode(file)) - fd_offset) {
		ret = -EINVAL; /* never grow vgpud's file */
		goto out;
	}
	for (i = 0; i < npages; i++) {
		struct page *page = shmem_read_mapping_page(file->f_mapping,
							    (fd_offset >> PAGE_SHIFT) + i);

		if (IS_ERR(page)) {
			ret = PTR_ERR(page);
			vgpu_mdev_release_pages(pages, i);
			goto out;
		}
		pages[i] = page;
	}
out:
	fput(file);
	return ret;
}

static int vgpu_mdev_check_range(u64 bar2_offset, u64 bytes, u32 *first, u32 *npages)
{
	if (!bytes || !PAGE_ALIGNED(bar2_offset) || !PAGE_ALIGNED(bytes) ||
	    bytes > VGPU_BAR2_SIZE || bar2_offset > VGPU_BAR2_SIZE - bytes)
		return -EINVAL;
	*first = bar2_offset >> PAGE_SHIFT;
	*npages = bytes >> PAGE_SHIFT;
	return 0;
}

/*
 * Install pages[] (NULL entries: unbacked) at [first, +npages); the old
 * pages are returned in pages[] for the caller to release.
 */
static int vgpu_mdev_replace(struct vgpu_mdev_device *vgpu, u32 first, u32 npages,
			     struct page **pages)
{
	u32 i;

	down_write(&vgpu->bar2_lock);
	if (!vgpu->bar2_active) {
		up_write(&vgpu->bar2_lock);
		return -ENODEV;
	}
	vgpu_mdev_zap_locked(vgpu, first, npages);
	for (i = 0; i < npages; i++)
		swap(vgpu->bar2_pages[first + i], pages[i]);
	up_write(&vgpu->bar2_lock);
	return 0;
}

int vgpu_mdev_map_region(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_region *r)
{
	struct page **pages;
	u32 first, npages;
	int ret;

	ret = vgpu_mdev_check_range(r->bar2_offset, r->bytes, &first, &npages);
	if (ret)
		return ret;
	pages = kvcalloc(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	ret = vgpu_mdev_file_pages(r->fd, r->fd_offset, npages, pages);
	if (!ret)
		ret = vgpu_mdev_replace(vgpu, first, npages, pages);
	vgpu_mdev_release_pages(pages, npages); /* old pages, or new ones on error */
	kvfree(pages);
	return ret;
}

int vgpu_mdev_unmap_region(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_region *r)
{
	struct page **pages;
	u32 first, npages;
	int ret;

	if (r->fd != -1 || r->fd_offset)
		return -EINVAL;
	ret = vgpu_mdev_check_range(r->bar2_offset, r->bytes, &first, &npages);
	if (ret)
		return ret;
	pages = kvcalloc(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	ret = vgpu_mdev_replace(vgpu, first, npages, pages);
	if (ret == -ENODEV)
		ret = 0; /* closed: nothing is mapped */
	vgpu_mdev_release_pages(pages, npages);
	kvfree(pages);
	return ret;
}

static int vgpu_mdev_check_window(u32 index, u64 bar2_offset, u64 bytes, u32 *first,
				  u32 *npages)
{
	u64 base;

	if (index >= VGPU_MAX_CHANNELS || vgpu_mdev_check_range(bar2_offset, bytes, first, npages))
		return -EINVAL;
	base = VGPU_CHANNEL_WINDOW_BASE + (u64)index * VGPU_CHANNEL_WINDOW_STRIDE;
	if (bar2_offset < base || bar2_offset + bytes > base + VGPU_CHANNEL_WINDOW_STRIDE)
		return -EINVAL;
	return 0;
}

int vgpu_mdev_window_block(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_window_block *b)
{
	struct vgpu_mdev_window *w;
	u32 first, npages;
	int ret = 0;

	if (vgpu_mdev_check_window(b->index, b->bar2_offset, b->bytes, &first, &npages))
		return -EINVAL;
	down_write(&vgpu->bar2_lock);
	w = &vgpu->windows[b->index];
	if (!vgpu->bar2_active || vgpu->backend_gone) {
		ret = -ENODEV;
	} else if (w->blocked) {
		ret = -EBUSY;
	} else {
		w->first_page = first;
		w->npages = npages;
		WRITE_ONCE(w->blocked, true);
		/* after this no PTE to the current pages exists */
		vgpu_mdev_zap_locked(vgpu, first, npages);
	}
	up_write(&vgpu->bar2_lock);
	return ret;
}

int vgpu_mdev_window_map(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_window_map *m)
{
	struct vgpu_mdev_window *w;
	struct page **pages;
	u32 first, npages, i, done = 0;
	u64 expect;
	int ret;

	if (m->index >= VGPU_MAX_CHANNELS || !m->count ||
	    m->count > VGPU_MDEV_WINDOW_SEGMENTS_MAX ||
	    m->target > VGPU_MDEV_WINDOW_SHADOW)
		return -EINVAL;
	/* segments: contiguous, in BAR2 order, inside the window */
	expect = m->segment[0].bar2_offset;
	for (i = 0; i < m->count; i++) {
		const struct vgpu_mdev_segment *s = &m->segment[i];
		u32 f, n;

		if (s->reserved || s->bar2_offset != expect ||
		    vgpu_mdev_check_window(m->index, s->bar2_offset, s->bytes, &f, &n))
			return -EINVAL;
		expect += s->bytes;
	}
	first = m->segment[0].bar2_offset >> PAGE_SHIFT;
	npages = (expect - m->segment[0].bar2_offset) >> PAGE_SHIFT;

	pages = kvcalloc(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < m->count; i++) {
		const struct vgpu_mdev_segment *s = &m->segment[i];
		u32 n = s->bytes >> PAGE_SHIFT;

		ret = vgpu_mdev_file_pages(s->fd, s->fd_offset, n, pages + done);
		if (ret)
			goto out;
		done += n;
	}

	down_write(&vgpu->bar2_lock);
	w = &vgpu->windows[m->index];
	if (!vgpu->bar2_active) {
		ret = -ENODEV;
	} else if (!w->blocked || w->first_page != first || w->npages != npages) {
		ret = -EINVAL; /* not blocked, or the segments do not cover the block */
	} else {
		/* no PTE exists in the range: nothing to zap */
		for (i = 0; i < npages; i++)
			swap(vgpu->bar2_pages[first + i], pages[i]);
		WRITE_ONCE(w->blocked, false);
		atomic_inc(m->target == VGPU_MDEV_WINDOW_SHADOW ? &vgpu->swaps_to_shadow :
								  &vgpu->swaps_to_real);
	}
	up_write(&vgpu->bar2_lock);
	if (!ret)
		wake_up_all(&vgpu->bar2_wq);
out:
	vgpu_mdev_release_pages(pages, npages);
	kvfree(pages);
	return ret;
}
