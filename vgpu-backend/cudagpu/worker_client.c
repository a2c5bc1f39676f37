// SPDX-License-Identifier: MIT
/*
 * worker_client.c - process isolation, vgpud's side: starting a worker
 * process for an address space, its requests, its reader thread, and
 * losing it (see worker_client.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/util.h"
#include "worker_client.h"
#include "module.h"

extern char **environ;

#define READER_POLL_MS 100

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ the binary */

static bool executable(const char *path)
{
	return path && *path && access(path, X_OK) == 0;
}

int cg_worker_path(const struct cudagpu_config *config, char *buf, size_t len)
{
	const char *env = getenv("VGPU_GPU_WORKER");
	char self[PATH_MAX];
	ssize_t n;

	if (executable(env)) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	if (executable(config->worker_path)) {
		snprintf(buf, len, "%s", config->worker_path);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			slash[1] = '\0';
			snprintf(buf, len, "%svgpu-gpu-worker", self);
			if (executable(buf))
				return 0;
		}
	}
#ifdef VGPU_GPU_WORKER_INSTALLED
	if (executable(VGPU_GPU_WORKER_INSTALLED)) {
		snprintf(buf, len, "%s", VGPU_GPU_WORKER_INSTALLED);
		return 0;
	}
#endif
	return -ENOENT;
}

/* ------------------------------------------------------------ a worker */

int cg_worker_new(struct cudagpu *gpu, struct cg_as *as, struct cg_worker **out)
{
	struct cg_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->gpu = gpu;
	w->as = as;
	w->status_fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	w->status_bytes = cg_worker_status_bytes(gpu->config.max_channels);
	w->vram_sent = calloc(gpu->vram_pages ? gpu->vram_pages : 1, 1);
	w->status_fd = memfd_create("cudagpu-worker-status", MFD_CLOEXEC);
	if (!w->vram_sent || w->status_fd < 0 ||
	    ftruncate(w->status_fd, (off_t)w->status_bytes) < 0)
		goto fail;
	w->status = mmap(NULL, w->status_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->status_fd,
	                 0);
	if (w->status == MAP_FAILED) {
		w->status = NULL;
		goto fail;
	}
	w->status->current_channel = -1;
	*out = w;
	return 0;
fail:
	if (w->status_fd >= 0)
		close(w->status_fd);
	free(w->vram_sent);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return -ENOMEM;
}

/* remote_lock held: fold the status page's counters into the retired ones
 * and clear it for the next life. */
static void retire_counters(struct cg_worker *w)
{
	struct cg_worker_status *s = w->status;
	unsigned t;

	for (t = 0; t < VGPU_TARGET_COUNT; t++) {
		w->retired.bytes_read[t] += load64(&s->counters.bytes_read[t]);
		w->retired.bytes_written[t] += load64(&s->counters.bytes_written[t]);
	}
	for (t = 0; t < VGPU_ENGINE_COUNT; t++) {
		w->retired.busy_ns[t] += load64(&s->counters.busy_ns[t]);
		w->retired.resident_wall_ns[t] += load64(&s->counters.resident_wall_ns[t]);
	}
	w->gpu->retired_busy_ns += load64(&s->busy_ns[VGPU_ENGINE_COMPUTE]);
	memset(s, 0, w->status_bytes);
	s->current_channel = -1;
}

/* ------------------------------------------------------ the reader thread */

/* SIGKILL the life's process unless it was reaped (its pid may be another
 * process's by then). */
static void life_kill(struct cg_life *life)
{
	pthread_mutex_lock(&life->reply_lock);
	if (!life->gone && life->pid > 0)
		kill(life->pid, SIGKILL);
	life->ending = true;
	pthread_mutex_unlock(&life->reply_lock);
}

/* An event of the life's channel: to vgpud's ids, and the channel's state.
 * False when nothing is to be delivered. */
