// SPDX-License-Identifier: MIT
/*
 * test_migrate.c - live migration and save/restore of a VM between two
 * vgpuds in this process (two "hosts": separate sockets, separate GPUs).
 *
 * A tenant holds 2x the GPU's VRAM in buffers whose contents it knows
 * (each buffer is a memset of a pattern that changes with every write),
 * keeps writing them while the VM is exported, stops for the switch-over,
 * moves to the destination (vgpu_local_device_move) and goes on there: the
 * same handles, GPU addresses, channel and mailbox; every buffer holds
 * what the tenant wrote last. A cancelled export and one to a destination
 * that cannot hold the VM leave the VM running on the source and nothing
 * on the destination; corrupt and truncated streams are refused cleanly.
 * The EXPORT request of the local socket (what QEMU's vgpu-pci sends on
 * its own connection) drives the same export: START, PROGRESS, FINISH to a
 * destination, CANCEL, RESUME after a FINISH whose migration failed later.
 * Random choices come from VGPU_SEED (printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vgpu/core_migrate.h"

#include "channel_util.h"
#include "device.h"
#include "harness.h"
#include "local_device_internal.h"
#include "local_socket.h"
#include "migrate.h"

#define BUFFERS 8
#define BUFFER_BYTES (16ull << 20) /* 8 x 16 MiB = 2x the test GPU's VRAM */
#define FINISH_MS 20000

struct guest {
	struct tenant t;
	struct test_channel c;
	uint32_t handle[BUFFERS];
	uint64_t va[BUFFERS];
	uint32_t pattern[BUFFERS];
	uint64_t rng;
	unsigned writes;
};

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Rewrite buffer i with a fresh pattern. */
static void write_buffer(struct guest *g, unsigned i)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint32_t n;

	g->pattern[i] = (uint32_t)next_random(&g->rng) | 1u;
	n = vgpu_push_memset(words, g->va[i], g->pattern[i], BUFFER_BYTES);
	test_channel_submit(&g->c, words, n);
	g->writes++;
}

/* A burst of writes to random buffers, then wait for them. */
static void write_burst(struct guest *g, unsigned count)
{
	for (unsigned k = 0; k < count; k++)
		write_buffer(g, (unsigned)(next_random(&g->rng) % BUFFERS));
	assert_int_equal(test_channel_finish(&g->c, FINISH_MS), 0);
}

static void guest_start(struct harness *h, struct guest *g, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	g->rng = seed;
	assert_int_equal(tenant_open(h, &g->t, "mover", "big"), 0);
	assert_int_equal(tenant_hello(&g->t), VGPU_STATUS_OK);
	for (unsigned i = 0; i < BUFFERS; i++)
		assert_int_equal(tenant_alloc(&g->t, BUFFER_BYTES, 7, &g->handle[i], &g->va[i]),
		                 VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&g->t, 0, &g->c), VGPU_STATUS_OK);
	for (unsigned i = 0; i < BUFFERS; i++)
		write_buffer(g, i);
	assert_int_equal(test_channel_finish(&g->c, FINISH_MS), 0);
}

/* Every buffer of the VM on h holds the guest's last pattern (read through
 * that vgpud's core, by the guest's handles). */
static void verify(struct harness *h, struct guest *g)
{
	uint32_t *buf = malloc(1u << 20);
	struct vgpud_device *dev;

	assert_non_null(buf);
	vgpu_mutex_lock(&h->d->registry.lock);
	dev = vgpud_registry_find_locked(&h->d->registry, "mover");
	vgpu_mutex_unlock(&h->d->registry.lock);
	assert_non_null(dev);
	for (unsigned i = 0; i < BUFFERS; i++) {
		uint64_t core_handle;

		assert_int_equal(handle_table_lookup(&dev->handles, g->handle[i], &core_handle), 0);
		for (uint64_t off = 0; off < BUFFER_BYTES; off += 1u << 20) {
			assert_int_equal(vgpu_core_buffer_read(dev->vm, core_handle, off, buf,
			                                       1u << 20, NULL), 0);
			for (size_t w = 0; w < (1u << 20) / 4; w++)
				if (buf[w] != g->pattern[i])
					fail_msg("buffer %u word %zu at offset %llu: %#x, expected %#x "
					         "(seed "
					         "%llu)", i, w, (unsigned long long)off, buf[w],
					         g->pattern[i], (unsigned long long)test_seed());
		}
	}
	free(buf);
}

