// SPDX-License-Identifier: MIT
/*
 * requests.c - what each mailbox request does to this VM (device_abi.h).
 * Runs on the device's mailbox worker. The parser (mailbox_parse.c) has
 * checked every field; what is left to check here is state: HELLO first,
 * handles and channel indices of THIS VM only (the core's handle lookup is
 * per VM, so another VM's handle is NOT_FOUND), limits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "channel_window.h"
#include "daemon.h"
#include "device.h"
#include "log.h"
#include "requests.h"
#include "share_limits.h"
#include "vgpu/abi/module_table.h"
#include "vgpu/error.h"

static enum vgpu_status status_of_errno(int err)
{
	switch (err) {
	case 0: return VGPU_STATUS_OK;
	case -EINVAL: return VGPU_STATUS_INVALID;
	case -ENOENT: return VGPU_STATUS_NOT_FOUND;
	case -EDQUOT:
	case -ENOMEM: return VGPU_STATUS_NO_MEMORY;
	case -ENOSPC: return VGPU_STATUS_LIMIT;
	case -ENOTSUP: return VGPU_STATUS_UNSUPPORTED;
	case -ETIMEDOUT:
	case -EBUSY:
	case -EAGAIN: return VGPU_STATUS_BUSY;
	default: return VGPU_STATUS_INTERNAL;
	}
}

static uint32_t saturate32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void reply(struct vgpu_response *response, enum vgpu_status status, const void *payload,
                  uint16_t size)
{
	response->status = status;
	response->payload_size = size;
	if (size)
		memcpy(response->payload, payload, size);
}

static void handle_hello(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                         struct vgpu_response *response)
{
	struct vgpu_hello_response r = {
		.abi_version = VGPU_ABI_VERSION,
		.max_channels = VGPU_MAX_CHANNELS < dev->daemon->caps.max_channels
		                        ? VGPU_MAX_CHANNELS
		                        : dev->daemon->caps.max_channels,
	};

	if (req->u.hello.abi_version >> 16 != VGPU_ABI_VERSION_MAJOR) {
		log_info("VM '%s': HELLO with device ABI %u.%u; vgpud speaks %u.%u", dev->name,
		         req->u.hello.abi_version >> 16, req->u.hello.abi_version & 0xffff,
		         VGPU_ABI_VERSION_MAJOR, VGPU_ABI_VERSION_MINOR);
		reply(response, VGPU_STATUS_VERSION, &r, sizeof(r));
		return;
	}
	r.features = req->u.hello.guest_features & dev->features_offered;
	dev->features = r.features;
	dev->hello_done = true;
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

/* QUERY's page_size_mask (device_abi.h) is the HAL's, bit for bit. */
_Static_assert(VGPU_HAL_PAGE_MASK_4K == 1 && VGPU_HAL_PAGE_MASK_64K == 2 &&
                       VGPU_HAL_PAGE_MASK_2M == 4,
               "QUERY's page size bits differ from the HAL's");

static void handle_query(struct vgpud_device *dev, struct vgpu_response *response)
{
	struct vgpu_vm_stats stats;
	struct vgpu_query_response r;

	vgpu_core_vm_stats(dev->vm, &stats);
	memset(&r, 0, sizeof(r));
	r.vram_share_bytes = stats.fair_share_bytes;
	r.cap_bytes = stats.cap_bytes;
	r.chunk_bytes = stats.chunk_bytes;
	r.vram_total_bytes = dev->daemon->caps.vram_bytes;
	r.page_size_mask = dev->daemon->caps.page_size_mask;
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

static void handle_stats(struct vgpud_device *dev, struct vgpu_response *response)
{
	struct vgpu_vm_stats stats;
	struct vgpu_stats_response r;

	vgpu_core_vm_stats(dev->vm, &stats);
	memset(&r, 0, sizeof(r));
	r.allocated_bytes = stats.allocated_bytes;
	r.resident_bytes = stats.resident_bytes;
	r.evicted_bytes = stats.evicted_bytes;
	r.fair_share_bytes = stats.fair_share_bytes;
	r.evictions = saturate32(stats.evictions);
	r.returns = saturate32(stats.returns);
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

static void handle_alloc(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                         struct vgpu_response *response)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_buffer_info info;
	struct vgpu_alloc_response r;
	int err;

	if (dev->handles.live >= dev->daemon->config.max_buffers_per_vm) {
		vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO,
		                      "VM '%s': ALLOC refused: it holds %u buffers, the most "
		                      "max_buffers_per_vm allows", dev->name, dev->handles.live);
		reply(response, VGPU_STATUS_LIMIT, NULL, 0);
		return;
	}
	err = vgpu_core_alloc(dev->vm, req->u.alloc.bytes, req->u.alloc.priority,
	                      req->u.alloc.flags, &info, &error);
	if (err) {
		vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_DEBUG, "VM '%s': ALLOC %llu: %s",
		                      dev->name, (unsigned long long)req->u.alloc.bytes,
		                      vgpu_error_msg(&error));
		reply(response, status_of_errno(err), NULL, 0);
		return;
	}
	memset(&r, 0, sizeof(r));
	err = handle_table_add(&dev->handles, info.handle, &r.handle);
	if (err) {
		if (vgpu_core_free(dev->vm, info.handle, &error))
			log_warn("VM '%s': the buffer of a refused ALLOC stays allocated: %s",
			         dev->name, vgpu_error_msg(&error));
		reply(response, status_of_errno(err), NULL, 0);
		return;
	}
	r.gpu_va = info.gpu_va;
	r.bytes = info.bytes;
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

