// SPDX-License-Identifier: MIT
/* channel.c - command channels (see channel.h). */
#include "channel.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simgpu_device.h"
#include "vgpu/memfd.h"

uint64_t channel_priv_va(const struct simgpu *gpu, uint32_t channel_id)
{
	return gpu->caps.va_reserved_base + (uint64_t)channel_id * VRAM_FRAME_BYTES;
}

uint32_t channel_read_gp_put(struct simgpu_channel *ch)
{
	return vgpu_control_read_gp_put(ch->control);
}

void channel_publish_gp_get(struct simgpu_channel *ch)
{
	uint32_t *word = vgpu_control_word(ch->control, VGPU_CONTROL_GP_GET);
	uint32_t value = htole32(ch->gp_get);

	if (__atomic_load_n(word, __ATOMIC_RELAXED) != value)
		__atomic_store_n(word, value, __ATOMIC_RELEASE);
}

void channel_read_entry(struct simgpu_channel *ch, uint32_t index,
                        struct vgpu_gpfifo_entry *entry)
{
	memcpy(entry, ch->gpfifo + (size_t)index * VGPU_GPFIFO_ENTRY_BYTES, sizeof(*entry));
	entry->pushbuffer_va = le64toh(entry->pushbuffer_va);
	entry->length_bytes = le32toh(entry->length_bytes);
	entry->flags = le32toh(entry->flags);
}

static int create_window(struct simgpu_channel *ch)
{
	ch->memfd = vgpu_memfd_create("simgpu-channel", ch->window_bytes);
	if (ch->memfd < 0)
		return ch->memfd;
	ch->window = mmap(NULL, ch->window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ch->memfd, 0);
	if (ch->window == MAP_FAILED) {
		ch->window = NULL;
		return -errno;
	}
	ch->control = ch->window;
	ch->gpfifo = ch->window + VGPU_CONTROL_BYTES;
	*vgpu_control_word(ch->control, VGPU_CONTROL_VERSION) =
		htole32(VGPU_COMMANDS_VERSION);
	*vgpu_control_word(ch->control, VGPU_CONTROL_REVISION) =
		htole32(VGPU_COMMANDS_REVISION);
	return 0;
}

/* The channel's privileged pushbuffer page: a NOP and a PRIV_FENCE. */
static int create_priv_page(struct simgpu_channel *ch)
{
	struct simgpu *gpu = ch->gpu;
	uint32_t *words;
	int ret;

	ret = vram_allocator_alloc(&gpu->reserved_allocator, VRAM_FRAME_BYTES, 1, &ch->priv_frame);
	if (ret)
		return ret;
	words = (uint32_t *)(gpu->vram + ch->priv_frame);
	memset(words, 0, VRAM_FRAME_BYTES);
	vgpu_push_nop(words + CHANNEL_PRIV_NOP_OFFSET / 4);
	vgpu_push_u32(words + CHANNEL_PRIV_FENCE_OFFSET / 4,
	              VGPU_COMMAND_HEADER(VGPU_CMD_PRIV_FENCE, 0, 0));
	ch->priv_va = channel_priv_va(gpu, ch->id);
	ret = address_space_map_internal(ch->as, ch->priv_va, GMMU_SMALL_PAGE_SHIFT, 1,
	                                 PTE_PRIVILEGED | PTE_READ_ONLY |
	                                 ((uint64_t)VGPU_TARGET_VRAM << PTE_TARGET_SHIFT),
	                                 &ch->priv_frame);
	if (ret) {
		vram_allocator_free(&gpu->reserved_allocator, VRAM_FRAME_BYTES, 1, &ch->priv_frame);
		ch->priv_frame = 0;
		ch->priv_va = 0;
	}
	return ret;
}

static void destroy_priv_page(struct simgpu_channel *ch)
{
	struct simgpu_address_space *as = ch->as;

	if (!ch->priv_va)
		return;
	pthread_mutex_lock(&as->lock);
	page_table_unmap(&as->page_table, ch->priv_va, VRAM_FRAME_BYTES);
	/* the frame is recycled: no engine may keep translating to it */
	tlb_invalidate_range(&as->tlb, ch->priv_va, VRAM_FRAME_BYTES);
	pthread_mutex_unlock(&as->lock);
	vram_allocator_free(&ch->gpu->reserved_allocator, VRAM_FRAME_BYTES, 1, &ch->priv_frame);
}

static void free_channel(struct simgpu_channel *ch)
{
	if (ch->window)
		munmap(ch->window, ch->window_bytes);
	if (ch->memfd >= 0)
		close(ch->memfd);
	free(ch->priv_slots);
	free(ch->run.words);
	command_progress_release(&ch->run.command);
	free(ch);
}

