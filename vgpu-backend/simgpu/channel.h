/* SPDX-License-Identifier: MIT */
/*
 * channel.h - command channels.
 *
 * A channel's window (control page, then the GPFIFO ring) lives in one
 * memfd mapped shared, so a transport can map the very same pages into a
 * guest. GP_GET in the control page is only a published copy: the
 * authoritative GP_GET is channel->gp_get, owned by PFIFO, which rewrites the
 * published word whenever software scribbles over it.
 *
 * Each channel also owns one privileged, read-only page in the reserved VA
 * range of its address space (channel_priv_va) holding the pushbuffers of
 * privileged entries: a NOP and a PRIV_FENCE. vgpu_hal_channel_priv_submit
 * writes a ring entry pointing there and records, outside guest-visible
 * memory, that this ring slot is privileged and which ticket it carries; only
 * such recorded slots execute with privilege, so a guest can neither forge
 * nor replay a privileged entry.
 */
#ifndef SIMGPU_CHANNEL_H
#define SIMGPU_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "address_space.h"
#include "gpu_kernels.h"
#include "vgpu/hal.h"
#include "vgpu/abi/commands.h"

#define CHANNEL_PRIV_NOP_OFFSET 0u
#define CHANNEL_PRIV_FENCE_OFFSET 64u

struct simgpu;

struct priv_slot {
	bool pending;     /* this ring slot holds a privileged entry */
	uint8_t command;  /* enum vgpu_hal_priv_cmd */
	uint64_t ticket;
};

/* The entry PFIFO is executing, kept across turns while it waits or after
 * its turn ended inside it. */
struct pushbuffer_run {
	bool active;
	bool privileged;
	bool loaded;       /* words hold the pushbuffer */
	uint64_t ticket;
	uint64_t va;       /* of the pushbuffer */
	uint32_t *words;
	uint32_t capacity; /* words allocated */
	uint32_t count;    /* words of this pushbuffer */
	uint32_t position; /* the command executing or next to execute */
	struct command_progress command; /* where the command at position stands */
};

struct simgpu_channel {
	struct vgpu_hal_channel base;
	struct simgpu *gpu;
	struct simgpu_address_space *as;
	uint32_t id;
	struct vgpu_hal_channel_layout layout;
	int memfd;
	uint8_t *window;
	size_t window_bytes;
	uint8_t *control;
	uint8_t *gpfifo;
	uint64_t priv_va;
	uint64_t priv_frame;

	/* under the PFIFO lock */
	bool fetch_enabled;
	bool failed;
	bool removing; /* being destroyed: PFIFO gives it no more turns */
	bool killing;  /* a kill waits for its turn to end: no more turns */
	struct vgpu_hal_event error;
	uint32_t gp_get;
	struct priv_slot *priv_slots; /* one per ring slot */

	/* PFIFO thread only */
	struct pushbuffer_run run;
};

static inline struct simgpu_channel *to_simgpu_channel(struct vgpu_hal_channel *ch)
{
	return (struct simgpu_channel *)ch;
}

uint64_t channel_priv_va(const struct simgpu *gpu, uint32_t channel_id);

/* GP_PUT as software last wrote it (acquire). */
uint32_t channel_read_gp_put(struct simgpu_channel *ch);
/* Publish the authoritative GP_GET if the control page says otherwise. */
void channel_publish_gp_get(struct simgpu_channel *ch);
void channel_read_entry(struct simgpu_channel *ch, uint32_t index,
                        struct vgpu_gpfifo_entry *entry);

/* HAL operations. */
int simgpu_channel_create(struct vgpu_hal_as *as, uint32_t gpfifo_entries,
                          struct vgpu_hal_channel **out, struct vgpu_hal_channel_info *info);
void simgpu_channel_destroy(struct vgpu_hal_channel *ch);
void simgpu_channel_set_fetch(struct vgpu_hal_channel *ch, bool enabled);
uint32_t simgpu_channel_gp_get(struct vgpu_hal_channel *ch);
enum vgpu_hal_channel_state simgpu_channel_state(struct vgpu_hal_channel *ch,
                                                 struct vgpu_hal_event *last_error);
int simgpu_channel_priv_submit(struct vgpu_hal_channel *ch, enum vgpu_hal_priv_cmd cmd,
                               uint64_t *ticket);
void simgpu_channel_kick(struct vgpu_hal_channel *ch);
void simgpu_channel_kill(struct vgpu_hal_channel *ch, enum vgpu_hal_error_cause cause);

#endif /* SIMGPU_CHANNEL_H */
