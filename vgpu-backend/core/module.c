// SPDX-License-Identifier: MIT
/*
 * module.c - programs a VM brings (vgpu/core.h's modules): the HAL checks
 * and binds them; the core gives their variables memory of the VM's own,
 * accounted and evictable like any buffer, and reads and writes VM memory
 * for them under the allocation lock.
 */
#include "module.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/core_migrate.h"

#include "buffer.h"
#include "core_internal.h"
#include "error.h"
#include "lock.h"

struct vgpu_core_module {
	struct list_head link; /* vm->modules */
	uint32_t id;
	uint64_t variables_handle; /* 0: no variables */
	uint64_t variables_va, variables_bytes;
	uint64_t *variable_va;
	struct vgpu_hal_module_info info;
	void *image; /* a copy, for migration */
	size_t image_bytes;
};

static int vm_access(struct vgpu_vm *vm, uint64_t va, void *host, uint64_t bytes, bool write,
                     struct vgpu_error *error)
{
	struct vgpu_core *core;
	int err;

	if (!vm || (!host && bytes))
		return vgpu_error_set(error, -EINVAL,
		                      "reading or writing VM memory needs a VM and a buffer");
	if (!bytes)
		return 0;
	core = vm->core;
	vgpu_core_lock_vm(core, vm);
	err = write ? vgpu_hal_as_write(vm->as, va, host, bytes)
	            : vgpu_hal_as_read(vm->as, va, host, bytes);
	vgpu_core_unlock(core);
	if (err)
		return vgpu_error_set(error, err == -EFAULT ? -EFAULT : err,
		                      "VM '%s': %" PRIu64 " bytes at GPU VA %#" PRIx64 " are not all "
		                      "mapped in the VM (%s)",
		                      vm->name, bytes, va, strerror(-err));
	return 0;
}

int vgpu_core_vm_read(struct vgpu_vm *vm, uint64_t va, void *dst, uint64_t bytes,
                      struct vgpu_error *error)
{
	return vm_access(vm, va, dst, bytes, false, error);
}

int vgpu_core_vm_write(struct vgpu_vm *vm, uint64_t va, const void *src, uint64_t bytes,
                       struct vgpu_error *error)
{
	return vm_access(vm, va, (void *)src, bytes, true, error);
}

/* Lay the variables out one after the other, each at its alignment. */
static int layout(struct vgpu_core_module *m, uint64_t *total)
{
	uint64_t offset = 0;

	m->variable_va = calloc(m->info.variable_count ? m->info.variable_count : 1,
	                        sizeof(*m->variable_va));
	if (!m->variable_va)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->info.variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &m->info.variables[i];
		uint64_t align = v->align ? v->align : 1;

		if (align & (align - 1) || align > 4096)
			return -EINVAL;
		offset = (offset + align - 1) / align * align;
		m->variable_va[i] = offset; /* made absolute once placed */
		if (v->bytes > (UINT64_C(1) << 40) - offset)
			return -E2BIG;
		offset += v->bytes;
	}
	*total = offset;
	return 0;
}

static void module_record_free(struct vgpu_core_module *m)
{
	free(m->variable_va);
	free(m->image);
	free(m);
}

/* A record with a copy of the image (migration sends it again). */
static struct vgpu_core_module *module_record_new(const void *image, size_t bytes)
{
	struct vgpu_core_module *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->image = malloc(bytes + 1);
	if (!m->image) {
		free(m);
		return NULL;
	}
	memcpy(m->image, image, bytes);
	((char *)m->image)[bytes] = 0; /* PTX is text */
	m->image_bytes = bytes;
	return m;
}

/* Place the variables in a buffer of vm and write their initializers. */
static int place_variables(struct vgpu_vm *vm, struct vgpu_core_module *m, uint64_t total,
                           unsigned priority, struct vgpu_error *error)
{
	struct vgpu_buffer_info buffer;
	int err;

	if (!total)
		return 0;
	err = vgpu_core_alloc(vm, total, priority, 0, &buffer, error);
	if (err)
		return err;
	m->variables_handle = buffer.handle;
	m->variables_va = buffer.gpu_va;
	m->variables_bytes = total;
	for (uint32_t i = 0; i < m->info.variable_count; i++) {
		const struct vgpu_hal_module_variable *v = &m->info.variables[i];

		m->variable_va[i] += buffer.gpu_va;
		if (!v->bytes)
			continue;
		err = vgpu_core_vm_write(vm, m->variable_va[i], v->init, v->bytes, error);
		if (err)
			return err;
	}
	return 0;
}