struct two {
	struct harness a, b;
	struct guest g;
	uint64_t seed;
};

static int two_setup(void **state)
{
	struct two *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->seed = test_seed();
	harness_config(&s->a);
	harness_config(&s->b);
	*state = s;
	return 0;
}

static int two_teardown(void **state)
{
	struct two *s = *state;

	if (s->g.t.dev)
		tenant_close(&s->g.t);
	if (s->a.d)
		harness_stop(&s->a);
	if (s->b.d)
		harness_stop(&s->b);
	free(s);
	return 0;
}

static void start_both(struct two *s)
{
	harness_start(&s->a);
	harness_start(&s->b);
	guest_start(&s->a, &s->g, s->seed);
}

/* Live migration A -> B while the guest writes; then on B it goes on. */
static void test_live_migration(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	start_both(s);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	for (unsigned burst = 0; burst < 6; burst++)
		write_burst(&s->g, 4); /* pre-copy runs meanwhile */
	/* switch-over: the guest is stopped (its last writes finished) */
	if (migrate_export_finish(e, &r, &why))
		fail_msg("export: %s", vgpu_error_msg(&why));
	close(stream_fd);
	close(reply_fd);
	assert_true(r.dirty_tracking);
	assert_true(r.bytes_sent >= BUFFERS * BUFFER_BYTES);
	print_message("migrated: %u rounds, %llu bytes sent for %llu, downtime %.1f ms\n",
	              r.rounds, (unsigned long long)r.bytes_sent, (unsigned long long)r.vm_bytes,
	              r.downtime_ns / 1e6);
	assert_int_equal(vgpu_local_device_move(s->g.t.dev, s->b.config.socket_path, NULL), 0);
	assert_true(harness_wait_vms(&s->a, 0, 5000)); /* nothing left on the source */
	assert_true(harness_wait_vms(&s->b, 1, 5000));
	verify(&s->b, &s->g);
	/* the guest goes on: same channel, same mailbox, same handles */
	write_burst(&s->g, 8);
	{
		struct vgpu_stats_response st;

		assert_int_equal(tenant_stats(&s->g.t, &st), VGPU_STATUS_OK);
		assert_int_equal(st.allocated_bytes, BUFFERS * BUFFER_BYTES);
	}
	verify(&s->b, &s->g);
}

/* The guest frees a buffer the pre-copy announced and allocates one at the
 * same GPU address (what a CUDA program run after run does): the
 * destination drops the old one when the new one is announced. */
static void test_reallocated_during_precopy(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	uint64_t old_va;
	int stream_fd, reply_fd;

	start_both(s);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	for (int waited = 0;; waited++) { /* the first harvest announced every buffer */
		uint32_t rounds;
		uint64_t bytes, pending;
		unsigned throttle;

		migrate_export_progress(e, &rounds, &bytes, &pending, &throttle);
		if (bytes > (2u << 20))
			break;
		assert_true(waited < 20000);
		usleep(1000);
	}
	old_va = s->g.va[0];
	assert_int_equal(tenant_free(&s->g.t, s->g.handle[0]), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&s->g.t, BUFFER_BYTES, 7, &s->g.handle[0], &s->g.va[0]),
	                 VGPU_STATUS_OK);
	assert_int_equal(s->g.va[0], old_va);
	write_buffer(&s->g, 0);
	write_burst(&s->g, 2);
	if (migrate_export_finish(e, &r, &why))
		fail_msg("export: %s", vgpu_error_msg(&why));
	close(stream_fd);
	close(reply_fd);
	assert_int_equal(vgpu_local_device_move(s->g.t.dev, s->b.config.socket_path, NULL), 0);
	assert_true(harness_wait_vms(&s->a, 0, 5000));
	verify(&s->b, &s->g);
	{
		struct vgpu_stats_response st;

		assert_int_equal(tenant_stats(&s->g.t, &st), VGPU_STATUS_OK);
		assert_int_equal(st.allocated_bytes, BUFFERS * BUFFER_BYTES);
	}
}

