// SPDX-License-Identifier: MIT
/* fake_device.c - an in-process vGPU mailbox for protocol tests (see fake_device.h). */
#include "fake_device.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_QUERY_SHARE (512ull << 20)
#define FAKE_QUERY_CAP (1ull << 30)
#define FAKE_QUERY_CHUNK (2ull << 20)
#define FAKE_QUERY_TOTAL (1ull << 30)
#define FAKE_MODULE_TABLE_BYTES 1024u /* the room every module's table needs */
#define FAKE_MODULE_VARIABLES_VA 0x20000000ull

static struct vgpu_mailbox_header *header_of(struct fake_device *fake)
{
	return (struct vgpu_mailbox_header *)fake->mailbox;
}

static uint32_t load_index(const uint32_t *p)
{
	return le32toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
}

static void store_index(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, htole32(v), __ATOMIC_RELEASE);
}

struct fake_device *fake_device_create(void)
{
	struct fake_device *fake = calloc(1, sizeof(*fake));

	if (!fake)
		abort();
	if (posix_memalign((void **)&fake->mailbox, 4096, VGPU_MAILBOX_SIZE))
		abort();
	memset(fake->mailbox, 0, VGPU_MAILBOX_SIZE);
	header_of(fake)->entries = htole32(VGPU_MAILBOX_ENTRIES);
	fake->magic = VGPU_MAGIC;
	fake->abi_version = VGPU_ABI_VERSION;
	fake->status = VGPU_STATUS_READY;
	fake->features = VGPU_FEATURE_PRIORITY_HINTS | VGPU_FEATURE_STATS;
	fake->offered_features = fake->features;
	fake->max_channels = 4;
	fake->next_handle = 1;
	fake->next_va = 1ull << 32;
	pthread_mutex_init(&fake->lock, NULL);
	pthread_cond_init(&fake->cond, NULL);
	return fake;
}

void fake_device_destroy(struct fake_device *fake)
{
	if (!fake)
		return;
	if (fake->threaded)
		fake_device_stop_thread(fake);
	pthread_mutex_destroy(&fake->lock);
	pthread_cond_destroy(&fake->cond);
	free(fake->mailbox);
	free(fake);
}

void fake_device_set_indices(struct fake_device *fake, uint32_t req_head, uint32_t req_tail,
                             uint32_t resp_head, uint32_t resp_tail)
{
	struct vgpu_mailbox_header *header = header_of(fake);

	store_index(&header->req_head, req_head);
	store_index(&header->req_tail, req_tail);
	store_index(&header->resp_head, resp_head);
	store_index(&header->resp_tail, resp_tail);
	fake->req_tail = req_tail;
	fake->resp_head = resp_head;
}

/* ------------------------------------------------------------------------ */
/* The fake backend                                                         */

static uint32_t payload_u32(const struct vgpu_request *request, unsigned offset)
{
	uint32_t v;

	memcpy(&v, request->payload + offset, 4);
	return le32toh(v);
}

static uint64_t payload_u64(const struct vgpu_request *request, unsigned offset)
{
	uint64_t v;

	memcpy(&v, request->payload + offset, 8);
	return le64toh(v);
}

static void answer(struct vgpu_response *response, const void *payload, uint16_t size)
{
	memcpy(response->payload, payload, size);
	response->payload_size = size;
}

static bool handle_live(struct fake_device *fake, uint32_t handle, uint32_t *slot)
{
	uint32_t i;

	for (i = 0; i < fake->live_count; i++) {
		if (fake->live_handles[i] == handle) {
			if (slot)
				*slot = i;
			return true;
		}
	}
	return false;
}

static void respond(struct fake_device *fake, const struct vgpu_request *request,
                    struct vgpu_response *response)
{
	memset(response, 0, sizeof(*response));
	response->opcode = request->opcode;
	response->seq = request->seq;
	response->status = VGPU_STATUS_OK;

