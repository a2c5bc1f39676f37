// SPDX-License-Identifier: MIT
/*
 * test_mdev.c - vgpud's mdev transport (transport_mdev.c with mdev_host.c)
 * against a fake vgpu_mdev.ko: events come from a FIFO standing in for
 * /dev/vgpu_mdev, ioctls go to fake_ioctl below, which records what vgpud
 * tells the module and maps each mdev's mailbox as the module would, so the
 * test can act as the guest (write requests, ring the doorbell).
 *
 *  - types, instances and descriptions come from the profiles: CREATE
 *    beyond max_instances is refused, a local tenant cannot take an
 *    instance an mdev holds, set-profile changes the description and
 *    available_instances;
 *  - VMs are served independently: while one VM's RESET and another's OPEN
 *    wait (for the registry lock the test holds, as they would wait for
 *    the core during an eviction), a third VM's doorbell is answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "vgpu/abi/mdev_control.h"

#include "harness.h"
#include "mdev_host.h"

#define MAX_DEVICES 8
#define TIMEOUT_MS 20000

/* ------------------------------------------------------------ the fake module */

struct fake_reply {
	bool got;
	int32_t status;
	char message[VGPU_MDEV_MESSAGE_MAX];
};

struct fake_module {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	char fifo[128];
	int events; /* the FIFO's write end */
	uint32_t next_seq;
	struct vgpu_mdev_type_info types[VGPU_MDEV_MAX_TYPES];
	unsigned type_count;
	unsigned set_types_calls;
	struct fake_reply replies[MAX_DEVICES][64]; /* [device_id][seq] */
	uint8_t *mailbox[MAX_DEVICES];
	uint32_t status[MAX_DEVICES]; /* VGPU_REG_STATUS as pushed */
	uint32_t vectors[MAX_DEVICES]; /* MSI-X vectors raised */
	char vm_name[MAX_DEVICES][VGPU_MDEV_NAME_MAX];
};

static int fake_ioctl(void *ctx, int fd, unsigned long request, void *arg)
{
	struct fake_module *m = ctx;
	int err = 0;

	(void)fd;
	pthread_mutex_lock(&m->lock);
	switch (request) {
	case VGPU_MDEV_GET_VERSION: {
		struct vgpu_mdev_version *v = arg;

		memset(v, 0, sizeof(*v));
		v->version = VGPU_MDEV_CONTROL_VERSION;
		v->abi_version = VGPU_ABI_VERSION;
		v->event_size = sizeof(struct vgpu_mdev_event);
		v->max_types = VGPU_MDEV_MAX_TYPES;
		break;
	}
	case VGPU_MDEV_SET_TYPES: {
		const struct vgpu_mdev_set_types *st = arg;

		memcpy(m->types, (const void *)(uintptr_t)st->types, st->count * sizeof(m->types[0]));
		m->type_count = st->count;
		m->set_types_calls++;
		break;
	}
	case VGPU_MDEV_SET_AVAILABLE: {
		const struct vgpu_mdev_set_available *a = arg;

		if (a->type_index < m->type_count)
			m->types[a->type_index].available = a->available;
		else
			err = -EINVAL;
		break;
	}
	case VGPU_MDEV_REPLY: {
		const struct vgpu_mdev_reply *r = arg;

		if (r->device_id >= MAX_DEVICES || r->seq >= 64) {
			err = -EINVAL;
			break;
		}
		m->replies[r->device_id][r->seq].got = true;
		m->replies[r->device_id][r->seq].status = r->status;
		memcpy(m->replies[r->device_id][r->seq].message, r->message, sizeof(r->message));
		break;
	}
	case VGPU_MDEV_REG_UPDATE: {
		const struct vgpu_mdev_reg_update *u = arg;

		if (u->device_id >= MAX_DEVICES) {
			err = -ENOENT;
			break;
		}
		m->vectors[u->device_id] |= u->irq_vectors;
		for (unsigned i = 0; i < u->count; i++)
			if (u->ops[i].offset == VGPU_REG_STATUS && u->ops[i].op == VGPU_MDEV_REG_SET)
				m->status[u->device_id] = u->ops[i].value;
		break;
	}
	case VGPU_MDEV_MAP_REGION: {
		const struct vgpu_mdev_region *r = arg;
		void *map;

		if (r->device_id >= MAX_DEVICES) {
			err = -ENOENT;
			break;
		}
		if (r->bar2_offset != VGPU_MAILBOX_OFFSET)
			break; /* the test only plays with the mailbox */
		map = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		           (off_t)r->fd_offset);
		if (map == MAP_FAILED) {
			err = -errno;
			break;
		}
		if (m->mailbox[r->device_id])
			munmap(m->mailbox[r->device_id], VGPU_MAILBOX_SIZE);
		m->mailbox[r->device_id] = map;
		break;
	}
	case VGPU_MDEV_SET_STATS: {
		const struct vgpu_mdev_stats *st = arg;

		if (st->device_id < MAX_DEVICES)
			memcpy(m->vm_name[st->device_id], st->vm_name, sizeof(st->vm_name));
		break;
	}
	case VGPU_MDEV_UNMAP_REGION:
	case VGPU_MDEV_WINDOW_BLOCK:
	case VGPU_MDEV_WINDOW_MAP:
		break;
	default:
		err = -ENOTTY;
		break;
	}
	pthread_cond_broadcast(&m->changed);
	pthread_mutex_unlock(&m->lock);
	return err;
}

