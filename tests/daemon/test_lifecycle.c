// SPDX-License-Identifier: MIT
/*
 * test_lifecycle.c - tenants that go away: killed (SIGKILL, another
 * process), unresponsive to a swap request, speaking garbage on the socket,
 * or left attached when vgpud shuts down. Each time everything the tenant
 * owned is released and other tenants are unaffected. Also: SIGHUP-style
 * profile reload.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vgpu/abi/local_protocol.h"

#include "channel_util.h"
#include "harness.h"
#include "local_socket.h"
#include "device.h"
#include "profiles.h"

static const char *helper_path;

static int setup(void **state)
{
	static struct harness h;

	harness_config(&h);
	h.config.swap_timeout_ms = 300;
	harness_start(&h);
	*state = &h;
	return 0;
}

static int teardown(void **state)
{
	harness_stop(*state);
	return 0;
}

struct snapshot {
	struct vgpu_core_stats core;
	uint64_t vram_free;
	int fds;
};

static void take(struct harness *h, struct snapshot *s)
{
	vgpu_core_stats(h->d->core, &s->core);
	s->vram_free = vgpu_hal_vram_free_bytes(h->d->hal);
	s->fds = count_open_fds();
}

static void assert_back_to(struct harness *h, const struct snapshot *before)
{
	struct snapshot now;
	int i;

	assert_true(harness_wait_vms(h, 0, 10000));
	/* a connection's descriptors close once its detach job ran */
	for (i = 0; i < 200; i++) {
		take(h, &now);
		if (now.fds == before->fds)
			break;
		usleep(10000);
	}
	assert_int_equal(now.core.allocated_bytes, before->core.allocated_bytes);
	assert_int_equal(now.core.resident_bytes, before->core.resident_bytes);
	assert_int_equal(now.core.evicted_bytes, 0);
	assert_int_equal(now.core.host_used_bytes, 0);
	assert_int_equal(now.core.vms, 0);
	assert_int_equal(now.vram_free, before->vram_free);
	assert_int_equal(now.fds, before->fds);
	assert_int_equal(vgpu_core_check_invariants(h->d->core, NULL), 0);
}

static pid_t spawn_helper(struct harness *h, const char *name, FILE **out)
{
	int pipefd[2];
	pid_t pid;

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		execl(helper_path, helper_path, h->config.socket_path, name, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	*out = fdopen(pipefd[0], "r");
	return pid;
}

static void test_killed_tenant_releases_everything(void **state)
{
	struct harness *h = *state;
	struct snapshot before, during;
	char line[64] = "";
	struct tenant other;
	int status, round;
	FILE *out;

	take(h, &before);
	for (round = 0; round < 2; round++) {
		pid_t pid = spawn_helper(h, round ? "doomed-2" : "doomed", &out);

		assert_non_null(fgets(line, sizeof(line), out));
		assert_string_equal(line, "ready\n");
		take(h, &during);
		assert_true(during.core.allocated_bytes >= 72u << 20);
		assert_true(during.core.evicted_bytes > 0);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		fclose(out);
		assert_back_to(h, &before);
	}
	/* vgpud keeps serving */
	assert_int_equal(tenant_open(h, &other, "survivor", NULL), 0);
	assert_int_equal(tenant_hello(&other), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&other, 8u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	tenant_close(&other);
}

/* A frontend speaking the protocol by hand: attaches properly, then never
 * answers its backend channel. */
struct raw_frontend {
	int sock, backend_peer, backend, kick, irq[3];
	uint8_t *mailbox;
};

static int raw_attach(struct harness *h, struct raw_frontend *f, const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct vgpu_local_attach attach = { .protocol_version = VGPU_LOCAL_PROTOCOL_VERSION };
	struct vgpu_local_msg reply;
	int pair[2], fds[5], i, err;

	memset(f, 0, sizeof(*f));
	strcpy(addr.sun_path, h->config.socket_path);
	f->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(f->sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
	f->backend = pair[0];
	f->backend_peer = pair[1];
	f->kick = eventfd(0, EFD_CLOEXEC);
	for (i = 0; i < 3; i++)
		f->irq[i] = eventfd(0, EFD_CLOEXEC);
	fds[0] = f->backend_peer;
	fds[1] = f->kick;
	for (i = 0; i < 3; i++)
		fds[2 + i] = f->irq[i];
	strcpy(attach.vm_name, name);
	/* a frontend chooses its own seq (QEMU's vgpu-pci counts per
	 * connection); the reply echoes it */
	assert_int_equal(vgpu_local_send(f->sock, VGPU_LOCAL_ATTACH, 7, 0, &attach, sizeof(attach),
	                                 fds, 5, 1000), 0);
	err = vgpu_local_recv(f->sock, &reply, 5000);
	if (err)
		return err;
	assert_int_equal(reply.header.seq, 7);
	if (reply.payload.attach_reply.status)
		return reply.payload.attach_reply.status;
	assert_int_equal(reply.nfds, 1);
	f->mailbox = mmap(NULL, VGPU_MAILBOX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
	                  reply.fds[0], 0);
	assert_true(f->mailbox != MAP_FAILED);
	vgpu_local_msg_close_fds(&reply);
	return 0;
}

static void raw_close(struct raw_frontend *f)
{
	int i;

	if (f->mailbox)
		munmap(f->mailbox, VGPU_MAILBOX_SIZE);
	close(f->sock);
	close(f->backend);
	close(f->backend_peer);
	close(f->kick);
	for (i = 0; i < 3; i++)
		close(f->irq[i]);
}

static void raw_request(struct raw_frontend *f, uint32_t index, uint16_t opcode,
                        const void *payload, uint16_t size)
{
	struct vgpu_mailbox_header *header = (void *)f->mailbox;
	struct vgpu_request *slot = (void *)(f->mailbox + VGPU_MAILBOX_REQ_RING_OFFSET +
	                                     index * VGPU_MAILBOX_SLOT_SIZE);
	uint64_t one = 1;

	memset(slot, 0, sizeof(*slot));
	slot->opcode = opcode;
	slot->payload_size = size;
	slot->seq = index;
	memcpy(slot->payload, payload, size);
	__atomic_store_n(&header->req_head, index + 1, __ATOMIC_RELEASE);
	assert_int_equal(write(f->kick, &one, sizeof(one)), sizeof(one));
}

/* A fault outside BAR2 in a tenant process goes where it would have gone
 * without the window trap; vgpud then sees the tenant die. */
static void test_foreign_faults_chain(void **state)
{
	struct harness *h = *state;
	static const char *const modes[] = { "segv", "segv-handler" };
	unsigned i;

	for (i = 0; i < 2; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, STDERR_FILENO);
			execl(helper_path, helper_path, h->config.socket_path, modes[i], modes[i],
			      (char *)NULL);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (i == 0) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
			/* the sanitizer's own handler reports it and ends the process */
			assert_true(WIFSIGNALED(status) || WEXITSTATUS(status) != 0);
#else
			assert_true(WIFSIGNALED(status));
			assert_int_equal(WTERMSIG(status), SIGSEGV);
#endif
		} else {
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), 3);
		}
	}
	assert_true(harness_wait_vms(h, 0, 5000));
}