static bool translate(struct cg_life *life, struct vgpu_hal_event *event)
{
	struct cudagpu *gpu = life->worker->gpu;
	struct cg_remote_channel *ch;
	bool deliver = true;

	if (event->type == VGPU_EVENT_COPY_DONE)
		return false; /* the worker does no copies */
	if (event->channel_id >= gpu->config.max_channels)
		return false;
	pthread_mutex_lock(&gpu->remote_lock);
	ch = life->by_local[event->channel_id];
	if (!ch) {
		deliver = false;
	} else {
		event->channel_id = ch->id;
		if (event->type == VGPU_EVENT_CHANNEL_ERROR) {
			if (!ch->error) {
				ch->error = true;
				ch->last_error = *event;
			}
			deliver = !ch->error_reported;
			ch->error_reported = true;
		}
	}
	pthread_mutex_unlock(&gpu->remote_lock);
	return deliver;
}

struct queued_event {
	struct vgpu_hal_event event;
	struct queued_event *next;
};

struct cg_event_queue {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct queued_event *head, **tail;
	bool stopping;
	pthread_t thread;
};

static void *delivery_main(void *arg)
{
	struct cudagpu *gpu = arg;
	struct cg_event_queue *q = gpu->remote_events;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct queued_event *e = q->head;

		if (!e) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->wake, &q->lock);
			continue;
		}
		q->head = e->next;
		if (!q->head)
			q->tail = &q->head;
		pthread_mutex_unlock(&q->lock);
		pthread_mutex_lock(&gpu->handler_lock);
		if (gpu->handler)
			gpu->handler(gpu->handler_ctx, &e->event);
		pthread_mutex_unlock(&gpu->handler_lock);
		free(e);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int cg_events_start(struct cudagpu *gpu)
{
	struct cg_event_queue *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	q->tail = &q->head;
	gpu->remote_events = q;
	err = pthread_create(&q->thread, NULL, delivery_main, gpu);
	if (err) {
		gpu->remote_events = NULL;
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->wake);
		free(q);
		return -err;
	}
	return 0;
}

void cg_events_stop(struct cudagpu *gpu)
{
	struct cg_event_queue *q = gpu->remote_events;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true; /* what is queued is still delivered */
	pthread_cond_broadcast(&q->wake);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->wake);
	free(q);
	gpu->remote_events = NULL;
}

