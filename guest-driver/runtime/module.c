// SPDX-License-Identifier: MIT
/*
 * module.c - a guest's own GPU programs (see vgpu_guest.h, "GPU
 * programs"): upload the image, MODULE_LOAD, download and check the table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"
#include "vgpu/abi/commands.h"

/* The table's first room; MODULE_LOAD says when it needs more. */
#define TABLE_FIRST_BYTES (64u * 1024u)

struct module_storage {
	struct vgpu_guest_module module;
	struct vgpu_guest_function *functions;
	struct vgpu_guest_variable *variables;
	uint8_t *table; /* the checked copy the names and parameters point into */
};

static void module_free(struct module_storage *s)
{
	if (!s)
		return;
	free(s->functions);
	free(s->variables);
	free(s->table);
	free(s);
}

/* Is [offset, offset + count * size) inside a table of bytes? */
static bool in_table(uint32_t bytes, uint32_t offset, uint64_t count, uint64_t size)
{
	return offset <= bytes && count * size <= bytes - offset;
}

/* A NUL-terminated name inside the strings area, or NULL. */
static const char *table_name(const uint8_t *table, const struct vgpu_module_table *h,
                              uint32_t name_offset)
{
	const char *strings = (const char *)table + h->strings_offset;

	if (name_offset >= h->strings_bytes ||
	    !memchr(strings + name_offset, 0, h->strings_bytes - name_offset))
		return NULL;
	return strings + name_offset;
}

static int check_functions(struct module_storage *s, const struct vgpu_module_table *h)
{
	const struct vgpu_module_function *f =
		(const void *)(s->table + h->functions_offset);
	const struct vgpu_module_param *p = (const void *)(s->table + h->params_offset);

	s->functions = calloc(h->function_count ? h->function_count : 1, sizeof(*s->functions));
	if (!s->functions)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->function_count; i++) {
		struct vgpu_guest_function *g = &s->functions[i];

		g->name = table_name(s->table, h, f[i].name_offset);
		if (!g->name || f[i].first_param > h->param_count ||
		    f[i].param_count > h->param_count - f[i].first_param ||
		    f[i].param_bytes > VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES)
			return -EPROTO;
		for (uint32_t j = 0; j < f[i].param_count; j++) {
			const struct vgpu_module_param *q = &p[f[i].first_param + j];

			if (!q->size || q->offset > f[i].param_bytes ||
			    q->size > f[i].param_bytes - q->offset)
				return -EPROTO;
		}
		g->index = i;
		g->param_count = f[i].param_count;
		g->params = p + f[i].first_param;
		g->param_bytes = f[i].param_bytes;
		g->static_shared_bytes = f[i].static_shared_bytes;
		g->local_bytes = f[i].local_bytes;
		g->max_threads_per_block = f[i].max_threads_per_block;
	}
	return 0;
}

static int check_variables(struct module_storage *s, const struct vgpu_module_table *h,
                           const struct vgpu_module_load_response *r)
{
	const struct vgpu_module_variable *v =
		(const void *)(s->table + h->variables_offset);

	s->variables = calloc(h->variable_count ? h->variable_count : 1, sizeof(*s->variables));
	if (!s->variables)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->variable_count; i++) {
		struct vgpu_guest_variable *g = &s->variables[i];

		g->name = table_name(s->table, h, v[i].name_offset);
		/* Every variable lies inside the variables' buffer. */
		if (!g->name || v[i].gpu_va < r->variables_va ||
		    v[i].bytes > r->variables_bytes ||
		    v[i].gpu_va - r->variables_va > r->variables_bytes - v[i].bytes)
			return -EPROTO;
		g->space = v[i].space;
		g->gpu_va = v[i].gpu_va;
		g->bytes = v[i].bytes;
	}
	return 0;
}

/* Check the table the backend wrote (its copy in s->table) and build the
 * module from it. Nothing in it is trusted. */
static int check_table(struct module_storage *s, const struct vgpu_module_load_response *r)
{
	struct vgpu_module_table h;
	int ret;

	memcpy(&h, s->table, sizeof(h));
	if (h.magic != VGPU_MODULE_TABLE_MAGIC || h.bytes != r->table_bytes ||
	    h.function_count != r->function_count || h.variable_count != r->variable_count ||
	    !in_table(h.bytes, h.functions_offset, h.function_count,
	              sizeof(struct vgpu_module_function)) ||
	    !in_table(h.bytes, h.params_offset, h.param_count, sizeof(struct vgpu_module_param)) ||
	    !in_table(h.bytes, h.variables_offset, h.variable_count,
	              sizeof(struct vgpu_module_variable)) ||
	    !in_table(h.bytes, h.strings_offset, h.strings_bytes, 1) ||
	    h.functions_offset % 4 || h.params_offset % 4 || h.variables_offset % 8)
		return -EPROTO;
	ret = check_functions(s, &h);
	if (!ret)
		ret = check_variables(s, &h, r);
	if (ret)
		return ret;
	s->module.handle = r->module;
	s->module.function_count = h.function_count;
	s->module.variable_count = h.variable_count;
	s->module.functions = s->functions;
	s->module.variables = s->variables;
	s->module.variables_va = r->variables_va;
	s->module.variables_bytes = r->variables_bytes;
	return 0;
}

