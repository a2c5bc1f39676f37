// SPDX-License-Identifier: MIT
/*
 * remote.c - the HAL's address space and channel operations under process
 * isolation (vgpu/cudagpu.h, "Isolation"): vgpud keeps each address
 * space's page table (a shadow, address_space.c) and forwards mappings and
 * channel operations to the address space's worker (worker_client.h).
 * Channels here are proxies: their windows are memfds vgpud maps and the
 * worker maps too; their state follows the worker's events.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker_client.h"

static struct cg_as *as_of(struct vgpu_hal_as *as)
{
	return (struct cg_as *)as;
}

static struct cg_remote_channel *remote_of(struct vgpu_hal_channel *ch)
{
	return (struct cg_remote_channel *)ch;
}

static struct cudagpu *gpu_of_remote(struct cg_remote_channel *ch)
{
	return cg_of(ch->base.hal);
}

void cg_remote_fini(struct cudagpu *gpu)
{
	cg_events_stop(gpu);
}

/* ------------------------------------------------------------ memory */

/* The workers of every address space (memory_lock taken here); the caller
 * frees the array. */
static struct cg_worker **all_workers(struct cudagpu *gpu, uint32_t *count)
{
	struct cg_worker **workers = calloc(gpu->config.max_address_spaces, sizeof(*workers));
	uint32_t i;

	*count = 0;
	if (!workers)
		return NULL;
	pthread_mutex_lock(&gpu->memory_lock);
	for (i = 0; i < gpu->config.max_address_spaces; i++)
		if (gpu->spaces[i] && gpu->spaces[i]->worker)
			workers[(*count)++] = gpu->spaces[i]->worker;
	pthread_mutex_unlock(&gpu->memory_lock);
	return workers;
}

int cg_remote_iommu_unmap(struct vgpu_hal *hal, uint64_t iova, uint64_t bytes)
{
	struct cudagpu *gpu = cg_of(hal);
	int err = cg_iommu_unmap(hal, iova, bytes);
	struct cg_worker **workers;
	uint32_t count, i;

	if (err)
		return err;
	/* The workers that map it lose it too: a later access faults there. */
	workers = all_workers(gpu, &count);
	for (i = 0; workers && i < count; i++) {
		pthread_mutex_lock(&workers[i]->lock);
		cg_worker_forget_iova(workers[i], iova, bytes);
		pthread_mutex_unlock(&workers[i]->lock);
	}
	free(workers);
	return 0;
}

void cg_remote_host_free(struct vgpu_hal *hal, struct vgpu_hal_host_buf *base)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_worker **workers;
	uint32_t count, i;

	if (!base)
		return;
	workers = all_workers(gpu, &count);
	for (i = 0; workers && i < count; i++) {
		pthread_mutex_lock(&workers[i]->lock);
		cg_worker_forget_buf(workers[i], (struct cg_host_buf *)base);
		pthread_mutex_unlock(&workers[i]->lock);
	}
	free(workers);
	cg_host_free(hal, base);
}

/* ------------------------------------------------------ address spaces */

int cg_remote_as_create(struct vgpu_hal *hal, struct vgpu_hal_as **out)
{
	struct cudagpu *gpu = cg_of(hal);
	struct vgpu_hal_as *base;
	struct cg_worker *w;
	int err;

	if (!gpu->remote_events) {
		pthread_mutex_lock(&gpu->remote_lock);
		err = gpu->remote_events ? 0 : cg_events_start(gpu);
		pthread_mutex_unlock(&gpu->remote_lock);
		if (err)
			return err;
	}
	err = cg_as_create(hal, &base);
	if (err)
		return err;
	err = cg_worker_new(gpu, as_of(base), &w);
	if (err) {
		cg_as_destroy(base);
		return err;
	}
	pthread_mutex_lock(&gpu->memory_lock);
	as_of(base)->worker = w;
	pthread_mutex_unlock(&gpu->memory_lock);
	*out = base;
	return 0;
}

