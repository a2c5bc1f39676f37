/* SPDX-License-Identifier: MIT */
/*
 * ptx_env.h - a flat GPU memory and a kernel runner for the PTX executor's
 * tests and benchmark: one host buffer plays global memory at FLAT_BASE;
 * modules load from the committed corpus (tests/ptx/NAME.ptx) with their
 * .global/.const variables placed and initialized in that memory.
 *
 * Threads: the memory callbacks may be called from several launch threads
 * at once (atomics take the env's lock); setting up (alloc, load) is
 * single-threaded.
 */
#ifndef PTX_ENV_H
#define PTX_ENV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ptx_exec.h"
#include "ptx_module.h"

#define FLAT_BASE 0x100000000ull

struct flat_env {
	uint8_t *bytes;
	uint64_t size, top;
	pthread_mutex_t lock;
	struct ptx_memory_ops ops;
	struct ptx_module *module;
	uint64_t *vars;
	unsigned host_threads;
	uint64_t budget;
	uint32_t max_depth;
	struct ptx_launch_result result;
};

void flat_init(struct flat_env *env, uint64_t size);
void flat_fini(struct flat_env *env);
/* A fresh zeroed allocation (256-byte aligned); aborts when full. */
uint64_t flat_alloc(struct flat_env *env, uint64_t bytes);
void *flat_ptr(struct flat_env *env, uint64_t va);
uint64_t flat_copy_in(struct flat_env *env, const void *src, uint64_t bytes);

/* Loads PTX text from the corpus directory; 0 or the load's rc. */
int flat_load_file(struct flat_env *env, const char *name, struct ptx_error *err);
int flat_load_text(struct flat_env *env, const char *text, const char *name,
		   struct ptx_error *err);

/*
 * Launches entry with one pointer per parameter (each param's size bytes
 * are copied from it). Returns ptx_launch's rc; env->result has the rest.
 */
int flat_run(struct flat_env *env, const char *entry, struct ptx_dim3 grid,
	     struct ptx_dim3 block, uint32_t dynamic_shared,
	     const void *const *args);

#endif