/* Why MODULE_LOAD failed, from the table header the backend wrote. */
static void load_failed(struct vgpu_guest_device *dev, struct vgpu_channel *ch,
                        const struct vgpu_guest_buffer *table, int err)
{
	struct vgpu_module_table h;

	if (!vgpu_channel_download(ch, &h, table->gpu_va, sizeof(h)) &&
	    h.magic == VGPU_MODULE_TABLE_MAGIC && h.message[0]) {
		h.message[sizeof(h.message) - 1] = 0;
		snprintf(dev->error, sizeof(dev->error), "MODULE_LOAD: %s", h.message);
		return;
	}
	device_fail(dev, err, "MODULE_LOAD");
}

/* MODULE_LOAD of the uploaded image with a table room that grows once if
 * the backend asks for more. On 0, s->table holds the table. */
static int load(struct vgpu_guest_device *dev, struct vgpu_channel *ch,
                const struct vgpu_guest_buffer *image, uint64_t image_bytes,
                struct module_storage *s, struct vgpu_module_load_response *r)
{
	uint32_t room = TABLE_FIRST_BYTES;
	struct vgpu_guest_buffer table;
	int ret;

	for (int attempt = 0;; attempt++) {
		struct vgpu_module_load_request req = {
			.image_va = image->gpu_va,
			.image_bytes = image_bytes,
			.table_bytes = room,
		};

		ret = vgpu_buffer_alloc(dev, room, VGPU_PRIORITY_DEFAULT, &table);
		if (ret)
			return ret;
		req.table_va = table.gpu_va;
		ret = dev->ops->module_load(dev->backend, &req, r);
		if (ret == -ENOSPC && r->table_bytes > room && attempt == 0) {
			room = r->table_bytes;
			vgpu_buffer_free(dev, &table);
			continue;
		}
		break;
	}
	if (ret) {
		load_failed(dev, ch, &table, ret);
	} else {
		s->table = malloc(r->table_bytes);
		ret = s->table ? vgpu_channel_download(ch, s->table, table.gpu_va, r->table_bytes)
		               : -ENOMEM;
		if (ret)
			device_fail(dev, ret, "reading module %u's table", r->module);
	}
	vgpu_buffer_free(dev, &table);
	return ret;
}

int vgpu_module_load(struct vgpu_guest_device *dev, struct vgpu_channel *ch, const void *image,
                     size_t image_bytes, struct vgpu_guest_module **out)
{
	struct vgpu_module_load_response r;
	struct vgpu_guest_buffer buffer;
	struct module_storage *s;
	uint64_t fence;
	int ret;

	if (!dev || !ch || !image || !out)
		return -EINVAL;
	if (!(dev->info.features & VGPU_FEATURE_MODULES) || !dev->ops->module_load) {
		device_fail(dev, -ENOTSUP, "MODULE_LOAD (this vGPU offers no user programs)");
		return -ENOTSUP;
	}
	while (image_bytes && !((const char *)image)[image_bytes - 1])
		image_bytes--; /* the text's terminator, if given */
	if (!image_bytes || image_bytes > VGPU_MODULE_IMAGE_MAX_BYTES) {
		device_fail(dev, -EINVAL, "MODULE_LOAD of %zu bytes (1..%u)", image_bytes,
		            VGPU_MODULE_IMAGE_MAX_BYTES);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = vgpu_buffer_alloc(dev, image_bytes, VGPU_PRIORITY_DEFAULT, &buffer);
	if (ret)
		goto out;
	/* The backend reads the image from the VM's memory: it must be there. */
	ret = vgpu_channel_upload(ch, buffer.gpu_va, image, image_bytes, &fence);
	if (!ret)
		ret = vgpu_channel_wait(ch, fence, -1);
	if (ret)
		device_fail(dev, ret, "uploading a module image of %zu bytes", image_bytes);
	else
		ret = load(dev, ch, &buffer, image_bytes, s, &r);
	vgpu_buffer_free(dev, &buffer);
	if (ret)
		goto out;
	ret = check_table(s, &r);
	if (ret) {
		device_fail(dev, ret, "module %u's table", r.module);
		dev->ops->module_unload(dev->backend, r.module);
	}
out:
	if (ret) {
		module_free(s);
		return ret;
	}
	*out = &s->module;
	return 0;
}

int vgpu_module_unload(struct vgpu_guest_device *dev, struct vgpu_guest_module *m)
{
	struct module_storage *s = (struct module_storage *)m;
	int ret;

	if (!m)
		return 0;
	ret = dev->ops->module_unload ? dev->ops->module_unload(dev->backend, m->handle)
	                              : -ENOTSUP;
	if (ret)
		device_fail(dev, ret, "MODULE_UNLOAD of module %u", m->handle);
	module_free(s);
	return ret;
}

const struct vgpu_guest_function *vgpu_module_function(const struct vgpu_guest_module *m,
                                                       const char *name)
{
	for (uint32_t i = 0; m && name && i < m->function_count; i++)
		if (!strcmp(m->functions[i].name, name))
			return &m->functions[i];
	return NULL;
}

const struct vgpu_guest_variable *vgpu_module_variable(const struct vgpu_guest_module *m,
                                                       const char *name)
{
	for (uint32_t i = 0; m && name && i < m->variable_count; i++)
		if (!strcmp(m->variables[i].name, name))
			return &m->variables[i];
	return NULL;
}