int vgpu_core_module_load(struct vgpu_vm *vm, const void *image, size_t bytes, const char *name,
                          unsigned priority, struct vgpu_module_loaded *out,
                          struct vgpu_error *error)
{
	struct vgpu_hal_module *module = NULL;
	struct vgpu_core_module *m;
	uint64_t total = 0;
	int err;

	if (!vm || !image || !bytes || !out)
		return vgpu_error_set(error, -EINVAL, "loading a module needs a VM and an image");
	vgpu_error_clear(error);
	m = module_record_new(image, bytes);
	if (!m)
		return vgpu_error_set(error, -ENOMEM, "out of memory for a module");
	err = vgpu_hal_module_parse(vm->core->hal, image, bytes, name, &module, error);
	if (err) {
		module_record_free(m);
		return err; /* the HAL's sentence */
	}
	vgpu_hal_module_info(module, &m->info);
	err = layout(m, &total);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': the module's variables cannot be laid out",
		               vm->name);
		goto fail;
	}
	err = place_variables(vm, m, total, priority, error);
	if (err)
		goto fail; /* the core's error says why */
	err = vgpu_hal_module_bind(vm->as, module, m->variable_va, &m->id);
	if (err) {
		vgpu_error_set(error, err, "VM '%s' cannot bind another module (%s)", vm->name,
		               strerror(-err));
		goto fail;
	}
	vgpu_core_lock_vm(vm->core, vm);
	list_add_tail(&m->link, &vm->modules);
	vgpu_core_unlock(vm->core);
	*out = (struct vgpu_module_loaded){
		.id = m->id,
		.info = m->info,
		.variable_va = m->variable_va,
		.variables_va = m->variables_va,
		.variables_bytes = m->variables_bytes,
	};
	return 0;
fail:
	if (m->variables_handle)
		vgpu_core_free(vm, m->variables_handle, NULL);
	vgpu_hal_module_free(module);
	module_record_free(m);
	return err;
}

/* Is every variable of m inside its variables buffer? */
static bool variables_inside_locked(struct vgpu_vm *vm, const struct vgpu_core_module *m)
{
	struct vgpu_core_buffer *b;

	vgpu_core_assert_locked(vm->core);
	if (!m->info.variable_count)
		return true;
	b = vgpu_core_buffer_lookup(vm, m->variables_handle);
	if (!b)
		return false;
	for (uint32_t i = 0; i < m->info.variable_count; i++) {
		uint64_t va = m->variable_va[i], bytes = m->info.variables[i].bytes;

		if (va < b->gpu_va || va - b->gpu_va > b->bytes || bytes > b->bytes - (va - b->gpu_va))
			return false;
	}
	return true;
}

int vgpu_core_module_restore(struct vgpu_vm *vm, const struct vgpu_core_module_desc *desc,
                             const char *name, struct vgpu_error *error)
{
	struct vgpu_hal_module *module = NULL;
	struct vgpu_core_module *m;
	bool inside;
	int err;

	if (!vm || !desc || !desc->image || !desc->image_bytes ||
	    (desc->variable_count && !desc->variable_va))
		return vgpu_error_set(error, -EINVAL, "restoring a module needs a VM and an image");
	vgpu_error_clear(error);
	m = module_record_new(desc->image, desc->image_bytes);
	if (!m)
		return vgpu_error_set(error, -ENOMEM, "out of memory for a module");
	err = vgpu_hal_module_parse(vm->core->hal, desc->image, desc->image_bytes, name, &module,
	                            error);
	if (err) {
		module_record_free(m);
		vgpu_error_prefix(error, "VM '%s': module %u: ", vm->name, desc->id);
		return err;
	}
	vgpu_hal_module_info(module, &m->info);
	if (m->info.variable_count != desc->variable_count) {
		err = vgpu_error_set(error, -EINVAL, "VM '%s': module %u has %u variables here, %u on "
		                     "the source", vm->name, desc->id, m->info.variable_count,
		                     desc->variable_count);
		goto fail;
	}
	m->variable_va = calloc(desc->variable_count ? desc->variable_count : 1,
	                        sizeof(*m->variable_va));
	if (!m->variable_va) {
		err = vgpu_error_set(error, -ENOMEM, "out of memory for a module");
		goto fail;
	}
	if (desc->variable_count)
		memcpy(m->variable_va, desc->variable_va,
		       desc->variable_count * sizeof(*m->variable_va));
	m->id = desc->id;
	m->variables_handle = desc->variable_count ? desc->variables_handle : 0;
	m->variables_va = desc->variables_va;
	m->variables_bytes = desc->variables_bytes;
	vgpu_core_lock_vm(vm->core, vm);
	inside = variables_inside_locked(vm, m);
	vgpu_core_unlock(vm->core);
	if (!inside) {
		err = vgpu_error_set(error, -EINVAL, "VM '%s': module %u's variables are not in its "
		                     "variables buffer", vm->name, desc->id);
		goto fail;
	}
	err = vgpu_hal_module_bind_at(vm->as, module, m->variable_va, desc->id);
	if (err) {
		vgpu_error_set(error, err, "VM '%s' cannot bind module %u here (%s)", vm->name, desc->id,
		                    err == -EEXIST ? "the id is taken" : strerror(-err));
		goto fail;
	}
	vgpu_core_lock_vm(vm->core, vm);
	list_add_tail(&m->link, &vm->modules);
	vgpu_core_unlock(vm->core);
	return 0;
fail:
	/* the variables buffer is the caller's (it came with the VM's buffers) */
	vgpu_hal_module_free(module);
	module_record_free(m);
	return err;
}

