// SPDX-License-Identifier: MIT
/*
 * transfer.c - bytes between host memory and the VM's GPU memory, carried
 * by the channel itself (see vgpu_guest.h, "Moving data"): the data rides
 * in the argument words of a NOP, which the GPU ignores, and a COPY moves
 * it from (upload) or into (download) those words' GPU addresses.
 */
#include <errno.h>
#include <string.h>

#include "device_internal.h"
#include "vgpu/abi/commands.h"

/* The NOP header and the COPY around the data. */
#define COPY_WORDS (1u + VGPU_COPY_ARG_WORDS)
#define OVERHEAD_WORDS (1u + COPY_WORDS)
/* A NOP carries at most this many argument words (16-bit count). */
#define NOP_MAX_WORDS 0xffffu

static uint32_t piece_words(const struct vgpu_channel *ch)
{
	uint32_t words = vgpu_channel_max_words(ch);

	words = words > OVERHEAD_WORDS ? words - OVERHEAD_WORDS : 0;
	return words < NOP_MAX_WORDS ? words : NOP_MAX_WORDS;
}

uint64_t vgpu_channel_transfer_max(const struct vgpu_channel *ch)
{
	return (uint64_t)piece_words(ch) * 4;
}

/*
 * Reserve one piece: a NOP of data_words argument words, then room for
 * the COPY. *data is where the data goes, *data_va its GPU address.
 */
static int begin_piece(struct vgpu_channel *ch, uint32_t data_words, uint32_t **words,
                       uint32_t **data, uint64_t *data_va)
{
	int ret = vgpu_channel_begin(ch, data_words + OVERHEAD_WORDS, words);

	if (ret)
		return ret;
	(*words)[0] = htole32(VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, data_words));
	*data = *words + 1;
	*data_va = vgpu_channel_pushbuffer_va(ch, *data);
	return *data_va ? 0 : -EPROTO;
}

int vgpu_channel_upload(struct vgpu_channel *ch, uint64_t dst_va, const void *src,
                        uint64_t bytes, uint64_t *fence)
{
	const uint8_t *from = src;
	uint64_t max = vgpu_channel_transfer_max(ch), last = 0;
	int ret;

	if (!bytes || !src || dst_va + bytes < dst_va || !max)
		return -EINVAL;
	while (bytes) {
		uint32_t piece = (uint32_t)(bytes < max ? bytes : max);
		uint32_t data_words = (piece + 3) / 4, *words, *data, n;
		uint64_t data_va;

		ret = begin_piece(ch, data_words, &words, &data, &data_va);
		if (ret)
			return ret;
		data[data_words - 1] = 0; /* the padding of a partial word */
		memcpy(data, from, piece);
		n = 1 + data_words;
		n += vgpu_push_copy(words + n, dst_va, data_va, piece);
		ret = vgpu_channel_submit(ch, n, 0, &last);
		if (ret)
			return ret;
		from += piece;
		dst_va += piece;
		bytes -= piece;
	}
	if (fence)
		*fence = last;
	return 0;
}

int vgpu_channel_download(struct vgpu_channel *ch, void *dst, uint64_t src_va, uint64_t bytes)
{
	uint8_t *to = dst;
	uint64_t max = vgpu_channel_transfer_max(ch), fence;
	int ret;

	if (!bytes || !dst || src_va + bytes < src_va || !max)
		return -EINVAL;
	while (bytes) {
		uint32_t piece = (uint32_t)(bytes < max ? bytes : max);
		uint32_t data_words = (piece + 3) / 4, *words, *data, n;
		uint64_t data_va;

		ret = begin_piece(ch, data_words, &words, &data, &data_va);
		if (ret)
			return ret;
		n = 1 + data_words;
		n += vgpu_push_copy(words + n, data_va, src_va, piece);
		ret = vgpu_channel_submit(ch, n, 0, &fence);
		if (ret)
			return ret;
		/* The GPU wrote the words once the fence passed; nothing reuses
		 * them before this thread's next begin. */
		ret = vgpu_channel_wait(ch, fence, -1);
		if (ret)
			return ret;
		memcpy(to, data, piece);
		to += piece;
		src_va += piece;
		bytes -= piece;
	}
	return 0;
}
