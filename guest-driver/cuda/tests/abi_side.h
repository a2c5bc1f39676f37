/* SPDX-License-Identifier: MIT */
/*
 * abi_side.h - the body of abi_ours.c and abi_theirs.c: included after a
 * cuda.h, it fills struct abi_side ABI_SIDE from the generated lists.
 */
#include <stddef.h>
#include <stdint.h>

#include "abi_table.h"
#include "cuda_abi_lists.h"

#define ABI_STR(x) #x
#define ABI_XSTR(x) ABI_STR(x)
#define ABI_CONSTANT(name) (long long)(intptr_t)(name),
#define ABI_SIZE(type) sizeof(type),
#define ABI_OFFSET(type, field) offsetof(type, field),
#define ABI_FIELD_SIZE(type, field) sizeof(((type *)0)->field),
#define ABI_SYMBOL(name) ABI_XSTR(name),

static const long long constants[] = { ABI_CONSTANTS(ABI_CONSTANT) };
static const unsigned long type_sizes[] = { ABI_TYPES(ABI_SIZE) };
static const unsigned long field_offsets[] = { ABI_FIELDS(ABI_OFFSET) };
static const unsigned long field_sizes[] = { ABI_FIELDS(ABI_FIELD_SIZE) };
static const char *const symbols[] = { ABI_NAMES(ABI_SYMBOL) };

const struct abi_side ABI_SIDE = {
	constants, type_sizes, field_offsets, field_sizes, symbols,
};
