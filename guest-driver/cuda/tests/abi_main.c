// SPDX-License-Identifier: MIT
/*
 * abi_main.c - the cuda-abi checker: the project's cuda.h against
 * NVIDIA's. Function types are checked at build time (abi_functions.c,
 * abi_legacy.c); this compares, from both headers, every constant's
 * value, every type's size, every struct field's offset and size, and
 * the symbol every API name selects (cuMemAlloc -> cuMemAlloc_v2).
 * Exit 0 only if all match; each mismatch is printed.
 */
#include <stdio.h>
#include <string.h>

#include "abi_table.h"
#include "cuda_abi_lists.h"

extern const unsigned int abi_function_count, abi_legacy_count;

#define ABI_NAME1(a) #a,
#define ABI_NAME2(a, b) #a "." #b,

static const char *const constant_names[] = { ABI_CONSTANTS(ABI_NAME1) };
static const char *const type_names[] = { ABI_TYPES(ABI_NAME1) };
static const char *const field_names[] = { ABI_FIELDS(ABI_NAME2) };
static const char *const api_names[] = { ABI_NAMES(ABI_NAME1) };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	const struct abi_side *o = &abi_ours, *t = &abi_theirs;
	unsigned int bad = 0;

	for (size_t i = 0; i < COUNT(constant_names); i++)
		if (o->constants[i] != t->constants[i]) {
			printf("constant %s: ours %lld, cuda.h %lld\n", constant_names[i],
			       o->constants[i], t->constants[i]);
			bad++;
		}
	for (size_t i = 0; i < COUNT(type_names); i++)
		if (o->type_sizes[i] != t->type_sizes[i]) {
			printf("sizeof(%s): ours %lu, cuda.h %lu\n", type_names[i], o->type_sizes[i],
			       t->type_sizes[i]);
			bad++;
		}
	for (size_t i = 0; i < COUNT(field_names); i++)
		if (o->field_offsets[i] != t->field_offsets[i] ||
		    o->field_sizes[i] != t->field_sizes[i]) {
			printf("field %s: ours at %lu (%lu bytes), cuda.h at %lu (%lu bytes)\n",
			       field_names[i], o->field_offsets[i], o->field_sizes[i],
			       t->field_offsets[i], t->field_sizes[i]);
			bad++;
		}
	for (size_t i = 0; i < COUNT(api_names); i++)
		if (strcmp(o->symbols[i], t->symbols[i])) {
			printf("%s selects %s here, %s in cuda.h\n", api_names[i], o->symbols[i],
			       t->symbols[i]);
			bad++;
		}
	printf("cuda-abi: %u functions and %u earlier forms (types checked at build time), "
	       "%zu constants, %zu types, %zu fields, %zu API names: %u mismatches\n",
	       abi_function_count, abi_legacy_count, COUNT(constant_names), COUNT(type_names),
	       COUNT(field_names), COUNT(api_names), bad);
	return bad ? 1 : 0;
}
