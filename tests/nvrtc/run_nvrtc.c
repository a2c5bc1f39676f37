// SPDX-License-Identifier: MIT
/*
 * run_nvrtc.c - the test 'nvrtc-programs': the NVRTC programs given as
 * arguments run at once as local tenants ("VMs without a VM") of a
 * private vgpud on simgpu, through libcuda.so.1, each under its own
 * VGPU_VM_NAME. Passes when every program exits 0 (every result equal to
 * its CPU reference) and vgpud stops cleanly. Each program's output is
 * printed. With --json FILE it also writes {"nvrtc_program_ok": 1 or 0}.
 *
 * Exit: 0 passed, 1 failed, 2 vgpud did not start. vgpud comes from
 * $VGPUD (meson passes it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../guest/daemon_runner.h"

#define MAX_PROGRAMS 16
#define TIMEOUT_S 240

struct prog {
	const char *path;
	pid_t pid;
	char out[400];
	int status;
};

static pid_t spawn(struct daemon_runner *r, struct prog *p, int index)
{
	pid_t pid;

	snprintf(p->out, sizeof(p->out), "%s/nvrtc-%d.out", r->dir, index);
	pid = fork();
	if (pid == 0) {
		char name[64];
		FILE *f = freopen(p->out, "w", stdout);

		if (!f || dup2(fileno(stdout), 2) < 0)
			_exit(2);
		snprintf(name, sizeof(name), "nvrtc-%d", index);
		setenv("VGPUD_SOCKET", r->socket, 1);
		setenv("VGPU_VM_NAME", name, 1);
		unsetenv("VGPU_DRM_DEVICE");
		execl(p->path, p->path, (char *)NULL);
		fprintf(stderr, "cannot run %s: %s\n", p->path, strerror(errno));
		_exit(2);
	}
	return pid;
}

static int wait_all(struct prog *p, int n)
{
	int left = n, st;

	for (int t = 0; left && t < TIMEOUT_S * 10; t++) {
		for (int i = 0; i < n; i++) {
			if (p[i].pid <= 0)
				continue;
			if (waitpid(p[i].pid, &st, WNOHANG) == p[i].pid) {
				p[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				p[i].pid = 0;
				left--;
			}
		}
		if (left)
			usleep(100000);
	}
	for (int i = 0; i < n; i++) {
		if (p[i].pid > 0) {
			kill(p[i].pid, SIGKILL);
			waitpid(p[i].pid, NULL, 0);
			p[i].status = -1;
		}
	}
	return left;
}

int main(int argc, char **argv)
{
	static const char *const args[] = { "--vram", "64M", "--chunk-size", "2M", NULL };
	struct daemon_runner r;
	struct prog p[MAX_PROGRAMS];
	const char *json = NULL;
	int n = 0, failed = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (n < MAX_PROGRAMS)
			p[n++].path = argv[i];
	}
	if (!n) {
		fprintf(stderr, "usage: %s [--json FILE] PROGRAM...\n", argv[0]);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	rc = daemon_start(&r, args);
	if (rc) {
		fprintf(stderr, "vgpud did not start (%d); log %s\n", rc, r.log);
		return 2;
	}
	for (int i = 0; i < n; i++)
		p[i].pid = spawn(&r, &p[i], i);
	if (wait_all(p, n))
		fprintf(stderr, "programs still running after %d s: killed\n", TIMEOUT_S);
	for (int i = 0; i < n; i++) {
		char *out = read_file(p[i].out);

		printf("== %s: exit %d\n%s", p[i].path, p[i].status, out ? out : "(no output)\n");
		free(out);
		if (p[i].status != 0)
			failed++;
	}
	rc = daemon_stop(&r);
	if (rc != 0) {
		fprintf(stderr, "vgpud did not stop cleanly (%d)\n", rc);
		failed++;
	}
	printf("nvrtc-programs: %d programs as tenants at once, %d failed\n", n, failed);
	if (json) {
		FILE *f = fopen(json, "w");

		if (!f || fprintf(f, "{\"nvrtc_program_ok\": %d}\n", failed ? 0 : 1) < 0)
			failed++;
		if (f)
			fclose(f);
	}
	return failed ? 1 : 0;
}
