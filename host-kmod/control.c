// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/vgpu_mdev, through which vgpud drives the module
 * (vgpu/abi/mdev_control.h): one controller at a time, ioctls, and the event
 * queue read() drains.
 *
 * The queue holds struct vgpu_mdev_pending nodes under vgpu_mdev.event_lock:
 * standalone records (REMOVE, EXISTS, PIN_RELEASED: at most one per device
 * or pin), each device's request slot (one request in flight per device,
 * made under its state_lock) and each device's REG_WRITE slot, whose record
 * is assembled from the pending register state when it is read. Nothing is
 * ever dropped and nothing grows without bound.
 *
 * Lock order: event_lock -> a device's reg_lock.
 */
#include <linux/ctype.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uuid.h>

#include "vgpu_mdev.h"

struct vgpu_mdev_control {
	struct list_head events;
	wait_queue_head_t wq;
	u32 next_seq;
};

bool vgpu_mdev_controller_present(void)
{
	bool present;

	spin_lock(&vgpu_mdev.event_lock);
	present = !!vgpu_mdev.controller;
	spin_unlock(&vgpu_mdev.event_lock);
	return present;
}

void vgpu_mdev_fill_device_event(struct vgpu_mdev_device *vgpu, struct vgpu_mdev_event *rec,
				 u32 type)
{
	const u8 *g = vgpu->mdev->uuid.b;
	u8 *u = rec->payload.device.uuid;

	memset(rec, 0, sizeof(*rec));
	rec->type = type;
	rec->device_id = vgpu->id;
	/*
	 * guid_t (as mdev parses it) to RFC 4122 byte order: the string in
	 * sysfs and uuid_unparse(uuid) agree
	 */
	u[0] = g[3]; u[1] = g[2]; u[2] = g[1]; u[3] = g[0];
	u[4] = g[5]; u[5] = g[4];
	u[6] = g[7]; u[7] = g[6];
	memcpy(u + 8, g + 8, 8);
	rec->payload.device.type_index = vgpu->type->index;
	rec->payload.device.session = vgpu->session;
	rec->payload.device.open = vgpu->open;
}

/* Queue a standalone record (ownership passes to the queue). */
void vgpu_mdev_queue_record(struct vgpu_mdev_pending *p)
{
	struct vgpu_mdev_control *ctl;

	spin_lock(&vgpu_mdev.event_lock);
	ctl = vgpu_mdev.controller;
	if (ctl) {
		list_add_tail(&p->link, &ctl->events);
		wake_up_interruptible(&ctl->wq);
		p = NULL;
	}
	spin_unlock(&vgpu_mdev.event_lock);
	kfree(p);
}

void vgpu_mdev_notify_regs(struct vgpu_mdev_device *vgpu)
{
	struct vgpu_mdev_control *ctl;

	spin_lock(&vgpu_mdev.event_lock);
	ctl = vgpu_mdev.controller;
	if (ctl && !vgpu->events_off && list_empty(&vgpu->regs_event.link)) {
		list_add_tail(&vgpu->regs_event.link, &ctl->events);
		wake_up_interruptible(&ctl->wq);
	}
	spin_unlock(&vgpu_mdev.event_lock);
}

/* The device is going away: take its slots off the queue for good. */
void vgpu_mdev_dequeue_device(struct vgpu_mdev_device *vgpu)
{
	spin_lock(&vgpu_mdev.event_lock);
	vgpu->events_off = true;
	list_del_init(&vgpu->regs_event.link);
	list_del_init(&vgpu->request.link);
	spin_unlock(&vgpu_mdev.event_lock);
}

/*
 * Ask vgpud and wait for its VGPU_MDEV_REPLY: 0 or its negative errno,
 * -ENODEV without vgpud (or if it goes away meanwhile), -ETIMEDOUT, -EINTR
 * (killable waits only). The caller serializes requests per device.
 */