void cg_remote_as_destroy(struct vgpu_hal_as *base)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = cg_of(base->hal);
	struct cg_worker *w = as->worker;

	pthread_mutex_lock(&gpu->memory_lock);
	as->worker = NULL;
	pthread_mutex_unlock(&gpu->memory_lock);
	cg_worker_free(w);
	cg_as_destroy(base);
}

int cg_remote_as_map(struct vgpu_hal_as *base, uint64_t va, uint32_t page_size, uint64_t count,
                     enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	struct cg_worker *w = as_of(base)->worker;
	int err;

	/* The shadow checks and records it; a live worker maps it (a lost
	 * one's successor will, from the shadow). */
	pthread_mutex_lock(&w->lock);
	err = cg_as_map(base, va, page_size, count, target, addresses, flags);
	if (!err && cg_worker_alive(w) &&
	    cg_worker_map(w, va, page_size, count, target, addresses, flags))
		cg_worker_kill(w); /* it no longer follows the shadow */
	pthread_mutex_unlock(&w->lock);
	return err;
}

int cg_remote_as_unmap(struct vgpu_hal_as *base, uint64_t va, uint64_t bytes)
{
	struct cg_worker *w = as_of(base)->worker;
	struct cg_wire_msg msg = { .op = CG_OP_AS_UNMAP, .a = { va, bytes } };
	struct cg_wire_reply reply;
	int err;

	pthread_mutex_lock(&w->lock);
	err = cg_as_unmap(base, va, bytes);
	if (!err && cg_worker_alive(w) &&
	    (cg_worker_call(w, &msg, NULL, NULL, 0, &reply) || reply.status))
		cg_worker_kill(w); /* it no longer follows the shadow */
	pthread_mutex_unlock(&w->lock);
	return err;
}

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void cg_remote_as_counters(struct vgpu_hal_as *base, struct vgpu_hal_as_counters *out)
{
	struct cg_as *as = as_of(base);
	struct cudagpu *gpu = cg_of(base->hal);
	struct cg_worker *w = as->worker;
	const struct vgpu_hal_as_counters *live = &w->status->counters;
	unsigned i;

	pthread_mutex_lock(&gpu->memory_lock);
	*out = as->counters; /* the copy engine's, here */
	pthread_mutex_lock(&gpu->remote_lock);
	for (i = 0; i < VGPU_TARGET_COUNT; i++) {
		out->bytes_read[i] += w->retired.bytes_read[i] + load64(&live->bytes_read[i]);
		out->bytes_written[i] +=
			w->retired.bytes_written[i] + load64(&live->bytes_written[i]);
	}
	for (i = 0; i < VGPU_ENGINE_COUNT; i++) {
		out->busy_ns[i] += w->retired.busy_ns[i] + load64(&live->busy_ns[i]);
		out->resident_wall_ns[i] +=
			w->retired.resident_wall_ns[i] + load64(&live->resident_wall_ns[i]);
	}
	pthread_mutex_unlock(&gpu->remote_lock);
	pthread_mutex_unlock(&gpu->memory_lock);
}

/* ------------------------------------------------------------ channels */

/* A channel's request, when its worker still runs it (w->lock taken
 * here). -EPIPE when it does not. */
static int channel_call(struct cg_remote_channel *ch, uint32_t op, uint64_t a1, uint64_t a2,
                        uint64_t a3, struct cg_wire_reply *reply)
{
	struct cudagpu *gpu = gpu_of_remote(ch);
	struct cg_worker *w = ch->as->worker;
	struct cg_wire_msg msg = { .op = op };
	struct cg_life *life;
	int err = -EPIPE;

	pthread_mutex_lock(&w->lock);
	pthread_mutex_lock(&gpu->remote_lock);
	life = ch->life;
	msg.a[0] = ch->local_id;
	pthread_mutex_unlock(&gpu->remote_lock);
	msg.a[1] = a1;
	msg.a[2] = a2;
	msg.a[3] = a3;
	if (life && life == w->life && cg_worker_alive(w))
		err = cg_worker_call(w, &msg, NULL, NULL, 0, reply);
	pthread_mutex_unlock(&w->lock);
	return err;
}