static void test_unresponsive_frontend_is_detached(void **state)
{
	struct harness *h = *state;
	struct vgpu_hello_request hello = { VGPU_ABI_VERSION, 0 };
	struct vgpu_channel_create_request create = { 0, 0 };
	struct vgpu_mailbox_header *header;
	struct snapshot before;
	struct raw_frontend f;
	struct tenant other;
	char byte;
	int i;

	take(&*h, &before);
	assert_int_equal(tenant_open(h, &other, "bystander", NULL), 0);
	assert_int_equal(tenant_hello(&other), VGPU_STATUS_OK);
	assert_int_equal(raw_attach(h, &f, "mute"), 0);
	header = (void *)f.mailbox;
	raw_request(&f, 0, VGPU_OP_HELLO, &hello, sizeof(hello));
	for (i = 0; i < 200 && __atomic_load_n(&header->resp_head, __ATOMIC_ACQUIRE) < 1; i++)
		usleep(5000);
	assert_int_equal(header->resp_head, 1);
	/* CHANNEL_CREATE makes vgpud send MAP_REGION on the backend channel,
	 * which this frontend never acknowledges */
	raw_request(&f, 1, VGPU_OP_CHANNEL_CREATE, &create, sizeof(create));
	/* within swap_timeout_ms it is declared dead: end of file */
	assert_int_equal(vgpu_local_wait_readable(f.sock, 5000), 1);
	assert_int_equal(recv(f.sock, &byte, 1, MSG_DONTWAIT), 0);
	/* the other tenant never noticed */
	assert_int_equal(tenant_alloc(&other, 1u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	tenant_close(&other);
	raw_close(&f);
	assert_back_to(h, &before);
}

static void test_garbage_on_the_socket(void **state)
{
	struct harness *h = *state;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct snapshot before;
	struct raw_frontend f;
	char junk[100], byte;
	int sock;

	take(h, &before);
	strcpy(addr.sun_path, h->config.socket_path);
	/* garbage instead of ATTACH */
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	memset(junk, 0xab, sizeof(junk));
	assert_int_equal(send(sock, junk, sizeof(junk), 0), sizeof(junk));
	assert_int_equal(vgpu_local_wait_readable(sock, 5000), 1);
	close(sock);
	/* ATTACH without descriptors */
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	{
		struct vgpu_local_attach attach = { .protocol_version = 1, .vm_name = "x" };
		struct vgpu_local_msg reply;

		assert_int_equal(vgpu_local_send(sock, VGPU_LOCAL_ATTACH, 1, 0, &attach,
		                                 sizeof(attach), NULL, 0, 1000), 0);
		assert_int_equal(vgpu_local_recv(sock, &reply, 5000), 0);
		assert_int_equal(reply.payload.attach_reply.status, -EPROTO);
	}
	close(sock);
	/* attached, then a malformed message: detached */
	assert_int_equal(raw_attach(h, &f, "babbler"), 0);
	assert_true(harness_wait_vms(h, 1, 2000));
	assert_int_equal(send(f.sock, junk, 20, 0), 20);
	assert_int_equal(vgpu_local_wait_readable(f.sock, 5000), 1);
	assert_int_equal(recv(f.sock, &byte, 1, MSG_DONTWAIT), 0);
	raw_close(&f);
	/* nobody attaches silently: a connection that never speaks is cut */
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(vgpu_local_wait_readable(sock, 15000), 1);
	close(sock);
	assert_back_to(h, &before);
}

static void test_vgpud_shutdown_with_tenants(void **state)
{
	struct harness *h = *state;
	struct test_channel c;
	struct tenant t;

	assert_int_equal(tenant_open(h, &t, "left-behind", NULL), 0);
	assert_int_equal(tenant_hello(&t), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&t, 4u << 20, 7, NULL, NULL), VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&t, 16, &c), VGPU_STATUS_OK);
	vgpud_stop(h->d);
	vgpud_destroy(h->d);
	h->d = NULL;
	/* the device is gone, as a surprise-removed PCI device (interrupts
	 * raised before are still reported first) */
	{
		int i, ret = 0;

		for (i = 0; i < 10 && ret >= 0; i++)
			ret = vgpu_local_device_wait_irq(t.dev, 2000);
		assert_int_equal(ret, -ENODEV);
	}
	assert_int_equal(vgpu_local_device_reg_read(t.dev, VGPU_REG_MAGIC), 0xffffffffu);
	tenant_close(&t);
	/* the socket files are gone */
	assert_int_not_equal(access(h->config.socket_path, F_OK), 0);
	assert_int_not_equal(access(h->config.control_path, F_OK), 0);
}

