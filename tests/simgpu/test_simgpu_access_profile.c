// SPDX-License-Identifier: MIT
/*
 * test_simgpu_access_profile.c - white-box: the per-page access counts of
 * SIMGPU_ACCESS_PROFILE (access_profile.h): off without the variable; on,
 * the file holds each touched page once, by VA, with its reads and writes
 * and the busy time; nothing counted, no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "access_profile.h"

static char dir[] = "/tmp/simgpu-profile.XXXXXX";

static void test_off_without_variable(void **state)
{
	struct access_profile ap;

	(void)state;
	unsetenv("SIMGPU_ACCESS_PROFILE");
	access_profile_init(&ap);
	assert_false(ap.enabled);
	access_profile_count(&ap, 0x1000, true, false);
	assert_int_equal(ap.count, 0);
	access_profile_fini(&ap, 1, 2);
}

static void test_counts_written_by_page(void **state)
{
	struct access_profile ap;
	char path[512], line[256], text[2048] = "";
	FILE *in;

	(void)state;
	setenv("SIMGPU_ACCESS_PROFILE", dir, 1);
	access_profile_init(&ap);
	assert_true(ap.enabled);
	snprintf(path, sizeof(path), "%s", ap.path);
	/* three regions, out of order; two reads and a write on one page */
	access_profile_count(&ap, 0x40000004, true, false);
	access_profile_count(&ap, 0x400000ff, true, false);
	access_profile_count(&ap, 0x40000800, false, true);
	access_profile_count(&ap, 0x200000, true, true); /* an atomic */
	access_profile_count(&ap, 0x10001fff, false, true);
	assert_int_equal(ap.count, 3);
	access_profile_fini(&ap, 1500, 250);
	in = fopen(path, "r");
	assert_non_null(in);
	while (fgets(line, sizeof(line), in))
		strncat(text, line, sizeof(text) - strlen(text) - 1);
	fclose(in);
	unlink(path);
	assert_non_null(strstr(text, "# busy_ns compute=1500 copy=250\n"));
	assert_non_null(strstr(text, "# page_va reads writes\n0x200000 1 1\n0x10001000 0 1\n"
	                             "0x40000000 2 1\n"));
	assert_null(strstr(text, "# lost"));
}

static void test_nothing_counted_no_file(void **state)
{
	struct access_profile ap;
	char path[512];

	(void)state;
	setenv("SIMGPU_ACCESS_PROFILE", dir, 1);
	access_profile_init(&ap);
	snprintf(path, sizeof(path), "%s", ap.path);
	access_profile_fini(&ap, 0, 0);
	assert_int_not_equal(access(path, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_without_variable),
		cmocka_unit_test(test_counts_written_by_page),
		cmocka_unit_test(test_nothing_counted_no_file),
	};
	int failed;

	if (!mkdtemp(dir))
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return failed;
}
