// SPDX-License-Identifier: MIT
/*
 * test_hal_conformance.c - the HAL conformance suite's entry point.
 *
 * Runs every group against the backend $VGPU_HAL names ("simgpu" when
 * unset, "cuda", "cuda:N"). Where a CUDA backend finds no usable GPU (no
 * driver, no device, no host-memory mapping) it prints why and exits 77,
 * which meson reports as SKIP: a machine without a GPU never passes the
 * cuda run. Arguments, if any, name the groups to run (hal-memory,
 * hal-copy, hal-channels, hal-kernels, hal-concurrency, hal-isolation: cudagpu's
 * process isolation, skipped elsewhere; hal-kill: cudagpu's bounded kill
 * on the stand-in driver with timed kernels, skipped elsewhere).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_conformance.h"
#include "vgpu/hal_open.h"

#define EXIT_SKIP 77

static const struct hal_test_group *const groups[] = {
	&hal_memory_group,
	&hal_copy_group,
	&hal_channel_group,
	&hal_kernel_group,
	&hal_concurrency_group,
	&hal_isolation_group,
	&hal_module_group,
	&hal_kill_group,
};

static bool selected(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *env = getenv("VGPU_HAL");
	struct vgpu_hal_spec spec;
	struct vgpu_hal *hal;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char name[32];
	unsigned i;
	int err, failed = 0;

	if (env && !strcmp(env, "simgpu-2m")) {
		memset(&spec, 0, sizeof(spec));
		snprintf(name, sizeof(name), "%s", env);
	} else {
		err = vgpu_hal_spec_parse(env && *env ? env : NULL, &spec, &error);
		if (err) {
			fprintf(stderr, "test-hal-conformance: VGPU_HAL: %s\n",
			        vgpu_error_msg(&error));
			return 1;
		}
		vgpu_hal_spec_format(&spec, name, sizeof(name));
	}
	/* open once up front: a backend that cannot run here is a skip (cuda
	 * without a GPU) or a failure, decided before any test runs */
	err = hal_suite_open(&hal, &error);
	if (err) {
		if (spec.backend == VGPU_HAL_BACKEND_CUDA &&
		    (err == -ENOENT || err == -ENODEV || err == -ENOTSUP)) {
			printf("SKIP: HAL conformance on %s: no usable GPU here: %s\n", name,
			       vgpu_error_msg(&error));
			return EXIT_SKIP;
		}
		fprintf(stderr, "test-hal-conformance: cannot open %s: %s (%s)\n", name,
		        vgpu_error_msg(&error), strerror(-err));
		return 1;
	}
	printf("# HAL conformance on %s\n", name);
	fflush(stdout);
	hal_suite_hand_over(hal);
	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		if (!selected(groups[i]->name, argc, argv))
			continue;
		failed += _cmocka_run_group_tests(groups[i]->name, groups[i]->tests, groups[i]->count,
		                                  hal_group_setup, hal_group_teardown);
	}
	hal_suite_release_unused(); /* when no group was selected */
	return failed ? 1 : 0;
}
