// SPDX-License-Identifier: MIT
/*
 * control-hog - a slow control reader for the soak (issue 24): connects to
 * vgpud's control socket, pipelines as many status requests as the socket
 * takes, then reads its answers one byte every 50 ms; when vgpud drops it
 * (a client that does not read its responses in time), it connects again,
 * until the duration ends. Prints "control-hog: N connections, N dropped
 * by vgpud" and exits 0 (1 when it could never connect).
 *
 * Usage: control-hog CONTROL_SOCKET SECONDS
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const char req[] = "{\"command\":\"status\"}\n";
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	unsigned connections = 0, dropped = 0;
	double end;
	char batch[4096];
	size_t n = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: control-hog CONTROL_SOCKET SECONDS\n");
		return 64;
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
	end = now_s() + atof(argv[2]);
	while (n + sizeof(req) - 1 <= sizeof(batch)) {
		memcpy(batch + n, req, sizeof(req) - 1);
		n += sizeof(req) - 1;
	}
	while (now_s() < end) {
		int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			if (sock >= 0)
				close(sock);
			usleep(100000);
			continue;
		}
		connections++;
		while (send(sock, batch, n, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
			;
		while (now_s() < end) {
			char c;
			ssize_t got = recv(sock, &c, 1, MSG_DONTWAIT);

			if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
				dropped++;
				break;
			}
			usleep(50000);
		}
		close(sock);
	}
	printf("control-hog: %u connections, %u dropped by vgpud\n", connections, dropped);
	return connections ? 0 : 1;
}
