// SPDX-License-Identifier: MIT
/* cs_dram.c - DRAM channels, banks, row buffers (see cs_dram.h). */
#include "cs_dram.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES 256u
#define NO_ROW UINT64_MAX

struct bank {
	uint64_t open_row;
	uint64_t ready_at;
};

struct channel {
	struct cs_dram_req **queue;
	struct cs_sched_view *view;
	uint32_t *ready; /* indices of queue entries whose bank is ready */
	uint32_t count;
	struct cs_dram_req *overflow_head, *overflow_tail;
	uint64_t bus_free;
	uint64_t kick_at; /* a kick is scheduled at this time (0: none) */
	uint64_t last_command;
	bool commanded;
	struct bank *banks;
};

struct cs_dram {
	struct cs_dram_config cfg;
	struct cs_events *events;
	struct cs_mem_sched *sched;
	struct cs_dram_app_stats stats[CS_MAX_TENANTS];
	struct channel *channel;
};

void cs_dram_config_defaults(struct cs_dram_config *cfg)
{
	*cfg = (struct cs_dram_config){
		.channels = 8,
		.banks = 16,
		.row_bytes = 2048,
		.line_bytes = 128,
		.queue_entries = 256,
		.t_rcd = 20,
		.t_cl = 20,
		.t_rp = 20,
		.t_burst = 4,
	};
}

struct cs_dram *cs_dram_create(const struct cs_dram_config *cfg, struct cs_events *events,
                               struct cs_mem_sched *sched)
{
	struct cs_dram *d;
	uint32_t c, b;

	if (!cfg || !events || !sched || cfg->channels == 0 || cfg->banks == 0 ||
	    cfg->row_bytes < CHUNK_BYTES || cfg->row_bytes % CHUNK_BYTES || cfg->line_bytes == 0 ||
	    CHUNK_BYTES % cfg->line_bytes || cfg->queue_entries == 0 || cfg->t_burst == 0)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->cfg = *cfg;
	d->events = events;
	d->sched = sched;
	d->channel = calloc(cfg->channels, sizeof(*d->channel));
	if (!d->channel)
		goto fail;
	for (c = 0; c < cfg->channels; c++) {
		struct channel *ch = &d->channel[c];

		ch->queue = calloc(cfg->queue_entries, sizeof(*ch->queue));
		ch->view = calloc(cfg->queue_entries, sizeof(*ch->view));
		ch->ready = calloc(cfg->queue_entries, sizeof(*ch->ready));
		ch->banks = calloc(cfg->banks, sizeof(*ch->banks));
		if (!ch->queue || !ch->view || !ch->ready || !ch->banks)
			goto fail;
		for (b = 0; b < cfg->banks; b++)
			ch->banks[b].open_row = NO_ROW;
	}
	return d;
fail:
	cs_dram_destroy(d);
	return NULL;
}

void cs_dram_destroy(struct cs_dram *d)
{
	uint32_t c;

	if (!d)
		return;
	for (c = 0; d->channel && c < d->cfg.channels; c++) {
		free(d->channel[c].queue);
		free(d->channel[c].view);
		free(d->channel[c].ready);
		free(d->channel[c].banks);
	}
	free(d->channel);
	free(d);
}

static void kick(void *target, void *arg, uint64_t now);

/* Cycles from the command to the data for req at bank b's state. */
static uint32_t command_latency(const struct cs_dram *d, const struct bank *b,
                                const struct cs_dram_req *req)
{
	if (b->open_row == req->row)
		return d->cfg.t_cl;
	if (b->open_row == NO_ROW)
		return d->cfg.t_rcd + d->cfg.t_cl;
	return d->cfg.t_rp + d->cfg.t_rcd + d->cfg.t_cl;
}

static void schedule_kick(struct cs_dram *d, struct channel *ch, uint64_t at)
{
	if (ch->kick_at && ch->kick_at <= at)
		return; /* an earlier kick will reschedule what it cannot do */
	ch->kick_at = at;
	cs_events_at(d->events, at, kick, d, ch);
}

static void complete(void *target, void *arg, uint64_t now)
{
	struct cs_dram_req *req = arg;

	(void)target;
	req->done(req->arg, now);
}