/* A slow link: reads the stream at about 8 MB/s until told to hurry. */
struct slow_link {
	int fd;
	pthread_t thread;
	atomic_bool fast;
	uint64_t bytes;
};

static void *slow_link_main(void *arg)
{
	struct slow_link *l = arg;
	char *buf = malloc(256u << 10);
	ssize_t n;

	assert_non_null(buf);
	while ((n = read(l->fd, buf, 256u << 10)) != 0) {
		struct timespec pause = { 0, 30000000 };

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		l->bytes += (uint64_t)n;
		if (!atomic_load(&l->fast))
			nanosleep(&pause, NULL);
	}
	free(buf);
	return NULL;
}

/* What the pre-copy has left is what the GPU dirtied and it has not sent
 * yet; a guest that dirties faster than the link takes gets its GPU time
 * throttled; once the guest stops writing, what is left drains to 0. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void test_pending_and_throttle(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct slow_link link = { .fd = -1 };
	uint64_t bytes, pending, max_pending = 0, deadline;
	unsigned throttle = 0;
	uint32_t rounds;
	int pair[2];
	struct vgpu_error why = VGPU_ERROR_INIT;

	harness_start(&s->a);
	guest_start(&s->a, &s->g, s->seed);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	link.fd = pair[0];
	assert_int_equal(pthread_create(&link.thread, NULL, slow_link_main, &link), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", pair[1], -1, true, &e, &why), 0);
	deadline = now_ms() + 15000;
	while (now_ms() < deadline) {
		write_burst(&s->g, 2);
		migrate_export_progress(e, &rounds, &bytes, &pending, &throttle);
		if (pending > max_pending)
			max_pending = pending;
		if (throttle)
			break;
	}
	print_message("slow link: %u rounds, %llu bytes, at most %llu pending, throttle %u%%\n",
	              rounds, (unsigned long long)bytes, (unsigned long long)max_pending,
	              throttle);
	/* the first round alone leaves most of the VM pending on this link */
	assert_true(max_pending >= BUFFER_BYTES);
	assert_true(max_pending <= BUFFERS * BUFFER_BYTES);
	assert_true(throttle >= 20 && throttle <= 100);
	/* the guest stops writing, the link hurries: nothing is left */
	atomic_store(&link.fast, true);
	deadline = now_ms() + 20000;
	do {
		usleep(10000);
		migrate_export_progress(e, &rounds, &bytes, &pending, &throttle);
	} while (pending && now_ms() < deadline);
	assert_int_equal(pending, 0);
	/* throttled or not, the VM runs, and runs on after a cancel */
	write_burst(&s->g, 2);
	shutdown(pair[1], SHUT_RDWR);
	migrate_export_cancel(e);
	close(pair[1]);
	assert_int_equal(pthread_join(link.thread, NULL), 0);
	close(pair[0]);
	write_burst(&s->g, 4);
	verify(&s->a, &s->g);
}

/* A cancelled export: the VM runs on at the source, nothing stays at B. */
static void test_cancelled(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	start_both(s);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	write_burst(&s->g, 4);
	migrate_export_cancel(e);
	close(stream_fd);
	close(reply_fd);
	write_burst(&s->g, 4);
	verify(&s->a, &s->g);
	assert_true(harness_wait_vms(&s->b, 0, 5000));
}

