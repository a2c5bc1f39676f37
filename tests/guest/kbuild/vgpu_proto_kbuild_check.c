// SPDX-License-Identifier: MIT
/*
 * vgpu_proto_kbuild_check.c - proves that the guest-side protocol code
 * (guest-driver/common) builds as part of a kernel module, the way vgpu.ko
 * will use it: a lock hook on a mutex and device ops over MMIO. Built by
 * tests/guest/kbuild-check.sh; never loaded.
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "vgpu_proto.h"

struct check_device {
	void __iomem *bar0;
	struct mutex lock;
};

static uint32_t check_reg_read(void *ctx, uint32_t offset)
{
	struct check_device *dev = ctx;

	return readl(dev->bar0 + offset);
}

static void check_reg_write(void *ctx, uint32_t offset, uint32_t value)
{
	struct check_device *dev = ctx;

	writel(value, dev->bar0 + offset);
}

static int check_wait_irq(void *ctx, int timeout_ms)
{
	(void)ctx;
	(void)timeout_ms;
	return 0;
}

static void check_lock(void *ctx)
{
	mutex_lock(ctx);
}

static void check_unlock(void *ctx)
{
	mutex_unlock(ctx);
}

static const struct vgpu_proto_device_ops check_ops = {
	.reg_read = check_reg_read,
	.reg_write = check_reg_write,
	.wait_irq = check_wait_irq,
};

static const struct vgpu_proto_lock_ops check_lock_ops = {
	.lock = check_lock,
	.unlock = check_unlock,
};

/* Referenced so that every entry point is compiled and linked. */
int vgpu_proto_kbuild_check_use(struct vgpu_proto *proto, void *mailbox, void __iomem *bar0);
int vgpu_proto_kbuild_check_use(struct vgpu_proto *proto, void *mailbox, void __iomem *bar0)
{
	static struct check_device dev;
	struct vgpu_proto_config config = {
		.ops = &check_ops,
		.ctx = &dev,
		.mailbox = mailbox,
		.lock = &check_lock_ops,
		.lock_ctx = &dev.lock,
	};
	struct vgpu_alloc_response alloc;
	struct vgpu_channel_create_response channel;
	struct vgpu_query_response query;
	struct vgpu_stats_response stats;
	struct vgpu_module_load_request module = {
		.image_va = 0x100000000ull,
		.image_bytes = 4096,
		.table_va = 0x100200000ull,
		.table_bytes = 4096,
	};
	struct vgpu_module_load_response loaded;
	int ret;

	dev.bar0 = bar0;
	mutex_init(&dev.lock);
	ret = vgpu_proto_init(proto, &config);
	ret = ret ?: vgpu_proto_hello(proto, VGPU_FEATURE_MSIX, NULL);
	ret = ret ?: vgpu_proto_query(proto, &query);
	ret = ret ?: vgpu_proto_alloc(proto, 4096, VGPU_PRIORITY_DEFAULT, 0, &alloc);
	ret = ret ?: vgpu_proto_set_priority(proto, alloc.handle, 1);
	ret = ret ?: vgpu_proto_channel_create(proto, 0, &channel);
	ret = ret ?: vgpu_proto_channel_destroy(proto, channel.index);
	ret = ret ?: vgpu_proto_stats(proto, &stats);
	ret = ret ?: vgpu_proto_module_load(proto, &module, &loaded);
	ret = ret ?: vgpu_proto_module_unload(proto, loaded.module);
	ret = ret ?: vgpu_proto_free(proto, alloc.handle);
	if (ret)
		pr_info("vgpu: %s (%d)\n", vgpu_status_name(VGPU_STATUS_INTERNAL), ret);
	return ret;
}
EXPORT_SYMBOL_GPL(vgpu_proto_kbuild_check_use);

static int __init check_init(void)
{
	return vgpu_status_to_errno(VGPU_STATUS_OK);
}

static void __exit check_exit(void)
{
}

module_init(check_init);
module_exit(check_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("build check of the vGPU guest protocol code");
