// SPDX-License-Identifier: MIT
/*
 * vgpu-gpu-worker - one VM's GPU process under cudagpu's process isolation
 * (vgpu/cudagpu.h, "Isolation"). vgpud execs it with its end of a socket
 * as descriptor 3 (worker_protocol.h) and the environment vgpud runs with
 * (VGPU_CUDA_LIBRARY included).
 *
 * It is a cudagpu in the worker role: its own CUDA context, one address
 * space (the VM's VA reservation), the physical allocations vgpud sends
 * (imported once each), the VM's channels and the submission thread that
 * runs them. Its main thread serves vgpud's requests; the submission
 * thread sends the channels' events and publishes the status page after
 * each round. When the context faults (a call returns a sticky error), it
 * says so (CG_WIRE_LOST) and exits at once: the context is unusable, and
 * vgpud starts a fresh worker for the VM when it needs one. At the end of
 * file it frees everything and exits 0.
 *
 * Not meant to be run by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudagpu_internal.h"
#include "module.h"
#include "worker_protocol.h"

#define POLL_MS 10

struct pending_host { /* a buffer whose handles are still arriving */
	uint64_t key;
	enum cg_host_kind kind;
	uint64_t alloc_bytes;
	int *fds;
	unsigned count, expected;
};

struct imported_host {
	uint64_t key;
	struct cg_host_buf *buf;
};

struct worker {
	int sock;
	pthread_mutex_t send_lock;
	struct cudagpu *gpu;
	struct vgpu_hal_as *as;
	struct vgpu_hal_channel **channels; /* by id */
	struct cg_worker_status *status;
	size_t status_bytes;
	struct pending_host pending;
	struct imported_host *hosts;
	size_t host_count, host_capacity;
	uint64_t heartbeat;
};

static void send_locked(struct worker *wk, const void *m, size_t bytes)
{
	pthread_mutex_lock(&wk->send_lock);
	cg_wire_send(wk->sock, m, bytes, NULL, 0, NULL, 0, -1);
	pthread_mutex_unlock(&wk->send_lock);
}

static void reply(struct worker *wk, int status, uint64_t value)
{
	struct cg_wire_reply r = { .kind = CG_WIRE_REPLY, .status = status, .value = value };

	send_locked(wk, &r, sizeof(r));
}

/* The submission thread's events, to vgpud. */
static void on_event(void *ctx, const struct vgpu_hal_event *event)
{
	struct worker *wk = ctx;
	struct cg_wire_event m = { .kind = CG_WIRE_EVENT, .event = *event };

	send_locked(wk, &m, sizeof(m));
}

