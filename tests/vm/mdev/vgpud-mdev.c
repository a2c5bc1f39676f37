// SPDX-License-Identifier: MIT
/*
 * vgpud-mdev - the real vgpud (in-process: vgpud_create/vgpud_start, simgpu
 * with 256 MiB of VRAM, its built-in profiles) serving vgpu_mdev.ko through
 * vgpu-backend/daemon/transport_mdev.c (started by vgpud itself, as with
 * --mdev on), until SIGTERM/SIGINT. A test harness for the mdev transport
 * without vgpud's command line (tests/vm/run starts the real vgpud).
 *
 * Usage: vgpud-mdev --dir DIR [--ready-file PATH]
 *   DIR holds vgpud's local and control sockets.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "device.h"
#include "log.h"
#include "mdev_host.h"

int main(int argc, char **argv)
{
	const char *dir = NULL, *ready = NULL;
	struct vgpud_config *config;
	struct vgpud *d;
	struct vgpu_error error = VGPU_ERROR_INIT;
	sigset_t set;
	int sig, err;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--ready-file"))
			ready = argv[i + 1];
	}
	if (!dir) {
		fprintf(stderr, "usage: %s --dir DIR [--ready-file PATH]\n", argv[0]);
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	config = calloc(1, sizeof(*config));
	if (!config)
		return 1;
	vgpud_config_defaults(config);
	config->gpu.vram_bytes = 256ull << 20;
	config->mdev_mode = VGPUD_MDEV_ON; /* VGPU_MDEV_CONTROL_PATH */
	snprintf(config->socket_path, sizeof(config->socket_path), "%s/vgpud.sock", dir);
	snprintf(config->control_path, sizeof(config->control_path), "%s/vgpud-control.sock", dir);
	vgpud_log_set_level(VGPUD_LOG_DEBUG);
	err = vgpud_create(config, false, &d, &error);
	if (err) {
		fprintf(stderr, "vgpud-mdev: vgpud_create: %s\n", vgpu_error_msg(&error));
		return 1;
	}
	err = vgpud_start(d);
	if (err) {
		fprintf(stderr, "vgpud-mdev: vgpud_start: %s\n", strerror(-err));
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (f)
			fclose(f);
	}
	fprintf(stderr, "vgpud-mdev: serving %zu profile(s) through /dev/vgpu_mdev\n",
		d->config.profile_count);
	while (sigwait(&set, &sig))
		;
	fprintf(stderr, "vgpud-mdev: signal %d: %u mdev(s) known, shutting down\n", sig,
		mdev_host_devices(d->mdev));
	vgpud_stop(d);
	vgpud_destroy(d);
	free(config);
	return 0;
}
