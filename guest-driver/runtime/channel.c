// SPDX-License-Identifier: MIT
/*
 * channel.c - direct submission into a mapped channel window: pushbuffer
 * ring, GPFIFO entries, GP_PUT, doorbell word and fences (see vgpu_guest.h).
 * Nothing here talks to the backend except to create and destroy the
 * channel and, optionally, to sleep while waiting for a fence.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "device_internal.h"
#include "pushbuffer_ring.h"
#include "vgpu/abi/commands.h"
#include "vgpu_compat.h"

_Static_assert(VGPU_GPFIFO_ENTRY_BYTES == 16, "the protocol code checks GPFIFO sizes with 16");
_Static_assert(VGPU_CONTROL_BYTES == VGPU_PAGE_SIZE, "a control page is one page");

/* Words the fence at the end of every submission takes. */
#define FENCE_WORDS (1u + VGPU_SEMAPHORE_ARG_WORDS)
/* Polls of the notifier before a wait starts to sleep. */
#define WAIT_SPINS 256
/* Longest sleep between polls while waiting without an interrupt. */
#define WAIT_SLEEP_MAX_NS 500000
/* How often an overdue wait asks the backend whether the channel died: at
 * most once per period over consecutive waits too, so a caller waiting in
 * short timeouts (libcuda's 1 ms slices) does not turn every slice into a
 * round trip to the backend (a register read over vgpud's socket). */
#define WAIT_STATUS_PERIOD_NS 100000000ull
#define DEFAULT_TIMEOUT_MS 60000

struct vgpu_channel {
	struct vgpu_guest_device *dev;
	struct vgpu_channel_window window;
	struct pushbuffer_ring ring;
	uint32_t mask;             /* gpfifo_entries - 1 */
	uint32_t put;              /* our GP_PUT */
	uint64_t next_fence;       /* value of the next fence */
	uint64_t completed;        /* highest fence seen passed */
	uint64_t interrupt_fence;  /* newest fence submitted with an interrupt */
	bool begun;                /* between begin and submit */
	uint64_t begun_position;
	uint32_t begun_words;
	int timeout_ms;
	uint64_t next_status_ns;   /* the next wait asks the backend from then on */
	int dead; /* 0, or why the channel is over: -EIO killed, -ENODEV gone */
	struct vgpu_channel_stats stats;
};

static uint64_t read_notifier(struct vgpu_channel *ch, uint32_t offset)
{
	const struct vgpu_backend_ops *ops = ch->dev->ops;
	uint64_t *word = (uint64_t *)((uint8_t *)ch->window.notifier + offset);

	if (ops->notifier_read)
		return ops->notifier_read(ch->dev->backend, &ch->window, offset);
	return le64toh(__atomic_load_n(word, __ATOMIC_ACQUIRE));
}

int vgpu_channel_create(struct vgpu_guest_device *dev, uint32_t gpfifo_entries,
                        struct vgpu_channel **out)
{
	struct vgpu_channel *ch;
	uint32_t version, gp_put;
	int ret;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		device_fail(dev, -ENOMEM, "CHANNEL_CREATE");
		return -ENOMEM;
	}
	ch->dev = dev;
	ch->timeout_ms = DEFAULT_TIMEOUT_MS;
	ret = dev->ops->channel_open(dev->backend, gpfifo_entries, &ch->window);
	if (ret) {
		device_fail(dev, ret, "CHANNEL_CREATE with %u GPFIFO entries", gpfifo_entries);
		free(ch);
		return ret;
	}

	/* The window must be in the command format this runtime writes. */
	version = le32toh(__atomic_load_n(vgpu_control_word(ch->window.control,
	                                                    VGPU_CONTROL_VERSION),
	                                  __ATOMIC_ACQUIRE));
	gp_put = vgpu_control_read_gp_put(ch->window.control);
	ret = -EPROTO;
	if (version != VGPU_COMMANDS_VERSION || gp_put >= ch->window.gpfifo_entries ||
	    ch->window.notifier_bytes < VGPU_NOTIFIER_SCRATCH_OFFSET + 8) {
		device_fail(dev, ret,
		            "channel %u: command format %u (want %u), GP_PUT %u, notifier %u bytes",
		            ch->window.index, version, VGPU_COMMANDS_VERSION, gp_put,
		            ch->window.notifier_bytes);
		goto fail;
	}
	ret = pushbuffer_ring_init(&ch->ring, ch->window.pushbuffer_bytes,
	                           ch->window.gpfifo_entries - 1);
	if (ret) {
		device_fail(dev, ret, "channel %u: pushbuffer of %u bytes", ch->window.index,
		            ch->window.pushbuffer_bytes);
		goto fail;
	}
	ch->mask = ch->window.gpfifo_entries - 1;
	ch->put = gp_put;
	/* Fences continue from whatever the notifier holds. */
	ch->completed = read_notifier(ch, VGPU_NOTIFIER_FENCE_OFFSET);
	ch->next_fence = ch->completed + 1;
	ch->interrupt_fence = 0;
	ch->stats.index = ch->window.index;
	ch->stats.gpfifo_entries = ch->window.gpfifo_entries;
	ch->stats.pushbuffer_bytes = ch->ring.bytes;
	ch->stats.last_fence = ch->completed;
	dev->channels++;
	*out = ch;
	return 0;

