// SPDX-License-Identifier: MIT
/* migrate_export.c - the source side of a migration or save, see migrate.h. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgpu/core_migrate.h"
#include "vgpu/error.h"
#include "vgpu/mutex.h"
#include "vgpu/util.h"
#include "vgpu/abi/local_protocol.h"

#include "channel_window.h"
#include "daemon.h"
#include "device.h"
#include "local_socket.h"
#include "log.h"
#include "migrate.h"
#include "migrate_stream.h"

#define ROUND_PAUSE_NS 5000000L /* between pre-copy rounds with nothing to send */
#define IMPORT_REPLY_TIMEOUT_MS 60000

/*
 * Convergence (docs/migration.md): as QEMU's auto-converge does for vCPUs.
 * Every CONVERGE_PERIOD_NS the pre-copy compares what the GPU dirtied in
 * the period with what it sent; when it dirtied more than half of it in
 * two periods in a row, the VM's GPU time is throttled: its channels are
 * stopped (suspended through their shadows, as the stop-and-copy does)
 * for throttle% of every THROTTLE_PERIOD_NS, starting at THROTTLE_INITIAL
 * and THROTTLE_STEP more each time again, up to THROTTLE_MAX. A stop
 * drains what the channels had fetched, so a guest whose every submission
 * rewrites much of its memory can outrun even that: past THROTTLE_MAX the
 * GPU is paused (100%) until the stop-and-copy, which then has only what
 * was dirty at the pause to send. The export ends the throttle.
 */
#define CONVERGE_PERIOD_NS 250000000ull
#define THROTTLE_PERIOD_NS 100000000ull
#define THROTTLE_INITIAL 20u
#define THROTTLE_STEP 10u
#define THROTTLE_MAX 99u

struct sent_buffer {
	uint64_t handle, gpu_va, bytes;
	uint8_t *pending; /* per piece of MIGRATE_DATA_MAX: harvested dirty, not yet sent */
	size_t pieces;
};

struct migrate_export {
	struct vgpud *d;
	struct vgpud_device *dev;
	int reply_fd;
	struct migrate_stream stream;
	bool tracking;
	uint8_t *piece; /* MIGRATE_DATA_MAX bytes */

	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int thread_error;
	char thread_why[256];

	struct sent_buffer *sent;
	size_t sent_count, sent_capacity;

	_Atomic uint32_t rounds;
	_Atomic uint64_t bytes;
	/* the pending set: sent[], the pieces' flags; taken by the harvests
	 * (pre-copy thread, PROGRESS) and the pre-copy's sends, never across
	 * a write to the stream */
	struct vgpu_mutex lock;
	_Atomic uint64_t pending_bytes; /* harvested dirty (or new), not yet sent */
	_Atomic uint64_t dirtied_bytes; /* what the harvests found dirty, in all */
	_Atomic uint64_t unannounced_bytes; /* new buffers the last harvest left for later */
	uint64_t start_ns;

	/* convergence (pre-copy thread), the throttle (its own thread) */
	uint64_t period_start_ns, period_dirtied_start, period_sent_start, last_harvest_ns;
	unsigned hot_periods;
	_Atomic unsigned throttle_pct;
	atomic_bool keep_stopped; /* the stop-and-copy takes over stopped channels */
	pthread_t throttle_thread;
	bool throttle_started;
	uint64_t throttled_ns;
};

static uint64_t piece_bytes(const struct sent_buffer *b, size_t i)
{
	uint64_t off = (uint64_t)i * MIGRATE_DATA_MAX;

	return b->bytes - off < MIGRATE_DATA_MAX ? b->bytes - off : MIGRATE_DATA_MAX;
}

static struct sent_buffer *find_sent(struct migrate_export *e, uint64_t handle)
{
	for (size_t i = 0; i < e->sent_count; i++)
		if (e->sent[i].handle == handle)
			return &e->sent[i];
	return NULL;
}