/*
 * A kill or destroy in the worker: its wait for the channel's issued work
 * is bounded (kill_wait_ms); work still running then (-ETIMEDOUT) cannot
 * be stopped short of the worker's context, so the worker goes: a context
 * reset for this VM alone, and nothing of the channel runs on.
 */
static void channel_end(struct cg_remote_channel *ch, uint32_t op, uint64_t cause)
{
	struct cg_worker *w = ch->as->worker;
	struct cg_wire_reply reply = { 0 };

	if (channel_call(ch, op, cause, 0, 0, &reply) || reply.status != -ETIMEDOUT)
		return;
	pthread_mutex_lock(&w->lock);
	if (cg_worker_alive(w))
		cg_worker_kill(w);
	pthread_mutex_unlock(&w->lock);
}

int cg_remote_channel_create(struct vgpu_hal_as *as_base, uint32_t gpfifo_entries,
                             struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info)
{
	struct cudagpu *gpu = cg_of(as_base->hal);
	struct cg_as *as = as_of(as_base);
	struct cg_worker *w = as->worker;
	struct cg_remote_channel *ch;
	struct cg_wire_msg msg = { .op = CG_OP_CHANNEL_CREATE };
	struct cg_wire_reply reply;
	uint32_t id;
	int err;

	if (cg_channel_entries(gpu, &gpfifo_entries))
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->base.hal = as_base->hal;
	ch->as = as;
	ch->entries = gpfifo_entries;
	err = cg_channel_window_create(gpfifo_entries, &ch->memfd, &ch->window);
	if (err) {
		free(ch);
		return err;
	}
	pthread_mutex_lock(&gpu->remote_lock);
	for (id = 0; id < gpu->config.max_channels; id++)
		if (!gpu->remote_channels[id])
			break;
	if (id < gpu->config.max_channels) {
		ch->id = id;
		gpu->remote_channels[id] = ch;
	}
	pthread_mutex_unlock(&gpu->remote_lock);
	if (id == gpu->config.max_channels) {
		err = -ENOSPC;
		goto fail;
	}
	pthread_mutex_lock(&w->lock);
	err = cg_worker_ensure(w);
	if (!err) {
		msg.a[0] = gpfifo_entries;
		err = cg_worker_call(w, &msg, NULL, &ch->memfd, 1, &reply);
		if (!err)
			err = reply.status;
		if (!err && reply.value >= gpu->config.max_channels)
			err = -EIO;
	}
	if (!err) {
		pthread_mutex_lock(&gpu->remote_lock);
		ch->life = w->life;
		ch->local_id = (uint32_t)reply.value;
		w->life->by_local[ch->local_id] = ch;
		pthread_mutex_unlock(&gpu->remote_lock);
	}
	pthread_mutex_unlock(&w->lock);
	if (err) {
		pthread_mutex_lock(&gpu->remote_lock);
		gpu->remote_channels[id] = NULL;
		pthread_mutex_unlock(&gpu->remote_lock);
		err = err == -ENOMEM || err == -ENOSPC || err == -EINVAL ? err : -EIO;
		goto fail;
	}
	if (info) {
		memset(info, 0, sizeof(*info));
		info->id = ch->id;
		info->layout = cg_channel_layout(gpfifo_entries);
		info->control = ch->window;
		info->gpfifo = (char *)ch->window + VGPU_CONTROL_BYTES;
		info->memfd = ch->memfd;
		info->control_offset = 0;
		info->gpfifo_offset = VGPU_CONTROL_BYTES;
	}
	*out = &ch->base;
	return 0;
fail:
	munmap(ch->window, cg_channel_window_bytes(gpfifo_entries));
	close(ch->memfd);
	free(ch);
	return err;
}