int vgpu_core_vm_modules(struct vgpu_vm *vm, struct vgpu_core_module_desc **out, size_t *count,
                         struct vgpu_error *error)
{
	struct vgpu_core_module_desc *descs = NULL;
	struct list_head *pos;
	size_t n = 0, total = 0;
	int err = 0;

	vgpu_error_clear(error);
	vgpu_core_lock_vm(vm->core, vm);
	list_for_each(pos, &vm->modules)
		total++;
	if (total && !(descs = calloc(total, sizeof(*descs))))
		err = -ENOMEM;
	list_for_each(pos, &vm->modules) {
		struct vgpu_core_module *m = list_entry(pos, struct vgpu_core_module, link);
		struct vgpu_core_module_desc *d;

		if (err)
			break;
		d = &descs[n++];
		*d = (struct vgpu_core_module_desc){
			.id = m->id,
			.variable_count = m->info.variable_count,
			.variables_handle = m->variables_handle,
			.variables_va = m->variables_va,
			.variables_bytes = m->variables_bytes,
			.image_bytes = m->image_bytes,
		};
		d->variable_va = malloc((m->info.variable_count ? m->info.variable_count : 1) *
		                        sizeof(*d->variable_va));
		d->image = malloc(m->image_bytes);
		if (!d->variable_va || !d->image) {
			err = -ENOMEM;
			break;
		}
		memcpy(d->variable_va, m->variable_va,
		       m->info.variable_count * sizeof(*d->variable_va));
		memcpy(d->image, m->image, m->image_bytes);
	}
	vgpu_core_unlock(vm->core);
	if (err) {
		vgpu_core_module_descs_free(descs, n);
		return vgpu_error_set(error, err, "VM '%s': out of memory listing modules", vm->name);
	}
	*out = descs;
	*count = n;
	return 0;
}

void vgpu_core_module_descs_free(struct vgpu_core_module_desc *descs, size_t count)
{
	for (size_t i = 0; descs && i < count; i++) {
		free(descs[i].variable_va);
		free(descs[i].image);
	}
	free(descs);
}

int vgpu_core_module_unload(struct vgpu_vm *vm, uint32_t id, struct vgpu_error *error)
{
	struct vgpu_core_module *found = NULL;
	struct list_head *pos;
	int err;

	if (!vm)
		return vgpu_error_set(error, -EINVAL, "unloading a module needs a VM");
	vgpu_core_lock_vm(vm->core, vm);
	list_for_each(pos, &vm->modules) {
		struct vgpu_core_module *m = list_entry(pos, struct vgpu_core_module, link);

		if (m->id == id) {
			found = m;
			list_del(&m->link);
			break;
		}
	}
	vgpu_core_unlock(vm->core);
	if (!found)
		return vgpu_error_set(error, -ENOENT, "VM '%s' has no module %u", vm->name, id);
	/* A launch still running finishes; its variables go after it. */
	err = vgpu_hal_module_unbind(vm->as, id);
	if (found->variables_handle)
		vgpu_core_free(vm, found->variables_handle, NULL);
	module_record_free(found);
	return err;
}

void vgpu_core_modules_forget_locked(struct vgpu_vm *vm)
{
	vgpu_core_assert_locked(vm->core);
	while (!list_empty(&vm->modules)) {
		struct vgpu_core_module *m =
		        list_entry(vm->modules.next, struct vgpu_core_module, link);

		list_del(&m->link);
		module_record_free(m);
	}
}