/* A new buffer, every piece pending (lock held). */
static int note_sent(struct migrate_export *e, const struct vgpu_core_buffer_desc *b)
{
	struct sent_buffer *s;
	size_t pieces = (size_t)((b->bytes + MIGRATE_DATA_MAX - 1) / MIGRATE_DATA_MAX);

	if (e->sent_count == e->sent_capacity) {
		size_t capacity = e->sent_capacity ? 2 * e->sent_capacity : 64;
		struct sent_buffer *grown = realloc(e->sent, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		e->sent = grown;
		e->sent_capacity = capacity;
	}
	s = &e->sent[e->sent_count];
	*s = (struct sent_buffer){ b->handle, b->gpu_va, b->bytes, NULL, pieces };
	s->pending = malloc(pieces ? pieces : 1);
	if (!s->pending)
		return -ENOMEM;
	memset(s->pending, 1, pieces);
	e->sent_count++;
	atomic_fetch_add(&e->pending_bytes, b->bytes);
	return 0;
}

/* (lock held) */
static void drop_pending(struct migrate_export *e, struct sent_buffer *b, size_t i)
{
	if (b->pending[i]) {
		b->pending[i] = 0;
		atomic_fetch_sub(&e->pending_bytes, piece_bytes(b, i));
	}
}

/*
 * Harvest: the GPU's dirty bits of the known buffers are read and cleared
 * (a write after this is seen by the next harvest) into their pending
 * pieces. New buffers: announce (between rounds, the stop-and-copy)
 * writes their BUFFER record and makes every piece pending; otherwise (in
 * the middle of a round) their bytes only count as unannounced. Without
 * tracking (a stop-and-copy) every piece is pending. Only the pre-copy
 * thread and the stop-and-copy harvest: the core's calls take the
 * allocation lock, which a channel stop holds while the frontend
 * acknowledges its window swap, so a request of the frontend (PROGRESS)
 * must not wait for it.
 */
static int harvest(struct migrate_export *e, bool announce)
{
	struct vgpu_core_buffer_desc *buffers;
	size_t count;
	uint64_t unannounced = 0;
	int err = vgpu_core_vm_buffers(e->dev->vm, &buffers, &count, NULL);

	if (err)
		return err;
	/* What is left counts the new buffers from now on, announced or not:
	 * a harvest can take long (the allocation lock is busy while a return
	 * pass brings an imported VM's chunks to VRAM), and a PROGRESS in the
	 * middle of it must not see only the buffers announced so far. */
	vgpu_mutex_lock(&e->lock);
	for (size_t i = 0; i < count; i++)
		if (!find_sent(e, buffers[i].handle))
			unannounced += buffers[i].bytes;
	vgpu_mutex_unlock(&e->lock);
	atomic_store(&e->unannounced_bytes, unannounced);
	for (size_t i = 0; i < count && !err; i++) {
		const struct vgpu_core_buffer_desc *b = &buffers[i];
		struct sent_buffer *s;

		vgpu_mutex_lock(&e->lock);
		s = find_sent(e, b->handle);
		vgpu_mutex_unlock(&e->lock);
		if (!s && !announce)
			continue;
		if (!s) {
			struct migrate_buffer rec = {
				.handle = b->handle,
				.gpu_va = b->gpu_va,
				.bytes = b->bytes,
				.priority = b->priority,
			};

			err = migrate_write(&e->stream, MIGRATE_REC_BUFFER, &rec, sizeof(rec), NULL, 0);
			if (err)
				break;
			atomic_store(&e->bytes, e->stream.bytes);
			vgpu_mutex_lock(&e->lock);
			err = note_sent(e, b); /* pending first: PROGRESS never counts too little */
			vgpu_mutex_unlock(&e->lock);
			if (err)
				break;
			atomic_fetch_sub(&e->unannounced_bytes, b->bytes);
		}
		vgpu_mutex_lock(&e->lock);
		s = find_sent(e, b->handle);
		for (size_t p = 0; p < s->pieces && !err; p++) {
			bool dirty = true;

			if (e->tracking)
				err = vgpu_core_vm_test_and_clear_dirty(
					e->dev->vm, s->gpu_va + (uint64_t)p * MIGRATE_DATA_MAX,
					piece_bytes(s, p), &dirty, NULL);
			if (!err && dirty && !s->pending[p]) {
				s->pending[p] = 1;
				atomic_fetch_add(&e->pending_bytes, piece_bytes(s, p));
				atomic_fetch_add(&e->dirtied_bytes, piece_bytes(s, p));
			}
		}
		vgpu_mutex_unlock(&e->lock);
	}
	free(buffers);
	return err;
}

static void converge(struct migrate_export *e);

/* Send the pending pieces (all of them when final, else until asked to
 * stop; meanwhile, every HARVEST_EVERY_NS, the dirty bits are harvested
 * again and the convergence policy looks). A buffer freed meanwhile is
 * skipped. */
#define HARVEST_EVERY_NS 50000000ull
static int send_pending(struct migrate_export *e, bool final)
{
	struct vgpu_vm *vm = e->dev->vm;
	int err = 0;

	for (size_t i = 0; !err; i++) {
		struct migrate_data data;
		struct sent_buffer *b;
		bool freed;

		vgpu_mutex_lock(&e->lock);
		if (i >= e->sent_count) {
			vgpu_mutex_unlock(&e->lock);
			break;
		}
		b = &e->sent[i];
		data.handle = b->handle;
		vgpu_mutex_unlock(&e->lock);
		for (size_t p = 0; !err; p++) {
			if (!final && atomic_load(&e->stop))
				return 0;
			if (!final && vgpu_monotonic_ns() - e->last_harvest_ns >= HARVEST_EVERY_NS) {
				e->last_harvest_ns = vgpu_monotonic_ns();
				err = harvest(e, false);
				converge(e);
				if (err)
					break;
			}
			vgpu_mutex_lock(&e->lock);
			b = &e->sent[i]; /* note_sent may have moved it */
			while (p < b->pieces && !b->pending[p])
				p++;
			if (p >= b->pieces) {
				vgpu_mutex_unlock(&e->lock);
				break;
			}
			drop_pending(e, b, p);
			data.offset = (uint64_t)p * MIGRATE_DATA_MAX;
			data.bytes = piece_bytes(b, p);
			vgpu_mutex_unlock(&e->lock);
			err = vgpu_core_buffer_read(vm, data.handle, data.offset, e->piece,
			                            data.bytes, NULL);
			freed = err == -ENOENT;
			if (freed) { /* nothing of it to send */
				vgpu_mutex_lock(&e->lock);
				b = &e->sent[i];
				for (size_t q = p; q < b->pieces; q++)
					drop_pending(e, b, q);
				vgpu_mutex_unlock(&e->lock);
				err = 0;
				break;
			}
			if (!err)
				err = migrate_write(&e->stream, MIGRATE_REC_DATA, &data, sizeof(data),
				                    e->piece, data.bytes);
			atomic_store(&e->bytes, e->stream.bytes);
		}
	}
	return err;
}

/* Sleep ns, in slices, until the export stops. */
static void throttle_sleep(struct migrate_export *e, uint64_t ns)
{
	uint64_t end = vgpu_monotonic_ns() + ns, t;

	while (!atomic_load(&e->stop) && (t = vgpu_monotonic_ns()) < end) {
		uint64_t left = end - t < 5000000u ? end - t : 5000000u;
		struct timespec ts = { 0, (long)left };

		nanosleep(&ts, NULL);
	}
}

/* The throttle: the VM's channels stopped for throttle_pct% of each period. */
static void *throttle_main(void *arg)
{
	struct migrate_export *e = arg;

	while (!atomic_load(&e->stop)) {
		uint64_t off_ns = THROTTLE_PERIOD_NS * atomic_load(&e->throttle_pct) / 100, t0;

		t0 = vgpu_monotonic_ns();
		if (vgpu_core_vm_stop_channels(e->dev->vm, NULL) == 0) {
			throttle_sleep(e, off_ns);
			/* paused: stopped until the export ends */
			while (atomic_load(&e->throttle_pct) >= 100 && !atomic_load(&e->stop))
				throttle_sleep(e, THROTTLE_PERIOD_NS);
			e->throttled_ns += vgpu_monotonic_ns() - t0;
			/* the stop-and-copy: a restart would run the backlog of the
			 * shadows now, in the downtime, and dirty it all again */
			if (atomic_load(&e->stop) && atomic_load(&e->keep_stopped))
				break;
			vgpu_core_vm_start_channels(e->dev->vm, NULL);
		}
		throttle_sleep(e, THROTTLE_PERIOD_NS - off_ns);
	}
	return NULL;
}

/* After a harvest: the convergence policy (see the top). */
static void converge(struct migrate_export *e)
{
	uint64_t t = vgpu_monotonic_ns(), sent, dirtied;
	unsigned pct;

	if (t - e->period_start_ns < CONVERGE_PERIOD_NS)
		return;
	sent = atomic_load(&e->bytes) - e->period_sent_start;
	dirtied = atomic_load(&e->dirtied_bytes) - e->period_dirtied_start;
	e->hot_periods = dirtied > sent / 2 ? e->hot_periods + 1 : 0;
	e->period_start_ns = t;
	e->period_dirtied_start += dirtied;
	e->period_sent_start += sent;
	if (e->hot_periods < 2)
		return;
	e->hot_periods = 0;
	pct = atomic_load(&e->throttle_pct);
	if (pct >= 100)
		return;
	pct = pct == THROTTLE_MAX ? 100 : pct ? pct + THROTTLE_STEP : THROTTLE_INITIAL;
	if (pct > THROTTLE_MAX && pct < 100)
		pct = THROTTLE_MAX;
	atomic_store(&e->throttle_pct, pct);
	if (pct < 100)
		log_info("VM '%s': the GPU dirties its memory faster than the migration sends "
		         "it: its GPU time is throttled to %u%%", e->dev->name, 100 - pct);
	else
		log_info("VM '%s': the GPU outruns the migration even throttled to %u%%: it is "
		         "paused until the switch-over", e->dev->name, 100 - THROTTLE_MAX);
	if (!e->throttle_started)
		e->throttle_started =
			pthread_create(&e->throttle_thread, NULL, throttle_main, e) == 0;
}

static void *precopy_main(void *arg)
{
	struct migrate_export *e = arg;

	e->period_start_ns = vgpu_monotonic_ns();
	while (!atomic_load(&e->stop)) {
		struct timespec pause = { 0, ROUND_PAUSE_NS };
		int err;

		e->last_harvest_ns = vgpu_monotonic_ns();
		err = harvest(e, true);
		converge(e);
		if (!err && atomic_load(&e->pending_bytes)) {
			err = send_pending(e, false);
			if (!err)
				atomic_fetch_add(&e->rounds, 1);
		} else if (!err) {
			nanosleep(&pause, NULL);
		}
		if (err) {
			e->thread_error = err;
			snprintf(e->thread_why, sizeof(e->thread_why), "pre-copy failed: %s",
			         err == -EPIPE ? "the destination closed the stream (it refused the "
			                         "VM? see its log)"
			                       : strerror(-err));
			break;
		}
	}
	return NULL;
}

static void release(struct migrate_export *e)
{
	if (e->tracking)
		vgpu_core_vm_dirty_tracking(e->dev->vm, false, NULL);
	atomic_store(&e->dev->exporting, false);
	free(e->piece);
	for (size_t i = 0; i < e->sent_count; i++)
		free(e->sent[i].pending);
	free(e->sent);
	vgpu_mutex_destroy(&e->lock);
	free(e);
}

int migrate_export_start(struct vgpud *d, const char *vm_name, int fd, int reply_fd,
                         bool precopy, struct migrate_export **out, struct vgpu_error *error)
{
	struct migrate_export *e = calloc(1, sizeof(*e));
	struct vgpud_device *dev;
	int err;

	if (!e || !(e->piece = malloc(MIGRATE_DATA_MAX))) {
		free(e);
		return vgpu_error_set(error, -ENOMEM, "vgpud is out of memory");
	}
	vgpu_mutex_init(&e->lock);
	vgpu_mutex_lock(&d->registry.lock);
	dev = vgpud_registry_find_locked(&d->registry, vm_name);
	if (!dev)
		err = -ENOENT;
	else if (dev->parked || atomic_load(&dev->migrated) ||
	         atomic_exchange(&dev->exporting, true))
		err = -EBUSY;
	else
		err = 0;
	vgpu_mutex_unlock(&d->registry.lock);
	if (err) {
		vgpu_error_set(error, err, err == -ENOENT ? "no VM '%s' is attached"
		               : "VM '%s' is being migrated, or was, or "
		                 "waits for its frontend",
		               vm_name);
		free(e->piece);
		vgpu_mutex_destroy(&e->lock);
		free(e);
		return err;
	}
	e->d = d;
	e->dev = dev;
	e->reply_fd = reply_fd;
	e->start_ns = vgpu_monotonic_ns();
	migrate_stream_init(&e->stream, fd);
	{
		struct migrate_begin b;
		struct vgpu_vm_stats stats;

		vgpu_core_vm_stats(dev->vm, &stats);
		memset(&b, 0, sizeof(b));
		b.stream_version = MIGRATE_STREAM_VERSION;
		b.owner_uid = dev->owner_uid;
		snprintf(b.vm_name, sizeof(b.vm_name), "%s", dev->name);
		snprintf(b.profile, sizeof(b.profile), "%s", dev->profile);
		snprintf(b.scheduler, sizeof(b.scheduler), "%s", stats.scheduler);
		b.weight = stats.weight;
		b.weight_overridden = atomic_load(&dev->weight_overridden);
		b.cap_bytes = stats.cap_bytes;
		b.chunk_bytes = stats.chunk_bytes;
		b.va_window_base = dev->va_window_base;
		b.vram_bytes = d->caps.vram_bytes;
		/* nothing announced yet: all of it is left (PROGRESS before the
		 * pre-copy's first harvest) */
		atomic_store(&e->unannounced_bytes, stats.allocated_bytes);
		err = migrate_write(&e->stream, MIGRATE_REC_BEGIN, &b, sizeof(b), NULL, 0);
	}
	if (!err && precopy) {
		err = vgpu_core_vm_dirty_tracking(dev->vm, true, NULL);
		if (err == -ENOTSUP) {
			log_info("VM '%s': GPU '%s' tracks no dirty pages: no pre-copy, the export "
			         "is a "
			         "stop-and-copy", dev->name, d->caps.name ? d->caps.name : "?");
			err = 0;
		} else if (!err) {
			e->tracking = true;
			err = -pthread_create(&e->thread, NULL, precopy_main, e);
			e->thread_started = !err;
		}
	}
	if (err) {
		vgpu_error_set(error, err, "cannot start exporting VM '%s': %s", vm_name,
		               strerror(-err));
		release(e);
		return err;
	}
	*out = e;
	return 0;
}

static void stop_thread(struct migrate_export *e)
{
	atomic_store(&e->stop, true);
	if (e->thread_started)
		pthread_join(e->thread, NULL);
	e->thread_started = false;
	if (e->throttle_started) /* it leaves the channels running */
		pthread_join(e->throttle_thread, NULL);
	e->throttle_started = false;
}

void migrate_export_cancel(struct migrate_export *e)
{
	if (!e)
		return;
	stop_thread(e);
	log_info("VM '%s': export cancelled; it runs on here", e->dev->name);
	release(e);
}

const char *migrate_export_vm(const struct migrate_export *e)
{
	return e->dev->name;
}

bool migrate_export_tracking(const struct migrate_export *e)
{
	return e->tracking;
}

void migrate_export_progress(struct migrate_export *e, uint32_t *rounds, uint64_t *bytes,
                             uint64_t *pending, unsigned *throttle_pct)
{
	uint64_t unannounced = atomic_load(&e->unannounced_bytes); /* before pending: see harvest */

	*rounds = atomic_load(&e->rounds);
	*bytes = atomic_load(&e->bytes);
	*pending = atomic_load(&e->pending_bytes) + unannounced;
	*throttle_pct = atomic_load(&e->throttle_pct);
}

/* One loaded module: its image in pieces, the first with the variables'
 * addresses. */
static int send_module(struct migrate_export *e, const struct vgpu_core_module_desc *m)
{
	size_t addresses = (size_t)m->variable_count * sizeof(uint64_t);
	uint64_t offset = 0;
	int err = 0;

	if (m->variable_count > MIGRATE_MODULE_VARIABLES_MAX)
		return -E2BIG;
	do {
		size_t head = offset ? 0 : addresses;
		uint64_t piece = m->image_bytes - offset;
		struct migrate_module rec = {
			.id = m->id,
			.variable_count = m->variable_count,
			.variables_handle = m->variables_handle,
			.variables_va = m->variables_va,
			.variables_bytes = m->variables_bytes,
			.image_bytes = m->image_bytes,
			.image_offset = offset,
		};

		if (piece > MIGRATE_DATA_MAX - head)
			piece = MIGRATE_DATA_MAX - head;
		rec.piece_bytes = piece;
		memcpy(e->piece, m->variable_va, head);
		memcpy(e->piece + head, (const uint8_t *)m->image + offset, (size_t)piece);
		err = migrate_write(&e->stream, MIGRATE_REC_MODULE, &rec, sizeof(rec), e->piece,
		                    head + (size_t)piece);
		offset += piece;
	} while (!err && offset < m->image_bytes);
	return err;
}

/* The VM's modules (the mailbox worker is paused: none comes or goes). */
static int send_modules(struct migrate_export *e)
{
	struct vgpu_core_module_desc *modules = NULL;
	size_t count = 0;
	int err = vgpu_core_vm_modules(e->dev->vm, &modules, &count, NULL); /* -ENOMEM */

	for (size_t i = 0; i < count && !err; i++)
		err = send_module(e, &modules[i]);
	vgpu_core_module_descs_free(modules, count);
	return err;
}

/* The stopped channels, the modules and the device, handles, END. */
static int send_state(struct migrate_export *e)
{
	struct vgpud_device *dev = e->dev;
	uint32_t *guest = NULL;
	uint64_t *core = NULL;
	struct migrate_handle *h = NULL;
	uint32_t n;
	int err = 0;

	for (uint32_t i = 0; i < VGPU_MAX_CHANNELS && !err; i++) {
		struct channel_window *win = dev->windows[i];
		struct migrate_channel c;
		uint8_t *control, *gpfifo, *host, *buf;
		size_t len;

		if (!win)
			continue;
		memset(&c, 0, sizeof(c));
		c.index = i;
		c.gpfifo_entries = win->info.layout.gpfifo_entries;
		err = vgpu_core_channel_guest_state(win->channel, &c.guest_put, &c.guest_get);
		if (err)
			break;
		channel_window_migration_pages(win, &control, &gpfifo, &host);
		c.control_bytes = win->control_bytes;
		c.gpfifo_bytes = win->gpfifo_bytes;
		c.host_bytes = host ? (uint32_t)win->host_bytes : 0;
		len = (size_t)c.control_bytes + c.gpfifo_bytes + c.host_bytes;
		if (sizeof(c) + len > MIGRATE_RECORD_MAX || !control) {
			err = -E2BIG;
			break;
		}
		buf = malloc(len);
		if (!buf) {
			err = -ENOMEM;
			break;
		}
		memcpy(buf, control, c.control_bytes);
		memcpy(buf + c.control_bytes, gpfifo, c.gpfifo_bytes);
		if (c.host_bytes)
			memcpy(buf + c.control_bytes + c.gpfifo_bytes, host, c.host_bytes);
		err = migrate_write(&e->stream, MIGRATE_REC_CHANNEL, &c, sizeof(c), buf, len);
		free(buf);
	}
	if (!err)
		err = send_modules(e);
	if (!err) {
		struct migrate_device m = {
			.irq_status = atomic_load(&dev->irq_status),
			.irq_mask = atomic_load(&dev->irq_mask),
			.fence_channels = atomic_load(&dev->fence_channels),
			.error_channels = atomic_load(&dev->error_channels),
			.features = dev->features,
			.hello_done = dev->hello_done,
			.mailbox_bytes = VGPU_MAILBOX_SIZE,
			.req_tail = dev->server.req_tail,
			.resp_head = dev->server.resp_head,
		};

		err = migrate_write(&e->stream, MIGRATE_REC_DEVICE, &m, sizeof(m), dev->mailbox,
		                    VGPU_MAILBOX_SIZE);
	}
	n = dev->handles.live;
	if (!err && (size_t)n * sizeof(*h) + sizeof(struct migrate_handles) > MIGRATE_RECORD_MAX)
		err = -E2BIG;
	if (!err) {
		guest = calloc(n ? n : 1, sizeof(*guest));
		core = calloc(n ? n : 1, sizeof(*core));
		h = calloc(n ? n : 1, sizeof(*h));
		if (!guest || !core || !h)
			err = -ENOMEM;
	}
	if (!err) {
		struct migrate_handles hs = { .count = n };

		handle_table_entries(&dev->handles, guest, core, n);
		for (uint32_t i = 0; i < n; i++)
			h[i] = (struct migrate_handle){ .guest = guest[i], .core = core[i] };
		err = migrate_write(&e->stream, MIGRATE_REC_HANDLES, &hs, sizeof(hs), h,
		                    n * sizeof(*h));
	}
	free(guest);
	free(core);
	free(h);
	if (!err) {
		struct migrate_end end = { .records = e->stream.records };

		err = migrate_write(&e->stream, MIGRATE_REC_END, &end, sizeof(end), NULL, 0);
	}
	return err;
}

/* The destination's verdict on the stream. */
static int await_import(struct migrate_export *e, struct vgpu_error *error)
{
	struct vgpu_local_msg reply;
	int err = vgpu_local_recv(e->reply_fd, &reply, IMPORT_REPLY_TIMEOUT_MS);

	if (err)
		return vgpu_error_set(error, err, "the destination did not confirm the import: %s",
		                      strerror(-err));
	vgpu_local_msg_close_fds(&reply);
	if (vgpu_local_msg_expect(&reply, VGPU_LOCAL_IMPORT, true,
	                          sizeof(struct vgpu_local_import_reply), 0)) {
		return vgpu_error_set(error, -EPROTO,
		                      "the destination sent a malformed IMPORT reply");
	}
	if (reply.payload.import_reply.status) {
		int status = reply.payload.import_reply.status;

		reply.payload.import_reply.message[VGPU_LOCAL_MESSAGE_MAX - 1] = '\0';
		return vgpu_error_set(error, status < 0 ? status : -EPROTO,
		                      "the destination refused the VM: %s",
		                      reply.payload.import_reply.message);
	}
	return 0;
}

static int finish(struct migrate_export *e, struct migrate_result *result, bool hold,
                  struct vgpu_error *error)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT, logged = VGPU_ERROR_INIT;
	struct vgpud_device *dev = e->dev;
	uint64_t stop_ns, precopy_bytes, t_stopped, t_harvested, t_data, t_state, dirtied = 0;
	uint64_t pending_at_stop;
	int err;

	if (!error)
		error = &logged; /* the log line below says why */
	atomic_store(&e->keep_stopped, true);
	stop_thread(e);
	memset(result, 0, sizeof(*result));
	if (e->thread_error) {
		if (vgpu_core_vm_channels_stopped(dev->vm))
			vgpu_core_vm_start_channels(dev->vm, NULL);
		err = vgpu_error_set(error, e->thread_error, "VM '%s': %s; it runs on here",
		                     dev->name, e->thread_why);
		release(e);
		return err;
	}
	precopy_bytes = e->stream.bytes;
	pending_at_stop = atomic_load(&e->pending_bytes);
	stop_ns = vgpu_monotonic_ns();
	vgpu_device_pause_worker(dev);
	/* a paused GPU (the throttle's) stays stopped from the pre-copy on */
	err = vgpu_core_vm_channels_stopped(dev->vm) ? 0 : vgpu_core_vm_stop_channels(dev->vm,
	                                                                              &core_error);
	if (err) {
		vgpu_error_set(error, err, "VM '%s': cannot stop its channels: %s", dev->name,
		               vgpu_error_msg(&core_error));
		vgpu_device_resume_worker(dev);
		release(e);
		return err;
	}
	t_stopped = vgpu_monotonic_ns();
	/* without tracking everything goes now; with it, what is dirty */
	dirtied = atomic_load(&e->dirtied_bytes);
	err = harvest(e, true);
	dirtied = atomic_load(&e->dirtied_bytes) - dirtied;
	t_harvested = vgpu_monotonic_ns();
	if (!err)
		err = send_pending(e, true);
	t_data = vgpu_monotonic_ns();
	if (!err)
		err = send_state(e);
	t_state = vgpu_monotonic_ns();
	if (err)
		vgpu_error_set(error, err, "VM '%s': cannot write the stream: %s", dev->name,
		               err == -EPIPE ? "the destination closed it" : strerror(-err));
	else if (e->reply_fd >= 0)
		err = await_import(e, error);
	if (err) {
		vgpu_core_vm_start_channels(dev->vm, NULL);
		vgpu_device_resume_worker(dev);
		log_info("VM '%s': export failed (%s); it runs on here", dev->name,
		         vgpu_error_msg(error));
		release(e);
		return err;
	}
	/* Gone to the destination (or saved): nothing of it runs here again,
	 * or, held, until migrate_export_thaw. */
	atomic_store(&dev->migrated, true);
	if (!hold) {
		atomic_store(&dev->status, VGPU_STATUS_BACKEND_GONE);
		for (uint32_t i = 0; i < VGPU_MAX_CHANNELS; i++)
			if (dev->windows[i])
				vgpu_hal_channel_kill(
					vgpu_core_channel_hal(dev->windows[i]->channel),
					VGPU_FAULT_TIMEOUT);
	}
	result->dirty_tracking = e->tracking;
	result->rounds = atomic_load(&e->rounds);
	result->bytes_sent = e->stream.bytes;
	result->precopy_bytes = precopy_bytes;
	result->downtime_ns = vgpu_monotonic_ns() - stop_ns;
	result->total_ns = vgpu_monotonic_ns() - e->start_ns;
	{
		struct vgpu_vm_stats stats;

		vgpu_core_vm_stats(dev->vm, &stats);
		result->vm_bytes = stats.allocated_bytes;
	}
	log_info("VM '%s' exported: %llu bytes in %u pre-copy rounds%s, downtime %.1f ms "
	         "(stop %.1f, harvest %.1f, %llu KiB pending + %llu KiB dirty: %.1f, channels "
	         "and device %.1f, destination %.1f; GPU throttled %u%%, %.0f ms)",
	         dev->name, (unsigned long long)result->bytes_sent, result->rounds,
	         e->tracking ? "" : " (no dirty tracking: stop-and-copy)",
	         result->downtime_ns / 1e6, (t_stopped - stop_ns) / 1e6,
	         (t_harvested - t_stopped) / 1e6, (unsigned long long)pending_at_stop >> 10,
	         (unsigned long long)dirtied >> 10, (t_data - t_harvested) / 1e6,
	         (t_state - t_data) / 1e6, (vgpu_monotonic_ns() - t_state) / 1e6,
	         atomic_load(&e->throttle_pct), e->throttled_ns / 1e6);
	release(e);
	return 0;
}