static void store64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* After each round of the submission thread (pfifo_lock held). */
static void publish(struct cudagpu *gpu, void *ctx)
{
	struct worker *wk = ctx;
	struct cg_worker_status *s = wk->status;
	struct cg_as *as = (struct cg_as *)wk->as;
	uint32_t id;
	unsigned i;

	for (i = 0; i < VGPU_ENGINE_COUNT; i++)
		store64(&s->busy_ns[i], gpu->busy_ns[i]);
	if (as) {
		pthread_mutex_lock(&gpu->memory_lock);
		for (i = 0; i < VGPU_TARGET_COUNT; i++) {
			store64(&s->counters.bytes_read[i], as->counters.bytes_read[i]);
			store64(&s->counters.bytes_written[i], as->counters.bytes_written[i]);
		}
		for (i = 0; i < VGPU_ENGINE_COUNT; i++)
			store64(&s->counters.busy_ns[i], as->counters.busy_ns[i]);
		pthread_mutex_unlock(&gpu->memory_lock);
	}
	for (id = 0; id < gpu->config.max_channels; id++) {
		struct cg_channel *ch = gpu->channels[id];
		uint8_t pending = 0;

		if (ch && !ch->error) {
			uint32_t gp_put = le32toh(__atomic_load_n(
				cg_control_word(ch, VGPU_CONTROL_GP_PUT), __ATOMIC_ACQUIRE));

			pending = ch->running || ch->inflight > 0 || gp_put != ch->gp_get;
		}
		if (ch)
			__atomic_store_n(&cg_worker_status_gp_get(s)[id], ch->gp_get,
			                 __ATOMIC_RELAXED);
		__atomic_store_n(&cg_worker_status_pending(s, gpu->config.max_channels)[id], pending,
		                 __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->current_channel, (int64_t)gpu->current_channel, __ATOMIC_RELEASE);
}

/* Has the context faulted? A sticky error answers every call after one. */
static void check_context(struct worker *wk)
{
	cg_result r = wk->gpu->api.cuStreamQuery(wk->gpu->util_stream);
	struct cg_wire_event m = { .kind = CG_WIRE_LOST };

	__atomic_store_n(&wk->status->heartbeat, ++wk->heartbeat, __ATOMIC_RELAXED);
	if ((r == CG_SUCCESS || r == CG_ERROR_NOT_READY) && cg_function_watchdog_expired(wk->gpu))
		r = CG_ERROR_LAUNCH_TIMEOUT; /* a VM's kernel that does not end */
	if (r == CG_SUCCESS || r == CG_ERROR_NOT_READY)
		return;
	m.event.type = VGPU_EVENT_CHANNEL_ERROR;
	/* What the VM's kernel did (a fault of the built-in kernels or of a
	 * copy is an address the driver had no mapping for). */
	m.event.cause = cg_function_fault_cause(r);
	if (m.event.cause == VGPU_FAULT_BAD_KERNEL_ARGS)
		m.event.cause = VGPU_FAULT_KERNEL_ERROR;
	send_locked(wk, &m, sizeof(m));
	fprintf(stderr, "vgpu-gpu-worker %ld: the CUDA context faulted (error %d)\n",
	        (long)getpid(), r);
	_exit(3); /* the context is unusable: nothing to save */
}

/* MODULE_BIND: the image from its memfd, the variables' VAs as payload. */
static int bind_module(struct worker *wk, const struct cg_wire_msg *m, const uint64_t *words,
                       int fd)
{
	struct cg_as *as = (struct cg_as *)wk->as;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char *image;
	size_t bytes = m->a[1];
	int err;

	if (bytes == 0 || bytes > (256u << 20))
		return -EINVAL;
	image = malloc(bytes + 1);
	if (!image)
		return -ENOMEM;
	if (pread(fd, image, bytes, 0) != (ssize_t)bytes) {
		free(image);
		return -EIO;
	}
	image[bytes] = 0;
	err = cg_worker_module_load(wk->gpu, as, (uint32_t)m->a[0], image, bytes, words, m->count,
	                            &error);
	if (err) /* the edge: vgpud gets the errno, the sentence goes to the log */
		fprintf(stderr, "vgpu-gpu-worker %ld: module %u: %s\n", (long)getpid(),
		        (unsigned)m->a[0], vgpu_error_msg(&error));
	free(image);
	return err;
}

static struct vgpu_hal_channel *channel_at(struct worker *wk, uint64_t id)
{
	return id < wk->gpu->config.max_channels ? wk->channels[id] : NULL;
}

static struct imported_host *host_by_key(struct worker *wk, uint64_t key)
{
	size_t i;

	for (i = 0; i < wk->host_count; i++)
		if (wk->hosts[i].key == key)
			return &wk->hosts[i];
	return NULL;
}

static void close_fds(int *fds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

static void import_host(struct worker *wk, const struct cg_wire_msg *m, int *fds, unsigned nfds)
{
	struct pending_host *p = &wk->pending;
	struct cg_host_buf *buf;
	unsigned i;

	if (m->a[3] == 0) { /* a new buffer */
		close_fds(p->fds, p->count);
		free(p->fds);
		memset(p, 0, sizeof(*p));
		p->key = m->a[0];
		p->kind = (enum cg_host_kind)m->a[1];
		p->alloc_bytes = m->a[2];
		p->expected = p->kind == CG_HOST_NUMA ? (unsigned)(m->a[2] / CG_PAGE) : 1;
		p->fds = calloc(p->expected ? p->expected : 1, sizeof(*p->fds));
	}
	for (i = 0; i < nfds; i++) {
		if (p->fds && p->key == m->a[0] && p->count < p->expected && m->a[3] + i == p->count)
			p->fds[p->count++] = fds[i];
		else
			close(fds[i]);
	}
	if (!p->fds || p->count < p->expected)
		return;
	if (wk->host_count == wk->host_capacity) {
		size_t capacity = wk->host_capacity ? 2 * wk->host_capacity : 16;
		struct imported_host *grown = realloc(wk->hosts, capacity * sizeof(*grown));

		if (grown) {
			wk->hosts = grown;
			wk->host_capacity = capacity;
		}
	}
	if (wk->host_count < wk->host_capacity &&
	    cg_host_import(wk->gpu, p->kind, p->alloc_bytes, p->fds, p->count, &buf) == 0)
		wk->hosts[wk->host_count++] = (struct imported_host){ .key = p->key, .buf = buf };
	close_fds(p->fds, p->count);
	free(p->fds);
	memset(p, 0, sizeof(*p));
}

static void release_host(struct worker *wk, uint64_t key)
{
	struct imported_host *h = host_by_key(wk, key);

	if (!h)
		return;
	cg_host_free(&wk->gpu->base, &h->buf->base);
	*h = wk->hosts[--wk->host_count];
}

/* One request; its descriptors are this function's to close or keep. */
static void serve(struct worker *wk, const struct cg_wire_msg *m, const uint64_t *words,
                  int *fds, unsigned nfds)
{
	struct vgpu_hal_channel *ch = channel_at(wk, m->a[0]);
	struct vgpu_hal_channel_info info;
	struct imported_host *h;
	uint64_t ticket = 0;
	unsigned i;
	int ret;

	switch (m->op) {
	case CG_OP_IMPORT_VRAM:
		for (i = 0; i < nfds && i < m->count; i++)
			cg_vram_import(wk->gpu, words[i], fds[i]);
		close_fds(fds, nfds);
		break;
	case CG_OP_IMPORT_HOST:
		import_host(wk, m, fds, nfds);
		break;
	case CG_OP_IOMMU_ADD:
		h = host_by_key(wk, m->a[2]);
		if (h)
			cg_iommu_insert(wk->gpu, m->a[0], m->a[1], h->buf, m->a[3]);
		break;
	case CG_OP_IOMMU_REMOVE:
		/* answered: vgpud's unmap returns only once this worker's
		 * channels fault on the range */
		reply(wk, cg_iommu_unmap(&wk->gpu->base, m->a[0], m->a[1]), 0);
		break;
	case CG_OP_HOST_RELEASE:
		release_host(wk, m->a[0]);
		break;
	case CG_OP_AS_MAP:
		reply(wk, cg_as_map(wk->as, m->a[0], (uint32_t)m->a[1], m->count,
		                    (enum vgpu_hal_target)m->a[2], words, (uint32_t)m->a[3]), 0);
		break;
	case CG_OP_AS_UNMAP:
		reply(wk, cg_as_unmap(wk->as, m->a[0], m->a[1]), 0);
		break;
	case CG_OP_CHANNEL_CREATE:
		if (nfds != 1) {
			close_fds(fds, nfds);
			reply(wk, -EINVAL, 0);
			break;
		}
		ret = cg_channel_create_on(wk->as, (uint32_t)m->a[0], fds[0], &ch, &info);
		if (!ret) {
			/* nothing of a channel that had the id before */
			__atomic_store_n(&cg_worker_status_gp_get(wk->status)[info.id], 0,
			                 __ATOMIC_RELAXED);
			__atomic_store_n(&cg_worker_status_pending(wk->status,
			                                           wk->gpu->config.max_channels)[info.id],
			                 0, __ATOMIC_RELAXED);
			wk->channels[info.id] = ch;
		}
		reply(wk, ret, ret ? 0 : info.id);
		break;
	case CG_OP_CHANNEL_DESTROY:
		ret = -ENOENT;
		if (ch) {
			wk->channels[m->a[0]] = NULL;
			/* work still running: vgpud ends this worker */
			ret = cg_channel_destroy_settle(ch) ? 0 : -ETIMEDOUT;
		}
		reply(wk, ret, 0);
		break;
	case CG_OP_CHANNEL_FETCH:
		if (ch)
			cg_channel_set_fetch(ch, m->a[1] != 0);
		reply(wk, ch ? 0 : -ENOENT, 0);
		break;
	case CG_OP_CHANNEL_KILL:
		ret = -ENOENT;
		if (ch)
			ret = cg_channel_kill_settle(ch, (enum vgpu_hal_error_cause)m->a[1])
			              ? 0
			              : -ETIMEDOUT;
		reply(wk, ret, 0);
		break;
	case CG_OP_CHANNEL_PRIV:
		if (!ch)
			ret = -EIO;
		else if (m->a[3])
			ret = cg_channel_priv_nops(ch, (uint32_t)m->a[2]);
		else
			ret = cg_channel_priv_submit(ch, (enum vgpu_hal_priv_cmd)m->a[1], &ticket);
		reply(wk, ret, ticket);
		break;
	case CG_OP_CHANNEL_KICK:
		if (ch)
			cg_channel_kick(ch);
		break;
	case CG_OP_MODULE_BIND:
		ret = nfds == 1 ? bind_module(wk, m, words, fds[0]) : -EINVAL;
		close_fds(fds, nfds);
		reply(wk, ret, 0);
		break;
	case CG_OP_MODULE_UNBIND:
		reply(wk, cg_worker_module_unload(wk->gpu, (struct cg_as *)wk->as, (uint32_t)m->a[0]),
		      0);
		break;
	default:
		close_fds(fds, nfds);
		break;
	}
}

/* HELLO: the configuration, the status page; then the device and the
 * address space. */
static int start(struct worker *wk, struct vgpu_error *error)
{
	union {
		struct cg_wire_msg m;
		char bytes[sizeof(struct cg_wire_msg) + CG_WIRE_MAX_WORDS * 8];
	} in;
	struct cudagpu_config config;
	unsigned nfds;
	int fd = -1, err;
	long n = cg_wire_recv(wk->sock, &in, sizeof(in), &fd, 1, &nfds, -1);

	if (n < (long)(sizeof(in.m) + sizeof(config)) || in.m.op != CG_OP_HELLO || nfds != 1)
		return vgpu_error_set(error, -EPROTO, "no HELLO from vgpud");
	memcpy(&config, in.bytes + sizeof(in.m), sizeof(config));
	config.worker_path = NULL;
	wk->status_bytes = cg_worker_status_bytes(config.max_channels);
	wk->status = mmap(NULL, wk->status_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (wk->status == MAP_FAILED) {
		wk->status = NULL;
		return vgpu_error_set(error, -ENOMEM, "cannot map the status page");
	}
	wk->channels = calloc(config.max_channels ? config.max_channels : 1,
	                      sizeof(*wk->channels));
	if (!wk->channels)
		return vgpu_error_set(error, -ENOMEM, "out of memory for the channel table");
	err = cg_worker_gpu_create(&config, in.m.a[0], &wk->gpu, error);
	if (err)
		return err;
	wk->gpu->base.ops->set_event_handler(&wk->gpu->base, on_event, wk);
	err = cg_as_create(&wk->gpu->base, &wk->as);
	if (err)
		return vgpu_error_set(error, err, "cannot reserve the address space: %s",
		                      strerror(-err));
	pthread_mutex_lock(&wk->gpu->pfifo_lock);
	wk->gpu->round_hook_ctx = wk;
	wk->gpu->round_hook = publish;
	pthread_mutex_unlock(&wk->gpu->pfifo_lock);
	return 0;
}

static void finish(struct worker *wk)
{
	uint32_t id;

	if (wk->gpu) {
		pthread_mutex_lock(&wk->gpu->pfifo_lock);
		wk->gpu->round_hook = NULL;
		pthread_mutex_unlock(&wk->gpu->pfifo_lock);
		for (id = 0; wk->channels && id < wk->gpu->config.max_channels; id++)
			if (wk->channels[id])
				cg_channel_destroy(wk->channels[id]);
		if (wk->as) {
			cg_worker_modules_fini(wk->gpu, (struct cg_as *)wk->as);
			cg_as_destroy(wk->as);
		}
		wk->gpu->base.ops->destroy(&wk->gpu->base); /* host buffers too */
	}
	close_fds(wk->pending.fds, wk->pending.count);
	free(wk->pending.fds);
	free(wk->hosts);
	free(wk->channels);
	if (wk->status)
		munmap(wk->status, wk->status_bytes);
}

int main(void)
{
	static union {
		struct cg_wire_msg m;
		char bytes[sizeof(struct cg_wire_msg) + CG_WIRE_MAX_WORDS * 8];
	} in;
	struct worker wk = { .sock = CG_WORKER_SOCKET_FD };
	struct vgpu_error error = VGPU_ERROR_INIT;
	int err;

	/* Only the socket from vgpud: nothing else of its leaks in here. */
	close_range(CG_WORKER_SOCKET_FD + 1, ~0u, 0);
	pthread_mutex_init(&wk.send_lock, NULL);
	err = start(&wk, &error);
	reply(&wk, err, 0);
	if (err) { /* the edge: vgpud gets the errno, the sentence goes to the log */
		fprintf(stderr, "vgpu-gpu-worker: %s\n",
		        vgpu_error_is_set(&error) ? vgpu_error_msg(&error) : strerror(-err));
		finish(&wk);
		return 1;
	}
	for (;;) {
		int fds[CG_WIRE_MAX_FDS];
		unsigned nfds;
		long n = cg_wire_recv(wk.sock, &in, sizeof(in), fds, CG_WIRE_MAX_FDS, &nfds, POLL_MS);

		if (n == -ETIMEDOUT || n == -EMSGSIZE) {
			check_context(&wk);
			continue;
		}
		if (n <= 0)
			break; /* vgpud closed its end: done */
		if ((size_t)n < sizeof(in.m) ||
		    (size_t)n != sizeof(in.m) + (size_t)in.m.count * sizeof(uint64_t)) {
			close_fds(fds, nfds);
			continue;
		}
		serve(&wk, &in.m, (const uint64_t *)(void *)(in.bytes + sizeof(in.m)), fds, nfds);
		check_context(&wk);
	}
	finish(&wk);
	return 0;
}
