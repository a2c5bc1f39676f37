// SPDX-License-Identifier: MIT
/*
 * test_modules.c - a guest's own GPU program through vgpud (device ABI 1.3),
 * the way a guest does it: the image uploaded into a buffer of its own (a
 * COPY out of its pushbuffer area), MODULE_LOAD naming it, the table read
 * back, LAUNCH_FUNCTION in its channel, the results checked. Then what a
 * guest can get wrong: a malformed image (its reason in the table, with the
 * line), an image outside its memory, a table too small (nothing stays
 * loaded), MODULE_LOAD without the feature, unload twice.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel_util.h"
#include "harness.h"

#define N 1000u

struct guest {
	struct tenant t;
	struct test_channel c;
	uint64_t image_va, table_va, a_va, b_va, c_va;
};

static int hello(struct tenant *t, uint32_t features, uint32_t *granted)
{
	struct vgpu_hello_request q = { VGPU_ABI_VERSION, features };
	struct vgpu_hello_response r;
	struct vgpu_response response;
	int status = tenant_call(t, VGPU_OP_HELLO, &q, sizeof(q), &response);

	memcpy(&r, response.payload, sizeof(r));
	*granted = r.features;
	return status;
}

/* Copy bytes into GPU memory at va through the pushbuffer's second half
 * (GPU-readable memory the guest writes), a COPY at a time. */
static void upload(struct guest *g, uint64_t va, const void *data, uint64_t bytes)
{
	uint32_t half = g->c.info.pushbuf_bytes / 2, words[VGPU_COMMAND_MAX_WORDS];

	for (uint64_t done = 0; done < bytes; done += half) {
		uint64_t n = bytes - done < half ? bytes - done : half;

		assert_int_equal(test_channel_finish(&g->c, 5000), 0);
		g->c.pushbuf_used = 0; /* idle: the first half is free again */
		memcpy((uint8_t *)g->c.pushbuf + half, (const uint8_t *)data + done, n);
		test_channel_submit(&g->c, words,
		                    vgpu_push_copy(words, va + done, g->c.info.pushbuf_gpu_va + half,
		                                   n));
	}
	assert_int_equal(test_channel_finish(&g->c, 5000), 0);
}

/* Copy bytes out of GPU memory at va through the notifier page. */
static void download(struct guest *g, uint64_t va, void *data, uint64_t bytes)
{
	const uint32_t at = 1024, piece = 2048;
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	for (uint64_t done = 0; done < bytes; done += piece) {
		uint64_t n = bytes - done < piece ? bytes - done : piece;

		test_channel_submit(&g->c, words,
		                    vgpu_push_copy(words, g->c.info.notifier_gpu_va + at, va + done,
		                                   n));
		assert_int_equal(test_channel_finish(&g->c, 5000), 0);
		memcpy((uint8_t *)data + done, g->c.notifier + at, n);
	}
}

static void guest_open(struct harness *h, struct guest *g, const char *name, uint32_t features)
{
	uint32_t handle, granted;

	assert_int_equal(tenant_open(h, &g->t, name, "small"), 0);
	assert_int_equal(hello(&g->t, features, &granted), VGPU_STATUS_OK);
	assert_int_equal(granted & VGPU_FEATURE_MODULES, features & VGPU_FEATURE_MODULES);
	assert_int_equal(tenant_alloc(&g->t, 64 << 10, 7, &handle, &g->image_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, 64 << 10, 7, &handle, &g->table_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, N * 4, 7, &handle, &g->a_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, N * 4, 7, &handle, &g->b_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, N * 4, 7, &handle, &g->c_va), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&g->t, 0, &g->c), VGPU_STATUS_OK);
}

/* The index of function name in a downloaded table, with its layout. */
static int find_function(const uint8_t *table, const char *name,
                         struct vgpu_module_function *out)
{
	const struct vgpu_module_table *header = (const void *)table;

	for (uint32_t i = 0; i < header->function_count; i++) {
		struct vgpu_module_function f;

		memcpy(&f, table + header->functions_offset + i * sizeof(f), sizeof(f));
		if (!strcmp((const char *)table + header->strings_offset + f.name_offset, name)) {
			*out = f;
			return (int)i;
		}
	}
	return -1;
}

