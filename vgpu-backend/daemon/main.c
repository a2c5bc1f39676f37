// SPDX-License-Identifier: MIT
/*
 * main.c - vgpud, the vGPU backend daemon: configuration, signals, and the
 * daemon's life (daemon.h). Exit status: 0 after a clean shutdown, 1 when
 * it could not start, 2 for a usage error.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "config_json.h"
#include "daemon.h"
#include "log.h"

/* Every host buffer the GPU shares with a guest or holds an evicted chunk
 * in is a memfd: allow as many descriptors as the hard limit does. */
static void raise_descriptor_limit(void)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 8192)
		log_warn("only %llu file descriptors allowed; each evicted chunk's host buffer "
		         "takes one: raise the limit (LimitNOFILE= in the unit, ulimit -n)",
		         (unsigned long long)limit.rlim_cur);
}

int main(int argc, char **argv)
{
	struct vgpud_config config;
	struct vgpud *d;
	sigset_t signals;
	enum vgpud_config_action action;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int ret;

	vgpud_config_defaults(&config);
	ret = vgpud_config_from_args(&config, argc, argv, &action);
	if (ret < 0)
		return 2;
	if (action == VGPUD_CONFIG_PRINTED)
		return 0;
	if (action == VGPUD_CONFIG_CHECK) {
		struct json_object *json = vgpud_config_to_json(&config, NULL);

		printf("%s\n", json_object_to_json_string_ext(json, JSON_C_TO_STRING_PRETTY));
		json_object_put(json);
		return 0;
	}

	/* Every thread inherits the mask: the signals arrive only through
	 * the event loop (sd-event's signalfd). */
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	vgpud_log_set_level((enum vgpud_log_level)config.log_level);
	raise_descriptor_limit();
	if (vgpud_create(&config, true, &d, &why)) {
		log_error("vgpud did not start: %s", vgpu_error_msg(&why));
		return 1;
	}
	/* Type=notify: systemd knows vgpud serves (no-op without systemd) */
	sd_notify(0, "READY=1");
	vgpud_run(d);
	sd_notify(0, "STOPPING=1");
	vgpud_destroy(d);
	log_info("stopped");
	return 0;
}