	if (request->reserved || request->payload_size > VGPU_MAILBOX_PAYLOAD_SIZE) {
		response->status = VGPU_STATUS_INVALID;
		return;
	}
	if (!fake->hello_done && request->opcode != VGPU_OP_HELLO) {
		response->status = VGPU_STATUS_NOT_READY;
		return;
	}
	switch (request->opcode) {
	case VGPU_OP_HELLO: {
		struct vgpu_hello_response hello = {
			.abi_version = htole32(VGPU_ABI_VERSION),
			.features = htole32(payload_u32(request, 4) & fake->offered_features),
			.max_channels = htole32(fake->max_channels),
		};

		if (payload_u32(request, 0) >> 16 != VGPU_ABI_VERSION_MAJOR) {
			response->status = VGPU_STATUS_VERSION;
			return;
		}
		fake->hello_done = true;
		answer(response, &hello, sizeof(hello));
		return;
	}
	case VGPU_OP_QUERY: {
		struct vgpu_query_response query = {
			.vram_share_bytes = htole64(FAKE_QUERY_SHARE),
			.cap_bytes = htole64(FAKE_QUERY_CAP),
			.chunk_bytes = htole64(FAKE_QUERY_CHUNK),
			.vram_total_bytes = htole64(FAKE_QUERY_TOTAL),
			.page_size_mask = htole32(3),
		};

		answer(response, &query, sizeof(query));
		return;
	}
	case VGPU_OP_ALLOC: {
		uint64_t bytes = payload_u64(request, 0);
		struct vgpu_alloc_response alloc;

		if (request->payload_size != 16 || !bytes || payload_u32(request, 8) > 15 ||
		    payload_u32(request, 12)) {
			response->status = VGPU_STATUS_INVALID;
			return;
		}
		if (fake->live_count == 256) {
			response->status = VGPU_STATUS_LIMIT;
			return;
		}
		bytes = (bytes + 4095) & ~4095ull;
		alloc = (struct vgpu_alloc_response){
			.gpu_va = htole64(fake->next_va),
			.bytes = htole64(bytes),
			.handle = htole32(fake->next_handle),
		};
		fake->live_handles[fake->live_count++] = fake->next_handle++;
		fake->next_va += (bytes + (2u << 20) - 1) & ~((2ull << 20) - 1);
		fake->allocated += bytes;
		answer(response, &alloc, sizeof(alloc));
		return;
	}
	case VGPU_OP_FREE: {
		uint32_t slot;

		if (!handle_live(fake, payload_u32(request, 0), &slot)) {
			response->status = VGPU_STATUS_NOT_FOUND;
			return;
		}
		fake->live_handles[slot] = fake->live_handles[--fake->live_count];
		return;
	}
	case VGPU_OP_SET_PRIORITY:
		if (!handle_live(fake, payload_u32(request, 0), NULL))
			response->status = VGPU_STATUS_NOT_FOUND;
		else if (payload_u32(request, 4) > 15)
			response->status = VGPU_STATUS_INVALID;
		return;
	case VGPU_OP_CHANNEL_CREATE: {
		uint32_t entries = payload_u32(request, 0), index;
		struct vgpu_channel_create_response ch;
		uint32_t gpfifo_bytes;

		if (!entries)
			entries = 512;
		if (entries & (entries - 1) || entries > 4096) {
			response->status = VGPU_STATUS_INVALID;
			return;
		}
		for (index = 0; index < fake->max_channels; index++)
			if (!(fake->channels_live & (1u << index)))
				break;
		if (index == fake->max_channels) {
			response->status = VGPU_STATUS_LIMIT;
			return;
		}
		fake->channels_live |= 1u << index;
		gpfifo_bytes = (entries * 16 + 4095) & ~4095u;
		ch = (struct vgpu_channel_create_response){
			.index = htole32(index),
			.gpfifo_entries = htole32(entries),
			.control_offset = htole32(0),
			.gpfifo_offset = htole32(0x1000),
			.notifier_offset = htole32(0x1000 + gpfifo_bytes),
			.notifier_bytes = htole32(0x1000),
			.pushbuf_offset = htole32(0x2000 + gpfifo_bytes),
			.pushbuf_bytes = htole32(0x10000),
			.notifier_gpu_va = htole64(0x10000000ull + index * 0x100000ull),
			.pushbuf_gpu_va = htole64(0x10010000ull + index * 0x100000ull),
		};
		answer(response, &ch, sizeof(ch));
		return;
	}
	case VGPU_OP_CHANNEL_DESTROY: {
		uint32_t index = payload_u32(request, 0);

		if (index >= 32 || !(fake->channels_live & (1u << index)))
			response->status = VGPU_STATUS_NOT_FOUND;
		else
			fake->channels_live &= ~(1u << index);
		return;
	}
	case VGPU_OP_MODULE_LOAD: {
		struct vgpu_module_load_response loaded = { 0 };
		uint32_t module;

		if (request->payload_size != sizeof(struct vgpu_module_load_request) ||
		    !payload_u64(request, 0) || !payload_u64(request, 8) ||
		    payload_u64(request, 8) > VGPU_MODULE_IMAGE_MAX_BYTES || payload_u32(request, 28)) {
			response->status = VGPU_STATUS_INVALID;
			return;
		}
		if (payload_u32(request, 24) < FAKE_MODULE_TABLE_BYTES) {
			/* Nothing loaded; the room the table needs. */
			loaded.table_bytes = htole32(FAKE_MODULE_TABLE_BYTES);
			answer(response, &loaded, sizeof(loaded));
			response->status = VGPU_STATUS_LIMIT;
			return;
		}
		for (module = 0; module < 64; module++)
			if (!(fake->modules_live & (1ull << module)))
				break;
		if (module == 64) {
			response->status = VGPU_STATUS_LIMIT;
			return;
		}
		fake->modules_live |= 1ull << module;
		loaded = (struct vgpu_module_load_response){
			.module = htole32(module),
			.function_count = htole32(2),
			.variable_count = htole32(1),
			.table_bytes = htole32(FAKE_MODULE_TABLE_BYTES),
			.variables_va = htole64(FAKE_MODULE_VARIABLES_VA + module * 0x10000ull),
			.variables_bytes = htole64(4096),
		};
		answer(response, &loaded, sizeof(loaded));
		return;
	}
	case VGPU_OP_MODULE_UNLOAD: {
		uint32_t module = payload_u32(request, 0);

		if (module >= 64 || !(fake->modules_live & (1ull << module)))
			response->status = VGPU_STATUS_NOT_FOUND;
		else
			fake->modules_live &= ~(1ull << module);
		return;
	}
	case VGPU_OP_STATS: {
		struct vgpu_stats_response stats = {
			.allocated_bytes = htole64(fake->allocated),
			.resident_bytes = htole64(fake->allocated),
			.fair_share_bytes = htole64(FAKE_QUERY_SHARE),
			.evictions = htole32(3),
			.returns = htole32(2),
		};

		answer(response, &stats, sizeof(stats));
		return;
	}
	default:
		response->status = VGPU_STATUS_UNSUPPORTED;
		return;
	}
}

