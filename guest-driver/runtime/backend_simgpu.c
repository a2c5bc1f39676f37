// SPDX-License-Identifier: MIT
/*
 * backend_simgpu.c - the runtime's backend on an in-process simgpu through
 * the HAL, no vgpud (see vgpu_guest_simgpu.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/module_table.h"
#include "vgpu/hal_fault_abi.h"
#include "vgpu_guest_simgpu.h"

#if defined(__SANITIZE_THREAD__)
#define BACKEND_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BACKEND_TSAN 1
#endif
#endif

#define PAGE_4K 4096u
#define PAGE_64K 65536u
/* Notifier and pushbuffer of channel i live at CHANNEL_VA_BASE + i * stride. */
#define CHANNEL_VA_BASE (256ull << 20)
#define CHANNEL_VA_STRIDE (16ull << 20)
/* Buffers from here up, never reused. */
#define BUFFER_VA_BASE (1ull << 30)
#define BUFFER_VA_ALIGN (2ull << 20)
#define DEFAULT_PUSHBUFFER_BYTES (64u << 10)
#define CHUNK_BYTES (2ull << 20)

struct simgpu_buffer {
	bool live;
	uint64_t gpu_va;
	uint64_t bytes;
	uint32_t page_size;
	uint64_t page_count;
	uint64_t *pages;
};

struct host_area {
	struct vgpu_hal_host_buf *buf;
	uint64_t iova;
	uint64_t bytes;
	uint64_t gpu_va;
	bool iommu_mapped;
	bool mapped;
};

struct simgpu_backend_channel {
	bool live;
	struct vgpu_hal_channel *channel;
	struct host_area notifier;
	struct host_area pushbuffer;
};

/* A module bound in the address space: the HAL's id, its variables. */
struct simgpu_backend_module {
	bool live;
	uint32_t id;
	uint32_t variables; /* buffer handle; 0: none */
};

struct simgpu_backend {
	struct vgpu_hal *hal;
	bool own_hal;
	struct vgpu_hal_as *as;
	struct vgpu_hal_caps caps;
	uint64_t cap_bytes;
	uint32_t max_channels;
	uint32_t pushbuffer_bytes;
	uint32_t notifier_bytes;
	uint64_t next_va;
	uint64_t allocated;
	struct simgpu_buffer *buffers; /* handle = index + 1 */
	uint32_t buffer_count;
	uint32_t buffer_capacity;
	struct simgpu_backend_module *modules;
	uint32_t module_count;
	uint32_t module_capacity;
	struct simgpu_backend_channel channels[VGPU_MAX_CHANNELS];
};

static const struct vgpu_backend_ops simgpu_ops;

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */

static int simgpu_info(void *backend, struct vgpu_device_info *out)
{
	struct simgpu_backend *b = backend;

	memset(out, 0, sizeof(*out));
	out->abi_version = VGPU_ABI_VERSION;
	/* as vgpud offers them: every simgpu channel takes timestamps */
	out->features = VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS |
	                VGPU_FEATURE_SEMAPHORE_TIMESTAMP | VGPU_FEATURE_CHANNEL_FAULT;
	if (b->caps.runs_modules)
		out->features |= VGPU_FEATURE_MODULES;
	out->max_channels = b->max_channels;
	out->vram_total_bytes = b->caps.vram_bytes;
	out->vram_share_bytes = b->caps.vram_bytes;
	out->cap_bytes = b->cap_bytes;
	out->chunk_bytes = CHUNK_BYTES;
	out->page_size_mask = b->caps.page_size_mask & 3u;
	return 0;
}

static struct simgpu_buffer *buffer_of(struct simgpu_backend *b, uint32_t handle)
{
	if (handle == 0 || handle > b->buffer_count || !b->buffers[handle - 1].live)
		return NULL;
	return &b->buffers[handle - 1];
}

static int new_buffer_slot(struct simgpu_backend *b, uint32_t *handle)
{
	uint32_t i;

	for (i = 0; i < b->buffer_count; i++) {
		if (!b->buffers[i].live) {
			*handle = i + 1;
			return 0;
		}
	}
	if (b->buffer_count == b->buffer_capacity) {
		uint32_t capacity = b->buffer_capacity ? 2 * b->buffer_capacity : 64;
		struct simgpu_buffer *buffers =
		        realloc(b->buffers, capacity * sizeof(*buffers));

		if (!buffers)
			return -ENOMEM;
		b->buffers = buffers;
		b->buffer_capacity = capacity;
	}
	b->buffers[b->buffer_count] = (struct simgpu_buffer){ 0 };
	*handle = ++b->buffer_count;
	return 0;
}