static void handle_free(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                        struct vgpu_response *response)
{
	uint64_t handle;
	int err = handle_table_lookup(&dev->handles, req->u.free.handle, &handle);

	if (!err)
		err = vgpu_core_free(dev->vm, handle, NULL);
	if (!err)
		handle_table_remove(&dev->handles, req->u.free.handle);
	reply(response, status_of_errno(err), NULL, 0);
}

static void handle_set_priority(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                                struct vgpu_response *response)
{
	uint64_t handle;
	int err = handle_table_lookup(&dev->handles, req->u.set_priority.handle, &handle);

	if (!err)
		err = vgpu_core_set_priority(dev->vm, handle, req->u.set_priority.priority, NULL);

	reply(response, status_of_errno(err), NULL, 0);
}

/* A failed MODULE_LOAD's reason, into the VM's table when it has room. */
static void module_load_failed(struct vgpud_device *dev, const struct vgpu_module_load_request *q,
                               const char *message)
{
	struct vgpu_module_table header;

	vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO, "VM '%s': MODULE_LOAD refused: %s",
	                      dev->name, message);
	if (q->table_bytes < sizeof(header))
		return;
	vgpu_module_table_failure(&header, message);
	if (vgpu_core_vm_write(dev->vm, q->table_va, &header, sizeof(header), NULL))
		vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO,
		                      "VM '%s': MODULE_LOAD's table at %#llx is not mapped",
		                      dev->name, (unsigned long long)q->table_va);
}

/* The image, read out of the VM's memory (NUL-terminated: PTX is text). */
static char *read_image(struct vgpud_device *dev, const struct vgpu_module_load_request *q)
{
	char *image = malloc(q->image_bytes + 1);

	if (!image)
		return NULL;
	if (vgpu_core_vm_read(dev->vm, q->image_va, image, q->image_bytes, NULL)) {
		free(image);
		return NULL;
	}
	image[q->image_bytes] = 0;
	return image;
}

/*
 * MODULE_LOAD (device_abi.h): the image in the VM's memory, checked and
 * bound by the core; the table written back into the VM's memory. Errors
 * of the image are the guest's (INVALID, with the reason in the table);
 * a GPU without user programs says UNSUPPORTED, with its reason.
 */