static void fake_init(struct fake_module *m, const char *dir)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->changed, NULL);
	snprintf(m->fifo, sizeof(m->fifo), "%s/vgpu_mdev", dir);
	assert_int_equal(mkfifo(m->fifo, 0600), 0);
	m->events = -1;
}

/* After the transport opened the FIFO. */
static void fake_connect(struct fake_module *m)
{
	m->events = open(m->fifo, O_WRONLY | O_CLOEXEC);
	assert_true(m->events >= 0);
}

static void fake_fini(struct fake_module *m)
{
	for (unsigned i = 0; i < MAX_DEVICES; i++)
		if (m->mailbox[i])
			munmap(m->mailbox[i], VGPU_MAILBOX_SIZE);
	if (m->events >= 0)
		close(m->events);
	unlink(m->fifo);
}

static void send_event(struct fake_module *m, const struct vgpu_mdev_event *e)
{
	assert_int_equal(write(m->events, e, sizeof(*e)), (ssize_t)sizeof(*e));
}

/* A device event (CREATE, OPEN, CLOSE, RESET: requests; REMOVE, EXISTS:
 * not); returns its seq (0 for the others). */
static uint32_t send_device(struct fake_module *m, uint32_t type, uint32_t id, unsigned type_index)
{
	struct vgpu_mdev_event e = { .type = type, .device_id = id };

	if (type != VGPU_MDEV_EVENT_REMOVE && type != VGPU_MDEV_EVENT_EXISTS)
		e.seq = ++m->next_seq;
	for (unsigned i = 0; i < 16; i++)
		e.payload.device.uuid[i] = (uint8_t)(i == 15 ? id : 0x10 + i);
	e.payload.device.type_index = type_index;
	send_event(m, &e);
	return e.seq;
}

