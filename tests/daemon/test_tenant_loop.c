// SPDX-License-Identifier: MIT
/*
 * test_tenant_loop.c - tenant connections on vgpud's one event loop: the
 * worker pool runs what waits and hands completions back to the loop; a
 * tenant whose attach waits (for the registry lock the test holds, as it
 * would for the core during an eviction) holds up no other tenant; a
 * tenant that does not read its replies is cut after swap_timeout_ms
 * while another is served.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/abi/local_protocol.h"
#include "vgpu/mutex.h"

#include "harness.h"
#include "local_socket.h"
#include "work_pool.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ the pool */

struct test_job {
	struct work_job job;
	int gate;              /* eventfd run() waits on; -1: none */
	pthread_t loop_thread; /* where done() must run */
	atomic_bool ran_off_loop;
	atomic_bool done;
	bool done_on_loop;
};

static void test_job_run(struct work_job *job)
{
	struct test_job *t = (struct test_job *)job;
	uint64_t v;

	atomic_store(&t->ran_off_loop, !pthread_equal(pthread_self(), t->loop_thread));
	if (t->gate >= 0)
		assert_int_equal(read(t->gate, &v, sizeof(v)), sizeof(v)); /* blocks */
}

static void test_job_done(struct work_job *job)
{
	struct test_job *t = (struct test_job *)job;

	t->done_on_loop = pthread_equal(pthread_self(), t->loop_thread);
	atomic_store(&t->done, true);
}

static void test_job_init(struct test_job *t, int gate)
{
	memset(t, 0, sizeof(*t));
	t->job.run = test_job_run;
	t->job.done = test_job_done;
	t->gate = gate;
	t->loop_thread = pthread_self();
}

/* Run loop until t is done or timeout_ms passed. */
static bool loop_until_done(sd_event *loop, struct test_job *t, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	while (!atomic_load(&t->done) && now_ms() < end)
		assert_true(sd_event_run(loop, 10 * 1000) >= 0);
	return atomic_load(&t->done);
}

static void test_pool_waiting_job_holds_up_no_other(void **state)
{
	struct test_job blocked, quick, late;
	struct work_pool *pool;
	sd_event *loop;
	uint64_t one = 1;
	int gate = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_true(gate >= 0);
	assert_true(sd_event_new(&loop) >= 0);
	assert_int_equal(work_pool_create(loop, &pool), 0);
	test_job_init(&blocked, gate);
	test_job_init(&quick, -1);
	assert_int_equal(work_pool_submit(pool, &blocked.job), 0);
	assert_int_equal(work_pool_submit(pool, &quick.job), 0);
	/* the blocked job waits; the quick one completes on the loop */
	assert_true(loop_until_done(loop, &quick, 5000));
	assert_true(atomic_load(&quick.ran_off_loop));
	assert_true(quick.done_on_loop);
	assert_false(atomic_load(&blocked.done));
	/* released, it completes too; flush runs what is left to complete */
	test_job_init(&late, -1);
	assert_int_equal(work_pool_submit(pool, &late.job), 0);
	assert_int_equal(write(gate, &one, sizeof(one)), sizeof(one));
	work_pool_flush(pool);
	assert_true(atomic_load(&blocked.done));
	assert_true(atomic_load(&late.done));
	assert_true(atomic_load(&blocked.ran_off_loop));
	assert_true(blocked.done_on_loop); /* flush runs them on the caller */
	work_pool_destroy(pool);
	sd_event_unref(loop);
	close(gate);
}

/* ------------------------------------------------------- on the daemon */

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

struct late_attach {
	struct harness *h;
	struct tenant t;
	int result;
	atomic_bool returned;
};

static void *late_attach_main(void *arg)
{
	struct late_attach *a = arg;

	a->result = tenant_open(a->h, &a->t, "late", NULL);
	atomic_store(&a->returned, true);
	return NULL;
}