static void handle_module_load(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                               struct vgpu_response *response)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const struct vgpu_module_load_request *q = &req->u.module_load;
	struct vgpu_module_load_response r;
	struct vgpu_module_loaded loaded;
	uint32_t table_bytes = 0;
	void *table = NULL;
	char *image;
	int err;

	memset(&r, 0, sizeof(r));
	if (!(dev->features & VGPU_FEATURE_MODULES)) {
		module_load_failed(dev, q, dev->daemon->caps.runs_modules
		                                   ? "MODULE_LOAD without VGPU_FEATURE_MODULES at HELLO"
		                                   : "this GPU runs no user programs");
		reply(response, VGPU_STATUS_UNSUPPORTED, NULL, 0);
		return;
	}
	if (dev->modules >= dev->daemon->config.max_modules_per_vm) {
		module_load_failed(dev, q, "the VM holds max_modules_per_vm modules");
		reply(response, VGPU_STATUS_LIMIT, NULL, 0);
		return;
	}
	image = read_image(dev, q);
	if (!image) {
		module_load_failed(dev, q, "the image is not (all) in the VM's memory");
		reply(response, VGPU_STATUS_INVALID, NULL, 0);
		return;
	}
	err = vgpu_core_module_load(dev->vm, image, q->image_bytes, "module",
	                            VGPU_PRIORITY_DEFAULT, &loaded, &error);
	free(image);
	if (err) {
		module_load_failed(dev, q, vgpu_error_msg(&error));
		reply(response, err == -EDQUOT || err == -ENOMEM ? VGPU_STATUS_NO_MEMORY
		                : err == -ENOSPC ? VGPU_STATUS_LIMIT
		                : VGPU_STATUS_INVALID, NULL, 0);
		return;
	}
	err = vgpu_module_table_build(&loaded.info, loaded.variable_va, &table, &table_bytes);
	r.table_bytes = table_bytes;
	if (!err && table_bytes > q->table_bytes)
		err = -ENOSPC;
	if (!err && vgpu_core_vm_write(dev->vm, q->table_va, table, table_bytes, &error))
		err = -EFAULT;
	free(table);
	if (err) {
		vgpu_core_module_unload(dev->vm, loaded.id, &error);
		if (err != -ENOSPC)
			module_load_failed(dev, q, "the module's table cannot be written to the VM");
		reply(response, err == -ENOSPC ? VGPU_STATUS_LIMIT : status_of_errno(err), &r,
		      sizeof(r));
		return;
	}
	dev->modules++;
	r.module = loaded.id;
	r.function_count = loaded.info.function_count;
	r.variable_count = loaded.info.variable_count;
	r.variables_va = loaded.variables_va;
	r.variables_bytes = loaded.variables_bytes;
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

static void handle_module_unload(struct vgpud_device *dev,
                                 const struct vgpu_mailbox_request *req,
                                 struct vgpu_response *response)
{
	int err = vgpu_core_module_unload(dev->vm, req->u.module_unload.module, NULL);

	if (!err)
		dev->modules--;
	reply(response, status_of_errno(err), NULL, 0);
}

struct channel_create_call {
	struct vgpud_device *dev;
	uint32_t index, entries;
	struct vgpu_channel_create_response *r;
	enum vgpu_status status;
};

/* Make the channel window and count it (under the channel admission). */
static int create_channel(void *arg)
{
	struct channel_create_call *call = arg;
	struct channel_window *win;

	call->status = channel_window_create(call->dev, call->index, call->entries, call->r, &win);
	if (call->status != VGPU_STATUS_OK)
		return 0;
	/* Release: statistics and tests may look at the window from
	 * another thread once they saw the pointer. */
	__atomic_store_n(&call->dev->windows[call->index], win, __ATOMIC_RELEASE);
	atomic_fetch_add(&call->dev->channels, 1);
	return 0;
}

static void handle_channel_create(struct vgpud_device *dev,
                                  const struct vgpu_mailbox_request *req,
                                  struct vgpu_response *response)
{
	struct vgpu_channel_create_response r;
	enum vgpu_status status;
	uint32_t index, limit = VGPU_MAX_CHANNELS;

	if (dev->daemon->caps.max_channels < limit)
		limit = dev->daemon->caps.max_channels;
	for (index = 0; index < limit && dev->windows[index]; index++)
		;
	if (index == limit) {
		reply(response, VGPU_STATUS_LIMIT, NULL, 0);
		return;
	}
	{
		struct channel_create_call call = {
			.dev = dev,
			.index = index,
			.entries = req->u.channel_create.gpfifo_entries,
			.r = &r,
			.status = VGPU_STATUS_LIMIT,
		};
		struct vgpu_error why = VGPU_ERROR_INIT;

		/* the user's share of the GPU's channels (share_limits.h) */
		if (vgpud_share_channel(dev->daemon, dev, create_channel, &call, &why) ==
		    -ENOSPC) {
			vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO,
			                      "VM '%s': CHANNEL_CREATE refused: "
			                      "%s", dev->name, vgpu_error_msg(&why));
			reply(response, VGPU_STATUS_LIMIT, NULL, 0);
			return;
		}
		status = call.status;
	}
	if (status != VGPU_STATUS_OK) {
		reply(response, status, NULL, 0);
		return;
	}
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

static void handle_channel_destroy(struct vgpud_device *dev,
                                   const struct vgpu_mailbox_request *req,
                                   struct vgpu_response *response)
{
	uint32_t index = req->u.channel_destroy.index;

	if (!dev->windows[index]) {
		reply(response, VGPU_STATUS_NOT_FOUND, NULL, 0);
		return;
	}
	channel_window_destroy(dev->windows[index]);
	__atomic_store_n(&dev->windows[index], NULL, __ATOMIC_RELEASE);
	atomic_fetch_sub(&dev->channels, 1);
	/* A stale bit must not tell the next channel of this index about it. */
	atomic_fetch_and(&dev->fence_channels, ~(1u << index));
	atomic_fetch_and(&dev->error_channels, ~(1u << index));
	atomic_store(&dev->fault_cause[index], VGPU_CHANNEL_FAULT_NONE);
	reply(response, VGPU_STATUS_OK, NULL, 0);
}

