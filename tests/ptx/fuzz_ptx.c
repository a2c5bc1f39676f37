// SPDX-License-Identifier: MIT
/* fuzz_ptx.c - the PTX fuzz harness (fuzz_ptx.h). */
#include "fuzz_ptx.h"

#include <stdlib.h>
#include <string.h>

#include "ptx_env.h"

int fuzz_ptx_run(const uint8_t *data, size_t size)
{
	struct flat_env env;
	flat_init(&env, 1u << 20);
	env.budget = 20000;
	env.max_depth = 16;
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	struct ptx_error err;
	int launched = 0;
	/* flat_load_text reads up to the first NUL, like a C string */
	if (!flat_load_text(&env, text, "fuzz.ptx", &err)) {
		uint64_t buf = flat_alloc(&env, 64 * 1024);
		size_t n = ptx_module_entry_count(env.module);
		for (size_t i = 0; i < n && i < 4; i++) {
			const struct ptx_entry_info *e = ptx_module_entry(env.module, i);
			const void *args[4096];
			uint64_t value = buf;
			for (uint32_t k = 0; k < e->param_count && k < 4096; k++)
				args[k] = e->params[k].size <= 8 ? (const void *)&value
								  : (const void *)env.bytes;
			if (e->param_count > 4096)
				continue;
			flat_run(&env, e->name, (struct ptx_dim3){ 2, 1, 1 },
				 (struct ptx_dim3){ 64, 1, 1 }, 256, args);
			launched++;
		}
	}
	free(text);
	flat_fini(&env);
	return launched;
}