int migrate_export_finish(struct migrate_export *e, struct migrate_result *result,
                          struct vgpu_error *error)
{
	return finish(e, result, false, error);
}

int migrate_export_finish_held(struct migrate_export *e, struct migrate_result *result,
                               struct vgpu_error *error)
{
	return finish(e, result, true, error);
}

void migrate_export_thaw(struct vgpud_device *dev)
{
	struct vgpu_error core_error = VGPU_ERROR_INIT;
	if (!atomic_load(&dev->migrated))
		return;
	atomic_store(&dev->migrated, false);
	if (vgpu_core_vm_start_channels(dev->vm, &core_error))
		log_warn("VM '%s': cannot restart its channels: %s", dev->name,
		         vgpu_error_msg(&core_error));
	vgpu_device_resume_worker(dev);
	/* what completed while it was held */
	vgpu_device_raise(dev, atomic_load(&dev->irq_status) |
	                       (atomic_load(&dev->fence_channels) ? VGPU_IRQ_FENCE : 0));
	log_info("VM '%s': its migration failed after the stop; it runs on here", dev->name);
}

int migrate_connect(const char *socket_path, const char *vm_name, int *stream_fd,
                    int *reply_fd, struct vgpu_error *error)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct vgpu_local_import im;
	int pair[2], sock, err;

	if (strlen(socket_path) >= sizeof(addr.sun_path) || strlen(vm_name) >= sizeof(im.vm_name))
		return vgpu_error_set(error, -ENAMETOOLONG,
		                      "the destination socket path or the VM name is too long");
	strcpy(addr.sun_path, socket_path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		vgpu_error_set(error, err, "cannot connect to the destination vgpud at %s: %s",
		               socket_path, strerror(-err));
		if (sock >= 0)
			close(sock);
		return err;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		err = -errno;
		close(sock);
		return vgpu_error_set(error, err, "cannot create the stream: %s", strerror(-err));
	}
	memset(&im, 0, sizeof(im));
	im.protocol_version = VGPU_LOCAL_PROTOCOL_VERSION;
	im.protocol_minor = VGPU_LOCAL_PROTOCOL_MINOR;
	strcpy(im.vm_name, vm_name);
	err = vgpu_local_send(sock, VGPU_LOCAL_IMPORT, 1, 0, &im, sizeof(im), &pair[1], 1, 10000);
	close(pair[1]);
	if (err) {
		close(sock);
		close(pair[0]);
		return vgpu_error_set(error, err, "cannot send IMPORT to %s: %s", socket_path,
		                      strerror(-err));
	}
	*stream_fd = pair[0];
	*reply_fd = sock;
	return 0;
}
