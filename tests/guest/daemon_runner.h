/* SPDX-License-Identifier: MIT */
/*
 * daemon_runner.h - run vgpud and vgpu-tenant as subprocesses for
 * integration tests: a private temporary directory holds the sockets and
 * every process's output.
 *
 * Binaries come from $VGPUD and $VGPU_TENANT (meson passes them).
 */
#ifndef VGPU_TESTS_DAEMON_RUNNER_H
#define VGPU_TESTS_DAEMON_RUNNER_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon_runner {
	char dir[256];       /* temporary directory */
	char socket[320];    /* tenant socket */
	char control[320];   /* control socket */
	char log[320];       /* vgpud's stderr */
	pid_t pid;
};

/* Start vgpud with extra arguments (NULL-terminated) and wait until its
 * socket accepts connections. 0 or -errno (the log says why). */
int daemon_start(struct daemon_runner *runner, const char *const *extra_args);
/* SIGTERM and wait; returns vgpud's exit status (0 = clean), -1 if it had to
 * be killed (0 if a test already reaped it and cleared pid). Removes the
 * directory. */
int daemon_stop(struct daemon_runner *runner);

/* A tenant process (argv[0] is replaced by $VGPU_TENANT). */
struct tenant_run {
	pid_t pid;
	char out[320]; /* stdout file */
	char err[320]; /* stderr file */
};

int tenant_spawn(struct daemon_runner *runner, const char *const *args, struct tenant_run *out);
/* Wait (up to timeout_s seconds, then SIGKILL); the exit status or -1. */
int tenant_wait(struct tenant_run *run, int timeout_s);
/* Whole file into a malloc'ed string (NULL if unreadable). */
char *read_file(const char *path);

#endif /* VGPU_TESTS_DAEMON_RUNNER_H */