void cg_remote_channel_destroy(struct vgpu_hal_channel *base)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cudagpu *gpu = gpu_of_remote(ch);
	struct cg_worker *w = ch->as->worker;

	channel_end(ch, CG_OP_CHANNEL_DESTROY, 0);
	pthread_mutex_lock(&w->lock); /* no request of it is in flight */
	pthread_mutex_lock(&gpu->remote_lock);
	if (ch->life && ch->life->by_local[ch->local_id] == ch)
		ch->life->by_local[ch->local_id] = NULL;
	ch->life = NULL;
	gpu->remote_channels[ch->id] = NULL;
	pthread_mutex_unlock(&gpu->remote_lock);
	pthread_mutex_unlock(&w->lock);
	munmap(ch->window, cg_channel_window_bytes(ch->entries));
	close(ch->memfd);
	free(ch);
}

void cg_remote_channel_set_fetch(struct vgpu_hal_channel *base, bool enabled)
{
	struct cg_wire_reply reply;

	channel_call(remote_of(base), CG_OP_CHANNEL_FETCH, enabled, 0, 0, &reply);
}

uint32_t cg_remote_channel_gp_get(struct vgpu_hal_channel *base)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cudagpu *gpu = gpu_of_remote(ch);
	uint32_t gp_get;

	/* The worker publishes its GP_GET before the events that follow it. */
	pthread_mutex_lock(&gpu->remote_lock);
	gp_get = ch->life ? cg_worker_channel_gp_get(ch->as->worker, ch) : ch->last_gp_get;
	pthread_mutex_unlock(&gpu->remote_lock);
	return gp_get;
}

enum vgpu_hal_channel_state cg_remote_channel_state(struct vgpu_hal_channel *base,
                                                    struct vgpu_hal_event *last_error)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cudagpu *gpu = gpu_of_remote(ch);
	enum vgpu_hal_channel_state state;

	pthread_mutex_lock(&gpu->remote_lock);
	state = ch->error ? VGPU_CHANNEL_ERROR : VGPU_CHANNEL_OK;
	if (ch->error && last_error)
		*last_error = ch->last_error;
	pthread_mutex_unlock(&gpu->remote_lock);
	return state;
}

static bool in_error(struct cg_remote_channel *ch)
{
	struct cudagpu *gpu = gpu_of_remote(ch);
	bool error;

	pthread_mutex_lock(&gpu->remote_lock);
	error = ch->error || !ch->life;
	pthread_mutex_unlock(&gpu->remote_lock);
	return error;
}

int cg_remote_channel_priv_submit(struct vgpu_hal_channel *base, enum vgpu_hal_priv_cmd cmd,
                                  uint64_t *ticket)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cg_wire_reply reply;
	int err;

	if (cmd != VGPU_PRIV_NOP && cmd != VGPU_PRIV_FENCE)
		return -EINVAL;
	if (in_error(ch))
		return -EIO;
	err = channel_call(ch, CG_OP_CHANNEL_PRIV, cmd, 1, 0, &reply);
	if (err)
		return -EIO;
	if (!reply.status && ticket)
		*ticket = reply.value;
	return reply.status;
}

int cg_remote_channel_priv_nops(struct vgpu_hal_channel *base, uint32_t count)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cg_wire_reply reply;

	if (in_error(ch))
		return -EIO;
	if (channel_call(ch, CG_OP_CHANNEL_PRIV, VGPU_PRIV_NOP, count, 1, &reply))
		return -EIO;
	return reply.status;
}

void cg_remote_channel_kick(struct vgpu_hal_channel *base)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cg_worker *w = ch->as->worker;
	struct cg_wire_msg msg = { .op = CG_OP_CHANNEL_KICK };

	/* A hint: skipped when a request is under way (the worker looks at
	 * its rings at least every millisecond). */
	if (pthread_mutex_trylock(&w->lock))
		return;
	pthread_mutex_lock(&w->gpu->remote_lock);
	msg.a[0] = ch->local_id;
	if (ch->life != w->life || ch->error)
		msg.op = 0;
	pthread_mutex_unlock(&w->gpu->remote_lock);
	if (msg.op && cg_worker_alive(w))
		cg_worker_call(w, &msg, NULL, NULL, 0, NULL);
	pthread_mutex_unlock(&w->lock);
}

