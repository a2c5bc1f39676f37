// SPDX-License-Identifier: MIT
/* event_routes.c - GPU channel events to VM devices, see event_routes.h. */
#include "event_routes.h"

#include <errno.h>
#include <stdlib.h>

#include "device.h"
#include "vgpu/hal_fault_abi.h"

int vgpud_event_routes_init(struct vgpud_event_routes *r, uint32_t max_channels)
{
	r->routes = calloc(max_channels ? max_channels : 1, sizeof(*r->routes));
	if (!r->routes)
		return -ENOMEM;
	r->count = max_channels;
	r->fences = r->errors = r->unrouted = 0;
	pthread_mutex_init(&r->lock, NULL);
	return 0;
}

void vgpud_event_routes_fini(struct vgpud_event_routes *r)
{
	free(r->routes);
	r->routes = NULL;
	pthread_mutex_destroy(&r->lock);
}

void vgpud_event_routes_set(struct vgpud_event_routes *r, uint32_t channel_id,
                            struct vgpud_device *device, uint32_t index)
{
	if (channel_id >= r->count)
		return;
	pthread_mutex_lock(&r->lock);
	r->routes[channel_id].device = device;
	r->routes[channel_id].index = index;
	pthread_mutex_unlock(&r->lock);
}

void vgpud_event_routes_clear(struct vgpud_event_routes *r, uint32_t channel_id,
                              struct vgpud_device *device)
{
	if (channel_id >= r->count)
		return;
	pthread_mutex_lock(&r->lock);
	if (r->routes[channel_id].device == device)
		r->routes[channel_id].device = NULL;
	pthread_mutex_unlock(&r->lock);
}

static const char *cause_name(enum vgpu_hal_error_cause cause)
{
	switch (cause) {
	case VGPU_FAULT_NONE: return "no cause given";
	case VGPU_FAULT_UNMAPPED: return "unmapped GPU address";
	case VGPU_FAULT_READ_ONLY: return "write to a read-only page";
	case VGPU_FAULT_PRIVILEGED: return "access to a privileged page";
	case VGPU_FAULT_IOMMU: return "unmapped IOMMU address";
	case VGPU_FAULT_BAD_COMMAND: return "bad command";
	case VGPU_FAULT_BAD_KERNEL_ARGS: return "bad kernel arguments";
	case VGPU_FAULT_TIMEOUT: return "watchdog timeout: no progress within a time limit";
	case VGPU_FAULT_KERNEL_ERROR:
		return "the function failed (trap, misaligned access, barrier deadlock, stack)";
	}
	return "unknown cause";
}

static void dispatch(struct vgpud_event_routes *r, const struct vgpu_hal_event *event, bool error)
{
	pthread_mutex_lock(&r->lock);
	if (event->channel_id < r->count && r->routes[event->channel_id].device) {
		struct vgpud_event_route *route = &r->routes[event->channel_id];

		if (error) {
			r->errors++;
			vgpu_device_channel_error(route->device, route->index,
			                          vgpu_hal_fault_abi_cause(event->cause), event->address);
			/* The operator's record of a context the GPU killed (a
			 * guest's bug or an attempt at memory it does not own);
			 * only that VM's channel stops. */
			vgpud_log_ratelimited(&route->device->channel_error_log_limit,
			                      VGPUD_LOG_WARN,
			                      "VM '%s': channel error: the GPU killed channel %u "
			                      "(%s, fault %d at GPU VA 0x%llx); the VM's other "
			                      "channels and other VMs go on",
			                      route->device->name, route->index,
			                      cause_name(event->cause), (int)event->cause,
			                      (unsigned long long)event->address);
		} else {
			r->fences++;
			vgpu_device_channel_fence(route->device, route->index);
		}
	} else {
		r->unrouted++;
	}
	pthread_mutex_unlock(&r->lock);
}

void vgpud_event_on_fence(void *ctx, struct vgpu_vm *vm, const struct vgpu_hal_event *event)
{
	(void)vm;
	dispatch(ctx, event, false);
}

void vgpud_event_on_channel_error(void *ctx, struct vgpu_vm *vm,
                                  const struct vgpu_hal_event *event)
{
	(void)vm;
	dispatch(ctx, event, true);
}