static int simgpu_alloc(void *backend, uint64_t bytes, uint32_t priority, uint32_t flags,
                        struct vgpu_alloc_response *out)
{
	struct simgpu_backend *b = backend;
	struct simgpu_buffer buffer = { .live = true };
	uint32_t handle;
	int ret;

	(void)priority;
	if (!bytes || flags || bytes > b->caps.va_reserved_base)
		return -EINVAL;
	buffer.bytes = (bytes + PAGE_4K - 1) & ~(uint64_t)(PAGE_4K - 1);
	if (b->cap_bytes && b->allocated + buffer.bytes > b->cap_bytes)
		return -ENOMEM;
	buffer.gpu_va = (b->next_va + BUFFER_VA_ALIGN - 1) & ~(BUFFER_VA_ALIGN - 1);
	if (buffer.gpu_va + buffer.bytes > b->caps.va_reserved_base)
		return -ENOMEM;
	buffer.page_size = (b->caps.page_size_mask & VGPU_HAL_PAGE_MASK_64K) &&
	                                   buffer.bytes % PAGE_64K == 0 ?
	                           PAGE_64K :
	                           PAGE_4K;
	buffer.page_count = buffer.bytes / buffer.page_size;
	buffer.pages = calloc(buffer.page_count, sizeof(uint64_t));
	if (!buffer.pages)
		return -ENOMEM;
	ret = new_buffer_slot(b, &handle);
	if (ret)
		goto fail;
	ret = vgpu_hal_vram_alloc(b->hal, buffer.page_size, buffer.page_count, buffer.pages);
	if (ret)
		goto fail;
	ret = vgpu_hal_as_map(b->as, buffer.gpu_va, buffer.page_size, buffer.page_count,
	                      VGPU_TARGET_VRAM, buffer.pages, 0);
	if (ret) {
		vgpu_hal_vram_free(b->hal, buffer.page_size, buffer.page_count, buffer.pages);
		goto fail;
	}
	b->buffers[handle - 1] = buffer;
	b->next_va = buffer.gpu_va + buffer.bytes;
	b->allocated += buffer.bytes;
	out->handle = handle;
	out->gpu_va = buffer.gpu_va;
	out->bytes = buffer.bytes;
	out->reserved = 0;
	return 0;
fail:
	free(buffer.pages);
	return ret;
}

static void release_buffer(struct simgpu_backend *b, struct simgpu_buffer *buffer)
{
	vgpu_hal_as_unmap(b->as, buffer->gpu_va, buffer->bytes);
	vgpu_hal_as_tlb_invalidate(b->as);
	vgpu_hal_vram_free(b->hal, buffer->page_size, buffer->page_count, buffer->pages);
	free(buffer->pages);
	b->allocated -= buffer->bytes;
	*buffer = (struct simgpu_buffer){ 0 };
}

static int simgpu_free(void *backend, uint32_t handle)
{
	struct simgpu_backend *b = backend;
	struct simgpu_buffer *buffer = buffer_of(b, handle);

	if (!buffer)
		return -ENOENT;
	release_buffer(b, buffer);
	return 0;
}

static int simgpu_set_priority(void *backend, uint32_t handle, uint32_t priority)
{
	struct simgpu_backend *b = backend;

	if (priority > VGPU_PRIORITY_MAX)
		return -EINVAL;
	return buffer_of(b, handle) ? 0 : -ENOENT;
}