fail:
	dev->ops->channel_close(dev->backend, &ch->window);
	free(ch);
	return ret;
}

void vgpu_channel_destroy(struct vgpu_channel *ch)
{
	if (!ch)
		return;
	if (!ch->dead)
		vgpu_channel_finish(ch, ch->timeout_ms);
	ch->dev->ops->channel_close(ch->dev->backend, &ch->window);
	ch->dev->channels--;
	pushbuffer_ring_fini(&ch->ring);
	free(ch);
}

void vgpu_channel_set_timeout(struct vgpu_channel *ch, int timeout_ms)
{
	ch->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

uint32_t vgpu_channel_max_words(const struct vgpu_channel *ch)
{
	uint32_t bytes = ch->ring.bytes / 2;

	if (bytes > VGPU_PUSHBUFFER_MAX_BYTES)
		bytes = VGPU_PUSHBUFFER_MAX_BYTES;
	return bytes / 4 - FENCE_WORDS - 1;
}

bool vgpu_channel_fence_passed(struct vgpu_channel *ch, uint64_t fence)
{
	uint64_t value;

	if (fence <= ch->completed)
		return true;
	value = read_notifier(ch, VGPU_NOTIFIER_FENCE_OFFSET);
	/* Never believe in a fence that was not submitted yet. */
	if (value > ch->completed && value < ch->next_fence)
		ch->completed = value;
	return fence <= ch->completed;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
		               .tv_nsec = (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* A wait ended in err: remember whether the channel is over for good. */
static int note_end(struct vgpu_channel *ch, int err)
{
	if (err == -EIO || err == -ENODEV)
		ch->dead = err;
	return err;
}

static int channel_status(struct vgpu_channel *ch)
{
	const struct vgpu_backend_ops *ops = ch->dev->ops;

	if (!ch->dead && ops->channel_status)
		note_end(ch, ops->channel_status(ch->dev->backend, &ch->window));
	return ch->dead;
}

/* channel_status, unless a wait of this channel asked less than
 * WAIT_STATUS_PERIOD_NS ago. */
static int channel_status_due(struct vgpu_channel *ch, uint64_t now)
{
	if (ch->next_status_ns && now < ch->next_status_ns)
		return ch->dead;
	ch->next_status_ns = now + WAIT_STATUS_PERIOD_NS;
	return channel_status(ch);
}

int vgpu_channel_wait(struct vgpu_channel *ch, uint64_t fence, int timeout_ms)
{
	const struct vgpu_backend_ops *ops = ch->dev->ops;
	uint64_t start, deadline, sleep = 1000, now;
	unsigned int spins;
	int ret;

	if (vgpu_channel_fence_passed(ch, fence))
		return 0;
	if (fence >= ch->next_fence)
		return -EINVAL;
	if (ch->dead)
		return ch->dead;
	ch->stats.fence_waits++;
	for (spins = 0; spins < WAIT_SPINS; spins++) {
		vgpu_cpu_relax();
		if (vgpu_channel_fence_passed(ch, fence))
			return 0;
	}

	if (timeout_ms < 0)
		timeout_ms = ch->timeout_ms;
	start = vgpu_now_ns();
	deadline = start + (uint64_t)timeout_ms * 1000000ull;
	if (ops->wait_fence && fence <= ch->interrupt_fence) {
		ret = ops->wait_fence(ch->dev->backend, &ch->window, VGPU_NOTIFIER_FENCE_OFFSET,
		                      fence, timeout_ms);
		if (ret == 0 && !vgpu_channel_fence_passed(ch, fence))
			ret = -EPROTO;
		return note_end(ch, ret);
	}

	for (;;) {
		if (vgpu_channel_fence_passed(ch, fence))
			return 0;
		now = vgpu_now_ns();
		if (now >= deadline)
			break;
		if (channel_status_due(ch, now))
			return ch->dead;
		sleep_ns(sleep);
		if (sleep < WAIT_SLEEP_MAX_NS)
			sleep *= 2;
	}
	if (vgpu_channel_fence_passed(ch, fence))
		return 0;
	return channel_status_due(ch, vgpu_now_ns()) ?: -ETIMEDOUT;
}

int vgpu_channel_finish(struct vgpu_channel *ch, int timeout_ms)
{
	return vgpu_channel_wait(ch, ch->next_fence - 1, timeout_ms);
}

int vgpu_channel_begin(struct vgpu_channel *ch, uint32_t max_words, uint32_t **words)
{
	uint64_t position, oldest, deadline = 0;
	uint32_t len;
	bool waited = false;
	int ret;

	if (ch->dead)
		return ch->dead;
	if (!max_words || max_words > vgpu_channel_max_words(ch))
		return -EINVAL;
	len = (max_words + FENCE_WORDS) * 4;
	for (;;) {
		pushbuffer_ring_retire(&ch->ring, ch->completed);
		ret = pushbuffer_ring_place(&ch->ring, len, &position);
		if (ret != -EAGAIN)
			break;
		if (!waited) {
			ch->stats.waits_for_space++;
			deadline = vgpu_now_ns() + (uint64_t)ch->timeout_ms * 1000000ull;
			waited = true;
		}
		/* The GPU still reads the space or every GPFIFO slot is taken:
		 * wait for the oldest submission. */
		if (!pushbuffer_ring_oldest_fence(&ch->ring, &oldest))
			return -EPROTO; /* cannot happen: an empty ring has room */
		if (!vgpu_channel_fence_passed(ch, oldest)) {
			uint64_t now = vgpu_now_ns();

			if (now >= deadline)
				return -ETIMEDOUT;
			ret = vgpu_channel_wait(ch, oldest,
			                        (int)((deadline - now + 999999) / 1000000));
			if (ret)
				return ret;
		}
	}
	if (ret)
		return ret;
	ch->begun = true;
	ch->begun_position = position;
	ch->begun_words = max_words;
	*words = (uint32_t *)((uint8_t *)ch->window.pushbuffer +
	                      pushbuffer_ring_offset(&ch->ring, position));
	return 0;
}

int vgpu_channel_submit(struct vgpu_channel *ch, uint32_t used_words, uint32_t flags,
                        uint64_t *fence)
{
	uint32_t offset, *words, count;
	uint64_t value;

	if (!ch->begun || used_words > ch->begun_words || (flags & ~VGPU_SUBMIT_INTERRUPT))
		return -EINVAL;
	if (ch->dead)
		return ch->dead;
	offset = pushbuffer_ring_offset(&ch->ring, ch->begun_position);
	words = (uint32_t *)((uint8_t *)ch->window.pushbuffer + offset);
	value = ch->next_fence++;
	count = used_words;
	count += vgpu_push_semaphore_release(words + count,
	                                     ch->window.notifier_gpu_va +
	                                             VGPU_NOTIFIER_FENCE_OFFSET,
	                                     value, flags & VGPU_SUBMIT_INTERRUPT);

	/* Entry and pushbuffer first, then GP_PUT (release), then the doorbell. */
	vgpu_gpfifo_write(ch->window.gpfifo, ch->window.gpfifo_entries, ch->put,
	                  ch->window.pushbuffer_gpu_va + offset, count * 4);
	ch->put = (ch->put + 1) & ch->mask;
	vgpu_control_write_gp_put(ch->window.control, ch->put);
	vgpu_control_ring_doorbell(ch->window.control);

	pushbuffer_ring_commit(&ch->ring, ch->begun_position, count * 4, value);
	if (flags & VGPU_SUBMIT_INTERRUPT)
		ch->interrupt_fence = value;
	ch->begun = false;
	ch->stats.submissions++;
	ch->stats.last_fence = value;
	if (fence)
		*fence = value;
	return 0;
}

uint64_t vgpu_channel_pushbuffer_va(const struct vgpu_channel *ch, const void *p)
{
	uint32_t offset = pushbuffer_ring_offset(&ch->ring, ch->begun_position);
	const uint8_t *start = (const uint8_t *)ch->window.pushbuffer + offset;
	const uint8_t *at = p;

	if (!ch->begun || at < start || at >= start + (size_t)ch->begun_words * 4)
		return 0;
	return ch->window.pushbuffer_gpu_va + offset + (uint64_t)(at - start);
}

int vgpu_channel_fault(struct vgpu_channel *ch, uint32_t *cause, uint64_t *address)
{
	const struct vgpu_backend_ops *ops = ch->dev->ops;
	struct vgpu_channel_fault_response fault;
	int ret;

	if (!cause)
		return -EINVAL;
	if (!ops->channel_fault)
		return -ENOTSUP;
	ret = ops->channel_fault(ch->dev->backend, &ch->window, &fault);
	if (ret)
		return ret;
	*cause = fault.cause;
	if (address)
		*address = fault.address;
	return 0;
}

uint32_t vgpu_channel_scratch_count(const struct vgpu_channel *ch)
{
	return (ch->window.notifier_bytes - VGPU_NOTIFIER_SCRATCH_OFFSET) / 8;
}

uint64_t vgpu_channel_scratch_va(const struct vgpu_channel *ch, uint32_t index)
{
	return ch->window.notifier_gpu_va + VGPU_NOTIFIER_SCRATCH_OFFSET + 8ull * index;
}

uint64_t vgpu_channel_read_scratch(struct vgpu_channel *ch, uint32_t index)
{
	return read_notifier(ch, VGPU_NOTIFIER_SCRATCH_OFFSET + 8 * index);
}

void vgpu_channel_stats(const struct vgpu_channel *ch, struct vgpu_channel_stats *out)
{
	*out = ch->stats;
	out->pushbuffer_wraps = ch->ring.wraps;
}
