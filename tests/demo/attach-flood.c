// SPDX-License-Identifier: MIT
/*
 * attach-flood - a hostile tenant that holds connections to vgpud's tenant
 * socket without using them (issue 12 item 7, tests/demo/attach-flood.sh):
 *
 * First the attaching ones, then the silent ones:
 *   --attach N   N tenants that ATTACH (vgpu/local_device.h) and then send
 *                nothing: no register access, no doorbell, no memory;
 *   --silent N   N connections that never send a byte (not even ATTACH);
 *   --hold MS    keep them for MS milliseconds, watching which ones vgpud
 *                closes (per-UID limit at once, attach_timeout_ms for the
 *                silent ones; idle_timeout_ms detaches the attached ones,
 *                which the script sees in vgpuctl and the log).
 *
 * Prints one JSON object: attach_tried, attached, attach_refused,
 * silent_tried, silent_connected, silent_closed (closed by vgpud within
 * --hold), and the first refusal's message. Exit 0 unless it could not run.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/local_device.h"

#define MAX_CONNECTIONS 512

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_silent(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (sock < 0)
		return -1;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(sock);
		return -1;
	}
	return sock;
}

/* Watch the silent sockets until hold_ms passed; returns how many vgpud
 * closed (end of file or hang-up). */
static unsigned watch_silent(const int *socks, unsigned n, int64_t hold_ms)
{
	static struct pollfd pfd[MAX_CONNECTIONS];
	bool closed[MAX_CONNECTIONS] = { false };
	int64_t end = now_ms() + hold_ms;
	unsigned count = 0;

	for (;;) {
		int64_t left = end - now_ms();
		nfds_t k = 0;
		unsigned map[MAX_CONNECTIONS];

		for (unsigned i = 0; i < n; i++)
			if (socks[i] >= 0 && !closed[i]) {
				pfd[k] = (struct pollfd){ .fd = socks[i], .events = POLLIN };
				map[k++] = i;
			}
		if (left <= 0)
			break;
		if (poll(pfd, k, (int)left) <= 0) {
			if (!k) /* nothing left to watch: sleep out the hold */
				usleep((useconds_t)left * 1000);
			continue;
		}
		for (nfds_t j = 0; j < k; j++) {
			char byte;

			if (!pfd[j].revents)
				continue;
			if (recv(pfd[j].fd, &byte, 1, MSG_DONTWAIT) > 0)
				continue; /* vgpud sends nothing before ATTACH; ignore */
			closed[map[j]] = true;
			count++;
		}
	}
	return count;
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL, *prefix = "flood";
	unsigned attach = 0, silent = 0, attached = 0, refused = 0, connected = 0, closed;
	static struct vgpu_local_device *devs[MAX_CONNECTIONS];
	static int socks[MAX_CONNECTIONS];
	char first_refusal[256] = "";
	long hold_ms = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--socket"))
			socket_path = argv[i + 1];
		else if (!strcmp(argv[i], "--attach"))
			attach = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--silent"))
			silent = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--hold"))
			hold_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--name"))
			prefix = argv[i + 1];
	}
	if (!socket_path || attach > MAX_CONNECTIONS || silent > MAX_CONNECTIONS) {
		fprintf(stderr, "usage: %s --socket PATH [--attach N] [--silent N] [--hold MS] "
		        "[--name PREFIX] (N <= %d)\n", argv[0], MAX_CONNECTIONS);
		return 2;
	}
	for (unsigned i = 0; i < attach; i++) {
		char name[64];
		struct vgpu_local_device_config config = { .socket_path = socket_path,
			                                   .vm_name = name };
		struct vgpu_error error = VGPU_ERROR_INIT;

		snprintf(name, sizeof(name), "%s-%u", prefix, i);
		if (vgpu_local_device_open(&config, &devs[i], &error) == 0) {
			attached++;
			continue;
		}
		devs[i] = NULL;
		if (!refused++)
			snprintf(first_refusal, sizeof(first_refusal), "%s",
			         vgpu_error_msg(&error));
	}
	for (unsigned i = 0; i < silent; i++) {
		socks[i] = connect_silent(socket_path);
		connected += socks[i] >= 0;
	}
	closed = watch_silent(socks, silent, hold_ms);
	printf("{\"attach_tried\": %u, \"attached\": %u, \"attach_refused\": %u, "
	       "\"silent_tried\": %u, \"silent_connected\": %u, \"silent_closed\": %u, "
	       "\"first_refusal\": \"", attach, attached, refused, silent, connected, closed);
	for (const char *c = first_refusal; *c; c++)
		if (*c != '"' && *c != '\\' && (unsigned char)*c >= ' ')
			putchar(*c);
	printf("\"}\n");
	for (unsigned i = 0; i < attach; i++)
		if (devs[i])
			vgpu_local_device_close(devs[i]);
	for (unsigned i = 0; i < silent; i++)
		if (socks[i] >= 0)
			close(socks[i]);
	return 0;
}
