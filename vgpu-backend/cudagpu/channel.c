// SPDX-License-Identifier: MIT
/*
 * channel.c - cudagpu's command channels: the control page and GPFIFO ring
 * in memfd-backed memory a guest can map (simgpu's layout), a CUDA stream
 * each, privileged entries, state and faults. The submission thread that
 * runs them is pfifo.c; what it does with an entry is commands.c.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudagpu_internal.h"
#include "vgpu/abi/commands.h"
#include "vgpu/memfd.h"

/* --------------------------------------------------------------- faults */

void cg_channel_kill(struct cudagpu *gpu, struct cg_channel *ch, uint64_t address,
                         enum vgpu_hal_error_cause cause)
{
	struct cg_completion *done = calloc(1, sizeof(*done));

	ch->error = true;
	ch->running = false;
	ch->last_error = (struct vgpu_hal_event){
		.type = VGPU_EVENT_CHANNEL_ERROR,
		.channel_id = ch->id,
		.address = address,
		.cause = cause,
	};
	if (done) {
		/* No CUDA event and no stream: delivered at the next poll. */
		done->type = CG_DONE_ERROR;
		done->channel = ch;
		done->address = address;
		done->value = cause;
		cg_completion_queue(gpu, done);
	}
}

/* ------------------------------------------------------------ channels */

uint64_t cg_channel_window_bytes(uint32_t entries)
{
	uint64_t ring_bytes = (uint64_t)entries * VGPU_GPFIFO_ENTRY_BYTES;

	ring_bytes = (ring_bytes + CG_SMALL_PAGE - 1) & ~(uint64_t)(CG_SMALL_PAGE - 1);
	return VGPU_CONTROL_BYTES + ring_bytes;
}

int cg_channel_entries(const struct cudagpu *gpu, uint32_t *entries)
{
	if (*entries == 0)
		*entries = gpu->config.default_gpfifo_entries;
	if (*entries < 2 || *entries > gpu->config.max_gpfifo_entries || (*entries & (*entries - 1)))
		return -EINVAL;
	return 0;
}

struct vgpu_hal_channel_layout cg_channel_layout(uint32_t entries)
{
	return (struct vgpu_hal_channel_layout){
		.control_bytes = VGPU_CONTROL_BYTES,
		.gp_put_offset = VGPU_CONTROL_GP_PUT,
		.gp_get_offset = VGPU_CONTROL_GP_GET,
		.doorbell_offset = VGPU_CONTROL_DOORBELL,
		.gpfifo_entries = entries,
		.gpfifo_entry_bytes = VGPU_GPFIFO_ENTRY_BYTES,
		.gpfifo_bytes = (uint32_t)(cg_channel_window_bytes(entries) - VGPU_CONTROL_BYTES),
	};
}