static void test_module_load_and_launch(void **state)
{
	struct harness *h = *state;
	struct vgpu_module_load_response r;
	struct vgpu_module_function f;
	struct vgpu_launch_dims dims = { { (N + 127) / 128, 1, 1 }, { 128, 1, 1 }, 0 };
	uint32_t x[N], y[N], z[N], words[64];
	uint8_t table[4096];
	struct guest g;
	size_t bytes;
	char *image = harness_read_file(TEST_PTX_DIR "/modules.ptx", &bytes);
	int index;

	guest_open(h, &g, "user-program", VGPU_FEATURE_MODULES);
	upload(&g, g.image_va, image, bytes);
	assert_int_equal(tenant_module_load(&g.t, g.image_va, bytes, g.table_va, 64 << 10,
	                                    &r),
	                 VGPU_STATUS_OK);
	assert_int_equal(r.function_count, 5);
	assert_int_equal(r.variable_count, 3);
	assert_true(r.variables_bytes >= 16 && r.variables_va != 0);
	assert_true(r.table_bytes > sizeof(struct vgpu_module_table) && r.table_bytes <= 4096);
	download(&g, g.table_va, table, r.table_bytes);
	assert_int_equal(((struct vgpu_module_table *)table)->magic, VGPU_MODULE_TABLE_MAGIC);
	index = find_function(table, "vadd_u32", &f);
	assert_true(index >= 0);
	assert_int_equal(f.param_count, 4);
	assert_int_equal(f.param_bytes, 28);

	for (uint32_t i = 0; i < N; i++) {
		x[i] = i * 7919u;
		y[i] = 1000000u - i;
	}
	upload(&g, g.a_va, x, sizeof(x));
	upload(&g, g.b_va, y, sizeof(y));
	{
		struct {
			uint64_t a, b, c;
			int32_t n;
		} __attribute__((packed)) params = { g.a_va, g.b_va, g.c_va, (int32_t)N };

		test_channel_submit(&g.c, words,
		                    vgpu_push_launch_function(words, r.module, (uint32_t)index, &dims,
		                                              &params, 28));
	}
	assert_int_equal(test_channel_finish(&g.c, 10000), 0);
	download(&g, g.c_va, z, sizeof(z));
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(z[i], x[i] + y[i]);

	assert_int_equal(tenant_module_unload(&g.t, r.module), VGPU_STATUS_OK);
	assert_int_equal(tenant_module_unload(&g.t, r.module), VGPU_STATUS_NOT_FOUND);
	free(image);
	tenant_close(&g.t);
}

static void test_module_load_errors(void **state)
{
	static const char garbage[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
	                              ".visible .entry f(\n{\n\tbogus.instruction;\n}\n";
	struct harness *h = *state;
	struct vgpu_module_load_response r;
	struct vgpu_module_table header;
	struct guest g, plain;
	size_t bytes;
	char *image = harness_read_file(TEST_PTX_DIR "/modules.ptx", &bytes);

	guest_open(h, &g, "careless", VGPU_FEATURE_MODULES);
	/* malformed: INVALID, the reason in the table, with its line */
	upload(&g, g.image_va, garbage, sizeof(garbage) - 1);
	assert_int_equal(tenant_module_load(&g.t, g.image_va, sizeof(garbage) - 1, g.table_va, 64 << 10,
	                                    &r),
	                 VGPU_STATUS_INVALID);
	download(&g, g.table_va, &header, sizeof(header));
	assert_int_equal(header.magic, VGPU_MODULE_TABLE_MAGIC);
	assert_non_null(strstr(header.message, "module:"));
	/* an image outside the VM's memory */
	assert_int_equal(tenant_module_load(&g.t, 0x7f0000000000ull, 4096, g.table_va, 64 << 10,
	                                    &r),
	                 VGPU_STATUS_INVALID);
	/* a table too small: LIMIT with the size needed; nothing stays */
	upload(&g, g.image_va, image, bytes);
	assert_int_equal(tenant_module_load(&g.t, g.image_va, bytes, g.table_va, sizeof(header),
	                                    &r),
	                 VGPU_STATUS_LIMIT);
	assert_true(r.table_bytes > sizeof(header));
	assert_int_equal(tenant_module_load(&g.t, g.image_va, bytes, g.table_va, r.table_bytes,
	                                    &r),
	                 VGPU_STATUS_OK);
	assert_int_equal(tenant_module_unload(&g.t, r.module), VGPU_STATUS_OK);
	assert_int_equal(tenant_module_unload(&g.t, 4242), VGPU_STATUS_NOT_FOUND);

	/* a guest that did not ask for the feature */
	guest_open(h, &plain, "old-guest", 0);
	upload(&plain, plain.image_va, image, bytes);
	assert_int_equal(tenant_module_load(&plain.t, plain.image_va, bytes, plain.table_va, 64 << 10,
	                                    &r),
	                 VGPU_STATUS_UNSUPPORTED);
	free(image);
	tenant_close(&plain.t);
	tenant_close(&g.t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_module_load_and_launch, harness_setup,
		                                harness_teardown),
		cmocka_unit_test_setup_teardown(test_module_load_errors, harness_setup,
		                                harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
