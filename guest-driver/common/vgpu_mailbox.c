// SPDX-License-Identifier: MIT
/*
 * vgpu_mailbox.c - request and response rings of the vGPU mailbox, guest side
 * (see vgpu_mailbox.h). Compiled in the kernel and in userspace.
 */
#include "vgpu_mailbox.h"

/*
 * Ring polls before sleeping in wait_irq: the backend usually answers while
 * the doorbell write is still being relayed.
 */
#define MAILBOX_SPINS 64
/* Longest single wait_irq: bounds what a lost interrupt costs. */
#define MAILBOX_IRQ_SLICE_MS 10

static struct vgpu_mailbox_header *header_of(struct vgpu_proto *proto)
{
	return (struct vgpu_mailbox_header *)proto->mailbox;
}

static u8 *request_slot(struct vgpu_proto *proto, u32 index)
{
	return proto->mailbox + VGPU_MAILBOX_REQ_RING_OFFSET +
	       (index % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
}

static const u8 *response_slot(struct vgpu_proto *proto, u32 index)
{
	return proto->mailbox + VGPU_MAILBOX_RESP_RING_OFFSET +
	       (index % VGPU_MAILBOX_ENTRIES) * VGPU_MAILBOX_SLOT_SIZE;
}

static u32 read_index(const u32 *index)
{
	return vgpu_le32_to_cpu(vgpu_load_acquire32(index));
}

static void write_index(u32 *index, u32 value)
{
	vgpu_store_release32(index, vgpu_cpu_to_le32(value));
}

static void ring_doorbell(struct vgpu_proto *proto)
{
	/* Slots and req_head are published (release) before the trap. */
	vgpu_wmb();
	proto->ops->reg_write(proto->ctx, VGPU_REG_MAILBOX_DOORBELL, 1);
	proto->counters.doorbells++;
}

static u64 deadline_after(int timeout_ms)
{
	return vgpu_now_ns() + (u64)timeout_ms * 1000000ull;
}

/*
 * Nothing to do yet: spin a little, then sleep in wait_irq for at most a
 * slice. 0 to look again, -ETIMEDOUT past the deadline, or wait_irq's error.
 */
static int wait_step(struct vgpu_proto *proto, u64 deadline, unsigned int *spins)
{
	u64 now = vgpu_now_ns();
	u64 left_ms;
	int ret;

	if (now >= deadline)
		return -ETIMEDOUT;
	if (*spins < MAILBOX_SPINS) {
		(*spins)++;
		vgpu_cpu_relax();
		return 0;
	}
	left_ms = (deadline - now + 999999) / 1000000;
	if (left_ms > MAILBOX_IRQ_SLICE_MS)
		left_ms = MAILBOX_IRQ_SLICE_MS;
	proto->counters.irq_waits++;
	ret = proto->ops->wait_irq(proto->ctx, (int)left_ms);
	return ret < 0 ? ret : 0;
}

/* Why nothing came: the backend is gone (-ENODEV) or just slow. */
static int diagnose_silence(struct vgpu_proto *proto, int silence_error)
{
	u32 status = proto->ops->reg_read(proto->ctx, VGPU_REG_STATUS);

	if (status == 0xffffffffu || (status & VGPU_STATUS_BACKEND_GONE))
		return -ENODEV;
	return silence_error;
}

/*
 * Consume responses. Returns 1 with *out when the response to seq arrived
 * (awaiting != NULL), 0 when the ring is empty, -EPROTO for a malformed
 * response or ring. Responses to abandoned requests are dropped on the way
 * (*dropped set).
 */
static int take_responses(struct vgpu_proto *proto, const struct vgpu_proto_raw_request *awaiting,
			  u32 seq, struct vgpu_response *out, bool *dropped)
{
	struct vgpu_mailbox_header *header = header_of(proto);
	struct vgpu_response slot;
	u32 head;

	for (;;) {
		head = read_index(&header->resp_head);
		if (head == proto->resp_tail)
			return 0;
		if (head - proto->resp_tail > VGPU_MAILBOX_ENTRIES) {
			proto->counters.malformed_responses++;
			return -EPROTO;
		}
		/* One snapshot of the slot; only the copy is looked at. */
		vgpu_memcpy(&slot, response_slot(proto, proto->resp_tail), sizeof(slot));
		proto->resp_tail++;
		write_index(&header->resp_tail, proto->resp_tail);

		slot.opcode = vgpu_le16_to_cpu(slot.opcode);
		slot.payload_size = vgpu_le16_to_cpu(slot.payload_size);
		slot.seq = vgpu_le32_to_cpu(slot.seq);
		slot.status = vgpu_le32_to_cpu(slot.status);
		slot.reserved = vgpu_le32_to_cpu(slot.reserved);

		/* Only requests still unanswered may be answered, in order. */
		if (slot.seq - proto->oldest_seq >= proto->next_seq - proto->oldest_seq) {
			proto->counters.malformed_responses++;
			return -EPROTO;
		}
		proto->oldest_seq = slot.seq + 1;
		if (!awaiting || slot.seq != seq) {
			proto->counters.stale_responses++;
			*dropped = true;
			continue;
		}
		if (slot.opcode != awaiting->opcode ||
		    slot.payload_size > VGPU_MAILBOX_PAYLOAD_SIZE) {
			proto->counters.malformed_responses++;
			return -EPROTO;
		}
		*out = slot;
		return 1;
	}
}

/*
 * Wait until the request ring has a free slot, draining late responses
 * (the backend stops taking requests while the response ring is full).
 */
static int wait_for_request_slot(struct vgpu_proto *proto, u64 deadline)
{
	struct vgpu_mailbox_header *header = header_of(proto);
	unsigned int spins = 0;
	bool counted = false;
	u32 used;
	int ret;

	for (;;) {
		used = proto->req_head - read_index(&header->req_tail);
		if (used > VGPU_MAILBOX_ENTRIES) {
			proto->counters.malformed_responses++;
			return -EPROTO;
		}
		if (used < VGPU_MAILBOX_ENTRIES)
			return 0;
		if (!counted) {
			/* Remind the backend that requests are queued. */
			proto->counters.ring_full_waits++;
			ring_doorbell(proto);
			counted = true;
		}
		{
			struct vgpu_response ignored;
			bool dropped = false;

			ret = take_responses(proto, NULL, 0, &ignored, &dropped);
			if (ret < 0)
				return ret;
			if (dropped)
				ring_doorbell(proto);
		}
		ret = wait_step(proto, deadline, &spins);
		if (ret == -ETIMEDOUT)
			return diagnose_silence(proto, -EBUSY);
		if (ret < 0)
			return ret;
	}
}

int vgpu_mailbox_call(struct vgpu_proto *proto, const struct vgpu_proto_raw_request *request,
		      struct vgpu_response *resp)
{
	struct vgpu_mailbox_header *header = header_of(proto);
	u64 deadline = deadline_after(proto->timeout_ms);
	struct vgpu_request slot;
	unsigned int spins = 0;
	u32 seq;
	int ret;

	if (request->payload_len > VGPU_MAILBOX_PAYLOAD_SIZE)
		return -EINVAL;
	ret = wait_for_request_slot(proto, deadline);
	if (ret)
		return ret;

	seq = proto->next_seq++;
	vgpu_memset(&slot, 0, sizeof(slot));
	slot.opcode = vgpu_cpu_to_le16(request->opcode);
	slot.payload_size = vgpu_cpu_to_le16(request->payload_size);
	slot.seq = vgpu_cpu_to_le32(seq);
	slot.reserved = vgpu_cpu_to_le64(request->reserved);
	if (request->payload_len)
		vgpu_memcpy(slot.payload, request->payload, request->payload_len);
	vgpu_memcpy(request_slot(proto, proto->req_head), &slot, sizeof(slot));
	proto->req_head++;
	write_index(&header->req_head, proto->req_head);
	proto->counters.requests++;
	ring_doorbell(proto);

	for (;;) {
		bool dropped = false;

		ret = take_responses(proto, request, seq, resp, &dropped);
		if (ret == 1) {
			proto->counters.responses++;
			return 0;
		}
		if (ret < 0)
			return ret;
		if (dropped)
			ring_doorbell(proto);
		ret = wait_step(proto, deadline, &spins);
		if (ret == -ETIMEDOUT) {
			proto->counters.timeouts++;
			return diagnose_silence(proto, -ETIMEDOUT);
		}
		if (ret < 0)
			return ret;
	}
}

int vgpu_mailbox_attach(struct vgpu_proto *proto)
{
	struct vgpu_mailbox_header *header = header_of(proto);
	u64 deadline = deadline_after(proto->timeout_ms);
	unsigned int spins = 0;
	u32 req_tail, resp_head;
	int ret;

	if (read_index(&header->entries) != VGPU_MAILBOX_ENTRIES)
		return -EPROTO;

	/*
	 * The guest-written indices may come from a previous driver instance.
	 * Every request it posted is answered exactly once, so once the backend
	 * has consumed them all (req_tail == req_head) and answered them all
	 * (resp_head == req_head), what is left in the response ring is theirs:
	 * drop it.
	 */
	proto->req_head = read_index(&header->req_head);
	proto->resp_tail = read_index(&header->resp_tail);
	for (;;) {
		req_tail = read_index(&header->req_tail);
		resp_head = read_index(&header->resp_head);
		if (proto->req_head - req_tail > VGPU_MAILBOX_ENTRIES ||
		    resp_head - proto->resp_tail > VGPU_MAILBOX_ENTRIES)
			return -EPROTO;
		if (req_tail == proto->req_head && resp_head == proto->req_head)
			break;
		ret = wait_step(proto, deadline, &spins);
		if (ret == -ETIMEDOUT)
			return diagnose_silence(proto, -EBUSY);
		if (ret < 0)
			return ret;
	}
	proto->resp_tail = resp_head;
	write_index(&header->resp_tail, proto->resp_tail);
	proto->oldest_seq = proto->next_seq;
	return 0;
}