static void test_waiting_attach_stalls_no_other_tenant(void **state)
{
	struct harness *h = *state;
	struct late_attach late = { .h = h };
	struct tenant early;
	pthread_t thread;
	int64_t start, slowest = 0;

	assert_int_equal(tenant_open(h, &early, "early", NULL), 0);
	assert_int_equal(tenant_hello(&early), VGPU_STATUS_OK);
	/* the attach of "late" waits for the registry, as for the core */
	vgpu_mutex_lock(&h->d->registry.lock);
	assert_int_equal(pthread_create(&thread, NULL, late_attach_main, &late), 0);
	usleep(100 * 1000); /* let it reach the lock: not needed to pass */
	start = now_ms();
	for (int i = 0; i < 50; i++) {
		int64_t t0 = now_ms(), took;

		assert_int_equal(vgpu_local_device_reg_read(early.dev, VGPU_REG_MAGIC),
		                 VGPU_MAGIC);
		took = now_ms() - t0;
		slowest = took > slowest ? took : slowest;
	}
	assert_false(atomic_load(&late.returned));
	vgpu_mutex_unlock(&h->d->registry.lock);
	/* each register read is one round trip through the loop; none waited
	 * for the attach (which still does, until the lock is free) */
	if (slowest >= 1000)
		fail_msg("a register read took %lld ms while another tenant's attach waited "
		         "(%lld ms for 50)", (long long)slowest, (long long)(now_ms() - start));
	assert_int_equal(pthread_join(thread, NULL), 0);
	assert_int_equal(late.result, 0);
	assert_int_equal(tenant_hello(&late.t), VGPU_STATUS_OK);
	tenant_close(&late.t);
	tenant_close(&early);
	assert_true(harness_wait_vms(h, 0, 10000));
}

/* A socket that attached by hand (no backend channel answers needed:
 * nothing here maps a region). Its other descriptors go to fds[]. */
static int raw_attach(struct harness *h, const char *name, int fds[6])
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct vgpu_local_attach attach = { .protocol_version = VGPU_LOCAL_PROTOCOL_VERSION };
	struct vgpu_local_msg reply;
	int pair[2], sock, i;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", h->config.socket_path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(sock >= 0);
	assert_int_equal(connect(sock, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
	fds[0] = pair[1];
	for (i = 1; i < 5; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	fds[5] = pair[0];
	snprintf(attach.vm_name, sizeof(attach.vm_name), "%s", name);
	assert_int_equal(vgpu_local_send(sock, VGPU_LOCAL_ATTACH, 1, 0, &attach, sizeof(attach),
	                                 fds, 5, 1000), 0);
	assert_int_equal(vgpu_local_recv(sock, &reply, 5000), 0);
	assert_int_equal(reply.payload.attach_reply.status, 0);
	vgpu_local_msg_close_fds(&reply);
	return sock;
}

static void test_unread_replies_cut_the_tenant(void **state)
{
	struct harness *h = *state;
	struct vgpu_local_reg reg = { .offset = VGPU_REG_MAGIC };
	struct vgpu_local_msg msg;
	struct tenant bystander;
	int fds[6], sock, err = 0, replies = 0;
	unsigned sent = 0;
	int64_t full, cut;

	assert_int_equal(tenant_open(h, &bystander, "bystander", NULL), 0);
	sock = raw_attach(h, "deaf", fds);
	/* REG_READs without reading a reply: vgpud's replies fill this
	 * socket, then vgpud stops reading, then this side's sends block
	 * (100 ms: vgpud reads no more) or fail (it cut the connection) */
	while (sent < 1000000) {
		err = vgpu_local_send(sock, VGPU_LOCAL_REG_READ, sent + 2, 0, &reg, sizeof(reg),
		                      NULL, 0, 100);
		if (err)
			break;
		sent++;
	}
	if (err != -ETIMEDOUT && err != -EPIPE)
		fail_msg("flooding REG_READ: %s after %u", strerror(-err), sent);
	full = now_ms();
	/* meanwhile the other tenant is served */
	for (int i = 0; i < 20; i++)
		assert_int_equal(vgpu_local_device_reg_read(bystander.dev, VGPU_REG_MAGIC),
		                 VGPU_MAGIC);
	/* swap_timeout_ms (300) after its reply could not be written, the
	 * tenant is detached: what it reads are answers (unless the reset of
	 * the connection comes first), then the end; not all were answered */
	assert_true(harness_wait_vms(h, 1, 10000));
	cut = now_ms();
	for (;;) {
		err = vgpu_local_recv(sock, &msg, 5000);
		if (err)
			break;
		assert_int_equal(msg.header.type, VGPU_LOCAL_REG_READ);
		assert_int_equal(msg.payload.reg.value, VGPU_MAGIC);
		replies++;
	}
	assert_int_equal(err, -EPIPE);
	assert_true((unsigned)replies < sent);
	if (cut - full > 5000)
		fail_msg("the tenant that reads nothing was cut %lld ms after its socket filled",
		         (long long)(cut - full));
	assert_int_equal(vgpu_local_device_reg_read(bystander.dev, VGPU_REG_MAGIC), VGPU_MAGIC);
	tenant_close(&bystander);
	close(sock);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	assert_true(harness_wait_vms(h, 0, 10000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_waiting_job_holds_up_no_other),
		cmocka_unit_test_setup_teardown(test_waiting_attach_stalls_no_other_tenant, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_unread_replies_cut_the_tenant, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
