/* SPDX-License-Identifier: MIT */
/*
 * ptx_module.h - load a PTX module: parse, check and lower it for the
 * executor (ptx_exec.h).
 *
 * Accepts the PTX that nvcc -ptx and NVRTC emit for ordinary compute kernels:
 * .version 7.0 to 9.x, .target sm_70 and up, .address_size 64. Anything the
 * executor cannot run faithfully (textures, surfaces, half precision, tensor
 * cores, asynchronous copies, clusters, indirect calls, ...) fails the load
 * with "NAME:LINE: unsupported ..." in the error; nothing unsupported is
 * accepted and then executed wrongly.
 *
 * Bounded: the text, the instruction count, registers, variables and
 * parameter blocks have fixed limits (PTX_MAX_*); a module over a limit or
 * malformed in any way is refused with an error, never read out of bounds.
 *
 * Threads: loading is reentrant. A loaded module is immutable: any number of
 * threads may query it and launch from it at once. ptx_module_free must not
 * race with its users.
 *
 * Errors: functions returning int return 0 or a negative errno: -EINVAL
 * malformed text, -ENOTSUP well-formed but unsupported PTX, -E2BIG over a
 * limit, -ENOMEM. The struct ptx_error, when given, then holds the message
 * and the 1-based line (0 when not tied to a line).
 *
 * Ownership: the module owns every string and array its accessors return;
 * they live until ptx_module_free.
 */
#ifndef SIMGPU_PTX_MODULE_H
#define SIMGPU_PTX_MODULE_H

#include <stddef.h>
#include <stdint.h>

#define PTX_MAX_TEXT_BYTES (64u << 20)
#define PTX_MAX_INSTRUCTIONS (1u << 21)
#define PTX_MAX_FUNCTIONS 4096u
#define PTX_MAX_REGISTERS_PER_FUNCTION 65536u
#define PTX_MAX_PARAM_BYTES 32764u
#define PTX_MAX_VARIABLE_BYTES (256u << 20)
#define PTX_MAX_SHARED_BYTES (227u * 1024u)

struct ptx_error {
	unsigned line;      /* 1-based; 0: not tied to a line */
	char message[256];  /* "NAME:LINE: what" */
};

struct ptx_param_info {
	const char *name;
	uint32_t size;
	uint32_t align;
	uint32_t offset;    /* in the parameter block given to ptx_launch */
};

struct ptx_entry_info {
	const char *name;
	uint32_t param_count;
	const struct ptx_param_info *params;
	uint32_t param_bytes;          /* total size of the parameter block */
	uint32_t static_shared_bytes;  /* .shared variables of the module */
	uint32_t local_bytes;          /* the entry's own .local frame */
	int may_call;                  /* the entry contains call instructions */
};

enum ptx_var_space {
	PTX_VAR_GLOBAL = 1,
	PTX_VAR_CONST = 2,
};

/*
 * A module-scope .global or .const variable. The caller places it in GPU
 * memory (size bytes, aligned to align, filled with init) and passes its
 * address to every launch (ptx_launch's var_addresses, indexed like
 * ptx_module_var): kernels read .const and .global variables through the
 * same memory callbacks as any global access.
 */
struct ptx_var_info {
	const char *name;
	enum ptx_var_space space;
	uint64_t size;
	uint32_t align;
	const uint8_t *init;  /* size bytes: the initializer, zero padded */
};

struct ptx_module;

int ptx_module_load(const char *text, size_t len, const char *name,
		    struct ptx_module **out, struct ptx_error *err);
void ptx_module_free(struct ptx_module *module);

size_t ptx_module_entry_count(const struct ptx_module *module);
const struct ptx_entry_info *ptx_module_entry(const struct ptx_module *module,
					      size_t index);
/* The index of the entry called name, or -ENOENT. */
int ptx_module_find_entry(const struct ptx_module *module, const char *name);

size_t ptx_module_var_count(const struct ptx_module *module);
const struct ptx_var_info *ptx_module_var(const struct ptx_module *module,
					  size_t index);

/* Lowered instructions in the module (all functions), for reports. */
size_t ptx_module_instruction_count(const struct ptx_module *module);

#endif
