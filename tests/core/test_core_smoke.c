// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <errno.h>

#include <cmocka.h>

#include "core_harness.h"

static void smoke(void **state)
{
	struct core_harness h;
	struct core_harness_config config = { .chunk_bytes = 1 * MiB };
	struct vgpu_buffer_info a[10], b;
	struct vgpu_vm *vma, *vmb;

	core_harness_setup(&h, &config);
	fprintf(stderr, "vram %llu\n", (unsigned long long)h.caps.vram_bytes);
	vma = harness_vm(&h, "a", 1, 0, 0);
	vmb = harness_vm(&h, "b", 1, 0, 0);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(vgpu_core_alloc(vma, 6 * MiB, 7, 0, &a[i]), 0);
		harness_fill(vma, &a[i], i);
		harness_assert_invariants(&h);
	}
	assert_int_equal(vgpu_core_alloc(vmb, 12 * MiB, 7, 0, &b), 0);
	harness_assert_invariants(&h);
	for (int i = 0; i < 10; i++)
		assert_true(harness_check(vma, &a[i], i));
	struct vgpu_vm_stats s = harness_stats(vma);
	fprintf(stderr, "a resident %llu evicted %llu\n", (unsigned long long)s.resident_bytes, (unsigned long long)s.evicted_bytes);
	assert_int_equal(vgpu_core_free(vmb, b.handle), 0);
	harness_assert_invariants(&h);
	assert_int_equal(vgpu_core_return_pass(h.core), 12);
	harness_assert_invariants(&h);
	for (int i = 0; i < 10; i++)
		assert_true(harness_check(vma, &a[i], i));
	core_harness_teardown(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(smoke) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
