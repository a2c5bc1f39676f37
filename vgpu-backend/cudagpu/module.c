// SPDX-License-Identifier: MIT
/*
 * module.c - programs a VM brings (vgpu/hal.h, "Modules") on cudagpu. Only
 * under process isolation: in one process the contexts of several VMs are
 * not isolated, so a VM's own kernels run in its GPU worker.
 *
 * vgpud's side (the HAL operations): module_parse checks the PTX with the
 * project's PTX front end (vgpu-backend/simgpu/ptx: it is the reference of
 * what a VM may load, so simgpu and cudagpu accept the same programs) and
 * describes its functions and variables; module_bind records the module in
 * the address space's worker (cg_worker.modules, so that a worker started
 * after a loss gets it again) and sends it to the live worker.
 *
 * The worker's side: cuModuleLoadData in its own context (the driver
 * JIT-compiles the PTX), one cuModuleGetFunction per entry, one
 * cuModuleGetGlobal per variable. Variables live in the VM's memory (the
 * HAL's contract) and the module's own globals are the driver's: each
 * LAUNCH_FUNCTION copies every variable from the VM's memory into the
 * module's global before the kernel and the .global ones back after it, in
 * the channel's stream (commands.c). docs/DESIGN.md §7 says what that costs
 * and where it differs from simgpu.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "module.h"
#include "ptx_hal_info.h"
#include "ptx_module.h"
#include "worker_client.h"

struct cg_module {
	struct vgpu_hal_module base;
	struct ptx_module *ptx;
	char *image; /* the text, NUL-terminated, for the worker */
	size_t bytes;
	struct vgpu_hal_module_function *functions;
	struct vgpu_hal_module_param *params;
	struct vgpu_hal_module_variable *variables;
	struct vgpu_hal_module_info info;
	uint64_t *variable_va; /* set when bound */
};

static struct cg_module *module_of(struct vgpu_hal_module *module)
{
	return (struct cg_module *)module;
}

static void module_destroy(struct cg_module *m)
{
	if (!m)
		return;
	ptx_module_free(m->ptx);
	free(m->image);
	free(m->functions);
	free(m->params);
	free(m->variables);
	free(m->variable_va);
	free(m);
}

/* The HAL's view of the PTX module's entries and variables. */
static int describe(struct cg_module *m)
{
	return ptx_hal_describe(m->ptx, CG_MAX_BLOCK_THREADS, &m->functions, &m->params,
	                        &m->variables, &m->info);
}

int cg_module_parse(struct vgpu_hal *hal, const void *image, size_t bytes, const char *name,
                    struct vgpu_hal_module **out, struct vgpu_error *error)
{
	struct cg_module *m;
	struct ptx_error ptx_error = { 0 };
	int err;

	if (bytes > PTX_MAX_TEXT_BYTES || memchr(image, 0, bytes))
		return vgpu_error_set(error, -EINVAL, "%s: not PTX text (%s)",
		                      name ? name : "module",
		                      bytes > PTX_MAX_TEXT_BYTES ? "too large" : "a NUL byte in it");
	m = calloc(1, sizeof(*m));
	if (!m)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the module");
	m->base.hal = hal;
	err = ptx_module_load(image, bytes, name ? name : "module", &m->ptx, &ptx_error);
	if (err) {
		free(m);
		return vgpu_error_set(error, err, "%s",
		                      ptx_error.message[0] ? ptx_error.message : strerror(-err));
	}
	m->image = malloc(bytes + 1);
	err = m->image ? describe(m) : -ENOMEM;
	if (err) {
		module_destroy(m);
		return vgpu_error_set(error, err, "out of memory describing the module");
	}
	memcpy(m->image, image, bytes);
	m->image[bytes] = 0;
	m->bytes = bytes;
	*out = &m->base;
	return 0;
}

void cg_module_info(struct vgpu_hal_module *module, struct vgpu_hal_module_info *out)
{
	*out = module_of(module)->info;
}

void cg_module_free(struct vgpu_hal_module *module)
{
	module_destroy(module_of(module));
}

/* ------------------------------------------------------- vgpud's side */

