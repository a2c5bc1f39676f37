// SPDX-License-Identifier: MIT
/* daemon_runner.c - vgpud and vgpu-tenant as subprocesses (see daemon_runner.h). */
#define _GNU_SOURCE
#include "daemon_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static bool socket_ready(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(addr.sun_path))
		return false;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	ret = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	close(fd);
	return ret == 0;
}

static pid_t spawn(const char *const *argv, const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0)
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int daemon_start(struct daemon_runner *runner, const char *const *extra_args)
{
	const char *argv[MAX_ARGS];
	const char *binary = getenv("VGPUD");
	char out[320];
	int argc = 0, i;

	memset(runner, 0, sizeof(*runner));
	if (!binary)
		return -ENOENT;
	snprintf(runner->dir, sizeof(runner->dir), "/tmp/vgpu-guest-test.XXXXXX");
	if (!mkdtemp(runner->dir))
		return -errno;
	snprintf(runner->socket, sizeof(runner->socket), "%s/vgpud.sock", runner->dir);
	snprintf(runner->control, sizeof(runner->control), "%s/control.sock", runner->dir);
	snprintf(runner->log, sizeof(runner->log), "%s/vgpud.log", runner->dir);
	snprintf(out, sizeof(out), "%s/vgpud.out", runner->dir);

	argv[argc++] = binary;
	argv[argc++] = "--socket";
	argv[argc++] = runner->socket;
	argv[argc++] = "--control-socket";
	argv[argc++] = runner->control;
	argv[argc++] = "--allowed-profiles"; /* tenants of every profile */
	argv[argc++] = "*";
	for (i = 0; extra_args && extra_args[i] && argc < MAX_ARGS - 1; i++)
		argv[argc++] = extra_args[i];
	argv[argc] = NULL;
	runner->pid = spawn(argv, out, runner->log);
	if (runner->pid < 0)
		return -errno;
	for (i = 0; i < 600; i++) {
		int status;

		if (socket_ready(runner->socket))
			return 0;
		if (waitpid(runner->pid, &status, WNOHANG) == runner->pid) {
			runner->pid = 0;
			return -ECHILD;
		}
		sleep_ms(50);
	}
	return -ETIMEDOUT;
}

static void remove_dir(const char *dir)
{
	char command[512];

	if (!getenv("VGPU_KEEP_TEST_DIR")) {
		snprintf(command, sizeof(command), "rm -rf '%s'", dir);
		if (system(command) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
}

int daemon_stop(struct daemon_runner *runner)
{
	int status = 0, i, result = runner->pid > 0 ? -1 : 0;

	if (runner->pid > 0) {
		kill(runner->pid, SIGTERM);
		for (i = 0; i < 400; i++) {
			if (waitpid(runner->pid, &status, WNOHANG) == runner->pid) {
				result = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
				break;
			}
			sleep_ms(50);
		}
		if (i == 400) {
			kill(runner->pid, SIGKILL);
			waitpid(runner->pid, &status, 0);
		}
	}
	if (result != 0) {
		char *log = read_file(runner->log);

		fprintf(stderr, "vgpud log:\n%s\n", log ? log : "(none)");
		free(log);
	}
	remove_dir(runner->dir);
	return result;
}

int tenant_spawn(struct daemon_runner *runner, const char *const *args, struct tenant_run *out)
{
	static unsigned counter;
	const char *argv[MAX_ARGS];
	const char *binary = getenv("VGPU_TENANT");
	int argc = 0, i;

	if (!binary)
		return -ENOENT;
	counter++;
	snprintf(out->out, sizeof(out->out), "%s/tenant-%u.out", runner->dir, counter);
	snprintf(out->err, sizeof(out->err), "%s/tenant-%u.err", runner->dir, counter);
	argv[argc++] = binary;
	for (i = 1; args[i] && argc < MAX_ARGS - 1; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	out->pid = spawn(argv, out->out, out->err);
	return out->pid < 0 ? -errno : 0;
}

int tenant_wait(struct tenant_run *run, int timeout_s)
{
	int status, i;

	for (i = 0; i < timeout_s * 20; i++) {
		if (waitpid(run->pid, &status, WNOHANG) == run->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		sleep_ms(50);
	}
	kill(run->pid, SIGKILL);
	waitpid(run->pid, &status, 0);
	return -1;
}

char *read_file(const char *path)
{
	FILE *file = fopen(path, "r");
	char *text;
	long size;

	if (!file)
		return NULL;
	fseek(file, 0, SEEK_END);
	size = ftell(file);
	fseek(file, 0, SEEK_SET);
	text = calloc(1, (size_t)size + 1);
	if (text && fread(text, 1, (size_t)size, file) != (size_t)size) {
		free(text);
		text = NULL;
	}
	fclose(file);
	return text;
}