void fake_device_post(struct fake_device *fake, const struct vgpu_response *response)
{
	struct vgpu_mailbox_header *header = header_of(fake);
	struct vgpu_response slot = *response;

	slot.opcode = htole16(slot.opcode);
	slot.payload_size = htole16(slot.payload_size);
	slot.seq = htole32(slot.seq);
	slot.status = htole32(slot.status);
	slot.reserved = htole32(slot.reserved);
	memcpy(fake->mailbox + VGPU_MAILBOX_RESP_RING_OFFSET +
	               (fake->resp_head % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE,
	       &slot, sizeof(slot));
	fake->resp_head++;
	store_index(&header->resp_head, fake->resp_head);
	fake->pending_irqs |= VGPU_IRQ_MAILBOX;
}

static bool response_space(struct fake_device *fake)
{
	return fake->resp_head - load_index(&header_of(fake)->resp_tail) < VGPU_MAILBOX_ENTRIES;
}

unsigned fake_device_process(struct fake_device *fake)
{
	struct vgpu_mailbox_header *header = header_of(fake);
	struct vgpu_request request;
	struct vgpu_response response;
	enum fake_action action;
	unsigned answered = 0;
	uint32_t head;

	if (fake->stalled)
		return 0;
	for (;;) {
		head = load_index(&header->req_head);
		if (head == fake->req_tail || head - fake->req_tail > VGPU_MAILBOX_ENTRIES)
			break;
		if (!response_space(fake))
			break;
		memcpy(&request,
		       fake->mailbox + VGPU_MAILBOX_REQ_RING_OFFSET +
		               (fake->req_tail % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE,
		       sizeof(request));
		fake->req_tail++;
		store_index(&header->req_tail, fake->req_tail);
		fake->last_request = request;
		fake->requests_seen++;

		request.opcode = le16toh(request.opcode);
		request.payload_size = le16toh(request.payload_size);
		request.seq = le32toh(request.seq);
		request.reserved = le64toh(request.reserved);
		respond(fake, &request, &response);
		action = fake->mutate ? fake->mutate(fake->mutate_arg, &request, &response) :
		                        FAKE_POST;
		if (action != FAKE_DROP)
			fake_device_post(fake, &response);
		if (action == FAKE_TWICE && response_space(fake))
			fake_device_post(fake, &response);
		answered++;
	}
	return answered;
}

/* ------------------------------------------------------------------------ */
/* Registers and interrupts                                                 */

static uint32_t fake_reg_read(void *ctx, uint32_t offset)
{
	struct fake_device *fake = ctx;
	uint32_t value;

	pthread_mutex_lock(&fake->lock);
	fake->reg_reads++;
	switch (offset) {
	case VGPU_REG_MAGIC:
		value = fake->magic;
		break;
	case VGPU_REG_ABI_VERSION:
		value = fake->abi_version;
		break;
	case VGPU_REG_FEATURES:
		value = fake->features;
		break;
	case VGPU_REG_STATUS:
		value = fake->status;
		break;
	case VGPU_REG_ERROR_CHANNELS:
		value = fake->error_channels;
		fake->error_channels = 0;
		break;
	default:
		value = 0;
		break;
	}
	pthread_mutex_unlock(&fake->lock);
	return value;
}

static void fake_reg_write(void *ctx, uint32_t offset, uint32_t value)
{
	struct fake_device *fake = ctx;

	(void)value;
	if (offset != VGPU_REG_MAILBOX_DOORBELL)
		return;
	pthread_mutex_lock(&fake->lock);
	fake->doorbells++;
	if (fake->threaded)
		pthread_cond_broadcast(&fake->cond);
	else if (!fake->defer_answers && !fake->answer_in_wait)
		fake_device_process(fake);
	pthread_mutex_unlock(&fake->lock);
}

static void add_ms(struct timespec *ts, int ms)
{
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static int fake_wait_irq(void *ctx, int timeout_ms)
{
	struct fake_device *fake = ctx;
	uint32_t mask;

	pthread_mutex_lock(&fake->lock);
	fake->irq_waits++;
	if (fake->wait_irq_error) {
		pthread_mutex_unlock(&fake->lock);
		return fake->wait_irq_error;
	}
	if (fake->threaded) {
		struct timespec deadline;

		clock_gettime(CLOCK_REALTIME, &deadline);
		add_ms(&deadline, timeout_ms);
		while (!fake->pending_irqs &&
		       pthread_cond_timedwait(&fake->cond, &fake->lock, &deadline) == 0)
			;
	} else {
		if (fake->answer_in_wait && !fake->defer_answers)
			fake_device_process(fake);
		if (!fake->pending_irqs) {
			/* Nothing will happen: sleep a little, as a real wait would. */
			struct timespec pause = { 0, 200000 };

			pthread_mutex_unlock(&fake->lock);
			nanosleep(&pause, NULL);
			pthread_mutex_lock(&fake->lock);
		}
	}
	mask = fake->pending_irqs;
	fake->pending_irqs = 0;
	pthread_mutex_unlock(&fake->lock);
	return (int)mask;
}

static const struct vgpu_proto_device_ops fake_ops = {
	.reg_read = fake_reg_read,
	.reg_write = fake_reg_write,
	.wait_irq = fake_wait_irq,
};

const struct vgpu_proto_device_ops *fake_device_ops(void)
{
	return &fake_ops;
}

struct vgpu_proto_config fake_device_proto_config(struct fake_device *fake, int timeout_ms)
{
	struct vgpu_proto_config config = {
		.ops = &fake_ops,
		.ctx = fake,
		.mailbox = fake->mailbox,
		.timeout_ms = timeout_ms,
	};

	return config;
}

/* ------------------------------------------------------------------------ */
/* Threaded mode                                                            */

static void *device_thread(void *arg)
{
	struct fake_device *fake = arg;

	pthread_mutex_lock(&fake->lock);
	while (!fake->thread_stop) {
		if (fake->doorbells != fake->doorbell_count_seen) {
			fake->doorbell_count_seen = fake->doorbells;
			if (fake_device_process(fake))
				pthread_cond_broadcast(&fake->cond);
			continue;
		}
		pthread_cond_wait(&fake->cond, &fake->lock);
	}
	pthread_mutex_unlock(&fake->lock);
	return NULL;
}

void fake_device_start_thread(struct fake_device *fake)
{
	fake->threaded = true;
	fake->thread_stop = false;
	if (pthread_create(&fake->thread, NULL, device_thread, fake))
		abort();
}

void fake_device_stop_thread(struct fake_device *fake)
{
	pthread_mutex_lock(&fake->lock);
	fake->thread_stop = true;
	pthread_cond_broadcast(&fake->cond);
	pthread_mutex_unlock(&fake->lock);
	pthread_join(fake->thread, NULL);
	fake->threaded = false;
}
