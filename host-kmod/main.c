// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module init/exit, parameters and the pseudo file system
 * whose inodes give each open vGPU its own address_space, so that
 * unmap_mapping_range() zaps exactly the guest's mappings of that
 * device's BAR2 and nothing else.
 */
#include <linux/file.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "vgpu_mdev.h"

#define VGPU_MDEV_FS_MAGIC 0x76677075 /* "vgpu" */

unsigned int vgpu_mdev_request_timeout_ms = 5000;
module_param_named(request_timeout_ms, vgpu_mdev_request_timeout_ms, uint, 0644);
MODULE_PARM_DESC(request_timeout_ms,
		 "How long create/open/reset wait for vgpud's answer (ms, default 5000)");

unsigned int vgpu_mdev_close_timeout_ms = 10000;
module_param_named(close_timeout_ms, vgpu_mdev_close_timeout_ms, uint, 0644);
MODULE_PARM_DESC(close_timeout_ms,
		 "How long closing a device waits for vgpud to detach the VM (ms, default 10000)");

struct vgpu_mdev_module vgpu_mdev;

static int vgpu_mdev_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, VGPU_MDEV_FS_MAGIC) ? 0 : -ENOMEM;
}

/* No .owner: the internal mount must not pin the module. */
static struct file_system_type vgpu_mdev_fs_type = {
	.name = "vgpu_mdev",
	.init_fs_context = vgpu_mdev_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static const struct file_operations vgpu_mdev_bar2_fops = {
	.owner = THIS_MODULE,
};

/*
 * A file with a fresh inode of our pseudo file system. The guest's vmas of
 * BAR2 are switched to it (vma_set_file), so its address_space's i_mmap
 * tree is the set of mappings of this device. Holds a module reference
 * until its last fput, like anon_inode_getfile().
 */
struct file *vgpu_mdev_new_bar2_file(struct vgpu_mdev_device *vgpu)
{
	struct inode *inode;
	struct file *file;

	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-ENODEV);
	inode = alloc_anon_inode(vgpu_mdev.mnt->mnt_sb);
	if (IS_ERR(inode)) {
		module_put(THIS_MODULE);
		return ERR_CAST(inode);
	}
	file = alloc_file_pseudo(inode, vgpu_mdev.mnt, "vgpu_mdev_bar2", O_RDWR,
				 &vgpu_mdev_bar2_fops);
	if (IS_ERR(file)) {
		iput(inode);
		module_put(THIS_MODULE);
		return file;
	}
	file->private_data = vgpu;
	return file;
}

static int __init vgpu_mdev_init(void)
{
	int ret;

	mutex_init(&vgpu_mdev.parent_lock);
	mutex_init(&vgpu_mdev.lock);
	spin_lock_init(&vgpu_mdev.event_lock);
	spin_lock_init(&vgpu_mdev.idr_lock);
	idr_init(&vgpu_mdev.devices);
	INIT_LIST_HEAD(&vgpu_mdev.type_generations);

	vgpu_mdev.mnt = kern_mount(&vgpu_mdev_fs_type);
	if (IS_ERR(vgpu_mdev.mnt))
		return PTR_ERR(vgpu_mdev.mnt);

	ret = mdev_register_driver(&vgpu_mdev_driver);
	if (ret)
		goto err_mount;
	ret = vgpu_mdev_parent_init();
	if (ret)
		goto err_driver;
	ret = vgpu_mdev_pci_init();
	if (ret)
		goto err_parent;
	ret = vgpu_mdev_control_init();
	if (ret)
		goto err_pci;
	pr_info("vgpu_mdev: loaded (device ABI %u.%u, control %u); waiting for vgpud on %s\n",
		VGPU_ABI_VERSION_MAJOR, VGPU_ABI_VERSION_MINOR, VGPU_MDEV_CONTROL_VERSION,
		VGPU_MDEV_CONTROL_PATH);
	return 0;

err_pci:
	vgpu_mdev_pci_exit();
err_parent:
	vgpu_mdev_parent_exit();
err_driver:
	mdev_unregister_driver(&vgpu_mdev_driver);
err_mount:
	kern_unmount(vgpu_mdev.mnt);
	return ret;
}

static void __exit vgpu_mdev_exit(void)
{
	/*
	 * No vgpud can be connected (it holds a module reference), and no
	 * device is open (vfio holds one per open device).
	 */
	vgpu_mdev_control_exit();
	vgpu_mdev_pci_exit();
	vgpu_mdev_parent_exit();
	mdev_unregister_driver(&vgpu_mdev_driver);
	kern_unmount(vgpu_mdev.mnt);
	idr_destroy(&vgpu_mdev.devices);
	pr_info("vgpu_mdev: unloaded\n");
}

module_init(vgpu_mdev_init);
module_exit(vgpu_mdev_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vGPU mediated-device parent driver (GPUswap backend, driven by vgpud)");
MODULE_SOFTDEP("pre: vfio vfio_iommu_type1 mdev vfio_virqfd");