void cg_remote_channel_kill(struct vgpu_hal_channel *base, enum vgpu_hal_error_cause cause)
{
	struct cg_remote_channel *ch = remote_of(base);
	struct cudagpu *gpu = gpu_of_remote(ch);

	/* The worker kills it and drains its stream (or is killed itself);
	 * its event follows. A lost worker's channels are already in error. */
	channel_end(ch, CG_OP_CHANNEL_KILL, cause);
	pthread_mutex_lock(&gpu->remote_lock);
	if (!ch->error) {
		ch->error = true;
		ch->last_error = (struct vgpu_hal_event){
			.type = VGPU_EVENT_CHANNEL_ERROR, .channel_id = ch->id, .cause = cause,
		};
	}
	pthread_mutex_unlock(&gpu->remote_lock);
}

int32_t cg_remote_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	struct cudagpu *gpu = cg_of(hal);
	int32_t current = -1;
	uint32_t id;

	if (engine != VGPU_ENGINE_COMPUTE)
		return -1;
	pthread_mutex_lock(&gpu->remote_lock);
	for (id = 0; id < gpu->config.max_channels && current < 0; id++) {
		struct cg_remote_channel *ch = gpu->remote_channels[id];

		if (ch && ch->life && !ch->error &&
		    __atomic_load_n(&ch->as->worker->status->current_channel, __ATOMIC_RELAXED) ==
		            (int64_t)ch->local_id)
			current = (int32_t)ch->id;
	}
	pthread_mutex_unlock(&gpu->remote_lock);
	return current;
}

bool cg_remote_channel_pending(struct vgpu_hal *hal, uint32_t channel_id)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_remote_channel *ch;
	bool pending = false;

	if (channel_id >= gpu->config.max_channels)
		return false;
	pthread_mutex_lock(&gpu->remote_lock);
	ch = gpu->remote_channels[channel_id];
	if (ch && ch->life && !ch->error) {
		const uint32_t *control = ch->window;
		uint32_t gp_put = le32toh(__atomic_load_n(&control[VGPU_CONTROL_GP_PUT / 4],
		                                          __ATOMIC_ACQUIRE));
		uint32_t gp_get = cg_worker_channel_gp_get(ch->as->worker, ch);

		pending = gp_put != gp_get || cg_worker_channel_pending(ch->as->worker, ch);
	}
	pthread_mutex_unlock(&gpu->remote_lock);
	return pending;
}

uint64_t cg_remote_engine_busy_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t ns;
	uint32_t i;

	if (engine != VGPU_ENGINE_COMPUTE)
		return cg_engine_busy_ns(hal, engine);
	pthread_mutex_lock(&gpu->memory_lock);
	pthread_mutex_lock(&gpu->remote_lock);
	ns = gpu->retired_busy_ns;
	for (i = 0; i < gpu->config.max_address_spaces; i++)
		if (gpu->spaces[i] && gpu->spaces[i]->worker)
			ns += load64(&gpu->spaces[i]->worker->status->busy_ns[VGPU_ENGINE_COMPUTE]);
	pthread_mutex_unlock(&gpu->remote_lock);
	pthread_mutex_unlock(&gpu->memory_lock);
	return ns;
}

/* Process isolation's test hook (vgpu/cudagpu.h). */
int cudagpu_worker_pid(struct vgpu_hal_as *base)
{
	struct cg_worker *w;
	int pid = -1;

	if (!cudagpu_is_cudagpu(base->hal))
		return -1;
	w = as_of(base)->worker;
	if (!w)
		return -1;
	pthread_mutex_lock(&w->lock);
	if (cg_worker_alive(w))
		pid = (int)w->life->pid;
	pthread_mutex_unlock(&w->lock);
	return pid;
}