/* CHANNEL_FAULT (device_abi.h): why the GPU killed a channel of the VM. */
static void handle_channel_fault(struct vgpud_device *dev, const struct vgpu_mailbox_request *req,
                                 struct vgpu_response *response)
{
	uint32_t index = req->u.channel_fault.index;
	struct vgpu_channel_fault_response r;

	if (!(dev->features & VGPU_FEATURE_CHANNEL_FAULT)) {
		reply(response, VGPU_STATUS_UNSUPPORTED, NULL, 0);
		return;
	}
	if (!__atomic_load_n(&dev->windows[index], __ATOMIC_ACQUIRE)) {
		reply(response, VGPU_STATUS_NOT_FOUND, NULL, 0);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.killed = (atomic_load(&dev->error_channels) >> index) & 1;
	r.cause = atomic_load_explicit(&dev->fault_cause[index], memory_order_acquire);
	r.address = atomic_load_explicit(&dev->fault_address[index], memory_order_relaxed);
	/* The bit is cleared by reading ERROR_CHANNELS; the cause is not. */
	if (r.cause != VGPU_CHANNEL_FAULT_NONE)
		r.killed = 1;
	if (!r.killed)
		r.address = 0;
	reply(response, VGPU_STATUS_OK, &r, sizeof(r));
}

void vgpu_device_destroy_windows(struct vgpud_device *dev)
{
	unsigned i;

	for (i = 0; i < VGPU_MAX_CHANNELS; i++) {
		if (!dev->windows[i])
			continue;
		channel_window_destroy(dev->windows[i]);
		__atomic_store_n(&dev->windows[i], NULL, __ATOMIC_RELEASE);
		atomic_fetch_sub(&dev->channels, 1);
	}
}

void vgpu_device_handle_request(void *ctx, const struct vgpu_request *request,
                                struct vgpu_response *response)
{
	struct vgpud_device *dev = ctx;
	struct vgpu_mailbox_request req;
	const char *why;
	enum vgpu_status status;

	atomic_fetch_add_explicit(&dev->requests, 1, memory_order_relaxed);
	status = vgpu_mailbox_parse(request, &req, &why);
	if (status != VGPU_STATUS_OK) {
		vgpud_log_ratelimited(&dev->log_limit, VGPUD_LOG_INFO,
		                      "VM '%s': request seq %u opcode %u (%s) rejected: %s",
		                      dev->name, req.seq, req.opcode,
		                      vgpu_mailbox_opcode_name(req.opcode), why);
		reply(response, status, NULL, 0);
		atomic_fetch_add_explicit(&dev->requests_failed, 1, memory_order_relaxed);
		return;
	}
	if (!dev->hello_done && req.opcode != VGPU_OP_HELLO) {
		reply(response, VGPU_STATUS_NOT_READY, NULL, 0);
		atomic_fetch_add_explicit(&dev->requests_failed, 1, memory_order_relaxed);
		return;
	}
	switch (req.opcode) {
	case VGPU_OP_HELLO:
		handle_hello(dev, &req, response);
		break;
	case VGPU_OP_QUERY:
		handle_query(dev, response);
		break;
	case VGPU_OP_ALLOC:
		handle_alloc(dev, &req, response);
		break;
	case VGPU_OP_FREE:
		handle_free(dev, &req, response);
		break;
	case VGPU_OP_CHANNEL_CREATE:
		handle_channel_create(dev, &req, response);
		break;
	case VGPU_OP_CHANNEL_DESTROY:
		handle_channel_destroy(dev, &req, response);
		break;
	case VGPU_OP_SET_PRIORITY:
		handle_set_priority(dev, &req, response);
		break;
	case VGPU_OP_STATS:
		handle_stats(dev, response);
		break;
	case VGPU_OP_MODULE_LOAD:
		handle_module_load(dev, &req, response);
		break;
	case VGPU_OP_MODULE_UNLOAD:
		handle_module_unload(dev, &req, response);
		break;
	case VGPU_OP_CHANNEL_FAULT:
		handle_channel_fault(dev, &req, response);
		break;
	default:
		reply(response, VGPU_STATUS_UNSUPPORTED, NULL, 0);
		break;
	}
	if (response->status != VGPU_STATUS_OK)
		atomic_fetch_add_explicit(&dev->requests_failed, 1, memory_order_relaxed);
}