/* A destination whose host budget cannot take the VM refuses it. */
static void test_refused(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	s->b.config.host_budget_bytes = 16ull << 20;
	start_both(s);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	write_burst(&s->g, 2);
	assert_int_not_equal(migrate_export_finish(e, &r, &why), 0);
	print_message("refused as expected: %s\n", vgpu_error_msg(&why));
	close(stream_fd);
	close(reply_fd);
	assert_true(harness_wait_vms(&s->b, 0, 5000));
	write_burst(&s->g, 4); /* runs on at A */
	verify(&s->a, &s->g);
}

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("stream", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Save to a file, refuse corrupt and truncated copies, restore, move. */
static void test_save_restore_and_corrupt(void **state)
{
	struct two *s = *state;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	uint8_t *stream;
	off_t len;
	int fd = memfd_create("save", MFD_CLOEXEC);
	uint64_t rng = s->seed;

	start_both(s);
	assert_true(fd >= 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", fd, -1, false, &e, &why), 0);
	{ /* nothing announced yet: PROGRESS says all of the VM is left */
		uint32_t rounds;
		uint64_t bytes, pending;
		unsigned throttle;

		migrate_export_progress(e, &rounds, &bytes, &pending, &throttle);
		assert_int_equal(pending, BUFFERS * BUFFER_BYTES);
	}
	if (migrate_export_finish(e, &r, &why))
		fail_msg("save: %s", vgpu_error_msg(&why));
	len = lseek(fd, 0, SEEK_END);
	assert_true(len > (off_t)(BUFFERS * BUFFER_BYTES));
	stream = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(stream != MAP_FAILED);
	for (unsigned k = 0; k < 24; k++) {
		uint8_t *copy = malloc((size_t)len);
		size_t cut = (size_t)len;
		int in;

		assert_non_null(copy);
		memcpy(copy, stream, (size_t)len);
		if (k % 3 == 0) /* truncated */
			cut = (size_t)(next_random(&rng) % (uint64_t)len);
		else if (k % 3 == 1) /* a flipped byte */
			copy[next_random(&rng) % (uint64_t)len] ^= (uint8_t)(1u << (k % 8));
		else /* a header field: the first record's length */
			copy[8 + (next_random(&rng) % 4)] ^= 0x80;
		in = memfd_with(copy, cut);
		if (migrate_import(s->b.d, in, 0, &why) == 0)
			fail_msg("corrupt stream %u (seed %llu) accepted", k,
			         (unsigned long long)s->seed);
		close(in);
		free(copy);
		assert_true(harness_wait_vms(&s->b, 0, 5000));
	}
	{
		int in = memfd_with(stream, (size_t)len);

		if (migrate_import(s->b.d, in, 0, &why))
			fail_msg("restore: %s", vgpu_error_msg(&why));
		close(in);
	}
	munmap(stream, (size_t)len);
	close(fd);
	assert_int_equal(vgpu_local_device_move(s->g.t.dev, s->b.config.socket_path, NULL), 0);
	assert_true(harness_wait_vms(&s->a, 0, 5000));
	verify(&s->b, &s->g);
	write_burst(&s->g, 4);
	verify(&s->b, &s->g);
}


/* ------------------------------------------------------------ GPU programs */

#define MODULE_N 1000u

/* A guest with user programs: modules.ptx loaded twice and the first one
 * unloaded (the one left has id 1, not the lowest), scale_bias launched
 * once over data. */
struct program_guest {
	struct vgpu_module_load_response module[2];
	uint64_t image_va, table_va, data_va;
	uint32_t data[MODULE_N];
	int scale_bias;         /* its function index */
	uint64_t launches_va;   /* the module's global counter */
};

/* scale_bias's index and the address of the variable launches, from the
 * table of the last load. */
static void read_table(struct guest *g, struct program_guest *p, uint32_t table_bytes)
{
	uint8_t *table = malloc(table_bytes);
	const struct vgpu_module_table *h = (const void *)table;

	assert_non_null(table);
	assert_int_equal(test_channel_download(&g->c, p->table_va, table, table_bytes), 0);
	assert_int_equal(h->magic, VGPU_MODULE_TABLE_MAGIC);
	p->scale_bias = -1;
	for (uint32_t i = 0; i < h->function_count; i++) {
		struct vgpu_module_function f;

		memcpy(&f, table + h->functions_offset + i * sizeof(f), sizeof(f));
		if (!strcmp((const char *)table + h->strings_offset + f.name_offset, "scale_bias"))
			p->scale_bias = (int)i;
	}
	p->launches_va = 0;
	for (uint32_t i = 0; i < h->variable_count; i++) {
		struct vgpu_module_variable v;

		memcpy(&v, table + h->variables_offset + i * sizeof(v), sizeof(v));
		if (!strcmp((const char *)table + h->strings_offset + v.name_offset, "launches"))
			p->launches_va = v.gpu_va;
	}
	free(table);
	assert_true(p->scale_bias >= 0 && p->launches_va);
}

/* data[i] = data[i] * scale + bias (3 and 7, the module's variables), by
 * module id; launches + 1. */
static void scale_bias(struct guest *g, struct program_guest *p, uint32_t module)
{
	struct vgpu_launch_dims dims = { { (MODULE_N + 127) / 128, 1, 1 }, { 128, 1, 1 }, 0 };
	struct {
		uint64_t data;
		int32_t n;
	} __attribute__((packed)) params = { p->data_va, (int32_t)MODULE_N };
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	test_channel_submit(&g->c, words,
	                    vgpu_push_launch_function(words, module, (uint32_t)p->scale_bias,
	                                              &dims, &params, sizeof(params)));
	assert_int_equal(test_channel_finish(&g->c, 10000), 0);
	for (uint32_t i = 0; i < MODULE_N; i++)
		p->data[i] = p->data[i] * 3u + 7u;
}

/* The data and the launch counter are what the guest expects. */
static void check_program(struct guest *g, struct program_guest *p, uint64_t launches)
{
	uint32_t got[MODULE_N];
	uint64_t counter = 0;

	assert_int_equal(test_channel_download(&g->c, p->data_va, got, sizeof(got)), 0);
	for (uint32_t i = 0; i < MODULE_N; i++)
		if (got[i] != p->data[i])
			fail_msg("data[%u] = %u, expected %u", i, got[i], p->data[i]);
	assert_int_equal(test_channel_download(&g->c, p->launches_va, &counter, 8), 0);
	assert_int_equal(counter, launches);
}

static void program_start(struct two *s, struct program_guest *p, bool keep_first)
{
	struct guest *g = &s->g;
	struct vgpu_hello_request hello = { VGPU_ABI_VERSION, VGPU_FEATURE_MODULES };
	uint32_t handle;
	size_t bytes;
	char *image = harness_read_file(TEST_PTX_DIR "/modules.ptx", &bytes);

	harness_start(&s->a);
	harness_start(&s->b);
	memset(g, 0, sizeof(*g));
	memset(p, 0, sizeof(*p));
	assert_int_equal(tenant_open(&s->a, &g->t, "mover", "big"), 0);
	assert_int_equal(tenant_call(&g->t, VGPU_OP_HELLO, &hello, sizeof(hello), NULL),
	                 VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, 64 << 10, 7, &handle, &p->image_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, 64 << 10, 7, &handle, &p->table_va), VGPU_STATUS_OK);
	assert_int_equal(tenant_alloc(&g->t, MODULE_N * 4, 7, &handle, &p->data_va),
	                 VGPU_STATUS_OK);
	assert_int_equal(test_channel_create(&g->t, 0, &g->c), VGPU_STATUS_OK);
	assert_int_equal(test_channel_upload(&g->c, p->image_va, image, bytes), 0);
	for (unsigned k = 0; k < 2; k++) {
		assert_int_equal(tenant_module_load(&g->t, p->image_va, bytes, p->table_va, 64 << 10,
		                                    &p->module[k]),
		                 VGPU_STATUS_OK);
		read_table(g, p, p->module[k].table_bytes);
	}
	assert_int_not_equal(p->module[0].module, p->module[1].module);
	if (!keep_first)
		assert_int_equal(tenant_module_unload(&g->t, p->module[0].module), VGPU_STATUS_OK);
	for (uint32_t i = 0; i < MODULE_N; i++)
		p->data[i] = i * 7919u;
	assert_int_equal(test_channel_upload(&g->c, p->data_va, p->data, sizeof(p->data)), 0);
	scale_bias(g, p, p->module[1].module);
	check_program(g, p, 1);
	free(image);
}

/* A VM with a GPU program migrates: on the destination the guest's module
 * handle, function index and variables' addresses are the same, and the
 * variables hold what the program wrote on the source. */
static void test_module_migration(void **state)
{
	struct two *s = *state;
	struct program_guest p;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	program_start(s, &p, false);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	scale_bias(&s->g, &p, p.module[1].module); /* the program runs during the pre-copy */
	if (migrate_export_finish(e, &r, &why))
		fail_msg("export: %s", vgpu_error_msg(&why));
	close(stream_fd);
	close(reply_fd);
	assert_int_equal(vgpu_local_device_move(s->g.t.dev, s->b.config.socket_path, NULL), 0);
	assert_true(harness_wait_vms(&s->a, 0, 5000));
	assert_true(harness_wait_vms(&s->b, 1, 5000));
	check_program(&s->g, &p, 2);
	scale_bias(&s->g, &p, p.module[1].module); /* the same handle works at B */
	check_program(&s->g, &p, 3);
	/* the unloaded id 0 is free at B as at A, id 1 is taken */
	assert_int_equal(tenant_module_unload(&s->g.t, p.module[0].module), VGPU_STATUS_NOT_FOUND);
	{
		struct vgpu_module_load_response again;
		size_t bytes;
		char *image = harness_read_file(TEST_PTX_DIR "/modules.ptx", &bytes);

		assert_int_equal(tenant_module_load(&s->g.t, p.image_va, bytes, p.table_va, 64 << 10,
		                                    &again),
		                 VGPU_STATUS_OK);
		assert_int_equal(again.module, p.module[0].module);
		assert_int_equal(tenant_module_unload(&s->g.t, again.module), VGPU_STATUS_OK);
		free(image);
	}
	assert_int_equal(tenant_module_unload(&s->g.t, p.module[1].module), VGPU_STATUS_OK);
	assert_int_equal(tenant_module_unload(&s->g.t, p.module[1].module), VGPU_STATUS_NOT_FOUND);
}

/* A destination that cannot load the VM's programs (here: it allows one
 * module per VM, the VM has two) refuses the VM; it runs on at the source,
 * programs and all, and nothing of it stays at the destination. */
static void test_module_refused(void **state)
{
	struct two *s = *state;
	struct program_guest p;
	struct migrate_export *e;
	struct migrate_result r;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	s->b.config.max_modules_per_vm = 1;
	program_start(s, &p, true);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	assert_int_equal(migrate_export_start(s->a.d, "mover", stream_fd, reply_fd, true, &e, &why),
	                 0);
	assert_int_not_equal(migrate_export_finish(e, &r, &why), 0);
	print_message("refused as expected: %s\n", vgpu_error_msg(&why));
	assert_non_null(strstr(vgpu_error_msg(&why), "max_modules_per_vm"));
	close(stream_fd);
	close(reply_fd);
	assert_true(harness_wait_vms(&s->b, 0, 5000));
	scale_bias(&s->g, &p, p.module[0].module);
	scale_bias(&s->g, &p, p.module[1].module);
	check_program(&s->g, &p, 2); /* each module has its own counter: module 1's */
}


/* ------------------------------------------------- EXPORT on the local socket */

/* One EXPORT request on the guest's own connection, as QEMU's vgpu-pci
 * sends it; fd (or -1) goes with it. 0 with *out, or a negative errno. */
static int export_op(struct guest *g, uint32_t op, uint32_t flags, int fd,
                     struct vgpu_local_export_reply *out)
{
	struct vgpu_local_device *dev = g->t.dev;
	struct vgpu_local_export req = { .op = op, .flags = flags };
	struct vgpu_local_msg reply;
	uint32_t seq;
	int err;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&dev->request_lock);
	seq = dev->next_seq++;
	err = vgpu_local_send(dev->sock, VGPU_LOCAL_EXPORT, seq, 0, &req, sizeof(req),
	                      fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, 5000);
	if (!err)
		err = vgpu_local_recv(dev->sock, &reply, 60000);
	pthread_mutex_unlock(&dev->request_lock);
	if (err)
		return err;
	vgpu_local_msg_close_fds(&reply);
	if (vgpu_local_msg_expect(&reply, VGPU_LOCAL_EXPORT, true, sizeof(*out), 0) ||
	    reply.header.seq != seq)
		return -EPROTO;
	*out = reply.payload.export_reply;
	out->message[sizeof(out->message) - 1] = '\0';
	return 0;
}