int cg_channel_window_create(uint32_t entries, int *memfd, void **window)
{
	uint64_t window_bytes = cg_channel_window_bytes(entries);
	int fd;

	fd = vgpu_memfd_create("cudagpu-channel", window_bytes);
	if (fd < 0)
		return fd;
	*window = mmap(NULL, window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*window == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	*(uint32_t *)((char *)*window + VGPU_CONTROL_VERSION) = htole32(VGPU_COMMANDS_VERSION);
	*memfd = fd;
	return 0;
}

int cg_channel_create(struct vgpu_hal_as *as_base, uint32_t gpfifo_entries,
                      struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info)
{
	return cg_channel_create_on(as_base, gpfifo_entries, -1, out, info);
}

int cg_channel_create_on(struct vgpu_hal_as *as_base, uint32_t gpfifo_entries, int memfd,
                         struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info)
{
	struct cudagpu *gpu = cg_of(as_base->hal);
	struct cg_channel *ch;
	uint64_t window_bytes;
	uint32_t id;
	int err = -ENOMEM;

	if (cg_channel_entries(gpu, &gpfifo_entries)) {
		if (memfd >= 0)
			close(memfd);
		return -EINVAL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		if (memfd >= 0)
			close(memfd);
		return -ENOMEM;
	}
	ch->base.hal = as_base->hal;
	ch->as = (struct cg_as *)as_base;
	ch->entries = gpfifo_entries;
	ch->fetch = true;
	ch->memfd = -1;
	window_bytes = cg_channel_window_bytes(gpfifo_entries);
	ch->priv_ticket = calloc(gpfifo_entries, sizeof(*ch->priv_ticket));
	ch->words = malloc(VGPU_PUSHBUFFER_MAX_BYTES);
	if (!ch->priv_ticket || !ch->words)
		goto fail;
	ch->memfd = memfd;
	if (memfd < 0) {
		err = cg_channel_window_create(gpfifo_entries, &ch->memfd, &ch->window);
		if (err) {
			ch->memfd = -1;
			ch->window = NULL;
			goto fail;
		}
	} else {
		ch->window = mmap(NULL, window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		if (ch->window == MAP_FAILED) {
			ch->window = NULL;
			goto fail;
		}
	}
	cg_enter(gpu);
	if (gpu->api.cuStreamCreate(&ch->stream, CG_STREAM_NON_BLOCKING) != CG_SUCCESS) {
		err = -EIO;
		goto fail;
	}
	cg_pfifo_lock(gpu);
	for (id = 0; id < gpu->config.max_channels; id++)
		if (!gpu->channels[id])
			break;
	if (id == gpu->config.max_channels) {
		pthread_mutex_unlock(&gpu->pfifo_lock);
		err = -ENOSPC;
		goto fail;
	}
	ch->id = id;
	gpu->channels[id] = ch;
	pthread_mutex_unlock(&gpu->pfifo_lock);

	if (info) {
		memset(info, 0, sizeof(*info));
		info->id = id;
		info->layout = cg_channel_layout(gpfifo_entries);
		info->control = ch->window;
		info->gpfifo = cg_gpfifo_of(ch);
		info->memfd = ch->memfd;
		info->control_offset = 0;
		info->gpfifo_offset = VGPU_CONTROL_BYTES;
	}
	*out = &ch->base;
	return 0;
fail:
	if (ch->stream)
		gpu->api.cuStreamDestroy(ch->stream);
	if (ch->window)
		munmap(ch->window, window_bytes);
	if (ch->memfd >= 0)
		close(ch->memfd);
	else if (memfd >= 0)
		close(memfd);
	free(ch->priv_ticket);
	free(ch->words);
	free(ch);
	return err;
}

void cg_channel_free(struct cudagpu *gpu, struct cg_channel *ch)
{
	uint64_t window_bytes = cg_channel_window_bytes(ch->entries);

	cg_enter(gpu);
	cg_pfifo_lock(gpu);
	cg_event_put(gpu, ch->acquire_event);
	cg_event_put(gpu, ch->function_event);
	cg_event_put(gpu, ch->entry_start);
	cg_event_put(gpu, ch->starts_event);
	pthread_mutex_unlock(&gpu->pfifo_lock);
	gpu->api.cuStreamDestroy(ch->stream);
	if (ch->starts)
		gpu->api.cuMemFreeHost(ch->starts);
	munmap(ch->window, window_bytes);
	close(ch->memfd);
	free(ch->priv_ticket);
	free(ch->words);
	free(ch);
}

/* pfifo_lock held: drop the channel's completions (never delivered). */
static void drop_completions(struct cudagpu *gpu, struct cg_channel *ch)
{
	struct cg_completion **link;

	for (link = &gpu->done_head; *link;) {
		struct cg_completion *done = *link;

		if (done->channel != ch) {
			link = &done->next;
			continue;
		}
		*link = done->next;
		cg_event_put(gpu, done->start);
		cg_event_put(gpu, done->end);
		free(done);
	}
	gpu->done_tail = &gpu->done_head;
	while (*gpu->done_tail)
		gpu->done_tail = &(*gpu->done_tail)->next;
}

/*
 * pfifo_lock held: the channel's stream did not settle and the caller
 * already began its address space's quarantine: the channel is a zombie
 * now (false: it already was, and the quarantine just begun is undone).
 */
static bool become_zombie(struct cudagpu *gpu, struct cg_channel *ch)
{
	struct cg_host_buf *release = NULL;
	struct cg_as *gone;

	if (!ch->zombie) {
		ch->zombie = true;
		gpu->zombie_count++;
		return true;
	}
	pthread_mutex_lock(&gpu->memory_lock);
	gone = cg_quarantine_end_locked(gpu, ch->as, &release);
	pthread_mutex_unlock(&gpu->memory_lock);
	/* (the channel's own zombie holds the address space: nothing goes) */
	(void)gone;
	(void)release;
	return false;
}

/* The stream did not settle: quarantine (not in a worker: its caller
 * kills it, context and all). */
static void settle_failed(struct cudagpu *gpu, struct cg_channel *ch)
{
	if (!gpu->worker_role)
		cg_quarantine_begin(gpu, ch->as);
}

bool cg_channel_destroy_settle(struct vgpu_hal_channel *base)
{
	struct cg_channel *ch = cg_channel_of(base);
	struct cudagpu *gpu = cg_gpu_of_channel(ch);
	bool zombie, settled = true;

	cg_enter(gpu);
	cg_pfifo_lock(gpu);
	gpu->channels[ch->id] = NULL; /* no turn from now on */
	if (gpu->current_channel == (int32_t)ch->id)
		gpu->current_channel = -1;
	zombie = ch->zombie;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	/* What it already issued ends, or is waited for at most kill_wait_ms;
	 * its completions are dropped. */
	if (!zombie) {
		settled = cg_stream_settles(gpu, ch->stream);
		if (!settled)
			settle_failed(gpu, ch);
	}
	cg_pfifo_lock(gpu);
	drop_completions(gpu, ch);
	if (!settled && !gpu->worker_role)
		become_zombie(gpu, ch);
	if (ch->zombie) {
		/* the reaper frees it when its stream is done */
		ch->destroyed = true;
		ch->zombie_next = gpu->zombie_list;
		gpu->zombie_list = ch;
		pthread_mutex_unlock(&gpu->pfifo_lock);
		return false;
	}
	pthread_mutex_unlock(&gpu->pfifo_lock);
	cg_channel_free(gpu, ch);
	return settled;
}

void cg_channel_destroy(struct vgpu_hal_channel *base)
{
	cg_channel_destroy_settle(base);
}

void cg_channel_set_fetch(struct vgpu_hal_channel *base, bool enabled)
{
	struct cg_channel *ch = cg_channel_of(base);
	struct cudagpu *gpu = cg_gpu_of_channel(ch);

	cg_pfifo_lock(gpu);
	ch->fetch = enabled;
	pthread_cond_broadcast(&gpu->pfifo_wake);
	pthread_mutex_unlock(&gpu->pfifo_lock);
}

uint32_t cg_channel_gp_get(struct vgpu_hal_channel *base)
{
	struct cg_channel *ch = cg_channel_of(base);
	struct cudagpu *gpu = cg_gpu_of_channel(ch);
	uint32_t gp_get;

	cg_pfifo_lock(gpu);
	gp_get = ch->gp_get;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return gp_get;
}

bool cg_channel_kill_settle(struct vgpu_hal_channel *base, enum vgpu_hal_error_cause cause)
{
	struct cg_channel *ch = cg_channel_of(base);
	struct cudagpu *gpu = cg_gpu_of_channel(ch);
	bool zombie;

	cg_pfifo_lock(gpu);
	if (!ch->error)
		cg_channel_kill(gpu, ch, 0, cause);
	zombie = ch->zombie;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	pthread_cond_broadcast(&gpu->pfifo_wake); /* delivers the error event */
	if (zombie)
		return false; /* an earlier kill already waited */
	/* The channel gets no turn any more; what it already issued to its
	 * stream (bounded: max_entries_in_flight, max_ops_in_flight) is
	 * waited for at most kill_wait_ms. Then nothing of the channel
	 * touches its memory, which the caller may move, or its memory is
	 * quarantined until the stream is done (quarantine.c). */
	if (cg_stream_settles(gpu, ch->stream))
		return true;
	settle_failed(gpu, ch);
	if (!gpu->worker_role) {
		cg_pfifo_lock(gpu);
		become_zombie(gpu, ch);
		pthread_mutex_unlock(&gpu->pfifo_lock);
	}
	return false;
}

void cg_channel_kill_op(struct vgpu_hal_channel *base, enum vgpu_hal_error_cause cause)
{
	cg_channel_kill_settle(base, cause);
}

enum vgpu_hal_channel_state cg_channel_state(struct vgpu_hal_channel *base,
                                             struct vgpu_hal_event *last_error)
{
	struct cg_channel *ch = cg_channel_of(base);
	struct cudagpu *gpu = cg_gpu_of_channel(ch);
	enum vgpu_hal_channel_state state;

	cg_pfifo_lock(gpu);
	state = ch->error ? VGPU_CHANNEL_ERROR : VGPU_CHANNEL_OK;
	if (ch->error && last_error)
		*last_error = ch->last_error;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return state;
}

/*
 * Append up to count privileged entries of cmd at the real GP_PUT and
 * advance GP_PUT once (pfifo_lock taken here). The slots' contents do not
 * matter: cudagpu remembers which slots are privileged, so a guest can
 * neither forge nor replay one. Returns the entries appended (0 when the
 * ring is full) or -EIO.
 */
static int append_privileged(struct cg_channel *ch, enum vgpu_hal_priv_cmd cmd, uint32_t count,
                             uint64_t *ticket)
{
	struct cudagpu *gpu = cg_gpu_of_channel(ch);
	uint32_t gp_put, appended = 0;
	int ret;

	cg_pfifo_lock(gpu);
	gp_put = le32toh(__atomic_load_n(cg_control_word(ch, VGPU_CONTROL_GP_PUT),
	                                 __ATOMIC_ACQUIRE));
	if (ch->error || gp_put >= ch->entries) {
		ret = -EIO;
		goto out;
	}
	while (appended < count && ((gp_put + 1) & (ch->entries - 1)) != ch->gp_get) {
		vgpu_gpfifo_write(cg_gpfifo_of(ch), ch->entries, gp_put, CG_VA_RESERVED_BASE, 0);
		ch->priv_ticket[gp_put] = cmd == VGPU_PRIV_FENCE ? ++gpu->next_ticket
		                                                 : CG_PRIV_NOP_TICKET;
		if (ticket)
			*ticket = cmd == VGPU_PRIV_FENCE ? gpu->next_ticket : 0;
		gp_put = (gp_put + 1) & (ch->entries - 1);
		appended++;
	}
	if (appended) {
		vgpu_control_write_gp_put(ch->window, gp_put);
		pthread_cond_broadcast(&gpu->pfifo_wake);
	}
	ret = (int)appended;
out:
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return ret;
}

int cg_channel_priv_submit(struct vgpu_hal_channel *base, enum vgpu_hal_priv_cmd cmd,
                           uint64_t *ticket)
{
	int ret;

	if (cmd != VGPU_PRIV_NOP && cmd != VGPU_PRIV_FENCE)
		return -EINVAL;
	ret = append_privileged(cg_channel_of(base), cmd, 1, ticket);
	return ret < 0 ? ret : ret ? 0 : -ENOSPC;
}

int cg_channel_priv_nops(struct vgpu_hal_channel *base, uint32_t count)
{
	return append_privileged(cg_channel_of(base), VGPU_PRIV_NOP, count, NULL);
}

void cg_channel_kick(struct vgpu_hal_channel *base)
{
	struct cudagpu *gpu = cg_gpu_of_channel(cg_channel_of(base));

	pthread_cond_broadcast(&gpu->pfifo_wake);
}

int32_t cg_engine_current_channel(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	struct cudagpu *gpu = cg_of(hal);
	int32_t current;

	if (engine != VGPU_ENGINE_COMPUTE)
		return -1;
	cg_pfifo_lock(gpu);
	current = gpu->current_channel;
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return current;
}

/* The submission thread's view of the channel table: an entry in progress
 * (running), work issued to the stream and not completed (inflight), or
 * GP_PUT ahead of GP_GET. */
bool cg_channel_pending(struct vgpu_hal *hal, uint32_t channel_id)
{
	struct cudagpu *gpu = cg_of(hal);
	struct cg_channel *ch;
	bool pending = false;

	if (channel_id >= gpu->config.max_channels)
		return false;
	cg_pfifo_lock(gpu);
	ch = gpu->channels[channel_id];
	if (ch && !ch->error) {
		uint32_t gp_put = le32toh(__atomic_load_n(cg_control_word(ch, VGPU_CONTROL_GP_PUT),
		                                          __ATOMIC_ACQUIRE));

		pending = ch->running || ch->inflight > 0 || gp_put != ch->gp_get;
	}
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return pending;
}

uint64_t cg_engine_busy_ns(struct vgpu_hal *hal, enum vgpu_hal_engine engine)
{
	struct cudagpu *gpu = cg_of(hal);
	uint64_t ns;

	if (engine >= VGPU_ENGINE_COUNT)
		return 0;
	cg_pfifo_lock(gpu);
	ns = gpu->busy_ns[engine];
	pthread_mutex_unlock(&gpu->pfifo_lock);
	return ns;
}