/* w->lock held, alive: send module id to the worker (its image as a memfd). */
int cg_worker_send_module(struct cg_worker *w, uint32_t id, struct cg_module *m)
{
	struct cg_wire_msg msg = {
		.op = CG_OP_MODULE_BIND,
		.count = m->info.variable_count,
		.a = { id, m->bytes },
	};
	struct cg_wire_reply reply;
	int fd = memfd_create("vgpu-module", MFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (write(fd, m->image, m->bytes) != (ssize_t)m->bytes) {
		close(fd);
		return -EIO;
	}
	err = cg_worker_call(w, &msg, m->variable_va, &fd, 1, &reply);
	close(fd);
	return err ? err : reply.status;
}

/* w->lock held: every bound module to a new life. */
int cg_worker_send_modules(struct cg_worker *w)
{
	for (uint32_t id = 0; id < CG_MAX_MODULES; id++) {
		int err = w->modules[id] ? cg_worker_send_module(w, id, w->modules[id]) : 0;

		if (err)
			return err;
	}
	return 0;
}

void cg_worker_free_modules(struct cg_worker *w)
{
	for (uint32_t id = 0; id < CG_MAX_MODULES; id++) {
		module_destroy(w->modules[id]);
		w->modules[id] = NULL;
	}
}

/* Bind under slot want (UINT32_MAX: the lowest free one) into *id. */
static int bind(struct vgpu_hal_as *base, struct vgpu_hal_module *module,
                const uint64_t *variable_va, uint32_t want, uint32_t *id)
{
	struct cg_as *as = (struct cg_as *)base;
	struct cg_module *m = module_of(module);
	struct cg_worker *w = as->worker;
	uint32_t count = m->info.variable_count, slot;
	uint64_t *addresses = NULL;
	int err = 0;

	if (m->variable_va || !w)
		return -EINVAL;
	if (count > CG_WIRE_MAX_WORDS)
		return -ENOSPC; /* more variables than one request carries */
	if (count) {
		if (!variable_va)
			return -EINVAL;
		for (uint32_t i = 0; i < count; i++) {
			uint32_t align = m->variables[i].align ? m->variables[i].align : 1;

			if (variable_va[i] % align || variable_va[i] >= CG_VA_RESERVED_BASE ||
			    m->variables[i].bytes > CG_VA_RESERVED_BASE - variable_va[i])
				return -EINVAL;
		}
		addresses = malloc(count * sizeof(*addresses));
		if (!addresses)
			return -ENOMEM;
		memcpy(addresses, variable_va, count * sizeof(*addresses));
	}
	pthread_mutex_lock(&w->lock);
	if (want == UINT32_MAX)
		for (slot = 0; slot < CG_MAX_MODULES && w->modules[slot]; slot++)
			;
	else
		slot = want;
	if (slot >= CG_MAX_MODULES || w->modules[slot]) {
		pthread_mutex_unlock(&w->lock);
		free(addresses);
		return slot >= CG_MAX_MODULES ? -ENOSPC : -EEXIST;
	}
	m->variable_va = addresses;
	if (cg_worker_alive(w))
		err = cg_worker_send_module(w, slot, m);
	if (err == -EPIPE || err == -ETIMEDOUT) {
		cg_worker_kill(w); /* the next life gets it */
		err = 0;
	}
	if (err) {
		m->variable_va = NULL;
		free(addresses);
	} else {
		w->modules[slot] = m;
	}
	pthread_mutex_unlock(&w->lock);
	if (!err)
		*id = slot;
	return err;
}

int cg_module_bind(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                   const uint64_t *variable_va, uint32_t *id)
{
	return bind(as, module, variable_va, UINT32_MAX, id);
}

int cg_module_bind_at(struct vgpu_hal_as *as, struct vgpu_hal_module *module,
                      const uint64_t *variable_va, uint32_t id)
{
	uint32_t got;

	return bind(as, module, variable_va, id, &got);
}

int cg_module_unbind(struct vgpu_hal_as *base, uint32_t id)
{
	struct cg_as *as = (struct cg_as *)base;
	struct cg_worker *w = as->worker;
	struct cg_wire_msg msg = { .op = CG_OP_MODULE_UNBIND, .a = { id } };
	struct cg_wire_reply reply;
	struct cg_module *m;

	if (!w || id >= CG_MAX_MODULES)
		return -ENOENT;
	pthread_mutex_lock(&w->lock);
	m = w->modules[id];
	w->modules[id] = NULL;
	if (m && cg_worker_alive(w) &&
	    (cg_worker_call(w, &msg, NULL, NULL, 0, &reply) || reply.status))
		cg_worker_kill(w); /* it no longer follows vgpud's table */
	pthread_mutex_unlock(&w->lock);
	if (!m)
		return -ENOENT;
	module_destroy(m);
	return 0;
}

/* ------------------------------------------------------ the worker's side */

static void user_module_free(struct cudagpu *gpu, struct cg_user_module *um)
{
	if (!um)
		return;
	if (um->cu)
		gpu->api.cuModuleUnload(um->cu);
	ptx_module_free(um->ptx);
	free(um->functions);
	free(um->globals);
	free(um->variable_va);
	free(um);
}

int cg_worker_module_load(struct cudagpu *gpu, struct cg_as *as, uint32_t id, const char *image,
                          size_t bytes, const uint64_t *variable_va, uint32_t variable_count,
                          struct vgpu_error *error)
{
	struct cg_user_module *um;
	struct ptx_error ptx_error = { 0 };
	char text[160];
	size_t functions, variables, i;
	cg_result r;
	int err;

	if (id >= CG_MAX_MODULES || as->modules[id])
		return vgpu_error_set(error, -EINVAL, "module id %u is out of range or taken", id);
	if (!as->identity)
		return vgpu_error_set(error, -ENOTSUP, "the driver did not place the address space "
		                      "where the VM's addresses are (no identity range): user "
		                      "kernels cannot run here");
	um = calloc(1, sizeof(*um));
	if (!um)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the module");
	err = ptx_module_load(image, bytes, "module", &um->ptx, &ptx_error);
	if (err) {
		vgpu_error_set(error, err, "%s",
		               ptx_error.message[0] ? ptx_error.message : strerror(-err));
		goto fail;
	}
	functions = ptx_module_entry_count(um->ptx);
	variables = ptx_module_var_count(um->ptx);
	if (variables != variable_count) {
		err = vgpu_error_set(error, -EINVAL, "the module has %zu variables, vgpud sent %u",
		                     variables, variable_count);
		goto fail;
	}
	um->functions = calloc(functions ? functions : 1, sizeof(*um->functions));
	um->globals = calloc(variables ? variables : 1, sizeof(*um->globals));
	um->variable_va = calloc(variables ? variables : 1, sizeof(*um->variable_va));
	if (!um->functions || !um->globals || !um->variable_va) {
		err = vgpu_error_set(error, -ENOMEM, "out of memory for the module");
		goto fail;
	}
	um->function_count = (uint32_t)functions;
	um->variable_count = (uint32_t)variables;
	if (variables)
		memcpy(um->variable_va, variable_va, variables * sizeof(*variable_va));
	cg_enter(gpu);
	r = gpu->api.cuModuleLoadData(&um->cu, image);
	if (r != CG_SUCCESS) {
		um->cu = NULL;
		err = vgpu_error_set(error, cg_errno(r), "cuModuleLoadData: %s",
		                     cuda_api_error(&gpu->api, r, text, sizeof(text)));
		goto fail;
	}
	for (i = 0; i < functions; i++) {
		r = gpu->api.cuModuleGetFunction(&um->functions[i], um->cu,
		                                 ptx_module_entry(um->ptx, i)->name);
		if (r != CG_SUCCESS)
			break;
	}
	for (i = 0; r == CG_SUCCESS && i < variables; i++) {
		size_t size = 0;

		r = gpu->api.cuModuleGetGlobal(&um->globals[i], &size, um->cu,
		                               ptx_module_var(um->ptx, i)->name);
		if (r == CG_SUCCESS && size != ptx_module_var(um->ptx, i)->size)
			r = CG_ERROR_INVALID_VALUE;
	}
	if (r != CG_SUCCESS) {
		err = vgpu_error_set(error, -EIO, "the driver's module differs from the PTX: %s",
		                     cuda_api_error(&gpu->api, r, text, sizeof(text)));
		goto fail;
	}
	cg_pfifo_lock(gpu);
	as->modules[id] = um;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return 0;
fail:
	user_module_free(gpu, um);
	return err;
}

int cg_worker_module_unload(struct cudagpu *gpu, struct cg_as *as, uint32_t id)
{
	struct cg_user_module *um;

	if (id >= CG_MAX_MODULES)
		return -ENOENT;
	cg_pfifo_lock(gpu);
	um = as->modules[id];
	as->modules[id] = NULL;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	if (!um)
		return -ENOENT;
	/* Launches of it already issued finish first (this VM's context only). */
	cg_enter(gpu);
	gpu->api.cuCtxSynchronize();
	user_module_free(gpu, um);
	return 0;
}

void cg_worker_modules_fini(struct cudagpu *gpu, struct cg_as *as)
{
	for (uint32_t id = 0; id < CG_MAX_MODULES; id++) {
		user_module_free(gpu, as->modules[id]);
		as->modules[id] = NULL;
	}
}