/* What the frontend does with the stream: carry it to out (-1: drop it). */
struct carrier {
	int in, out;
	pthread_t thread;
	uint64_t bytes;
	int error;
};

static void *carry_main(void *arg)
{
	struct carrier *c = arg;
	uint8_t *buf = malloc(1u << 16);

	if (!buf) {
		c->error = -ENOMEM;
		return NULL;
	}
	for (;;) {
		ssize_t n = read(c->in, buf, 1u << 16);

		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			c->error = -errno;
			break;
		}
		c->bytes += (uint64_t)n;
		for (ssize_t off = 0; c->out >= 0 && off < n;) {
			ssize_t w = write(c->out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				c->error = w < 0 ? -errno : -EPIPE;
				break;
			}
			off += w;
		}
		if (c->error)
			break;
	}
	if (c->out >= 0)
		close(c->out); /* the destination's END follows the source's */
	free(buf);
	return NULL;
}

/* START an export of g into a new stream carried to out; *c runs. */
static void export_start(struct guest *g, int out, struct carrier *c,
                         struct vgpu_local_export_reply *r)
{
	int pair[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	memset(c, 0, sizeof(*c));
	c->in = pair[0];
	c->out = out;
	assert_int_equal(pthread_create(&c->thread, NULL, carry_main, c), 0);
	assert_int_equal(export_op(g, VGPU_LOCAL_EXPORT_START, VGPU_LOCAL_EXPORT_PRECOPY, pair[1],
	                           r), 0);
	close(pair[1]); /* vgpud holds its own copy */
	if (r->status)
		fail_msg("EXPORT START: %d %s", r->status, r->message);
	assert_int_equal(r->dirty_tracking, 1); /* simgpu tracks dirty pages */
	assert_int_equal(r->vm_bytes, BUFFERS * BUFFER_BYTES);
}

static void carrier_join(struct carrier *c)
{
	assert_int_equal(pthread_join(c->thread, NULL), 0);
	close(c->in);
	assert_int_equal(c->error, 0);
}

/* The VM's destination said yes (IMPORT reply on reply_fd). */
static void expect_imported(int reply_fd)
{
	struct vgpu_local_msg m;

	assert_int_equal(vgpu_local_recv(reply_fd, &m, 30000), 0);
	vgpu_local_msg_close_fds(&m);
	assert_int_equal(vgpu_local_msg_expect(&m, VGPU_LOCAL_IMPORT, true,
	                                       sizeof(struct vgpu_local_import_reply), 0), 0);
	m.payload.import_reply.message[VGPU_LOCAL_MESSAGE_MAX - 1] = '\0';
	if (m.payload.import_reply.status)
		fail_msg("import refused: %s", m.payload.import_reply.message);
}

/* EXPORT START, PROGRESS while the guest writes, FINISH; the frontend
 * carries the stream to B's IMPORT; the guest moves there and goes on. */
static void test_local_export(void **state)
{
	struct two *s = *state;
	struct vgpu_local_export_reply r;
	struct carrier c;
	struct vgpu_error why = VGPU_ERROR_INIT;
	int stream_fd, reply_fd;

	start_both(s);
	assert_int_equal(migrate_connect(s->b.config.socket_path, "mover", &stream_fd, &reply_fd,
	                                 &why), 0);
	export_start(&s->g, stream_fd, &c, &r);
	/* a second START while one runs is refused, the first goes on */
	{
		int pair[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
		assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_START, 0, pair[1], &r), 0);
		assert_int_equal(r.status, -EBUSY);
		assert_true(r.message[0] != '\0');
		close(pair[0]);
		close(pair[1]);
	}
	for (unsigned burst = 0; burst < 6; burst++)
		write_burst(&s->g, 4); /* pre-copy runs meanwhile */
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_PROGRESS, 0, -1, &r), 0);
	assert_int_equal(r.status, 0);
	assert_true(r.bytes_sent > 0);
	/* the frontend stopped its guest (its last writes finished) */
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_FINISH, 0, -1, &r), 0);
	if (r.status)
		fail_msg("EXPORT FINISH: %d %s", r.status, r.message);
	carrier_join(&c);
	expect_imported(reply_fd);
	close(reply_fd);
	assert_true(r.bytes_sent >= BUFFERS * BUFFER_BYTES);
	assert_int_equal(r.bytes_sent, c.bytes);
	assert_true(r.precopy_bytes <= r.bytes_sent);
	assert_true(r.downtime_ns > 0 && r.downtime_ns <= r.total_ns);
	print_message("EXPORT: %u rounds, %llu bytes (%llu before the stop) for %llu, downtime "
	              "%.1f ms\n", r.rounds, (unsigned long long)r.bytes_sent,
	              (unsigned long long)r.precopy_bytes, (unsigned long long)r.vm_bytes,
	              r.downtime_ns / 1e6);
	assert_int_equal(vgpu_local_device_move(s->g.t.dev, s->b.config.socket_path, NULL), 0);
	assert_true(harness_wait_vms(&s->a, 0, 5000)); /* released with the connection */
	assert_true(harness_wait_vms(&s->b, 1, 5000));
	verify(&s->b, &s->g);
	write_burst(&s->g, 8);
	verify(&s->b, &s->g);
}

