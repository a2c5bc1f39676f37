// SPDX-License-Identifier: MIT
/*
 * test_error.c - the host side's error carrier (vgpu/error.h): set returns
 * its code, a NULL carrier discards the sentence, prefix adds context,
 * propagate copies, text truncates into a protocol field.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vgpu/error.h"

static void test_set_and_clear(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;

	(void)state;
	assert_false(vgpu_error_is_set(&error));
	assert_string_equal(vgpu_error_msg(&error), "no error");
	assert_int_equal(vgpu_error_set(&error, -ENOMEM, "out of memory for %d VMs", 3), -ENOMEM);
	assert_true(vgpu_error_is_set(&error));
	assert_int_equal(error.code, -ENOMEM);
	assert_string_equal(vgpu_error_msg(&error), "out of memory for 3 VMs");
	/* the last set wins */
	vgpu_error_set(&error, -EINVAL, "bad name");
	assert_int_equal(error.code, -EINVAL);
	assert_string_equal(vgpu_error_msg(&error), "bad name");
	vgpu_error_clear(&error);
	assert_false(vgpu_error_is_set(&error));
	assert_string_equal(error.msg, "");
}

static void test_null_carrier(void **state)
{
	(void)state;
	assert_int_equal(vgpu_error_set(NULL, -EIO, "nobody reads this"), -EIO);
	assert_int_equal(vgpu_error_prefix(NULL, "context: "), 0);
	assert_false(vgpu_error_is_set(NULL));
	assert_string_equal(vgpu_error_msg(NULL), "no error");
	assert_int_equal(vgpu_error_propagate(NULL, NULL), 0);
	vgpu_error_clear(NULL);
}

static void test_prefix(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	char big[VGPU_ERROR_MSG_MAX * 2];

	(void)state;
	/* nothing to prefix: stays unset */
	assert_int_equal(vgpu_error_prefix(&error, "VM '%s': ", "a"), 0);
	assert_false(vgpu_error_is_set(&error));
	vgpu_error_set(&error, -EDQUOT, "cap exceeded");
	assert_int_equal(vgpu_error_prefix(&error, "VM '%s': ", "a"), -EDQUOT);
	assert_string_equal(error.msg, "VM 'a': cap exceeded");
	assert_int_equal(error.code, -EDQUOT);
	/* a prefix that fills the sentence truncates, terminated */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	vgpu_error_prefix(&error, "%s", big);
	assert_int_equal(strlen(error.msg), VGPU_ERROR_MSG_MAX - 1);
	assert_int_equal(error.msg[0], 'x');
}

static void test_propagate(void **state)
{
	struct vgpu_error inner = VGPU_ERROR_INIT, outer = VGPU_ERROR_INIT;

	(void)state;
	/* an unset source leaves the destination alone */
	vgpu_error_set(&outer, -EPERM, "kept");
	assert_int_equal(vgpu_error_propagate(&outer, &inner), 0);
	assert_string_equal(outer.msg, "kept");
	vgpu_error_set(&inner, -ENOENT, "no such VM");
	assert_int_equal(vgpu_error_propagate(&outer, &inner), -ENOENT);
	assert_int_equal(outer.code, -ENOENT);
	assert_string_equal(outer.msg, "no such VM");
	assert_int_equal(vgpu_error_propagate(&outer, &outer), -ENOENT);
	assert_string_equal(outer.msg, "no such VM");
}

static void test_text(void **state)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	char field[8] = "garbage";

	(void)state;
	assert_string_equal(vgpu_error_text(&error, field, sizeof(field)), "");
	vgpu_error_set(&error, -EBUSY, "abc");
	assert_string_equal(vgpu_error_text(&error, field, sizeof(field)), "abc");
	vgpu_error_set(&error, -EBUSY, "a sentence longer than the field");
	assert_string_equal(vgpu_error_text(&error, field, sizeof(field)), "a sente");
	assert_string_equal(vgpu_error_text(NULL, field, sizeof(field)), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_and_clear),
		cmocka_unit_test(test_null_carrier),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_propagate),
		cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