int simgpu_channel_create(struct vgpu_hal_as *hal_as, uint32_t gpfifo_entries,
                          struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info)
{
	struct simgpu_address_space *as = to_simgpu_as(hal_as);
	struct simgpu *gpu = as->gpu;
	struct simgpu_channel *ch;
	uint64_t ring_bytes;
	int ret;

	if (!out)
		return -EINVAL;
	if (gpfifo_entries == 0)
		gpfifo_entries = gpu->config.default_gpfifo_entries;
	if (gpfifo_entries < 2 || gpfifo_entries > gpu->caps.gpfifo_entries_max ||
	    (gpfifo_entries & (gpfifo_entries - 1)))
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->memfd = -1;
	ch->base.hal = hal_as->hal;
	ch->gpu = gpu;
	ch->as = as;
	ch->fetch_enabled = true;
	ring_bytes = (uint64_t)gpfifo_entries * VGPU_GPFIFO_ENTRY_BYTES;
	ring_bytes = (ring_bytes + VRAM_FRAME_BYTES - 1) & ~(uint64_t)(VRAM_FRAME_BYTES - 1);
	ch->layout = (struct vgpu_hal_channel_layout){
		.control_bytes = VGPU_CONTROL_BYTES,
		.gp_put_offset = VGPU_CONTROL_GP_PUT,
		.gp_get_offset = VGPU_CONTROL_GP_GET,
		.doorbell_offset = VGPU_CONTROL_DOORBELL,
		.gpfifo_entries = gpfifo_entries,
		.gpfifo_entry_bytes = VGPU_GPFIFO_ENTRY_BYTES,
		.gpfifo_bytes = (uint32_t)ring_bytes,
	};
	ch->window_bytes = VGPU_CONTROL_BYTES + ring_bytes;
	ch->priv_slots = calloc(gpfifo_entries, sizeof(*ch->priv_slots));
	if (!ch->priv_slots) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = create_window(ch);
	if (ret)
		goto fail;
	ret = pfifo_add_channel(&gpu->pfifo, ch);
	if (ret)
		goto fail;
	ret = create_priv_page(ch);
	if (ret) {
		pfifo_remove_channel(&gpu->pfifo, ch);
		goto fail;
	}
	if (info) {
		info->id = ch->id;
		info->layout = ch->layout;
		info->control = ch->control;
		info->gpfifo = ch->gpfifo;
		info->memfd = ch->memfd;
		info->control_offset = 0;
		info->gpfifo_offset = VGPU_CONTROL_BYTES;
	}
	*out = &ch->base;
	return 0;
fail:
	free_channel(ch);
	return ret;
}

void simgpu_channel_destroy(struct vgpu_hal_channel *hal_ch)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);

	if (!ch)
		return;
	pfifo_remove_channel(&ch->gpu->pfifo, ch);
	destroy_priv_page(ch);
	free_channel(ch);
}

void simgpu_channel_set_fetch(struct vgpu_hal_channel *hal_ch, bool enabled)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);
	struct pfifo *pfifo = &ch->gpu->pfifo;

	pthread_mutex_lock(&pfifo->lock);
	ch->fetch_enabled = enabled;
	if (enabled)
		pfifo_wake_locked(pfifo);
	pthread_mutex_unlock(&pfifo->lock);
}

uint32_t simgpu_channel_gp_get(struct vgpu_hal_channel *hal_ch)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);
	struct pfifo *pfifo = &ch->gpu->pfifo;
	uint32_t gp_get;

	pthread_mutex_lock(&pfifo->lock);
	gp_get = ch->gp_get;
	pthread_mutex_unlock(&pfifo->lock);
	return gp_get;
}

void simgpu_channel_kill(struct vgpu_hal_channel *hal_ch, enum vgpu_hal_error_cause cause)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);

	pfifo_kill_channel(&ch->gpu->pfifo, ch, cause);
}

enum vgpu_hal_channel_state simgpu_channel_state(struct vgpu_hal_channel *hal_ch,
                                                 struct vgpu_hal_event *last_error)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);
	struct pfifo *pfifo = &ch->gpu->pfifo;
	enum vgpu_hal_channel_state state = VGPU_CHANNEL_OK;

	pthread_mutex_lock(&pfifo->lock);
	if (ch->failed) {
		state = VGPU_CHANNEL_ERROR;
		if (last_error)
			*last_error = ch->error;
	}
	pthread_mutex_unlock(&pfifo->lock);
	return state;
}

int simgpu_channel_priv_submit(struct vgpu_hal_channel *hal_ch, enum vgpu_hal_priv_cmd cmd,
                               uint64_t *ticket)
{
	struct simgpu_channel *ch = to_simgpu_channel(hal_ch);
	struct pfifo *pfifo = &ch->gpu->pfifo;
	uint32_t entries = ch->layout.gpfifo_entries, gp_put, next;
	struct priv_slot *slot;
	int ret = 0;

	if (cmd != VGPU_PRIV_NOP && cmd != VGPU_PRIV_FENCE)
		return -EINVAL;
	pthread_mutex_lock(&pfifo->lock);
	gp_put = channel_read_gp_put(ch);
	if (ch->failed || gp_put >= entries) {
		ret = -EIO;
		goto out;
	}
	next = (gp_put + 1) & (entries - 1);
	if (next == ch->gp_get) {
		ret = -ENOSPC;
		goto out;
	}
	vgpu_gpfifo_write(ch->gpfifo, entries, gp_put,
	                  ch->priv_va + (cmd == VGPU_PRIV_FENCE ? CHANNEL_PRIV_FENCE_OFFSET
	                                                        : CHANNEL_PRIV_NOP_OFFSET),
	                  4);
	slot = &ch->priv_slots[gp_put];
	slot->pending = true;
	slot->command = (uint8_t)cmd;
	slot->ticket = cmd == VGPU_PRIV_FENCE ? ++pfifo->next_ticket : 0;
	if (ticket)
		*ticket = slot->ticket;
	vgpu_control_write_gp_put(ch->control, next);
	pfifo_wake_locked(pfifo);
out:
	pthread_mutex_unlock(&pfifo->lock);
	return ret;
}

void simgpu_channel_kick(struct vgpu_hal_channel *hal_ch)
{
	pfifo_wake(&to_simgpu_channel(hal_ch)->gpu->pfifo);
}