/* CANCEL: the VM never stopped. FINISH whose migration then fails
 * (RESUME): the VM runs on at the source. FINISH without START: refused. */
static void test_local_export_cancel_resume(void **state)
{
	struct two *s = *state;
	struct vgpu_local_export_reply r;
	struct carrier c;

	start_both(s);
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_FINISH, 0, -1, &r), 0);
	assert_int_equal(r.status, -EINVAL);
	assert_true(r.message[0] != '\0');

	export_start(&s->g, -1, &c, &r);
	write_burst(&s->g, 4);
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_CANCEL, 0, -1, &r), 0);
	assert_int_equal(r.status, 0);
	carrier_join(&c);
	write_burst(&s->g, 4);
	verify(&s->a, &s->g);

	export_start(&s->g, -1, &c, &r);
	write_burst(&s->g, 2);
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_FINISH, 0, -1, &r), 0);
	if (r.status)
		fail_msg("EXPORT FINISH: %d %s", r.status, r.message);
	carrier_join(&c);
	assert_int_equal(r.bytes_sent, c.bytes);
	/* held: a second export is refused until RESUME */
	{
		int pair[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
		assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_START, 0, pair[1], &r), 0);
		assert_int_equal(r.status, -EBUSY);
		close(pair[0]);
		close(pair[1]);
	}
	assert_int_equal(export_op(&s->g, VGPU_LOCAL_EXPORT_RESUME, 0, -1, &r), 0);
	assert_int_equal(r.status, 0);
	write_burst(&s->g, 4); /* runs on at A */
	verify(&s->a, &s->g);
	assert_true(harness_wait_vms(&s->b, 0, 5000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_live_migration, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_cancelled, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_reallocated_during_precopy, two_setup,
		                                two_teardown),
		cmocka_unit_test_setup_teardown(test_pending_and_throttle, two_setup,
		                                two_teardown),
		cmocka_unit_test_setup_teardown(test_refused, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_save_restore_and_corrupt, two_setup,
		                                two_teardown),
		cmocka_unit_test_setup_teardown(test_module_migration, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_module_refused, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_local_export, two_setup, two_teardown),
		cmocka_unit_test_setup_teardown(test_local_export_cancel_resume, two_setup,
		                                two_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
