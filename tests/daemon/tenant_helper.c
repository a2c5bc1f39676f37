// SPDX-License-Identifier: MIT
/*
 * tenant_helper.c - a tenant process for the tests that kill one:
 *   daemon-test-tenant SOCKET NAME
 * attaches, allocates more than the GPU's VRAM in several buffers, creates
 * two channels and submits work, prints "ready" and waits to be killed.
 *   daemon-test-tenant SOCKET NAME segv|segv-handler
 * attaches, then dereferences a bad pointer: the window trap must pass the
 * fault on (default action: killed by SIGSEGV; with a handler installed
 * before the device was opened: that handler runs and exits with 3).
 */
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel_util.h"
#include "harness.h"

static void own_handler(int sig)
{
	(void)sig;
	_exit(3);
}

int main(int argc, char **argv)
{
	struct harness h;
	struct tenant t;
	struct test_channel c;
	uint32_t words[32], n;
	uint64_t va;
	int i;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s SOCKET NAME [segv|segv-handler]\n", argv[0]);
		return 2;
	}
	if (argc == 4 && !strcmp(argv[3], "segv-handler"))
		signal(SIGSEGV, own_handler);
	memset(&h, 0, sizeof(h));
	snprintf(h.config.socket_path, sizeof(h.config.socket_path), "%s", argv[1]);
	if (tenant_open(&h, &t, argv[2], "big")) {
		fprintf(stderr, "attach failed: %s\n", vgpu_error_msg(&t.error));
		return 1;
	}
	if (argc == 4) {
		volatile int *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		*bad = 1;
		return 0; /* not reached */
	}
	if (tenant_hello(&t) != VGPU_STATUS_OK)
		return 1;
	for (i = 0; i < 6; i++)
		if (tenant_alloc(&t, 12u << 20, (uint32_t)i, NULL, &va) != VGPU_STATUS_OK)
			return 1;
	for (i = 0; i < 2; i++) {
		if (test_channel_create(&t, 32, &c) != VGPU_STATUS_OK)
			return 1;
		n = vgpu_push_memset(words, va, 0x12345678u, 1u << 20);
		n += vgpu_push_semaphore_release(words + n, c.info.notifier_gpu_va, 1, true);
		test_channel_submit(&c, words, n);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