/* Issues what the policy picks among ready requests, one command a cycle. */
static void service(struct cs_dram *d, struct channel *ch, uint64_t now)
{
	uint64_t next_ready = UINT64_MAX, data_start, done;
	struct cs_dram_req *req;
	struct bank *bank;
	uint32_t i, n = 0, cmd;
	size_t pick;
	bool hit;

	if (ch->commanded && ch->last_command == now) {
		if (ch->count)
			schedule_kick(d, ch, now + 1);
		return;
	}
	/* ready: its bank takes a command and its data would not wait for the
	 * bus (so requests stay queued, where the policy chooses among them) */
	for (i = 0; i < ch->count; i++) {
		struct cs_dram_req *r = ch->queue[i];
		struct bank *b = &ch->banks[r->bank];
		uint64_t when = b->ready_at, latency = command_latency(d, b, r);

		if (ch->bus_free > latency && ch->bus_free - latency > when)
			when = ch->bus_free - latency;
		if (when <= now) {
			ch->view[n] = (struct cs_sched_view){ r->app, r->arrival, b->open_row == r->row };
			ch->ready[n++] = i;
		} else if (when < next_ready) {
			next_ready = when;
		}
	}
	if (n == 0) {
		if (next_ready != UINT64_MAX)
			schedule_kick(d, ch, next_ready);
		return;
	}
	pick = cs_mem_sched_pick(d->sched, ch->view, n, now);
	hit = ch->view[pick].row_hit;
	i = ch->ready[pick];
	req = ch->queue[i];
	ch->queue[i] = ch->queue[--ch->count];
	if (ch->overflow_head) {
		ch->queue[ch->count++] = ch->overflow_head;
		ch->overflow_head = ch->overflow_head->next;
		if (!ch->overflow_head)
			ch->overflow_tail = NULL;
	}
	bank = &ch->banks[req->bank];
	cmd = command_latency(d, bank, req);
	data_start = now + cmd;
	if (data_start < ch->bus_free)
		data_start = ch->bus_free;
	done = data_start + d->cfg.t_burst;
	ch->bus_free = done;
	bank->ready_at = now + (cmd - d->cfg.t_cl) + d->cfg.t_burst;
	bank->open_row = req->row;
	ch->commanded = true;
	ch->last_command = now;
	if (req->app < CS_MAX_TENANTS) {
		struct cs_dram_app_stats *s = &d->stats[req->app];

		s->reads += !req->write;
		s->writes += req->write;
		s->row_hits += hit;
	}
	cs_mem_sched_count_bytes(d->sched, req->app, d->cfg.line_bytes);
	cs_events_at(d->events, done, complete, d, req);
	if (ch->count)
		schedule_kick(d, ch, now + 1);
}

static void kick(void *target, void *arg, uint64_t now)
{
	struct channel *ch = arg;

	if (ch->kick_at == now)
		ch->kick_at = 0;
	service(target, ch, now);
}

void cs_dram_submit(struct cs_dram *d, struct cs_dram_req *req, uint64_t now)
{
	uint64_t chunk = req->pa / CHUNK_BYTES;
	uint64_t local = chunk / d->cfg.channels;
	uint64_t chunks_per_row = d->cfg.row_bytes / CHUNK_BYTES;
	struct channel *ch = &d->channel[chunk % d->cfg.channels];

	req->arrival = now;
	req->bank = (uint32_t)((local / chunks_per_row) % d->cfg.banks);
	req->row = local / chunks_per_row / d->cfg.banks;
	req->next = NULL;
	if (ch->count < d->cfg.queue_entries) {
		ch->queue[ch->count++] = req;
	} else {
		if (ch->overflow_tail)
			ch->overflow_tail->next = req;
		else
			ch->overflow_head = req;
		ch->overflow_tail = req;
	}
	schedule_kick(d, ch, now);
}

void cs_dram_app_stats(const struct cs_dram *d, uint32_t app, struct cs_dram_app_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (app < CS_MAX_TENANTS)
		*out = d->stats[app];
}

double cs_dram_peak_bytes_per_cycle(const struct cs_dram *d)
{
	return (double)d->cfg.channels * d->cfg.line_bytes / d->cfg.t_burst;
}