int vgpu_mdev_request(struct vgpu_mdev_device *vgpu, u32 type, unsigned int timeout_ms,
		      bool killable)
{
	unsigned long timeout = msecs_to_jiffies(timeout_ms);
	struct vgpu_mdev_control *ctl;
	long left;
	int ret;

	spin_lock(&vgpu_mdev.event_lock);
	ctl = vgpu_mdev.controller;
	if (!ctl || vgpu->events_off) {
		spin_unlock(&vgpu_mdev.event_lock);
		return -ENODEV;
	}
	if (!++ctl->next_seq)
		++ctl->next_seq;
	vgpu->request_seq = ctl->next_seq;
	vgpu->request_done = false;
	vgpu->request_status = 0;
	vgpu_mdev_fill_device_event(vgpu, &vgpu->request.rec, type);
	vgpu->request.rec.seq = vgpu->request_seq;
	list_add_tail(&vgpu->request.link, &ctl->events);
	wake_up_interruptible(&ctl->wq);
	spin_unlock(&vgpu_mdev.event_lock);

	if (killable)
		left = wait_event_killable_timeout(vgpu->request_wq, READ_ONCE(vgpu->request_done),
						   timeout);
	else
		left = wait_event_timeout(vgpu->request_wq, READ_ONCE(vgpu->request_done), timeout);

	spin_lock(&vgpu_mdev.event_lock);
	if (vgpu->request_done)
		ret = vgpu->request_status;
	else
		ret = left < 0 ? -EINTR : -ETIMEDOUT;
	vgpu->request_seq = 0;
	list_del_init(&vgpu->request.link);
	spin_unlock(&vgpu_mdev.event_lock);
	return ret;
}

/* What a failed vgpu_mdev_request means, for the kernel log. */
const char *vgpu_mdev_request_failure(int err, const char *refused)
{
	switch (err) {
	case -ENODEV:
		return "vgpud is not running; start it and retry";
	case -ETIMEDOUT:
		return "vgpud did not answer in time";
	case -EINTR:
		return "interrupted while waiting for vgpud";
	default:
		return refused;
	}
}

static int vgpu_mdev_reply(struct vgpu_mdev_device *vgpu, const struct vgpu_mdev_reply *r)
{
	char msg[VGPU_MDEV_MESSAGE_MAX];
	int ret = 0;
	size_t i;

	if (r->reserved || r->status > 0 || r->status < -MAX_ERRNO || !r->seq)
		return -EINVAL;
	spin_lock(&vgpu_mdev.event_lock);
	if (vgpu->request_seq == r->seq && !vgpu->request_done) {
		vgpu->request_done = true;
		vgpu->request_status = r->status;
		wake_up(&vgpu->request_wq);
	} else {
		ret = -ESRCH; /* not asked, or the asker gave up */
	}
	spin_unlock(&vgpu_mdev.event_lock);
	if (!ret && r->status) {
		for (i = 0; i + 1 < sizeof(msg) && r->message[i]; i++)
			msg[i] = isprint(r->message[i]) ? r->message[i] : '?';
		msg[i] = 0;
		dev_warn(&vgpu->mdev->dev, "vgpud: %s (%d)\n", i ? msg : "refused", r->status);
	}
	return ret;
}

static int vgpu_mdev_control_open(struct inode *inode, struct file *file)
{
	struct vgpu_mdev_control *ctl;
	struct vgpu_mdev_device *vgpu;
	int id;

	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL);
	if (!ctl)
		return -ENOMEM;
	INIT_LIST_HEAD(&ctl->events);
	init_waitqueue_head(&ctl->wq);

	mutex_lock(&vgpu_mdev.lock);
	spin_lock(&vgpu_mdev.event_lock);
	if (vgpu_mdev.controller) {
		spin_unlock(&vgpu_mdev.event_lock);
		mutex_unlock(&vgpu_mdev.lock);
		kfree(ctl);
		return -EBUSY;
	}
	vgpu_mdev.controller = ctl;
	spin_unlock(&vgpu_mdev.event_lock);

	/*
	 * devices created under an earlier vgpud: tell this one (the idr only
	 * changes under vgpu_mdev.lock)
	 */
	idr_for_each_entry(&vgpu_mdev.devices, vgpu, id) {
		struct vgpu_mdev_pending *p = kzalloc(sizeof(*p), GFP_KERNEL);

		if (!p)
			break;
		p->kind = VGPU_MDEV_PENDING_RECORD;
		vgpu_mdev_fill_device_event(vgpu, &p->rec, VGPU_MDEV_EVENT_EXISTS);
		vgpu_mdev_queue_record(p);
	}
	mutex_unlock(&vgpu_mdev.lock);

	file->private_data = ctl;
	pr_info("vgpu_mdev: vgpud connected (pid %d)\n", task_pid_nr(current));
	return nonseekable_open(inode, file);
}