static void deliver(struct cudagpu *gpu, const struct vgpu_hal_event *events, unsigned n)
{
	struct cg_event_queue *q = gpu->remote_events;
	unsigned i;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n; i++) {
		struct queued_event *e = malloc(sizeof(*e));

		if (!e)
			break; /* the state stays queryable (vgpu_hal_channel_state) */
		e->event = events[i];
		e->next = NULL;
		*q->tail = e;
		q->tail = &e->next;
	}
	pthread_cond_broadcast(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

/* The life is over: every channel it ran goes to error (one event each),
 * its counters are retired. */
static void lose(struct cg_life *life)
{
	struct cudagpu *gpu = life->worker->gpu;
	struct vgpu_hal_event *events = calloc(gpu->config.max_channels, sizeof(*events));
	unsigned n = 0;
	uint32_t id;

	pthread_mutex_lock(&gpu->remote_lock);
	for (id = 0; id < gpu->config.max_channels; id++) {
		struct cg_remote_channel *ch = life->by_local[id];

		if (!ch)
			continue;
		life->by_local[id] = NULL;
		ch->last_gp_get = cg_worker_channel_gp_get(life->worker, ch);
		ch->life = NULL;
		if (!ch->error) {
			ch->error = true;
			ch->last_error = (struct vgpu_hal_event){
				.type = VGPU_EVENT_CHANNEL_ERROR, .channel_id = ch->id,
				.cause = life->cause,
			};
		}
		if (!ch->error_reported) {
			ch->error_reported = true;
			if (events)
				events[n++] = ch->last_error;
		}
	}
	retire_counters(life->worker);
	pthread_mutex_unlock(&gpu->remote_lock);
	deliver(gpu, events, n);
	free(events);
}

static void *reader_main(void *arg)
{
	struct cg_life *life = arg;
	struct cg_worker *w = life->worker;
	uint64_t beat = load64(&w->status->heartbeat), beat_ns = vgpu_monotonic_ns();
	uint64_t timeout_ns = (uint64_t)w->gpu->config.worker_timeout_ms * 1000000u;

	for (;;) {
		union {
			struct cg_wire_reply reply;
			struct cg_wire_event event;
			uint32_t kind;
		} m;
		unsigned nfds;
		long n = cg_wire_recv(life->sock, &m, sizeof(m), NULL, 0, &nfds, READER_POLL_MS);
		uint64_t now = vgpu_monotonic_ns(), seen = load64(&w->status->heartbeat);

		if (seen != beat) {
			beat = seen;
			beat_ns = now;
		} else if (now - beat_ns > timeout_ns) {
			/* Hung: handled as killed. */
			life_kill(life);
			beat_ns = now;
		}
		if (n == -ETIMEDOUT || n == -EMSGSIZE)
			continue;
		if (n <= 0)
			break;
		if (m.kind == CG_WIRE_REPLY && (size_t)n >= sizeof(m.reply)) {
			pthread_mutex_lock(&life->reply_lock);
			life->reply = m.reply;
			life->reply_ready = true;
			pthread_cond_broadcast(&life->reply_cond);
			pthread_mutex_unlock(&life->reply_lock);
		} else if (m.kind == CG_WIRE_EVENT && (size_t)n >= sizeof(m.event)) {
			if (translate(life, &m.event.event))
				deliver(w->gpu, &m.event.event, 1);
		} else if (m.kind == CG_WIRE_LOST && (size_t)n >= sizeof(m.event)) {
			pthread_mutex_lock(&life->reply_lock);
			life->cause = m.event.event.cause;
			life->ending = true; /* it exits next */
			pthread_mutex_unlock(&life->reply_lock);
		}
	}
	/* The end: make sure of it, reap, then tell the waiting request and
	 * the channels. */
	pthread_mutex_lock(&life->reply_lock);
	kill(life->pid, SIGKILL);
	while (waitpid(life->pid, NULL, 0) < 0 && errno == EINTR)
		;
	life->gone = true;
	pthread_cond_broadcast(&life->reply_cond);
	pthread_mutex_unlock(&life->reply_lock);
	lose(life);
	return NULL;
}

/* ------------------------------------------------------------ lives */

static void life_free(struct cg_life *life)
{
	if (life->sock >= 0)
		close(life->sock);
	pthread_mutex_destroy(&life->reply_lock);
	pthread_cond_destroy(&life->reply_cond);
	free(life->by_local);
	free(life);
}

bool cg_worker_alive(struct cg_worker *w)
{
	bool alive;

	if (!w->life)
		return false;
	pthread_mutex_lock(&w->life->reply_lock);
	alive = !w->life->gone && !w->life->ending;
	pthread_mutex_unlock(&w->life->reply_lock);
	return alive;
}

void cg_worker_kill(struct cg_worker *w)
{
	if (w->life)
		life_kill(w->life);
}

/* w->lock held: wait for the current life's end (it was killed or told to
 * go) and forget everything it had been sent. */
static void reap(struct cg_worker *w)
{
	struct cg_life *life = w->life;

	if (!life)
		return;
	if (life->reader_started)
		pthread_join(life->reader, NULL);
	else if (life->pid > 0) {
		kill(life->pid, SIGKILL);
		while (waitpid(life->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	w->life = NULL;
	life_free(life);
	memset(w->vram_sent, 0, w->gpu->vram_pages ? w->gpu->vram_pages : 1);
	w->iova_count = 0;
	w->buf_count = 0;
}

static int spawn(struct cg_worker *w, struct cg_life *life)
{
	posix_spawn_file_actions_t actions;
	char path[PATH_MAX];
	char *argv[] = { path, NULL };
	int sv[2], child, err;

	err = cg_worker_path(&w->gpu->config, path, sizeof(path));
	if (err)
		return err;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	life->sock = sv[0];
	child = sv[1];
	if (child == CG_WORKER_SOCKET_FD) {
		/* dup2 onto itself would keep close-on-exec */
		child = fcntl(sv[1], F_DUPFD_CLOEXEC, CG_WORKER_SOCKET_FD + 1);
		close(sv[1]);
		if (child < 0)
			return -errno;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, child, CG_WORKER_SOCKET_FD);
	err = posix_spawn(&life->pid, path, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(child);
	if (err) {
		life->pid = 0;
		return -err;
	}
	return 0;
}

/* w->lock held: the page table, as mappings, into the new life. */
struct replay_run {
	uint64_t va;
	uint32_t page_size;
	enum vgpu_hal_target target;
	uint32_t flags;
	uint64_t count, capacity;
	uint64_t *addresses;
};

static int replay_flush(struct cg_worker *w, struct replay_run *run)
{
	int err = 0;

	if (run->count)
		err = cg_worker_map(w, run->va, run->page_size, run->count, run->target,
		                    run->addresses, run->flags);
	run->count = 0;
	return err;
}

static int replay_add(struct replay_run **runs, size_t *nruns, uint64_t va, uint32_t page_size,
                      enum vgpu_hal_target target, uint32_t flags, uint64_t address)
{
	struct replay_run *last = *nruns ? &(*runs)[*nruns - 1] : NULL;

	if (!last || last->page_size != page_size || last->target != target ||
	    last->flags != flags || last->va + last->count * page_size != va ||
	    last->count == CG_WIRE_MAX_WORDS) {
		struct replay_run *grown = realloc(*runs, (*nruns + 1) * sizeof(**runs));

		if (!grown)
			return -ENOMEM;
		*runs = grown;
		last = &grown[(*nruns)++];
		*last = (struct replay_run){ .va = va, .page_size = page_size, .target = target,
		                             .flags = flags };
	}
	if (last->count == last->capacity) {
		uint64_t capacity = last->capacity ? 2 * last->capacity : 16;
		uint64_t *grown = realloc(last->addresses, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		last->addresses = grown;
		last->capacity = capacity;
	}
	last->addresses[last->count++] = address;
	return 0;
}

static int replay(struct cg_worker *w)
{
	struct cudagpu *gpu = w->gpu;
	struct cg_as *as = w->as;
	struct replay_run *runs = NULL;
	size_t nruns = 0, i;
	uint64_t leaf, s, p;
	int err = 0;

	/* A snapshot first (memory_lock), the requests after: as_map and
	 * as_unmap of this address space wait for w->lock, held here. */
	pthread_mutex_lock(&gpu->memory_lock);
	for (leaf = 0; !err && leaf < CG_LEAVES; leaf++) {
		if (!as->leaves[leaf])
			continue;
		for (s = 0; !err && s < CG_SLOTS_PER_LEAF; s++) {
			const struct cg_slot *slot = &as->leaves[leaf][s];
			uint64_t va = (leaf * CG_SLOTS_PER_LEAF + s) * CG_PAGE;

			if (slot->kind == CG_SLOT_SMALL) {
				for (p = 0; !err && p < CG_SMALL_PER_SLOT; p++) {
					const struct cg_small_pte *pte = &slot->small[p];

					if (pte->valid)
						err = replay_add(&runs, &nruns, va + p * CG_SMALL_PAGE,
						                 CG_SMALL_PAGE, pte->target, pte->flags,
						                 pte->iova);
				}
			} else if (slot->kind != CG_SLOT_NONE) {
				err = replay_add(&runs, &nruns, va, CG_PAGE, slot->target, slot->flags,
				                 slot->address);
			}
		}
	}
	pthread_mutex_unlock(&gpu->memory_lock);
	for (i = 0; i < nruns; i++) {
		if (!err)
			err = replay_flush(w, &runs[i]);
		free(runs[i].addresses);
	}
	free(runs);
	return err;
}

int cg_worker_ensure(struct cg_worker *w)
{
	struct cudagpu *gpu = w->gpu;
	struct cudagpu_config config = gpu->config;
	uint64_t words[(sizeof(config) + 7) / 8];
	struct cg_wire_msg hello = { .op = CG_OP_HELLO, .count = sizeof(words) / 8 };
	struct cg_wire_reply reply;
	struct cg_life *life;
	int err;

	if (cg_worker_alive(w))
		return 0;
	reap(w);
	life = calloc(1, sizeof(*life));
	if (!life)
		return -ENOMEM;
	life->worker = w;
	life->sock = -1;
	life->cause = VGPU_FAULT_TIMEOUT;
	pthread_mutex_init(&life->reply_lock, NULL);
	pthread_cond_init(&life->reply_cond, NULL);
	life->by_local = calloc(gpu->config.max_channels, sizeof(*life->by_local));
	if (!life->by_local) {
		life_free(life);
		return -ENOMEM;
	}
	pthread_mutex_lock(&gpu->remote_lock);
	retire_counters(w); /* (nothing since the last life) */
	pthread_mutex_unlock(&gpu->remote_lock);
	w->life = life;
	err = spawn(w, life);
	if (!err) {
		err = -pthread_create(&life->reader, NULL, reader_main, life);
		life->reader_started = !err;
	}
	if (!err) {
		config.worker_path = NULL;
		memset(words, 0, sizeof(words));
		memcpy(words, &config, sizeof(config));
		hello.a[0] = gpu->vram_pages;
		err = cg_worker_call(w, &hello, words, &w->status_fd, 1, &reply);
		if (!err && reply.status)
			err = reply.status;
	}
	if (!err)
		err = replay(w);
	if (!err)
		err = cg_worker_send_modules(w);
	if (err) {
		life_kill(life);
		reap(w);
		return err;
	}
	return 0;
}

void cg_worker_free(struct cg_worker *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->life) {
		/* End of file tells the worker to go; the reader reaps it. */
		shutdown(w->life->sock, SHUT_WR);
		reap(w);
	}
	pthread_mutex_unlock(&w->lock);
	cg_worker_free_modules(w);
	munmap(w->status, w->status_bytes);
	close(w->status_fd);
	free(w->vram_sent);
	free(w->iovas);
	free(w->bufs);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* ------------------------------------------------------------ requests */

static bool wants_reply(uint32_t op)
{
	return op == CG_OP_HELLO || op == CG_OP_AS_MAP || op == CG_OP_AS_UNMAP ||
	       op == CG_OP_IOMMU_REMOVE ||
	       op == CG_OP_CHANNEL_CREATE || op == CG_OP_CHANNEL_DESTROY ||
	       op == CG_OP_CHANNEL_FETCH || op == CG_OP_CHANNEL_KILL || op == CG_OP_CHANNEL_PRIV ||
	       op == CG_OP_MODULE_BIND || op == CG_OP_MODULE_UNBIND;
}

int cg_worker_call(struct cg_worker *w, const struct cg_wire_msg *msg, const uint64_t *words,
                   const int *fds, unsigned nfds, struct cg_wire_reply *reply)
{
	struct cg_life *life = w->life;
	int timeout_ms = (int)w->gpu->config.worker_timeout_ms;
	struct timespec until;
	int err;

	if (!life)
		return -EPIPE;
	pthread_mutex_lock(&life->reply_lock);
	err = life->gone ? -EPIPE : 0;
	life->reply_ready = false;
	pthread_mutex_unlock(&life->reply_lock);
	if (err)
		return err;
	err = cg_wire_send(life->sock, msg, sizeof(*msg), words, msg->count, fds, nfds, timeout_ms);
	if (err) {
		life_kill(life); /* hung or gone: lost either way */
		return err == -ETIMEDOUT ? err : -EPIPE;
	}
	if (!wants_reply(msg->op))
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&life->reply_lock);
	while (!life->reply_ready && !life->gone && !err)
		err = -pthread_cond_timedwait(&life->reply_cond, &life->reply_lock, &until);
	if (life->reply_ready) {
		*reply = life->reply;
		err = 0;
	} else if (!err) {
		err = -EPIPE;
	}
	pthread_mutex_unlock(&life->reply_lock);
	if (err == -ETIMEDOUT)
		life_kill(life); /* no answer in time: hung */
	return err;
}

/* ------------------------------------------------------------ imports */

static bool iova_sent(struct cg_worker *w, uint64_t iova, size_t *at)
{
	size_t lo = 0, hi = w->iova_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->iovas[mid] < iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < w->iova_count && w->iovas[lo] == iova;
}

static int remember_iova(struct cg_worker *w, uint64_t iova)
{
	size_t at;

	if (iova_sent(w, iova, &at))
		return 0;
	if (w->iova_count == w->iova_capacity) {
		size_t capacity = w->iova_capacity ? 2 * w->iova_capacity : 64;
		uint64_t *grown = realloc(w->iovas, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		w->iovas = grown;
		w->iova_capacity = capacity;
	}
	memmove(&w->iovas[at + 1], &w->iovas[at], (w->iova_count - at) * sizeof(w->iovas[0]));
	w->iovas[at] = iova;
	w->iova_count++;
	return 0;
}

static bool buf_sent(struct cg_worker *w, const struct cg_host_buf *buf, size_t *at)
{
	size_t i;

	for (i = 0; i < w->buf_count; i++) {
		if (w->bufs[i] == buf) {
			*at = i;
			return true;
		}
	}
	return false;
}

static int remember_buf(struct cg_worker *w, struct cg_host_buf *buf)
{
	if (w->buf_count == w->buf_capacity) {
		size_t capacity = w->buf_capacity ? 2 * w->buf_capacity : 16;
		struct cg_host_buf **grown = realloc(w->bufs, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		w->bufs = grown;
		w->buf_capacity = capacity;
	}
	w->bufs[w->buf_count++] = buf;
	return 0;
}

static void close_all(int *fds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* VRAM pages the life lacks, exported and sent CG_WIRE_MAX_FDS at a time. */
static int send_vram(struct cg_worker *w, const uint64_t *addresses, uint64_t count)
{
	struct cudagpu *gpu = w->gpu;
	uint64_t pages[CG_WIRE_MAX_FDS];
	int fds[CG_WIRE_MAX_FDS];
	unsigned n = 0;
	uint64_t i;
	int err = 0;

	for (i = 0; !err && i <= count; i++) {
		if (i < count) {
			uint64_t page = addresses[i] / CG_PAGE;
			int fd;

			if (page >= gpu->vram_pages || w->vram_sent[page])
				continue;
			fd = cg_export(gpu, gpu->vram_handles[page]);
			if (fd < 0) {
				err = fd;
				break;
			}
			w->vram_sent[page] = 1; /* a page may repeat in addresses */
			pages[n] = page;
			fds[n++] = fd;
		}
		if (n && (n == CG_WIRE_MAX_FDS || i == count)) {
			struct cg_wire_msg msg = { .op = CG_OP_IMPORT_VRAM, .count = n };

			err = cg_worker_call(w, &msg, pages, fds, n, NULL);
			close_all(fds, n);
			n = 0;
		}
	}
	close_all(fds, n);
	return err;
}

/* A host buffer the life lacks: its handles (or memfd), in pieces. */
static int send_buf(struct cg_worker *w, struct cg_host_buf *buf)
{
	struct cg_wire_msg msg = {
		.op = CG_OP_IMPORT_HOST,
		.a = { (uint64_t)(uintptr_t)buf, buf->kind, buf->alloc_bytes, 0 },
	};
	int fds[CG_WIRE_MAX_FDS];
	uint64_t pages = buf->alloc_bytes / CG_PAGE, first;
	unsigned n;
	int err = 0;

	if (buf->kind == CG_HOST_REGISTERED)
		return cg_worker_call(w, &msg, NULL, &buf->memfd, 1, NULL);
	for (first = 0; !err && first < pages; first += n) {
		for (n = 0; n < CG_WIRE_MAX_FDS && first + n < pages; n++) {
			fds[n] = cg_export(w->gpu, buf->handles[first + n]);
			if (fds[n] < 0) {
				err = fds[n];
				break;
			}
		}
		msg.a[3] = first;
		if (!err)
			err = cg_worker_call(w, &msg, NULL, fds, n, NULL);
		close_all(fds, n);
	}
	return err;
}

/* The IOMMU mappings (and their buffers) behind SYSMEM addresses that the
 * life lacks. */
static int send_iommu(struct cg_worker *w, const uint64_t *addresses, uint64_t count)
{
	struct cudagpu *gpu = w->gpu;
	uint64_t i, last_iova = UINT64_MAX;
	int err = 0;

	for (i = 0; !err && i < count; i++) {
		struct cg_iommu_mapping m = { 0 };
		struct cg_wire_msg msg = { .op = CG_OP_IOMMU_ADD };
		const struct cg_iommu_mapping *found;
		size_t at;

		pthread_mutex_lock(&gpu->memory_lock);
		found = cg_iommu_find(gpu, addresses[i]);
		if (found)
			m = *found;
		pthread_mutex_unlock(&gpu->memory_lock);
		if (!found || m.iova == last_iova)
			continue; /* (the shadow refused what is not mapped) */
		last_iova = m.iova;
		if (iova_sent(w, m.iova, &at))
			continue;
		if (!buf_sent(w, m.buf, &at)) {
			err = send_buf(w, m.buf);
			if (!err)
				err = remember_buf(w, m.buf);
		}
		msg.a[0] = m.iova;
		msg.a[1] = m.bytes;
		msg.a[2] = (uint64_t)(uintptr_t)m.buf;
		msg.a[3] = m.offset;
		if (!err)
			err = cg_worker_call(w, &msg, NULL, NULL, 0, NULL);
		if (!err)
			err = remember_iova(w, m.iova);
	}
	return err;
}

int cg_worker_map(struct cg_worker *w, uint64_t va, uint32_t page_size, uint64_t count,
                  enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	uint64_t done;
	int err;

	err = target == VGPU_TARGET_VRAM ? send_vram(w, addresses, count)
	                                 : send_iommu(w, addresses, count);
	for (done = 0; !err && done < count;) {
		uint64_t n = count - done < CG_WIRE_MAX_WORDS ? count - done : CG_WIRE_MAX_WORDS;
		struct cg_wire_msg msg = {
			.op = CG_OP_AS_MAP, .count = (uint32_t)n,
			.a = { va + done * page_size, page_size, target, flags },
		};
		struct cg_wire_reply reply;

		err = cg_worker_call(w, &msg, addresses + done, NULL, 0, &reply);
		if (!err)
			err = reply.status;
		done += n;
	}
	return err;
}

void cg_worker_forget_iova(struct cg_worker *w, uint64_t iova, uint64_t bytes)
{
	struct cg_wire_msg msg = { .op = CG_OP_IOMMU_REMOVE, .a = { iova, bytes } };
	struct cg_wire_reply reply;
	size_t at;

	if (!iova_sent(w, iova, &at))
		return;
	memmove(&w->iovas[at], &w->iovas[at + 1], (w->iova_count - at - 1) * sizeof(w->iovas[0]));
	w->iova_count--;
	/* Waited for: once the IOMMU unmap returns, the worker's channels
	 * fault on the range (its submission thread does not race a removal
	 * still queued on the socket). A worker that does not answer is
	 * killed as hung, which ends its access too. */
	if (cg_worker_alive(w))
		cg_worker_call(w, &msg, NULL, NULL, 0, &reply);
}

void cg_worker_forget_buf(struct cg_worker *w, struct cg_host_buf *buf)
{
	struct cg_wire_msg msg = { .op = CG_OP_HOST_RELEASE, .a = { (uint64_t)(uintptr_t)buf } };
	size_t at;

	if (!buf_sent(w, buf, &at))
		return;
	w->bufs[at] = w->bufs[--w->buf_count];
	if (cg_worker_alive(w))
		cg_worker_call(w, &msg, NULL, NULL, 0, NULL);
}

bool cg_worker_channel_pending(struct cg_worker *w, const struct cg_remote_channel *ch)
{
	const uint8_t *pending = cg_worker_status_pending(w->status, w->gpu->config.max_channels);

	return __atomic_load_n(&pending[ch->local_id], __ATOMIC_RELAXED) != 0;
}

uint32_t cg_worker_channel_gp_get(struct cg_worker *w, const struct cg_remote_channel *ch)
{
	return __atomic_load_n(&cg_worker_status_gp_get(w->status)[ch->local_id],
	                       __ATOMIC_RELAXED);
}