static void ring_doorbell(struct fake_module *m, uint32_t id)
{
	struct vgpu_mdev_event e = { .type = VGPU_MDEV_EVENT_REG_WRITE, .device_id = id };

	e.payload.regs.changed = VGPU_MDEV_REG_DOORBELL;
	e.payload.regs.doorbells = 1;
	send_event(m, &e);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_of(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* The reply to (id, seq) within timeout_ms: true and *out, or false. */
static bool wait_reply(struct fake_module *m, uint32_t id, uint32_t seq, int timeout_ms,
                       struct fake_reply *out)
{
	struct timespec deadline;
	bool got;

	deadline_of(&deadline, timeout_ms);
	pthread_mutex_lock(&m->lock);
	while (!m->replies[id][seq].got &&
	       pthread_cond_timedwait(&m->changed, &m->lock, &deadline) == 0)
		;
	got = m->replies[id][seq].got;
	if (got && out)
		*out = m->replies[id][seq];
	pthread_mutex_unlock(&m->lock);
	return got;
}

static int reply_status(struct fake_module *m, uint32_t id, uint32_t seq)
{
	struct fake_reply r;

	assert_true(wait_reply(m, id, seq, TIMEOUT_MS, &r));
	return r.status;
}

static uint32_t available(struct fake_module *m, const char *type)
{
	uint32_t n = UINT32_MAX;

	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->type_count; i++)
		if (!strcmp(m->types[i].name, type))
			n = m->types[i].available;
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* available_instances of type reaches want within TIMEOUT_MS. */
static bool wait_available(struct fake_module *m, const char *type, uint32_t want)
{
	int64_t end = now_ms() + TIMEOUT_MS;

	while (available(m, type) != want) {
		if (now_ms() > end)
			return false;
		usleep(1000);
	}
	return true;
}

static void description(struct fake_module *m, const char *type, char *out, size_t len)
{
	pthread_mutex_lock(&m->lock);
	out[0] = 0;
	for (unsigned i = 0; i < m->type_count; i++)
		if (!strcmp(m->types[i].name, type))
			snprintf(out, len, "%s", m->types[i].description);
	pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------------------ the guest */

/* A guest's view of mdev id's mailbox: harness tenants without the socket
 * (BAR2 starts with the mailbox). */
static void guest_of(struct fake_module *m, uint32_t id, struct tenant *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_lock(&m->lock);
	t->bar2 = m->mailbox[id];
	pthread_mutex_unlock(&m->lock);
	assert_non_null(t->bar2);
}

/* HELLO through the mailbox and the doorbell event; true when answered
 * (status 0) within timeout_ms. */
static bool guest_hello(struct fake_module *m, uint32_t id, struct tenant *t, int timeout_ms)
{
	struct vgpu_hello_request hello = {
		.abi_version = VGPU_ABI_VERSION,
		.guest_features = VGPU_FEATURE_STATS,
	};
	int64_t end = now_ms() + timeout_ms;
	uint32_t seq = tenant_put_op(t, VGPU_OP_HELLO, &hello, sizeof(hello));

	ring_doorbell(m, id);
	while (now_ms() <= end) {
		uint32_t head = __atomic_load_n(&tenant_header(t)->resp_head, __ATOMIC_ACQUIRE);

		if (head != t->resp_tail) {
			struct vgpu_response r;

			memcpy(&r, t->bar2 + VGPU_MAILBOX_RESP_RING_OFFSET +
			                   (size_t)(t->resp_tail % VGPU_MAILBOX_ENTRIES) *
			                           VGPU_MAILBOX_SLOT_SIZE,
			       sizeof(r));
			t->resp_tail++;
			__atomic_store_n(&tenant_header(t)->resp_tail, t->resp_tail, __ATOMIC_RELEASE);
			return r.seq == seq && r.opcode == VGPU_OP_HELLO && r.status == 0;
		}
		usleep(1000);
	}
	return false;
}

/* ------------------------------------------------------------ fixture */

struct fixture {
	struct harness h;
	struct fake_module m;
};

/* types: small (index 0, max 4), big (1, any), one (2, max 1) */
enum { TYPE_SMALL, TYPE_BIG, TYPE_ONE };

static void fixture_start(struct fixture *f)
{
	struct mdev_host_config config = {
		.libvirt_uri = "none",
		.control_ioctl = fake_ioctl,
	};
	struct vgpu_error why = VGPU_ERROR_INIT;

	harness_config(&f->h);
	f->h.config.mdev_mode = VGPUD_MDEV_OFF; /* the test starts it on the fake */
	if (vgpud_create(&f->h.config, false, &f->h.d, &why))
		fail_msg("vgpud did not start: %s", vgpu_error_msg(&why));
	fake_init(&f->m, f->h.dir);
	config.path = f->m.fifo;
	config.control_ctx = &f->m;
	/* before the loop runs: sd-event is not thread-safe */
	if (mdev_host_create(f->h.d, f->h.d->loop, &config, &f->h.d->mdev, &why))
		fail_msg("the mdev host did not start: %s", vgpu_error_msg(&why));
	assert_int_equal(vgpud_start(f->h.d), 0);
	fake_connect(&f->m);
}

static void fixture_stop(struct fixture *f)
{
	harness_stop(&f->h); /* vgpud_destroy ends the mdev host */
	fake_fini(&f->m);
}

/* ------------------------------------------------------------ tests */

static void test_types_follow_profiles(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fake_reply r;
	struct tenant local;
	struct json_object *resp;
	char text[VGPU_MDEV_DESCRIPTION_MAX];
	uint32_t seq;
	(void)state;

	assert_non_null(f);
	fixture_start(f);
	assert_int_equal(f->m.type_count, 3);
	assert_string_equal(f->m.types[TYPE_SMALL].name, "small");
	assert_string_equal(f->m.types[TYPE_SMALL].sysfs_name, "small");
	assert_int_equal(available(&f->m, "small"), 4);
	assert_int_equal(available(&f->m, "big"), 256); /* no limit */
	assert_int_equal(available(&f->m, "one"), 1);
	description(&f->m, "small", text, sizeof(text));
	assert_non_null(strstr(text, "weight 1, GPU memory cap 32 MiB"));

	/* "one" allows one instance: the mdev holds it */
	seq = send_device(&f->m, VGPU_MDEV_EVENT_CREATE, 1, TYPE_ONE);
	assert_int_equal(reply_status(&f->m, 1, seq), 0);
	assert_true(wait_available(&f->m, "one", 0));
	seq = send_device(&f->m, VGPU_MDEV_EVENT_CREATE, 2, TYPE_ONE);
	assert_true(wait_reply(&f->m, 2, seq, TIMEOUT_MS, &r));
	assert_int_equal(r.status, -EUSERS);
	assert_non_null(strstr(r.message, "has all 1 instances in use"));
	/* ... so no local tenant gets it either, but the mdev's VM attaches */
	assert_int_not_equal(tenant_open(&f->h, &local, "tenant-one", "one"), 0);
	seq = send_device(&f->m, VGPU_MDEV_EVENT_OPEN, 1, TYPE_ONE);
	assert_int_equal(reply_status(&f->m, 1, seq), 0);
	assert_int_equal(f->m.status[1], VGPU_STATUS_READY);

	/* set-profile: the description and available_instances follow */
	resp = harness_control(&f->h, "{\"command\":\"set-profile\",\"profile\":\"one\","
	                              "\"max_instances\":3,\"weight\":5}");
	json_object_put(resp);
	assert_true(wait_available(&f->m, "one", 2));
	description(&f->m, "one", text, sizeof(text));
	assert_non_null(strstr(text, "weight 5"));

	/* a local tenant of "small" takes an instance too: sysfs follows */
	assert_int_equal(tenant_open(&f->h, &local, "tenant-small", "small"), 0);
	assert_true(wait_available(&f->m, "small", 3));
	tenant_close(&local);
	assert_true(wait_available(&f->m, "small", 4));

	/* close and remove: the instance goes back */
	seq = send_device(&f->m, VGPU_MDEV_EVENT_CLOSE, 1, TYPE_ONE);
	assert_int_equal(reply_status(&f->m, 1, seq), 0);
	assert_int_equal(f->m.status[1], VGPU_STATUS_BACKEND_GONE);
	send_device(&f->m, VGPU_MDEV_EVENT_REMOVE, 1, TYPE_ONE);
	assert_true(wait_available(&f->m, "one", 3));
	assert_int_equal(mdev_host_devices(f->h.d->mdev), 0);
	fixture_stop(f);
	free(f);
}

static void test_slow_reset_does_not_delay_other_vms(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct tenant guest2;
	uint32_t seq_reset, seq_open, seq;
	(void)state;

	assert_non_null(f);
	fixture_start(f);
	for (uint32_t id = 1; id <= 3; id++) {
		seq = send_device(&f->m, VGPU_MDEV_EVENT_CREATE, id, TYPE_BIG);
		assert_int_equal(reply_status(&f->m, id, seq), 0);
	}
	for (uint32_t id = 1; id <= 2; id++) {
		seq = send_device(&f->m, VGPU_MDEV_EVENT_OPEN, id, TYPE_BIG);
		assert_int_equal(reply_status(&f->m, id, seq), 0);
	}
	guest_of(&f->m, 2, &guest2);
	assert_true(guest_hello(&f->m, 2, &guest2, TIMEOUT_MS));
	assert_true(harness_wait_vms(&f->h, 2, TIMEOUT_MS));

	/*
	 * Attach and detach wait for the registry (as for the core during an
	 * eviction): with its lock held, VM 1's RESET and VM 3's OPEN cannot
	 * finish. VM 2's doorbell is still answered.
	 */
	vgpu_mutex_lock(&f->h.d->registry.lock);
	seq_reset = send_device(&f->m, VGPU_MDEV_EVENT_RESET, 1, TYPE_BIG);
	seq_open = send_device(&f->m, VGPU_MDEV_EVENT_OPEN, 3, TYPE_BIG);
	usleep(100 * 1000); /* let both reach the lock: not needed to pass */
	assert_true(guest_hello(&f->m, 2, &guest2, TIMEOUT_MS));
	assert_false(wait_reply(&f->m, 1, seq_reset, 0, NULL));
	assert_false(wait_reply(&f->m, 3, seq_open, 0, NULL));
	vgpu_mutex_unlock(&f->h.d->registry.lock);

	/* and both finish once the lock is free */
	assert_int_equal(reply_status(&f->m, 1, seq_reset), 0);
	assert_int_equal(reply_status(&f->m, 3, seq_open), 0);
	assert_true(harness_wait_vms(&f->h, 3, TIMEOUT_MS));
	{
		struct tenant guest1;

		guest_of(&f->m, 1, &guest1);
		assert_true(guest_hello(&f->m, 1, &guest1, TIMEOUT_MS));
	}
	fixture_stop(f); /* detaches the open ones */
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_follow_profiles),
		cmocka_unit_test(test_slow_reset_does_not_delay_other_vms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