static int vgpu_mdev_control_release(struct inode *inode, struct file *file)
{
	struct vgpu_mdev_control *ctl = file->private_data;
	struct vgpu_mdev_pending *p, *next;
	struct vgpu_mdev_device *vgpu;
	LIST_HEAD(records);
	int id;

	spin_lock(&vgpu_mdev.event_lock);
	vgpu_mdev.controller = NULL;
	while (!list_empty(&ctl->events)) {
		p = list_first_entry(&ctl->events, struct vgpu_mdev_pending, link);
		list_del_init(&p->link);
		if (p->kind == VGPU_MDEV_PENDING_RECORD)
			list_add_tail(&p->link, &records);
	}
	spin_unlock(&vgpu_mdev.event_lock);
	list_for_each_entry_safe(p, next, &records, link)
		kfree(p);

	/* release everyone who waits for this vgpud */
	mutex_lock(&vgpu_mdev.lock);
	idr_for_each_entry(&vgpu_mdev.devices, vgpu, id)
		vgpu_mdev_device_backend_gone(vgpu);
	mutex_unlock(&vgpu_mdev.lock);

	kfree(ctl);
	pr_info("vgpu_mdev: vgpud disconnected\n");
	vgpu_mdev_parent_maybe_unregister();
	return 0;
}

/* One event, or false if none. */
static bool vgpu_mdev_pop(struct vgpu_mdev_control *ctl, struct vgpu_mdev_event *rec)
{
	struct vgpu_mdev_pending *p;

	spin_lock(&vgpu_mdev.event_lock);
	while (!list_empty(&ctl->events)) {
		p = list_first_entry(&ctl->events, struct vgpu_mdev_pending, link);
		list_del_init(&p->link);
		switch (p->kind) {
		case VGPU_MDEV_PENDING_RECORD:
			*rec = p->rec;
			spin_unlock(&vgpu_mdev.event_lock);
			kfree(p);
			return true;
		case VGPU_MDEV_PENDING_REQUEST:
			*rec = p->rec;
			spin_unlock(&vgpu_mdev.event_lock);
			return true;
		case VGPU_MDEV_PENDING_REGS:
			if (vgpu_mdev_regs_fill_event(p->vgpu, rec)) {
				spin_unlock(&vgpu_mdev.event_lock);
				return true;
			}
			break;
		}
	}
	spin_unlock(&vgpu_mdev.event_lock);
	return false;
}

static bool vgpu_mdev_has_events(struct vgpu_mdev_control *ctl)
{
	bool any;

	spin_lock(&vgpu_mdev.event_lock);
	any = !list_empty(&ctl->events);
	spin_unlock(&vgpu_mdev.event_lock);
	return any;
}

static ssize_t vgpu_mdev_control_read(struct file *file, char __user *buf, size_t count,
				      loff_t *ppos)
{
	struct vgpu_mdev_control *ctl = file->private_data;
	struct vgpu_mdev_event rec;
	size_t done = 0;
	int ret;

	if (count < sizeof(rec))
		return -EINVAL;
	while (done + sizeof(rec) <= count) {
		if (!vgpu_mdev_pop(ctl, &rec)) {
			if (done)
				break;
			if (file->f_flags & O_NONBLOCK)
				return -EAGAIN;
			ret = wait_event_interruptible(ctl->wq, vgpu_mdev_has_events(ctl));
			if (ret)
				return ret;
			continue;
		}
		if (copy_to_user(buf + done, &rec, sizeof(rec)))
			return done ? done : -EFAULT;
		done += sizeof(rec);
	}
	return done;
}

static __poll_t vgpu_mdev_control_poll(struct file *file, poll_table *wait)
{
	struct vgpu_mdev_control *ctl = file->private_data;

	poll_wait(file, &ctl->wq, wait);
	return vgpu_mdev_has_events(ctl) ? EPOLLIN | EPOLLRDNORM : 0;
}

/* Every control ioctl's argument; a device's starts with its device_id. */
union vgpu_mdev_ioctl_arg {
	u32 device_id;
	struct vgpu_mdev_version version;
	struct vgpu_mdev_set_types set_types;
	struct vgpu_mdev_set_available set_available;
	struct vgpu_mdev_reply reply;
	struct vgpu_mdev_reg_update update;
	struct vgpu_mdev_reg_read read;
	struct vgpu_mdev_region region;
	struct vgpu_mdev_window_block block;
	struct vgpu_mdev_window_map map;
	struct vgpu_mdev_irq irq;
	struct vgpu_mdev_dma dma;
	struct vgpu_mdev_pin pin;
	struct vgpu_mdev_stats stats;
	struct vgpu_mdev_kick kick;
};

typedef int vgpu_mdev_module_ioctl_t(union vgpu_mdev_ioctl_arg *a);
typedef int vgpu_mdev_device_ioctl_t(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a);

