/* SPDX-License-Identifier: MIT */
/*
 * pfifo.h - the GPU's scheduler: PFIFO plus the compute engine it feeds.
 *
 * One thread visits the live channels round-robin. Per turn a channel gets
 * at most ONE GPFIFO entry: it continues its in-flight entry (one waiting on
 * a SEMAPHORE_ACQUIRE, or one whose previous turn ended inside it) or, when
 * fetching is enabled and GP_PUT != GP_GET, fetches the next entry, advances
 * and publishes GP_GET and executes the entry on the compute engine.
 *
 * A turn is also bounded in work (commands.h): at most
 * config.timeslice_commands commands and config.timeslice_ns of modeled
 * engine time, after which the channel keeps its place - in the pushbuffer
 * and inside a long COPY, MEMSET or kernel - and the turn moves on. A
 * channel whose acquire is not yet satisfied keeps its place and the turn
 * moves on too; it costs no engine time and is polled again next round (and,
 * once every channel idles, at the idle sleeps below). So one channel's huge
 * pushbuffer delays another's small command by at most one time slice per
 * channel per round. The watchdog (commands.h) kills a channel whose single
 * command runs, or whose acquire waits, past the configured limits, with a
 * VGPU_EVENT_CHANNEL_ERROR of cause VGPU_FAULT_TIMEOUT, as any fatal fault.
 *
 * Polling is adaptive: rounds follow each other without pause while any
 * channel makes progress; after a few idle rounds PFIFO sleeps on a condition
 * variable with exponentially growing timeouts, up to
 * config.pfifo_idle_sleep_max_us, and without timeout while no channel
 * exists. pfifo_wake (kick, priv submit, fetch enable, channel create, CPU
 * writes) ends a sleep at once.
 *
 * The PFIFO lock protects the channel table and the channels' scheduling
 * state; it is released while an entry executes and while events are
 * delivered.
 */
#ifndef SIMGPU_PFIFO_H
#define SIMGPU_PFIFO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory_access.h"

struct simgpu;
struct simgpu_channel;

struct pfifo {
	struct simgpu *gpu;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t channel_idle;
	bool stop;
	uint64_t wake_requests;
	struct simgpu_channel **channels; /* by id, max_channels slots */
	uint32_t channel_count;
	uint32_t next_channel; /* round-robin cursor */
	struct simgpu_channel *executing;
	/* executing's id or -1, atomic: pfifo_channel_pending answers the
	 * channel in its turn without the lock (the GPU-time accounting asks
	 * in a busy loop, and must not slow PFIFO down by taking its lock) */
	int32_t executing_id;
	uint64_t next_ticket;
	struct engine_context compute;
	/* config.paced: wall time and modeled time of the anchor turn;
	 * anchored false after an idle round (pfifo_pace_turn). */
	bool pace_anchored;
	uint64_t pace_wall_ns;
	uint64_t pace_charged_ps;
};

int pfifo_init(struct pfifo *pfifo, struct simgpu *gpu);
int pfifo_start(struct pfifo *pfifo);
void pfifo_stop(struct pfifo *pfifo);
void pfifo_destroy(struct pfifo *pfifo);

/* Give ch the lowest free id and make it schedulable (-ENOSPC). */
int pfifo_add_channel(struct pfifo *pfifo, struct simgpu_channel *ch);
/* Unschedule ch, waiting for its turn in progress (one time slice). */
void pfifo_remove_channel(struct pfifo *pfifo, struct simgpu_channel *ch);

/* Ask the scheduler to poll now. */
void pfifo_wake(struct pfifo *pfifo);
/* Put ch in error with cause, as a fault would (VGPU_EVENT_CHANNEL_ERROR
 * once). From the call on ch gets no new turn, so the wait is for the turn
 * in progress only (one time slice), however much work ch has queued. */
void pfifo_kill_channel(struct pfifo *pfifo, struct simgpu_channel *ch,
                        enum vgpu_hal_error_cause cause);
/* The channel table's status bit (vgpu_hal_channel_pending): channel id
 * has an entry in progress or GP_PUT != GP_GET; false for a free id or a
 * failed channel. Takes the PFIFO lock briefly (it is not held while an
 * entry executes). */
bool pfifo_channel_pending(struct pfifo *pfifo, uint32_t id);
/* Same, with the PFIFO lock held. */
void pfifo_wake_locked(struct pfifo *pfifo);

#endif /* SIMGPU_PFIFO_H */