static int simgpu_stats(void *backend, struct vgpu_stats_response *out)
{
	struct simgpu_backend *b = backend;

	memset(out, 0, sizeof(*out));
	out->allocated_bytes = b->allocated;
	out->resident_bytes = b->allocated;
	out->fair_share_bytes = b->caps.vram_bytes;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Modules: as vgpud's MODULE_LOAD (the image and the table in the VM's     */
/* memory), the variables in a buffer of this backend's own                */

/* The table header saying why a load failed, where the guest gave room. */
static void module_load_failed(struct simgpu_backend *b, const struct vgpu_module_load_request *req,
                               const char *message)
{
	struct vgpu_module_table header;

	if (req->table_bytes < sizeof(header))
		return;
	vgpu_module_table_failure(&header, message);
	vgpu_hal_as_write(b->as, req->table_va, &header, sizeof(header));
}

/* Lay the variables out one after the other, each at its alignment
 * (offsets in variable_va); their total size in *total. */
static int variables_layout(const struct vgpu_hal_module_info *info, uint64_t *variable_va,
                            uint64_t *total)
{
	uint64_t offset = 0;

	for (uint32_t i = 0; i < info->variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &info->variables[i];
		uint64_t align = v->align ? v->align : 1;

		if (align & (align - 1) || align > PAGE_4K)
			return -EINVAL;
		offset = (offset + align - 1) / align * align;
		variable_va[i] = offset;
		if (v->bytes > (UINT64_C(1) << 40) - offset)
			return -E2BIG;
		offset += v->bytes;
	}
	*total = offset;
	return 0;
}

/* A buffer for the variables, their initializers written; their
 * addresses made absolute. */
static int variables_place(struct simgpu_backend *b, const struct vgpu_hal_module_info *info,
                           uint64_t *variable_va, uint64_t total,
                           struct vgpu_alloc_response *buffer)
{
	int ret;

	memset(buffer, 0, sizeof(*buffer));
	if (!total)
		return 0;
	ret = simgpu_alloc(b, total, VGPU_PRIORITY_DEFAULT, 0, buffer);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < info->variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &info->variables[i];

		variable_va[i] += buffer->gpu_va;
		if (v->bytes && v->init) {
			ret = vgpu_hal_as_write(b->as, variable_va[i], v->init, v->bytes);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static struct simgpu_backend_module *new_module_slot(struct simgpu_backend *b)
{
	for (uint32_t i = 0; i < b->module_count; i++)
		if (!b->modules[i].live)
			return &b->modules[i];
	if (b->module_count == b->module_capacity) {
		uint32_t capacity = b->module_capacity ? 2 * b->module_capacity : 8;
		struct simgpu_backend_module *modules =
		        realloc(b->modules, capacity * sizeof(*modules));

		if (!modules)
			return NULL;
		b->modules = modules;
		b->module_capacity = capacity;
	}
	b->modules[b->module_count] = (struct simgpu_backend_module){ 0 };
	return &b->modules[b->module_count++];
}

/* The errno vgpu_proto_module_load would give for vgpud's status. */
static int module_errno(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EDQUOT:
		return -ENOMEM;
	case -ENOSPC:
		return -ENOSPC;
	default:
		return -EINVAL;
	}
}

static int simgpu_module_load(void *backend, const struct vgpu_module_load_request *req,
                              struct vgpu_module_load_response *out)
{
	struct simgpu_backend *b = backend;
	struct simgpu_backend_module *slot;
	struct vgpu_hal_module *module = NULL;
	struct vgpu_hal_module_info info;
	struct vgpu_alloc_response variables = { 0 };
	uint64_t *variable_va = NULL, total = 0;
	uint32_t table_bytes = 0, id;
	void *table = NULL;
	char why[256] = "", *image;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!req->image_bytes || req->image_bytes > VGPU_MODULE_IMAGE_MAX_BYTES ||
	    !req->table_bytes || req->table_bytes > VGPU_MODULE_TABLE_MAX_BYTES || req->flags ||
	    req->image_va + req->image_bytes < req->image_va)
		return -EINVAL;
	if (!b->caps.runs_modules) {
		module_load_failed(b, req, "this GPU runs no user programs");
		return -ENOTSUP;
	}
	image = malloc(req->image_bytes + 1);
	if (!image)
		return -ENOMEM;
	if (vgpu_hal_as_read(b->as, req->image_va, image, req->image_bytes)) {
		free(image);
		module_load_failed(b, req, "the image is not (all) in the VM's memory");
		return -EINVAL;
	}
	image[req->image_bytes] = 0; /* PTX is text */
	{
		/* The host side's carrier, into the guest's own text here. */
		struct vgpu_error error = VGPU_ERROR_INIT;

		ret = vgpu_hal_module_parse(b->hal, image, req->image_bytes, "module", &module,
		                            &error);
		vgpu_error_text(&error, why, sizeof(why));
	}
	free(image);
	if (ret) {
		module_load_failed(b, req, why[0] ? why : strerror(-ret));
		return module_errno(ret);
	}
	vgpu_hal_module_info(module, &info);
	variable_va = calloc(info.variable_count ? info.variable_count : 1, sizeof(*variable_va));
	ret = variable_va ? variables_layout(&info, variable_va, &total) : -ENOMEM;
	if (ret) {
		snprintf(why, sizeof(why), "the module's variables cannot be laid out");
		goto fail;
	}
	ret = variables_place(b, &info, variable_va, total, &variables);
	if (ret) {
		snprintf(why, sizeof(why), "no GPU memory for the module's %llu bytes of variables",
		         (unsigned long long)total);
		goto fail;
	}
	slot = new_module_slot(b);
	if (!slot) {
		ret = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory for a module");
		goto fail;
	}
	ret = vgpu_hal_module_bind(b->as, module, variables.handle ? variable_va : NULL, &id);
	if (ret) {
		snprintf(why, sizeof(why), "cannot bind another module (%s)", strerror(-ret));
		goto fail;
	}
	module = NULL; /* the address space's now */
	ret = vgpu_module_table_build(&info, variable_va, &table, &table_bytes);
	out->table_bytes = table_bytes;
	if (!ret && table_bytes > req->table_bytes)
		ret = -ENOSPC; /* out->table_bytes says how much room it needs */
	if (!ret && vgpu_hal_as_write(b->as, req->table_va, table, table_bytes))
		ret = -EFAULT;
	free(table);
	if (ret) {
		vgpu_hal_module_unbind(b->as, id);
		if (ret != -ENOSPC)
			snprintf(why, sizeof(why), "the module's table cannot be written to the VM");
		goto fail;
	}
	*slot = (struct simgpu_backend_module){ .live = true, .id = id,
		                                .variables = variables.handle };
	out->module = id;
	out->function_count = info.function_count;
	out->variable_count = info.variable_count;
	out->variables_va = variables.gpu_va;
	out->variables_bytes = variables.handle ? total : 0;
	free(variable_va);
	return 0;
fail:
	if (variables.handle)
		simgpu_free(b, variables.handle);
	if (module)
		vgpu_hal_module_free(module);
	free(variable_va);
	if (ret == -ENOSPC && out->table_bytes > req->table_bytes)
		return -ENOSPC;
	out->table_bytes = 0;
	module_load_failed(b, req, why);
	return ret == -EFAULT ? -EFAULT : module_errno(ret);
}

static int simgpu_module_unload(void *backend, uint32_t module)
{
	struct simgpu_backend *b = backend;

	for (uint32_t i = 0; i < b->module_count; i++) {
		struct simgpu_backend_module *m = &b->modules[i];
		int ret;

		if (!m->live || m->id != module)
			continue;
		/* A launch still running finishes; its variables go after it,
		 * as in vgpud's core. */
		ret = vgpu_hal_module_unbind(b->as, m->id);
		if (m->variables)
			simgpu_free(b, m->variables);
		*m = (struct simgpu_backend_module){ 0 };
		return ret;
	}
	return -ENOENT;
}

/* ------------------------------------------------------------------------ */
/* Channels                                                                 */

static void area_release(struct simgpu_backend *b, struct host_area *area)
{
	if (area->mapped) {
		vgpu_hal_as_unmap(b->as, area->gpu_va, area->bytes);
		vgpu_hal_as_tlb_invalidate(b->as);
	}
	if (area->iommu_mapped)
		vgpu_hal_iommu_unmap(b->hal, area->iova, area->bytes);
	if (area->buf)
		vgpu_hal_host_free(b->hal, area->buf);
	*area = (struct host_area){ 0 };
}

/* Host memory behind the IOMMU, mapped at gpu_va like guest RAM. */
static int area_create(struct simgpu_backend *b, struct host_area *area, uint64_t bytes,
                       uint64_t gpu_va)
{
	uint64_t pages = bytes / PAGE_4K, i, *iovas;
	int ret;

	*area = (struct host_area){ .bytes = bytes, .gpu_va = gpu_va };
	iovas = calloc(pages, sizeof(*iovas));
	if (!iovas)
		return -ENOMEM;
	ret = vgpu_hal_host_alloc(b->hal, bytes, &area->buf);
	if (ret)
		goto out;
	ret = vgpu_hal_iommu_map(b->hal, area->buf, 0, bytes, &area->iova);
	if (ret)
		goto out;
	area->iommu_mapped = true;
	for (i = 0; i < pages; i++)
		iovas[i] = area->iova + i * PAGE_4K;
	ret = vgpu_hal_as_map(b->as, gpu_va, PAGE_4K, pages, VGPU_TARGET_SYSMEM_COHERENT, iovas,
	                      0);
	area->mapped = ret == 0;
out:
	free(iovas);
	if (ret)
		area_release(b, area);
	return ret;
}

static int simgpu_channel_open(void *backend, uint32_t gpfifo_entries,
                               struct vgpu_channel_window *out)
{
	struct simgpu_backend *b = backend;
	struct vgpu_hal_channel_info info;
	struct simgpu_backend_channel *ch = NULL;
	uint64_t base;
	uint32_t index;
	int ret;

	for (index = 0; index < b->max_channels; index++) {
		if (!b->channels[index].live) {
			ch = &b->channels[index];
			break;
		}
	}
	if (!ch)
		return -ENOSPC;
	base = CHANNEL_VA_BASE + index * CHANNEL_VA_STRIDE;
	ret = area_create(b, &ch->notifier, b->notifier_bytes, base);
	if (ret)
		return ret;
	ret = area_create(b, &ch->pushbuffer, b->pushbuffer_bytes, base + CHANNEL_VA_STRIDE / 2);
	if (ret)
		goto fail;
	ret = vgpu_hal_channel_create(b->as, gpfifo_entries, &ch->channel, &info);
	if (ret)
		goto fail;
	ch->live = true;
	*out = (struct vgpu_channel_window){
		.index = index,
		.gpfifo_entries = info.layout.gpfifo_entries,
		.control = info.control,
		.gpfifo = info.gpfifo,
		.notifier = vgpu_hal_host_cpu_pointer(b->hal, ch->notifier.buf),
		.pushbuffer = vgpu_hal_host_cpu_pointer(b->hal, ch->pushbuffer.buf),
		.notifier_bytes = b->notifier_bytes,
		.pushbuffer_bytes = b->pushbuffer_bytes,
		.notifier_gpu_va = ch->notifier.gpu_va,
		.pushbuffer_gpu_va = ch->pushbuffer.gpu_va,
		.backend_data = ch,
	};
	return 0;
fail:
	area_release(b, &ch->pushbuffer);
	area_release(b, &ch->notifier);
	return ret;
}

static void simgpu_channel_close(void *backend, struct vgpu_channel_window *window)
{
	struct simgpu_backend *b = backend;
	struct simgpu_backend_channel *ch = window->backend_data;

	if (!ch || !ch->live)
		return;
	vgpu_hal_channel_destroy(ch->channel);
	area_release(b, &ch->pushbuffer);
	area_release(b, &ch->notifier);
	*ch = (struct simgpu_backend_channel){ 0 };
}

static uint64_t simgpu_notifier_read(void *backend, struct vgpu_channel_window *window,
                                     uint32_t offset)
{
#ifdef BACKEND_TSAN
	/*
	 * The GPU is a thread of this process here, writing the notifier with
	 * plain stores under its address-space lock; reading through the
	 * aperture takes that lock, which is what tells ThreadSanitizer that
	 * the GPU's reads of a pushbuffer happened before we overwrite it.
	 */
	struct simgpu_backend *b = backend;
	uint64_t value = 0;

	vgpu_hal_as_read(b->as, window->notifier_gpu_va + offset, &value, sizeof(value));
	return le64toh(value);
#else
	(void)backend;
	return le64toh(__atomic_load_n((uint64_t *)((uint8_t *)window->notifier + offset),
	                               __ATOMIC_ACQUIRE));
#endif
}

static int simgpu_channel_status(void *backend, struct vgpu_channel_window *window)
{
	struct simgpu_backend_channel *ch = window->backend_data;

	(void)backend;
	return vgpu_hal_channel_state(ch->channel, NULL) == VGPU_CHANNEL_ERROR ? -EIO : 0;
}

static int simgpu_channel_fault(void *backend, struct vgpu_channel_window *window,
                                struct vgpu_channel_fault_response *out)
{
	struct simgpu_backend_channel *ch = window->backend_data;
	struct vgpu_hal_event last = { 0 };

	(void)backend;
	memset(out, 0, sizeof(*out));
	if (!ch || !ch->live)
		return -ENOENT;
	if (vgpu_hal_channel_state(ch->channel, &last) != VGPU_CHANNEL_ERROR)
		return 0;
	out->killed = 1;
	out->cause = vgpu_hal_fault_abi_cause(last.cause);
	out->address = out->cause == VGPU_CHANNEL_FAULT_NONE ? 0 : last.address;
	return 0;
}

/* ------------------------------------------------------------------------ */

static void simgpu_destroy(void *backend)
{
	struct simgpu_backend *b = backend;
	uint32_t i;

	for (i = 0; i < VGPU_MAX_CHANNELS; i++) {
		if (b->channels[i].live) {
			struct vgpu_channel_window window = { .backend_data = &b->channels[i] };

			simgpu_channel_close(b, &window);
		}
	}
	for (i = 0; i < b->module_count; i++)
		if (b->modules[i].live)
			vgpu_hal_module_unbind(b->as, b->modules[i].id);
	free(b->modules);
	for (i = 0; i < b->buffer_count; i++)
		if (b->buffers[i].live)
			release_buffer(b, &b->buffers[i]);
	free(b->buffers);
	if (b->as)
		vgpu_hal_as_destroy(b->as);
	if (b->own_hal && b->hal)
		vgpu_hal_destroy(b->hal);
	free(b);
}

static const struct vgpu_backend_ops simgpu_ops = {
	.name = "simgpu",
	.destroy = simgpu_destroy,
	.info = simgpu_info,
	.alloc = simgpu_alloc,
	.free = simgpu_free,
	.set_priority = simgpu_set_priority,
	.stats = simgpu_stats,
	.channel_open = simgpu_channel_open,
	.channel_close = simgpu_channel_close,
	.notifier_read = simgpu_notifier_read,
	.channel_status = simgpu_channel_status,
	.module_load = simgpu_module_load,
	.module_unload = simgpu_module_unload,
	.channel_fault = simgpu_channel_fault,
};

int vgpu_device_open_simgpu(const struct vgpu_guest_simgpu_config *config,
                            struct vgpu_guest_device **out, char *why, size_t why_len)
{
	struct vgpu_guest_simgpu_config defaults = { 0 };
	struct simgpu_backend *b;
	int ret;

	if (!config)
		config = &defaults;
	if (config->pushbuffer_bytes % PAGE_4K || config->notifier_bytes % PAGE_4K ||
	    config->max_channels > VGPU_MAX_CHANNELS ||
	    config->pushbuffer_bytes > CHANNEL_VA_STRIDE / 2 ||
	    config->notifier_bytes > CHANNEL_VA_STRIDE / 2) {
		snprintf(why, why_len, "invalid simgpu device configuration");
		return -EINVAL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	b->cap_bytes = config->cap_bytes;
	b->max_channels = config->max_channels ? config->max_channels : VGPU_MAX_CHANNELS;
	b->pushbuffer_bytes = config->pushbuffer_bytes ? config->pushbuffer_bytes :
	                                                 DEFAULT_PUSHBUFFER_BYTES;
	b->notifier_bytes = config->notifier_bytes ? config->notifier_bytes : PAGE_4K;
	b->next_va = BUFFER_VA_BASE;
	b->hal = config->hal;
	if (!b->hal) {
		const struct vgpu_hal_spec spec = { .backend = VGPU_HAL_BACKEND_SIMGPU };
		struct vgpu_error error = VGPU_ERROR_INIT;

		ret = vgpu_hal_open(&spec, config->simgpu, 0, &b->hal, &error);
		if (ret) {
			/* The host side's carrier, into the guest's own why. */
			if (why && why_len)
				vgpu_error_text(&error, why, why_len);
			free(b);
			return ret;
		}
		b->own_hal = true;
	}
	vgpu_hal_get_caps(b->hal, &b->caps);
	ret = vgpu_hal_as_create(b->hal, &b->as);
	if (ret) {
		snprintf(why, why_len, "cannot create a GPU address space: %s", strerror(-ret));
		simgpu_destroy(b);
		return ret;
	}
	return vgpu_device_create(&simgpu_ops, b, out, why, why_len);
}

static struct simgpu_backend *backend_of(struct vgpu_guest_device *dev)
{
	return dev && dev->ops == &simgpu_ops ? dev->backend : NULL;
}

struct vgpu_hal *vgpu_guest_simgpu_hal(struct vgpu_guest_device *dev)
{
	struct simgpu_backend *b = backend_of(dev);

	return b ? b->hal : NULL;
}

struct vgpu_hal_as *vgpu_guest_simgpu_as(struct vgpu_guest_device *dev)
{
	struct simgpu_backend *b = backend_of(dev);

	return b ? b->as : NULL;
}

struct vgpu_hal_channel *vgpu_guest_simgpu_channel(struct vgpu_guest_device *dev, uint32_t index)
{
	struct simgpu_backend *b = backend_of(dev);

	if (!b || index >= VGPU_MAX_CHANNELS || !b->channels[index].live)
		return NULL;
	return b->channels[index].channel;
}