static int vgpu_mdev_ioctl_get_version(union vgpu_mdev_ioctl_arg *a)
{
	a->version = (struct vgpu_mdev_version){
		.version = VGPU_MDEV_CONTROL_VERSION,
		.abi_version = VGPU_ABI_VERSION,
		.event_size = sizeof(struct vgpu_mdev_event),
		.max_types = VGPU_MDEV_MAX_TYPES,
		.bar2_region_size = VGPU_MDEV_BAR2_REGION_SIZE,
		.features = VGPU_MDEV_FEATURE_MSIX | VGPU_MDEV_FEATURE_MSI |
			    VGPU_MDEV_FEATURE_INTX | VGPU_MDEV_FEATURE_KICK,
	};
	return 0;
}

static int vgpu_mdev_ioctl_set_types(union vgpu_mdev_ioctl_arg *a)
{
	const struct vgpu_mdev_set_types *st = &a->set_types;
	struct vgpu_mdev_type_info *infos;
	int ret;

	if (st->flags || !st->count || st->count > VGPU_MDEV_MAX_TYPES)
		return -EINVAL;
	infos = memdup_user(u64_to_user_ptr(st->types), st->count * sizeof(*infos));
	if (IS_ERR(infos))
		return PTR_ERR(infos);
	ret = vgpu_mdev_set_types(infos, st->count);
	kfree(infos);
	return ret;
}

static int vgpu_mdev_ioctl_set_available(union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_set_available(a->set_available.type_index, a->set_available.available);
}

static int vgpu_mdev_ioctl_reply(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_reply(vgpu, &a->reply);
}

static int vgpu_mdev_ioctl_reg_update(struct vgpu_mdev_device *vgpu,
				      union vgpu_mdev_ioctl_arg *a)
{
	int ret;

	if (a->update.flags)
		return -EINVAL;
	ret = vgpu_mdev_regs_update(vgpu, a->update.ops, a->update.count);
	if (!ret && a->update.irq_vectors)
		vgpu_mdev_raise(vgpu, a->update.irq_vectors);
	return ret;
}

static int vgpu_mdev_ioctl_reg_read(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	if (a->read.reserved)
		return -EINVAL;
	return vgpu_mdev_regs_read(vgpu, a->read.offset, &a->read.value);
}

static int vgpu_mdev_ioctl_map_region(struct vgpu_mdev_device *vgpu,
				      union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_map_region(vgpu, &a->region);
}

static int vgpu_mdev_ioctl_unmap_region(struct vgpu_mdev_device *vgpu,
					union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_unmap_region(vgpu, &a->region);
}

static int vgpu_mdev_ioctl_window_block(struct vgpu_mdev_device *vgpu,
					union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_window_block(vgpu, &a->block);
}

static int vgpu_mdev_ioctl_window_map(struct vgpu_mdev_device *vgpu,
				      union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_window_map(vgpu, &a->map);
}

static int vgpu_mdev_ioctl_raise_irq(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	if (a->irq.vectors & ~(u32)GENMASK(VGPU_MSIX_VECTORS - 1, 0))
		return -EINVAL;
	vgpu_mdev_raise(vgpu, a->irq.vectors);
	return 0;
}

static int vgpu_mdev_ioctl_dma_rw(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_dma_rw(vgpu, &a->dma);
}

/* A pin whose result cannot be copied out stays until close. */
static int vgpu_mdev_ioctl_pin(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_pin(vgpu, &a->pin);
}

static int vgpu_mdev_ioctl_unpin(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	if (a->pin.npages || a->pin.iova)
		return -EINVAL;
	return vgpu_mdev_unpin(vgpu, a->pin.pin_id);
}

static int vgpu_mdev_ioctl_set_stats(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	unsigned long flags;

	if (a->stats.flags ||
	    strnlen(a->stats.vm_name, sizeof(a->stats.vm_name)) >= sizeof(a->stats.vm_name))
		return -EINVAL;
	spin_lock_irqsave(&vgpu->reg_lock, flags);
	vgpu->stats = a->stats;
	spin_unlock_irqrestore(&vgpu->reg_lock, flags);
	return 0;
}

static int vgpu_mdev_ioctl_set_kick(struct vgpu_mdev_device *vgpu, union vgpu_mdev_ioctl_arg *a)
{
	return vgpu_mdev_eventfd_set(vgpu, &vgpu->kick, a->kick.fd);
}

/*
 * The control ioctls, declared as DRM drivers declare theirs: indexed by
 * _IOC_NR, the full command (direction and size, checked), and the handler:
 * of the module, or of the device the argument's device_id names (held for
 * the call). The argument is copied in for _IOC_WRITE and, after a handler
 * returned 0, out for _IOC_READ.
 */
struct vgpu_mdev_ioctl_desc {
	unsigned int cmd;
	vgpu_mdev_module_ioctl_t *module_handler;
	vgpu_mdev_device_ioctl_t *device_handler;
};

