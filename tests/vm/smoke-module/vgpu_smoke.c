// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu_smoke - trivial out-of-tree module for tests/vm/smoke.sh.
 *
 * It only proves the build chain: built on the host against the fetched
 * Debian linux-headers, loaded inside the L1 VM running that kernel.
 */
#include <linux/module.h>
#include <linux/init.h>
#include <linux/printk.h>

static int __init vgpu_smoke_init(void)
{
	pr_info("vgpu_smoke: loaded\n");
	return 0;
}

static void __exit vgpu_smoke_exit(void)
{
	pr_info("vgpu_smoke: unloaded\n");
}

module_init(vgpu_smoke_init);
module_exit(vgpu_smoke_exit);
MODULE_DESCRIPTION("vGPU VM test chain: out-of-tree build check");
MODULE_LICENSE("GPL");