static void test_profile_reload(void **state)
{
	struct harness *h = *state;
	struct vgpud_profile_spec spec;
	struct vgpu_vm_stats stats;
	char path[160];
	struct vgpu_error why = VGPU_ERROR_INIT;
	struct tenant t;
	FILE *f;

	snprintf(path, sizeof(path), "%s/vgpud.conf", h->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "[profile small]\nweight = 5\ncap = 16M\nmax_instances = 2\n"
	           "[profile fresh]\nweight = 3\n");
	fclose(f);
	assert_int_equal(tenant_open(h, &t, "reloaded", "big"), 0);
	/* without a configuration file there is nothing to reload */
	assert_int_not_equal(vgpud_reload_profiles(h->d, &why), 0);
	assert_non_null(strstr(vgpu_error_msg(&why), "without a configuration file"));
	snprintf(h->d->config.config_file, sizeof(h->d->config.config_file), "%s", path);
	assert_int_equal(vgpud_reload_profiles(h->d, &why), 0);
	assert_int_equal(vgpud_profiles_get(&h->d->profiles, "small", &spec), 0);
	assert_int_equal(spec.weight, 5);
	assert_int_equal(spec.cap_bytes, 16u << 20);
	assert_int_equal(vgpud_profiles_get(&h->d->profiles, "fresh", &spec), 0);
	/* "big" is gone from the file: it stays while a VM uses it, but takes
	 * no new VM */
	struct tenant t2;
	assert_int_equal(tenant_open(h, &t2, "late", "big"), -ENOENT);
	vgpu_core_vm_stats(h->d->registry.first->vm, &stats);
	assert_int_equal(stats.weight, 2);
	tenant_close(&t);
	assert_true(harness_wait_vms(h, 0, 2000));
	assert_int_equal(vgpud_profiles_get(&h->d->profiles, "big", &spec), -ENOENT);
	/* a broken file changes nothing */
	f = fopen(path, "w");
	fprintf(f, "[profile small]\nweight = many\n");
	fclose(f);
	assert_int_not_equal(vgpud_reload_profiles(h->d, &why), 0);
	assert_non_null(strstr(vgpu_error_msg(&why), "many"));
	assert_int_equal(vgpud_profiles_get(&h->d->profiles, "small", &spec), 0);
	assert_int_equal(spec.weight, 5);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_killed_tenant_releases_everything, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_foreign_faults_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unresponsive_frontend_is_detached, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_garbage_on_the_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpud_shutdown_with_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_reload, setup, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-OF-daemon-test-tenant\n", argv[0]);
		return 2;
	}
	helper_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