#define VGPU_MDEV_IOCTL_MODULE(ioctl, handler) \
	[_IOC_NR(VGPU_MDEV_##ioctl)] = { .cmd = VGPU_MDEV_##ioctl, .module_handler = (handler) }
#define VGPU_MDEV_IOCTL_DEVICE(ioctl, handler) \
	[_IOC_NR(VGPU_MDEV_##ioctl)] = { .cmd = VGPU_MDEV_##ioctl, .device_handler = (handler) }

static const struct vgpu_mdev_ioctl_desc vgpu_mdev_ioctls[] = {
	VGPU_MDEV_IOCTL_MODULE(GET_VERSION, vgpu_mdev_ioctl_get_version),
	VGPU_MDEV_IOCTL_MODULE(SET_TYPES, vgpu_mdev_ioctl_set_types),
	VGPU_MDEV_IOCTL_MODULE(SET_AVAILABLE, vgpu_mdev_ioctl_set_available),
	VGPU_MDEV_IOCTL_DEVICE(REPLY, vgpu_mdev_ioctl_reply),
	VGPU_MDEV_IOCTL_DEVICE(REG_UPDATE, vgpu_mdev_ioctl_reg_update),
	VGPU_MDEV_IOCTL_DEVICE(REG_READ, vgpu_mdev_ioctl_reg_read),
	VGPU_MDEV_IOCTL_DEVICE(MAP_REGION, vgpu_mdev_ioctl_map_region),
	VGPU_MDEV_IOCTL_DEVICE(UNMAP_REGION, vgpu_mdev_ioctl_unmap_region),
	VGPU_MDEV_IOCTL_DEVICE(WINDOW_BLOCK, vgpu_mdev_ioctl_window_block),
	VGPU_MDEV_IOCTL_DEVICE(WINDOW_MAP, vgpu_mdev_ioctl_window_map),
	VGPU_MDEV_IOCTL_DEVICE(RAISE_IRQ, vgpu_mdev_ioctl_raise_irq),
	VGPU_MDEV_IOCTL_DEVICE(DMA_RW, vgpu_mdev_ioctl_dma_rw),
	VGPU_MDEV_IOCTL_DEVICE(PIN, vgpu_mdev_ioctl_pin),
	VGPU_MDEV_IOCTL_DEVICE(UNPIN, vgpu_mdev_ioctl_unpin),
	VGPU_MDEV_IOCTL_DEVICE(SET_STATS, vgpu_mdev_ioctl_set_stats),
	VGPU_MDEV_IOCTL_DEVICE(SET_KICK_EVENTFD, vgpu_mdev_ioctl_set_kick),
};

static long vgpu_mdev_control_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	const struct vgpu_mdev_ioctl_desc *desc;
	union vgpu_mdev_ioctl_arg *a;
	struct vgpu_mdev_device *vgpu;
	size_t size = _IOC_SIZE(cmd);
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != VGPU_MDEV_IOCTL_TYPE || nr >= ARRAY_SIZE(vgpu_mdev_ioctls))
		return -ENOTTY;
	desc = &vgpu_mdev_ioctls[array_index_nospec(nr, ARRAY_SIZE(vgpu_mdev_ioctls))];
	if (desc->cmd != cmd || size > sizeof(*a))
		return -ENOTTY;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(a, uarg, size)) {
		ret = -EFAULT;
		goto out_free;
	}
	if (desc->module_handler) {
		ret = desc->module_handler(a);
	} else {
		vgpu = vgpu_mdev_device_get(a->device_id);
		if (!vgpu) {
			ret = -ENOENT;
			goto out_free;
		}
		ret = desc->device_handler(vgpu, a);
		vgpu_mdev_device_put(vgpu);
	}
	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) && copy_to_user(uarg, a, size))
		ret = -EFAULT;
out_free:
	kfree(a);
	return ret;
}

static const struct file_operations vgpu_mdev_control_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_mdev_control_open,
	.release = vgpu_mdev_control_release,
	.read = vgpu_mdev_control_read,
	.poll = vgpu_mdev_control_poll,
	.unlocked_ioctl = vgpu_mdev_control_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static struct miscdevice vgpu_mdev_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "vgpu_mdev",
	.fops = &vgpu_mdev_control_fops,
	.mode = 0600,
};

int vgpu_mdev_control_init(void)
{
	return misc_register(&vgpu_mdev_miscdev);
}

void vgpu_mdev_control_exit(void)
{
	misc_deregister(&vgpu_mdev_miscdev);
}
